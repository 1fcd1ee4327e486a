//! How the server accepts on its [`Sockets`]: plain TCP or TLS, both with a bound on the
//! connections open at once.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::serve::{Listener, ListenerExt as _};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use super::sockets::Sockets;
use crate::config::WebConfigFile;

/// Longest time a client may take to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepted TCP connections with `TCP_NODELAY` set: a body goes out as a large cached chunk
/// and a small live one, and without it the last segment waits for the client's delayed ACK
/// (tens of milliseconds).
fn no_delay(listener: Sockets) -> impl Listener<Io = TcpStream, Addr = SocketAddr> {
    listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    })
}

/// A plain listener that accepts a connection only while fewer than its permits are open.
pub(super) struct Bounded<L> {
    inner: L,
    permits: Arc<Semaphore>,
}

/// `listener`, serving at most `max_connections` connections at once.
pub(super) fn bounded(
    listener: Sockets,
    max_connections: usize,
) -> Bounded<impl Listener<Io = TcpStream, Addr = SocketAddr>> {
    Bounded {
        inner: no_delay(listener),
        permits: Arc::new(Semaphore::new(max_connections)),
    }
}

impl<L: Listener> Listener for Bounded<L> {
    type Io = Permitted<L::Io>;
    type Addr = L::Addr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        // The semaphore is never closed, so acquiring only waits.
        let permit = self.permits.clone().acquire_owned().await.ok();
        let (io, addr) = self.inner.accept().await;
        (
            Permitted {
                io,
                _permit: permit,
            },
            addr,
        )
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A TLS listener: a background task accepts TCP connections (within the bound) and completes
/// each handshake in a task of its own, so a slow or hostile client never holds up the others;
/// finished connections queue here for the server. Every handshake uses the web configuration
/// file's latest TLS settings, so a rotated certificate serves the next connection.
pub(super) struct TlsListener {
    incoming: mpsc::Receiver<(Permitted<TlsStream<TcpStream>>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Starts accepting on `listener`; the task stops when this listener is dropped.
    pub(super) fn spawn(
        listener: Sockets,
        web: Arc<WebConfigFile>,
        max_connections: usize,
    ) -> io::Result<TlsListener> {
        let local = listener.local_addr()?;
        let (ready, incoming) = mpsc::channel(64);
        let permits = Arc::new(Semaphore::new(max_connections));
        let mut listener = no_delay(listener);
        crate::task::spawn(async move {
            loop {
                let next = async {
                    let permit = permits.clone().acquire_owned().await.ok();
                    (permit, listener.accept().await)
                };
                let (permit, (tcp, peer)) = tokio::select! {
                    () = ready.closed() => return,
                    next = next => next,
                };
                let Some(config) = web.current().tls.clone() else {
                    continue;
                };
                let ready = ready.clone();
                crate::task::spawn(async move {
                    let handshake = TlsAcceptor::from(config).accept(tcp);
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
                        Ok(Ok(tls)) => {
                            let io = Permitted {
                                io: tls,
                                _permit: permit,
                            };
                            let _ = ready.send((io, peer)).await;
                        }
                        Ok(Err(error)) => {
                            tracing::debug!(%peer, %error, "TLS handshake failed");
                        }
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener { incoming, local })
    }
}

impl Listener for TlsListener {
    type Io = Permitted<TlsStream<TcpStream>>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.incoming.recv().await {
            Some(connection) => connection,
            // The accept task ended; nothing more will come.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// A connection holding its permit until it closes.
pub(super) struct Permitted<T> {
    io: T,
    _permit: Option<OwnedSemaphorePermit>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Permitted<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Permitted<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listener with a connection always waiting.
    struct Waiting;

    impl Listener for Waiting {
        type Io = tokio::io::DuplexStream;
        type Addr = ();

        async fn accept(&mut self) -> (Self::Io, Self::Addr) {
            (tokio::io::duplex(64).0, ())
        }

        fn local_addr(&self) -> io::Result<Self::Addr> {
            Ok(())
        }
    }

    /// Whether `accept` completes when polled once.
    async fn accepts_now(accept: &mut Pin<&mut impl Future<Output = ()>>) -> bool {
        tokio::select! {
            biased;
            () = accept.as_mut() => true,
            () = std::future::ready(()) => false,
        }
    }

    #[tokio::test]
    async fn a_connection_beyond_the_bound_is_accepted_only_when_one_closes() {
        let permits = Arc::new(Semaphore::new(2));
        let mut bounded = Bounded {
            inner: Waiting,
            permits: permits.clone(),
        };
        let (first, ()) = bounded.accept().await;
        let (second, ()) = bounded.accept().await;
        let (third_tx, mut third_rx) = tokio::sync::oneshot::channel();
        let mut third = std::pin::pin!(async {
            let _ = third_tx.send(bounded.accept().await);
        });
        assert!(
            !accepts_now(&mut third).await,
            "a third connection beside two"
        );
        drop(second);
        assert!(
            accepts_now(&mut third).await,
            "not accepted once one closed"
        );
        let (third, ()) = third_rx.try_recv().unwrap();
        drop(first);
        // The closed connections' permits are back; the open one still holds its own.
        assert_eq!(permits.available_permits(), 1);
        drop(third);
        assert_eq!(permits.available_permits(), 2);
    }
}
