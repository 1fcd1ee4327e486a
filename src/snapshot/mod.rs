//! What a scrape serves: the latest rendered part of each list and the report families, swapped
//! in whole so that a scrape never sees half of a poll.
//!
//! A [`ListPart`] is one list rendered once; a [`Snapshot`] holds both lists' parts with the
//! body assembled from them, and its gzip form made on first demand. A whole exposition is the
//! snapshot's body followed by the [`live`] part, the exporter's own families encoded per
//! scrape.
//!
//! With `metrics.shards` = N above 1, each list is rendered in N shards by
//! [`shard_of`](crate::vocabulary::shard_of), every series of an asset in its shard; the snapshot
//! assembles one body per shard and the whole body from the same chunks, shared, not copied.

use std::sync::{Arc, OnceLock};

use crate::blacklists::Blacklists;
use crate::events::{Events, Memory, Now};
use crate::exposition::assets::{self, ListSamples};
use crate::exposition::gzip::GzipPrefix;
use crate::exposition::piece::Piece;
use crate::exposition::{Format, Rendered, openmetrics_to_text};
use crate::model::{Asset, Reports, worst_first};
use crate::telemetry::{ProcessMetrics, Telemetry};
use crate::vocabulary::Kind;

mod list;

pub use list::{LOW_SCORE, ListBuilder, ListPart, ListShard, Summary, WORST_KEPT};

/// What the live part of a scrape says of one account.
#[derive(Debug, Clone, Copy)]
pub struct Served<'a> {
    /// Its API metrics.
    pub telemetry: &'a Telemetry,
    /// What it serves.
    pub snapshot: &'a Snapshot,
    /// The shard served; `None` for every shard.
    pub shard: Option<usize>,
    /// What is known of the blacklists its reports name.
    pub blacklists: &'a Blacklists,
}

