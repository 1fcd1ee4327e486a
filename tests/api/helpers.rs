//! Spawning the exporter against the simulated API, and typed helpers to talk to it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use reputation_exporter::accounts::Upstreams;
use reputation_exporter::app::{App, ConfigSource};
use reputation_exporter::config::Settings;
use reputation_exporter::demo::{DEMO_TOKEN, SimulatedApi};
use reputation_exporter::logging::{self, LogFormat};
use reputation_exporter::server;
use reputation_exporter::vocabulary::Secret;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tracing::instrument::WithSubscriber as _;

/// Longest wait for anything the exporter should do by itself.
pub const DEADLINE: Duration = Duration::from_secs(15);

/// Accept header of Prometheus 3.
pub const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0;q=0.6,\
     application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";

/// A duration written as in the configuration (`300ms`, `2s`).
pub fn duration(text: &str) -> Duration {
    reputation_exporter::vocabulary::parse_duration(text).expect("a duration")
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
            max_connections: server::max_connections(),
            log_format: Some(LogFormat::Logfmt),
            reload: None,
        }
    }
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
    let mut urls = Vec::new();
    for (_, upstream, _) in &accounts {
        urls.push(upstream.spawn().await.expect("simulated API starts"));
    }
    let first = accounts[0].1.clone();
    let accounts: Vec<(&str, String, &str)> = accounts
        .into_iter()
        .zip(urls)
        .map(|((name, _, token), url)| (name, url, token))
        .collect();
    spawn_app_with(Options {
        upstream: first,
        interval,
        configure: Box::new(move |settings| {
            settings.api.base_url = None;
            settings.api.token = None;
            for (name, url, token) in accounts {
                let mut api = settings.api.clone();
                api.base_url = Some(url.parse().unwrap());
                api.token = Some(Secret::new(token));
                settings.accounts.insert(name.to_owned(), api);
            }
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

/// Tries `attempt` (it may await: a request, a handshake) until it gives a value; panics
/// after [`DEADLINE`] with what its last failure saw. The one wait of the tests: no test sleeps
/// for a fixed time instead.
pub async fn until<T, F: Future<Output = Result<T, String>>>(
    what: &str,
    attempt: impl Fn() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let seen = match attempt().await {
            Ok(value) => return value,
            Err(seen) => seen,
        };
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}; {seen}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `attempt` answers true; see [`until`].
pub async fn eventually<F: Future<Output = bool>>(what: &str, attempt: impl Fn() -> F) {
    until(what, || async {
        if attempt().await {
            Ok(())
        } else {
            Err("it never did".to_owned())
        }
    })
    .await;
}

/// The value of the one sample line that starts with `series` (name and labels), if any.
pub fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.parse().ok()
    })
}

type Subscriber = Box<dyn tracing::Subscriber + Send + Sync>;

/// A subscriber of every level, in `format` (the test default when none), writing only to the
/// returned buffer.
fn capture(format: Option<LogFormat>) -> (Subscriber, Arc<Mutex<Vec<u8>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    let writer = move || Sink(sink.clone());
    let subscriber = match format {
        Some(format) => logging::subscriber(tracing::Level::TRACE, format, writer),
        None => Box::new(
            tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_ansi(false)
                .with_thread_names(true)
                .with_writer(writer)
                .finish(),
        ),
    };
    (subscriber, log)
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A Python with the reference `prometheus_client` parsers: the system one when it has them,
/// otherwise a virtual environment made once under the target directory.
pub fn python_with_parsers() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let has_parsers = |python: &PathBuf| {
                Command::new(python)
                    .args(["-c", "import prometheus_client.openmetrics.parser"])
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            let system = PathBuf::from("python3");
            if has_parsers(&system) {
                return system;
            }
            let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("python-parsers");
            let python = venv.join("bin/python3");
            if !has_parsers(&python) {
                let made = Command::new("python3")
                    .args(["-m", "venv"])
                    .arg(&venv)
                    .status()
                    .expect("python3 is needed for the reference parsers");
                assert!(made.success(), "python3 -m venv failed");
                let installed = Command::new(&python)
                    .args([
                        "-m",
                        "pip",
                        "install",
                        "--quiet",
                        "--disable-pip-version-check",
                        "prometheus_client==0.26.0",
                    ])
                    .status()
                    .expect("pip runs");
                assert!(
                    installed.success(),
                    "installing prometheus_client from PyPI failed"
                );
            }
            python
        })
        .clone()
}

/// Parses `body` with Python's reference parser for `format` (`openmetrics` or `text`).
pub fn reference_parse(body: &str, format: &str) -> serde_json::Value {
    use std::io::Write as _;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/parse_exposition.py"
    );
    let mut child = Command::new(python_with_parsers())
        .arg(script)
        .arg(format)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the {format} parser refused the exposition: {}\n{body}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Whether the body says that the last poll of both lists succeeded.
pub fn up(body: &str) -> bool {
    sample(body, "reputation_up") == Some(1.0)
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
    command
}

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
    _app: App,
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
        settings.poll.interval = duration(interval);
        let mut upstreams = Upstreams::default();
        for (name, upstream) in &accounts {
            let host = if name.is_empty() { "upstream" } else { name };
            let base_url: reqwest::Url = format!("http://{host}.simulated").parse().unwrap();
            upstreams = upstreams.with(base_url.clone(), upstream.router());
            let mut api = settings.api.clone();
            api.base_url = Some(base_url);
            api.token = Some(Secret::new(DEMO_TOKEN));
            if name.is_empty() {
                settings.api = api;
            } else {
                settings.accounts.insert((*name).to_owned(), api);
            }
        }
        configure(&mut settings);
        let config = settings.validate(false).expect("valid test configuration");
        // The test's runtime runs every task on this thread: they all log here.
        let (subscriber, log) = capture(Some(LogFormat::Logfmt));
        let guard = tracing::subscriber::set_default(subscriber);
        let app = App::build_with(&config, upstreams).await.unwrap();
        app.start();
        PausedApp {
            router: app.router(),
            upstream: accounts.into_iter().next().unwrap().1,
            log,
            _app: app,
            _log: guard,
        }
    }

    /// The exposition (text format).
    pub async fn metrics(&self) -> String {
        get_in_process(&self.router, "/metrics").await
    }

    /// Every line this exporter has logged so far.
    pub fn logs(&self) -> String {
        String::from_utf8_lossy(&self.log.lock().unwrap()).into_owned()
    }
}
