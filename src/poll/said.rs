//! What the log says of an endpoint's failing streak: when it starts, when its retries give up,
//! when it ends; never every retry.

use std::time::Duration;

use tracing::{error, info, warn};

use super::{Cycle, Poller};
use crate::upstream::FetchError;
use crate::vocabulary::Endpoint;

impl Poller {
    /// A failure about to be retried: said at once when it starts a failing streak, then
    /// quiet until the streak ends (retries themselves are debug). A poll's retries within a
    /// streak that already gave up stay in it.
    pub(super) fn retrying(&self, endpoint: Endpoint, error: &FetchError, delay: Duration) {
        if self.account.health.retrying(endpoint) {
            warn!(
                endpoint = endpoint.label(),
                error = %error,
                next_attempt_in = %format_args!("{:.1}s", delay.as_secs_f64()),
                "request failed; retrying with backoff"
            );
        }
    }

    /// Retries of a transient failure ran out: said once per failing streak (and again when
    /// the kind of failure changes).
    pub(super) fn gave_up(&self, endpoint: Endpoint, error: &FetchError, cycle: Cycle) {
        if !self.account.health.gave_up(endpoint, error.failure()) {
            return;
        }
        let served = self.what_is_served(endpoint);
        match cycle.next_poll {
            Some(next) => warn!(
                endpoint = endpoint.label(),
                error = %error,
                next_poll_in = %format_args!("{}s", next.as_secs()),
                "gave up retrying until the next poll; {served}"
            ),
            // A one-shot poll does not retry an API it cannot connect to at all.
            None if error.is_unreachable() => warn!(
                endpoint = endpoint.label(),
                error = %error,
                check = %self.account.client.setting("base_url"),
                "no connection; {served}"
            ),
            None => warn!(
                endpoint = endpoint.label(),
                error = %error,
                "gave up retrying; {served}"
            ),
        }
    }

    /// A success: said when it ends a failing streak.
    pub(super) fn recovered(&self, endpoint: Endpoint) {
        if self.account.health.recovered(endpoint) {
            info!(endpoint = endpoint.label(), "the endpoint answers again");
        }
    }

    /// What a failing endpoint leaves on `/metrics`, for the log lines.
    fn what_is_served(&self, endpoint: Endpoint) -> &'static str {
        if self
            .account
            .health
            .endpoint(endpoint)
            .last_success
            .is_some()
        {
            "the last good values stay served until metrics.max_age"
        } else {
            "it has given no values yet"
        }
    }

    /// Records a failed poll; a failure that was not retried is logged here when it starts a
    /// streak or changes its kind (a retried one was, when its streak began and when retrying
    /// gave up).
    pub(super) fn failed(&self, endpoint: Endpoint, error: &FetchError) -> bool {
        self.account.health.polled(endpoint, Err(error.failure()));
        if error.is_transient() || !self.account.health.gave_up(endpoint, error.failure()) {
            return false;
        }
        let served = self.what_is_served(endpoint);
        match error {
            FetchError::Rejected(_) => {
                error!(
                    endpoint = endpoint.label(),
                    error = %error,
                    "the token is rejected: check {} / {}; {served}",
                    self.account.client.setting("token"),
                    self.account.client.setting("token_file"),
                );
            }
            error if error.is_not_found() => {
                // Every path the exporter polls exists on the API: the base address is wrong.
                warn!(
                    endpoint = endpoint.label(),
                    url = %self.account.client.url(endpoint.path()),
                    error = %error,
                    "the API has no such address: {} is probably wrong (the API's address \
                     alone, e.g. https://api.example.com, without /api/v1); {served}",
                    self.account.client.setting("base_url"),
                );
            }
            error => {
                warn!(
                    endpoint = endpoint.label(),
                    error = %error,
                    "poll failed; {served}"
                );
            }
        }
        false
    }
}
