//! The settings tree, its layering and its validation into typed values.
//!
//! Layers, later ones winning: built-in defaults, the TOML file (`--config.file`), environment
//! variables `REPUTATION_EXPORTER_<SECTION>__<KEY>`, then command-line flags. [`Settings`] is what
//! the layers deserialize into (strings as written); [`Config`] is what the rest of the program
//! uses (URLs, durations, socket addresses), produced by [`Settings::validate`], which names the
//! key of every value it refuses.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use figment::providers::{Env, Format, Serialized, Toml};
use figment::value::{Dict, Map};
use figment::{Figment, Metadata, Profile, Provider};
use serde::{Deserialize, Deserializer, Serialize};

use crate::upstream::retry::RetryPolicy;
use crate::web_config::WebConfigFile;

/// Prefix of the environment variables read as configuration.
pub const ENV_PREFIX: &str = "REPUTATION_EXPORTER_";

/// How often `/api/v1/user` is polled after the first time (DESIGN: at start, then hourly).
pub const USER_INTERVAL: Duration = Duration::from_secs(3600);

/// Command-line flags, named as in the Prometheus exporters' conventions.
#[derive(Debug, Default, Parser)]
#[command(name = "reputation-exporter", version, about)]
pub struct Cli {
    /// TOML configuration file.
    #[arg(long = "config.file", value_name = "FILE")]
    pub config_file: Option<PathBuf>,
    /// Address to listen on for the metrics endpoint [default: 0.0.0.0:9525].
    #[arg(long = "web.listen-address", value_name = "ADDR")]
    pub listen_address: Option<String>,
    /// Path under which the metrics are exposed [default: /metrics].
    #[arg(long = "web.telemetry-path", value_name = "PATH")]
    pub telemetry_path: Option<String>,
    /// Web configuration file (exporter-toolkit format): TLS, mutual TLS, basic auth, headers.
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config_file: Option<String>,
    /// Log level: error, warn, info, debug or trace [default: info].
    #[arg(long = "log.level", value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Log format: logfmt or json [default: logfmt].
    #[arg(long = "log.format", value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// Poll once, print the exposition to stdout, exit 0 when every endpoint answered.
    #[arg(long)]
    pub once: bool,
    /// Serve the built-in simulated API on loopback and export it; no account needed.
    #[arg(long)]
    pub demo: bool,
    /// Load and validate the configuration, print what is wrong or `ok`, and exit.
    #[arg(long = "config.check")]
    pub config_check: bool,
}

/// The configuration as written: every layer deserializes into this tree.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
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
}

/// `[api]`: where the upstream is and how to talk to it.
#[derive(Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiSettings {
    /// Base address; the `/api/v1/...` paths are appended to it.
    #[serde(deserialize_with = "string")]
    pub base_url: Option<String>,
    /// The bearer token itself. Prefer `token_file`.
    #[serde(deserialize_with = "string", skip_serializing)]
    pub token: Option<String>,
    /// A file holding the token; one trailing newline is ignored.
    #[serde(deserialize_with = "string")]
    pub token_file: Option<String>,
    /// Timeout of one whole request, body included.
    #[serde(deserialize_with = "string")]
    pub timeout: Option<String>,
    /// Largest response body accepted, in bytes.
    #[serde(deserialize_with = "lenient")]
    pub max_body_bytes: u64,
}

/// `[poll]`: the schedule of the list endpoints.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PollSettings {
    /// How often ip-list, domain-list and system-check are fetched.
    #[serde(deserialize_with = "string")]
    pub interval: Option<String>,
}

/// `[metrics]`: how long values outlive a failing upstream.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSettings {
    /// Age after which the asset series of a failing endpoint are dropped.
    #[serde(deserialize_with = "string")]
    pub max_age: Option<String>,
}

/// `[backoff]`: exponential backoff with full jitter on 503, other 5xx, timeouts and connection
/// errors.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BackoffSettings {
    /// Ceiling of the first retry's delay.
    #[serde(deserialize_with = "string")]
    pub initial_delay: Option<String>,
    /// Largest delay between two attempts; also bounds `Retry-After`.
    #[serde(deserialize_with = "string")]
    pub max_delay: Option<String>,
    /// Time after which a failing endpoint is given up until its next poll.
    #[serde(deserialize_with = "string")]
    pub max_elapsed: Option<String>,
}

