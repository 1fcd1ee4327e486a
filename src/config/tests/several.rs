//! Accounts, and every problem reported in one pass.

use super::*;

#[test]
fn several_accounts_are_read_from_the_file_and_the_environment() {
    let file = TomlFile::new(
        "accounts",
        "[accounts.eu]\nbase_url = \"https://eu.example.com\"\ntoken = \"e\"\n\
         [accounts.us-east_1]\nbase_url = \"https://us.example.com\"\n",
    );
    let vars = [("REPUTATION_EXPORTER_ACCOUNTS__US-EAST_1__TOKEN", "u")];
    let config = load(&file.cli(), &vars).unwrap();
    let names: Vec<Option<&str>> = config.accounts.iter().map(|a| a.name.as_deref()).collect();
    assert_eq!(names, [Some("eu"), Some("us-east_1")]);
    let Source::Remote {
        base_url, token, ..
    } = &config.accounts[1].source
    else {
        panic!("remote expected")
    };
    assert_eq!(base_url.as_str(), "https://us.example.com/");
    assert_eq!(token.expose(), "u");
}

#[test]
fn api_and_accounts_together_or_a_bad_account_name_are_refused() {
    let file = TomlFile::new(
        "both",
        "[accounts.eu]\nbase_url = \"https://eu.example.com\"\ntoken = \"e\"\n",
    );
    let message = load(&file.cli(), REMOTE).unwrap_err().to_string();
    assert!(
        message.starts_with("invalid configuration: accounts: set either [api] (one account"),
        "{message}"
    );
    let file = TomlFile::new(
        "badname",
        "[accounts.EU]\nbase_url = \"https://eu.example.com\"\ntoken = \"e\"\n",
    );
    let message = load(&file.cli(), &[]).unwrap_err().to_string();
    assert!(
        message.starts_with("invalid configuration: accounts.EU: an account name is made of"),
        "{message}"
    );
    let file = TomlFile::new(
        "nobase",
        "[accounts.eu]\ntoken = \"e\"\n[accounts.us]\nbase_url = \"https://u.example\"\ntokn = \"u\"\n",
    );
    let message = load(&file.cli(), &[]).unwrap_err().to_string();
    assert!(
        message.contains("unknown key `accounts.us.tokn`; did you mean `accounts.us.token`?"),
        "{message}"
    );
}

#[test]
fn a_typo_and_a_missing_base_url_are_both_reported_in_one_pass() {
    let file = TomlFile::new(
        "typo-and-missing",
        "[api]\nbase_ur = \"https://x\"\ntoken = \"t\"\n",
    );
    let error = load(&file.cli(), &[]).unwrap_err();
    let keys: Vec<&str> = error.problems().iter().map(|p| p.key.as_str()).collect();
    assert_eq!(keys, ["api.base_ur", "api.base_url"], "{error}");
    let message = error.to_string();
    assert!(
        message.contains("unknown key `api.base_ur`; did you mean `api.base_url`?"),
        "{message}"
    );
    assert!(
        message.contains("\n  - api.base_url: required"),
        "{message}"
    );
}

#[test]
fn every_problem_of_several_keys_is_reported_and_a_wrong_value_only_once() {
    let vars = [
        ("REPUTATION_EXPORTER_API__BASE_URL", "not a url"),
        ("REPUTATION_EXPORTER_ASSET_REPORTS__CONCURRENCY", "0"),
        ("REPUTATION_EXPORTER_BACKOFF__INITIAL_DELAY", "5m"),
        ("REPUTATION_EXPORTER_WEB__TELEMETRY_PATH", "metrics"),
    ];
    let error = load(&Cli::default(), &vars).unwrap_err();
    let keys: Vec<&str> = error.problems().iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "api.base_url",
            "api.token_file",
            "backoff.initial_delay",
            "asset_reports.concurrency",
            "web.telemetry_path"
        ],
        "{error}"
    );
}

#[test]
fn a_reason_of_several_lines_is_indented_under_its_item_and_no_line_ends_in_a_space() {
    let mut vars = REMOTE.to_vec();
    vars.push(("REPUTATION_EXPORTER_ASSET_REPORTS__INCLUDE", "(unclosed"));
    vars.push(("REPUTATION_EXPORTER_POLL__INTERVAL", "soon"));
    let message = load(&Cli::default(), &vars).unwrap_err().to_string();
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(lines[0], "invalid configuration:", "{message}");
    assert!(
        lines.len() > 3,
        "the regex error has several lines: {message}"
    );
    for line in &lines[1..] {
        assert!(
            line.starts_with("  - ") || line.starts_with("    "),
            "a line outside its item: {line:?} in\n{message}"
        );
    }
    assert_eq!(lines.iter().filter(|l| l.starts_with("  - ")).count(), 2);
    assert!(lines.iter().all(|l| !l.ends_with(' ')), "{message:?}");
}

