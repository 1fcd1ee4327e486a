//! The exporter's own metrics: API health, request counts and latencies, freshness, account,
//! build and process information, as `prometheus-client` types.
//!
//! Counters and histograms are metrics of their own; the health families are rendered from the
//! account's [`Health`] by a [`Collector`], so the state that decisions read is never a gauge
//! read back. Unlike the per-asset bodies they change between polls (every request counts), so
//! they are encoded live on each scrape; there are a few dozen series at most.

mod process;

pub use process::ProcessMetrics;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeGaugeValue, EncodeLabelSet, EncodeLabelValue, EncodeMetric as _,
    LabelValueEncoder,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::health::Health;
use crate::vocabulary::{Code, Endpoint, Field, Kind, Unrecognized};

/// Upper bounds of the request latency histogram, in seconds.
const LATENCY_BUCKETS: [f64; 11] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0];

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

/// Live counters about the exporter and the API, and the health families rendered from the
/// account's [`Health`].
#[derive(Debug)]
pub struct Telemetry {
    /// The first families: the API's state, from [`Health`].
    head: Registry,
    /// The families after them and before `reputation_assets`: request counts, then
    /// freshness from [`Health`] (a registry writes its collectors after its metrics).
    registry: Registry,
    /// The families after it: `reputation_assets` itself is written per scrape from the
    /// snapshot being served, so that it always agrees with the asset series of that scrape.
    tail: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<EndpointLabels, Histogram>,
    retries: Family<EndpointLabels, Counter>,
    unrecognized: Family<FieldLabels, Counter>,
    account: Arc<AccountInfo>,
    /// Unrecognized values already logged. A std mutex: held for a set insert, never across
    /// an `.await`.
    logged_values: Mutex<HashSet<(Field, String)>>,
}

impl Telemetry {
    /// Telemetry of an account whose API health is `health`.
    pub fn new(health: Arc<Health>) -> Self {
        let telemetry = Telemetry {
            head: Registry::default(),
            registry: Registry::default(),
            tail: Registry::default(),
            requests: Family::default(),
            latency: Family::new_with_constructor(|| Histogram::new(LATENCY_BUCKETS)),
            retries: Family::default(),
            unrecognized: Family::default(),
            account: Arc::default(),
            logged_values: Mutex::default(),
        };
        // Counters whose label values are known exist from the first scrape, at 0, so that
        // `increase()` sees their first event.
        for endpoint in health.endpoints() {
            let _ = telemetry.retries.get_or_create(&EndpointLabels {
                endpoint: *endpoint,
            });
        }
        for field in Field::ALL {
            let field = field.label();
            let _ = telemetry.unrecognized.get_or_create(&FieldLabels { field });
        }
        telemetry.register(health)
    }