/// `[asset_reports]`: one request per asset, off by default.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AssetReportSettings {
    /// Whether asset reports are fetched at all.
    #[serde(deserialize_with = "lenient")]
    pub enabled: bool,
    /// How often each selected asset's report is fetched.
    #[serde(deserialize_with = "string")]
    pub interval: Option<String>,
    /// Most report requests in flight at once.
    #[serde(deserialize_with = "lenient")]
    pub concurrency: usize,
    /// Only assets whose name matches this regular expression.
    #[serde(deserialize_with = "string")]
    pub include: Option<String>,
    /// No asset whose name matches this regular expression.
    #[serde(deserialize_with = "string")]
    pub exclude: Option<String>,
    /// `N/M`: this replica fetches the assets whose name hashes to N-1 modulo M.
    #[serde(deserialize_with = "string")]
    pub shard: Option<String>,
    /// IANA zone in which the API writes history dates.
    #[serde(deserialize_with = "string")]
    pub timezone: Option<String>,
}

/// `[web]`: the exporter's own endpoint.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSettings {
    /// Address to listen on; `:9525` means every interface.
    #[serde(deserialize_with = "string")]
    pub listen_address: Option<String>,
    /// Path of the metrics endpoint.
    #[serde(deserialize_with = "string")]
    pub telemetry_path: Option<String>,
    /// The exporter-toolkit web configuration file (TLS, basic auth, headers).
    #[serde(deserialize_with = "string")]
    pub config_file: Option<String>,
}

/// `[log]`: level and format of the log lines on stderr.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    /// `error`, `warn`, `info`, `debug` or `trace`.
    #[serde(deserialize_with = "string")]
    pub level: Option<String>,
    /// `logfmt` or `json`.
    #[serde(deserialize_with = "string")]
    pub format: Option<String>,
}

impl Default for PollSettings {
    fn default() -> Self {
        PollSettings {
            interval: Some("5m".into()),
        }
    }
}

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            max_age: Some("1h".into()),
        }
    }
}

impl Default for AssetReportSettings {
    fn default() -> Self {
        AssetReportSettings {
            enabled: false,
            interval: Some("1h".into()),
            concurrency: 4,
            include: None,
            exclude: None,
            shard: Some("1/1".into()),
            timezone: Some("UTC".into()),
        }
    }
}

impl Default for BackoffSettings {
    fn default() -> Self {
        BackoffSettings {
            initial_delay: Some("1s".into()),
            max_delay: Some("2m".into()),
            max_elapsed: Some("10m".into()),
        }
    }
}

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings {
            listen_address: Some("0.0.0.0:9525".into()),
            telemetry_path: Some("/metrics".into()),
            config_file: None,
        }
    }
}

impl Default for LogSettings {
    fn default() -> Self {
        LogSettings {
            level: Some("info".into()),
            format: Some("logfmt".into()),
        }
    }
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            base_url: None,
            token: None,
            token_file: None,
            timeout: Some("30s".into()),
            max_body_bytes: 256 * 1024 * 1024,
        }
    }
}

impl fmt::Debug for ApiSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiSettings")
            .field("base_url", &self.base_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("token_file", &self.token_file)
            .field("timeout", &self.timeout)
            .field("max_body_bytes", &self.max_body_bytes)
            .finish()
    }
}

/// A configuration the exporter refuses, with the key that holds the wrong value.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A value that is present but wrong.
    #[error("invalid configuration: {key}: {message}")]
    Invalid {
        /// Dotted key, as in the TOML file (`api.timeout`).
        key: &'static str,
        /// What is wrong and what would be right; never the token.
        message: String,
    },
    /// A layer that could not be read or does not fit the settings tree.
    #[error("invalid configuration: {0}")]
    Layer(String),
}

fn invalid(key: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key,
        message: message.into(),
    }
}

/// The validated configuration: what the rest of the program reads.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the data comes from.
    pub api: ApiConfig,
    /// Interval of the list poll loop.
    pub poll_interval: Duration,
    /// Age after which the values of a failing endpoint are no longer served.
    pub max_age: Duration,
    /// Retries of transient failures.
    pub retry: RetryPolicy,
    /// Per-asset reports.
    pub asset_reports: AssetReportsConfig,
    /// The exporter's own HTTP endpoint.
    pub web: WebConfig,
    /// Logging.
    pub log: LogConfig,
    /// Problems that do not stop the start, to log once logging runs.
    pub warnings: Vec<String>,
}

