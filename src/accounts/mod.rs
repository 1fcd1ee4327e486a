//! The accounts the exporter polls, one model for all of them: each [`Account`] is built from
//! its configuration (its own client, pollers, store and API metrics, so that nothing one
//! account's API does delays or hides another's), runs until it is dropped, and is found by
//! [`Accounts::resolve`] for `--once --target`, `/probe?target=` and `backfill --target` alike.
//! A reload builds a new [`Accounts`] that keeps every account whose configuration did not
//! change, running, with its data and its report rounds.

mod readiness;
mod start;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;
use tracing::Instrument as _;

use crate::blacklists::Blacklists;
use crate::config::{self, AccountConfig, Config};
use crate::disk::Disk;
use crate::health::Health;
use crate::latest::Latest;
use crate::poll::follow::FollowUps;
use crate::poll::reports::ReportPoller;
use crate::poll::{Polled, Poller};
use crate::snapshot::{Served, Snapshot};
use crate::telemetry::Telemetry;
use crate::upstream::{Client, ClientError, InProcess};
use crate::vocabulary::Endpoint;
pub use readiness::Readiness;
use reputation_simulate::SimulatedApi;
use start::{Parts, Start, upstream};

/// Why an account cannot be set up, or found.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// `--demo` could not start its simulated API.
    #[error("cannot start the simulated API on 127.0.0.1: {0}")]
    Demo(std::io::Error),
    /// The API client cannot be built.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// A target that names no account, or none where one is needed.
    #[error(transparent)]
    Target(#[from] config::TargetError),
}

/// Upstreams served inside this process instead of over the network, by base address: the
/// simulated API, for tests that run on Tokio's paused clock. Without the `in-process` feature
/// (which only the tests turn on) there are none.
#[derive(Debug, Clone, Default)]
pub struct Upstreams(Vec<(reqwest::Url, InProcess)>);

impl Upstreams {
    /// Serves requests to `base_url` with `service`.
    #[cfg(feature = "in-process")]
    pub fn with(mut self, base_url: reqwest::Url, service: InProcess) -> Self {
        self.0.push((base_url, service));
        self
    }

    fn get(&self, base_url: &reqwest::Url) -> Option<InProcess> {
        self.0
            .iter()
            .find(|(url, _)| url == base_url)
            .map(|(_, service)| service.clone())
    }
}

/// One account: its pollers, the latest data they publish to, and its API metrics.
#[derive(Debug)]
pub struct Account {
    /// `accounts.NAME`, or `None` for the one account of `[api]` or `--demo`.
    pub name: Option<String>,
    /// The snapshots its pollers publish.
    pub latest: Arc<Latest>,
    /// Its API metrics.
    pub telemetry: Arc<Telemetry>,
    /// What its pollers know of its API: what the landing page, `--once` and the health
    /// metrics read.
    pub health: Arc<Health>,
    /// Its API client.
    pub client: Client,
    poller: Poller,
    reports: Option<ReportPoller>,
    /// What it was built from: a reload that leaves this unchanged keeps it running.
    config: AccountConfig,
    /// Its poll loops once started, aborted when the account is dropped (the set is): they hold
    /// nothing that must be finished, so stopping at any await is stopping cleanly. A std
    /// mutex, never held across an `.await`.
    tasks: Mutex<JoinSet<()>>,
    /// Where its API is: the configured address, or where `--demo` started the simulated API.
    base_url: reqwest::Url,
    /// With `--demo`, the simulated API it polls, served as long as the account (or the one
    /// that takes over from it) lives.
    simulated: Option<SimulatedApi>,
    /// Where what it knows is kept across restarts, when it is.
    disk: Option<Arc<Disk>>,
}

impl Account {
    /// What is known of the blacklists (the built-in table with `[[blacklists]]`).
    pub fn blacklists(&self) -> &Blacklists {
        &self.config.blacklists
    }

    /// What a scrape of its `snapshot` (`shard`, or every shard) serves beside the body.
    pub fn served<'a>(&'a self, snapshot: &'a Snapshot, shard: Option<usize>) -> Served<'a> {
        Served {
            telemetry: &self.telemetry,
            snapshot,
            shard,
            blacklists: self.blacklists(),
        }
    }

