//! The receiver's client: one request posted as remote-write 1.0 says, and what its failures
//! mean (which are retried, what to do about the others).

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use reqwest::header::{self, HeaderValue};
use reqwest::{StatusCode, Url};

use super::Settings;
use reputation_exporter::upstream::retry::{Transient, parse_retry_after};
use reputation_exporter::upstream::{Connection, install_crypto_provider, tls_error, tls_in_words};

/// The longest wait for the answer to [`Receiver::probe`].
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Most of a refusal's body kept for the message.
const MESSAGE_BYTES: usize = 1024;

/// Why a request was not taken.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// An answer other than 2xx, with the receiver's own words.
    #[error("the receiver answered HTTP {status}: {message}")]
    Answer {
        /// The status.
        status: StatusCode,
        /// The body, trimmed and shortened.
        message: String,
        /// `Retry-After`, when the answer had one.
        retry_after: Option<Duration>,
    },
    /// No answer in time.
    #[error("no answer within {0:?} (--remote-write.timeout)")]
    Timeout(Duration),
    /// No connection, or it broke.
    #[error("cannot reach the receiver: {message}")]
    Connect {
        /// What went wrong, as the HTTP client says it.
        message: String,
        /// How far the connection got.
        connection: Connection,
    },
    /// The TLS handshake failed: the certificate, most often, which no retry changes.
    #[error("cannot reach the receiver over TLS: {0}")]
    Tls(String),
    /// The request could not be encoded.
    #[error("cannot encode a request: {0}")]
    Encode(String),
}

impl Transient for SendError {
    fn is_transient(&self) -> bool {
        match self {
            SendError::Answer {
                status, message, ..
            } => {
                // A 5xx that says the samples are too old says it again however often asked,
                // and a 501 says that no remote write is taken at this address.
                (status.is_server_error()
                    && *status != StatusCode::NOT_IMPLEMENTED
                    && !too_old(message))
                    || *status == StatusCode::TOO_MANY_REQUESTS
            }
            SendError::Timeout(_) | SendError::Connect { .. } => true,
            SendError::Tls(_) | SendError::Encode(_) => false,
        }
    }

