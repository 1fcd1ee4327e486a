//! The per-asset metric families, each defined once in [`FAMILIES`]: name, help, type, the
//! label it adds to `kind` and `asset`, and where its values come from. The live exposition,
//! the backfill file and the README's metric tables are derived from or checked against it, so
//! a new metric is one entry here plus its test.

#[cfg(test)]
use super::Rendered;
use super::piece::Piece;
use super::{Family, MetricType, SampleWriter};
use crate::model::{Asset, Blacklisting, Blacklistings, Report, Reports};
use crate::vocabulary::{Kind, SndsColour};

/// One per-asset metric family.
#[derive(Debug, Clone, Copy)]
pub struct AssetFamily {
    /// Name, help and type.
    pub family: Family,
    /// The label the family adds to `kind` and `asset`, if any (for a stateset, the state
    /// label, named as the family).
    pub label: Option<&'static str>,
    /// Where the values come from.
    pub source: Source,
}

/// Where a family's values come from, and so how often they change.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// The asset's entry in ip-list or domain-list, refreshed every `poll.interval`.
    List(fn(&Asset, &mut Samples<'_>)),
    /// The asset's report, refreshed every `asset_reports.interval`.
    Report(fn(&Report, &mut Samples<'_>)),
}

impl AssetFamily {
    /// Whether the family comes from the lists (not the reports).
    pub fn from_list(&self) -> bool {
        matches!(self.source, Source::List(_))
    }
}

/// Receives the samples of one family for one asset.
pub struct Samples<'a> {
    writer: &'a mut SampleWriter,
    /// The family's place in the writer.
    index: usize,
    family: &'a AssetFamily,
    kind: &'a str,
    asset: &'a str,
    /// What the asset's list says of the blacklistings, where a report family is written.
    blacklistings: Option<&'a Blacklistings>,
}

impl Samples<'_> {
    /// What the asset's list says of its blacklisting count and change (a report family's).
    fn listed(&self) -> Blacklisting {
        self.blacklistings
            .map_or(Blacklisting::UNLISTED, |said| said.of(self.asset))
    }

    /// One sample, or none for `None`.
    #[inline]
    fn value(&mut self, value: Option<f64>) {
        if let Some(value) = value {
            let labels = [("kind", self.kind), ("asset", self.asset)];
            let name = self.family.family.name;
            self.writer.sample_in(self.index, name, &labels, value);
        }
    }

    /// One sample with the family's own label set to `label`.
    #[inline]
    fn labelled(&mut self, label: &str, value: f64) {
        let name = (self.family.label).expect("a family with labelled samples names its label");
        let labels = [("kind", self.kind), ("asset", self.asset), (name, label)];
        let name = self.family.family.name;
        self.writer.sample_in(self.index, name, &labels, value);
    }
}

const fn family(
    name: &'static str,
    metric_type: MetricType,
    label: Option<&'static str>,
    source: Source,
    help: &'static str,
) -> AssetFamily {
    AssetFamily {
        family: Family {
            name,
            help,
            metric_type,
        },
        label,
        source,
    }
}

const fn list_gauge(
    name: &'static str,
    value: fn(&Asset, &mut Samples<'_>),
    help: &'static str,
) -> AssetFamily {
    family(name, MetricType::Gauge, None, Source::List(value), help)
}

fn one(yes: bool) -> f64 {
    f64::from(u8::from(yes))
}

/// `reputation_asset_info`.
pub const ASSET_INFO: AssetFamily = family(
    "reputation_asset_info",
    MetricType::Info,
    None,
    Source::List(|_, s| s.value(Some(1.0))),
    "1 for every asset (IP address or domain) in the API's ip-list and domain-list. \
     Refreshed every poll.interval.",
);

/// `reputation_senderscore`.
pub const SENDERSCORE: AssetFamily = list_gauge(
    "reputation_senderscore",
    |a, s| s.value(a.senderscore),
    "Sender Score of the asset (API field senderscore), 0 to 100; no sample when the API has \
     no score (null or -1). Refreshed every poll.interval.",
);

/// `reputation_senderscore_previous`.
pub const SENDERSCORE_PREVIOUS: AssetFamily = list_gauge(
    "reputation_senderscore_previous",
    |a, s| s.value(a.senderscore_previous),
    "Previous Sender Score (API field senderscore_prev); no sample when null or -1. Refreshed \
     every poll.interval.",
);

/// `reputation_senderscore_change`.
pub const SENDERSCORE_CHANGE: AssetFamily = list_gauge(
    "reputation_senderscore_change",
    |a, s| s.value(a.senderscore_change),
    "Sender Score change at the last check (API field senderscore_change.last_check). \
     Refreshed every poll.interval.",
);

/// `reputation_senderscore_missed_change`.
pub const SENDERSCORE_MISSED_CHANGE: AssetFamily = list_gauge(
    "reputation_senderscore_missed_change",
    |a, s| s.value(a.senderscore_missed_change),
    "Sender Score change since this replica's previous list that the change at the last check \
     does not account for: what earlier API checks changed that no list this replica polled \
     showed (an API outage, a restart). Only for the list after such a time, only when not 0. \
     Refreshed every poll.interval.",
);

/// `reputation_blacklistings`.
pub const BLACKLISTINGS: AssetFamily = list_gauge(
    "reputation_blacklistings",
    |a, s| s.value(a.blacklistings),
    "Number of blacklists listing the asset (API field blacklisted). Refreshed every \
     poll.interval.",
);

/// `reputation_blacklistings_change`.
pub const BLACKLISTINGS_CHANGE: AssetFamily = list_gauge(
    "reputation_blacklistings_change",
    |a, s| s.value(a.blacklistings_change),
    "Change of the blacklisting count at the last check (API field \
     blacklisted_change.last_check). Refreshed every poll.interval.",
);

/// `reputation_snds_blocked`.
pub const SNDS_BLOCKED: AssetFamily = list_gauge(
    "reputation_snds_blocked",
    |a, s| s.value(a.snds_blocked),
    "Microsoft SNDS blocked state (API field snds_blocked): 1 blocked, 0 not blocked; no \
     sample without data. Refreshed every poll.interval.",
);

/// `reputation_snds_blocked_change`.
pub const SNDS_BLOCKED_CHANGE: AssetFamily = list_gauge(
    "reputation_snds_blocked_change",
    |a, s| s.value(a.snds_blocked_change),
    "SNDS blocked change at the last check (API field snds_blocked_change.last_check), when \
     numeric. Refreshed every poll.interval.",
);

/// `reputation_snds_blocked_missed_change`.
pub const SNDS_BLOCKED_MISSED_CHANGE: AssetFamily = list_gauge(
    "reputation_snds_blocked_missed_change",
    |a, s| s.value(a.snds_blocked_missed_change),
    "SNDS blocked change since this replica's previous list that the change at the last check \
     does not account for (1: blocked at an API check no list this replica polled showed). \
     Only for the list after such a time, only when not 0. Refreshed every poll.interval.",
);

/// `reputation_snds_reputation`: a stateset, whose state label is named as the family.
pub const SNDS_REPUTATION: AssetFamily = family(
    "reputation_snds_reputation",
    MetricType::StateSet,
    Some("reputation_snds_reputation"),
    Source::List(|a, s| {
        if let Some(current) = a.snds_reputation {
            for state in SndsColour::ALL {
                s.labelled(state.label(), one(state == current));
            }
        }
    }),
    "Microsoft SNDS reputation colour (API field snds_reputation): 1 for the current state. \
     No series when the API has no data. Refreshed every poll.interval.",
);

/// `reputation_snds_reputation_value`.
pub const SNDS_REPUTATION_VALUE: AssetFamily = list_gauge(
    "reputation_snds_reputation_value",
    |a, s| s.value(a.snds_reputation_value),
    "SNDS reputation (API field snds_reputation) when the API sends it as a number; no colour \
     is assumed. Refreshed every poll.interval.",
);

/// `reputation_snds_reputation_change`.
pub const SNDS_REPUTATION_CHANGE: AssetFamily = list_gauge(
    "reputation_snds_reputation_change",
    |a, s| s.value(a.snds_reputation_change),
    "SNDS reputation change at the last check (API field snds_reputation_change.last_check), \
     when numeric. Refreshed every poll.interval.",
);

/// `reputation_asset_hostname_info`.
pub const HOSTNAME_INFO: AssetFamily = family(
    "reputation_asset_hostname_info",
    MetricType::Info,
    Some("hostname"),
    Source::List(|a, s| {
        for host in &a.hostnames {
            s.labelled(host, 1.0);
        }
    }),
    "1 for each host name of an IP address (API field hosts). Refreshed every poll.interval.",
);

/// `reputation_domain_ips`.
pub const DOMAIN_IPS: AssetFamily = list_gauge(
    "reputation_domain_ips",
    |a, s| s.value(a.domain_ips),
    "Number of addresses in a domain's ips list (API field ips), when it is a list. Refreshed \
     every poll.interval.",
);

/// `reputation_blacklist_listed`.
pub const BLACKLIST_LISTED: AssetFamily = family(
    "reputation_blacklist_listed",
    MetricType::Gauge,
    Some("blacklist"),
    Source::Report(|r, s| {
        for listing in &r.listings {
            s.labelled(&listing.blacklist, one(listing.listed));
        }
    }),
    "1 when the newest event of this blacklist in the asset report (blacklist_history) has \
     status Listed, else 0. Refreshed every asset_reports.interval.",
);

/// `reputation_blacklist_last_change_timestamp_seconds`.
pub const BLACKLIST_CHANGED: AssetFamily = family(
    "reputation_blacklist_last_change_timestamp_seconds",
    MetricType::Gauge,
    Some("blacklist"),
    Source::Report(|r, s| {
        for listing in &r.listings {
            s.labelled(&listing.blacklist, listing.changed);
        }
    }),
    "Unix time of the newest event of this blacklist in the asset report (blacklist_history). \
     Refreshed every asset_reports.interval.",
);

/// `reputation_blacklist_listed_since_timestamp_seconds`.
pub const BLACKLIST_LISTED_SINCE: AssetFamily = family(
    "reputation_blacklist_listed_since_timestamp_seconds",
    MetricType::Gauge,
    Some("blacklist"),
    Source::Report(|r, s| {
        for listing in &r.listings {
            if let Some(since) = listing.since {
                s.labelled(&listing.blacklist, since);
            }
        }
    }),
    "Unix time the asset's current listing on this blacklist began: the first Listed event \
     since the last other event of that blacklist in the asset report (blacklist_history). \
     Only while listed. Refreshed every asset_reports.interval, and at once when the list's \
     blacklisted count or its change differs from the report's.",
);

/// `reputation_blacklistings_named`.
pub const BLACKLISTINGS_NAMED: AssetFamily = family(
    "reputation_blacklistings_named",
    MetricType::Gauge,
    None,
    Source::Report(|r, s| s.value(Some(r.named as f64))),
    "Number of blacklists the asset report names as listing the asset now (blacklist_history); \
     fewer than reputation_blacklistings while the report has not caught up with the list. \
     Refreshed every asset_reports.interval, and at once when the list's blacklisted count or \
     its change differs from the report's.",
);

/// `reputation_blacklistings_rise_timestamp_seconds`.
pub const BLACKLISTINGS_ROSE: AssetFamily = family(
    "reputation_blacklistings_rise_timestamp_seconds",
    MetricType::Gauge,
    None,
    Source::Report(|r, s| {
        let rose = r.blacklistings_rose.and_then(|_| r.rise_as_of(s.listed()));
        s.value(rose);
    }),
    "Unix time of the newest entry of the asset report's blacklisted_history, only while it \
     counts more blacklists than the entry before it: the API check at which the count rose, \
     while that rise is the newest change. Not while the list's blacklisted count or its \
     change differs from the report's: the report is then fetched at once, and its rise dates \
     an older check. Refreshed every asset_reports.interval.",
);

/// `reputation_blacklistings_rise_ended`.
pub const BLACKLISTINGS_ROSE_ENDED: AssetFamily = family(
    "reputation_blacklistings_rise_ended",
    MetricType::Gauge,
    None,
    Source::Report(|r, s| {
        let ended = r.blacklistings_rise_ended;
        s.value(ended.filter(|_| r.rise_as_of(s.listed()).is_some()));
    }),
    "With reputation_blacklistings_rise_timestamp_seconds, how many listings the asset report \
     (blacklist_history) says ended since the blacklisted_history entry before the rise, having \
     begun by it: the count's change at the rise is net of them, so as many more listings \
     began. Refreshed every asset_reports.interval.",
);

/// `reputation_asset_tag_info`.
pub const TAG_INFO: AssetFamily = family(
    "reputation_asset_tag_info",
    MetricType::Info,
    Some("tag"),
    Source::Report(|r, s| {
        for tag in &r.tags {
            s.labelled(tag, 1.0);
        }
    }),
    "1 for each tag of the asset (asset report field tags). Refreshed every \
     asset_reports.interval.",
);

/// `reputation_senderscore_last_update_timestamp_seconds`.
pub const SCORE_UPDATED: AssetFamily = family(
    "reputation_senderscore_last_update_timestamp_seconds",
    MetricType::Gauge,
    None,
    Source::Report(|r, s| s.value(r.senderscore_updated)),
    "Unix time of the newest Sender Score in the asset report (senderscore_history). \
     Refreshed every asset_reports.interval.",
);

/// Every per-asset family, in the order they are written: the list families, then the
/// report families.
pub static FAMILIES: [AssetFamily; 23] = [
    ASSET_INFO,
    SENDERSCORE,
    SENDERSCORE_PREVIOUS,
    SENDERSCORE_CHANGE,
    SENDERSCORE_MISSED_CHANGE,
    BLACKLISTINGS,
    BLACKLISTINGS_CHANGE,
    SNDS_BLOCKED,
    SNDS_BLOCKED_CHANGE,
    SNDS_BLOCKED_MISSED_CHANGE,
    SNDS_REPUTATION,
    SNDS_REPUTATION_VALUE,
    SNDS_REPUTATION_CHANGE,
    HOSTNAME_INFO,
    DOMAIN_IPS,
    BLACKLIST_LISTED,
    BLACKLIST_CHANGED,
    BLACKLIST_LISTED_SINCE,
    BLACKLISTINGS_NAMED,
    BLACKLISTINGS_ROSE,
    BLACKLISTINGS_ROSE_ENDED,
    TAG_INFO,
    SCORE_UPDATED,
];

/// The families that come from the lists, in the order they are written.
pub fn list_families() -> impl Iterator<Item = &'static AssetFamily> {
    FAMILIES.iter().filter(|f| f.from_list())
}

/// The families that come from the asset reports, written after the list families.
pub fn report_families() -> impl Iterator<Item = &'static AssetFamily> {
    FAMILIES.iter().filter(|f| !f.from_list())
}

