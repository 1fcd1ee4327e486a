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
//! The values are kept by a 64-bit hash of the asset's name, in the order the list sent them,
//! 20 bytes an asset whatever the length of the names (a million assets: 19 MiB, and 256 KiB of
//! index). The next list, sent in the same order, finds each asset where the last one left off,
//! reading the memory straight through; an asset out of that order is found by an index of the
//! hashes (sorted, with a table of where each 16-bit prefix begins), so that a list in another
//! order costs a few cache misses an asset, not a search of the whole memory. Two names of one
//! list sharing a hash is a chance of about 1 in 30 million at that size; it would mix up their
//! missed changes only.

use std::hash::{Hash as _, Hasher as _};

use super::{Asset, AssetSink};

/// One list's Sender Scores, SNDS blocks and their changes, by asset.
#[derive(Debug, Default)]
pub struct ListMemory {
    /// In the order the list sent them.
    entries: Vec<Entry>,
    /// Positions in `entries`, sorted by key.
    by_key: Vec<u32>,
    /// `by_key[starts[p]..starts[p + 1]]` are the positions of the entries whose key's top 16
    /// bits are `p` (empty while `entries` is).
    starts: Vec<u32>,
}

/// One asset: the hash of its name and what the list said of it.
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u64,
    senderscore: Value,
    snds_blocked: Value,
}

/// A value and its change at the API's last check, as a list said them: whole numbers, as the
/// API sends them; [`Value::NONE`] for none, or for a number that is not a small whole one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Value {
    value: i16,
    change: i16,
}

impl Value {
    const NONE: i16 = i16::MIN;

    fn of(value: Option<f64>, change: Option<f64>) -> Value {
        let kept = |v: Option<f64>| match v {
            Some(v) if v.fract() == 0.0 && v.abs() <= f64::from(i16::MAX) => v as i16,
            _ => Value::NONE,
        };
        Value {
            value: kept(value),
            change: kept(change),
        }
    }

    /// What the checks before the last one changed since this was said, by `now` (a value
    /// and its change as the next list says them): `None` when neither moved (no check need
    /// have come), either value is missing, or the last check accounts for the whole move.
    fn missed(self, now: Value) -> Option<f64> {
        if self.value == Value::NONE || now.value == Value::NONE || self == now {
            return None;
        }
        let change = if now.change == Value::NONE {
            0
        } else {
            now.change
        };
        let missed = i32::from(now.value) - i32::from(self.value) - i32::from(change);
        (missed != 0).then_some(f64::from(missed))
    }
}

/// Bits of a key that index [`ListMemory::starts`].
const PREFIX_BITS: u32 = 16;

impl ListMemory {
    /// The memory of these entries, in the order the list sent them.
    fn of(mut entries: Vec<Entry>) -> ListMemory {
        if entries.is_empty() {
            return ListMemory::default();
        }
        entries.shrink_to_fit();
        // The index: positions counted into their prefix's run, then each (short) run sorted.
        let prefix = |e: &Entry| (e.key >> (64 - PREFIX_BITS)) as usize;
        let mut starts = vec![0u32; (1 << PREFIX_BITS) + 1];
        for entry in &entries {
            starts[prefix(entry) + 1] += 1;
        }
        for p in 1..starts.len() {
            starts[p] += starts[p - 1];
        }
        let mut filled = starts.clone();
        let mut by_key = vec![0u32; entries.len()];
        for (position, entry) in entries.iter().enumerate() {
            let slot = &mut filled[prefix(entry)];
            by_key[*slot as usize] = position as u32;
            *slot += 1;
        }
        for run in starts.windows(2) {
            by_key[run[0] as usize..run[1] as usize]
                .sort_unstable_by_key(|&i| entries[i as usize].key);
        }
        ListMemory {
            entries,
            by_key,
            starts,
        }
    }

    /// How many assets it remembers.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it remembers none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry of `key`, looked for first at `*next` (where the last one found left off) and
    /// then by the index; `*next` is moved past the one found.
    fn find(&self, key: u64, next: &mut usize) -> Option<&Entry> {
        if let Some(entry) = self.entries.get(*next)
            && entry.key == key
        {
            *next += 1;
            return Some(entry);
        }
        let position = self.position(key)?;
        *next = position + 1;
        Some(&self.entries[position])
    }

    /// Where the entry of `key` is, by the index.
    fn position(&self, key: u64) -> Option<usize> {
        if self.entries.is_empty() {
            return None;
        }
        let prefix = (key >> (64 - PREFIX_BITS)) as usize;
        let run = &self.by_key[self.starts[prefix] as usize..self.starts[prefix + 1] as usize];
        let found = run.binary_search_by_key(&key, |&i| self.entries[i as usize].key);
        found.ok().map(|i| run[i] as usize)
    }

