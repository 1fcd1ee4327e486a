//! Where the accounts' stores go: `state.path`, or the first place of the usual ones that can be
//! written.

use std::fs::File;
use std::path::{Path, PathBuf};

use tracing::{info, warn};

/// The directory the accounts' stores go under: `state.path` when given; else systemd's
/// `$STATE_DIRECTORY` (the unit's `StateDirectory=`), `/var/lib/reputation-exporter` where it
/// exists (the container image's volume, a package's directory) and the user's
/// `$XDG_STATE_HOME/reputation-exporter` (`~/.local/state/...`), the first that can be
/// written. `None` (said once, with why) when the store is off or nowhere can be written.
pub fn root(enabled: bool, path: Option<&Path>) -> Option<PathBuf> {
    if !enabled {
        return None;
    }
    let candidates: Vec<PathBuf> = match path {
        Some(path) => vec![path.to_owned()],
        None => {
            let env = |name| {
                std::env::var_os(name)
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            };
            let user = env("XDG_STATE_HOME")
                .or_else(|| env("HOME").map(|home| home.join(".local/state")))
                .map(|dir| dir.join("reputation-exporter"));
            // systemd may pass several, separated by colons; the first is ours.
            let systemd = std::env::var("STATE_DIRECTORY")
                .ok()
                .and_then(|dirs| dirs.split(':').next().map(PathBuf::from))
                .filter(|dir| !dir.as_os_str().is_empty());
            let system = Some(PathBuf::from("/var/lib/reputation-exporter")).filter(|d| d.is_dir());
            systemd.into_iter().chain(system).chain(user).collect()
        }
    };
    let mut tried = Vec::new();
    for dir in candidates {
        match writable(&dir) {
            Ok(()) => {
                info!(state = %dir.display(), "keeping the lists and reports in this directory; a restart starts from them");
                return Some(dir);
            }
            Err(error) => tried.push(format!("{}: {error}", dir.display())),
        }
    }
    warn!(
        tried = %tried.join("; "),
        "the state store is off: no directory can be written (set state.path, or --state.path); \
         a restart will fetch everything again"
    );
    None
}

/// Whether `dir` exists or can be made, and a file can be written in it.
fn writable(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(".write-probe");
    File::create(&probe)?;
    std::fs::remove_file(&probe)
}
