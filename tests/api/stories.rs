//! The on-call promises over generated stories, driven through the exporter itself on Tokio's
//! paused clock: one to three replicas at different poll phases over six hours to a day, the
//! API checking hourly, listings (several at one check, reports minutes late), score drops, SNDS
//! blocks, answers that flip, scores gone missing, list outages, warm and cold restarts, and
//! the asset leaving the account. Every minute each replica is scraped as Prometheus would;
//! the events they serve are joined as the shipped alerts join them (one alert per label set,
//! served by any replica, held over gaps of `KEEP` minutes as `keep_firing_for` holds it), and
//! an oracle written from the story alone checks what pages:
//!
//! - every event pages exactly once, within a poll and three minutes of the exporter seeing it
//!   (the grace a report has to name a listing counted in);
//! - every page closes within two polls and `KEEP` minutes of its end;
//! - nothing pages without an event.
//!
//! The cases that broke a promise when the pages were a state machine in PromQL are stories of
//! their own ([`cases`]). `STORIES=N` sets how many are drawn (from seed 1; `STORY=SEED` runs
//! one), run side by side on every core; a failure names its seed and prints what was served.
//! The stories of the cases still open are listed in `tests/api/stories_open.txt`, each with
//! why; they are printed, not failed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use reputation_exporter::events::{
    BLOCK_EVENT, DROP_EVENT, LISTING_EVENT, Now, UNNAMED_EVENT, check_label,
};
use reputation_simulate::date::api_date;
use reputation_simulate::{List, SimulatedApi};
use serde_json::{Value, json};

use crate::helpers::{PausedApp, StateDir};

const NAME: &str = "192.0.2.5";
const IP_LIST: &str = "/api/v1/ip-list";
const DOMAIN_LIST: &str = "/api/v1/domain-list";
const ASSET_PATH: &str = "/api/v1/asset";
/// The API checks every asset hourly.
const CHECK: u64 = 60;
/// `poll.interval`, minutes.
const POLL: u64 = 5;
/// The alerts' `keep_firing_for`, minutes: a replica's restart is not an end.
const KEEP: u64 = 5;
/// A listing pages while younger than this, minutes.
const NEWS: u64 = 12 * 60;
const BLACKLISTS: [&str; 4] = ["SpamCop", "BARRACUDA", "Spamhaus SBL", "UCEPROTECT-1"];

/// One listing of the asset: on `blacklist` from check `begins` to check `ends`.
#[derive(Debug, Clone)]
struct Episode {
    blacklist: &'static str,
    begins: u64,
    ends: Option<u64>,
}

/// One replica: when it starts (its poll phase) and when it restarts (warm or cold).
#[derive(Debug, Clone)]
struct Replica {
    starts: u64,
    restarts: Vec<(u64, bool)>,
}

/// A story, drawn from its seed.
#[derive(Debug, Clone)]
struct Story {
    seed: u64,
    minutes: u64,
    /// Minute of the API's first check; then every hour.
    phase: u64,
    replicas: Vec<Replica>,
    episodes: Vec<Episode>,
    /// Minutes the reports answer 503 after each check at which listings begin.
    late: BTreeMap<u64, u64>,
    /// Checks at which the score drops by 15 (and recovers at the next).
    drops: Vec<u64>,
    /// Checks from which SNDS blocks the asset, to which.
    block: Option<(u64, u64)>,
    /// Minutes in which every other answer shows no change at the last check.
    flips: Option<(u64, u64)>,
    /// Minutes in which the answers have no score.
    missing: Option<(u64, u64)>,
    /// Minutes in which the lists answer 503.
    outage: Option<(u64, u64)>,
    /// Minute from which the asset is no longer in the account.
    removed: Option<u64>,
}