    /// Builds the account `config` describes; with `--demo`, starts the simulated API. With
    /// `previous` (the same account, whose shared settings changed), takes over its data,
    /// health, metrics, upstream and schedule: the lists are polled when they were due, and
    /// report rounds go on spread, when they were due, instead of starting with a burst.
    async fn build(
        config: AccountConfig,
        upstreams: &Upstreams,
        previous: Option<&Account>,
        state: Option<&Path>,
    ) -> Result<Account, AccountError> {
        let (parts, start) = Start::decide(&config, previous, state).await?;
        let Parts {
            health,
            telemetry,
            latest,
            base_url,
            simulated,
        } = parts;
        let disk = start.disk();
        let in_process = upstreams.get(&base_url);
        let client = config.client(
            base_url.clone(),
            in_process,
            telemetry.clone(),
            health.clone(),
        )?;
        let reporting = config.reports.scope.enabled();
        latest.report_by(
            config.reports.selection.reporters(reporting),
            config.poll_interval,
        );
        let follow = reporting.then(|| Arc::new(FollowUps::new(config.reports.selection.clone())));
        if let Some(follow) = &follow {
            follow.remember(&latest.reports());
        }
        let polled = Polled {
            client: client.clone(),
            telemetry: telemetry.clone(),
            health: health.clone(),
            latest: latest.clone(),
            follow: follow.clone(),
            disk: disk.clone(),
        };
        let mut reports = reporting
            .then(|| ReportPoller::new(polled.clone(), config.reports.clone(), config.max_labels));
        let mut poller = Poller::new(polled, config.poll_interval, config.max_labels);
        match start {
            Start::Cold(_) => {}
            Start::Warm(_) => {
                reports = reports.map(ReportPoller::resume);
                if let Some(follow) = &follow {
                    follow.arm();
                }
            }
            Start::TakeOver(_) => {
                // Due as before, or sooner when the new interval is shorter.
                let now = Instant::now();
                if let Some(due) = health.next_poll() {
                    poller = poller.first_at(due.min(now + config.poll_interval));
                }
                if let Some(due) = health.next_round() {
                    let interval = config.reports.interval;
                    reports = reports.map(|r| r.first_at(due.min(now + interval)));
                }
            }
        }
        Ok(Account {
            name: config.name.clone(),
            latest,
            telemetry,
            health,
            client,
            poller,
            reports,
            config,
            tasks: Mutex::default(),
            base_url,
            simulated,
            disk,
        })
    }

    /// The span its work logs in: `account=NAME` on every line, with several accounts.
    pub fn span(&self) -> tracing::Span {
        match &self.name {
            Some(name) => tracing::info_span!("account", account = %name),
            None => tracing::Span::none(),
        }
    }

    /// Starts its poll loops, unless they run already.
    fn start(&self) {
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        if !tasks.is_empty() {
            return;
        }
        // The ages of this configuration: latest data taken over by a reload had the previous ones,
        // and a refused reload must not have changed them.
        let config = &self.config;
        self.latest
            .set_max_ages(config.max_age, config.report_max_age());
        let span = self.span();
        let poller = self.poller.clone().run().instrument(span.clone());
        exporter_web::task::spawn_into(&mut tasks, poller);
        if let Some(reports) = &self.reports {
            exporter_web::task::spawn_into(&mut tasks, reports.clone().run().instrument(span));
        }
    }

    /// Polls every endpoint once (and every selected asset report, unspread); true when all
    /// answered.
    pub async fn poll_once(&self) -> bool {
        let polled = async {
            let mut ok = self.poller.poll_once().await;
            if let Some(reports) = &self.reports {
                ok &= reports.poll_once().await;
            }
            ok
        };
        polled.instrument(self.span()).await
    }

    /// How often its lists are polled (`poll.interval`).
    pub fn poll_interval(&self) -> Duration {
        self.config.poll_interval
    }

    /// Whether its first list poll has ended, whatever its outcome.
    pub fn polled(&self) -> bool {
        *self.latest.cycles().borrow() > 0
    }

    /// The endpoints whose last poll failed, each with the kind of failure
    /// (`ip-list: connection refused`).
    pub fn failures(&self) -> Vec<String> {
        self.failing()
            .into_iter()
            .map(|(endpoint, why)| format!("{}: {why}", endpoint.label()))
            .collect()
    }

    /// The endpoints whose last poll failed, each with the kind of failure (`HTTP 503`).
    pub fn failing(&self) -> Vec<(Endpoint, String)> {
        self.health.failing()
    }
}

/// Every account of one configuration.
#[derive(Debug, Default)]
pub struct Accounts(Vec<Arc<Account>>);

/// What a reload changed, for its log line and the landing page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Accounts new in this configuration.
    pub added: Vec<String>,
    /// Accounts whose configuration changed: rebuilt.
    pub changed: Vec<String>,
    /// Accounts of which only shared settings changed, each with the keys: they keep their
    /// data and schedule, with the new settings.
    pub reconfigured: Vec<(String, Vec<&'static str>)>,
    /// Accounts no longer configured: stopped.
    pub removed: Vec<String>,
    /// Accounts that keep running as they were.
    pub kept: Vec<String>,
    /// Settings that changed but take effect only at the next restart (`web.listen_address`).
    pub restart: Vec<&'static str>,
}

