//! The exporter's own metrics: API health, request counts and latencies, freshness, build and
//! process information. Unlike the per-asset bodies they change between polls (every request
//! counts), so they are rendered live on each scrape; there are a few dozen series at most.

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::exposition::{Family, MetricType, Writer};
use crate::snapshot::{Kind, Snapshot, Unrecognized};
use crate::upstream::Endpoint;

/// Upper bounds of the request latency histogram, in seconds.
const LATENCY_BUCKETS: [f64; 11] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0];

/// How many distinct unrecognized values are remembered for "log once per value"; past that,
/// new values are still counted but no longer logged, so a bad upstream cannot grow memory.
const MAX_REMEMBERED_VALUES: usize = 1000;

/// The outcome of one upstream request: the `code` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    /// The HTTP status the API answered.
    Status(u16),
    /// No answer within `api.timeout`.
    Timeout,
    /// No connection (refused, DNS, TLS).
    Connect,
    /// An answer whose body could not be read or used.
    Decode,
}

impl Code {
    fn label(self) -> String {
        match self {
            Code::Status(status) => status.to_string(),
            Code::Timeout => "timeout".into(),
            Code::Connect => "connect".into(),
            Code::Decode => "decode".into(),
        }
    }
}

/// Live counters and gauges about the exporter and the API.
#[derive(Debug)]
pub struct Telemetry {
    /// A std mutex: it is held only for a few map updates, never across an `.await`.
    state: Mutex<State>,
    /// Exporter version, git revision and compiler, for `reputation_exporter_build_info`.
    build: BuildInfo,
}

/// What `reputation_exporter_build_info` says.
#[derive(Debug, Clone)]
pub struct BuildInfo {
    /// Crate version.
    pub version: &'static str,
    /// Git revision the binary was built from, or `unknown`.
    pub revision: &'static str,
    /// `rustc --version` of the compiler.
    pub rustc: &'static str,
}

