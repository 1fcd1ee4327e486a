//! The rises of a count that no report named in time: what a replica remembers of them, and
//! who reports on which asset.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use super::{Now, UNNAMED_LIFETIME, young};
use crate::model::{Blacklistings, Report, Reports};
use crate::vocabulary::{API_CHECK_INTERVAL, Kind};

/// Who fetches an asset's report, as this replica's configuration says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reporter {
    /// This replica: a rise its report does not name in time is an event here.
    ThisReplica,
    /// Another replica (`asset_reports.replica`): that one tells whether its report names a
    /// rise, and this one serves no event for it.
    AnotherReplica,
    /// None (reports off, or the asset not included): every rise is one no report names.
    Nobody,
}

/// Who reports on which asset, from the running configuration; by default nobody.
#[derive(Clone)]
pub struct Reporters(std::sync::Arc<ReporterOf>);

/// Who reports on the asset of a kind and name.
type ReporterOf = dyn Fn(Kind, &str) -> Reporter + Send + Sync;

impl Reporters {
    /// Who reports on which asset, as `of` says.
    pub fn new(of: impl Fn(Kind, &str) -> Reporter + Send + Sync + 'static) -> Self {
        Reporters(std::sync::Arc::new(of))
    }

    /// Who reports on the asset `name` of `kind`.
    pub fn of(&self, kind: Kind, name: &str) -> Reporter {
        (self.0)(kind, name)
    }
}

impl Default for Reporters {
    fn default() -> Self {
        Reporters::new(|_, _| Reporter::Nobody)
    }
}

impl std::fmt::Debug for Reporters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reporters")
    }
}

/// A rise as the state store keeps it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct KeptRise {
    kind: u8,
    asset: String,
    /// Unix time this replica first saw it.
    seen: f64,
    known: Vec<(String, i64)>,
    absorbed: Vec<(String, i64)>,
}

/// A listing a report names: its blacklist and when it began (Unix seconds).
pub(super) type Named = (Box<str>, i64);

/// One rise no report named in time, as this replica saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Rise {
    /// When this replica's list first showed it.
    pub seen: Instant,
    /// The listings the report named when the rise was first seen: earlier news, not its own.
    known: Vec<Named>,
    /// The listings a report named after the rise had become an event: its own, which page as
    /// it, not by name.
    absorbed: Vec<Named>,
    /// Since when the list has shown no rise: one list without it (an answer that flips) ends
    /// nothing; a poll of them does.
    quiet_since: Option<Instant>,
}

impl Rise {
    /// Whether it is an event at `now`: no report named it within `wait` of `seen`, or a
    /// report named its listings late.
    fn is_event(&self, now: Instant, wait: Duration) -> bool {
        now.saturating_duration_since(self.seen) >= wait || !self.absorbed.is_empty()
    }

    /// From when it is served, if no report names it in time: `wait` after it was seen, or at
    /// once when a report named its listings late.
    pub(super) fn served_from(&self, wait: Duration) -> Instant {
        if self.absorbed.is_empty() {
            self.seen + wait
        } else {
            self.seen
        }
    }

    /// Whether it is still news at `now`.
    fn is_young(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.seen) < UNNAMED_LIFETIME
    }
}

/// The standing, young listings of a report, each (blacklist, start).
fn named(report: &Report, now: f64) -> impl Iterator<Item = Named> + '_ {
    (report.listings.iter())
        .filter(|l| l.listed)
        .filter_map(move |l| {
            l.since
                .filter(|s| young(*s, now))
                .map(|s| (l.blacklist.as_str().into(), s as i64))
        })
}

/// The rises no report named in time, per asset: what this replica remembers of them.
#[derive(Debug, Clone)]
pub struct Rises {
    rises: HashMap<(Kind, Box<str>), Rise>,
    /// How long a rise waits for its report to name it: a poll and 3 minutes.
    wait: Duration,
    /// How long the list shows no rise before a rise no report names is over: a poll.
    quiet: Duration,
    /// When this replica first took in the lists: a listing that began before it could not
    /// have been named sooner.
    started: Option<Instant>,
}

impl Default for Rises {
    fn default() -> Self {
        Rises {
            rises: HashMap::new(),
            wait: DEFAULT_WAIT,
            quiet: DEFAULT_QUIET,
            started: None,
        }
    }
}