    fn is_unreachable(&self) -> bool {
        matches!(
            self,
            SendError::Tls(_)
                | SendError::Connect {
                    connection: Connection::Refused | Connection::NotMade,
                    ..
                }
        )
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            SendError::Answer { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// Whether a receiver's message refuses samples for their age: Prometheus' and Thanos' "out of
/// bounds", "too old sample" and "out of order sample", Mimir's `sample-too-old`,
/// `sample-out-of-order` and "timestamp is too old".
fn too_old(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    [
        "out of bounds",
        "too old",
        "too-old",
        "out of order",
        "out-of-order",
    ]
    .iter()
    .any(|words| message.contains(words))
}

/// Which receiver a URL and its message point to, for advice that names its own setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Prometheus,
    Mimir,
    Thanos,
}

fn receiver_kind(url: &str, message: &str) -> Kind {
    let path = url.trim_end_matches('/');
    if path.ends_with("/api/v1/push") || message.contains("mimir") {
        Kind::Mimir
    } else if path.ends_with("/api/v1/receive") {
        Kind::Thanos
    } else {
        Kind::Prometheus
    }
}

impl SendError {
    /// What to do about it, when the answer says more than its status.
    pub fn advice(&self, url: &str) -> Option<String> {
        let (status, message) = match self {
            SendError::Answer {
                status, message, ..
            } => (status, message),
            SendError::Tls(_) => {
                return Some(
                    "A receiver whose certificate comes from a private CA needs that CA: \
                     --remote-write.ca-file FILE (PEM)."
                        .into(),
                );
            }
            SendError::Connect {
                connection: Connection::Refused | Connection::NotMade,
                ..
            } => {
                return Some(
                    "Check the host and port of --remote-write, and that the receiver runs \
                     there."
                        .into(),
                );
            }
            _ => return None,
        };
        if too_old(message) {
            let setting = match receiver_kind(url, message) {
                Kind::Prometheus => {
                    "Prometheus takes samples older than its newest ones only within \
                     storage.tsdb.out_of_order_time_window (in prometheus.yml, under storage: \
                     tsdb:, read at a reload)"
                }
                Kind::Mimir => {
                    "Mimir takes samples older than a series' newest ones only within the \
                     tenant's out_of_order_time_window (-ingester.out-of-order-time-window, or \
                     per tenant in the runtime configuration)"
                }
                Kind::Thanos => {
                    "Thanos Receive takes samples older than its newest ones only within \
                     --tsdb.out-of-order.time-window"
                }
            };
            return Some(format!(
                "The receiver refuses samples this old: {setting}. Set it longer than the \
                 history (--since), e.g. 120d for --since 90d, and run the backfill again; \
                 samples already taken are taken again harmlessly."
            ));
        }
        match *status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Some(
                "The receiver refuses the credentials: check --remote-write.bearer-token-file, \
                 or --remote-write.basic-auth-username and --remote-write.basic-auth-password-file \
                 (for Mimir, also the tenant: --remote-write.header 'X-Scope-OrgID: NAME')."
                    .into(),
            ),
            StatusCode::NOT_FOUND
            | StatusCode::METHOD_NOT_ALLOWED
            | StatusCode::NOT_IMPLEMENTED => Some(
                "Nothing takes remote write at this path: check the path of --remote-write. \
                 Prometheus takes /api/v1/write (started with \
                 --web.enable-remote-write-receiver), Mimir /api/v1/push, Thanos Receive \
                 /api/v1/receive, VictoriaMetrics /api/v1/write."
                    .into(),
            ),
            status if status.is_redirection() => Some(
                "Redirects are not followed with a request's body: give the address the \
                 redirect points to."
                    .into(),
            ),
            _ => None,
        }
    }
}

/// The HTTP client for one receiver.
#[derive(Debug)]
pub struct Receiver {
    http: reqwest::Client,
    url: Url,
    shown: String,
    timeout: Duration,
}

/// The receiver's HTTP client cannot be set up (TLS).
#[derive(Debug, thiserror::Error)]
#[error("--remote-write: cannot set up the client: {0}")]
pub struct ReceiverError(reqwest::Error);

impl Receiver {
    /// A client for `settings`' receiver; fails only when TLS cannot be set up.
    pub fn new(settings: Settings) -> Result<Receiver, ReceiverError> {
        install_crypto_provider();
        let mut headers = settings.headers;
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("snappy"));
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-protobuf"),
        );
        headers.insert(
            "x-prometheus-remote-write-version",
            HeaderValue::from_static("0.1.0"),
        );
        let mut builder = reqwest::Client::builder()
            .default_headers(headers)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("reputation-exporter/", env!("CARGO_PKG_VERSION")))
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout.min(Duration::from_secs(10)));
        if let Some(roots) = settings.roots {
            builder = builder.tls_certs_only(roots);
        }
        let http = builder.build().map_err(ReceiverError)?;
        Ok(Receiver {
            http,
            url: settings.url,
            shown: settings.shown,
            timeout: settings.timeout,
        })
    }

    /// The receiver's address as messages show it: without the query.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Posts one compressed `WriteRequest`.
    pub async fn post(&self, body: Bytes) -> Result<(), SendError> {
        self.post_within(body, self.timeout).await
    }

    /// Posts an empty `WriteRequest`, which every receiver takes and stores nothing of, to
    /// learn whether this one can be reached and takes remote write at this address; a
    /// receiver that answers at all answers this at once, so it is given at most 10 s.
    pub async fn probe(&self) -> Result<(), SendError> {
        let empty = snap::raw::Encoder::new()
            .compress_vec(&[])
            .map_err(|e| SendError::Encode(e.to_string()))?;
        let timeout = self.timeout.min(PROBE_TIMEOUT);
        self.post_within(Bytes::from(empty), timeout).await
    }

    async fn post_within(&self, body: Bytes, timeout: Duration) -> Result<(), SendError> {
        let mut response = self
            .http
            .post(self.url.clone())
            .timeout(timeout)
            .body(body)
            .send()
            .await
            .map_err(|e| self.transport_error(e, timeout))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let retry_after = response
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let mut body = Vec::new();
        while body.len() < MESSAGE_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                _ => break,
            }
        }
        Err(SendError::Answer {
            status,
            message: message(&body),
            retry_after,
        })
    }

    fn transport_error(&self, error: reqwest::Error, timeout: Duration) -> SendError {
        // Before the timeout: a connection attempt that timed out is a connection not made.
        let mut connection = match error.is_connect() {
            true => Connection::NotMade,
            false if error.is_timeout() => return SendError::Timeout(timeout),
            false => Connection::Broken,
        };
        // Without the URL (it is named once, in the final message); the headers are never in
        // an error.
        let error = error.without_url();
        let mut message = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            if let Some(tls) = tls_error(cause) {
                let words = tls_in_words(tls, "--remote-write");
                return SendError::Tls(words.unwrap_or_else(|| tls.to_string()));
            }
            let io = cause.downcast_ref::<std::io::Error>();
            if io.is_some_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused) {
                connection = Connection::Refused;
            }
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        SendError::Connect {
            message,
            connection,
        }
    }
}

