//! Reloading the configuration without a restart: `POST /-/reload` (SIGHUP is in process.rs).

use std::sync::{Arc, Mutex};

use reputation_exporter::config::{Config, ConfigError, Settings};
use reputation_exporter::vocabulary::Secret;
use reputation_simulate::{DEMO_TOKEN, SimulatedApi};

use crate::helpers::{Options, TestApp, eventually, sample, spawn_app_with};

/// The configuration a reload will read: the accounts by name and address, or (`None`) one
/// with `asset_reports.concurrency = 0`.
#[derive(Clone, Default)]
struct Written(Arc<Mutex<Option<Vec<Named>>>>);

/// An account's name and base address.
type Named = (&'static str, String);

impl Written {
    fn set(&self, accounts: &[(&'static str, &str)]) {
        let accounts = accounts.iter().map(|(n, u)| (*n, u.to_string())).collect();
        *self.0.lock().unwrap() = Some(accounts);
    }

    fn break_it(&self) {
        *self.0.lock().unwrap() = None;
    }

    fn settings(accounts: &[Named]) -> Settings {
        let mut settings = Settings::default();
        settings.state.enabled = false;
        settings.poll.interval = crate::helpers::duration("1h");
        for (name, url) in accounts {
            let mut api = settings.api.clone();
            api.base_url = Some(url.parse().unwrap());
            api.token = Some(Secret::new(DEMO_TOKEN));
            settings.accounts.insert((*name).to_owned(), api);
        }
        settings
    }

    fn current(&self) -> Settings {
        match &*self.0.lock().unwrap() {
            Some(accounts) => Self::settings(accounts),
            None => {
                let mut settings = Self::settings(&[]);
                settings.asset_reports.concurrency = 0;
                settings
            }
        }
    }

    fn load(&self) -> Result<Config, ConfigError> {
        self.current().validate(false)
    }
}

async fn with_reloads(accounts: &[(&'static str, &str)]) -> (TestApp, Written) {
    let written = Written::default();
    written.set(accounts);
    let source = written.clone();
    let app = spawn_app_with(Options {
        upstream: SimulatedApi::new(0, 0),
        configure: Box::new(move |settings| *settings = source.current()),
        reload: Some(Arc::new({
            let written = written.clone();
            move || written.load()
        })),
        ..Options::default()
    })
    .await;
    (app, written)
}

async fn probe_has(app: &TestApp, target: &str, text: &str) {
    let path = format!("/probe?target={target}");
    eventually(&format!("{text} on {target}"), || async {
        app.get(&path).await.text().await.unwrap().contains(text)
    })
    .await;
}

/// An exporter of the default options whose reload reads the settings it started with, as
/// `change` leaves them.
async fn reloading_started_with(change: impl Fn(&mut Settings) + Send + Sync + 'static) -> TestApp {
    let started: Arc<Mutex<Option<Settings>>> = Arc::default();
    let seen = started.clone();
    spawn_app_with(Options {
        configure: Box::new(move |settings| *seen.lock().unwrap() = Some(settings.clone())),
        reload: Some(Arc::new(move || {
            let mut settings = started.lock().unwrap().clone().expect("started");
            change(&mut settings);
            settings.validate(false)
        })),
        ..Options::default()
    })
    .await
}

fn reload_gauge(body: &str) -> Option<f64> {
    sample(body, "reputation_exporter_config_last_reload_successful")
}

#[tokio::test]
async fn a_reload_adds_an_account_and_the_unchanged_one_keeps_its_poller_and_data() {
    let eu = SimulatedApi::new(2, 0);
    let us = SimulatedApi::new(1, 0);
    let (eu_url, us_url) = (eu.spawn().await.unwrap(), us.spawn().await.unwrap());
    let (app, written) = with_reloads(&[("eu", &eu_url)]).await;
    probe_has(&app, "eu", "reputation_up 1").await;
    assert_eq!(eu.requests("/api/v1/ip-list"), 1);

    written.set(&[("eu", &eu_url), ("us", &us_url)]);
    let answer = app.post("/-/reload").await;
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.text().await.unwrap(),
        "Reloaded. Accounts added: us; changed: none; with new shared settings (data and \
         schedule kept): none; removed: none; kept: eu.\n"
    );
    probe_has(&app, "us", "reputation_up 1").await;
    probe_has(&app, "eu", "asset=\"192.0.2.2\"").await;
    assert_eq!(
        eu.requests("/api/v1/ip-list"),
        1,
        "the kept account was not polled again: its hourly schedule goes on"
    );
    let metrics = app.metrics().await;
    assert_eq!(reload_gauge(&metrics), Some(1.0), "{metrics}");
    assert!(app.logs().contains(
        r#"msg="configuration reloaded" added=us changed="" reconfigured="" removed="" kept=eu"#
    ));

    // Removed: its poller stops and its probe is gone.
    written.set(&[("us", &us_url)]);
    let answer = app.post("/-/reload").await.text().await.unwrap();
    assert_eq!(
        answer,
        "Reloaded. Accounts added: none; changed: none; with new shared settings (data and \
         schedule kept): none; removed: eu; kept: us.\n"
    );
    assert_eq!(app.get("/probe?target=eu").await.status(), 400);
}

#[tokio::test]
async fn a_refused_configuration_changes_nothing_and_says_why() {
    let eu = SimulatedApi::new(2, 0);
    let eu_url = eu.spawn().await.unwrap();
    let (app, written) = with_reloads(&[("eu", &eu_url)]).await;
    probe_has(&app, "eu", "reputation_up 1").await;

    written.break_it();
    let answer = app.post("/-/reload").await;
    assert_eq!(answer.status(), 400);
    let reason = answer.text().await.unwrap();
    assert!(
        reason.contains("asset_reports.concurrency: must be at least 1"),
        "{reason}"
    );
    let metrics = app.metrics().await;
    assert_eq!(reload_gauge(&metrics), Some(0.0), "{metrics}");
    probe_has(&app, "eu", "reputation_up 1").await;
    let page = app.get("/").await.text().await.unwrap();
    assert!(
        page.contains("reload it with SIGHUP or <code>POST /-/reload</code>"),
        "{page}"
    );
    assert!(page.contains("The last reload was refused"), "{page}");
    let logs = app.logs();
    assert!(
        logs.lines().any(|l| l.contains("level=error")
            && l.contains("reload refused")
            && l.contains("asset_reports.concurrency: must be at least 1")),
        "{logs}"
    );

    written.set(&[("eu", &eu_url)]);
    assert_eq!(app.post("/-/reload").await.status(), 200);
    assert_eq!(reload_gauge(&app.metrics().await), Some(1.0));
    let page = app.get("/").await.text().await.unwrap();
    assert!(!page.contains("The last reload was refused"));
    assert_eq!(
        app.get("/-/reload").await.status(),
        405,
        "a reload is a POST"
    );
}

/// Whole minutes from `start` to each request of `path`.
fn minutes(api: &SimulatedApi, path: &str, start: tokio::time::Instant) -> Vec<u64> {
    api.arrivals(path)
        .into_iter()
        .map(|at| at.duration_since(start).as_secs() / 60)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_new_poll_interval_keeps_the_data_the_schedule_and_the_report_round() {
    use crate::helpers::PausedApp;
    use std::time::Duration;
    const ASSET: &str = "/api/v1/asset";
    const IP_LIST: &str = "/api/v1/ip-list";
    let upstream = SimulatedApi::new(16, 4);
    // Production's schedule: lists every 5 minutes; report rounds hourly (shorter than the
    // default, so that the next round comes within the test).
    let app = PausedApp::accounts(vec![("", upstream.clone())], "5m", |s| {
        s.asset_reports.enabled = true;
        s.asset_reports.interval = crate::helpers::duration("1h");
    })
    .await;
    let start = tokio::time::Instant::now();
    let minute = Duration::from_secs(60);
    tokio::time::sleep_until(start + 12 * minute).await;
    assert_eq!(upstream.requests(ASSET), 20, "the first round, at once");
    assert_eq!(minutes(&upstream, IP_LIST, start), [0, 5, 10]);
    let tags = |body: &str| body.matches("reputation_asset_tag_info{").count();
    let tagged = tags(&app.metrics().await);
    assert!(tagged >= 20, "every asset has tags");

    // 12 minutes in, between two polls and long before the next round: 10-minute polls.
    let changes = app
        .reload_with(|s| s.poll.interval = crate::helpers::duration("10m"))
        .await;
    assert_eq!(
        changes.reconfigured,
        [("[api]".to_owned(), vec!["poll.interval"])]
    );
    assert!(changes.changed.is_empty() && changes.kept.is_empty());
    let body = app.metrics().await;
    assert_eq!(
        tags(&body),
        tagged,
        "every report still served right after the reload"
    );

    // The poll that was due at 15 minutes comes then, the next 10 minutes later; no report
    // is asked for again before the next round is due, an hour after the first.
    tokio::time::sleep_until(start + 59 * minute).await;
    assert_eq!(
        minutes(&upstream, IP_LIST, start),
        [0, 5, 10, 15, 25, 35, 45, 55]
    );
    assert_eq!(
        upstream.requests(ASSET),
        20,
        "no report round was spent on the reload"
    );
    // The next round runs as it would have, spread over its hour.
    tokio::time::sleep_until(start + 70 * minute).await;
    let reports = minutes(&upstream, ASSET, start);
    let second: Vec<u64> = reports[20..].to_vec();
    assert!(
        !second.is_empty() && second.len() < 10,
        "spread: {second:?}"
    );
    assert!(second.iter().all(|m| *m >= 60), "{second:?}");
    assert_eq!(tags(&app.metrics().await), tagged);
}

#[tokio::test]
async fn a_reload_says_in_its_answer_what_waits_for_a_restart() {
    // The reload reads what the exporter started with, on another listen address.
    let app = reloading_started_with(|settings| {
        settings.web.listen_address = vec!["127.0.0.1:9".parse().unwrap()];
    })
    .await;
    let answer = app.post("/-/reload").await;
    assert_eq!(answer.status(), 200);
    let text = answer.text().await.unwrap();
    assert!(
        text.ends_with(
            "kept: [api].\nNot applied until the next restart: web.listen_address changed.\n"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn a_reload_that_changes_the_shards_renders_the_account_again_in_them() {
    let eu = SimulatedApi::new(8, 0);
    let eu_url = eu.spawn().await.unwrap();
    let shards = Arc::new(std::sync::atomic::AtomicUsize::new(1));
    let settings = {
        let shards = shards.clone();
        move || {
            let mut settings = Written::settings(&[("eu", eu_url.clone())]);
            settings.metrics.shards = shards.load(std::sync::atomic::Ordering::SeqCst);
            settings
        }
    };
    let initial = settings.clone();
    let app = spawn_app_with(Options {
        upstream: SimulatedApi::new(0, 0),
        configure: Box::new(move |s| *s = initial()),
        reload: Some(Arc::new(move || settings().validate(false))),
        ..Options::default()
    })
    .await;
    probe_has(&app, "eu", "reputation_exporter_shards 1").await;
    assert_eq!(app.get("/probe?target=eu&shard=1").await.status(), 400);

    shards.store(4, std::sync::atomic::Ordering::SeqCst);
    let answer = app.post("/-/reload").await.text().await.unwrap();
    assert!(answer.contains("changed: eu;"), "{answer}");
    eventually("shard 3 of 4 served", || async {
        let answer = app.get("/probe?target=eu&shard=3").await;
        answer.status() == 200
            && answer
                .text()
                .await
                .unwrap()
                .contains("reputation_exporter_shards 4")
    })
    .await;
}

#[tokio::test]
async fn after_a_reload_that_rebuilds_the_account_ready_and_the_landing_page_agree() {
    // The reload points the account at an address nothing answers: the account is rebuilt and
    // never gets a list, but the exporter was ready and stays so, on every page.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let app = reloading_started_with(move |settings| {
        settings.api.base_url = Some(nowhere.parse().unwrap());
    })
    .await;
    eventually("ready", || async {
        app.get("/-/ready").await.status() == 200
    })
    .await;

    let answer = app.post("/-/reload").await.text().await.unwrap();
    assert!(answer.contains("changed: [api];"), "{answer}");
    let ready = app.get("/-/ready").await;
    assert_eq!(ready.status(), 200);
    assert_eq!(ready.text().await.unwrap(), "Ready.\n");
    let landing = app.get("/").await.text().await.unwrap();
    assert!(landing.contains("Readiness: ready ("), "{landing}");
}