/// One list as the exposition reads it: its kind, its asset names in the order sent, and its
/// samples as a [`ListRenderer`] wrote them.
#[derive(Debug, Clone, Copy)]
pub struct ListSamples<'a> {
    /// IP addresses or domains.
    pub kind: Kind,
    /// Every asset's name.
    pub names: &'a [Box<str>],
    /// The chunks of each family of [`list_families`].
    pub samples: &'a [Vec<Piece>],
    /// What the list says of its assets' blacklistings.
    pub blacklistings: &'a Blacklistings,
}

/// Renders a list's assets one after another, as they arrive: one buffer per family of
/// [`list_families`], so that the families still follow one another in the body.
#[derive(Debug)]
pub struct ListRenderer {
    writer: SampleWriter,
}

impl Default for ListRenderer {
    fn default() -> Self {
        ListRenderer {
            writer: SampleWriter::with_families(list_families().count()),
        }
    }
}

impl ListRenderer {
    /// Writes every sample of one asset.
    pub fn push(&mut self, asset: &Asset) {
        let kind = asset.kind.label();
        for (index, family) in list_families().enumerate() {
            let Source::List(write) = family.source else {
                unreachable!("list_families gives list families only");
            };
            let mut samples = Samples {
                writer: &mut self.writer,
                index,
                family,
                kind,
                asset: &asset.name,
                blacklistings: None,
            };
            write(asset, &mut samples);
        }
    }

