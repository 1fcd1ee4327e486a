//! The whole exporter, built once from a [`Config`] the same way for `main` and for every
//! black-box test: its [`Accounts`], the HTTP state, and reloads; then run on a given listener
//! until a given shutdown future completes.
//!
//! A reload (SIGHUP, or `POST /-/reload`) reads the configuration again from the source `main`
//! gives (the file and the environment), validates it whole, and swaps in the accounts it
//! describes: unchanged accounts keep running with their data and their report rounds, added
//! ones start, accounts of which only shared settings changed go on with their data and
//! schedule under the new settings, changed ones are rebuilt, removed ones stop. A
//! configuration that fails validation changes nothing.

mod commands;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{Mutex, mpsc, watch};
use tracing::{error, info, warn};

use crate::accounts::{Account, AccountError, Accounts, Changes, Upstreams};
use crate::config::{Config, ConfigError};
use crate::server::{self, ReloadError, ReloadRequest, Shared, Sockets};
use crate::telemetry::ProcessMetrics;

pub use commands::{BACKFILL_BINARY, BackfillLaunchError, backfill, once, simulate};

/// Why the exporter cannot start or serve.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// An account cannot be set up or found.
    #[error(transparent)]
    Account(#[from] AccountError),
    /// The HTTP server failed.
    #[error("the HTTP server failed: {0}")]
    Serve(std::io::Error),
    /// `--once` could not write the exposition.
    #[error("cannot write to stdout: {0}")]
    Output(std::io::Error),
    /// `simulate --report-latency` is not a duration.
    #[error("--report-latency {0}")]
    ReportLatency(crate::vocabulary::DurationError),
    /// An address cannot be listened on.
    #[error("cannot listen on {address}: {error}")]
    Listen {
        /// The address.
        address: String,
        /// Why.
        error: std::io::Error,
    },
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}

/// Asks for a reload on every SIGHUP, as Prometheus and Alertmanager do; the outcome is logged
/// by the reload itself.
pub fn reload_on_hangup(reloads: mpsc::Sender<ReloadRequest>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(hangups) => hangups,
            Err(e) => {
                warn!(error = %e, "cannot listen for SIGHUP; reload with POST /-/reload");
                return;
            }
        };
        exporter_web::task::spawn(async move {
            while hangups.recv().await.is_some() {
                info!("SIGHUP: reloading the configuration");
                let (request, outcome) = ReloadRequest::new();
                if reloads.send(request).await.is_err() {
                    return;
                }
                let _ = outcome.await;
            }
        });
    }
    #[cfg(not(unix))]
    drop(reloads);
}

/// Where a reload reads the configuration from: the file and the environment again, as at the
/// start, in `main`.
pub type ConfigSource = Arc<dyn Fn() -> Result<Config, ConfigError> + Send + Sync>;

/// What reloads share with the running exporter.
struct Core {
    /// The accounts the handlers serve, swapped whole by a reload.
    accounts: watch::Sender<Arc<Accounts>>,
    /// Upstreams answered in process (tests on the paused clock).
    upstreams: Upstreams,
    /// Build and process metrics, and the reload gauges among them.
    process: Arc<ProcessMetrics>,
    /// Set when a reload replaces accounts that were ready (see [`Shared::ready`]).
    ready: Arc<AtomicBool>,
    /// The configuration running now; one reload at a time.
    running: Mutex<Config>,
    /// Where reloads read the configuration, when the exporter can reload.
    source: Option<ConfigSource>,
    /// The directory of the accounts' state stores, chosen at start; `None`: off.
    state: Option<std::path::PathBuf>,
}

/// Everything the exporter is made of, wired together; its accounts poll once started.
pub struct App {
    core: Arc<Core>,
    /// What the HTTP handlers read.
    state: Shared,
    /// Most connections served at once.
    max_connections: usize,
    /// Reload requests from `POST /-/reload` and from [`App::reloads`].
    requests: mpsc::Receiver<ReloadRequest>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("accounts", &self.core.accounts.borrow().names())
            .finish_non_exhaustive()
    }
}

impl App {
    /// Wires the exporter for this configuration; with `--demo`, starts the simulated API.
    pub async fn build(config: &Config) -> Result<App, AppError> {
        Self::build_from(config, Upstreams::default()).await
    }

    /// [`App::build`], with some upstreams answered in process (tests on the paused clock).
    #[cfg(feature = "in-process")]
    pub async fn build_with(config: &Config, upstreams: Upstreams) -> Result<App, AppError> {
        Self::build_from(config, upstreams).await
    }

    async fn build_from(config: &Config, upstreams: Upstreams) -> Result<App, AppError> {
        for warning in &config.warnings {
            warn!("{warning}");
        }
        let state_dir = crate::disk::root(config.state.enabled, config.state.path.as_deref());
        let (accounts, _) = Accounts::build(config, &upstreams, None, state_dir.as_deref()).await?;
        let process = Arc::new(ProcessMetrics::default());
        process.config_applied(true);
        let (accounts, receiver) = watch::channel(Arc::new(accounts));
        let (reload, requests) = mpsc::channel(4);
        let ready = Arc::new(AtomicBool::new(false));
        let state = Shared {
            accounts: receiver,
            process: process.clone(),
            telemetry_path: config.web.telemetry_path.clone(),
            web: config.web.config_file.clone(),
            demo: config.demo(),
            ready: ready.clone(),
            reload,
        };
        Ok(App {
            core: Arc::new(Core {
                accounts,
                upstreams,
                process,
                ready,
                running: Mutex::new(config.clone()),
                source: None,
                state: state_dir,
            }),
            state,
            max_connections: server::max_connections(),
            requests,
        })
    }

