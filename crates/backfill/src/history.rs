//! An asset report's histories as timestamped samples: `senderscore_history` as
//! `reputation_senderscore`, `blacklisted_history` as `reputation_blacklistings`, and each
//! blacklist's events as `reputation_blacklist_listed` (1 at a `Listed` event and daily while it
//! holds, 0 at any other event).

use std::collections::BTreeMap;

use jiff::tz::TimeZone;

use reputation_exporter::upstream::date;
use reputation_exporter::upstream::dto::{AssetReport, Loose};

/// One sample: Unix time in whole seconds, and the value.
pub(crate) type Sample = (i64, f64);

/// The time window samples must fall in: `[from, to]`, in Unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Oldest time kept (`--since`), if any.
    pub from: Option<i64>,
    /// Newest time kept (now less `--skip-recent`).
    pub to: i64,
}

impl Window {
    fn contains(&self, at: i64) -> bool {
        self.from.is_none_or(|from| at >= from) && at <= self.to
    }
}

/// The samples of one asset, each series in increasing time with one sample per instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// `reputation_senderscore`.
    pub senderscore: Vec<Sample>,
    /// `reputation_blacklistings`.
    pub blacklistings: Vec<Sample>,
    /// `reputation_blacklist_listed`, per blacklist.
    pub listed: BTreeMap<String, Vec<Sample>>,
    /// Values that could not be used, by why.
    pub skipped: Skipped,
}

/// One series of a [`History`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Series<'a> {
    /// Its family, as an index into [`FAMILIES`](super::FAMILIES).
    pub family: usize,
    /// The value of the family's own label (`blacklist`), for `reputation_blacklist_listed`.
    pub blacklist: Option<&'a str>,
    /// Its samples, in increasing time.
    pub samples: &'a [Sample],
}

/// Values of a history that give no sample, by why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Negative values: the API's `-1`, "no score".
    pub no_value: u64,
    /// Values that are not numbers.
    pub not_a_number: u64,
    /// Dates that cannot be read.
    pub unreadable_date: u64,
}

impl Skipped {
    /// Every value skipped.
    pub fn total(self) -> u64 {
        self.no_value + self.not_a_number + self.unreadable_date
    }
}

impl std::ops::AddAssign for Skipped {
    fn add_assign(&mut self, other: Skipped) {
        self.no_value += other.no_value;
        self.not_a_number += other.not_a_number;
        self.unreadable_date += other.unreadable_date;
    }
}

impl History {
    /// The samples of `report`, its dates read in `zone`, within `window`.
    pub fn of(report: &AssetReport, zone: &TimeZone, window: Window) -> History {
        let mut history = History::default();
        let at = |text: Option<&str>, skipped: &mut Skipped| {
            let parsed = text.and_then(|t| date::parse(t, zone));
            if parsed.is_none() {
                skipped.unreadable_date += 1;
            }
            // The API's dates have minutes; whole seconds are exact.
            parsed.map(|seconds| seconds as i64)
        };
        let mut skipped = Skipped::default();
        // Values as the API sends them: numbers, or numbers written as text; negative ones
        // (a score of -1) mean none.
        let values = |entries: Vec<(Option<&str>, &Loose)>, skipped: &mut Skipped| {
            let mut samples = Vec::with_capacity(entries.len());
            for (date, value) in entries {
                let Some(time) = at(date, skipped) else {
                    continue;
                };
                match number(value) {
                    Some(v) if v >= 0.0 => {
                        if window.contains(time) {
                            samples.push((time, v));
                        }
                    }
                    Some(_) => skipped.no_value += 1,
                    None => skipped.not_a_number += 1,
                }
            }
            samples
        };
        let scores = report.senderscore_history.iter();
        history.senderscore = values(
            scores.map(|e| (e.date.as_deref(), &e.value)).collect(),
            &mut skipped,
        );
        let counts = report.blacklisted_history.iter();
        history.blacklistings = values(
            counts.map(|e| (e.date.as_deref(), &e.value)).collect(),
            &mut skipped,
        );
        // Every event, older ones too: a listing made before the window still holds in it.
        let mut events: BTreeMap<String, Vec<Sample>> = BTreeMap::new();
        for event in &report.blacklist_history {
            let Some(time) = at(Some(&event.date), &mut skipped) else {
                continue;
            };
            if event.blacklist.is_empty() {
                continue;
            }
            let listed = event.status.trim().eq_ignore_ascii_case("listed");
            events
                .entry(event.blacklist.clone())
                .or_default()
                .push((time, f64::from(u8::from(listed))));
        }
        history.skipped = skipped;
        in_order(&mut history.senderscore);
        in_order(&mut history.blacklistings);
        history.listed = events
            .into_iter()
            .map(|(blacklist, mut events)| {
                in_order(&mut events);
                (blacklist, listing_steps(&events, window))
            })
            .filter(|(_, samples)| !samples.is_empty())
            .collect();
        history
    }