    /// Bytes of sample lines written so far.
    pub fn written(&self) -> usize {
        self.writer.written()
    }

    /// Packs what was written and everything written from now on (see [`super::piece`]).
    pub fn pack(&mut self) {
        self.writer.pack();
    }

    /// The pieces of each family of [`list_families`].
    pub fn finish(self) -> Vec<Vec<Piece>> {
        self.writer.finish()
    }
}

/// The sample lines of one list's assets, as a [`ListRenderer`] writes them.
#[cfg(test)]
pub(crate) fn render_list(assets: &[Asset]) -> Vec<Vec<Piece>> {
    let mut renderer = ListRenderer::default();
    for asset in assets {
        renderer.push(asset);
    }
    renderer.finish()
}

/// The sample lines of the reports of one list's assets, one chunk per family of
/// [`report_families`]. Only assets still in the list count: a report never outlives its asset.
/// A large list is rendered in parts side by side, one per core, each part's chunks after the
/// previous part's.
fn render_reports(list: &ListSamples<'_>, reports: &Reports) -> Vec<Vec<Piece>> {
    /// Below this many assets one thread renders faster than several start.
    const PART_MIN: usize = 20_000;
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let parts = (list.names.len() / PART_MIN).clamp(1, threads);
    if parts == 1 {
        return render_reports_of(list, list.names, reports);
    }
    let rendered: Vec<Vec<Vec<Piece>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = list
            .names
            .chunks(list.names.len().div_ceil(parts))
            .map(|names| scope.spawn(move || render_reports_of(list, names, reports)))
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))
            })
            .collect()
    });
    let mut rendered = rendered.into_iter();
    let mut families = rendered.next().unwrap_or_default();
    for part in rendered {
        for (family, chunks) in families.iter_mut().zip(part) {
            family.extend(chunks);
        }
    }
    families
}

