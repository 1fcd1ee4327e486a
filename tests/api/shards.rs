//! `metrics.shards`: the per-asset series served in shards on `/metrics?shard=I` and
//! `/probe?target=NAME&shard=I`, each shard a self-contained target.

use std::collections::BTreeSet;

use reputation_exporter::vocabulary::{Kind, shard_of};
use reputation_simulate::SimulatedApi;

use crate::helpers::{Options, TestApp, spawn_accounts, spawn_app_with, up, value};

/// Per-asset series of a body, with the asset each is about.
fn asset_lines(body: &str) -> Vec<(String, Kind, String)> {
    body.lines()
        .filter(|line| !line.starts_with('#') && line.contains("asset=\""))
        .map(|line| {
            let label = |name: &str| {
                let start = line.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                line[start..].split('"').next().unwrap().to_owned()
            };
            let kind = if label("kind") == "ip" {
                Kind::Ip
            } else {
                Kind::Domain
            };
            // The series, without its value (a poll between two scrapes may change one).
            let series = line.rsplit_once(' ').map_or(line, |(series, _)| series);
            (series.to_owned(), kind, label("asset"))
        })
        .collect()
}

/// The lines of a body that are about no asset: the exporter's and the API's own.
fn own_families(body: &str) -> BTreeSet<String> {
    body.lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .map(|line| line.split(' ').next().unwrap().to_owned())
        .filter(|name| {
            name.starts_with("reputation_api_")
                || name.starts_with("reputation_exporter_")
                || name.starts_with("process_")
                || ["reputation_up", "reputation_assets"].contains(&name.as_str())
        })
        .collect()
}

/// The per-asset series of `whole` and of each of its `shards` shards (`{whole}?shard=I` or
/// `{whole}&shard=I`), taken between two answers of the whole that serve the same series, so
/// that no poll changed the data in between (a poll every few hundred milliseconds may).
async fn whole_and_shards(app: &TestApp, whole: &str, shards: usize) -> (String, Vec<String>) {
    let separator = if whole.contains('?') { '&' } else { '?' };
    let series =
        |body: &str| -> BTreeSet<String> { asset_lines(body).into_iter().map(|l| l.0).collect() };
    for _ in 0..50 {
        let before = app.get(whole).await.text().await.unwrap();
        let mut bodies = Vec::with_capacity(shards);
        for shard in 0..shards {
            let path = format!("{whole}{separator}shard={shard}");
            bodies.push(app.get(&path).await.text().await.unwrap());
        }
        let after = app.get(whole).await.text().await.unwrap();
        if series(&before) == series(&after) {
            return (after, bodies);
        }
    }
    panic!("{whole} changed its series during each of 50 attempts");
}

#[tokio::test]
async fn four_shards_each_serve_their_assets_and_the_exporters_own_metrics_and_add_up_to_the_whole()
{
    let app = spawn_app_with(Options {
        upstream: SimulatedApi::new(60, 40),
        configure: Box::new(|s| {
            s.metrics.shards = 4;
            s.asset_reports.enabled = true;
            s.asset_reports.interval = crate::helpers::duration("500ms");
        }),
        ..Options::default()
    })
    .await;
    app.metrics_when("both lists and reports served", |body| {
        up(body) && body.contains("reputation_asset_tag_info{")
    })
    .await;
    let (whole, shards) = whole_and_shards(&app, "/metrics", 4).await;
    let mut union = BTreeSet::new();
    let mut assets = [0.0; 2];
    for (shard, body) in shards.iter().enumerate() {
        for (line, kind, asset) in asset_lines(body) {
            assert_eq!(shard_of(kind, &asset, 4), shard, "{line}");
            assert!(union.insert(line.clone()), "{line} in two shards");
        }
        assert_eq!(own_families(body), own_families(&whole), "shard {shard}");
        assert_eq!(value(body, "reputation_exporter_shards"), 4.0);
        assert_eq!(value(body, "reputation_up"), 1.0);
        assets[0] += value(body, "reputation_assets{kind=\"ip\"}");
        assets[1] += value(body, "reputation_assets{kind=\"domain\"}");
    }
    let whole_lines: BTreeSet<String> = asset_lines(&whole).into_iter().map(|l| l.0).collect();
    assert_eq!(union, whole_lines, "the shards make the whole");
    assert_eq!(
        assets,
        [60.0, 40.0],
        "reputation_assets counts each asset once"
    );
    assert_eq!(value(&whole, "reputation_exporter_shards"), 4.0);
}