/// A refusal's body as one line: trimmed, shortened, `(no message)` when empty.
fn message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(MESSAGE_BYTES)]);
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        "(no message)".to_owned()
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_retried() {
        let answer = |status: u16, message: &str| SendError::Answer {
            status: StatusCode::from_u16(status).unwrap(),
            message: message.into(),
            retry_after: None,
        };
        assert!(answer(500, "overloaded").is_transient());
        assert!(answer(503, "").is_transient());
        assert!(answer(429, "slow down").is_transient());
        let connect = |connection| SendError::Connect {
            message: "no".into(),
            connection,
        };
        for connection in [Connection::Refused, Connection::NotMade, Connection::Broken] {
            assert!(connect(connection).is_transient());
        }
        assert!(SendError::Timeout(Duration::from_secs(30)).is_transient());
        // A one-shot command stops at once only where no connection could be made.
        assert!(connect(Connection::Refused).is_unreachable());
        assert!(connect(Connection::NotMade).is_unreachable());
        assert!(SendError::Tls("unknown issuer".into()).is_unreachable());
        assert!(!connect(Connection::Broken).is_unreachable());
        assert!(!SendError::Timeout(Duration::from_secs(30)).is_unreachable());
        assert!(!answer(503, "").is_unreachable());
        assert!(!answer(400, "bad").is_transient());
        assert!(!answer(401, "").is_transient());
        assert!(!answer(500, "too old sample").is_transient());
        assert!(!answer(501, "Unsupported method ('POST')").is_transient());
    }

    #[test]
    fn a_refusal_of_old_samples_names_the_receivers_own_setting() {
        let answer = |message: &str| SendError::Answer {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            retry_after: None,
        };
        let prometheus = answer("out of bounds")
            .advice("http://p:9090/api/v1/write")
            .unwrap();
        assert!(
            prometheus.contains("storage.tsdb.out_of_order_time_window"),
            "{prometheus}"
        );
        let mimir = answer(
            "the sample has been rejected because its timestamp is too old \
             (err-mimir-sample-timestamp-too-old)",
        )
        .advice("http://m/api/v1/push")
        .unwrap();
        assert!(
            mimir.contains("-ingester.out-of-order-time-window"),
            "{mimir}"
        );
        let thanos = answer("out of bounds")
            .advice("http://t:19291/api/v1/receive")
            .unwrap();
        assert!(
            thanos.contains("--tsdb.out-of-order.time-window"),
            "{thanos}"
        );
        assert_eq!(
            answer("label name invalid").advice("http://p/api/v1/write"),
            None
        );
    }

    #[test]
    fn a_refusals_body_becomes_one_short_line() {
        assert_eq!(message(b"out of bounds\n"), "out of bounds");
        assert_eq!(message(b"  \n"), "(no message)");
        assert_eq!(message(&vec![b'x'; 5000]).len(), MESSAGE_BYTES);
    }
}
