//! What an asset report adds to an asset: the state on each blacklist, the tags, when its score
//! last changed; mapped from the report's JSON, dates read in the configured zone.

use std::collections::HashMap;
use std::sync::Arc;

use jiff::tz::TimeZone;
use tokio::time::Instant;

use super::asset::{describe, label_values};
use crate::upstream::date;
use crate::upstream::dto::{AssetReport, Loose};
use crate::vocabulary::{Field, Kind, Unrecognized};

/// What an asset report adds to an asset.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Report {
    /// Tags, without duplicates or empty ones.
    pub tags: Vec<String>,
    /// Per blacklist, its newest event.
    pub listings: Vec<Listing>,
    /// How many blacklists the report names as listing the asset now.
    pub named: usize,
    /// Unix time of the newest `senderscore_history` entry.
    pub senderscore_updated: Option<f64>,
    /// Unix time of the newest `blacklisted_history` entry, only when it counts more listings
    /// than the entry before it (the only entry: any): when the count rose, while that rise is
    /// the newest change the report knows.
    pub blacklistings_rose: Option<f64>,
    /// With [`Report::blacklistings_rose`], how many listings the report says ended since the
    /// `blacklisted_history` entry before the rise, having begun by it: the check before counted
    /// them and the rise's did not, so the listings begun in between are as many more than the
    /// count's change. None without a rise.
    pub blacklistings_rise_ended: Option<f64>,
    /// What the report said of the asset's blacklisting count and its change, in the list's
    /// terms: a list poll that says otherwise fetches the report again.
    pub blacklisting: Blacklisting,
    /// What the list said when this report was fetched because it disagreed, when the report
    /// still disagrees: the list saying the same again is not asked about again, across
    /// restarts too (kept with the report in the state store).
    pub asked_for: Option<Blacklisting>,
}

/// An asset's blacklisting count and its change at the last check (`blacklisted`,
/// `blacklisted_change.last_check`), as a list item or a report says them.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Blacklisting {
    /// How many blacklists list the asset.
    pub count: Option<f64>,
    /// The change at the API's last check.
    pub change: Option<f64>,
}

impl Blacklisting {
    /// Listed nowhere, and no change at the last check: what most assets of a list say.
    pub const UNLISTED: Blacklisting = Blacklisting {
        count: Some(0.0),
        change: Some(0.0),
    };

    /// The values of a list item or report: numbers as they are, booleans as 1 and 0, anything
    /// else as no value (the list counts those where it maps them).
    pub fn of(count: &Loose, change: &Loose) -> Blacklisting {
        let number = |value: &Loose| match value {
            Loose::Number(n) => Some(*n),
            Loose::Bool(b) => Some(f64::from(u8::from(*b))),
            _ => None,
        };
        Blacklisting {
            count: number(count),
            change: number(change),
        }
    }
}

/// What one list says of its assets' blacklisting counts and changes, kept for the assets that
/// are not [`Blacklisting::UNLISTED`] (a list's few listed or changed ones), so that a report
/// can be told behind its list long after the list's assets are rendered and dropped.
#[derive(Debug, Clone, Default)]
pub struct Blacklistings(HashMap<Box<str>, Blacklisting>);

impl Blacklistings {
    /// Notes what the list says of the asset `name`.
    pub fn note(&mut self, name: &str, said: Blacklisting) {
        if said != Blacklisting::UNLISTED {
            self.0.insert(name.into(), said);
        }
    }

    /// What the list says of the asset `name`.
    pub fn of(&self, name: &str) -> Blacklisting {
        self.0.get(name).copied().unwrap_or(Blacklisting::UNLISTED)
    }

    /// Every asset the list shows listed or changed, with what it says of it.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Blacklisting)> {
        self.0.iter().map(|(name, said)| (&**name, *said))
    }
}

/// The state of an asset on one blacklist, decided by the newest event.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Listing {
    /// Name of the blacklist.
    pub blacklist: String,
    /// Whether the newest event says `Listed`.
    pub listed: bool,
    /// Unix time of that event.
    pub changed: f64,
    /// While listed, Unix time the current listing began: the oldest `Listed` event since the
    /// last event that was not (relisting events while listed do not restart it).
    pub since: Option<f64>,
}

