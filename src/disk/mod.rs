//! What the exporter knows, kept on local disk, so that a restart serves it at once and costs
//! the API only what is due: each account's lists as the API last sent them, each asset's
//! report with the time it was fetched, and what the replica remembers to tell events.
//!
//! One directory per account (`state.path`, then the account's name). The reports and the
//! bookkeeping are in an embedded redb database (`state.redb`: crash-safe, copy-on-write, one
//! transaction per batch of reports, so one report is never a rewrite of the whole state); each
//! list is its body as the API sent it (`ip-list.json`), written beside the old one while it
//! streams in and renamed over it once complete, its entry written just before (naming the
//! body it replaces too). A kill leaves the last complete state; what it cut off is removed at
//! the next open. The token is never written: the API's address and its SHA-256 tie a store.
//!
//! Nothing here fails the exporter: a store that cannot be opened, is corrupt, of another
//! version or of another account is set aside (renamed) with one warning naming its path, and
//! the exporter starts cold; a write that fails (a full disk) is said once, and the exporter
//! keeps serving from memory.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use redb::{ReadableDatabase as _, ReadableTable as _, TableDefinition};
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use crate::model::Report;
use crate::vocabulary::{Kind, Secret};

mod events;
mod list;
mod root;
pub mod warm;

pub use list::{ListFile, read_list};
pub use root::root;

/// The layout this version writes; a store of another is set aside. A report keeps 2: what the
/// list said when asked; 3: when its count rose; 4: the listings that rise is net of.
const VERSION: u32 = 4;

/// Bookkeeping: the account the store belongs to, each list's fetch time, the events' memory.
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

/// Each asset's report, keyed `ip/192.0.2.1`.
const REPORTS: TableDefinition<&str, &[u8]> = TableDefinition::new("reports");

/// redb's page cache: enough for the tree's inner pages at a million reports (a few MB) and the
/// writes of a batch. Its default, 1 GiB, would keep every report page read at the start
/// resident for the life of the process (the reports are read once, then only written).
const CACHE_BYTES: usize = 32 << 20;

fn builder() -> redb::Builder {
    let mut builder = redb::Builder::new();
    builder.set_cache_size(CACHE_BYTES);
    builder
}

/// Why the store of an account cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    /// A file or directory cannot be read, written or made.
    #[error("{path}: {error}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// The database cannot be opened or read, or a write to it failed.
    #[error("{path}: {error}")]
    Database {
        /// The database file.
        path: PathBuf,
        /// What redb said.
        error: Box<redb::Error>,
    },
    /// The store is not one this exporter can use.
    #[error("{path}: {why}")]
    Unusable {
        /// The database file.
        path: PathBuf,
        /// Of another version, another account, or unreadable entries.
        why: String,
    },
}

/// Which account a store belongs to, and how its reports were read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The store's layout.
    version: u32,
    /// The API's address.
    base_url: String,
    /// SHA-256 of the token, in hex: another token is another account (or user).
    token: String,
    /// `asset_reports.timezone` and `metrics.max_labels_per_asset`, with which the stored
    /// reports were read: reports read otherwise are dropped, the lists kept.
    reading: String,
}

impl Identity {
    /// The identity of an account: its API, its token (hashed), how its reports are read.
    pub fn new(base_url: &reqwest::Url, token: &Secret, timezone: &str, max_labels: usize) -> Self {
        let digest = ring::digest::digest(&ring::digest::SHA256, token.expose().as_bytes());
        let token = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        Identity {
            version: VERSION,
            base_url: base_url.as_str().to_owned(),
            token,
            reading: format!("{timezone} {max_labels}"),
        }
    }
}

/// When a list was fetched, and what its stored body must be.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Body {
    /// Unix time of the fetch.
    fetched: f64,
    /// Length of the body.
    bytes: u64,
    /// CRC-32 of the body.
    crc: u32,
}

