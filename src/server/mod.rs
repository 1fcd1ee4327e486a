//! The exporter's HTTP interface: metrics, landing page, health and readiness.

mod listener;

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_http::timeout::TimeoutLayer;

use crate::exposition::{Format, Writer};
use crate::snapshot::Snapshot;
use crate::telemetry::{Telemetry, unix_now};
use crate::web_config::WebConfigFile;
use listener::{TlsListener, bounded};

/// Longest time a request may take; keeps shutdown from hanging on a stuck client.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Assets listed on the landing page; the rest are in `/metrics`.
const LANDING_ROWS: usize = crate::snapshot::WORST_KEPT;

/// What the handlers read.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The latest snapshot, swapped in by the poller.
    pub snapshots: watch::Receiver<Arc<Snapshot>>,
    /// Live exporter metrics.
    pub telemetry: Arc<Telemetry>,
    /// Path of the metrics endpoint.
    pub telemetry_path: String,
    /// TLS, basic auth and extra headers (`--web.config.file`).
    pub web: Arc<WebConfigFile>,
}

/// The router, separate from any socket so tests can drive it directly.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/", get(landing))
        .route(&state.telemetry_path, get(metrics))
        .route("/-/healthy", get(healthy))
        .route("/-/ready", get(ready))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.web.clone(),
            guard,
        ))
        .with_state(state)
}

/// Basic auth and the extra response headers of the web configuration file, on every path.
async fn guard(State(web): State<Arc<WebConfigFile>>, request: Request, next: Next) -> Response {
    let access = web.current();
    let allowed = !access.requires_auth() || {
        match basic_credentials(request.headers()) {
            Some((user, password)) => web.verify(&access, user, password).await,
            None => false,
        }
    };
    let mut response = if allowed {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Basic")],
            "Unauthorized\n",
        )
            .into_response()
    };
    for (name, value) in &access.headers {
        response.headers_mut().insert(name.clone(), value.clone());
    }
    response
}

/// User and password of an `Authorization: Basic` header.
fn basic_credentials(headers: &HeaderMap) -> Option<(String, Vec<u8>)> {
    use base64::Engine as _;
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let (scheme, encoded) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"basic ") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim_ascii())
        .ok()?;
    let colon = decoded.iter().position(|&b| b == b':')?;
    let user = String::from_utf8(decoded[..colon].to_vec()).ok()?;
    Some((user, decoded[colon + 1..].to_vec()))
}

/// Most connections served at once; more wait in the kernel's accept queue.
pub const MAX_CONNECTIONS: usize = 512;

/// Serves the exporter on `listener` until `shutdown` completes, then lets open requests
/// finish. TLS when the web configuration file turns it on.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_bounded(listener, state, shutdown, MAX_CONNECTIONS).await
}

/// [`serve`] with at most `max_connections` connections open at once.
pub async fn serve_bounded(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    max_connections: usize,
) -> std::io::Result<()> {
    let web = state.web.clone();
    let app = app(state);
    // Requests and handshakes look for changes too; this reloads (and reports a bad change)
    // when no client comes.
    let watch = web.path().is_some().then(|| {
        let web = web.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(crate::web_config::RECHECK);
            loop {
                ticks.tick().await;
                web.current();
            }
        })
    });
    let served = if web.current().tls.is_some() {
        let listener = TlsListener::spawn(listener, web, max_connections)?;
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
    } else {
        axum::serve(bounded(listener, max_connections), app)
            .with_graceful_shutdown(shutdown)
            .await
    };
    if let Some(watch) = watch {
        watch.abort();
    }
    served
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

/// The live part of a scrape: the exporter's own metrics (and `# EOF` for OpenMetrics), which
/// follows the snapshot's cached per-asset body.
pub fn live(snapshot: &Snapshot, telemetry: &Telemetry, format: Format) -> Vec<u8> {
    let mut live = Vec::with_capacity(8 * 1024);
    let mut writer = Writer::new(format, &mut live);
    telemetry.render(snapshot, &mut writer);
    writer.finish();
    live
}

/// The whole exposition in one format, as one buffer.
pub fn render(snapshot: &Snapshot, telemetry: &Telemetry, format: Format) -> Vec<u8> {
    let mut body = snapshot.rendered.to_vec(format);
    body.extend_from_slice(&live(snapshot, telemetry, format));
    body
}

/// Whether an `Accept-Encoding` header allows gzip (`gzip`, `x-gzip` or `*` with q > 0).
fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    accept_encoding.is_some_and(|value| {
        value.split(',').any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let refused = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .any(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0));
            matches!(name.as_str(), "gzip" | "x-gzip" | "*") && !refused
        })
    })
}

