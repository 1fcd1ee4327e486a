//! Reports follow the list: when a list poll shows an asset's blacklisting count or its change
//! differ from what the asset's last report said, that report is fetched at once, ahead of the
//! round, so that a new listing (or a delisting) is served with the blacklist's name within one
//! poll of the list showing it.
//!
//! The list poller checks each asset as it is decoded ([`Following`], a sink around the list's
//! own) and hands the assets whose reports are behind to [`FollowUps`]; the report poller takes
//! them from there. A report the API keeps answering differently from its list (its own lag, or
//! a 404) is asked for again at every poll for [`ASKED_FOR`], then not until the list changes
//! again; one whose fetch failed is asked for again at the next poll.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indexmap::IndexSet;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::selection::Selection;
use crate::model::{Asset, AssetSink, Blacklisting, Reports};
use crate::vocabulary::{API_CHECK_INTERVAL, Kind};

/// How long a report that still disagrees with an unchanged list is asked for again, at every
/// poll, after the first request: the API's check interval, by which its next check has come
/// and the list says something else, or the report has caught up for good. At most 12 requests
/// more per change of the list at the default poll, for such an asset only; a report that
/// comes late names its listing within a poll of coming.
pub const ASKED_FOR: Duration = API_CHECK_INTERVAL;

/// What the list said when an asset in disagreement was first asked for, and until when it is
/// asked for again (`None`: not again, as after a restart).
#[derive(Debug, Clone, Copy)]
struct Asked {
    listed: Blacklisting,
    until: Option<Instant>,
}

/// The assets whose reports are to be fetched ahead of the round: filled by the list poller,
/// emptied by the report poller.
#[derive(Debug)]
pub struct FollowUps {
    /// The assets this replica reports on; the others are never followed.
    selection: Selection,
    state: Mutex<State>,
    /// Wakes the report poller when assets are added.
    added: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// Until the first round has ended, every listed asset lacks a report: the round fetches
    /// them all anyway, so nothing is followed before.
    armed: bool,
    /// To be fetched, in the order the lists found them, each once: a set, so that a change
    /// of every asset at once queues in time proportional to the fleet, not its square.
    pending: IndexSet<(Kind, String)>,
    /// What the list said when each asset still in disagreement was asked for: asked again at
    /// every poll for [`ASKED_FOR`], then not until the list says something else. Only assets
    /// whose report disagrees with their list are here.
    asked: HashMap<(Kind, String), Asked>,
}

