//! The web surface of a Prometheus exporter, as prometheus/exporter-toolkit's `web` package
//! gives it to Go exporters: one call, [`serve`], serves a router on the listen addresses (or
//! the sockets systemd passes) with what the web configuration file asks for (TLS, mutual TLS,
//! basic auth, extra headers, a rate limit), reloading it when its files change, and with
//! bounds that keep idle or slow clients from starving a scrape.
//!
//! - [`config`]: the web configuration file, in exporter-toolkit's format, watched.
//! - [`sockets`]: the addresses bound, or the sockets systemd passed.
//! - `listener` (TLS handshakes and the connection bound), `connections` (HTTP/1.1 with a
//!   header timeout, graceful shutdown) and `auth` (rate limit, basic auth, headers): what
//!   [`serve`] puts together.
//! - [`file_watch`] and [`task`]: following changed files, and spawning that keeps the
//!   spawner's logger; the exporter uses both too.
//!
//! It knows nothing of what it serves.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod auth;
pub mod config;
mod connections;
pub mod file_watch;
mod listener;
pub mod sockets;
pub mod task;

use std::sync::Arc;

use axum::Router;

pub use config::{WebConfigError, WebConfigFile};
pub use connections::{HEADER_TIMEOUT, max_connections, raise_open_file_limit};
use listener::{TlsListener, bounded};
pub use sockets::{Passed, SocketError, Sockets};

/// Serves `router` on `sockets` until `shutdown` completes, then lets open requests finish.
///
/// Every request passes the web configuration's rate limit and basic auth first, and every
/// answer carries its headers; TLS when the file turns it on. At most `max_connections`
/// connections are open at once ([`max_connections`] gives the process' bound). The file and
/// the files it names are checked for changes at least every [`config::RECHECK`], so
/// certificates rotate without a restart.
pub async fn serve(
    router: Router,
    web: Arc<WebConfigFile>,
    sockets: Sockets,
    shutdown: impl Future<Output = ()> + Send + 'static,
    max_connections: usize,
) -> std::io::Result<()> {
    let app = router.layer(axum::middleware::from_fn_with_state(
        web.clone(),
        auth::guard,
    ));
    // Requests and handshakes look for changes too; this reloads (and reports a bad change)
    // when no client comes. It stops when the set is dropped, however serving ends.
    let mut watch = tokio::task::JoinSet::new();
    if web.path().is_some() {
        let web = web.clone();
        task::spawn_into(&mut watch, async move {
            let mut ticks = tokio::time::interval(config::RECHECK);
            loop {
                ticks.tick().await;
                web.current();
            }
        });
    }
    if web.current().tls.is_some() {
        let listener = TlsListener::spawn(sockets, web, max_connections)?;
        connections::accept(listener, app, shutdown).await;
    } else {
        connections::accept(bounded(sockets, max_connections), app, shutdown).await;
    }
    Ok(())
}
