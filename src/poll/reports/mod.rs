//! Asset reports: which blacklist lists an asset, its tags, when its score last changed.
//!
//! One request per asset is the only upstream cost that grows with the fleet, so this loop is
//! off by default, runs on its own `asset_reports.interval`, keeps at most
//! `asset_reports.concurrency` in flight, and fetches only the assets that `include`, `exclude`
//! and `replica` select. The first round after a start (or after the account is added by a
//! reload) runs at full concurrency, so the report series exist within minutes; later rounds
//! spread their requests evenly over the interval. Between rounds, reports follow the list
//! ([`follow`](super::follow)): an asset whose list values differ from its report's is fetched
//! at once, within the same concurrency bound. A 429 pauses every request for as long as the
//! API asked (or the backoff chose) before any new one starts. Reports reach the served
//! snapshot as they arrive, in batches a second or more apart, so a round of 100,000 reports
//! does not re-render the bodies 100,000 times.

mod fetch;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use jiff::tz::TimeZone;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use fetch::{Pause, Tally};

use super::Polled;
use super::selection::Selection;
use crate::health::tally;
use crate::model::Reports;
use crate::snapshot::Snapshot;
use crate::vocabulary::Kind;

/// Which assets' reports the exporter fetches (`backfill` fetches them whatever this says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// None (`asset_reports.listed = false`, `enabled = false`).
    Off,
    /// Those of the assets the lists show listed, or the reports name as listed, each round,
    /// and those a list's change makes behind (the default).
    Listed,
    /// Every selected asset's, each round (`asset_reports.enabled`: the whole-fleet round).
    All,
}

impl Scope {
    /// Whether any report is fetched.
    pub fn enabled(self) -> bool {
        self != Scope::Off
    }
}

/// How the asset reports are fetched (`[asset_reports]`).
#[derive(Debug, Clone)]
pub struct ReportSchedule {
    /// Whose reports the exporter fetches.
    pub scope: Scope,
    /// Each selected asset is fetched once per interval, spread over it.
    pub interval: Duration,
    /// Most requests in flight at once.
    pub concurrency: usize,
    /// The assets this replica fetches.
    pub selection: Selection,
    /// Zone of the API's history dates.
    pub timezone: TimeZone,
}

impl ReportSchedule {
    /// The `[asset_reports]` keys in which `new`, a schedule that is on or off as this one is,
    /// differs from it; none while reports are off (their settings change nothing that runs).
    /// Every field is named: a new one does not compile until it is compared.
    pub fn changed_keys(&self, new: &ReportSchedule) -> Vec<&'static str> {
        let ReportSchedule {
            scope,
            interval,
            concurrency,
            selection,
            timezone,
        } = self;
        let changes = [
            (*interval != new.interval, "asset_reports.interval"),
            (*concurrency != new.concurrency, "asset_reports.concurrency"),
            (
                *selection != new.selection,
                "asset_reports.include/exclude/replica",
            ),
            (*timezone != new.timezone, "asset_reports.timezone"),
        ];
        changes
            .into_iter()
            .filter(|(changed, _)| scope.enabled() && *changed)
            .map(|(_, key)| key)
            .collect()
    }
}

/// Two schedules run the same when both are off, or both on with the same settings: the
/// settings of a schedule that is off change nothing that runs, so a reload keeps its account.
impl PartialEq for ReportSchedule {
    fn eq(&self, other: &Self) -> bool {
        self.scope == other.scope && self.changed_keys(other).is_empty()
    }
}

/// Fetches the reports of the selected assets, round after round.
#[derive(Debug, Clone)]
pub struct ReportPoller {
    account: Polled,
    scope: Scope,
    interval: Duration,
    concurrency: usize,
    selection: Selection,
    zone: TimeZone,
    max_labels: usize,
    /// How the first round goes.
    first: First,
    /// Requests in flight, of rounds and follow-ups together: at most `concurrency`.
    permits: Arc<Semaphore>,
    /// After a 429, no new request of either kind before the wait is over.
    pause: Arc<Pause>,
}

/// How a report poller's first round goes.
#[derive(Debug, Clone, Copy)]
enum First {
    /// Once the first list poll has served, every report at full concurrency (a cold start).
    Burst,
    /// Spread, from this instant ([`ReportPoller::first_at`]: a reload).
    At(Instant),
    /// Each report when it is due by the state store's fetch times, the missing ones at once
    /// ([`ReportPoller::resume`]: a warm start).
    Resume,
}

