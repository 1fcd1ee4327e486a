//! Fault injection: the simulated API answers with scripted statuses, delays and bodies, and
//! every row of the failure policy is checked by request counts, timings and `/metrics`.
//!
//! What depends on time (Retry-After, giving up, expiry) runs on Tokio's paused clock with the
//! upstream in process, so its timings are exact; the rest over loopback with delays scaled
//! down to tens of milliseconds. The retry schedule itself is checked in `upstream::retry`.

use std::time::Duration;

use reputation_exporter::config::Settings;
use reputation_exporter::logging::LogFormat;
use reputation_simulate::List;
use reputation_simulate::{Fault, SimulatedApi};

use crate::helpers::{Options, PausedApp, TestApp, eventually, sample, spawn_app_with, up, value};

const IP_LIST: &str = "/api/v1/ip-list";
const DOMAIN_LIST: &str = "/api/v1/domain-list";

/// Fast retries: ceilings 100, 200, 400, 400... ms, given up after 2 s.
fn fast_backoff(settings: &mut Settings) {
    settings.backoff.initial_delay = crate::helpers::duration("100ms");
    settings.backoff.max_delay = crate::helpers::duration("400ms");
    settings.backoff.max_elapsed = crate::helpers::duration("2s");
}

fn options(interval: &'static str, configure: fn(&mut Settings)) -> Options {
    Options {
        interval,
        configure: Box::new(move |s| {
            fast_backoff(s);
            configure(s);
        }),
        ..Options::default()
    }
}

