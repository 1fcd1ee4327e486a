//! Following files that change under a running exporter (a rotated token, renewed
//! certificates): [`Watched`] holds the value read from a set of files and reads them again when
//! one of them changes. A leaf: it imports nothing of the crate.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What tells that a file changed without reading it: modification time, size and inode (a
/// Kubernetes secret or an atomic rename swaps the inode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStamp {
    modified: Option<std::time::SystemTime>,
    len: u64,
    inode: u64,
}

impl FileStamp {
    /// The stamp of the file `path` names now (following links), if it can be read.
    pub fn of(path: &Path) -> Option<FileStamp> {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some(FileStamp {
            modified: meta.modified().ok(),
            len: meta.len(),
            inode,
        })
    }
}

/// Files and their stamps when they were read.
pub type Stamps = Vec<(PathBuf, Option<FileStamp>)>;

/// The stamps of `files` now.
pub fn stamps(files: &[PathBuf]) -> Stamps {
    files
        .iter()
        .map(|file| (file.clone(), FileStamp::of(file)))
        .collect()
}

/// What [`Watched::check`] found.
#[derive(Debug)]
pub enum Change<E> {
    /// No file changed (or it is too early to look again).
    None,
    /// A file changed and the new value is in use.
    Reloaded,
    /// A file changed but the new content was refused; the last good value stays.
    Refused(E),
}

/// A value read from files, read again when one of them changes.
#[derive(Debug)]
pub struct Watched<T> {
    /// A std mutex: held for a few `stat` calls, and for a read only when a file changed;
    /// never across an `.await`.
    state: Mutex<State<T>>,
    /// Files are looked at no more often than this.
    recheck: Duration,
}

#[derive(Debug)]
struct State<T> {
    value: Arc<T>,
    stamps: Stamps,
    checked: Option<Instant>,
}

impl<T> Watched<T> {
    /// `value`, read from files whose stamps before the read were `stamps`; looked at again at
    /// most every `recheck`.
    pub fn new(value: T, stamps: Stamps, recheck: Duration) -> Self {
        Watched {
            state: Mutex::new(State {
                value: Arc::new(value),
                stamps,
                checked: None,
            }),
            recheck,
        }
    }

    /// The value in use, without looking at the files.
    pub fn current(&self) -> Arc<T> {
        self.lock().value.clone()
    }

    /// Looks at the files and, when one changed, calls `reload`, which reads them again and
    /// returns the new value with the files it was read from; a refusal keeps the last good
    /// value and is not retried until a file changes again.
    pub fn check<E>(
        &self,
        reload: impl FnOnce(&T) -> Result<(T, Vec<PathBuf>), E>,
    ) -> (Arc<T>, Change<E>) {
        let mut state = self.lock();
        let now = Instant::now();
        if state.checked.is_some_and(|at| now - at < self.recheck) {
            return (state.value.clone(), Change::None);
        }
        state.checked = Some(now);
        let files: Vec<PathBuf> = state.stamps.iter().map(|(f, _)| f.clone()).collect();
        // Stamped before the read: a change during the read is seen next time.
        let before = stamps(&files);
        if before == state.stamps {
            return (state.value.clone(), Change::None);
        }
        let change = match reload(&state.value) {
            Ok((value, files)) => {
                state.stamps = files
                    .iter()
                    .map(|file| {
                        before
                            .iter()
                            .find(|(known, _)| known == file)
                            .cloned()
                            .unwrap_or_else(|| (file.clone(), FileStamp::of(file)))
                    })
                    .collect();
                state.value = Arc::new(value);
                Change::Reloaded
            }
            Err(error) => {
                state.stamps = before;
                Change::Refused(error)
            }
        };
        (state.value.clone(), change)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_file_is_read_again_and_a_refused_change_keeps_the_last_good_value() {
        let dir = std::env::temp_dir().join(format!("rexp-watch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("value");
        std::fs::write(&path, "one").unwrap();
        let read = |_: &String| -> Result<(String, Vec<PathBuf>), String> {
            let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
            if text.is_empty() {
                return Err("empty".into());
            }
            Ok((text, vec![path.clone()]))
        };
        let watched = Watched::new(
            "one".to_owned(),
            stamps(std::slice::from_ref(&path)),
            Duration::ZERO,
        );

        let (value, change) = watched.check(read);
        assert_eq!(
            (value.as_str(), matches!(change, Change::None)),
            ("one", true)
        );

        std::fs::write(&path, "second").unwrap();
        let (value, change) = watched.check(read);
        assert_eq!(value.as_str(), "second");
        assert!(matches!(change, Change::Reloaded));

        std::fs::write(&path, "").unwrap();
        let (value, change) = watched.check(read);
        assert_eq!(value.as_str(), "second");
        assert!(matches!(change, Change::Refused(ref e) if e == "empty"));
        let (_, change) = watched.check(read);
        assert!(matches!(change, Change::None), "a refusal is not retried");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