impl FollowUps {
    /// Follow-ups for the assets of `selection`, unarmed.
    pub fn new(selection: Selection) -> Self {
        FollowUps {
            selection,
            state: Mutex::new(State::default()),
            added: Notify::new(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// From now on, lists that disagree with reports are followed (after the first round, or
    /// at once when the reports are there already).
    pub fn arm(&self) {
        self.state().armed = true;
    }

    /// Whether lists are checked against the reports.
    pub fn armed(&self) -> bool {
        self.state().armed
    }

    /// A sink for one list poll: `inner` gets every asset, and those whose report (in
    /// `reports`) is behind are noted.
    pub fn check<S: AssetSink>(&self, inner: S, reports: Arc<Reports>) -> Following<S> {
        Following {
            inner,
            check: Some((reports, self.selection.clone())),
            behind: Vec::new(),
        }
    }

    /// Queues the assets a list poll found behind, each unless it was asked for with the same
    /// list values already and its next request again is not due; returns how many were queued.
    pub fn ask(&self, kind: Kind, behind: Vec<(String, Blacklisting)>) -> usize {
        let mut state = self.state();
        if !state.armed {
            return 0;
        }
        let mut queued = 0;
        let now = Instant::now();
        for (name, listed) in behind {
            let key = (kind, name);
            if state.pending.contains(&key) {
                continue;
            }
            match state.asked.get(&key) {
                Some(asked) if asked.listed == listed => {
                    if asked.until.is_none_or(|until| now >= until) {
                        continue;
                    }
                }
                _ => {
                    let asked = Asked {
                        listed,
                        until: Some(now + ASKED_FOR),
                    };
                    state.asked.insert(key.clone(), asked);
                }
            }
            state.pending.insert(key);
            queued += 1;
        }
        drop(state);
        if queued > 0 {
            self.added.notify_one();
        }
        queued
    }

    /// Waits until assets are queued, then takes them all.
    pub async fn next(&self) -> Vec<(Kind, String)> {
        loop {
            let notified = self.added.notified();
            let pending = std::mem::take(&mut self.state().pending);
            if !pending.is_empty() {
                return pending.into_iter().collect();
            }
            notified.await;
        }
    }

    /// What a follow-up fetch of `kind`/`name` gave: `Some(report's values)` when a report
    /// arrived, `None` when it failed (asked for again at the next poll). A report that now
    /// says what the list said settles the asset; one that still disagrees, or a 404, is asked
    /// for again at every poll for [`ASKED_FOR`], then not until the list changes.
    ///
    /// Returns what the list said when the report was asked for, when the report still
    /// disagrees: kept with the report ([`Report::asked_for`](crate::model::Report)), so that a
    /// restart remembers it ([`FollowUps::remember`]).
    pub fn answered(
        &self,
        kind: Kind,
        name: &str,
        report: Option<Option<Blacklisting>>,
    ) -> Option<Blacklisting> {
        let mut state = self.state();
        let key = (kind, name.to_owned());
        let asked = state.asked.get(&key).map(|a| a.listed);
        let settled = match (report, asked) {
            (None, _) => true,
            (Some(Some(said)), Some(asked)) => said == asked,
            (Some(_), _) => false,
        };
        if settled {
            state.asked.remove(&key);
            return None;
        }
        asked
    }

    /// What the reports kept say the lists were asked with: not asked again while the lists
    /// say the same (a restart, a reload that rebuilds the account: the requests again were
    /// made, or given up, before it).
    pub fn remember(&self, reports: &Reports) {
        let mut state = self.state();
        for (kind, name, report) in reports.iter() {
            if let Some(listed) = report.asked_for {
                // The requests again were made, or given up, before.
                let asked = Asked {
                    listed,
                    until: None,
                };
                state.asked.insert((kind, name.to_owned()), asked);
            }
        }
    }
}

/// A list poll's sink that checks each asset against its report before handing it on.
#[derive(Debug)]
pub struct Following<S> {
    inner: S,
    /// The reports served and the assets this replica reports on; `None`: nothing is checked.
    check: Option<(Arc<Reports>, Selection)>,
    /// The assets whose reports are behind, with what the list says.
    behind: Vec<(String, Blacklisting)>,
}

impl<S> Following<S> {
    /// A sink that only hands the assets on (reports off, or not armed yet).
    pub fn unchecked(inner: S) -> Self {
        Following {
            inner,
            check: None,
            behind: Vec::new(),
        }
    }

    /// The inner sink, and the assets whose reports are behind the list.
    pub fn finish(self) -> (S, Vec<(String, Blacklisting)>) {
        (self.inner, self.behind)
    }
}

impl<S: AssetSink> AssetSink for Following<S> {
    fn push(&mut self, asset: Asset) {
        if let Some((reports, selection)) = &self.check
            && selection.selects(&asset.name)
        {
            let listed = asset.blacklisting();
            let behind = match reports.get(asset.kind, &asset.name) {
                Some(report) => report.is_behind(listed),
                // No report (yet, or the API did not give one): only a listing or a change
                // is worth a request ahead of the round.
                None => {
                    listed.count.is_some_and(|n| n > 0.0) || listed.change.is_some_and(|c| c != 0.0)
                }
            };
            if behind {
                self.behind.push((asset.name.clone(), listed));
            }
        }
        self.inner.push(asset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Report;
    use crate::poll::selection::Replica;
    use crate::upstream::dto::{ListItem, Loose, NamedItem};

    fn all() -> Selection {
        Selection::new(None, None, Replica { index: 1, count: 1 })
    }

    fn listed(count: f64, change: f64) -> Blacklisting {
        Blacklisting {
            count: Some(count),
            change: Some(change),
        }
    }

    fn asset(name: &str, count: f64, change: f64) -> Asset {
        let mut item = ListItem {
            ip: Some(name.into()),
            blacklisted: Loose::Number(count),
            ..ListItem::default()
        };
        item.blacklisted_change.last_check = Loose::Number(change);
        let named = NamedItem {
            name: name.into(),
            item,
        };
        Asset::from_item(Kind::Ip, named, 64, &mut Vec::new())
    }

    fn reports(said: &[(&str, Blacklisting)]) -> Arc<Reports> {
        let mut reports = Reports::default();
        for (name, blacklisting) in said {
            let report = Report {
                blacklisting: *blacklisting,
                ..Report::default()
            };
            reports.set(
                Kind::Ip,
                (*name).to_owned(),
                report,
                tokio::time::Instant::now(),
            );
        }
        Arc::new(reports)
    }

    /// The assets a list of `assets` finds behind `said`, through a sink that keeps them all.
    fn behind(
        selection: Selection,
        said: &[(&str, Blacklisting)],
        assets: Vec<Asset>,
    ) -> Vec<String> {
        let follow = FollowUps::new(selection);
        let mut sink = follow.check(crate::model::AssetSet::default(), reports(said));
        let count = assets.len();
        for asset in assets {
            sink.push(asset);
        }
        let (inner, behind) = sink.finish();
        assert_eq!(inner.assets.len(), count, "every asset goes on");
        behind.into_iter().map(|(name, _)| name).collect()
    }

    #[test]
    fn an_asset_whose_count_or_change_differs_from_its_report_is_behind() {
        let said = [
            ("192.0.2.1", listed(0.0, 0.0)),
            ("192.0.2.2", listed(1.0, 1.0)),
            ("192.0.2.3", listed(1.0, 1.0)),
            ("192.0.2.4", listed(2.0, 0.0)),
        ];
        let assets = vec![
            asset("192.0.2.1", 1.0, 1.0),  // newly listed
            asset("192.0.2.2", 1.0, 1.0),  // as reported
            asset("192.0.2.3", 1.0, 0.0),  // the same count, the change settled
            asset("192.0.2.4", 1.0, -1.0), // delisted from one of two
            asset("192.0.2.5", 0.0, 0.0),  // no report, clean
            asset("192.0.2.6", 1.0, 0.0),  // no report, listed
        ];
        assert_eq!(
            behind(all(), &said, assets),
            ["192.0.2.1", "192.0.2.3", "192.0.2.4", "192.0.2.6"]
        );
    }

    #[test]
    fn assets_of_another_replica_are_never_followed() {
        let mine = Selection::new(None, None, Replica { index: 1, count: 2 });
        let theirs = Selection::new(None, None, Replica { index: 2, count: 2 });
        let assets = || (0..40).map(|i| asset(&format!("10.0.0.{i}"), 1.0, 1.0));
        let a = behind(mine, &[], assets().collect());
        let b = behind(theirs, &[], assets().collect());
        assert!(!a.is_empty() && !b.is_empty());
        assert_eq!(a.len() + b.len(), 40, "each asset followed by one replica");
        assert!(a.iter().all(|name| !b.contains(name)));
    }

    #[tokio::test(start_paused = true)]
    async fn each_change_of_the_list_is_asked_for_at_every_poll_of_an_hour_until_the_report_agrees()
    {
        let follow = FollowUps::new(all());
        let new = || vec![("192.0.2.1".to_owned(), listed(1.0, 1.0))];
        assert_eq!(
            follow.ask(Kind::Ip, new()),
            0,
            "nothing before the first round"
        );
        follow.arm();
        assert_eq!(follow.ask(Kind::Ip, new()), 1);
        assert_eq!(follow.ask(Kind::Ip, new()), 0, "queued once");
        assert_eq!(follow.next().await, [(Kind::Ip, "192.0.2.1".to_owned())]);
        // The report still says something else: asked again for the same list at every poll
        // of the hour after the first request, then not.
        follow.answered(Kind::Ip, "192.0.2.1", Some(Some(listed(0.0, 0.0))));
        let mut asked_at = Vec::new();
        for poll in 1..=24 {
            tokio::time::advance(Duration::from_secs(300)).await;
            if follow.ask(Kind::Ip, new()) == 1 {
                asked_at.push(poll);
                let _ = follow.next().await;
                follow.answered(Kind::Ip, "192.0.2.1", Some(Some(listed(0.0, 0.0))));
            }
        }
        assert_eq!(asked_at, (1..=11).collect::<Vec<_>>());
        // The list changes: asked again.
        let changed = vec![("192.0.2.1".to_owned(), listed(2.0, 1.0))];
        assert_eq!(follow.ask(Kind::Ip, changed.clone()), 1);
        let _ = follow.next().await;
        // The fetch failed: asked again at the next poll.
        follow.answered(Kind::Ip, "192.0.2.1", None);
        assert_eq!(follow.ask(Kind::Ip, changed.clone()), 1);
        let _ = follow.next().await;
        // The report agrees: settled, and a later disagreement with the same values is new.
        follow.answered(Kind::Ip, "192.0.2.1", Some(Some(listed(2.0, 1.0))));
        assert_eq!(follow.ask(Kind::Ip, changed), 1);
    }

    #[tokio::test]
    async fn what_a_disagreeing_report_was_asked_with_is_kept_with_it_and_remembered() {
        let follow = FollowUps::new(all());
        follow.arm();
        let asked = listed(2.0, 1.0);
        follow.ask(Kind::Ip, vec![("192.0.2.1".to_owned(), asked)]);
        let _ = follow.next().await;
        // Still disagreeing: the report keeps what the list said; agreeing, nothing.
        assert_eq!(
            follow.answered(Kind::Ip, "192.0.2.1", Some(Some(listed(1.0, 0.0)))),
            Some(asked)
        );
        assert_eq!(
            follow.answered(Kind::Ip, "192.0.2.9", Some(Some(asked))),
            None
        );

        // A new process (a restart) remembers it from the report, and does not ask again.
        let report = Report {
            blacklisting: listed(1.0, 0.0),
            asked_for: Some(asked),
            ..Report::default()
        };
        let mut reports = Reports::default();
        reports.set(
            Kind::Ip,
            "192.0.2.1".into(),
            report,
            tokio::time::Instant::now(),
        );
        let restarted = FollowUps::new(all());
        restarted.arm();
        restarted.remember(&reports);
        assert_eq!(
            restarted.ask(Kind::Ip, vec![("192.0.2.1".to_owned(), asked)]),
            0
        );
        assert_eq!(
            restarted.ask(Kind::Ip, vec![("192.0.2.1".to_owned(), listed(3.0, 1.0))]),
            1,
            "the list changed"
        );
    }
}