/// [`render_reports`] of these assets, on this thread.
fn render_reports_of(
    list: &ListSamples<'_>,
    names: &[Box<str>],
    reports: &Reports,
) -> Vec<Vec<Piece>> {
    let kind = list.kind;
    let mut writer = SampleWriter::default();
    for family in &FAMILIES {
        let Source::Report(write) = family.source else {
            continue;
        };
        writer.family();
        let index = writer.open_families() - 1;
        for name in names {
            if let Some(report) = reports.get(kind, name) {
                let mut samples = Samples {
                    writer: &mut writer,
                    index,
                    family,
                    kind: kind.label(),
                    asset: name,
                    blacklistings: Some(list.blacklistings),
                };
                write(report, &mut samples);
            }
        }
    }
    writer.finish()
}

/// The per-asset body of these lists in both formats (no `# EOF`): each list's rendered
/// samples, shared, between the family headers; and the report families when there are
/// reports.
#[cfg(test)]
pub(crate) fn render(lists: &[ListSamples<'_>], reports: Option<&Reports>) -> Rendered {
    Rendered::assemble(families(lists, reports))
}

/// The sample chunks of these lists and their reports, family by family in exposition order
/// (the report families only when there are reports), for [`Rendered::assemble`].
pub fn families(
    lists: &[ListSamples<'_>],
    reports: Option<&Reports>,
) -> Vec<(&'static Family, Vec<Piece>)> {
    // Family `i`'s chunks of every list, one list after another.
    let chunk = |rendered: &[&[Vec<Piece>]], i: usize| -> Vec<Piece> {
        rendered
            .iter()
            .filter_map(|r| r.get(i))
            .flatten()
            .cloned()
            .collect()
    };
    let listed: Vec<&[Vec<Piece>]> = lists.iter().map(|list| list.samples).collect();
    let mut parts: Vec<(&Family, Vec<Piece>)> = list_families()
        .enumerate()
        .map(|(i, f)| (&f.family, chunk(&listed, i)))
        .collect();
    if let Some(reports) = reports {
        let rendered: Vec<Vec<Vec<Piece>>> = lists
            .iter()
            .map(|list| render_reports(list, reports))
            .collect();
        let reported: Vec<&[Vec<Piece>]> = rendered.iter().map(Vec::as_slice).collect();
        parts.extend(
            report_families()
                .enumerate()
                .map(|(i, f)| (&f.family, chunk(&reported, i))),
        );
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::Format;
    use crate::model::Listing;

    fn asset() -> Asset {
        Asset {
            kind: Kind::Ip,
            name: "192.0.2.1".into(),
            hostnames: vec!["mx1.example".into(), "mx2.example".into()],
            senderscore: Some(71.0),
            senderscore_previous: Some(75.0),
            senderscore_change: Some(-4.0),
            blacklistings: Some(1.0),
            blacklistings_change: Some(1.0),
            snds_blocked: Some(0.0),
            snds_blocked_change: Some(0.0),
            snds_reputation: Some(SndsColour::Yellow),
            snds_reputation_value: Some(2.0),
            snds_reputation_change: Some(1.0),
            domain_ips: Some(3.0),
            senderscore_missed_change: Some(-12.0),
            snds_blocked_missed_change: Some(1.0),
        }
    }

    /// What a list of `assets` says of their blacklistings.
    fn said(assets: &[Asset]) -> Blacklistings {
        let mut said = Blacklistings::default();
        for asset in assets {
            said.note(&asset.name, asset.blacklisting());
        }
        said
    }

    /// The value of the one sample of `family` in a body rendered from `assets` and one report
    /// of the first of them, if there is one.
    fn reported(assets: &[Asset], report: Report, family: &str) -> Option<String> {
        let names: Vec<Box<str>> = assets.iter().map(|a| a.name.as_str().into()).collect();
        let mut reports = Reports::default();
        let now = tokio::time::Instant::now();
        reports.set(assets[0].kind, assets[0].name.clone(), report, now);
        let samples = render_list(assets);
        let blacklistings = said(assets);
        let list = ListSamples {
            kind: assets[0].kind,
            names: &names,
            samples: &samples,
            blacklistings: &blacklistings,
        };
        let body = String::from_utf8(render(&[list], Some(&reports)).to_vec(Format::Text)).unwrap();
        let prefix = format!("{family}{{");
        let line = body.lines().find(|l| l.starts_with(&prefix))?;
        Some(line.rsplit(' ').next()?.to_owned())
    }

    #[test]
    fn a_report_behind_its_list_serves_no_rise() {
        let rose = |count: f64, change: f64| Report {
            blacklistings_rose: Some(1_699_990_000.0),
            blacklistings_rise_ended: Some(2.0),
            blacklisting: Blacklisting {
                count: Some(count),
                change: Some(change),
            },
            named: 1,
            ..Report::default()
        };
        let family = BLACKLISTINGS_ROSE.family.name;
        let mut listed = asset();
        // The list says what the report says: the report's rise is the newest.
        (listed.blacklistings, listed.blacklistings_change) = (Some(1.0), Some(1.0));
        let served = reported(std::slice::from_ref(&listed), rose(1.0, 1.0), family);
        assert_eq!(served.as_deref(), Some("1699990000"));
        let ended = BLACKLISTINGS_ROSE_ENDED.family.name;
        let served = reported(std::slice::from_ref(&listed), rose(1.0, 1.0), ended);
        assert_eq!(served.as_deref(), Some("2"));
        // A later check counts another listing: the report dates the earlier rise, not this one,
        // nor says what that rise is net of.
        (listed.blacklistings, listed.blacklistings_change) = (Some(2.0), Some(1.0));
        let served = reported(std::slice::from_ref(&listed), rose(1.0, 1.0), family);
        assert_eq!(served, None);
        let served = reported(std::slice::from_ref(&listed), rose(1.0, 1.0), ended);
        assert_eq!(served, None);
        // The same count, no longer changing: no rise is the newest change.
        (listed.blacklistings, listed.blacklistings_change) = (Some(1.0), Some(0.0));
        let served = reported(std::slice::from_ref(&listed), rose(1.0, 1.0), family);
        assert_eq!(served, None);
        // The rest of the report is served as it is: it names what it names.
        let named = BLACKLISTINGS_NAMED.family.name;
        let served = reported(std::slice::from_ref(&listed), rose(1.0, 1.0), named);
        assert_eq!(served.as_deref(), Some("1"));
        // Delisted since, and at 0 for more than one check: a list keeps nothing of such an
        // asset, and the report is behind it all the same.
        (listed.blacklistings, listed.blacklistings_change) = (Some(0.0), Some(0.0));
        let served = reported(std::slice::from_ref(&listed), rose(1.0, 1.0), family);
        assert_eq!(served, None);
    }

    /// Each sample line of the body as (name, label names, label value of the family's own
    /// label).
    fn lines(body: &str) -> Vec<(String, Vec<String>, String)> {
        let sample = regex::Regex::new(r#"^([a-z_]+)\{(.*)\} (\S+)$"#).unwrap();
        let label = regex::Regex::new(r#"([a-z_]+)="([^"]*)""#).unwrap();
        body.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let c = sample.captures(l).unwrap_or_else(|| panic!("{l}"));
                let labels: Vec<_> = label.captures_iter(&c[2]).collect();
                let names = labels.iter().map(|l| l[1].to_owned()).collect();
                let last = labels.last().map(|l| l[2].to_owned()).unwrap();
                (c[1].to_owned(), names, last)
            })
            .collect()
    }

    #[test]
    fn every_family_writes_samples_under_its_own_name_and_labels_in_table_order() {
        let assets = [asset()];
        let samples = render_list(&assets);
        let names: Vec<Box<str>> = vec!["192.0.2.1".into()];
        let mut reports = Reports::default();
        reports.set(
            Kind::Ip,
            "192.0.2.1".into(),
            Report {
                tags: vec!["outbound".into()],
                listings: vec![Listing {
                    blacklist: "Spamhaus SBL".into(),
                    listed: true,
                    changed: 1_700_000_000.0,
                    since: Some(1_699_990_000.0),
                }],
                named: 1,
                senderscore_updated: Some(1_700_000_001.0),
                blacklistings_rose: Some(1_699_990_000.0),
                blacklistings_rise_ended: Some(1.0),
                blacklisting: assets[0].blacklisting(),
                ..Report::default()
            },
            tokio::time::Instant::now(),
        );
        let blacklistings = said(&assets);
        let list = ListSamples {
            kind: Kind::Ip,
            names: &names,
            samples: &samples,
            blacklistings: &blacklistings,
        };
        let body = String::from_utf8(render(&[list], Some(&reports)).to_vec(Format::Text)).unwrap();
        let lines = lines(&body);

        // Families appear in the table's order, each with at least one sample.
        let mut order: Vec<&str> = lines.iter().map(|(name, ..)| name.as_str()).collect();
        order.dedup();
        let table: Vec<&str> = FAMILIES.iter().map(|f| f.family.name).collect();
        assert_eq!(order, table);

        for family in &FAMILIES {
            let expected: Vec<&str> = ["kind", "asset"].into_iter().chain(family.label).collect();
            let own: Vec<&str> = lines
                .iter()
                .filter(|(name, ..)| name == family.family.name)
                .inspect(|(_, labels, _)| assert_eq!(labels, &expected, "{}", family.family.name))
                .map(|(.., value)| value.as_str())
                .collect();
            let want: &[&str] = match family.family.name {
                "reputation_snds_reputation" => &["green", "yellow", "red"],
                "reputation_asset_hostname_info" => &["mx1.example", "mx2.example"],
                "reputation_blacklist_listed"
                | "reputation_blacklist_last_change_timestamp_seconds"
                | "reputation_blacklist_listed_since_timestamp_seconds" => &["Spamhaus SBL"],
                "reputation_asset_tag_info" => &["outbound"],
                _ => &["192.0.2.1"],
            };
            assert_eq!(own, want, "{}", family.family.name);
        }
        assert!(body.contains(
            "reputation_snds_reputation{kind=\"ip\",asset=\"192.0.2.1\",reputation_snds_reputation=\"yellow\"} 1\n"
        ));
        assert!(
            body.contains("reputation_senderscore_previous{kind=\"ip\",asset=\"192.0.2.1\"} 75\n")
        );
        assert!(body.contains(
            "reputation_senderscore_missed_change{kind=\"ip\",asset=\"192.0.2.1\"} -12\n"
        ));
        assert!(body.contains(
            "reputation_snds_blocked_missed_change{kind=\"ip\",asset=\"192.0.2.1\"} 1\n"
        ));
        assert!(body.contains(
            "reputation_blacklist_listed_since_timestamp_seconds{kind=\"ip\",asset=\"192.0.2.1\",blacklist=\"Spamhaus SBL\"} 1699990000\n"
        ));
        assert!(
            body.contains("reputation_blacklistings_named{kind=\"ip\",asset=\"192.0.2.1\"} 1\n")
        );
        assert!(body.contains(
            "reputation_blacklistings_rise_timestamp_seconds{kind=\"ip\",asset=\"192.0.2.1\"} 1699990000\n"
        ));
        assert!(
            body.contains(
                "reputation_blacklistings_rise_ended{kind=\"ip\",asset=\"192.0.2.1\"} 1\n"
            )
        );
    }

    #[test]
    fn without_reports_only_the_list_families_are_written() {
        let assets = [asset()];
        let samples = render_list(&assets);
        assert_eq!(samples.len(), list_families().count());
        let names: Vec<Box<str>> = vec!["192.0.2.1".into()];
        let blacklistings = said(&assets);
        let list = ListSamples {
            kind: Kind::Ip,
            names: &names,
            samples: &samples,
            blacklistings: &blacklistings,
        };
        let body = String::from_utf8(render(&[list], None).to_vec(Format::Text)).unwrap();
        for family in &FAMILIES {
            let header = format!("# TYPE {} ", family.family.name);
            assert_eq!(
                body.contains(&header),
                family.from_list(),
                "{}",
                family.family.name
            );
        }
    }
}
