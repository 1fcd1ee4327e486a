//! A fleet-wide change with asset reports on: every asset's blacklisting count rises between two
//! polls, so the poll that sees it hands every asset to the follow-ups, which fetch every report
//! again within `asset_reports.concurrency`, the limit the report round shares.
//! `cargo run --release --example follow_cost -- [ASSETS]` (default 100,000).
//!
//! The simulated API answers in process (no sockets), so what is measured is the exporter's own
//! work. Prints the poll before the change, the poll that saw it (lists fetched and decoded,
//! every asset compared with its report and queued), and the follow-ups from that poll's end
//! until every report was fetched again, with the most report requests in flight at once.

use std::time::{Duration, Instant};

use reputation_exporter::accounts::Upstreams;
use reputation_exporter::app::App;
use reputation_exporter::config::Settings;
use reputation_exporter::vocabulary::Secret;
use reputation_simulate::{DEMO_TOKEN, List, SimulatedApi};

const REPORTS: &str = "/api/v1/asset";

/// The value of the first sample of `series` in the exporter's exposition.
async fn sample(app: &axum::Router, series: &str) -> Option<f64> {
    use tower::ServiceExt as _;
    let request = axum::http::Request::get("/metrics")
        .body(axum::body::Body::empty())
        .ok()?;
    let response = app.clone().oneshot(request).await.ok()?;
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .ok()?;
    let body = String::from_utf8(body.to_vec()).ok()?;
    body.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
}

/// Waits until `done` holds, checking every 10 ms.
async fn until(mut done: impl AsyncFnMut() -> bool) {
    while !done().await {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::main]
async fn main() {
    let assets: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let api = SimulatedApi::new(assets, 0);
    let base: reqwest::Url = "http://upstream.simulated".parse().expect("a URL");
    let mut settings = Settings::default();
    settings.api.base_url = Some(base.clone());
    settings.api.token = Some(Secret::new(DEMO_TOKEN));
    settings.poll.interval = Duration::from_secs(20);
    settings.asset_reports.enabled = true;
    settings.state.enabled = false;
    let config = settings.validate(false).expect("a valid configuration");
    let upstreams = Upstreams::default().with(base, api.router());
    let app = App::build_with(&config, upstreams)
        .await
        .expect("the exporter builds");
    app.start();
    let router = app.router();
    let last_poll = r#"reputation_last_success_timestamp_seconds{endpoint="ip-list"}"#;
    let poll_seconds = "reputation_poll_duration_seconds";

    let started = Instant::now();
    until(async || api.requests(REPORTS) >= assets).await;
    println!(
        "first round: {assets} reports in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // A poll after the first round, with nothing changed: its whole cycle, as the exporter
    // times it, once it has ended.
    let seen = sample(&router, last_poll).await.unwrap_or_default();
    let previous = sample(&router, poll_seconds).await;
    until(async || sample(&router, last_poll).await.unwrap_or_default() > seen).await;
    until(async || sample(&router, poll_seconds).await != previous).await;
    let quiet = sample(&router, poll_seconds).await.unwrap_or_default();

    // Every asset listed once more, as the list says at the API's last check.
    let mut items = api.items(List::Ip);
    for item in &mut items {
        let count = item["blacklisted"].as_i64().unwrap_or(0);
        item["blacklisted"] = serde_json::json!(count + 1);
        item["blacklisted_change"] = serde_json::json!({ "last_check": 1 });
    }
    api.set_items(List::Ip, items);
    let before = api.requests(REPORTS);
    let seen = sample(&router, last_poll).await.unwrap_or_default();
    let previous = sample(&router, poll_seconds).await;
    until(async || sample(&router, last_poll).await.unwrap_or_default() > seen).await;
    until(async || sample(&router, poll_seconds).await != previous).await;
    let changed = sample(&router, poll_seconds).await.unwrap_or_default();
    let polled = Instant::now();
    until(async || api.requests(REPORTS) >= before + assets).await;
    let follow_ups = polled.elapsed().as_secs_f64();
    println!(
        "assets {assets}: poll {:.3} s unchanged, {changed:.3} s with every asset changed; \
         follow-ups {follow_ups:.1} s for {assets} reports; at most {} report requests in flight",
        quiet,
        api.reports_in_flight_max()
    );
}
