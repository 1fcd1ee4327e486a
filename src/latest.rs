//! The latest good data — both lists and the asset reports — and the snapshot built from it.
//!
//! Every change (a list arrives, reports arrive, something passes `metrics.max_age`) builds a new
//! [`Snapshot`] with its bodies rendered and swaps it in through a watch channel, which the HTTP
//! handlers read without waiting.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tracing::warn;

use crate::disk::Disk;
use crate::events::{ListView, Memory, Now, Reporters};
use crate::exposition::Format;
use crate::model::{ListMemory, Report, Reports};
use crate::snapshot::{ListPart, Snapshot};
use crate::vocabulary::Kind;

/// The latest good data of each list and the snapshot built from it.
#[derive(Debug)]
pub struct Latest {
    /// A std mutex held while a snapshot is built (CPU work, run off the async threads), so
    /// that two lists arriving together publish in order and neither update is lost.
    parts: Mutex<Parts>,
    /// `metrics.shards`: the shards every list and snapshot is rendered in.
    shards: usize,
    snapshots: watch::Sender<Arc<Snapshot>>,
    /// How many list poll cycles have ended, successful or not.
    cycles: watch::Sender<u64>,
    /// Where the reports are kept across restarts, when they are.
    disk: std::sync::OnceLock<Arc<Disk>>,
    /// What the last list of each kind said of its assets' values, whatever its age (kept past
    /// `metrics.max_age`), and when it was fetched when this process fetched it: the next
    /// list's missed changes are told from it.
    memories: Mutex<[Option<Remembered>; 2]>,
}

/// What a list said of its assets' values, and when this process fetched it (`None`: read back
/// from the state store).
type Remembered = (Arc<ListMemory>, Option<Instant>);

#[derive(Debug, Default)]
struct Parts {
    /// `metrics.max_age`: how long a list outlives a failing endpoint.
    max_age: Duration,
    /// How long a report is kept: one report interval (it is refreshed once per round) plus
    /// `metrics.max_age`, so that a round on schedule never lets a report expire first.
    report_max_age: Duration,
    ips: Option<Part>,
    domains: Option<Part>,
    /// Shared with the snapshots; copied on write.
    reports: Arc<Reports>,
    ready: bool,
    /// What this replica remembers to tell events: the rises no report named in time, the
    /// score drops and SNDS blocks its lists showed.
    memory: Memory,
    /// The same as last written to the state store, so that only a change is written.
    memory_kept: Vec<u8>,
    /// Who reports on which asset (nobody until [`Latest::report_by`] says).
    reporters: Reporters,
    /// `poll.interval`, which tells how long a rise waits for its report (the default's until
    /// [`Latest::report_by`] says).
    poll: Option<Duration>,
}

#[derive(Debug)]
struct Part {
    list: Arc<ListPart>,
    fetched: Instant,
}

impl Latest {
    /// Empty latest data, whose lists expire after `max_age` and reports after `report_max_age`,
    /// rendered in `shards` shards; its snapshots can be watched from the start.
    pub fn new(max_age: Duration, report_max_age: Duration, shards: usize) -> Arc<Latest> {
        let empty = Snapshot::build(None, None, None, &Memory::default(), false, shards);
        let (snapshots, _) = watch::channel(Arc::new(empty));
        Arc::new(Latest {
            parts: Mutex::new(Parts {
                max_age,
                report_max_age,
                ..Parts::default()
            }),
            shards,
            snapshots,
            cycles: watch::channel(0).0,
            disk: std::sync::OnceLock::new(),
            memories: Mutex::default(),
        })
    }

    fn memories(&self) -> std::sync::MutexGuard<'_, [Option<Remembered>; 2]> {
        self.memories.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the last list of `kind` taken said of its assets' values, if one was.
    pub fn memory(&self, kind: Kind) -> Option<Arc<ListMemory>> {
        self.memories()[kind as usize]
            .as_ref()
            .map(|(memory, _)| memory.clone())
    }