/// How many of the newest listings the landing page and `--once` show.
pub const NEWEST_SHOWN: usize = 25;

/// One current listing, as the landing page and `--once` show it.
#[derive(Debug, Clone, Copy)]
pub struct CurrentListing<'a> {
    /// The asset's kind.
    pub kind: Kind,
    /// The asset.
    pub asset: &'a str,
    /// The blacklist, as the report names it.
    pub blacklist: &'a str,
    /// Unix time the listing began.
    pub since: f64,
    /// The asset's report (its tags).
    pub report: &'a Report,
}

/// The latest report of every reported asset, per kind, keyed by asset name, with when each
/// was fetched (for `metrics.max_age`).
#[derive(Debug, Clone, Default)]
pub struct Reports {
    ips: HashMap<String, Held>,
    domains: HashMap<String, Held>,
}

/// One report and when it was fetched.
#[derive(Debug, Clone)]
struct Held {
    /// Shared by the snapshots that serve it.
    report: Arc<Report>,
    fetched: Instant,
}

impl Reports {
    fn map(&self, kind: Kind) -> &HashMap<String, Held> {
        match kind {
            Kind::Ip => &self.ips,
            Kind::Domain => &self.domains,
        }
    }

    fn map_mut(&mut self, kind: Kind) -> &mut HashMap<String, Held> {
        match kind {
            Kind::Ip => &mut self.ips,
            Kind::Domain => &mut self.domains,
        }
    }

    /// The report of one asset.
    pub fn get(&self, kind: Kind, name: &str) -> Option<&Report> {
        self.map(kind).get(name).map(|held| &*held.report)
    }

    /// Stores the report of one asset, fetched at `fetched`.
    pub fn set(&mut self, kind: Kind, name: String, report: Report, fetched: Instant) {
        let report = Arc::new(report);
        self.map_mut(kind).insert(name, Held { report, fetched });
    }

    /// Removes the report of one asset.
    pub fn remove(&mut self, kind: Kind, name: &str) {
        self.map_mut(kind).remove(name);
    }

    /// Keeps only the reports of assets for which `keep` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(Kind, &str) -> bool) {
        self.ips.retain(|name, _| keep(Kind::Ip, name));
        self.domains.retain(|name, _| keep(Kind::Domain, name));
    }

    fn held(&self) -> impl Iterator<Item = (Kind, &str, &Held)> {
        let ips = self.ips.iter().map(|(name, held)| (Kind::Ip, name, held));
        let domains = self
            .domains
            .iter()
            .map(|(name, held)| (Kind::Domain, name, held));
        ips.chain(domains)
            .map(|(kind, name, held)| (kind, name.as_str(), held))
    }

    /// Every report held, with its asset.
    pub fn iter(&self) -> impl Iterator<Item = (Kind, &str, &Report)> {
        self.held()
            .map(|(kind, name, held)| (kind, name, &*held.report))
    }

    /// Every asset with a report, and when that report was fetched.
    pub fn fetched(&self) -> impl Iterator<Item = (Kind, &str, Instant)> {
        self.held()
            .map(|(kind, name, held)| (kind, name, held.fetched))
    }

    /// The blacklists the reports name (listing the asset now or before), each once, in name
    /// order: what `reputation_blacklist_info` describes.
    pub fn blacklists(&self) -> Vec<Box<str>> {
        let names: std::collections::HashSet<&str> = self
            .iter()
            .flat_map(|(.., report)| report.listings.iter())
            .map(|listing| listing.blacklist.as_str())
            .collect();
        let mut names: Vec<Box<str>> = names.into_iter().map(Box::from).collect();
        names.sort_unstable();
        names
    }

    /// The `n` listings that began last, newest first, of every asset with a report, and how
    /// many listings there are in all.
    pub fn newest_listings(&self, n: usize) -> (Vec<CurrentListing<'_>>, usize) {
        let mut listings: Vec<CurrentListing<'_>> = self
            .iter()
            .flat_map(|(kind, asset, report)| {
                report.listings.iter().filter_map(move |listing| {
                    Some(CurrentListing {
                        kind,
                        asset,
                        blacklist: &listing.blacklist,
                        since: listing.since.filter(|_| listing.listed)?,
                        report,
                    })
                })
            })
            .collect();
        let total = listings.len();
        let newest_first = |a: &CurrentListing<'_>, b: &CurrentListing<'_>| {
            b.since
                .total_cmp(&a.since)
                .then_with(|| (a.asset, a.blacklist).cmp(&(b.asset, b.blacklist)))
        };
        if listings.len() > n {
            listings.select_nth_unstable_by(n, newest_first);
            listings.truncate(n);
        }
        listings.sort_by(newest_first);
        (listings, total)
    }

    /// Number of reports held.
    pub fn len(&self) -> usize {
        self.ips.len() + self.domains.len()
    }

    /// Whether no report is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The listings of one blacklist that ended, from its events oldest first: (began, ended), a
