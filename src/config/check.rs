//! Mistakes in the layers, found before they are deserialized and said in the user's words:
//! an unknown section or key is named as it was written (`api.timout` in the file, or the
//! variable `REPUTATION_EXPORTER_API__TIMOUT`), with the closest known one suggested; a wrong
//! value names its file or variable and its key.

use std::path::Path;

use figment::Profile;
use figment::error::Kind;
use figment::value::{Dict, Value};

use super::cli::FLAGS;
use super::env::{ENV_PREFIX, variable};
use super::{Problem, settings};

/// The known name closest to `wrong`, when one is close enough to be what was meant.
fn closest<'a>(wrong: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|name| (strsim::damerau_levenshtein(wrong, name), name))
        .filter(|(distance, name)| *distance <= 3.max(name.len() / 3))
        .min()
        .map(|(_, name)| name)
}

/// The fields a settings struct accepts, as its derived `Deserialize` names them: the tree is
/// declared once, by the structs.
fn fields_of<'de, T: serde::Deserialize<'de>>() -> &'static [&'static str] {
    serde_aux::serde_introspection::serde_introspect::<T>()
}

/// The keys of one section of the settings tree (those of `[api]` for each
/// `[accounts.NAME]`); `None` for a name that is no section.
pub(super) fn keys_of(section: &str) -> Option<&'static [&'static str]> {
    Some(match section {
        "api" => fields_of::<settings::ApiSettings>(),
        "poll" => fields_of::<settings::PollSettings>(),
        "metrics" => fields_of::<settings::MetricsSettings>(),
        "backoff" => fields_of::<settings::BackoffSettings>(),
        "asset_reports" => fields_of::<settings::AssetReportSettings>(),
        "web" => fields_of::<settings::WebSettings>(),
        "log" => fields_of::<settings::LogSettings>(),
        "state" => fields_of::<settings::StateSettings>(),
        _ => return None,
    })
}

/// Every section of the settings tree, `accounts` included.
pub(super) fn sections() -> impl Iterator<Item = &'static str> {
    fields_of::<settings::Settings>().iter().copied()
}

/// The keys of each `[[blacklists]]` entry.
fn blacklist_keys() -> &'static [&'static str] {
    fields_of::<crate::blacklists::Entry>()
}

/// The keys of each `[accounts.NAME]`: those of `[api]`.
fn account_keys() -> &'static [&'static str] {
    keys_of("api").unwrap_or_default()
}

fn did_you_mean(suggestion: Option<String>) -> String {
    suggestion.map_or(String::new(), |s| format!("; did you mean `{s}`?"))
}

/// Where a layer writes its keys: the TOML file, or the environment.
#[derive(Debug, Clone, Copy)]
pub(super) enum Layer {
    /// The TOML file.
    File,
    /// `REPUTATION_EXPORTER_<SECTION>__<KEY>` variables.
    Env,
}

impl Layer {
    /// How the key at `path` is set in this layer, for a suggestion: `api.timeout` (a section
    /// alone `[api]`) in the file, `REPUTATION_EXPORTER_API__TIMEOUT` in the environment.
    fn spell(self, path: &[&str]) -> String {
        match (self, path) {
            (Layer::File, [section]) => format!("[{section}]"),
            (Layer::File, path) => path.join("."),
            (Layer::Env, path) => variable(path),
        }
    }
}

/// One key as a layer wrote it.
#[derive(Debug)]
pub(super) struct Written {
    layer: Layer,
    /// Where it was written, for the message: the file, or the variable's name.
    at: String,
    /// Its path: `[section]`, `[section, key]`, `[accounts, NAME]` or `[accounts, NAME, key]`.
    path: Vec<String>,
    /// Whether it holds a table.
    table: bool,
}

