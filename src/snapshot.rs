//! The immutable model of one poll: every asset with the values the metrics show.
//!
//! [`Asset::from_item`] applies DESIGN's value rules (null and -1 mean no sample; booleans,
//! numbers and the known strings are mapped; anything else is reported as unrecognized).
//! A [`ListPart`] is one list rendered; a [`Snapshot`] holds both lists' parts with the body
//! assembled from them, and is swapped in whole, so a scrape never sees half of a poll.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use crate::exposition::gzip::GzipPrefix;
use crate::exposition::{self, Format, Rendered};
use crate::upstream::dto::{self, DecodeError, Loose, NamedItem};

/// Whether an asset is an IP address or a domain: the `kind` label.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// From `ip-list`.
    #[default]
    Ip,
    /// From `domain-list`.
    Domain,
}

impl Kind {
    /// Both kinds, in exposition order.
    pub const ALL: [Kind; 2] = [Kind::Ip, Kind::Domain];

    /// The `kind` label value.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Ip => "ip",
            Kind::Domain => "domain",
        }
    }
}

/// SNDS reputation colour: the states of the `reputation_snds_reputation` stateset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SndsColour {
    /// Good.
    Green,
    /// Mixed.
    Yellow,
    /// Bad.
    Red,
}

impl SndsColour {
    /// Every state, in exposition order.
    pub const ALL: [SndsColour; 3] = [SndsColour::Green, SndsColour::Yellow, SndsColour::Red];

    /// The state's label value.
    pub fn label(self) -> &'static str {
        match self {
            SndsColour::Green => "green",
            SndsColour::Yellow => "yellow",
            SndsColour::Red => "red",
        }
    }
}

/// One monitored IP address or domain, with every value already mapped to a sample or none.
#[derive(Debug, Clone, PartialEq)]
pub struct Asset {
    /// IP or domain.
    pub kind: Kind,
    /// Address or domain exactly as the API spells it.
    pub name: String,
    /// Host names, without duplicates or empty names.
    pub hostnames: Vec<String>,
    /// `senderscore`, when present and not negative.
    pub senderscore: Option<f64>,
    /// `senderscore_prev`, same rule.
    pub senderscore_previous: Option<f64>,
    /// `senderscore_change.last_check`.
    pub senderscore_change: Option<f64>,
    /// `blacklisted`: how many blacklists list the asset.
    pub blacklistings: Option<f64>,
    /// `blacklisted_change.last_check`.
    pub blacklistings_change: Option<f64>,
    /// `snds_blocked` as 1 or 0.
    pub snds_blocked: Option<f64>,
    /// `snds_blocked_change.last_check`, when numeric.
    pub snds_blocked_change: Option<f64>,
    /// `snds_reputation`, when it is a colour.
    pub snds_reputation: Option<SndsColour>,
    /// `snds_reputation`, when it is a number (no colour is assumed for numbers).
    pub snds_reputation_value: Option<f64>,
    /// `snds_reputation_change.last_check`, when numeric.
    pub snds_reputation_change: Option<f64>,
    /// Number of addresses in a domain's `ips`.
    pub domain_ips: Option<f64>,
}

/// A value the exporter could not map to a sample.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Unrecognized {
    /// The API field, e.g. `snds_blocked`: the `field` label of the counter.
    pub field: &'static str,
    /// The value as seen (strings shortened), for the log line.
    pub value: String,
}

