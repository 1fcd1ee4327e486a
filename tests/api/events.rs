//! Events with an identity, on Tokio's paused clock at production's intervals (5-minute polls,
//! hourly report rounds, the default scope of reports: the listed assets): two replicas, a warm
//! restart and a cold one serve the same listing events, labelled by the API check at which the
//! listings began; a delisting ends its event at the next poll, and so does the asset leaving
//! the account.

use std::time::Duration;

use reputation_exporter::events::{
    BLOCK_EVENT, DROP_EVENT, LISTING_EVENT, UNNAMED_EVENT, check_label,
};
use reputation_simulate::date::api_date;
use reputation_simulate::{List, SimulatedApi};
use serde_json::{Value, json};

use crate::helpers::{PausedApp, StateDir};

const NAME: &str = "192.0.2.5";
const ASSET: &str = "/api/v1/asset";
const MINUTE: i64 = 60;
const HOUR: i64 = 3600;

/// Sleeps (on the paused clock) until `minutes` after `start`.
async fn until(start: tokio::time::Instant, minutes: u64) {
    tokio::time::sleep_until(start + Duration::from_secs(minutes * 60)).await;
}

/// The asset's list item with this blacklisting count and change.
fn set_listed(api: &SimulatedApi, count: i64, change: i64) {
    let mut items = api.items(List::Ip);
    let item = items
        .iter_mut()
        .find(|item| item["ip"] == NAME)
        .expect("the asset is in the list");
    item["blacklisted"] = json!(count);
    item["blacklisted_change"] = json!({ "last_check": change });
    api.set_items(List::Ip, items);
}

/// An event of the asset's report: `status` on `blacklist` at Unix time `at`.
fn event(at: i64, status: &str, blacklist: &str) -> Value {
    json!({"date": api_date(at).unwrap(), "status": status, "blacklist": blacklist})
}

/// The asset's report, saying this count and change, with these listing events.
fn report(count: i64, change: i64, events: &[Value]) -> Value {
    json!({
        "value": NAME,
        "tags": ["pool-a"],
        "blacklisted": count,
        "blacklisted_change": {"last_check": change},
        "blacklist_history": events,
    })
}

/// The listing event lines of a scrape, in order.
fn events(body: &str) -> Vec<String> {
    body.lines()
        .filter(|l| l.starts_with(&format!("{LISTING_EVENT}{{")))
        .map(str::to_owned)
        .collect()
}

/// The line of the asset's listing on `blacklist` at Unix time `check`.
fn line(blacklist: &str, check: i64) -> String {
    let label = check_label(check as f64);
    format!(
        r#"{LISTING_EVENT}{{kind="ip",asset="{NAME}",blacklist="{blacklist}",check="{label}"}} {check}"#
    )
}

