//! The API client: authentication, timeouts, the body-size cap, and the request metrics.
//!
//! [`Client::get`] makes exactly one request and classifies its outcome; retrying is the
//! caller's decision (see [`crate::poll`]), made on [`FetchError::is_transient`].

pub mod date;
pub mod dto;
pub mod retry;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::{Bytes, BytesMut};
use reqwest::header::{self, HeaderValue};
use reqwest::{StatusCode, Url};

use crate::config::Secret;
use crate::telemetry::{Code, Telemetry};
use dto::DecodeError;

/// The API endpoints, named as the `endpoint` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    /// `/api/v1/user`.
    User,
    /// `/api/v1/system-check`.
    SystemCheck,
    /// `/api/v1/ip-list`.
    IpList,
    /// `/api/v1/domain-list`.
    DomainList,
    /// `/api/v1/asset/{asset}`.
    Asset,
}

impl Endpoint {
    /// The endpoints of the list poll loop.
    pub const POLLED: [Endpoint; 4] = [
        Endpoint::User,
        Endpoint::SystemCheck,
        Endpoint::IpList,
        Endpoint::DomainList,
    ];

    /// The `endpoint` label value.
    pub fn label(self) -> &'static str {
        match self {
            Endpoint::User => "user",
            Endpoint::SystemCheck => "system-check",
            Endpoint::IpList => "ip-list",
            Endpoint::DomainList => "domain-list",
            Endpoint::Asset => "asset",
        }
    }

    /// Path below the base address (the asset report's is followed by the asset).
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::User => "/api/v1/user",
            Endpoint::SystemCheck => "/api/v1/system-check",
            Endpoint::IpList => "/api/v1/ip-list",
            Endpoint::DomainList => "/api/v1/domain-list",
            Endpoint::Asset => "/api/v1/asset/",
        }
    }
}

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
    #[error("cannot reach the API: {0}")]
    Connect(String),
    /// The body is larger than `api.max_body_bytes`.
    #[error("the body is larger than api.max_body_bytes ({0} bytes)")]
    TooLarge(u64),
    /// The body is not what the endpoint returns.
    #[error("the body is not valid: {0}")]
    Decode(#[from] DecodeError),
}

impl FetchError {
    /// How long the server asked to wait (`Retry-After`), when it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            FetchError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Whether trying again soon may help: 5xx, timeouts and connection errors.
    pub fn is_transient(&self) -> bool {
        match self {
            FetchError::Status { status, .. } => status.is_server_error(),
            FetchError::Timeout(_) | FetchError::Connect(_) => true,
            FetchError::Rejected(_) | FetchError::TooLarge(_) | FetchError::Decode(_) => false,
        }
    }
}

/// A client of one account of the API.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    /// Base address with any trailing slash removed, so paths append cleanly.
    base: String,
    /// `Bearer <token>`, marked sensitive so that no debug output of a request shows it; follows
    /// the token file when there is one.
    authorization: Arc<Authorization>,
    timeout: Duration,
    max_body_bytes: u64,
    telemetry: Arc<Telemetry>,
}

/// What is needed to build a [`Client`].
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Base address of the API.
    pub base_url: Url,
    /// Bearer token.
    pub token: Secret,
    /// The file the token was read from, re-read when it changes.
    pub token_file: Option<std::path::PathBuf>,
    /// Timeout of one whole request.
    pub timeout: Duration,
    /// Largest body accepted.
    pub max_body_bytes: u64,
}