/// The live part of a scrape: an account's API metrics (with the assets of the shard served),
/// its events young now (of the shard served) and what is known of the blacklists its reports
/// name, and the process metrics, each when given (and `# EOF` for OpenMetrics), which follows
/// the snapshot's cached per-asset body. The blacklists' series are in every shard, as the
/// account's are: the alerts of a shard's assets join them.
pub fn live(
    account: Option<Served<'_>>,
    process: Option<&ProcessMetrics>,
    format: Format,
) -> Vec<u8> {
    let mut openmetrics = String::with_capacity(8 * 1024);
    if let Some(Served {
        telemetry,
        snapshot,
        shard,
        blacklists,
    }) = account
    {
        let assets = Kind::ALL.map(|kind| snapshot.count_in(shard, kind));
        telemetry.encode(&mut openmetrics, assets, snapshot.shards());
        (snapshot.events).encode(blacklists, shard, Now::current(), &mut openmetrics);
        if !snapshot.blacklists.is_empty() {
            blacklists.encode_info(snapshot.blacklists.iter().map(|b| &**b), &mut openmetrics);
        }
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
    /// The blacklists the reports name, each once, in name order.
    pub blacklists: Vec<Box<str>>,
    /// The events that may be news, gathered once; each scrape writes those young then.
    pub events: Events,
    /// The per-asset metric families in both formats, rendered once.
    pub rendered: Rendered,
    /// The same, gzip-compressed per format, made on first demand.
    gzip: [OnceLock<GzipPrefix>; 2],
    /// With more than one shard, each shard's body and its gzip form.
    shards: Vec<(Rendered, [OnceLock<GzipPrefix>; 2])>,
}

impl Snapshot {
    /// The whole exposition of one account in one format, as one buffer (`--once`, tests):
    /// this body, then the account's API metrics and, when given, the process metrics.
    pub fn exposition(
        &self,
        telemetry: &Telemetry,
        blacklists: &Blacklists,
        process: Option<&ProcessMetrics>,
        format: Format,
    ) -> Vec<u8> {
        let mut body = self.rendered.to_vec(format);
        let served = Served {
            telemetry,
            snapshot: self,
            shard: None,
            blacklists,
        };
        body.extend_from_slice(&live(Some(served), process, format));
        body
    }

    /// Builds a snapshot from rendered lists: their samples are shared, not copied; only the
    /// report families are rendered here, and the events of the reports and of what the
    /// replica remembers (`memory`) gathered. The lists are in `shards` shards (as [`ListPart::in_shards`] made
    /// them); so is the snapshot.
    pub fn build(
        ips: Option<Arc<ListPart>>,
        domains: Option<Arc<ListPart>>,
        reports: Option<Arc<Reports>>,
        memory: &Memory,
        ready: bool,
        shards: usize,
    ) -> Self {
        let shards = shards.max(1);
        let parts: Vec<&ListPart> = [&ips, &domains]
            .into_iter()
            .flatten()
            .map(|l| &**l)
            .collect();
        assert!(
            parts.iter().all(|part| part.shards.len() == shards),
            "lists rendered in other shards than the snapshot's"
        );
        let lists = [
            (Kind::Ip, ips.as_deref().map(|l| &l.blacklistings)),
            (Kind::Domain, domains.as_deref().map(|l| &l.blacklistings)),
        ];
        let no_reports = Reports::default();
        let reported = reports.as_deref().unwrap_or(&no_reports);
        let events = Events::gather(reported, memory, lists, Now::current().unix, shards);
        let mut per_shard: Vec<_> = (0..shards)
            .map(|shard| {
                let lists: Vec<ListSamples<'_>> =
                    parts.iter().map(|part| part.samples(shard)).collect();
                assets::families(&lists, reports.as_deref())
            })
            .collect();
        let (rendered, shards) = if shards == 1 {
            let whole = per_shard.pop().unwrap_or_default();
            (Rendered::assemble(whole), Vec::new())
        } else {
            // Each family once, its chunks shard after shard.
            let mut whole = per_shard[0].clone();
            for (family, chunks) in whole.iter_mut().enumerate() {
                chunks.1 = per_shard
                    .iter()
                    .flat_map(|shard| shard[family].1.iter().cloned())
                    .collect();
            }
            let shards = per_shard
                .into_iter()
                .map(|shard| (Rendered::assemble(shard), Default::default()))
                .collect();
            (Rendered::assemble(whole), shards)
        };
        let blacklists = reports
            .as_deref()
            .map(Reports::blacklists)
            .unwrap_or_default();
        Snapshot {
            ips,
            domains,
            reports,
            ready,
            blacklists,
            events,
            rendered,
            gzip: Default::default(),
            shards,
        }
    }

    /// Shards served: `metrics.shards`.
    pub fn shards(&self) -> usize {
        self.shards.len().max(1)
    }

    /// The body of shard `shard`, or the whole body for `None` (and for shard 0 of one).
    pub fn rendered(&self, shard: Option<usize>) -> &Rendered {
        match shard.and_then(|shard| self.shards.get(shard)) {
            Some((rendered, _)) => rendered,
            None => &self.rendered,
        }
    }

    /// Number of assets of one kind in shard `shard` (`None`: in every shard).
    pub fn count_in(&self, shard: Option<usize>, kind: Kind) -> usize {
        let list = match kind {
            Kind::Ip => &self.ips,
            Kind::Domain => &self.domains,
        };
        list.as_ref().map_or(0, |list| match shard {
            Some(shard) => list.shards.get(shard).map_or(0, |s| s.names.len()),
            None => list.names.len(),
        })
    }

    /// The body of shard `shard` (`None`: the whole) as the start of a gzip stream, compressed
    /// on the first call (per snapshot, shard and format) and kept.
    pub fn gzip_of(&self, shard: Option<usize>, format: Format) -> &GzipPrefix {
        self.gzip_cell(shard, format)
            .get_or_init(|| GzipPrefix::new(self.rendered(shard).chunks(format)))
    }

    /// Whether the gzip body of this shard and format is ready.
    pub fn has_gzip_of(&self, shard: Option<usize>, format: Format) -> bool {
        self.gzip_cell(shard, format).get().is_some()
    }

    fn gzip_cell(&self, shard: Option<usize>, format: Format) -> &OnceLock<GzipPrefix> {
        match shard.and_then(|shard| self.shards.get(shard)) {
            Some((_, gzip)) => &gzip[format as usize],
            None => &self.gzip[format as usize],
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

    /// The assets the lists show listed, by kind and name, IPs first.
    pub fn listed(&self) -> impl Iterator<Item = (Kind, &str)> {
        self.lists()
            .flat_map(|list| list.listed.iter().map(move |name| (list.kind, &**name)))
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
    pub fn body(&self, format: Format) -> &[Piece] {
        self.rendered.chunks(format)
    }

    /// The whole per-asset body in one format as the start of a gzip stream (see
    /// [`Snapshot::gzip_of`]).
    pub fn gzip(&self, format: Format) -> &GzipPrefix {
        self.gzip_of(None, format)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AssetSet, Unrecognized};
    use crate::upstream::dto::{ListItem, NamedItem};
    use crate::vocabulary::shard_of;

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
        let snapshot = Snapshot::build(
            Some(Arc::new(ips)),
            Some(Arc::new(domains)),
            None,
            &Memory::default(),
            true,
            1,
        );
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
            &Memory::default(),
            true,
            1,
        );
        let second = Snapshot::build(
            Some(part(Kind::Ip, "192.0.2.2")),
            Some(domains),
            None,
            &Memory::default(),
            true,
            1,
        );
        let domain_chunk = |snapshot: &Snapshot| {
            snapshot
                .body(Format::Text)
                .iter()
                .map(Piece::lines)
                .find(|chunk| chunk.starts_with(b"reputation_asset_info{kind=\"domain\""))
                .map(|chunk| chunk.as_ptr())
                .expect("a domain chunk")
        };
        assert_eq!(domain_chunk(&first), domain_chunk(&second));
        let text = String::from_utf8(second.rendered.to_vec(Format::Text)).unwrap();
        assert!(text.contains("reputation_senderscore{kind=\"ip\",asset=\"192.0.2.2\"} 80\n"));
        assert!(!text.contains("192.0.2.1"));
    }

    /// Both lists of a fleet of `n` assets (four in five addresses), every asset with a report,
    /// in `shards` shards.
    fn fleet(n: usize, shards: usize) -> Snapshot {
        let part = |kind: Kind, names: Vec<String>| {
            let assets = names
                .iter()
                .map(|name| asset(kind, name, 1.0, Some(75.0)))
                .collect();
            Some(Arc::new(ListPart::in_shards(
                kind,
                AssetSet { assets },
                shards,
            )))
        };
        let ips: Vec<String> = (0..n * 4 / 5)
            .map(|i| format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255))
            .collect();
        let domains: Vec<String> = (0..n - ips.len())
            .map(|i| format!("mail{i}.example.com"))
            .collect();
        let mut reports = Reports::default();
        for (kind, name) in ips
            .iter()
            .map(|n| (Kind::Ip, n))
            .chain(domains.iter().map(|n| (Kind::Domain, n)))
        {
            let report = crate::model::Report {
                tags: vec!["pool-a".into()],
                ..Default::default()
            };
            reports.set(kind, name.clone(), report, tokio::time::Instant::now());
        }
        Snapshot::build(
            part(Kind::Ip, ips),
            part(Kind::Domain, domains),
            Some(Arc::new(reports)),
            &Memory::default(),
            true,
            shards,
        )
    }

    /// The sample lines of a body, each with the (kind, asset) it is about.
    fn samples(body: &Rendered) -> Vec<(String, (String, String))> {
        let text = String::from_utf8(body.to_vec(Format::OpenMetrics)).unwrap();
        text.lines()
            .filter(|line| !line.starts_with('#'))
            .map(|line| {
                let label = |name: &str| {
                    let start = line.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                    line[start..].split('"').next().unwrap().to_owned()
                };
                (line.to_owned(), (label("kind"), label("asset")))
            })
            .collect()
    }

    #[test]
    fn every_series_is_in_the_one_shard_of_its_asset_and_the_shards_make_the_whole() {
        let snapshot = fleet(500, 4);
        assert_eq!(snapshot.shards(), 4);
        let whole = samples(snapshot.rendered(None));
        let mut union = Vec::new();
        for shard in 0..4 {
            for (line, (kind, asset)) in samples(snapshot.rendered(Some(shard))) {
                let kind = if kind == "ip" { Kind::Ip } else { Kind::Domain };
                assert_eq!(shard_of(kind, &asset, 4), shard, "{line}");
                union.push(line);
            }
        }
        let mut whole: Vec<String> = whole.into_iter().map(|(line, _)| line).collect();
        assert!(
            whole
                .iter()
                .any(|l| l.starts_with("reputation_asset_tag_info")),
            "reports too"
        );
        assert_eq!(union.len(), whole.len(), "each series in exactly one shard");
        union.sort_unstable();
        whole.sort_unstable();
        assert_eq!(union, whole);
        let counted: usize = (0..4).map(|s| snapshot.count_in(Some(s), Kind::Ip)).sum();
        assert_eq!(counted, 400);
        assert_eq!(snapshot.count_in(None, Kind::Domain), 100);
    }

    #[test]
    fn a_packed_list_serves_the_same_bodies_as_a_plain_one() {
        use crate::model::AssetSink as _;
        use std::io::Read as _;

        let build = |pack_above: usize| {
            let mut builder = ListBuilder::new(Kind::Domain, 4).packing_above(pack_above);
            for i in 0..2_000 {
                let score = f64::from(i % 100);
                builder.push(asset(
                    Kind::Domain,
                    &format!("m{i}.example"),
                    0.0,
                    Some(score),
                ));
            }
            let part = Arc::new(builder.finish());
            Snapshot::build(None, Some(part), None, &Memory::default(), true, 4)
        };
        // (plain pieces, packed pieces) of the list
        let pieces = |snapshot: &Snapshot| {
            let list = snapshot.domains.as_ref().unwrap();
            let pieces: Vec<&Piece> = list
                .shards
                .iter()
                .flat_map(|s| s.samples.iter().flatten())
                .collect();
            let packed = pieces.iter().filter(|p| matches!(p, Piece::Packed(_)));
            (pieces.len() - packed.clone().count(), packed.count())
        };
        let (plain, packed) = (build(usize::MAX), build(0));
        assert!(
            matches!(pieces(&plain), (n, 0) if n >= 4),
            "{:?}",
            pieces(&plain)
        );
        assert!(
            matches!(pieces(&packed), (0, n) if n >= 4),
            "{:?}",
            pieces(&packed)
        );
        for shard in [None, Some(0), Some(1), Some(2), Some(3)] {
            for format in Format::ALL {
                let body = plain.rendered(shard).to_vec(format);
                assert!(body.len() > 10_000);
                assert_eq!(packed.rendered(shard).to_vec(format), body);
                let gzip = packed.gzip_of(shard, format).finish(b"up 1\n").concat();
                let mut gunzipped = Vec::new();
                flate2::read::GzDecoder::new(&gzip[..])
                    .read_to_end(&mut gunzipped)
                    .unwrap();
                assert_eq!(gunzipped, [&body[..], b"up 1\n"].concat());
            }
        }
    }

    #[test]
    fn with_one_shard_the_shard_is_the_whole_body_in_the_apis_order() {
        let snapshot = fleet(50, 1);
        assert_eq!(snapshot.shards(), 1);
        assert!(std::ptr::eq(
            snapshot.rendered(Some(0)),
            snapshot.rendered(None)
        ));
        let names: Vec<&str> = snapshot.ips.as_ref().unwrap().names[..3]
            .iter()
            .map(|n| &**n)
            .collect();
        assert_eq!(names, ["10.0.0.0", "10.0.0.1", "10.0.0.2"]);
    }

    #[test]
    fn shards_are_balanced_within_15_percent_of_the_mean() {
        for shards in [8, 16] {
            let snapshot = fleet(10_000, shards);
            let sizes: Vec<usize> = (0..shards)
                .map(|s| {
                    snapshot.count_in(Some(s), Kind::Ip) + snapshot.count_in(Some(s), Kind::Domain)
                })
                .collect();
            let mean = 10_000 / shards;
            let largest = *sizes.iter().max().unwrap();
            assert!(
                largest * 100 <= mean * 115,
                "{shards} shards: {sizes:?}, mean {mean}"
            );
        }
    }

    #[test]
    fn a_shard_keeps_the_apis_order_within_it() {
        let snapshot = fleet(200, 4);
        let ips = snapshot.ips.as_ref().unwrap();
        for shard in &ips.shards {
            let names = &ips.names[shard.names.clone()];
            let mut sorted = names.to_vec();
            sorted.sort_by_key(|name| {
                let octets: Vec<u32> = name.split('.').map(|o| o.parse().unwrap()).collect();
                octets[2] * 256 + octets[3]
            });
            assert_eq!(names, sorted.as_slice());
        }
    }
}