#[tokio::test(start_paused = true)]
async fn replicas_and_restarts_serve_one_identity_per_listing_until_it_ends() {
    let state = StateDir::new("identity");
    let keep = state.keep();
    // The wall clock to the minute: the API's dates have minutes only.
    let now = reputation_exporter::health::unix_now() as i64 / MINUTE * MINUTE;
    let (two_at_once, earlier) = (now - 20 * MINUTE, now - 5 * HOUR);
    let api = SimulatedApi::new(12, 0);
    set_listed(&api, 4, 2);
    let listings = vec![
        // Two lists at one check: an event each, of one check.
        event(two_at_once, "Listed", "SpamCop"),
        event(two_at_once, "Listed", "BARRACUDA"),
        // Another check, still young: an event of its own.
        event(earlier, "Listed", "UCEPROTECT-1"),
        // Days old: no longer news.
        event(now - 3 * 24 * HOUR, "Listed", "Spamhaus SBL"),
        // A list that has shut down: never news.
        event(now - 30 * MINUTE, "Listed", "SORBS DUHL"),
    ];
    api.set_report(NAME, report(4, 2, &listings));
    let start = tokio::time::Instant::now();
    let expected = vec![
        line("UCEPROTECT-1", earlier),
        line("BARRACUDA", two_at_once),
        line("SpamCop", two_at_once),
    ];

    // Two replicas, one keeping a state store; the default scope reports on the listed asset.
    let one = PausedApp::start(api.clone(), "5m", "1h", keep.clone()).await;
    let two = PausedApp::start(api.clone(), "5m", "1h", |_| {}).await;
    until(start, 1).await;
    assert_eq!(events(&one.metrics().await), expected, "{}", one.logs());
    assert_eq!(events(&two.metrics().await), expected, "{}", two.logs());

    // A warm restart serves the same identities before its first poll has answered.
    one.stop(&state.account()).await;
    api.hold();
    let one = PausedApp::start(api.clone(), "5m", "1h", keep).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(events(&one.metrics().await), expected, "{}", one.logs());
    api.release();

    // A cold restart serves them from its first round.
    drop(two);
    let two = PausedApp::start(api.clone(), "5m", "1h", |_| {}).await;
    until(start, 3).await;
    assert_eq!(events(&two.metrics().await), expected, "{}", two.logs());

    // SpamCop and BARRACUDA delist at the next check: their events end at the poll that shows
    // it, the report following the list; the other stands.
    let mut delisted = listings.clone();
    delisted.push(event(now + 5 * MINUTE, "Delisted", "SpamCop"));
    delisted.push(event(now + 5 * MINUTE, "Delisted", "BARRACUDA"));
    set_listed(&api, 2, -2);
    api.set_report(NAME, report(2, -2, &delisted));
    until(start, 11).await;
    for replica in [&one, &two] {
        assert_eq!(
            events(&replica.metrics().await),
            vec![line("UCEPROTECT-1", earlier)]
        );
    }

    // The asset leaves the account: every event of it ends at the next poll.
    api.remove_asset(NAME);
    until(start, 16).await;
    for replica in [&one, &two] {
        assert_eq!(events(&replica.metrics().await), Vec::<String>::new());
    }
}