impl Client {
    /// Builds the client; fails only when the token cannot be a header value or TLS cannot be
    /// set up.
    pub fn new(options: ClientOptions, telemetry: Arc<Telemetry>) -> anyhow::Result<Client> {
        // reqwest is built without a default crypto provider (ring instead of aws-lc, lighter to
        // build); installing it twice is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let authorization = Arc::new(Authorization::new(&options.token, options.token_file)?);
        let http = reqwest::Client::builder()
            .user_agent(concat!("reputation-exporter/", env!("CARGO_PKG_VERSION")))
            .timeout(options.timeout)
            .connect_timeout(options.timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build the HTTP client: {e}"))?;
        Ok(Client {
            http,
            base: options.base_url.as_str().trim_end_matches('/').to_owned(),
            authorization,
            timeout: options.timeout,
            max_body_bytes: options.max_body_bytes,
            telemetry,
        })
    }

    /// GETs one endpoint and decodes its body, counting the request under the status it got, or
    /// `decode` when the body was unusable, or `timeout` / `connect` when there was no answer.
    pub async fn get<T>(
        &self,
        endpoint: Endpoint,
        path: &str,
        decode: impl FnOnce(&[u8]) -> Result<T, DecodeError>,
    ) -> Result<T, FetchError> {
        let started = Instant::now();
        let result = self.fetch(path).await;
        let (code, result) = match result {
            Ok(body) => match decode(&body) {
                Ok(value) => (Code::Status(200), Ok(value)),
                Err(e) => (Code::Decode, Err(FetchError::Decode(e))),
            },
            Err(e) => (code_of(&e), Err(e)),
        };
        self.telemetry.request(endpoint, code, started.elapsed());
        match &result {
            Err(FetchError::Rejected(_)) => self.telemetry.auth(endpoint, false),
            Err(FetchError::Status { .. } | FetchError::Decode(_) | FetchError::TooLarge(_))
            | Ok(_) => self.telemetry.auth(endpoint, true),
            Err(FetchError::Timeout(_) | FetchError::Connect(_)) => {}
        }
        result
    }

    async fn fetch(&self, path: &str) -> Result<Bytes, FetchError> {
        let url = format!("{}{path}", self.base);
        let mut response = self
            .http
            .get(url)
            .header(header::AUTHORIZATION, self.authorization.current())
            .header(header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| self.transport_error(e))?;
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(FetchError::Rejected(status));
        }
        if status != StatusCode::OK {
            let retry_after = response
                .headers()
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, SystemTime::now()));
            return Err(FetchError::Status {
                status,
                retry_after,
            });
        }
        if response
            .content_length()
            .is_some_and(|len| len > self.max_body_bytes)
        {
            return Err(FetchError::TooLarge(self.max_body_bytes));
        }
        let mut body = BytesMut::with_capacity(
            response
                .content_length()
                .unwrap_or(64 * 1024)
                .min(self.max_body_bytes) as usize,
        );
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport_error(e))?
        {
            if (body.len() + chunk.len()) as u64 > self.max_body_bytes {
                return Err(FetchError::TooLarge(self.max_body_bytes));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body.freeze())
    }

    fn transport_error(&self, error: reqwest::Error) -> FetchError {
        if error.is_timeout() {
            return FetchError::Timeout(self.timeout);
        }
        // reqwest's messages name the URL, which holds no secret; the header is never in them.
        let mut message = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        FetchError::Connect(message)
    }
}

/// The `Authorization` header, following the token file: a changed file (time, size or inode)
/// is read again before the next request, so a rotated token needs no restart. A file that
/// cannot be read or holds no valid token keeps the previous token, with a warning.
#[derive(Debug)]
struct Authorization {
    file: Option<std::path::PathBuf>,
    /// The header and the file's stamp when it was read. A std mutex: held for a `stat`, and
    /// for a read only when the file changed; never across an `.await`.
    current: std::sync::Mutex<(HeaderValue, Option<crate::config::FileStamp>)>,
}

fn bearer(token: &Secret) -> anyhow::Result<HeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose())).map_err(|_| {
        anyhow::anyhow!("the API token holds characters that cannot be sent in a header")
    })?;
    value.set_sensitive(true);
    Ok(value)
}

impl Authorization {
    fn new(token: &Secret, file: Option<std::path::PathBuf>) -> anyhow::Result<Self> {
        let stamp = file.as_deref().and_then(crate::config::FileStamp::of);
        Ok(Authorization {
            file,
            current: std::sync::Mutex::new((bearer(token)?, stamp)),
        })
    }

    fn current(&self) -> HeaderValue {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(path) = &self.file {
            let stamp = crate::config::FileStamp::of(path);
            if stamp.is_some() && stamp != current.1 {
                let token = crate::config::read_token_file(path)
                    .and_then(crate::config::check_token)
                    .map_err(|e| e.to_string())
                    .and_then(|token| bearer(&token).map_err(|e| e.to_string()));
                match token {
                    Ok(header) => {
                        tracing::info!(file = %path.display(), "the token file changed: using the new token");
                        *current = (header, stamp);
                    }
                    Err(error) => {
                        tracing::warn!(
                            file = %path.display(),
                            error = %error,
                            "the token file changed but cannot be used; keeping the previous token"
                        );
                        current.1 = stamp;
                    }
                }
            }
        }
        current.0.clone()
    }
}

fn code_of(error: &FetchError) -> Code {
    match error {
        FetchError::Rejected(status) | FetchError::Status { status, .. } => {
            Code::Status(status.as_u16())
        }
        FetchError::Timeout(_) => Code::Timeout,
        FetchError::Connect(_) => Code::Connect,
        FetchError::TooLarge(_) | FetchError::Decode(_) => Code::Decode,
    }
}

/// Reads `Retry-After` in both forms: delta-seconds, or an HTTP date (a date already past means
/// no wait).
fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_read_as_seconds_or_as_an_http_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_784_000_000);
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(90));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(90))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(90));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
    }
}
