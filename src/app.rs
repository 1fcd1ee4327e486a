//! The whole exporter, built once from a [`Config`] the same way for `main` and for every
//! black-box test: per account a client, pollers and a store; the HTTP state; then run on a
//! given listener until a given shutdown future completes.

use std::sync::Arc;

use tokio::net::TcpListener;
use tracing::{Instrument as _, info};

use crate::config::{ApiConfig, Config, Source};
use crate::demo::{self, SimulatedApi};
use crate::exposition::Format;
use crate::poll::Poller;
use crate::poll::reports::ReportPoller;
use crate::server::{self, AccountState, AppState};
use crate::store::Store;
use crate::telemetry::{ProcessMetrics, Telemetry};
use crate::upstream::{Client, ClientError, ClientOptions};
use crate::vocabulary::{Endpoint, Secret};

/// Why the exporter cannot start or serve.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// `--demo` could not start its simulated API.
    #[error("cannot start the simulated API on 127.0.0.1: {0}")]
    Demo(std::io::Error),
    /// The API client cannot be built.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// `--target` names no account.
    #[error("{0}")]
    Target(String),
    /// The HTTP server failed.
    #[error("the HTTP server failed: {0}")]
    Serve(std::io::Error),
}

/// One account's part of the exporter: its own client, pollers, store and API metrics, so
/// that nothing one account's API does delays or hides another's.
#[derive(Debug)]
struct Account {
    /// `accounts.NAME`, or `None` for the one account of `[api]` or `--demo`.
    name: Option<String>,
    /// The list poll loop.
    poller: Poller,
    /// The asset report loop, when `asset_reports.enabled`.
    reports: Option<ReportPoller>,
    /// The snapshots the pollers publish.
    store: Arc<Store>,
    /// Its API metrics.
    telemetry: Arc<Telemetry>,
}

impl Account {
    /// The span its work logs in: `account=NAME` on every line, with several accounts.
    fn span(&self) -> tracing::Span {
        match &self.name {
            Some(name) => tracing::info_span!("account", account = %name),
            None => tracing::Span::none(),
        }
    }
}

/// Everything the exporter is made of, wired together but not yet running.
#[derive(Debug)]
pub struct App {
    accounts: Vec<Account>,
    /// Build and process metrics.
    process: Arc<ProcessMetrics>,
    /// What the HTTP handlers read.
    state: AppState,
    /// Most connections served at once.
    max_connections: usize,
    /// `--demo`: the simulated API, served as long as the exporter runs.
    _demo: Option<SimulatedApi>,
}

impl App {
    /// Wires the exporter for this configuration; with `--demo`, starts the simulated API.
    pub async fn build(config: &Config) -> Result<App, AppError> {
        for warning in &config.warnings {
            tracing::warn!("{warning}");
        }
        let mut endpoints = Endpoint::POLLED.to_vec();
        if config.asset_reports_enabled {
            endpoints.push(Endpoint::Asset);
        }
        let targets: Vec<(Option<String>, &ApiConfig)> = if config.accounts.is_empty() {
            vec![(None, &config.api)]
        } else {
            config
                .accounts
                .iter()
                .map(|a| (Some(a.name.clone()), &a.api))
                .collect()
        };
        let mut accounts = Vec::with_capacity(targets.len());
        let mut demo = None;
        for (name, api) in targets {
            let telemetry = Arc::new(Telemetry::new(&endpoints));
            let (client, simulated) = connect(api, telemetry.clone()).await?;
            demo = demo.or(simulated);
            let store = Store::new(config.max_age);
            let reports = config.asset_reports_enabled.then(|| {
                ReportPoller::new(
                    client.clone(),
                    telemetry.clone(),
                    store.clone(),
                    config.retry,
                    config.asset_reports.clone(),
                )
            });
            let poller = Poller::new(
                client,
                telemetry.clone(),
                store.clone(),
                config.poll_interval,
                config.retry,
                config.max_labels_per_asset,
            );
            accounts.push(Account {
                name,
                poller,
                reports,
                store,
                telemetry,
            });
        }
        let process = Arc::new(ProcessMetrics::default());
        let state = AppState {
            accounts: accounts
                .iter()
                .map(|a| AccountState {
                    name: a.name.clone(),
                    snapshots: a.store.subscribe(),
                    telemetry: a.telemetry.clone(),
                    cycles: a.store.cycles(),
                })
                .collect(),
            process: process.clone(),
            telemetry_path: config.web.telemetry_path.clone(),
            poll_interval: config.poll_interval,
            web: config.web.config_file.clone(),
            demo: demo.is_some(),
        };
        Ok(App {
            accounts,
            process,
            state,
            max_connections: server::max_connections(),
            _demo: demo,
        })
    }