    /// What the last list of `kind` taken said of its assets' values, unless this process
    /// fetched it less than `gap` before `now`: two lists that close hold no check whose change
    /// the next overwrote, and an answer whose change field flips would read as one.
    pub fn memory_older_than(
        &self,
        kind: Kind,
        gap: Duration,
        now: Instant,
    ) -> Option<Arc<ListMemory>> {
        let memories = self.memories();
        let (memory, taken) = memories[kind as usize].as_ref()?;
        taken
            .is_none_or(|taken| now.saturating_duration_since(taken) >= gap)
            .then(|| memory.clone())
    }

    /// Keeps what a list of `kind` just taken said, for the next one: fetched by this process
    /// at `taken`, or (`None`) read back from the state store.
    pub fn remember(&self, kind: Kind, memory: ListMemory, taken: Option<Instant>) {
        self.memories()[kind as usize] = Some((Arc::new(memory), taken));
    }

    /// From now on, `reporters` says who reports on which asset (a rise of an asset another
    /// replica reports on is that replica's to tell), and a rise no report names is an event a
    /// `poll_interval` and 3 minutes after it was seen.
    pub fn report_by(&self, reporters: Reporters, poll_interval: Duration) {
        let mut parts = self.parts();
        parts.reporters = reporters;
        parts.poll = Some(poll_interval);
        parts.memory.rises.set_poll(poll_interval);
    }

    /// Takes back what the replica remembered to tell events, as the state store kept it
    /// (before the lists and reports are restored).
    pub fn restore_events(&self, kept: &[u8]) {
        match Memory::from_bytes(kept, Now::current()) {
            Some(mut memory) => {
                let mut parts = self.parts();
                if let Some(poll) = parts.poll {
                    memory.rises.set_poll(poll);
                }
                parts.memory = memory;
                parts.memory_kept = kept.to_vec();
            }
            None => {
                warn!("the state store's events cannot be read; the replica starts without them")
            }
        }
    }

    /// From now on, every report stored or dropped is kept so on `disk` too.
    pub fn persist_to(&self, disk: Arc<Disk>) {
        let _ = self.disk.set(disk);
    }

    /// Serves what the state store kept: the lists, each rendered and fetched at its instant,
    /// and the reports with theirs; published once, ready. It is new: it holds no
    /// report of its own yet.
    pub fn restore(&self, lists: Vec<(ListPart, Instant)>, reports: Reports) {
        let mut guard = self.parts();
        let parts = &mut *guard;
        for (list, fetched) in lists {
            let part = Some(Part {
                fetched,
                list: Arc::new(list),
            });
            match part.as_ref().map(|p| p.list.kind) {
                Some(Kind::Ip) => parts.ips = part,
                Some(Kind::Domain) => parts.domains = part,
                None => {}
            }
            parts.ready = true;
        }
        debug_assert!(
            parts.reports.is_empty(),
            "restored into latest data with reports"
        );
        parts.reports = Arc::new(reports);
        self.publish(parts);
    }

    /// Records that a list poll cycle ended: every list has answered or given up.
    pub fn cycle_ended(&self) {
        self.cycles.send_modify(|n| *n += 1);
    }

    /// A receiver of the number of list poll cycles ended so far.
    pub fn cycles(&self) -> watch::Receiver<u64> {
        self.cycles.subscribe()
    }

    /// Completes once a list poll cycle has ended with a list served, in it or before: both
    /// lists have had their poll, and at least one of them is there.
    pub async fn served_cycle(&self) {
        let mut cycles = self.cycles.subscribe();
        let mut ended = 0;
        while let Ok(n) = cycles.wait_for(|n| *n > ended).await {
            ended = *n;
            if self.current().ready {
                return;
            }
        }
    }

