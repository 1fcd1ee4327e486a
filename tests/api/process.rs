//! The binary itself: flags, exit codes, signals.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::exporter;

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

#[test]
fn sigterm_ends_the_exporter_with_status_0() {
    let mut child = exporter()
        .args(["--demo", "--web.listen-address", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
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
    // Keep reading, so the exporter never writes into a full pipe.
    std::thread::spawn(move || stderr.for_each(drop));

    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let ready = Command::new("curl")
            .args([
                "-sf",
                "-o",
                "/dev/null",
                &format!("http://{address}/-/ready"),
            ])
            .status()
            .is_ok_and(|s| s.success());
        if ready {
            break;
        }
        assert!(Instant::now() < deadline, "never ready");
        std::thread::sleep(Duration::from_millis(50));
    }

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the exporter did not stop within 10 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}

#[test]
fn once_prints_the_exposition_and_exits_0_when_every_endpoint_answered() {
    let output = exporter().args(["--demo", "--once"]).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("reputation_asset_info{kind=\"ip\",asset=\"192.0.2.1\"} 1\n"));
    assert!(stdout.contains("reputation_up 1\n"));
}

#[test]
fn once_exits_1_when_the_api_cannot_be_reached() {
    let output = exporter()
        .args(["--once"])
        .env("REPUTATION_EXPORTER_API__BASE_URL", "http://127.0.0.1:9")
        .env("REPUTATION_EXPORTER_API__TOKEN", "x")
        .env("REPUTATION_EXPORTER_API__TIMEOUT", "2s")
        .env("REPUTATION_EXPORTER_BACKOFF__INITIAL_DELAY", "100ms")
        .env("REPUTATION_EXPORTER_BACKOFF__MAX_ELAPSED", "1s")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("reputation_up 0\n"));
    let refused = stdout
        .lines()
        .find_map(|l| {
            l.strip_prefix(r#"reputation_api_requests_total{endpoint="ip-list",code="connect"} "#)
        })
        .and_then(|v| v.parse::<u32>().ok());
    assert!(
        refused >= Some(2),
        "connection errors are retried: {stdout}"
    );
}

#[test]
fn config_check_prints_ok_or_names_the_bad_key() {
    let good = config_check(&[]);
    assert_eq!(good.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&good.stdout), "ok\n");

    let bad = config_check(&["--web.listen-address", "nowhere"]);
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("web.listen_address"), "{stderr}");
    assert!(!stderr.contains("s3cr3t"));
}

#[test]
fn a_port_in_use_fails_the_start_with_a_clear_message() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let output = exporter()
        .args(["--demo", "--web.listen-address", &address])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("cannot listen on {address}")),
        "{stderr}"
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
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("reputation_asset_info{"), "{stdout}");
    assert!(!stdout.contains("reputation_blacklist_listed{"));
}
