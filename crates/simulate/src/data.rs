//! The simulated fleet: names, list items and asset reports generated from a seed and a tick,
//! so that the data is the same for a given moment and moves over time.

use serde_json::{Value, json};

use crate::DEMO_TICK;
use crate::date::api_date;

/// The asset report of asset `seed` named `name` at `tick`, `now` being that tick's Unix time.
pub(crate) fn report_item(name: &str, seed: u64, tick: u64, now: i64) -> Value {
    let date = |seconds_ago: i64| api_date(now - seconds_ago).unwrap_or_default();
    let window = tick / WINDOW_TICKS;
    // Seconds before now of the start of window `w`.
    let window_age = |w: u64| ((tick - w * WINDOW_TICKS) * DEMO_TICK.as_secs()) as i64;
    let listed_now = listings_in(seed, window);
    let listed_before = listings_in(seed, window.saturating_sub(1));
    let episode = Episode::of(seed);
    // Seconds before now of the history entry `day` days back (an hour before now for today).
    let entry_age = |day: u64| 3600 + day as i64 * 86_400;
    let in_episode = |day: u64| episode.is_some_and(|e| e.covers(entry_age(day)));
    let mut events = Vec::new();
    for b in 0..BLACKLISTS {
        let blacklist = blacklist_name(seed, b);
        // An old delisting first, then the recent listing or delisting: newest-first order is
        // not promised, so the old event comes first on purpose.
        events
            .push(json!({"date": date(95 * 86_400), "status": "Delisted", "blacklist": blacklist}));
        if let Some(episode) = episode.filter(|e| e.blacklist == b) {
            events.push(
                json!({"date": date(episode.listed), "status": "Listed", "blacklist": blacklist}),
            );
            events.push(json!({"date": date(episode.delisted), "status": "Delisted", "blacklist": blacklist}));
        }
        match Listing::on(seed, b, window) {
            // Listed when the simulation started: days before it, as a real fleet's standing
            // listings are when monitoring begins.
            Listing::Standing => events.push(json!({
                "date": date(window_age(0) + standing_age(seed)),
                "status": "Listed",
                "blacklist": blacklist,
            })),
            Listing::Since(start) => events.push(
                json!({"date": date(window_age(start)), "status": "Listed", "blacklist": blacklist}),
            ),
            Listing::EndedAt(end) => events.push(
                json!({"date": date(window_age(end)), "status": "Delisted", "blacklist": blacklist}),
            ),
            Listing::None => {}
        }
    }
    let teams = ["team-transactional", "team-marketing", "team-corporate"];
    json!({
        "value": name,
        "tags": [teams[(seed % 3) as usize], if seed.is_multiple_of(2) { "pool-a" } else { "pool-b" }],
        "hostname": [format!("mta{seed}.mail.example.com")],
        "senderscore": score(seed, tick),
        "senderscore_prev": score(seed, tick.saturating_sub(WINDOW_TICKS)),
        "senderscore_change": {"last_check": score(seed, tick) - score(seed, tick.saturating_sub(WINDOW_TICKS))},
        // Three months of daily scores, newest first, for `backfill` to have history to
        // write; a listing episode costs the score a dip while it lasts.
        "senderscore_history": (0..HISTORY_DAYS)
            .map(|day| {
                let mut value = score(seed, tick.saturating_sub(3 * day) + day * 7);
                if value >= 0 && in_episode(day) {
                    value = (value - EPISODE_DIP).max(0);
                }
                json!({"value": value.to_string(), "date": date(entry_age(day))})
            })
            .collect::<Vec<_>>(),
        "blacklisted": listed_now,
        "blacklisted_prev": listed_before,
        "blacklisted_change": {"last_check": listed_now - listed_before},
        "blacklisted_history": (0..HISTORY_DAYS)
            .map(|day| {
                let value = if day == 0 { listed_now } else { i64::from(in_episode(day)) };
                json!({"value": value, "date": date(entry_age(day))})
            })
            .collect::<Vec<_>>(),
        "blacklist_history": events,
        "snds_blocked": null,
        "snds_blocked_change": {"last_check": null},
        "snds_reputation": null,
        "snds_reputation_change": {"last_check": null},
        "snds_data": [],
        "hostname_history": [],
        "administrative_notes": [],
    })
}