    /// What it said of the asset `name`: its Sender Score and SNDS block (`None` for no value,
    /// and for both when it has no entry: an asset not in the list, or with neither value).
    pub fn values(&self, name: &str) -> (Option<f64>, Option<f64>) {
        let value = |v: Value| (v.value != Value::NONE).then_some(f64::from(v.value));
        self.position(key(name)).map_or((None, None), |i| {
            let entry = &self.entries[i];
            (value(entry.senderscore), value(entry.snds_blocked))
        })
    }

    #[cfg(test)]
    fn get(&self, key: u64) -> Option<&Entry> {
        self.position(key).map(|i| &self.entries[i])
    }
}

impl Entry {
    /// What `asset` says, or nothing worth keeping.
    fn of(asset: &Asset) -> Option<Entry> {
        let senderscore = Value::of(asset.senderscore, asset.senderscore_change);
        let snds_blocked = Value::of(asset.snds_blocked, asset.snds_blocked_change);
        (senderscore.value != Value::NONE || snds_blocked.value != Value::NONE).then(|| Entry {
            key: key(&asset.name),
            senderscore,
            snds_blocked,
        })
    }
}

fn key(name: &str) -> u64 {
    // SipHash with fixed keys: the same for a name in every process, so nothing depends on
    // which process built a memory.
    let mut hasher = std::hash::DefaultHasher::new();
    name.hash(&mut hasher);
    hasher.finish()
}

/// A sink that sets each asset's missed changes from the previous list's memory, remembers
/// the asset for the next list, and hands it on.
#[derive(Debug)]
pub struct Remembering<S> {
    inner: S,
    previous: Option<std::sync::Arc<ListMemory>>,
    /// Where in the previous memory the next asset is looked for first.
    cursor: usize,
    next: Vec<Entry>,
}

impl<S> Remembering<S> {
    /// Around `inner`, with the memory of the previous list taken, if there is one.
    pub fn new(inner: S, previous: Option<std::sync::Arc<ListMemory>>) -> Self {
        let next = Vec::with_capacity(previous.as_ref().map_or(0, |p| p.len()));
        Remembering {
            inner,
            previous,
            cursor: 0,
            next,
        }
    }

    /// The inner sink, and the memory of this list.
    pub fn finish(self) -> (S, ListMemory) {
        (self.inner, ListMemory::of(self.next))
    }
}

impl<S: AssetSink> AssetSink for Remembering<S> {
    fn push(&mut self, mut asset: Asset) {
        let now = Entry::of(&asset);
        if let Some(now) = &now
            && let Some(before) =
                (self.previous.as_ref()).and_then(|p| p.find(now.key, &mut self.cursor))
        {
            asset.senderscore_missed_change = before.senderscore.missed(now.senderscore);
            asset.snds_blocked_missed_change = before.snds_blocked.missed(now.snds_blocked);
        }
        self.next.extend(now);
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
    fn every_asset_of_a_large_list_is_found_and_no_other() {
        let names: Vec<String> = (0..50_000)
            .map(|i| format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255))
            .collect();
        let mut sink = Remembering::new(AssetSet::default(), None);
        for (i, name) in names.iter().enumerate() {
            sink.push(asset(name, ((i % 100) as f64, 0.0), None));
        }
        let (_, memory) = sink.finish();
        assert_eq!(memory.len(), names.len());
        for (i, name) in names.iter().enumerate() {
            let entry = memory.get(key(name)).expect("every name is found");
            assert_eq!(entry.senderscore.value, (i % 100) as i16, "{name}");
        }
        assert!(memory.get(key("192.0.2.1")).is_none() && memory.get(key("")).is_none());
        assert_eq!(std::mem::size_of::<Entry>() + 4, 20, "20 bytes an asset");
    }

    #[test]
    fn a_list_in_another_order_or_with_assets_added_and_gone_is_compared_asset_by_asset() {
        let first: Vec<Asset> = (0..1_000)
            .map(|i| asset(&format!("a{i}"), (80.0, 0.0), None))
            .collect();
        // Reversed, one gone, one new: every asset that was there before dropped 12 points at
        // a check before the last.
        let mut second: Vec<Asset> = (1..1_000)
            .rev()
            .map(|i| asset(&format!("a{i}"), (68.0, 0.0), None))
            .collect();
        second.insert(500, asset("new", (10.0, 0.0), None));
        let served = polls(vec![first, second]);
        let missed: Vec<(&str, Option<f64>)> = served[1]
            .iter()
            .map(|a| (a.name.as_str(), a.senderscore_missed_change))
            .collect();
        assert_eq!(missed.iter().filter(|m| m.1 == Some(-12.0)).count(), 999);
        assert!(missed.contains(&("new", None)));
    }

    #[test]
    fn a_value_that_is_not_a_small_whole_number_is_not_compared() {
        let served = polls(vec![
            vec![asset("a", (70.5, 0.0), None), asset("b", (1e9, 0.0), None)],
            vec![asset("a", (50.5, 0.0), None), asset("b", (1.0, 0.0), None)],
        ]);
        assert_eq!(missed_of(&served[1]), vec![(None, None), (None, None)]);
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
        assert!(memory.get(key("scored")).is_some() && memory.get(key("nothing")).is_none());
    }
}
