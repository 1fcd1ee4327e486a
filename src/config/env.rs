//! Environment variables as a configuration layer: `REPUTATION_EXPORTER_<SECTION>__<KEY>`.

use figment::providers::{Env, Serialized};
use figment::value::{Dict, Map};
use figment::{Figment, Metadata, Profile, Provider};

/// Prefix of the environment variables read as configuration.
pub const ENV_PREFIX: &str = "REPUTATION_EXPORTER_";

/// Environment variables as configuration, every value kept as the string it is.
///
/// figment's own `Env` parses values as TOML-ish data, so a token such as `0123` or `true`
/// would change type or value; here every string key stays a string, and the few typed keys
/// accept their textual form through `parse::lenient`.
pub(super) struct RawEnv {
    env: Env,
    vars: Vec<(String, String)>,
}

impl RawEnv {
    pub(super) fn new(vars: impl IntoIterator<Item = (String, String)>) -> Self {
        RawEnv {
            env: Env::prefixed(ENV_PREFIX).split("__"),
            vars: vars
                .into_iter()
                .filter(|(k, _)| k.starts_with(ENV_PREFIX))
                .collect(),
        }
    }
}

impl Provider for RawEnv {
    fn metadata(&self) -> Metadata {
        self.env.metadata()
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        let mut merged = Figment::new();
        for (name, value) in &self.vars {
            let key = name[ENV_PREFIX.len()..]
                .to_ascii_lowercase()
                .replace("__", ".");
            // Only `<SECTION>__<KEY>` names are configuration; others with the prefix are not
            // ours to judge.
            if !key.contains('.') || key.split('.').any(str::is_empty) {
                continue;
            }
            merged = merged.merge(Serialized::default(&key, value));
        }
        merged.data()
    }
}