/// Days of history in a report: enough for `backfill --since 90d`.
const HISTORY_DAYS: u64 = 91;

/// How much a listing episode lowers the Sender Score while it lasts.
const EPISODE_DIP: i64 = 18;

/// A past listing of one asset on one blacklist, older than `backfill`'s `--skip-recent`, so
/// that the history shows a listing, the score dip it causes and the delisting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Episode {
    /// Index of the blacklist in the report's list of blacklists.
    blacklist: usize,
    /// Seconds before now of the `Listed` event.
    listed: i64,
    /// Seconds before now of the `Delisted` event.
    delisted: i64,
}

impl Episode {
    /// The episode of asset `seed`: one asset in three has one, between 10 and 30 days ago,
    /// lasting 4 to 6 days; 192.0.2.1 (seed 0) is listed on the first blacklist from 20 days
    /// and 5 hours ago for 4 days and 2 hours.
    fn of(seed: u64) -> Option<Episode> {
        if !seed.is_multiple_of(3) {
            return None;
        }
        let listed = (20 + (seed / 3 % 10) as i64) * 86_400 + 5 * 3600;
        Some(Episode {
            blacklist: (seed / 3 % 3) as usize,
            listed,
            delisted: listed - (4 + (seed / 3 % 3) as i64) * 86_400 - 2 * 3600,
        })
    }

    /// Whether something `age` seconds old happened while the asset was listed.
    fn covers(&self, age: i64) -> bool {
        (self.delisted..=self.listed).contains(&age)
    }
}

/// A well-mixed 64-bit hash of three numbers (SplitMix64 finaliser), for repeatable noise.
pub(crate) fn mix(a: u64, b: u64, c: u64) -> u64 {
    let mut z = a
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(b.wrapping_mul(0xBF58_476D_1CE4_E5B9))
        .wrapping_add(c.wrapping_mul(0x94D0_49BB_1331_11EB));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The name of the `i`-th simulated address: documentation ranges first.
pub fn ip_name(i: usize) -> String {
    match i {
        0..254 => format!("192.0.2.{}", i + 1),
        254..508 => format!("198.51.100.{}", i - 253),
        508..762 => format!("203.0.113.{}", i - 507),
        _ => {
            let n = i - 762;
            format!("10.{}.{}.{}", (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)
        }
    }
}

/// The name of the `i`-th simulated domain.
pub fn domain_name(i: usize) -> String {
    const ZONES: [&str; 3] = ["example.com", "example.net", "example.org"];
    format!("mail{i}.{}", ZONES[i % ZONES.len()])
}

/// Sender Score of asset `seed` at `tick`: a base per asset plus a slow drift; some have none.
fn score(seed: u64, tick: u64) -> i64 {
    if seed % 11 == 5 {
        return -1;
    }
    let drift = (mix(seed, tick / WINDOW_TICKS, 2) % 9) as i64 - 4;
    (base_score(seed) + drift).clamp(0, 100)
}

/// The level asset `seed`'s Sender Score drifts around: 58 to 99.
fn base_score(seed: u64) -> i64 {
    58 + (mix(seed, 0, 1) % 42) as i64
}

/// Ticks in one window of the simulation (20 minutes): scores move and listings begin and end
/// at window boundaries, so that the demo changes at the pace of a real fleet compressed from
/// days into hours (an asset is listed or delisted about once in three hours), not every minute.
const WINDOW_TICKS: u64 = 120;

/// Blacklistings of asset `seed` at `tick`: most are clean, one in sixteen is listed.
fn listings(seed: u64, tick: u64) -> i64 {
    listings_in(seed, tick / WINDOW_TICKS)
}

/// Blacklistings of asset `seed` in window `window`; blacklist `b` lists it while `b` is below
/// the count.
/// How many blacklists an asset can be on.
const BLACKLISTS: usize = 3;

/// The name of blacklist `b` in asset `seed`'s report, as monitoring services print them:
/// several spellings of one list, a list that has shut down (SORBS) and one that no table
/// knows, so that `--demo` shows every case a page can meet.
fn blacklist_name(seed: u64, b: usize) -> &'static str {
    match (b, seed % 6) {
        (0, _) => "Spamhaus SBL",
        (1, 0..=2) => "Barracuda BRBL",
        (1, 3 | 4) => "BARRACUDA",
        (1, _) => "b.barracudacentral.org",
        (_, 0 | 1) => "SpamCop",
        (_, 2) => "SPAMCOP",
        (_, 3) => "UCEPROTECTL1",
        (_, 4) => "SORBS SPAM",
        _ => "Nightwatch RBL",
    }
}

fn listings_in(seed: u64, window: u64) -> i64 {
    if mix(seed, window, 3).is_multiple_of(16) {
        1 + (mix(seed, window, 4) % 3) as i64
    } else {
        0
    }
}

/// How long before the simulation started a listing standing at its start began: two to seven
/// days.
fn standing_age(seed: u64) -> i64 {
    (2 + (seed % 5) as i64) * 86_400 + (seed % 24) as i64 * 3600
}

/// The recent listing history of one asset on one blacklist, as of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    /// Listed since before the simulation started.
    Standing,
    /// Listed since the start of this window.
    Since(u64),
    /// Not listed; delisted at the start of this window (within the last few windows).
    EndedAt(u64),
    /// Not listed lately.
    None,
}