/// Which upstream to poll and how.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// A real account, or the built-in simulation.
    pub source: Source,
    /// Timeout of one whole request, body included.
    pub timeout: Duration,
    /// Largest response body accepted.
    pub max_body_bytes: u64,
}

/// The upstream the exporter polls.
#[derive(Debug, Clone)]
pub enum Source {
    /// A real account of the monitoring service.
    Remote {
        /// Base address, without a trailing slash.
        base_url: reqwest::Url,
        /// The bearer token.
        token: Secret,
        /// Where the token came from, when from a file: re-read when it changes.
        token_file: Option<PathBuf>,
    },
    /// `--demo`: the simulated API, started on loopback by the exporter itself.
    Demo,
}

/// Which asset reports are fetched, how often, and how their dates are read.
#[derive(Debug, Clone)]
pub struct AssetReportsConfig {
    /// Off by default: the one upstream cost that grows with the fleet.
    pub enabled: bool,
    /// Each selected asset is fetched once per interval, spread over it.
    pub interval: Duration,
    /// Most requests in flight at once.
    pub concurrency: usize,
    /// Only assets whose name matches.
    pub include: Option<regex::Regex>,
    /// No asset whose name matches.
    pub exclude: Option<regex::Regex>,
    /// This replica's share of the fleet.
    pub shard: Shard,
    /// Zone of the API's history dates.
    pub timezone: jiff::tz::TimeZone,
}

/// `N/M`: the assets whose name hashes to `N-1` modulo `M` (1-based, as people count replicas).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// N, from 1 to `count`.
    pub index: u64,
    /// M, at least 1.
    pub count: u64,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let wrong = || format!("`{text}` is not of the form N/M with 1 <= N <= M, e.g. 2/3");
        let (index, count) = text.trim().split_once('/').ok_or_else(wrong)?;
        let index: u64 = index.trim().parse().map_err(|_| wrong())?;
        let count: u64 = count.trim().parse().map_err(|_| wrong())?;
        if count == 0 || index == 0 || index > count {
            return Err(wrong());
        }
        Ok(Shard { index, count })
    }
}

/// The exporter's own endpoint.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// Address to bind.
    pub listen_address: SocketAddr,
    /// Path of the metrics endpoint, starting with `/`.
    pub telemetry_path: String,
    /// TLS, basic auth and headers from `web.config_file`; open when there is none.
    pub config_file: Arc<WebConfigFile>,
}

/// Logging settings.
#[derive(Debug, Clone, Copy)]
pub struct LogConfig {
    /// Most verbose level written.
    pub level: tracing::Level,
    /// Line format.
    pub format: LogFormat,
}

/// Line format of the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// `key=value` pairs, as the Prometheus tools write them.
    Logfmt,
    /// One JSON object a line.
    Json,
}

/// What tells that a file changed without reading it: modification time, size and inode (a
/// Kubernetes secret or an atomic rename swaps the inode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStamp {
    modified: Option<std::time::SystemTime>,
    len: u64,
    inode: u64,
}

impl FileStamp {
    /// The stamp of the file `path` names now (following links), if it can be read.
    pub fn of(path: &Path) -> Option<FileStamp> {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some(FileStamp {
            modified: meta.modified().ok(),
            len: meta.len(),
            inode,
        })
    }
}

/// A string that must never be shown: its `Debug` and `Display` print `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself, for the one place that needs it: the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Config {
    /// Loads every layer for these flags and validates the result.
    pub fn load(cli: &Cli) -> Result<Config, ConfigError> {
        Settings::load(cli)?.validate(cli.demo)
    }
}

impl Settings {
    /// Merges defaults, the TOML file, the environment and the flags.
    pub fn load(cli: &Cli) -> Result<Settings, ConfigError> {
        Self::figment(cli, std::env::vars())
            .extract()
            .map_err(|e| ConfigError::Layer(describe_figment_error(e)))
    }

