//! `backfill --remote-write` against a receiver the test scripts: what is sent (decoded with the
//! same crates, compared with the file the same history gives), which answers are retried and
//! how, where each credential goes, and how soon a receiver that cannot be used is said.

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use prost::Message as _;
use reputation_backfill::remote_write::proto::{MetricType, WriteRequest};
use reputation_simulate::SimulatedApi;
use tokio::sync::oneshot;

use crate::backfill::{NOV_1, backfill, known_history, run_backfill};
use crate::backfill_command;

/// One request the receiver took in.
#[derive(Debug, Clone)]
struct Arrival {
    headers: HeaderMap,
    body: Bytes,
    at: Instant,
}

/// An answer to give: status, `Retry-After`, body.
type Answer = (u16, Option<&'static str>, &'static str);

#[derive(Default)]
struct Script {
    /// Answers to the requests that carry samples, in order; 204 after them.
    answers: VecDeque<Answer>,
    /// The requests that carry samples.
    arrivals: Vec<Arrival>,
    /// The empty requests: the check made before anything is fetched.
    probes: Vec<Arrival>,
    /// Requests to another path or with another method than POST /api/v1/write.
    misses: usize,
    /// When set, the next probe is answered only once the listener is closed: the stop
    /// signal to send, and the word that the listener is closed.
    close_after_probe: Option<(oneshot::Sender<()>, oneshot::Receiver<()>)>,
}

/// A remote-write receiver on a loopback port: answers from the script in order, then 204;
/// empty requests (the probe) are always taken.
#[derive(Clone, Default)]
struct Receiver(Arc<Mutex<Script>>);

impl Receiver {
    fn answering(answers: &[Answer]) -> Receiver {
        let receiver = Receiver::default();
        receiver.0.lock().unwrap().answers = answers.iter().copied().collect();
        receiver
    }

    fn app(&self) -> axum::Router {
        axum::Router::new()
            .route("/api/v1/write", axum::routing::post(take))
            .route("/api/v1/read", axum::routing::post(not_allowed))
            .fallback(miss)
            .with_state(self.clone())
    }

    async fn spawn(&self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(self.serve(listener, std::future::pending()));
        format!("http://{address}/api/v1/write")
    }

    /// Serves `listener` until `stop` completes, then closes it: new connections are refused.
    fn serve(
        &self,
        listener: tokio::net::TcpListener,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        let app = self.app();
        async move {
            tokio::pin!(stop);
            loop {
                let stream = tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => stream,
                        Err(_) => return,
                    },
                    () = &mut stop => return,
                };
                let service = hyper_util::service::TowerToHyperService::new(app.clone());
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        }
    }

    /// Serves over TLS with a self-signed certificate for localhost; returns the URL and the
    /// certificate (PEM), the CA a client must be given.
    async fn spawn_tls(&self) -> (String, String) {
        let (acceptor, ca) = reputation_testkit::self_signed_tls();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = self.app();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (acceptor, app) = (acceptor.clone(), app.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service = hyper_util::service::TowerToHyperService::new(app);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        (format!("https://localhost:{port}/api/v1/write"), ca)
    }

    fn arrivals(&self) -> Vec<Arrival> {
        self.0.lock().unwrap().arrivals.clone()
    }

    fn probes(&self) -> Vec<Arrival> {
        self.0.lock().unwrap().probes.clone()
    }

    fn misses(&self) -> usize {
        self.0.lock().unwrap().misses
    }
}

