//! Asset reports against the simulated API.

use std::collections::HashMap;
use std::time::Duration;

use reputation_exporter::config::Settings;
use reputation_simulate::List;
use reputation_simulate::{DEMO_TOKEN, SimulatedApi};
use serde_json::json;

use crate::helpers::{Options, TestApp, sample, spawn_app_with, up};

fn with_reports(upstream: SimulatedApi, configure: fn(&mut Settings)) -> Options {
    Options {
        upstream,
        interval: "30s",
        configure: Box::new(move |s| {
            s.asset_reports.enabled = true;
            s.asset_reports.interval = crate::helpers::duration("500ms");
            configure(s);
        }),
        ..Options::default()
    }
}

async fn reported(app: &TestApp, series: &str) -> String {
    app.metrics_when(series, |b| b.contains(series)).await
}

#[tokio::test]
async fn the_newest_event_decides_listed_or_not_whatever_the_order() {
    let upstream = SimulatedApi::new(2, 0);
    upstream.set_report(
        "192.0.2.1",
        json!({
            "value": "192.0.2.1",
            "tags": ["team-mail", "pool-a"],
            "senderscore_history": [
                {"value": "80", "date": "20th Nov 2026 11:00pm"},
                {"value": "82", "date": "21st Nov 2026 12:30am"}
            ],
            "blacklist_history": [
                {"date": "1st Nov 2026 09:00am", "status": "Listed", "blacklist": "SBL"},
                {"date": "3rd Nov 2026 09:00am", "status": "Delisted", "blacklist": "SBL"},
                {"date": "2nd Nov 2026 09:00am", "status": "Listed", "blacklist": "SBL"},
                {"date": "5th Nov 2026 12:00pm", "status": "Listed", "blacklist": "Barracuda"},
                {"date": "4th Nov 2026 09:00am", "status": "Delisted", "blacklist": "Barracuda"},
                {"date": "31st Nov 2026 09:00am", "status": "Delisted", "blacklist": "Barracuda"}
            ]
        }),
    );
    let app = spawn_app_with(with_reports(upstream, |_| {})).await;
    let body = reported(
        &app,
        "reputation_asset_tag_info{kind=\"ip\",asset=\"192.0.2.1\"",
    )
    .await;

    let listed = |blacklist: &str| {
        sample(
            &body,
            &format!(
                r#"reputation_blacklist_listed{{kind="ip",asset="192.0.2.1",blacklist="{blacklist}"}}"#
            ),
        )
    };
    assert_eq!(listed("SBL"), Some(0.0));
    assert_eq!(listed("Barracuda"), Some(1.0));
    // 2026-11-05 12:00 UTC.
    assert_eq!(
        sample(
            &body,
            r#"reputation_blacklist_last_change_timestamp_seconds{kind="ip",asset="192.0.2.1",blacklist="Barracuda"}"#
        ),
        Some(1_793_880_000.0)
    );
    assert_eq!(
        sample(
            &body,
            r#"reputation_asset_tag_info{kind="ip",asset="192.0.2.1",tag="pool-a"}"#
        ),
        Some(1.0)
    );
    // 2026-11-21 00:30 UTC: 12:30am is half past midnight.
    assert_eq!(
        sample(
            &body,
            r#"reputation_senderscore_last_update_timestamp_seconds{kind="ip",asset="192.0.2.1"}"#
        ),
        Some(1_795_221_000.0)
    );
    // 31st Nov does not exist: counted, skipped.
    assert!(
        sample(
            &body,
            r#"reputation_unrecognized_values_total{field="blacklist_history.date"}"#
        ) >= Some(1.0)
    );
    assert_eq!(
        sample(&body, r#"reputation_api_up{endpoint="asset"}"#),
        Some(1.0)
    );
    assert!(
        sample(
            &body,
            r#"reputation_api_requests_total{endpoint="asset",code="200"}"#
        ) >= Some(2.0)
    );
}

#[tokio::test]
async fn an_asset_name_reaches_the_api_as_one_encoded_path_segment() {
    let upstream = SimulatedApi::new(0, 0);
    upstream.set_items(
        List::Ip,
        vec![
            json!({"ip": "../user"}),
            json!({"ip": "a/b?c"}),
            json!({"ip": "2001:db8::1"}),
        ],
    );
    let app = spawn_app_with(with_reports(upstream, |_| {})).await;
    reported(
        &app,
        "reputation_asset_tag_info{kind=\"ip\",asset=\"a/b?c\"",
    )
    .await;
    let paths = app.upstream.report_paths();
    for expected in [
        "/api/v1/asset/..%2Fuser",
        "/api/v1/asset/a%2Fb%3Fc",
        "/api/v1/asset/2001%3Adb8%3A%3A1",
    ] {
        assert!(
            paths.iter().any(|p| p == expected),
            "{expected} not in {paths:?}"
        );
    }
    assert!(paths.iter().all(|p| p.starts_with("/api/v1/asset/")));
    assert_eq!(
        app.upstream.requests("/api/v1/user"),
        1,
        "no report reached /user"
    );
}

#[tokio::test]
async fn a_404_drops_that_assets_report_series_only() {
    let app = spawn_app_with(with_reports(SimulatedApi::new(2, 0), |_| {})).await;
    let tag = |asset: &str| format!("reputation_asset_tag_info{{kind=\"ip\",asset=\"{asset}\"");
    app.metrics_when("both reports", |b| {
        b.contains(&tag("192.0.2.1")) && b.contains(&tag("192.0.2.2"))
    })
    .await;

    app.upstream.hide_report("192.0.2.1");
    let body = app
        .metrics_when("the 404 to drop the report", |b| {
            !b.contains(&tag("192.0.2.1"))
        })
        .await;
    assert!(!body.contains(r#"reputation_blacklist_listed{kind="ip",asset="192.0.2.1""#));
    assert!(body.contains(&tag("192.0.2.2")));
    assert_eq!(
        sample(
            &body,
            r#"reputation_asset_info{kind="ip",asset="192.0.2.1"}"#
        ),
        Some(1.0),
        "the asset itself stays"
    );
    assert!(
        sample(
            &body,
            r#"reputation_api_requests_total{endpoint="asset",code="404"}"#
        ) >= Some(1.0)
    );
    assert_eq!(
        sample(&body, r#"reputation_api_up{endpoint="asset"}"#),
        Some(1.0)
    );
}

#[tokio::test]
async fn requests_in_flight_never_exceed_the_concurrency_bound() {
    let upstream = SimulatedApi::new(20, 0);
    // 20 assets spread over 1 s come every 50 ms; each takes 200 ms: 4 would overlap.
    upstream.set_report_delay(Duration::from_millis(200));
    let app = spawn_app_with(with_reports(upstream, |s| {
        s.asset_reports.interval = crate::helpers::duration("1s");
        s.asset_reports.concurrency = 3;
    }))
    .await;
    app.metrics_when("a whole round", |b| {
        sample(
            b,
            r#"reputation_last_success_timestamp_seconds{endpoint="asset"}"#,
        )
        .is_some()
    })
    .await;
    let most = app.upstream.reports_in_flight_max();
    assert!(most <= 3, "{most} requests in flight");
    assert!(most >= 2, "the requests did overlap ({most})");
}

#[tokio::test]
async fn three_shards_fetch_every_asset_exactly_once() {
    let upstream = SimulatedApi::new(30, 9);
    let base_url = upstream.spawn().await.unwrap();
    for shard in ["1/3", "2/3", "3/3"] {
        let base_url = base_url.clone();
        let output = tokio::task::spawn_blocking(move || {
            crate::helpers::exporter()
                .arg("--once")
                .env("REPUTATION_EXPORTER_API__BASE_URL", base_url)
                .env("REPUTATION_EXPORTER_API__TOKEN", DEMO_TOKEN)
                .env("REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED", "true")
                .env("REPUTATION_EXPORTER_ASSET_REPORTS__REPLICA", shard)
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        let stdout = crate::helpers::succeeded(output);
        assert!(
            stdout.contains("reputation_asset_tag_info{"),
            "shard {shard}"
        );
    }
    let mut counts: HashMap<String, usize> = HashMap::new();
    for path in upstream.report_paths() {
        *counts.entry(path).or_default() += 1;
    }
    assert_eq!(counts.len(), 39, "every asset once");
    assert!(counts.values().all(|n| *n == 1), "{counts:?}");
}

#[tokio::test]
async fn by_default_only_the_listed_assets_reports_are_fetched_and_none_with_listed_off() {
    let upstream = SimulatedApi::new(60, 20);
    let listed: std::collections::BTreeSet<String> = [List::Ip, List::Domain]
        .into_iter()
        .flat_map(|list| upstream.items(list))
        .filter(|item| item["blacklisted"].as_i64() > Some(0))
        .map(|item| {
            let name = item.get("ip").or_else(|| item.get("domain")).unwrap();
            format!("/api/v1/asset/{}", name.as_str().unwrap())
        })
        .collect();
    assert!(
        !listed.is_empty() && listed.len() < 40,
        "a few of the 80 assets listed: {listed:?}"
    );
    let app = spawn_app_with(Options {
        upstream: upstream.clone(),
        ..Options::default()
    })
    .await;
    app.metrics_when("the listed assets' reports", |b| {
        b.matches("reputation_blacklistings_named{").count() == listed.len()
    })
    .await;
    // Three list polls later, no other report has been asked for.
    app.metrics_when("three polls", |b| {
        sample(
            b,
            r#"reputation_api_requests_total{endpoint="ip-list",code="200"}"#,
        ) >= Some(3.0)
    })
    .await;
    let asked: std::collections::BTreeSet<String> = upstream.report_paths().into_iter().collect();
    assert_eq!(asked, listed);

    let off = spawn_app_with(Options {
        configure: Box::new(|s| s.asset_reports.listed = false),
        ..Options::default()
    })
    .await;
    off.metrics_when("the first poll", up).await;
    let body = off
        .metrics_when("three polls", |b| {
            sample(
                b,
                r#"reputation_api_requests_total{endpoint="ip-list",code="200"}"#,
            ) >= Some(3.0)
        })
        .await;
    assert!(off.upstream.report_paths().is_empty());
    assert!(!body.contains(r#"endpoint="asset""#));
}
