//! The poll loop: when each endpoint is fetched, what a result does to the served snapshot.
//!
//! Every `poll.interval` the loop fetches ip-list, domain-list and system-check concurrently (and
//! `user` at start, then hourly). Each list that arrives is converted and swapped into the
//! [`Latest`] at once, so a slow or failing endpoint never holds back the others. A list that fails
//! leaves its last good assets in place until they are older than `metrics.max_age`; then they
//! are dropped (the loop wakes for that too). A cycle is never started while the previous one
//! runs.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::{debug, error, info, warn};

use crate::disk::Disk;
use crate::health::Health;
use crate::latest::Latest;
use crate::model::{DecodedAssets, Remembering};
use crate::snapshot::ListBuilder;
use crate::telemetry::Telemetry;
use crate::upstream::dto::{self, DecodeError, SystemStatus, User};
use crate::upstream::{Client, FetchError};
use crate::vocabulary::Failure;
use crate::vocabulary::{Endpoint, Kind};
use follow::{FollowUps, Following};
use list::log_rejected;
pub use list::{ListRead, fetch_list};

pub mod follow;
mod list;
pub mod reports;
mod said;
pub mod selection;

/// How often `/api/v1/user` is polled after it first answered (at start, then hourly: docs/upstream.md).
pub const USER_INTERVAL: Duration = Duration::from_secs(3600);

/// What both pollers of an account work with.
#[derive(Debug, Clone)]
pub struct Polled {
    /// The account's API client.
    pub client: Client,
    /// Its API metrics.
    pub telemetry: Arc<Telemetry>,
    /// What the polls find out about its API; the log lines read its streaks.
    pub health: Arc<Health>,
    /// Where the polls' results are served from.
    pub latest: Arc<Latest>,
    /// With asset reports on: the assets whose reports a list poll finds behind, for the
    /// report poller to fetch at once.
    pub follow: Option<Arc<FollowUps>>,
    /// Where each list taken is kept across restarts, when it is.
    pub disk: Option<Arc<Disk>>,
}

/// Polls the API on schedule and feeds the [`Latest`].
#[derive(Debug, Clone)]
pub struct Poller {
    account: Polled,
    interval: Duration,
    /// Most host names kept per asset (`metrics.max_labels_per_asset`).
    max_labels: usize,
    /// When the first cycle starts: at once, or (after a reload that changed only shared
    /// settings) when the previous poller's next cycle was due.
    first: Option<Instant>,
}

/// One cycle's bounds: when its retries must stop, and when the next cycle begins (`None`
/// with `--once`, which has no next cycle to speak of).
#[derive(Debug, Clone, Copy)]
struct Cycle {
    deadline: Instant,
    next_poll: Option<Duration>,
}

impl Poller {
    /// A poller of this client every `interval`, retrying transient failures by the client's
    /// policy.
    pub fn new(account: Polled, interval: Duration, max_labels: usize) -> Self {
        Poller {
            account,
            interval,
            max_labels,
            first: None,
        }
    }

    /// The same poller, its first cycle at `at` instead of at once.
    pub fn first_at(mut self, at: Instant) -> Self {
        self.first = Some(at);
        self
    }

    /// Polls forever. Nothing the upstream does ends this loop.
    pub async fn run(self) {
        let mut next_user = Instant::now();
        if let Some(first) = self.first {
            self.serve_until(first).await;
        }
        loop {
            let started = Instant::now();
            let due = started + self.interval;
            let with_user = started >= next_user;
            let cycle = Cycle {
                deadline: due,
                next_poll: Some(self.interval),
            };
            let outcome = self.cycle(with_user, cycle).await;
            self.account.health.set_next_poll(due);
            // `user` is asked hourly once it has answered; until then, every cycle.
            if with_user && outcome.user {
                next_user = started + USER_INTERVAL;
            }
            self.serve_until(due).await;
        }
    }

