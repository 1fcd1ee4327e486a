//! Serving HTTP/1.1 on accepted connections, so that idle and slow clients cannot starve a
//! scrape: headers must arrive within [`HEADER_TIMEOUT`] (which also closes a keep-alive
//! connection idle that long), and the connection bound follows the process' file limit.

use std::time::Duration;

use axum::Router;
use axum::serve::Listener;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};

/// Longest time a client may take to send a request's headers, counted from when the server
/// starts waiting for them: on a new connection, and between requests on a kept-alive one.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest time open requests get to finish once shutdown begins.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// File descriptors kept for everything but client connections: the listener, upstream
/// connections, token and configuration files, logs.
const RESERVED_FDS: u64 = 128;

/// Fewest connections served at once, whatever the file limit says.
const MIN_CONNECTIONS: usize = 64;

/// Raises the process' open-file limit to its hard limit, as Go programs do at start, so the
/// connection bound ([`max_connections`]) is thousands, not the usual soft 1024. Called once,
/// by `main`, before serving.
pub fn raise_open_file_limit() {
    #[cfg(unix)]
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        tracing::warn!(error = %e, "cannot raise the open-file limit; fewer connections are served at once");
    }
}

/// The most connections this process can serve at once: its open-file limit less what the
/// exporter needs for itself.
pub fn max_connections() -> usize {
    #[cfg(unix)]
    let limit = rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _)| soft);
    #[cfg(not(unix))]
    let limit = 1024;
    usize::try_from(limit.saturating_sub(RESERVED_FDS))
        .unwrap_or(usize::MAX)
        .max(MIN_CONNECTIONS)
}

/// Serves `router` on every connection `listener` accepts until `shutdown` completes; then
/// stops accepting and gives open requests [`DRAIN_TIMEOUT`] to finish.
pub(super) async fn accept<L>(
    mut listener: L,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) where
    L: Listener,
    L::Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .keep_alive(true);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (io, _peer) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(router.clone());
        let connection = graceful.watch(http.serve_connection(TokioIo::new(io), service));
        crate::task::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection closed");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("some requests were still open at shutdown and were cut off");
    }
}
