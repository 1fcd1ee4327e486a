//! A warm start: what an account's store kept, read back so that it can be served at once.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::warn;

use super::{Disk, DiskError, Identity, read_list};
use crate::health::{Health, instant_at, unix_now};
use crate::model::{ListMemory, Reports};
use crate::snapshot::ListPart;
use crate::vocabulary::{Endpoint, Kind};

/// What of a store is still worth serving, and how its lists are rendered again.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `metrics.max_age`: an older list is not served.
    pub max_age: Duration,
    /// How long a report is served after it was fetched: an older one is not.
    pub report_max_age: Duration,
    /// `metrics.max_labels_per_asset`.
    pub max_labels: usize,
    /// `metrics.shards`: the shards the lists are rendered in.
    pub shards: usize,
}

/// What a store kept that is still worth serving, read back: the lists rendered, each with the
/// instant it was fetched, and the reports with theirs.
#[derive(Debug)]
pub struct Kept {
    /// The store, open: where what is fetched from now on is kept.
    pub disk: Arc<Disk>,
    /// The lists not older than `metrics.max_age`, rendered.
    pub lists: Vec<(ListPart, Instant)>,
    /// What each stored list said of its assets' values, whatever its age: the first list
    /// polled tells the changes no list showed since from it.
    pub memories: Vec<(Kind, ListMemory)>,
    /// The reports not older than theirs.
    pub reports: Reports,
    /// What the replica remembered to tell events, as the store kept it.
    pub events: Option<Vec<u8>>,
    /// How long reading took.
    pub read: Duration,
}

/// Opens the store in `dir` and reads back what it kept within `limits`, the lists' bodies and
/// the reports side by side, off the async threads; tells `health` when each endpoint last
/// answered, whatever the age (a list too old to serve still dates the data's staleness). `None`, said once with why, when the store cannot be used: the account then starts
/// cold and keeps nothing across restarts.
pub async fn read_back(
    dir: PathBuf,
    identity: Identity,
    limits: Limits,
    health: &Health,
) -> Option<Kept> {
    let started = std::time::Instant::now();
    let opened = exporter_web::task::spawn_blocking(move || read(&dir, &identity, limits)).await;
    let (disk, (lists, memories), successes, (reports, newest)) = match opened {
        Ok(Ok(opened)) => opened,
        Ok(Err(error)) => {
            warn!(
                error = %error,
                "the state store cannot be used; the account starts cold and keeps nothing \
                 across restarts"
            );
            return None;
        }
        Err(_) => return None,
    };
    for (endpoint, fetched) in successes {
        health.restored(endpoint, fetched);
    }
    if let Some(newest) = newest {
        health.restored(Endpoint::Asset, newest);
    }
    let events = disk.read_events();
    Some(Kept {
        disk: Arc::new(disk),
        lists,
        memories,
        reports,
        events,
        read: started.elapsed(),
    })
}

/// The lists read back: those still served, rendered, each with the instant it was fetched;
/// and what every one said of its assets' values.
type ReadLists = (Vec<(ListPart, Instant)>, Vec<(Kind, ListMemory)>);

/// Each list endpoint's last success as the store kept it (Unix time), served or not.
type Successes = Vec<(Endpoint, f64)>;

/// The reports read back, and the Unix time of the newest.
type ReadReports = (Reports, Option<f64>);

/// [`read_back`]'s blocking part.
fn read(
    dir: &std::path::Path,
    identity: &Identity,
    limits: Limits,
) -> Result<(Disk, ReadLists, Successes, ReadReports), DiskError> {
    let (disk, restored) = Disk::open(dir, identity)?;
    let successes = restored
        .lists
        .iter()
        .map(|list| (Endpoint::list(list.kind), list.fetched))
        .collect();
    let now = unix_now();
    let fresh = |fetched: f64, max_age: Duration| now - fetched < max_age.as_secs_f64();
    let (lists, reports) = std::thread::scope(|threads| {
        // Every list is read, the ones too old to serve for what they said only.
        let lists: Vec<_> = restored
            .lists
            .iter()
            .map(|list| {
                threads.spawn(move || {
                    let (part, memory, fetched) =
                        read_list(list, limits.max_labels, limits.shards)?;
                    let at = instant_at(fetched).filter(|_| fresh(fetched, limits.max_age));
                    Some((at.map(|at| (part, at)), (list.kind, memory)))
                })
            })
            .collect();
        // The reports are made the map they are served from here, while the lists decode.
        let reports = disk.read_reports().map(|stored| {
            let mut reports = Reports::default();
            let mut newest = None::<f64>;
            for (kind, name, report, fetched) in stored {
                if !fresh(fetched, limits.report_max_age) {
                    continue;
                }
                let Some(at) = instant_at(fetched) else {
                    continue;
                };
                newest = Some(newest.map_or(fetched, |newest| newest.max(fetched)));
                reports.set(kind, name, report, at);
            }
            (reports, newest)
        });
        let (served, memories): (Vec<_>, Vec<_>) = lists
            .into_iter()
            .filter_map(|thread| thread.join().ok().flatten())
            .unzip();
        ((served.into_iter().flatten().collect(), memories), reports)
    });
    Ok((disk, lists, successes, reports?))
}