impl ReportPoller {
    /// A poller on this schedule.
    pub fn new(account: Polled, schedule: ReportSchedule, max_labels: usize) -> Self {
        ReportPoller {
            account,
            scope: schedule.scope,
            interval: schedule.interval,
            concurrency: schedule.concurrency,
            selection: schedule.selection,
            zone: schedule.timezone,
            max_labels,
            first: First::Burst,
            permits: Arc::new(Semaphore::new(schedule.concurrency.max(1))),
            pause: Arc::new(Pause::default()),
        }
    }

    /// The same poller, its first round at `at` and spread (a reload that changed only shared
    /// settings: the reports are there, and a burst would cost the API a round for nothing).
    pub fn first_at(mut self, at: Instant) -> Self {
        self.first = First::At(at);
        self
    }

    /// The same poller after a warm start: the reports the state store kept are in the store
    /// with their fetch times, so the first round fetches each when it is due (a round after
    /// its fetch) and the missing ones at once; lists that disagree with a report are followed
    /// from the first poll.
    pub fn resume(mut self) -> Self {
        self.first = First::Resume;
        self
    }

    /// Runs rounds forever, and fetches the reports the list polls find behind as they do.
    pub async fn run(self) {
        tokio::join!(self.rounds(), self.follow_ups());
    }

    /// Rounds forever, the first once a poll of both lists has ended with at least one list
    /// served, ever (a list arriving before the other must not leave the other's assets out of
    /// the first round, which would delay their reports by a whole interval; after a cold start
    /// in an API outage, that is the first poll the API answers, not the first poll).
    async fn rounds(&self) {
        // The first round at full concurrency: its series matter most right after a start.
        let mut spread = false;
        match self.first {
            First::At(first) => {
                // The reports are there: follow the lists at once, and go on with spread
                // rounds on the previous schedule.
                self.arm_follow_ups();
                tokio::time::sleep_until(first).await;
                spread = true;
            }
            First::Resume => {
                // From the stored fetch times on: every report one round after its last fetch.
                self.arm_follow_ups();
                let mut floor = Instant::now();
                loop {
                    let started = Instant::now();
                    self.due_round(floor).await;
                    // What failed, or is new, waits a round from this one's start.
                    floor = started + self.interval;
                }
            }
            First::Burst => self.account.latest.served_cycle().await,
        }
        loop {
            let started = Instant::now();
            let due = started + self.interval;
            self.account.health.set_next_round(due);
            self.round(started, due, spread).await;
            // Every selected asset has had its report asked for: from now on, lists that
            // disagree with them are followed.
            self.arm_follow_ups();
            spread = true;
            tokio::time::sleep_until(due).await;
        }
    }

    fn arm_follow_ups(&self) {
        if let Some(follow) = &self.account.follow {
            follow.arm();
        }
    }

    /// Fetches, at once, the reports the list polls find behind their lists.
    async fn follow_ups(&self) {
        let Some(follow) = self.account.follow.clone() else {
            return;
        };
        loop {
            let targets = follow.next().await;
            let started = Instant::now();
            let assets = targets.len();
            let targets = targets
                .into_iter()
                .map(|(kind, name)| (kind, name, started))
                .collect();
            let tally = self.fetch(targets, started + self.interval).await;
            debug!(
                assets,
                fetched = tally.fetched,
                not_found = tally.gone,
                failed = tally.failed(),
                took = %format_args!("{:.1}s", started.elapsed().as_secs_f64()),
                "fetched the reports the lists found behind"
            );
        }
    }

