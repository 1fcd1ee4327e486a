//! The whole exporter, built once from a [`Config`] the same way for `main` and for every
//! black-box test: the client, the pollers, the store and the HTTP state, then run on a given
//! listener until a given shutdown future completes.

use std::sync::Arc;

use tokio::net::TcpListener;
use tracing::info;

use crate::config::{Config, Source};
use crate::demo::{self, SimulatedApi};
use crate::exposition::Format;
use crate::poll::Poller;
use crate::poll::reports::ReportPoller;
use crate::server::{self, AppState};
use crate::store::Store;
use crate::telemetry::Telemetry;
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
    /// The HTTP server failed.
    #[error("the HTTP server failed: {0}")]
    Serve(std::io::Error),
}

/// Everything the exporter is made of, wired together but not yet running.
#[derive(Debug)]
pub struct App {
    /// The list poll loop.
    poller: Poller,
    /// The asset report loop, when `asset_reports.enabled`.
    reports: Option<ReportPoller>,
    /// The snapshots the pollers publish.
    store: Arc<Store>,
    /// The exporter's own metrics.
    telemetry: Arc<Telemetry>,
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
        let telemetry = Arc::new(Telemetry::new(&endpoints));
        let (client, demo) = connect(config, telemetry.clone()).await?;
        let store = Store::new(config.max_age);
        let reports = config.asset_reports_enabled.then(|| {
            let schedule = config.asset_reports.clone();
            ReportPoller::new(
                client.clone(),
                telemetry.clone(),
                store.clone(),
                config.retry,
                schedule,
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
        let state = AppState {
            snapshots: store.subscribe(),
            telemetry: telemetry.clone(),
            telemetry_path: config.web.telemetry_path.clone(),
            web: config.web.config_file.clone(),
            demo: demo.is_some(),
        };
        Ok(App {
            poller,
            reports,
            store,
            telemetry,
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

    /// Polls every endpoint once (and every selected asset report); true when all answered.
    pub async fn poll_once(&self) -> bool {
        let mut ok = self.poller.poll_once().await;
        if let Some(reports) = &self.reports {
            ok &= reports.poll_once().await;
        }
        ok
    }

    /// The endpoints whose last poll failed, each with the kind of failure
    /// (`ip-list: connection refused`).
    pub fn failures(&self) -> Vec<String> {
        self.telemetry
            .health()
            .into_iter()
            .filter(|h| !h.up)
            .map(|h| {
                let why = h.error.as_deref().unwrap_or("no answer");
                format!("{}: {why}", h.endpoint.label())
            })
            .collect()
    }

    /// The whole exposition as served now, in one format.
    pub fn exposition(&self, format: Format) -> Vec<u8> {
        server::metrics::render(&self.store.current(), &self.telemetry, format)
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
            "listening"
        );
        let poller = crate::task::spawn(self.poller.run());
        let reports = self.reports.map(|r| crate::task::spawn(r.run()));
        let served =
            server::serve_bounded(listener, self.state, shutdown, self.max_connections).await;
        poller.abort();
        if let Some(reports) = reports {
            reports.abort();
        }
        served.map_err(AppError::Serve)?;
        info!("stopped");
        Ok(())
    }
}

/// The API client for `config`; with `--demo`, the simulated API it talks to, started on
/// loopback and served as long as it is held.
pub async fn connect(
    config: &Config,
    telemetry: Arc<Telemetry>,
) -> Result<(Client, Option<SimulatedApi>), AppError> {
    let (base_url, token, token_file, demo) = match &config.api.source {
        Source::Remote {
            base_url,
            token,
            token_file,
        } => (base_url.clone(), token.clone(), token_file.clone(), None),
        Source::Demo => {
            let api = SimulatedApi::demo();
            let url = api.spawn().await.map_err(AppError::Demo)?;
            info!(url = %url, "demo mode: polling the built-in simulated API");
            let base_url = url
                .parse()
                .map_err(|e| AppError::Demo(std::io::Error::other(format!("{url}: {e}"))))?;
            (base_url, Secret::new(demo::DEMO_TOKEN), None, Some(api))
        }
    };
    let options = ClientOptions {
        base_url,
        token,
        token_file,
        timeout: config.api.timeout,
        max_body_bytes: config.api.max_body_bytes,
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
