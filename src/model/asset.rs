//! One monitored asset as the metrics show it, mapped from a list item by the value rules of
//! docs/metrics.md and docs/upstream.md.
//!
//! [`Asset::from_item`] applies them: null and -1 mean no sample; booleans, numbers and the
//! known strings are mapped; anything else is reported as [`Unrecognized`].

use std::collections::HashSet;

use super::report::Blacklisting;
use crate::upstream::BodyDecoder;
use crate::upstream::dto::{self, Convert, DecodeError, ListDecoder, Loose, NamedItem, Rejected};
use crate::vocabulary::{Field, Kind, SndsColour, Unrecognized};

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
    /// The Sender Score's change since this replica's previous list that the last check's
    /// change does not account for (see [`memory`](super::memory)); set by
    /// [`Remembering`](super::memory::Remembering), `None` from the item alone.
    pub senderscore_missed_change: Option<f64>,
    /// The SNDS block's, likewise.
    pub snds_blocked_missed_change: Option<f64>,
}

impl Asset {
    /// Its blacklisting count and change, as a report would say them.
    pub fn blacklisting(&self) -> Blacklisting {
        Blacklisting {
            count: self.blacklistings,
            change: self.blacklistings_change,
        }
    }

    /// Maps a decoded list item, reporting every value it cannot map into `unrecognized`.
    pub fn from_item(
        kind: Kind,
        named: NamedItem,
        max_labels: usize,
        unrecognized: &mut Vec<Unrecognized>,
    ) -> Asset {
        let NamedItem { name, item } = named;
        let out = unrecognized;
        let senderscore_change = number(
            Field::SenderscoreChange,
            &item.senderscore_change.last_check,
            out,
        );
        let blacklistings = number(Field::Blacklisted, &item.blacklisted, out);
        let blacklistings_change = number(
            Field::BlacklistedChange,
            &item.blacklisted_change.last_check,
            out,
        );
        let snds_blocked_change = number(
            Field::SndsBlockedChange,
            &item.snds_blocked_change.last_check,
            out,
        );
        let snds_reputation_change = number(
            Field::SndsReputationChange,
            &item.snds_reputation_change.last_check,
            out,
        );
        let domain_ips = match (&item.ips, kind) {
            (Loose::Null, _) | (_, Kind::Ip) => None,
            (Loose::Array(len), Kind::Domain) => Some(*len as f64),
            (other, Kind::Domain) => number(Field::Ips, other, out),
        };
        let snds_blocked = match &item.snds_blocked {
            Loose::Text(text) => blocked_from_text(text)
                .or_else(|| report(Field::SndsBlocked, &item.snds_blocked, out)),
            other => number(Field::SndsBlocked, other, out),
        };
        let (snds_reputation, snds_reputation_value) = match &item.snds_reputation {
            Loose::Text(text) => {
                let colour = colour_from_text(text);
                if colour.is_none() {
                    report::<()>(Field::SndsReputation, &item.snds_reputation, out);
                }
                (colour, None)
            }
            other => (None, number(Field::SndsReputation, other, out)),
        };

        let hostnames = label_values(item.hosts, max_labels, Field::Hosts, &name, out);
        Asset {
            kind,
            name,
            hostnames,
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
            senderscore_missed_change: None,
            snds_blocked_missed_change: None,
        }
    }
}

/// A number or boolean as it is; null as no sample; anything else reported.
fn number(field: Field, value: &Loose, out: &mut Vec<Unrecognized>) -> Option<f64> {
    match value {
        Loose::Null => None,
        Loose::Bool(b) => Some(f64::from(u8::from(*b))),
        Loose::Number(n) => Some(*n),
        other => report(field, other, out),
    }
}

/// Records a value that cannot be mapped; always `None`, the sample it does not give.
fn report<T>(field: Field, value: &Loose, out: &mut Vec<Unrecognized>) -> Option<T> {
    out.push(Unrecognized::new(field, describe(value)));
    None
}

/// Longest label value kept, in bytes: a longer host name or tag is dropped.
pub const MAX_LABEL_BYTES: usize = 1024;

