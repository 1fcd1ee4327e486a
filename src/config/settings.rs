//! The settings tree: one section per part of the exporter, every field typed, each read from
//! the layered figment by the helpers of [`super::parse`]; missing keys take the defaults below.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::parse;
use crate::logging::LogFormat;
use crate::poll::selection::Replica;
use crate::vocabulary::Secret;

/// The configuration as written: every layer deserializes into this tree.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// The upstream API.
    pub api: ApiSettings,
    /// The list poll loop.
    pub poll: PollSettings,
    /// Freshness rules of the served data.
    pub metrics: MetricsSettings,
    /// Retries of transient upstream failures.
    pub backoff: BackoffSettings,
    /// Per-asset reports (which blacklist, tags, history times).
    pub asset_reports: AssetReportSettings,
    /// The exporter's own HTTP server.
    pub web: WebSettings,
    /// Logging.
    pub log: LogSettings,
    /// What the exporter knows, kept on local disk across restarts.
    pub state: StateSettings,
    /// Several accounts, by name, each with the keys of `[api]`.
    pub accounts: BTreeMap<String, ApiSettings>,
    /// `[[blacklists]]`: lists added to the built-in table, or replacing one of its entries.
    pub blacklists: Vec<crate::blacklists::Entry>,
}

/// `[api]`: where the upstream is and how to talk to it (its `Debug` shows the token as
/// `<redacted>`, as [`Secret`]'s does).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiSettings {
    /// Base address; the `/api/v1/...` paths are appended to it.
    #[serde(deserialize_with = "parse::base_url")]
    pub base_url: Option<reqwest::Url>,
    /// The bearer token itself. Prefer `token_file`.
    #[serde(deserialize_with = "parse::secret")]
    pub token: Option<Secret>,
    /// A file holding the token; one trailing newline is ignored.
    #[serde(deserialize_with = "parse::path")]
    pub token_file: Option<PathBuf>,
    /// Timeout of one whole request, body included.
    #[serde(deserialize_with = "parse::duration")]
    pub timeout: Duration,
    /// Largest response body accepted, in bytes.
    #[serde(deserialize_with = "parse::lenient")]
    pub max_body_bytes: u64,
}

/// `[poll]`: the schedule of the list endpoints.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PollSettings {
    /// How often ip-list, domain-list and system-check are fetched.
    #[serde(deserialize_with = "parse::duration")]
    pub interval: Duration,
}

/// `[metrics]`: how long values outlive a failing upstream.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSettings {
    /// Age after which the asset series of a failing endpoint are dropped.
    #[serde(deserialize_with = "parse::duration")]
    pub max_age: Duration,
    /// Host names (and, separately, tags) kept per asset; the rest are dropped and counted.
    #[serde(deserialize_with = "parse::lenient")]
    pub max_labels_per_asset: usize,
    /// Shards of the per-asset series, each served on `?shard=I`.
    #[serde(deserialize_with = "parse::shards")]
    pub shards: usize,
}

/// `[backoff]`: exponential backoff with full jitter on 503, other 5xx, timeouts and connection
/// errors.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BackoffSettings {
    /// Ceiling of the first retry's delay.
    #[serde(deserialize_with = "parse::duration")]
    pub initial_delay: Duration,
    /// Largest delay between two attempts; also bounds `Retry-After`.
    #[serde(deserialize_with = "parse::duration")]
    pub max_delay: Duration,
    /// Time after which a failing endpoint is given up until its next poll.
    #[serde(deserialize_with = "parse::duration")]
    pub max_elapsed: Duration,
}

