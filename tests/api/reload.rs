//! Reloading the configuration without a restart: `POST /-/reload` (SIGHUP is in process.rs).

use std::sync::{Arc, Mutex};

use reputation_exporter::config::{Config, ConfigError, Settings};
use reputation_exporter::demo::{DEMO_TOKEN, SimulatedApi};
use reputation_exporter::vocabulary::Secret;

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
        "Reloaded. Accounts added: us; changed: none; removed: none; kept: eu.\n"
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
    assert!(
        app.logs()
            .contains(r#"msg="configuration reloaded" added=us changed="" removed="" kept=eu"#)
    );

    // Removed: its poller stops and its probe is gone.
    written.set(&[("us", &us_url)]);
    let answer = app.post("/-/reload").await.text().await.unwrap();
    assert_eq!(
        answer,
        "Reloaded. Accounts added: none; changed: none; removed: eu; kept: us.\n"
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
