//! The exporter as tests/rules/stories.py models it, checked against the exporter itself: the
//! stories of `tests/rules/exporter_stories.json` (written by `stories.py --exporter-check`,
//! with what the model says the exporter serves each minute) replayed on Tokio's paused clock
//! against the simulated API, at production's intervals: 5-minute polls, `metrics.max_age` of
//! an hour, the API checking each asset hourly, warm and cold restarts, API outages past
//! max_age, failing reports. Each minute's scrape must serve each asset's list count, the
//! number of listings its report names and when its report says the count rose exactly as the
//! model says, and the score's and SNDS block's changes no list showed (a drop or a block the
//! API checked in an outage, which the first list after shows as missed), so that the
//! stories' model cannot drift from what it models. The stories leave
//! out a warm restart within `metrics.max_age` of an outage's start: the state store dates what
//! it keeps by the wall clock, which the paused clock leaves behind, so a list read back would
//! be taken for fresher or staler than it is (seed 626 of `stories.py` is such a story).

use std::path::PathBuf;
use std::time::Duration;

use reputation_exporter::config::Settings;
use reputation_simulate::date::api_date;
use reputation_simulate::{List, SimulatedApi};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::helpers::{PausedApp, sample};

const STORIES: &str = include_str!("../rules/exporter_stories.json");
const CHECK: i64 = 60;

#[derive(Debug, Deserialize)]
struct Story {
    seed: u64,
    minutes: i64,
    check_phase: i64,
    restarts: Vec<(i64, i64, bool)>,
    outages: Vec<(i64, i64)>,
    report_fails: Vec<(i64, i64)>,
    assets: Vec<Asset>,
}

#[derive(Debug, Deserialize)]
struct Asset {
    name: String,
    /// (blacklist, first minute, end minute): named by the reports.
    listings: Vec<(String, i64, i64)>,
    /// (first minute, end minute): counted by the list, named by no report.
    unnamed: Vec<(i64, i64)>,
    /// The API's checks that took 12 points off the Sender Score.
    drops: Vec<i64>,
    /// (first check, end check): SNDS blocks.
    blocks: Vec<(i64, i64)>,
    /// Per minute, what the model says is served: the list's count, the listings the report
    /// names, the minute its report says the count rose, the listings that rise is net of and
    /// the score's and the block's missed changes (`None`: no series).
    served: Vec<Served>,
}

impl Story {
    fn within(intervals: &[(i64, i64)], minute: i64) -> bool {
        intervals.iter().any(|&(a, b)| a <= minute && minute < b)
    }

    /// The API's last check at or before `minute`.
    fn check_before(&self, minute: i64) -> i64 {
        minute - (minute - self.check_phase).rem_euclid(CHECK)
    }
}

impl Asset {
    /// The Sender Score at `check`.
    fn score_at(&self, check: i64) -> i64 {
        80 - 12 * self.drops.iter().filter(|&&d| d <= check).count() as i64
    }

    /// 1 when SNDS says the asset is blocked at `check`.
    fn blocked_at(&self, check: i64) -> i64 {
        i64::from(self.blocks.iter().any(|&(a, b)| a <= check && check < b))
    }

    fn count_at(&self, check: i64) -> i64 {
        let named = self.listings.iter().map(|(_, s, e)| (*s, *e));
        let periods = named.chain(self.unnamed.iter().copied());
        periods.filter(|&(s, e)| s <= check && check < e).count() as i64
    }

    /// Its report at `minute`: the list's count and its history at the API's last two checks
    /// (`check` the last), and every blacklist event so far, dated from `base` (Unix seconds of
    /// minute 0).
    fn report(&self, count: i64, change: i64, minute: i64, check: i64, base: i64) -> Value {
        let date = |minute: i64| api_date(base + minute * 60).expect("a date in range");
        let mut events: Vec<(i64, &str, &str)> = Vec::new();
        for (blacklist, s, e) in &self.listings {
            if *s <= minute {
                events.push((*s, "Listed", blacklist));
            }
            if *e <= minute {
                events.push((*e, "Delisted", blacklist));
            }
        }
        events.sort();
        let history: Vec<Value> = events
            .iter()
            .rev()
            .map(|(at, status, blacklist)| {
                json!({
                    "date": date(*at),
                    "status": status,
                    "blacklist": blacklist,
                })
            })
            .collect();
        json!({
            "value": self.name,
            "tags": [],
            "blacklisted": count,
            "blacklisted_change": {"last_check": change},
            "blacklist_history": history,
            "blacklisted_history": [
                {"value": self.count_at(check), "date": date(check)},
                {"value": self.count_at(check - CHECK), "date": date(check - CHECK)},
            ],
        })
    }
}

/// Sets the API as it is at `minute`: the list items' counts and changes as of its last
/// check, the reports, and the outages.
fn set_api(api: &SimulatedApi, story: &Story, minute: i64, base: i64) {
    let check = story.check_before(minute);
    let mut items = api.items(List::Ip);
    for asset in &story.assets {
        let count = asset.count_at(check);
        let change = count - asset.count_at(check - CHECK);
        let item = items
            .iter_mut()
            .find(|item| item["ip"] == asset.name.as_str())
            .expect("the asset is in the list");
        item["blacklisted"] = json!(count);
        item["blacklisted_change"] = json!({ "last_check": change });
        let score = asset.score_at(check);
        item["senderscore"] = json!(score);
        item["senderscore_change"] = json!({ "last_check": score - asset.score_at(check - CHECK) });
        let blocked = asset.blocked_at(check);
        item["snds_blocked"] = json!(blocked);
        item["snds_blocked_change"] =
            json!({ "last_check": blocked - asset.blocked_at(check - CHECK) });
        api.set_report(
            &asset.name,
            asset.report(count, change, minute, check, base),
        );
    }
    api.set_items(List::Ip, items);
    let outage = Story::within(&story.outages, minute).then_some(503);
    for path in ["/api/v1/ip-list", "/api/v1/domain-list"] {
        api.set_outage(path, outage);
    }
    let reports_fail = outage.is_some() || Story::within(&story.report_fails, minute);
    api.set_outage("/api/v1/asset", reports_fail.then_some(503));
}

