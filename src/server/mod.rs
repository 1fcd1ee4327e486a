//! The exporter's HTTP interface: the router and what it serves ([`metrics`], the [`landing`]
//! page, health and readiness), served by `exporter_web::serve` behind the web configuration.

mod body;
mod landing;
mod listings;
pub mod metrics;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::routing::{get, post};
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::{mpsc, oneshot, watch};
use tower_http::timeout::TimeoutLayer;
use tracing::instrument::WithSubscriber as _;

use crate::accounts::{Account, AccountError, Accounts, Changes, Readiness};
use crate::config::ConfigError;
use crate::telemetry::ProcessMetrics;
use exporter_web::WebConfigFile;
pub use exporter_web::{Passed, SocketError, Sockets, max_connections, raise_open_file_limit};

/// Longest time a request may take; keeps shutdown from hanging on a stuck client.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What every handler shares: the accounts, the process metrics, the web settings. (The data
/// is each account's `latest`; the state store is `disk`.)
#[derive(Debug, Clone)]
pub struct Shared {
    /// Every account polled, swapped whole by a reload: one without a name (served on
    /// `/metrics`), or several by name (served on `/probe?target=NAME`).
    pub accounts: watch::Receiver<Arc<Accounts>>,
    /// Build and process metrics, which belong to no account.
    pub process: Arc<ProcessMetrics>,
    /// Path of the metrics endpoint.
    pub telemetry_path: String,
    /// TLS, basic auth and extra headers (`--web.config.file`).
    pub web: Arc<WebConfigFile>,
    /// Whether the data comes from `--demo`'s simulated API, said on the landing page.
    pub demo: bool,
    /// Set when a reload replaced accounts that were ready, and never unset: an account added
    /// by a reload does not take a serving exporter out of its load balancer.
    pub ready: Arc<AtomicBool>,
    /// Where `POST /-/reload` asks for a reload.
    pub reload: mpsc::Sender<ReloadRequest>,
}

/// Why a reload was refused; the running configuration stays.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// The exporter was built without a source to read the configuration from again.
    #[error("this exporter was started without a configuration to read again")]
    NoSource,
    /// The configuration read is not valid.
    #[error(transparent)]
    Invalid(ConfigError),
    /// The accounts of the new configuration could not be set up.
    #[error(transparent)]
    Accounts(#[from] AccountError),
}

/// What a reload did: what changed, or why the configuration was refused.
pub type ReloadOutcome = Result<Changes, ReloadError>;

/// A request to read the configuration again and apply it; the reply says what changed, or
/// why the configuration was refused.
#[derive(Debug)]
pub struct ReloadRequest {
    /// Where the outcome goes.
    pub reply: oneshot::Sender<ReloadOutcome>,
}

impl ReloadRequest {
    /// A request, and the receiver of its outcome.
    pub fn new() -> (ReloadRequest, oneshot::Receiver<ReloadOutcome>) {
        let (reply, outcome) = oneshot::channel();
        (ReloadRequest { reply }, outcome)
    }
}

impl Shared {
    /// The accounts served now.
    pub fn accounts(&self) -> Arc<Accounts> {
        self.accounts.borrow().clone()
    }

    /// Whether the exporter is ready to be scraped: [`Accounts::readiness`], with readiness
    /// once reached kept across reloads.
    pub fn readiness(&self, accounts: &Accounts) -> Readiness {
        accounts.readiness(self.ready.load(Ordering::Relaxed))
    }
}

/// The account `name` names, or the one answer to a request for an account there is not
/// (`/probe?target=`, the landing page's `?account=`): 400, with the accounts there are.
fn account_named<'a>(
    accounts: &'a Accounts,
    name: &str,
) -> Result<&'a Arc<Account>, (StatusCode, String)> {
    accounts
        .resolve(Some(name))
        .map_err(|e| (StatusCode::BAD_REQUEST, format!("{e}\n")))
}

/// The router, separate from any socket so tests can drive it directly. Requests log to the
/// subscriber that was current when the router was built.
pub fn router(state: Shared) -> Router {
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    Router::new()
        .route("/", get(landing::landing))
        .route(&state.telemetry_path, get(metrics::metrics))
        .route("/probe", get(metrics::probe))
        .route("/-/healthy", get(healthy))
        .route("/-/ready", get(ready))
        .route("/-/reload", post(reload))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ))
        .layer(axum::middleware::from_fn(
            move |request: Request, next: Next| next.run(request).with_subscriber(dispatch.clone()),
        ))
        .with_state(state)
}

/// Serves the exporter on `sockets` until `shutdown` completes, then lets open requests
/// finish, with at most `max_connections` connections open at once (see [`max_connections`]
/// for the default), behind the web configuration (TLS, basic auth, headers, rate limit).
pub async fn serve(
    sockets: Sockets,
    state: Shared,
    shutdown: impl Future<Output = ()> + Send + 'static,
    max_connections: usize,
) -> std::io::Result<()> {
    let web = state.web.clone();
    exporter_web::serve(router(state), web, sockets, shutdown, max_connections).await
}

async fn healthy() -> &'static str {
    "Healthy.\n"
}

/// `GET /-/ready`: 200 when [`Shared::readiness`] says ready, 503 with why before.
async fn ready(State(state): State<Shared>) -> (StatusCode, String) {
    let readiness = state.readiness(&state.accounts());
    let status = if readiness.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, format!("{}.\n", upper_first(readiness.words())))
}

/// `ready` as `Ready`.
fn upper_first(words: &str) -> String {
    let mut chars = words.chars();
    chars.next().map_or(String::new(), |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// `POST /-/reload`: reads the configuration again, as SIGHUP does; 200 with what changed, or
/// 400 with every reason the new configuration was refused (the running one stays).
async fn reload(State(state): State<Shared>) -> (StatusCode, String) {
    let (request, outcome) = ReloadRequest::new();
    if state.reload.send(request).await.is_err() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "The exporter is shutting down.\n".into(),
        );
    }
    match outcome.await {
        Ok(Ok(changes)) => (StatusCode::OK, format!("{changes}\n")),
        Ok(Err(reason)) => (StatusCode::BAD_REQUEST, format!("{reason}\n")),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "The exporter is shutting down.\n".into(),
        ),
    }
}