async fn take(
    State(receiver): State<Receiver>,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let arrival = Arrival {
        headers,
        body,
        at: Instant::now(),
    };
    if decode(&arrival).timeseries.is_empty() {
        let close = {
            let mut script = receiver.0.lock().unwrap();
            script.probes.push(arrival);
            script.close_after_probe.take()
        };
        if let Some((stop, closed)) = close {
            // The listener is closed before the answer leaves, and this connection after it:
            // the next request is refused.
            stop.send(()).unwrap();
            closed.await.unwrap();
            let mut answer = HeaderMap::new();
            answer.insert("connection", "close".parse().unwrap());
            return (StatusCode::NO_CONTENT, answer, "");
        }
        return (StatusCode::NO_CONTENT, HeaderMap::new(), "");
    }
    let mut script = receiver.0.lock().unwrap();
    script.arrivals.push(arrival);
    let (status, retry_after, message) = script.answers.pop_front().unwrap_or((204, None, ""));
    let mut answer = HeaderMap::new();
    if let Some(seconds) = retry_after {
        answer.insert("retry-after", seconds.parse().unwrap());
    }
    (StatusCode::from_u16(status).unwrap(), answer, message)
}

async fn miss(State(receiver): State<Receiver>) -> StatusCode {
    receiver.0.lock().unwrap().misses += 1;
    StatusCode::NOT_FOUND
}

async fn not_allowed(State(receiver): State<Receiver>) -> StatusCode {
    receiver.0.lock().unwrap().misses += 1;
    StatusCode::METHOD_NOT_ALLOWED
}

/// A request's body as the receiver reads it: snappy (block format), then protobuf.
fn decode(arrival: &Arrival) -> WriteRequest {
    let raw = snap::raw::Decoder::new()
        .decompress_vec(&arrival.body)
        .expect("a snappy block");
    WriteRequest::decode(raw.as_slice()).expect("a WriteRequest")
}

/// A sample as (name, labels but the name, Unix seconds, value).
type Point = (String, Vec<(String, String)>, i64, String);

/// Every sample sent, once each however often a request was retried.
fn points(arrivals: &[Arrival]) -> BTreeSet<Point> {
    let mut points = BTreeSet::new();
    for request in arrivals.iter().map(decode) {
        for series in request.timeseries {
            let names: Vec<&str> = series.labels.iter().map(|l| l.name.as_str()).collect();
            let mut sorted = names.clone();
            sorted.sort_unstable();
            assert_eq!(names, sorted, "labels sorted by name");
            let times: Vec<i64> = series.samples.iter().map(|s| s.timestamp).collect();
            assert!(times.is_sorted(), "samples in increasing time: {times:?}");
            let name = series.labels.iter().find(|l| l.name == "__name__").unwrap();
            let labels: Vec<(String, String)> = series
                .labels
                .iter()
                .filter(|l| l.name != "__name__")
                .map(|l| (l.name.clone(), l.value.clone()))
                .collect();
            for sample in series.samples {
                assert_eq!(sample.timestamp % 1000, 0, "whole seconds, in milliseconds");
                points.insert((
                    name.value.clone(),
                    labels.clone(),
                    sample.timestamp / 1000,
                    sample.value.to_string(),
                ));
            }
        }
    }
    points
}

/// The samples of an OpenMetrics backfill file, as [`points`] gives them.
fn file_points(file: &str) -> BTreeSet<Point> {
    file.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|line| {
            let (name, rest) = line.split_once('{').unwrap();
            let (labels, rest) = rest.split_once("} ").unwrap();
            let (value, at) = rest.split_once(' ').unwrap();
            let mut labels: Vec<(String, String)> = labels
                .split("\",")
                .map(|pair| {
                    let (name, value) = pair.split_once("=\"").unwrap();
                    (name.to_owned(), value.trim_end_matches('"').to_owned())
                })
                .collect();
            labels.sort_unstable();
            let value: f64 = value.parse().unwrap();
            (
                name.to_owned(),
                labels,
                at.parse().unwrap(),
                value.to_string(),
            )
        })
        .collect()
}

/// Runs `backfill --remote-write URL` against `api`; returns the exit code and stderr.
async fn send(
    api: &SimulatedApi,
    url: &str,
    flags: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String) {
    let destination = ["--remote-write", url];
    let flags: Vec<&str> = destination.iter().chain(flags).copied().collect();
    let ran = run_backfill(api, &flags, env).await;
    let mut said = String::from_utf8_lossy(&ran.stderr).into_owned();
    said.push_str(&String::from_utf8_lossy(&ran.stdout));
    (ran.status.code(), said)
}