/// `[asset_reports]`: one request per asset; by default those of the listed assets only.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AssetReportSettings {
    /// The whole-fleet round: every selected asset's report (its tags, the blacklists behind
    /// an unchanged count), off by default.
    #[serde(deserialize_with = "parse::lenient")]
    pub enabled: bool,
    /// The reports of the assets the lists show listed (and of those the reports name as
    /// listed), refreshed each round, and those a list's change makes behind: on by default,
    /// so that a page names the blacklist at a cost that follows the listings.
    #[serde(deserialize_with = "parse::lenient")]
    pub listed: bool,
    /// How often each selected asset's report is fetched.
    #[serde(deserialize_with = "parse::duration")]
    pub interval: Duration,
    /// Most report requests in flight at once.
    #[serde(deserialize_with = "parse::lenient")]
    pub concurrency: usize,
    /// Only assets whose name matches this regular expression.
    #[serde(deserialize_with = "parse::regex")]
    pub include: Option<regex::Regex>,
    /// No asset whose name matches this regular expression.
    #[serde(deserialize_with = "parse::regex")]
    pub exclude: Option<regex::Regex>,
    /// `N/M`: this is replica N of M, and fetches the reports of the assets whose name hashes
    /// to N-1 modulo M. Formerly `asset_reports.shard`, a name still read.
    #[serde(alias = "shard", deserialize_with = "parse::from_str")]
    pub replica: Replica,
    /// IANA zone in which the API writes history dates.
    #[serde(deserialize_with = "parse::timezone")]
    pub timezone: jiff::tz::TimeZone,
}

/// `[web]`: the exporter's own endpoint.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSettings {
    /// Addresses to listen on (one, or a list); `:9525` means every interface.
    #[serde(deserialize_with = "parse::listen_addresses")]
    pub listen_address: Vec<SocketAddr>,
    /// Serve on the sockets systemd passes (socket activation) instead of `listen_address`.
    #[serde(deserialize_with = "parse::lenient")]
    pub systemd_socket: bool,
    /// Path of the metrics endpoint.
    #[serde(deserialize_with = "parse::string")]
    pub telemetry_path: String,
    /// The exporter-toolkit web configuration file (TLS, basic auth, headers).
    #[serde(deserialize_with = "parse::path")]
    pub config_file: Option<PathBuf>,
}

/// `[log]`: level and format of the log lines on stderr.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    /// `error`, `warn`, `info`, `debug` or `trace`.
    #[serde(deserialize_with = "parse::level")]
    pub level: tracing::Level,
    /// `logfmt` or `json`.
    #[serde(deserialize_with = "parse::log_format")]
    pub format: LogFormat,
}

/// `[state]`: the store on local disk that a restart starts from.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StateSettings {
    /// Whether the lists and reports are kept on disk.
    #[serde(deserialize_with = "parse::lenient")]
    pub enabled: bool,
    /// The directory (one directory per account under it); by default systemd's
    /// `$STATE_DIRECTORY`, else `/var/lib/reputation-exporter` where that can be written, else
    /// the user's `$XDG_STATE_HOME/reputation-exporter` (`~/.local/state/...`).
    #[serde(deserialize_with = "parse::path")]
    pub path: Option<PathBuf>,
}

impl Default for StateSettings {
    fn default() -> Self {
        StateSettings {
            enabled: true,
            path: None,
        }
    }
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            base_url: None,
            token: None,
            token_file: None,
            timeout: Duration::from_secs(30),
            // A million-asset list is some 600 MB; a list is decoded as it arrives, never held,
            // so this only bounds an endless body.
            max_body_bytes: 2 * 1024 * 1024 * 1024,
        }
    }
}

impl Default for PollSettings {
    fn default() -> Self {
        PollSettings {
            interval: Duration::from_secs(300),
        }
    }
}

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            max_age: Duration::from_secs(3600),
            max_labels_per_asset: 64,
            shards: 1,
        }
    }
}

impl Default for BackoffSettings {
    fn default() -> Self {
        BackoffSettings {
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(120),
            max_elapsed: Duration::from_secs(600),
        }
    }
}

impl Default for AssetReportSettings {
    fn default() -> Self {
        AssetReportSettings {
            enabled: false,
            listed: true,
            // Reports follow the list: a round only refreshes what changes without the list
            // saying so (tags, the blacklists behind an unchanged count).
            interval: Duration::from_secs(6 * 3600),
            concurrency: 4,
            include: None,
            exclude: None,
            replica: Replica { index: 1, count: 1 },
            timezone: jiff::tz::TimeZone::UTC,
        }
    }
}

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings {
            listen_address: vec![SocketAddr::from(([0, 0, 0, 0], 9525))],
            systemd_socket: false,
            telemetry_path: "/metrics".into(),
            config_file: None,
        }
    }
}

impl Default for LogSettings {
    fn default() -> Self {
        LogSettings {
            level: tracing::Level::INFO,
            format: LogFormat::Logfmt,
        }
    }
}