    /// The layered figment for these flags and this environment (an iterator, so tests need not
    /// touch the process environment).
    pub fn figment(cli: &Cli, env: impl IntoIterator<Item = (String, String)>) -> Figment {
        let mut figment = Figment::from(Serialized::defaults(Settings::default()));
        if cli.demo {
            // The simulation moves every few seconds; a shorter default shows it.
            figment = figment.merge(Serialized::default("poll.interval", "15s"));
        }
        if let Some(file) = &cli.config_file {
            figment = figment.merge(Toml::file_exact(file));
        }
        figment = figment.merge(RawEnv::new(env));
        let flags = [
            ("web.listen_address", &cli.listen_address),
            ("web.telemetry_path", &cli.telemetry_path),
            ("web.config_file", &cli.web_config_file),
            ("log.level", &cli.log_level),
            ("log.format", &cli.log_format),
        ];
        for (key, value) in flags {
            if let Some(value) = value {
                figment = figment.merge(Serialized::default(key, value));
            }
        }
        figment
    }

    /// Checks every value and turns it into its typed form.
    pub fn validate(self, demo: bool) -> Result<Config, ConfigError> {
        let mut warnings = Vec::new();
        let source = if demo {
            Source::Demo
        } else {
            let token_file = self.api.token_file.as_deref().map(PathBuf::from);
            if let Some(problem) = token_file.as_deref().and_then(token_file_mode_problem) {
                if running_as_root_in_a_container() {
                    warnings.push(problem);
                } else {
                    return Err(invalid("api.token_file", problem));
                }
            }
            Source::Remote {
                base_url: base_url(self.api.base_url.as_deref())?,
                token: token(self.api.token, self.api.token_file.as_deref())?,
                token_file,
            }
        };
        let max_body_bytes = self.api.max_body_bytes;
        if max_body_bytes == 0 {
            return Err(invalid("api.max_body_bytes", "must be greater than 0"));
        }
        Ok(Config {
            api: ApiConfig {
                source,
                timeout: duration("api.timeout", self.api.timeout)?,
                max_body_bytes,
            },
            poll_interval: duration("poll.interval", self.poll.interval)?,
            max_age: duration("metrics.max_age", self.metrics.max_age)?,
            retry: retry_policy(self.backoff)?,
            asset_reports: asset_reports(self.asset_reports)?,
            web: WebConfig {
                listen_address: listen_address(self.web.listen_address.as_deref())?,
                telemetry_path: telemetry_path(self.web.telemetry_path)?,
                config_file: web_config_file(self.web.config_file.as_deref())?,
            },
            log: LogConfig {
                level: log_level(self.log.level.as_deref())?,
                format: log_format(self.log.format.as_deref())?,
            },
            warnings,
        })
    }
}

fn web_config_file(value: Option<&str>) -> Result<Arc<WebConfigFile>, ConfigError> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(WebConfigFile::none()),
        Some(path) => WebConfigFile::load(Path::new(path))
            .map_err(|e| invalid("web.config_file", format!("{path}: {e}"))),
    }
}

fn base_url(value: Option<&str>) -> Result<reqwest::Url, ConfigError> {
    const KEY: &str = "api.base_url";
    let value = value.ok_or_else(|| {
        invalid(
            KEY,
            "required (the address of the API, e.g. https://api.example.com), unless --demo",
        )
    })?;
    let url = reqwest::Url::parse(value.trim())
        .map_err(|e| invalid(KEY, format!("`{value}` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(invalid(KEY, format!("`{value}` is not an http(s) URL")));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(
            KEY,
            format!("`{value}` has a query or fragment; give the base address only"),
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            KEY,
            "holds credentials; put the token in api.token_file instead",
        ));
    }
    Ok(url)
}

fn token(token: Option<String>, file: Option<&str>) -> Result<Secret, ConfigError> {
    let value = match (token, file) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "api.token",
                "set only one of api.token and api.token_file",
            ));
        }
        (Some(token), None) => token,
        (None, Some(path)) => read_token_file(Path::new(path))?,
        (None, None) => {
            return Err(invalid(
                "api.token_file",
                "one of api.token_file and api.token is required, unless --demo",
            ));
        }
    };
    check_token(value)
}

/// Refuses a token that cannot be sent: empty, or with control characters.
pub fn check_token(value: String) -> Result<Secret, ConfigError> {
    if value.trim().is_empty() {
        return Err(invalid("api.token", "is empty"));
    }
    if value.chars().any(|c| c.is_control()) {
        return Err(invalid(
            "api.token",
            "holds a control character (a line break inside the token file?)",
        ));
    }
    Ok(Secret(value))
}