/// The sections and keys of the TOML file at `file`, whose top level is `dict`.
pub(super) fn in_file(file: &Path, dict: &Dict) -> Vec<Written> {
    let at = file.display().to_string();
    let mut written = Vec::new();
    let mut add = |path: Vec<&String>, value: &Value| {
        written.push(Written {
            layer: Layer::File,
            at: at.clone(),
            path: path.into_iter().cloned().collect(),
            table: matches!(value, Value::Dict(..)),
        });
    };
    for (section, value) in dict {
        add(vec![section], value);
        if let (true, Value::Array(_, entries)) = (section == "blacklists", value) {
            for entry in entries {
                if let Value::Dict(_, keys) = entry {
                    for (key, value) in keys {
                        add(vec![section, key], value);
                    }
                }
            }
            continue;
        }
        let Value::Dict(_, keys) = value else {
            continue;
        };
        for (key, value) in keys {
            add(vec![section, key], value);
            if let (true, Value::Dict(_, keys)) = (section == "accounts", value) {
                for (inner, value) in keys {
                    add(vec![section, key, inner], value);
                }
            }
        }
    }
    written
}

/// The sections and keys of the `REPUTATION_EXPORTER_<SECTION>__<KEY>` variables (an account's
/// as `..._ACCOUNTS__<NAME>__<KEY>`); other names with the prefix are not configuration, not
/// ours to judge.
pub(super) fn in_env(vars: &[(String, String)]) -> Vec<Written> {
    vars.iter()
        .filter_map(|(name, _)| {
            let lower = name.strip_prefix(ENV_PREFIX)?.to_ascii_lowercase();
            let (section, key) = lower.split_once("__")?;
            let mut path = vec![section.to_owned()];
            match (section, key.split_once("__")) {
                ("accounts", Some((account, key))) => path.extend([account.into(), key.into()]),
                _ => path.push(key.to_owned()),
            }
            Some(Written {
                layer: Layer::Env,
                at: name.clone(),
                path,
                table: false,
            })
        })
        .collect()
}

/// The unknown sections and keys among what layers wrote, each named as it was written, with
/// the closest known one suggested.
pub(super) fn unknown(written: Vec<Written>) -> Vec<Problem> {
    let mut problems: Vec<Problem> = Vec::new();
    for Written {
        layer,
        at,
        path,
        table,
    } in &written
    {
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        let unknown_key = |known: &[&str], key: &str| {
            let suggestion = closest(key, known.iter().copied()).map(|k| {
                let mut suggested = path.clone();
                *suggested.last_mut().unwrap_or(&mut "") = k;
                layer.spell(&suggested)
            });
            let dotted = path.join(".");
            Problem::new(
                dotted.clone(),
                format!("{at}: unknown key `{dotted}`{}", did_you_mean(suggestion)),
            )
        };
        let problem = match (path.as_slice(), table, layer) {
            (["accounts"], false, _) => Problem::new(
                "accounts",
                format!("{at}: `accounts` must be tables, `[accounts.NAME]`"),
            ),
            (["accounts", name], false, Layer::File) => Problem::new(
                format!("accounts.{name}"),
                format!("{at}: `accounts.{name}` must be a table, `[accounts.{name}]`"),
            ),
            (["accounts", _], false, Layer::Env) => Problem::new(
                "accounts",
                format!(
                    "{at}: an account's key is set as {}",
                    variable(&["accounts", "<NAME>", "<KEY>"])
                ),
            ),
            (["accounts", _, key], ..) if !account_keys().contains(key) => {
                unknown_key(account_keys(), key)
            }
            (["accounts", ..], ..) => continue,
            (["blacklists", ..], _, Layer::Env) => Problem::new(
                "blacklists",
                format!(
                    "{at}: blacklists are written in the configuration file, as [[blacklists]]"
                ),
            ),
            (["blacklists", key], ..) if !blacklist_keys().contains(key) => {
                unknown_key(blacklist_keys(), key)
            }
            (["blacklists", ..], ..) => continue,
            ([section, rest @ ..], ..) if keys_of(section).is_none() => {
                // The file is told the section, the environment the whole variable.
                let suggestion = closest(section, sections()).map(|s| match layer {
                    Layer::File => layer.spell(&[s]),
                    Layer::Env => layer.spell(&[&[s], rest].concat()),
                });
                let shown = match layer {
                    Layer::File => format!("[{section}]"),
                    Layer::Env => (*section).to_owned(),
                };
                Problem::new(
                    *section,
                    format!(
                        "{at}: unknown section `{shown}`{}",
                        did_you_mean(suggestion)
                    ),
                )
            }
            ([section], false, _) => Problem::new(
                *section,
                format!("{at}: `{section}` must be a section (`[{section}]`), not a value"),
            ),
            ([section, key], ..) => match keys_of(section) {
                Some(known) if !known.contains(key) => unknown_key(known, key),
                _ => continue,
            },
            _ => continue,
        };
        // A file's unknown section is said once, not again for each of its keys.
        if !problems.contains(&problem) {
            problems.push(problem);
        }
    }
    problems
}

