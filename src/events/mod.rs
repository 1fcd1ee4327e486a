//! Events: what is news, decided here from the API's own data and served with an identity that
//! every replica and every restart agrees on, so that an alert on it is one stateless condition.
//!
//! A **listing event** is the listings of one asset that began at one API check and still
//! stand. Its identity is the asset and the time of that check: the start of each listing that
//! the report's `blacklist_history` dates, to the minute, as every replica reading the report
//! reads it, before and after any restart, warm or cold. Listings that began at the same check
//! (one rise of the count that several lists explain) are one event that names them all. An
//! event is served while it is younger than [`LISTING_LIFETIME`] and at least one of its
//! listings stands on a list that has not shut down; the list's count of 0 (or the asset gone
//! from the list) ends every event of the asset at once, since the list is polled more often
//! than the report.
//!
//! A **rise no report names** is a rise of the list's count at the API's last check that the
//! report of the asset does not explain within a poll and 3 minutes (the follow-up request and
//! its retries): the asset not selected for reports, its report failing or late. It needs memory,
//! which [`Rises`] keeps: when this replica first saw it, and the listings a report named after
//! it had become an event, which are that event's and make none of their own. Its identity is
//! the asset alone, so the replicas that see it serve one; rises at consecutive checks are one.
//!
//! The candidates are gathered once per snapshot (young listings only, a few per listed asset)
//! and each scrape writes those still young at its own time, so an event ends at its age
//! however long the API has been silent.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::time::Instant;

use crate::blacklists::{Blacklists, Policy};
use crate::exposition::write_sample_at;
use crate::health::unix_now;
use crate::model::{Blacklisting, Blacklistings, Report, Reports};
use crate::vocabulary::{Kind, shard_of};

mod changes;
mod rises;

use crate::model::shown::Drop;
pub use changes::{HeldChanges, ListView};
use rises::Named;
pub use rises::{Reporter, Reporters, Rise, Rises};

/// How long a listing is news: its event is served for this long after the check at which it
/// began (12 hours), and not after.
pub const LISTING_LIFETIME: f64 = 12.0 * 3600.0;

/// The family of the listing events.
pub const LISTING_EVENT: &str = "reputation_blacklisting_event_timestamp_seconds";

/// The family of the rises no report names.
pub const UNNAMED_EVENT: &str = "reputation_blacklisting_unnamed_event_timestamp_seconds";

/// How long a rise no report names is news: as long as a listing.
const UNNAMED_LIFETIME: Duration = Duration::from_secs(12 * 3600);

const UNNAMED_EVENT_HELP: &str = "Unix time this replica first saw a rise of the asset's \
    blacklisted count that no asset report named within a poll and 3 minutes (reports off or \
    not selected for it, or its report failing or late), while the rise stands and is younger than 12 hours. \
    Rises at consecutive API checks are one; listings a report names later are this event's.";

/// How long after the API's last update of an asset (its newest Sender Score) a change it
/// shows is old news: the API stopped checking it (3 days).
pub const STOPPED_CHECKING: f64 = 3.0 * 86_400.0;

/// The family of the score drops.
pub const DROP_EVENT: &str = "reputation_senderscore_drop_event";

const DROP_EVENT_HELP: &str = "Points the asset's Sender Score dropped, from the score before \
    (from) to the score after (to), as the API's senderscore and senderscore_change give them: \
    at its last check, or at checks no list of this replica showed. Ends at the second list in a \
    row that does not show it; a list without a score ends nothing.";

/// The family of the SNDS blocks.
pub const BLOCK_EVENT: &str = "reputation_snds_block_event";

const BLOCK_EVENT_HELP: &str = "1 while Microsoft SNDS newly blocks the asset: blocked at the \
    API's last check (snds_blocked_change) or at one no list of this replica showed. Ends at the \
    second list in a row that does not show it; a list without a value ends nothing.";

const LISTING_EVENT_HELP: &str = "Unix time of the API check at which the asset's listing on \
    the blacklist began, while it stands and is younger than 12 hours (the asset report's \
    blacklist_history); labelled with the check (RFC 3339), so that blacklist, asset and check \
    are the event's identity, the same on every replica and after restarts. Lists that have shut \
    down make no event.";