impl Listing {
    /// Blacklist `b`'s listing of asset `seed` as of `window`.
    fn on(seed: u64, b: usize, window: u64) -> Listing {
        let listed = |w: u64| listings_in(seed, w) > b as i64;
        if listed(window) {
            let start = (0..=window).rev().take_while(|&w| listed(w)).last();
            return match start {
                Some(0) | None => Listing::Standing,
                Some(start) => Listing::Since(start),
            };
        }
        (window.saturating_sub(8)..window)
            .rev()
            .find(|&w| listed(w))
            .map_or(Listing::None, |last| Listing::EndedAt(last + 1))
    }
}

fn reputation_fields(seed: u64, tick: u64) -> serde_json::Map<String, Value> {
    let now = score(seed, tick);
    let before = score(seed, tick.saturating_sub(WINDOW_TICKS));
    let listed = listings(seed, tick);
    let listed_before = listings(seed, tick.saturating_sub(WINDOW_TICKS));
    let has_snds = seed % 4 != 3;
    let colour = match now {
        s if s < 0 => Value::Null,
        s if s >= 80 => json!("GREEN"),
        s if s >= 65 => json!("Yellow"),
        _ => json!("red"),
    };
    // Blocked: a low-scoring address all along, or one in forty in a window.
    let blocked_in =
        |tick: u64| base_score(seed) < 61 || mix(seed, tick / WINDOW_TICKS, 5).is_multiple_of(40);
    let is_blocked = blocked_in(tick);
    let was_blocked = blocked_in(tick.saturating_sub(WINDOW_TICKS));
    let blocked = match (has_snds, seed % 3) {
        (false, _) => Value::Null,
        (true, 0) => json!(is_blocked),
        (true, 1) => json!(if is_blocked { "Yes" } else { "No" }),
        (true, _) => json!(u8::from(is_blocked)),
    };
    let change = |a: i64, b: i64| {
        if a < 0 || b < 0 {
            Value::Null
        } else {
            json!(a - b)
        }
    };
    let mut fields = serde_json::Map::new();
    fields.insert("senderscore".into(), json!(now));
    fields.insert("senderscore_prev".into(), json!(before));
    fields.insert(
        "senderscore_change".into(),
        json!({"last_check": change(now, before)}),
    );
    fields.insert("blacklisted".into(), json!(listed));
    fields.insert(
        "blacklisted_change".into(),
        json!({"last_check": listed - listed_before}),
    );
    fields.insert(
        "snds_blocked".into(),
        if has_snds { blocked } else { Value::Null },
    );
    // The change at the last check, as for the other values; null without SNDS data.
    let blocked_change = if has_snds {
        json!(i64::from(is_blocked) - i64::from(was_blocked))
    } else {
        Value::Null
    };
    fields.insert(
        "snds_blocked_change".into(),
        json!({ "last_check": blocked_change }),
    );
    fields.insert(
        "snds_reputation".into(),
        if has_snds { colour } else { Value::Null },
    );
    fields.insert("snds_reputation_change".into(), json!({"last_check": null}));
    fields
}

