//! The configuration: layered, deserialized into the typed [`Settings`] tree, and validated into
//! the [`Config`] the exporter is built from.
//!
//! Layers, later ones winning: built-in defaults, the TOML file (`--config.file`), environment
//! variables `REPUTATION_EXPORTER_<SECTION>__<KEY>` ([`env`]), then command-line flags
//! ([`cli`]). Every value is parsed where it is read ([`parse`]), so a wrong one is refused with
//! its key; [`Settings::validate`] then checks what involves several keys.

mod check;
pub mod cli;
mod env;
mod parse;
pub mod settings;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use figment::providers::{Format, Serialized, Toml};
use figment::{Figment, Provider as _};

use crate::logging::LogFormat;
use crate::poll::reports::ReportSchedule;
use crate::poll::selection::Selection;
use crate::upstream::auth::{self, TokenError};
use crate::upstream::retry::RetryPolicy;
use crate::vocabulary::Secret;
use crate::web_config::WebConfigFile;
pub use cli::Cli;
pub use env::ENV_PREFIX;
use env::RawEnv;
pub use settings::Settings;

/// A configuration the exporter refuses: every problem found in one pass, each naming its
/// file, variable or flag and its key.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration:{}", list(.0))]
pub struct ConfigError(Vec<Problem>);

impl ConfigError {
    /// The problems, in the order they were found: unknown keys, wrong values, then what
    /// involves several keys.
    pub fn problems(&self) -> &[Problem] {
        &self.0
    }
}

/// One thing wrong with the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Dotted key it is about, as in the TOML file (`api.timeout`, `accounts.eu.token_file`);
    /// empty when it is about a whole file.
    pub key: String,
    /// What is wrong and what would be right, with where it was written; never the token.
    pub text: String,
}

/// One problem on the same line, several one per line; a reason of several lines (a regular
/// expression's error) is indented under its item, and no line ends in a space.
fn list(problems: &[Problem]) -> String {
    let indent = |text: &str, by: &str| {
        text.lines()
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join(&format!("\n{by}"))
    };
    match problems {
        [one] if !one.text.contains('\n') => format!(" {}", one.text.trim_end()),
        many => many
            .iter()
            .map(|p| format!("\n  - {}", indent(&p.text, "    ")))
            .collect(),
    }
}

/// A problem with a value, said as `key: message`.
fn invalid(key: impl Into<String>, message: impl std::fmt::Display) -> Problem {
    let key = key.into();
    Problem {
        text: format!("{key}: {message}"),
        key,
    }
}

/// The validated configuration: what the exporter is built from.
#[derive(Debug, Clone)]
pub struct Config {
    /// Every account polled: the one of `[api]` or `--demo` (without a name), or each of
    /// `[accounts.NAME]` (in name order). Never empty.
    pub accounts: Vec<Account>,
    /// Interval of the list poll loop.
    pub poll_interval: Duration,
    /// Age after which the values of a failing endpoint are no longer served.
    pub max_age: Duration,
    /// Host names (and, separately, tags) kept per asset.
    pub max_labels_per_asset: usize,
    /// Retries of transient failures.
    pub retry: RetryPolicy,
    /// Per-asset reports, polled when `asset_reports.enabled`; their selection, zone and
    /// concurrency also rule `backfill`.
    pub asset_reports: ReportSchedule,
    /// Whether the exporter polls asset reports.
    pub asset_reports_enabled: bool,
    /// The exporter's own HTTP endpoint.
    pub web: WebConfig,
    /// Logging.
    pub log: LogConfig,
    /// Problems that do not stop the start, to log once logging runs.
    pub warnings: Vec<String>,
}

/// Which upstream to poll and how.
#[derive(Debug, Clone, PartialEq)]
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
        /// Base address.
        base_url: reqwest::Url,
        /// The bearer token.
        token: Secret,
        /// Where the token came from, when from a file: re-read when it changes.
        token_file: Option<PathBuf>,
    },
    /// `--demo`: the simulated API, started on loopback by the exporter itself.
    Demo,
}

/// Two sources are the same account when they reach the same API with the same token, or with
/// the token of the same file (whose content the client follows by itself).
impl PartialEq for Source {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Source::Demo, Source::Demo) => true,
            (
                Source::Remote {
                    base_url,
                    token,
                    token_file,
                },
                Source::Remote {
                    base_url: other_url,
                    token: other_token,
                    token_file: other_file,
                },
            ) => {
                base_url == other_url
                    && token_file == other_file
                    && (token_file.is_some() || token == other_token)
            }
            _ => false,
        }
    }
}