    /// Serves at most `max_connections` connections at once instead of the default.
    pub fn with_max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// Lets SIGHUP and `POST /-/reload` reload the configuration from `source`.
    pub fn reloading_from(mut self, source: ConfigSource) -> Self {
        if let Some(core) = Arc::get_mut(&mut self.core) {
            core.source = Some(source);
        }
        self
    }

    /// A sender of reload requests (what SIGHUP does), served while the exporter runs.
    pub fn reloads(&self) -> mpsc::Sender<ReloadRequest> {
        self.state.reload.clone()
    }

    /// The accounts served now.
    pub fn accounts(&self) -> Arc<Accounts> {
        self.core.accounts.borrow().clone()
    }

    /// The account `--target` names; the one account when there is one and no target.
    pub fn account(&self, target: Option<&str>) -> Result<Arc<Account>, AppError> {
        Ok(self.accounts().resolve(target)?.clone())
    }

    /// Starts every account's poll loops (serving does too).
    pub fn start(&self) {
        self.accounts().start();
    }

    /// The router, with no socket: for tests that drive it in process.
    pub fn router(&self) -> axum::Router {
        server::router(self.state.clone())
    }

    /// Applies `config`: see the module's documentation. On an error nothing changes.
    pub async fn reload(&self, config: Config) -> Result<Changes, AppError> {
        Ok(self.core.apply(config).await?)
    }

    /// Polls and serves on `sockets` (one listener, or several) until `shutdown` completes;
    /// then lets open requests finish and stops polling.
    pub async fn serve(
        self,
        sockets: impl Into<Sockets>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), AppError> {
        let sockets = sockets.into();
        for address in sockets.addresses().map_err(AppError::Serve)? {
            info!(
                address = %address,
                telemetry_path = %self.state.telemetry_path,
                accounts = self.accounts().len(),
                "listening"
            );
        }
        self.start();
        let App {
            core,
            state,
            max_connections,
            mut requests,
        } = self;
        // Reloads are applied while serving; the set stops the reloader when it is dropped.
        let mut reloader = tokio::task::JoinSet::new();
        exporter_web::task::spawn_into(&mut reloader, {
            let core = core.clone();
            async move {
                while let Some(request) = requests.recv().await {
                    let answer = core.reload_from_source().await;
                    let _ = request.reply.send(answer);
                }
            }
        });
        let served = server::serve(sockets, state, shutdown, max_connections).await;
        drop(reloader);
        // The accounts stop with the last holder of their set.
        drop(core);
        served.map_err(AppError::Serve)?;
        info!("stopped");
        Ok(())
    }
}

impl Core {
    /// Reads the configuration from the source and applies it; the answer of `/-/reload`.
    async fn reload_from_source(&self) -> Result<Changes, ReloadError> {
        let Some(source) = &self.source else {
            return Err(ReloadError::NoSource);
        };
        let loaded = source();
        let config = match loaded {
            Ok(config) => config,
            Err(e) => {
                // The gauge first: whoever reads the log line then finds it said on /metrics.
                self.process.config_applied(false);
                error!(
                    reason = %e,
                    "reload refused: the configuration is not valid; the running one stays"
                );
                return Err(ReloadError::Invalid(e));
            }
        };
        Ok(self.apply(config).await?)
    }

    async fn apply(&self, config: Config) -> Result<Changes, AccountError> {
        let mut running = self.running.lock().await;
        for warning in &config.warnings {
            warn!("{warning}");
        }
        let restart = running.restart_only(&config);
        for what in &restart {
            warn!("{what} changed; the change takes effect at the next restart");
        }
        let previous = self.accounts.borrow().clone();
        // Readiness once reached stays: an account added now does not take a serving exporter
        // out of its load balancer.
        if previous.readiness(false).is_ready() {
            self.ready.store(true, Ordering::Relaxed);
        }
        let (accounts, mut changes) = match Accounts::build(
            &config,
            &self.upstreams,
            Some(&previous),
            self.state.as_deref(),
        )
        .await
        {
            Ok(built) => built,
            Err(e) => {
                self.process.config_applied(false);
                error!(reason = %e, "reload refused; the running configuration stays");
                return Err(e);
            }
        };
        accounts.start();
        self.accounts.send_replace(Arc::new(accounts));
        self.process.config_applied(true);
        changes.restart = restart;
        info!(
            added = %changes.added.join(","),
            changed = %changes.changed.join(","),
            reconfigured = %changes.reconfigured_keys(),
            removed = %changes.removed.join(","),
            kept = %changes.kept.join(","),
            "configuration reloaded"
        );
        *running = config;
        Ok(changes)
    }
}