/// The listings of one asset that began at one API check and may still be news.
#[derive(Debug, Clone, PartialEq)]
pub struct ListingEvent {
    /// The asset's kind.
    pub kind: Kind,
    /// The asset, as the API spells it.
    pub asset: Box<str>,
    /// Unix time of the check: when the listings began.
    pub check: f64,
    /// The blacklists whose listings began then and stand, as the report names them, sorted.
    pub blacklists: Vec<Box<str>>,
    /// The shard the asset's series are served in.
    shard: usize,
}

impl ListingEvent {
    /// The `check` label: the check's time in RFC 3339, UTC, to the second.
    pub fn check_label(&self) -> String {
        check_label(self.check)
    }
}

/// The `check` label of an event at Unix time `check`.
pub fn check_label(check: f64) -> String {
    match jiff::Timestamp::from_second(check as i64) {
        Ok(at) => at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        // A date the API could write and jiff cannot hold: the seconds, still one identity.
        Err(_) => format!("{check}"),
    }
}

/// A moment on both clocks: the process's (for what this replica saw, on Tokio's clock, paused
/// in tests) and the wall's (for the API's dates).
#[derive(Debug, Clone, Copy)]
pub struct Now {
    /// On the process's clock.
    pub at: Instant,
    /// The same moment in Unix seconds.
    pub unix: f64,
}

impl Now {
    /// This moment. Its Unix time is the wall's at the process's first call, carried on by the
    /// process's clock: what a replica saw is dated as it was timed, and on Tokio's paused
    /// clock (the tests' days in seconds) the Unix time moves with the days.
    pub fn current() -> Now {
        static ANCHOR: OnceLock<(std::time::Instant, f64)> = OnceLock::new();
        let at = Instant::now();
        let (anchored, unix) = *ANCHOR.get_or_init(|| (at.into_std(), unix_now()));
        let since = match at.into_std().checked_duration_since(anchored) {
            Some(after) => after.as_secs_f64(),
            None => -anchored.duration_since(at.into_std()).as_secs_f64(),
        };
        Now {
            at,
            unix: unix + since,
        }
    }

    /// Unix seconds of `then`, an earlier instant of the process.
    fn unix_of(self, then: Instant) -> f64 {
        self.unix - self.at.saturating_duration_since(then).as_secs_f64()
    }
}

/// What a replica remembers to tell events: the rises no report named in time, and the score
/// drops and SNDS blocks its lists showed.
#[derive(Debug, Clone, Default)]
pub struct Memory {
    /// The rises of counts no report named in time.
    pub rises: Rises,
    /// The score drops and SNDS blocks the lists showed.
    pub changes: HeldChanges,
}

/// What the state store keeps of a [`Memory`].
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct KeptMemory {
    rises: Vec<rises::KeptRise>,
    changes: changes::KeptChanges,
}

impl Memory {
    /// Whether it remembers nothing.
    pub fn is_empty(&self) -> bool {
        self.rises.iter().next().is_none()
            && self.changes.drops().next().is_none()
            && self.changes.blocks().next().is_none()
    }

    /// As the state store keeps it (instants as Unix times by `now`).
    pub fn to_bytes(&self, now: Now) -> Vec<u8> {
        let kept = KeptMemory {
            rises: self.rises.kept(now),
            changes: self.changes.kept(),
        };
        postcard::to_allocvec(&kept).unwrap_or_default()
    }

    /// What the state store kept, read back at `now`; `None` when it cannot be read.
    pub fn from_bytes(bytes: &[u8], now: Now) -> Option<Memory> {
        let kept: KeptMemory = postcard::from_bytes(bytes).ok()?;
        Some(Memory {
            rises: Rises::from_kept(kept.rises, now),
            changes: HeldChanges::from_kept(kept.changes),
        })
    }
}