impl Asset {
    /// Maps a decoded list item, reporting every value it cannot map into `unrecognized`.
    pub fn from_item(kind: Kind, named: NamedItem, unrecognized: &mut Vec<Unrecognized>) -> Asset {
        let NamedItem { name, item } = named;
        let out = unrecognized;
        let senderscore_change = number(
            "senderscore_change",
            &item.senderscore_change.last_check,
            out,
        );
        let blacklistings = number("blacklisted", &item.blacklisted, out);
        let blacklistings_change = number(
            "blacklisted_change",
            &item.blacklisted_change.last_check,
            out,
        );
        let snds_blocked_change = number(
            "snds_blocked_change",
            &item.snds_blocked_change.last_check,
            out,
        );
        let snds_reputation_change = number(
            "snds_reputation_change",
            &item.snds_reputation_change.last_check,
            out,
        );
        let domain_ips = match (&item.ips, kind) {
            (Loose::Null, _) | (_, Kind::Ip) => None,
            (Loose::Array(len), Kind::Domain) => Some(*len as f64),
            (other, Kind::Domain) => number("ips", other, out),
        };
        let snds_blocked = match &item.snds_blocked {
            Loose::Text(text) => {
                blocked_from_text(text).or_else(|| report("snds_blocked", &item.snds_blocked, out))
            }
            other => number("snds_blocked", other, out),
        };
        let (snds_reputation, snds_reputation_value) = match &item.snds_reputation {
            Loose::Text(text) => {
                let colour = colour_from_text(text);
                if colour.is_none() {
                    report::<()>("snds_reputation", &item.snds_reputation, out);
                }
                (colour, None)
            }
            other => (None, number("snds_reputation", other, out)),
        };

        Asset {
            kind,
            name,
            hostnames: distinct_non_empty(item.hosts),
            senderscore: item.senderscore.filter(|s| *s >= 0.0),
            senderscore_previous: item.senderscore_prev.filter(|s| *s >= 0.0),
            senderscore_change,
            blacklistings,
            blacklistings_change,
            snds_blocked,
            snds_blocked_change,
            snds_reputation,
            snds_reputation_value,
            snds_reputation_change,
            domain_ips,
        }
    }
}

/// A number or boolean as it is; null as no sample; anything else reported.
fn number(field: &'static str, value: &Loose, out: &mut Vec<Unrecognized>) -> Option<f64> {
    match value {
        Loose::Null => None,
        Loose::Bool(b) => Some(f64::from(u8::from(*b))),
        Loose::Number(n) => Some(*n),
        other => report(field, other, out),
    }
}

/// Records a value that cannot be mapped; always `None`, the sample it does not give.
fn report<T>(field: &'static str, value: &Loose, out: &mut Vec<Unrecognized>) -> Option<T> {
    out.push(Unrecognized {
        field,
        value: describe(value),
    });
    None
}

/// The non-empty strings, each once, in their first order: label values that would otherwise
/// give duplicate series.
pub fn distinct_non_empty(values: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(values.len());
    for value in values {
        if !value.is_empty() && !out.contains(&value) {
            out.push(value);
        }
    }
    out
}

fn blocked_from_text(text: &str) -> Option<f64> {
    match text.trim().to_ascii_lowercase().as_str() {
        "yes" | "true" | "blocked" => Some(1.0),
        "no" | "false" | "not blocked" => Some(0.0),
        _ => None,
    }
}

fn colour_from_text(text: &str) -> Option<SndsColour> {
    match text.trim().to_ascii_lowercase().as_str() {
        "green" => Some(SndsColour::Green),
        "yellow" => Some(SndsColour::Yellow),
        "red" => Some(SndsColour::Red),
        _ => None,
    }
}

fn describe(value: &Loose) -> String {
    match value {
        Loose::Text(text) => {
            let short: String = text.chars().take(64).collect();
            format!("{short:?}")
        }
        other => other.type_name().to_owned(),
    }
}

/// What an asset report adds to an asset.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Tags, without duplicates or empty ones.
    pub tags: Vec<String>,
    /// Per blacklist, its newest event.
    pub listings: Vec<Listing>,
    /// Unix time of the newest `senderscore_history` entry.
    pub senderscore_updated: Option<f64>,
}

/// The state of an asset on one blacklist, decided by the newest event.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// Name of the blacklist.
    pub blacklist: String,
    /// Whether the newest event says `Listed`.
    pub listed: bool,
    /// Unix time of that event.
    pub changed: f64,
}

/// The latest report of every reported asset, per kind, keyed by asset name.
#[derive(Debug, Clone, Default)]
pub struct Reports {
    ips: HashMap<String, Arc<Report>>,
    domains: HashMap<String, Arc<Report>>,
}