    /// Serves at most `max_connections` connections at once instead of the default.
    pub fn with_max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// The account `--target` names; the one account when there is one and no target.
    fn target(&self, target: Option<&str>) -> Result<&Account, AppError> {
        let names = || {
            let names: Vec<&str> = self
                .accounts
                .iter()
                .filter_map(|a| a.name.as_deref())
                .collect();
            names.join(", ")
        };
        match (target, self.accounts.as_slice()) {
            (None, [one]) if one.name.is_none() => Ok(one),
            (None, _) => Err(AppError::Target(format!(
                "several accounts are configured: give --target NAME, one of {}",
                names()
            ))),
            (Some(name), accounts) => accounts
                .iter()
                .find(|a| a.name.as_deref() == Some(name))
                .ok_or_else(|| {
                    AppError::Target(format!(
                        "--target {name}: no such account (configured: {})",
                        if names().is_empty() {
                            "one, in [api]".to_owned()
                        } else {
                            names()
                        }
                    ))
                }),
        }
    }

    /// Polls every endpoint of one account once (and every selected asset report); true when
    /// all answered.
    pub async fn poll_once(&self, target: Option<&str>) -> Result<bool, AppError> {
        let account = self.target(target)?;
        let polled = async {
            let mut ok = account.poller.poll_once().await;
            if let Some(reports) = &account.reports {
                ok &= reports.poll_once().await;
            }
            ok
        };
        Ok(polled.instrument(account.span()).await)
    }

    /// The endpoints of one account whose last poll failed, each with the kind of failure
    /// (`ip-list: connection refused`).
    pub fn failures(&self, target: Option<&str>) -> Vec<String> {
        let Ok(account) = self.target(target) else {
            return Vec::new();
        };
        account
            .telemetry
            .health()
            .into_iter()
            .filter(|h| !h.up)
            .map(|h| {
                let why = h.error.as_deref().unwrap_or("no answer");
                format!("{}: {why}", h.endpoint.label())
            })
            .collect()
    }

    /// One account's exposition as served now, in one format (with the process metrics when
    /// it is the only account, as `/metrics` serves it).
    pub fn exposition(&self, target: Option<&str>, format: Format) -> Result<Vec<u8>, AppError> {
        let account = self.target(target)?;
        let process = account.name.is_none().then_some(&*self.process);
        Ok(server::metrics::render(
            &account.store.current(),
            &account.telemetry,
            process,
            format,
        ))
    }

    /// Polls and serves on `listener` until `shutdown` completes; then lets open requests
    /// finish and stops polling.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), AppError> {
        let address = listener.local_addr().map_err(AppError::Serve)?;
        info!(
            address = %address,
            telemetry_path = %self.state.telemetry_path,
            accounts = self.accounts.len(),
            "listening"
        );
        let mut tasks = Vec::new();
        for account in self.accounts {
            let span = account.span();
            tasks.push(crate::task::spawn(
                account.poller.run().instrument(span.clone()),
            ));
            if let Some(reports) = account.reports {
                tasks.push(crate::task::spawn(reports.run().instrument(span)));
            }
        }
        let served =
            server::serve_bounded(listener, self.state, shutdown, self.max_connections).await;
        for task in tasks {
            task.abort();
        }
        served.map_err(AppError::Serve)?;
        info!("stopped");
        Ok(())
    }
}

/// The API client of one account; with `--demo`, the simulated API it talks to, started on
/// loopback and served as long as it is held.
pub async fn connect(
    api: &ApiConfig,
    telemetry: Arc<Telemetry>,
) -> Result<(Client, Option<SimulatedApi>), AppError> {
    let (base_url, token, token_file, demo) = match &api.source {
        Source::Remote {
            base_url,
            token,
            token_file,
        } => (base_url.clone(), token.clone(), token_file.clone(), None),
        Source::Accounts => {
            return Err(AppError::Target(
                "several accounts are configured: each has its own [accounts.NAME]".into(),
            ));
        }
        Source::Demo => {
            let simulated = SimulatedApi::demo();
            let url = simulated.spawn().await.map_err(AppError::Demo)?;
            info!(url = %url, "demo mode: polling the built-in simulated API");
            let base_url = url
                .parse()
                .map_err(|e| AppError::Demo(std::io::Error::other(format!("{url}: {e}"))))?;
            (
                base_url,
                Secret::new(demo::DEMO_TOKEN),
                None,
                Some(simulated),
            )
        }
    };
    let options = ClientOptions {
        base_url,
        token,
        token_file,
        timeout: api.timeout,
        max_body_bytes: api.max_body_bytes,
    };
    Ok((Client::new(options, telemetry)?, demo))
}

/// Builds the exporter for `config` and serves it on `listener` until `shutdown` completes.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), AppError> {
    App::build(&config).await?.serve(listener, shutdown).await
}