    /// Waits until `due`, dropping what passes `metrics.max_age` meanwhile.
    async fn serve_until(&self, due: Instant) {
        loop {
            let wake = self
                .account
                .latest
                .next_expiry()
                .map_or(due, |e| e.min(due));
            tokio::time::sleep_until(wake).await;
            // Rebuilding the snapshot walks every asset: off the async workers.
            let latest = self.account.latest.clone();
            let now = Instant::now();
            let _ = exporter_web::task::spawn_blocking(move || latest.expire(now)).await;
            if Instant::now() >= due {
                return;
            }
        }
    }

    /// One poll of every endpoint, `user` included; true when every one succeeded.
    pub async fn poll_once(&self) -> bool {
        let cycle = Cycle {
            deadline: Instant::now() + self.interval,
            next_poll: None,
        };
        self.cycle(true, cycle).await.all
    }

    /// Polls every endpoint concurrently; retries stop at the cycle's deadline.
    async fn cycle(&self, with_user: bool, cycle: Cycle) -> Outcome {
        let started = Instant::now();
        let user = async {
            if with_user {
                self.poll_user(cycle).await
            } else {
                true
            }
        };
        let (ips, domains, system, user) = tokio::join!(
            self.poll_list(Kind::Ip, cycle),
            self.poll_list(Kind::Domain, cycle),
            self.poll_system(cycle),
            user
        );
        self.account.health.set_poll_duration(started.elapsed());
        self.account.latest.cycle_ended();
        Outcome {
            all: ips && domains && system && user,
            user,
        }
    }

    /// GETs one endpoint with this decoding, retrying transient failures until the cycle's
    /// deadline at the latest.
    async fn get<T>(
        &self,
        endpoint: Endpoint,
        cycle: Cycle,
        decode: impl Fn(&[u8]) -> Result<T, DecodeError> + Clone + Send + 'static,
    ) -> Result<T, FetchError>
    where
        T: Send + 'static,
    {
        let on_retry = |error: &FetchError, delay| self.retrying(endpoint, error, delay);
        let result = self
            .account
            .client
            .call(endpoint, endpoint.path(), cycle.deadline, decode, on_retry)
            .await;
        self.settled(endpoint, cycle, result)
    }

    /// Says when a failing streak gives up and when it ends.
    fn settled<T>(
        &self,
        endpoint: Endpoint,
        cycle: Cycle,
        result: Result<T, FetchError>,
    ) -> Result<T, FetchError> {
        match &result {
            Ok(_) => self.recovered(endpoint),
            Err(error) if error.is_transient() => self.gave_up(endpoint, error, cycle),
            Err(_) => {}
        }
        result
    }

