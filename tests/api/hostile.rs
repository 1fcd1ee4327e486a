//! A hostile upstream and hostile clients: nothing they do loses the fleet, stalls a poll or
//! locks Prometheus out.

use std::time::Duration;

use reputation_simulate::List;
use reputation_simulate::{Fault, SimulatedApi};
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::helpers::{Options, TestApp, sample, spawn_app_with, up, value};

const IP_LIST: &str = "/api/v1/ip-list";

async fn polled(interval: &'static str) -> TestApp {
    let app = spawn_app_with(Options {
        interval,
        ..Options::default()
    })
    .await;
    app.metrics_when("the first poll", up).await;
    app
}

#[tokio::test]
async fn a_list_of_which_no_item_can_be_used_fails_the_poll_and_keeps_the_fleet() {
    let app = polled("200ms").await;
    app.upstream.set_items(
        List::Ip,
        vec![json!([[[[1]]]]), json!("192.0.2.1"), json!(3), json!(null)],
    );
    let body = app
        .metrics_when("the unusable list", |b| {
            sample(
                b,
                r#"reputation_api_requests_total{endpoint="ip-list",code="decode"}"#,
            ) >= Some(1.0)
        })
        .await;
    assert_eq!(value(&body, r#"reputation_assets{kind="ip"}"#), 3.0);
    assert!(body.contains(r#"reputation_asset_info{kind="ip",asset="192.0.2.1"} 1"#));
    assert_eq!(
        value(&body, r#"reputation_api_retries_total{endpoint="ip-list"}"#),
        0.0,
        "a bad body is not retried"
    );
    let logs = app.log_when("none of the 4 items can be used").await;
    let line = logs
        .lines()
        .find(|l| l.contains("none of the 4 items"))
        .unwrap();
    assert!(
        line.contains("ip-list") && line.contains("poll failed"),
        "{line}"
    );
    let body = app
        .metrics_when("the endpoint to be down", |b| {
            sample(b, r#"reputation_api_up{endpoint="ip-list"}"#) == Some(0.0)
        })
        .await;
    assert_eq!(value(&body, r#"reputation_assets{kind="ip"}"#), 3.0);
}

#[tokio::test]
async fn a_list_mostly_of_garbage_fails_the_poll_keeps_the_fleet_and_counts_the_garbage() {
    let app = polled("200ms").await;
    // One usable item among 3,000 unusable ones: not "the fleet is now this one asset".
    let mut items = vec![json!({"ip": "203.0.113.9", "senderscore": 80})];
    items.extend((0..1000).map(|i| json!(i)));
    items.extend((0..2000).map(|_| json!({"ip": "192.0.2.200", "senderscore": "high"})));
    app.upstream.set_items(List::Ip, items);
    let body = app
        .metrics_when("the refused list", |b| {
            sample(b, r#"reputation_api_up{endpoint="ip-list"}"#) == Some(0.0)
        })
        .await;
    assert_eq!(value(&body, r#"reputation_assets{kind="ip"}"#), 3.0);
    assert!(
        !body.contains("203.0.113.9"),
        "the one usable item is not the fleet"
    );
    assert!(
        value(
            &body,
            r#"reputation_unrecognized_values_total{field="item"}"#
        ) >= 1000.0,
        "{body}"
    );
    assert!(
        value(
            &body,
            r#"reputation_unrecognized_values_total{field="senderscore"}"#
        ) >= 2000.0
    );
    let logs = app
        .log_when("3000 of the 3001 items cannot be used, more than can")
        .await;
    assert!(
        logs.lines().any(|l| l.contains("poll failed")
            && l.contains("endpoint=ip-list")
            && l.contains("the list is not taken as the fleet")),
        "{logs}"
    );
    assert!(
        logs.lines()
            .filter(|l| l.contains("skipped an invalid item"))
            .count()
            == 0,
        "a refused list logs no line per item"
    );
}

#[tokio::test]
async fn an_empty_list_after_a_full_one_is_accepted_with_a_warning() {
    let app = polled("200ms").await;
    app.upstream.set_items(List::Ip, Vec::new());
    let body = app
        .metrics_when("the empty list", |b| {
            sample(b, r#"reputation_assets{kind="ip"}"#) == Some(0.0)
        })
        .await;
    assert_eq!(
        value(&body, r#"reputation_api_up{endpoint="ip-list"}"#),
        1.0
    );
    assert!(!body.contains(r#"reputation_asset_info{kind="ip""#));
    let logs = app
        .log_when("empty list where the last one had assets")
        .await;
    let line = logs.lines().find(|l| l.contains("empty list")).unwrap();
    assert!(
        line.contains("ip-list") && line.contains("previous=3"),
        "{line}"
    );
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_and_the_token_stays_home() {
    const TOKEN: &str = "s3cr3t-home-token";
    let elsewhere = SimulatedApi::new(7, 0);
    elsewhere.set_token(TOKEN);
    let elsewhere_url = elsewhere.spawn().await.unwrap();
    let upstream = SimulatedApi::new(3, 2);
    upstream.set_token(TOKEN);
    let app = spawn_app_with(Options {
        upstream,
        token: TOKEN,
        interval: "200ms",
        ..Options::default()
    })
    .await;
    app.metrics_when("the first poll", up).await;

    app.upstream.push_fault(
        IP_LIST,
        Fault::Redirect(format!("{elsewhere_url}{IP_LIST}")),
    );
    let body = app
        .metrics_when("the refused redirect", |b| {
            sample(
                b,
                r#"reputation_api_requests_total{endpoint="ip-list",code="redirect"}"#,
            ) == Some(1.0)
        })
        .await;
    assert_eq!(elsewhere.requests(IP_LIST), 0, "the other origin was asked");
    assert_eq!(value(&body, r#"reputation_assets{kind="ip"}"#), 3.0);
    let logs = app.log_when("redirected to another origin").await;
    assert!(
        logs.contains(&elsewhere_url),
        "the log names {elsewhere_url}"
    );
    assert!(!logs.contains(TOKEN), "the token reached the logs");

    // A redirect within the configured origin is followed.
    app.upstream
        .push_fault(IP_LIST, Fault::Redirect(IP_LIST.into()));
    let before = app.upstream.requests(IP_LIST);
    app.metrics_when("a followed redirect", |b| {
        up(b)
            && sample(
                b,
                r#"reputation_api_requests_total{endpoint="ip-list",code="redirect"}"#,
            ) == Some(1.0)
    })
    .await;
    crate::helpers::eventually("the redirect to be followed", || async {
        app.upstream.requests(IP_LIST) >= before + 2
    })
    .await;
    assert_eq!(elsewhere.requests(IP_LIST), 0);
}

#[tokio::test]
async fn one_asset_with_200_000_host_names_gives_64_series_and_one_log_line() {
    let hosts: Vec<String> = (0..200_000).map(|i| format!("mx{i}.example")).collect();
    let upstream = SimulatedApi::new(0, 0);
    upstream.set_items(
        List::Ip,
        vec![json!({"ip": "192.0.2.1", "hosts": hosts, "senderscore": 90})],
    );
    let app = spawn_app_with(Options {
        upstream,
        ..Options::default()
    })
    .await;
    // Counted on every poll that drops them: wait for two.
    let body = app
        .metrics_when("two polls' dropped host names", |b| {
            sample(b, r#"reputation_unrecognized_values_total{field="hosts"}"#)
                >= Some(2.0 * 199_936.0)
        })
        .await;
    let series = body
        .lines()
        .filter(|l| l.starts_with(r#"reputation_asset_hostname_info{kind="ip",asset="192.0.2.1""#))
        .count();
    assert_eq!(series, 64);
    assert!(body.contains(r#"hostname="mx0.example"} 1"#));
    assert!(body.contains(r#"hostname="mx63.example"} 1"#));
    assert!(!body.contains(r#"hostname="mx64.example""#));
    let dropped = value(
        &body,
        r#"reputation_unrecognized_values_total{field="hosts"}"#,
    );
    assert_eq!(dropped % 199_936.0, 0.0, "whole polls only: {dropped}");
    let logs = app.logs();
    assert_eq!(
        logs.lines()
            .filter(|l| l.contains("values dropped"))
            .count(),
        1,
        "logged once"
    );
}

#[tokio::test]
async fn idle_and_dribbling_clients_never_starve_a_scrape() {
    let app = polled("1h").await;
    // 600 of each kind; fewer where the hard open-file limit is low, since this process holds
    // both ends of every connection and other tests run beside it.
    let (files, _) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap();
    let each = usize::try_from(files.saturating_sub(512) / 4)
        .unwrap_or(usize::MAX)
        .min(600);
    assert!(
        each >= 100,
        "an open-file limit of {files} is too low for this test"
    );
    let mut idle = Vec::new();
    for _ in 0..each {
        idle.push(tokio::net::TcpStream::connect(app.address).await.unwrap());
    }
    let mut dribbling = tokio::task::JoinSet::new();
    for _ in 0..each {
        let mut stream = tokio::net::TcpStream::connect(app.address).await.unwrap();
        dribbling.spawn(async move {
            // One byte of a request line every 200 ms, at most 100 of them.
            for byte in b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "
                .iter()
                .cycle()
                .take(100)
            {
                if stream.write_all(&[*byte]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
    }
    // Before the fix the scrape waited for these connections to go away (seconds to hours);
    // a bound far above a normal scrape tells the two apart without timing a fast path.
    let scrape = tokio::time::timeout(Duration::from_secs(5), app.get("/metrics"))
        .await
        .unwrap_or_else(|_| {
            panic!("no scrape answered while {each} idle and {each} slow connections were open")
        });
    assert_eq!(scrape.status(), 200);
    assert!(up(&scrape.text().await.unwrap()));

    // A connection that sends no headers is closed by the server after the header timeout.
    let mut silent = idle.pop().unwrap();
    let mut buffer = [0; 64];
    let closed = tokio::time::timeout(Duration::from_secs(30), silent.read(&mut buffer))
        .await
        .expect("the silent connection was closed");
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    dribbling.abort_all();
}

#[tokio::test]
async fn counters_with_known_labels_exist_at_zero_before_any_poll() {
    let app = spawn_app_with(Options {
        start_polling: false,
        ..Options::default()
    })
    .await;
    let body = app.metrics().await;
    for endpoint in ["user", "system-check", "ip-list", "domain-list"] {
        let series = format!(r#"reputation_api_retries_total{{endpoint="{endpoint}"}}"#);
        assert_eq!(sample(&body, &series), Some(0.0), "{series}");
    }
    for field in ["hosts", "tags", "snds_blocked", "blacklist_history.date"] {
        let series = format!(r#"reputation_unrecognized_values_total{{field="{field}"}}"#);
        assert_eq!(sample(&body, &series), Some(0.0), "{series}");
    }
}

#[tokio::test]
async fn metrics_vary_on_accept_and_accept_encoding() {
    let app = polled("1h").await;
    let response = app.get("/metrics").await;
    assert_eq!(response.headers()["vary"], "Accept, Accept-Encoding");
    let response = app
        .get_with("/metrics", &[("accept-encoding", "gzip")])
        .await;
    assert_eq!(response.headers()["vary"], "Accept, Accept-Encoding");
}

#[tokio::test]
async fn every_snapshot_rebuild_runs_off_the_async_worker() {
    // This test's runtime has one worker, the test's own thread; blocking work runs on the
    // runtime's other threads. Lists, report rounds, removed reports and expiry each rebuild.
    let upstream = SimulatedApi::new(3, 2);
    let app = spawn_app_with(Options {
        upstream,
        max_age: "1s",
        log_format: None,
        configure: Box::new(|s| {
            s.asset_reports.enabled = true;
            s.asset_reports.interval = crate::helpers::duration("200ms");
        }),
        ..Options::default()
    })
    .await;
    app.metrics_when("the reports", |b| b.contains("reputation_asset_tag_info{"))
        .await;
    app.upstream.remove_asset("192.0.2.1");
    for path in ["/api/v1/ip-list", "/api/v1/domain-list"] {
        app.upstream.set_outage(path, Some(503));
    }
    app.metrics_when("the assets to expire", |b| {
        !b.contains("reputation_asset_info{")
    })
    .await;
    let logs = app.logs();
    let rebuilds: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("snapshot published"))
        .collect();
    assert!(rebuilds.len() >= 4, "{logs}");
    let worker = std::thread::current().name().unwrap_or_default().to_owned();
    let listening = logs.lines().find(|l| l.contains("listening")).unwrap();
    assert!(
        listening.contains(&worker),
        "async work is seen on the worker: {listening}"
    );
    for line in rebuilds {
        assert!(
            !line.contains(&worker),
            "rebuilt on the async worker: {line}"
        );
        assert!(
            line.contains(" tokio-"),
            "a thread of the runtime's blocking pool: {line}"
        );
    }
}
