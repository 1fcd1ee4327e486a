//! What the project knows about blacklists, as data: for each list an ESP meets, the names
//! monitoring services print for it, its zones, where to ask for an address's removal and the
//! removal policy in words. The table is built in (`known.toml`, beside this file); the
//! configuration's `[[blacklists]]` adds entries or replaces one by its name.
//!
//! An account serves one `reputation_blacklist_info` series per blacklist its reports name,
//! so that alerts, the dashboard and the landing page can say how to get off the list: bounded
//! by the number of lists, never by the number of assets. A list the table does not know is
//! served as `policy="unknown"`, and still pages; a list that is gone (`policy="gone"`) never
//! pages.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Deserialize;

use crate::exposition::write_sample_at;

/// The removal policy of a list, as a word the rules and the dashboard can match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// The list's lookup page removes the address, no questions asked.
    SelfService,
    /// It ends by itself some time after the last report; asking does not help.
    Expires,
    /// Only the network's owner or provider can ask.
    OwnerOnly,
    /// A request form or e-mail, reviewed by a person.
    Request,
    /// Self-service, with an account made first.
    Account,
    /// No removal at all: it clears by itself once the traffic stops.
    Automatic,
    /// The list combines several; its lookup page says which one applies.
    Lookup,
    /// The list has shut down: a listing there is stale and never pages.
    Gone,
    /// Not in the table: nothing is known of the list.
    Unknown,
}

impl Policy {
    /// The `policy` label's value.
    pub fn label(self) -> &'static str {
        match self {
            Policy::SelfService => "self-service",
            Policy::Expires => "expires",
            Policy::OwnerOnly => "owner-only",
            Policy::Request => "request",
            Policy::Account => "account",
            Policy::Automatic => "automatic",
            Policy::Lookup => "lookup",
            Policy::Gone => "gone",
            Policy::Unknown => "unknown",
        }
    }
}

/// One list, as the table (or the configuration) describes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The list's usual name.
    pub name: String,
    /// Other names services print for it.
    #[serde(default)]
    pub spellings: Vec<String>,
    /// Its DNS zones, which some services print as its name.
    #[serde(default)]
    pub zones: Vec<String>,
    /// Where to look the asset up or ask for its removal; `{asset}` stands for the asset.
    #[serde(default)]
    pub removal: String,
    /// The removal policy.
    pub policy: Policy,
    /// For [`Policy::Expires`]: how long after the last report, as `24h`, `7d` or `4w`.
    #[serde(default)]
    pub expires_after: Option<String>,
    /// The operator sells faster removal.
    #[serde(default)]
    pub paid_express: bool,
    /// For [`Policy::Gone`]: since when, `YYYY-MM-DD`.
    #[serde(default)]
    pub gone_since: Option<String>,
    /// What to do, in a sentence or two.
    #[serde(default)]
    pub advice: String,
    /// Where the facts come from.
    #[serde(default)]
    pub sources: Vec<String>,
}

impl Entry {
    /// The policy in words: what a person on call reads first.
    pub fn summary(&self) -> String {
        let mut words = match self.policy {
            Policy::SelfService => "Self-service removal on the list's page.".to_owned(),
            Policy::Expires => match self.expires_after.as_deref().and_then(in_words) {
                Some(after) => {
                    format!("Expires by itself {after} after the last report; do not ask.")
                }
                None => "Expires by itself after the last report; do not ask.".to_owned(),
            },
            Policy::OwnerOnly => "Only the network's owner or provider can ask.".to_owned(),
            Policy::Request => "Removal on request, reviewed by a person.".to_owned(),
            Policy::Account => "Self-service removal, with an account.".to_owned(),
            Policy::Automatic => "No removal requests: it clears by itself.".to_owned(),
            Policy::Lookup => "Look the asset up: the list's page says what applies.".to_owned(),
            Policy::Gone => match &self.gone_since {
                Some(since) => format!("Gone since {since}: the listing is stale; no page."),
                None => "Gone: the listing is stale; no page.".to_owned(),
            },
            Policy::Unknown => UNKNOWN_SUMMARY.to_owned(),
        };
        if self.paid_express {
            words.push_str(" Paid express removal exists; never needed.");
        }
        words
    }

