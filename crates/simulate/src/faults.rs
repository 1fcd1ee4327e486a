//! Scripting the simulated API for tests (the `faults` feature): items and reports replaced
//! with any JSON, faults queued per endpoint, outages, requests held, and counts of what
//! arrived.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::time::Instant;

use crate::{Decision, List, Sim, SimulatedApi, error};

/// One scripted answer of an endpoint, used once, before the normal answer.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Answer with this status and a small JSON error body.
    Status(u16),
    /// Answer with this status and this `Retry-After` header value.
    RetryAfter(u16, String),
    /// Answer 200 with this raw body.
    Body(String),
    /// Wait this long, then answer normally.
    Delay(Duration),
    /// Answer `302 Found` with this `Location`.
    Redirect(String),
    /// Answer 200, send this start of a body, then nothing more while the connection lasts.
    Stall(String),
}

/// What a test scripted, and what arrived.
#[derive(Debug, Default)]
pub(crate) struct Script {
    faults: HashMap<String, VecDeque<Fault>>,
    /// Endpoints that answer this status to every request, once their queued faults are used.
    outages: HashMap<String, u16>,
    /// When each request arrived, per path (all asset reports under `/api/v1/asset`).
    arrivals: HashMap<String, Vec<Instant>>,
    /// Asset reports set by a test, by asset name, served instead of generated ones.
    reports: HashMap<String, Value>,
    /// Assets whose report answers 404.
    hidden_reports: HashSet<String>,
    /// Asset report paths exactly as requested, still percent-encoded.
    report_paths: Vec<String>,
    /// Every `Authorization` header value received, whether accepted or not.
    authorizations: BTreeSet<String>,
    /// Asset report requests being answered now, and the most at once so far.
    reports_in_flight: usize,
    reports_in_flight_max: usize,
}

impl Script {
    /// Records a request to `path` and its `Authorization` header.
    pub(crate) fn arrived(&mut self, path: &str, headers: &HeaderMap) {
        self.arrivals
            .entry(path.into())
            .or_default()
            .push(Instant::now());
        let authorization = headers
            .get(header::AUTHORIZATION)
            .map(|v| String::from_utf8_lossy(v.as_bytes()));
        if let Some(value) = authorization {
            // Nearly every request repeats a header already seen: no copy for those.
            if !self.authorizations.contains(value.as_ref()) {
                self.authorizations.insert(value.into_owned());
            }
        }
    }

    /// The queued fault of `path`, else its outage.
    pub(crate) fn scripted(&mut self, path: &str) -> Option<Decision> {
        if let Some(fault) = self.faults.get_mut(path).and_then(VecDeque::pop_front) {
            return Some(fault.decision());
        }
        let status = self.outages.get(path)?;
        Some(Decision::Answer(error(status_code(*status))))
    }

    /// Records an asset report's path as requested.
    pub(crate) fn report_requested(&mut self, path: &str) {
        self.report_paths.push(path.to_owned());
    }

    /// The report a test set for `name` (`Some(None)`: it answers 404), or `None` to generate
    /// it.
    pub(crate) fn report(&self, name: &str) -> Option<Option<Value>> {
        if self.hidden_reports.contains(name) {
            return Some(None);
        }
        self.reports.get(name).map(|report| Some(report.clone()))
    }
}

impl Fault {
    fn decision(self) -> Decision {
        match self {
            Fault::Status(status) => Decision::Answer(error(status_code(status))),
            Fault::RetryAfter(status, value) => {
                let mut response = error(status_code(status));
                if let Ok(value) = HeaderValue::from_str(&value) {
                    response.headers_mut().insert(header::RETRY_AFTER, value);
                }
                Decision::Answer(response)
            }
            Fault::Body(body) => Decision::Answer(json_body(body)),
            Fault::Delay(delay) => Decision::Delay(delay),
            Fault::Redirect(location) => Decision::Answer(
                (StatusCode::FOUND, [(header::LOCATION, location)]).into_response(),
            ),
            Fault::Stall(start) => {
                use futures_util::StreamExt as _;
                let first = futures_util::stream::once(async move {
                    Ok::<_, std::convert::Infallible>(bytes::Bytes::from(start))
                });
                let body =
                    axum::body::Body::from_stream(first.chain(futures_util::stream::pending()));
                Decision::Answer(json_body(body))
            }
        }
    }
}

