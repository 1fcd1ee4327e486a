//! Asset reports: which blacklist lists an asset, its tags, when its score last changed.
//!
//! One request per asset is the only upstream cost that grows with the fleet, so this loop is
//! off by default, runs on its own `asset_reports.interval`, spreads each round's requests evenly
//! over the interval, keeps at most `asset_reports.concurrency` in flight, and fetches only the
//! assets that `include`, `exclude` and `shard` select. Results reach the served snapshot in
//! batches, so a round of 100,000 reports does not re-render the bodies 100,000 times.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use jiff::tz::TimeZone;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use crate::config::{AssetReportsConfig, Shard};
use crate::snapshot::{Kind, Listing, Report, Unrecognized};
use crate::store::Store;
use crate::telemetry::Telemetry;
use crate::upstream::dto::{self, AssetReport};
use crate::upstream::retry::RetryPolicy;
use crate::upstream::{Client, Endpoint, FetchError, date};

/// Reports that arrived are published at least this often during a round.
const PUBLISH_EVERY: Duration = Duration::from_secs(10);

/// Which assets this replica fetches reports for.
#[derive(Debug, Clone)]
pub struct Selection {
    include: Option<regex::Regex>,
    exclude: Option<regex::Regex>,
    shard: Shard,
}

impl Selection {
    /// The selection the configuration describes.
    pub fn new(config: &AssetReportsConfig) -> Self {
        Selection {
            include: config.include.clone(),
            exclude: config.exclude.clone(),
            shard: config.shard,
        }
    }

    /// Whether the asset named `name` is fetched by this replica.
    pub fn selects(&self, name: &str) -> bool {
        self.include.as_ref().is_none_or(|r| r.is_match(name))
            && !self.exclude.as_ref().is_some_and(|r| r.is_match(name))
            && shard_hash(name) % self.shard.count == self.shard.index - 1
    }
}

/// FNV-1a, 64 bits: stable across platforms and releases, so replicas agree on the split.
fn shard_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Percent-encodes an asset name as one path segment, so that `../user` or `a/b?c` can only
/// ever reach `/api/v1/asset/...`. `None` for the names no encoding makes safe (`.`, `..`,
/// empty): URL parsers resolve those, encoded or not, as "this" or "parent" directory.
pub fn path_segment(name: &str) -> Option<String> {
    if matches!(name, "" | "." | "..") {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    Some(out)
}

impl Report {
    /// Maps a decoded report; dates that do not parse are reported and skipped.
    pub fn from_dto(
        dto: AssetReport,
        zone: &TimeZone,
        unrecognized: &mut Vec<Unrecognized>,
    ) -> Self {
        let mut parse = |field: &'static str, text: &str| {
            let parsed = date::parse(text, zone);
            if parsed.is_none() {
                unrecognized.push(Unrecognized {
                    field,
                    value: format!("{:?}", text.chars().take(64).collect::<String>()),
                });
            }
            parsed
        };

        // The newest event of each blacklist decides; events come in any order.
        let mut newest: HashMap<&str, (f64, bool)> = HashMap::new();
        for event in &dto.blacklist_history {
            let Some(at) = parse("blacklist_history.date", &event.date) else {
                continue;
            };
            let listed = event.status.trim().eq_ignore_ascii_case("listed");
            newest
                .entry(event.blacklist.as_str())
                .and_modify(|(t, l)| {
                    if at > *t {
                        (*t, *l) = (at, listed);
                    }
                })
                .or_insert((at, listed));
        }
        let mut listings: Vec<Listing> = newest
            .into_iter()
            .filter(|(name, _)| !name.is_empty())
            .map(|(blacklist, (changed, listed))| Listing {
                blacklist: blacklist.to_owned(),
                listed,
                changed,
            })
            .collect();
        listings.sort_by(|a, b| a.blacklist.cmp(&b.blacklist));

        let senderscore_updated = dto
            .senderscore_history
            .iter()
            .filter_map(|e| e.date.as_deref())
            .filter_map(|d| parse("senderscore_history.date", d))
            .reduce(f64::max);

        Report {
            tags: crate::snapshot::distinct_non_empty(dto.tags),
            listings,
            senderscore_updated,
        }
    }
}

/// Fetches the reports of the selected assets, round after round.
#[derive(Debug, Clone)]
pub struct ReportPoller {
    client: Client,
    telemetry: Arc<Telemetry>,
    store: Arc<Store>,
    retry: RetryPolicy,
    interval: Duration,
    concurrency: usize,
    selection: Selection,
    zone: TimeZone,
}

/// What one report request gave.
enum Outcome {
    Report(Report),
    /// 404: the API no longer knows the asset; its report series go.
    Gone,
    Failed,
}