impl Story {
    fn draw(seed: u64) -> Story {
        let mut rng = fastrand::Rng::with_seed(seed);
        let minutes = [360, 720, 1440][rng.usize(..3)];
        let phase = rng.u64(1..CHECK);
        let checks = (minutes - phase) / CHECK;
        let replicas = (0..rng.u64(1..=3))
            .map(|_| {
                let starts = rng.u64(0..POLL);
                let restarts = (0..rng.usize(0..=2))
                    .map(|_| (rng.u64(30..minutes - 30), rng.bool()))
                    .collect();
                Replica { starts, restarts }
            })
            .collect();
        let mut episodes = Vec::new();
        let mut late = BTreeMap::new();
        for blacklist in BLACKLISTS {
            if rng.u8(..3) == 0 {
                continue;
            }
            let begins = rng.u64(1..checks.max(2));
            let ends = rng.bool().then(|| begins + rng.u64(2..6));
            if rng.u8(..3) == 0 {
                late.insert(begins, [4, 7, 12][rng.usize(..3)]);
            }
            episodes.push(Episode {
                blacklist,
                begins,
                ends,
            });
        }
        let mut drops: Vec<u64> = Vec::new();
        for _ in 0..rng.usize(0..=2) {
            let check = rng.u64(1..checks.max(2));
            if drops.iter().all(|d| d.abs_diff(check) >= 2) {
                drops.push(check);
            }
        }
        drops.sort_unstable();
        let block = rng.bool().then(|| {
            let begins = rng.u64(1..checks.max(2));
            (begins, begins + rng.u64(2..5))
        });
        let after_check = |rng: &mut fastrand::Rng, length: u64| {
            let check = rng.u64(1..checks.max(2));
            let from = phase + check * CHECK + 6;
            (from, from + length)
        };
        let flips = rng.bool().then(|| after_check(&mut rng, 40));
        let missing = (rng.u8(..3) == 0).then(|| after_check(&mut rng, 20));
        let outage = (rng.u8(..3) == 0).then(|| {
            let from = rng.u64(20..minutes - 60);
            (from, from + rng.u64(10..50))
        });
        let removed = (rng.u8(..4) == 0).then(|| rng.u64(minutes / 2..minutes - 30));
        Story {
            seed,
            minutes,
            phase,
            replicas,
            episodes,
            late,
            drops,
            block,
            flips,
            missing,
            outage,
            removed,
        }
    }

    /// Minute of check `n`.
    fn at(&self, check: u64) -> u64 {
        self.phase + check * CHECK
    }

    /// The last check at or before `minute`, if one was.
    fn check_of(&self, minute: u64) -> Option<u64> {
        minute.checked_sub(self.phase).map(|m| m / CHECK)
    }

    fn within(window: Option<(u64, u64)>, minute: u64) -> bool {
        window.is_some_and(|(from, to)| (from..to).contains(&minute))
    }

    /// Whether the lists answer at `minute`.
    fn up(&self, minute: u64) -> bool {
        !Story::within(self.outage, minute)
    }

    fn listed_at(&self, check: u64) -> Vec<&Episode> {
        (self.episodes.iter())
            .filter(|e| e.begins <= check && e.ends.is_none_or(|end| check < end))
            .collect()
    }

    fn score_at(&self, check: u64) -> i64 {
        if self.drops.contains(&check) { 70 } else { 85 }
    }

    fn blocked_at(&self, check: u64) -> i64 {
        i64::from(
            self.block
                .is_some_and(|(from, to)| (from..to).contains(&check)),
        )
    }
}