    /// Every series of this history, family by family in [`FAMILIES`](super::FAMILIES)' order,
    /// each with its samples in increasing time.
    pub fn series(&self) -> impl Iterator<Item = Series<'_>> {
        let own = |family, samples| Series {
            family,
            blacklist: None,
            samples,
        };
        [
            own(0, self.senderscore.as_slice()),
            own(1, self.blacklistings.as_slice()),
        ]
        .into_iter()
        .chain(self.listed.iter().map(|(blacklist, samples)| Series {
            family: 2,
            blacklist: Some(blacklist.as_str()),
            samples,
        }))
        .filter(|series| !series.samples.is_empty())
    }

    /// Number of samples in each family: senderscore, blacklistings, blacklist_listed.
    pub fn counts(&self) -> [usize; 3] {
        [
            self.senderscore.len(),
            self.blacklistings.len(),
            self.listed.values().map(Vec::len).sum(),
        ]
    }

    /// Oldest and newest sample time, when there is any sample.
    pub fn span(&self) -> Option<(i64, i64)> {
        let times = self
            .senderscore
            .iter()
            .chain(&self.blacklistings)
            .chain(self.listed.values().flatten())
            .map(|(at, _)| *at);
        times.fold(None, |span, at| match span {
            None => Some((at, at)),
            Some((oldest, newest)) => Some((oldest.min(at), newest.max(at))),
        })
    }
}

/// One blacklist's events (in increasing time) as samples within `window`: each event, and
/// while listed a 1 every [`LISTED_REPEAT`] seconds until the next event or the window's end,
/// so that a listing reads as one continuous line under a one-day lookback
/// (`last_over_time(...[26h])`), however long ago it began.
fn listing_steps(events: &[Sample], window: Window) -> Vec<Sample> {
    let mut samples = Vec::new();
    for (i, &(at, value)) in events.iter().enumerate() {
        if value == 0.0 {
            if window.contains(at) {
                samples.push((at, value));
            }
            continue;
        }
        let until = events
            .get(i + 1)
            .map_or(window.to.saturating_add(1), |e| e.0);
        // The first repetition inside the window, without walking up to it.
        let skip = window.from.map_or(0, |from| {
            ((from - at).max(0) + LISTED_REPEAT - 1) / LISTED_REPEAT
        });
        let mut time = at + skip * LISTED_REPEAT;
        while time < until && time <= window.to {
            samples.push((time, value));
            time += LISTED_REPEAT;
        }
    }
    samples
}

/// How often a listing's 1 is repeated between events: daily, as the other histories.
pub(crate) const LISTED_REPEAT: i64 = 86_400;

/// A number, or a number written as text (`"82"`).
fn number(value: &Loose) -> Option<f64> {
    match value {
        Loose::Number(n) => Some(*n),
        Loose::Text(text) => text.trim().parse::<f64>().ok().filter(|n| n.is_finite()),
        _ => None,
    }
}