    /// A round after a warm start: every selected asset when its report is due (a round after
    /// it was fetched, as the state store kept it and as this process fetched it since), not
    /// before `floor`; so that a restart costs the API what was due anyway.
    async fn due_round(&self, floor: Instant) {
        let snapshot = self.account.latest.current();
        let reports = self.account.latest.reports();
        let fetched: std::collections::HashMap<(Kind, &str), Instant> = reports
            .fetched()
            .map(|(kind, name, at)| ((kind, name), at))
            .collect();
        let mut targets: Vec<(Kind, String, Instant)> = self
            .candidates(&snapshot, &reports)
            .into_iter()
            .map(|(kind, name)| {
                let due = fetched
                    .get(&(kind, name.as_str()))
                    .map_or(floor, |at| (*at + self.interval).max(floor));
                (kind, name, due)
            })
            .collect();
        drop(fetched);
        let listed = snapshot.ready;
        drop(snapshot);
        if listed {
            // What the state store kept of assets no longer selected (another shard, include or
            // exclude since) is not served: the round will never refresh it.
            let selected: HashSet<(Kind, String)> = targets
                .iter()
                .map(|(kind, name, _)| (*kind, name.clone()))
                .collect();
            let latest = self.account.latest.clone();
            let _ = exporter_web::task::spawn_blocking(move || {
                latest.retain_reports(|kind, name| selected.contains(&(kind, name.to_owned())));
            })
            .await;
        }
        let Some(last) = targets.iter().map(|(.., due)| *due).max() else {
            // Nothing to fetch: look again a round later.
            self.account.health.set_next_round(floor + self.interval);
            tokio::time::sleep_until(floor + self.interval).await;
            return;
        };
        targets.sort_by_key(|(.., due)| *due);
        let now = Instant::now();
        debug!(
            assets = targets.len(),
            due_now = targets.iter().filter(|(.., due)| *due <= now).count(),
            "asset report round started, each report when it is due"
        );
        self.account.health.set_next_round(last);
        let tally = self.fetch(targets, last + self.interval).await;
        debug!(
            fetched = tally.fetched,
            not_found = tally.gone,
            failed = tally.failed(),
            "asset report round ended"
        );
    }

    /// The assets a round fetches, of those `snapshot` serves and this replica selects: every
    /// one, or with [`Scope::Listed`] those the lists show listed and those whose report (of
    /// `reports`) names a listing (so that a report gone stale is refreshed, not kept).
    fn candidates(&self, snapshot: &Snapshot, reports: &Reports) -> Vec<(Kind, String)> {
        let selected = |(kind, name): (Kind, &str)| {
            self.selection
                .selects(name)
                .then(|| (kind, name.to_owned()))
        };
        match self.scope {
            Scope::All => snapshot.names().filter_map(selected).collect(),
            Scope::Off => Vec::new(),
            Scope::Listed => {
                let served: HashSet<(Kind, &str)> = snapshot.names().collect();
                let named = reports
                    .iter()
                    .filter(|(.., report)| report.named > 0)
                    .map(|(kind, name, _)| (kind, name))
                    .filter(|asset| served.contains(asset));
                let mut assets: Vec<(Kind, String)> = snapshot
                    .listed()
                    .chain(named)
                    .filter_map(selected)
                    .collect();
                assets.sort_unstable();
                assets.dedup();
                assets
            }
        }
    }

    /// One round at once, without spreading (for `--once`); true when no report failed.
    pub async fn poll_once(&self) -> bool {
        let started = Instant::now();
        self.round(started, started + self.interval, false).await
    }

    /// One round: every selected asset once, spread evenly from `started` to `due` when
    /// `spread`; true when no report failed (a 404 is no failure).
    async fn round(&self, started: Instant, due: Instant, spread: bool) -> bool {
        let snapshot = self.account.latest.current();
        let targets = self.candidates(&snapshot, &self.account.latest.reports());
        drop(snapshot);
        let selected: HashSet<(Kind, String)> = targets.iter().cloned().collect();
        // Rebuilding the snapshot walks every asset: off the async workers.
        let latest = self.account.latest.clone();
        let _ = exporter_web::task::spawn_blocking(move || {
            latest.retain_reports(|kind, name| selected.contains(&(kind, name.to_owned())));
        })
        .await;
        let assets = targets.len();
        if spread {
            debug!(assets, spread_over = ?self.interval, "asset report round started");
        } else {
            debug!(assets, "asset report round started");
        }

        let spacing = if spread {
            self.interval / u32::try_from(targets.len().max(1)).unwrap_or(u32::MAX)
        } else {
            Duration::ZERO
        };
        let targets = targets
            .into_iter()
            .enumerate()
            .map(|(i, (kind, name))| (kind, name, started + spacing * i as u32))
            .collect();
        let Tally {
            fetched,
            gone,
            failures,
        } = self.fetch(targets, due).await;
        let failed: usize = failures.values().sum();
        let took = format!("{:.1}s", started.elapsed().as_secs_f64());
        let why = tally(&failures);
        if failed == 0 {
            info!(
                assets,
                fetched,
                not_found = gone,
                failed,
                took,
                "asset report round ended"
            );
        } else {
            warn!(
                assets,
                fetched,
                not_found = gone,
                failed,
                failures = %why,
                took,
                "asset report round ended; the reports that failed keep their last good values \
                 until metrics.max_age"
            );
        }
        self.account
            .health
            .round_ended(assets, fetched + gone, failures);
        failed == 0
    }
}
