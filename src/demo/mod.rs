//! The simulated API: the upstream of `--demo`, of the tests and of the benchmarks.
//!
//! It serves the endpoints of upstream-api.md for any number of generated assets. In demo mode
//! the data moves: every few seconds scores drift, assets get listed and delisted, and the API
//! now and then answers 503. For tests it stands still and is scripted instead: items can be
//! replaced with any JSON, faults queued per endpoint, and requests counted.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::time::Instant;

mod data;

pub use data::{domain_item, domain_name, ip_item, ip_name};
use data::{mix, report_item};

use crate::vocabulary::Kind;

/// The token the simulated API accepts unless told otherwise.
pub const DEMO_TOKEN: &str = "demo-token";

/// How often the demo data moves.
const DEMO_TICK: Duration = Duration::from_secs(10);

/// Share of demo requests answered with 503, in per mille.
const DEMO_OUTAGE_PER_MILLE: u64 = 60;

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

/// A handle on a running (or ready to run) simulated API; clones share the same state.
#[derive(Debug, Clone)]
pub struct SimulatedApi {
    state: Arc<Mutex<Sim>>,
    /// While true, every request waits before it is even counted (see [`SimulatedApi::hold`]).
    held: Arc<tokio::sync::watch::Sender<bool>>,
}

#[derive(Debug)]
struct Sim {
    token: String,
    ips: Vec<Value>,
    domains: Vec<Value>,
    /// `Some` in demo mode: the data is regenerated as time passes.
    moving: Option<Movement>,
    faults: HashMap<String, VecDeque<Fault>>,
    /// Endpoints that answer this status to every request, once their queued faults are used.
    outages: HashMap<String, u16>,
    /// When each request arrived, per path (all asset reports under `/api/v1/asset`).
    arrivals: HashMap<String, Vec<Instant>>,
    /// Asset reports set by a test, by asset name, served instead of generated ones.
    reports: HashMap<String, Value>,
    /// Assets whose report answers 404.
    hidden_reports: std::collections::HashSet<String>,
    /// Asset report paths exactly as requested, still percent-encoded.
    report_paths: Vec<String>,
    /// Every `Authorization` header value received, whether accepted or not.
    authorizations: std::collections::BTreeSet<String>,
    /// How long each asset report takes to answer.
    report_delay: Duration,
    /// Asset report requests being answered now, and the most at once so far.
    reports_in_flight: usize,
    reports_in_flight_max: usize,
    /// The serialized lists, kept until the items change (per [`Kind`]).
    bodies: [Option<bytes::Bytes>; 2],
    /// Unix time at tick 0: the dates in generated histories count from it.
    epoch: i64,
    /// Where each asset is in its list, built when first needed and dropped when the lists
    /// change their names, so that a report of 100,000 assets is not a linear search.
    positions: Option<HashMap<String, (Kind, usize)>>,
}

impl Sim {
    /// The list and position of the asset named `name`.
    fn position_of(&mut self, name: &str) -> Option<(Kind, usize)> {
        let (ips, domains) = (&self.ips, &self.domains);
        let positions = self.positions.get_or_insert_with(|| {
            let named = |items: &[Value], field: &str, kind: Kind| {
                items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| Some((v[field].as_str()?.to_owned(), (kind, i))))
                    .collect::<Vec<_>>()
            };
            // Domains first, so that an address listed as both is found as the address.
            named(domains, "domain", Kind::Domain)
                .into_iter()
                .chain(named(ips, "ip", Kind::Ip))
                .collect()
        });
        positions.get(name).copied()
    }
}

#[derive(Debug)]
struct Movement {
    started: Instant,
    tick: u64,
    ip_count: usize,
    domain_count: usize,
}

