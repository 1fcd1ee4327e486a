//! What an account's pollers know about the API: each endpoint's state, its last success and
//! attempt, its current failure and failing streak, whether the token is accepted.
//!
//! This is the state decisions read: the landing page, `--once`, the log lines (a streak is
//! said when it starts and ends, not at every retry) and readiness. The health metrics
//! (`reputation_up`, `reputation_api_up`, `reputation_api_auth_ok`, `reputation_system_ok`,
//! `reputation_last_success_timestamp_seconds`, `reputation_poll_duration_seconds`) are rendered
//! from it by a collector in [`crate::telemetry`]; nothing reads a gauge back.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use crate::vocabulary::{Endpoint, Failure};

/// How many asset report requests in a row must fail (after their retries) before the asset
/// endpoint reads as down; one that answers sets it up again.
pub const REPORT_FAILURES_DOWN: u32 = 5;

/// Where an endpoint stands in a failing streak, so that the log says when a streak starts,
/// when it gives up, and when it ends, not every retry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Streak {
    /// Its last request succeeded (or none was made yet).
    #[default]
    Fine,
    /// Failing since this poll began, and being retried.
    Retrying,
    /// Failing with this kind of failure, given up until the next poll; the polls after it
    /// stay in this streak while they fail the same way.
    GaveUp(Failure),
}

/// One endpoint's state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndpointState {
    /// Whether its last poll succeeded; `None` before its first outcome (unknown is not
    /// down, so a restart cannot look like an outage).
    pub up: Option<bool>,
    /// Unix time of its last success.
    pub last_success: Option<f64>,
    /// Unix time its last poll (or report round) ended.
    pub last_attempt: Option<f64>,
    /// Why its last poll failed, when it did.
    pub failure: Option<Failure>,
    /// For the asset endpoint: the reports of its last round that failed, by kind, and how
    /// many assets the round had.
    pub round: Option<(BTreeMap<Failure, usize>, usize)>,
    /// Where it is in a failing streak.
    pub streak: Streak,
}

impl EndpointState {
    /// Why its last poll failed, in words: the failure, or a report round's tally
    /// (`2 of 5 reports failed (HTTP 503=2)`).
    pub fn why(&self) -> Option<String> {
        if let Some((failures, assets)) = &self.round {
            let failed: usize = failures.values().sum();
            return (failed > 0)
                .then(|| format!("{failed} of {assets} reports failed ({})", tally(failures)));
        }
        self.failure.map(|f| f.to_string())
    }

    /// Whether its last poll failed.
    pub fn failing(&self) -> bool {
        self.up == Some(false)
    }
}

