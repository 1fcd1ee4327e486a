//! The binary itself: flags, exit codes, signals.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::helpers::{exporter, succeeded};

/// `--config.check` with these extra flags, against a valid base URL and token.
fn config_check(flags: &[&str]) -> std::process::Output {
    exporter()
        .arg("--config.check")
        .args(flags)
        .env(
            "REPUTATION_EXPORTER_API__BASE_URL",
            "https://api.example.com",
        )
        .env("REPUTATION_EXPORTER_API__TOKEN", "s3cr3t")
        .output()
        .unwrap()
}

/// Reads the exporter's stderr up to its `listening` line; returns the address it listens on
/// and every later line, collected as it comes (so the exporter never writes into a full pipe).
fn listening(child: &mut std::process::Child) -> (String, Arc<Mutex<Vec<String>>>) {
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let address = stderr
        .by_ref()
        .map_while(Result::ok)
        .find(|line| line.contains("listening"))
        .and_then(|line| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix("address="))
                .map(str::to_owned)
        })
        .expect("the exporter logs the address it listens on");
    let lines = Arc::new(Mutex::new(Vec::new()));
    std::thread::spawn({
        let lines = lines.clone();
        move || {
            stderr
                .map_while(Result::ok)
                .for_each(|l| lines.lock().unwrap().push(l))
        }
    });
    (address, lines)
}

/// The exporter in `--demo` mode on a free loopback port, with `flags`; its address and the
/// lines it logs after it listens.
fn demo_listening(flags: &[&std::ffi::OsStr]) -> (Running, String, Arc<Mutex<Vec<String>>>) {
    let mut running = Running(
        exporter()
            .args(["--demo", "--web.listen-address", "127.0.0.1:0"])
            .args(flags)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let (address, lines) = listening(&mut running.0);
    (running, address, lines)
}

/// An HTTP client for the tests of the binary.
fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_ends_the_exporter_with_status_0() {
    let (mut running, address, _lines) = demo_listening(&[]);
    let child = &mut running.0;
    let http = client();
    crate::helpers::eventually("readiness", || async {
        let ready = http.get(format!("http://{address}/-/ready")).send().await;
        ready.is_ok_and(|r| r.status() == 200)
    })
    .await;

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = exit_within(child, Duration::from_secs(10), "after SIGTERM");
    assert_eq!(status.code(), Some(0));
}

/// Waits for `child` to exit; kills it and fails after `limit`.
fn exit_within(
    child: &mut std::process::Child,
    limit: Duration,
    what: &str,
) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the exporter was still running {limit:?} {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn once_prints_the_exposition_and_exits_0_when_every_endpoint_answered() {
    let stdout = succeeded(exporter().args(["--demo", "--once"]).output().unwrap());
    assert!(stdout.contains("reputation_asset_info{kind=\"ip\",asset=\"192.0.2.1\"} 1\n"));
    assert!(stdout.contains("reputation_up 1\n"));
}

#[test]
fn config_check_prints_ok_or_names_the_bad_flag() {
    let good = config_check(&[]);
    assert_eq!(good.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&good.stdout), "ok\n");

    let bad = config_check(&["--web.listen-address", "nowhere"]);
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(
        stderr,
        "invalid configuration: --web.listen-address: `nowhere` is not an address and port \
         such as 0.0.0.0:9525 or [::1]:9525\n"
    );
    assert!(!stderr.contains("s3cr3t"));
}

#[test]
fn a_port_in_use_fails_the_start_with_a_clear_message() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    // The first address is free; the message names the one that is not.
    let output = exporter()
        .args(["--demo", "--web.listen-address", "127.0.0.1:0"])
        .args(["--web.listen-address", &address])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "cannot listen on {address} (web.listen_address): "
        )),
        "{stderr}"
    );
}

