//! Whether the exporter is ready to be scraped: the one answer of `/-/ready`, the landing
//! page and `--once`, decided by [`Accounts::readiness`].

use super::{Account, Accounts};

impl Accounts {
    /// Whether the exporter is ready to be scraped, the one answer of `/-/ready`, the landing
    /// page and `--once`: the one account once a list poll has succeeded; several once every
    /// account's first poll has ended, whatever its outcome, so that one account down does not
    /// hold the others back; or `latched`, ready before (a reload never takes a serving
    /// exporter out of its load balancer). Both are latched where the polls end (the latest
    /// snapshot, its cycle count), so this never goes back.
    pub fn readiness(&self, latched: bool) -> Readiness {
        match self.single() {
            _ if latched => Readiness::Ready,
            Some(one) => one.readiness(),
            None if self.polled() => Readiness::Ready,
            None => Readiness::NotEveryAccount,
        }
    }
}

impl Account {
    /// Whether this account alone is ready to be scraped: once a list poll has succeeded.
    pub fn readiness(&self) -> Readiness {
        if self.latest.current().ready {
            Readiness::Ready
        } else {
            Readiness::NoList
        }
    }
}

/// Whether the exporter is ready to be scraped, and if not, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Ready.
    Ready,
    /// The one account has not had a list yet.
    NoList,
    /// Not every account's first poll has ended.
    NotEveryAccount,
}

impl Readiness {
    /// Whether it is ready.
    pub fn is_ready(self) -> bool {
        self == Readiness::Ready
    }

    /// In words, for `/-/ready`, the landing page and `--once`'s log.
    pub fn words(self) -> &'static str {
        match self {
            Readiness::Ready => "ready",
            Readiness::NoList => "not ready: no list has been polled successfully yet",
            Readiness::NotEveryAccount => "not ready: not every account has been polled yet",
        }
    }
}
