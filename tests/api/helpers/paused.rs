//! Exporters on Tokio's paused clock, answered in process.

use std::sync::{Arc, Mutex};

use reputation_exporter::accounts::{Changes, Upstreams};
use reputation_exporter::app::App;
use reputation_exporter::config::Settings;
use reputation_exporter::logging::LogFormat;
use reputation_simulate::{DEMO_TOKEN, SimulatedApi};

use super::logs::capture;
use super::{duration, with_accounts};

/// A `GET` of `path` answered by `router` in process, its body as text.
pub async fn get_in_process(router: &axum::Router, path: &str) -> String {
    use tower::ServiceExt as _;
    let request = axum::http::Request::get(path)
        .body(axum::body::Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    String::from_utf8(body.to_vec()).unwrap()
}

/// An exporter for a test on Tokio's paused clock (`start_paused = true`): its upstreams answer
/// through the client's in-process transport and its router is called directly, so no socket
/// lets real time in and every interval, delay and expiry is exact. Its log goes to a buffer of
/// its own.
pub struct PausedApp {
    /// The first account's upstream.
    pub upstream: SimulatedApi,
    router: axum::Router,
    log: Arc<Mutex<Vec<u8>>>,
    /// The settings it was built from, which [`PausedApp::reload_with`] changes.
    settings: Settings,
    app: App,
    _log: tracing::subscriber::DefaultGuard,
}

impl PausedApp {
    /// Builds and starts an exporter of one account: `poll.interval` and `metrics.max_age` as
    /// given, then `configure`.
    pub async fn start(
        upstream: SimulatedApi,
        interval: &str,
        max_age: &str,
        configure: impl FnOnce(&mut Settings),
    ) -> PausedApp {
        PausedApp::accounts(vec![("", upstream)], interval, |s| {
            s.metrics.max_age = duration(max_age);
            configure(s);
        })
        .await
    }

    /// Builds and starts an exporter of several accounts, each `(name, upstream)` with the
    /// demo token; an empty name is the unnamed account of `[api]`.
    pub async fn accounts(
        accounts: Vec<(&str, SimulatedApi)>,
        interval: &str,
        configure: impl FnOnce(&mut Settings),
    ) -> PausedApp {
        let mut settings = Settings::default();
        settings.state.enabled = false;
        settings.poll.interval = duration(interval);
        let mut upstreams = Upstreams::default();
        let mut configured = Vec::new();
        for (name, upstream) in &accounts {
            let host = if name.is_empty() { "upstream" } else { name };
            let base_url: reqwest::Url = format!("http://{host}.simulated").parse().unwrap();
            upstreams = upstreams.with(base_url.clone(), upstream.router());
            configured.push((*name, base_url, DEMO_TOKEN));
        }
        with_accounts(&mut settings, &configured);
        configure(&mut settings);
        let config = settings
            .clone()
            .validate(false)
            .expect("valid test configuration");
        // The test's runtime runs every task on this thread: they all log here.
        let (subscriber, log) = capture(Some(LogFormat::Logfmt));
        let guard = tracing::subscriber::set_default(subscriber);
        let app = App::build_with(&config, upstreams).await.unwrap();
        app.start();
        PausedApp {
            router: app.router(),
            upstream: accounts.into_iter().next().unwrap().1,
            log,
            settings,
            app,
            _log: guard,
        }
    }

    /// Reloads it with its settings changed by `change`, as SIGHUP would after an edit.
    pub async fn reload_with(&self, change: impl FnOnce(&mut Settings)) -> Changes {
        let mut settings = self.settings.clone();
        change(&mut settings);
        let config = settings.validate(false).expect("valid test configuration");
        self.app.reload(config).await.expect("the reload applies")
    }

    /// The exposition (text format).
    pub async fn metrics(&self) -> String {
        get_in_process(&self.router, "/metrics").await
    }

    /// Stops it as a restart does, and waits until its tasks have ended and let go of the state
    /// store of `account_dir` (`state.path`/`api` for the account of `[api]`): until its
    /// database opens again (redb refuses a second opening while one is held).
    pub async fn stop(self, account_dir: &std::path::Path) {
        drop(self);
        let database = account_dir.join("state.redb");
        for _ in 0..10_000 {
            match redb::Database::open(&database) {
                Ok(_) => return,
                Err(redb::DatabaseError::DatabaseAlreadyOpen) => tokio::task::yield_now().await,
                Err(other) => panic!("{}: {other}", database.display()),
            }
        }
        panic!(
            "{}: still held after the exporter stopped",
            database.display()
        );
    }

    /// Every line this exporter has logged so far.
    pub fn logs(&self) -> String {
        String::from_utf8_lossy(&self.log.lock().unwrap()).into_owned()
    }
}
