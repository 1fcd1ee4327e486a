//! One list as served: rendered shard by shard while its body arrives ([`ListBuilder`]), then
//! kept as a [`ListPart`]: the sample lines, the names, and the worst few assets.

use std::ops::Range;

use crate::exposition::assets::{ListRenderer, ListSamples};
use crate::exposition::piece::Piece;
use crate::model::{Asset, AssetSet, AssetSink, Blacklistings, Shown, worst_first};
use crate::vocabulary::{Kind, SndsColour, shard_of};

/// Assets of each list kept for the landing page, worst first.
pub const WORST_KEPT: usize = 100;

/// Bytes of sample lines above which a list is kept packed (see
/// [`piece`](crate::exposition::piece)): about 400,000 assets. A list that size or larger
/// is served while the next poll renders it again; kept as it is served, it would be held
/// twice meanwhile. Below it, a list stays as it is served, the fastest to scrape.
pub(super) const PACK_ABOVE: usize = 256 << 20;

/// One list as served: the sample lines of its assets per family, their names, and the worst
/// of them for the landing page. The assets themselves are dropped once rendered, so a list
/// costs about the size of its part of the body.
#[derive(Debug)]
pub struct ListPart {
    /// IP addresses or domains.
    pub kind: Kind,
    /// Every asset's name, shard after shard, in the order the API sent them within a shard
    /// (with one shard, the API's order).
    pub names: Vec<Box<str>>,
    /// The shards, at least one.
    pub shards: Vec<ListShard>,
    /// At most [`WORST_KEPT`] assets, worst first.
    pub worst: Vec<Asset>,
    /// How many of the assets are in trouble, for the landing page.
    pub summary: Summary,
    /// The assets the list shows listed (a blacklisting count above 0): whose reports are
    /// fetched by default.
    pub listed: Vec<Box<str>>,
    /// What the list says of the blacklisting of its listed or changed assets: whether their
    /// reports are behind it.
    pub blacklistings: Blacklistings,
    /// The score drops and SNDS blocks it shows, for the events.
    pub shown: Shown,
}

/// One shard of a list.
#[derive(Debug, Clone, Default)]
pub struct ListShard {
    /// Its assets' names: this range of [`ListPart::names`].
    pub names: Range<usize>,
    /// Sample lines: the chunks of each family of [`list_families`](
    /// crate::exposition::assets::list_families).
    pub samples: Vec<Vec<Piece>>,
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
    fn count(&mut self, asset: &Asset) {
        let one = |yes: bool| usize::from(yes);
        self.assets += 1;
        self.listed += one(asset.blacklistings.is_some_and(|n| n > 0.0));
        self.snds_red += one(asset.snds_reputation == Some(SndsColour::Red));
        self.low_score += one(asset.senderscore.is_some_and(|s| s < LOW_SCORE));
    }

    pub(super) fn add(self, other: Summary) -> Summary {
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
        ListPart::in_shards(kind, set, 1)
    }

    /// As [`ListPart::new`], in `shards` shards (at least one).
    pub fn in_shards(kind: Kind, set: AssetSet, shards: usize) -> ListPart {
        let mut builder = ListBuilder::new(kind, shards);
        for asset in set.assets {
            builder.push(asset);
        }
        builder.finish()
    }

    /// The shard `shard` as the exposition reads it.
    pub(super) fn samples(&self, shard: usize) -> ListSamples<'_> {
        let shard = &self.shards[shard];
        ListSamples {
            kind: self.kind,
            names: &self.names[shard.names.clone()],
            samples: &shard.samples,
            blacklistings: &self.blacklistings,
        }
    }
}

/// A list rendered while its assets arrive: each asset's samples are written into its shard
/// (by [`shard_of`]) at once and the asset is dropped, unless it is among the worst so far.
/// A poll therefore never holds its list's assets, only their rendered lines.
#[derive(Debug)]
pub struct ListBuilder {
    kind: Kind,
    shards: Vec<ShardBuilder>,
    summary: Summary,
    /// The assets listed, as [`ListPart::listed`].
    listed: Vec<Box<str>>,
    blacklistings: Blacklistings,
    shown: Shown,
    /// The worst assets so far: sorted up to [`WORST_KEPT`] after a prune, then those worse
    /// than the last of them; pruned again when twice as many.
    worst: Vec<Asset>,
    pruned: bool,
    /// Bytes of sample lines written, and how many make the list packed.
    written: usize,
    pack_above: usize,
}

#[derive(Debug, Default)]
struct ShardBuilder {
    names: Vec<Box<str>>,
    samples: ListRenderer,
}