/// Sets the API as it answers at `minute`, dating its history from `base` (Unix seconds of
/// minute 0).
fn set_api(api: &SimulatedApi, story: &Story, minute: u64, base: i64) {
    // Before the story's first check, the asset as at check 0: no listing, no change.
    let (check, first) = match story.check_of(minute) {
        Some(check) => (check, check == 0),
        None => (0, true),
    };
    let before = check.saturating_sub(1);
    let count = story.listed_at(check).len() as i64;
    let count_change = if first {
        0
    } else {
        count - story.listed_at(before).len() as i64
    };
    let score = story.score_at(check);
    let score_change = if first {
        0
    } else {
        score - story.score_at(before)
    };
    let blocked = story.blocked_at(check);
    let block_change = if first {
        0
    } else {
        blocked - story.blocked_at(before)
    };
    // An answer that flips shows no change at every other minute.
    let hide = Story::within(story.flips, minute) && minute % 2 == 1;
    let shown = |change: i64| if hide { 0 } else { change };
    let mut items = api.items(List::Ip);
    let removed = story.removed.is_some_and(|r| minute >= r);
    items.retain(|item| !(removed && item["ip"] == NAME));
    if let Some(item) = items.iter_mut().find(|item| item["ip"] == NAME) {
        let missing = Story::within(story.missing, minute);
        item["senderscore"] = if missing { Value::Null } else { json!(score) };
        item["senderscore_prev"] = json!(score - score_change);
        item["senderscore_change"] = json!({ "last_check": shown(score_change) });
        item["blacklisted"] = json!(count);
        item["blacklisted_change"] = json!({ "last_check": shown(count_change) });
        item["snds_blocked"] = json!(blocked);
        item["snds_blocked_change"] = json!({ "last_check": shown(block_change) });
    } else if !removed {
        panic!("{NAME} is not in the simulated list");
    }
    api.set_items(List::Ip, items);
    let date = |minute: u64| api_date(base + minute as i64 * 60).expect("a date in range");
    let mut history: Vec<(u64, &str, &str)> = Vec::new();
    for episode in &story.episodes {
        if episode.begins <= check && !first {
            history.push((story.at(episode.begins), "Listed", episode.blacklist));
        }
        if let Some(end) = episode.ends.filter(|end| *end <= check && !first) {
            history.push((story.at(end), "Delisted", episode.blacklist));
        }
    }
    history.sort();
    let history: Vec<Value> = (history.iter().rev())
        .map(|(at, status, blacklist)| {
            json!({"date": date(*at), "status": status, "blacklist": blacklist})
        })
        .collect();
    api.set_report(
        NAME,
        json!({
            "value": NAME,
            "tags": ["pool-a"],
            "blacklisted": count,
            "blacklisted_change": {"last_check": count_change},
            "senderscore_history": [{"value": score.to_string(), "date": date(story.at(check))}],
            "blacklist_history": history,
        }),
    );
    // Reports answer 503 for a while after a check at which listings begin, when late.
    let late = (story.late.iter())
        .any(|(check, minutes)| (story.at(*check)..story.at(*check) + minutes).contains(&minute));
    api.set_outage(ASSET_PATH, late.then_some(503));
    let lists = (!story.up(minute)).then_some(503);
    api.set_outage(IP_LIST, lists);
    api.set_outage(DOMAIN_LIST, lists);
}

/// The event label sets of a scrape: the family and its labels.
fn served_events(body: &str) -> BTreeSet<String> {
    let families = [LISTING_EVENT, UNNAMED_EVENT, DROP_EVENT, BLOCK_EVENT];
    (body.lines())
        .filter(|l| families.iter().any(|f| l.starts_with(&format!("{f}{{"))))
        .map(|l| l.rsplit_once(' ').unwrap().0.to_owned())
        .collect()
}

/// What each label set was served at: the minutes any replica served it.
type Served = BTreeMap<String, BTreeSet<u64>>;

