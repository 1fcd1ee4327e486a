//! What a reload does: for each account, whether it is rebuilt or takes the new shared
//! settings over; for the process, which settings wait for a restart. Every field is named, so
//! a new setting does not compile until someone decides which it is.

use super::{AccountConfig, Config, LogConfig, WebConfig};

impl AccountConfig {
    /// What a reload to `new` does to this account: `None` when `new` is another account or
    /// polls other endpoints (another source, token, timeout or body cap, or reports turned on
    /// or off) or shards its series otherwise (`metrics.shards`), which only a new account can
    /// apply; otherwise the shared settings (`[poll]`, `[backoff]`, `[metrics]`,
    /// `[asset_reports]`) that differ, by key, which the running account takes over (none: it
    /// is kept as it is).
    ///
    /// Every field is named here, so a new one does not compile until it is sorted into one
    /// of the two; what only a restart of the process applies is [`Config::restart_only`].
    pub fn shared_changes(&self, new: &AccountConfig) -> Option<Vec<&'static str>> {
        let AccountConfig {
            name,
            source,
            timeout,
            max_body_bytes,
            retry,
            poll_interval,
            max_age,
            max_labels,
            shards,
            reports,
            blacklists,
        } = self;
        // Another account, or one that polls or shards otherwise: built anew.
        let same_account = *name == new.name
            && *source == new.source
            && *timeout == new.timeout
            && *max_body_bytes == new.max_body_bytes
            && reports.scope == new.reports.scope
            && *shards == new.shards;
        if !same_account {
            return None;
        }
        // Taken over by the running account (the report settings only while reports are on).
        let changes = [
            (*poll_interval != new.poll_interval, "poll.interval"),
            (*retry != new.retry, "backoff"),
            (*max_age != new.max_age, "metrics.max_age"),
            (
                *max_labels != new.max_labels,
                "metrics.max_labels_per_asset",
            ),
            (*blacklists != new.blacklists, "blacklists"),
        ];
        let changed = changes
            .into_iter()
            .filter_map(|(changed, key)| changed.then_some(key));
        Some(changed.chain(reports.changed_keys(&new.reports)).collect())
    }
}

impl Config {
    /// The settings `new` changes that a reload cannot apply to a running process: they wait
    /// for the next restart. Every process-wide field is named here, so a new one does not
    /// compile until someone decides; the accounts' own are [`AccountConfig::shared_changes`].
    pub fn restart_only(&self, new: &Config) -> Vec<&'static str> {
        let Config {
            accounts: _,
            web:
                WebConfig {
                    listen_addresses,
                    systemd_socket,
                    telemetry_path,
                    config_file,
                },
            log: LogConfig { level, format },
            state,
            warnings: _,
        } = self;
        let changes = [
            (
                *listen_addresses != new.web.listen_addresses,
                "web.listen_address",
            ),
            (
                *systemd_socket != new.web.systemd_socket,
                "web.systemd_socket",
            ),
            (
                *telemetry_path != new.web.telemetry_path,
                "web.telemetry_path",
            ),
            // The file's content is watched and reloaded on its own; its path is not.
            (
                config_file.path() != new.web.config_file.path(),
                "web.config_file",
            ),
            (*state != new.state, "state"),
            (*level != new.log.level || *format != new.log.format, "log"),
        ];
        changes
            .into_iter()
            .filter_map(|(changed, key)| changed.then_some(key))
            .collect()
    }
}