impl Reports {
    fn map(&self, kind: Kind) -> &HashMap<String, Arc<Report>> {
        match kind {
            Kind::Ip => &self.ips,
            Kind::Domain => &self.domains,
        }
    }

    fn map_mut(&mut self, kind: Kind) -> &mut HashMap<String, Arc<Report>> {
        match kind {
            Kind::Ip => &mut self.ips,
            Kind::Domain => &mut self.domains,
        }
    }

    /// The report of one asset.
    pub fn get(&self, kind: Kind, name: &str) -> Option<&Report> {
        self.map(kind).get(name).map(|r| &**r)
    }

    /// Stores (or with `None` removes) the report of one asset.
    pub fn set(&mut self, kind: Kind, name: String, report: Option<Report>) {
        match report {
            Some(report) => {
                self.map_mut(kind).insert(name, Arc::new(report));
            }
            None => {
                self.map_mut(kind).remove(&name);
            }
        }
    }

    /// Keeps only the reports of assets for which `keep` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(Kind, &str) -> bool) {
        self.ips.retain(|name, _| keep(Kind::Ip, name));
        self.domains.retain(|name, _| keep(Kind::Domain, name));
    }

    /// Number of reports held.
    pub fn len(&self) -> usize {
        self.ips.len() + self.domains.len()
    }

    /// Whether no report is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The assets of one list endpoint, as of one successful poll.
#[derive(Debug, Clone, Default)]
pub struct AssetSet {
    /// The assets, in the order the API sent them, each name once.
    pub assets: Vec<Asset>,
}

/// A list endpoint's answer turned into assets, with what could not be used.
#[derive(Debug, Default)]
pub struct DecodedAssets {
    /// The assets.
    pub set: AssetSet,
    /// Items that were skipped, with the reason.
    pub rejected: Vec<DecodeError>,
    /// Number of items dropped because their name had been seen before.
    pub duplicates: usize,
    /// Values that could not be mapped to a sample.
    pub unrecognized: Vec<Unrecognized>,
}

impl AssetSet {
    /// Decodes `ip-list` or `domain-list` and maps each item as soon as it is decoded.
    pub fn decode(body: &[u8], kind: Kind) -> Result<DecodedAssets, DecodeError> {
        let name_field = match kind {
            Kind::Ip => "ip",
            Kind::Domain => "domain",
        };
        let mut unrecognized = Vec::new();
        let list = dto::decode_list_with(body, name_field, |item| {
            Asset::from_item(kind, item, &mut unrecognized)
        })?;
        Ok(DecodedAssets {
            set: AssetSet { assets: list.items },
            rejected: list.rejected,
            duplicates: list.duplicates,
            unrecognized,
        })
    }
}

/// Assets of each list kept for the landing page, worst first.
pub const WORST_KEPT: usize = 100;

/// One list as served: the sample lines of its assets per family, their names, and the worst
/// of them for the landing page. The assets themselves are dropped once rendered, so a list
/// costs about the size of its part of the body.
#[derive(Debug, Default)]
pub struct ListPart {
    /// IP addresses or domains.
    pub kind: Kind,
    /// Every asset's name, in the order the API sent them.
    pub names: Vec<Box<str>>,
    /// At most [`WORST_KEPT`] assets, worst first.
    pub worst: Vec<Asset>,
    /// Sample lines, one chunk per family of [`exposition::assets::list_families`].
    pub samples: Vec<Bytes>,
}

impl ListPart {
    /// Renders the assets of one list and keeps what a snapshot needs of them.
    pub fn new(kind: Kind, set: AssetSet) -> ListPart {
        let samples = exposition::assets::render_list(&set.assets);
        let mut order: Vec<&Asset> = set.assets.iter().collect();
        let kept = order.len().min(WORST_KEPT);
        if kept > 0 && kept < order.len() {
            order.select_nth_unstable_by(kept - 1, |a, b| worst_first(a, b));
        }
        order.truncate(kept);
        order.sort_by(|a, b| worst_first(a, b));
        let worst = order.into_iter().cloned().collect();
        let names = set
            .assets
            .into_iter()
            .map(|asset| asset.name.into_boxed_str())
            .collect();
        ListPart {
            kind,
            names,
            worst,
            samples,
        }
    }
}

