//! The hot parts of a poll and a scrape, at 1k, 10k and 100k assets:
//! decoding the list, building the snapshot (conversion and rendering of both formats),
//! compressing the cached head, and the live part rendered per scrape.
//! `serde_json::Value` parsing of the same bytes is the yardstick.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use reputation_exporter::exposition::Format;
use reputation_exporter::exposition::gzip::GzipPrefix;
use reputation_exporter::model::AssetSet;
use reputation_exporter::snapshot::{ListPart, Served, Snapshot};
use reputation_exporter::telemetry::Telemetry;
use reputation_exporter::upstream::dto;
use reputation_exporter::vocabulary::Kind;
use reputation_simulate::ip_item;

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

fn list_body(n: usize) -> Vec<u8> {
    serde_json::to_vec(&(0..n).map(|i| ip_item(i, 0)).collect::<Vec<_>>()).unwrap()
}

fn assets(body: &[u8]) -> AssetSet {
    AssetSet::decode(body, Kind::Ip, 64).unwrap().set
}

fn list(body: &[u8]) -> Arc<ListPart> {
    Arc::new(ListPart::new(Kind::Ip, assets(body)))
}

fn pipeline(c: &mut Criterion) {
    let mut group = c.benchmark_group("poll");
    group.sample_size(10);
    for n in SIZES {
        let body = list_body(n);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(BenchmarkId::new("serde_json_value", n), &body, |b, body| {
            b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(body)).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("decode_list", n), &body, |b, body| {
            b.iter(|| dto::decode_list_with(black_box(body), Kind::Ip, |item| item).unwrap())
        });
        group.bench_with_input(
            BenchmarkId::new("decode_and_convert", n),
            &body,
            |b, body| b.iter(|| assets(black_box(body))),
        );
        let set = assets(&body);
        group.bench_with_input(
            BenchmarkId::new("render_both_formats", n),
            &set,
            |b, set| {
                b.iter(|| {
                    let list = ListPart::new(Kind::Ip, set.clone());
                    Snapshot::build(
                        Some(Arc::new(list)),
                        None,
                        None,
                        &Default::default(),
                        true,
                        1,
                    )
                })
            },
        );
        group.bench_with_input(BenchmarkId::new("whole_poll", n), &body, |b, body| {
            b.iter(|| {
                Snapshot::build(
                    Some(list(black_box(body))),
                    None,
                    None,
                    &Default::default(),
                    true,
                    1,
                )
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("scrape");
    group.sample_size(10);
    for n in SIZES {
        let snapshot = Snapshot::build(
            Some(list(&list_body(n))),
            None,
            None,
            &Default::default(),
            true,
            1,
        );
        let chunks = snapshot.body(Format::OpenMetrics).to_vec();
        group.bench_with_input(BenchmarkId::new("gzip_head", n), &chunks, |b, chunks| {
            b.iter(|| GzipPrefix::new(black_box(chunks)))
        });
    }
    let health = reputation_exporter::health::Health::new(
        &reputation_exporter::vocabulary::Endpoint::POLLED,
    );
    let telemetry = Telemetry::new(std::sync::Arc::new(health));
    let snapshot = Snapshot::default();
    let blacklists = reputation_exporter::blacklists::Blacklists::builtin();
    for format in Format::ALL {
        group.bench_function(format!("live_part_{format:?}"), |b| {
            b.iter(|| {
                reputation_exporter::snapshot::live(
                    Some(Served {
                        telemetry: &telemetry,
                        snapshot: &snapshot,
                        shard: None,
                        blacklists: &blacklists,
                    }),
                    None,
                    format,
                )
            })
        });
    }
    group.finish();
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