    /// A receiver of every snapshot published from now on, starting with the current one.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.snapshots.subscribe()
    }

    /// The snapshot served now.
    pub fn current(&self) -> Arc<Snapshot> {
        self.snapshots.borrow().clone()
    }

    fn parts(&self) -> std::sync::MutexGuard<'_, Parts> {
        self.parts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The shards every list must be rendered in ([`ListPart::in_shards`], [`ListBuilder::new`]).
    ///
    /// [`ListBuilder::new`]: crate::snapshot::ListBuilder::new
    pub fn shards(&self) -> usize {
        self.shards
    }

    /// Replaces one list, rendered in [`Latest::shards`] shards, and publishes the new
    /// snapshot; the other list's samples are shared with the snapshot served until now.
    pub fn replace(&self, kind: Kind, list: ListPart, fetched: Instant) {
        assert_eq!(list.kind, kind, "a list replaces the list of its own kind");
        let list = Arc::new(list);
        let mut parts = self.parts();
        let part = Some(Part { list, fetched });
        match kind {
            Kind::Ip => parts.ips = part,
            Kind::Domain => parts.domains = part,
        }
        parts.ready = true;
        self.publish(&mut parts);
    }

    /// The reports served now.
    pub fn reports(&self) -> Arc<Reports> {
        self.parts().reports.clone()
    }

    /// Stores (`Some`) or drops (`None`) the reports of these assets and publishes.
    pub fn apply_reports(&self, updates: Vec<(Kind, String, Option<Report>)>, fetched: Instant) {
        if updates.is_empty() {
            return;
        }
        if let Some(disk) = self.disk.get() {
            let saved = updates
                .iter()
                .map(|(kind, name, report)| (*kind, name.as_str(), report.as_ref()));
            disk.save_reports(saved, crate::health::unix_time(fetched));
        }
        let mut guard = self.parts();
        let parts = &mut *guard;
        let reports = Arc::make_mut(&mut parts.reports);
        for (kind, name, report) in updates {
            match report {
                Some(report) => reports.set(kind, name, report, fetched),
                None => reports.remove(kind, &name),
            }
        }
        self.publish(parts);
    }

    /// Drops the reports of assets for which `keep` does not hold (gone, or no longer selected).
    pub fn retain_reports(&self, keep: impl Fn(Kind, &str) -> bool) {
        let mut guard = self.parts();
        let parts = &mut *guard;
        let dropped: Vec<(Kind, String)> = parts
            .reports
            .fetched()
            .filter(|(kind, name, _)| !keep(*kind, name))
            .map(|(kind, name, _)| (kind, name.to_owned()))
            .collect();
        if !dropped.is_empty() {
            Arc::make_mut(&mut parts.reports).retain(&keep);
            // Kept on disk, they would come back at the next start only to be dropped again.
            if let Some(disk) = self.disk.get() {
                disk.forget_reports(dropped.iter().map(|(kind, name)| (*kind, name.as_str())));
            }
            self.publish(parts);
        }
    }

    /// Drops the lists older than `metrics.max_age` and the reports older than their own
    /// maximum age at `now`; publishes and returns true when something was dropped.
    pub fn expire(&self, now: Instant) -> bool {
        let mut guard = self.parts();
        let parts = &mut *guard;
        let mut dropped = false;
        let stale: Vec<(Kind, String)> = parts
            .reports
            .fetched()
            .filter(|(_, _, fetched)| now.duration_since(*fetched) >= parts.report_max_age)
            .map(|(kind, name, _)| (kind, name.to_owned()))
            .collect();
        if !stale.is_empty() {
            warn!(
                reports = stale.len(),
                max_age = ?parts.report_max_age,
                "asset reports not refreshed within asset_reports.interval + metrics.max_age: \
                 dropping them"
            );
            let reports = Arc::make_mut(&mut parts.reports);
            for (kind, name) in &stale {
                reports.remove(*kind, name);
            }
            if let Some(disk) = self.disk.get() {
                disk.forget_reports(stale.iter().map(|(kind, name)| (*kind, name.as_str())));
            }
            dropped = true;
        }
        for (kind, part) in [
            (Kind::Ip, &mut parts.ips),
            (Kind::Domain, &mut parts.domains),
        ] {
            if part
                .as_ref()
                .is_some_and(|p| now.duration_since(p.fetched) >= parts.max_age)
            {
                warn!(
                    kind = kind.label(),
                    max_age = ?parts.max_age,
                    "no good poll within metrics.max_age: dropping the assets of this kind"
                );
                *part = None;
                dropped = true;
            }
        }
        if dropped {
            self.publish(parts);
        }
        dropped
    }

    /// Keeps lists for `max_age` and reports for `report_max_age` from now on (a reload that
    /// changed `metrics.max_age` or `asset_reports.interval`).
    pub fn set_max_ages(&self, max_age: Duration, report_max_age: Duration) {
        let mut parts = self.parts();
        parts.max_age = max_age;
        parts.report_max_age = report_max_age;
    }

    /// When the next list or report held will reach its maximum age.
    pub fn next_expiry(&self) -> Option<Instant> {
        let parts = self.parts();
        let lists = [&parts.ips, &parts.domains]
            .into_iter()
            .flatten()
            .map(|p| p.fetched + parts.max_age);
        let reports = parts
            .reports
            .fetched()
            .map(|(_, _, fetched)| fetched + parts.report_max_age);
        lists.chain(reports).min()
    }

    /// Takes what changed into what the replica remembers, and publishes the snapshot.
    fn publish(&self, parts: &mut Parts) {
        for part in [&parts.ips, &parts.domains].into_iter().flatten() {
            let kind = part.list.kind;
            let memory = self.memory(kind);
            parts.memory.changes.take(ListView {
                kind,
                fetched: part.fetched,
                names: &part.list.names,
                shown: &part.list.shown,
                memory: memory.as_deref(),
            });
        }
        let lists = [
            (Kind::Ip, parts.ips.as_ref().map(|p| &p.list.blacklistings)),
            (
                Kind::Domain,
                parts.domains.as_ref().map(|p| &p.list.blacklistings),
            ),
        ];
        let (reports, reporters, now) = (&parts.reports, &parts.reporters, Now::current());
        (parts.memory.rises).update(lists, reports, reporters, now);
        if let Some(disk) = self.disk.get() {
            let kept = parts.memory.to_bytes(now);
            if kept != parts.memory_kept {
                disk.save_events(&kept);
                parts.memory_kept = kept;
            }
        }
        let snapshot = Snapshot::build(
            parts.ips.as_ref().map(|p| p.list.clone()),
            parts.domains.as_ref().map(|p| p.list.clone()),
            (!parts.reports.is_empty()).then(|| parts.reports.clone()),
            &parts.memory,
            parts.ready,
            self.shards,
        );
        let snapshot = Arc::new(snapshot);
        tracing::debug!(
            assets = snapshot.total(),
            reports = parts.reports.len(),
            "snapshot published"
        );
        self.snapshots.send_replace(snapshot.clone());
        // Compress the OpenMetrics body (what Prometheus asks for) ahead of the first scrape:
        // each shard's when there are shards (what a fleet scrapes), else the whole.
        if tokio::runtime::Handle::try_current().is_ok() {
            exporter_web::task::spawn_blocking(move || match snapshot.shards() {
                1 => {
                    snapshot.gzip(Format::OpenMetrics);
                }
                shards => {
                    for shard in 0..shards {
                        snapshot.gzip_of(Some(shard), Format::OpenMetrics);
                    }
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Asset, AssetSet};
    use crate::upstream::dto;

    #[test]
    fn a_list_older_than_max_age_is_dropped_and_the_other_kept() {
        let latest = Latest::new(Duration::from_secs(60), Duration::from_secs(60), 1);
        let start = Instant::now();
        let set = |name: &str, kind| {
            let assets = vec![Asset::from_item(
                kind,
                dto::NamedItem {
                    name: name.into(),
                    item: Default::default(),
                },
                64,
                &mut Vec::new(),
            )];
            ListPart::new(kind, AssetSet { assets })
        };
        latest.replace(Kind::Ip, set("192.0.2.1", Kind::Ip), start);
        latest.replace(
            Kind::Domain,
            set("example.com", Kind::Domain),
            start + Duration::from_secs(30),
        );
        assert_eq!(latest.next_expiry(), Some(start + Duration::from_secs(60)));
        latest.expire(start + Duration::from_secs(59));
        assert_eq!(latest.current().count(Kind::Ip), 1);
        latest.expire(start + Duration::from_secs(60));
        let snapshot = latest.current();
        assert_eq!(snapshot.count(Kind::Ip), 0);
        assert_eq!(snapshot.count(Kind::Domain), 1);
        assert!(snapshot.ready, "readiness survives expiry");
        let text = String::from_utf8(snapshot.rendered.to_vec(Format::Text)).unwrap();
        assert!(!text.contains("192.0.2.1"));
        assert!(text.contains("asset=\"example.com\""));
        // A reload's new max_age counts from when each list was fetched.
        latest.set_max_ages(Duration::from_secs(40), Duration::from_secs(40));
        assert_eq!(latest.next_expiry(), Some(start + Duration::from_secs(70)));
        latest.expire(start + Duration::from_secs(70));
        assert_eq!(latest.current().count(Kind::Domain), 0);
    }

    #[tokio::test]
    async fn a_served_cycle_is_the_first_to_end_with_a_list_served() {
        let latest = Latest::new(Duration::from_secs(60), Duration::from_secs(60), 1);
        let waiting = tokio::spawn({
            let latest = latest.clone();
            async move { latest.served_cycle().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "done before any cycle ended");
        // A cycle in which no list answered (a start during an API outage).
        latest.cycle_ended();
        tokio::task::yield_now().await;
        assert!(
            !waiting.is_finished(),
            "done after a cycle that served nothing"
        );
        // One list arrives; the cycle goes on until the other has had its poll.
        latest.replace(
            Kind::Ip,
            ListPart::new(Kind::Ip, AssetSet::default()),
            Instant::now(),
        );
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "done before the cycle ended");
        latest.cycle_ended();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("done after a cycle that served a list")
            .unwrap();
    }

    #[test]
    fn reports_expire_and_vanish_with_their_asset() {
        let latest = Latest::new(Duration::from_secs(60), Duration::from_secs(60), 1);
        let start = Instant::now();
        let asset = Asset::from_item(
            Kind::Ip,
            dto::NamedItem {
                name: "192.0.2.1".into(),
                item: Default::default(),
            },
            64,
            &mut Vec::new(),
        );
        latest.replace(
            Kind::Ip,
            ListPart::new(
                Kind::Ip,
                AssetSet {
                    assets: vec![asset],
                },
            ),
            start,
        );
        let report = Report {
            tags: vec!["team-a".into()],
            ..Report::default()
        };
        latest.apply_reports(
            vec![
                (Kind::Ip, "192.0.2.1".into(), Some(report.clone())),
                (Kind::Ip, "192.0.2.99".into(), Some(report)),
            ],
            start + Duration::from_secs(30),
        );
        let text = String::from_utf8(latest.current().rendered.to_vec(Format::Text)).unwrap();
        assert!(
            text.contains(
                r#"reputation_asset_tag_info{kind="ip",asset="192.0.2.1",tag="team-a"} 1"#
            )
        );
        assert!(
            !text.contains("192.0.2.99"),
            "a report without its asset is not served"
        );

        latest.retain_reports(|_, name| name != "192.0.2.99");
        assert_eq!(latest.current().reports.as_ref().unwrap().len(), 1);
        latest.replace(
            Kind::Ip,
            ListPart::new(Kind::Ip, AssetSet { assets: Vec::new() }),
            start + Duration::from_secs(80),
        );
        latest.expire(start + Duration::from_secs(90));
        assert!(latest.current().reports.is_none());
    }
}