/// A deserialization error of one value, said as `where: key: what is wrong`, where `where`
/// is the file or the variable the value came from. Never quotes the token.
pub(super) fn describe(errors: impl IntoIterator<Item = figment::Error>) -> Vec<Problem> {
    errors
        .into_iter()
        .filter(|e| !matches!(e.kind, Kind::UnknownField(..)))
        .map(|e| {
            let key = e.path.join(".");
            let message = if key == "api.token" {
                "must be a string".to_owned()
            } else {
                e.kind.to_string()
            };
            let origin = match e.metadata.as_ref() {
                Some(meta) => match &meta.source {
                    Some(figment::Source::File(file)) => format!("{}: `{key}`", file.display()),
                    Some(figment::Source::Code(_)) if flag(&key).is_some() => {
                        flag(&key).unwrap_or_default().to_owned()
                    }
                    _ if meta.name.contains("environment") && e.path.len() >= 2 => {
                        variable(&e.path)
                    }
                    _ => format!("`{key}`"),
                },
                None if key.is_empty() => return Problem::new(key, message),
                None => format!("`{key}`"),
            };
            Problem::new(key, format!("{origin}: {message}"))
        })
        .collect()
}

/// The flag that sets `key`, if one does.
fn flag(key: &str) -> Option<&'static str> {
    FLAGS.iter().find(|(k, _)| *k == key).map(|(_, flag)| *flag)
}

/// Every value of `dict` with its path, tables entered: `api.timeout`, `accounts.eu.token`.
/// An empty table is a value of its own, so that `[accounts.eu]` with no keys is still read.
pub(super) fn leaves(dict: &Dict) -> Vec<(Vec<String>, Value)> {
    fn walk(dict: &Dict, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
        for (key, value) in dict {
            path.push(key.clone());
            match value {
                Value::Dict(_, inner) if !inner.is_empty() => walk(inner, path, out),
                value => out.push((path.clone(), value.clone())),
            }
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(dict, &mut Vec::new(), &mut out);
    out
}

/// A table holding only `value`, at `path`.
pub(super) fn nested(path: &[String], value: Value) -> Dict {
    let mut dict = Dict::new();
    insert(&mut dict, path, value);
    dict
}

/// Puts `value` at `path` in `dict`, making the tables on the way.
pub(super) fn insert(dict: &mut Dict, path: &[String], value: Value) {
    match path {
        [] => {}
        [last] => {
            dict.insert(last.clone(), value);
        }
        [first, rest @ ..] => {
            let inner = dict
                .entry(first.clone())
                .or_insert_with(|| Value::from(Dict::new()));
            if let Value::Dict(_, inner) = inner {
                insert(inner, rest, value);
            }
        }
    }
}

/// The default profile's data of a provider, the only profile the exporter uses.
pub(super) fn top_level(data: figment::value::Map<Profile, Dict>) -> Dict {
    data.into_iter()
        .filter(|(profile, _)| *profile == Profile::Default || *profile == Profile::Global)
        .flat_map(|(_, dict)| dict)
        .collect()
}
