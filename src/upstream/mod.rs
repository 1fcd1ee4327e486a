//! The API client: authentication, timeouts, the body-size cap, and the request metrics.
//!
//! [`Client::call`] is the one way to ask the API: one endpoint, its decoding, retries of
//! transient failures ([`retry`], on [`FetchError::is_transient`]) until a deadline, and every
//! request and retry counted. [`Client::report`] is that call for one asset's report.

pub mod auth;
mod body;
pub mod date;
pub mod dto;
mod error;
mod json_array;
pub mod retry;
mod tls;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::BytesMut;
use reqwest::header;
use reqwest::{StatusCode, Url};

use crate::health::Health;
use crate::telemetry::Telemetry;
use crate::vocabulary::Failure;
use crate::vocabulary::{Code, Endpoint, Secret};
use auth::{Authorization, TokenError};
use dto::{AssetReport, DecodeError};
use retry::{RetryPolicy, parse_retry_after};

pub use body::{BATCH, BodyDecoder};
use body::{Body, Read, Whole};
pub use error::{Connection, FetchError};
pub use tls::{install_crypto_provider, tls_error, tls_in_words};

/// Most redirects followed within the configured origin.
const MAX_REDIRECTS: usize = 10;

/// The origin (`scheme://host:port`) a refused redirect pointed to.
#[derive(Debug)]
struct OffOrigin(String);

impl std::fmt::Display for OffOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a redirect to {}", self.0)
    }
}

impl std::error::Error for OffOrigin {}

/// Why a client cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The token cannot be sent.
    #[error("api.token: {0}")]
    Token(#[from] TokenError),
    /// The HTTP client (TLS) cannot be set up.
    #[error("cannot build the HTTP client: {0}")]
    Http(String),
}

/// A service that answers the API's requests inside this process (the simulated API's router):
/// no socket, so that a test on Tokio's paused clock sees only virtual time. Only the tests
/// turn on the `in-process` feature that allows one.
#[cfg(feature = "in-process")]
pub type InProcess = axum::Router;

/// Without the `in-process` feature, no request is answered inside the process.
#[cfg(not(feature = "in-process"))]
#[derive(Debug, Clone)]
pub enum InProcess {}

/// A client of one account of the API.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    /// When set, requests go to this service instead of over the network.
    in_process: Option<InProcess>,
    /// Base address with any trailing slash removed, so paths append cleanly.
    base: String,
    /// Where the account is configured (`api`, `accounts.NAME`), for messages that name its
    /// keys.
    section: String,
    /// The `Authorization` header; follows the token file when there is one.
    authorization: Arc<Authorization>,
    timeout: Duration,
    max_body_bytes: u64,
    /// How transient failures are retried.
    retry: RetryPolicy,
    /// Where requests and retries are counted.
    telemetry: Arc<Telemetry>,
    /// Where each answer's verdict on the token goes.
    health: Arc<Health>,
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
    /// How transient failures are retried.
    pub retry: RetryPolicy,
    /// Where the account is configured (`api`, `accounts.NAME`), for messages.
    pub section: String,
    /// Answers requests inside this process instead of over the network, when set.
    pub in_process: Option<InProcess>,
}

