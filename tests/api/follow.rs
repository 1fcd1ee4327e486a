//! Reports follow the list, on Tokio's paused clock at production's intervals: 5-minute polls
//! and the default report round; a listing that the list shows is named within one poll, and
//! so is its delisting, each with one report request and no round.

use std::time::Duration;

use reputation_simulate::List;
use reputation_simulate::SimulatedApi;
use serde_json::{Value, json};

use crate::helpers::{PausedApp, sample};

const ASSET: &str = "/api/v1/asset";

/// The list item of `name` with this blacklisting count and change.
fn set_listed(api: &SimulatedApi, name: &str, count: i64, change: i64) {
    let mut items = api.items(List::Ip);
    let item = items
        .iter_mut()
        .find(|item| item["ip"] == name)
        .expect("the asset is in the list");
    item["blacklisted"] = json!(count);
    item["blacklisted_change"] = json!({ "last_check": change });
    api.set_items(List::Ip, items);
}

/// The report of `name`, saying this count and change, with these listing events.
fn report(name: &str, count: i64, change: i64, events: Value) -> Value {
    json!({
        "value": name,
        "tags": ["pool-a"],
        "blacklisted": count,
        "blacklisted_change": {"last_check": change},
        "blacklist_history": events,
    })
}

/// Sleeps (on the paused clock) until `minutes` and `seconds` after `start`.
async fn until(start: tokio::time::Instant, minutes: u64, seconds: u64) {
    tokio::time::sleep_until(start + Duration::from_secs(minutes * 60 + seconds)).await;
}