fn status_code(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn json_body(body: impl Into<axum::body::Body>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body.into()).into_response()
}

/// Counts an asset report request as answered when dropped, even if the client went away.
pub(crate) struct InFlight(SimulatedApi);

impl InFlight {
    pub(crate) fn new(api: &SimulatedApi) -> InFlight {
        let mut sim = api.sim();
        let script = &mut sim.script;
        script.reports_in_flight += 1;
        script.reports_in_flight_max = script.reports_in_flight_max.max(script.reports_in_flight);
        InFlight(api.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.sim().script.reports_in_flight -= 1;
    }
}

impl Sim {
    /// Forgets what was derived from the items after a test changed them.
    fn items_changed(&mut self) {
        self.positions = None;
        self.bodies = Default::default();
    }
}

impl SimulatedApi {
    /// Makes every request wait, unanswered, until [`SimulatedApi::release`]: an upstream that
    /// has not answered yet.
    pub fn hold(&self) {
        self.held.send_replace(true);
    }

    /// Answers the held requests and every later one.
    pub fn release(&self) {
        self.held.send_replace(false);
    }

    /// Sets the token the API accepts.
    pub fn set_token(&self, token: &str) {
        self.sim().token = token.into();
    }

    /// Replaces the items of one list with arbitrary JSON values.
    pub fn set_items(&self, list: List, items: Vec<Value>) {
        let mut sim = self.sim();
        *sim.items_mut(list) = items;
        sim.items_changed();
    }

    /// The items of one list as served now.
    pub fn items(&self, list: List) -> Vec<Value> {
        self.sim().items_mut(list).clone()
    }

    /// Removes an asset from whichever list has it.
    pub fn remove_asset(&self, name: &str) {
        let mut sim = self.sim();
        sim.ips.retain(|v| v["ip"] != name);
        sim.domains.retain(|v| v["domain"] != name);
        sim.items_changed();
    }

    /// Queues a scripted answer for the endpoint at `path` (e.g. `/api/v1/ip-list`).
    pub fn push_fault(&self, path: &str, fault: Fault) {
        self.sim()
            .script
            .faults
            .entry(path.into())
            .or_default()
            .push_back(fault);
    }

    /// Makes the endpoint at `path` answer `status` to every request from now on (`None` ends
    /// the outage).
    pub fn set_outage(&self, path: &str, status: Option<u16>) {
        let outages = &mut self.sim().script.outages;
        match status {
            Some(status) => outages.insert(path.into(), status),
            None => outages.remove(path),
        };
    }

    /// Serves `report` as the asset report of `name` (the asset must still be in a list).
    pub fn set_report(&self, name: &str, report: Value) {
        self.sim().script.reports.insert(name.into(), report);
    }

    /// Makes the asset report of `name` answer 404, as for an asset the API does not know.
    pub fn hide_report(&self, name: &str) {
        self.sim().script.hidden_reports.insert(name.into());
    }

    /// Asset report paths as requested, still percent-encoded.
    pub fn report_paths(&self) -> Vec<String> {
        self.sim().script.report_paths.clone()
    }

    /// The most asset report requests that were ever in flight at once.
    pub fn reports_in_flight_max(&self) -> usize {
        self.sim().script.reports_in_flight_max
    }

    /// Requests received so far at `path`, answered or not.
    pub fn requests(&self, path: &str) -> usize {
        self.sim().script.arrivals.get(path).map_or(0, Vec::len)
    }

    /// Every `Authorization` header value received so far.
    pub fn authorizations(&self) -> Vec<String> {
        self.sim().script.authorizations.iter().cloned().collect()
    }

    /// When each request to `path` arrived.
    pub fn arrivals(&self, path: &str) -> Vec<Instant> {
        self.sim()
            .script
            .arrivals
            .get(path)
            .cloned()
            .unwrap_or_default()
    }
}
