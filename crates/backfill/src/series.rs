//! What both destinations write, the file and remote write: the three families, the labels of
//! each series, and the count of what was written.

use super::history::{History, Series};
use crate::FlagError;
use reputation_exporter::exposition::assets::{
    AssetFamily, BLACKLIST_LISTED, BLACKLISTINGS, SENDERSCORE,
};
use reputation_exporter::vocabulary::Kind;

/// The three families written, in order; [`Series::family`] indexes it.
pub(crate) const FAMILIES: [AssetFamily; 3] = [SENDERSCORE, BLACKLISTINGS, BLACKLIST_LISTED];

/// A constant label from `--label NAME=VALUE`, checked.
pub(crate) fn parse_label(text: &str) -> Result<(String, String), FlagError> {
    let flag = || format!("--label {text}");
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| FlagError::new(flag(), "write it as NAME=VALUE, e.g. job=reputation"))?;
    let valid = name
        .chars()
        .enumerate()
        .all(|(i, c)| c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()));
    if name.is_empty() || !valid || name.starts_with("__") {
        return Err(FlagError::new(
            flag(),
            format!("`{name}` is not a label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)"),
        ));
    }
    let mut own = ["kind", "asset"]
        .into_iter()
        .chain(FAMILIES.iter().filter_map(|f| f.label));
    if own.any(|label| label == name) {
        return Err(FlagError::new(
            flag(),
            format!("`{name}` is a label of the series themselves"),
        ));
    }
    Ok((name.to_owned(), value.to_owned()))
}

/// The labels of one series of `asset`, without its name: the constant labels (`--label`),
/// then `kind`, `asset` and the family's own label, as the live exposition orders them.
pub(crate) fn labels<'a>(
    constant: &'a [(String, String)],
    kind: Kind,
    asset: &'a str,
    series: &Series<'a>,
) -> Vec<(&'a str, &'a str)> {
    let mut labels: Vec<(&str, &str)> = constant
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    labels.push(("kind", kind.label()));
    labels.push(("asset", asset));
    if let (Some(name), Some(value)) = (FAMILIES[series.family].label, series.blacklist) {
        labels.push((name, value));
    }
    labels
}

/// What was written, for the summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    /// Samples per family, in [`FAMILIES`]' order.
    pub samples: [u64; 3],
    /// Oldest and newest sample time.
    pub span: Option<(i64, i64)>,
}

impl Written {
    /// Counts one asset's history.
    pub fn add(&mut self, history: &History) {
        for series in history.series() {
            self.samples[series.family] += series.samples.len() as u64;
        }
        if let Some((oldest, newest)) = history.span() {
            self.span = Some(match self.span {
                None => (oldest, newest),
                Some((o, n)) => (o.min(oldest), n.max(newest)),
            });
        }
    }

    /// Every sample written.
    pub fn total(&self) -> u64 {
        self.samples.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_checked() {
        assert_eq!(
            parse_label("job=reputation"),
            Ok(("job".into(), "reputation".into()))
        );
        assert_eq!(
            parse_label("instance=exporter:9525"),
            Ok(("instance".into(), "exporter:9525".into()))
        );
        for bad in [
            "job",
            "1job=x",
            "__name__=x",
            "kind=x",
            "blacklist=x",
            "a-b=x",
            "=x",
        ] {
            assert!(parse_label(bad).is_err(), "{bad}");
        }
    }
}