/// A list's entry: its body, and the one before it. The entry is written before the new body
/// is renamed over the old one, so a kill between the two leaves the old body, which
/// `previous` still describes.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct ListMeta {
    body: Body,
    previous: Option<Body>,
}

/// What a store held when it was opened: each stored list, its body to be read with
/// [`read_list`] and its reports with [`Disk::read_reports`] (they can be read side by side).
#[derive(Debug, Default)]
pub struct Restored {
    /// Each stored list: its kind, its body's file, when it was fetched (Unix time), and its
    /// body's length and CRC-32, which the reader checks.
    pub lists: Vec<StoredList>,
}

/// A list as stored.
#[derive(Debug, Clone)]
pub struct StoredList {
    /// Which list.
    pub kind: Kind,
    /// Its body, as the API sent it.
    pub path: PathBuf,
    /// Unix time it was fetched (of the newest body the entry describes).
    pub fetched: f64,
    /// What the body must be: the newest, or the one before it (see [`ListMeta`]).
    bodies: Vec<Body>,
}

/// An account's store on disk.
#[derive(Debug)]
pub struct Disk {
    dir: PathBuf,
    db: redb::Database,
    /// The failures said already, by what failed: each is said once until a write succeeds
    /// again. A std mutex, never held across an `.await`.
    said: Mutex<HashSet<&'static str>>,
}

impl Disk {
    /// Opens (or makes) the store of the account `identity` in `dir`, and reads what it holds.
    /// A store that cannot be used is set aside, said once, and replaced by an empty one; the
    /// error is for a directory where no store can be made at all.
    pub fn open(dir: &Path, identity: &Identity) -> Result<(Disk, Restored), DiskError> {
        std::fs::create_dir_all(dir).map_err(|error| DiskError::Io {
            path: dir.to_owned(),
            error,
        })?;
        let path = dir.join("state.redb");
        let opened = Self::existing(dir, &path, identity);
        let (disk, restored) = match opened {
            Ok(opened) => opened,
            // Another process (a replica given the same path, or this exporter's previous run
            // still stopping) has it: not ours to set aside.
            Err(DiskError::Database { error, .. })
                if matches!(*error, redb::Error::DatabaseAlreadyOpen) =>
            {
                return Err(unusable(&path, "another process has it open"));
            }
            Err(problem) => {
                if path.exists() {
                    let aside = set_aside(dir)?;
                    warn!(
                        store = %path.display(),
                        set_aside = %aside.display(),
                        problem = %problem,
                        "the state store cannot be used; it is set aside and the exporter starts \
                         cold"
                    );
                }
                let db = builder().create(&path).map_err(|e| database(&path, e))?;
                let disk = Disk::new(dir, db);
                disk.write_identity(identity)?;
                (disk, Restored::default())
            }
        };
        // The store is this process' now: a list body a kill cut off is of no use to anyone.
        remove_partials(dir);
        Ok((disk, restored))
    }

    fn new(dir: &Path, db: redb::Database) -> Disk {
        Disk {
            dir: dir.to_owned(),
            db,
            said: Mutex::default(),
        }
    }