/// run of `Listed` events and the event after it that was not.
fn ended_listings(events: &[(f64, bool)]) -> impl Iterator<Item = (f64, f64)> + '_ {
    let mut began = None;
    events.iter().filter_map(move |&(at, listed)| {
        if listed {
            began.get_or_insert(at);
            None
        } else {
            began.take().map(|began| (began, at))
        }
    })
}

impl Listing {
    /// The state on `blacklist` from its events, oldest first: the newest decides, and while
    /// it says `Listed` the listing began at the first `Listed` of the run it ends.
    fn of(blacklist: &str, events: &[(f64, bool)]) -> Listing {
        let &(changed, listed) = events.last().expect("a blacklist has at least one event");
        let since = listed.then(|| {
            events
                .iter()
                .rev()
                .take_while(|(_, listed)| *listed)
                .last()
                .map_or(changed, |(at, _)| *at)
        });
        Listing {
            blacklist: blacklist.to_owned(),
            listed,
            changed,
            since,
        }
    }
}

impl Report {
    /// Whether the list, saying `listed` of the asset, has moved on from this report: its
    /// count or change differs from the report's. The report that follows the list is asked
    /// for; until it comes, this one tells of an older check.
    pub fn is_behind(&self, listed: Blacklisting) -> bool {
        self.blacklisting != listed
    }

    /// When the count rose ([`Report::blacklistings_rose`]), only while the report is not
    /// behind the list saying `listed`: a report behind its list dates an earlier rise, or none,
    /// and the rules would take that date for the rise the list now shows.
    pub fn rise_as_of(&self, listed: Blacklisting) -> Option<f64> {
        self.blacklistings_rose.filter(|_| !self.is_behind(listed))
    }