impl ReportPoller {
    /// A poller for this configuration.
    pub fn new(
        client: Client,
        telemetry: Arc<Telemetry>,
        store: Arc<Store>,
        retry: RetryPolicy,
        config: &AssetReportsConfig,
    ) -> Self {
        ReportPoller {
            client,
            telemetry,
            store,
            retry,
            interval: config.interval,
            concurrency: config.concurrency,
            selection: Selection::new(config),
            zone: config.timezone.clone(),
        }
    }

    /// Runs rounds forever, the first once the first poll of both lists has ended with at least
    /// one of them served (a list arriving before the other must not leave the other's assets
    /// out of the first round, which would delay their reports by a whole interval).
    pub async fn run(self) {
        let mut snapshots = self.store.subscribe();
        self.store.first_cycle().await;
        if snapshots.wait_for(|s| s.ready).await.is_err() {
            return;
        }
        loop {
            let started = Instant::now();
            let due = started + self.interval;
            self.round(started, due, true).await;
            tokio::time::sleep_until(due).await;
        }
    }

    /// One round at once, without spreading (for `--once`); true when no report failed.
    pub async fn poll_once(&self) -> bool {
        let started = Instant::now();
        self.round(started, started + self.interval, false).await
    }

    /// One round: every selected asset once, spread evenly from `started` to `due` when
    /// `spread`; true when no report failed (a 404 is no failure).
    async fn round(&self, started: Instant, due: Instant, spread: bool) -> bool {
        let snapshot = self.store.current();
        let targets: Vec<(Kind, String)> = snapshot
            .names()
            .filter(|(_, name)| self.selection.selects(name))
            .map(|(kind, name)| (kind, name.to_owned()))
            .collect();
        drop(snapshot);
        let selected: HashSet<(Kind, String)> = targets.iter().cloned().collect();
        self.store
            .retain_reports(|kind, name| selected.contains(&(kind, name.to_owned())));
        info!(
            assets = targets.len(),
            interval = ?self.interval,
            "asset report round started"
        );

        let spacing = if spread {
            self.interval / u32::try_from(targets.len().max(1)).unwrap_or(u32::MAX)
        } else {
            Duration::ZERO
        };
        let mut results = futures_util::stream::iter(targets.into_iter().enumerate())
            .map(|(i, (kind, name))| async move {
                tokio::time::sleep_until(started + spacing * i as u32).await;
                let outcome = self.fetch(&name, due).await;
                (kind, name, outcome)
            })
            .buffer_unordered(self.concurrency);

        let mut batch = Vec::new();
        let mut unrecognized = Vec::new();
        let mut failed = 0usize;
        let mut last_publish = Instant::now();
        while let Some((kind, name, outcome)) = results.next().await {
            match outcome {
                Outcome::Report(dto) => batch.push((kind, name, Some(dto))),
                Outcome::Gone => batch.push((kind, name, None)),
                Outcome::Failed => failed += 1,
            }
            if last_publish.elapsed() >= PUBLISH_EVERY {
                self.publish(std::mem::take(&mut batch), &mut unrecognized);
                last_publish = Instant::now();
            }
        }
        self.publish(batch, &mut unrecognized);
        if failed > 0 {
            warn!(
                failed,
                "some asset reports could not be fetched; their last good values stay served \
                 until metrics.max_age"
            );
        }
        self.telemetry.polled(Endpoint::Asset, failed == 0);
        failed == 0
    }

    fn publish(
        &self,
        batch: Vec<(Kind, String, Option<Report>)>,
        unrecognized: &mut Vec<Unrecognized>,
    ) {
        self.store.apply_reports(batch, Instant::now());
        for value in self.telemetry.unrecognized(std::mem::take(unrecognized)) {
            warn!(
                field = value.field,
                value = %value.value,
                "a date in an asset report cannot be read; it is counted in \
                 reputation_unrecognized_values_total and skipped"
            );
        }
    }