#[test]
fn wrong_values_in_several_accounts_are_each_reported_and_the_right_ones_kept() {
    let file = TomlFile::new(
        "accountvalues",
        "[accounts.eu]\nbase_url = \"https://eu.example.com\"\ntoken = \"e\"\ntimeout = \"x\"\n\
         [accounts.us]\nbase_url = \"not a url\"\ntoken = \"u\"\ntimeout = \"3s\"\n\
         [poll]\ninterval = 5\n",
    );
    let cli = file.cli();
    let (settings, problems) = Settings::extract(&cli, Vec::new());
    let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "accounts.eu.timeout",
            "accounts.us.base_url",
            "poll.interval"
        ],
        "{problems:?}"
    );
    // What was right in the same tables is kept.
    assert_eq!(
        settings.accounts["eu"].token.as_ref().map(|t| t.expose()),
        Some("e")
    );
    assert_eq!(
        settings.accounts["us"].timeout,
        std::time::Duration::from_secs(3)
    );
}

#[test]
fn a_misplaced_value_or_account_is_named_as_its_layer_writes_it() {
    let texts = |file: Option<&TomlFile>, vars: &[(&str, &str)]| -> Vec<String> {
        let cli = file.map_or_else(Cli::default, TomlFile::cli);
        let error = load(&cli, vars).unwrap_err();
        error.problems().iter().map(|p| p.text.clone()).collect()
    };
    let value = TomlFile::new("value", "poll = 5\n");
    let at = value.0.display().to_string();
    assert!(
        texts(Some(&value), REMOTE).contains(&format!(
            "{at}: `poll` must be a section (`[poll]`), not a value"
        )),
        "{:?}",
        texts(Some(&value), REMOTE)
    );
    let accounts = TomlFile::new("accounts-value", "accounts = 3\n");
    let at = accounts.0.display().to_string();
    assert!(texts(Some(&accounts), &[]).contains(&format!(
        "{at}: `accounts` must be tables, `[accounts.NAME]`"
    )));
    let account = TomlFile::new("account-value", "[accounts]\neu = 1\n");
    let at = account.0.display().to_string();
    assert!(texts(Some(&account), &[]).contains(&format!(
        "{at}: `accounts.eu` must be a table, `[accounts.eu]`"
    )));
    let env = texts(
        None,
        &[
            ("REPUTATION_EXPORTER_ACCOUNTS__EU", "x"),
            ("REPUTATION_EXPORTER_ACCOUNTS__US__TOKN", "t"),
            ("REPUTATION_EXPORTER_APII__TIMEOUT", "3s"),
        ],
    );
    for expected in [
        "REPUTATION_EXPORTER_ACCOUNTS__EU: an account's key is set as \
         REPUTATION_EXPORTER_ACCOUNTS__<NAME>__<KEY>",
        "REPUTATION_EXPORTER_ACCOUNTS__US__TOKN: unknown key `accounts.us.tokn`; did you mean \
         `REPUTATION_EXPORTER_ACCOUNTS__US__TOKEN`?",
        "REPUTATION_EXPORTER_APII__TIMEOUT: unknown section `apii`; did you mean \
         `REPUTATION_EXPORTER_API__TIMEOUT`?",
    ] {
        assert!(
            env.contains(&expected.to_owned()),
            "{expected} not in {env:#?}"
        );
    }
}

#[test]
fn a_token_file_that_is_empty_or_holds_a_blank_line_is_named_with_its_key_and_path() {
    let dir = std::env::temp_dir().join(format!("rexp-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (content, named) in [
        ("\n", "is empty"),
        (
            "t0ken\n\n",
            "holds a control character (a line break inside the token file?)",
        ),
    ] {
        let path = dir.join("token");
        std::fs::write(&path, content).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let file = TomlFile::new(
            "token-file",
            &format!(
                "[accounts.us]\nbase_url = \"https://us.example.com\"\ntoken_file = \"{}\"\n",
                path.display()
            ),
        );
        let error = load(&file.cli(), &[]).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "invalid configuration: accounts.us.token_file: the token in {} {named}",
                path.display()
            )
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_wrong_boolean_or_number_is_said_in_the_projects_words() {
    let file = TomlFile::new("words", "[asset_reports]\nenabled = \"yes\"\n");
    let vars = [
        REMOTE[0],
        REMOTE[1],
        ("REPUTATION_EXPORTER_ASSET_REPORTS__CONCURRENCY", "four"),
    ];
    let error = load(&file.cli(), &vars).unwrap_err();
    let texts: Vec<&str> = error.problems().iter().map(|p| p.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "REPUTATION_EXPORTER_ASSET_REPORTS__CONCURRENCY: `four` is not a whole number".into(),
            format!(
                "{}: `asset_reports.enabled`: `yes` is not true or false",
                file.0.display()
            ),
        ],
        "{error}"
    );
}
