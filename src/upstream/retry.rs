//! Retrying transient failures: exponential backoff with full jitter, `Retry-After` honoured.
//!
//! `backon` supplies the schedule (a ceiling that doubles from `initial_delay` to `max_delay`)
//! and the retry loop; this module decides what is retried ([`Transient::is_transient`]), draws
//! each delay uniformly between zero and the ceiling ("full jitter", which spreads the retries
//! of many exporters best), replaces it with the server's `Retry-After` when there is one
//! (bounded by `max_delay`), and gives up when the next attempt would start after
//! `max_elapsed` or after the endpoint's next scheduled poll. The API's requests and
//! `backfill`'s remote-write requests retry by the same rules.

use std::time::{Duration, SystemTime};

use backon::{ExponentialBuilder, Retryable as _};
use tokio::time::Instant;
use tracing::debug;

use super::FetchError;
use crate::telemetry::Telemetry;
use crate::vocabulary::Endpoint;

/// A failure the retry loop can judge: whether another attempt may succeed, and how long the
/// server asked to wait.
pub trait Transient {
    /// Whether a later attempt may succeed (5xx, 429, no connection, a timeout).
    fn is_transient(&self) -> bool;
    /// The server's `Retry-After`, when it sent one.
    fn retry_after(&self) -> Option<Duration>;
    /// Whether no connection could be made at all (refused, no such host, TLS refused): a
    /// one-shot command gives its verdict at once instead of retrying.
    fn is_unreachable(&self) -> bool;
}

impl Transient for FetchError {
    fn is_transient(&self) -> bool {
        FetchError::is_transient(self)
    }

    fn retry_after(&self) -> Option<Duration> {
        FetchError::retry_after(self)
    }

    fn is_unreachable(&self) -> bool {
        FetchError::is_unreachable(self)
    }
}

/// How transient failures are retried (`[backoff]` in the configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Ceiling of the first delay; each later ceiling doubles.
    pub initial_delay: Duration,
    /// Largest ceiling, and the bound on `Retry-After`.
    pub max_delay: Duration,
    /// Time after the first attempt past which no attempt starts.
    pub max_elapsed: Duration,
    /// Whether a server that cannot be reached at all is tried again: the daemon waits for an
    /// API that restarts; a one-shot command ([`RetryPolicy::once`]) says so at once.
    pub retry_unreachable: bool,
}

impl RetryPolicy {
    /// The policy of a one-shot command (`--once`, `backfill`'s first contact with its
    /// receiver): a server that cannot be reached is reported at once, and other transient
    /// failures get one short round of retries rather than the daemon's patient backoff.
    pub fn once(self) -> RetryPolicy {
        RetryPolicy {
            initial_delay: self.initial_delay.min(Duration::from_millis(500)),
            max_delay: self.max_delay.min(Duration::from_secs(2)),
            max_elapsed: self.max_elapsed.min(Duration::from_secs(10)),
            retry_unreachable: false,
        }
    }

    /// Runs `attempt` until it succeeds, fails in a way retrying cannot fix, or the time is up
    /// (`max_elapsed` from now, or `deadline`, whichever comes first). Returns the last error.
    /// `on_retry` hears of each failure that is retried, with the delay before the next attempt.
    pub async fn run<T, F, Fut>(
        &self,
        endpoint: Endpoint,
        deadline: Instant,
        telemetry: &Telemetry,
        attempt: F,
        mut on_retry: impl FnMut(&FetchError, Duration),
    ) -> Result<T, FetchError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, FetchError>>,
    {
        self.retry(deadline, attempt, |error, delay| {
            telemetry.retry(endpoint);
            on_retry(error, delay);
            debug!(
                endpoint = endpoint.label(),
                error = %error,
                delay = ?delay,
                "retrying"
            );
        })
        .await
    }

    /// The retry loop itself, for any failure that says whether it is [`Transient`]: as
    /// [`RetryPolicy::run`], without the API's telemetry.
    pub async fn retry<T, E, F, Fut>(
        &self,
        deadline: Instant,
        attempt: F,
        notify: impl FnMut(&E, Duration),
    ) -> Result<T, E>
    where
        E: Transient,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let give_up_at = (Instant::now() + self.max_elapsed).min(deadline);
        let schedule = ExponentialBuilder::new()
            .with_min_delay(self.initial_delay)
            .with_max_delay(self.max_delay)
            .with_factor(2.0)
            .without_max_times();
        attempt
            .retry(schedule)
            .sleep(tokio::time::sleep)
            .when(|error| {
                error.is_transient() && (self.retry_unreachable || !error.is_unreachable())
            })
            .adjust(|error, ceiling| {
                let delay = self.delay(error.retry_after(), ceiling?, fastrand::f64());
                (Instant::now() + delay < give_up_at).then_some(delay)
            })
            .notify(notify)
            .await
    }

    /// The delay before the next attempt: the server's `Retry-After` bounded by `max_delay`,
    /// else `ceiling` scaled by `draw` (uniform in 0..1).
    fn delay(&self, retry_after: Option<Duration>, ceiling: Duration, draw: f64) -> Duration {
        match retry_after {
            Some(wait) => wait.min(self.max_delay),
            None => ceiling.mul_f64(draw.clamp(0.0, 1.0)),
        }
    }
}

