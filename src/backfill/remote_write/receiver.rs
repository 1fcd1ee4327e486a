//! The receiver: its address and credentials from the flags, checked before anything is
//! fetched, and one request posted as remote-write 1.0 says.
//!
//! The receiver's credentials live in this client only, and the API's token in the API's client
//! only: neither ever reaches the other's server, and no message shows either.

use std::path::Path;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};

use crate::config::cli::RemoteWriteArgs;
use crate::upstream::auth::{check_token, read_token_file};
use crate::upstream::retry::Transient;
use crate::upstream::{install_crypto_provider, parse_retry_after, tls_error, tls_in_words};
use crate::vocabulary::parse_duration;

/// Headers the exporter sets itself, or that only the credential flags may set: as
/// Prometheus' `remote_write.headers` reserves them.
const RESERVED: [&str; 14] = [
    "authorization",
    "host",
    "content-encoding",
    "content-length",
    "content-type",
    "user-agent",
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "www-authenticate",
    "accept-encoding",
    "x-prometheus-remote-write-version",
    "x-prometheus-scrape-timeout-seconds",
];

/// Most of a refusal's body kept for the message.
const MESSAGE_BYTES: usize = 1024;

/// The receiver as the flags describe it, checked.
#[derive(Debug, Clone)]
pub struct Settings {
    url: Url,
    shown: String,
    headers: HeaderMap,
    roots: Option<Vec<reqwest::Certificate>>,
    timeout: Duration,
}

impl Settings {
    /// The receiver `--remote-write` names, with its options; `None` without the flag.
    pub fn from_args(args: &RemoteWriteArgs) -> Result<Option<Settings>, String> {
        let Some(url) = &args.url else {
            return Ok(None);
        };
        let url = Url::parse(url).map_err(|e| format!("--remote-write {url}: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "--remote-write {url}: the scheme must be http or https, not {}",
                url.scheme()
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("--remote-write: the URL holds credentials; give them with \
                 --remote-write.basic-auth-username and --remote-write.basic-auth-password-file \
                 (a URL is shown in messages, a password file never is)"
                .into());
        }
        let mut shown = url.clone();
        shown.set_query(None);
        let shown = shown.to_string();
        let mut headers = HeaderMap::new();
        for text in &args.headers {
            let (name, value) = header(text)?;
            headers.append(name, value);
        }
        if let Some(file) = &args.bearer_token_file {
            let token = secret(file, "--remote-write.bearer-token-file")?;
            headers.insert(
                header::AUTHORIZATION,
                sensitive(
                    &format!("Bearer {token}"),
                    "--remote-write.bearer-token-file",
                )?,
            );
        }
        if let Some(user) = &args.basic_auth_username {
            if user.contains(':') {
                return Err(format!(
                    "--remote-write.basic-auth-username {user}: a user name cannot hold `:`"
                ));
            }
            let file = args.basic_auth_password_file.as_deref().ok_or(
                "--remote-write.basic-auth-username needs --remote-write.basic-auth-password-file",
            )?;
            let password = secret(file, "--remote-write.basic-auth-password-file")?;
            use base64::Engine as _;
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            headers.insert(
                header::AUTHORIZATION,
                sensitive(
                    &format!("Basic {encoded}"),
                    "--remote-write.basic-auth-password-file",
                )?,
            );
        }
        let roots = args
            .ca_file
            .as_deref()
            .map(|file| {
                let pem = std::fs::read(file).map_err(|e| {
                    format!(
                        "--remote-write.ca-file: cannot read {}: {e}",
                        file.display()
                    )
                })?;
                match reqwest::Certificate::from_pem_bundle(&pem) {
                    Ok(certs) if !certs.is_empty() => Ok(certs),
                    _ => Err(format!(
                        "--remote-write.ca-file: {} holds no PEM certificate",
                        file.display()
                    )),
                }
            })
            .transpose()?;
        let timeout =
            parse_duration(&args.timeout).map_err(|e| format!("--remote-write.timeout {e}"))?;
        if timeout.is_zero() {
            return Err("--remote-write.timeout: must be longer than 0s".into());
        }
        Ok(Some(Settings {
            url,
            shown,
            headers,
            roots,
            timeout,
        }))
    }
}

/// `--remote-write.header 'NAME: VALUE'`, checked.
fn header(text: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (name, value) = text.split_once(':').ok_or_else(|| {
        format!(
            "--remote-write.header {text}: write it as 'NAME: VALUE', e.g. 'X-Scope-OrgID: mail'"
        )
    })?;
    let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
        format!(
            "--remote-write.header: `{}` is not a header name",
            name.trim()
        )
    })?;
    if RESERVED.contains(&name.as_str()) {
        return Err(format!(
            "--remote-write.header: {name} is set by the exporter itself{}",
            if name == header::AUTHORIZATION {
                "; give credentials with --remote-write.bearer-token-file or \
                 --remote-write.basic-auth-username"
            } else {
                ""
            }
        ));
    }
    let value = sensitive(value.trim(), &format!("--remote-write.header {name}"))?;
    Ok((name, value))
}

