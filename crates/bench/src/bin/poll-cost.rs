//! What turning a fetched list into the served snapshot costs, against what `serde_json` alone
//! takes to parse the same bytes into `serde_json::Value`:
//! `cargo run --release --bin poll-cost -- ASSETS [RUNS]`.
//! Prints `assets value_parse_ms poll_ms ratio` (medians of RUNS runs). The poll compares each
//! asset with the previous list's memory and keeps its own, as the poller does.

use std::sync::Arc;
use std::time::Instant;

use reputation_exporter::model::{AssetSet, AssetSink as _, Remembering};
use reputation_exporter::snapshot::{ListBuilder, Snapshot};
use reputation_exporter::vocabulary::Kind;
use reputation_simulate::ip_item;

fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[runs / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);
    let body = serde_json::to_vec(&(0..n).map(|i| ip_item(i, 0)).collect::<Vec<_>>()).unwrap();

    let value = median_ms(runs, || {
        std::hint::black_box(serde_json::from_slice::<serde_json::Value>(&body).unwrap());
    });
    let mut memory = None;
    let poll = median_ms(runs, || {
        let decoded = AssetSet::decode(&body, Kind::Ip, 64).unwrap();
        let mut builder = Remembering::new(ListBuilder::new(Kind::Ip, 1), memory.take());
        decoded.set.assets.into_iter().for_each(|a| builder.push(a));
        let (builder, remembered) = builder.finish();
        memory = Some(Arc::new(remembered));
        let snapshot = Snapshot::build(
            Some(Arc::new(builder.finish())),
            None,
            None,
            &Default::default(),
            true,
            1,
        );
        std::hint::black_box(snapshot);
    });
    println!("{n} {value:.1} {poll:.1} {:.2}", poll / value);
}
