//! The configuration's layering and validation, on environments given as lists.

use std::net::SocketAddr;
use std::path::Path;

use super::cli::Common;
use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn load(cli: &Cli, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::load_with(cli, env(vars))
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
    assert_eq!(config.accounts[0].timeout, Duration::from_secs(30));
    assert_eq!(config.accounts[0].max_body_bytes, 2_147_483_648);
    assert_eq!(config.accounts[0].poll_interval, Duration::from_secs(300));
    assert_eq!(config.accounts[0].max_age, Duration::from_secs(3600));
    assert_eq!(
        config.accounts[0].retry.initial_delay,
        Duration::from_secs(1)
    );
    assert_eq!(config.accounts[0].retry.max_delay, Duration::from_secs(120));
    assert_eq!(
        config.accounts[0].retry.max_elapsed,
        Duration::from_secs(600)
    );
    assert_eq!(
        config.web.listen_addresses,
        ["0.0.0.0:9525".parse::<SocketAddr>().unwrap()]
    );
    assert!(!config.web.systemd_socket);
    assert_eq!(config.web.telemetry_path, "/metrics");
    assert_eq!(config.log.format, LogFormat::Logfmt);
}

#[test]
fn a_token_that_looks_like_a_number_or_boolean_stays_the_exact_string() {
    for raw in ["0012", "true", "1e3", "[x]", "a=b#c", "  spaced  "] {
        let mut vars = REMOTE.to_vec();
        vars[1] = ("REPUTATION_EXPORTER_API__TOKEN", raw);
        let config = load(&Cli::default(), &vars).unwrap();
        let Source::Remote { token, .. } = &config.accounts[0].source else {
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
    assert_eq!(config.accounts[0].max_body_bytes, 1024);
    assert_eq!(config.accounts[0].poll_interval, Duration::from_secs(90));
}

#[test]
fn asset_report_keys_are_validated_into_typed_values() {
    let mut vars = REMOTE.to_vec();
    vars.push(("REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED", "true"));
    vars.push(("REPUTATION_EXPORTER_ASSET_REPORTS__SHARD", "1/1"));
    vars.push(("REPUTATION_EXPORTER_ASSET_REPORTS__INCLUDE", "^192\\."));
    vars.push((
        "REPUTATION_EXPORTER_ASSET_REPORTS__TIMEZONE",
        "Europe/Berlin",
    ));
    let config = load(&Cli::default(), &vars).unwrap();
    let schedule = config.accounts[0].reports.clone();
    assert!(schedule.selection.selects("192.0.2.1"));
    assert!(!schedule.selection.selects("198.51.100.1"));
    assert_eq!(schedule.concurrency, 4);
    assert_eq!(schedule.interval, Duration::from_secs(6 * 3600));
    assert_eq!(schedule.timezone.iana_name(), Some("Europe/Berlin"));
    assert_eq!(config.accounts[0].reports.scope, Scope::All);
    let default = load(&Cli::default(), REMOTE).unwrap();
    assert_eq!(
        default.accounts[0].reports.scope,
        Scope::Listed,
        "the listed assets' by default"
    );
    let off = load(
        &Cli::default(),
        &[
            REMOTE,
            &[("REPUTATION_EXPORTER_ASSET_REPORTS__LISTED", "false")],
        ]
        .concat(),
    )
    .unwrap();
    assert_eq!(off.accounts[0].reports.scope, Scope::Off);

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
        // A value that does not parse names its variable; a value refused with another
        // names its key.
        assert!(
            message.contains(&format!("{key}: `{value}`")) || message.contains(named),
            "{value}: {message}"
        );
    }
}

#[test]
fn flags_override_the_environment() {
    let cli = Cli {
        listen_address: vec![":9999".into()],
        ..Cli::default()
    };
    let mut vars = REMOTE.to_vec();
    vars.push(("REPUTATION_EXPORTER_WEB__LISTEN_ADDRESS", "127.0.0.1:1"));
    let config = load(&cli, &vars).unwrap();
    assert_eq!(
        config.web.listen_addresses,
        ["0.0.0.0:9999".parse().unwrap()]
    );
}

#[test]
fn several_listen_addresses_come_from_the_file_the_environment_or_the_flag_repeated() {
    let addresses = |config: Config| -> Vec<String> {
        let listened = config.web.listen_addresses.iter();
        listened.map(ToString::to_string).collect()
    };
    let file = TomlFile::new(
        "listen",
        "[web]\nlisten_address = [\"127.0.0.1:9525\", \"[::1]:9525\"]\nsystemd_socket = true\n",
    );
    let config = load(&file.cli(), REMOTE).unwrap();
    assert!(config.web.systemd_socket);
    assert_eq!(addresses(config), ["127.0.0.1:9525", "[::1]:9525"]);
    // A single string still works; in the environment, commas separate several.
    let mut vars = REMOTE.to_vec();
    vars.push((
        "REPUTATION_EXPORTER_WEB__LISTEN_ADDRESS",
        ":9000, 10.0.0.1:9001",
    ));
    vars.push(("REPUTATION_EXPORTER_WEB__SYSTEMD_SOCKET", "false"));
    let config = load(&Cli::default(), &vars).unwrap();
    assert!(!config.web.systemd_socket);
    assert_eq!(addresses(config), ["0.0.0.0:9000", "10.0.0.1:9001"]);
    // The flag given twice replaces what the file says.
    let cli = Cli {
        listen_address: vec!["127.0.0.2:1".into(), "127.0.0.3:2".into()],
        ..file.cli()
    };
    assert_eq!(
        addresses(load(&cli, REMOTE).unwrap()),
        ["127.0.0.2:1", "127.0.0.3:2"]
    );
}

#[test]
fn a_wrong_listen_address_list_says_what_is_wrong() {
    let refused = |text: &str| {
        let file = TomlFile::new("wrong-listen", &format!("[web]\nlisten_address = {text}\n"));
        load(&file.cli(), REMOTE).unwrap_err().to_string()
    };
    let twice = refused(r#"["127.0.0.1:9525", "127.0.0.1:9525"]"#);
    assert!(
        twice.contains("`web.listen_address`: `127.0.0.1:9525` is given twice"),
        "{twice}"
    );
    let none = refused("[]");
    assert!(
        none.contains("`web.listen_address`: no address given; write one such as 0.0.0.0:9525"),
        "{none}"
    );
    let wrong = refused(r#"["127.0.0.1:9525", "nowhere"]"#);
    assert!(
        wrong.contains("`web.listen_address`: `nowhere` is not an address and port"),
        "{wrong}"
    );
    let flag = Cli {
        systemd_socket: true,
        ..Cli::default()
    };
    let mut vars = REMOTE.to_vec();
    vars.push(("REPUTATION_EXPORTER_WEB__SYSTEMD_SOCKET", "yes"));
    let message = load(&Cli::default(), &vars).unwrap_err().to_string();
    assert!(
        message.contains("REPUTATION_EXPORTER_WEB__SYSTEMD_SOCKET: `yes` is not true or false"),
        "{message}"
    );
    assert!(
        load(&flag, &vars).unwrap().web.systemd_socket,
        "the flag wins"
    );
}

#[test]
fn a_bad_duration_names_its_variable() {
    let mut vars = REMOTE.to_vec();
    vars.push(("REPUTATION_EXPORTER_API__TIMEOUT", "soon"));
    let message = load(&Cli::default(), &vars).unwrap_err().to_string();
    assert!(
        message.starts_with(
            "invalid configuration: REPUTATION_EXPORTER_API__TIMEOUT: `soon` is not a duration"
        ),
        "{message}"
    );
}

/// A TOML file with `text` in it, removed when dropped.
struct TomlFile(std::path::PathBuf);

impl TomlFile {
    fn new(name: &str, text: &str) -> TomlFile {
        let path = std::env::temp_dir().join(format!("rexp-{name}-{}.toml", std::process::id()));
        std::fs::write(&path, text).unwrap();
        TomlFile(path)
    }

    fn cli(&self) -> Cli {
        Cli {
            common: Common {
                config_file: Some(self.0.clone()),
                ..Common::default()
            },
            ..Cli::default()
        }
    }
}

impl Drop for TomlFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn a_typo_in_the_file_is_named_as_written_with_the_closest_key() {
    let file = TomlFile::new("typo", "[api]\ntimout = \"3s\"\n");
    let message = load(&file.cli(), REMOTE).unwrap_err().to_string();
    assert_eq!(
        message,
        format!(
            "invalid configuration: {}: unknown key `api.timout`; did you mean `api.timeout`?",
            file.0.display()
        )
    );
}

#[test]
fn a_typo_in_a_section_name_is_named_with_the_closest_section() {
    let file = TomlFile::new("section", "[asset_report]\nenabled = true\n");
    let message = load(&file.cli(), REMOTE).unwrap_err().to_string();
    assert_eq!(
        message,
        format!(
            "invalid configuration: {}: unknown section `[asset_report]`; did you mean \
             `[asset_reports]`?",
            file.0.display()
        )
    );
}

#[test]
fn a_typo_in_the_environment_names_the_variable_and_the_closest_one() {
    let mut vars = REMOTE.to_vec();
    vars.push(("REPUTATION_EXPORTER_API__TIMOUT", "3s"));
    let message = load(&Cli::default(), &vars).unwrap_err().to_string();
    assert_eq!(
        message,
        "invalid configuration: REPUTATION_EXPORTER_API__TIMOUT: unknown key `api.timout`; did \
         you mean `REPUTATION_EXPORTER_API__TIMEOUT`?"
    );
}

#[test]
fn every_problem_is_reported_not_only_the_first() {
    let file = TomlFile::new(
        "many",
        "[poll]\ninterval = \"soon\"\n[api]\ntimout = 3\n[backoff]\nmax_delay = \"x\"\n",
    );
    let mut vars = REMOTE.to_vec();
    vars.push(("REPUTATION_EXPORTER_WEB__LISTEN_ADDRESS", "nowhere"));
    vars.push(("REPUTATION_EXPORTER_LOG__LEVL", "debug"));
    vars.push(("REPUTATION_EXPORTER_BACKOFF__INITIAL_DELAY", "later"));
    let message = load(&file.cli(), &vars).unwrap_err().to_string();
    let problems: Vec<&str> = message.lines().skip(1).collect();
    assert_eq!(problems.len(), 6, "{message}");
    // Two wrong values in one section, from two layers, each named where it was written.
    assert!(message.contains("REPUTATION_EXPORTER_BACKOFF__INITIAL_DELAY: `later` is not"));
    assert!(
        message.contains("`backoff.max_delay`: `x` is not a duration"),
        "{message}"
    );
    assert!(message.contains("unknown key `api.timout`"), "{message}");
    assert!(message.contains("REPUTATION_EXPORTER_LOG__LEVL: unknown key `log.levl`"));
    assert!(message.contains("`poll.interval`: `soon` is not a duration"));
    assert!(message.contains("REPUTATION_EXPORTER_WEB__LISTEN_ADDRESS: `nowhere` is not"));
}

#[test]
fn a_missing_configuration_file_is_one_line() {
    let cli = Cli {
        common: Common {
            config_file: Some("/nonexistent/reputation-exporter.toml".into()),
            ..Common::default()
        },
        ..Cli::default()
    };
    let message = load(&cli, REMOTE).unwrap_err().to_string();
    assert_eq!(
        message,
        "invalid configuration: --config.file /nonexistent/reputation-exporter.toml: No such file \
         or directory (os error 2)"
    );
}

#[test]
fn the_known_keys_are_the_settings_tree_and_the_example_documents_each() {
    let example = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("config/reputation-exporter.toml"),
    )
    .unwrap();
    let sections: Vec<&str> = check::sections().collect();
    assert_eq!(
        sections,
        [
            "api",
            "poll",
            "metrics",
            "backoff",
            "asset_reports",
            "web",
            "log",
            "state",
            "accounts",
            "blacklists"
        ],
        "the sections as the settings tree declares them"
    );
    let mut documented = 0;
    for section in sections
        .into_iter()
        .filter(|s| !["accounts", "blacklists"].contains(s))
    {
        let keys = check::keys_of(section).unwrap();
        assert!(!keys.is_empty(), "{section} has keys");
        assert!(
            example.contains(&format!("[{section}]")),
            "[{section}] undocumented"
        );
        for key in keys {
            documented += 1;
            assert!(
                example.contains(&format!("\n{key} =")) || example.contains(&format!("# {key} =")),
                "{section}.{key} undocumented"
            );
            // Each known key is a field of the settings tree.
            let file = TomlFile::new("known", &format!("[{section}]\n{key} = \"\"\n"));
            let figment = Settings::figment(&file.cli(), env(REMOTE));
            if let Err(errors) = figment.extract::<Settings>() {
                for error in errors {
                    assert!(
                        !matches!(error.kind, figment::error::Kind::UnknownField(..)),
                        "{section}.{key}: {error}"
                    );
                }
            }
        }
    }
    // 28 keys, and asset_reports.shard, the former name of asset_reports.replica.
    assert_eq!(documented, 29, "every key of the tree");
}

#[test]
fn a_missing_base_url_is_refused_unless_demo() {
    let message = load(&Cli::default(), &[]).unwrap_err().to_string();
    assert!(message.contains("api.base_url"), "{message}");
    let demo = Cli {
        common: Common {
            demo: true,
            ..Common::default()
        },
        ..Cli::default()
    };
    let config = load(&demo, &[]).unwrap();
    assert!(matches!(config.accounts[0].source, Source::Demo));
    assert_eq!(config.accounts[0].poll_interval, Duration::from_secs(15));
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
    let (settings, problems) = Settings::extract(&Cli::default(), env(&vars));
    assert_eq!(problems, []);
    assert!(!format!("{settings:?}").contains("s3cr3t-value"));
    let config = settings.validate(false).unwrap();
    assert!(!format!("{config:?}").contains("s3cr3t-value"));
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
    let Source::Remote { token, .. } = &config.accounts[0].source else {
        panic!("remote expected")
    };
    assert_eq!(token.expose(), "abc");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_toml_example_is_valid_and_holds_the_defaults() {
    let cli = Cli {
        common: Common {
            config_file: Some(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("config/reputation-exporter.toml"),
            ),
            ..Common::default()
        },
        ..Cli::default()
    };
    let (from_file, problems) = Settings::extract(&cli, env(REMOTE));
    assert_eq!(problems, []);
    let config = from_file.validate(false).unwrap();
    let defaults = load(&Cli::default(), REMOTE).unwrap();
    assert_eq!(config.accounts[0].timeout, defaults.accounts[0].timeout);
    assert_eq!(
        config.accounts[0].poll_interval,
        defaults.accounts[0].poll_interval
    );
    assert_eq!(config.accounts[0].max_age, defaults.accounts[0].max_age);
    assert_eq!(config.accounts[0].retry, defaults.accounts[0].retry);
    assert_eq!(config.web.listen_addresses, defaults.web.listen_addresses);
    assert_eq!(config.state, defaults.state);
    assert!(config.state.enabled);
}

#[test]
fn the_state_store_is_off_for_the_demo_and_once_and_its_path_is_read_where_it_is_written() {
    let demo = Settings::default().validate(true).unwrap();
    assert!(!demo.state.enabled, "the demo keeps nothing");
    let mut vars = REMOTE.to_vec();
    vars.push(("REPUTATION_EXPORTER_STATE__PATH", "/srv/reputation"));
    let config = load(&Cli::default(), &vars).unwrap();
    assert!(config.state.enabled);
    assert_eq!(config.state.path, Some("/srv/reputation".into()));
    assert!(!config.once().state.enabled, "--once keeps nothing");
    let cli = Cli {
        state_path: Some("/var/tmp/state".into()),
        ..Cli::default()
    };
    assert_eq!(
        load(&cli, REMOTE).unwrap().state.path,
        Some("/var/tmp/state".into()),
        "the flag is the last layer"
    );
}

mod several;

#[test]
fn an_out_of_range_shard_count_says_where_it_was_set() {
    let mut vars = REMOTE.to_vec();
    vars.push(("REPUTATION_EXPORTER_METRICS__SHARDS", "0"));
    let message = load(&Cli::default(), &vars).unwrap_err().to_string();
    assert_eq!(
        message,
        "invalid configuration: REPUTATION_EXPORTER_METRICS__SHARDS: `0` is not from 1 to 1024"
    );
    let file = TomlFile::new("shards", "[metrics]\nshards = 5000\n");
    let message = load(&file.cli(), REMOTE).unwrap_err().to_string();
    assert_eq!(
        message,
        format!(
            "invalid configuration: {}: `metrics.shards`: `5000` is not from 1 to 1024",
            file.0.display()
        )
    );
}

#[test]
fn a_base_url_without_a_scheme_is_shown_with_https() {
    for written in ["api.example.com", "api.example.com:8443"] {
        let vars = [
            ("REPUTATION_EXPORTER_API__BASE_URL", written),
            ("REPUTATION_EXPORTER_API__TOKEN", "t0ken"),
        ];
        let message = load(&Cli::default(), &vars).unwrap_err().to_string();
        assert_eq!(
            message,
            format!(
                "invalid configuration: REPUTATION_EXPORTER_API__BASE_URL: `{written}` has no \
                 scheme; write https://{written} (or http:// for a plain HTTP API)"
            )
        );
    }
}

/// The configuration a reload starts from: one account with reports on.
const RUNNING: &[(&str, &str)] = &[
    (
        "REPUTATION_EXPORTER_API__BASE_URL",
        "https://api.example.com",
    ),
    ("REPUTATION_EXPORTER_API__TOKEN", "t0ken"),
    ("REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED", "true"),
];

/// The running configuration with one more variable set.
fn reloaded(var: &'static str, value: &'static str) -> Config {
    let mut vars = RUNNING.to_vec();
    vars.retain(|(k, _)| *k != var);
    vars.push((var, value));
    load(&Cli::default(), &vars).unwrap()
}

#[test]
fn a_reload_sorts_each_account_setting_into_rebuilt_or_taken_over() {
    let running = load(&Cli::default(), RUNNING).unwrap();
    let account = &running.accounts[0];
    assert_eq!(account.shared_changes(account), Some(vec![]), "unchanged");
    let rebuilt = [
        (
            "REPUTATION_EXPORTER_API__BASE_URL",
            "https://other.example.com",
        ),
        ("REPUTATION_EXPORTER_API__TOKEN", "another"),
        ("REPUTATION_EXPORTER_API__TIMEOUT", "10s"),
        ("REPUTATION_EXPORTER_API__MAX_BODY_BYTES", "1024"),
        ("REPUTATION_EXPORTER_METRICS__SHARDS", "2"),
        ("REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED", "false"),
    ];
    for (var, value) in rebuilt {
        let new = reloaded(var, value);
        assert_eq!(account.shared_changes(&new.accounts[0]), None, "{var}");
    }
    let taken_over = [
        ("REPUTATION_EXPORTER_POLL__INTERVAL", "90s", "poll.interval"),
        ("REPUTATION_EXPORTER_BACKOFF__MAX_DELAY", "10s", "backoff"),
        (
            "REPUTATION_EXPORTER_METRICS__MAX_AGE",
            "2h",
            "metrics.max_age",
        ),
        (
            "REPUTATION_EXPORTER_METRICS__MAX_LABELS_PER_ASSET",
            "8",
            "metrics.max_labels_per_asset",
        ),
        (
            "REPUTATION_EXPORTER_ASSET_REPORTS__INTERVAL",
            "2h",
            "asset_reports.interval",
        ),
        (
            "REPUTATION_EXPORTER_ASSET_REPORTS__CONCURRENCY",
            "2",
            "asset_reports.concurrency",
        ),
        (
            "REPUTATION_EXPORTER_ASSET_REPORTS__REPLICA",
            "1/2",
            "asset_reports.include/exclude/replica",
        ),
        (
            "REPUTATION_EXPORTER_ASSET_REPORTS__TIMEZONE",
            "Europe/Berlin",
            "asset_reports.timezone",
        ),
    ];
    for (var, value, key) in taken_over {
        let new = reloaded(var, value);
        assert_eq!(
            account.shared_changes(&new.accounts[0]),
            Some(vec![key]),
            "{var}"
        );
        assert!(running.restart_only(&new).is_empty(), "{var}");
    }
    let file = TomlFile::new(
        "reload-blacklists",
        "[[blacklists]]\nname = \"House RBL\"\npolicy = \"request\"\n",
    );
    let new = load(&file.cli(), RUNNING).unwrap();
    assert_eq!(
        account.shared_changes(&new.accounts[0]),
        Some(vec!["blacklists"])
    );
}

#[test]
fn a_reload_names_each_process_setting_that_waits_for_a_restart() {
    let running = load(&Cli::default(), RUNNING).unwrap();
    assert!(running.restart_only(&running).is_empty());
    let waiting = [
        (
            "REPUTATION_EXPORTER_WEB__LISTEN_ADDRESS",
            "127.0.0.1:9999",
            "web.listen_address",
        ),
        (
            "REPUTATION_EXPORTER_WEB__SYSTEMD_SOCKET",
            "true",
            "web.systemd_socket",
        ),
        (
            "REPUTATION_EXPORTER_WEB__TELEMETRY_PATH",
            "/other",
            "web.telemetry_path",
        ),
        ("REPUTATION_EXPORTER_STATE__PATH", "/tmp/elsewhere", "state"),
        ("REPUTATION_EXPORTER_LOG__LEVEL", "debug", "log"),
        ("REPUTATION_EXPORTER_LOG__FORMAT", "json", "log"),
    ];
    for (var, value, key) in waiting {
        let new = reloaded(var, value);
        assert_eq!(running.restart_only(&new), [key], "{var}");
        let account = &running.accounts[0];
        assert_eq!(
            account.shared_changes(&new.accounts[0]),
            Some(vec![]),
            "{var} leaves the account as it is"
        );
    }
}

#[test]
fn asset_reports_replica_is_still_read_under_its_former_name_shard() {
    let new = reloaded("REPUTATION_EXPORTER_ASSET_REPORTS__REPLICA", "2/3");
    let old = reloaded("REPUTATION_EXPORTER_ASSET_REPORTS__SHARD", "2/3");
    let default = load(&Cli::default(), RUNNING).unwrap();
    assert_eq!(old.accounts[0].reports, new.accounts[0].reports);
    assert_ne!(old.accounts[0].reports, default.accounts[0].reports);
    let file = TomlFile::new(
        "former",
        "[asset_reports]\nenabled = true\nshard = \"2/3\"\n",
    );
    let from_file = Config::load_with(&file.cli(), env(REMOTE)).unwrap();
    assert_eq!(from_file.accounts[0].reports, new.accounts[0].reports);
}

#[test]
fn blacklists_of_the_file_join_the_built_in_table_and_a_wrong_one_is_named() {
    let file = TomlFile::new(
        "blacklists",
        "[[blacklists]]\nname = \"House RBL\"\nspellings = [\"HOUSE-RBL\"]\n\
         removal = \"https://rbl.example.net/remove?ip={asset}\"\npolicy = \"self-service\"\n\n\
         [[blacklists]]\nname = \"SpamCop\"\npolicy = \"request\"\n",
    );
    let config = load(&file.cli(), REMOTE).unwrap();
    let table = &config.accounts[0].blacklists;
    assert_eq!(
        table.said("house-rbl").removal_for("192.0.2.1"),
        "https://rbl.example.net/remove?ip=192.0.2.1"
    );
    assert_eq!(
        table.lookup("SCBL").map(|e| e.policy),
        None,
        "the built-in SpamCop entry is replaced whole"
    );
    assert_eq!(
        table.lookup("spamcop").map(|e| e.policy),
        Some(crate::blacklists::Policy::Request)
    );

    let typo = TomlFile::new(
        "blacklists-typo",
        "[[blacklists]]\nname = \"House RBL\"\npolicy = \"request\"\nremove = \"https://x\"\n",
    );
    let message = load(&typo.cli(), REMOTE).unwrap_err().to_string();
    assert!(
        message.contains("unknown key `blacklists.remove`; did you mean `blacklists.removal`?"),
        "{message}"
    );
    let policy = TomlFile::new(
        "blacklists-policy",
        "[[blacklists]]\nname = \"House RBL\"\npolicy = \"wait\"\n",
    );
    let message = load(&policy.cli(), REMOTE).unwrap_err().to_string();
    assert!(message.contains("blacklists"), "{message}");
    assert!(message.contains("wait"), "{message}");
    let url = TomlFile::new(
        "blacklists-url",
        "[[blacklists]]\nname = \"House RBL\"\npolicy = \"request\"\nremoval = \"rbl.example.net\"\n",
    );
    let message = load(&url.cli(), REMOTE).unwrap_err().to_string();
    assert!(
        message
            .ends_with("blacklists: `House RBL`: removal `rbl.example.net` is not an http(s) URL"),
        "{message}"
    );
    let env = load(
        &Cli::default(),
        &[REMOTE, &[("REPUTATION_EXPORTER_BLACKLISTS__NAME", "x")]].concat(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        env.contains("blacklists are written in the configuration file"),
        "{env}"
    );
}