/// The rise event lines of a scrape, in order.
fn unnamed(body: &str) -> Vec<String> {
    body.lines()
        .filter(|l| l.starts_with(&format!("{UNNAMED_EVENT}{{")))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_report_minutes_late_names_the_rise_both_replicas_paged_and_pages_nothing_more() {
    let state = StateDir::new("late");
    let keep = state.keep();
    let now = reputation_exporter::health::unix_now() as i64 / MINUTE * MINUTE;
    let began = now - 20 * MINUTE;
    let api = SimulatedApi::new(12, 0);
    set_listed(&api, 0, 0);
    api.set_report(NAME, report(0, 0, &[]));
    let start = tokio::time::Instant::now();
    let one = PausedApp::start(api.clone(), "5m", "1h", keep.clone()).await;
    let two = PausedApp::start(api.clone(), "5m", "1h", |_| {}).await;
    until(start, 1).await;

    // Listed at minute 2 (dated 20 minutes back); the reports answer 503 from then until
    // minute 11, so the report the rise fetches at the poll of minute 5 comes through its
    // retries more than a poll and 3 minutes after the listing began.
    api.set_outage(ASSET, Some(503));
    set_listed(&api, 1, 1);
    api.set_report(NAME, report(1, 1, &[event(began, "Listed", "SpamCop")]));
    until(start, 7).await;
    for replica in [&one, &two] {
        let body = replica.metrics().await;
        assert_eq!(
            unnamed(&body),
            Vec::<String>::new(),
            "waiting for the report"
        );
    }
    until(start, 11).await;
    api.set_outage(ASSET, None);

    // The report comes: the listing is named (reputation_blacklist_listed) and is the rise's,
    // so no listing event pages it; both replicas serve the rise's one event.
    until(start, 16).await;
    let first = unnamed(&one.metrics().await);
    assert_eq!(first.len(), 1, "{}", one.logs());
    for replica in [&one, &two] {
        let body = replica.metrics().await;
        let listed = format!(
            r#"reputation_blacklist_listed{{kind="ip",asset="{NAME}",blacklist="SpamCop"}} 1"#
        );
        assert!(body.contains(&listed), "{}", replica.logs());
        assert_eq!(events(&body), Vec::<String>::new());
        assert_eq!(unnamed(&body).len(), 1);
    }

    // A warm restart remembers the rise and whose listing it is: the same event, at once. (Its
    // value, the Unix time the rise was seen, is told from the paused clock, which the wall's
    // does not follow: the labels are the event.)
    let labels = |lines: Vec<String>| -> Vec<String> {
        lines
            .iter()
            .map(|l| l.rsplit_once(' ').unwrap().0.to_owned())
            .collect()
    };
    let before = labels(unnamed(&one.metrics().await));
    one.stop(&state.account()).await;
    api.hold();
    let one = PausedApp::start(api.clone(), "5m", "1h", keep).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let body = one.metrics().await;
    assert_eq!(labels(unnamed(&body)), before, "{}", one.logs());
    assert_eq!(events(&body), Vec::<String>::new());
    api.release();
    until(start, 18).await;
    let body = one.metrics().await;
    assert_eq!(labels(unnamed(&body)), before);
    assert_eq!(events(&body), Vec::<String>::new());

    // Delisted: the event ends at the poll that shows it.
    let delisted = [
        event(began, "Listed", "SpamCop"),
        event(now + 20 * MINUTE, "Delisted", "SpamCop"),
    ];
    set_listed(&api, 0, -1);
    api.set_report(NAME, report(0, -1, &delisted));
    until(start, 23).await;
    for replica in [&one, &two] {
        let body = replica.metrics().await;
        assert_eq!(unnamed(&body), Vec::<String>::new());
        assert_eq!(events(&body), Vec::<String>::new());
    }
}

/// The asset's list item with this score and its change, and this SNDS block and its change.
fn set_score(api: &SimulatedApi, score: i64, change: i64, blocked: i64, block_change: i64) {
    let mut items = api.items(List::Ip);
    let item = items
        .iter_mut()
        .find(|item| item["ip"] == NAME)
        .expect("the asset is in the list");
    item["senderscore"] = json!(score);
    item["senderscore_prev"] = json!(score - change);
    item["senderscore_change"] = json!({ "last_check": change });
    item["snds_blocked"] = json!(blocked);
    item["snds_blocked_change"] = json!({ "last_check": block_change });
    api.set_items(List::Ip, items);
}

/// The score drop and SNDS block event lines of a scrape, in order.
fn changes(body: &str) -> Vec<String> {
    body.lines()
        .filter(|l| {
            l.starts_with(&format!("{DROP_EVENT}{{")) || l.starts_with(&format!("{BLOCK_EVENT}{{"))
        })
        .map(str::to_owned)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_drop_and_a_block_are_one_event_on_every_replica_through_flips_and_restarts() {
    let api = SimulatedApi::new(12, 0);
    set_score(&api, 85, 0, 0, 0);
    let start = tokio::time::Instant::now();
    let one = PausedApp::start(api.clone(), "5m", "1h", |_| {}).await;
    let mut two = PausedApp::start(api.clone(), "5m", "1h", |_| {}).await;
    until(start, 1).await;
    for replica in [&one, &two] {
        assert_eq!(changes(&replica.metrics().await), Vec::<String>::new());
    }
    let expected = vec![
        format!(r#"{DROP_EVENT}{{kind="ip",asset="{NAME}",from="85",to="70"}} 15"#),
        format!(r#"{BLOCK_EVENT}{{kind="ip",asset="{NAME}"}} 1"#),
    ];

    // The API's check of minute 2 drops the score and blocks the asset: both replicas serve the
    // same events from their next poll.
    set_score(&api, 70, -15, 1, 1);
    until(start, 6).await;
    for replica in [&one, &two] {
        assert_eq!(changes(&replica.metrics().await), expected);
    }

    // The API's answers flip at every poll for half an hour: the events stand throughout.
    for poll in 0..6_u64 {
        if poll % 2 == 0 {
            set_score(&api, 70, 0, 1, 0);
        } else {
            set_score(&api, 70, -15, 1, 1);
        }
        until(start, 11 + 5 * poll).await;
        for replica in [&one, &two] {
            assert_eq!(changes(&replica.metrics().await), expected, "poll {poll}");
        }
    }

    // A cold restart while the list still shows them serves them from its first poll.
    drop(two);
    two = PausedApp::start(api.clone(), "5m", "1h", |_| {}).await;
    until(start, 42).await;
    assert_eq!(changes(&two.metrics().await), expected, "{}", two.logs());

    // The next check shows neither: they end at the second list without them.
    set_score(&api, 70, 0, 1, 0);
    until(start, 46).await;
    assert_eq!(
        changes(&one.metrics().await),
        expected,
        "one list without them"
    );
    until(start, 52).await;
    for replica in [&one, &two] {
        assert_eq!(changes(&replica.metrics().await), Vec::<String>::new());
    }
}