/// One account: `[api]` (or `--demo`), or one of `[accounts.NAME]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    /// NAME, the target of `/probe?target=NAME`; `None` for the one account of `[api]` or
    /// `--demo`, served on `/metrics`.
    pub name: Option<String>,
    /// Its API, token and limits.
    pub api: ApiConfig,
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

impl Config {
    /// Whether the data comes from `--demo`'s simulated API.
    pub fn demo(&self) -> bool {
        self.accounts.iter().any(|a| a.api.source == Source::Demo)
    }

    /// Loads every layer for these flags and validates the result.
    pub fn load(cli: &Cli) -> Result<Config, ConfigError> {
        Self::load_with(cli, std::env::vars())
    }

    /// [`Config::load`] with this environment (an iterator, so tests need not touch the
    /// process environment). Every problem is found in one pass: the layers' (unknown keys,
    /// wrong values) and, on what is left of the settings, those that involve several keys
    /// (a missing `api.base_url`), except where a key already has one or a file could not be
    /// read at all.
    pub fn load_with(
        cli: &Cli,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let (settings, mut problems) = Settings::extract(cli, env);
        if problems.iter().any(|p| p.key.is_empty()) {
            // A file that cannot be read: what it holds is unknown, so what seems missing may
            // well be in it.
            return Err(ConfigError(problems));
        }
        let config = match settings.validate(cli.demo) {
            Ok(config) => config,
            Err(ConfigError(more)) => {
                let said = |key: &str| problems.iter().any(|p: &Problem| p.key == key);
                let more: Vec<Problem> = more.into_iter().filter(|p| !said(&p.key)).collect();
                problems.extend(more);
                return Err(ConfigError(problems));
            }
        };
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError(problems))
        }
    }
}

