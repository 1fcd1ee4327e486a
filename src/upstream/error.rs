//! Why a request to the API gave nothing usable, and what the pollers, the log and the
//! `code` label make of it.

use std::time::Duration;

use reqwest::StatusCode;

use super::dto::DecodeError;
use crate::vocabulary::Failure;

/// Why a request gave nothing usable. Messages never hold the token.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// 401 or 403.
    #[error("the API rejected the token (HTTP {0})")]
    Rejected(StatusCode),
    /// Any other status than 200.
    #[error("the API answered HTTP {status}")]
    Status {
        /// The status.
        status: StatusCode,
        /// `Retry-After`, when the answer had one.
        retry_after: Option<Duration>,
    },
    /// No answer within `api.timeout`.
    #[error("no answer within {0:?} (api.timeout)")]
    Timeout(Duration),
    /// No connection, or the connection broke.
    #[error("cannot reach the API: {message}")]
    Connect {
        /// What went wrong, as the HTTP client says it.
        message: String,
        /// How far the connection got.
        connection: Connection,
    },
    /// A redirect to another scheme, host or port, which is not followed: the token and the
    /// answer stay with the configured origin.
    #[error("the API redirected to another origin, {0}; not followed")]
    Redirect(String),
    /// The body is larger than `api.max_body_bytes`.
    #[error("the body is larger than api.max_body_bytes ({0} bytes)")]
    TooLarge(u64),
    /// The body is not what the endpoint returns.
    #[error("the body is not valid: {0}")]
    Decode(#[from] DecodeError),
    /// An asset whose name cannot be requested as one path segment.
    #[error("`{0}` cannot be requested as one path segment")]
    NotRequestable(String),
}

impl FetchError {
    /// Whether the API said it is rate-limiting (429 Too Many Requests).
    pub fn is_rate_limit(&self) -> bool {
        matches!(self, FetchError::Status { status, .. } if *status == StatusCode::TOO_MANY_REQUESTS)
    }

    /// How long the server asked to wait (`Retry-After`), when it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            FetchError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The kind of failure: what the landing page, the log's streaks and the `code` label
    /// go by.
    pub fn failure(&self) -> Failure {
        match self {
            FetchError::Rejected(status) => Failure::Rejected(status.as_u16()),
            FetchError::Status { status, .. } => Failure::Status(status.as_u16()),
            FetchError::Timeout(_) => Failure::Timeout,
            FetchError::Connect {
                connection: Connection::Refused,
                ..
            } => Failure::Refused,
            FetchError::Connect { .. } => Failure::Connect,
            FetchError::Redirect(_) => Failure::Redirect,
            FetchError::TooLarge(_) => Failure::TooLarge,
            FetchError::Decode(_) => Failure::Decode,
            FetchError::NotRequestable(_) => Failure::NotRequestable,
        }
    }

    /// Whether the API does not know what was asked for (404): for an asset report, the asset
    /// is gone.
    pub fn is_not_found(&self) -> bool {
        matches!(self, FetchError::Status { status, .. } if *status == StatusCode::NOT_FOUND)
    }

    /// Whether no connection to the API could be made at all (nothing listens, the name does
    /// not resolve, the TLS handshake fails): a one-shot command says so at once.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            FetchError::Connect {
                connection: Connection::Refused | Connection::NotMade,
                ..
            }
        )
    }

    /// Whether trying again soon may help: 5xx, 429, timeouts and connection errors.
    pub fn is_transient(&self) -> bool {
        match self {
            // 429: a rate limit (a gateway's, or the API's own) says "later", as 503 does.
            FetchError::Status { status, .. } => {
                status.is_server_error() || *status == StatusCode::TOO_MANY_REQUESTS
            }
            FetchError::Timeout(_) | FetchError::Connect { .. } => true,
            FetchError::Rejected(_)
            | FetchError::Redirect(_)
            | FetchError::TooLarge(_)
            | FetchError::Decode(_)
            | FetchError::NotRequestable(_) => false,
        }
    }
}

/// How far a connection that failed got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connection {
    /// Refused: nothing listens at the address.
    Refused,
    /// Not made for another reason: the name does not resolve, the TLS handshake fails, no
    /// answer to the connection attempt.
    NotMade,
    /// Made, then broken before the answer was whole.
    Broken,
}