impl Changes {
    /// The reconfigured accounts with the keys that changed: `[api]: poll.interval, backoff`.
    pub fn reconfigured_keys(&self) -> String {
        let accounts: Vec<String> = self
            .reconfigured
            .iter()
            .map(|(name, keys)| format!("{name}: {}", keys.join(", ")))
            .collect();
        accounts.join("; ")
    }
}

/// A reload's changes in a line, for `/-/reload`; what needs a restart in a second.
impl std::fmt::Display for Changes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let changes = self;
        let list = |names: &[String]| {
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        };
        let reconfigured = match changes.reconfigured_keys() {
            none if none.is_empty() => "none".to_owned(),
            some => some,
        };
        let mut said = format!(
            "Reloaded. Accounts added: {}; changed: {}; with new shared settings (data and \
         schedule kept): {reconfigured}; removed: {}; kept: {}.",
            list(&changes.added),
            list(&changes.changed),
            list(&changes.removed),
            list(&changes.kept)
        );
        if !changes.restart.is_empty() {
            said.push_str(&format!(
                "\nNot applied until the next restart: {} changed.",
                changes.restart.join(", ")
            ));
        }
        f.write_str(&said)
    }
}

impl Accounts {
    /// The accounts of `config`, each built and started, except those of `previous` whose
    /// configuration is unchanged, which are kept as they run.
    pub async fn build(
        config: &Config,
        upstreams: &Upstreams,
        previous: Option<&Accounts>,
        state: Option<&Path>,
    ) -> Result<(Accounts, Changes), AccountError> {
        let mut accounts = Vec::with_capacity(config.accounts.len());
        let mut changes = Changes::default();
        for account in &config.accounts {
            let name = account.shown();
            let before = previous.and_then(|p| p.get(account.name.as_deref()));
            let shared = before.and_then(|b| b.config.shared_changes(account));
            let inherit = match (before, shared) {
                (Some(before), Some(keys)) if keys.is_empty() => {
                    changes.kept.push(name);
                    accounts.push(before.clone());
                    continue;
                }
                (Some(before), Some(keys)) => {
                    changes.reconfigured.push((name, keys));
                    Some(&**before)
                }
                (Some(_), None) => {
                    changes.changed.push(name);
                    None
                }
                (None, _) => {
                    if previous.is_some() {
                        changes.added.push(name);
                    }
                    None
                }
            };
            // A reload that rebuilds an account (another address or token) opens no store for
            // it: the running one holds it until it stops; it applies from the next start.
            let state = state.filter(|_| before.is_none() || inherit.is_some());
            let built = Account::build(account.clone(), upstreams, inherit, state).await?;
            accounts.push(Arc::new(built));
        }
        if let Some(previous) = previous {
            for before in &previous.0 {
                if !accounts.iter().any(|a| a.name == before.name) {
                    changes.removed.push(config::shown(before.name.as_deref()));
                }
            }
        }
        Ok((Accounts(accounts), changes))
    }

    /// Starts the poll loops of every account not running yet.
    pub fn start(&self) {
        for account in &self.0 {
            account.start();
        }
    }

    /// Every account, in configuration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Account>> {
        self.0.iter()
    }

    /// How many accounts there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is none (never, once built from a configuration).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The one account of a single-account exporter (`[api]` or `--demo`).
    pub fn single(&self) -> Option<&Arc<Account>> {
        match self.0.as_slice() {
            [one] if one.name.is_none() => Some(one),
            _ => None,
        }
    }

    fn get(&self, name: Option<&str>) -> Option<&Arc<Account>> {
        self.0.iter().find(|a| a.name.as_deref() == name)
    }

    /// The names of the accounts, for messages: `eu, us`.
    pub fn names(&self) -> String {
        let names: Vec<&str> = self.0.iter().filter_map(|a| a.name.as_deref()).collect();
        names.join(", ")
    }

    /// The account a target names (`--target`, `/probe?target=`); without a target, the one
    /// account of a single-account exporter.
    pub fn resolve(&self, target: Option<&str>) -> Result<&Arc<Account>, AccountError> {
        let names: Vec<Option<&str>> = self.0.iter().map(|a| a.name.as_deref()).collect();
        Ok(&self.0[config::resolve(&names, target)?])
    }

    /// Whether every account's first list poll has ended, whatever its outcome.
    pub fn polled(&self) -> bool {
        self.0.iter().all(|a| a.polled())
    }
}

/// The API client of one account, on its own (`backfill`); with `--demo`, the simulated API it
/// talks to, served as long as it is held.
pub async fn connect(
    config: &AccountConfig,
    telemetry: Arc<Telemetry>,
    health: Arc<Health>,
    upstreams: &Upstreams,
) -> Result<(Client, Option<SimulatedApi>), AccountError> {
    let (base_url, simulated) = upstream(config).await?;
    let in_process = upstreams.get(&base_url);
    let client = config.client(base_url, in_process, telemetry, health)?;
    Ok((client, simulated))
}