#[tokio::test]
async fn every_listen_address_serves_the_same_routes() {
    let mut running = Running(
        exporter()
            .args(["--demo", "--web.listen-address", "127.0.0.1:0"])
            .args(["--web.listen-address", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let addresses: Vec<String> = BufReader::new(running.0.stderr.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .filter(|line| line.contains("msg=listening"))
        .filter_map(|line| {
            let word = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("address="));
            word.map(str::to_owned)
        })
        .take(2)
        .collect();
    assert_eq!(addresses.len(), 2, "one `listening` line per address");
    assert_ne!(addresses[0], addresses[1]);
    let client = client();
    for address in &addresses {
        for (path, status) in [("/-/healthy", 200), ("/metrics", 200), ("/probe", 400)] {
            let answer = client
                .get(format!("http://{address}{path}"))
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status(), status, "{address}{path}");
        }
        let metrics = client.get(format!("http://{address}/metrics")).send();
        let body = metrics.await.unwrap().text().await.unwrap();
        assert!(
            body.contains("reputation_exporter_build_info{"),
            "{address}"
        );
    }
}

#[test]
fn the_systemd_socket_flag_without_a_passed_socket_fails_the_start_saying_so() {
    let output = exporter()
        .args(["--demo", "--web.systemd-socket"])
        .env_remove("LISTEN_FDS")
        .env_remove("LISTEN_PID")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "--web.systemd-socket: no socket was passed to this process (LISTEN_FDS is not set for \
         it); start it from a systemd .socket unit, or leave the flag out to listen on \
         --web.listen-address\n"
    );
}

#[test]
fn the_demo_fills_the_blacklist_panels_unless_asset_reports_are_turned_off() {
    let output = exporter().args(["--demo", "--once"]).output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("reputation_blacklist_listed{"), "{stdout}");
    assert!(stdout.contains("reputation_asset_tag_info{"));

    let output = exporter()
        .args(["--demo", "--once"])
        .env("REPUTATION_EXPORTER_ASSET_REPORTS__ENABLED", "false")
        .env("REPUTATION_EXPORTER_ASSET_REPORTS__LISTED", "false")
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("reputation_asset_info{"), "{stdout}");
    assert!(!stdout.contains("reputation_blacklist_listed{"));
}

#[test]
fn once_says_each_current_listing_as_its_page_does_newest_first() {
    let output = exporter().args(["--demo", "--once"]).output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    // The listings the exposition serves: (asset, blacklist, since).
    let mut served: Vec<(String, String, i64)> = stdout
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("reputation_blacklist_listed_since_timestamp_seconds{")?;
            let (labels, value) = rest.split_once("} ")?;
            let label = |name: &str| {
                let start = labels.find(&format!("{name}=\"",))? + name.len() + 2;
                Some(labels[start..].split('"').next()?.to_owned())
            };
            Some((
                label("asset")?,
                label("blacklist")?,
                value.parse::<f64>().ok()? as i64,
            ))
        })
        .collect();
    served.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| (&a.0, &a.1).cmp(&(&b.0, &b.1))));
    assert!(!served.is_empty(), "{stdout}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(" msg=listed "))
        .collect();
    assert_eq!(said.len(), served.len().min(25), "{stderr}");
    for (line, (asset, blacklist, since)) in said.iter().zip(&served) {
        let since = jiff::Timestamp::from_second(*since).unwrap().to_string();
        assert!(
            line.contains(&format!(" asset={asset} ")),
            "{line} vs {asset}"
        );
        assert!(
            line.contains(&format!(" blacklist={blacklist} "))
                || line.contains(&format!(" blacklist=\"{blacklist}\" ")),
            "{line} vs {blacklist}"
        );
        assert!(
            line.contains(&format!(" since={since} ")),
            "{line} vs {since}"
        );
        let table = reputation_exporter::blacklists::Blacklists::builtin();
        let page = table.said(blacklist);
        assert!(
            line.contains(&format!(" policy=\"{}\"", page.summary)),
            "{line}"
        );
        let removal = page.removal_for(asset);
        if !removal.is_empty() {
            assert!(
                line.ends_with(&format!(" removal={removal}"))
                    || line.ends_with(&format!(" removal=\"{removal}\"")),
                "{line}"
            );
        }
    }
}

