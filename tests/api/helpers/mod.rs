//! Spawning the exporter against the simulated API, typed helpers to talk to it, and the one
//! wait of the tests ([`until`]); reading expositions ([`exposition`]), logs ([`logs`]) and
//! exporters on the paused clock ([`paused`]) have files of their own.

mod exposition;
mod logs;
mod paused;
mod state_dir;

pub use exposition::{reference_parse, sample, up, value};
use logs::capture;
pub use paused::{PausedApp, get_in_process};
pub use state_dir::StateDir;

use std::net::SocketAddr;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reputation_exporter::app::{App, ConfigSource};
use reputation_exporter::config::Settings;
use reputation_exporter::logging::LogFormat;
use reputation_exporter::server;
use reputation_exporter::vocabulary::Secret;
use reputation_simulate::{DEMO_TOKEN, SimulatedApi};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tracing::instrument::WithSubscriber as _;

pub use reputation_testkit::{DEADLINE, eventually, until};

/// Accept header of Prometheus 3.
pub const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0;q=0.6,\
     application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";

/// A duration written as in the configuration (`300ms`, `2s`).
pub fn duration(text: &str) -> Duration {
    reputation_exporter::vocabulary::parse_duration(text).expect("a duration")
}

/// Configures `accounts`, each `(name, base URL, token)`, as `[accounts.NAME]` tables with the
/// `[api]` settings they inherit; an empty name is the one account of `[api]` itself.
pub fn with_accounts(settings: &mut Settings, accounts: &[(&str, reqwest::Url, &str)]) {
    let shared = settings.api.clone();
    settings.api.base_url = None;
    settings.api.token = None;
    for (name, base_url, token) in accounts {
        let mut api = shared.clone();
        api.base_url = Some(base_url.clone());
        api.token = Some(Secret::new(*token));
        if name.is_empty() {
            settings.api = api;
        } else {
            settings.accounts.insert((*name).to_owned(), api);
        }
    }
}

/// How to start a test exporter.
pub struct Options {
    /// The upstream it polls.
    pub upstream: SimulatedApi,
    /// Poll interval.
    pub interval: &'static str,
    /// `metrics.max_age`.
    pub max_age: &'static str,
    /// Whether the upstream answers from the start; when false it holds every request until
    /// [`TestApp::start_polling`].
    pub start_polling: bool,
    /// Last changes to the settings (backoff, timeouts, base address...).
    pub configure: Box<dyn FnOnce(&mut Settings) + Send>,
    /// The token the exporter sends.
    pub token: &'static str,
    /// Most connections the exporter serves at once.
    pub max_connections: usize,
    /// The format its log lines are written in, as `--log.format` chooses it; `None` for
    /// tracing's own text format with the name of the thread that wrote each line.
    pub log_format: Option<LogFormat>,
    /// Where a reload (`POST /-/reload`) reads the configuration, as `main`'s file and
    /// environment; none by default.
    pub reload: Option<ConfigSource>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            upstream: SimulatedApi::new(3, 2),
            interval: "200ms",
            max_age: "1h",
            start_polling: true,
            configure: Box::new(|_| {}),
            token: DEMO_TOKEN,
            max_connections: max_connections(),
            log_format: Some(LogFormat::Logfmt),
            reload: None,
        }
    }
}

/// `main`'s bound on connections, with the open-file limit first raised to the hard limit as
/// `main` raises it: a test process holds both ends of its connections, and an ordinary user's
/// soft limit is often 1024.
fn max_connections() -> usize {
    server::raise_open_file_limit();
    server::max_connections()
}

/// A running exporter on 127.0.0.1, the simulated API behind it, and what it logged.
pub struct TestApp {
    pub address: SocketAddr,
    pub upstream: SimulatedApi,
    http: reqwest::Client,
    /// Every line this exporter logged, at every level; no other exporter writes here.
    log: Arc<Mutex<Vec<u8>>>,
    _shutdown: oneshot::Sender<()>,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(Options::default()).await
}

/// Starts an exporter polling several accounts, each `(name, upstream, token)`; the returned
/// app's `upstream` is the first account's.
pub async fn spawn_accounts(
    accounts: Vec<(&'static str, SimulatedApi, &'static str)>,
    interval: &'static str,
    configure: impl FnOnce(&mut Settings) + Send + 'static,
) -> TestApp {
    let mut configured = Vec::new();
    for (name, upstream, token) in &accounts {
        let url = upstream.spawn().await.expect("simulated API starts");
        configured.push((*name, url.parse().unwrap(), *token));
    }
    spawn_app_with(Options {
        upstream: accounts[0].1.clone(),
        interval,
        configure: Box::new(move |settings| {
            with_accounts(settings, &configured);
            configure(settings);
        }),
        ..Options::default()
    })
    .await
}

