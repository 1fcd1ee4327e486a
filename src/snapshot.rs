//! What a scrape serves: the latest rendered part of each list and the report families, swapped
//! in whole so that a scrape never sees half of a poll.
//!
//! A [`ListPart`] is one list rendered once; a [`Snapshot`] holds both lists' parts with the
//! body assembled from them, and its gzip form made on first demand. A whole exposition is the
//! snapshot's body followed by the [`live`] part, the exporter's own families encoded per
//! scrape.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use crate::exposition::assets::{self, ListSamples};
use crate::exposition::gzip::GzipPrefix;
use crate::exposition::{Format, Rendered, openmetrics_to_text};
use crate::model::{Asset, AssetSet, Reports, worst_first};
use crate::telemetry::{ProcessMetrics, Telemetry};
use crate::vocabulary::{Kind, SndsColour};

/// The live part of a scrape: an account's API metrics and the process metrics, each when
/// given (and `# EOF` for OpenMetrics), which follows the snapshot's cached per-asset body.
pub fn live(
    account: Option<(&Telemetry, &Snapshot)>,
    process: Option<&ProcessMetrics>,
    format: Format,
) -> Vec<u8> {
    let mut openmetrics = String::with_capacity(8 * 1024);
    if let Some((telemetry, snapshot)) = account {
        let assets = Kind::ALL.map(|kind| snapshot.count(kind));
        telemetry.encode(&mut openmetrics, assets);
    }
    if let Some(process) = process {
        process.encode(&mut openmetrics);
    }
    match format {
        Format::OpenMetrics => {
            let mut live = openmetrics.into_bytes();
            live.extend_from_slice(b"# EOF\n");
            live
        }
        Format::Text => {
            let mut live = Vec::with_capacity(openmetrics.len() + 1024);
            openmetrics_to_text::convert(&openmetrics, &mut live);
            live
        }
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
    /// Sample lines, one chunk per family of [`assets::list_families`].
    pub samples: Vec<Bytes>,
    /// How many of the assets are in trouble, for the landing page.
    pub summary: Summary,
}

/// Sender Score under which the landing page counts an asset as low: the shipped alert's
/// threshold, the mixin's default `senderScoreFloor` (tests/e2e/mixin.sh holds them equal).
pub const LOW_SCORE: f64 = 70.0;

/// How many assets a list or snapshot holds, and how many of them are in trouble.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Every asset.
    pub assets: usize,
    /// Listed on at least one blacklist.
    pub listed: usize,
    /// SNDS colour red.
    pub snds_red: usize,
    /// Sender Score below [`LOW_SCORE`].
    pub low_score: usize,
}

impl Summary {
    fn of(assets: &[Asset]) -> Summary {
        let count = |keep: fn(&Asset) -> bool| assets.iter().filter(|a| keep(a)).count();
        Summary {
            assets: assets.len(),
            listed: count(|a| a.blacklistings.is_some_and(|n| n > 0.0)),
            snds_red: count(|a| a.snds_reputation == Some(SndsColour::Red)),
            low_score: count(|a| a.senderscore.is_some_and(|s| s < LOW_SCORE)),
        }
    }

    fn add(self, other: Summary) -> Summary {
        Summary {
            assets: self.assets + other.assets,
            listed: self.listed + other.listed,
            snds_red: self.snds_red + other.snds_red,
            low_score: self.low_score + other.low_score,
        }
    }
}

impl ListPart {
    /// Renders the assets of one list and keeps what a snapshot needs of them.
    pub fn new(kind: Kind, set: AssetSet) -> ListPart {
        let samples = assets::render_list(&set.assets);
        let summary = Summary::of(&set.assets);
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
            summary,
        }
    }
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
    /// The whole exposition of one account in one format, as one buffer (`--once`, tests):
    /// this body, then the account's API metrics and, when given, the process metrics.
    pub fn exposition(
        &self,
        telemetry: &Telemetry,
        process: Option<&ProcessMetrics>,
        format: Format,
    ) -> Vec<u8> {
        let mut body = self.rendered.to_vec(format);
        body.extend_from_slice(&live(Some((telemetry, self)), process, format));
        body
    }

    /// Builds a snapshot from rendered lists: their samples are shared, not copied; only the
    /// report families are rendered here.
    pub fn build(
        ips: Option<Arc<ListPart>>,
        domains: Option<Arc<ListPart>>,
        reports: Option<Arc<Reports>>,
        ready: bool,
    ) -> Self {
        let lists: Vec<ListSamples<'_>> = [&ips, &domains]
            .into_iter()
            .flatten()
            .map(|list| ListSamples {
                kind: list.kind,
                names: &list.names,
                samples: &list.samples,
            })
            .collect();
        let rendered = assets::render(&lists, reports.as_deref());
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

    /// Both lists' summaries together.
    pub fn summary(&self) -> Summary {
        self.lists()
            .map(|list| list.summary)
            .fold(Summary::default(), Summary::add)
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
    use crate::model::Unrecognized;
    use crate::upstream::dto::{ListItem, NamedItem};

    fn asset(kind: Kind, name: &str, blacklistings: f64, senderscore: Option<f64>) -> Asset {
        let mut unrecognized: Vec<Unrecognized> = Vec::new();
        let named = NamedItem {
            name: name.into(),
            item: ListItem::default(),
        };
        let mut asset = Asset::from_item(kind, named, 64, &mut unrecognized);
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
}