/// The address of a loopback port where nothing listens: one the system just gave out and took
/// back, rather than a well-known port that may be served on some machine.
fn refused() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// The exporter pointed at a [`refused`] port, stderr piped.
fn against_refused_port(args: &[&str]) -> Command {
    let mut command = exporter();
    command
        .args(args)
        .env("REPUTATION_EXPORTER_API__BASE_URL", refused())
        .env("REPUTATION_EXPORTER_API__TOKEN", "x")
        .stderr(Stdio::piped())
        .stdout(Stdio::null());
    command
}

#[test]
fn a_start_against_a_refused_port_warns_about_each_list_endpoint_within_seconds() {
    let mut child = against_refused_port(&["--web.listen-address", "127.0.0.1:0"])
        .spawn()
        .unwrap();
    let started = Instant::now();
    let (lines, received) = std::sync::mpsc::channel();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let mut warned = Vec::new();
    while warned.len() < 2 {
        let left = Duration::from_secs(10).saturating_sub(started.elapsed());
        let Ok(line) = received.recv_timeout(left) else {
            break;
        };
        for endpoint in ["ip-list", "domain-list"] {
            if line.contains("level=warn")
                && line.contains(&format!("endpoint={endpoint} "))
                && line.to_ascii_lowercase().contains("connection refused")
            {
                assert!(line.contains("next_attempt_in="), "{line}");
                assert!(!line.contains("last good values"), "{line}");
                warned.push(endpoint);
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    warned.sort();
    assert_eq!(warned, ["domain-list", "ip-list"], "no warning within 10 s");
}

#[test]
fn once_against_a_refused_port_exits_1_within_a_bound_and_says_why() {
    // The exposition of an account without data is a few KB: it fits the pipe until exit.
    let mut child = against_refused_port(&["--once"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let status = exit_within(&mut child, Duration::from_secs(10), "after --once started");
    assert_eq!(status.code(), Some(1));
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    assert!(stdout.contains("reputation_up 0\n"), "{stdout}");
    let attempts = stdout
        .lines()
        .find_map(|l| {
            l.strip_prefix(r#"reputation_api_requests_total{endpoint="ip-list",code="connect"} "#)
        })
        .and_then(|v| v.parse::<u32>().ok());
    assert_eq!(
        attempts,
        Some(1),
        "a one-shot command does not retry an API it cannot connect to: {stdout}"
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains(r#"level=error msg="--once: not every endpoint answered" failed=""#)
            && last.contains("ip-list: connection refused")
            && last.contains("domain-list: connection refused")
            && last.contains(r#"ready="not ready: no list has been polled successfully yet""#),
        "{last}"
    );
    // Not retried, and there is no next poll to speak of: each list says what to check.
    for endpoint in ["ip-list", "domain-list"] {
        let line = stderr
            .lines()
            .find(|l| l.contains(&format!("endpoint={endpoint} ")))
            .unwrap_or_else(|| panic!("{stderr}"));
        assert!(
            line.contains("level=warn msg=\"no connection; it has given no values yet\"")
                && line.contains("Connection refused")
                && line.ends_with(" check=api.base_url"),
            "{line}"
        );
    }
    assert!(!stderr.contains("retrying"), "{stderr}");
    assert!(!stderr.contains("next_poll"), "{stderr}");
}

#[test]
fn config_check_says_when_the_token_file_is_readable_by_every_user() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = std::env::temp_dir().join(format!("rexp-mode-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("token");
    std::fs::write(&path, "t0ken\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let output = exporter()
        .arg("--config.check")
        .env(
            "REPUTATION_EXPORTER_API__BASE_URL",
            "https://api.example.com",
        )
        .env("REPUTATION_EXPORTER_API__TOKEN_FILE", &path)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let remedy = format!("chmod o-r {}", path.display());
    // Refused, or (as root in a container, where secrets are mounted) a warning before `ok`.
    match output.status.code() {
        Some(0) => {
            assert!(stderr.starts_with("warning: "), "{stderr}");
            assert_eq!(String::from_utf8_lossy(&output.stdout), "ok\n");
        }
        _ => assert!(
            stderr.starts_with("invalid configuration: api.token_file: "),
            "{stderr}"
        ),
    }
    assert!(
        stderr.contains("is readable by every user (mode 644)"),
        "{stderr}"
    );
    assert!(stderr.contains(&remedy), "{stderr}");
}

#[test]
fn version_names_the_version_revision_and_compiler_and_help_ends_on_the_environment() {
    let output = exporter().arg("--version").output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let version = String::from_utf8(output.stdout).unwrap();
    // Checked against the sources of truth themselves, not the build's own copies of them.
    let manifest =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let cargo_version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .unwrap();
    let rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("--version")
        .output()
        .unwrap();
    let rustc = String::from_utf8(rustc.stdout).unwrap();
    let prefix = format!("reputation-exporter {cargo_version} (revision ");
    let suffix = format!(", built with {})\n", rustc.trim());
    let revision = version
        .strip_prefix(&prefix)
        .and_then(|rest| rest.strip_suffix(&suffix))
        .unwrap_or_else(|| panic!("{version:?} is not {prefix}REVISION{suffix}"));
    assert!(
        revision == "unknown"
            || (revision.len() == 12 && revision.chars().all(|c| c.is_ascii_hexdigit())),
        "{revision:?} is no git revision"
    );

    let help = exporter().arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let last = help.trim_end().lines().last().unwrap();
    assert!(
        last.contains("REPUTATION_EXPORTER_<SECTION>__<KEY>")
            && last.contains("config/reputation-exporter.toml"),
        "{last}"
    );
}

/// The stderr of `--once` against a refused port, in `format`.
fn once_logs(format: &str) -> String {
    let output = against_refused_port(&["--once", "--log.format", format, "--log.level", "debug"])
        .env("REPUTATION_EXPORTER_BACKOFF__MAX_ELAPSED", "1s")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    String::from_utf8(output.stderr).unwrap()
}

#[test]
fn every_log_line_parses_as_logfmt_with_level_and_msg_or_as_json() {
    let logfmt = once_logs("logfmt");
    assert!(logfmt.lines().count() >= 5, "{logfmt}");
    for line in logfmt.lines() {
        let pairs = logfmt_pairs(line).unwrap_or_else(|| panic!("not logfmt: {line}"));
        let keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys[..3], ["ts", "level", "msg"], "{line}");
        assert!(
            ["error", "warn", "info", "debug", "trace"].contains(&pairs[1].1.as_str()),
            "{line}"
        );
    }
    let json = once_logs("json");
    for line in json.lines() {
        let value: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(
            value["level"].is_string() && value["message"].is_string(),
            "{line}"
        );
    }
}

/// The `key=value` pairs of a logfmt line (values bare, or quoted with `\` escapes), or
/// `None` when the line is not logfmt.
fn logfmt_pairs(line: &str) -> Option<Vec<(String, String)>> {
    let mut pairs = Vec::new();
    let mut chars = line.chars().peekable();
    while chars.peek().is_some() {
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() || key.contains(' ') {
            return None;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next()? {
                    '\\' => value.push(chars.next()?),
                    '"' => break,
                    c => value.push(c),
                }
            }
            if !matches!(chars.next(), None | Some(' ')) {
                return None;
            }
        } else {
            value = chars.by_ref().take_while(|c| *c != ' ').collect();
            if value.contains('"') {
                return None;
            }
        }
        pairs.push((key, value));
    }
    Some(pairs)
}

#[tokio::test(flavor = "multi_thread")]
async fn sighup_reloads_the_configuration_and_never_ends_the_process() {
    let dir = std::env::temp_dir().join(format!("rexp-hup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("exporter.toml");
    std::fs::write(&file, "[poll]\ninterval = \"1h\"\n").unwrap();
    let (mut running, address, lines) =
        demo_listening(&["--config.file".as_ref(), file.as_os_str()]);
    let child = &mut running.0;
    let http = client();
    let metrics = || async {
        let url = format!("http://{address}/metrics");
        http.get(url).send().await.unwrap().text().await.unwrap()
    };
    let until = |what: &'static str, condition: LinesCondition| {
        let lines = lines.clone();
        async move {
            crate::helpers::eventually(what, || async { condition(&lines.lock().unwrap()) }).await;
        }
    };
    let hangup = |child: &std::process::Child| {
        let sent = Command::new("kill")
            .args(["-HUP", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    };
    let reloaded = |n: usize| {
        Box::new(move |l: &[String]| {
            l.iter()
                .filter(|l| l.contains("msg=\"configuration reloaded\""))
                .count()
                == n
        }) as LinesCondition
    };
    let logged = |text: &str| lines.lock().unwrap().iter().any(|l| l.contains(text));
    let gauge = |body: &str| {
        crate::helpers::sample(body, "reputation_exporter_config_last_reload_successful")
    };

    assert_eq!(gauge(&metrics().await), Some(1.0));
    // Each SIGHUP: what the file's [poll] says by then (unchanged at first), what the log must
    // say, a line it must hold, and the reload gauge after.
    let refused: LinesCondition = Box::new(|l: &[String]| {
        l.iter()
            .any(|l| l.contains("reload refused") && l.contains("poll.interval"))
    });
    struct Step {
        poll: Option<&'static str>,
        what: &'static str,
        condition: LinesCondition,
        line: Option<&'static str>,
        successful: f64,
    }
    let steps = [
        Step {
            poll: None,
            what: "reload",
            condition: reloaded(1),
            line: Some(" kept=[api]"),
            successful: 1.0,
        },
        Step {
            poll: Some("interval = \"soon\""),
            what: "refusal",
            condition: refused,
            line: None,
            successful: 0.0,
        },
        Step {
            poll: Some("interval = \"30m\""),
            what: "second reload",
            condition: reloaded(2),
            line: Some(" changed=\"\" reconfigured=\"[api]: poll.interval\" "),
            successful: 1.0,
        },
    ];
    for Step {
        poll,
        what,
        condition,
        line,
        successful,
    } in steps
    {
        if let Some(poll) = poll {
            std::fs::write(&file, format!("[poll]\n{poll}\n")).unwrap();
        }
        hangup(child);
        until(what, condition).await;
        if let Some(line) = line {
            assert!(logged(line), "{what}: no line with {line:?}");
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "{what}: SIGHUP ended the process"
        );
        assert_eq!(
            gauge(&metrics().await),
            Some(successful),
            "after the {what}"
        );
    }

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = exit_within(child, Duration::from_secs(10), "after SIGTERM");
    assert_eq!(status.code(), Some(0));
    std::fs::remove_dir_all(dir).unwrap();
}

/// A condition on the lines logged so far.
type LinesCondition = Box<dyn Fn(&[String]) -> bool>;

/// A child process that is killed when the test ends, whether it passed or not.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn simulate_takes_only_its_own_flags_and_backfill_takes_the_common_ones_on_either_side() {
    let help = succeeded(exporter().args(["simulate", "--help"]).output().unwrap());
    let (_, options) = help.split_once("Options:").expect("an options section");
    for flag in ["--assets", "--listen-address", "--report-latency"] {
        assert!(options.contains(flag), "{flag} missing from\n{help}");
    }
    for flag in ["--demo", "--target", "--config.file", "--log.level"] {
        assert!(!options.contains(flag), "{flag} listed in\n{help}");
    }
    let refused = exporter()
        .args(["simulate", "--demo", "--target", "foo"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("unexpected argument '--demo'"), "{stderr}");

    let backfill_help = succeeded(exporter().args(["backfill", "--help"]).output().unwrap());
    for flag in [
        "--demo",
        "--target",
        "--config.file",
        "--log.level",
        "--output",
    ] {
        assert!(
            backfill_help.contains(flag),
            "{flag} missing from\n{backfill_help}"
        );
    }
    let dir = std::env::temp_dir().join(format!("rexp-flags-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, args) in [
        ["--demo", "backfill", "--output"],
        ["backfill", "--demo", "--output"],
    ]
    .iter()
    .enumerate()
    {
        let file = dir.join(format!("history-{i}.om"));
        let output = exporter()
            .args(args)
            .arg(&file)
            .args(["--since", "2d", "--log.level", "error"])
            .output()
            .unwrap();
        let summary = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(0), "{args:?}: {summary}");
        assert!(
            summary.contains("assets written: 36"),
            "{args:?}: {summary}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}
