//! `rate_limit`: exporter-toolkit's token bucket over every request the server answers, checked
//! before basic auth. `burst` requests may come at once; one more is allowed per `interval`;
//! beyond that the answer is 429.

use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use serde::Deserialize;

use super::WebConfigError;

/// The `rate_limit` section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RateLimitSettings {
    interval: Option<String>,
    burst: Option<u64>,
}

/// A valid `rate_limit`: one request per `interval`, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    interval: Duration,
    burst: u32,
}

impl RateLimitSettings {
    /// The limit, `None` when the section turns none on: no interval, or `0s`, whatever the
    /// burst, as in exporter-toolkit.
    pub(super) fn validate(self) -> Result<Option<RateLimit>, WebConfigError> {
        let interval = match self.interval.as_deref().map(str::trim) {
            None | Some("" | "0") => None,
            Some(text) => {
                let interval = parse_duration(text).ok_or_else(|| {
                    WebConfigError::invalid(
                        "rate_limit.interval",
                        format!("`{text}` is not a duration; write e.g. 1s or 1m30s"),
                    )
                })?;
                Some(interval).filter(|interval| !interval.is_zero())
            }
        };
        match (interval, self.burst) {
            (Some(interval), Some(burst)) if burst > 0 => Ok(Some(RateLimit {
                interval,
                burst: u32::try_from(burst).unwrap_or(u32::MAX),
            })),
            (Some(_), _) => Err(WebConfigError::invalid(
                "rate_limit.burst",
                "give at least 1 (the requests allowed at once); with 0 every request would be \
                 refused",
            )),
            (None, _) => Ok(None),
        }
    }
}

/// A duration as Go writes it (`1m30s`, `500ms`), in jiff's friendly format, which reads it;
/// `None` for anything else, or a negative one.
fn parse_duration(text: &str) -> Option<Duration> {
    let span: jiff::Span = text.parse().ok()?;
    let length = span
        .to_duration(jiff::SpanRelativeTo::days_are_24_hours())
        .ok()?;
    Duration::try_from(length).ok()
}

/// A limiter on `C`'s time.
type Limiter<C> = RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// The bucket of the limit in force: kept while the file's limit stays the same (a reload of
/// an unchanged limit must not hand out a new burst), full again when it changes. governor's
/// GCRA is the token bucket of Go's `x/time/rate` that exporter-toolkit uses.
#[derive(Debug, Default)]
pub(super) struct Bucket<C: Clock = DefaultClock> {
    clock: C,
    limiter: Mutex<Option<(RateLimit, Limiter<C>)>>,
}

impl<C: Clock + Clone> Bucket<C> {
    /// Takes a token for one request under `limit`; when there is none, how long until there
    /// is one.
    pub(super) fn take(&self, limit: Option<RateLimit>) -> Result<(), Duration> {
        let mut held = self.limiter.lock().unwrap_or_else(|e| e.into_inner());
        let Some(limit) = limit else {
            *held = None;
            return Ok(());
        };
        let limiter = match held.take() {
            Some((kept, limiter)) if kept == limit => &held.insert((kept, limiter)).1,
            _ => {
                let limiter = RateLimiter::direct_with_clock(limit.quota(), self.clock.clone());
                &held.insert((limit, limiter)).1
            }
        };
        limiter
            .check()
            .map_err(|refused| refused.wait_time_from(self.clock.now()))
    }
}

impl RateLimit {
    /// One request per `interval`, `burst` at once.
    fn quota(self) -> Quota {
        let burst = NonZeroU32::new(self.burst).unwrap_or(NonZeroU32::MIN);
        Quota::with_period(self.interval)
            .unwrap_or_else(|| Quota::per_second(burst))
            .allow_burst(burst)
    }
}

#[cfg(test)]
mod tests {
    use governor::clock::FakeRelativeClock;

    use super::*;

    fn limit(interval: &str, burst: u64) -> Result<Option<RateLimit>, String> {
        RateLimitSettings {
            interval: Some(interval.into()),
            burst: Some(burst),
        }
        .validate()
        .map_err(|e| e.to_string())
    }

    #[test]
    fn the_section_is_read_as_exporter_toolkit_writes_it() {
        let one = limit("1m30s", 5).unwrap().unwrap();
        assert_eq!(one.interval, Duration::from_secs(90));
        assert_eq!(one.burst, 5);
        assert_eq!(limit("0s", 5), Ok(None), "0s turns it off");
        assert_eq!(limit("0m", 5), Ok(None), "so does any zero");
        assert_eq!(RateLimitSettings::default().validate().ok(), Some(None));
        let error = limit("1s", 0).unwrap_err();
        assert!(
            error.starts_with("rate_limit.burst: give at least 1"),
            "{error}"
        );
        let error = limit("often", 1).unwrap_err();
        assert!(
            error.starts_with("rate_limit.interval: `often` is not a duration"),
            "{error}"
        );
        let burst_alone = RateLimitSettings {
            interval: None,
            burst: Some(3),
        };
        assert_eq!(
            burst_alone.validate().ok(),
            Some(None),
            "no interval, no limit"
        );
    }

    #[test]
    fn a_burst_passes_then_one_request_per_interval() {
        let bucket = Bucket::<FakeRelativeClock>::default();
        let limit = limit("1s", 3).unwrap();
        for request in 0..3 {
            assert_eq!(bucket.take(limit), Ok(()), "request {request} of the burst");
        }
        assert_eq!(bucket.take(limit), Err(Duration::from_secs(1)));
        bucket.clock.advance(Duration::from_millis(250));
        assert_eq!(bucket.take(limit), Err(Duration::from_millis(750)));
        bucket.clock.advance(Duration::from_millis(750));
        assert_eq!(bucket.take(limit), Ok(()), "one more after an interval");
        assert!(bucket.take(limit).is_err());
        // A long pause refills the burst, no more.
        bucket.clock.advance(Duration::from_secs(60));
        for _ in 0..3 {
            assert_eq!(bucket.take(limit), Ok(()));
        }
        assert!(bucket.take(limit).is_err());
    }

    #[test]
    fn the_bucket_lasts_while_the_limit_is_unchanged_and_starts_full_when_it_changes() {
        let bucket = Bucket::<FakeRelativeClock>::default();
        let hourly = limit("1h", 1).unwrap();
        assert_eq!(bucket.take(hourly), Ok(()));
        // The same limit read again from a reloaded file: still empty.
        assert!(bucket.take(limit("1h", 1).unwrap()).is_err());
        // No limit: everything passes.
        for _ in 0..10 {
            assert_eq!(bucket.take(None), Ok(()));
        }
        // Back again, or changed: a fresh burst.
        assert_eq!(bucket.take(hourly), Ok(()));
        assert!(bucket.take(hourly).is_err());
        let two = limit("1h", 2).unwrap();
        assert_eq!(bucket.take(two), Ok(()));
        assert_eq!(bucket.take(two), Ok(()));
        assert!(bucket.take(two).is_err());
    }
}
