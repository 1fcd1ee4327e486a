//! Mistakes in the layers, found before they are deserialized and said in the user's words:
//! an unknown section or key is named as it was written (`api.timout` in the file, or the
//! variable `REPUTATION_EXPORTER_API__TIMOUT`), with the closest known one suggested; a wrong
//! value names its file or variable and its key.

use std::path::Path;

use figment::error::Kind;
use figment::providers::Serialized;
use figment::value::{Dict, Value};
use figment::{Figment, Profile};

use super::env::ENV_PREFIX;
use super::{Problem, settings};

fn problem(key: impl Into<String>, text: String) -> Problem {
    Problem {
        key: key.into(),
        text,
    }
}

/// The known name closest to `wrong`, when one is close enough to be what was meant.
fn closest<'a>(wrong: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|name| (strsim::damerau_levenshtein(wrong, name), name))
        .filter(|(distance, name)| *distance <= 3.max(name.len() / 3))
        .min()
        .map(|(_, name)| name)
}

/// The fields a settings struct accepts, as its `deny_unknown_fields` knows them: read from the
/// error it gives for a key no struct has, so that the tree is declared once, by the structs.
fn fields_of<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    let mut probe = Dict::new();
    probe.insert("\u{1}".into(), Value::from(0));
    let Err(errors) = Figment::from(Serialized::defaults(probe)).extract::<T>() else {
        return &[];
    };
    errors
        .into_iter()
        .find_map(|e| match e.kind {
            Kind::UnknownField(_, expected) => Some(expected),
            _ => None,
        })
        .unwrap_or(&[])
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
        _ => return None,
    })
}

/// Every section of the settings tree, `accounts` included.
pub(super) fn sections() -> impl Iterator<Item = &'static str> {
    fields_of::<settings::Settings>().iter().copied()
}

/// The keys of each `[accounts.NAME]`: those of `[api]`.
fn account_keys() -> &'static [&'static str] {
    keys_of("api").unwrap_or_default()
}

fn did_you_mean(suggestion: Option<String>) -> String {
    suggestion.map_or(String::new(), |s| format!("; did you mean `{s}`?"))
}

/// Unknown sections and keys of the TOML file at `path`, whose top level is `dict`.
pub(super) fn unknown_in_file(path: &Path, dict: &Dict) -> Vec<Problem> {
    let file = path.display();
    let mut problems = Vec::new();
    for (section, value) in dict {
        if section == "accounts" {
            let Value::Dict(_, accounts) = value else {
                problems.push(problem(
                    "accounts",
                    format!("{file}: `accounts` must be tables, `[accounts.NAME]`"),
                ));
                continue;
            };
            for (name, account) in accounts {
                let Value::Dict(_, keys) = account else {
                    problems.push(problem(
                        format!("accounts.{name}"),
                        format!("{file}: `accounts.{name}` must be a table, `[accounts.{name}]`"),
                    ));
                    continue;
                };
                for key in keys.keys() {
                    if !account_keys().contains(&key.as_str()) {
                        let suggestion = closest(key, account_keys().iter().copied())
                            .map(|k| format!("accounts.{name}.{k}"));
                        problems.push(problem(
                            format!("accounts.{name}.{key}"),
                            format!(
                                "{file}: unknown key `accounts.{name}.{key}`{}",
                                did_you_mean(suggestion)
                            ),
                        ));
                    }
                }
            }
            continue;
        }
        let Some(known) = keys_of(section) else {
            let suggestion = closest(section, sections()).map(|s| format!("[{s}]"));
            problems.push(problem(
                section.as_str(),
                format!(
                    "{file}: unknown section `[{section}]`{}",
                    did_you_mean(suggestion)
                ),
            ));
            continue;
        };
        let Value::Dict(_, keys) = value else {
            problems.push(problem(
                section.as_str(),
                format!("{file}: `{section}` must be a section (`[{section}]`), not a value"),
            ));
            continue;
        };
        for key in keys.keys() {
            if !known.contains(&key.as_str()) {
                let suggestion =
                    closest(key, known.iter().copied()).map(|k| format!("{section}.{k}"));
                problems.push(problem(
                    format!("{section}.{key}"),
                    format!(
                        "{file}: unknown key `{section}.{key}`{}",
                        did_you_mean(suggestion)
                    ),
                ));
            }
        }
    }
    problems
}

/// The variable that sets `section.key`.
pub(super) fn variable(section: &str, key: &str) -> String {
    format!(
        "{ENV_PREFIX}{}__{}",
        section.to_ascii_uppercase(),
        key.to_ascii_uppercase()
    )
}

/// Unknown sections and keys among the `REPUTATION_EXPORTER_<SECTION>__<KEY>` variables.
pub(super) fn unknown_in_env(vars: &[(String, String)]) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (name, _) in vars {
        let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        let lower = rest.to_ascii_lowercase();
        let Some((section, key)) = lower.split_once("__") else {
            // Not `<SECTION>__<KEY>`: not configuration, not ours to judge.
            continue;
        };
        if section == "accounts" {
            // ACCOUNTS__<NAME>__<KEY>.
            let Some((account, key)) = key.split_once("__") else {
                problems.push(problem(
                    "accounts",
                    format!(
                        "{name}: an account's key is set as {ENV_PREFIX}ACCOUNTS__<NAME>__<KEY>"
                    ),
                ));
                continue;
            };
            if !account_keys().contains(&key) {
                let suggestion = closest(key, account_keys().iter().copied()).map(|k| {
                    format!(
                        "{ENV_PREFIX}ACCOUNTS__{}__{}",
                        account.to_ascii_uppercase(),
                        k.to_ascii_uppercase()
                    )
                });
                problems.push(problem(
                    format!("accounts.{account}.{key}"),
                    format!(
                        "{name}: unknown key `accounts.{account}.{key}`{}",
                        did_you_mean(suggestion)
                    ),
                ));
            }
            continue;
        }
        let Some(known) = keys_of(section) else {
            let suggestion = closest(section, sections()).map(|s| {
                format!(
                    "{ENV_PREFIX}{}__{}",
                    s.to_ascii_uppercase(),
                    key.to_ascii_uppercase()
                )
            });
            problems.push(problem(
                section,
                format!(
                    "{name}: unknown section `{section}`{}",
                    did_you_mean(suggestion)
                ),
            ));
            continue;
        };
        if !known.contains(&key) {
            let suggestion = closest(key, known.iter().copied()).map(|k| variable(section, k));
            problems.push(problem(
                format!("{section}.{key}"),
                format!(
                    "{name}: unknown key `{section}.{key}`{}",
                    did_you_mean(suggestion)
                ),
            ));
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
                    _ if meta.name.contains("environment") && e.path.len() >= 2 => format!(
                        "{ENV_PREFIX}{}",
                        e.path
                            .iter()
                            .map(|p| p.to_ascii_uppercase())
                            .collect::<Vec<_>>()
                            .join("__")
                    ),
                    _ => format!("`{key}`"),
                },
                None if key.is_empty() => return problem(key, message),
                None => format!("`{key}`"),
            };
            problem(key, format!("{origin}: {message}"))
        })
        .collect()
}

/// The flag that sets `key`, if one does.
fn flag(key: &str) -> Option<&'static str> {
    match key {
        "web.listen_address" => Some("--web.listen-address"),
        "web.telemetry_path" => Some("--web.telemetry-path"),
        "web.config_file" => Some("--web.config.file"),
        "log.level" => Some("--log.level"),
        "log.format" => Some("--log.format"),
        _ => None,
    }
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