    /// Every name a service may print for the list.
    fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.name.as_str())
            .chain(self.spellings.iter().map(String::as_str))
            .chain(self.zones.iter().map(String::as_str))
    }

    /// What is wrong with this entry, if anything, said for a person who wrote it.
    fn problem(&self) -> Option<String> {
        let name = &self.name;
        if name.trim().is_empty() {
            return Some("an entry has no name".into());
        }
        let web = ["https://", "http://"];
        if !self.removal.is_empty() && !web.iter().any(|w| self.removal.starts_with(w)) {
            return Some(format!(
                "`{name}`: removal `{}` is not an http(s) URL",
                self.removal
            ));
        }
        if let Some(after) = &self.expires_after
            && in_words(after).is_none()
        {
            return Some(format!(
                "`{name}`: expires_after `{after}` is not a number of hours, days or weeks \
                 (`24h`, `7d`, `4w`)"
            ));
        }
        if self.policy == Policy::Unknown {
            return Some(format!(
                "`{name}`: policy `unknown` is what the exporter says of lists it has no entry \
                 for; write one of self-service, expires, owner-only, request, account, \
                 automatic, lookup, gone"
            ));
        }
        None
    }
}

/// The summary of a list the table does not know.
const UNKNOWN_SUMMARY: &str =
    "reputation-exporter knows nothing of this list: look it up by name before acting.";

/// `24h`, `7d`, `4w` in words (`24 hours`, `7 days`, `4 weeks`); `None` for anything else.
fn in_words(after: &str) -> Option<String> {
    let unit = after.chars().last()?;
    let count: u32 = after[..after.len() - unit.len_utf8()].parse().ok()?;
    let unit = match (unit, count) {
        ('h', 1) => "hour",
        ('h', _) => "hours",
        ('d', 1) => "day",
        ('d', _) => "days",
        ('w', 1) => "week",
        ('w', _) => "weeks",
        _ => return None,
    };
    Some(format!("{count} {unit}"))
}

/// The table as written: `[[list]]` entries.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    list: Vec<Entry>,
}

/// The built-in table.
const KNOWN: &str = include_str!("known.toml");

/// The lists known, by every name they go by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blacklists {
    entries: Vec<Entry>,
    /// Each name, spelling and zone in lower case, to its entry.
    by_name: HashMap<String, usize>,
}

impl Default for Blacklists {
    fn default() -> Self {
        Blacklists::builtin()
    }
}

impl Blacklists {
    /// The built-in table.
    pub fn builtin() -> Blacklists {
        use figment::providers::{Format, Toml};
        let file: File = figment::Figment::from(Toml::string(KNOWN))
            .extract()
            .expect("the built-in blacklist table parses");
        Blacklists::of(file.list).expect("the built-in blacklist table is consistent")
    }