/// Most blacklistings first, then lowest sender score (no score last), then by name.
pub fn worst_first(a: &Asset, b: &Asset) -> std::cmp::Ordering {
    let listings = |x: &Asset| x.blacklistings.unwrap_or(0.0);
    let score = |x: &Asset| x.senderscore.unwrap_or(f64::INFINITY);
    listings(b)
        .total_cmp(&listings(a))
        .then(score(a).total_cmp(&score(b)))
        .then_with(|| a.name.cmp(&b.name))
}

/// What a scrape serves: the latest part of both lists and the rendered bodies.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// IP addresses, absent before the first good poll or after `metrics.max_age`.
    pub ips: Option<Arc<ListPart>>,
    /// Domains, same rule.
    pub domains: Option<Arc<ListPart>>,
    /// Asset reports, when they are enabled and some have arrived.
    pub reports: Option<Arc<Reports>>,
    /// Whether a list poll has ever succeeded (`/-/ready`).
    pub ready: bool,
    /// The per-asset metric families in both formats, rendered once.
    pub rendered: Rendered,
    /// The same, gzip-compressed per format, made on first demand.
    gzip: [OnceLock<GzipPrefix>; 2],
}

impl Snapshot {
    /// Builds a snapshot from rendered lists: their samples are shared, not copied; only the
    /// report families are rendered here.
    pub fn build(
        ips: Option<Arc<ListPart>>,
        domains: Option<Arc<ListPart>>,
        reports: Option<Arc<Reports>>,
        ready: bool,
    ) -> Self {
        let lists: Vec<&ListPart> = [&ips, &domains]
            .into_iter()
            .flatten()
            .map(|s| &**s)
            .collect();
        let rendered = exposition::assets::render(&lists, reports.as_deref());
        Snapshot {
            ips,
            domains,
            reports,
            ready,
            rendered,
            gzip: Default::default(),
        }
    }

    /// The lists served, IPs first.
    pub fn lists(&self) -> impl Iterator<Item = &ListPart> {
        [&self.ips, &self.domains]
            .into_iter()
            .flatten()
            .map(|l| &**l)
    }

    /// Every asset served, by kind and name, IPs first.
    pub fn names(&self) -> impl Iterator<Item = (Kind, &str)> {
        self.lists()
            .flat_map(|list| list.names.iter().map(move |name| (list.kind, &**name)))
    }

    /// Up to `n` assets of both lists, worst first.
    pub fn worst(&self, n: usize) -> Vec<&Asset> {
        let mut worst: Vec<&Asset> = self.lists().flat_map(|list| &list.worst).collect();
        worst.sort_by(|a, b| worst_first(a, b));
        worst.truncate(n);
        worst
    }

    /// Number of assets of one kind.
    pub fn count(&self, kind: Kind) -> usize {
        let list = match kind {
            Kind::Ip => &self.ips,
            Kind::Domain => &self.domains,
        };
        list.as_ref().map_or(0, |l| l.names.len())
    }

    /// Number of assets of both kinds.
    pub fn total(&self) -> usize {
        self.count(Kind::Ip) + self.count(Kind::Domain)
    }

    /// The rendered per-asset body in one format, as chunks.
    pub fn body(&self, format: Format) -> &[Bytes] {
        self.rendered.chunks(format)
    }

    /// The per-asset body in one format as the start of a gzip stream, compressed on the first
    /// call (per snapshot and format) and kept.
    pub fn gzip(&self, format: Format) -> &GzipPrefix {
        self.gzip[format as usize].get_or_init(|| GzipPrefix::new(self.body(format)))
    }