/// The events a snapshot serves: gathered when it is built, written at each scrape.
#[derive(Debug, Clone, Default)]
pub struct Events {
    /// Listing events young when gathered, by shard, asset and check.
    listings: Vec<ListingEvent>,
    /// Rises no report named in time (or not yet: the scrape tells), by shard and asset: when
    /// seen, and served from when.
    unnamed: Vec<(usize, Kind, Box<str>, Instant, Instant)>,
    /// Score drops, by shard, asset and drop.
    drops: Vec<(usize, Kind, Box<str>, Drop)>,
    /// SNDS blocks, by shard and asset.
    blocks: Vec<(usize, Kind, Box<str>)>,
}

impl Events {
    /// The events of these reports and of what this replica remembers, given what each kind's
    /// list says of its assets' counts (`None` where no list of that kind is served: its assets
    /// serve nothing), young at Unix time `now`, in `shards` shards.
    pub fn gather(
        reports: &Reports,
        memory: &Memory,
        lists: [(Kind, Option<&Blacklistings>); 2],
        now: f64,
        shards: usize,
    ) -> Events {
        let served = |kind: Kind| lists.iter().find(|(k, _)| *k == kind).and_then(|(_, s)| *s);
        let rises = &memory.rises;
        let mut listings = Vec::new();
        // Most reports (every asset's, with `asset_reports.enabled`) name no young listing: they
        // are passed over before any lookup.
        let news = |report: &Report| {
            (report.listings.iter()).any(|l| l.listed && l.since.is_some_and(|s| young(s, now)))
        };
        for (kind, asset, report) in reports.iter().filter(|(.., report)| news(report)) {
            let Some(said) = served(kind) else { continue };
            let absorbed = rises.absorbed(kind, asset);
            for (check, blacklists) in listing_events(report, said.of(asset), absorbed, now) {
                listings.push(ListingEvent {
                    kind,
                    asset: asset.into(),
                    check,
                    blacklists: blacklists.into_iter().map(Box::from).collect(),
                    shard: shard_of(kind, asset, shards),
                });
            }
        }
        listings.sort_by(|a, b| {
            (a.shard, a.kind.label(), &a.asset)
                .cmp(&(b.shard, b.kind.label(), &b.asset))
                .then(a.check.total_cmp(&b.check))
        });
        let mut unnamed: Vec<_> = (rises.iter())
            .filter(|(kind, ..)| served(*kind).is_some())
            .map(|(kind, asset, rise)| {
                let from = rise.served_from(rises.wait());
                (
                    shard_of(kind, asset, shards),
                    kind,
                    asset.into(),
                    rise.seen,
                    from,
                )
            })
            .collect();
        unnamed.sort_by(|a, b| (a.0, a.1.label(), &a.2).cmp(&(b.0, b.1.label(), &b.2)));
        let changes = &memory.changes;
        // A change on an asset whose report dates the API's last update days back is the last
        // thing an API that stopped checking it said: old news.
        let current = |kind: Kind, asset: &str| {
            let updated = reports.get(kind, asset).and_then(|r| r.senderscore_updated);
            served(kind).is_some() && updated.is_none_or(|at| now - at < STOPPED_CHECKING)
        };
        let mut drops: Vec<_> = (changes.drops())
            .filter(|(kind, asset, _)| current(*kind, asset))
            .map(|(kind, asset, drop)| (shard_of(kind, asset, shards), kind, asset.into(), drop))
            .collect();
        drops.sort_by(|a, b| (a.0, a.1.label(), &a.2, a.3).cmp(&(b.0, b.1.label(), &b.2, b.3)));
        let mut blocks: Vec<_> = (changes.blocks())
            .filter(|(kind, asset)| current(*kind, asset))
            .map(|(kind, asset)| (shard_of(kind, asset, shards), kind, asset.into()))
            .collect();
        blocks.sort_by(|a, b| (a.0, a.1.label(), &a.2).cmp(&(b.0, b.1.label(), &b.2)));
        Events {
            listings,
            unnamed,
            drops,
            blocks,
        }
    }

