//! A Prometheus exporter for e-mail sending reputation.
//!
//! It polls the reputation monitoring API and serves every monitored IP address and domain as
//! labelled metrics. Data flows one way, one module per step:
//!
//! - [`config`]: flags, TOML file and environment, layered and validated into typed values.
//! - [`upstream`]: the API client (token, timeouts, body cap) and the JSON it returns.
//! - [`poll`]: the list poll loop; [`reports`]: the asset report loop.
//! - [`store`]: the latest good data, and the snapshot swapped in on every change.
//! - [`snapshot`]: the immutable model of one poll: assets and their mapped values.
//! - [`exposition`]: OpenMetrics 1.0 and Prometheus text 0.0.4 writers.
//! - [`telemetry`]: the exporter's own metrics, rendered live on each scrape.
//! - [`server`]: `/metrics`, the landing page, health and readiness.
//! - [`web_config`]: the exporter-toolkit web configuration file: TLS, basic auth, headers.
//! - [`demo`]: the simulated API behind `--demo`, the tests and the benchmarks.
//!
//! The data is polled, not collected at scrape time: the upstream is a slow, rate-limited
//! third-party API whose values change daily, so a scrape answers from the latest snapshot and
//! never waits on it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod demo;
pub mod exposition;
pub mod logging;
pub mod poll;
pub mod reports;
pub mod server;
pub mod snapshot;
pub mod store;
pub mod telemetry;
pub mod upstream;
pub mod web_config;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use tokio::net::TcpListener;
use tracing::info;

use config::{Config, Secret, Source};
use exposition::Format;
use poll::Poller;
use reports::ReportPoller;
use store::Store;
use telemetry::Telemetry;
use upstream::{Client, ClientOptions, Endpoint};

/// Everything the exporter is made of, wired together but not yet running.
#[derive(Debug)]
pub struct Exporter {
    /// The list poll loop; run it with [`Poller::run`].
    pub poller: Poller,
    /// The asset report loop, when `asset_reports.enabled`.
    pub reports: Option<ReportPoller>,
    /// The snapshots the poller publishes.
    pub store: Arc<Store>,
    /// The exporter's own metrics.
    pub telemetry: Arc<Telemetry>,
    /// The HTTP state the router reads.
    pub state: server::AppState,
}

impl Exporter {
    /// Wires the exporter for this configuration, polling `base_url` with `token`.
    pub fn new(
        config: &Config,
        base_url: reqwest::Url,
        token: Secret,
        token_file: Option<std::path::PathBuf>,
    ) -> anyhow::Result<Self> {
        let mut endpoints = Endpoint::POLLED.to_vec();
        if config.asset_reports.enabled {
            endpoints.push(Endpoint::Asset);
        }
        let telemetry = Arc::new(Telemetry::new(&endpoints));
        let options = ClientOptions {
            base_url,
            token,
            token_file,
            timeout: config.api.timeout,
            max_body_bytes: config.api.max_body_bytes,
        };
        let client = Client::new(options, telemetry.clone())?;
        let store = Store::new(config.max_age);
        let reports = config.asset_reports.enabled.then(|| {
            ReportPoller::new(
                client.clone(),
                telemetry.clone(),
                store.clone(),
                config.retry,
                &config.asset_reports,
            )
        });
        let poller = Poller::new(
            client,
            telemetry.clone(),
            store.clone(),
            config.poll_interval,
            config.retry,
        );
        let state = server::AppState {
            snapshots: store.subscribe(),
            telemetry: telemetry.clone(),
            telemetry_path: config.web.telemetry_path.clone(),
            web: config.web.config_file.clone(),
        };
        Ok(Exporter {
            poller,
            reports,
            store,
            telemetry,
            state,
        })
    }

    /// The whole exposition as served now, in one format.
    pub fn exposition(&self, format: Format) -> Vec<u8> {
        server::render(&self.store.current(), &self.telemetry, format)
    }
}

/// Runs the exporter until SIGINT or SIGTERM, or for `--once` polls once and prints.
pub async fn run(config: Config, once: bool) -> anyhow::Result<ExitCode> {
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    let (base_url, token, token_file) = match &config.api.source {
        Source::Remote {
            base_url,
            token,
            token_file,
        } => (base_url.clone(), token.clone(), token_file.clone()),
        Source::Demo => {
            let api = demo::SimulatedApi::demo();
            let url = api
                .spawn()
                .await
                .context("cannot start the simulated API on 127.0.0.1")?;
            info!(url = %url, "demo mode: polling the built-in simulated API");
            (url.parse()?, Secret::new(demo::DEMO_TOKEN), None)
        }
    };
    let exporter = Exporter::new(&config, base_url, token, token_file)?;

    if once {
        let mut ok = exporter.poller.poll_once().await;
        if let Some(reports) = &exporter.reports {
            ok &= reports.poll_once().await;
        }
        let body = exporter.exposition(Format::Text);
        use std::io::Write as _;
        std::io::stdout()
            .write_all(&body)
            .context("cannot write to stdout")?;
        return Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }

    let address = config.web.listen_address;
    let listener = TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address} (web.listen_address)"))?;
    info!(
        address = %listener.local_addr()?,
        telemetry_path = %config.web.telemetry_path,
        "listening"
    );
    let poller = tokio::spawn(exporter.poller.run());
    let reports = exporter.reports.map(|r| tokio::spawn(r.run()));
    server::serve(listener, exporter.state, server::shutdown_signal())
        .await
        .context("the HTTP server failed")?;
    poller.abort();
    if let Some(reports) = reports {
        reports.abort();
    }
    info!("stopped");
    Ok(ExitCode::SUCCESS)
}