/// Starts an exporter the way `main` does (`App::build`, then `serve` on a listener until a shutdown future
/// completes), under a log subscriber of its own.
pub async fn spawn_app_with(options: Options) -> TestApp {
    // The exporter installs the same provider when it builds its client; the test's own client
    // may be built first.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let base_url = options
        .upstream
        .spawn()
        .await
        .expect("simulated API starts");
    if !options.start_polling {
        options.upstream.hold();
    }
    let mut settings = Settings::default();
    // Each test starts cold unless it gives its exporter a state directory of its own.
    settings.state.enabled = false;
    settings.poll.interval = duration(options.interval);
    settings.metrics.max_age = duration(options.max_age);
    settings.api.base_url = Some(base_url.parse().unwrap());
    settings.api.token = Some(Secret::new(options.token));
    (options.configure)(&mut settings);
    let config = settings.validate(false).expect("valid test configuration");

    let (subscriber, log) = capture(options.log_format);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (shutdown, stopped) = oneshot::channel::<()>();
    let max_connections = options.max_connections;
    let reload = options.reload;
    tokio::spawn(
        async move {
            let mut app = App::build(&config).await.expect("exporter builds");
            if let Some(source) = reload {
                app = app.reloading_from(source);
            }
            let stopped = async {
                let _ = stopped.await;
            };
            app.with_max_connections(max_connections)
                .serve(listener, stopped)
                .await
                .expect("exporter serves");
        }
        .with_subscriber(subscriber),
    );
    TestApp {
        address,
        upstream: options.upstream,
        http: reqwest::Client::builder().no_gzip().build().unwrap(),
        log,
        _shutdown: shutdown,
    }
}

impl TestApp {
    /// Lets the upstream answer, if it was held.
    pub fn start_polling(&mut self) {
        self.upstream.release();
    }

    /// Every line this exporter has logged so far.
    pub fn logs(&self) -> String {
        String::from_utf8_lossy(&self.log.lock().unwrap()).into_owned()
    }

    /// Waits until the log holds a line containing `text`; panics after [`DEADLINE`].
    pub async fn log_when(&self, text: &str) -> String {
        until(&format!("the log line {text:?}"), || async {
            let logs = self.logs();
            if logs.contains(text) {
                Ok(logs)
            } else {
                Err(format!("log:\n{logs}"))
            }
        })
        .await
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.http.get(self.url(path)).send().await.expect("request")
    }

    pub async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut request = self.http.get(self.url(path));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.expect("request")
    }

    pub async fn post(&self, path: &str) -> reqwest::Response {
        self.http
            .post(self.url(path))
            .send()
            .await
            .expect("request")
    }

    /// `/metrics` as curl sees it (Prometheus text 0.0.4).
    pub async fn metrics(&self) -> String {
        self.get("/metrics").await.text().await.unwrap()
    }

    /// Scrapes until `condition` holds on the 0.0.4 body; panics after [`DEADLINE`].
    pub async fn metrics_when(&self, what: &str, condition: impl Fn(&str) -> bool) -> String {
        self.when(what, "/metrics", condition).await
    }

    /// Gets `path` until `condition` holds on its body; panics after [`DEADLINE`].
    pub async fn when(&self, what: &str, path: &str, condition: impl Fn(&str) -> bool) -> String {
        until(what, || async {
            let body = self.get(path).await.text().await.unwrap();
            if condition(&body) {
                Ok(body)
            } else {
                Err(format!("last body of {path}:\n{body}"))
            }
        })
        .await
    }
}

/// The standard output of a run of the exporter that must have exited 0; panics with its
/// standard error otherwise.
pub fn succeeded(output: std::process::Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// The exporter binary, with none of the tests' own `REPUTATION_EXPORTER_*` variables: the
/// environment of whoever runs the tests must not configure the exporter under test.
pub fn exporter() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_reputation-exporter"));
    for (key, _) in std::env::vars() {
        if key.starts_with("REPUTATION_EXPORTER_") {
            command.env_remove(key);
        }
    }
    // No state kept between runs, unless a test gives it a directory of its own.
    command.env("REPUTATION_EXPORTER_STATE__ENABLED", "false");
    command
}