    async fn poll_list(&self, kind: Kind, cycle: Cycle) -> bool {
        let endpoint = Endpoint::list(kind);
        let fetched = Instant::now();
        let on_retry = |error: &FetchError, delay| self.retrying(endpoint, error, delay);
        // Each asset is checked against its report as it is decoded (reports follow the list).
        let follow = self.account.follow.as_ref().filter(|f| f.armed());
        let reports = follow.map(|_| self.account.latest.reports());
        // Each asset's values are compared with the last list's (missed changes), when it is
        // older than two polls: only then can a check have been overwritten unseen.
        let gap = 2 * self.interval;
        let remembered = self.account.latest.memory_older_than(kind, gap, fetched);
        let sink = || {
            let builder = Remembering::new(
                ListBuilder::new(kind, self.account.latest.shards()),
                remembered.clone(),
            );
            match (follow, &reports) {
                (Some(follow), Some(reports)) => follow.check(builder, reports.clone()),
                _ => Following::unchecked(builder),
            }
        };
        let list = ListRead {
            kind,
            max_labels: self.max_labels,
            disk: self.account.disk.as_ref(),
        };
        let result = fetch_list(
            &self.account.client,
            &self.account.telemetry,
            list,
            sink,
            cycle.deadline,
            on_retry,
        )
        .await;
        drop(reports);
        let (decoded, file) = match self.settled(endpoint, cycle, result) {
            Ok(decoded) => decoded,
            Err(e) => return self.failed(endpoint, &e),
        };
        let DecodedAssets {
            set,
            usable,
            rejected,
            duplicates,
            unrecognized: more,
        } = decoded;
        if duplicates > 0 {
            debug!(
                endpoint = endpoint.label(),
                duplicates, "the list names some assets more than once; the first of each is kept"
            );
        }
        // Logged item by item (the first few) here; counted without a line of their own.
        self.account
            .telemetry
            .unrecognized(log_rejected(endpoint, &rejected));
        let unrecognized = more;
        let previous = self.account.latest.current().count(kind);
        if usable == 0 && previous > 0 {
            warn!(
                endpoint = endpoint.label(),
                previous,
                "the API sent an empty list where the last one had assets; they are no longer \
                 served"
            );
        }

        let (remembering, behind) = set.finish();
        drop(remembered);
        let (builder, memory) = remembering.finish();
        let latest = self.account.latest.clone();
        let replaced = exporter_web::task::spawn_blocking(move || {
            // Remembered first: the snapshot the list publishes reads what it said.
            latest.remember(kind, memory, Some(fetched));
            latest.replace(kind, builder.finish(), fetched);
        })
        .await;
        match replaced {
            Ok(()) => {}
            // The runtime is shutting down.
            Err(e) if e.is_cancelled() => return false,
            Err(e) => {
                error!(endpoint = endpoint.label(), error = %e, "rendering the list failed");
                self.account
                    .health
                    .polled(endpoint, Err(Failure::Rendering));
                return false;
            }
        }
        for value in self.account.telemetry.unrecognized(unrecognized) {
            warn!(
                field = value.field.label(),
                value = %value.value,
                "a value from the API cannot be mapped; it is counted in \
                 reputation_unrecognized_values_total and gives no sample"
            );
        }
        self.account.health.polled(endpoint, Ok(()));
        if let Some(file) = file {
            // Served: kept for the next start too, with the success time the health metrics
            // say (synced on a blocking thread).
            let polled_at = self.account.health.endpoint(endpoint).last_success;
            let at = polled_at.unwrap_or_else(crate::health::unix_now);
            exporter_web::task::spawn_blocking(move || file.commit(at));
        }
        if let Some(follow) = follow {
            let queued = follow.ask(kind, behind);
            if queued > 0 {
                debug!(
                    endpoint = endpoint.label(),
                    assets = queued,
                    "the list differs from these assets' reports; fetching them at once"
                );
            }
        }
        true
    }

    async fn poll_system(&self, cycle: Cycle) -> bool {
        let endpoint = Endpoint::SystemCheck;
        match self.get(endpoint, cycle, dto::decode::<SystemStatus>).await {
            Ok(status) => {
                let ok = status.status.eq_ignore_ascii_case("ok");
                if !ok {
                    warn!(
                        status = %status.status,
                        message = status.message.as_deref().unwrap_or(""),
                        "the API reports that it is not operational"
                    );
                }
                self.account.health.set_system_ok(ok);
                self.account.health.polled(endpoint, Ok(()));
                true
            }
            Err(e) => {
                self.account.health.set_system_ok(false);
                self.failed(endpoint, &e)
            }
        }
    }

    async fn poll_user(&self, cycle: Cycle) -> bool {
        let endpoint = Endpoint::User;
        match self.get(endpoint, cycle, dto::decode::<User>).await {
            Ok(user) => {
                info!(user_id = %user.id.0, project_id = %user.project_id.0, "API account");
                self.account.telemetry.account(user.id.0, user.project_id.0);
                self.account.health.polled(endpoint, Ok(()));
                true
            }
            Err(e) => self.failed(endpoint, &e),
        }
    }
}

/// What one cycle achieved.
struct Outcome {
    /// Every endpoint polled in the cycle succeeded.
    all: bool,
    /// `user` succeeded, or was not due.
    user: bool,
}