    async fn fetch(&self, name: &str, due: Instant) -> Outcome {
        let Some(segment) = path_segment(name) else {
            warn!(
                asset = name,
                "an asset with this name cannot be requested; skipped"
            );
            return Outcome::Failed;
        };
        let path = format!("{}{segment}", Endpoint::Asset.path());
        let zone = &self.zone;
        let result = self
            .retry
            .run(Endpoint::Asset, due, &self.telemetry, || {
                self.client.get(Endpoint::Asset, &path, |body| {
                    let dto: AssetReport = dto::decode(body)?;
                    let mut unrecognized = Vec::new();
                    let report = Report::from_dto(dto, zone, &mut unrecognized);
                    Ok((report, unrecognized))
                })
            })
            .await;
        match result {
            Ok((report, unrecognized)) => {
                for value in self.telemetry.unrecognized(unrecognized) {
                    warn!(
                        asset = name,
                        field = value.field,
                        value = %value.value,
                        "a date in an asset report cannot be read; counted and skipped"
                    );
                }
                Outcome::Report(report)
            }
            Err(FetchError::Status { status, .. }) if status.as_u16() == 404 => {
                debug!(
                    asset = name,
                    "the API does not know this asset (404); its report series go"
                );
                Outcome::Gone
            }
            Err(error) => {
                warn!(asset = name, endpoint = "asset", error = %error, "asset report failed");
                Outcome::Failed
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::dto::{BlacklistEvent, ScoreEntry};

    fn event(date: &str, status: &str, blacklist: &str) -> BlacklistEvent {
        BlacklistEvent {
            date: date.into(),
            status: status.into(),
            blacklist: blacklist.into(),
        }
    }

    #[test]
    fn the_newest_event_of_each_blacklist_decides_whatever_the_order() {
        let dto = AssetReport {
            tags: vec!["team-a".into(), "team-a".into(), "bulk".into()],
            senderscore_history: vec![
                ScoreEntry {
                    date: Some("19th Nov 2026 10:00am".into()),
                },
                ScoreEntry {
                    date: Some("21st Nov 2026 10:00am".into()),
                },
            ],
            blacklist_history: vec![
                event("10th Nov 2026 09:00am", "Listed", "SBL"),
                event("12th Nov 2026 09:00am", "Delisted", "SBL"),
                event("11th Nov 2026 09:00am", "Listed", "SBL"),
                event("1st Nov 2026 09:00am", "Delisted", "Barracuda"),
                event("2nd Nov 2026 09:00am", "Listed", "Barracuda"),
                event("not a date", "Delisted", "Barracuda"),
            ],
        };
        let mut unrecognized = Vec::new();
        let report = Report::from_dto(dto, &TimeZone::UTC, &mut unrecognized);
        let nov = |day: i64, hour: i64| 1_793_491_200.0 + ((day - 1) * 86_400 + hour * 3600) as f64;
        assert_eq!(
            report.listings,
            [
                Listing {
                    blacklist: "Barracuda".into(),
                    listed: true,
                    changed: nov(2, 9),
                },
                Listing {
                    blacklist: "SBL".into(),
                    listed: false,
                    changed: nov(12, 9),
                },
            ]
        );
        assert_eq!(report.tags, ["team-a", "bulk"]);
        assert_eq!(report.senderscore_updated, Some(nov(21, 10)));
        assert_eq!(unrecognized.len(), 1);
        assert_eq!(unrecognized[0].field, "blacklist_history.date");
    }

    #[test]
    fn names_are_encoded_as_one_path_segment() {
        assert_eq!(path_segment("192.0.2.1").as_deref(), Some("192.0.2.1"));
        assert_eq!(path_segment("../user").as_deref(), Some("..%2Fuser"));
        assert_eq!(path_segment("a/b?c").as_deref(), Some("a%2Fb%3Fc"));
        assert_eq!(
            path_segment("2001:db8::1").as_deref(),
            Some("2001%3Adb8%3A%3A1")
        );
        assert_eq!(
            path_segment("bücher.example").as_deref(),
            Some("b%C3%BCcher.example")
        );
        assert_eq!(path_segment(".."), None);
        assert_eq!(path_segment("."), None);
        assert_eq!(path_segment(""), None);
    }

    fn selection(include: Option<&str>, exclude: Option<&str>, shard: Shard) -> Selection {
        Selection {
            include: include.map(|r| regex::Regex::new(r).unwrap()),
            exclude: exclude.map(|r| regex::Regex::new(r).unwrap()),
            shard,
        }
    }

    #[test]
    fn include_and_exclude_filter_by_name() {
        let s = selection(
            Some(r"^192\.0\.2\."),
            Some(r"\.13$"),
            Shard { index: 1, count: 1 },
        );
        assert!(s.selects("192.0.2.1"));
        assert!(!s.selects("192.0.2.13"));
        assert!(!s.selects("198.51.100.1"));
    }

    #[test]
    fn three_shards_cover_every_asset_exactly_once() {
        let shards: Vec<Selection> = (1..=3)
            .map(|index| selection(None, None, Shard { index, count: 3 }))
            .collect();
        let mut sizes = [0; 3];
        for i in 0..3000 {
            let name = crate::demo::ip_name(i);
            let owners: Vec<usize> = (0..3).filter(|s| shards[*s].selects(&name)).collect();
            assert_eq!(owners.len(), 1, "{name}");
            sizes[owners[0]] += 1;
        }
        assert!(sizes.iter().all(|n| *n > 800), "{sizes:?}");
    }
}
