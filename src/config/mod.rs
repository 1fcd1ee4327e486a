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
mod reload;
pub mod settings;
mod target;
mod validate;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use figment::providers::{Format, Serialized, Toml};
use figment::{Figment, Provider as _};

use crate::blacklists::Blacklists;
use crate::health::Health;
use crate::logging::LogFormat;
use crate::poll::reports::{ReportSchedule, Scope};
use crate::poll::selection::Selection;
use crate::telemetry::Telemetry;
use crate::upstream::auth::{self, TokenError};
use crate::upstream::retry::RetryPolicy;
use crate::upstream::{Client, ClientError, ClientOptions, InProcess};
use crate::vocabulary::{Endpoint, Secret};
pub use cli::Cli;
pub use env::ENV_PREFIX;
use env::RawEnv;
use exporter_web::WebConfigFile;
pub use settings::Settings;
pub use target::{TargetError, resolve};

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

impl Problem {
    /// A problem with `key` (empty for a whole file), said as `text`.
    fn new(key: impl Into<String>, text: impl Into<String>) -> Problem {
        Problem {
            key: key.into(),
            text: text.into(),
        }
    }

    /// A problem with a value, said as `key: message`.
    fn invalid(key: impl Into<String>, message: impl std::fmt::Display) -> Problem {
        let key = key.into();
        Problem::new(key.clone(), format!("{key}: {message}"))
    }
}

/// The validated configuration: what the exporter is built from.
#[derive(Debug, Clone)]
pub struct Config {
    /// Every account polled: the one of `[api]` or `--demo` (without a name), or each of
    /// `[accounts.NAME]` (in name order). Never empty.
    pub accounts: Vec<AccountConfig>,
    /// The exporter's own HTTP endpoint.
    pub web: WebConfig,
    /// Logging.
    pub log: LogConfig,
    /// The store on local disk that a restart starts from.
    pub state: StateConfig,
    /// Problems that do not stop the start, to log once logging runs.
    pub warnings: Vec<String>,
}

/// `[state]`, as the exporter uses it: off for `--demo` and `--once`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateConfig {
    /// Whether the lists and reports are kept on disk.
    pub enabled: bool,
    /// `state.path`; `None`: the default places, the first that can be written.
    pub path: Option<std::path::PathBuf>,
}

/// One account as configured: `[api]` (or `--demo`), or one of `[accounts.NAME]`, with the
/// shared settings it runs by. It is what builds the account's client
/// ([`AccountConfig::client`]) and what a reload compares: an account whose configuration is
/// unchanged keeps running.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountConfig {
    /// NAME, the target of `/probe?target=NAME`; `None` for the one account of `[api]` or
    /// `--demo`, served on `/metrics`.
    pub name: Option<String>,
    /// A real account, or the built-in simulation.
    pub source: Source,
    /// Timeout of one whole request, body included.
    pub timeout: Duration,
    /// Largest response body accepted.
    pub max_body_bytes: u64,
    /// Retries of transient failures.
    pub retry: RetryPolicy,
    /// Interval of the list poll loop.
    pub poll_interval: Duration,
    /// Age after which the values of a failing endpoint are no longer served.
    pub max_age: Duration,
    /// Host names (and, separately, tags) kept per asset.
    pub max_labels: usize,
    /// Shards of the per-asset series (`metrics.shards`).
    pub shards: usize,
    /// Per-asset reports; their selection, zone and concurrency also rule `backfill`.
    pub reports: ReportSchedule,
    /// What is known of each blacklist: the built-in table with `[[blacklists]]`.
    pub blacklists: Arc<Blacklists>,
}

impl AccountConfig {
    /// The account's API client, sending to `base_url` (the configured one, or where `--demo`
    /// started its simulated API), or to `in_process` when given.
    pub fn client(
        &self,
        base_url: reqwest::Url,
        in_process: Option<InProcess>,
        telemetry: Arc<Telemetry>,
        health: Arc<Health>,
    ) -> Result<Client, ClientError> {
        let (token, token_file) = match &self.source {
            Source::Remote {
                token, token_file, ..
            } => (token.clone(), token_file.clone()),
            Source::Demo => (Secret::new(reputation_simulate::DEMO_TOKEN), None),
        };
        let options = ClientOptions {
            base_url,
            token,
            token_file,
            timeout: self.timeout,
            max_body_bytes: self.max_body_bytes,
            retry: self.retry,
            section: self.section(),
            in_process,
        };
        Client::new(options, telemetry, health)
    }

    /// The endpoints its pollers poll: the asset endpoint too when reports are on.
    pub fn endpoints(&self) -> Vec<Endpoint> {
        let mut endpoints = Endpoint::POLLED.to_vec();
        if self.reports.scope.enabled() {
            endpoints.push(Endpoint::Asset);
        }
        endpoints
    }