#[tokio::test]
async fn a_burst_of_503_is_retried_with_growing_ceilings_until_the_list_arrives() {
    let mut app = spawn_app_with(Options {
        start_polling: false,
        ..options("30s", |_| {})
    })
    .await;
    for _ in 0..3 {
        app.upstream.push_fault(IP_LIST, Fault::Status(503));
    }
    app.start_polling();
    let body = app.metrics_when("the list to arrive", up).await;

    // The delays themselves (full jitter under a ceiling that doubles) are checked on Tokio's
    // paused clock in `upstream::retry`; here, what reached the API and what was counted.
    let arrivals = app.upstream.arrivals(IP_LIST);
    assert_eq!(arrivals.len(), 4, "three 503 then one 200");
    assert_eq!(
        value(&body, r#"reputation_api_retries_total{endpoint="ip-list"}"#),
        3.0
    );
    assert_eq!(
        value(
            &body,
            r#"reputation_api_requests_total{endpoint="ip-list",code="503"}"#
        ),
        3.0
    );
    assert_eq!(
        value(
            &body,
            r#"reputation_api_requests_total{endpoint="ip-list",code="200"}"#
        ),
        1.0
    );
    assert_eq!(value(&body, r#"reputation_assets{kind="ip"}"#), 3.0);
    assert_eq!(
        app.upstream.requests(DOMAIN_LIST),
        1,
        "the other list was not held back"
    );
}

/// On the paused clock: the upstream's arrival times are exact.
async fn paused(
    interval: &str,
    max_age: &str,
    configure: impl FnOnce(&mut Settings),
    faults: impl FnOnce(&SimulatedApi),
) -> PausedApp {
    let upstream = SimulatedApi::new(3, 2);
    faults(&upstream);
    PausedApp::start(upstream, interval, max_age, |s| {
        fast_backoff(s);
        configure(s);
    })
    .await
}

/// Lets the paused clock run `by`.
async fn run(by: &str) {
    tokio::time::sleep(crate::helpers::duration(by)).await;
}

#[tokio::test(start_paused = true)]
async fn retry_after_of_2_seconds_holds_the_next_request_back_2_seconds() {
    let app = paused(
        "30s",
        "1h",
        |s| {
            s.backoff.max_delay = crate::helpers::duration("5s");
            s.backoff.max_elapsed = crate::helpers::duration("10s");
        },
        |api| api.push_fault(IP_LIST, Fault::RetryAfter(503, "2".into())),
    )
    .await;
    run("3s").await;
    assert_eq!(value(&app.metrics().await, "reputation_up"), 1.0);
    let arrivals = app.upstream.arrivals(IP_LIST);
    assert_eq!(arrivals.len(), 2);
    assert_eq!(arrivals[1] - arrivals[0], Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn a_429_is_waited_out_as_retry_after_says_and_retried_within_the_same_poll() {
    let app = paused(
        "1h",
        "2h",
        |s| {
            s.backoff.max_delay = crate::helpers::duration("5s");
            s.backoff.max_elapsed = crate::helpers::duration("10s");
        },
        |api| api.push_fault(IP_LIST, Fault::RetryAfter(429, "1".into())),
    )
    .await;
    run("2s").await;
    let body = app.metrics().await;
    assert_eq!(value(&body, "reputation_up"), 1.0);
    let arrivals = app.upstream.arrivals(IP_LIST);
    assert_eq!(
        arrivals.len(),
        2,
        "one 429, then the list, in one poll of an hourly loop"
    );
    assert_eq!(arrivals[1] - arrivals[0], Duration::from_secs(1));
    assert_eq!(
        value(
            &body,
            r#"reputation_api_requests_total{endpoint="ip-list",code="429"}"#
        ),
        1.0
    );
    assert_eq!(
        value(&body, r#"reputation_api_retries_total{endpoint="ip-list"}"#),
        1.0
    );
}

#[tokio::test(start_paused = true)]
async fn an_endless_503_is_given_up_within_max_elapsed_and_values_expire_after_max_age() {
    let app = paused(
        "2s",
        "3s",
        |s| {
            s.backoff.max_delay = crate::helpers::duration("200ms");
            s.backoff.max_elapsed = crate::helpers::duration("600ms");
        },
        |_| {},
    )
    .await;
    let start = tokio::time::Instant::now();
    run("100ms").await;
    assert_eq!(value(&app.metrics().await, "reputation_up"), 1.0);
    app.upstream.set_outage(IP_LIST, Some(503));

    // The poll at 2 s fails (given up by 2.6 s); the last good values (from 0 s) stay served
    // until they are 3 s old.
    run("2700ms").await;
    let body = app.metrics().await;
    assert_eq!(
        value(&body, r#"reputation_api_up{endpoint="ip-list"}"#),
        0.0
    );
    assert_eq!(value(&body, "reputation_up"), 0.0);
    assert_eq!(value(&body, r#"reputation_assets{kind="ip"}"#), 3.0);
    run("300ms").await;
    let body = app.metrics().await;
    assert_eq!(
        value(&body, r#"reputation_assets{kind="ip"}"#),
        0.0,
        "expired by 3.1 s"
    );
    assert!(!body.contains(r#"reputation_asset_info{kind="ip""#));
    assert_eq!(value(&body, r#"reputation_assets{kind="domain"}"#), 2.0);

    // Each poll of the outage retried within 600 ms of its start, gave up, and the next poll
    // started afresh 2 s after the one before.
    run("4s").await;
    let arrivals = app.upstream.arrivals(IP_LIST);
    let polls: Vec<Vec<Duration>> = [2, 4, 6]
        .map(|second| {
            let poll = start + Duration::from_secs(second);
            arrivals
                .iter()
                .filter(|at| **at >= poll && **at < poll + Duration::from_secs(2))
                .map(|at| *at - poll)
                .collect()
        })
        .into();
    for attempts in &polls {
        assert!(attempts.len() >= 2, "retried: {polls:?}");
        assert_eq!(attempts[0], Duration::ZERO, "on schedule: {polls:?}");
        assert!(
            attempts.iter().all(|at| *at <= Duration::from_millis(600)),
            "no attempt after max_elapsed: {polls:?}"
        );
    }
    assert_eq!(
        arrivals.len(),
        1 + polls.iter().map(Vec::len).sum::<usize>()
    );
}

#[tokio::test]
async fn a_rejected_token_is_tried_once_per_interval_and_recovers_when_accepted() {
    let upstream = SimulatedApi::new(3, 2);
    upstream.set_token("another-token");
    let app = spawn_app_with(Options {
        upstream,
        ..options("400ms", |_| {})
    })
    .await;
    let body = app
        .metrics_when("the rejection", |b| {
            sample(b, "reputation_api_auth_ok") == Some(0.0)
        })
        .await;
    assert_eq!(value(&body, "reputation_up"), 0.0);
    assert_eq!(app.get("/-/ready").await.status(), 503);
    // One attempt per interval: three polls have tried, and the backoff retried none of them.
    eventually("three polls", || async {
        app.upstream.requests(IP_LIST) >= 3
    })
    .await;
    let body = app.metrics().await;
    assert_eq!(
        sample(&body, r#"reputation_api_retries_total{endpoint="ip-list"}"#),
        Some(0.0)
    );
    assert!(
        value(
            &body,
            r#"reputation_api_requests_total{endpoint="ip-list",code="401"}"#
        ) >= 2.0
    );
    assert!(app.logs().contains("the token is rejected"));

    app.upstream.set_token(reputation_simulate::DEMO_TOKEN);
    let body = app.metrics_when("the recovery", up).await;
    assert_eq!(value(&body, "reputation_api_auth_ok"), 1.0);
    assert_eq!(app.get("/-/ready").await.status(), 200);
}

#[tokio::test]
async fn a_403_is_not_retried_and_marks_the_token_rejected() {
    let mut app = spawn_app_with(Options {
        start_polling: false,
        ..options("30s", |_| {})
    })
    .await;
    app.upstream.push_fault(DOMAIN_LIST, Fault::Status(403));
    app.start_polling();
    let body = app
        .metrics_when("the first poll", |b| {
            sample(b, r#"reputation_api_up{endpoint="ip-list"}"#) == Some(1.0)
                && sample(b, "reputation_api_auth_ok").is_some()
                && sample(
                    b,
                    r#"reputation_api_requests_total{endpoint="domain-list",code="403"}"#,
                )
                .is_some()
        })
        .await;
    assert_eq!(value(&body, "reputation_api_auth_ok"), 0.0);
    assert_eq!(
        value(&body, r#"reputation_api_up{endpoint="domain-list"}"#),
        0.0
    );
    // The cycle has ended (its duration is recorded) and the next is 30 s away: one request.
    app.metrics_when("the end of the poll cycle", |b| {
        sample(b, "reputation_poll_duration_seconds").is_some()
    })
    .await;
    assert_eq!(app.upstream.requests(DOMAIN_LIST), 1);
}

#[tokio::test]
async fn a_timeout_is_counted_and_retried() {
    let mut app = spawn_app_with(Options {
        start_polling: false,
        ..options("30s", |s| s.api.timeout = crate::helpers::duration("300ms"))
    })
    .await;
    app.upstream
        .push_fault(IP_LIST, Fault::Delay(Duration::from_secs(3)));
    app.start_polling();
    let body = app.metrics_when("the list to arrive", up).await;
    assert_eq!(
        value(
            &body,
            r#"reputation_api_requests_total{endpoint="ip-list",code="timeout"}"#
        ),
        1.0
    );
    assert_eq!(
        value(&body, r#"reputation_api_retries_total{endpoint="ip-list"}"#),
        1.0
    );
    assert_eq!(app.upstream.requests(IP_LIST), 2);
}

#[tokio::test]
async fn a_refused_connection_is_counted_retried_and_the_exporter_keeps_serving() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let app = spawn_app_with(Options {
        configure: Box::new(move |s| {
            fast_backoff(s);
            s.backoff.max_elapsed = crate::helpers::duration("500ms");
            s.api.base_url = Some(format!("http://{address}").parse().unwrap());
        }),
        interval: "30s",
        ..Options::default()
    })
    .await;
    let body = app
        .metrics_when("the retries to be given up", |b| {
            sample(b, r#"reputation_api_up{endpoint="ip-list"}"#) == Some(0.0)
                && sample(b, "reputation_poll_duration_seconds").is_some()
        })
        .await;
    assert!(
        value(
            &body,
            r#"reputation_api_requests_total{endpoint="ip-list",code="connect"}"#
        ) >= 2.0
    );
    assert!(value(&body, r#"reputation_api_retries_total{endpoint="ip-list"}"#) >= 1.0);
    assert_eq!(value(&body, "reputation_up"), 0.0);
    assert_eq!(app.get("/-/healthy").await.status(), 200);
    assert_eq!(app.get("/-/ready").await.status(), 503);
}

/// Serves a good first poll, then `fault` once on ip-list, and waits for the failed poll.
async fn after_one_bad_ip_list(fault: Fault, configure: fn(&mut Settings)) -> (TestApp, String) {
    let app = spawn_app_with(options("300ms", configure)).await;
    app.metrics_when("the first poll", up).await;
    app.upstream.push_fault(IP_LIST, fault);
    let body = app
        .metrics_when("the bad answer", |b| {
            sample(
                b,
                r#"reputation_api_requests_total{endpoint="ip-list",code="decode"}"#,
            )
            .is_some()
        })
        .await;
    (app, body)
}

#[tokio::test]
async fn malformed_json_fails_the_poll_without_retry_and_keeps_the_values() {
    for bad in [
        "[{\"ip\": \"192.0.2.1\", ",
        "<html>oops</html>",
        "{\"ip\": 1}",
    ] {
        let (app, body) = after_one_bad_ip_list(Fault::Body(bad.into()), |_| {}).await;
        assert_eq!(
            sample(&body, r#"reputation_api_retries_total{endpoint="ip-list"}"#),
            Some(0.0),
            "{bad}"
        );
        assert_eq!(
            value(&body, r#"reputation_assets{kind="ip"}"#),
            3.0,
            "{bad}"
        );
        let log = app.logs();
        assert!(
            log.lines().any(|l| l.contains("ip-list")
                && l.contains("poll failed")
                && l.contains("JSON path $")),
            "no log line names the endpoint and the JSON path"
        );
        // The next poll is good again.
        app.metrics_when("recovery", up).await;
    }
}

#[tokio::test]
async fn a_wrong_type_in_one_item_skips_that_item_only() {
    let upstream = SimulatedApi::new(3, 2);
    let mut ips = upstream.items(List::Ip);
    ips[1]["senderscore"] = serde_json::json!("eighty");
    upstream.set_items(List::Ip, ips);
    let app = spawn_app_with(Options {
        upstream,
        ..options("30s", |_| {})
    })
    .await;
    let body = app.metrics_when("the first poll", up).await;
    assert_eq!(value(&body, r#"reputation_assets{kind="ip"}"#), 2.0);
    assert!(!body.contains(r#"asset="192.0.2.2""#));
    assert!(body.contains(r#"reputation_asset_info{kind="ip",asset="192.0.2.3"} 1"#));
    assert_eq!(
        value(
            &body,
            r#"reputation_unrecognized_values_total{field="senderscore"}"#
        ),
        1.0
    );
    assert!(
        app.logs()
            .lines()
            .any(|l| l.contains("skipped an invalid item") && l.contains("$[1].senderscore"))
    );
}

/// A list is read as it arrives: a body that is no array fails as soon as its first bytes say
/// so, not when the body ends or the request times out (the body here never ends).
#[tokio::test]
async fn a_list_that_is_no_array_fails_at_its_first_bytes_however_long_the_rest() {
    let (app, body) = after_one_bad_ip_list(
        Fault::Stall(r#"{"error": "upstream exploded", "detail": "#.into()),
        |s| s.api.timeout = crate::helpers::duration("1h"),
    )
    .await;
    assert_eq!(
        sample(
            &body,
            r#"reputation_api_requests_total{endpoint="ip-list",code="timeout"}"#
        ),
        None
    );
    assert!(
        app.logs().contains(
            r#"expected a JSON array of list items, found `{\"error\": \"upstream exploded\""#
        ),
        "{}",
        app.logs()
    );
    app.metrics_when("recovery", up).await;
}

#[tokio::test]
async fn a_body_over_max_body_bytes_fails_that_list_only() {
    let app = spawn_app_with(Options {
        upstream: SimulatedApi::new(40, 2),
        ..options("30s", |s| s.api.max_body_bytes = 4000)
    })
    .await;
    let body = app
        .metrics_when("the first poll", |b| {
            sample(b, r#"reputation_api_up{endpoint="domain-list"}"#) == Some(1.0)
                && sample(
                    b,
                    r#"reputation_api_requests_total{endpoint="ip-list",code="decode"}"#,
                )
                .is_some()
        })
        .await;
    assert_eq!(
        value(&body, r#"reputation_api_up{endpoint="ip-list"}"#),
        0.0
    );
    assert_eq!(value(&body, r#"reputation_assets{kind="ip"}"#), 0.0);
    assert_eq!(value(&body, r#"reputation_assets{kind="domain"}"#), 2.0);
    assert_eq!(app.upstream.requests(IP_LIST), 1, "not retried");
    assert!(app.logs().contains("larger than api.max_body_bytes"));
}

#[tokio::test]
async fn a_slow_list_neither_slows_scrapes_nor_doubles_the_poll() {
    let app = spawn_app_with(options("100ms", |_| {})).await;
    app.metrics_when("the first poll", up).await;
    let before = app.upstream.requests(IP_LIST);
    let answered = |body: &str| {
        value(
            body,
            r#"reputation_api_requests_total{endpoint="ip-list",code="200"}"#,
        )
    };
    let answered_before = answered(&app.metrics().await);
    app.upstream
        .push_fault(IP_LIST, Fault::Delay(Duration::from_secs(3)));
    eventually("the slow request", || async {
        app.upstream.requests(IP_LIST) == before + 1
    })
    .await;

    // Scrapes are answered from the snapshot while the list request is still unanswered.
    for _ in 0..10 {
        let body = app.metrics().await;
        assert_eq!(value(&body, r#"reputation_assets{kind="ip"}"#), 3.0);
        assert_eq!(answered(&body), answered_before, "the slow list answered");
    }
    // While it hung, intervals passed without a second request: once it is answered, at most
    // the next cycle's request has followed.
    app.metrics_when("the slow list to answer", |b| answered(b) > answered_before)
        .await;
    assert!(app.upstream.requests(IP_LIST) <= before + 2);
}

#[tokio::test]
async fn the_token_appears_in_no_log_line_error_or_metric_in_either_log_format() {
    for format in [LogFormat::Logfmt, LogFormat::Json] {
        token_stays_secret(format).await;
    }
}

async fn token_stays_secret(log_format: LogFormat) {
    const TOKEN: &str = "tok-9f8e7d6c5b4a-secret";
    let upstream = SimulatedApi::new(3, 2);
    upstream.set_token("not-the-token");
    let app = spawn_app_with(Options {
        upstream,
        token: TOKEN,
        log_format: Some(log_format),
        ..options("200ms", |_| {})
    })
    .await;
    app.metrics_when("the rejection", |b| {
        sample(b, "reputation_api_auth_ok") == Some(0.0)
    })
    .await;
    app.upstream.set_token(TOKEN);
    app.upstream.push_fault(IP_LIST, Fault::Status(503));
    app.upstream
        .push_fault(DOMAIN_LIST, Fault::Body("[{".into()));
    app.metrics_when("the recovery", up).await;

    let metrics = app.metrics().await;
    let page = app.get("/").await.text().await.unwrap();
    let log = app.logs();
    assert!(log.contains("the token is rejected"), "logs were captured");
    assert!(
        log.to_ascii_lowercase().contains("\"level\":\"debug\"") || log.contains("level=debug"),
        "every level was captured:\n{log}"
    );
    for (what, text) in [
        ("logs", &log),
        ("metrics", &metrics),
        ("landing page", &page),
    ] {
        assert!(!text.contains(TOKEN), "the token leaked into the {what}");
        assert!(
            !text.contains("9f8e7d6c5b4a"),
            "part of the token leaked into the {what}"
        );
    }
}

#[tokio::test]
async fn a_rotated_token_file_is_picked_up_without_a_restart() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = std::env::temp_dir().join(format!("rexp-rotate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("token");
    let write = |token: &str| {
        std::fs::write(&path, format!("{token}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    };
    write("first-rotating-token");
    let upstream = SimulatedApi::new(3, 2);
    upstream.set_token("first-rotating-token");
    let file = path.to_str().unwrap().to_owned();
    let app = spawn_app_with(Options {
        upstream,
        interval: "200ms",
        configure: Box::new(move |s| {
            s.api.token = None;
            s.api.token_file = Some(file.into());
        }),
        ..Options::default()
    })
    .await;
    app.metrics_when("the first poll", up).await;

    // The token is rotated upstream: the old one is refused until the file has the new one.
    app.upstream.set_token("second-rotating-token");
    app.metrics_when("the rejection", |b| {
        sample(b, "reputation_api_auth_ok") == Some(0.0)
    })
    .await;
    write("second-rotating-token");
    let body = app
        .metrics_when("the new token to be used", |b| {
            up(b) && sample(b, "reputation_api_auth_ok") == Some(1.0)
        })
        .await;
    assert_eq!(value(&body, r#"reputation_assets{kind="ip"}"#), 3.0);
    let log = app.logs();
    assert!(log.contains("the token file changed: using the new token"));
    assert!(!log.contains("first-rotating-token") && !log.contains("second-rotating-token"));
    std::fs::remove_dir_all(dir).unwrap();
}