    /// Whether the gzip body of this format is ready.
    pub fn has_gzip(&self, format: Format) -> bool {
        self.gzip[format as usize].get().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::dto::{Change, ListItem};

    fn convert(kind: Kind, item: ListItem) -> (Asset, Vec<Unrecognized>) {
        let mut unrecognized = Vec::new();
        let named = NamedItem {
            name: "a".into(),
            item,
        };
        (
            Asset::from_item(kind, named, &mut unrecognized),
            unrecognized,
        )
    }

    #[test]
    fn minus_one_and_null_scores_give_no_sample() {
        let (asset, _) = convert(
            Kind::Ip,
            ListItem {
                senderscore: Some(-1.0),
                senderscore_prev: None,
                ..ListItem::default()
            },
        );
        assert_eq!(asset.senderscore, None);
        assert_eq!(asset.senderscore_previous, None);
        let (asset, _) = convert(
            Kind::Ip,
            ListItem {
                senderscore: Some(0.0),
                ..ListItem::default()
            },
        );
        assert_eq!(asset.senderscore, Some(0.0));
    }

    #[test]
    fn snds_blocked_maps_booleans_numbers_and_known_strings() {
        let cases = [
            (Loose::Bool(true), Some(1.0)),
            (Loose::Bool(false), Some(0.0)),
            (Loose::Number(1.0), Some(1.0)),
            (Loose::Text("YES".into()), Some(1.0)),
            (Loose::Text("Blocked".into()), Some(1.0)),
            (Loose::Text("true".into()), Some(1.0)),
            (Loose::Text("no".into()), Some(0.0)),
            (Loose::Text("Not Blocked".into()), Some(0.0)),
            (Loose::Text("FALSE".into()), Some(0.0)),
            (Loose::Null, None),
        ];
        for (value, expected) in cases {
            let (asset, unrecognized) = convert(
                Kind::Ip,
                ListItem {
                    snds_blocked: value.clone(),
                    ..ListItem::default()
                },
            );
            assert_eq!(asset.snds_blocked, expected, "{value:?}");
            assert!(unrecognized.is_empty(), "{value:?}");
        }
    }

    #[test]
    fn snds_reputation_strings_are_colours_and_numbers_a_plain_value() {
        let (asset, _) = convert(
            Kind::Ip,
            ListItem {
                snds_reputation: Loose::Text("Yellow".into()),
                ..ListItem::default()
            },
        );
        assert_eq!(asset.snds_reputation, Some(SndsColour::Yellow));
        assert_eq!(asset.snds_reputation_value, None);
        let (asset, _) = convert(
            Kind::Ip,
            ListItem {
                snds_reputation: Loose::Number(2.0),
                ..ListItem::default()
            },
        );
        assert_eq!(asset.snds_reputation, None);
        assert_eq!(asset.snds_reputation_value, Some(2.0));
    }

    #[test]
    fn unmappable_values_are_reported_with_their_field_and_give_no_sample() {
        let (asset, unrecognized) = convert(
            Kind::Domain,
            ListItem {
                snds_blocked: Loose::Text("maybe".into()),
                snds_reputation: Loose::Text("purple".into()),
                snds_blocked_change: Change {
                    last_check: Loose::Object,
                },
                ips: Loose::Text("192.0.2.1".into()),
                ..ListItem::default()
            },
        );
        assert_eq!(asset.snds_blocked, None);
        assert_eq!(asset.snds_reputation, None);
        assert_eq!(asset.snds_blocked_change, None);
        assert_eq!(asset.domain_ips, None);
        let fields: Vec<_> = unrecognized.iter().map(|u| u.field).collect();
        assert_eq!(
            fields,
            [
                "snds_blocked_change",
                "ips",
                "snds_blocked",
                "snds_reputation"
            ]
        );
        assert_eq!(unrecognized[2].value, "\"maybe\"");
    }

    #[test]
    fn a_domains_ips_array_is_counted() {
        let (asset, _) = convert(
            Kind::Domain,
            ListItem {
                ips: Loose::Array(3),
                ..ListItem::default()
            },
        );
        assert_eq!(asset.domain_ips, Some(3.0));
    }

    fn asset(kind: Kind, name: &str, blacklistings: f64, senderscore: Option<f64>) -> Asset {
        let (mut asset, _) = convert(kind, ListItem::default());
        asset.name = name.into();
        asset.blacklistings = Some(blacklistings);
        asset.senderscore = senderscore;
        asset
    }

    #[test]
    fn a_list_part_keeps_every_name_and_only_the_worst_assets() {
        let assets: Vec<Asset> = (0..WORST_KEPT + 50)
            .map(|i| asset(Kind::Ip, &format!("192.0.2.{i}"), 0.0, Some(i as f64)))
            .chain([asset(Kind::Ip, "198.51.100.1", 3.0, Some(99.0))])
            .collect();
        let part = ListPart::new(Kind::Ip, AssetSet { assets });
        assert_eq!(part.names.len(), WORST_KEPT + 51);
        assert_eq!(&*part.names[0], "192.0.2.0");
        assert_eq!(part.worst.len(), WORST_KEPT);
        // Listed first, then the lowest scores in order.
        assert_eq!(part.worst[0].name, "198.51.100.1");
        let scores: Vec<f64> = part.worst[1..]
            .iter()
            .map(|a| a.senderscore.unwrap())
            .collect();
        let expected: Vec<f64> = (0..WORST_KEPT - 1).map(|i| i as f64).collect();
        assert_eq!(scores, expected);
    }

    #[test]
    fn the_worst_assets_of_both_lists_are_merged_in_order() {
        let ips = ListPart::new(
            Kind::Ip,
            AssetSet {
                assets: vec![asset(Kind::Ip, "192.0.2.1", 0.0, Some(50.0))],
            },
        );
        let domains = ListPart::new(
            Kind::Domain,
            AssetSet {
                assets: vec![
                    asset(Kind::Domain, "a.example", 1.0, Some(90.0)),
                    asset(Kind::Domain, "b.example", 0.0, None),
                ],
            },
        );
        let snapshot = Snapshot::build(Some(Arc::new(ips)), Some(Arc::new(domains)), None, true);
        let names: Vec<&str> = snapshot.worst(10).iter().map(|a| &*a.name).collect();
        assert_eq!(names, ["a.example", "192.0.2.1", "b.example"]);
        assert_eq!(snapshot.worst(1).len(), 1);
        assert_eq!(snapshot.total(), 3);
    }

    #[test]
    fn a_new_snapshot_shares_the_samples_of_the_list_that_did_not_change() {
        let part = |kind, name: &str| {
            Arc::new(ListPart::new(
                kind,
                AssetSet {
                    assets: vec![asset(kind, name, 0.0, Some(80.0))],
                },
            ))
        };
        let domains = part(Kind::Domain, "example.com");
        let first = Snapshot::build(
            Some(part(Kind::Ip, "192.0.2.1")),
            Some(domains.clone()),
            None,
            true,
        );
        let second = Snapshot::build(Some(part(Kind::Ip, "192.0.2.2")), Some(domains), None, true);
        let domain_chunk = |snapshot: &Snapshot| {
            snapshot
                .body(Format::Text)
                .iter()
                .find(|chunk| chunk.starts_with(b"reputation_asset_info{kind=\"domain\""))
                .map(|chunk| chunk.as_ptr())
                .expect("a domain chunk")
        };
        assert_eq!(domain_chunk(&first), domain_chunk(&second));
        let text = String::from_utf8(second.rendered.to_vec(Format::Text)).unwrap();
        assert!(text.contains("reputation_senderscore{kind=\"ip\",asset=\"192.0.2.2\"} 80\n"));
        assert!(!text.contains("192.0.2.1"));
    }

    #[test]
    fn duplicate_and_empty_hostnames_are_dropped() {
        let (asset, _) = convert(
            Kind::Ip,
            ListItem {
                hosts: vec!["a".into(), "".into(), "b".into(), "a".into()],
                ..ListItem::default()
            },
        );
        assert_eq!(asset.hostnames, ["a", "b"]);
    }
}
