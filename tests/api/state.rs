//! The state store: a restart serves what the exporter knew at once, with its real age, and
//! fetches only the reports that are due; a store that cannot be used is set aside, said once,
//! and the exporter starts cold.

use std::time::Duration;

use reputation_exporter::config::Settings;
use reputation_simulate::SimulatedApi;

use crate::helpers::{PausedApp, StateDir, sample};

const ASSET: &str = "/api/v1/asset";
const IP_LIST: &str = "/api/v1/ip-list";
const LAST_LIST: &str = r#"reputation_last_success_timestamp_seconds{endpoint="ip-list"}"#;

/// Sleeps (on the paused clock) until `minutes` after `start`.
async fn until(start: tokio::time::Instant, minutes: u64) {
    tokio::time::sleep_until(start + Duration::from_secs(minutes * 60)).await;
}

/// Stops an exporter as a restart does: until it has let go of the store.
async fn stop(app: PausedApp, state: &StateDir) {
    app.stop(&state.account()).await;
}

/// The asset series of a scrape: every line of a per-asset family, in order.
fn asset_lines(body: &str) -> Vec<&str> {
    body.lines()
        .filter(|l| l.contains("asset=\""))
        .filter(|l| !l.starts_with('#'))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_restart_serves_what_was_stored_at_once_and_fetches_only_the_reports_that_are_due() {
    let state = StateDir::new("restart");
    let api = SimulatedApi::new(30, 10);
    let start = tokio::time::Instant::now();
    let first = PausedApp::start(api.clone(), "5m", "1h", state.keep_reporting()).await;

    // The first round has fetched every report; the polls go on to minute 30.
    until(start, 1).await;
    assert_eq!(api.requests(ASSET), 40);
    until(start, 30).await;
    let before = first.metrics().await;
    let listed_at = sample(&before, LAST_LIST).expect("a list poll's time");
    let polls = api.requests(IP_LIST);
    stop(first, &state).await;

    // Restarted while the API does not answer yet: everything is served from the store, the
    // lists' ages as they were.
    api.hold();
    let second = PausedApp::start(api.clone(), "5m", "1h", state.keep_reporting()).await;
    let restored = second.metrics().await;
    assert_eq!(
        asset_lines(&restored),
        asset_lines(&before),
        "{}",
        second.logs()
    );
    assert_eq!(sample(&restored, LAST_LIST), Some(listed_at));
    assert!(
        second
            .logs()
            .contains("serving what the state store kept until the API answers"),
        "{}",
        second.logs()
    );
    api.release();

    // The lists are polled at once; no report is fetched before it is due, a round after the
    // first run fetched it (the store's times are wall-clock, which the paused clock does not
    // move: they are due an hour after the restart).
    until(start, 31).await;
    assert_eq!(api.requests(IP_LIST), polls + 1);
    until(start, 89).await;
    assert_eq!(
        api.requests(ASSET),
        40,
        "no report fetched before it is due"
    );
    until(start, 92).await;
    assert_eq!(api.requests(ASSET), 80, "each report once, when due");
    drop(second);
}

#[tokio::test(start_paused = true)]
async fn reports_follow_the_list_from_the_first_poll_after_a_restart() {
    let state = StateDir::new("follow");
    let api = SimulatedApi::new(12, 0);
    let start = tokio::time::Instant::now();
    let first = PausedApp::start(api.clone(), "5m", "1h", state.keep_reporting()).await;
    until(start, 1).await;
    assert_eq!(api.requests(ASSET), 12);
    stop(first, &state).await;

    // One asset listed while the exporter was down: the first poll after the restart fetches
    // its report, and that one only.
    let mut items = api.items(reputation_simulate::List::Ip);
    items[3]["blacklisted"] = serde_json::json!(items[3]["blacklisted"].as_i64().unwrap() + 1);
    items[3]["blacklisted_change"] = serde_json::json!({ "last_check": 1 });
    api.set_items(reputation_simulate::List::Ip, items);
    let _second = PausedApp::start(api.clone(), "5m", "1h", state.keep_reporting()).await;
    until(start, 3).await;
    assert_eq!(api.requests(ASSET), 13);
}

#[tokio::test(start_paused = true)]
async fn a_restart_does_not_ask_again_for_the_reports_that_disagreed_with_their_lists() {
    let state = StateDir::new("disagree");
    let api = SimulatedApi::new(200, 0);
    // Every list item says one blacklisting more than its report does (a list and a report
    // computed at different moments): each report is asked for, and again at every poll for
    // an hour; after a restart, not while the list says the same.
    let mut items = api.items(reputation_simulate::List::Ip);
    for item in &mut items {
        item["blacklisted"] = serde_json::json!(item["blacklisted"].as_i64().unwrap() + 1);
    }
    api.set_items(reputation_simulate::List::Ip, items);
    let start = tokio::time::Instant::now();
    let first = PausedApp::start(api.clone(), "5m", "1h", state.keep_reporting()).await;
    until(start, 12).await;
    // The first round, one follow-up each at the first poll after it (minute 5), and again at
    // the next (minute 10).
    assert_eq!(api.requests(ASSET), 600, "{}", first.logs());
    stop(first, &state).await;

    let second = PausedApp::start(api.clone(), "5m", "1h", state.keep_reporting()).await;
    until(start, 30).await;
    let asked = api.requests(ASSET) - 600;
    assert!(
        asked <= 2,
        "{asked} report requests after a warm restart, over 1% of 200 assets: {}",
        second.logs()
    );
    drop(second);
}

#[tokio::test(start_paused = true)]
async fn a_restart_serves_the_last_success_however_old_and_no_list_older_than_max_age() {
    let state = StateDir::new("old");
    let api = SimulatedApi::new(5, 0);
    let keep = state.keep_reporting();
    // The restart's max_age one the wall clock passes within the test (the store's times are
    // wall-clock; the paused clock does not move them).
    let short = move |s: &mut Settings| {
        keep(s);
        s.metrics.max_age = crate::helpers::duration("2s");
    };
    let start = tokio::time::Instant::now();
    let first = PausedApp::start(api.clone(), "5m", "1h", state.keep_reporting()).await;
    until(start, 1).await;
    let before = first.metrics().await;
    let listed_at = sample(&before, LAST_LIST).expect("a list poll's time");
    assert!(!asset_lines(&before).is_empty());
    stop(first, &state).await;

    // Restarted during an outage, the stored lists older than max_age: no asset is served,
    // and the lists' last success is the stored one, so the data's staleness goes on counting
    // from it (not from nothing, as after a cold start).
    std::thread::sleep(Duration::from_millis(2500));
    api.hold();
    let second = PausedApp::start(api.clone(), "5m", "1h", short).await;
    let restored = second.metrics().await;
    assert_eq!(
        asset_lines(&restored),
        Vec::<&str>::new(),
        "{}",
        second.logs()
    );
    assert_eq!(sample(&restored, LAST_LIST), Some(listed_at), "{restored}");
    api.release();
    drop(second);
}

/// Starts an exporter on `state` after `spoil` has done its worst to the stored account, and
/// checks it starts cold: one warning naming the store, every report fetched at once, and the
/// spoiled store set aside, not lost.
async fn starts_cold_after(test: &str, spoil: impl FnOnce(&StateDir), said: &str) {
    let state = StateDir::new(test);
    let api = SimulatedApi::new(8, 0);
    let start = tokio::time::Instant::now();
    let first = PausedApp::start(api.clone(), "5m", "1h", state.keep_reporting()).await;
    until(start, 1).await;
    stop(first, &state).await;
    spoil(&state);

    let second = PausedApp::start(api.clone(), "5m", "1h", state.keep_reporting()).await;
    until(start, 3).await;
    let logs = second.logs();
    let store = state.account().join("state.redb");
    assert!(logs.contains(said), "{test}: {logs}");
    let warnings: Vec<&str> = logs.lines().filter(|l| l.contains("level=warn")).collect();
    assert_eq!(warnings.len(), 1, "{test}: one warning: {logs}");
    assert!(
        warnings[0].contains(&store.display().to_string()),
        "{test}: the warning names the store: {}",
        warnings[0]
    );
    assert_eq!(
        api.requests(ASSET),
        16,
        "{test}: every report fetched again at once"
    );
    let set_aside = std::fs::read_dir(state.account())
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with("state.redb.set-aside-")
        })
        .count();
    assert_eq!(set_aside, 1, "{test}: the spoiled store is set aside");
    // The fresh store works: a restart from it is warm.
    stop(second, &state).await;
    let third = PausedApp::start(api.clone(), "5m", "1h", state.keep_reporting()).await;
    assert!(
        third.logs().contains("serving what the state store kept"),
        "{test}: {}",
        third.logs()
    );
}