/// Runs a story through the exporter: every replica scraped every minute.
async fn replay(story: &Story) -> (Served, i64) {
    let dirs: Vec<StateDir> = (0..story.replicas.len())
        .map(|i| StateDir::new(&format!("story-{}-{i}", story.seed)))
        .collect();
    let api = SimulatedApi::new(12, 2);
    let now = Now::current().unix as i64;
    // Minute 0 of the story, in Unix seconds, on the minute: the exporter's clock moves with
    // the paused one.
    let base = now - now % 60 + 60;
    let start = tokio::time::Instant::now() + Duration::from_secs((base - now) as u64);
    let at = |minute: u64, seconds: i64| {
        let offset = minute as i64 * 60 + seconds;
        start + Duration::from_secs(offset.max(0) as u64)
    };
    let mut apps: Vec<Option<PausedApp>> = (0..story.replicas.len()).map(|_| None).collect();
    let mut served = Served::new();
    // What the replicas served, without what the alerts held.
    let mut raw = Served::new();
    set_api(&api, story, 0, base);
    for minute in 0..story.minutes {
        tokio::time::sleep_until(at(minute, 0)).await;
        set_api(&api, story, minute, base);
        for (i, replica) in story.replicas.iter().enumerate() {
            if let Some(&(_, warm)) = replica.restarts.iter().find(|(m, _)| *m == minute)
                && let Some(app) = apps[i].take()
            {
                app.stop(&dirs[i].account()).await;
                if !warm {
                    let _ = std::fs::remove_dir_all(&dirs[i].0);
                }
            }
            if minute >= replica.starts && apps[i].is_none() {
                apps[i] = Some(PausedApp::start(api.clone(), "5m", "1h", dirs[i].keep()).await);
            }
        }
        tokio::time::sleep_until(at(minute, 30)).await;
        let mut lists = false;
        for app in apps.iter().flatten() {
            let body = app.metrics().await;
            lists |= body.contains("reputation_asset_info{");
            for series in served_events(&body) {
                raw.entry(series.clone()).or_default().insert(minute);
                served.entry(series).or_default().insert(minute);
            }
        }
        // While no replica serves the lists (an API outage past `metrics.max_age`, a cold start
        // in one, every replica down), the alerts hold what was served within `metrics.max_age`
        // (an hour): a replica serves events only with its lists, so that is what was served
        // when the lists were last served.
        if !lists {
            for (series, minutes) in &raw {
                if minutes
                    .range(minute.saturating_sub(59)..=minute)
                    .next()
                    .is_some()
                {
                    served.entry(series.clone()).or_default().insert(minute);
                }
            }
        }
    }
    drop(apps);
    (served, base)
}

/// One page: a label set served from `from` to `to`, gaps of `KEEP` minutes or less bridged.
#[derive(Debug, Clone)]
struct Page {
    series: String,
    from: u64,
    to: u64,
}

fn pages(served: &Served) -> Vec<Page> {
    let mut pages = Vec::new();
    for (series, minutes) in served {
        let mut current: Option<Page> = None;
        for &minute in minutes {
            match &mut current {
                Some(page) if minute <= page.to + KEEP + 1 => page.to = minute,
                _ => {
                    pages.extend(current.take());
                    current = Some(Page {
                        series: series.clone(),
                        from: minute,
                        to: minute,
                    });
                }
            }
        }
        pages.extend(current);
    }
    pages
}

/// What the oracle expects: an event, the label sets that may page it, when it can first be
/// seen, how long it may take to page from then, and when it is over.
#[derive(Debug)]
struct Expected {
    what: String,
    series: Vec<String>,
    /// Its check: it may page from then.
    at: u64,
    seen: u64,
    takes: u64,
    over: u64,
    /// When its page is over if it is the page of a rise no report named (for a listing, that
    /// of the last listing begun at its check).
    over_unnamed: u64,
    /// For a listing, the minutes its report answered 503 after its check.
    late: Option<u64>,
}

impl Expected {
    /// Whether two pages of a listing, one unnamed and one by name, are what the API's data
    /// cannot tell a replica: a replica started cold between the first and the second, or the
    /// report came within two minutes of a poll and 3 minutes of the check (replicas' retries
    /// fall on either side).
    fn doubles(&self, story: &Story, a: &Page, b: &Page) -> bool {
        let unnamed = |p: &Page| p.series.starts_with(UNNAMED_EVENT);
        if unnamed(a) == unnamed(b) {
            return false;
        }
        let (first, second) = if a.from <= b.from { (a, b) } else { (b, a) };
        let cold = (story.replicas.iter())
            .flat_map(|r| &r.restarts)
            .any(|&(minute, warm)| !warm && first.from <= minute && minute <= second.from);
        let boundary = self.late.is_some_and(|late| late.abs_diff(POLL + 3) <= 2);
        cold || boundary
    }
}