/// What is served of an asset: its list count, the listings its report names, the story's
/// minute its report says the count rose, the listings ended that rise is net of, and the
/// score's and the SNDS block's missed changes.
type Served = (
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

/// What a scrape serves of `asset`, minute 0 at `base` (Unix seconds).
fn served(body: &str, asset: &str, base: i64) -> Served {
    let value = |family: &str| {
        sample(body, &format!(r#"{family}{{kind="ip",asset="{asset}"}}"#)).map(|v| v as i64)
    };
    (
        value("reputation_blacklistings"),
        value("reputation_blacklistings_named"),
        value("reputation_blacklistings_rise_timestamp_seconds").map(|at| (at - base) / 60),
        value("reputation_blacklistings_rise_ended"),
        value("reputation_senderscore_missed_change"),
        value("reputation_snds_blocked_missed_change"),
    )
}

/// A state directory of the test's own, removed at the end.
struct StateDir(PathBuf);

impl Drop for StateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn replay(story: &Story) {
    let dir = StateDir(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "model-{}-{}",
        story.seed,
        std::process::id()
    )));
    let _ = std::fs::remove_dir_all(&dir.0);
    let state = dir.0.clone();
    let settings = move |s: &mut Settings| {
        s.state.enabled = true;
        s.state.path = Some(state.clone());
        // Every asset's report, at a cold start and when its list entry changes: the story is
        // shorter than a round.
        s.asset_reports.enabled = true;
        s.asset_reports.interval = crate::helpers::duration("24h");
        // A poll whose retries all fail gives up within its minute.
        s.backoff.max_elapsed = crate::helpers::duration("20s");
    };
    let api = SimulatedApi::new(story.assets.len() + 1, 0);
    // Minute 0 of the story, in Unix seconds: two days ago, so that every event is past.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let base = now - now % 60 - 2 * 86_400;
    // Minute 0 begins 10 s from now, so that the API can be set before it.
    let start = tokio::time::Instant::now();
    let at = |minute: i64, seconds: i64| {
        start + Duration::from_secs((10 + minute * 60 + seconds).try_into().unwrap())
    };
    let start_app = || PausedApp::start(api.clone(), "5m", "1h", settings.clone());

    set_api(&api, story, 0, base);
    tokio::time::sleep_until(at(0, -1)).await;
    let mut app = Some(start_app().await);
    let mut mismatches = Vec::new();
    for minute in 0..story.minutes {
        if minute > 0 {
            tokio::time::sleep_until(at(minute, -2)).await;
            set_api(&api, story, minute, base);
            tokio::time::sleep_until(at(minute, -1)).await;
        }
        for &(first, end, warm) in &story.restarts {
            if minute == first
                && let Some(running) = app.take()
            {
                running.stop(&dir.0.join("api")).await;
            }
            if minute == end {
                if !warm {
                    let _ = std::fs::remove_dir_all(&dir.0);
                }
                app = Some(start_app().await);
            }
        }
        tokio::time::sleep_until(at(minute, 30)).await;
        let Some(running) = &app else {
            continue;
        };
        let body = running.metrics().await;
        for asset in &story.assets {
            let got = served(&body, &asset.name, base);
            let want = asset.served[minute as usize];
            if got != want {
                mismatches.push(format!(
                    "story {} minute {minute}, {}: the exporter serves (count, named, rose, ended, score missed, block missed) {got:?}, the model {want:?}",
                    story.seed, asset.name
                ));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} minutes differ:\n{}",
        mismatches.len(),
        mismatches[..mismatches.len().min(20)].join("\n")
    );
}

#[tokio::test(start_paused = true)]
async fn the_stories_model_serves_what_the_exporter_serves_minute_by_minute() {
    let stories: Vec<Story> = serde_json::from_str(STORIES).expect("exporter_stories.json");
    let any = |holds: &dyn Fn(&Story) -> bool| stories.iter().any(holds);
    assert!(any(&|s| s.restarts.iter().any(|r| r.2)), "a warm restart");
    assert!(any(&|s| s.restarts.iter().any(|r| !r.2)), "a cold restart");
    assert!(
        any(&|s| s.outages.iter().any(|o| o.1 - o.0 > 60)),
        "an outage past max_age"
    );
    assert!(any(&|s| !s.report_fails.is_empty()), "failing reports");
    let missed = |i: usize| {
        any(&|s| {
            s.assets
                .iter()
                .any(|a| a.served.iter().any(|x| [x.4, x.5][i].is_some()))
        })
    };
    assert!(missed(0), "a score drop no list showed");
    assert!(missed(1), "an SNDS block no list showed");
    assert!(
        any(&|s| s
            .assets
            .iter()
            .any(|a| a.served.iter().any(|x| x.2.is_some()))),
        "a report saying the count rose"
    );
    for story in &stories {
        replay(story).await;
    }
}