/// Sorts a series by time; of several samples at one instant the last sent is kept
/// (Prometheus takes one sample per series and instant).
fn in_order(samples: &mut Vec<Sample>) {
    samples.sort_by_key(|(at, _)| *at);
    let mut kept: Vec<Sample> = Vec::with_capacity(samples.len());
    for sample in samples.drain(..) {
        match kept.last_mut() {
            Some(last) if last.0 == sample.0 => *last = sample,
            _ => kept.push(sample),
        }
    }
    *samples = kept;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use reputation_exporter::upstream::dto;

    fn report(value: serde_json::Value) -> AssetReport {
        dto::decode(value.to_string().as_bytes()).unwrap()
    }

    /// 2026-11-01T00:00:00Z.
    const NOV_1: i64 = 1_793_491_200;
    const ALL: Window = Window {
        from: None,
        to: i64::MAX,
    };

    #[test]
    fn scores_counts_and_events_become_samples_and_bad_values_are_skipped_and_counted() {
        let report = report(json!({
            "senderscore_history": [
                {"value": "82", "date": "2nd Nov 2026 12:00am"},
                {"value": "-1", "date": "3rd Nov 2026 12:00am"},
                {"value": "n/a", "date": "4th Nov 2026 12:00am"},
                {"value": "80", "date": "1st Nov 2026 12:00am"},
                {"value": "79", "date": "yesterday"}
            ],
            "blacklisted_history": [{"value": 2, "date": "1st Nov 2026 06:30pm"}],
            "blacklist_history": [
                {"date": "1st Nov 2026 01:00am", "status": "Listed", "blacklist": "SBL"},
                {"date": "2nd Nov 2026 01:00am", "status": "Delisted", "blacklist": "SBL"}
            ]
        }));
        let history = History::of(&report, &TimeZone::UTC, ALL);
        assert_eq!(history.senderscore, [(NOV_1, 80.0), (NOV_1 + 86_400, 82.0)]);
        assert_eq!(history.blacklistings, [(NOV_1 + 18 * 3600 + 1800, 2.0)]);
        assert_eq!(
            history.listed["SBL"],
            [(NOV_1 + 3600, 1.0), (NOV_1 + 86_400 + 3600, 0.0)]
        );
        assert_eq!(
            history.skipped,
            Skipped {
                no_value: 1,
                not_a_number: 1,
                unreadable_date: 1
            },
            "-1, n/a and an unreadable date"
        );
        assert_eq!(history.counts(), [2, 1, 2]);
        assert_eq!(history.span(), Some((NOV_1, NOV_1 + 90_000)));
    }

    #[test]
    fn dates_are_read_in_the_configured_zone() {
        let report = report(json!({
            "senderscore_history": [{"value": "90", "date": "1st Nov 2026 01:00am"}]
        }));
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        let history = History::of(&report, &berlin, ALL);
        // 01:00 in Berlin (CET, UTC+1 in November) is midnight UTC.
        assert_eq!(history.senderscore, [(NOV_1, 90.0)]);
    }

    #[test]
    fn a_shuffled_history_comes_out_in_increasing_time_within_the_window() {
        let days = [5, 1, 4, 2, 3, 6];
        let entries: Vec<_> = days
            .iter()
            .map(|d| json!({"value": (70 + d).to_string(), "date": format!("{d}{} Nov 2026 12:00am", match d { 1 => "st", 2 => "nd", 3 => "rd", _ => "th" })}))
            .collect();
        let report = report(json!({ "senderscore_history": entries }));
        let window = Window {
            from: Some(NOV_1 + 86_400),
            to: NOV_1 + 4 * 86_400,
        };
        let history = History::of(&report, &TimeZone::UTC, window);
        let times: Vec<i64> = history
            .senderscore
            .iter()
            .map(|(at, _)| (at - NOV_1) / 86_400 + 1)
            .collect();
        assert_eq!(times, [2, 3, 4, 5]);
        assert_eq!(history.senderscore[0].1, 72.0);
    }

    #[test]
    fn a_listing_repeats_daily_until_its_delisting_and_an_open_one_until_the_window_ends() {
        let report = report(json!({
            "blacklist_history": [
                {"date": "1st Nov 2026 12:00am", "status": "Listed", "blacklist": "SBL"},
                {"date": "3rd Nov 2026 06:00am", "status": "Delisted", "blacklist": "SBL"},
                {"date": "5th Nov 2026 12:00am", "status": "Listed", "blacklist": "SBL"},
                {"date": "1st Nov 2026 12:00am", "status": "Delisted", "blacklist": "BRBL"}
            ]
        }));
        let window = Window {
            from: None,
            to: NOV_1 + 6 * 86_400 + 3600,
        };
        let history = History::of(&report, &TimeZone::UTC, window);
        let day = |d: i64| NOV_1 + d * 86_400;
        assert_eq!(
            history.listed["SBL"],
            [
                (day(0), 1.0),
                (day(1), 1.0),
                (day(2), 1.0),
                (day(2) + 6 * 3600, 0.0),
                (day(4), 1.0),
                (day(5), 1.0),
                (day(6), 1.0)
            ]
        );
        assert_eq!(
            history.listed["BRBL"],
            [(day(0), 0.0)],
            "a 0 is written once"
        );
    }

    #[test]
    fn a_listing_older_than_the_window_holds_from_the_windows_start() {
        let report = report(json!({
            "blacklist_history": [
                {"date": "1st Nov 2026 12:00am", "status": "Listed", "blacklist": "SBL"},
                {"date": "1st Oct 2026 12:00am", "status": "Delisted", "blacklist": "CBL"}
            ]
        }));
        let window = Window {
            from: Some(NOV_1 + 10 * 86_400 + 1),
            to: NOV_1 + 12 * 86_400,
        };
        let history = History::of(&report, &TimeZone::UTC, window);
        assert_eq!(
            history.listed["SBL"],
            [(NOV_1 + 11 * 86_400, 1.0), (NOV_1 + 12 * 86_400, 1.0)]
        );
        assert!(
            !history.listed.contains_key("CBL"),
            "nothing of it in the window"
        );
    }
}
