//! The exporter's own metrics: API health, request counts and latencies, freshness, account,
//! build and process information, as `prometheus-client` types in one [`Registry`].
//!
//! Unlike the per-asset bodies they change between polls (every request counts), so they are
//! encoded live on each scrape; there are a few dozen series at most.

mod late;
mod process;

use late::{Flag, Late, Seconds};
pub use process::ProcessMetrics;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabelSet, EncodeLabelValue, LabelValueEncoder,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::vocabulary::{Code, Endpoint, Kind, Unrecognized};

/// Upper bounds of the request latency histogram, in seconds.
const LATENCY_BUCKETS: [f64; 11] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0];

/// How many asset report requests in a row must fail (after their retries) before
/// `reputation_api_up{endpoint="asset"}` reads 0; one that answers sets it back to 1.
pub const REPORT_FAILURES_DOWN: u32 = 5;

/// How many distinct unrecognized values are remembered for "log once per value"; past that,
/// new values are still counted but no longer logged, so a bad upstream cannot grow memory.
const MAX_REMEMBERED_VALUES: usize = 1000;

/// `{endpoint}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct EndpointLabels {
    endpoint: Endpoint,
}

/// `{endpoint, code}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    endpoint: Endpoint,
    code: Code,
}

/// `{kind}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct KindLabels {
    kind: Kind,
}

/// `{field}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct FieldLabels {
    field: &'static str,
}

/// `{user_id, project_id}` of `reputation_account_info`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct AccountLabels {
    user_id: String,
    project_id: String,
}

impl EncodeLabelValue for Endpoint {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.label(), encoder)
    }
}

impl EncodeLabelValue for Kind {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.label(), encoder)
    }
}

impl EncodeLabelValue for Code {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.label(), encoder)
    }
}

/// A gauge holding a float (timestamps, durations).
type FloatGauge = Gauge<f64, AtomicU64>;

/// Live counters and gauges about the exporter and the API.
#[derive(Debug)]
pub struct Telemetry {
    /// The families before `reputation_assets`.
    registry: Registry,
    /// The families after it: `reputation_assets` itself is written per scrape from the
    /// snapshot being served, so that it always agrees with the asset series of that scrape.
    tail: Registry,
    up: Gauge,
    api_up: Family<EndpointLabels, Gauge>,
    auth_ok: Late<Flag>,
    system_ok: Late<Flag>,
    requests: Family<RequestLabels, Counter>,
    latency: Family<EndpointLabels, Histogram>,
    retries: Family<EndpointLabels, Counter>,
    last_success: Family<EndpointLabels, FloatGauge>,
    poll_duration: Late<Seconds>,
    unrecognized: Family<FieldLabels, Counter>,
    account: Arc<AccountInfo>,
    /// The endpoints this exporter polls, in label order.
    endpoints: Vec<Endpoint>,
    /// A std mutex: held for a few map updates, never across an `.await`.
    state: Mutex<State>,
}

/// What the metrics above do not hold but decisions need.
#[derive(Debug, Default)]
struct State {
    /// Per endpoint: whether its last answer accepted the token.
    auth: BTreeMap<Endpoint, bool>,
    /// Unrecognized values already logged.
    logged_values: HashSet<(&'static str, String)>,
    /// Per endpoint: when its last poll ended, and why it failed when it did.
    last_poll: BTreeMap<Endpoint, (f64, Option<String>)>,
    /// Unix time the next poll of the lists is due, once the first has ended.
    next_poll: Option<f64>,
    /// Asset report requests that failed in a row, since the last that answered.
    report_failures: u32,
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
    /// Unix time its last poll ended.
    pub last_tried: Option<f64>,
    /// Why its last poll failed (`timeout`, `HTTP 503`, `bad body`...), when it did.
    pub error: Option<String>,
}

impl Telemetry {
    /// Telemetry for these polled endpoints. An endpoint's `reputation_api_up` appears with
    /// its first outcome: before it, nothing is known, and a 0 would make a restart look like
    /// an outage to `ReputationApiDown`.
    pub fn new(endpoints: &[Endpoint]) -> Self {
        let mut endpoints = endpoints.to_vec();
        endpoints.sort();
        endpoints.dedup();
        let telemetry = Telemetry {
            registry: Registry::default(),
            tail: Registry::default(),
            up: Gauge::default(),
            api_up: Family::default(),
            auth_ok: Late::default(),
            system_ok: Late::default(),
            requests: Family::default(),
            latency: Family::new_with_constructor(|| Histogram::new(LATENCY_BUCKETS)),
            retries: Family::default(),
            last_success: Family::default(),
            poll_duration: Late::default(),
            unrecognized: Family::default(),
            account: Arc::default(),
            endpoints,
            state: Mutex::default(),
        };
        telemetry.register()
    }