/// Reads `Retry-After` in both forms: delta-seconds, or an HTTP date (a date already past means
/// no wait).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use backon::BackoffBuilder as _;
    use reqwest::StatusCode;

    use super::*;
    use crate::upstream::Connection;

    const POLICY: RetryPolicy = RetryPolicy {
        initial_delay: Duration::from_secs(1),
        max_delay: Duration::from_secs(8),
        max_elapsed: Duration::from_secs(60),
        retry_unreachable: true,
    };

    fn unavailable(retry_after: Option<Duration>) -> FetchError {
        FetchError::Status {
            status: StatusCode::SERVICE_UNAVAILABLE,
            retry_after,
        }
    }

    /// Runs the policy over a scripted sequence of outcomes under Tokio's paused clock and
    /// returns when each attempt started, relative to the first.
    async fn attempts(
        policy: RetryPolicy,
        deadline: Duration,
        script: Vec<Result<u32, FetchError>>,
    ) -> (Result<u32, FetchError>, Vec<Duration>, Telemetry) {
        let telemetry = Telemetry::new(std::sync::Arc::new(crate::health::Health::new(&[])));
        let start = Instant::now();
        let times = RefCell::new(Vec::new());
        let script = RefCell::new(script.into_iter());
        let result = policy
            .run(
                Endpoint::IpList,
                start + deadline,
                &telemetry,
                || async {
                    times.borrow_mut().push(start.elapsed());
                    script
                        .borrow_mut()
                        .next()
                        .unwrap_or_else(|| Err(unavailable(None)))
                },
                |_, _| {},
            )
            .await;
        (result, times.into_inner(), telemetry)
    }

    #[tokio::test(start_paused = true)]
    async fn transient_failures_are_retried_until_success_within_growing_ceilings() {
        let script = vec![
            Err(unavailable(None)),
            Err(FetchError::Timeout(Duration::from_secs(30))),
            Err(FetchError::Connect {
                message: "refused".into(),
                connection: Connection::Refused,
            }),
            Err(unavailable(None)),
            Ok(7),
        ];
        let (result, times, telemetry) = attempts(POLICY, Duration::from_secs(300), script).await;
        assert_eq!(result.unwrap(), 7);
        assert_eq!(times.len(), 5);
        let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
        for (gap, ceiling) in gaps.iter().zip([1, 2, 4, 8]) {
            assert!(*gap <= Duration::from_secs(ceiling), "{gaps:?}");
        }
        let mut text = String::new();
        telemetry.encode(&mut text, [0, 0], 1);
        assert!(text.contains("reputation_api_retries_total{endpoint=\"ip-list\"} 4\n"));
    }

    #[test]
    fn without_jitter_draw_the_delay_is_the_ceiling_and_it_doubles_up_to_max_delay() {
        let ceilings: Vec<Duration> = ExponentialBuilder::new()
            .with_min_delay(POLICY.initial_delay)
            .with_max_delay(POLICY.max_delay)
            .with_factor(2.0)
            .without_max_times()
            .build()
            .take(6)
            .map(|c| POLICY.delay(None, c, 1.0))
            .collect();
        let secs: Vec<u64> = ceilings.iter().map(Duration::as_secs).collect();
        assert_eq!(secs, [1, 2, 4, 8, 8, 8]);
        assert_eq!(
            POLICY.delay(None, Duration::from_secs(4), 0.25),
            Duration::from_secs(1)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_is_honoured_and_bounded_by_max_delay() {
        let script = vec![
            Err(unavailable(Some(Duration::from_secs(5)))),
            Err(unavailable(Some(Duration::from_secs(3600)))),
            Ok(1),
        ];
        let (result, times, _) = attempts(POLICY, Duration::from_secs(300), script).await;
        assert_eq!(result.unwrap(), 1);
        assert_eq!(
            times,
            [
                Duration::ZERO,
                Duration::from_secs(5),
                Duration::from_secs(13)
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_rejected_token_or_a_bad_body_is_not_retried() {
        for error in [
            FetchError::Rejected(StatusCode::UNAUTHORIZED),
            FetchError::Rejected(StatusCode::FORBIDDEN),
            FetchError::Status {
                status: StatusCode::NOT_FOUND,
                retry_after: None,
            },
            FetchError::TooLarge(10),
        ] {
            let (result, times, _) =
                attempts(POLICY, Duration::from_secs(300), vec![Err(error)]).await;
            assert!(result.is_err());
            assert_eq!(times.len(), 1);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn retrying_stops_within_max_elapsed() {
        let policy = RetryPolicy {
            max_elapsed: Duration::from_secs(30),
            ..POLICY
        };
        let (result, times, _) = attempts(policy, Duration::from_secs(300), Vec::new()).await;
        assert!(matches!(result, Err(FetchError::Status { .. })));
        let last = *times.last().unwrap();
        assert!(last < Duration::from_secs(30), "{times:?}");
        assert!(times.len() >= 3, "{times:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn retrying_never_runs_into_the_next_poll() {
        let (_, times, _) = attempts(POLICY, Duration::from_secs(10), Vec::new()).await;
        assert!(
            *times.last().unwrap() < Duration::from_secs(10),
            "{times:?}"
        );
    }

    #[test]
    fn retry_after_is_read_as_seconds_or_as_an_http_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_784_000_000);
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(90));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(90))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(90));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
    }
}
