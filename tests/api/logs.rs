//! What an operator reads: which account a line is about, one line per change of state, one
//! line per report round. Each test reads only the log of its own exporter.

use reputation_exporter::config::Settings;
use reputation_simulate::SimulatedApi;

use std::time::Duration;

use crate::helpers::{Options, PausedApp, eventually, spawn_app_with};

const IP_LIST: &str = "/api/v1/ip-list";

/// Retries that give up within a tenth of a second, so that a 300 ms poll gives up every time.
fn quick_give_up(settings: &mut Settings) {
    settings.backoff.initial_delay = crate::helpers::duration("10ms");
    settings.backoff.max_delay = crate::helpers::duration("20ms");
    settings.backoff.max_elapsed = crate::helpers::duration("100ms");
}

fn lines_with<'a>(log: &'a str, parts: &[&str]) -> Vec<&'a str> {
    log.lines()
        .filter(|l| parts.iter().all(|p| l.contains(p)))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_down_account_is_logged_once_per_streak_and_once_when_it_answers_again_by_name() {
    let up = SimulatedApi::new(2, 1);
    let down = SimulatedApi::new(2, 1);
    down.set_outage(IP_LIST, Some(503));
    // Production's schedule and backoff: 5-minute polls, each retried and given up.
    let app = PausedApp::accounts(vec![("up", up), ("down", down.clone())], "5m", |_| {}).await;
    let start = tokio::time::Instant::now();
    let poll = Duration::from_secs(300);

    // Four polls of the down account (at 0, 5, 10 and 15 minutes), each retried.
    tokio::time::sleep(3 * poll + Duration::from_secs(200)).await;
    let arrivals = down.arrivals(IP_LIST);
    let polls: Vec<usize> = (0..4)
        .map(|k| {
            let from = start + poll * k;
            assert_eq!(arrivals.iter().find(|at| **at >= from), Some(&from));
            arrivals
                .iter()
                .filter(|at| **at >= from && **at < from + poll)
                .count()
        })
        .collect();
    assert!(
        polls.iter().all(|n| *n >= 2),
        "attempts per poll: {polls:?}"
    );
    assert_eq!(polls.iter().sum::<usize>(), arrivals.len());
    down.set_outage(IP_LIST, None);
    tokio::time::sleep(poll).await;
    let log = app.logs();
    assert!(log.contains("the endpoint answers again"), "{log}");

    let failing = ["account=down", "endpoint=ip-list"];
    assert_eq!(
        lines_with(&log, &[&failing[..], &["gave up retrying"]].concat()).len(),
        1,
        "one give-up line for the whole streak:\n{log}"
    );
    assert_eq!(
        lines_with(
            &log,
            &[&failing[..], &["request failed; retrying"]].concat()
        )
        .len(),
        1,
        "one line when the streak began:\n{log}"
    );
    assert_eq!(
        lines_with(
            &log,
            &[&failing[..], &["the endpoint answers again"]].concat()
        )
        .len(),
        1,
        "{log}"
    );
    assert_eq!(
        lines_with(&log, &["msg=\"API account\"", "account=up"]).len(),
        1
    );
    assert_eq!(
        lines_with(&log, &["msg=\"API account\"", "account=down"]).len(),
        1
    );
    for line in log.lines().filter(|l| l.contains("endpoint=")) {
        assert!(
            line.contains(" account="),
            "a line without its account: {line}"
        );
    }
    assert!(
        lines_with(&log, &["account=up", "level=warn"]).is_empty(),
        "{log}"
    );
}

#[tokio::test]
async fn a_report_round_ends_in_one_line_with_its_counts_and_the_reasons_of_its_failures() {
    let upstream = SimulatedApi::new(3, 2);
    upstream.set_outage("/api/v1/asset", Some(503));
    upstream.hide_report("mail0.example.com");
    let app = spawn_app_with(Options {
        upstream,
        interval: "30s",
        configure: Box::new(|s| {
            quick_give_up(s);
            s.asset_reports.enabled = true;
            s.asset_reports.interval = crate::helpers::duration("1s");
        }),
        ..Options::default()
    })
    .await;
    let log = app.log_when("asset report round ended").await;
    let ended = lines_with(&log, &["asset report round ended"]);
    assert!(ended[0].contains(" level=warn "), "{}", ended[0]);
    assert!(
        ended[0]
            .contains(r#" assets=5 fetched=0 not_found=0 failed=5 failures="HTTP 503=5" took="#),
        "{}",
        ended[0]
    );
    assert!(
        lines_with(&log, &["level=warn", "asset="]).is_empty(),
        "no warning per asset:\n{log}"
    );

    app.upstream.set_outage("/api/v1/asset", None);
    eventually("a round without failures", || async {
        !lines_with(&app.logs(), &["asset report round ended", "failed=0"]).is_empty()
    })
    .await;
    let log = app.logs();
    let good = lines_with(&log, &["asset report round ended", "failed=0"]);
    assert!(
        good[0].contains(" level=info ")
            && good[0].contains(" assets=5 fetched=4 not_found=1 failed=0 took="),
        "{}",
        good[0]
    );
}
