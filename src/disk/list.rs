//! The stored lists: each list's body written beside the stored one while a poll streams it
//! in ([`ListFile`]), put in its place once the poll is good, and read back at start
//! ([`read_list`]) as the poller reads a list from the API.

use std::fs::File;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use redb::ReadableTable as _;
use tracing::warn;

use super::{Body, Disk, DiskError, ListMeta, META, StoredList, database, list_key};
use crate::model::{Asset, AssetDecoder, AssetSink, ListMemory, Remembering};
use crate::snapshot::{ListBuilder, ListPart};
use crate::upstream::BodyDecoder as _;
use crate::vocabulary::Kind;

impl Disk {
    /// A file for the body of a `kind` list as it streams in (one per attempt); it replaces
    /// the stored one only when [`ListFile::commit`] says the list was taken.
    pub fn list_file(self: &Arc<Self>, kind: Kind) -> Option<ListFile> {
        static ATTEMPTS: AtomicU64 = AtomicU64::new(0);
        let path = self.list_path(kind);
        let attempt = ATTEMPTS.fetch_add(1, Ordering::Relaxed);
        let partial = path.with_extension(format!("json.partial-{attempt}"));
        match File::create(&partial) {
            Ok(file) => Some(ListFile {
                disk: self.clone(),
                kind,
                path,
                partial,
                file: Some(file),
                bytes: 0,
                crc: crc32fast::Hasher::new(),
            }),
            Err(error) => {
                self.failed("list", &partial, &error);
                None
            }
        }
    }
}

/// The body of a list being written beside the stored one.
#[derive(Debug)]
pub struct ListFile {
    disk: Arc<Disk>,
    kind: Kind,
    path: PathBuf,
    partial: PathBuf,
    /// `None` once a write failed: the rest is not written.
    file: Option<File>,
    bytes: u64,
    crc: crc32fast::Hasher,
}

impl ListFile {
    /// The next bytes of the body.
    pub fn write(&mut self, chunk: &[u8]) {
        let Some(file) = &mut self.file else {
            return;
        };
        if let Err(error) = file.write_all(chunk) {
            self.disk.failed("list", &self.partial, &error);
            self.file = None;
            return;
        }
        self.bytes += chunk.len() as u64;
        self.crc.update(chunk);
    }

    /// The list was taken: its body, fetched at `fetched` (Unix time), replaces the stored
    /// one: synced, its entry written (naming the stored body as the previous one), then
    /// renamed over it, so that a kill at any moment leaves a body its entry describes.
    pub fn commit(mut self, fetched: f64) {
        let result = self.record(fetched).and_then(|()| self.put_in_place());
        self.disk.done("list", result);
    }

    /// Syncs the body and writes its entry, the stored body becoming the previous one.
    pub(super) fn record(&mut self, fetched: f64) -> Result<(), DiskError> {
        let Some(file) = self.file.take() else {
            return Ok(());
        };
        file.sync_all().map_err(|error| DiskError::Io {
            path: self.partial.clone(),
            error,
        })?;
        drop(file);
        let body = Body {
            fetched,
            bytes: self.bytes,
            crc: self.crc.clone().finalize(),
        };
        let write = || -> Result<(), redb::Error> {
            let txn = self.disk.db.begin_write()?;
            {
                let mut meta = txn.open_table(META)?;
                let key = list_key(self.kind);
                let stored = meta
                    .get(key)?
                    .and_then(|value| postcard::from_bytes::<ListMeta>(value.value()).ok());
                // Only a body that is in place can be the previous one.
                let previous = stored.map(|s| s.body).filter(|_| self.path.exists());
                let value = postcard::to_allocvec(&ListMeta { body, previous }).unwrap_or_default();
                meta.insert(key, value.as_slice())?;
            }
            txn.commit()?;
            Ok(())
        };
        write().map_err(|e| database(&self.disk.db_path(), e))
    }