impl Client {
    /// Builds the client; fails only when the token cannot be a header value or TLS cannot be
    /// set up.
    pub fn new(
        options: ClientOptions,
        telemetry: Arc<Telemetry>,
        health: Arc<Health>,
    ) -> Result<Client, ClientError> {
        install_crypto_provider();
        let authorization = Arc::new(Authorization::new(&options.token, options.token_file)?);
        let origin = options.base_url.origin();
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.url().origin() != origin {
                let elsewhere = OffOrigin(attempt.url().origin().ascii_serialization());
                attempt.error(elsewhere)
            } else if attempt.previous().len() >= MAX_REDIRECTS {
                attempt.error(OffOrigin("a redirect loop".into()))
            } else {
                attempt.follow()
            }
        });
        let http = reqwest::Client::builder()
            .redirect(redirects)
            .user_agent(concat!("reputation-exporter/", env!("CARGO_PKG_VERSION")))
            .timeout(options.timeout)
            .connect_timeout(options.timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| ClientError::Http(e.to_string()))?;
        Ok(Client {
            http,
            in_process: options.in_process,
            base: options.base_url.as_str().trim_end_matches('/').to_owned(),
            section: options.section,
            authorization,
            timeout: options.timeout,
            max_body_bytes: options.max_body_bytes,
            retry: options.retry,
            telemetry,
            health,
        })
    }

    /// The key of this account's configuration that sets `key`: `api.base_url`, or
    /// `accounts.NAME.base_url`.
    pub fn setting(&self, key: &str) -> String {
        format!("{}.{key}", self.section)
    }

    /// The address `path` is requested at.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// GETs `path` of `endpoint` and decodes its body, retrying transient failures until they
    /// succeed, `backoff.max_elapsed` has passed, or the next attempt would start after
    /// `deadline`; `on_retry` hears of each failure that is retried, with the delay before the
    /// next attempt. Returns the last error.
    pub async fn call<T>(
        &self,
        endpoint: Endpoint,
        path: &str,
        deadline: tokio::time::Instant,
        decode: impl Fn(&[u8]) -> Result<T, DecodeError> + Clone + Send + 'static,
        on_retry: impl FnMut(&FetchError, Duration),
    ) -> Result<T, FetchError>
    where
        T: Send + 'static,
    {
        let whole = || Whole {
            body: BytesMut::new(),
            limit: self.max_body_bytes,
            decode: decode.clone(),
        };
        self.call_streaming(endpoint, path, deadline, whole, on_retry)
            .await
    }

    /// As [`Client::call`], decoding the body as it arrives with a decoder from `decoder`
    /// (a new one for each attempt): a list is never held whole.
    pub async fn call_streaming<D: BodyDecoder>(
        &self,
        endpoint: Endpoint,
        path: &str,
        deadline: tokio::time::Instant,
        decoder: impl Fn() -> D,
        on_retry: impl FnMut(&FetchError, Duration),
    ) -> Result<D::Output, FetchError> {
        self.retry
            .run(
                endpoint,
                deadline,
                &self.telemetry,
                || self.get(endpoint, path, decoder()),
                on_retry,
            )
            .await
    }

    /// One asset's report, by [`Client::call`]; a name that cannot be one path segment is
    /// refused without a request.
    pub async fn report(
        &self,
        name: &str,
        deadline: tokio::time::Instant,
        on_retry: impl FnMut(&FetchError, Duration),
    ) -> Result<AssetReport, FetchError> {
        let Some(path) = asset_path(name) else {
            return Err(FetchError::NotRequestable(name.to_owned()));
        };
        self.call(
            Endpoint::Asset,
            &path,
            deadline,
            dto::decode::<AssetReport>,
            on_retry,
        )
        .await
    }

    /// GETs one endpoint once and decodes its body, counting the request under the status it
    /// got, or `decode` when the body was unusable, or `timeout` / `connect` when there was no
    /// answer.
    async fn get<D: BodyDecoder>(
        &self,
        endpoint: Endpoint,
        path: &str,
        decoder: D,
    ) -> Result<D::Output, FetchError> {
        let started = Instant::now();
        let result = self.fetch(path, decoder).await;
        let (code, result) = match result {
            Ok(Ok(value)) => (Code::Status(200), Ok(value)),
            Ok(Err(e)) => (Code::Decode, Err(FetchError::Decode(e))),
            Err(e) => (e.failure().code(), Err(e)),
        };
        self.telemetry.request(endpoint, code, started.elapsed());
        match result.as_ref().map_err(FetchError::failure) {
            Ok(_) => self.health.auth(endpoint, true),
            Err(Failure::Rejected(_)) => self.health.auth(endpoint, false),
            Err(failure) if failure.answered() => self.health.auth(endpoint, true),
            Err(_) => {}
        }
        result
    }

    /// One request, its body fed to `decoder` as it arrives: the decoded value (or why the
    /// body could not be decoded), or why there was no usable answer.
    async fn fetch<D: BodyDecoder>(&self, path: &str, mut decoder: D) -> Read<D::Output> {
        let url = self.url(path);
        let response = match &self.in_process {
            Some(service) => self.send_in_process(service, &url).await?,
            None => self
                .http
                .get(url)
                .header(header::AUTHORIZATION, self.authorization.current())
                .header(header::ACCEPT, "application/json")
                .send()
                .await
                .map_err(|e| self.transport_error(e))?,
        };
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
        if let Some(length) = response.content_length() {
            if length > self.max_body_bytes {
                return Err(FetchError::TooLarge(self.max_body_bytes));
            }
            decoder.expect(length);
        }
        let body = Body {
            client: self,
            response,
            read: 0,
        };
        body.decode(decoder).await
    }

    /// One request answered by `service`, within `api.timeout` of Tokio's clock.
    #[cfg(not(feature = "in-process"))]
    async fn send_in_process(
        &self,
        service: &InProcess,
        _url: &str,
    ) -> Result<reqwest::Response, FetchError> {
        match *service {}
    }

    /// One request answered by `service`, within `api.timeout` of Tokio's clock.
    #[cfg(feature = "in-process")]
    async fn send_in_process(
        &self,
        service: &InProcess,
        url: &str,
    ) -> Result<reqwest::Response, FetchError> {
        use tower::ServiceExt as _;
        let request = axum::http::Request::get(url)
            .header(header::AUTHORIZATION, self.authorization.current())
            .header(header::ACCEPT, "application/json")
            .body(axum::body::Body::empty())
            .map_err(|e| FetchError::Connect {
                message: e.to_string(),
                connection: Connection::NotMade,
            })?;
        let answer = async {
            let response = match service.clone().oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            let (parts, body) = response.into_parts();
            let limit =
                usize::try_from(self.max_body_bytes.saturating_add(1)).unwrap_or(usize::MAX);
            let body = axum::body::to_bytes(body, limit)
                .await
                .map_err(|_| FetchError::TooLarge(self.max_body_bytes))?;
            Ok(reqwest::Response::from(axum::http::Response::from_parts(
                parts, body,
            )))
        };
        tokio::time::timeout(self.timeout, answer)
            .await
            .map_err(|_| FetchError::Timeout(self.timeout))?
    }

    fn transport_error(&self, error: reqwest::Error) -> FetchError {
        if error.is_timeout() {
            return FetchError::Timeout(self.timeout);
        }
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            if let Some(OffOrigin(origin)) = cause.downcast_ref::<OffOrigin>() {
                return FetchError::Redirect(origin.clone());
            }
            source = cause.source();
        }
        // reqwest's messages name the URL, which holds no secret; the header is never in them.
        let mut message = error.to_string();
        let mut connection = match error.is_connect() {
            true => Connection::NotMade,
            false => Connection::Broken,
        };
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            let io = cause.downcast_ref::<std::io::Error>();
            if io.is_some_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused) {
                connection = Connection::Refused;
            }
            if let Some(words) =
                tls_error(cause).and_then(|e| tls_in_words(e, &self.setting("base_url")))
            {
                return FetchError::Connect {
                    message: format!("{}: {words}", self.base),
                    connection: Connection::NotMade,
                };
            }
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        FetchError::Connect {
            message,
            connection,
        }
    }
}

