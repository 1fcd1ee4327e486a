//! The web configuration file (`--web.config.file`), in the format of Prometheus'
//! exporter-toolkit: TLS and mutual TLS through rustls ([`tls`]), basic auth with bcrypt hashes
//! ([`access`]), extra response headers ([`headers`]) and a request rate limit
//! ([`rate_limit`]).
//!
//! The file and the files it names are watched: when one changes, the whole set is read and
//! validated again, so certificates rotate without a restart. A change that does not validate
//! keeps the last good configuration and logs why.

mod access;
mod headers;
mod rate_limit;
mod tls;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Deserialize;

use crate::file_watch::{Change, Watched, stamps};
pub use access::Access;
pub use rate_limit::RateLimit;
use rate_limit::{Bucket, RateLimitSettings};
use tls::TlsSettings;

/// How often the files are checked for changes, at most.
pub const RECHECK: Duration = Duration::from_secs(1);

/// Why the web configuration file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WebConfigError {
    /// The file cannot be read.
    #[error("cannot read it: {0}")]
    Read(#[from] std::io::Error),
    /// It is not YAML of the expected shape (the message names the line).
    #[error("{0}")]
    Syntax(String),
    /// A value is wrong.
    #[error("{key}: {reason}")]
    Invalid {
        /// Its key, e.g. `tls_server_config.cert_file`.
        key: String,
        /// What is wrong with it, and what would be right.
        reason: String,
    },
}

impl WebConfigError {
    /// The value of `key` is wrong: `reason`.
    pub(crate) fn invalid(key: impl Into<String>, reason: impl Into<String>) -> Self {
        WebConfigError::Invalid {
            key: key.into(),
            reason: reason.into(),
        }
    }
}

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FileSettings {
    tls_server_config: Option<TlsSettings>,
    http_server_config: Option<HttpSettings>,
    basic_auth_users: Option<BTreeMap<String, String>>,
    rate_limit: Option<RateLimitSettings>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct HttpSettings {
    /// Accepted for compatibility; the exporter speaks HTTP/1.1 only.
    #[allow(dead_code)]
    http2: Option<bool>,
    headers: Option<BTreeMap<String, String>>,
}

/// The web configuration file, watched: [`WebConfigFile::current`] is its last good version.
pub struct WebConfigFile {
    path: Option<PathBuf>,
    access: Watched<Access>,
    /// One bcrypt check at a time: it is slow on purpose, and clients without credentials
    /// must not be able to take every core.
    bcrypt_turn: tokio::sync::Semaphore,
    /// The tokens of `rate_limit`, shared by every request.
    bucket: Bucket,
}

impl fmt::Debug for WebConfigFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebConfigFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Why a changed file is not taken.
#[derive(Debug)]
enum Refusal {
    Invalid(WebConfigError),
    TlsSwitch,
}

impl WebConfigFile {
    /// No file: plain HTTP, no authentication.
    pub fn none() -> Arc<WebConfigFile> {
        Arc::new(WebConfigFile {
            path: None,
            access: Watched::new(Access::open(), Vec::new(), RECHECK),
            bcrypt_turn: tokio::sync::Semaphore::new(1),
            bucket: Bucket::default(),
        })
    }

    /// Reads and validates the file at `path` and every file it names.
    pub fn load(path: &Path) -> Result<Arc<WebConfigFile>, WebConfigError> {
        let before = stamps(&[path.to_owned()]);
        let access = read(path)?;
        let mut watched = stamps(&access.files);
        watched[0] = before[0].clone();
        Ok(Arc::new(WebConfigFile {
            path: Some(path.to_owned()),
            access: Watched::new(access, watched, RECHECK),
            bcrypt_turn: tokio::sync::Semaphore::new(1),
            bucket: Bucket::default(),
        }))
    }

    /// Whether `user` and `password` are valid for `access`: at once for a pair that matched
    /// before, otherwise by bcrypt on a blocking thread.
    pub async fn verify(&self, access: &Arc<Access>, user: String, password: Vec<u8>) -> bool {
        if access.verified_before(&user, &password) {
            return true;
        }
        let Ok(_turn) = self.bcrypt_turn.acquire().await else {
            return false;
        };
        let access = access.clone();
        crate::task::spawn_blocking(move || access.check(&user, &password))
            .await
            .unwrap_or(false)
    }

    /// Whether `access`'s `rate_limit` lets one more request through now; if not, how long
    /// until it does.
    pub fn admit(&self, access: &Access) -> Result<(), Duration> {
        self.bucket.take(access.rate_limit)
    }

    /// The file's path, if there is one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The last good version of the file, read again first if one of its files changed (checked
    /// at most once a second).
    pub fn current(&self) -> Arc<Access> {
        let Some(path) = &self.path else {
            return self.access.current();
        };
        let (access, change) = self.access.check(|old| {
            let new = read(path).map_err(Refusal::Invalid)?;
            if new.tls.is_some() != old.tls.is_some() {
                return Err(Refusal::TlsSwitch);
            }
            let files = new.files.clone();
            Ok((new, files))
        });
        match change {
            Change::None => {}
            Change::Reloaded => {
                tracing::info!(file = %path.display(), "web configuration file reloaded");
            }
            Change::Refused(Refusal::TlsSwitch) => tracing::warn!(
                file = %path.display(),
                "the web configuration file changed between TLS and plain HTTP, which needs \
                 a restart; keeping the last good configuration"
            ),
            Change::Refused(Refusal::Invalid(error)) => tracing::warn!(
                file = %path.display(),
                error = %error,
                "the web configuration file changed but is invalid; keeping the last good \
                 configuration"
            ),
        }
        access
    }
}

/// Reads and validates one version of the file.
fn read(path: &Path) -> Result<Access, WebConfigError> {
    let text = std::fs::read_to_string(path)?;
    let settings: FileSettings = if text.trim().is_empty() {
        FileSettings::default()
    } else {
        // The first line says where and what; the rest is a source snippet.
        serde_saphyr::from_str(&text).map_err(|e| {
            let message = e.to_string();
            let first = message.lines().next().unwrap_or_default();
            WebConfigError::Syntax(first.strip_prefix("error: ").unwrap_or(first).to_owned())
        })?
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut files = vec![path.to_owned()];
    let tls = match settings.tls_server_config {
        Some(tls) if tls.is_enabled() => Some(Arc::new(tls::tls_config(tls, dir, &mut files)?)),
        _ => None,
    };
    let users = settings.basic_auth_users.unwrap_or_default();
    for (user, hash) in &users {
        hash.parse::<bcrypt::HashParts>().map_err(|e| {
            WebConfigError::invalid(
                format!("basic_auth_users.{user}"),
                format!(
                    "not a bcrypt hash ({e}); make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`"
                ),
            )
        })?;
    }
    let headers = headers::headers(
        settings
            .http_server_config
            .and_then(|h| h.headers)
            .unwrap_or_default(),
    )?;
    let rate_limit = match settings.rate_limit {
        Some(section) => section.validate()?,
        None => None,
    };
    Ok(Access {
        tls,
        users,
        headers,
        rate_limit,
        verified: Mutex::new(HashMap::new()),
        decoy: OnceLock::new(),
        files,
    })
}

#[cfg(test)]
mod tests;