/// How long a rise waits for its report at the default 5-minute polls.
const DEFAULT_WAIT: Duration = Duration::from_secs(8 * 60);

/// A poll at the default 5-minute polls.
const DEFAULT_QUIET: Duration = Duration::from_secs(5 * 60);

impl Rises {
    /// Takes in what the lists (`None` where no list of that kind is served) and the reports
    /// say at `now`: a rise the list shows and the report does not name is remembered; one the
    /// report names within the grace is forgotten, and the listings it names later are the
    /// rise's; a rise ends when the list counts no listing, when it is 12 hours old, or when
    /// the last check showed no rise and none of its listings stands.
    pub fn update(
        &mut self,
        lists: [(Kind, Option<&Blacklistings>); 2],
        reports: &Reports,
        reporters: &Reporters,
        now: Now,
    ) {
        let (unix_now, now_at) = (now.unix, now.at);
        let started = now.unix_of(*self.started.get_or_insert(now_at));
        for (kind, said) in lists {
            let Some(said) = said else { continue };
            // Ended: gone from the list or counted nowhere, or another replica's.
            self.rises.retain(|(k, name), _| {
                *k != kind
                    || (said.of(name).count != Some(0.0)
                        && reporters.of(kind, name) != Reporter::AnotherReplica)
            });
            for (name, list) in said.iter() {
                let (Some(count), change) = (list.count, list.change.unwrap_or(0.0)) else {
                    continue;
                };
                let reporter = reporters.of(kind, name);
                if count <= 0.0 || reporter == Reporter::AnotherReplica {
                    continue;
                }
                let report = (reporter == Reporter::ThisReplica)
                    .then(|| reports.get(kind, name))
                    .flatten();
                // The report explains the rise when it says what the list says and names as
                // many young listings as the count rose by.
                let explained = report.is_some_and(|r| {
                    r.blacklisting == list && named(r, unix_now).count() as f64 >= change
                });
                let rising = change > 0.0 && !explained;
                let key = (kind, Box::from(name));
                let (wait, quiet) = (self.wait, self.quiet);
                match self.rises.get_mut(&key) {
                    None if rising => {
                        let known = report
                            .map(|r| named(r, unix_now).collect())
                            .unwrap_or_default();
                        let rise = Rise {
                            seen: now_at,
                            known,
                            absorbed: Vec::new(),
                            quiet_since: None,
                        };
                        self.rises.insert(key, rise);
                    }
                    None => {}
                    Some(rise) => {
                        let seen = now.unix_of(rise.seen);
                        if let Some(report) = report {
                            let standing: Vec<Named> = named(report, unix_now).collect();
                            // A listing that began by the time the rise was seen is the rise's:
                            // named a poll and 3 minutes or more after it began (by the API's
                            // date, which every replica reads alike; or after this replica
                            // started, if later), it was late, and it is the event's; named
                            // sooner, it pages by name.
                            for listing in &standing {
                                let new = !rise.known.contains(listing)
                                    && !rise.absorbed.contains(listing);
                                // Begun in the API check interval before the rise was
                                // seen: a listing begun before that was another check's.
                                // A listing the report names for the rise began within an
                                // API check interval before the list showed it.
                                let its =
                                    seen - API_CHECK_INTERVAL.as_secs_f64() - quiet.as_secs_f64();
                                if new && listing.1 as f64 <= seen && listing.1 as f64 > its {
                                    let from = (listing.1 as f64).max(started);
                                    let late = unix_now >= from + wait.as_secs_f64();
                                    let into = if late {
                                        &mut rise.absorbed
                                    } else {
                                        &mut rise.known
                                    };
                                    into.push(listing.clone());
                                }
                            }
                            rise.absorbed.retain(|l| standing.contains(l));
                        }
                        let quiet = if change > 0.0 {
                            rise.quiet_since = None;
                            false
                        } else {
                            let since = *rise.quiet_since.get_or_insert(now_at);
                            now_at.saturating_duration_since(since) >= quiet
                        };
                        let over = if rise.is_event(now_at, wait) {
                            // No rise at the last checks for a poll, and none of its listings
                            // stands (or it is old news; while the list still shows the rise
                            // it is remembered, so that it does not page again).
                            quiet && (rise.absorbed.is_empty() || !rise.is_young(now_at))
                        } else {
                            // Named in time, or over before it.
                            !rising
                        };
                        if over {
                            self.rises.remove(&key);
                        }
                    }
                }
            }
        }
    }