    /// The store already in `dir`, if it is this account's and readable.
    fn existing(
        dir: &Path,
        path: &Path,
        identity: &Identity,
    ) -> Result<(Disk, Restored), DiskError> {
        if !path.exists() {
            return Err(unusable(path, "no store yet"));
        }
        // redb asserts (panics) on some truncated files instead of answering an error: a store
        // it cannot open either way is set aside.
        let opened = std::panic::catch_unwind(|| builder().open(path))
            .map_err(|_| unusable(path, "it is truncated or corrupt"))?;
        let db = opened.map_err(|e| database(path, e))?;
        let disk = Disk::new(dir, db);
        let read = disk.db.begin_read().map_err(|e| database(path, e))?;
        let meta = read.open_table(META).map_err(|e| database(path, e))?;
        let stored: Identity = match meta.get("identity").map_err(|e| database(path, e))? {
            Some(value) => serde_json::from_slice(value.value())
                .map_err(|e| unusable(path, format!("its identity cannot be read: {e}")))?,
            None => return Err(unusable(path, "it has no identity")),
        };
        if stored.version != identity.version {
            let why = format!("of layout {}, not {VERSION}", stored.version);
            return Err(unusable(path, why));
        }
        if stored.base_url != identity.base_url || stored.token != identity.token {
            return Err(unusable(path, "of another account (API address or token)"));
        }
        let mut restored = Restored::default();
        for kind in Kind::ALL {
            let Some(value) = meta.get(list_key(kind)).map_err(|e| database(path, e))? else {
                continue;
            };
            let list: ListMeta = postcard::from_bytes(value.value())
                .map_err(|e| unusable(path, format!("a list's entry cannot be read: {e}")))?;
            restored.lists.push(StoredList {
                kind,
                path: disk.list_path(kind),
                fetched: list.body.fetched,
                bodies: std::iter::once(list.body).chain(list.previous).collect(),
            });
        }
        let reports_read_alike = stored.reading == identity.reading;
        drop(meta);
        drop(read);
        if !reports_read_alike {
            info!(
                store = %path.display(),
                "asset_reports.timezone or metrics.max_labels_per_asset changed since the \
                 reports were stored: they are fetched again"
            );
            disk.clear_reports().map_err(|e| database(path, e))?;
            disk.write_identity(identity)?;
        }
        Ok((disk, restored))
    }

    /// Every stored report, with when it was fetched (Unix time). An entry that cannot be read
    /// makes the store unusable, as a corrupt one is.
    pub fn read_reports(&self) -> Result<Vec<(Kind, String, Report, f64)>, DiskError> {
        let path = self.db_path();
        let read = self.db.begin_read().map_err(|e| database(&path, e))?;
        let table = read.open_table(REPORTS).map_err(|e| database(&path, e))?;
        let mut reports = Vec::new();
        for entry in table.iter().map_err(|e| database(&path, e))? {
            let (key, value) = entry.map_err(|e| database(&path, e))?;
            let (kind, name) = split_key(key.value())
                .ok_or_else(|| unusable(&path, format!("a report key `{}`", key.value())))?;
            let (fetched, report): (f64, Report) = postcard::from_bytes(value.value())
                .map_err(|e| unusable(&path, format!("a report cannot be read: {e}")))?;
            reports.push((kind, name.to_owned(), report, fetched));
        }
        Ok(reports)
    }

    fn write_identity(&self, identity: &Identity) -> Result<(), DiskError> {
        let path = self.db_path();
        let value = serde_json::to_vec(identity).unwrap_or_default();
        let write = || -> Result<(), redb::Error> {
            let txn = self.db.begin_write()?;
            txn.open_table(META)?.insert("identity", value.as_slice())?;
            txn.open_table(REPORTS)?;
            txn.commit()?;
            Ok(())
        };
        write().map_err(|e| database(&path, e))
    }

    fn clear_reports(&self) -> Result<(), redb::Error> {
        let txn = self.db.begin_write()?;
        txn.delete_table(REPORTS)?;
        txn.open_table(REPORTS)?;
        txn.commit()?;
        Ok(())
    }

    fn db_path(&self) -> PathBuf {
        self.dir.join("state.redb")
    }

    fn list_path(&self, kind: Kind) -> PathBuf {
        self.dir.join(format!("{}-list.json", kind.label()))
    }