/// What is wrong with the token file's permissions: readable by every user.
#[cfg(unix)]
fn token_file_mode_problem(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(path).ok()?.permissions().mode();
    mode_problem(path, mode)
}

#[cfg(not(unix))]
fn token_file_mode_problem(_: &Path) -> Option<String> {
    None
}

fn mode_problem(path: &Path, mode: u32) -> Option<String> {
    (mode & 0o004 != 0).then(|| {
        format!(
            "{} is readable by every user (mode {:o}); make it readable by the exporter's user \
             only, e.g. chmod o-r {}",
            path.display(),
            mode & 0o777,
            path.display()
        )
    })
}

/// Root inside a container (Docker, Podman, Kubernetes) often cannot choose the mode of a
/// mounted secret; there a readable token file is a warning, not a refusal.
fn running_as_root_in_a_container() -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        // /proc/self belongs to the process' effective user.
        let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        let container = Path::new("/.dockerenv").exists()
            || Path::new("/run/.containerenv").exists()
            || std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
        root && container
    }
    #[cfg(not(unix))]
    false
}

/// Reads a token file, ignoring one trailing line break.
pub fn read_token_file(path: &Path) -> Result<String, ConfigError> {
    let content = std::fs::read_to_string(path).map_err(|e| {
        invalid(
            "api.token_file",
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    let content = content.strip_suffix('\n').unwrap_or(&content);
    let content = content.strip_suffix('\r').unwrap_or(content);
    Ok(content.to_owned())
}

fn duration(key: &'static str, value: Option<String>) -> Result<Duration, ConfigError> {
    let value = value.ok_or_else(|| invalid(key, "required"))?;
    let parsed = humantime::parse_duration(value.trim()).map_err(|e| {
        invalid(
            key,
            format!("`{value}` is not a duration ({e}); write e.g. 500ms, 30s, 5m or 1h"),
        )
    })?;
    if parsed.is_zero() {
        return Err(invalid(key, "must be longer than zero"));
    }
    Ok(parsed)
}

fn retry_policy(settings: BackoffSettings) -> Result<RetryPolicy, ConfigError> {
    let policy = RetryPolicy {
        initial_delay: duration("backoff.initial_delay", settings.initial_delay)?,
        max_delay: duration("backoff.max_delay", settings.max_delay)?,
        max_elapsed: duration("backoff.max_elapsed", settings.max_elapsed)?,
    };
    if policy.initial_delay > policy.max_delay {
        return Err(invalid(
            "backoff.initial_delay",
            "must not be longer than backoff.max_delay",
        ));
    }
    Ok(policy)
}

fn asset_reports(settings: AssetReportSettings) -> Result<AssetReportsConfig, ConfigError> {
    let pattern = |key: &'static str, value: Option<String>| {
        value
            .map(|v| {
                regex::Regex::new(&v)
                    .map_err(|e| invalid(key, format!("`{v}` is not a regular expression: {e}")))
            })
            .transpose()
    };
    if settings.concurrency == 0 {
        return Err(invalid("asset_reports.concurrency", "must be at least 1"));
    }
    let shard = settings.shard.unwrap_or_else(|| "1/1".into());
    let zone = settings.timezone.unwrap_or_else(|| "UTC".into());
    Ok(AssetReportsConfig {
        enabled: settings.enabled,
        interval: duration("asset_reports.interval", settings.interval)?,
        concurrency: settings.concurrency,
        include: pattern("asset_reports.include", settings.include)?,
        exclude: pattern("asset_reports.exclude", settings.exclude)?,
        shard: shard
            .parse()
            .map_err(|e| invalid("asset_reports.shard", e))?,
        timezone: jiff::tz::TimeZone::get(zone.trim()).map_err(|e| {
            invalid(
                "asset_reports.timezone",
                format!("`{zone}` is not an IANA time zone such as UTC or Europe/Berlin: {e}"),
            )
        })?,
    })
}

fn listen_address(value: Option<&str>) -> Result<SocketAddr, ConfigError> {
    const KEY: &str = "web.listen_address";
    let value = value.ok_or_else(|| invalid(KEY, "required"))?.trim();
    // `:9525` is the Prometheus tools' way of saying every interface.
    let full = match value.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => value.to_owned(),
    };
    full.parse().map_err(|_| {
        invalid(
            KEY,
            format!("`{value}` is not an address and port such as 0.0.0.0:9525 or [::1]:9525"),
        )
    })
}

fn telemetry_path(value: Option<String>) -> Result<String, ConfigError> {
    const KEY: &str = "web.telemetry_path";
    let value = value.ok_or_else(|| invalid(KEY, "required"))?;
    let reserved = ["/", "/-/healthy", "/-/ready"];
    if !value.starts_with('/') || value.contains(['?', '#', ' ']) {
        return Err(invalid(
            KEY,
            format!("`{value}` is not a path such as /metrics"),
        ));
    }
    if reserved.contains(&value.as_str()) {
        return Err(invalid(
            KEY,
            format!("`{value}` is taken by the exporter itself"),
        ));
    }
    Ok(value)
}

fn log_level(value: Option<&str>) -> Result<tracing::Level, ConfigError> {
    let value = value.unwrap_or("info");
    tracing::Level::from_str(value.trim()).map_err(|_| {
        invalid(
            "log.level",
            format!("`{value}` is not one of error, warn, info, debug, trace"),
        )
    })
}

fn log_format(value: Option<&str>) -> Result<LogFormat, ConfigError> {
    match value.map(str::trim) {
        None | Some("logfmt") => Ok(LogFormat::Logfmt),
        Some("json") => Ok(LogFormat::Json),
        Some(other) => Err(invalid(
            "log.format",
            format!("`{other}` is not one of logfmt, json"),
        )),
    }
}

/// figment's messages quote wrong values; the token must not be one of them.
fn describe_figment_error(error: figment::Error) -> String {
    error
        .into_iter()
        .map(|e| {
            let key = e.path.join(".");
            if key == "api.token" {
                format!("{key}: must be a string")
            } else {
                e.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Environment variables as configuration, every value kept as the string it is.
///
/// figment's own `Env` parses values as TOML-ish data, so a token such as `0123` or `true`
/// would change type or value; here every string key stays a string, and the few typed keys
/// accept their textual form through [`lenient`].
struct RawEnv {
    env: Env,
    vars: Vec<(String, String)>,
}

impl RawEnv {
    fn new(vars: impl IntoIterator<Item = (String, String)>) -> Self {
        RawEnv {
            env: Env::prefixed(ENV_PREFIX).split("__"),
            vars: vars
                .into_iter()
                .filter(|(k, _)| k.starts_with(ENV_PREFIX))
                .collect(),
        }
    }
}

impl Provider for RawEnv {
    fn metadata(&self) -> Metadata {
        self.env.metadata()
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        let mut merged = Figment::new();
        for (name, value) in &self.vars {
            let key = name[ENV_PREFIX.len()..]
                .to_ascii_lowercase()
                .replace("__", ".");
            // Only `<SECTION>__<KEY>` names are configuration; others with the prefix are not
            // ours to judge.
            if !key.contains('.') || key.split('.').any(str::is_empty) {
                continue;
            }
            merged = merged.merge(Serialized::default(&key, value));
        }
        merged.data()
    }
}

/// Accepts a string, or a number or boolean written where a string was meant.
fn string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    struct Visitor;
    impl serde::de::Visitor<'_> for Visitor {
        type Value = Option<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_owned()))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
    deserializer.deserialize_any(Visitor)
}

/// Accepts a typed value, or its textual form (as environment variables give it).
fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr + Deserialize<'de>,
    T::Err: fmt::Display,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either<T> {
        Typed(T),
        Text(String),
    }
    match Either::<T>::deserialize(deserializer)? {
        Either::Typed(value) => Ok(value),
        Either::Text(text) => text
            .trim()
            .parse()
            .map_err(|e| serde::de::Error::custom(format!("`{text}`: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn load(cli: &Cli, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let settings: Settings = Settings::figment(cli, env(vars))
            .extract()
            .map_err(|e| ConfigError::Layer(describe_figment_error(e)))?;
        settings.validate(cli.demo)
    }

    const REMOTE: &[(&str, &str)] = &[
        (
            "REPUTATION_EXPORTER_API__BASE_URL",
            "https://api.example.com",
        ),
        ("REPUTATION_EXPORTER_API__TOKEN", "t0ken"),
    ];

    #[test]
    fn defaults_match_the_design() {
        let config = load(&Cli::default(), REMOTE).unwrap();
        assert_eq!(config.api.timeout, Duration::from_secs(30));
        assert_eq!(config.api.max_body_bytes, 268_435_456);
        assert_eq!(config.poll_interval, Duration::from_secs(300));
        assert_eq!(config.max_age, Duration::from_secs(3600));
        assert_eq!(config.retry.initial_delay, Duration::from_secs(1));
        assert_eq!(config.retry.max_delay, Duration::from_secs(120));
        assert_eq!(config.retry.max_elapsed, Duration::from_secs(600));
        assert_eq!(
            config.web.listen_address,
            "0.0.0.0:9525".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(config.web.telemetry_path, "/metrics");
        assert_eq!(config.log.format, LogFormat::Logfmt);
    }

    #[test]
    fn a_token_that_looks_like_a_number_or_boolean_stays_the_exact_string() {
        for raw in ["0012", "true", "1e3", "[x]", "a=b#c", "  spaced  "] {
            let mut vars = REMOTE.to_vec();
            vars[1] = ("REPUTATION_EXPORTER_API__TOKEN", raw);
            let config = load(&Cli::default(), &vars).unwrap();
            let Source::Remote { token, .. } = config.api.source else {
                panic!("remote expected")
            };
            assert_eq!(token.expose(), raw);
        }
    }

    #[test]
    fn typed_keys_accept_their_textual_form_from_the_environment() {
        let mut vars = REMOTE.to_vec();
        vars.push(("REPUTATION_EXPORTER_API__MAX_BODY_BYTES", "1024"));
        vars.push(("REPUTATION_EXPORTER_POLL__INTERVAL", "90s"));
        let config = load(&Cli::default(), &vars).unwrap();
        assert_eq!(config.api.max_body_bytes, 1024);
        assert_eq!(config.poll_interval, Duration::from_secs(90));
    }

    #[test]
    fn asset_report_keys_are_validated_into_typed_values() {
        let mut vars = REMOTE.to_vec();
        vars.push(("REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED", "true"));
        vars.push(("REPUTATION_EXPORTER_ASSET_REPORTS__SHARD", "2/3"));
        vars.push(("REPUTATION_EXPORTER_ASSET_REPORTS__INCLUDE", "^192\\."));
        vars.push((
            "REPUTATION_EXPORTER_ASSET_REPORTS__TIMEZONE",
            "Europe/Berlin",
        ));
        let config = load(&Cli::default(), &vars).unwrap().asset_reports;
        assert!(config.enabled);
        assert_eq!(config.shard, Shard { index: 2, count: 3 });
        assert!(config.include.unwrap().is_match("192.0.2.1"));
        assert_eq!(config.concurrency, 4);
        assert_eq!(config.interval, Duration::from_secs(3600));

        for (key, value, named) in [
            (
                "REPUTATION_EXPORTER_ASSET_REPORTS__SHARD",
                "3/2",
                "asset_reports.shard",
            ),
            (
                "REPUTATION_EXPORTER_ASSET_REPORTS__SHARD",
                "0/1",
                "asset_reports.shard",
            ),
            (
                "REPUTATION_EXPORTER_ASSET_REPORTS__EXCLUDE",
                "(",
                "asset_reports.exclude",
            ),
            (
                "REPUTATION_EXPORTER_ASSET_REPORTS__TIMEZONE",
                "Mars/Base",
                "asset_reports.timezone",
            ),
            (
                "REPUTATION_EXPORTER_ASSET_REPORTS__CONCURRENCY",
                "0",
                "asset_reports.concurrency",
            ),
        ] {
            let mut vars = REMOTE.to_vec();
            vars.push((key, value));
            let message = load(&Cli::default(), &vars).unwrap_err().to_string();
            assert!(message.contains(named), "{value}: {message}");
        }
    }

    #[test]
    fn flags_override_the_environment() {
        let cli = Cli {
            listen_address: Some(":9999".into()),
            ..Cli::default()
        };
        let mut vars = REMOTE.to_vec();
        vars.push(("REPUTATION_EXPORTER_WEB__LISTEN_ADDRESS", "127.0.0.1:1"));
        let config = load(&cli, &vars).unwrap();
        assert_eq!(config.web.listen_address.to_string(), "0.0.0.0:9999");
    }

    #[test]
    fn a_bad_duration_names_its_key() {
        let mut vars = REMOTE.to_vec();
        vars.push(("REPUTATION_EXPORTER_API__TIMEOUT", "soon"));
        let message = load(&Cli::default(), &vars).unwrap_err().to_string();
        assert!(message.contains("api.timeout"), "{message}");
        assert!(message.contains("`soon`"), "{message}");
    }

    #[test]
    fn a_missing_base_url_is_refused_unless_demo() {
        let message = load(&Cli::default(), &[]).unwrap_err().to_string();
        assert!(message.contains("api.base_url"), "{message}");
        let demo = Cli {
            demo: true,
            ..Cli::default()
        };
        let config = load(&demo, &[]).unwrap();
        assert!(matches!(config.api.source, Source::Demo));
        assert_eq!(config.poll_interval, Duration::from_secs(15));
    }

    #[test]
    fn a_prefixed_variable_without_a_section_is_not_configuration() {
        let mut vars = REMOTE.to_vec();
        vars.push(("REPUTATION_EXPORTER_REVISION", "abc"));
        assert!(load(&Cli::default(), &vars).is_ok());
    }

    #[test]
    fn an_unknown_key_is_refused_with_its_name() {
        let mut vars = REMOTE.to_vec();
        vars.push(("REPUTATION_EXPORTER_API__TOKN", "x"));
        let message = load(&Cli::default(), &vars).unwrap_err().to_string();
        assert!(message.contains("tokn"), "{message}");
    }

    #[test]
    fn the_token_is_in_no_error_and_no_debug_output() {
        let mut vars = REMOTE.to_vec();
        vars[1] = ("REPUTATION_EXPORTER_API__TOKEN", "s3cr3t-value");
        vars.push(("REPUTATION_EXPORTER_API__TIMEOUT", "never"));
        let message = load(&Cli::default(), &vars).unwrap_err().to_string();
        assert!(!message.contains("s3cr3t-value"), "{message}");

        vars.pop();
        let settings: Settings = Settings::figment(&Cli::default(), env(&vars))
            .extract()
            .unwrap();
        assert!(!format!("{settings:?}").contains("s3cr3t-value"));
        let config = settings.validate(false).unwrap();
        assert!(!format!("{config:?}").contains("s3cr3t-value"));
    }

    #[test]
    fn a_token_file_readable_by_every_user_is_refused_with_the_remedy() {
        let path = Path::new("/etc/reputation-exporter/token");
        let problem = mode_problem(path, 0o100644).unwrap();
        assert!(problem.contains("mode 644"), "{problem}");
        assert!(
            problem.contains("chmod o-r /etc/reputation-exporter/token"),
            "{problem}"
        );
        assert_eq!(mode_problem(path, 0o100640), None);
        assert_eq!(mode_problem(path, 0o100600), None);
        assert_eq!(mode_problem(path, 0o100400), None);
    }

    #[test]
    fn a_token_file_loses_its_trailing_newline() {
        let dir = std::env::temp_dir().join(format!("rexp-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "abc\n").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let vars = [
            (
                "REPUTATION_EXPORTER_API__BASE_URL",
                "https://api.example.com",
            ),
            (
                "REPUTATION_EXPORTER_API__TOKEN_FILE",
                path.to_str().unwrap(),
            ),
        ];
        let config = load(&Cli::default(), &vars).unwrap();
        let Source::Remote { token, .. } = config.api.source else {
            panic!("remote expected")
        };
        assert_eq!(token.expose(), "abc");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_toml_example_is_valid_and_holds_the_defaults() {
        let cli = Cli {
            config_file: Some(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("config/reputation-exporter.toml"),
            ),
            ..Cli::default()
        };
        let from_file: Settings = Settings::figment(&cli, env(REMOTE)).extract().unwrap();
        let config = from_file.validate(false).unwrap();
        let defaults = load(&Cli::default(), REMOTE).unwrap();
        assert_eq!(config.api.timeout, defaults.api.timeout);
        assert_eq!(config.poll_interval, defaults.poll_interval);
        assert_eq!(config.max_age, defaults.max_age);
        assert_eq!(config.retry, defaults.retry);
        assert_eq!(config.web.listen_address, defaults.web.listen_address);
    }
}
