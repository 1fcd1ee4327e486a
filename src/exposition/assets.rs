//! The per-asset metric families, rendered once per snapshot.

use bytes::Bytes;

use super::{Family, MetricType, Rendered, SampleWriter};
use crate::model::{Asset, Listing, Reports};
use crate::vocabulary::{Kind, SndsColour};

/// One list as the exposition reads it: its kind, its asset names in the order sent, and its
/// samples as [`render_list`] wrote them.
#[derive(Debug, Clone, Copy)]
pub struct ListSamples<'a> {
    /// IP addresses or domains.
    pub kind: Kind,
    /// Every asset's name.
    pub names: &'a [Box<str>],
    /// One chunk per family of [`list_families`].
    pub samples: &'a [Bytes],
}

const fn gauge(name: &'static str, help: &'static str) -> Family {
    Family {
        name,
        help,
        kind: MetricType::Gauge,
    }
}

/// `reputation_asset_info`.
pub const ASSET_INFO: Family = Family {
    name: "reputation_asset_info",
    help: "1 for every asset (IP address or domain) in the API's ip-list and domain-list. \
           Refreshed every poll.interval.",
    kind: MetricType::Info,
};

/// `reputation_snds_reputation`.
pub const SNDS_REPUTATION: Family = Family {
    name: "reputation_snds_reputation",
    help: "Microsoft SNDS reputation colour (API field snds_reputation): 1 for the current \
           state. No series when the API has no data. Refreshed every poll.interval.",
    kind: MetricType::StateSet,
};

/// `reputation_asset_hostname_info`.
pub const HOSTNAME_INFO: Family = Family {
    name: "reputation_asset_hostname_info",
    help: "1 for each host name of an IP address (API field hosts). Refreshed every \
           poll.interval.",
    kind: MetricType::Info,
};

/// `reputation_domain_ips`.
pub const DOMAIN_IPS: Family = gauge(
    "reputation_domain_ips",
    "Number of addresses in a domain's ips list (API field ips), when it is a list. Refreshed \
     every poll.interval.",
);

/// Reads the value a gauge shows for an asset; `None` means no sample.
pub type Getter = fn(&Asset) -> Option<f64>;

/// The plain gauges: family and the value it shows for an asset.
pub const GAUGES: [(Family, Getter); 9] = [
    (
        gauge(
            "reputation_senderscore",
            "Sender Score of the asset (API field senderscore), 0 to 100; no sample when the \
             API has no score (null or -1). Refreshed every poll.interval.",
        ),
        |a| a.senderscore,
    ),
    (
        gauge(
            "reputation_senderscore_previous",
            "Previous Sender Score (API field senderscore_prev); no sample when null or -1. \
             Refreshed every poll.interval.",
        ),
        |a| a.senderscore_previous,
    ),
    (
        gauge(
            "reputation_senderscore_change",
            "Sender Score change at the last check (API field senderscore_change.last_check). \
             Refreshed every poll.interval.",
        ),
        |a| a.senderscore_change,
    ),
    (
        gauge(
            "reputation_blacklistings",
            "Number of blacklists listing the asset (API field blacklisted). Refreshed every \
             poll.interval.",
        ),
        |a| a.blacklistings,
    ),
    (
        gauge(
            "reputation_blacklistings_change",
            "Change of the blacklisting count at the last check (API field \
             blacklisted_change.last_check). Refreshed every poll.interval.",
        ),
        |a| a.blacklistings_change,
    ),
    (
        gauge(
            "reputation_snds_blocked",
            "Microsoft SNDS blocked state (API field snds_blocked): 1 blocked, 0 not blocked; \
             no sample without data. Refreshed every poll.interval.",
        ),
        |a| a.snds_blocked,
    ),
    (
        gauge(
            "reputation_snds_blocked_change",
            "SNDS blocked change at the last check (API field snds_blocked_change.last_check), \
             when numeric. Refreshed every poll.interval.",
        ),
        |a| a.snds_blocked_change,
    ),
    (
        gauge(
            "reputation_snds_reputation_value",
            "SNDS reputation (API field snds_reputation) when the API sends it as a number; no \
             colour is assumed. Refreshed every poll.interval.",
        ),
        |a| a.snds_reputation_value,
    ),
    (
        gauge(
            "reputation_snds_reputation_change",
            "SNDS reputation change at the last check (API field \
             snds_reputation_change.last_check), when numeric. Refreshed every poll.interval.",
        ),
        |a| a.snds_reputation_change,
    ),
];

/// `reputation_blacklist_listed`.
pub const BLACKLIST_LISTED: Family = gauge(
    "reputation_blacklist_listed",
    "1 when the newest event of this blacklist in the asset report (blacklist_history) has \
     status Listed, else 0. Refreshed every asset_reports.interval.",
);

/// `reputation_blacklist_last_change_timestamp_seconds`.
pub const BLACKLIST_CHANGED: Family = gauge(
    "reputation_blacklist_last_change_timestamp_seconds",
    "Unix time of the newest event of this blacklist in the asset report (blacklist_history). \
     Refreshed every asset_reports.interval.",
);

