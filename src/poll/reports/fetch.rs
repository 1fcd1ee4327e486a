//! Fetching reports: at most `asset_reports.concurrency` in flight, a 429 pausing them all,
//! each published as it arrives in batches a second or more apart.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::{FutureExt, StreamExt as _};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::ReportPoller;
use crate::model::Report;
use crate::vocabulary::{Failure, Kind};

/// Reports that arrived are published at least this often during a round...
const PUBLISH_AT_LEAST_EVERY: Duration = Duration::from_secs(10);

/// ...and at most this often, or three times as long as the last publication took, so that
/// rebuilding the snapshot never takes more than a quarter of a blocking thread.
const PUBLISH_AT_MOST_EVERY: Duration = Duration::from_secs(1);

/// What a batch of report requests gave.
#[derive(Debug, Default)]
pub(super) struct Tally {
    pub(super) fetched: usize,
    pub(super) gone: usize,
    pub(super) failures: BTreeMap<Failure, usize>,
}

impl Tally {
    pub(super) fn failed(&self) -> usize {
        self.failures.values().sum()
    }
}

/// What one report request gave.
pub(super) enum Outcome {
    Report(Report),
    /// 404: the API no longer knows the asset; its report series go.
    Gone,
    /// Failed after retries, with the kind of failure.
    Failed(Failure),
}

impl ReportPoller {
    /// Fetches the reports of `targets`, the i-th not before `started + spacing * i`, at most
    /// `concurrency` in flight (with the other batches), retrying until `due`; publishes them
    /// as they arrive, and tells the follow-ups what each gave.
    pub(super) async fn fetch(&self, targets: Vec<(Kind, String, Instant)>, due: Instant) -> Tally {
        let mut results = futures_util::stream::iter(targets)
            .map(|(kind, name, not_before)| async move {
                tokio::time::sleep_until(not_before).await;
                let _permit = self.permits.acquire().await;
                self.pause.wait().await;
                let outcome = self.fetch_one(&name, due).await;
                (kind, name, outcome)
            })
            .buffer_unordered(self.concurrency);

        let mut batch = Vec::new();
        let mut tally = Tally::default();
        let mut last_publish = Instant::now();
        let mut publish_every = PUBLISH_AT_MOST_EVERY;
        // At most one rebuild at a time, and never waited for while requests can start.
        let mut publishing: Option<JoinHandle<Duration>> = None;
        while let Some((kind, name, outcome)) = results.next().await {
            let answered = match &outcome {
                Outcome::Report(report) => Some(Some(report.blacklisting)),
                Outcome::Gone => Some(None),
                Outcome::Failed(_) => None,
            };
            let asked_for = self
                .account
                .follow
                .as_ref()
                .and_then(|follow| follow.answered(kind, &name, answered));
            match outcome {
                Outcome::Report(mut dto) => {
                    dto.asked_for = asked_for;
                    tally.fetched += 1;
                    batch.push((kind, name, Some(dto)));
                }
                Outcome::Gone => {
                    tally.gone += 1;
                    batch.push((kind, name, None));
                }
                Outcome::Failed(failure) => *tally.failures.entry(failure).or_default() += 1,
            }
            let idle = publishing.as_ref().is_none_or(JoinHandle::is_finished);
            if !batch.is_empty() && idle && last_publish.elapsed() >= publish_every {
                if let Some(Ok(took)) = publishing.take().and_then(FutureExt::now_or_never) {
                    publish_every = (took * 3).clamp(PUBLISH_AT_MOST_EVERY, PUBLISH_AT_LEAST_EVERY);
                }
                publishing = Some(self.publish(std::mem::take(&mut batch)));
                last_publish = Instant::now();
            }
        }
        if let Some(previous) = publishing {
            let _ = previous.await;
        }
        if !batch.is_empty() {
            let _ = self.publish(batch).await;
        }
        tally
    }

    /// Hands a batch of reports to the latest data, which rebuilds the snapshot on a blocking thread
    /// while the round goes on; the task ends with how long the rebuild took.
    fn publish(&self, batch: Vec<(Kind, String, Option<Report>)>) -> JoinHandle<Duration> {
        let latest = self.account.latest.clone();
        let fetched = Instant::now();
        exporter_web::task::spawn_blocking(move || {
            let rebuilding = std::time::Instant::now();
            latest.apply_reports(batch, fetched);
            rebuilding.elapsed()
        })
    }

    async fn fetch_one(&self, name: &str, due: Instant) -> Outcome {
        let result = self
            .account
            .client
            .report(name, due, |error, delay| {
                if error.is_rate_limit() {
                    self.pause.until(Instant::now() + delay);
                }
            })
            .await;
        match &result {
            Ok(_) => self.account.health.report_answered(true),
            Err(e) => match e.failure() {
                // No request was made: the API's health is not in question.
                Failure::NotRequestable => {}
                _ => self.account.health.report_answered(e.is_not_found()),
            },
        }
        match result {
            Ok(dto) => {
                let mut unrecognized = Vec::new();
                let report =
                    Report::from_dto(dto, name, &self.zone, self.max_labels, &mut unrecognized);
                for value in self.account.telemetry.unrecognized(unrecognized) {
                    warn!(
                        asset = name,
                        field = value.field.label(),
                        value = %value.value,
                        "a date in an asset report cannot be read; counted and skipped"
                    );
                }
                Outcome::Report(report)
            }
            Err(error) if error.is_not_found() => {
                debug!(
                    asset = name,
                    "the API does not know this asset (404); its report series go"
                );
                Outcome::Gone
            }
            Err(error) => {
                if error.failure() == Failure::NotRequestable {
                    warn!(
                        asset = name,
                        "an asset with this name cannot be requested; skipped"
                    );
                } else {
                    debug!(asset = name, error = %error, "asset report failed");
                }
                Outcome::Failed(error.failure())
            }
        }
    }
}

/// The reports' "not before": after a 429, no new report request starts until the wait the
/// API asked for (or the backoff chose) is over. A std mutex, never held across an `.await`.
#[derive(Debug, Default)]
pub(super) struct Pause(std::sync::Mutex<Option<Instant>>);

impl Pause {
    /// No new request before `until`.
    pub(super) fn until(&self, until: Instant) {
        let mut pause = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *pause = Some(pause.map_or(until, |p| p.max(until)));
    }

    /// Waits out the pause, if there is one (it may grow while waiting).
    pub(super) async fn wait(&self) {
        loop {
            let until = *self.0.lock().unwrap_or_else(|e| e.into_inner());
            match until {
                Some(until) if until > Instant::now() => tokio::time::sleep_until(until).await,
                _ => return,
            }
        }
    }
}