    /// How long a report is served without a refresh: a round, then `metrics.max_age`.
    pub fn report_max_age(&self) -> Duration {
        let round = if self.reports.scope.enabled() {
            self.reports.interval
        } else {
            Duration::ZERO
        };
        self.max_age + round
    }

    /// Where it is configured: `api`, or `accounts.NAME`.
    pub fn section(&self) -> String {
        self.name
            .as_ref()
            .map_or_else(|| "api".to_owned(), |name| format!("accounts.{name}"))
    }

    /// Its name for people: NAME, or `[api]` for the one account.
    pub fn shown(&self) -> String {
        shown(self.name.as_deref())
    }
}

/// An account's name for people: NAME, or `[api]` for the one account.
pub fn shown(name: Option<&str>) -> String {
    name.map_or_else(|| "[api]".to_owned(), str::to_owned)
}

/// The upstream an account polls.
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

/// The exporter's own endpoint.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// Addresses to bind, each served alike.
    pub listen_addresses: Vec<SocketAddr>,
    /// Serve on the sockets systemd passes instead of binding `listen_addresses`.
    pub systemd_socket: bool,
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
        self.accounts.iter().any(|a| a.source == Source::Demo)
    }

    /// The configuration of the account a target names: see [`resolve`].
    pub fn account(&self, target: Option<&str>) -> Result<&AccountConfig, TargetError> {
        let names: Vec<Option<&str>> = self.accounts.iter().map(|a| a.name.as_deref()).collect();
        resolve(&names, target).map(|i| &self.accounts[i])
    }

    /// `--once`: every account with one short round of retries, so that an unreachable API
    /// is reported within seconds.
    pub fn once(mut self) -> Config {
        for account in &mut self.accounts {
            account.retry = account.retry.once();
        }
        // A one-shot poll neither starts from nor leaves a state.
        self.state.enabled = false;
        self
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
        let config = match settings.validate(cli.common.demo) {
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
        if let Some(file) = &cli.common.config_file {
            if let Err(error) = std::fs::metadata(file) {
                let text = format!("--config.file {}: {error}", file.display());
                problems.push(Problem::new("", text));
                return (Settings::default(), problems);
            }
            match Toml::file_exact(file).data() {
                Ok(data) => problems.extend(check::unknown(check::in_file(
                    file,
                    &check::top_level(data),
                ))),
                Err(error) => {
                    problems.push(Problem::new(
                        "",
                        format!("{}: {}", file.display(), error.kind),
                    ));
                }
            }
        }
        problems.extend(check::unknown(check::in_env(&env)));
        let figment = Self::figment(cli, env);
        let settings = usable(&figment, &mut problems);
        (settings, problems)
    }

    /// The layered figment for these flags and this environment; what is not in it takes the
    /// defaults of [`settings`].
    pub fn figment(cli: &Cli, env: impl IntoIterator<Item = (String, String)>) -> Figment {
        let mut figment = Figment::new();
        if cli.common.demo {
            // The simulation moves every few seconds; a shorter default shows it, and asset
            // reports fill the dashboard's blacklist panels within a minute. The file, the
            // environment and the flags can still change both.
            figment = figment
                .merge(Serialized::default("poll.interval", "15s"))
                .merge(Serialized::default("asset_reports.enabled", true))
                .merge(Serialized::default("asset_reports.interval", "30s"));
        }
        if let Some(file) = &cli.common.config_file {
            figment = figment.merge(Toml::file_exact(file));
        }
        figment = figment.merge(RawEnv::new(env));
        for ((key, _), value) in cli::FLAGS.iter().zip(cli.flag_values()) {
            if let Some(value) = value {
                figment = figment.merge(Serialized::default(key, value));
            }
        }
        figment
    }
}

/// The settings made of every value of the layers that is right, each value read once against
/// the settings structs on its own (the others at their defaults), so that every wrong value is
/// found in one pass instead of the first only; each wrong one is added to `problems`. Unknown
/// keys are left out silently: [`check`] named them in the user's words.
fn usable(figment: &Figment, problems: &mut Vec<Problem>) -> Settings {
    let layered = figment.data().map(check::top_level).unwrap_or_default();
    let mut usable = figment::value::Dict::new();
    for (path, value) in check::leaves(&layered) {
        let alone = check::nested(&path, value.clone());
        let Err(errors) = Figment::from(Serialized::defaults(alone)).extract::<Settings>() else {
            check::insert(&mut usable, &path, value);
            continue;
        };
        for mut error in errors {
            if matches!(error.kind, figment::error::Kind::UnknownField(..)) {
                continue;
            }
            // Where the value came from is known to the whole figment, not to this copy.
            error.metadata = figment
                .find_metadata(&path.join("."))
                .cloned()
                .or(error.metadata);
            problems.extend(check::describe([error]));
        }
    }
    Figment::from(Serialized::defaults(usable))
        .extract()
        .unwrap_or_else(|errors: figment::Error| {
            problems.extend(check::describe(errors));
            Settings::default()
        })
}

#[cfg(test)]
mod tests;