/// `reputation_asset_tag_info`.
pub const TAG_INFO: Family = Family {
    name: "reputation_asset_tag_info",
    help: "1 for each tag of the asset (asset report field tags). Refreshed every \
           asset_reports.interval.",
    kind: MetricType::Info,
};

/// `reputation_senderscore_last_update_timestamp_seconds`.
pub const SCORE_UPDATED: Family = gauge(
    "reputation_senderscore_last_update_timestamp_seconds",
    "Unix time of the newest Sender Score in the asset report (senderscore_history). \
     Refreshed every asset_reports.interval.",
);

/// The families of a list's assets, in the order they are written.
pub fn list_families() -> impl Iterator<Item = Family> {
    [ASSET_INFO]
        .into_iter()
        .chain(GAUGES.iter().map(|(family, _)| *family))
        .chain([SNDS_REPUTATION, HOSTNAME_INFO, DOMAIN_IPS])
}

/// The families of the asset reports, written after the list families.
pub const REPORT_FAMILIES: [Family; 4] =
    [BLACKLIST_LISTED, BLACKLIST_CHANGED, TAG_INFO, SCORE_UPDATED];

/// Every per-asset family, in the order they are written.
pub fn families() -> impl Iterator<Item = Family> {
    list_families().chain(REPORT_FAMILIES)
}

/// The sample lines of one list's assets, one chunk per family of [`list_families`].
pub fn render_list(assets: &[Asset]) -> Vec<Bytes> {
    let mut w = SampleWriter::default();
    w.family();
    for a in assets {
        w.sample(ASSET_INFO.name, &labels(a), 1.0);
    }
    for (family, value) in &GAUGES {
        w.family();
        for a in assets {
            if let Some(v) = value(a) {
                w.sample(family.name, &labels(a), v);
            }
        }
    }
    w.family();
    for a in assets {
        if let Some(current) = a.snds_reputation {
            for state in SndsColour::ALL {
                let [kind, asset] = labels(a);
                let labels = [kind, asset, (SNDS_REPUTATION.name, state.label())];
                w.sample(
                    SNDS_REPUTATION.name,
                    &labels,
                    f64::from(u8::from(state == current)),
                );
            }
        }
    }
    w.family();
    for a in assets {
        for host in &a.hostnames {
            let [kind, asset] = labels(a);
            w.sample(HOSTNAME_INFO.name, &[kind, asset, ("hostname", host)], 1.0);
        }
    }
    w.family();
    for a in assets {
        if let Some(v) = a.domain_ips {
            w.sample(DOMAIN_IPS.name, &labels(a), v);
        }
    }
    w.finish()
}

/// The sample lines of the reports of one list's assets, one chunk per family of
/// [`REPORT_FAMILIES`]. Only assets still in the list count: a report never outlives its asset.
fn render_reports(list: &ListSamples<'_>, reports: &Reports) -> Vec<Bytes> {
    let kind = ("kind", list.kind.label());
    let reported = || {
        list.names
            .iter()
            .filter_map(|name| reports.get(list.kind, name).map(|r| (&**name, r)))
    };
    let mut w = SampleWriter::default();
    type Value = fn(&Listing) -> f64;
    let per_blacklist: [(&Family, Value); 2] = [
        (&BLACKLIST_LISTED, |l| f64::from(u8::from(l.listed))),
        (&BLACKLIST_CHANGED, |l| l.changed),
    ];
    for (family, value) in per_blacklist {
        w.family();
        for (name, report) in reported() {
            for listing in &report.listings {
                let labels = [
                    kind,
                    ("asset", name),
                    ("blacklist", listing.blacklist.as_str()),
                ];
                w.sample(family.name, &labels, value(listing));
            }
        }
    }
    w.family();
    for (name, report) in reported() {
        for tag in &report.tags {
            w.sample(TAG_INFO.name, &[kind, ("asset", name), ("tag", tag)], 1.0);
        }
    }
    w.family();
    for (name, report) in reported() {
        if let Some(t) = report.senderscore_updated {
            w.sample(SCORE_UPDATED.name, &[kind, ("asset", name)], t);
        }
    }
    w.finish()
}

/// The per-asset body of these lists in both formats (no `# EOF`): each list's rendered
/// samples, shared, between the family headers; and the report families when there are
/// reports.
pub fn render(lists: &[ListSamples<'_>], reports: Option<&Reports>) -> Rendered {
    let families: Vec<Family> = list_families().collect();
    let mut parts: Vec<(&Family, Vec<Bytes>)> = families
        .iter()
        .enumerate()
        .map(|(i, family)| {
            let samples = lists
                .iter()
                .filter_map(|list| list.samples.get(i).cloned())
                .collect();
            (family, samples)
        })
        .collect();
    if let Some(reports) = reports {
        let rendered: Vec<Vec<Bytes>> = lists
            .iter()
            .map(|list| render_reports(list, reports))
            .collect();
        for (i, family) in REPORT_FAMILIES.iter().enumerate() {
            let samples = rendered.iter().filter_map(|r| r.get(i).cloned()).collect();
            parts.push((family, samples));
        }
    }
    Rendered::assemble(parts)
}

fn labels(asset: &Asset) -> [(&'static str, &str); 2] {
    [("kind", asset.kind.label()), ("asset", &asset.name)]
}