    /// Stores (`Some`) or forgets (`None`) the reports of these assets, fetched at `fetched`
    /// (Unix time), in one transaction.
    pub fn save_reports<'a>(
        &self,
        reports: impl IntoIterator<Item = (Kind, &'a str, Option<&'a Report>)>,
        fetched: f64,
    ) {
        let write = || -> Result<(), redb::Error> {
            let txn = self.db.begin_write()?;
            {
                let mut table = txn.open_table(REPORTS)?;
                for (kind, name, report) in reports {
                    let key = report_key(kind, name);
                    match report {
                        Some(report) => {
                            let value =
                                postcard::to_allocvec(&(fetched, report)).unwrap_or_default();
                            table.insert(key.as_str(), value.as_slice())?;
                        }
                        None => {
                            table.remove(key.as_str())?;
                        }
                    }
                }
            }
            txn.commit()?;
            Ok(())
        };
        self.done("reports", write().map_err(|e| database(&self.db_path(), e)));
    }

    /// Forgets the reports of these assets.
    pub fn forget_reports<'a>(&self, assets: impl IntoIterator<Item = (Kind, &'a str)>) {
        self.save_reports(assets.into_iter().map(|(k, n)| (k, n, None)), 0.0);
    }

    /// Says a failure of `what` once, until a write of it succeeds again.
    fn failed(&self, what: &'static str, path: &Path, error: &dyn std::fmt::Display) {
        let mut said = self.said.lock().unwrap_or_else(|e| e.into_inner());
        if said.insert(what) {
            warn!(
                store = %path.display(),
                error = %error,
                "cannot write the state store; the exporter goes on from memory (a restart \
                 will start from what the store last held)"
            );
        }
    }

    fn done(&self, what: &'static str, result: Result<(), DiskError>) {
        match result {
            Ok(()) => {
                let mut said = self.said.lock().unwrap_or_else(|e| e.into_inner());
                said.remove(what);
            }
            Err(error) => self.failed(what, &self.dir, &error),
        }
    }
}

/// Sets the store in `dir` aside: renames its files with the time, so that nothing of it is
/// used or lost. Returns the name the database has now.
fn set_aside(dir: &Path) -> Result<PathBuf, DiskError> {
    let stamp = jiff::Timestamp::now().as_second();
    let mut database = dir.join("state.redb");
    for name in ["state.redb", "ip-list.json", "domain-list.json"] {
        let path = dir.join(name);
        if !path.exists() {
            continue;
        }
        let aside = dir.join(format!("{name}.set-aside-{stamp}"));
        std::fs::rename(&path, &aside).map_err(|error| DiskError::Io {
            path: path.clone(),
            error,
        })?;
        if name == "state.redb" {
            database = aside;
        }
    }
    Ok(database)
}

fn list_key(kind: Kind) -> &'static str {
    match kind {
        Kind::Ip => "list/ip",
        Kind::Domain => "list/domain",
    }
}

fn report_key(kind: Kind, name: &str) -> String {
    format!("{}/{name}", kind.label())
}