    /// The listing events of shard `shard` (`None`: every shard) young at Unix time `now`, with
    /// the blacklists that page (not shut down, as `table` knows them).
    pub fn listings<'a>(
        &'a self,
        table: &'a Blacklists,
        shard: Option<usize>,
        now: f64,
    ) -> impl Iterator<Item = ListingEvent> + 'a {
        self.listings
            .iter()
            .filter(move |e| shard.is_none_or(|s| s == e.shard))
            .filter(move |e| young(e.check, now))
            .filter_map(move |e| {
                let paging: Vec<Box<str>> = (e.blacklists.iter())
                    .filter(|b| table.lookup(b).is_none_or(|t| t.policy != Policy::Gone))
                    .cloned()
                    .collect();
                (!paging.is_empty()).then(|| ListingEvent {
                    blacklists: paging,
                    ..e.clone()
                })
            })
    }

    /// The event families in OpenMetrics text, of shard `shard` (`None`: every shard) at
    /// `now`: the listing events young then, and the rises no report named within the grace.
    pub fn encode(&self, table: &Blacklists, shard: Option<usize>, now: Now, out: &mut String) {
        let _ = write!(
            out,
            "# HELP {LISTING_EVENT} {LISTING_EVENT_HELP}\n# TYPE {LISTING_EVENT} gauge\n"
        );
        let in_shard = |event_shard: usize| shard.is_none_or(|s| s == event_shard);
        let mut lines = Vec::new();
        for event in self.listings(table, shard, now.unix) {
            let check = event.check_label();
            for blacklist in &event.blacklists {
                let labels = [
                    ("kind", event.kind.label()),
                    ("asset", &*event.asset),
                    ("blacklist", &**blacklist),
                    ("check", &check),
                ];
                write_sample_at(&mut lines, LISTING_EVENT, &labels, event.check, None);
            }
        }
        // Labels and values are strings the writer writes whole.
        out.push_str(&String::from_utf8_lossy(&lines));
        let _ = write!(
            out,
            "# HELP {UNNAMED_EVENT} {UNNAMED_EVENT_HELP}\n# TYPE {UNNAMED_EVENT} gauge\n"
        );
        lines.clear();
        for (_, kind, asset, seen, from) in self.unnamed.iter().filter(|e| in_shard(e.0)) {
            let age = now.at.saturating_duration_since(*seen);
            if now.at >= *from && age < UNNAMED_LIFETIME {
                let labels = [("kind", kind.label()), ("asset", &**asset)];
                let seen = now.unix_of(*seen).floor();
                write_sample_at(&mut lines, UNNAMED_EVENT, &labels, seen, None);
            }
        }
        out.push_str(&String::from_utf8_lossy(&lines));
        let _ = write!(
            out,
            "# HELP {DROP_EVENT} {DROP_EVENT_HELP}\n# TYPE {DROP_EVENT} gauge\n"
        );
        lines.clear();
        for (_, kind, asset, (from, to)) in self.drops.iter().filter(|e| in_shard(e.0)) {
            let (from_label, to_label) = (from.to_string(), to.to_string());
            let labels = [
                ("kind", kind.label()),
                ("asset", &**asset),
                ("from", &from_label),
                ("to", &to_label),
            ];
            write_sample_at(&mut lines, DROP_EVENT, &labels, (from - to) as f64, None);
        }
        out.push_str(&String::from_utf8_lossy(&lines));
        let _ = write!(
            out,
            "# HELP {BLOCK_EVENT} {BLOCK_EVENT_HELP}\n# TYPE {BLOCK_EVENT} gauge\n"
        );
        lines.clear();
        for (_, kind, asset) in self.blocks.iter().filter(|e| in_shard(e.0)) {
            let labels = [("kind", kind.label()), ("asset", &**asset)];
            write_sample_at(&mut lines, BLOCK_EVENT, &labels, 1.0, None);
        }
        out.push_str(&String::from_utf8_lossy(&lines));
    }
}

/// Whether an event of the check at Unix time `check` is news at `now`. A check dated ahead of
/// the exporter's clock (the API's clock, or a zone set wrong) is young.
fn young(check: f64, now: f64) -> bool {
    now - check < LISTING_LIFETIME
}

