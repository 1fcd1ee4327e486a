//! The simulated reputation API: the upstream of the exporter's `--demo` and `simulate`, and
//! the fake upstream of its tests and benchmarks.
//!
//! It serves the endpoints of docs/upstream.md for any number of generated assets
//! ([`SimulatedApi::new`]), their names, list items and reports generated from a seed and a
//! tick (`data`), with the API's dates ([`date`]). In demo mode ([`SimulatedApi::demo`]) the
//! data moves: every few seconds scores drift, assets get listed and delisted, and the API now
//! and then answers 503. For tests it stands still and is scripted instead, with the `faults`
//! feature (`faults`): items and reports replaced with any JSON, faults queued per endpoint,
//! requests held and counted. Only dev-dependencies turn that feature on.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::time::Instant;

mod data;
pub mod date;
#[cfg(feature = "faults")]
mod faults;

pub use data::{domain_item, domain_name, ip_item, ip_name};
use data::{mix, report_item};
#[cfg(feature = "faults")]
pub use faults::Fault;

/// The token the simulated API accepts unless told otherwise.
pub const DEMO_TOKEN: &str = "demo-token";

/// How often the demo data moves.
const DEMO_TICK: Duration = Duration::from_secs(10);

/// Share of demo requests answered with 503, in per mille.
const DEMO_OUTAGE_PER_MILLE: u64 = 60;

/// One of the two lists of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum List {
    /// `/api/v1/ip-list`: IP addresses.
    Ip = 0,
    /// `/api/v1/domain-list`: domains.
    Domain = 1,
}

/// A handle on a running (or ready to run) simulated API; clones share the same state.
#[derive(Debug, Clone)]
pub struct SimulatedApi {
    state: Arc<Mutex<Sim>>,
    /// While true, every request waits before it is even counted (`SimulatedApi::hold`).
    #[cfg(feature = "faults")]
    held: Arc<tokio::sync::watch::Sender<bool>>,
}

#[derive(Debug)]
struct Sim {
    token: String,
    ips: Vec<Value>,
    domains: Vec<Value>,
    /// `Some` in demo mode: the data is regenerated as time passes.
    moving: Option<Movement>,
    /// How long each asset report takes to answer.
    report_delay: Duration,
    /// The serialized lists, kept until the items change (per [`List`]).
    bodies: [Option<bytes::Bytes>; 2],
    /// Unix time at tick 0: the dates in generated histories count from it.
    epoch: i64,
    /// Where each asset is in its list, built when first needed and dropped when the lists
    /// change their names, so that a report of 100,000 assets is not a linear search.
    positions: Option<HashMap<String, (List, usize)>>,
    /// What a test scripted, and what arrived.
    #[cfg(feature = "faults")]
    script: faults::Script,
}

impl Sim {
    /// The list and position of the asset named `name`.
    fn position_of(&mut self, name: &str) -> Option<(List, usize)> {
        let (ips, domains) = (&self.ips, &self.domains);
        let positions = self.positions.get_or_insert_with(|| {
            let named = |items: &[Value], field: &str, list: List| {
                items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| Some((v[field].as_str()?.to_owned(), (list, i))))
                    .collect::<Vec<_>>()
            };
            // Domains first, so that an address listed as both is found as the address.
            named(domains, "domain", List::Domain)
                .into_iter()
                .chain(named(ips, "ip", List::Ip))
                .collect()
        });
        positions.get(name).copied()
    }

    /// The items of `list`.
    fn items_mut(&mut self, list: List) -> &mut Vec<Value> {
        match list {
            List::Ip => &mut self.ips,
            List::Domain => &mut self.domains,
        }
    }
}

#[derive(Debug)]
struct Movement {
    started: Instant,
    tick: u64,
    ip_count: usize,
    domain_count: usize,
    /// Requests so far, per path: the first of each is always answered.
    requests: HashMap<String, u64>,
}

