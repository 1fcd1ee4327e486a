//! A simulated day at production's time scales, on Tokio's paused clock: the default 5-minute
//! polls and hourly report rounds, a restart in the middle of a round, an account added by a
//! reload (whose first round meets a storm of 429s), scraped every minute as Prometheus would.
//! The upstreams and the scrapes are served in process, so no socket lets real time in.

use std::collections::BTreeSet;
use std::time::Duration;

use reputation_exporter::accounts::Upstreams;
use reputation_exporter::app::App;
use reputation_exporter::config::{Config, Settings};
use reputation_simulate::{DEMO_TOKEN, Fault, SimulatedApi};

use crate::helpers::{get_in_process as get, sample};

const MINUTE: Duration = Duration::from_secs(60);
const ASSET: &str = "/api/v1/asset";
const IP_LIST: &str = "/api/v1/ip-list";

/// The configuration of the day: defaults everywhere (5m polls, report concurrency 4) but for
/// hourly report rounds (a sixth of the default: a restart and a reload then land in the
/// middle of rounds, and a day holds 24 of them), with the accounts named.
fn config(accounts: &[&str]) -> Config {
    let mut settings = Settings::default();
    settings.state.enabled = false;
    settings.asset_reports.enabled = true;
    settings.asset_reports.interval = crate::helpers::duration("1h");
    let accounts: Vec<_> = accounts
        .iter()
        .map(|name| {
            let url = format!("http://{name}.simulated").parse().unwrap();
            (*name, url, DEMO_TOKEN)
        })
        .collect();
    crate::helpers::with_accounts(&mut settings, &accounts);
    settings.validate(false).expect("valid")
}

/// How many assets have report series (tags) in a scrape.
fn reported(body: &str) -> usize {
    body.lines()
        .filter(|l| l.starts_with("reputation_asset_tag_info{"))
        .filter_map(|l| l.split("asset=\"").nth(1)?.split('"').next())
        .collect::<BTreeSet<_>>()
        .len()
}

/// One minute's scrape of one account.
#[derive(Debug, Clone, Copy)]
struct Seen {
    minute: u64,
    reported: usize,
    asset_up: Option<f64>,
}

