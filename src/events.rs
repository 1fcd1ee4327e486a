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
//! The candidates are gathered once per snapshot (young listings only, a few per listed asset)
//! and each scrape writes those still young at its own time, so an event ends at its age
//! however long the API has been silent.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::blacklists::{Blacklists, Policy};
use crate::exposition::write_sample_at;
use crate::model::{Blacklisting, Blacklistings, Report, Reports};
use crate::vocabulary::{Kind, shard_of};

/// How long a listing is news: its event is served for this long after the check at which it
/// began (12 hours), and not after.
pub const LISTING_LIFETIME: f64 = 12.0 * 3600.0;

/// The family of the listing events.
pub const LISTING_EVENT: &str = "reputation_blacklisting_event_timestamp_seconds";

const LISTING_EVENT_HELP: &str = "Unix time of the API check at which listings of the asset \
    began that still stand (the asset report's blacklist_history), while younger than 12 hours; \
    one series per check, labelled with it (check, RFC 3339): the event's identity, the same on \
    every replica and after restarts. Lists that have shut down make no event.";

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

/// The events a snapshot serves: gathered when it is built, written at each scrape.
#[derive(Debug, Clone, Default)]
pub struct Events {
    /// Listing events young when gathered, by shard, asset and check.
    listings: Vec<ListingEvent>,
}

impl Events {
    /// The events of these reports, given what each kind's list says of its assets' counts
    /// (`None` where no list of that kind is served: its assets serve nothing), young at Unix
    /// time `now`, in `shards` shards.
    pub fn gather(
        reports: &Reports,
        lists: [(Kind, Option<&Blacklistings>); 2],
        now: f64,
        shards: usize,
    ) -> Events {
        let mut listings = Vec::new();
        for (kind, asset, report) in reports.iter() {
            let Some((_, Some(said))) = lists.iter().find(|(k, _)| *k == kind) else {
                continue;
            };
            for (check, blacklists) in listing_events(report, said.of(asset), now) {
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
        Events { listings }
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

    /// The event families in OpenMetrics text: the listing events of shard `shard` (`None`:
    /// every shard) young at Unix time `now`.
    pub fn encode(&self, table: &Blacklists, shard: Option<usize>, now: f64, out: &mut String) {
        let _ = write!(
            out,
            "# HELP {LISTING_EVENT} {LISTING_EVENT_HELP}\n# TYPE {LISTING_EVENT} gauge\n"
        );
        let mut lines = Vec::new();
        for event in self.listings(table, shard, now) {
            let check = event.check_label();
            let labels = [
                ("kind", event.kind.label()),
                ("asset", &*event.asset),
                ("check", &check),
            ];
            write_sample_at(&mut lines, LISTING_EVENT, &labels, event.check, None);
        }
        // Labels and values are strings the writer writes whole.
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
/// (sorted), oldest check first. None when the list counts no listing: the list is polled more
/// often than the report, and its 0 ends them all.
pub fn listing_events(report: &Report, list: Blacklisting, now: f64) -> Vec<(f64, Vec<&str>)> {
    if list.count == Some(0.0) {
        return Vec::new();
    }
    let mut checks: BTreeMap<i64, Vec<&str>> = BTreeMap::new();
    for listing in report.listings.iter().filter(|l| l.listed) {
        if let Some(since) = listing.since.filter(|since| young(*since, now)) {
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
mod tests {
    use super::*;
    use crate::model::Listing;

    const NOW: f64 = 1_796_000_000.0;
    const HOUR: f64 = 3600.0;

    fn listing(blacklist: &str, listed: bool, since: Option<f64>) -> Listing {
        Listing {
            blacklist: blacklist.to_owned(),
            listed,
            changed: since.unwrap_or(NOW - 2.0 * HOUR),
            since,
        }
    }

    fn report(listings: Vec<Listing>) -> Report {
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
            listing_events(&r, counted(3.0), NOW),
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
            listing_events(&r, counted(2.0), NOW),
            vec![(NOW - 12.0 * HOUR + 60.0, vec!["SpamCop"])]
        );
        assert_eq!(listing_events(&r, counted(2.0), NOW + 60.0), vec![]);
    }

    #[test]
    fn the_lists_zero_ends_every_event_of_the_asset_and_an_unknown_count_ends_none() {
        let r = report(vec![listing("SpamCop", true, Some(NOW - HOUR))]);
        assert_eq!(listing_events(&r, counted(0.0), NOW), vec![]);
        let unknown = Blacklisting {
            count: None,
            change: None,
        };
        assert_eq!(
            listing_events(&r, unknown, NOW),
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
        reports.set(Kind::Ip, name.clone(), report, tokio::time::Instant::now());
        let mut said = Blacklistings::default();
        said.note(&name, counted(count));
        Events::gather(
            &reports,
            [(Kind::Ip, Some(&said)), (Kind::Domain, None)],
            NOW,
            1,
        )
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
        let mut out = String::new();
        events.encode(&table, None, NOW, &mut out);
        let samples: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
        let check = check_label(NOW - HOUR);
        assert_eq!(
            samples,
            vec![format!(
                "{LISTING_EVENT}{{kind=\"ip\",asset=\"192.0.2.7\",check=\"{check}\"}} {}",
                NOW - HOUR
            )]
        );
        let paging: Vec<ListingEvent> = events.listings(&table, None, NOW).collect();
        assert_eq!(paging.len(), 1);
        assert_eq!(paging[0].blacklists, vec![Box::from("SpamCop")]);
        // Twelve hours after the check, at the next scrape, nothing: the same snapshot.
        let mut later = String::new();
        events.encode(&table, None, NOW - HOUR + LISTING_LIFETIME, &mut later);
        assert_eq!(later.lines().filter(|l| !l.starts_with('#')).count(), 0);
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
        reports.set(Kind::Ip, "192.0.2.7".into(), r, tokio::time::Instant::now());
        let empty = Blacklistings::default();
        let lists = [(Kind::Ip, Some(&empty)), (Kind::Domain, None)];
        assert!(Events::gather(&reports, lists, NOW, 1).listings.is_empty());
        let unserved = [(Kind::Ip, None), (Kind::Domain, None)];
        assert!(
            Events::gather(&reports, unserved, NOW, 1)
                .listings
                .is_empty()
        );
    }
}