    /// Registers every family, in exposition order. Help texts are given without their final
    /// period, which the registry adds.
    fn register(mut self) -> Self {
        // Counters whose label values are known exist from the first scrape, at 0, so that
        // `increase()` sees their first event.
        for endpoint in &self.endpoints {
            let _ = self.retries.get_or_create(&EndpointLabels {
                endpoint: *endpoint,
            });
        }
        for field in Unrecognized::FIELDS {
            let _ = self.unrecognized.get_or_create(&FieldLabels { field });
        }
        let r = &mut self.registry;
        r.register(
            "reputation_up",
            "1 when the last poll of both list endpoints (ip-list, domain-list) succeeded",
            self.up.clone(),
        );
        r.register(
            "reputation_api_up",
            "1 when the last poll of the API endpoint succeeded; for asset, 0 once 5 report \
             requests in a row have failed, 1 again at the next that answers",
            self.api_up.clone(),
        );
        r.register(
            "reputation_api_auth_ok",
            "0 while the last answer of any API endpoint rejected the token (401/403), 1 when \
             every endpoint's last answer accepted it",
            self.auth_ok.clone(),
        );
        r.register(
            "reputation_system_ok",
            "1 when system-check answered 200 with status ok",
            self.system_ok.clone(),
        );
        r.register(
            "reputation_api_requests",
            "Requests made to the API, by endpoint and HTTP status (or timeout, connect, decode)",
            self.requests.clone(),
        );
        r.register(
            "reputation_api_request_duration_seconds",
            "Latency of API requests, body included",
            self.latency.clone(),
        );
        r.register(
            "reputation_api_retries",
            "Retries of failed API requests made by the backoff",
            self.retries.clone(),
        );
        r.register(
            "reputation_last_success_timestamp_seconds",
            "Unix time of the last successful poll of the API endpoint",
            self.last_success.clone(),
        );
        r.register(
            "reputation_poll_duration_seconds",
            "Length of the last whole poll of the API, retries included",
            self.poll_duration.clone(),
        );
        let r = &mut self.tail;
        r.register(
            "reputation_unrecognized_values",
            "Values from the API that could not be mapped to a sample, by API field",
            self.unrecognized.clone(),
        );
        r.register_collector(Box::new(self.account.clone()));
        self
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves plain maps behind; keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one request and its latency.
    pub fn request(&self, endpoint: Endpoint, code: Code, elapsed: Duration) {
        self.requests
            .get_or_create(&RequestLabels { endpoint, code })
            .inc();
        self.latency
            .get_or_create(&EndpointLabels { endpoint })
            .observe(elapsed.as_secs_f64());
    }

    /// Counts one retry made by the backoff.
    pub fn retry(&self, endpoint: Endpoint) {
        self.retries
            .get_or_create(&EndpointLabels { endpoint })
            .inc();
    }

    /// Records the outcome of one poll of an endpoint.
    pub fn polled(&self, endpoint: Endpoint, ok: bool) {
        self.outcome(endpoint, ok, None);
    }

    /// Records a failed poll of an endpoint and the kind of failure, for the landing page.
    pub fn failed(&self, endpoint: Endpoint, class: String) {
        self.outcome(endpoint, false, Some(class));
    }

    /// Records one asset report request as it ends (a 404 answered): the asset endpoint's
    /// health follows the requests, not the rounds, so a round in progress never reads as
    /// down.
    pub fn report_answered(&self, answered: bool) {
        let labels = EndpointLabels {
            endpoint: Endpoint::Asset,
        };
        let failures = {
            let mut state = self.state();
            state.report_failures = if answered {
                0
            } else {
                state.report_failures.saturating_add(1)
            };
            state.report_failures
        };
        if answered {
            self.api_up.get_or_create(&labels).set(1);
            self.last_success.get_or_create(&labels).set(unix_now());
        } else if failures >= REPORT_FAILURES_DOWN {
            self.api_up.get_or_create(&labels).set(0);
        }
    }

    /// Records the end of an asset report round for the landing page: when it ended, and why
    /// some reports failed. A round of which no request answered reads as down, however
    /// few its requests.
    pub fn round_ended(&self, answered: usize, failure: Option<String>) {
        self.state()
            .last_poll
            .insert(Endpoint::Asset, (unix_now(), failure.clone()));
        if answered == 0 && failure.is_some() {
            self.api_up
                .get_or_create(&EndpointLabels {
                    endpoint: Endpoint::Asset,
                })
                .set(0);
        }
    }

    fn outcome(&self, endpoint: Endpoint, ok: bool, error: Option<String>) {
        let now = unix_now();
        self.state().last_poll.insert(endpoint, (now, error));
        let labels = EndpointLabels { endpoint };
        self.api_up.get_or_create(&labels).set(i64::from(ok));
        if ok {
            self.last_success.get_or_create(&labels).set(now);
        }
        let up = [Endpoint::IpList, Endpoint::DomainList].iter().all(|e| {
            self.api_up
                .get(&EndpointLabels { endpoint: *e })
                .is_some_and(|g| g.get() == 1)
        });
        self.up.set(i64::from(up));
    }

    /// Records whether an answer of this endpoint accepted the token.
    pub fn auth(&self, endpoint: Endpoint, ok: bool) {
        let mut state = self.state();
        state.auth.insert(endpoint, ok);
        let all = state.auth.values().all(|ok| *ok);
        self.auth_ok.set(Flag(all));
    }

    /// Records the system-check verdict.
    pub fn system_ok(&self, ok: bool) {
        self.system_ok.set(Flag(ok));
    }

    /// Records the length of the last whole poll.
    pub fn poll_duration(&self, elapsed: Duration) {
        self.poll_duration.set(Seconds(elapsed.as_secs_f64()));
    }

    /// Records when the next poll of the lists is due (Unix time), for the landing page.
    pub fn next_poll_at(&self, at: f64) {
        self.state().next_poll = Some(at);
    }

    /// When the next poll of the lists is due (Unix time), once the first has ended.
    pub fn next_poll(&self) -> Option<f64> {
        self.state().next_poll
    }

    /// Records the account the token belongs to.
    pub fn account(&self, user_id: String, project_id: String) {
        *self.account.lock() = Some(AccountLabels {
            user_id,
            project_id,
        });
    }

    /// Counts values that could not be mapped; returns those never seen before, to be logged.
    pub fn unrecognized(&self, values: Vec<Unrecognized>) -> Vec<Unrecognized> {
        let mut state = self.state();
        let mut new = Vec::new();
        for value in values {
            self.unrecognized
                .get_or_create(&FieldLabels { field: value.field })
                .inc_by(value.count);
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
        self.up.get() == 1
    }

    /// Health of every polled endpoint.
    pub fn health(&self) -> Vec<EndpointHealth> {
        let state = self.state();
        self.endpoints
            .iter()
            .map(|endpoint| {
                let labels = EndpointLabels {
                    endpoint: *endpoint,
                };
                let last_poll = state.last_poll.get(endpoint);
                EndpointHealth {
                    endpoint: *endpoint,
                    up: self.api_up.get(&labels).is_some_and(|g| g.get() == 1),
                    last_success: self.last_success.get(&labels).map(|g| g.get()),
                    last_tried: last_poll.map(|(at, _)| *at),
                    error: last_poll.and_then(|(_, error)| error.clone()),
                }
            })
            .collect()
    }

    /// Requests made so far to one endpoint with one outcome.
    pub fn requests(&self, endpoint: Endpoint, code: Code) -> u64 {
        self.requests
            .get(&RequestLabels { endpoint, code })
            .map_or(0, |c| c.get())
    }

    /// Appends every family in OpenMetrics text, without `# EOF`; `assets` is how many assets
    /// of each kind ([`Kind::ALL`] order) the scrape serves.
    pub fn encode(&self, out: &mut String, assets: [usize; 2]) {
        let assets_family: Family<KindLabels, Gauge> = Family::default();
        for (kind, count) in Kind::ALL.into_iter().zip(assets) {
            assets_family
                .get_or_create(&KindLabels { kind })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        let mut scrape = Registry::default();
        scrape.register(
            "reputation_assets",
            "Assets in the served snapshot, by kind",
            assets_family,
        );
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode_registry(out, &self.registry);
        let _ = prometheus_client::encoding::text::encode_registry(out, &scrape);
        let _ = prometheus_client::encoding::text::encode_registry(out, &self.tail);
    }
}

/// `reputation_account_info`: an info metric whose labels arrive with the first answer of
/// `/api/v1/user` and may change with a new token.
#[derive(Debug, Default)]
struct AccountInfo(Mutex<Option<AccountLabels>>);

impl AccountInfo {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<AccountLabels>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Collector for AccountInfo {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let account = self.lock().clone();
        let mut metric = encoder.encode_descriptor(
            "reputation_account",
            "The account the API token belongs to (from /api/v1/user).",
            None,
            MetricType::Info,
        )?;
        if let Some(labels) = account {
            metric.encode_info(&labels)?;
        }
        Ok(())
    }
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(telemetry: &Telemetry) -> String {
        let mut out = String::new();
        telemetry.encode(&mut out, [0, 0]);
        out
    }

    /// The value of the series written exactly as `series`, if there is one.
    fn sample(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
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
        for line in [
            "reputation_api_requests_total{endpoint=\"ip-list\",code=\"200\"} 2\n",
            "reputation_api_requests_total{endpoint=\"ip-list\",code=\"timeout\"} 1\n",
            "reputation_api_request_duration_seconds_bucket{le=\"0.1\",endpoint=\"ip-list\"} 1\n",
            "reputation_api_request_duration_seconds_bucket{le=\"0.5\",endpoint=\"ip-list\"} 2\n",
            "reputation_api_request_duration_seconds_bucket{le=\"+Inf\",endpoint=\"ip-list\"} 3\n",
            "reputation_api_request_duration_seconds_count{endpoint=\"ip-list\"} 3\n",
        ] {
            assert!(text.contains(line), "{line} missing in\n{text}");
        }
        assert_eq!(t.requests(Endpoint::IpList, Code::Status(200)), 2);
    }

    #[test]
    fn up_needs_both_list_endpoints() {
        let t = Telemetry::new(&Endpoint::POLLED);
        assert!(render(&t).contains("reputation_up 0\n"));
        t.polled(Endpoint::IpList, true);
        assert!(!t.up());
        t.polled(Endpoint::DomainList, true);
        assert!(render(&t).contains("reputation_up 1\n"));
        assert!(
            !render(&t).contains("reputation_api_up{endpoint=\"user\"}"),
            "an endpoint not polled yet has no api_up"
        );
    }

    #[test]
    fn the_asset_endpoint_is_down_only_after_five_failed_reports_in_a_row() {
        let t = Telemetry::new(&[Endpoint::Asset]);
        let asset_up = |t: &Telemetry| sample(&render(t), "reputation_api_up{endpoint=\"asset\"}");
        assert_eq!(asset_up(&t), None, "unknown before the first report");
        t.report_answered(true);
        assert_eq!(asset_up(&t), Some(1.0));
        for _ in 0..REPORT_FAILURES_DOWN - 1 {
            t.report_answered(false);
        }
        assert_eq!(asset_up(&t), Some(1.0), "four failures are not an outage");
        t.report_answered(false);
        assert_eq!(asset_up(&t), Some(0.0));
        t.report_answered(true);
        assert_eq!(asset_up(&t), Some(1.0));
        // A round of which nothing answered is down, however few its requests.
        let small = Telemetry::new(&[Endpoint::Asset]);
        small.report_answered(false);
        small.round_ended(0, Some("1 of 1 reports failed (HTTP 503=1)".into()));
        assert_eq!(asset_up(&small), Some(0.0));
    }

    #[test]
    fn gauges_without_an_answer_yet_have_no_sample() {
        let t = Telemetry::new(&Endpoint::POLLED);
        let text = render(&t);
        assert!(text.contains("# TYPE reputation_system_ok gauge\n"));
        assert!(!text.contains("\nreputation_system_ok "), "{text}");
        assert!(!text.contains("\nreputation_api_auth_ok "), "{text}");
        assert!(!text.contains("reputation_account_info{"), "{text}");
        t.auth(Endpoint::IpList, true);
        t.auth(Endpoint::User, false);
        t.system_ok(true);
        t.account("7".into(), "42".into());
        let text = render(&t);
        assert!(text.contains("reputation_api_auth_ok 0\n"), "{text}");
        assert!(text.contains("reputation_system_ok 1\n"), "{text}");
        assert!(
            text.contains("reputation_account_info{user_id=\"7\",project_id=\"42\"} 1\n"),
            "{text}"
        );
    }

    #[test]
    fn an_unrecognized_value_is_counted_every_time_and_returned_for_logging_once() {
        let t = Telemetry::new(&[]);
        let value = || Unrecognized::new("snds_blocked", "\"maybe\"");
        assert_eq!(t.unrecognized(vec![value()]).len(), 1);
        assert_eq!(t.unrecognized(vec![value(), value()]).len(), 0);
        assert!(
            render(&t).contains("reputation_unrecognized_values_total{field=\"snds_blocked\"} 3\n")
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn process_metrics_are_read_from_proc() {
        let mut text = String::new();
        ProcessMetrics::default().encode(&mut text);
        assert!(text.contains("reputation_exporter_build_info{version=\""));
        let rss = text
            .lines()
            .find_map(|l| l.strip_prefix("process_resident_memory_bytes "))
            .expect("resident memory present");
        assert!(rss.parse::<f64>().unwrap() > 1e6, "{rss}");
        assert!(text.contains("# TYPE process_cpu_seconds counter\n"));
    }
}
