//! How an account starts: cold, warm from its state store, or taking over from the account a
//! reload replaces; decided once, in [`Start::decide`].

use std::path::Path;
use std::sync::Arc;

use tracing::info;

use super::{Account, AccountError};
use crate::config::{AccountConfig, Source};
use crate::disk::{self, Disk, warm};
use crate::health::Health;
use crate::latest::Latest;
use crate::telemetry::Telemetry;
use reputation_simulate::SimulatedApi;

/// How an account starts, decided once when it is built.
pub(super) enum Start<'a> {
    /// From nothing: the lists at once, every selected report in a first round at full
    /// concurrency; what comes is kept in the store when there is one.
    Cold(Option<Arc<Disk>>),
    /// From what its store kept, served at once: each report is fetched when it is due, and the
    /// lists are checked against the reports from the first poll.
    Warm(Arc<Disk>),
    /// Taking over from the running account a reload replaces (its shared settings changed):
    /// its data, health, metrics, upstream, store and schedule.
    TakeOver(&'a Account),
}

/// What an account is made of beside its pollers: new, or taken over.
pub(super) struct Parts {
    pub(super) health: Arc<Health>,
    pub(super) telemetry: Arc<Telemetry>,
    pub(super) latest: Arc<Latest>,
    pub(super) base_url: reqwest::Url,
    pub(super) simulated: Option<SimulatedApi>,
}

impl Start<'_> {
    /// The account's parts and how it starts: taken over from `previous` when there is one;
    /// otherwise new, warm from its store under `state` when that kept anything usable.
    pub(super) async fn decide<'a>(
        config: &AccountConfig,
        previous: Option<&'a Account>,
        state: Option<&Path>,
    ) -> Result<(Parts, Start<'a>), AccountError> {
        if let Some(before) = previous {
            let parts = Parts {
                health: before.health.clone(),
                telemetry: before.telemetry.clone(),
                latest: before.latest.clone(),
                base_url: before.base_url.clone(),
                simulated: before.simulated.clone(),
            };
            return Ok((parts, Start::TakeOver(before)));
        }
        let health = Arc::new(Health::new(&config.endpoints()));
        let telemetry = Arc::new(Telemetry::new(health.clone()));
        let latest = Latest::new(config.max_age, config.report_max_age(), config.shards);
        let (base_url, simulated) = upstream(config).await?;
        let start = match (state, &config.source) {
            (
                Some(root),
                Source::Remote {
                    base_url, token, ..
                },
            ) => warm(config, root, base_url, token, &latest, &health).await,
            _ => Start::Cold(None),
        };
        let parts = Parts {
            health,
            telemetry,
            latest,
            base_url,
            simulated,
        };
        Ok((parts, start))
    }

    /// The store what the account fetches is kept in.
    pub(super) fn disk(&self) -> Option<Arc<Disk>> {
        match self {
            Start::Cold(disk) => disk.clone(),
            Start::Warm(disk) => Some(disk.clone()),
            Start::TakeOver(before) => before.disk.clone(),
        }
    }
}

/// Opens the account's store under `root` (its own directory: `api` for the account of
/// `[api]`, else its name) and serves what it kept, each list and report with its real age:
/// warm when it kept reports, cold (keeping from now on) when it kept none, cold without a
/// store when none can be used.
async fn warm(
    config: &AccountConfig,
    root: &Path,
    base_url: &reqwest::Url,
    token: &crate::vocabulary::Secret,
    latest: &Arc<Latest>,
    health: &Health,
) -> Start<'static> {
    let started = std::time::Instant::now();
    let dir = root.join(config.name.as_deref().unwrap_or("api"));
    let timezone = config.reports.timezone.iana_name().unwrap_or("UTC");
    let identity = disk::Identity::new(base_url, token, timezone, config.max_labels);
    let limits = warm::Limits {
        max_age: config.max_age,
        report_max_age: config.report_max_age(),
        max_labels: config.max_labels,
        shards: config.shards,
    };
    let Some(kept) = warm::read_back(dir, identity, limits, health).await else {
        return Start::Cold(None);
    };
    let warm::Kept {
        disk,
        lists,
        memories,
        reports,
        events,
        read,
    } = kept;
    let (list_count, report_count) = (lists.len(), reports.len());
    let (serving, persisted) = (latest.clone(), disk.clone());
    let _ = exporter_web::task::spawn_blocking(move || {
        // Remembered first: the snapshot the restore publishes reads what the lists said, and
        // what the replica remembered to tell events.
        for (kind, memory) in memories {
            serving.remember(kind, memory, None);
        }
        if let Some(events) = events {
            serving.restore_events(&events);
        }
        serving.restore(lists, reports);
        serving.persist_to(persisted);
    })
    .await;
    info!(
        lists = list_count,
        reports = report_count,
        read = ?read,
        took = ?started.elapsed(),
        "serving what the state store kept until the API answers"
    );
    if report_count == 0 {
        Start::Cold(Some(disk))
    } else {
        Start::Warm(disk)
    }
}

/// Where an account's API is: the configured address; with `--demo`, the simulated API, started
/// on loopback and served as long as it is held.
pub(super) async fn upstream(
    config: &AccountConfig,
) -> Result<(reqwest::Url, Option<SimulatedApi>), AccountError> {
    match &config.source {
        Source::Remote { base_url, .. } => Ok((base_url.clone(), None)),
        Source::Demo => {
            let simulated = SimulatedApi::demo();
            let url = simulated.spawn().await.map_err(AccountError::Demo)?;
            info!(url = %url, "demo mode: polling the built-in simulated API");
            let base_url = url
                .parse()
                .map_err(|e| AccountError::Demo(std::io::Error::other(format!("{url}: {e}"))))?;
            Ok((base_url, Some(simulated)))
        }
    }
}
