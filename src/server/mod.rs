//! The exporter's HTTP interface: the router and what it serves ([`metrics`], the [`landing`]
//! page, health and readiness), behind [`auth`], on the sockets of [`listener`].

mod auth;
mod body;
pub mod connections;
mod landing;
mod listener;
pub mod metrics;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_http::timeout::TimeoutLayer;
use tracing::instrument::WithSubscriber as _;

use crate::snapshot::Snapshot;
use crate::telemetry::{ProcessMetrics, Telemetry};
use crate::web_config::WebConfigFile;
pub use connections::max_connections;
use listener::{TlsListener, bounded};

/// Longest time a request may take; keeps shutdown from hanging on a stuck client.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What the handlers read.
#[derive(Debug, Clone)]
pub struct AppState {
    /// Every account polled: one without a name (served on `/metrics`), or several by name
    /// (served on `/probe?target=NAME`).
    pub accounts: Vec<AccountState>,
    /// Build and process metrics, which belong to no account.
    pub process: Arc<ProcessMetrics>,
    /// Path of the metrics endpoint.
    pub telemetry_path: String,
    /// How often the lists are polled (`poll.interval`), said on the landing page.
    pub poll_interval: Duration,
    /// TLS, basic auth and extra headers (`--web.config.file`).
    pub web: Arc<WebConfigFile>,
    /// Whether the data comes from `--demo`'s simulated API, said on the landing page.
    pub demo: bool,
}

/// What the handlers read of one account.
#[derive(Debug, Clone)]
pub struct AccountState {
    /// `accounts.NAME`, or `None` for the one account of `[api]` or `--demo`.
    pub name: Option<String>,
    /// Its latest snapshot, swapped in by its pollers.
    pub snapshots: watch::Receiver<Arc<Snapshot>>,
    /// Its API metrics.
    pub telemetry: Arc<Telemetry>,
    /// How many of its list poll cycles have ended.
    pub cycles: watch::Receiver<u64>,
}

impl AppState {
    /// The one account of a single-account exporter.
    pub fn single(&self) -> Option<&AccountState> {
        match self.accounts.as_slice() {
            [one] if one.name.is_none() => Some(one),
            _ => None,
        }
    }

    /// The account named `name`, with several.
    pub fn account(&self, name: &str) -> Option<&AccountState> {
        self.accounts
            .iter()
            .find(|a| a.name.as_deref() == Some(name))
    }
}

/// The router, separate from any socket so tests can drive it directly. Requests log to the
/// subscriber that was current when the router was built.
pub fn router(state: AppState) -> Router {
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    Router::new()
        .route("/", get(landing::landing))
        .route(&state.telemetry_path, get(metrics::metrics))
        .route("/probe", get(metrics::probe))
        .route("/-/healthy", get(healthy))
        .route("/-/ready", get(ready))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.web.clone(),
            auth::guard,
        ))
        .layer(axum::middleware::from_fn(
            move |request: Request, next: Next| next.run(request).with_subscriber(dispatch.clone()),
        ))
        .with_state(state)
}

/// Serves the exporter on `listener` until `shutdown` completes, then lets open requests
/// finish, with as many connections at once as the process' file limit allows. TLS when the
/// web configuration file turns it on.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_bounded(listener, state, shutdown, max_connections()).await
}

/// [`serve`] with at most `max_connections` connections open at once.
pub async fn serve_bounded(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    max_connections: usize,
) -> std::io::Result<()> {
    let web = state.web.clone();
    let app = router(state);
    // Requests and handshakes look for changes too; this reloads (and reports a bad change)
    // when no client comes.
    let watch = web.path().is_some().then(|| {
        let web = web.clone();
        crate::task::spawn(async move {
            let mut ticks = tokio::time::interval(crate::web_config::RECHECK);
            loop {
                ticks.tick().await;
                web.current();
            }
        })
    });
    if web.current().tls.is_some() {
        let listener = TlsListener::spawn(listener, web, max_connections)?;
        connections::serve(listener, app, shutdown).await;
    } else {
        connections::serve(bounded(listener, max_connections), app, shutdown).await;
    }
    if let Some(watch) = watch {
        watch.abort();
    }
    Ok(())
}

async fn healthy() -> &'static str {
    "Healthy.\n"
}

async fn ready(State(state): State<AppState>) -> (StatusCode, &'static str) {
    let ready = match state.single() {
        Some(one) => one.snapshots.borrow().ready,
        // With several accounts: once every account's first poll has ended, whatever its
        // outcome, so that one account down does not hold the others back.
        None => state.accounts.iter().all(|a| *a.cycles.borrow() > 0),
    };
    if ready {
        (StatusCode::OK, "Ready.\n")
    } else if state.single().is_some() {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "Not ready: no list has been polled successfully yet.\n",
        )
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "Not ready: not every account has been polled yet.\n",
        )
    }
}