    /// From now on, with lists polled every `poll`: a rise no report names is an event a poll
    /// and 3 minutes after it was seen (the time its report has to name it), and over after a
    /// poll of lists without a rise.
    pub fn set_poll(&mut self, poll: Duration) {
        self.wait = poll + Duration::from_secs(180);
        self.quiet = poll;
    }

    /// How long a rise waits for its report to name it.
    pub fn wait(&self) -> Duration {
        self.wait
    }

    /// The listings of the asset that are a rise's, not events of their own.
    pub(super) fn absorbed(&self, kind: Kind, name: &str) -> &[Named] {
        if self.rises.is_empty() {
            return &[];
        }
        (self.rises.get(&(kind, Box::from(name)))).map_or(&[], |rise| &rise.absorbed)
    }

    /// The rises as the state store keeps them, each seen at a Unix time by `now`.
    pub(super) fn kept(&self, now: Now) -> Vec<KeptRise> {
        let named = |l: &[Named]| l.iter().map(|(b, at)| (b.to_string(), *at)).collect();
        (self.rises.iter())
            .map(|((kind, asset), rise)| KeptRise {
                kind: *kind as u8,
                asset: asset.to_string(),
                seen: now.unix_of(rise.seen),
                known: named(&rise.known),
                absorbed: named(&rise.absorbed),
            })
            .collect()
    }

    /// The rises the state store kept, each seen at the instant of its Unix time by `now`.
    pub(super) fn from_kept(kept: Vec<KeptRise>, now: Now) -> Rises {
        let named = |l: Vec<(String, i64)>| l.into_iter().map(|(b, at)| (b.into(), at)).collect();
        let rises = kept.into_iter().filter_map(|kept| {
            let kind = *Kind::ALL.get(usize::from(kept.kind))?;
            let age = Duration::from_secs_f64((now.unix - kept.seen).max(0.0));
            let rise = Rise {
                seen: now.at.checked_sub(age)?,
                known: named(kept.known),
                absorbed: named(kept.absorbed),
                quiet_since: None,
            };
            Some(((kind, kept.asset.into_boxed_str()), rise))
        });
        Rises {
            rises: rises.collect(),
            wait: DEFAULT_WAIT,
            quiet: DEFAULT_QUIET,
            started: None,
        }
    }