/// `reputation_blacklist_listed` of `name` on SpamCop in a scrape, if served.
fn listed_on_spamcop(body: &str, name: &str) -> Option<f64> {
    sample(
        body,
        &format!(r#"reputation_blacklist_listed{{kind="ip",asset="{name}",blacklist="SpamCop"}}"#),
    )
}

#[tokio::test(start_paused = true)]
async fn a_listing_and_its_delisting_are_named_within_one_poll_by_one_report_request_each() {
    let api = SimulatedApi::new(12, 0);
    let name = "192.0.2.5";
    set_listed(&api, name, 0, 0);
    api.set_report(name, report(name, 0, 0, json!([])));
    let start = tokio::time::Instant::now();
    // Defaults but for reports on: 5-minute polls, the default round interval.
    let app = PausedApp::start(api.clone(), "5m", "1h", |s| {
        s.asset_reports.enabled = true;
    })
    .await;
    let listed = |body: &str| listed_on_spamcop(body, name);

    // The first round, at full concurrency, has fetched every report.
    until(start, 1, 0).await;
    let first_round = api.requests(ASSET);
    assert_eq!(first_round, 12);
    assert_eq!(listed(&app.metrics().await), None);

    // Listed at minute 2: the list says so at the poll of minute 5, and the report naming
    // the blacklist is fetched at once, ahead of the round due in hours.
    until(start, 2, 0).await;
    set_listed(&api, name, 1, 1);
    let listing =
        json!([{"date": "24th Nov 2026 08:02pm", "status": "Listed", "blacklist": "SpamCop"}]);
    api.set_report(name, report(name, 1, 1, listing));
    until(start, 4, 59).await;
    assert_eq!(listed(&app.metrics().await), None, "not before the poll");
    until(start, 5, 10).await;
    assert_eq!(listed(&app.metrics().await), Some(1.0), "{}", app.logs());
    assert_eq!(api.requests(ASSET), first_round + 1, "that one report only");

    // The next polls find the report in agreement: nothing more is fetched.
    until(start, 12, 0).await;
    assert_eq!(api.requests(ASSET), first_round + 1);

    // Delisted at minute 13: named at the poll of minute 15.
    set_listed(&api, name, 0, -1);
    let delisting = json!([
        {"date": "24th Nov 2026 08:02pm", "status": "Listed", "blacklist": "SpamCop"},
        {"date": "24th Nov 2026 08:13pm", "status": "Delisted", "blacklist": "SpamCop"}
    ]);
    api.set_report(name, report(name, 0, -1, delisting));
    until(start, 15, 10).await;
    assert_eq!(listed(&app.metrics().await), Some(0.0));
    assert_eq!(api.requests(ASSET), first_round + 2);
}

#[tokio::test(start_paused = true)]
async fn a_report_that_keeps_disagreeing_or_answers_404_is_asked_for_at_every_poll_of_an_hour() {
    let api = SimulatedApi::new(12, 0);
    let (stubborn, unknown) = ("192.0.2.5", "192.0.2.6");
    for name in [stubborn, unknown] {
        set_listed(&api, name, 0, 0);
    }
    // The API's report of one says another count than its list, whatever happens.
    api.set_report(stubborn, report(stubborn, 7, 0, json!([])));
    let start = tokio::time::Instant::now();
    let _app = PausedApp::start(api.clone(), "5m", "1h", |s| {
        s.asset_reports.enabled = true;
    })
    .await;
    until(start, 1, 0).await;
    let first_round = api.requests(ASSET);

    // Both change in the list: each is asked for at the poll of minute 5, then again at every
    // poll of the hour after (minutes 10 to 60), and not after.
    set_listed(&api, stubborn, 1, 1);
    set_listed(&api, unknown, 1, 1);
    api.hide_report(unknown);
    let mut asked = Vec::new();
    for minute in [5, 10, 30, 60, 65, 120] {
        until(start, minute, 10).await;
        asked.push((minute, api.requests(ASSET) - first_round));
    }
    assert_eq!(
        asked,
        [(5, 2), (10, 4), (30, 12), (60, 24), (65, 24), (120, 24)]
    );
    // The list changes once more: asked again at once, each.
    set_listed(&api, stubborn, 2, 1);
    set_listed(&api, unknown, 2, 1);
    until(start, 125, 10).await;
    assert_eq!(api.requests(ASSET), first_round + 26);
}

/// A listing whose report lags its list by several minutes (the API's own lag) is named at the
/// first poll after its report names it.
#[tokio::test(start_paused = true)]
async fn a_listing_whose_report_lags_its_list_is_named_at_the_poll_after_the_report_names_it() {
    let api = SimulatedApi::new(12, 0);
    let name = "192.0.2.5";
    set_listed(&api, name, 0, 0);
    api.set_report(name, report(name, 0, 0, json!([])));
    let start = tokio::time::Instant::now();
    let app = PausedApp::start(api.clone(), "5m", "1h", |s| {
        s.asset_reports.enabled = true;
    })
    .await;
    let listed = |body: &str| listed_on_spamcop(body, name);
    until(start, 1, 0).await;
    // Listed at minute 2: the list shows it at the poll of minute 5, the report only from
    // minute 17.
    set_listed(&api, name, 1, 1);
    until(start, 17, 0).await;
    assert_eq!(listed(&app.metrics().await), None, "{}", app.logs());
    let listing = json!([
        {"date": "24th Nov 2026 08:02pm", "status": "Listed", "blacklist": "SpamCop"}
    ]);
    api.set_report(name, report(name, 1, 1, listing));
    until(start, 20, 10).await;
    assert_eq!(listed(&app.metrics().await), Some(1.0), "{}", app.logs());
}

#[tokio::test(start_paused = true)]
async fn a_follow_up_that_fails_is_asked_for_again_at_the_next_poll() {
    let api = SimulatedApi::new(12, 0);
    let name = "192.0.2.5";
    set_listed(&api, name, 0, 0);
    api.set_report(name, report(name, 0, 0, json!([])));
    let start = tokio::time::Instant::now();
    let app = PausedApp::start(api.clone(), "5m", "1h", |s| {
        s.asset_reports.enabled = true;
        s.backoff.max_elapsed = crate::helpers::duration("30s");
    })
    .await;
    until(start, 1, 0).await;

    // The report endpoint fails past its retries when the list shows the listing...
    api.set_outage(ASSET, Some(503));
    set_listed(&api, name, 1, 1);
    let listing =
        json!([{"date": "24th Nov 2026 08:02pm", "status": "Listed", "blacklist": "SpamCop"}]);
    api.set_report(name, report(name, 1, 1, listing));
    until(start, 9, 0).await;
    let listed =
        format!(r#"reputation_blacklist_listed{{kind="ip",asset="{name}",blacklist="SpamCop"}}"#);
    assert_eq!(sample(&app.metrics().await, &listed), None);
    // ...and answers again before the next poll, which asks for it again.
    api.set_outage(ASSET, None);
    until(start, 10, 10).await;
    assert_eq!(
        sample(&app.metrics().await, &listed),
        Some(1.0),
        "{}",
        app.logs()
    );
}

/// The most report requests in flight at once among `arrivals` (on the paused clock, each
/// answered `delay` after it arrived, unless it waited for a permit first: then later, so this
/// counts from arrival, which the simulated API records once a request reaches it).
fn most_in_flight(arrivals: &[tokio::time::Instant], delay: Duration) -> usize {
    arrivals
        .iter()
        .map(|&at| {
            arrivals
                .iter()
                .filter(|&&other| other <= at && at < other + delay)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[tokio::test(start_paused = true)]
async fn a_fleet_wide_change_and_the_round_share_the_report_concurrency() {
    let assets = 40;
    let api = SimulatedApi::new(assets, 0);
    let delay = Duration::from_secs(1);
    api.set_report_delay(delay);
    let start = tokio::time::Instant::now();
    // 5-minute polls, and report rounds as often: the second round begins with the poll that
    // sees the change.
    let _app = PausedApp::start(api.clone(), "5m", "1h", |s| {
        s.asset_reports.enabled = true;
        s.asset_reports.interval = crate::helpers::duration("5m");
        s.asset_reports.concurrency = 4;
    })
    .await;

    // The first round: every report, four at a time.
    until(start, 1, 0).await;
    let first_round = api.arrivals(ASSET);
    assert_eq!(first_round.len(), assets);
    assert_eq!(most_in_flight(&first_round, delay), 4);

    // Every asset listed once more at minute 2: the poll of minute 5 follows all of them at
    // once, while the second round fetches its first reports.
    let mut items = api.items(List::Ip);
    for item in &mut items {
        item["blacklisted"] = json!(item["blacklisted"].as_i64().unwrap() + 1);
        item["blacklisted_change"] = json!({ "last_check": 1 });
    }
    api.set_items(List::Ip, items);
    until(start, 5, 30).await;
    let arrivals = api.arrivals(ASSET);
    let since_the_poll: Vec<_> = arrivals[assets..].to_vec();
    // The round spreads its 40 requests over its 5 minutes, one every 7.5 s from 5:00: four
    // by 5:30.
    assert_eq!(
        since_the_poll.len(),
        assets + 4,
        "every follow-up and the round's requests so far"
    );
    assert_eq!(
        most_in_flight(&since_the_poll, delay),
        4,
        "asset_reports.concurrency bounds the round and the follow-ups together"
    );
}