#[tokio::test]
async fn a_shard_that_is_not_a_shard_is_refused_naming_the_range() {
    let app = spawn_app_with(Options {
        configure: Box::new(|s| s.metrics.shards = 4),
        ..Options::default()
    })
    .await;
    for shard in ["4", "-1", "x", "", "99999999999999999999999"] {
        let answer = app.get(&format!("/metrics?shard={shard}")).await;
        assert_eq!(answer.status(), 400, "shard={shard}");
        let text = answer.text().await.unwrap();
        assert!(
            text.contains(
                "names no shard of this exporter: give a number from 0 to 3 (metrics.shards = 4)"
            ),
            "{text}"
        );
    }
    let answer = app.get("/metrics?shard=3").await;
    assert_eq!(answer.status(), 200);
}

#[tokio::test]
async fn a_gzip_shard_is_the_plain_shard_compressed() {
    let app = spawn_app_with(Options {
        configure: Box::new(|s| s.metrics.shards = 3),
        ..Options::default()
    })
    .await;
    app.metrics_when("served", up).await;
    let shard = |gzip: bool| {
        let headers: &[(&str, &str)] = if gzip {
            &[("accept-encoding", "gzip")]
        } else {
            &[("accept-encoding", "identity")]
        };
        let app = &app;
        async move {
            let answer = app.get_with("/metrics?shard=1", headers).await;
            let gzipped = answer.headers().get("content-encoding").is_some();
            let bytes = answer.bytes().await.unwrap();
            (gzipped, bytes)
        }
    };
    let (gzipped, compressed) = shard(true).await;
    assert!(gzipped);
    let mut plain = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(&compressed[..]),
        &mut plain,
    )
    .unwrap();
    let (_, identity) = shard(false).await;
    let identity = String::from_utf8(identity.to_vec()).unwrap();
    let per_asset =
        |body: &str| -> Vec<String> { asset_lines(body).into_iter().map(|l| l.0).collect() };
    assert_eq!(per_asset(&plain), per_asset(&identity));
    assert!(!per_asset(&plain).is_empty());
}

#[tokio::test]
async fn probe_serves_an_accounts_shard_too() {
    let app = spawn_accounts(
        vec![
            ("eu", SimulatedApi::new(20, 10), "demo-token"),
            ("us", SimulatedApi::new(5, 5), "demo-token"),
        ],
        "200ms",
        |s| s.metrics.shards = 2,
    )
    .await;
    app.when("eu served", "/probe?target=eu", up).await;
    let (whole, shards) = whole_and_shards(&app, "/probe?target=eu", 2).await;
    let mut union = BTreeSet::new();
    for (shard, body) in shards.iter().enumerate() {
        for (line, kind, asset) in asset_lines(body) {
            assert_eq!(shard_of(kind, &asset, 2), shard, "{line}");
            assert!(union.insert(line.clone()), "{line} in two shards");
        }
        assert_eq!(value(body, "reputation_exporter_shards"), 2.0);
    }
    let whole: BTreeSet<String> = asset_lines(&whole).into_iter().map(|l| l.0).collect();
    assert_eq!(union, whole, "the shards make the whole");
    let refused = app.get("/probe?target=eu&shard=2").await;
    assert_eq!(refused.status(), 400);
}