/// Retries a few milliseconds apart, so that a test waits only where the receiver says so.
const QUICK_RETRIES: [(&str, &str); 1] = [("REPUTATION_EXPORTER_BACKOFF__INITIAL_DELAY", "10ms")];

#[tokio::test(flavor = "multi_thread")]
async fn the_history_goes_as_remote_write_1_0_sample_for_sample_as_the_file_holds_it() {
    let flags = ["--skip-recent", "0s", "--label", "job=reputation"];
    let zone = [(
        "REPUTATION_EXPORTER_ASSET_REPORTS__TIMEZONE",
        "Europe/Berlin",
    )];
    let (_, _, file) = backfill(&known_history(), &flags, &zone).await;
    let file = file.unwrap();

    let receiver = Receiver::default();
    let url = receiver.spawn().await;
    let (code, said) = send(&known_history(), &url, &flags, &zone).await;
    assert_eq!(
        code,
        Some(1),
        "the 404 asset is skipped, as in the file: {said}"
    );
    let arrivals = receiver.arrivals();
    assert_eq!(arrivals.len(), 1, "six samples make one request");
    // Before them, one empty request: the check that the receiver takes remote write.
    let probes = receiver.probes();
    assert_eq!(probes.len(), 1, "{said}");
    assert_eq!(decode(&probes[0]), WriteRequest::default());
    assert!(probes[0].at <= arrivals[0].at);
    assert_eq!(probes[0].headers["content-encoding"], "snappy");
    let headers = &arrivals[0].headers;
    assert_eq!(headers["content-encoding"], "snappy");
    assert_eq!(headers["content-type"], "application/x-protobuf");
    assert_eq!(headers["x-prometheus-remote-write-version"], "0.1.0");
    assert!(
        headers["user-agent"]
            .to_str()
            .unwrap()
            .starts_with("reputation-exporter/")
    );

    let sent = points(&arrivals);
    assert_eq!(sent, file_points(&file));
    let day = |n: i64| NOV_1 + (n - 1) * 86_400;
    let labels = |more: &[(&str, &str)]| {
        let mut labels: Vec<(String, String)> = [
            ("asset", "192.0.2.1"),
            ("job", "reputation"),
            ("kind", "ip"),
        ]
        .iter()
        .chain(more)
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
        labels.sort_unstable();
        labels
    };
    let point = |name: &str, more: &[(&str, &str)], at, value: &str| {
        (name.to_owned(), labels(more), at, value.to_owned())
    };
    assert_eq!(
        sent,
        BTreeSet::from([
            point("reputation_senderscore", &[], day(1), "80"),
            point("reputation_senderscore", &[], day(3), "82"),
            point("reputation_blacklistings", &[], day(1), "0"),
            point("reputation_blacklistings", &[], day(2), "1"),
            point(
                "reputation_blacklist_listed",
                &[("blacklist", "SBL")],
                day(2),
                "1"
            ),
            point(
                "reputation_blacklist_listed",
                &[("blacklist", "SBL")],
                day(3),
                "0"
            ),
        ])
    );

    // Type and help, as the file's header lines say them.
    let metadata = decode(&arrivals[0]).metadata;
    let names: Vec<&str> = metadata
        .iter()
        .map(|m| m.metric_family_name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "reputation_senderscore",
            "reputation_blacklistings",
            "reputation_blacklist_listed"
        ]
    );
    for family in &metadata {
        assert_eq!(family.r#type, MetricType::Gauge as i32);
        let help = format!("# HELP {} {}\n", family.metric_family_name, family.help);
        assert!(file.contains(&help), "{help}");
    }
    assert!(said.contains("assets written: 1\n"), "{said}");
    assert!(
        said.contains("remote write: 6 samples in 1 requests ("),
        "{said}"
    );
    assert!(said.contains(", 0 retries"), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_500_and_a_429_are_retried_the_429_after_its_retry_after() {
    let receiver = Receiver::answering(&[
        (500, None, "ingester overloaded"),
        (429, Some("1"), "slow down"),
    ]);
    let url = receiver.spawn().await;
    let (code, said) = send(
        &known_history(),
        &url,
        &["--skip-recent", "0s"],
        &QUICK_RETRIES,
    )
    .await;
    assert_eq!(code, Some(1), "the 404 asset only: {said}");
    let arrivals = receiver.arrivals();
    assert_eq!(arrivals.len(), 3, "two refusals, then taken: {said}");
    assert!(
        arrivals.iter().all(|a| a.body == arrivals[0].body),
        "the same request again"
    );
    let waited = arrivals[2].at - arrivals[1].at;
    assert!(
        waited >= Duration::from_secs(1),
        "Retry-After: 1 honoured, waited {waited:?}"
    );
    assert_eq!(points(&arrivals).len(), 6);
    assert!(
        said.contains("remote write: 6 samples in 1 requests ("),
        "{said}"
    );
    assert!(said.contains(", 2 retries"), "{said}");
    assert!(
        said.contains("HTTP 500 Internal Server Error: ingester overloaded"),
        "{said}"
    );
    assert!(
        said.contains("HTTP 429 Too Many Requests: slow down"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_400_is_reported_in_the_receivers_words_and_not_retried() {
    let receiver = Receiver::answering(&[(400, None, "invalid label name \"1x\"\n")]);
    let url = receiver.spawn().await;
    let (code, said) = send(&known_history(), &url, &[], &QUICK_RETRIES).await;
    assert_eq!(code, Some(1));
    assert_eq!(receiver.arrivals().len(), 1, "not retried: {said}");
    assert!(
        said.contains(&format!(
            "remote write to {url} failed: the receiver answered HTTP 400 Bad Request: invalid \
             label name \\\"1x\\\"\\n(the receiver had accepted 0 samples in 0 requests before it)"
        )),
        "{said}"
    );

    let receiver = Receiver::answering(&[(400, None, "out of bounds")]);
    let url = receiver.spawn().await;
    let (code, said) = send(&known_history(), &url, &[], &QUICK_RETRIES).await;
    assert_eq!(code, Some(1));
    assert_eq!(receiver.arrivals().len(), 1);
    assert!(
        said.contains(
            "The receiver refuses samples this old: Prometheus takes samples older \
                       than its newest ones only within storage.tsdb.out_of_order_time_window"
        ),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn each_credential_goes_only_to_its_own_server_and_into_no_message() {
    let dir = std::env::temp_dir().join(format!("rexp-rw-creds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let token_file = dir.join("receiver-token");
    std::fs::write(&token_file, "rw-s3cret\n").unwrap();
    let token_flag = token_file.to_str().unwrap();
    let flags = [
        "--remote-write.bearer-token-file",
        token_flag,
        "--remote-write.header",
        "X-Scope-OrgID: tenant-mail",
    ];

    let api = known_history();
    let receiver = Receiver::default();
    let url = receiver.spawn().await;
    let (_, said) = send(&api, &url, &flags, &[]).await;
    let arrivals = receiver.arrivals();
    assert_eq!(arrivals.len(), 1, "{said}");
    assert_eq!(arrivals[0].headers["authorization"], "Bearer rw-s3cret");
    assert_eq!(arrivals[0].headers["x-scope-orgid"], "tenant-mail");
    let probe = &receiver.probes()[0];
    assert_eq!(probe.headers["authorization"], "Bearer rw-s3cret");
    assert_eq!(probe.headers["x-scope-orgid"], "tenant-mail");
    for (name, value) in arrivals[0].headers.iter().chain(&probe.headers) {
        let value = value.to_str().unwrap_or_default();
        assert!(
            !value.contains("demo-token"),
            "the API's token went to the receiver in {name}"
        );
    }
    let seen = api.authorizations();
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|a| a == "Bearer demo-token"), "{seen:?}");

    // Refused: the advice names the flags, no message shows either secret.
    let receiver = Receiver::answering(&[(401, None, "authentication required")]);
    let url = receiver.spawn().await;
    let (code, said) = send(
        &known_history(),
        &url,
        &flags,
        &[("REPUTATION_EXPORTER_LOG__LEVEL", "debug")],
    )
    .await;
    assert_eq!(code, Some(1));
    assert!(
        said.contains(
            "The receiver refuses the credentials: check --remote-write.bearer-token-file"
        ),
        "{said}"
    );
    assert!(
        !said.contains("rw-s3cret") && !said.contains("demo-token"),
        "{said}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn one_destination_is_required_and_bad_receiver_flags_are_refused_before_any_request() {
    let api = known_history();
    let output = backfill_command()
        .args(["--since", "90d"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--output <FILE>"));
    let output = backfill_command()
        .args([
            "--output",
            "x.om",
            "--remote-write",
            "http://127.0.0.1:9/api/v1/write",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "both at once");

    let (code, said) = send(
        &api,
        "http://127.0.0.1:9/api/v1/write",
        &["--remote-write.header", "Authorization: Basic eA=="],
        &[],
    )
    .await;
    assert_eq!(code, Some(1));
    assert!(
        said.starts_with("--remote-write.header: authorization is set by the exporter itself"),
        "{said}"
    );
    assert_eq!(api.requests("/api/v1/ip-list"), 0, "nothing fetched");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_private_ca_is_given_with_ca_file_and_without_it_the_run_stops_at_once_saying_so() {
    let receiver = Receiver::default();
    let (url, ca) = receiver.spawn_tls().await;
    let dir = std::env::temp_dir().join(format!("rexp-rw-ca-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca).unwrap();

    let (code, said) = send(&known_history(), &url, &[], &[]).await;
    assert_eq!(code, Some(1));
    assert!(
        said.contains(
            "cannot reach the receiver over TLS: the server's TLS certificate is not signed by \
             an authority this system trusts"
        ),
        "{said}"
    );
    assert!(said.contains("--remote-write.ca-file FILE (PEM)"), "{said}");
    assert!(receiver.arrivals().is_empty() && receiver.probes().is_empty());
    // Not retried (the default backoff would go on for ten minutes).
    assert!(!said.contains("retrying"), "{said}");

    let flags = ["--remote-write.ca-file", ca_file.to_str().unwrap()];
    let (code, said) = send(&known_history(), &url, &flags, &[]).await;
    assert_eq!(code, Some(1), "the 404 asset only: {said}");
    assert_eq!(points(&receiver.arrivals()).len(), 6, "{said}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Runs `backfill --remote-write URL` against `api` in the background; its stderr comes line by
/// line on the channel as it is written.
async fn start_sending(
    api: &SimulatedApi,
    url: &str,
    env: &[(&str, &str)],
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead as _;
    let base_url = api.spawn().await.unwrap();
    let mut command = backfill_command();
    command
        .args(["--skip-recent", "0s", "--remote-write", url])
        .env("REPUTATION_EXPORTER_API__BASE_URL", &base_url)
        .env("REPUTATION_EXPORTER_API__TOKEN", "demo-token")
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    (child, received)
}

/// The lines `child` writes until it exits, and its exit code; fails the test when it runs
/// longer than `limit`.
async fn exit_within(
    mut child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    limit: Duration,
) -> (Option<i32>, String) {
    tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + limit;
        let mut said = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => {
                    said.push_str(&line);
                    said.push('\n');
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    panic!("backfill still ran {limit:?} after it started: {said}");
                }
            }
        }
        let status = child.wait().unwrap();
        (status.code(), said)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_receiver_nothing_listens_for_stops_the_run_at_once_before_the_api_is_asked() {
    // A port that was free a moment ago: nothing listens there, the connection is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/api/v1/write");
    let api = known_history();
    let (child, lines) = start_sending(&api, &url, &[]).await;
    let (code, said) = exit_within(child, lines, Duration::from_secs(10)).await;
    assert_eq!(code, Some(1), "{said}");
    let errors: Vec<&str> = said.lines().filter(|l| l.contains("level=error")).collect();
    assert_eq!(errors.len(), 1, "one line says it: {said}");
    assert!(
        errors[0].contains(&format!(
            "msg=\"remote write to {url}: cannot reach the receiver: "
        )) && errors[0].contains("Connection refused")
            && errors[0].contains(
                "Check the host and port of --remote-write, and that the receiver runs there. \
                 Nothing was fetched or sent.\""
            ),
        "{said}"
    );
    assert!(!said.contains("retrying"), "not retried: {said}");
    assert_eq!(api.requests("/api/v1/ip-list"), 0, "the API was not asked");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_path_that_takes_no_remote_write_404_or_405_stops_the_run_at_once_naming_the_paths() {
    for (path, status) in [
        ("/api/v1/writ", "HTTP 404 Not Found"),
        ("/api/v1/read", "HTTP 405 Method Not Allowed"),
    ] {
        let receiver = Receiver::default();
        let url = receiver.spawn().await.replace("/api/v1/write", path);
        let api = known_history();
        let (child, lines) = start_sending(&api, &url, &[]).await;
        let (code, said) = exit_within(child, lines, Duration::from_secs(10)).await;
        assert_eq!(code, Some(1), "{said}");
        assert!(
            said.contains(&format!(
                "msg=\"remote write to {url}: the receiver answered {status}: (no message). \
                 Nothing takes remote write at this path: check the path of --remote-write. \
                 Prometheus takes /api/v1/write"
            )),
            "{said}"
        );
        assert_eq!(receiver.misses(), 1, "asked once: {said}");
        assert!(receiver.arrivals().is_empty());
        assert_eq!(api.requests("/api/v1/ip-list"), 0, "the API was not asked");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_receiver_that_goes_away_after_the_first_request_is_waited_for_and_takes_everything() {
    let receiver = Receiver::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let (closed, is_closed) = oneshot::channel();
    receiver.0.lock().unwrap().close_after_probe = Some((stop, is_closed));
    let serving = receiver.serve(listener, async move {
        let _ = stopped.await;
    });
    tokio::spawn(async move {
        serving.await;
        let _ = closed.send(());
    });
    let url = format!("http://{address}/api/v1/write");
    let api = known_history();
    let retries = [
        ("REPUTATION_EXPORTER_BACKOFF__INITIAL_DELAY", "10ms"),
        ("REPUTATION_EXPORTER_BACKOFF__MAX_DELAY", "200ms"),
    ];
    let (child, lines) = start_sending(&api, &url, &retries).await;

    // Taken the probe, the receiver is gone: the first request with samples is refused and
    // retried, as a receiver restarting mid-run is.
    let mut said = String::new();
    let refused = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while let Ok(line) = lines.recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            let retried = line.contains("msg=\"remote write: retrying a request\"")
                && line.contains("Connection refused");
            said.push_str(&line);
            said.push('\n');
            if retried {
                return (lines, said);
            }
        }
        panic!("no retry of a refused request within 60 s: {said}");
    });
    let (lines, said_before) = refused.await.unwrap();
    assert_eq!(receiver.probes().len(), 1, "{said_before}");
    assert!(receiver.arrivals().is_empty(), "{said_before}");

    // Back on the same address: the retries reach it and the run completes.
    let listener = tokio::net::TcpListener::bind(address).await.unwrap();
    tokio::spawn(receiver.serve(listener, std::future::pending()));
    let (code, said) = exit_within(child, lines, Duration::from_secs(60)).await;
    assert_eq!(code, Some(1), "the 404 asset only: {said_before}{said}");
    assert_eq!(points(&receiver.arrivals()).len(), 6, "{said}");
    assert!(
        said.contains("remote write: 6 samples in 1 requests ("),
        "{said}"
    );
    assert!(!said.contains(", 0 retries"), "{said}");
    assert!(!said.contains("level=error"), "{said}");
}