    /// Renames the recorded body over the stored one.
    fn put_in_place(&self) -> Result<(), DiskError> {
        std::fs::rename(&self.partial, &self.path).map_err(|error| DiskError::Io {
            path: self.path.clone(),
            error,
        })?;
        if let Ok(dir) = File::open(&self.disk.dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

impl Drop for ListFile {
    fn drop(&mut self) {
        // Not committed (the list failed or was refused): the stored body stays.
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.partial);
        }
    }
}

/// The list `stored` renders, read back as the poller reads a list from the API, into `shards`
/// shards; `None` (said once) when its body is not what was stored (another length or
/// CRC-32: a disk error, or a file changed under the exporter) or does not decode. With it,
/// what the list said of its assets' values, for the next list's missed changes.
pub fn read_list(
    stored: &StoredList,
    max_labels: usize,
    shards: usize,
) -> Option<(ListPart, ListMemory, f64)> {
    use std::io::Read as _;
    let mut file = match File::open(&stored.path) {
        Ok(file) => file,
        Err(error) => {
            warn!(store = %stored.path.display(), error = %error, "a stored list cannot be read; it is fetched again");
            return None;
        }
    };
    // Decoding and rendering side by side: this thread splits and decodes the body, a second
    // renders the assets into the list's samples as they come (a warm start waits for the
    // largest list, and each step takes about half of it).
    let (to_renderer, assets) = std::sync::mpsc::sync_channel::<Vec<Asset>>(4);
    let kind = stored.kind;
    let renderer = std::thread::spawn(move || {
        let mut builder = Remembering::new(ListBuilder::new(kind, shards), None);
        for batch in assets {
            batch.into_iter().for_each(|asset| builder.push(asset));
        }
        builder.finish()
    });
    let mut decoder = AssetDecoder::new(
        stored.kind,
        max_labels,
        Batches {
            batch: Vec::with_capacity(BATCH),
            to: to_renderer,
        },
    );
    let mut crc = crc32fast::Hasher::new();
    let mut bytes = 0u64;
    let mut chunk = vec![0; 1 << 20];
    let read = loop {
        match file.read(&mut chunk) {
            Ok(0) => break Ok(()),
            Ok(n) => {
                crc.update(&chunk[..n]);
                bytes += n as u64;
                if let Err(error) = decoder.feed(&chunk[..n]) {
                    break Err(error.to_string());
                }
            }
            Err(error) => break Err(error.to_string()),
        }
    };
    let crc = crc.finalize();
    let body = stored
        .bodies
        .iter()
        .find(|body| body.bytes == bytes && body.crc == crc);
    let decoded = read.and_then(|()| match body {
        Some(body) => decoder
            .finish()
            .map(|decoded| (decoded, body.fetched))
            .map_err(|e| e.to_string()),
        None => Err(format!(
            "{bytes} bytes, not the {} stored, or another CRC-32",
            stored.bodies.first().map_or(0, |body| body.bytes)
        )),
    });
    let decoded = decoded.map(|(decoded, fetched)| {
        let Batches { batch, to } = decoded.set;
        let _ = to.send(batch);
        fetched
    });
    // The sender is dropped (with the decoder, or above): the renderer ends.
    let builder = renderer.join();
    match decoded.and_then(|fetched| {
        builder
            .map(|(builder, memory)| (builder.finish(), memory, fetched))
            .map_err(|_| "rendering it failed".to_owned())
    }) {
        Ok(read) => Some(read),
        Err(why) => {
            warn!(store = %stored.path.display(), problem = %why, "a stored list is not what was stored; it is fetched again");
            None
        }
    }
}

/// Assets handed to [`read_list`]'s renderer this many at a time.
const BATCH: usize = 1024;

/// The decoder's sink in [`read_list`]: the assets, in order, to the renderer's thread.
struct Batches {
    batch: Vec<Asset>,
    to: std::sync::mpsc::SyncSender<Vec<Asset>>,
}

impl AssetSink for Batches {
    fn push(&mut self, asset: Asset) {
        self.batch.push(asset);
        if self.batch.len() == BATCH {
            let full = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
            // A renderer that ended has panicked: the join says so.
            let _ = self.to.send(full);
        }
    }
}