    /// Registers every family, in exposition order. Help texts are given without their final period,
    /// which the registry adds.
    fn register(mut self, health: Arc<Health>) -> Self {
        self.head
            .register_collector(Box::new(HealthState(health.clone())));
        let r = &mut self.registry;
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
        r.register_collector(Box::new(HealthFreshness(health)));
        let r = &mut self.tail;
        r.register(
            "reputation_unrecognized_values",
            "Values from the API that could not be mapped to a sample, by API field",
            self.unrecognized.clone(),
        );
        r.register_collector(Box::new(self.account.clone()));
        self
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

    /// Records the account the token belongs to.
    pub fn account(&self, user_id: String, project_id: String) {
        *self.account.lock() = Some(AccountLabels {
            user_id,
            project_id,
        });
    }

    /// Counts values that could not be mapped; returns those never seen before, to be logged.
    pub fn unrecognized(&self, values: Vec<Unrecognized>) -> Vec<Unrecognized> {
        let mut logged = self.logged_values.lock().unwrap_or_else(|e| e.into_inner());
        let mut new = Vec::new();
        for value in values {
            self.unrecognized
                .get_or_create(&FieldLabels {
                    field: value.field.label(),
                })
                .inc_by(value.count);
            if logged.len() < MAX_REMEMBERED_VALUES
                && logged.insert((value.field, value.value.clone()))
            {
                new.push(value);
            }
        }
        new
    }

    /// Requests made so far to one endpoint with one outcome.
    pub fn requests(&self, endpoint: Endpoint, code: Code) -> u64 {
        self.requests
            .get(&RequestLabels { endpoint, code })
            .map_or(0, |c| c.get())
    }

    /// Appends every family in OpenMetrics text, without `# EOF`; `assets` is how many assets
    /// of each kind ([`Kind::ALL`] order) the scrape serves, `shards` the shards the per-asset
    /// series are served in.
    pub fn encode(&self, out: &mut String, assets: [usize; 2], shards: usize) {
        let assets_family: Family<KindLabels, Gauge> = Family::default();
        for (kind, count) in Kind::ALL.into_iter().zip(assets) {
            assets_family
                .get_or_create(&KindLabels { kind })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        let mut scrape = Registry::default();
        scrape.register(
            "reputation_assets",
            "Assets in the served snapshot (in the shard served, with metrics.shards), by kind",
            assets_family,
        );
        let served_in: Gauge = Gauge::default();
        served_in.set(i64::try_from(shards).unwrap_or(i64::MAX));
        scrape.register(
            "reputation_exporter_shards",
            "Shards the per-asset series are served in (metrics.shards); the same on every shard",
            served_in,
        );
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode_registry(out, &self.head);
        let _ = prometheus_client::encoding::text::encode_registry(out, &self.registry);
        let _ = prometheus_client::encoding::text::encode_registry(out, &scrape);
        let _ = prometheus_client::encoding::text::encode_registry(out, &self.tail);
    }
}

/// An unlabelled gauge rendered from [`Health`]: its value, or no sample while it is unknown.
fn gauge<V: EncodeGaugeValue + std::fmt::Debug + Send + Sync>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: Option<V>,
) -> Result<(), std::fmt::Error> {
    let family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    match value {
        Some(value) => ConstGauge::new(value).encode(family),
        None => Ok(()),
    }
}

/// A gauge by endpoint rendered from [`Health`]: a sample for each endpoint whose value is
/// known.
fn gauge_by_endpoint<V: EncodeGaugeValue + std::fmt::Debug + Send + Sync>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (Endpoint, V)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (endpoint, value) in samples {
        ConstGauge::new(value).encode(family.encode_family(&EndpointLabels { endpoint })?)?;
    }
    Ok(())
}

/// `reputation_up`, `reputation_api_up`, `reputation_api_auth_ok` and `reputation_system_ok`,
/// from [`Health`].
#[derive(Debug)]
struct HealthState(Arc<Health>);

impl Collector for HealthState {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let gauges = self.0.gauges();
        gauge(
            &mut encoder,
            "reputation_up",
            "1 when the last poll of both list endpoints (ip-list, domain-list) succeeded.",
            Some(i64::from(gauges.up)),
        )?;
        gauge_by_endpoint(
            &mut encoder,
            "reputation_api_up",
            "1 when the last poll of the API endpoint succeeded; for asset, 0 once 5 report \
             requests in a row have failed, 1 again at the next that answers.",
            gauges.api_up.iter().map(|(e, up)| (*e, i64::from(*up))),
        )?;
        gauge(
            &mut encoder,
            "reputation_api_auth_ok",
            "0 while the last answer of any API endpoint rejected the token (401/403), 1 when \
             every endpoint's last answer accepted it.",
            gauges.auth_ok.map(i64::from),
        )?;
        gauge(
            &mut encoder,
            "reputation_system_ok",
            "1 when system-check answered 200 with status ok.",
            gauges.system_ok.map(i64::from),
        )
    }
}

/// `reputation_last_success_timestamp_seconds` and `reputation_poll_duration_seconds`, from
/// [`Health`].
#[derive(Debug)]
struct HealthFreshness(Arc<Health>);

