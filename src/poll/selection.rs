//! Which assets this replica fetches reports for: `asset_reports.include`, `exclude` and
//! `replica` (its share of the reports; not to be mixed up with `metrics.shards`, which splits
//! the series a scrape serves).

use std::str::FromStr;

use crate::events::{Reporter, Reporters};
use crate::vocabulary::fnv1a;

/// `asset_reports.replica = "N/M"`: this is replica N of M, and fetches the reports of the
/// assets whose name hashes to `N-1` modulo `M` (1-based, as people count replicas).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replica {
    /// N, from 1 to `count`.
    pub index: u64,
    /// M, at least 1.
    pub count: u64,
}

/// A written `asset_reports.replica` that is not `N/M` with 1 <= N <= M.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not of the form N/M with 1 <= N <= M, e.g. 2/3")]
pub struct ReplicaError(String);

impl FromStr for Replica {
    type Err = ReplicaError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let wrong = || ReplicaError(text.to_owned());
        let (index, count) = text.trim().split_once('/').ok_or_else(wrong)?;
        let index: u64 = index.trim().parse().map_err(|_| wrong())?;
        let count: u64 = count.trim().parse().map_err(|_| wrong())?;
        if count == 0 || index == 0 || index > count {
            return Err(wrong());
        }
        Ok(Replica { index, count })
    }
}

/// Which assets this replica fetches reports for.
#[derive(Debug, Clone)]
pub struct Selection {
    include: Option<regex::Regex>,
    exclude: Option<regex::Regex>,
    replica: Replica,
}

/// Two selections are the same when their patterns are written the same.
impl PartialEq for Selection {
    fn eq(&self, other: &Self) -> bool {
        let pattern = |r: &Option<regex::Regex>| r.as_ref().map(|r| r.as_str().to_owned());
        pattern(&self.include) == pattern(&other.include)
            && pattern(&self.exclude) == pattern(&other.exclude)
            && self.replica == other.replica
    }
}

impl Selection {
    /// The assets whose name matches `include` (all when `None`), not `exclude`, and falls to
    /// `replica`.
    pub fn new(
        include: Option<regex::Regex>,
        exclude: Option<regex::Regex>,
        replica: Replica,
    ) -> Self {
        Selection {
            include,
            exclude,
            replica,
        }
    }

    /// Whether the asset named `name` is fetched by this replica.
    pub fn selects(&self, name: &str) -> bool {
        self.wants(name) && fnv1a(name.as_bytes()) % self.replica.count == self.replica.index - 1
    }

    /// Who reports on which asset, with reports on (`reporting`) or off: a rise of an asset
    /// another replica reports on is that replica's to tell.
    pub fn reporters(&self, reporting: bool) -> Reporters {
        let selection = self.clone();
        Reporters::new(move |_, name| match (reporting, selection.selects(name)) {
            (true, true) => Reporter::ThisReplica,
            (true, false) if selection.wants(name) => Reporter::AnotherReplica,
            _ => Reporter::Nobody,
        })
    }

    /// Whether the asset named `name` is fetched by one of the replicas: `include` and
    /// `exclude` let it through.
    pub fn wants(&self, name: &str) -> bool {
        self.include.as_ref().is_none_or(|r| r.is_match(name))
            && !self.exclude.as_ref().is_some_and(|r| r.is_match(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selection(include: Option<&str>, exclude: Option<&str>, replica: Replica) -> Selection {
        Selection {
            include: include.map(|r| regex::Regex::new(r).unwrap()),
            exclude: exclude.map(|r| regex::Regex::new(r).unwrap()),
            replica,
        }
    }

    #[test]
    fn include_and_exclude_filter_by_name() {
        let s = selection(
            Some(r"^192\.0\.2\."),
            Some(r"\.13$"),
            Replica { index: 1, count: 1 },
        );
        assert!(s.selects("192.0.2.1"));
        assert!(!s.selects("192.0.2.13"));
        assert!(!s.selects("198.51.100.1"));
    }

    #[test]
    fn three_replicas_cover_every_asset_exactly_once() {
        let replicas: Vec<Selection> = (1..=3)
            .map(|index| selection(None, None, Replica { index, count: 3 }))
            .collect();
        let mut sizes = [0; 3];
        for i in 0..3000 {
            let name = format!("192.0.{}.{}", i / 256, i % 256);
            let owners: Vec<usize> = (0..3).filter(|s| replicas[*s].selects(&name)).collect();
            assert_eq!(owners.len(), 1, "{name}");
            sizes[owners[0]] += 1;
        }
        assert!(sizes.iter().all(|n| *n > 800), "{sizes:?}");
    }
}
