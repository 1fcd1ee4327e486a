//! What this replica's previous list said of each asset's Sender Score and SNDS block, so that
//! a new list shows the changes its change fields no longer do.
//!
//! The API's change fields (`senderscore_change.last_check`, `snds_blocked_change.last_check`)
//! say what its last check changed. A replica polling every few minutes sees every hourly
//! check's change; when no poll of it falls between two checks (an API outage, a restart of the
//! replica), the later check's change overwrites the earlier one's before any list shows it.
//! The value itself still moved: the new list's value, less the previous list's, less the last
//! check's change, is what the checks before it changed, which no list showed this replica. It
//! is told where the value moved or the change field changed (a check came between the two
//! lists); where neither did, no check need have come, and the change field is the one the
//! previous list showed already.
//! [`Remembering`] puts that on each asset ([`Asset::senderscore_missed_change`],
//! [`Asset::snds_blocked_missed_change`]) as the list arrives, and keeps the new list's values
//! for the next one.
//!
//! The values are kept by a 64-bit hash of the asset's name, 24 bytes an asset, whatever the
//! length of the names: a million assets cost about 28 MiB. Two names of one list sharing a
//! hash is a chance of about 1 in 30 million at that size; it would mix up their missed changes
//! only.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash as _, Hasher};

use super::{Asset, AssetSink};

/// One list's Sender Scores and SNDS blocks, by asset.
#[derive(Debug, Default)]
pub struct ListMemory {
    values: HashMap<u64, Remembered, BuildHasherDefault<Prehashed>>,
}

/// What a list said of one asset: each value and its change at the last check (NaN: none).
#[derive(Debug, Clone, Copy)]
struct Remembered {
    senderscore: Value,
    snds_blocked: Value,
}

/// A value and its change at the API's last check, as a list said them (NaN: none).
#[derive(Debug, Clone, Copy)]
struct Value {
    value: f32,
    change: f32,
}

impl Value {
    fn of(value: Option<f64>, change: Option<f64>) -> Value {
        let kept = |v: Option<f64>| v.map_or(f32::NAN, |v| v as f32);
        Value {
            value: kept(value),
            change: kept(change),
        }
    }

    /// What the checks before the last one changed since this was said, by `now` (a value
    /// and its change as the next list says them): `None` when neither moved (no check need
    /// have come), either value is missing, or the last check accounts for the whole move.
    fn missed(self, now: Value) -> Option<f64> {
        let same = |a: f32, b: f32| a == b || (a.is_nan() && b.is_nan());
        if self.value.is_nan() || now.value.is_nan() {
            return None;
        }
        if same(self.value, now.value) && same(self.change, now.change) {
            return None;
        }
        let change = if now.change.is_nan() { 0.0 } else { now.change };
        let missed = f64::from(now.value) - f64::from(self.value) - f64::from(change);
        (missed != 0.0).then_some(missed)
    }
}

impl ListMemory {
    /// How many assets it remembers.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether it remembers none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    fn get(&self, name: &str) -> Option<Remembered> {
        self.values.get(&key(name)).copied()
    }

    fn insert(&mut self, asset: &Asset) {
        let remembered = Remembered::of(asset);
        if remembered.senderscore.value.is_nan() && remembered.snds_blocked.value.is_nan() {
            return;
        }
        self.values.insert(key(&asset.name), remembered);
    }
}

fn key(name: &str) -> u64 {
    // SipHash with fixed keys: the same for a name in every process, so nothing depends on
    // which process built a memory.
    let mut hasher = std::hash::DefaultHasher::new();
    name.hash(&mut hasher);
    hasher.finish()
}

/// The hasher of keys that are hashes already.
#[derive(Debug, Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

impl Remembered {
    fn of(asset: &Asset) -> Remembered {
        Remembered {
            senderscore: Value::of(asset.senderscore, asset.senderscore_change),
            snds_blocked: Value::of(asset.snds_blocked, asset.snds_blocked_change),
        }
    }
}

/// A sink that sets each asset's missed changes from the previous list's memory, remembers
/// the asset for the next list, and hands it on.
#[derive(Debug)]
pub struct Remembering<S> {
    inner: S,
    previous: Option<std::sync::Arc<ListMemory>>,
    next: ListMemory,
}

impl<S> Remembering<S> {
    /// Around `inner`, with the memory of the previous list taken, if there is one.
    pub fn new(inner: S, previous: Option<std::sync::Arc<ListMemory>>) -> Self {
        Remembering {
            inner,
            previous,
            next: ListMemory::default(),
        }
    }

    /// The inner sink, and the memory of this list.
    pub fn finish(self) -> (S, ListMemory) {
        (self.inner, self.next)
    }
}

