//! What the defaults cost the API, over a simulated day at production's pace on Tokio's paused
//! clock: 10,000 addresses of which 400 stand listed (reports that agree with their lists),
//! four new listings in the day, a warm restart at noon; 5-minute polls, 6-hour report rounds,
//! the state store. By default the exporter fetches the reports of the listed assets only:
//! the API pays for the listings, not the fleet, and each new listing is still served named
//! within a poll and a minute. The figures are in docs/benchmarks.md.

use std::path::PathBuf;
use std::time::Duration;

use reputation_exporter::config::Settings;
use reputation_simulate::{List, SimulatedApi, date::api_date};
use serde_json::{Value, json};

use crate::helpers::{PausedApp, duration};

const ASSETS: usize = 10_000;
/// One asset in 25 stands listed: 400.
const EVERY: usize = 25;
const HOUR: Duration = Duration::from_secs(3600);
const PATHS: [&str; 5] = [
    "/api/v1/ip-list",
    "/api/v1/domain-list",
    "/api/v1/system-check",
    "/api/v1/user",
    "/api/v1/asset",
];

/// A report that says `count` blacklistings, `change` at the last check, on SpamCop since
/// `since` (Unix time) when listed.
fn report(name: &str, count: i64, change: i64, since: i64) -> Value {
    let events = if count > 0 {
        json!([{"date": api_date(since), "status": "Listed", "blacklist": "SpamCop"}])
    } else {
        json!([])
    };
    json!({
        "value": name,
        "tags": ["team-transactional"],
        "blacklisted": count,
        "blacklisted_change": {"last_check": change},
        "blacklist_history": events,
    })
}

/// The fleet: every 25th address listed on SpamCop for a week, its report agreeing.
fn fleet(api: &SimulatedApi, now: i64) {
    let mut items = api.items(List::Ip);
    for (i, item) in items.iter_mut().enumerate() {
        let listed = i64::from(i % EVERY == 0);
        item["blacklisted"] = json!(listed);
        item["blacklisted_change"] = json!({ "last_check": 0 });
        let name = item["ip"].as_str().unwrap().to_owned();
        api.set_report(&name, report(&name, listed, 0, now - 7 * 86_400));
    }
    api.set_items(List::Ip, items);
}

/// Lists address `i` anew: the list's count and change, and its report naming SpamCop.
fn list_anew(api: &SimulatedApi, i: usize, now: i64) -> String {
    let mut items = api.items(List::Ip);
    let name = items[i]["ip"].as_str().unwrap().to_owned();
    items[i]["blacklisted"] = json!(1);
    items[i]["blacklisted_change"] = json!({ "last_check": 1 });
    api.set_items(List::Ip, items);
    api.set_report(&name, report(&name, 1, 1, now));
    name
}

/// Every request the API received.
fn requests(api: &SimulatedApi) -> usize {
    PATHS.iter().map(|path| api.requests(path)).sum()
}

/// The state directory of this test, removed at the end.
struct StateDir(PathBuf);

impl Drop for StateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test(start_paused = true)]
async fn a_day_at_the_defaults_costs_the_api_in_proportion_to_the_listings_not_the_fleet() {
    let state = StateDir(
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cost-{}", std::process::id())),
    );
    let _ = std::fs::remove_dir_all(&state.0);
    let dir = state.0.clone();
    let defaults = move |s: &mut Settings| {
        s.state.enabled = true;
        s.state.path = Some(dir.clone());
    };
    let api = SimulatedApi::new(ASSETS, 0);
    let wall = jiff::Timestamp::now().as_second();
    fleet(&api, wall);
    let start = tokio::time::Instant::now();
    assert_eq!(
        Settings::default().asset_reports.interval,
        duration("6h"),
        "the default round"
    );
    let mut app = PausedApp::start(api.clone(), "5m", "1h", defaults.clone()).await;

    // A new listing at 3, 9, 15 and 21 o'clock; a warm restart at 12:30.
    let mut named_within = Vec::new();
    let mut restart_cost = None;
    for (n, hour) in [3u32, 9, 15, 21].into_iter().enumerate() {
        tokio::time::sleep_until(start + HOUR * hour).await;
        let name = list_anew(&api, n * EVERY + 1, wall);
        let listed_at = tokio::time::Instant::now();
        let served = format!(
            "reputation_blacklist_listed{{kind=\"ip\",asset=\"{name}\",blacklist=\"SpamCop\"}} 1\n"
        );
        while !app.metrics().await.contains(&served) {
            assert!(
                listed_at.elapsed() < Duration::from_secs(30 * 60),
                "{name} not named in 30 minutes: {}",
                app.logs()
            );
            tokio::time::sleep(Duration::from_secs(15)).await;
        }
        named_within.push(listed_at.elapsed());
        if hour == 9 {
            tokio::time::sleep_until(start + HOUR * 12 + HOUR / 2).await;
            app.stop(&state.0.join("api")).await;
            let before = api.requests("/api/v1/asset");
            app = PausedApp::start(api.clone(), "5m", "1h", defaults.clone()).await;
            tokio::time::sleep(HOUR).await;
            restart_cost = Some(api.requests("/api/v1/asset") - before);
        }
    }
    tokio::time::sleep_until(start + HOUR * 24).await;
    let total = requests(&api);
    let reports = api.requests("/api/v1/asset");
    let restart_cost = restart_cost.unwrap();
    eprintln!(
        "a day at the defaults, {ASSETS} assets, {} listed: {total} requests ({reports} asset \
         reports); new listings named within {named_within:?}; {restart_cost} report requests in \
         the hour after a warm restart",
        ASSETS / EVERY
    );
    assert!(total <= 3_000, "{total} requests in a day");
    assert!(
        named_within
            .iter()
            .all(|d| *d <= Duration::from_secs(6 * 60)),
        "a new listing named later than a poll and a minute: {named_within:?}"
    );
    assert!(
        restart_cost <= ASSETS / 100,
        "{restart_cost} report requests after a restart"
    );
    drop(app);
}