    /// The built-in table with `entries` added; an entry named as a built-in one (in any
    /// spelling) replaces it whole. `Err` says what is wrong with an entry.
    pub fn with(entries: Vec<Entry>) -> Result<Blacklists, String> {
        if entries.is_empty() {
            return Ok(Blacklists::builtin());
        }
        let builtin = Blacklists::builtin();
        let replaced: Vec<usize> = entries
            .iter()
            .filter_map(|entry| builtin.index(&entry.name))
            .collect();
        let kept = builtin
            .entries
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !replaced.contains(i))
            .map(|(_, entry)| entry);
        // The configuration's entries first: a spelling they share with a built-in one is
        // theirs.
        Blacklists::of(entries.into_iter().chain(kept).collect())
    }

    /// The table of `entries`; of the names two entries share, the first entry keeps it
    /// (the configuration's come first). Two entries of the same name are an error.
    fn of(entries: Vec<Entry>) -> Result<Blacklists, String> {
        let mut named = std::collections::HashSet::new();
        for entry in &entries {
            if let Some(problem) = entry.problem() {
                return Err(problem);
            }
            if !named.insert(entry.name.trim().to_lowercase()) {
                return Err(format!("two entries are named `{}`", entry.name));
            }
        }
        let mut by_name = HashMap::new();
        for (i, entry) in entries.iter().enumerate() {
            for name in entry.names() {
                by_name.entry(name.trim().to_lowercase()).or_insert(i);
            }
        }
        Ok(Blacklists { entries, by_name })
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.by_name.get(&name.trim().to_lowercase()).copied()
    }

    /// The entry of the list a service calls `name`, matched without regard to case.
    pub fn lookup(&self, name: &str) -> Option<&Entry> {
        self.index(name).map(|i| &self.entries[i])
    }

    /// Every entry, the configuration's first.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// What a page says of the list a service calls `name`: the entry, or what is said of a
    /// list nobody knows.
    pub fn said(&self, name: &str) -> Said {
        match self.lookup(name) {
            Some(entry) => Said {
                list: entry.name.clone(),
                policy: entry.policy,
                summary: entry.summary(),
                removal: entry.removal.clone(),
                advice: entry.advice.clone(),
            },
            None => Said {
                list: String::new(),
                policy: Policy::Unknown,
                summary: UNKNOWN_SUMMARY.to_owned(),
                removal: String::new(),
                advice: String::new(),
            },
        }
    }

    /// `reputation_blacklist_info`, one series per name in `names` (as the reports spell
    /// them), in OpenMetrics text.
    pub fn encode_info<'a>(&self, names: impl IntoIterator<Item = &'a str>, out: &mut String) {
        out.push_str(
            "# HELP reputation_blacklist What the exporter knows of each blacklist the reports \
             name: its usual name, removal policy and page ({asset} stands for the asset).\n\
             # TYPE reputation_blacklist info\n",
        );
        let mut lines = Vec::new();
        for name in names {
            let said = self.said(name);
            let labels = [
                ("blacklist", name),
                ("list", &said.list),
                ("policy", said.policy.label()),
                ("summary", &said.summary),
                ("removal", &said.removal),
                ("advice", &said.advice),
            ];
            write_sample_at(&mut lines, "reputation_blacklist_info", &labels, 1.0, None);
        }
        // Names and labels are strings, and the writer writes them whole.
        out.push_str(&String::from_utf8_lossy(&lines));
    }
}

impl Blacklists {
    /// The table as Markdown, one row per list: its names, the policy in words, the removal
    /// page, what to do and the sources. The runbook holds it, generated from this.
    pub fn markdown(&self) -> String {
        let cell = |text: &str| text.replace('|', "\\|");
        let mut out = String::from(
            "| List | Also reported as | Policy | Removal page | What to do | Source |\n\
             |---|---|---|---|---|---|\n",
        );
        for entry in &self.entries {
            let names: Vec<String> = entry
                .spellings
                .iter()
                .chain(&entry.zones)
                .map(|name| format!("`{name}`"))
                .collect();
            let removal = match entry.removal.as_str() {
                "" => "none".to_owned(),
                page => format!("<{}>", page.replace("{asset}", "ASSET")),
            };
            let sources: Vec<String> = entry.sources.iter().map(|s| format!("<{s}>")).collect();
            let _ = writeln!(
                out,
                "| **{}** | {} | `{}`: {} | {} | {} | {} |",
                cell(&entry.name),
                cell(&names.join(", ")),
                entry.policy.label(),
                cell(&entry.summary()),
                removal,
                cell(&entry.advice),
                sources.join(" "),
            );
        }
        out
    }
}

/// What a page says of one list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// The list's usual name; empty when it is not known.
    pub list: String,
    /// Its removal policy.
    pub policy: Policy,
    /// The policy in words.
    pub summary: String,
    /// Its removal page, `{asset}` standing for the asset.
    pub removal: String,
    /// What to do.
    pub advice: String,
}

impl Said {
    /// The removal page for `asset`: [`Said::removal`] with `{asset}` filled in.
    pub fn removal_for(&self, asset: &str) -> String {
        self.removal.replace("{asset}", asset)
    }
}

#[cfg(test)]
mod tests;
