//! Validation: what involves several keys, checked on the settings read from every layer, and
//! what each section builds (the account sources with their tokens, the web configuration).

use super::*;

impl Settings {
    /// Checks what involves several keys, and builds what each section configures; every
    /// problem is reported, not only the first.
    pub fn validate(self, demo: bool) -> Result<Config, ConfigError> {
        let mut problems = Vec::new();
        let mut warnings = Vec::new();
        if !self.accounts.is_empty() {
            let api = &self.api;
            if demo {
                problems.push(Problem::invalid(
                    "accounts",
                    "--demo has one account; remove [accounts.*]",
                ));
            } else if api.base_url.is_some() || api.token.is_some() || api.token_file.is_some() {
                problems.push(Problem::invalid(
                    "accounts",
                    "set either [api] (one account, served on /metrics) or [accounts.NAME] \
                     (several, served on /probe?target=NAME), not both",
                ));
            }
        }
        if self.api.max_body_bytes == 0 {
            problems.push(Problem::invalid(
                "api.max_body_bytes",
                "must be greater than 0",
            ));
        }
        let retry = RetryPolicy {
            initial_delay: self.backoff.initial_delay,
            max_delay: self.backoff.max_delay,
            max_elapsed: self.backoff.max_elapsed,
            retry_unreachable: true,
        };
        // Said after the accounts' own problems, in the order of the file's sections.
        let mut shared_problems = Vec::new();
        if retry.initial_delay > retry.max_delay {
            shared_problems.push(Problem::invalid(
                "backoff.initial_delay",
                "must not be longer than backoff.max_delay",
            ));
        }
        let reports = self.asset_reports;
        if reports.concurrency == 0 {
            shared_problems.push(Problem::invalid(
                "asset_reports.concurrency",
                "must be at least 1",
            ));
        }
        let blacklists = match Blacklists::with(self.blacklists) {
            Ok(table) => Arc::new(table),
            Err(problem) => {
                shared_problems.push(Problem::invalid("blacklists", problem));
                Arc::new(Blacklists::builtin())
            }
        };
        // What every account shares; each account's own keys complete it.
        let shared = AccountConfig {
            name: None,
            source: Source::Demo,
            timeout: self.api.timeout,
            max_body_bytes: self.api.max_body_bytes,
            retry,
            poll_interval: self.poll.interval,
            max_age: self.metrics.max_age,
            max_labels: self.metrics.max_labels_per_asset,
            shards: self.metrics.shards,
            reports: ReportSchedule {
                scope: match (reports.enabled, reports.listed) {
                    (true, _) => Scope::All,
                    (false, true) => Scope::Listed,
                    (false, false) => Scope::Off,
                },
                interval: reports.interval,
                concurrency: reports.concurrency,
                selection: Selection::new(reports.include, reports.exclude, reports.replica),
                timezone: reports.timezone,
            },
            blacklists,
        };
        let mut accounts = Vec::with_capacity(self.accounts.len().max(1));
        if self.accounts.is_empty() {
            let source = if demo {
                Some(Source::Demo)
            } else {
                remote(&self.api, "api", &mut warnings, &mut problems)
            };
            if let Some(source) = source {
                accounts.push(AccountConfig {
                    source,
                    ..shared.clone()
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
                problems.push(Problem::invalid(
                    prefix.clone(),
                    "an account name is made of a-z, 0-9, _ and - (it is the target of \
                     /probe?target=NAME)",
                ));
            }
            if settings.max_body_bytes == 0 {
                problems.push(Problem::invalid(
                    format!("{prefix}.max_body_bytes"),
                    "must be greater than 0",
                ));
            }
            if let Some(source) = remote(settings, &prefix, &mut warnings, &mut problems) {
                accounts.push(AccountConfig {
                    name: Some(name.clone()),
                    source,
                    timeout: settings.timeout,
                    max_body_bytes: settings.max_body_bytes,
                    ..shared.clone()
                });
            }
        }
        problems.extend(shared_problems);
        let telemetry_path = telemetry_path(self.web.telemetry_path).map_err(|p| problems.push(p));
        let web_config = match &self.web.config_file {
            None => Ok(WebConfigFile::none()),
            Some(path) => WebConfigFile::load(path).map_err(|e| {
                problems.push(Problem::invalid(
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
            web: WebConfig {
                listen_addresses: self.web.listen_address,
                systemd_socket: self.web.systemd_socket,
                telemetry_path,
                config_file,
            },
            log: LogConfig {
                level: self.log.level,
                format: self.log.format,
            },
            state: StateConfig {
                // The demo's data is made up at each start: nothing to keep.
                enabled: self.state.enabled && !demo,
                path: self.state.path,
            },
            warnings,
        })
    }
}

fn telemetry_path(value: String) -> Result<String, Problem> {
    const KEY: &str = "web.telemetry_path";
    let reserved = ["/", "/-/healthy", "/-/ready"];
    if !value.starts_with('/') || value.contains(['?', '#', ' ']) {
        return Err(Problem::invalid(
            KEY,
            format_args!("`{value}` is not a path such as /metrics"),
        ));
    }
    if reserved.contains(&value.as_str()) {
        return Err(Problem::invalid(
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
            problems.push(Problem::invalid(format!("{prefix}.token_file"), problem));
        }
    }
    let base_url = api.base_url.clone();
    if base_url.is_none() {
        problems.push(Problem::invalid(
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
    // A token from a file is said as the file's: its key and its path.
    let error = |e: TokenError| match (e, file) {
        (e @ TokenError::Unreadable { .. }, _) => {
            Problem::invalid(format!("{prefix}.token_file"), e)
        }
        (e, Some(path)) => Problem::invalid(
            format!("{prefix}.token_file"),
            format_args!("the token in {} {e}", path.display()),
        ),
        (e, None) => Problem::invalid(format!("{prefix}.token"), e),
    };
    let value = match (token, file) {
        (Some(_), Some(_)) => {
            return Err(Problem::invalid(
                format!("{prefix}.token"),
                format_args!("set only one of {prefix}.token and {prefix}.token_file"),
            ));
        }
        (Some(token), None) => token.expose().to_owned(),
        (None, Some(path)) => auth::read_token_file(path).map_err(error)?,
        (None, None) => {
            return Err(Problem::invalid(
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