    /// The rises remembered, with their assets.
    pub fn iter(&self) -> impl Iterator<Item = (Kind, &str, &Rise)> {
        self.rises
            .iter()
            .map(|((kind, name), rise)| (*kind, &**name, rise))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{NOW, after, listing, report, samples};
    use super::super::{Events, LISTING_EVENT, Memory, UNNAMED_EVENT, check_label};
    use super::*;
    use crate::model::{Blacklisting, Listing};

    const ASSET: &str = "192.0.2.9";

    /// One asset's list, its report (when given), and the rises and events of both at `now`.
    struct Story {
        start: Instant,
        rises: Rises,
        reporters: Reporters,
        said: Blacklistings,
        reports: Reports,
    }

    impl Story {
        /// A replica running for two hours before the story's time 0 (Unix time NOW).
        fn new(reporter: Reporter) -> Story {
            let running = Instant::now();
            let mut story = Story {
                start: running + std::time::Duration::from_secs(7200),
                rises: Rises::default(),
                reporters: Reporters::new(move |_, _| reporter),
                said: Blacklistings::default(),
                reports: Reports::default(),
            };
            let lists = [(Kind::Ip, Some(&story.said)), (Kind::Domain, None)];
            let then = Now {
                at: running,
                unix: NOW - 7200.0,
            };
            (story.rises).update(lists, &story.reports, &story.reporters, then);
            story
        }

        /// The list says `count` and `change` at `seconds`.
        fn list(&mut self, seconds: u64, count: f64, change: f64) -> &mut Self {
            let said = Blacklisting {
                count: Some(count),
                change: Some(change),
            };
            self.said = Blacklistings::default();
            self.said.note(ASSET, said);
            self.update(seconds)
        }

        /// A report that agrees with the list arrives at `seconds`, naming `listings`.
        fn report(&mut self, seconds: u64, listings: Vec<Listing>) -> &mut Self {
            let mut report = report(listings);
            report.blacklisting = self.said.of(ASSET);
            self.reports.set(Kind::Ip, ASSET.into(), report, self.start);
            self.update(seconds)
        }

        fn update(&mut self, seconds: u64) -> &mut Self {
            let lists = [(Kind::Ip, Some(&self.said)), (Kind::Domain, None)];
            let now = after(self.start, seconds);
            self.rises
                .update(lists, &self.reports, &self.reporters, now);
            self
        }

        /// What a scrape at `seconds` writes.
        fn scrape(&self, seconds: u64) -> Vec<String> {
            let lists = [(Kind::Ip, Some(&self.said)), (Kind::Domain, None)];
            let now = after(self.start, seconds);
            let memory = Memory {
                rises: self.rises.clone(),
                ..Memory::default()
            };
            let events = Events::gather(&self.reports, &memory, lists, now.unix, 1);
            samples(&events, now)
        }
    }

    fn unnamed(seen: f64) -> String {
        format!("{UNNAMED_EVENT}{{kind=\"ip\",asset=\"{ASSET}\"}} {seen}")
    }

    fn named(blacklist: &str, check: f64) -> String {
        let label = check_label(check);
        format!(
            "{LISTING_EVENT}{{kind=\"ip\",asset=\"{ASSET}\",blacklist=\"{blacklist}\",\
             check=\"{label}\"}} {check}"
        )
    }

    #[test]
    fn a_rise_its_report_names_within_the_wait_pages_by_name_only() {
        let mut story = Story::new(Reporter::ThisReplica);
        story.list(0, 1.0, 1.0);
        assert_eq!(
            story.scrape(60),
            Vec::<String>::new(),
            "waiting for the report"
        );
        // The listing began at the check a minute before the list showed it; the report names
        // it 7 minutes after that, within a poll and 3 minutes.
        let began = NOW - 60.0;
        story.report(360, vec![listing("SpamCop", true, Some(began))]);
        assert_eq!(story.scrape(360), vec![named("SpamCop", began)]);
        assert_eq!(
            story.scrape(900),
            vec![named("SpamCop", began)],
            "no unnamed event after the wait"
        );
    }

    #[test]
    fn a_rise_named_late_stays_one_event_until_its_listing_ends_and_a_later_listing_pages_by_name()
    {
        let mut story = Story::new(Reporter::ThisReplica);
        story.list(0, 1.0, 1.0);
        assert_eq!(story.scrape(479), Vec::<String>::new());
        assert_eq!(story.scrape(480), vec![unnamed(NOW)]);
        // The report comes 10 minutes after the check: its listing is the unnamed event's.
        let began = NOW - 60.0;
        story.report(540, vec![listing("SpamCop", true, Some(began))]);
        assert_eq!(story.scrape(540), vec![unnamed(NOW)]);
        // The next check shows no rise; the listing stands, and so does its event.
        story
            .list(3600, 1.0, 0.0)
            .report(3610, vec![listing("SpamCop", true, Some(began))]);
        assert_eq!(story.scrape(3700), vec![unnamed(NOW)]);
        // A listing begun after the rise was seen is news of its own, by name.
        let later = NOW + 7000.0;
        let both = vec![
            listing("SpamCop", true, Some(began)),
            listing("BARRACUDA", true, Some(later)),
        ];
        story.list(7300, 2.0, 1.0).report(7310, both);
        assert_eq!(
            story.scrape(7400),
            vec![named("BARRACUDA", later), unnamed(NOW)]
        );
        // SpamCop's listing ends: so does the unnamed event; BARRACUDA's stands.
        let ended = vec![
            listing("SpamCop", false, None),
            listing("BARRACUDA", true, Some(later)),
        ];
        story.list(10_900, 1.0, -1.0).report(10_910, ended.clone());
        story.list(11_200, 1.0, 0.0).report(11_210, ended);
        assert_eq!(story.scrape(11_300), vec![named("BARRACUDA", later)]);
    }

    #[test]
    fn rises_at_consecutive_checks_no_report_names_are_one_event_until_a_check_without_one() {
        let mut story = Story::new(Reporter::Nobody);
        story.list(0, 1.0, 1.0);
        story.list(3600, 2.0, 1.0);
        assert_eq!(story.scrape(3700), vec![unnamed(NOW)]);
        // One list without a rise (an answer that flips) ends nothing; a poll of them does.
        story.list(7200, 2.0, 0.0);
        assert_eq!(story.scrape(7300), vec![unnamed(NOW)]);
        story.list(7500, 2.0, 0.0);
        assert_eq!(story.scrape(7510), Vec::<String>::new());
        // The list counting none ends one at once.
        story.list(7600, 3.0, 1.0);
        assert_eq!(
            story.scrape(7900),
            Vec::<String>::new(),
            "waiting for the report"
        );
        assert_eq!(story.scrape(8080), vec![unnamed(NOW + 7600.0)]);
        story.list(8200, 0.0, -3.0);
        assert_eq!(story.scrape(8300), Vec::<String>::new());
    }

    #[test]
    fn a_rise_of_an_asset_another_replica_reports_on_is_that_replicas_to_tell() {
        let mut theirs = Story::new(Reporter::AnotherReplica);
        theirs.list(0, 1.0, 1.0);
        assert_eq!(theirs.scrape(600), Vec::<String>::new());
        let mut nobodys = Story::new(Reporter::Nobody);
        nobodys.list(0, 1.0, 1.0);
        assert_eq!(nobodys.scrape(600), vec![unnamed(NOW)]);
    }

    #[test]
    fn an_unnamed_event_is_news_for_twelve_hours() {
        let mut story = Story::new(Reporter::Nobody);
        story.list(0, 1.0, 1.0);
        let twelve_hours = UNNAMED_LIFETIME.as_secs();
        assert_eq!(story.scrape(twelve_hours - 1), vec![unnamed(NOW)]);
        assert_eq!(story.scrape(twelve_hours), Vec::<String>::new());
        // An API that checks the asset seldom still shows the rise: remembered, not news again.
        story.update(twelve_hours + 600);
        assert_eq!(story.scrape(twelve_hours + 600), Vec::<String>::new());
        assert_eq!(story.rises.iter().count(), 1);
        story.list(twelve_hours + 3600, 1.0, 0.0);
        story.list(twelve_hours + 3900, 1.0, 0.0);
        assert_eq!(
            story.rises.iter().count(),
            0,
            "forgotten at the check without a rise"
        );
    }

    #[test]
    fn two_lists_at_one_check_with_the_report_late_are_one_event_whichever_it_names_first() {
        let mut story = Story::new(Reporter::ThisReplica);
        story.list(0, 2.0, 2.0);
        assert_eq!(story.scrape(300), Vec::<String>::new());
        // The late report names one list, then both: both are the rise's, from the first.
        let began = NOW - 900.0;
        story.report(420, vec![listing("SpamCop", true, Some(began))]);
        assert_eq!(story.scrape(430), vec![unnamed(NOW)]);
        let both = vec![
            listing("SpamCop", true, Some(began)),
            listing("BARRACUDA", true, Some(began)),
        ];
        story.report(800, both);
        assert_eq!(story.scrape(810), vec![unnamed(NOW)]);
        // One ends: the event stands for the other.
        let one_left = vec![
            listing("SpamCop", false, None),
            listing("BARRACUDA", true, Some(began)),
        ];
        story.list(3700, 1.0, -1.0).report(3710, one_left);
        assert_eq!(story.scrape(3800), vec![unnamed(NOW)]);
    }

    #[test]
    fn a_listing_begun_before_the_replica_started_is_named_by_a_report_in_time_after_its_start() {
        let mut story = Story {
            start: Instant::now(),
            rises: Rises::default(),
            reporters: Reporters::new(|_, _| Reporter::ThisReplica),
            said: Blacklistings::default(),
            reports: Reports::default(),
        };
        // The replica's first list shows a rise whose listing began 20 minutes before.
        story.list(0, 1.0, 1.0);
        let began = NOW - 1200.0;
        story.report(5, vec![listing("SpamCop", true, Some(began))]);
        assert_eq!(story.scrape(600), vec![named("SpamCop", began)]);
    }
}