/// What stays as it is in an asset's path segment: RFC 3986's unreserved characters
/// (`A-Z a-z 0-9 - . _ ~`); everything else is percent-encoded, `/`, `?`, `%` and `:` among them.
const PATH_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The path of one asset's report: the name percent-encoded as one path segment, so that
/// `../user` or `a/b?c` can only ever reach `/api/v1/asset/...`. `None` for the names no
/// encoding makes safe (`.`, `..`, empty): URL parsers resolve those, encoded or not, as "this"
/// or "parent" directory.
pub fn asset_path(name: &str) -> Option<String> {
    if matches!(name, "" | "." | "..") {
        return None;
    }
    let segment = percent_encoding::utf8_percent_encode(name, PATH_SEGMENT);
    Some(format!("{}{segment}", Endpoint::Asset.path()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_encoded_as_one_path_segment() {
        let segment = |name| asset_path(name).map(|p| p["/api/v1/asset/".len()..].to_owned());
        assert_eq!(segment("192.0.2.1").as_deref(), Some("192.0.2.1"));
        assert_eq!(segment("../user").as_deref(), Some("..%2Fuser"));
        assert_eq!(segment("a/b?c").as_deref(), Some("a%2Fb%3Fc"));
        assert_eq!(segment("2001:db8::1").as_deref(), Some("2001%3Adb8%3A%3A1"));
        assert_eq!(
            segment("bücher.example").as_deref(),
            Some("b%C3%BCcher.example")
        );
        assert_eq!(segment(".."), None);
        assert_eq!(segment("."), None);
        assert_eq!(segment(""), None);
    }
}