impl Default for BuildInfo {
    fn default() -> Self {
        BuildInfo {
            version: env!("CARGO_PKG_VERSION"),
            revision: env!("BUILD_GIT_REVISION"),
            rustc: env!("BUILD_RUSTC_VERSION"),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    requests: BTreeMap<(Endpoint, Code), u64>,
    latency: BTreeMap<Endpoint, Histogram>,
    retries: BTreeMap<Endpoint, u64>,
    api_up: BTreeMap<Endpoint, bool>,
    last_success: BTreeMap<Endpoint, f64>,
    /// Per endpoint: whether its last answer accepted the token.
    auth: BTreeMap<Endpoint, bool>,
    system_ok: Option<bool>,
    poll_duration: Option<f64>,
    unrecognized: BTreeMap<&'static str, u64>,
    logged_values: HashSet<(&'static str, String)>,
    account: Option<(String, String)>,
}

#[derive(Debug, Default, Clone)]
struct Histogram {
    buckets: [u64; LATENCY_BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// Health of one endpoint, for the landing page.
#[derive(Debug, Clone)]
pub struct EndpointHealth {
    /// The endpoint.
    pub endpoint: Endpoint,
    /// Whether its last poll succeeded.
    pub up: bool,
    /// Unix time of its last success.
    pub last_success: Option<f64>,
}

impl Telemetry {
    /// Telemetry for these polled endpoints: each starts as down until its first success, so
    /// `reputation_api_up` exists (and alerts can fire) before any answer.
    pub fn new(endpoints: &[Endpoint]) -> Self {
        let state = State {
            api_up: endpoints.iter().map(|e| (*e, false)).collect(),
            ..State::default()
        };
        Telemetry {
            state: Mutex::new(state),
            build: BuildInfo::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves plain counters behind; keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one request and its latency.
    pub fn request(&self, endpoint: Endpoint, code: Code, elapsed: Duration) {
        let mut state = self.state();
        *state.requests.entry((endpoint, code)).or_default() += 1;
        let histogram = state.latency.entry(endpoint).or_default();
        let seconds = elapsed.as_secs_f64();
        histogram.count += 1;
        histogram.sum += seconds;
        for (bucket, bound) in histogram.buckets.iter_mut().zip(LATENCY_BUCKETS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
    }

    /// Counts one retry made by the backoff.
    pub fn retry(&self, endpoint: Endpoint) {
        *self.state().retries.entry(endpoint).or_default() += 1;
    }

    /// Records the outcome of one poll of an endpoint.
    pub fn polled(&self, endpoint: Endpoint, ok: bool) {
        let mut state = self.state();
        state.api_up.insert(endpoint, ok);
        if ok {
            state.last_success.insert(endpoint, unix_now());
        }
    }

    /// Records whether an answer of this endpoint accepted the token.
    pub fn auth(&self, endpoint: Endpoint, ok: bool) {
        self.state().auth.insert(endpoint, ok);
    }

    /// Records the system-check verdict.
    pub fn system_ok(&self, ok: bool) {
        self.state().system_ok = Some(ok);
    }

    /// Records the length of the last whole poll.
    pub fn poll_duration(&self, elapsed: Duration) {
        self.state().poll_duration = Some(elapsed.as_secs_f64());
    }

    /// Records the account the token belongs to.
    pub fn account(&self, user_id: String, project_id: String) {
        self.state().account = Some((user_id, project_id));
    }

    /// Counts values that could not be mapped; returns those never seen before, to be logged.
    pub fn unrecognized(&self, values: Vec<Unrecognized>) -> Vec<Unrecognized> {
        let mut state = self.state();
        let mut new = Vec::new();
        for value in values {
            *state.unrecognized.entry(value.field).or_default() += 1;
            if state.logged_values.len() < MAX_REMEMBERED_VALUES
                && state
                    .logged_values
                    .insert((value.field, value.value.clone()))
            {
                new.push(value);
            }
        }
        new
    }

    /// Whether the last poll of both list endpoints succeeded.
    pub fn up(&self) -> bool {
        let state = self.state();
        [Endpoint::IpList, Endpoint::DomainList]
            .iter()
            .all(|e| state.api_up.get(e) == Some(&true))
    }

    /// Health of every polled endpoint.
    pub fn health(&self) -> Vec<EndpointHealth> {
        let state = self.state();
        state
            .api_up
            .iter()
            .map(|(endpoint, up)| EndpointHealth {
                endpoint: *endpoint,
                up: *up,
                last_success: state.last_success.get(endpoint).copied(),
            })
            .collect()
    }

    /// Requests made so far to one endpoint with one outcome.
    pub fn requests(&self, endpoint: Endpoint, code: Code) -> u64 {
        self.state()
            .requests
            .get(&(endpoint, code))
            .copied()
            .unwrap_or(0)
    }

    /// Writes every exporter family, then the process families.
    pub fn render(&self, snapshot: &Snapshot, w: &mut Writer<'_>) {
        let up = self.up();
        let state = self.state();
        let gauge = |name, help| Family {
            name,
            help,
            kind: MetricType::Gauge,
        };
        let bool_value = |b: bool| f64::from(u8::from(b));

        let f = gauge(
            "reputation_up",
            "1 when the last poll of both list endpoints (ip-list, domain-list) succeeded.",
        );
        w.family(&f);
        w.sample(f.name, &[], bool_value(up));

        let f = gauge(
            "reputation_api_up",
            "1 when the last poll of the API endpoint succeeded.",
        );
        w.family(&f);
        for (endpoint, ok) in &state.api_up {
            w.sample(f.name, &[("endpoint", endpoint.label())], bool_value(*ok));
        }

        let f = gauge(
            "reputation_api_auth_ok",
            "0 while the last answer of any API endpoint rejected the token (401/403), 1 when \
             every endpoint's last answer accepted it.",
        );
        w.family(&f);
        if !state.auth.is_empty() {
            w.sample(f.name, &[], bool_value(state.auth.values().all(|ok| *ok)));
        }

        let f = gauge(
            "reputation_system_ok",
            "1 when system-check answered 200 with status ok.",
        );
        w.family(&f);
        if let Some(ok) = state.system_ok {
            w.sample(f.name, &[], bool_value(ok));
        }

        let f = Family {
            name: "reputation_api_requests_total",
            help: "Requests made to the API, by endpoint and HTTP status (or timeout, connect, \
                   decode).",
            kind: MetricType::Counter,
        };
        w.family(&f);
        for ((endpoint, code), n) in &state.requests {
            let code = code.label();
            w.sample(
                f.name,
                &[("endpoint", endpoint.label()), ("code", &code)],
                *n as f64,
            );
        }

        let f = Family {
            name: "reputation_api_request_duration_seconds",
            help: "Latency of API requests, body included.",
            kind: MetricType::Histogram,
        };
        w.family(&f);
        for (endpoint, h) in &state.latency {
            let endpoint = endpoint.label();
            for (bound, n) in LATENCY_BUCKETS.iter().zip(h.buckets) {
                let le = format_bound(*bound);
                w.sample(
                    "reputation_api_request_duration_seconds_bucket",
                    &[("endpoint", endpoint), ("le", &le)],
                    n as f64,
                );
            }
            let labels = [("endpoint", endpoint), ("le", "+Inf")];
            w.sample(
                "reputation_api_request_duration_seconds_bucket",
                &labels,
                h.count as f64,
            );
            w.sample(
                "reputation_api_request_duration_seconds_sum",
                &labels[..1],
                h.sum,
            );
            w.sample(
                "reputation_api_request_duration_seconds_count",
                &labels[..1],
                h.count as f64,
            );
        }

        let f = Family {
            name: "reputation_api_retries_total",
            help: "Retries of failed API requests made by the backoff.",
            kind: MetricType::Counter,
        };
        w.family(&f);
        for (endpoint, n) in &state.retries {
            w.sample(f.name, &[("endpoint", endpoint.label())], *n as f64);
        }

        let f = gauge(
            "reputation_last_success_timestamp_seconds",
            "Unix time of the last successful poll of the API endpoint.",
        );
        w.family(&f);
        for (endpoint, t) in &state.last_success {
            w.sample(f.name, &[("endpoint", endpoint.label())], *t);
        }

        let f = gauge(
            "reputation_poll_duration_seconds",
            "Length of the last whole poll of the API, retries included.",
        );
        w.family(&f);
        if let Some(t) = state.poll_duration {
            w.sample(f.name, &[], t);
        }

        let f = gauge(
            "reputation_assets",
            "Assets in the served snapshot, by kind.",
        );
        w.family(&f);
        for kind in Kind::ALL {
            w.sample(
                f.name,
                &[("kind", kind.label())],
                snapshot.count(kind) as f64,
            );
        }

        let f = Family {
            name: "reputation_unrecognized_values_total",
            help: "Values from the API that could not be mapped to a sample, by API field.",
            kind: MetricType::Counter,
        };
        w.family(&f);
        for (field, n) in &state.unrecognized {
            w.sample(f.name, &[("field", field)], *n as f64);
        }

        let f = Family {
            name: "reputation_account_info",
            help: "The account the API token belongs to (from /api/v1/user).",
            kind: MetricType::Info,
        };
        w.family(&f);
        if let Some((user, project)) = &state.account {
            w.sample(f.name, &[("user_id", user), ("project_id", project)], 1.0);
        }

        let f = Family {
            name: "reputation_exporter_build_info",
            help: "Version, git revision and compiler of the running exporter.",
            kind: MetricType::Info,
        };
        w.family(&f);
        let b = &self.build;
        w.sample(
            f.name,
            &[
                ("version", b.version),
                ("revision", b.revision),
                ("rustc", b.rustc),
            ],
            1.0,
        );
        drop(state);

        process::render(w);
    }
}

/// The `le` label of a bucket, written as a float as OpenMetrics wants it (`1.0`, not `1`).
fn format_bound(bound: f64) -> String {
    if bound.fract() == 0.0 {
        format!("{bound:.1}")
    } else {
        bound.to_string()
    }
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The standard `process_*` metrics, where the platform offers them (Linux `/proc`).
mod process {
    use super::*;

    /// Clock ticks per second of the times in `/proc/self/stat` (USER_HZ, fixed at 100).
    const TICKS_PER_SECOND: f64 = 100.0;

    /// How long one reading of `/proc` is reused. Reading it costs more than the rest of a
    /// scrape's live part; within a second the values barely move, and no scrape interval is
    /// shorter.
    const READING_TTL: std::time::Duration = std::time::Duration::from_secs(1);

    pub(super) fn render(w: &mut Writer<'_>) {
        #[cfg(target_os = "linux")]
        if let Some(p) = cached() {
            let cpu = Family {
                name: "process_cpu_seconds_total",
                help: "Total user and system CPU time spent in seconds.",
                kind: MetricType::Counter,
            };
            w.family(&cpu);
            w.sample(cpu.name, &[], p.cpu_seconds);
            let mut gauge = |name, help, value: Option<f64>| {
                if let Some(value) = value {
                    w.family(&Family {
                        name,
                        help,
                        kind: MetricType::Gauge,
                    });
                    w.sample(name, &[], value);
                }
            };
            gauge(
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                Some(p.resident_bytes),
            );
            gauge(
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                Some(p.virtual_bytes),
            );
            gauge(
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                Some(p.start_time),
            );
            gauge(
                "process_open_fds",
                "Number of open file descriptors.",
                p.open_fds,
            );
            gauge(
                "process_max_fds",
                "Maximum number of open file descriptors.",
                p.max_fds,
            );
        }
    }

    /// The last reading and when it was taken.
    #[cfg(target_os = "linux")]
    fn cached() -> Option<Process> {
        use std::sync::Mutex;
        use std::time::Instant;
        static LAST: Mutex<Option<(Instant, Process)>> = Mutex::new(None);
        let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        match &*last {
            Some((at, reading)) if at.elapsed() < READING_TTL => Some(reading.clone()),
            _ => {
                let reading = read()?;
                *last = Some((Instant::now(), reading.clone()));
                Some(reading)
            }
        }
    }

    #[derive(Debug, Clone)]
    struct Process {
        cpu_seconds: f64,
        resident_bytes: f64,
        virtual_bytes: f64,
        start_time: f64,
        open_fds: Option<f64>,
        max_fds: Option<f64>,
    }

    #[cfg(target_os = "linux")]
    fn read() -> Option<Process> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the command name, which is in parentheses and may hold spaces.
        let fields: Vec<&str> = stat.rsplit_once(") ")?.1.split(' ').collect();
        let field = |n: usize| fields.get(n - 3)?.parse::<f64>().ok();
        let cpu_seconds = (field(14)? + field(15)?) / TICKS_PER_SECOND;
        let start_ticks = field(22)?;
        let virtual_bytes = field(23)?;
        static BOOT_TIME: std::sync::OnceLock<Option<f64>> = std::sync::OnceLock::new();
        let boot_time = (*BOOT_TIME.get_or_init(|| {
            std::fs::read_to_string("/proc/stat")
                .ok()?
                .lines()
                .find_map(|l| l.strip_prefix("btime ")?.trim().parse::<f64>().ok())
        }))?;
        let resident_bytes = std::fs::read_to_string("/proc/self/status")
            .ok()?
            .lines()
            .find_map(|l| {
                let kb = l.strip_prefix("VmRSS:")?.trim().strip_suffix("kB")?;
                kb.trim().parse::<f64>().ok()
            })?
            * 1024.0;
        let open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as f64);
        let max_fds = std::fs::read_to_string("/proc/self/limits")
            .ok()
            .and_then(|limits| {
                let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
                line.split_whitespace().nth(3)?.parse::<f64>().ok()
            });
        Some(Process {
            cpu_seconds,
            resident_bytes,
            virtual_bytes,
            start_time: boot_time + start_ticks / TICKS_PER_SECOND,
            open_fds,
            max_fds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::Format;

    fn render(telemetry: &Telemetry) -> String {
        let mut out = Vec::new();
        let mut w = Writer::new(Format::Text, &mut out);
        telemetry.render(&Snapshot::default(), &mut w);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn requests_are_counted_by_endpoint_and_code_with_their_latency() {
        let t = Telemetry::new(&[Endpoint::IpList]);
        t.request(
            Endpoint::IpList,
            Code::Status(200),
            Duration::from_millis(80),
        );
        t.request(
            Endpoint::IpList,
            Code::Status(200),
            Duration::from_millis(300),
        );
        t.request(Endpoint::IpList, Code::Timeout, Duration::from_secs(30));
        let text = render(&t);
        assert!(
            text.contains("reputation_api_requests_total{endpoint=\"ip-list\",code=\"200\"} 2\n")
        );
        assert!(
            text.contains(
                "reputation_api_requests_total{endpoint=\"ip-list\",code=\"timeout\"} 1\n"
            )
        );
        assert!(text.contains(
            "reputation_api_request_duration_seconds_bucket{endpoint=\"ip-list\",le=\"0.1\"} 1\n"
        ));
        assert!(text.contains(
            "reputation_api_request_duration_seconds_bucket{endpoint=\"ip-list\",le=\"0.5\"} 2\n"
        ));
        assert!(text.contains(
            "reputation_api_request_duration_seconds_bucket{endpoint=\"ip-list\",le=\"+Inf\"} 3\n"
        ));
        assert!(
            text.contains(
                "reputation_api_request_duration_seconds_count{endpoint=\"ip-list\"} 3\n"
            )
        );
    }

    #[test]
    fn up_needs_both_list_endpoints() {
        let t = Telemetry::new(&Endpoint::POLLED);
        assert!(render(&t).contains("reputation_up 0\n"));
        t.polled(Endpoint::IpList, true);
        assert!(!t.up());
        t.polled(Endpoint::DomainList, true);
        assert!(render(&t).contains("reputation_up 1\n"));
        assert!(render(&t).contains("reputation_api_up{endpoint=\"user\"} 0\n"));
    }

    #[test]
    fn an_unrecognized_value_is_counted_every_time_and_returned_for_logging_once() {
        let t = Telemetry::new(&[]);
        let value = || Unrecognized {
            field: "snds_blocked",
            value: "\"maybe\"".into(),
        };
        assert_eq!(t.unrecognized(vec![value()]).len(), 1);
        assert_eq!(t.unrecognized(vec![value(), value()]).len(), 0);
        assert!(
            render(&t).contains("reputation_unrecognized_values_total{field=\"snds_blocked\"} 3\n")
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn process_metrics_are_read_from_proc() {
        let text = render(&Telemetry::new(&[]));
        let rss = text
            .lines()
            .find_map(|l| l.strip_prefix("process_resident_memory_bytes "))
            .expect("resident memory present");
        assert!(rss.parse::<f64>().unwrap() > 1e6, "{rss}");
        assert!(text.contains("# TYPE process_cpu_seconds_total counter\n"));
    }
}
