//! Spawning the exporter against the simulated API, and typed helpers to talk to it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reputation_exporter::config::{Secret, Settings, Source};
use reputation_exporter::demo::{DEMO_TOKEN, SimulatedApi};
use reputation_exporter::{Exporter, server};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// Longest wait for anything the exporter should do by itself.
pub const DEADLINE: Duration = Duration::from_secs(15);

/// Accept header of Prometheus 3.
pub const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0;q=0.6,\
     application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";

/// How to start a test exporter.
pub struct Options {
    /// The upstream it polls.
    pub upstream: SimulatedApi,
    /// Poll interval.
    pub interval: &'static str,
    /// `metrics.max_age`.
    pub max_age: &'static str,
    /// Whether the poll loop starts right away.
    pub start_polling: bool,
    /// Last changes to the settings (backoff, timeouts, base address...).
    pub configure: Box<dyn FnOnce(&mut Settings) + Send>,
    /// The token the exporter sends.
    pub token: &'static str,
    /// Most connections the exporter serves at once.
    pub max_connections: usize,
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
            max_connections: server::MAX_CONNECTIONS,
        }
    }
}

/// A running exporter on 127.0.0.1 and the simulated API behind it.
pub struct TestApp {
    pub address: SocketAddr,
    pub upstream: SimulatedApi,
    http: reqwest::Client,
    poller: Option<reputation_exporter::poll::Poller>,
    reports: Option<reputation_exporter::reports::ReportPoller>,
    _shutdown: oneshot::Sender<()>,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(Options::default()).await
}

pub async fn spawn_app_with(options: Options) -> TestApp {
    log_buffer();
    let base_url = options
        .upstream
        .spawn()
        .await
        .expect("simulated API starts");
    let mut settings = Settings::default();
    settings.poll.interval = Some(options.interval.into());
    settings.metrics.max_age = Some(options.max_age.into());
    settings.web.listen_address = Some("127.0.0.1:0".into());
    settings.api.base_url = Some(base_url.clone());
    settings.api.token = Some(options.token.into());
    (options.configure)(&mut settings);
    let target = settings.api.base_url.clone().unwrap();
    let config = settings.validate(false).expect("valid test configuration");

    let (token, token_file) = match &config.api.source {
        Source::Remote {
            token, token_file, ..
        } => (token.clone(), token_file.clone()),
        Source::Demo => (Secret::new(DEMO_TOKEN), None),
    };
    let exporter = Exporter::new(&config, target.parse().unwrap(), token, token_file)
        .expect("exporter builds");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (shutdown, stopped) = oneshot::channel::<()>();
    tokio::spawn(server::serve_bounded(
        listener,
        exporter.state.clone(),
        async {
            let _ = stopped.await;
        },
        options.max_connections,
    ));
    let mut test_app = TestApp {
        address,
        upstream: options.upstream,
        http: reqwest::Client::builder().no_gzip().build().unwrap(),
        poller: Some(exporter.poller),
        reports: exporter.reports,
        _shutdown: shutdown,
    };
    if options.start_polling {
        test_app.start_polling();
    }
    test_app
}

impl TestApp {
    /// Starts the poll loop, if it is not running yet.
    pub fn start_polling(&mut self) {
        if let Some(poller) = self.poller.take() {
            tokio::spawn(poller.run());
        }
        if let Some(reports) = self.reports.take() {
            tokio::spawn(reports.run());
        }
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

    /// `/metrics` as curl sees it (Prometheus text 0.0.4).
    pub async fn metrics(&self) -> String {
        self.get("/metrics").await.text().await.unwrap()
    }

    /// Scrapes until `condition` holds on the 0.0.4 body; panics after [`DEADLINE`].
    pub async fn metrics_when(&self, what: &str, condition: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            let body = self.metrics().await;
            if condition(&body) {
                return body;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}; last body:\n{body}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

/// The value of the one sample line that starts with `series` (name and labels), if any.
pub fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.parse().ok()
    })
}

/// Every log line of this test binary, at every level, since the first exporter started.
pub fn logs() -> String {
    String::from_utf8_lossy(&log_buffer().lock().unwrap()).into_owned()
}

/// Installs (once) the global subscriber that writes every event into a buffer.
fn log_buffer() -> &'static std::sync::Mutex<Vec<u8>> {
    use std::sync::Mutex;
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || Sink(sink.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        buffer
    })
}

struct Sink(Arc<std::sync::Mutex<Vec<u8>>>);

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
