//! `reputation-exporter backfill` against the simulated API with histories the test controls.

use reputation_simulate::SimulatedApi;
use serde_json::json;

use crate::backfill_command;

/// 2026-11-01T00:00:00Z.
pub const NOV_1: i64 = 1_793_491_200;

/// Runs `backfill` against `api` with these extra flags and environment; returns the exit
/// code, stderr and the file written (if any).
pub async fn backfill(
    api: &SimulatedApi,
    flags: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String, Option<String>) {
    let dir = std::env::temp_dir().join(format!(
        "rexp-backfill-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let output = dir.join("history.om");
    let destination = ["--output", output.to_str().unwrap()];
    let flags: Vec<&str> = destination.iter().chain(flags).copied().collect();
    let ran = run_backfill(api, &flags, env).await;
    let written = std::fs::read_to_string(&output).ok();
    let leftovers = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(
        leftovers,
        usize::from(written.is_some()),
        "scratch files left"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    (
        ran.status.code(),
        String::from_utf8_lossy(&ran.stderr).into_owned(),
        written,
    )
}

/// Runs `backfill` with these flags and environment against `api`, with its token.
pub async fn run_backfill(
    api: &SimulatedApi,
    flags: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    let url = api.spawn().await.unwrap();
    let mut command = backfill_command();
    command
        .args(flags)
        .env("REPUTATION_EXPORTER_API__BASE_URL", &url)
        .env("REPUTATION_EXPORTER_API__TOKEN", "demo-token");
    for (name, value) in env {
        command.env(name, value);
    }
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

/// Two addresses: 192.0.2.1 with a known history, 192.0.2.2 answering 404.
pub fn known_history() -> SimulatedApi {
    let api = one_known_history();
    api.hide_report("192.0.2.2");
    api
}

/// Two addresses, 192.0.2.1 with a known history.
fn one_known_history() -> SimulatedApi {
    let api = SimulatedApi::new(2, 0);
    api.set_report(
        "192.0.2.1",
        json!({
            "senderscore_history": [
                {"value": "82", "date": "3rd Nov 2026 01:00am"},
                {"value": "-1", "date": "2nd Nov 2026 01:00am"},
                {"value": "n/a", "date": "2nd Nov 2026 02:00am"},
                {"value": "80", "date": "1st Nov 2026 01:00am"}
            ],
            "blacklisted_history": [
                {"value": 1, "date": "2nd Nov 2026 01:00am"},
                {"value": 0, "date": "1st Nov 2026 01:00am"}
            ],
            "blacklist_history": [
                {"date": "2nd Nov 2026 01:00am", "status": "Listed", "blacklist": "SBL"},
                {"date": "3rd Nov 2026 01:00am", "status": "Delisted", "blacklist": "SBL"}
            ]
        }),
    );
    api
}

#[tokio::test(flavor = "multi_thread")]
async fn a_known_history_is_written_exactly_in_the_configured_zone_and_a_404_is_skipped() {
    let api = known_history();
    let (code, stderr, file) = backfill(
        &api,
        &["--skip-recent", "0s", "--label", "job=reputation"],
        &[(
            "REPUTATION_EXPORTER_ASSET_REPORTS__TIMEZONE",
            "Europe/Berlin",
        )],
    )
    .await;
    assert_eq!(code, Some(1), "an asset was skipped: {stderr}");
    let file = file.expect("the file holds what was fetched");
    // 01:00 in Berlin is midnight UTC in November.
    let day = |n: i64| NOV_1 + (n - 1) * 86_400;
    let series = r#"{job="reputation",kind="ip",asset="192.0.2.1"}"#;
    let expected = format!(
        "# HELP reputation_senderscore Sender Score of the asset (API field senderscore), 0 to \
         100; no sample when the API has no score (null or -1). Refreshed every poll.interval.\n\
         # TYPE reputation_senderscore gauge\n\
         reputation_senderscore{series} 80 {}\n\
         reputation_senderscore{series} 82 {}\n",
        day(1),
        day(3)
    );
    assert!(file.starts_with(&expected), "{file}");
    assert!(file.contains(&format!(
        "reputation_blacklistings{series} 0 {}\nreputation_blacklistings{series} 1 {}\n",
        day(1),
        day(2)
    )));
    let listed = r#"{job="reputation",kind="ip",asset="192.0.2.1",blacklist="SBL"}"#;
    assert!(file.contains(&format!(
        "reputation_blacklist_listed{listed} 1 {}\nreputation_blacklist_listed{listed} 0 {}\n",
        day(2),
        day(3)
    )));
    assert!(!file.contains("192.0.2.2"), "the 404 asset has no series");
    assert!(file.ends_with("# EOF\n"));
    assert!(stderr.contains("assets written: 1\n"), "{stderr}");
    assert!(
        stderr.contains("assets skipped: 1 (404: 1, 401/403: 0, gave up after retries: 0)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("samples: reputation_senderscore 2, reputation_blacklistings 2, reputation_blacklist_listed 2"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "values skipped: 2 (1 with no value (-1), 1 not a number, 0 with a date that cannot \
             be read)"
        ),
        "{stderr}"
    );

    // Python's strict OpenMetrics parser reads it back, timestamps and all.
    let families = reputation_testkit::reference_parse(
        &file,
        "openmetrics",
        env!("CARGO_TARGET_TMPDIR").as_ref(),
    );
    let names: Vec<&str> = families
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "reputation_senderscore",
            "reputation_blacklistings",
            "reputation_blacklist_listed"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn since_leaves_out_older_samples_and_a_complete_run_exits_0() {
    let api = one_known_history();
    api.set_report(
        "192.0.2.2",
        json!({"senderscore_history": [{"value": "70", "date": "1st Nov 2026 12:00pm"}]}),
    );
    let (code, stderr, file) =
        backfill(&api, &["--since", "2026-11-02", "--skip-recent", "0s"], &[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let file = file.unwrap();
    assert!(!file.contains(&format!(" {}\n", NOV_1 + 3600)), "{file}");
    assert!(file.contains(&format!(
        "reputation_senderscore{{kind=\"ip\",asset=\"192.0.2.1\"}} 82 {}\n",
        NOV_1 + 2 * 86_400 + 3600
    )));
    assert!(!file.contains("192.0.2.2\"} 70"), "older than --since");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_label_is_refused_before_anything_is_fetched() {
    let api = known_history();
    let (code, stderr, file) = backfill(&api, &["--label", "__name__=x"], &[]).await;
    assert_eq!(code, Some(1));
    assert!(
        stderr.starts_with("--label __name__=x: `__name__` is not a label name"),
        "{stderr}"
    );
    assert!(file.is_none());
    assert_eq!(api.requests("/api/v1/ip-list"), 0);
}