impl Settings {
    /// Merges defaults, the TOML file, the environment and the flags: the settings with every
    /// wrong or unknown value left out (so at its default), and what was wrong.
    pub fn extract(
        cli: &Cli,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> (Settings, Vec<Problem>) {
        let env: Vec<(String, String)> = env
            .into_iter()
            .filter(|(name, _)| name.starts_with(ENV_PREFIX))
            .collect();
        let mut problems = Vec::new();
        if let Some(file) = &cli.config_file {
            if let Err(error) = std::fs::metadata(file) {
                let text = format!("--config.file {}: {error}", file.display());
                problems.push(Problem {
                    key: String::new(),
                    text,
                });
                return (Settings::default(), problems);
            }
            match Toml::file_exact(file).data() {
                Ok(data) => problems.extend(check::unknown_in_file(file, &check::top_level(data))),
                Err(error) => problems.push(Problem {
                    key: String::new(),
                    text: format!("{}: {}", file.display(), error.kind),
                }),
            }
        }
        problems.extend(check::unknown_in_env(&env));
        let figment = Self::figment(cli, env);
        // Section by section, so that a wrong value in one does not hide another's; what is
        // left of each makes the settings.
        let mut usable = figment::value::Dict::new();
        let mut take = |name: &str, dict| {
            usable.insert(name.to_owned(), dict);
        };
        take(
            "api",
            section::<settings::ApiSettings>(&figment, "api", &mut problems),
        );
        take(
            "poll",
            section::<settings::PollSettings>(&figment, "poll", &mut problems),
        );
        take(
            "metrics",
            section::<settings::MetricsSettings>(&figment, "metrics", &mut problems),
        );
        take(
            "backoff",
            section::<settings::BackoffSettings>(&figment, "backoff", &mut problems),
        );
        take(
            "asset_reports",
            section::<settings::AssetReportSettings>(&figment, "asset_reports", &mut problems),
        );
        take(
            "web",
            section::<settings::WebSettings>(&figment, "web", &mut problems),
        );
        take(
            "log",
            section::<settings::LogSettings>(&figment, "log", &mut problems),
        );
        take(
            "accounts",
            section::<std::collections::BTreeMap<String, settings::ApiSettings>>(
                &figment,
                "accounts",
                &mut problems,
            ),
        );
        let settings = Figment::from(Serialized::defaults(usable))
            .extract()
            .unwrap_or_else(|errors: figment::Error| {
                problems.extend(check::describe(errors));
                Settings::default()
            });
        (settings, problems)
    }

    /// The layered figment for these flags and this environment; what is not in it takes the
    /// defaults of [`settings`].
    pub fn figment(cli: &Cli, env: impl IntoIterator<Item = (String, String)>) -> Figment {
        let mut figment = Figment::new();
        if cli.demo {
            // The simulation moves every few seconds; a shorter default shows it, and asset
            // reports fill the dashboard's blacklist panels within a minute. The file, the
            // environment and the flags can still change both.
            figment = figment
                .merge(Serialized::default("poll.interval", "15s"))
                .merge(Serialized::default("asset_reports.enabled", true))
                .merge(Serialized::default("asset_reports.interval", "30s"));
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

    /// Checks what involves several keys, and builds what each section configures; every
    /// problem is reported, not only the first.
    pub fn validate(self, demo: bool) -> Result<Config, ConfigError> {
        let mut problems = Vec::new();
        let mut warnings = Vec::new();
        if !self.accounts.is_empty() {
            let api = &self.api;
            if demo {
                problems.push(invalid(
                    "accounts",
                    "--demo has one account; remove [accounts.*]",
                ));
            } else if api.base_url.is_some() || api.token.is_some() || api.token_file.is_some() {
                problems.push(invalid(
                    "accounts",
                    "set either [api] (one account, served on /metrics) or [accounts.NAME] \
                     (several, served on /probe?target=NAME), not both",
                ));
            }
        }
        if self.api.max_body_bytes == 0 {
            problems.push(invalid("api.max_body_bytes", "must be greater than 0"));
        }
        let mut accounts = Vec::with_capacity(self.accounts.len().max(1));
        if self.accounts.is_empty() {
            let source = if demo {
                Some(Source::Demo)
            } else {
                remote(&self.api, "api", &mut warnings, &mut problems)
            };
            if let Some(source) = source {
                accounts.push(Account {
                    name: None,
                    api: ApiConfig {
                        source,
                        timeout: self.api.timeout,
                        max_body_bytes: self.api.max_body_bytes,
                    },
                });
            }
        }
        for (name, settings) in &self.accounts {
            let prefix = format!("accounts.{name}");
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
            {
                problems.push(invalid(
                    prefix.clone(),
                    "an account name is made of a-z, 0-9, _ and - (it is the target of \
                     /probe?target=NAME)",
                ));
            }
            if settings.max_body_bytes == 0 {
                problems.push(invalid(
                    format!("{prefix}.max_body_bytes"),
                    "must be greater than 0",
                ));
            }
            if let Some(source) = remote(settings, &prefix, &mut warnings, &mut problems) {
                accounts.push(Account {
                    name: Some(name.clone()),
                    api: ApiConfig {
                        source,
                        timeout: settings.timeout,
                        max_body_bytes: settings.max_body_bytes,
                    },
                });
            }
        }
        let retry = RetryPolicy {
            initial_delay: self.backoff.initial_delay,
            max_delay: self.backoff.max_delay,
            max_elapsed: self.backoff.max_elapsed,
        };
        if retry.initial_delay > retry.max_delay {
            problems.push(invalid(
                "backoff.initial_delay",
                "must not be longer than backoff.max_delay",
            ));
        }
        let reports = self.asset_reports;
        if reports.concurrency == 0 {
            problems.push(invalid("asset_reports.concurrency", "must be at least 1"));
        }
        let telemetry_path = telemetry_path(self.web.telemetry_path).map_err(|p| problems.push(p));
        let web_config = match &self.web.config_file {
            None => Ok(WebConfigFile::none()),
            Some(path) => WebConfigFile::load(path).map_err(|e| {
                problems.push(invalid(
                    "web.config_file",
                    format_args!("{}: {e}", path.display()),
                ));
            }),
        };
        let (Ok(telemetry_path), Ok(config_file), true) =
            (telemetry_path, web_config, problems.is_empty())
        else {
            return Err(ConfigError(problems));
        };
        Ok(Config {
            accounts,
            poll_interval: self.poll.interval,
            max_age: self.metrics.max_age,
            max_labels_per_asset: self.metrics.max_labels_per_asset,
            retry,
            asset_reports_enabled: reports.enabled,
            asset_reports: ReportSchedule {
                interval: reports.interval,
                concurrency: reports.concurrency,
                selection: Selection::new(reports.include, reports.exclude, reports.shard),
                timezone: reports.timezone,
                max_labels: self.metrics.max_labels_per_asset,
            },
            web: WebConfig {
                listen_address: self.web.listen_address,
                telemetry_path,
                config_file,
            },
            log: LogConfig {
                level: self.log.level,
                format: self.log.format,
            },
            warnings,
        })
    }
}

fn telemetry_path(value: String) -> Result<String, Problem> {
    const KEY: &str = "web.telemetry_path";
    let reserved = ["/", "/-/healthy", "/-/ready"];
    if !value.starts_with('/') || value.contains(['?', '#', ' ']) {
        return Err(invalid(
            KEY,
            format_args!("`{value}` is not a path such as /metrics"),
        ));
    }
    if reserved.contains(&value.as_str()) {
        return Err(invalid(
            KEY,
            format_args!("`{value}` is taken by the exporter itself"),
        ));
    }
    Ok(value)
}

/// The remote source of one account, `[api]` (`prefix` = `api`) or `[accounts.NAME]`; `None`
/// when something is wrong, which is added to `problems`.
fn remote(
    api: &settings::ApiSettings,
    prefix: &str,
    warnings: &mut Vec<String>,
    problems: &mut Vec<Problem>,
) -> Option<Source> {
    let token_file = api.token_file.clone();
    if let Some(problem) = token_file
        .as_deref()
        .and_then(auth::token_file_mode_problem)
    {
        if running_as_root_in_a_container() {
            warnings.push(problem);
        } else {
            problems.push(invalid(format!("{prefix}.token_file"), problem));
        }
    }
    let base_url = api.base_url.clone();
    if base_url.is_none() {
        problems.push(invalid(
            format!("{prefix}.base_url"),
            "required (the address of the API, e.g. https://api.example.com), unless --demo",
        ));
    }
    let token =
        token(api.token.clone(), token_file.as_deref(), prefix).map_err(|p| problems.push(p));
    Some(Source::Remote {
        base_url: base_url?,
        token: token.ok()?,
        token_file,
    })
}

fn token(
    token: Option<Secret>,
    file: Option<&std::path::Path>,
    prefix: &str,
) -> Result<Secret, Problem> {
    let error = |e: TokenError| {
        let key = match e {
            TokenError::Unreadable { .. } => "token_file",
            _ => "token",
        };
        invalid(format!("{prefix}.{key}"), e)
    };
    let value = match (token, file) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                format!("{prefix}.token"),
                format_args!("set only one of {prefix}.token and {prefix}.token_file"),
            ));
        }
        (Some(token), None) => token.expose().to_owned(),
        (None, Some(path)) => auth::read_token_file(path).map_err(error)?,
        (None, None) => {
            return Err(invalid(
                format!("{prefix}.token_file"),
                format_args!(
                    "one of {prefix}.token_file and {prefix}.token is required, unless --demo"
                ),
            ));
        }
    };
    auth::check_token(value).map_err(error)
}