impl Movement {
    /// Counts a request to `path`; returns how many there have been, this one included.
    fn count(&mut self, path: &str) -> u64 {
        let count = self.requests.entry(path.to_owned()).or_default();
        *count += 1;
        *count
    }
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
                report_delay: Duration::ZERO,
                bodies: Default::default(),
                epoch: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64),
                positions: None,
                #[cfg(feature = "faults")]
                script: faults::Script::default(),
            })),
            #[cfg(feature = "faults")]
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
            requests: HashMap::new(),
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

    /// Makes every asset report take this long to answer (`simulate --report-latency`).
    pub fn set_report_delay(&self, delay: Duration) {
        self.sim().report_delay = delay;
    }

    /// Checks the request's token, and applies what a test scripted and the demo's outages;
    /// `None` means "answer normally".
    async fn intercept(&self, path: &str, headers: &HeaderMap) -> Option<Response> {
        #[cfg(feature = "faults")]
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
        #[cfg(feature = "faults")]
        sim.script.arrived(path, headers);
        let expected = format!("Bearer {}", sim.token);
        if headers.get(header::AUTHORIZATION).map(|v| v.as_bytes()) != Some(expected.as_bytes()) {
            return Decision::Answer(error(StatusCode::UNAUTHORIZED));
        }
        #[cfg(feature = "faults")]
        if let Some(decision) = sim.script.scripted(path) {
            return decision;
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
            let count = sim.moving.as_mut().map_or(0, |m| m.count(path));
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
    /// Answer normally, after this long.
    #[cfg_attr(not(feature = "faults"), allow(dead_code))]
    Delay(Duration),
    Normal,
}

fn error(status: StatusCode) -> Response {
    let reason = status.canonical_reason().unwrap_or("error");
    (status, Json(json!({ "error": reason }))).into_response()
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
    list(&api, "/api/v1/ip-list", request.headers(), List::Ip).await
}

async fn domain_list(State(api): State<SimulatedApi>, request: Request) -> Response {
    list(&api, "/api/v1/domain-list", request.headers(), List::Domain).await
}

async fn list(api: &SimulatedApi, path: &str, headers: &HeaderMap, list: List) -> Response {
    if let Some(r) = api.intercept(path, headers).await {
        return r;
    }
    let mut sim = api.sim();
    let slot = list as usize;
    let body = match &sim.bodies[slot] {
        Some(body) => body.clone(),
        None => {
            let Ok(body) = serde_json::to_vec(sim.items_mut(list)) else {
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
    #[cfg(feature = "faults")]
    api.sim().script.report_requested(request.uri().path());
    if let Some(r) = api.intercept("/api/v1/asset", request.headers()).await {
        return r;
    }
    let delay = api.sim().report_delay;
    #[cfg(feature = "faults")]
    let in_flight = faults::InFlight::new(&api);
    tokio::time::sleep(delay).await;
    #[cfg(feature = "faults")]
    drop(in_flight);
    // What to answer is decided under the lock; the report is generated and serialized after
    // it, so that concurrent requests do not queue behind one another.
    let (report, now) = {
        let mut sim = api.sim();
        let tick = sim.moving.as_ref().map_or(0, |m| m.tick);
        let now = sim.epoch + (tick * DEMO_TICK.as_secs()) as i64;
        #[cfg(feature = "faults")]
        if let Some(scripted) = sim.script.report(&name) {
            return match scripted {
                Some(report) => Json(report).into_response(),
                None => error(StatusCode::NOT_FOUND),
            };
        }
        let seed = match sim.position_of(&name) {
            Some((List::Ip, i)) => i as u64,
            Some((List::Domain, i)) => 1_000_000 + i as u64,
            None => return error(StatusCode::NOT_FOUND),
        };
        ((seed, tick), now)
    };
    let (seed, tick) = report;
    Json(report_item(&name, seed, tick, now)).into_response()
}