fn expected(story: &Story, base: i64) -> Vec<Expected> {
    let end = story.removed.unwrap_or(u64::MAX).min(story.minutes);
    // The first minute from `minute` at which a replica runs and the lists answer for a poll:
    // a stretch shorter than a poll that an outage cuts off does not count, as no poll need
    // fall in it.
    let visible = |minute: u64| {
        (minute..end).find(|m| {
            (*m..*m + POLL).all(|x| story.up(x)) && story.replicas.iter().any(|r| r.starts <= *m)
        })
    };
    // When an event at `at` is first seen, and how long it may take to page from then: one
    // that no poll need see before the asset leaves the account or the story ends may page
    // or not.
    let sighted = |at: u64, takes: u64| match visible(at) {
        Some(seen) => Some((seen, takes)),
        None if at < end => Some((at, story.minutes)),
        None => None,
    };
    // When the data saying an event is over can be seen: its minute, or the lists' return.
    let over = |minute: u64| {
        let minute = minute.min(end);
        (minute..story.minutes)
            .find(|m| story.up(*m))
            .unwrap_or(minute)
    };
    let asset = format!(r#"kind="ip",asset="{NAME}""#);
    let mut expected = Vec::new();
    let begins: BTreeSet<u64> = story.episodes.iter().map(|e| e.begins).collect();
    for check in begins {
        let at = story.at(check);
        let episodes: Vec<&Episode> = (story.episodes.iter())
            .filter(|e| e.begins == check)
            .collect();
        // A report follows the list where the count changes; where a listing ends at a check at
        // which another begins, the count stands still and the next hourly round tells.
        let still = |check: u64| {
            check > 0 && story.listed_at(check).len() == story.listed_at(check - 1).len()
        };
        let ends = |e: &Episode| {
            e.ends.map_or(u64::MAX, |end| {
                // (up to two rounds of `asset_reports.interval`, 6 hours, later: not held to a
                // bound here)
                if still(end) { u64::MAX } else { story.at(end) }
            })
        };
        // The rise's page stands until every listing of it has ended.
        let all_end = episodes.iter().map(|e| ends(e)).max().unwrap_or(u64::MAX);
        let label = check_label((base + at as i64 * 60) as f64);
        // Named, a poll and 3 minutes; with its report late, unnamed after a poll and 3
        // minutes more of waiting for it.
        // Where the count stood still, the next report round names it, hours later at most.
        let takes = if still(check) {
            story.minutes
        } else if story.late.contains_key(&check) {
            2 * POLL + 3
        } else {
            POLL + 3
        };
        let Some((seen, takes)) = sighted(at, takes) else {
            continue;
        };
        // One event a listing, each paged by its blacklist's name, or all of them by one page
        // of the rise no report named.
        for episode in episodes {
            let blacklist = episode.blacklist;
            expected.push(Expected {
                late: story.late.get(&check).copied(),
                takes,
                what: format!("listing on {blacklist} at check {check} (minute {at})"),
                series: vec![
                    format!(
                        r#"{LISTING_EVENT}{{{asset},blacklist="{blacklist}",check="{label}"}}"#
                    ),
                    format!(r#"{UNNAMED_EVENT}{{{asset}}}"#),
                ],
                at,
                seen,
                over: over(ends(episode).min(at + NEWS)),
                over_unnamed: over(all_end.min(at + NEWS)),
            });
        }
    }
    for &check in &story.drops {
        let at = story.at(check);
        let Some((seen, takes)) = sighted(at, POLL + 3) else {
            continue;
        };
        expected.push(Expected {
            what: format!("score drop at check {check} (minute {at})"),
            series: vec![format!(r#"{DROP_EVENT}{{{asset},from="85",to="70"}}"#)],
            at,
            seen,
            takes,
            late: None,
            // A list without a score ends no drop: one in the two polls after its end holds it.
            over_unnamed: 0,
            over: over(match story.missing {
                Some((from, to))
                    if from <= story.at(check + 1) + 2 * POLL && story.at(check + 1) < to =>
                {
                    to
                }
                _ => story.at(check + 1),
            }),
        });
    }
    if let Some((from, _)) = story.block {
        let at = story.at(from);
        if let Some((seen, takes)) = sighted(at, POLL + 3) {
            expected.push(Expected {
                what: format!("SNDS block at check {from} (minute {at})"),
                series: vec![format!(r#"{BLOCK_EVENT}{{{asset}}}"#)],
                at,
                seen,
                takes,
                late: None,
                over: over(story.at(from + 1)),
                over_unnamed: 0,
            });
        }
    }
    expected
}

/// What broke a promise in a story, in words; empty when none did.
fn judge(story: &Story, served: &Served, base: i64) -> Vec<String> {
    let pages = pages(served);
    let expected = expected(story, base);
    let mut broken = Vec::new();
    // Each page is the events' whose label sets it has, the latest seen by its start: one
    // event, or the listings of one check for the page of their rise.
    let owners: Vec<Vec<usize>> = (pages.iter())
        .map(|page| {
            let theirs = |e: &usize| {
                expected[*e].series.contains(&page.series) && expected[*e].at <= page.from + 1
            };
            let latest = (0..expected.len())
                .filter(theirs)
                .map(|e| expected[e].at)
                .max();
            (0..expected.len())
                .filter(theirs)
                .filter(|&e| Some(expected[e].at) == latest)
                .collect()
        })
        .collect();
    for (page, owners) in pages.iter().zip(&owners) {
        if owners.is_empty() {
            broken.push(format!("paged without an event: {page:?}"));
        }
    }
    for (e, event) in expected.iter().enumerate() {
        let mine: Vec<usize> = (0..pages.len())
            .filter(|&i| owners[i].contains(&e))
            .collect();
        // One seen for less than a poll before it is over may page or not.
        let brief = event.over < event.seen + POLL;
        let deadline = event.seen + event.takes + 1;
        match mine.as_slice() {
            [] if brief || event.seen + event.takes + 1 > story.minutes => {}
            [] => broken.push(format!("{}: never paged", event.what)),
            [i] => {
                let page = &pages[*i];
                if page.from > deadline {
                    broken.push(format!(
                        "{}: paged at minute {}, due by {deadline}",
                        event.what, page.from
                    ));
                }
                let over = if page.series.starts_with(UNNAMED_EVENT) {
                    event.over_unnamed
                } else {
                    event.over
                };
                let closes = over.saturating_add(2 * POLL + KEEP + 1);
                if page.to > closes && page.to + 1 < story.minutes {
                    broken.push(format!(
                        "{}: open until minute {}, over at {over}",
                        event.what, page.to
                    ));
                }
            }
            // What the API's data cannot tell a replica, as the runbook lists it: a replica
            // started cold (no memory) after the rise names the listing the others paged
            // unnamed; and a report that comes about a poll and 3 minutes after its listing
            // began can be in time for one replica and late for another.
            [a, b] if event.doubles(story, &pages[*a], &pages[*b]) => {}
            more => broken.push(format!(
                "{}: paged {} times: {:?}",
                event.what,
                more.len(),
                more.iter().map(|i| &pages[*i]).collect::<Vec<_>>()
            )),
        }
    }
    broken
}

/// Runs story `seed` on a runtime of its own, with its clock paused.
fn run(seed: u64) -> Result<(), String> {
    run_story(Story::draw(seed))
}

/// Runs `story` on a runtime of its own, with its clock paused.
fn run_story(story: Story) -> Result<(), String> {
    let seed = story.seed;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let (served, base) = runtime.block_on(replay(&story));
    let broken = judge(&story, &served, base);
    if broken.is_empty() {
        return Ok(());
    }
    Err(format!(
        "story {seed} broke a promise:\n  {}\n{story:#?}\nserved: {served:#?}",
        broken.join("\n  ")
    ))
}

/// The stories known to break a promise, with why: `tests/api/stories_open.txt`, a seed a line
/// (`#` starts a comment). They are printed and not failed.
fn open_stories() -> BTreeSet<u64> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/api/stories_open.txt");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split('#').next()?.trim().parse().ok())
        .collect()
}

/// The cases that broke a promise under the rules that kept the pages' state in PromQL, each
/// a story of its own: two replicas at different poll phases, the API checking at minute 7 of
/// each hour, one replica's report answering 503 for a while after a listing.
fn cases() -> Vec<(&'static str, Story)> {
    let replicas = vec![
        Replica {
            starts: 0,
            restarts: Vec::new(),
        },
        Replica {
            starts: 3,
            restarts: Vec::new(),
        },
    ];
    let base = Story {
        seed: 900_000,
        minutes: 480,
        phase: 7,
        replicas,
        episodes: Vec::new(),
        late: BTreeMap::new(),
        drops: Vec::new(),
        block: None,
        flips: None,
        missing: None,
        outage: None,
        removed: None,
    };
    let listing = |blacklist, begins, ends| Episode {
        blacklist,
        begins,
        ends,
    };
    let mut cases = Vec::new();
    for late in [4, 7] {
        cases.push((
            "a report that comes minutes after its list names its listing",
            Story {
                seed: 900_000 + late,
                episodes: vec![listing("SpamCop", 2, Some(5))],
                late: BTreeMap::from([(2, late)]),
                ..base.clone()
            },
        ));
    }
    cases.push((
        "two blacklists listed at one check, the report late: one page or one each",
        Story {
            seed: 900_010,
            episodes: vec![
                listing("SpamCop", 2, Some(5)),
                listing("BARRACUDA", 2, Some(4)),
            ],
            late: BTreeMap::from([(2, 7)]),
            ..base.clone()
        },
    ));
    cases.push((
        "SNDS answers that flip at every poll for an hour page once",
        Story {
            seed: 900_020,
            block: Some((2, 5)),
            flips: Some((base.phase + 2 * CHECK + 6, base.phase + 3 * CHECK + 6)),
            ..base.clone()
        },
    ));
    cases.push((
        "a score missing from the answers for 20 minutes is no recovery",
        Story {
            seed: 900_030,
            drops: vec![3],
            missing: Some((base.phase + 3 * CHECK + 6, base.phase + 3 * CHECK + 26)),
            ..base.clone()
        },
    ));
    cases.push((
        "an asset removed from the account while paged closes its pages",
        Story {
            seed: 900_040,
            episodes: vec![listing("SpamCop", 2, None)],
            block: Some((2, 6)),
            removed: Some(base.phase + 2 * CHECK + 30),
            ..base.clone()
        },
    ));
    cases
}

#[test]
fn the_cases_that_broke_a_promise_before_keep_them() {
    let cases = cases();
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let chunk: Vec<_> = cases.iter().skip(t).step_by(threads).cloned().collect();
                scope.spawn(move || {
                    (chunk.into_iter())
                        .filter_map(|(case, story)| {
                            run_story(story).err().map(|e| format!("{case}: {e}"))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_event_pages_once_in_time_and_closes_and_nothing_else_pages() {
    let seeds: Vec<u64> = match std::env::var("STORY") {
        Ok(seed) => vec![seed.parse().expect("STORY is a seed")],
        Err(_) => {
            let count =
                std::env::var("STORIES").map_or(16, |n| n.parse().expect("STORIES is a number"));
            (1..=count).collect()
        }
    };
    let open = open_stories();
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let outcomes: Vec<(u64, Result<(), String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let chunk: Vec<u64> = seeds.iter().copied().skip(t).step_by(threads).collect();
                scope.spawn(move || chunk.into_iter().map(|s| (s, run(s))).collect::<Vec<_>>())
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let mut failures = Vec::new();
    for (seed, outcome) in outcomes {
        match (outcome, open.contains(&seed)) {
            // Outcomes near a boundary can vary from run to run (retries' jitter, the order of
            // blocking tasks), so an open story that passes is said, not failed.
            (Ok(()), true) => println!(
                "story {seed} kept every promise this time: if it does every time, take it out \
                 of tests/api/stories_open.txt"
            ),
            (Err(broken), true) => println!(
                "open: {}",
                broken.lines().take(3).collect::<Vec<_>>().join(" ")
            ),
            (Err(broken), false) => failures.push(broken),
            (Ok(()), false) => {}
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} stories failed:\n{}",
        failures.len(),
        seeds.len(),
        failures.join("\n\n")
    );
}