/// The `i`-th ip-list item at `tick`.
pub fn ip_item(i: usize, tick: u64) -> Value {
    let mut fields = serde_json::Map::new();
    fields.insert("ip".into(), json!(ip_name(i)));
    let mut hosts = vec![format!("mta{i}.mail.example.com")];
    if i.is_multiple_of(4) {
        hosts.push(format!("out{i}.example.net"));
    }
    fields.insert("hosts".into(), json!(hosts));
    fields.extend(reputation_fields(i as u64, tick));
    Value::Object(fields)
}

/// The `i`-th domain-list item at `tick`.
pub fn domain_item(i: usize, tick: u64) -> Value {
    let seed = 1_000_000 + i as u64;
    let mut fields = serde_json::Map::new();
    fields.insert("domain".into(), json!(domain_name(i)));
    let ips = if i % 3 == 2 {
        Value::Null
    } else {
        json!((0..=i % 3).map(|k| ip_name(i + k)).collect::<Vec<_>>())
    };
    fields.insert("ips".into(), ips);
    fields.extend(reputation_fields(seed, tick));
    if i % 5 == 4 {
        fields.insert("senderscore".into(), Value::Null);
        fields.insert("senderscore_prev".into(), Value::Null);
        fields.insert("senderscore_change".into(), json!({"last_check": null}));
    }
    Value::Object(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unix seconds of an API date written by [`api_date`] (`21st Nov 2026 02:15pm`, UTC).
    fn unix(date: &str) -> i64 {
        let (day, rest) = date.split_once(' ').unwrap();
        let day = day.trim_end_matches(char::is_alphabetic);
        jiff::civil::DateTime::strptime("%d %b %Y %I:%M%P", format!("{day} {rest}"))
            .unwrap()
            .to_zoned(jiff::tz::TimeZone::UTC)
            .unwrap()
            .timestamp()
            .as_second()
    }

    #[test]
    fn names_are_unique_across_ranges() {
        let names: std::collections::HashSet<_> = (0..5000).map(ip_name).collect();
        assert_eq!(names.len(), 5000);
        assert_eq!(ip_name(0), "192.0.2.1");
        assert_eq!(ip_name(254), "198.51.100.1");
        assert_eq!(ip_name(762), "10.0.0.0");
    }

    #[test]
    fn the_demo_data_moves_over_time() {
        let scores: std::collections::HashSet<i64> =
            (0..30).map(|w| score(1, w * WINDOW_TICKS)).collect();
        assert!(scores.len() > 1, "{scores:?}");
        let listed: std::collections::HashSet<i64> =
            (0..200).map(|w| listings(2, w * WINDOW_TICKS)).collect();
        assert!(listed.contains(&0) && listed.len() > 1, "{listed:?}");
    }

    #[test]
    fn items_have_the_documented_fields() {
        let item = ip_item(3, 0);
        for field in [
            "ip",
            "hosts",
            "senderscore",
            "senderscore_prev",
            "senderscore_change",
            "blacklisted",
            "blacklisted_change",
            "snds_blocked",
            "snds_blocked_change",
            "snds_reputation",
            "snds_reputation_change",
        ] {
            assert!(item.get(field).is_some(), "{field}");
        }
        assert!(domain_item(3, 0).get("ips").is_some());
    }

    #[test]
    fn the_demo_moves_at_a_fleets_pace_compressed_into_hours_not_minutes() {
        // The demo's 36 assets over a simulated day.
        let windows_per_hour = 3600 / (WINDOW_TICKS * DEMO_TICK.as_secs());
        let windows = 24 * windows_per_hour;
        let mut changes = 0;
        for seed in (0..30).chain(1_000_000..1_000_006) {
            for tick in 0..windows * WINDOW_TICKS - 1 {
                if tick % WINDOW_TICKS != WINDOW_TICKS - 1 {
                    assert_eq!(
                        score(seed, tick),
                        score(seed, tick + 1),
                        "moves within a window"
                    );
                    assert_eq!(listings(seed, tick), listings(seed, tick + 1));
                }
            }
            changes += (1..windows)
                .filter(|&w| listings_in(seed, w) != listings_in(seed, w - 1))
                .count();
        }
        let per_asset_hour = changes as f64 / 36.0 / 24.0;
        assert!(
            (0.1..=1.0).contains(&per_asset_hour),
            "{per_asset_hour} listing changes per asset and hour"
        );
    }

    #[test]
    fn listings_standing_at_the_start_are_days_old_and_later_ones_as_new_as_they_are() {
        let newest_listing = |seed: u64, tick: u64, now: i64| {
            let report = report_item("x", seed, tick, now);
            let listed = report["blacklist_history"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["status"] == "Listed" && e["blacklist"] == "Spamhaus SBL");
            listed
                .map(|e| unix(e["date"].as_str().unwrap()) as f64)
                .fold(f64::MIN, f64::max)
        };
        let now = 1_800_000_000;
        let standing = (0..1000).find(|&seed| listings_in(seed, 0) > 0).unwrap();
        assert_eq!(Listing::on(standing, 0, 0), Listing::Standing);
        let age = now as f64 - newest_listing(standing, 0, now);
        assert!(age >= 2.0 * 86_400.0, "a standing listing {age} s old");
        // Still dated before the start a window later, if it lasts.
        if listings_in(standing, 1) > 0 {
            let later = now + (WINDOW_TICKS * DEMO_TICK.as_secs()) as i64;
            assert!(later as f64 - newest_listing(standing, WINDOW_TICKS, later) > 2.0 * 86_400.0);
        }
        let (seed, window) = (0..1000)
            .flat_map(|seed| (1..50).map(move |w| (seed, w)))
            .find(|&(seed, w)| listings_in(seed, w) > 0 && listings_in(seed, w - 1) == 0)
            .unwrap();
        assert_eq!(Listing::on(seed, 0, window), Listing::Since(window));
        // Ten minutes into the window in which it began: listed ten minutes ago.
        let tick = window * WINDOW_TICKS + 60;
        assert_eq!(now as f64 - newest_listing(seed, tick, now), 600.0);
        // Delisted at the start of the first window without it.
        let end = (window..).find(|&w| listings_in(seed, w) == 0).unwrap();
        assert_eq!(Listing::on(seed, 0, end), Listing::EndedAt(end));
    }

    #[test]
    fn the_history_of_192_0_2_1_has_a_listing_a_dip_and_a_delisting_weeks_ago() {
        let now = 1_800_000_000;
        let report = report_item("192.0.2.1", 0, 100, now);
        let events = report["blacklist_history"].as_array().unwrap();
        let at = |status: &str| {
            events
                .iter()
                .filter(|e| e["status"] == status && e["blacklist"] == "Spamhaus SBL")
                .map(|e| now - unix(e["date"].as_str().unwrap()))
                .collect::<Vec<_>>()
        };
        let day = 86_400;
        assert!(at("Listed").contains(&(20 * day + 5 * 3600)), "{events:?}");
        assert!(
            at("Delisted").contains(&(16 * day + 3 * 3600)),
            "{events:?}"
        );
        let scores: Vec<i64> = report["senderscore_history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["value"].as_str().unwrap().parse().unwrap())
            .collect();
        assert_eq!(scores.len(), 91, "three months of history");
        let during = scores[17..=20].iter().max().unwrap();
        let around = scores[10..17].iter().chain(&scores[21..28]).min().unwrap();
        assert!(during < around, "a dip: {:?}", &scores[10..28]);
        let counts: Vec<i64> = report["blacklisted_history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["value"].as_i64().unwrap())
            .collect();
        assert_eq!(&counts[16..=21], [0, 1, 1, 1, 1, 0]);
    }
}