#[tokio::test(start_paused = true)]
async fn a_corrupt_truncated_or_foreign_store_is_set_aside_with_one_warning_and_a_cold_start() {
    starts_cold_after(
        "garbage",
        |state| {
            std::fs::write(state.account().join("state.redb"), vec![0x5a; 64 * 1024]).unwrap();
        },
        "the state store cannot be used",
    )
    .await;
    starts_cold_after(
        "truncated",
        |state| {
            let path = state.account().join("state.redb");
            let length = std::fs::metadata(&path).unwrap().len();
            let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            file.set_len(length / 3).unwrap();
        },
        "the state store cannot be used",
    )
    .await;
    starts_cold_after(
        "unreadable",
        |state| {
            // Where the database should be, something no database can be read from.
            let path = state.account().join("state.redb");
            std::fs::remove_file(&path).unwrap();
            std::fs::create_dir(&path).unwrap();
        },
        "the state store cannot be used",
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_store_of_another_account_is_not_used() {
    let state = StateDir::new("other-account");
    let api = SimulatedApi::new(8, 0);
    let start = tokio::time::Instant::now();
    let first = PausedApp::start(api.clone(), "5m", "1h", state.keep_reporting()).await;
    until(start, 1).await;
    stop(first, &state).await;

    // The same directory, another token: another account (or user) of the API.
    let keep = state.keep_reporting();
    api.set_token("another-token");
    let second = PausedApp::accounts(vec![("", api.clone())], "5m", move |s| {
        keep(s);
        s.api.token = Some(reputation_exporter::vocabulary::Secret::new(
            "another-token",
        ));
    })
    .await;
    until(start, 3).await;
    let logs = second.logs();
    assert!(
        logs.contains("of another account (API address or token)"),
        "{logs}"
    );
    assert_eq!(api.requests(ASSET), 16, "every report fetched again");
    assert!(!logs.contains("another-token"), "the token is never shown");
    let stored = std::fs::read(state.account().join("state.redb")).unwrap();
    for token in [reputation_simulate::DEMO_TOKEN, "another-token"] {
        assert!(
            !stored.windows(token.len()).any(|w| w == token.as_bytes()),
            "the token {token} is written in the store"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_store_that_cannot_be_written_is_said_once_and_the_exporter_keeps_serving() {
    let state = StateDir::new("unwritable");
    let api = SimulatedApi::new(8, 0);
    let start = tokio::time::Instant::now();
    let app = PausedApp::start(api.clone(), "5m", "1h", state.keep_reporting()).await;
    until(start, 1).await;
    // The directory goes away under the exporter (as a full or failed disk would refuse its
    // writes): every list poll after it fails to write its body.
    std::fs::remove_dir_all(state.account()).unwrap();
    std::fs::write(state.account(), b"not a directory").unwrap();
    until(start, 16).await;
    let logs = app.logs();
    let said: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("cannot write the state store"))
        .collect();
    assert_eq!(said.len(), 1, "said once, not at every poll: {logs}");
    let body = app.metrics().await;
    assert_eq!(
        sample(&body, r#"reputation_assets{kind="ip"}"#),
        Some(8.0),
        "still serving"
    );
    assert_eq!(api.requests(IP_LIST), 4, "polled on schedule");
}

#[tokio::test(start_paused = true)]
async fn a_restart_into_another_shard_serves_only_the_stored_reports_it_selects() {
    let state = StateDir::new("reshard");
    let api = SimulatedApi::new(30, 10);
    let start = tokio::time::Instant::now();
    let first = PausedApp::start(api.clone(), "5m", "1h", state.keep_reporting()).await;
    until(start, 1).await;
    assert_eq!(api.requests(ASSET), 40);
    let named = |body: &str| {
        body.lines()
            .filter(|l| l.starts_with("reputation_blacklistings_named{"))
            .count()
    };
    assert_eq!(named(&first.metrics().await), 40);
    stop(first, &state).await;

    // The same store, now the first of two shards: the stored reports of the other shard's
    // assets are not served (this replica would never refresh them), and nothing is fetched.
    let keep = state.keep_reporting();
    let second = PausedApp::start(api.clone(), "5m", "1h", move |s| {
        keep(s);
        s.asset_reports.replica = "1/2".parse().unwrap();
    })
    .await;
    until(start, 2).await;
    let served = named(&second.metrics().await);
    assert!(served > 0 && served < 40, "{served} of 40 reports served");
    let selection =
        reputation_exporter::poll::selection::Selection::new(None, None, "1/2".parse().unwrap());
    let body = second.metrics().await;
    for line in body
        .lines()
        .filter(|l| l.starts_with("reputation_blacklistings_named{"))
    {
        let asset = line
            .split("asset=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert!(
            selection.selects(asset),
            "{asset} is not of shard 1/2: {line}"
        );
    }
    assert_eq!(
        api.requests(ASSET),
        40,
        "nothing fetched: the kept reports are not due"
    );
}