/// The label values of one asset that become series (host names, tags): non-empty, each once,
/// at most [`MAX_LABEL_BYTES`] long and at most `max` of them, in their first order, found in
/// linear time. What is dropped is reported as one [`Unrecognized`] of `field` that counts
/// every dropped value.
pub fn label_values(
    values: Vec<String>,
    max: usize,
    field: Field,
    asset: &str,
    out: &mut Vec<Unrecognized>,
) -> Vec<String> {
    let total = values.len();
    if total == 0 {
        return values;
    }
    // Decided on the borrowed values, then the kept ones are moved out: no string is copied.
    let mut dropped = 0u64;
    let keep: Vec<bool> = {
        let mut seen: HashSet<&str> = HashSet::with_capacity(total);
        let mut kept = 0;
        values
            .iter()
            .map(|value| {
                let first = !value.is_empty() && seen.insert(value.as_str());
                let fits = first && value.len() <= MAX_LABEL_BYTES && kept < max;
                kept += usize::from(fits);
                dropped += u64::from(first && !fits);
                fits
            })
            .collect()
    };
    let kept = values
        .into_iter()
        .zip(keep)
        .filter_map(|(value, keep)| keep.then_some(value))
        .collect();
    if dropped > 0 {
        let short: String = asset.chars().take(64).collect();
        out.push(Unrecognized {
            field,
            value: format!(
                "{short}: {dropped} of {total} values dropped (over \
                 metrics.max_labels_per_asset = {max}, or longer than 1 KiB)"
            ),
            count: dropped,
        });
    }
    kept
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

pub(crate) fn describe(value: &Loose) -> String {
    match value {
        Loose::Text(text) => {
            let short: String = text.chars().take(64).collect();
            format!("{short:?}")
        }
        other => other.type_name().to_owned(),
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

/// The assets of one list endpoint, as of one successful poll.
#[derive(Debug, Clone, Default)]
pub struct AssetSet {
    /// The assets, in the order the API sent them, each name once.
    pub assets: Vec<Asset>,
}

/// Where a list's assets go as they are decoded: kept whole ([`AssetSet`]), or rendered at
/// once and dropped (the snapshot's list builder).
pub trait AssetSink: Send + 'static {
    /// One usable asset, in the order the API sent them, each name once.
    fn push(&mut self, asset: Asset);
}

impl AssetSink for AssetSet {
    fn push(&mut self, asset: Asset) {
        self.assets.push(asset);
    }
}

/// A list endpoint's answer turned into assets, with what could not be used.
#[derive(Debug, Default)]
pub struct DecodedAssets<S = AssetSet> {
    /// The assets, in the sink they were decoded into.
    pub set: S,
    /// How many assets went into it.
    pub usable: usize,
    /// Items that were skipped: counted, the first few with their reason.
    pub rejected: Rejected,
    /// Number of items dropped because their name had been seen before.
    pub duplicates: usize,
    /// Values that could not be mapped to a sample.
    pub unrecognized: Vec<Unrecognized>,
}

impl<S> DecodedAssets<S> {
    /// Why the list must not be taken as the fleet, if it must not (see
    /// [`dto::DecodedList::refusal`]).
    pub fn refusal(&self) -> Option<DecodeError> {
        dto::refusal(&self.rejected, self.usable)
    }
}

impl AssetSet {
    /// Decodes a whole `ip-list` or `domain-list` body (see [`AssetDecoder`]).
    pub fn decode(
        body: &[u8],
        kind: Kind,
        max_labels: usize,
    ) -> Result<DecodedAssets, DecodeError> {
        let mut decoder = AssetDecoder::new(kind, max_labels, AssetSet::default());
        decoder.feed(body)?;
        decoder.finish()
    }
}

/// A list's items mapped to assets and passed on, and the values that could not be mapped.
struct ToAsset<S> {
    kind: Kind,
    max_labels: usize,
    unrecognized: Vec<Unrecognized>,
    sink: S,
}

impl<S: AssetSink> Convert<()> for ToAsset<S> {
    fn convert(&mut self, item: NamedItem) {
        let asset = Asset::from_item(self.kind, item, self.max_labels, &mut self.unrecognized);
        self.sink.push(asset);
    }
}

/// `ip-list` or `domain-list` decoded as its bytes arrive, each item mapped and handed to the
/// sink as soon as it is decoded; the caller decides with [`DecodedAssets::refusal`] whether
/// the result may stand for the fleet, after counting what was rejected.
pub struct AssetDecoder<S = AssetSet>(ListDecoder<ToAsset<S>, ()>);

impl<S: AssetSink> AssetDecoder<S> {
    /// A decoder of one list of `kind` into `sink`, at most `max_labels` host names per asset.
    pub fn new(kind: Kind, max_labels: usize, sink: S) -> Self {
        let to_asset = ToAsset {
            kind,
            max_labels,
            unrecognized: Vec::new(),
            sink,
        };
        AssetDecoder(ListDecoder::new(kind, to_asset))
    }
}

impl<S: AssetSink> BodyDecoder for AssetDecoder<S> {
    type Output = DecodedAssets<S>;
    // A million items take seconds to map (and to render, for the poller's sink).
    const HEAVY: bool = true;

    fn feed(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        self.0.feed(chunk)
    }

    fn finish(self) -> Result<DecodedAssets<S>, DecodeError> {
        let (list, to_asset) = self.0.finish_with()?;
        Ok(DecodedAssets {
            set: to_asset.sink,
            usable: list.items.len(),
            rejected: list.rejected,
            duplicates: list.duplicates,
            unrecognized: to_asset.unrecognized,
        })
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
            Asset::from_item(kind, named, 64, &mut unrecognized),
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
        let fields: Vec<_> = unrecognized.iter().map(|u| u.field.label()).collect();
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

    #[test]
    fn host_names_past_the_limit_or_over_1_kib_are_dropped_and_counted() {
        let mut hosts: Vec<String> = (0..200_000).map(|i| format!("h{i}.example")).collect();
        hosts.insert(1, "x".repeat(MAX_LABEL_BYTES + 1));
        hosts.insert(2, "h0.example".into());
        let mut out = Vec::new();
        let kept = label_values(hosts, 64, Field::Hosts, "192.0.2.1", &mut out);
        assert_eq!(kept.len(), 64);
        assert_eq!(kept[0], "h0.example");
        assert_eq!(kept[1], "h1.example");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].field, Field::Hosts);
        assert_eq!(out[0].count, 200_000 - 64 + 1);
        assert!(
            out[0]
                .value
                .starts_with("192.0.2.1: 199937 of 200002 values dropped")
        );
    }
}
