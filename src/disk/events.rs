//! What the replica remembers to tell events, kept beside the reports, so that a warm restart
//! keeps a rise no report named in time (and the listings a late report named for it), and the
//! score drops and SNDS blocks its lists showed.

use redb::ReadableDatabase as _;

use super::{Disk, META, database};

/// Its key in the store's `meta` table.
const KEY: &str = "events";

impl Disk {
    /// Keeps `bytes`, what the replica remembers to tell events.
    pub fn save_events(&self, bytes: &[u8]) {
        let write = || -> Result<(), redb::Error> {
            let txn = self.db.begin_write()?;
            txn.open_table(META)?.insert(KEY, bytes)?;
            txn.commit()?;
            Ok(())
        };
        self.done("events", write().map_err(|e| database(&self.db_path(), e)));
    }

    /// What the replica remembered to tell events, when the store kept it.
    pub fn read_events(&self) -> Option<Vec<u8>> {
        let read = self.db.begin_read().ok()?;
        let table = read.open_table(META).ok()?;
        let value = table.get(KEY).ok()??;
        Some(value.value().to_vec())
    }
}