impl<S: AssetSink> AssetSink for Remembering<S> {
    fn push(&mut self, mut asset: Asset) {
        if let Some(before) = self.previous.as_ref().and_then(|p| p.get(&asset.name)) {
            let now = Remembered::of(&asset);
            asset.senderscore_missed_change = before.senderscore.missed(now.senderscore);
            asset.snds_blocked_missed_change = before.snds_blocked.missed(now.snds_blocked);
        }
        self.next.insert(&asset);
        self.inner.push(asset);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::AssetSet;
    use crate::upstream::dto::{ListItem, NamedItem};
    use crate::vocabulary::Kind;

    /// An asset with this score, SNDS block and their changes at the API's last check.
    fn asset(name: &str, score: (f64, f64), blocked: Option<(f64, f64)>) -> Asset {
        let named = NamedItem {
            name: name.to_owned(),
            item: ListItem::default(),
        };
        let mut asset = Asset::from_item(Kind::Ip, named, 8, &mut Vec::new());
        asset.senderscore = Some(score.0);
        asset.senderscore_change = Some(score.1);
        asset.snds_blocked = blocked.map(|b| b.0);
        asset.snds_blocked_change = blocked.map(|b| b.1);
        asset
    }

    /// Lists one after another through [`Remembering`]: each list's assets as they were served.
    fn polls(lists: Vec<Vec<Asset>>) -> Vec<Vec<Asset>> {
        let mut memory = None;
        lists
            .into_iter()
            .map(|list| {
                let mut sink = Remembering::new(AssetSet::default(), memory.take());
                list.into_iter().for_each(|a| sink.push(a));
                let (set, next) = sink.finish();
                memory = Some(Arc::new(next));
                set.assets
            })
            .collect()
    }

    fn missed_of(list: &[Asset]) -> Vec<(Option<f64>, Option<f64>)> {
        list.iter()
            .map(|a| (a.senderscore_missed_change, a.snds_blocked_missed_change))
            .collect()
    }

    #[test]
    fn a_change_the_last_check_shows_is_not_missed() {
        let served = polls(vec![
            vec![asset("a", (80.0, 0.0), Some((0.0, 0.0)))],
            // The check between the polls: -12 and a new block, both in the change fields.
            vec![asset("a", (68.0, -12.0), Some((1.0, 1.0)))],
            // No check between these polls: the change fields still say the same.
            vec![asset("a", (68.0, -12.0), Some((1.0, 1.0)))],
        ]);
        assert_eq!(missed_of(&served[1]), vec![(None, None)]);
        assert_eq!(missed_of(&served[2]), vec![(None, None)]);
    }

    #[test]
    fn a_change_overwritten_before_a_poll_saw_it_is_missed() {
        let served = polls(vec![
            vec![
                asset("dropped", (80.0, 0.0), Some((0.0, 0.0))),
                asset("steady", (90.0, 1.0), None),
            ],
            // Two checks since: the first dropped the score 12 points and blocked the asset,
            // the second changed the score by +1 and left the block: its change fields say
            // +1 and 0.
            vec![
                asset("dropped", (69.0, 1.0), Some((1.0, 0.0))),
                asset("steady", (90.0, 0.0), None),
            ],
            // The next poll, after no check: nothing missed any more.
            vec![
                asset("dropped", (69.0, 1.0), Some((1.0, 0.0))),
                asset("steady", (90.0, 0.0), None),
            ],
        ]);
        assert_eq!(
            missed_of(&served[1]),
            vec![(Some(-12.0), Some(1.0)), (None, None)]
        );
        assert_eq!(missed_of(&served[2]), vec![(None, None), (None, None)]);
    }

    #[test]
    fn a_block_that_began_and_ended_between_two_lists_is_missed() {
        let served = polls(vec![
            vec![asset("a", (80.0, 0.0), Some((0.0, 0.0)))],
            // Three checks since: blocked at the first, still at the second, lifted at the
            // third. The value is what it was; its change field says the block ended.
            vec![asset("a", (80.0, 0.0), Some((0.0, -1.0)))],
            // The next poll, after no check: the same change field, nothing missed.
            vec![asset("a", (80.0, 0.0), Some((0.0, -1.0)))],
            // The next check changes nothing: its change field goes back to 0.
            vec![asset("a", (80.0, 0.0), Some((0.0, 0.0)))],
        ]);
        assert_eq!(missed_of(&served[1]), vec![(None, Some(1.0))]);
        assert_eq!(missed_of(&served[2]), vec![(None, None)]);
        assert_eq!(missed_of(&served[3]), vec![(None, None)]);
    }

    #[test]
    fn an_asset_new_to_the_list_or_without_values_misses_nothing() {
        let mut unblocked = asset("no-score", (50.0, 0.0), Some((0.0, 0.0)));
        unblocked.senderscore = None;
        let served = polls(vec![
            vec![unblocked.clone()],
            vec![
                // Its score comes back: there is nothing to compare it with.
                asset("no-score", (60.0, 0.0), Some((1.0, 0.0))),
                asset("new", (20.0, -60.0), Some((1.0, 0.0))),
            ],
        ]);
        assert_eq!(missed_of(&served[1]), vec![(None, Some(1.0)), (None, None)]);
    }

    #[test]
    fn the_memory_holds_only_assets_with_a_value() {
        let mut nothing = asset("nothing", (0.0, 0.0), None);
        nothing.senderscore = None;
        let mut sink = Remembering::new(AssetSet::default(), None);
        sink.push(nothing);
        sink.push(asset("scored", (70.0, 0.0), None));
        let (_, memory) = sink.finish();
        assert_eq!(memory.len(), 1);
        assert!(memory.get("scored").is_some() && memory.get("nothing").is_none());
    }
}