/// Root inside a container (Docker, Podman, Kubernetes) often cannot choose the mode of a
/// mounted secret; there a readable token file is a warning, not a refusal.
fn running_as_root_in_a_container() -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        // /proc/self belongs to the process' effective user.
        let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        let container = std::path::Path::new("/.dockerenv").exists()
            || std::path::Path::new("/run/.containerenv").exists()
            || std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
        root && container
    }
    #[cfg(not(unix))]
    false
}

/// Adds the problems of one section's values to `problems`, and returns the section without
/// them: what the settings are made of. Unknown keys are left out silently (they were named in
/// the user's words by [`check`]).
fn section<T: serde::de::DeserializeOwned>(
    figment: &Figment,
    name: &str,
    problems: &mut Vec<Problem>,
) -> figment::value::Value {
    let empty = || figment::value::Value::from(figment::value::Dict::new());
    let Ok(mut dict) = figment.focus(name).data().map(check::top_level) else {
        return empty();
    };
    // Deserialization stops at the first wrong value; each one found is taken out and the
    // section read again, so that every wrong value is reported at once.
    loop {
        let Err(error) = Figment::from(Serialized::defaults(&dict)).extract::<T>() else {
            return dict.into();
        };
        let mut taken_out = false;
        for mut e in error {
            taken_out |= check::remove(&mut dict, &e.path);
            if matches!(e.kind, figment::error::Kind::UnknownField(..)) {
                continue;
            }
            let key = format!("{name}.{}", e.path.join("."));
            // Where the value came from is known to the whole figment, not to this copy.
            e.metadata = figment.find_metadata(&key).cloned().or(e.metadata);
            e.path.insert(0, name.to_owned());
            problems.extend(check::describe([e]));
        }
        if !taken_out {
            return empty();
        }
    }
}

#[cfg(test)]
mod tests;