/// Failures by kind in a line: `HTTP 503=2, timeout=1`.
pub fn tally(failures: &BTreeMap<Failure, usize>) -> String {
    failures
        .iter()
        .map(|(failure, n)| format!("{failure}={n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the health metrics show, read at once: `reputation_up`, and per endpoint whether it is
/// up and when it last succeeded (endpoints in label order, only those known), the token's
/// and system-check's verdicts, the last poll's length.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gauges {
    /// Whether the last poll of both lists succeeded.
    pub up: bool,
    /// Each endpoint with an outcome: whether its last poll succeeded.
    pub api_up: Vec<(Endpoint, bool)>,
    /// Each endpoint that ever succeeded: Unix time of its last success.
    pub last_success: Vec<(Endpoint, f64)>,
    /// See [`Health::auth_ok`].
    pub auth_ok: Option<bool>,
    /// Whether system-check last said the API is operational; `None` before it answered.
    pub system_ok: Option<bool>,
    /// The length of the last whole poll, once one ended.
    pub poll_duration: Option<Duration>,
}

/// The health of one account's API. A std mutex: held for a few map updates, never across an
/// `.await`.
#[derive(Debug)]
pub struct Health {
    /// The endpoints this account polls, in label order.
    endpoints: Vec<Endpoint>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    endpoints: BTreeMap<Endpoint, EndpointState>,
    /// Per endpoint: whether its last answer accepted the token.
    auth: BTreeMap<Endpoint, bool>,
    /// Whether system-check last said the API is operational.
    system_ok: Option<bool>,
    /// Length of the last whole poll of the lists.
    poll_duration: Option<Duration>,
    /// When the next poll of the lists is due, once the first has ended.
    next_poll: Option<Instant>,
    /// When the next asset report round is due, once the first has started.
    next_round: Option<Instant>,
    /// Asset report requests that failed in a row, since the last that answered.
    report_failures: u32,
}

impl Health {
    /// The health of these polled endpoints, none of them polled yet.
    pub fn new(endpoints: &[Endpoint]) -> Health {
        let mut endpoints = endpoints.to_vec();
        endpoints.sort();
        endpoints.dedup();
        Health {
            endpoints,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves plain maps behind; keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The endpoints polled, in label order.
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    /// Every polled endpoint with its state.
    pub fn all(&self) -> Vec<(Endpoint, EndpointState)> {
        let state = self.state();
        self.endpoints
            .iter()
            .map(|e| (*e, state.endpoints.get(e).cloned().unwrap_or_default()))
            .collect()
    }

    /// One endpoint's state.
    pub fn endpoint(&self, endpoint: Endpoint) -> EndpointState {
        self.state()
            .endpoints
            .get(&endpoint)
            .cloned()
            .unwrap_or_default()
    }

    /// What the health metrics show, under one lock (a scrape reads it).
    pub fn gauges(&self) -> Gauges {
        let state = self.state();
        let known = || {
            self.endpoints
                .iter()
                .filter_map(|e| Some((*e, state.endpoints.get(e)?)))
        };
        Gauges {
            up: up(&state),
            api_up: known().filter_map(|(e, s)| Some((e, s.up?))).collect(),
            last_success: known()
                .filter_map(|(e, s)| Some((e, s.last_success?)))
                .collect(),
            auth_ok: auth_ok(&state),
            system_ok: state.system_ok,
            poll_duration: state.poll_duration,
        }
    }

    /// Records the outcome of one poll of an endpoint.
    pub fn polled(&self, endpoint: Endpoint, outcome: Result<(), Failure>) {
        let now = unix_now();
        let mut state = self.state();
        let e = state.endpoints.entry(endpoint).or_default();
        e.up = Some(outcome.is_ok());
        e.last_attempt = Some(now);
        e.failure = outcome.err();
        if outcome.is_ok() {
            e.last_success = Some(now);
        }
    }

    /// Whether the last poll of both lists succeeded (`reputation_up`).
    pub fn up(&self) -> bool {
        up(&self.state())
    }

    /// The endpoints whose last poll failed, each with why.
    pub fn failing(&self) -> Vec<(Endpoint, String)> {
        self.all()
            .into_iter()
            .filter(|(_, s)| s.failing())
            .map(|(e, s)| (e, s.why().unwrap_or_else(|| "no answer".into())))
            .collect()
    }

    /// A request of `endpoint` failed and will be retried: true when that starts a failing
    /// streak (and should be said).
    pub fn retrying(&self, endpoint: Endpoint) -> bool {
        let mut state = self.state();
        let streak = &mut state.endpoints.entry(endpoint).or_default().streak;
        if *streak == Streak::Fine {
            *streak = Streak::Retrying;
            true
        } else {
            false
        }
    }

    /// `endpoint` gave up with `failure`: true when that is news (the streak's first, or a
    /// different kind of failure than before).
    pub fn gave_up(&self, endpoint: Endpoint, failure: Failure) -> bool {
        let mut state = self.state();
        let streak = &mut state.endpoints.entry(endpoint).or_default().streak;
        std::mem::replace(streak, Streak::GaveUp(failure)) != Streak::GaveUp(failure)
    }

    /// A request of `endpoint` succeeded: true when that ends a failing streak.
    pub fn recovered(&self, endpoint: Endpoint) -> bool {
        let mut state = self.state();
        let streak = &mut state.endpoints.entry(endpoint).or_default().streak;
        std::mem::take(streak) != Streak::Fine
    }

    /// Records one asset report request as it ends (a 404 answered): the asset endpoint's
    /// health follows the requests, not the rounds, so a round in progress never reads as
    /// down; it is down after [`REPORT_FAILURES_DOWN`] failures in a row.
    pub fn report_answered(&self, answered: bool) {
        let now = unix_now();
        let mut state = self.state();
        state.report_failures = if answered {
            0
        } else {
            state.report_failures.saturating_add(1)
        };
        let down = state.report_failures >= REPORT_FAILURES_DOWN;
        let e = state.endpoints.entry(Endpoint::Asset).or_default();
        if answered {
            e.up = Some(true);
            e.last_success = Some(now);
        } else if down {
            e.up = Some(false);
        }
    }

    /// Records the end of an asset report round: when it ended, and the reports that failed
    /// by kind. A round of which no request answered reads as down, however few its requests.
    pub fn round_ended(&self, assets: usize, answered: usize, failures: BTreeMap<Failure, usize>) {
        let now = unix_now();
        let mut state = self.state();
        let e = state.endpoints.entry(Endpoint::Asset).or_default();
        e.last_attempt = Some(now);
        if answered == 0 && !failures.is_empty() {
            e.up = Some(false);
        }
        e.round = Some((failures, assets));
    }

    /// Records the last success of an endpoint as the state store kept it (Unix time): the
    /// data's age is what it was, though this process has not polled yet. Whether the endpoint
    /// is up stays unknown until it is polled.
    pub fn restored(&self, endpoint: Endpoint, last_success: f64) {
        let mut state = self.state();
        let e = state.endpoints.entry(endpoint).or_default();
        if e.last_success.is_none_or(|known| known < last_success) {
            e.last_success = Some(last_success);
        }
    }

    /// Records whether an answer of this endpoint accepted the token.
    pub fn auth(&self, endpoint: Endpoint, accepted: bool) {
        self.state().auth.insert(endpoint, accepted);
    }

    /// Whether every endpoint's last answer accepted the token; `None` before any answer.
    pub fn auth_ok(&self) -> Option<bool> {
        auth_ok(&self.state())
    }

    /// Records the system-check verdict.
    pub fn set_system_ok(&self, ok: bool) {
        self.state().system_ok = Some(ok);
    }

    /// Records the length of the last whole poll.
    pub fn set_poll_duration(&self, elapsed: Duration) {
        self.state().poll_duration = Some(elapsed);
    }

    /// Records when the next poll of the lists is due.
    pub fn set_next_poll(&self, at: Instant) {
        self.state().next_poll = Some(at);
    }

    /// When the next poll of the lists is due, once the first has ended: for the landing page,
    /// and for a poller that takes over the schedule after a reload.
    pub fn next_poll(&self) -> Option<Instant> {
        self.state().next_poll
    }

    /// Records when the next asset report round is due.
    pub fn set_next_round(&self, at: Instant) {
        self.state().next_round = Some(at);
    }

    /// When the next asset report round is due, once the first has started.
    pub fn next_round(&self) -> Option<Instant> {
        self.state().next_round
    }
}

fn up(state: &State) -> bool {
    [Endpoint::IpList, Endpoint::DomainList]
        .iter()
        .all(|e| state.endpoints.get(e).and_then(|s| s.up) == Some(true))
}

fn auth_ok(state: &State) -> Option<bool> {
    (!state.auth.is_empty()).then(|| state.auth.values().all(|ok| *ok))
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The Unix time of `at`, an instant of this process.
pub fn unix_time(at: Instant) -> f64 {
    unix_now() - Instant::now().saturating_duration_since(at).as_secs_f64()
}

/// The instant of this process at Unix time `unix`; never later than now.
pub fn instant_at(unix: f64) -> Option<Instant> {
    let age = (unix_now() - unix).max(0.0);
    Instant::now().checked_sub(Duration::from_secs_f64(age))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_needs_both_list_endpoints_and_unknown_is_not_up() {
        let h = Health::new(&Endpoint::POLLED);
        assert!(!h.up());
        h.polled(Endpoint::IpList, Ok(()));
        assert!(!h.up());
        h.polled(Endpoint::DomainList, Ok(()));
        assert!(h.up());
        assert_eq!(h.endpoint(Endpoint::User).up, None);
        h.polled(Endpoint::DomainList, Err(Failure::Status(503)));
        assert!(!h.up());
        assert_eq!(h.failing(), [(Endpoint::DomainList, "HTTP 503".to_owned())]);
    }

    #[test]
    fn a_streak_is_news_when_it_starts_changes_its_failure_and_ends() {
        let h = Health::new(&[Endpoint::IpList]);
        assert!(
            h.retrying(Endpoint::IpList),
            "the first failure starts a streak"
        );
        assert!(!h.retrying(Endpoint::IpList));
        assert!(h.gave_up(Endpoint::IpList, Failure::Status(503)));
        assert!(!h.retrying(Endpoint::IpList), "still the same streak");
        assert!(!h.gave_up(Endpoint::IpList, Failure::Status(503)));
        assert!(
            h.gave_up(Endpoint::IpList, Failure::Timeout),
            "another kind"
        );
        assert!(h.recovered(Endpoint::IpList));
        assert!(!h.recovered(Endpoint::IpList));
    }

    #[test]
    fn the_asset_endpoint_is_down_only_after_five_failed_reports_in_a_row() {
        let h = Health::new(&[Endpoint::Asset]);
        let up = |h: &Health| h.endpoint(Endpoint::Asset).up;
        assert_eq!(up(&h), None, "unknown before the first report");
        h.report_answered(true);
        assert_eq!(up(&h), Some(true));
        for _ in 0..REPORT_FAILURES_DOWN - 1 {
            h.report_answered(false);
        }
        assert_eq!(up(&h), Some(true), "four failures are not an outage");
        h.report_answered(false);
        assert_eq!(up(&h), Some(false));
        h.report_answered(true);
        assert_eq!(up(&h), Some(true));
        // A round of which nothing answered is down, however few its requests.
        let small = Health::new(&[Endpoint::Asset]);
        small.report_answered(false);
        small.round_ended(1, 0, BTreeMap::from([(Failure::Status(503), 1)]));
        assert_eq!(up(&small), Some(false));
        assert_eq!(
            small.failing(),
            [(
                Endpoint::Asset,
                "1 of 1 reports failed (HTTP 503=1)".to_owned()
            )]
        );
    }

    #[test]
    fn auth_is_unknown_until_an_answer_and_rejected_while_any_endpoint_rejects() {
        let h = Health::new(&Endpoint::POLLED);
        assert_eq!(h.auth_ok(), None);
        h.auth(Endpoint::IpList, true);
        assert_eq!(h.auth_ok(), Some(true));
        h.auth(Endpoint::User, false);
        assert_eq!(h.auth_ok(), Some(false));
        h.auth(Endpoint::User, true);
        assert_eq!(h.auth_ok(), Some(true));
    }
}