impl SimulatedApi {
    /// A still API with `ips` addresses and `domains` domains, accepting [`DEMO_TOKEN`].
    pub fn new(ips: usize, domains: usize) -> Self {
        SimulatedApi {
            state: Arc::new(Mutex::new(Sim {
                token: DEMO_TOKEN.into(),
                ips: (0..ips).map(|i| ip_item(i, 0)).collect(),
                domains: (0..domains).map(|i| domain_item(i, 0)).collect(),
                moving: None,
                faults: HashMap::new(),
                outages: HashMap::new(),
                arrivals: HashMap::new(),
                reports: HashMap::new(),
                hidden_reports: Default::default(),
                report_paths: Vec::new(),
                authorizations: Default::default(),
                report_delay: Duration::ZERO,
                reports_in_flight: 0,
                reports_in_flight_max: 0,
                bodies: Default::default(),
                epoch: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64),
                positions: None,
            })),
            held: Arc::new(tokio::sync::watch::channel(false).0),
        }
    }

    /// The `--demo` API: a few dozen assets whose data moves over time.
    pub fn demo() -> Self {
        let api = SimulatedApi::new(24, 12);
        api.sim().moving = Some(Movement {
            started: Instant::now(),
            tick: 0,
            ip_count: 24,
            domain_count: 12,
        });
        api
    }

    fn sim(&self) -> std::sync::MutexGuard<'_, Sim> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Binds 127.0.0.1 on a free port and serves until the runtime ends; returns the base URL.
    pub async fn spawn(&self) -> std::io::Result<String> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address: SocketAddr = listener.local_addr()?;
        let router = self.router();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Ok(format!("http://{address}"))
    }

    /// The API as a router, for serving on a listener of the caller's.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/api/v1/user", get(user))
            .route("/api/v1/system-check", get(system_check))
            .route("/api/v1/ip-list", get(ip_list))
            .route("/api/v1/domain-list", get(domain_list))
            .route("/api/v1/asset/{asset}", get(asset_report))
            .with_state(self.clone())
    }

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
    pub fn set_items(&self, kind: Kind, items: Vec<Value>) {
        let mut sim = self.sim();
        match kind {
            Kind::Ip => sim.ips = items,
            Kind::Domain => sim.domains = items,
        }
        sim.positions = None;
        sim.bodies = Default::default();
    }

    /// The items of one list as served now.
    pub fn items(&self, kind: Kind) -> Vec<Value> {
        let sim = self.sim();
        match kind {
            Kind::Ip => sim.ips.clone(),
            Kind::Domain => sim.domains.clone(),
        }
    }

    /// Removes an asset from whichever list has it.
    pub fn remove_asset(&self, name: &str) {
        let mut sim = self.sim();
        sim.ips.retain(|v| v["ip"] != name);
        sim.domains.retain(|v| v["domain"] != name);
        sim.positions = None;
        sim.bodies = Default::default();
    }

    /// Queues a scripted answer for the endpoint at `path` (e.g. `/api/v1/ip-list`).
    pub fn push_fault(&self, path: &str, fault: Fault) {
        self.sim()
            .faults
            .entry(path.into())
            .or_default()
            .push_back(fault);
    }

    /// Makes the endpoint at `path` answer `status` to every request from now on (`None` ends
    /// the outage).
    pub fn set_outage(&self, path: &str, status: Option<u16>) {
        let mut sim = self.sim();
        match status {
            Some(status) => sim.outages.insert(path.into(), status),
            None => sim.outages.remove(path),
        };
    }

    /// Serves `report` as the asset report of `name` (the asset must still be in a list).
    pub fn set_report(&self, name: &str, report: Value) {
        self.sim().reports.insert(name.into(), report);
    }

    /// Makes the asset report of `name` answer 404, as for an asset the API does not know.
    pub fn hide_report(&self, name: &str) {
        self.sim().hidden_reports.insert(name.into());
    }

    /// Makes every asset report take this long to answer.
    pub fn set_report_delay(&self, delay: Duration) {
        self.sim().report_delay = delay;
    }

    /// Asset report paths as requested, still percent-encoded.
    pub fn report_paths(&self) -> Vec<String> {
        self.sim().report_paths.clone()
    }

    /// The most asset report requests that were ever in flight at once.
    pub fn reports_in_flight_max(&self) -> usize {
        self.sim().reports_in_flight_max
    }

    /// Requests received so far at `path`, answered or not.
    pub fn requests(&self, path: &str) -> usize {
        self.sim().arrivals.get(path).map_or(0, Vec::len)
    }

    /// Every `Authorization` header value received so far.
    pub fn authorizations(&self) -> Vec<String> {
        self.sim().authorizations.iter().cloned().collect()
    }

    /// When each request to `path` arrived.
    pub fn arrivals(&self, path: &str) -> Vec<Instant> {
        self.sim().arrivals.get(path).cloned().unwrap_or_default()
    }

    /// Records the request, checks its token and applies any queued fault, outage or demo
    /// outage; `None` means "answer normally".
    async fn intercept(&self, path: &str, headers: &HeaderMap) -> Option<Response> {
        let _ = self.held.subscribe().wait_for(|held| !*held).await;
        let delay = match self.decide(path, headers) {
            Decision::Answer(response) => return Some(response),
            Decision::Normal => return None,
            Decision::Delay(delay) => delay,
        };
        tokio::time::sleep(delay).await;
        None
    }

    fn decide(&self, path: &str, headers: &HeaderMap) -> Decision {
        let mut sim = self.sim();
        let arrivals = sim.arrivals.entry(path.into()).or_default();
        arrivals.push(Instant::now());
        let count = arrivals.len() as u64;
        let expected = format!("Bearer {}", sim.token);
        let authorization = headers
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes);
        if let Some(value) = authorization.map(String::from_utf8_lossy) {
            // Nearly every request repeats a header already seen: no copy for those.
            if !sim.authorizations.contains(value.as_ref()) {
                sim.authorizations.insert(value.into_owned());
            }
        }
        if authorization != Some(expected.as_bytes()) {
            return Decision::Answer(error(StatusCode::UNAUTHORIZED));
        }
        if let Some(fault) = sim.faults.get_mut(path).and_then(VecDeque::pop_front) {
            return match fault {
                Fault::Status(status) => Decision::Answer(error(status_code(status))),
                Fault::RetryAfter(status, value) => {
                    let mut response = error(status_code(status));
                    if let Ok(value) = HeaderValue::from_str(&value) {
                        response.headers_mut().insert(header::RETRY_AFTER, value);
                    }
                    Decision::Answer(response)
                }
                Fault::Body(body) => Decision::Answer(raw_json(body)),
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
                    Decision::Answer(
                        ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
                    )
                }
            };
        }
        if let Some(status) = sim.outages.get(path) {
            return Decision::Answer(error(status_code(*status)));
        }
        if let Some(movement) = &mut sim.moving {
            let tick = movement.started.elapsed().as_secs() / DEMO_TICK.as_secs();
            if tick != movement.tick {
                movement.tick = tick;
                let (ips, domains) = (movement.ip_count, movement.domain_count);
                sim.ips = (0..ips).map(|i| ip_item(i, tick)).collect();
                sim.domains = (0..domains).map(|i| domain_item(i, tick)).collect();
                sim.bodies = Default::default();
            }
            // The first answer of each endpoint is always good, so the demo starts full.
            let roll = mix(count, tick, path.len() as u64) % 1000;
            if count > 1 && path != "/api/v1/user" && roll < DEMO_OUTAGE_PER_MILLE {
                return Decision::Answer(error(StatusCode::SERVICE_UNAVAILABLE));
            }
        }
        Decision::Normal
    }
}