    /// Maps the decoded report of the asset `name`; dates that do not parse, and tags past
    /// `max_labels` or over 1 KiB, are reported and skipped.
    pub fn from_dto(
        mut dto: AssetReport,
        name: &str,
        zone: &TimeZone,
        max_labels: usize,
        unrecognized: &mut Vec<Unrecognized>,
    ) -> Self {
        let tags = label_values(
            std::mem::take(&mut dto.tags),
            max_labels,
            Field::Tags,
            name,
            unrecognized,
        );
        let mut parse = |field: Field, text: &str| {
            let parsed = date::parse(text, zone);
            if parsed.is_none() {
                unrecognized.push(Unrecognized::new(
                    field,
                    format!("{:?}", text.chars().take(64).collect::<String>()),
                ));
            }
            parsed
        };

        // Each blacklist's events in time order (they come in any order; of events at the same
        // time, the first in the report counts as the newest, so they are taken last to first
        // and the sort is stable).
        let mut events: HashMap<&str, Vec<(f64, bool)>> = HashMap::new();
        for event in dto.blacklist_history.iter().rev() {
            let Some(at) = parse(Field::BlacklistHistoryDate, &event.date) else {
                continue;
            };
            let listed = event.status.trim().eq_ignore_ascii_case("listed");
            events
                .entry(event.blacklist.as_str())
                .or_default()
                .push((at, listed));
        }
        let mut ended = Vec::new();
        let mut listings: Vec<Listing> = events
            .into_iter()
            .filter(|(name, _)| !name.is_empty())
            .map(|(blacklist, mut events)| {
                events.sort_by(|a, b| a.0.total_cmp(&b.0));
                ended.extend(ended_listings(&events));
                Listing::of(blacklist, &events)
            })
            .collect();
        listings.sort_by(|a, b| a.blacklist.cmp(&b.blacklist));
        let named = listings.iter().filter(|l| l.listed).count();

        let senderscore_updated = dto
            .senderscore_history
            .iter()
            .filter_map(|e| e.date.as_deref())
            .filter_map(|d| parse(Field::SenderscoreHistoryDate, d))
            .reduce(f64::max);

        // The newest two entries by date, whatever their order in the report; values that are
        // not counts are reported once the dates are read.
        let mut newest: Option<(f64, f64)> = None;
        let mut before: Option<(f64, f64)> = None;
        let mut not_counts = Vec::new();
        for entry in &dto.blacklisted_history {
            let Some(at) = entry
                .date
                .as_deref()
                .and_then(|d| parse(Field::BlacklistedHistory, d))
            else {
                continue;
            };
            let count = match &entry.value {
                Loose::Number(n) => Some(*n),
                Loose::Text(text) => text.trim().parse().ok(),
                _ => None,
            };
            let Some(count) = count else {
                not_counts.push(Unrecognized::new(
                    Field::BlacklistedHistory,
                    describe(&entry.value),
                ));
                continue;
            };
            if newest.is_none_or(|(newest_at, _)| at > newest_at) {
                before = newest;
                newest = Some((at, count));
            } else if before.is_none_or(|(before_at, _)| at > before_at) {
                before = Some((at, count));
            }
        }
        unrecognized.append(&mut not_counts);
        let blacklistings_rose = match (newest, before) {
            (Some((at, count)), Some((_, earlier))) if count > earlier => Some(at),
            (Some((at, count)), None) if count > 0.0 => Some(at),
            _ => None,
        };
        let blacklistings_rise_ended = blacklistings_rose.map(|rose| {
            let counted_before = |&&(began, ended): &&(f64, f64)| match before {
                Some((before, _)) => began <= before && before < ended && ended <= rose,
                None => false,
            };
            ended.iter().filter(counted_before).count() as f64
        });

        Report {
            tags,
            listings,
            named,
            senderscore_updated,
            blacklistings_rose,
            blacklistings_rise_ended,
            blacklisting: Blacklisting::of(&dto.blacklisted, &dto.blacklisted_change.last_check),
            asked_for: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::dto::{BlacklistEvent, CountEntry, ScoreEntry};

    fn event(date: &str, status: &str, blacklist: &str) -> BlacklistEvent {
        BlacklistEvent {
            date: date.into(),
            status: status.into(),
            blacklist: blacklist.into(),
        }
    }

    #[test]
    fn the_newest_event_of_each_blacklist_decides_whatever_the_order() {
        let dto = AssetReport {
            tags: vec!["team-a".into(), "team-a".into(), "bulk".into()],
            senderscore_history: vec![
                ScoreEntry {
                    date: Some("19th Nov 2026 10:00am".into()),
                    ..ScoreEntry::default()
                },
                ScoreEntry {
                    date: Some("21st Nov 2026 10:00am".into()),
                    ..ScoreEntry::default()
                },
            ],
            blacklist_history: vec![
                event("10th Nov 2026 09:00am", "Listed", "SBL"),
                event("12th Nov 2026 09:00am", "Delisted", "SBL"),
                event("11th Nov 2026 09:00am", "Listed", "SBL"),
                event("1st Nov 2026 09:00am", "Delisted", "Barracuda"),
                event("2nd Nov 2026 09:00am", "Listed", "Barracuda"),
                event("not a date", "Delisted", "Barracuda"),
            ],
            ..AssetReport::default()
        };
        let mut unrecognized = Vec::new();
        let report = Report::from_dto(dto, "192.0.2.1", &TimeZone::UTC, 64, &mut unrecognized);
        let nov = |day: i64, hour: i64| 1_793_491_200.0 + ((day - 1) * 86_400 + hour * 3600) as f64;
        assert_eq!(
            report.listings,
            [
                Listing {
                    blacklist: "Barracuda".into(),
                    listed: true,
                    changed: nov(2, 9),
                    since: Some(nov(2, 9)),
                },
                Listing {
                    blacklist: "SBL".into(),
                    listed: false,
                    changed: nov(12, 9),
                    since: None,
                },
            ]
        );
        assert_eq!(report.named, 1);
        assert_eq!(report.tags, ["team-a", "bulk"]);
        assert_eq!(report.senderscore_updated, Some(nov(21, 10)));
        assert_eq!(unrecognized.len(), 1);
        assert_eq!(unrecognized[0].field, Field::BlacklistHistoryDate);
    }

    #[test]
    fn a_listing_began_at_the_first_listed_event_since_the_last_delisting() {
        let dto = AssetReport {
            blacklist_history: vec![
                // Relisted on the 20th after a delisting; the API repeats `Listed` on the 22nd.
                event("22nd Nov 2026 09:00am", "Listed", "SBL"),
                event("5th Nov 2026 09:00am", "Listed", "SBL"),
                event("20th Nov 2026 09:00am", "Listed", "SBL"),
                event("8th Nov 2026 09:00am", "Delisted", "SBL"),
                // Two events at the same time: the first in the report is taken as the newer.
                event("3rd Nov 2026 09:00am", "Listed", "SpamCop"),
                event("3rd Nov 2026 09:00am", "Delisted", "SpamCop"),
                event("1st Nov 2026 09:00am", "Listed", "Barracuda"),
            ],
            ..AssetReport::default()
        };
        let report = Report::from_dto(dto, "192.0.2.1", &TimeZone::UTC, 64, &mut Vec::new());
        let nov = |day: i64| 1_793_491_200.0 + ((day - 1) * 86_400 + 9 * 3600) as f64;
        let since: Vec<(&str, Option<f64>, f64)> = report
            .listings
            .iter()
            .map(|l| (l.blacklist.as_str(), l.since, l.changed))
            .collect();
        assert_eq!(
            since,
            [
                ("Barracuda", Some(nov(1)), nov(1)),
                ("SBL", Some(nov(20)), nov(22)),
                ("SpamCop", Some(nov(3)), nov(3)),
            ]
        );
        assert_eq!(report.named, 3);
    }

    /// The report's blacklisting count history as (value, date) pairs, in the order given.
    fn rose(history: &[(Loose, &str)]) -> (Option<f64>, Vec<Unrecognized>) {
        let dto = AssetReport {
            blacklisted_history: history
                .iter()
                .map(|(value, date)| CountEntry {
                    value: value.clone(),
                    date: Some((*date).into()),
                })
                .collect(),
            ..AssetReport::default()
        };
        let mut unrecognized = Vec::new();
        let report = Report::from_dto(dto, "192.0.2.1", &TimeZone::UTC, 64, &mut unrecognized);
        (report.blacklistings_rose, unrecognized)
    }

    #[test]
    fn the_count_rose_at_its_newest_entry_only_when_that_entry_counts_more() {
        // 1st November 2026, 9:00 UTC, and the hours after it.
        let at = |hours: i64| 1_793_523_600.0 + (hours * 3600) as f64;
        let n = Loose::Number;
        // Newest first, as the API sends it, or in any order: the dates decide.
        let risen = [
            (n(2.0), "1st Nov 2026 11:00am"),
            (n(1.0), "1st Nov 2026 10:00am"),
        ];
        assert_eq!(rose(&risen).0, Some(at(2)));
        let shuffled = [
            (n(1.0), "1st Nov 2026 10:00am"),
            (n(3.0), "1st Nov 2026 11:00am"),
            (n(0.0), "1st Nov 2026 09:00am"),
        ];
        assert_eq!(rose(&shuffled).0, Some(at(2)));
        // A count that fell or stayed at its newest entry: no rise is the newest change.
        let fell = [
            (n(1.0), "1st Nov 2026 11:00am"),
            (n(2.0), "1st Nov 2026 10:00am"),
        ];
        assert_eq!(rose(&fell).0, None);
        let same = [
            (n(2.0), "1st Nov 2026 11:00am"),
            (n(2.0), "1st Nov 2026 10:00am"),
            (n(1.0), "1st Nov 2026 09:00am"),
        ];
        assert_eq!(rose(&same).0, None);
        // The only entry rose from nothing when it counts any listing.
        assert_eq!(rose(&[(n(1.0), "1st Nov 2026 09:00am")]).0, Some(at(0)));
        assert_eq!(rose(&[(n(0.0), "1st Nov 2026 09:00am")]).0, None);
        assert_eq!(rose(&[]).0, None);
        // A number written as text counts; an entry whose date or value cannot be read is
        // reported and left out.
        let text = [
            (Loose::Text(" 2 ".into()), "1st Nov 2026 11:00am"),
            (n(1.0), "1st Nov 2026 10:00am"),
        ];
        assert_eq!(rose(&text).0, Some(at(2)));
        let (risen, unrecognized) = rose(&[
            (Loose::Text("many".into()), "1st Nov 2026 12:00pm"),
            (n(2.0), "sometime"),
            (n(1.0), "1st Nov 2026 10:00am"),
        ]);
        assert_eq!(risen, Some(at(1)));
        let fields: Vec<(Field, &str)> = unrecognized
            .iter()
            .map(|u| (u.field, u.value.as_str()))
            .collect();
        assert_eq!(
            fields,
            [
                (Field::BlacklistedHistory, "\"sometime\""),
                (Field::BlacklistedHistory, "\"many\"")
            ]
        );
    }
    #[test]
    fn a_rise_is_net_of_the_listings_ended_since_the_entry_before_it() {
        // 1st November 2026, 9:00 UTC, and the hours after it.
        let at = |hours: i64| 1_793_523_600.0 + (hours * 3600) as f64;
        let dto = AssetReport {
            // The check at 10:00 counted Barracuda, SpamCop and UCEPROTECT; the one at 11:00
            // counts UCEPROTECT, SpamCop again, SBL and a listing no report names.
            blacklisted_history: vec![
                CountEntry {
                    value: Loose::Number(4.0),
                    date: Some("1st Nov 2026 11:00am".into()),
                },
                CountEntry {
                    value: Loose::Number(3.0),
                    date: Some("1st Nov 2026 10:00am".into()),
                },
            ],
            blacklist_history: vec![
                // Counted at 10:00, ended before 11:00: the rise is net of it.
                event("1st Nov 2026 09:30am", "Listed", "Barracuda"),
                event("1st Nov 2026 10:30am", "Delisted", "Barracuda"),
                // Ended and began again in between: the first listing ended, the second began.
                event("1st Nov 2026 08:00am", "Listed", "SpamCop"),
                event("1st Nov 2026 10:10am", "Delisted", "SpamCop"),
                event("1st Nov 2026 10:40am", "Listed", "SpamCop"),
                // Began after 10:00 and ended before 11:00: neither check counted it.
                event("1st Nov 2026 10:05am", "Listed", "SBL-XBL"),
                event("1st Nov 2026 10:20am", "Delisted", "SBL-XBL"),
                // Ended at 11:30, after the rise's check: that check still counted it.
                event("1st Nov 2026 07:00am", "Listed", "UCEPROTECT"),
                event("1st Nov 2026 11:30am", "Delisted", "UCEPROTECT"),
                event("1st Nov 2026 10:45am", "Listed", "SBL"),
            ],
            ..AssetReport::default()
        };
        let report = Report::from_dto(dto, "192.0.2.1", &TimeZone::UTC, 64, &mut Vec::new());
        assert_eq!(report.blacklistings_rose, Some(at(2)));
        assert_eq!(report.blacklistings_rise_ended, Some(2.0));

        let dto = AssetReport {
            blacklisted_history: vec![CountEntry {
                value: Loose::Number(1.0),
                date: Some("1st Nov 2026 11:00am".into()),
            }],
            blacklist_history: vec![
                event("1st Nov 2026 09:30am", "Listed", "Barracuda"),
                event("1st Nov 2026 10:30am", "Delisted", "Barracuda"),
            ],
            ..AssetReport::default()
        };
        // The only entry: no check before it counted anything.
        let report = Report::from_dto(dto, "192.0.2.1", &TimeZone::UTC, 64, &mut Vec::new());
        assert_eq!(report.blacklistings_rise_ended, Some(0.0));
    }
}
