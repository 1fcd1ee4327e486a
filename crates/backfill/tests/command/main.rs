//! Black-box tests of `reputation-exporter-backfill` against the simulated API: the OpenMetrics
//! file, and remote write into a receiver the test plays.

mod backfill;
mod remote_write;

use std::process::Command;

/// The backfill binary, with no `REPUTATION_EXPORTER_*` variable inherited from the test's
/// environment.
pub fn backfill_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_reputation-exporter-backfill"));
    for (key, _) in std::env::vars() {
        if key.starts_with("REPUTATION_EXPORTER_") {
            command.env_remove(key);
        }
    }
    command
}