impl ListBuilder {
    /// An empty list of `kind` in `shards` shards (at least one).
    pub fn new(kind: Kind, shards: usize) -> Self {
        ListBuilder {
            kind,
            shards: (0..shards.max(1))
                .map(|_| ShardBuilder::default())
                .collect(),
            summary: Summary::default(),
            listed: Vec::new(),
            blacklistings: Blacklistings::default(),
            shown: Shown::default(),
            worst: Vec::new(),
            pruned: false,
            written: 0,
            pack_above: PACK_ABOVE,
        }
    }

    /// The same builder, packing once more than `bytes` of lines are written.
    #[cfg(test)]
    pub(crate) fn packing_above(mut self, bytes: usize) -> Self {
        self.pack_above = bytes;
        self
    }

    /// Keeps the [`WORST_KEPT`] worst candidates, worst first.
    fn prune(&mut self) {
        self.worst.sort_by(worst_first);
        self.worst.truncate(WORST_KEPT);
        self.pruned = true;
    }

    /// The list as served: the shards' names one after another, their samples.
    pub fn finish(mut self) -> ListPart {
        self.prune();
        let total = self.shards.iter().map(|shard| shard.names.len()).sum();
        let mut names = Vec::with_capacity(total);
        let shards = self
            .shards
            .into_iter()
            .map(|shard| {
                let start = names.len();
                names.extend(shard.names);
                ListShard {
                    names: start..names.len(),
                    samples: shard.samples.finish(),
                }
            })
            .collect();
        ListPart {
            kind: self.kind,
            names,
            shards,
            worst: self.worst,
            summary: self.summary,
            listed: self.listed,
            blacklistings: self.blacklistings,
            shown: self.shown,
        }
    }
}

impl AssetSink for ListBuilder {
    fn push(&mut self, asset: Asset) {
        let index = match self.shards.len() {
            1 => 0,
            shards => shard_of(self.kind, &asset.name, shards),
        };
        let shard = &mut self.shards[index];
        let before = shard.samples.written();
        shard.samples.push(&asset);
        let packing = self.written > self.pack_above;
        self.written += shard.samples.written() - before;
        if !packing && self.written > self.pack_above {
            for shard in &mut self.shards {
                shard.samples.pack();
            }
        }
        let shard = &mut self.shards[index];
        self.summary.count(&asset);
        if asset.blacklistings.is_some_and(|n| n > 0.0) {
            self.listed.push(asset.name.as_str().into());
        }
        self.blacklistings.note(&asset.name, asset.blacklisting());
        self.shown.note(&asset);
        let candidate = !self.pruned || worst_first(&asset, &self.worst[WORST_KEPT - 1]).is_lt();
        if candidate {
            shard.names.push(asset.name.as_str().into());
            self.worst.push(asset);
            if self.worst.len() == 2 * WORST_KEPT {
                self.prune();
            }
        } else {
            shard.names.push(asset.name.into_boxed_str());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::dto::{ListItem, NamedItem};

    fn asset(name: String, blacklistings: f64, senderscore: f64) -> Asset {
        let named = NamedItem {
            name,
            item: ListItem::default(),
        };
        let mut asset = Asset::from_item(Kind::Ip, named, 64, &mut Vec::new());
        asset.blacklistings = Some(blacklistings);
        asset.senderscore = Some(senderscore);
        asset
    }

    #[test]
    fn the_builder_keeps_the_worst_assets_of_a_list_in_any_order() {
        // Scores and listings in a scrambled order, worst assets early, late and in between.
        let assets: Vec<Asset> = (0..5_000u32)
            .map(|i| {
                let scrambled = i.wrapping_mul(2_654_435_761) % 5_000;
                let listings = f64::from(u8::from(scrambled % 97 == 0));
                asset(
                    format!("10.0.{}.{}", i / 256, i % 256),
                    listings,
                    f64::from(scrambled % 1_000),
                )
            })
            .collect();
        let low = assets
            .iter()
            .filter(|a| a.senderscore < Some(LOW_SCORE))
            .count();
        let listed = assets
            .iter()
            .filter(|a| a.blacklistings == Some(1.0))
            .count();
        assert!(low > 0 && listed > 0);
        let mut expected = assets.clone();
        expected.sort_by(worst_first);
        let expected: Vec<&str> = expected[..WORST_KEPT].iter().map(|a| &*a.name).collect();

        let mut builder = ListBuilder::new(Kind::Ip, 3);
        for asset in assets {
            builder.push(asset);
            assert!(
                builder.worst.len() < 2 * WORST_KEPT,
                "bounded while building"
            );
        }
        let part = builder.finish();
        let worst: Vec<&str> = part.worst.iter().map(|a| &*a.name).collect();
        assert_eq!(worst, expected);
        assert_eq!(part.names.len(), 5_000);
        assert_eq!(part.summary.assets, 5_000);
        assert_eq!(part.summary.listed, listed);
        assert_eq!(part.summary.low_score, low);
    }
}