impl Collector for HealthFreshness {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let gauges = self.0.gauges();
        gauge_by_endpoint(
            &mut encoder,
            "reputation_last_success_timestamp_seconds",
            "Unix time of the last successful poll of the API endpoint.",
            gauges.last_success,
        )?;
        gauge(
            &mut encoder,
            "reputation_poll_duration_seconds",
            "Length of the last whole poll of the API, retries included.",
            gauges.poll_duration.map(|d| d.as_secs_f64()),
        )
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

#[cfg(test)]
mod tests {
    use super::*;

    fn telemetry(endpoints: &[Endpoint]) -> (Arc<Health>, Telemetry) {
        let health = Arc::new(Health::new(endpoints));
        (health.clone(), Telemetry::new(health))
    }

    fn render(telemetry: &Telemetry) -> String {
        let mut out = String::new();
        telemetry.encode(&mut out, [0, 0], 1);
        out
    }

    /// The value of the series written exactly as `series`, if there is one.
    fn sample(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    #[test]
    fn requests_are_counted_by_endpoint_and_code_with_their_latency() {
        let (_, t) = telemetry(&[Endpoint::IpList]);
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
    fn the_health_families_are_rendered_from_the_health_model() {
        let (h, t) = telemetry(&Endpoint::POLLED);
        assert!(render(&t).contains("reputation_up 0\n"));
        h.polled(Endpoint::IpList, Ok(()));
        h.polled(Endpoint::DomainList, Ok(()));
        h.polled(
            Endpoint::SystemCheck,
            Err(crate::vocabulary::Failure::Timeout),
        );
        h.set_poll_duration(Duration::from_millis(1500));
        t.request(
            Endpoint::IpList,
            Code::Status(200),
            Duration::from_millis(80),
        );
        let text = render(&t);
        assert!(text.contains("reputation_up 1\n"), "{text}");
        assert!(
            text.contains("reputation_api_up{endpoint=\"ip-list\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("reputation_api_up{endpoint=\"system-check\"} 0\n"),
            "{text}"
        );
        assert!(
            !text.contains("reputation_api_up{endpoint=\"user\"}"),
            "an endpoint not polled yet has no api_up"
        );
        let ip_list = sample(
            &text,
            "reputation_last_success_timestamp_seconds{endpoint=\"ip-list\"}",
        );
        assert_eq!(ip_list, h.endpoint(Endpoint::IpList).last_success);
        assert!(
            !text.contains("reputation_last_success_timestamp_seconds{endpoint=\"system-check\"}")
        );
        assert_eq!(sample(&text, "reputation_poll_duration_seconds"), Some(1.5));
        // In the order of the README's table: state, requests, freshness, assets, the rest.
        let at = |name: &str| text.find(&format!("# TYPE {name} ")).expect(name);
        assert!(at("reputation_system_ok") < at("reputation_api_requests"));
        assert!(at("reputation_api_retries") < at("reputation_last_success_timestamp_seconds"));
        assert!(at("reputation_poll_duration_seconds") < at("reputation_assets"));
    }

    #[test]
    fn gauges_without_an_answer_yet_have_no_sample() {
        let (h, t) = telemetry(&Endpoint::POLLED);
        let text = render(&t);
        assert!(text.contains("# TYPE reputation_system_ok gauge\n"));
        assert!(!text.contains("\nreputation_system_ok "), "{text}");
        assert!(!text.contains("\nreputation_api_auth_ok "), "{text}");
        assert!(
            !text.contains("\nreputation_poll_duration_seconds "),
            "{text}"
        );
        assert!(!text.contains("reputation_account_info{"), "{text}");
        h.auth(Endpoint::IpList, true);
        h.auth(Endpoint::User, false);
        h.set_system_ok(true);
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
        let (_, t) = telemetry(&[]);
        let value = || Unrecognized::new(Field::SndsBlocked, "\"maybe\"");
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