async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = Format::negotiate(accept);
    let gzip = accepts_gzip(
        headers
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok()),
    );
    let snapshot = state.snapshots.borrow().clone();
    let live = live(&snapshot, &state.telemetry, format);
    let content_type = (header::CONTENT_TYPE, format.content_type());
    let vary = (header::VARY, "Accept-Encoding");
    if !gzip {
        let mut chunks = snapshot.body(format).to_vec();
        chunks.push(Bytes::from(live));
        return ([content_type, vary], Body::new(Chunks::new(chunks))).into_response();
    }
    // Compressing a large head takes a while the first time: off the async threads.
    let prefix = if snapshot.has_gzip(format) {
        snapshot.gzip(format).clone()
    } else {
        let snapshot = snapshot.clone();
        match tokio::task::spawn_blocking(move || snapshot.gzip(format).clone()).await {
            Ok(prefix) => prefix,
            Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        }
    };
    let chunks = prefix.finish(&live).to_vec();
    (
        [content_type, vary, (header::CONTENT_ENCODING, "gzip")],
        Body::new(Chunks::new(chunks)),
    )
        .into_response()
}

/// A response body made of shared chunks, with its exact length known up front (so the
/// response carries `Content-Length`, and the chunks are written without copying).
struct Chunks {
    chunks: VecDeque<Bytes>,
    remaining: u64,
}

impl Chunks {
    fn new(chunks: Vec<Bytes>) -> Self {
        let remaining = chunks.iter().map(|c| c.len() as u64).sum();
        Chunks {
            chunks: chunks.into_iter().filter(|c| !c.is_empty()).collect(),
            remaining,
        }
    }
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let next = self.chunks.pop_front();
        if let Some(chunk) = &next {
            self.remaining -= chunk.len() as u64;
        }
        std::task::Poll::Ready(next.map(|c| Ok(http_body::Frame::data(c))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.remaining)
    }
}

async fn healthy() -> &'static str {
    "Healthy.\n"
}

async fn ready(State(state): State<AppState>) -> (StatusCode, &'static str) {
    if state.snapshots.borrow().ready {
        (StatusCode::OK, "Ready.\n")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "Not ready: no list has been polled successfully yet.\n",
        )
    }
}

async fn landing(State(state): State<AppState>) -> Html<String> {
    let snapshot = state.snapshots.borrow().clone();
    let mut page = String::with_capacity(16 * 1024);
    let version = env!("CARGO_PKG_VERSION");
    let path = escape(&state.telemetry_path);
    let _ = write!(
        page,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Reputation Exporter</title>\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:2px 8px;text-align:left}}</style></head><body>\
         <h1>Reputation Exporter</h1><p>Version {version}. Metrics: <a href=\"{path}\">{path}</a>\
         </p><h2>Upstream API</h2><table><tr><th>endpoint</th><th>last poll</th>\
         <th>last success</th></tr>"
    );
    let now = unix_now();
    for health in state.telemetry.health() {
        let age = health
            .last_success
            .map_or("never".to_owned(), |t| format!("{:.0} s ago", now - t));
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{age}</td></tr>",
            health.endpoint.label(),
            if health.up { "ok" } else { "failed" },
        );
    }
    let total = snapshot.total();
    let _ = write!(
        page,
        "</table><h2>Assets, worst first</h2><p>{total} assets.</p><table><tr><th>kind</th>\
         <th>asset</th><th>sender score</th><th>blacklistings</th><th>SNDS</th></tr>"
    );
    for asset in snapshot.worst(LANDING_ROWS) {
        let show = |v: Option<f64>| v.map_or("–".to_owned(), |v| v.to_string());
        let snds = asset.snds_reputation.map_or("–", |c| c.label());
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{snds}</td></tr>",
            asset.kind.label(),
            escape(&asset.name),
            show(asset.senderscore),
            show(asset.blacklistings),
        );
    }
    if total > LANDING_ROWS {
        let _ = write!(
            page,
            "<tr><td colspan=\"5\">and {} more in {path}</td></tr>",
            total - LANDING_ROWS
        );
    }
    page.push_str("</table></body></html>\n");
    Html(page)
}

/// Escapes text for HTML element content and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_chosen_only_when_the_client_allows_it() {
        assert!(accepts_gzip(Some("gzip")));
        assert!(accepts_gzip(Some("deflate, gzip;q=0.5")));
        assert!(accepts_gzip(Some("*")));
        assert!(!accepts_gzip(Some("gzip;q=0")));
        assert!(!accepts_gzip(Some("identity")));
        assert!(!accepts_gzip(None));
    }

    #[test]
    fn basic_credentials_are_read_from_the_authorization_header() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
            basic_credentials(&headers)
        };
        // "prom:pa:ss" -- the password may hold a colon.
        assert_eq!(
            with("Basic cHJvbTpwYTpzcw=="),
            Some(("prom".to_owned(), b"pa:ss".to_vec()))
        );
        assert_eq!(
            with("basic cHJvbTpwYTpzcw=="),
            Some(("prom".to_owned(), b"pa:ss".to_vec()))
        );
        assert_eq!(with("Bearer cHJvbTpwYTpzcw=="), None);
        assert_eq!(with("Basic !!!"), None);
        // "nocolon"
        assert_eq!(with("Basic bm9jb2xvbg=="), None);
        assert_eq!(basic_credentials(&HeaderMap::new()), None);
    }

    #[test]
    fn html_special_characters_are_escaped() {
        assert_eq!(
            escape("<script>\"x\" & 'y'</script>"),
            "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;"
        );
    }
}
