//! A state directory of a test's own, removed at the end.

use std::path::PathBuf;

use reputation_exporter::config::Settings;

/// A state directory of a test's own (`state.path`), removed when dropped.
pub struct StateDir(pub PathBuf);

impl StateDir {
    /// An empty directory named for `test` and this process.
    pub fn new(test: &str) -> StateDir {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("state-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        StateDir(dir)
    }

    /// The store of the account of `[api]`.
    pub fn account(&self) -> PathBuf {
        self.0.join("api")
    }

    /// Settings for an exporter keeping its state here.
    pub fn keep(&self) -> impl Fn(&mut Settings) + Clone + use<> {
        let dir = self.0.clone();
        move |s: &mut Settings| {
            s.state.enabled = true;
            s.state.path = Some(dir.clone());
        }
    }

    /// The same, with every asset's report fetched in hourly rounds.
    pub fn keep_reporting(&self) -> impl Fn(&mut Settings) + Clone + use<> {
        let keep = self.keep();
        move |s: &mut Settings| {
            keep(s);
            s.asset_reports.enabled = true;
            s.asset_reports.interval = super::duration("1h");
        }
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