/// Removes the list bodies a stopped process left half written (`ip-list.json.partial-3`).
fn remove_partials(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .contains(".json.partial-")
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn split_key(key: &str) -> Option<(Kind, &str)> {
    let (kind, name) = key.split_once('/')?;
    let kind = Kind::ALL.into_iter().find(|k| k.label() == kind)?;
    Some((kind, name))
}

fn database(path: &Path, error: impl Into<redb::Error>) -> DiskError {
    DiskError::Database {
        path: path.to_owned(),
        error: Box::new(error.into()),
    }
}

fn unusable(path: &Path, why: impl Into<String>) -> DiskError {
    DiskError::Unusable {
        path: path.to_owned(),
        why: why.into(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn identity() -> Identity {
        let url = reqwest::Url::parse("https://api.example/v1/").unwrap();
        Identity::new(&url, &Secret::new("t0ken"), "UTC", 50)
    }

    /// A fresh directory of this test's own, removed when dropped.
    struct TestDir(PathBuf);

    impl TestDir {
        fn new(test: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("reputation-disk-{}-{test}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            TestDir(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TestDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn set_aside_files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.contains(".set-aside-"))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_store_of_another_layout_is_set_aside_and_an_empty_one_takes_its_place() {
        let dir = TestDir::new("layout");
        let mut older = identity();
        older.version = VERSION + 1;
        let (disk, _) = Disk::open(dir.path(), &older).unwrap();
        let report = Report::default();
        disk.save_reports([(Kind::Ip, "192.0.2.1", Some(&report))], 1.0e9);
        drop(disk);

        let (disk, restored) = Disk::open(dir.path(), &identity()).unwrap();
        assert!(restored.lists.is_empty());
        assert_eq!(disk.read_reports().unwrap().len(), 0);
        let aside = set_aside_files(dir.path());
        assert_eq!(aside.len(), 1, "{aside:?}");
        assert!(aside[0].starts_with("state.redb.set-aside-"), "{aside:?}");
        drop(disk);
        // The new store is this layout's: the next open keeps it.
        let (disk, _) = Disk::open(dir.path(), &identity()).unwrap();
        disk.save_reports([(Kind::Ip, "192.0.2.1", Some(&report))], 1.0e9);
        drop(disk);
        let (disk, _) = Disk::open(dir.path(), &identity()).unwrap();
        assert_eq!(disk.read_reports().unwrap().len(), 1);
        assert_eq!(set_aside_files(dir.path()).len(), 1);
    }

    #[test]
    fn a_list_body_cut_off_by_a_kill_leaves_the_stored_one_and_is_removed_at_the_next_open() {
        let dir = TestDir::new("cut-off");
        let (disk, _) = Disk::open(dir.path(), &identity()).unwrap();
        let disk = Arc::new(disk);
        let complete = b"[{\"ip\": \"192.0.2.1\"}]";
        let mut file = disk.list_file(Kind::Ip).unwrap();
        file.write(complete);
        file.commit(1.0e9);
        drop(disk);
        // What a kill during the next poll leaves: its body cut off mid-stream beside the
        // stored one (a process killed drops nothing, so nothing removes it).
        std::fs::write(
            dir.path().join("ip-list.json.partial-7"),
            b"[{\"ip\": \"192.0.2.2\"}, {\"ip\": \"19",
        )
        .unwrap();
        let partials = |dir: &Path| {
            std::fs::read_dir(dir)
                .unwrap()
                .filter(|e| {
                    let name = e.as_ref().unwrap().file_name();
                    name.to_string_lossy().contains(".partial-")
                })
                .count()
        };
        assert_eq!(partials(dir.path()), 1);

        let (_disk, restored) = Disk::open(dir.path(), &identity()).unwrap();
        assert_eq!(restored.lists.len(), 1);
        let stored = &restored.lists[0];
        assert_eq!((stored.kind, stored.fetched), (Kind::Ip, 1.0e9));
        assert_eq!(stored.bodies[0].bytes, complete.len() as u64);
        assert_eq!(std::fs::read(&stored.path).unwrap(), complete);
        assert_eq!(partials(dir.path()), 0, "the cut-off body is removed");
    }

    #[test]
    fn a_kill_between_a_list_entry_and_its_rename_leaves_the_old_body_readable() {
        let dir = TestDir::new("entry-then-kill");
        let (disk, _) = Disk::open(dir.path(), &identity()).unwrap();
        let disk = Arc::new(disk);
        let old = b"[{\"ip\": \"192.0.2.1\"}]";
        let mut file = disk.list_file(Kind::Ip).unwrap();
        file.write(old);
        file.commit(1.0e9);
        // The next body: its entry written, then the kill, before the rename.
        let mut next = disk.list_file(Kind::Ip).unwrap();
        next.write(b"[{\"ip\": \"192.0.2.1\"}, {\"ip\": \"192.0.2.2\"}]");
        next.record(1.0e9 + 300.0).unwrap();
        drop(next);
        drop(disk);

        let (_disk, restored) = Disk::open(dir.path(), &identity()).unwrap();
        let stored = &restored.lists[0];
        assert_eq!(stored.fetched, 1.0e9 + 300.0, "the entry is the new body's");
        let (part, _, fetched) = read_list(stored, 50, 1).expect("the old body is read");
        assert_eq!(fetched, 1.0e9, "served with the old body's own time");
        assert_eq!(part.names.len(), 1);
    }
}