async fn scrape(router: &axum::Router, target: &str, minute: u64) -> Seen {
    let body = get(router, &format!("/probe?target={target}")).await;
    Seen {
        minute,
        reported: reported(&body),
        asset_up: sample(&body, r#"reputation_api_up{endpoint="asset"}"#),
    }
}

/// Requests that arrived at `api` on `path` during minute `minute` of the day.
fn in_minute(api: &SimulatedApi, path: &str, start: tokio::time::Instant, minute: u64) -> usize {
    let from = start + MINUTE * minute as u32;
    api.arrivals(path)
        .into_iter()
        .filter(|at| *at >= from && *at < from + MINUTE)
        .count()
}

#[tokio::test(start_paused = true)]
async fn a_day_of_hourly_rounds_a_restart_a_reload_and_a_429_storm_keeps_every_series() {
    let eu = SimulatedApi::new(20, 5);
    eu.set_report_delay(Duration::from_millis(200));
    let us = SimulatedApi::new(8, 2);
    us.set_report_delay(Duration::from_millis(200));
    let upstreams = Upstreams::default()
        .with("http://eu.simulated".parse().unwrap(), eu.router())
        .with("http://us.simulated".parse().unwrap(), us.router());
    let start = tokio::time::Instant::now();
    let until = |minute: u64| tokio::time::sleep_until(start + MINUTE * minute as u32);

    let mut app = App::build_with(&config(&["eu"]), upstreams.clone())
        .await
        .unwrap();
    app.start();
    let mut router = app.router();
    let first = get(&router, "/probe?target=eu").await;
    assert_eq!(
        sample(&first, r#"reputation_api_up{endpoint="asset"}"#),
        None,
        "no asset health before the first report"
    );

    let mut eu_seen = Vec::new();
    let mut us_seen = Vec::new();
    const RESTART: u64 = 6 * 60 + 32; // in the middle of the 6h round
    const RELOAD: u64 = 12 * 60;
    const DAY: u64 = 24 * 60;
    for minute in 1..=DAY {
        until(minute).await;
        if minute == 6 * 60 - 1 {
            // Six whole rounds, spread over their hours, and 72 polls of the lists.
            assert_eq!(eu.requests(ASSET), 6 * 25, "one report per asset per round");
            assert_eq!(eu.requests(IP_LIST), 72, "a poll every 5 minutes");
        }
        if minute == RESTART {
            drop(router);
            drop(app);
            app = App::build_with(&config(&["eu"]), upstreams.clone())
                .await
                .unwrap();
            app.start();
            router = app.router();
        }
        if minute == RELOAD {
            // The new account's first round meets a rate limit: 20 answers of 429 asking for
            // 20 seconds each.
            for _ in 0..20 {
                us.push_fault(ASSET, Fault::RetryAfter(429, "20".into()));
            }
            let changes = app.reload(config(&["eu", "us"])).await.unwrap();
            assert_eq!(
                (changes.added, changes.kept),
                (vec!["us".to_owned()], vec!["eu".to_owned()])
            );
        }
        eu_seen.push(scrape(&router, "eu", minute).await);
        if minute >= RELOAD {
            us_seen.push(scrape(&router, "us", minute).await);
        }
    }

    // Report series for the whole fleet within 2 minutes of the start and of the restart, and
    // never missing otherwise; the asset endpoint never reads as down.
    let missing: Vec<u64> = eu_seen
        .iter()
        .filter(|s| s.reported != 25)
        .map(|s| s.minute)
        .collect();
    assert_eq!(
        missing,
        [RESTART],
        "only the restart's own minute lacks report series: the first round takes seconds"
    );
    let unhealthy: Vec<Seen> = eu_seen
        .iter()
        .filter(|s| s.asset_up != Some(1.0) && s.minute != RESTART)
        .copied()
        .collect();
    assert!(
        unhealthy.is_empty(),
        "asset health other than 1: {unhealthy:?}"
    );
    let at_restart = eu_seen.iter().find(|s| s.minute == RESTART).unwrap();
    assert_eq!(
        at_restart.asset_up, None,
        "unknown, not down, before the first report"
    );
    // The restart's first round was unspread: all 25 reports within its first minute.
    assert_eq!(in_minute(&eu, ASSET, start, RESTART), 25);
    // The reload kept eu's schedule: no new first round, one report every 2.4 minutes.
    assert!(
        in_minute(&eu, ASSET, start, RELOAD) <= 1,
        "eu was restarted by the reload"
    );
    // 79 polls before the restart (0 to 6h30m), 210 after (6h32m to 23h57m).
    assert_eq!(eu.requests(IP_LIST), 79 + 210);

    // us: its first round met 20 answers of 429 asking for 20 seconds each. Each 429 paused
    // the round, so the storm was waited out at one request every 20 seconds instead of four
    // at once and hammering on; once the API stopped limiting, the round went on at full speed
    // and no report was lost.
    let arrivals = us.arrivals(ASSET);
    let limited = &arrivals[..20];
    let waited = limited[19] - limited[0];
    assert!(
        waited >= 19 * Duration::from_secs(20),
        "20 answers of 429 within {waited:?}"
    );
    let per_minute: Vec<usize> = (RELOAD..RELOAD + 6)
        .map(|m| in_minute(&us, ASSET, start, m))
        .collect();
    assert!(
        per_minute.iter().all(|n| *n <= 3),
        "requests per minute: {per_minute:?}"
    );
    assert_eq!(
        arrivals.len(),
        20 + 10 * 12,
        "20 answers of 429, then 10 reports in each of the 12 rounds"
    );
    let storm_end = (limited[19] - start).as_secs() / 60;
    let complete = us_seen.iter().position(|s| s.reported == 10).unwrap() as u64 + RELOAD;
    assert!(
        complete <= storm_end + 1,
        "reported whole at minute {complete}, the storm ended at {storm_end}"
    );
    assert!(
        us_seen
            .iter()
            .all(|s| s.minute < complete || s.reported == 10)
    );
    let probe = get(&router, "/probe?target=us").await;
    assert_eq!(
        sample(
            &probe,
            r#"reputation_api_requests_total{endpoint="asset",code="429"}"#
        ),
        Some(20.0)
    );
    assert!(us_seen.iter().all(|s| s.asset_up != Some(0.0)));
}