/// What the simulated API does with one request.
enum Decision {
    Answer(Response),
    Delay(Duration),
    Normal,
}

fn status_code(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn error(status: StatusCode) -> Response {
    let reason = status.canonical_reason().unwrap_or("error");
    (status, Json(json!({ "error": reason }))).into_response()
}

fn raw_json(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn user(State(api): State<SimulatedApi>, request: Request) -> Response {
    if let Some(r) = api.intercept("/api/v1/user", request.headers()).await {
        return r;
    }
    Json(json!({"id": 4242, "name": "Demo User", "email": "demo@example.com", "project_id": 7}))
        .into_response()
}

async fn system_check(State(api): State<SimulatedApi>, request: Request) -> Response {
    if let Some(r) = api
        .intercept("/api/v1/system-check", request.headers())
        .await
    {
        return r;
    }
    Json(json!({"status": "ok", "message": "All systems operational"})).into_response()
}

async fn ip_list(State(api): State<SimulatedApi>, request: Request) -> Response {
    list(&api, "/api/v1/ip-list", request.headers(), Kind::Ip).await
}

async fn domain_list(State(api): State<SimulatedApi>, request: Request) -> Response {
    list(&api, "/api/v1/domain-list", request.headers(), Kind::Domain).await
}

async fn list(api: &SimulatedApi, path: &str, headers: &HeaderMap, kind: Kind) -> Response {
    if let Some(r) = api.intercept(path, headers).await {
        return r;
    }
    let mut sim = api.sim();
    let slot = kind as usize;
    let body = match &sim.bodies[slot] {
        Some(body) => body.clone(),
        None => {
            let items = match kind {
                Kind::Ip => &sim.ips,
                Kind::Domain => &sim.domains,
            };
            let Ok(body) = serde_json::to_vec(items) else {
                return error(StatusCode::INTERNAL_SERVER_ERROR);
            };
            let body = bytes::Bytes::from(body);
            sim.bodies[slot] = Some(body.clone());
            body
        }
    };
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn asset_report(
    State(api): State<SimulatedApi>,
    Path(name): Path<String>,
    request: Request,
) -> Response {
    api.sim().report_paths.push(request.uri().path().to_owned());
    if let Some(r) = api.intercept("/api/v1/asset", request.headers()).await {
        return r;
    }
    let delay = {
        let mut sim = api.sim();
        sim.reports_in_flight += 1;
        sim.reports_in_flight_max = sim.reports_in_flight_max.max(sim.reports_in_flight);
        sim.report_delay
    };
    let in_flight = InFlight(api.clone());
    tokio::time::sleep(delay).await;
    drop(in_flight);
    // What to answer is decided under the lock; the report is generated and serialized after
    // it, so that concurrent requests do not queue behind one another.
    enum Answer {
        Set(Value),
        Generated(u64, u64, i64),
        Unknown,
    }
    let answer = {
        let mut sim = api.sim();
        let tick = sim.moving.as_ref().map_or(0, |m| m.tick);
        let now = sim.epoch + (tick * DEMO_TICK.as_secs()) as i64;
        if sim.hidden_reports.contains(&name) {
            Answer::Unknown
        } else if let Some(report) = sim.reports.get(&name) {
            Answer::Set(report.clone())
        } else {
            match sim.position_of(&name) {
                Some((Kind::Ip, i)) => Answer::Generated(i as u64, tick, now),
                Some((Kind::Domain, i)) => Answer::Generated(1_000_000 + i as u64, tick, now),
                None => Answer::Unknown,
            }
        }
    };
    let report = match answer {
        Answer::Set(report) => Some(report),
        Answer::Generated(seed, tick, now) => Some(report_item(&name, seed, tick, now)),
        Answer::Unknown => None,
    };
    match report {
        Some(report) => Json(report).into_response(),
        None => error(StatusCode::NOT_FOUND),
    }
}

/// Counts an asset report request as answered when dropped, even if the client went away.
struct InFlight(SimulatedApi);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.sim().reports_in_flight -= 1;
    }
}
