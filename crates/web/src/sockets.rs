//! The sockets the exporter serves on, as exporter-toolkit takes them: every address of
//! `web.listen_address` bound, or the sockets systemd passes (`--web.systemd-socket`). The
//! server accepts from all of them alike.

use std::io;
use std::net::SocketAddr;
use std::task::Poll;
use std::time::Duration;

use axum::serve::Listener;
use tokio::net::{TcpListener, TcpStream};

/// Why the exporter cannot listen.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// An address of `web.listen_address` cannot be bound.
    #[error("cannot listen on {address} (web.listen_address): {error}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// What the system said.
        error: io::Error,
    },
    /// `--web.systemd-socket` without sockets passed.
    #[error(
        "--web.systemd-socket: no socket was passed to this process (LISTEN_FDS is not set for \
         it); start it from a systemd .socket unit, or leave the flag out to listen on \
         --web.listen-address"
    )]
    NonePassed,
    /// A passed socket cannot be served on.
    #[error("--web.systemd-socket: passed socket {index} (fd {fd}): {error}")]
    Passed {
        /// Its position among the passed sockets, from 0.
        index: usize,
        /// Its file descriptor.
        fd: usize,
        /// Why it cannot be used (not a TCP listening socket, for one).
        error: io::Error,
    },
}

/// The sockets systemd passed, taken from the environment (`LISTEN_FDS`, `LISTEN_PID`) but not
/// yet registered with the runtime.
#[derive(Debug)]
pub struct Passed(Vec<std::net::TcpListener>);

/// The first file descriptor systemd passes.
const SD_LISTEN_FDS_START: usize = 3;

impl Passed {
    /// Takes the sockets systemd passed to this process. Reading them clears `LISTEN_FDS` and
    /// `LISTEN_PID` from the environment, as sd_listen_fds(3) does, so call it before any other
    /// thread starts (before the runtime).
    pub fn take() -> Result<Passed, SocketError> {
        let mut passed = listenfd::ListenFd::from_env();
        if passed.len() == 0 {
            return Err(SocketError::NonePassed);
        }
        (0..passed.len())
            .map(|index| {
                let failed = |error| SocketError::Passed {
                    index,
                    fd: SD_LISTEN_FDS_START + index,
                    error,
                };
                match passed.take_tcp_listener(index) {
                    Ok(Some(listener)) => Ok(listener),
                    Ok(None) => Err(failed(io::Error::other("already taken"))),
                    Err(error) => Err(failed(error)),
                }
            })
            .collect::<Result<_, _>>()
            .map(Passed)
    }
}

/// Listening sockets, accepted from alike.
#[derive(Debug)]
pub struct Sockets {
    listeners: Vec<TcpListener>,
    /// Where the next accept starts looking, so that a busy socket does not starve the others.
    next: usize,
}

impl From<TcpListener> for Sockets {
    fn from(listener: TcpListener) -> Sockets {
        Sockets {
            listeners: vec![listener],
            next: 0,
        }
    }
}

impl Sockets {
    /// Binds every address, or says which one cannot be bound.
    pub async fn bind(addresses: &[SocketAddr]) -> Result<Sockets, SocketError> {
        let mut listeners = Vec::with_capacity(addresses.len());
        for &address in addresses {
            let bound = TcpListener::bind(address)
                .await
                .map_err(|error| SocketError::Bind { address, error })?;
            listeners.push(bound);
        }
        Ok(Sockets { listeners, next: 0 })
    }

    /// The sockets systemd passed, served by this runtime.
    pub fn passed(Passed(passed): Passed) -> Result<Sockets, SocketError> {
        let listeners = passed
            .into_iter()
            .enumerate()
            .map(|(index, listener)| {
                listener
                    .set_nonblocking(true)
                    .and_then(|()| TcpListener::from_std(listener))
                    .map_err(|error| SocketError::Passed {
                        index,
                        fd: SD_LISTEN_FDS_START + index,
                        error,
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(Sockets { listeners, next: 0 })
    }

    /// The address of every socket, in order.
    pub fn addresses(&self) -> io::Result<Vec<SocketAddr>> {
        self.listeners.iter().map(TcpListener::local_addr).collect()
    }
}

impl Listener for Sockets {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        loop {
            let accepted = std::future::poll_fn(|cx| {
                let count = self.listeners.len();
                for offset in 0..count {
                    let at = (self.next + offset) % count;
                    if let Poll::Ready(result) = self.listeners[at].poll_accept(cx) {
                        self.next = (at + 1) % count;
                        return Poll::Ready(result);
                    }
                }
                Poll::Pending
            })
            .await;
            match accepted {
                Ok(connection) => return connection,
                Err(error) => after_accept_error(error).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        match self.listeners.first() {
            Some(listener) => listener.local_addr(),
            None => Err(io::Error::other("no socket")),
        }
    }
}

/// A connection that failed before it was accepted is the client's affair; anything else (out
/// of file descriptors, above all) is the process', and accepting again at once would spin.
async fn after_accept_error(error: io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(%error, "cannot accept connections; trying again in a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn connections_to_every_socket_are_accepted() {
        let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let mut sockets = Sockets::bind(&[loopback, loopback]).await.unwrap();
        let addresses = sockets.addresses().unwrap();
        assert_eq!(addresses.len(), 2);
        assert_ne!(addresses[0], addresses[1]);
        // The second socket first: each is accepted on the socket it reached.
        for &address in addresses.iter().rev() {
            let client = TcpStream::connect(address).await.unwrap();
            let (accepted, peer) = sockets.accept().await;
            assert_eq!(accepted.local_addr().unwrap(), address);
            assert_eq!(peer, client.local_addr().unwrap());
        }
    }

    #[tokio::test]
    async fn an_address_that_cannot_be_bound_is_named() {
        let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = taken.local_addr().unwrap();
        let free: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let error = Sockets::bind(&[free, address]).await.unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with(&format!(
                "cannot listen on {address} (web.listen_address): "
            )),
            "{message}"
        );
    }
}