/// The listing events of one report, young at Unix time `now`, given what its list says of
/// the asset's count: each check at which listings that stand began, with their blacklists
/// (sorted), oldest check first, leaving out the listings `absorbed` by a rise no report named
/// in time. None when the list counts no listing: the list is polled more often than the
/// report, and its 0 ends them all.
pub fn listing_events<'a>(
    report: &'a Report,
    list: Blacklisting,
    absorbed: &[Named],
    now: f64,
) -> Vec<(f64, Vec<&'a str>)> {
    if list.count == Some(0.0) {
        return Vec::new();
    }
    let mut checks: BTreeMap<i64, Vec<&str>> = BTreeMap::new();
    for listing in report.listings.iter().filter(|l| l.listed) {
        let since = listing.since.filter(|since| young(*since, now));
        let own = |s: &f64| {
            !absorbed
                .iter()
                .any(|(b, a)| **b == *listing.blacklist && *a == *s as i64)
        };
        if let Some(since) = since.filter(own) {
            // Keyed by the whole second: the API's dates are to the minute.
            (checks.entry(since as i64).or_default()).push(&listing.blacklist);
        }
    }
    checks
        .into_iter()
        .map(|(check, mut blacklists)| {
            blacklists.sort_unstable();
            blacklists.dedup();
            (check as f64, blacklists)
        })
        .collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::model::Listing;

    pub(super) const NOW: f64 = 1_796_000_000.0;
    pub(super) const HOUR: f64 = 3600.0;

    pub(super) fn listing(blacklist: &str, listed: bool, since: Option<f64>) -> Listing {
        Listing {
            blacklist: blacklist.to_owned(),
            listed,
            changed: since.unwrap_or(NOW - 2.0 * HOUR),
            since,
        }
    }

    pub(super) fn report(listings: Vec<Listing>) -> Report {
        Report {
            named: listings.iter().filter(|l| l.listed).count(),
            listings,
            ..Report::default()
        }
    }

    fn counted(count: f64) -> Blacklisting {
        Blacklisting {
            count: Some(count),
            change: Some(0.0),
        }
    }

    #[test]
    fn listings_begun_at_one_check_are_one_event_naming_them_all() {
        let r = report(vec![
            listing("SpamCop", true, Some(NOW - HOUR)),
            listing("BARRACUDA", true, Some(NOW - HOUR)),
            listing("UCEPROTECT-1", true, Some(NOW - 3.0 * HOUR)),
        ]);
        assert_eq!(
            listing_events(&r, counted(3.0), &[], NOW),
            vec![
                (NOW - 3.0 * HOUR, vec!["UCEPROTECT-1"]),
                (NOW - HOUR, vec!["BARRACUDA", "SpamCop"]),
            ]
        );
    }

    #[test]
    fn a_listing_is_news_for_twelve_hours_and_an_ended_one_is_none() {
        let r = report(vec![
            listing("SpamCop", true, Some(NOW - 12.0 * HOUR + 60.0)),
            listing("BARRACUDA", true, Some(NOW - 12.0 * HOUR)),
            listing("Spamhaus SBL", false, None),
        ]);
        assert_eq!(
            listing_events(&r, counted(2.0), &[], NOW),
            vec![(NOW - 12.0 * HOUR + 60.0, vec!["SpamCop"])]
        );
        assert_eq!(listing_events(&r, counted(2.0), &[], NOW + 60.0), vec![]);
    }

    #[test]
    fn the_lists_zero_ends_every_event_of_the_asset_and_an_unknown_count_ends_none() {
        let r = report(vec![listing("SpamCop", true, Some(NOW - HOUR))]);
        assert_eq!(listing_events(&r, counted(0.0), &[], NOW), vec![]);
        let unknown = Blacklisting {
            count: None,
            change: None,
        };
        assert_eq!(
            listing_events(&r, unknown, &[], NOW),
            vec![(NOW - HOUR, vec!["SpamCop"])]
        );
    }

    #[test]
    fn the_check_label_is_the_checks_time_in_rfc_3339() {
        assert_eq!(check_label(1_764_188_040.0), "2025-11-26T20:14:00Z");
    }

    fn gathered(report: Report, count: f64) -> Events {
        let mut reports = Reports::default();
        let name = "192.0.2.7".to_owned();
        reports.set(Kind::Ip, name.clone(), report, Instant::now());
        let mut said = Blacklistings::default();
        said.note(&name, counted(count));
        let lists = [(Kind::Ip, Some(&said)), (Kind::Domain, None)];
        Events::gather(&reports, &Memory::default(), lists, NOW, 1)
    }

    /// The sample lines `encode` writes at `now`.
    pub(super) fn samples(events: &Events, now: Now) -> Vec<String> {
        let mut out = String::new();
        events.encode(&Blacklists::builtin(), None, now, &mut out);
        out.lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_owned)
            .collect()
    }

    /// A clock `seconds` after `start`, which is at Unix time NOW.
    pub(super) fn after(start: Instant, seconds: u64) -> Now {
        Now {
            at: start + Duration::from_secs(seconds),
            unix: NOW + seconds as f64,
        }
    }

    #[test]
    fn a_scrape_writes_the_young_events_without_the_lists_that_shut_down() {
        let events = gathered(
            report(vec![
                listing("SpamCop", true, Some(NOW - HOUR)),
                listing("SORBS", true, Some(NOW - HOUR)),
                listing("SORBS", true, Some(NOW - 2.0 * HOUR)),
            ]),
            2.0,
        );
        let table = Blacklists::builtin();
        let start = Instant::now();
        let check = check_label(NOW - HOUR);
        assert_eq!(
            samples(&events, after(start, 0)),
            vec![format!(
                "{LISTING_EVENT}{{kind=\"ip\",asset=\"192.0.2.7\",blacklist=\"SpamCop\",\
                 check=\"{check}\"}} {}",
                NOW - HOUR
            )]
        );
        let paging: Vec<ListingEvent> = events.listings(&table, None, NOW).collect();
        assert_eq!(paging.len(), 1);
        assert_eq!(paging[0].blacklists, vec![Box::from("SpamCop")]);
        // Twelve hours after the check, at the next scrape, nothing: the same snapshot.
        let later = after(start, (LISTING_LIFETIME - HOUR) as u64);
        assert_eq!(samples(&events, later), Vec::<String>::new());
    }

    #[test]
    fn an_asset_the_list_no_longer_shows_serves_no_event() {
        let events = gathered(
            report(vec![listing("SpamCop", true, Some(NOW - HOUR))]),
            1.0,
        );
        assert_eq!(events.listings.len(), 1);
        let mut reports = Reports::default();
        let r = report(vec![listing("SpamCop", true, Some(NOW - HOUR))]);
        reports.set(Kind::Ip, "192.0.2.7".into(), r, Instant::now());
        let empty = Blacklistings::default();
        let lists = [(Kind::Ip, Some(&empty)), (Kind::Domain, None)];
        let memory = Memory::default();
        assert!(
            Events::gather(&reports, &memory, lists, NOW, 1)
                .listings
                .is_empty()
        );
        let unserved = [(Kind::Ip, None), (Kind::Domain, None)];
        assert!(
            Events::gather(&reports, &memory, unserved, NOW, 1)
                .listings
                .is_empty()
        );
    }

    #[test]
    fn a_drop_on_an_asset_the_api_stopped_checking_is_old_news() {
        let mut polls = changes::tests::Polls::new();
        polls.list(Some((Some(70.0), -15.0, 1.0, 1.0)));
        let memory = Memory {
            changes: polls.held.clone(),
            ..Memory::default()
        };
        let said = Blacklistings::default();
        let lists = [(Kind::Ip, Some(&said)), (Kind::Domain, None)];
        let gather = |updated: f64| {
            let mut reports = Reports::default();
            let report = Report {
                senderscore_updated: Some(updated),
                ..Report::default()
            };
            reports.set(
                Kind::Ip,
                changes::tests::NAME.into(),
                report,
                Instant::now(),
            );
            let events = Events::gather(&reports, &memory, lists, NOW, 1);
            (events.drops.len(), events.blocks.len())
        };
        assert_eq!(gather(NOW - STOPPED_CHECKING + 60.0), (1, 1));
        assert_eq!(gather(NOW - STOPPED_CHECKING), (0, 0));
        let none = Events::gather(&Reports::default(), &memory, lists, NOW, 1);
        assert_eq!(
            (none.drops.len(), none.blocks.len()),
            (1, 1),
            "no report: no date"
        );
    }
}