/// A header value no debug output shows.
fn sensitive(text: &str, flag: &str) -> Result<HeaderValue, String> {
    let mut value = HeaderValue::from_str(text)
        .map_err(|_| format!("{flag}: holds characters that cannot be sent in a header"))?;
    value.set_sensitive(true);
    Ok(value)
}

/// A secret from a file: one trailing line break ignored, empty or control characters refused.
fn secret(file: &Path, flag: &str) -> Result<String, String> {
    let text = read_token_file(file).map_err(|e| format!("{flag}: {e}"))?;
    check_token(text)
        .map(|secret| secret.expose().to_owned())
        .map_err(|e| format!("{flag}: the secret in {} {e}", file.display()))
}

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
    #[error("cannot reach the receiver: {0}")]
    Connect(String),
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
                // A 5xx that says the samples are too old says it again however often asked.
                (status.is_server_error() && !too_old(message))
                    || *status == StatusCode::TOO_MANY_REQUESTS
            }
            SendError::Timeout(_) | SendError::Connect(_) => true,
            SendError::Tls(_) | SendError::Encode(_) => false,
        }
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
            StatusCode::NOT_FOUND => Some(
                "The receiver has no such path: Prometheus takes /api/v1/write (started with \
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

impl Receiver {
    /// A client for `settings`' receiver; fails only when TLS cannot be set up.
    pub fn new(settings: Settings) -> Result<Receiver, String> {
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
        let http = builder
            .build()
            .map_err(|e| format!("--remote-write: cannot set up the client: {e}"))?;
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
        let mut response = self
            .http
            .post(self.url.clone())
            .body(body)
            .send()
            .await
            .map_err(|e| self.transport_error(e))?;
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

    fn transport_error(&self, error: reqwest::Error) -> SendError {
        if error.is_timeout() {
            return SendError::Timeout(self.timeout);
        }
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
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        SendError::Connect(message)
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

    fn args(url: &str) -> RemoteWriteArgs {
        RemoteWriteArgs {
            url: Some(url.to_owned()),
            timeout: "30s".into(),
            ..RemoteWriteArgs::default()
        }
    }

    #[test]
    fn headers_are_checked_and_reserved_ones_refused() {
        let mut given = args("http://127.0.0.1:9090/api/v1/write");
        given.headers = vec!["X-Scope-OrgID: team-mail".into()];
        let settings = Settings::from_args(&given).unwrap().unwrap();
        assert_eq!(settings.headers["x-scope-orgid"], "team-mail");
        assert!(settings.headers["x-scope-orgid"].is_sensitive());
        for (bad, says) in [
            ("X-Scope-OrgID", "write it as 'NAME: VALUE'"),
            (
                "Authorization: Bearer x",
                "--remote-write.bearer-token-file",
            ),
            ("Content-Encoding: gzip", "set by the exporter itself"),
            ("Bad Name: x", "is not a header name"),
        ] {
            given.headers = vec![bad.into()];
            let error = Settings::from_args(&given).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn a_url_with_credentials_or_another_scheme_is_refused_without_showing_them() {
        let error =
            Settings::from_args(&args("http://me:hunter2@127.0.0.1/api/v1/write")).unwrap_err();
        assert!(!error.contains("hunter2"), "{error}");
        assert!(
            error.contains("--remote-write.basic-auth-username"),
            "{error}"
        );
        let error = Settings::from_args(&args("ftp://127.0.0.1/")).unwrap_err();
        assert!(error.contains("http or https"), "{error}");
        assert!(
            Settings::from_args(&RemoteWriteArgs::default())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn credential_files_become_an_authorization_header_no_debug_output_shows() {
        let dir = std::env::temp_dir().join(format!("rexp-rw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let token = dir.join("token");
        std::fs::write(&token, "s3cret-rw\n").unwrap();
        let mut given = args("https://mimir.example/api/v1/push");
        given.bearer_token_file = Some(token.clone());
        let settings = Settings::from_args(&given).unwrap().unwrap();
        assert_eq!(settings.headers[header::AUTHORIZATION], "Bearer s3cret-rw");
        assert!(!format!("{settings:?}").contains("s3cret"));

        let mut given = args("https://mimir.example/api/v1/push");
        given.basic_auth_username = Some("mail".into());
        given.basic_auth_password_file = Some(token.clone());
        let settings = Settings::from_args(&given).unwrap().unwrap();
        // base64("mail:s3cret-rw")
        assert_eq!(
            settings.headers[header::AUTHORIZATION],
            "Basic bWFpbDpzM2NyZXQtcnc="
        );

        std::fs::write(&token, "\n").unwrap();
        let error = Settings::from_args(&given).unwrap_err();
        assert_eq!(
            error,
            format!(
                "--remote-write.basic-auth-password-file: the secret in {} is empty",
                token.display()
            )
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

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
        assert!(SendError::Connect("refused".into()).is_transient());
        assert!(SendError::Timeout(Duration::from_secs(30)).is_transient());
        assert!(!answer(400, "bad").is_transient());
        assert!(!answer(401, "").is_transient());
        assert!(!answer(500, "too old sample").is_transient());
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
