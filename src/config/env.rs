//! Environment variables as a configuration layer: `REPUTATION_EXPORTER_<SECTION>__<KEY>`.

use figment::providers::Env;
use figment::value::{Dict, Map, Value};
use figment::{Metadata, Profile, Provider};

/// Prefix of the environment variables read as configuration.
pub const ENV_PREFIX: &str = "REPUTATION_EXPORTER_";

/// The variable that sets the key at `path`: `["api", "timeout"]` is
/// `REPUTATION_EXPORTER_API__TIMEOUT`.
pub(super) fn variable<S: AsRef<str>>(path: &[S]) -> String {
    let parts: Vec<String> = path
        .iter()
        .map(|part| part.as_ref().to_ascii_uppercase())
        .collect();
    format!("{ENV_PREFIX}{}", parts.join("__"))
}

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
        let mut top = Dict::new();
        for (name, value) in &self.vars {
            let key = name[ENV_PREFIX.len()..].to_ascii_lowercase();
            // Only `<SECTION>__<KEY>` names are configuration; others with the prefix are not
            // ours to judge.
            let path: Vec<&str> = key.split("__").collect();
            if path.len() < 2 || path.iter().any(|part| part.is_empty()) {
                continue;
            }
            // Built as plain values, so that figment tags each with this provider: an error
            // then names the variable.
            let mut dict = &mut top;
            for part in &path[..path.len() - 1] {
                let entry = dict
                    .entry((*part).to_owned())
                    .or_insert_with(|| Value::from(Dict::new()));
                if !matches!(entry, Value::Dict(..)) {
                    *entry = Value::from(Dict::new());
                }
                let Value::Dict(_, inner) = entry else {
                    unreachable!("made a dictionary just above")
                };
                dict = inner;
            }
            dict.insert(path[path.len() - 1].to_owned(), Value::from(value.clone()));
        }
        Ok(Profile::Default.collect(top))
    }
}
