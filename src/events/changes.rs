//! Score drops and SNDS blocks: what a replica remembers of those its lists showed, so that an
//! answer that flips from one poll to the next pages once, and a value gone missing ends
//! nothing.
//!
//! A drop is known by the scores before and after it, as the API's own fields give them
//! (`senderscore` less `senderscore_change.last_check`, and `senderscore`), the same on every
//! replica; a block by its asset. Each ends at the second list in a row that does not show it
//! (one list is a flip), or when its asset leaves the account; a list in which the value is
//! missing neither shows nor ends it.

use std::collections::{HashMap, HashSet};

use tokio::time::Instant;

use crate::model::shown::Drop;
use crate::model::{ListMemory, Shown};
use crate::vocabulary::Kind;

/// The drops and blocks as the state store keeps them.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct KeptChanges {
    drops: Vec<(u8, String, i64, i64)>,
    blocks: Vec<(u8, String)>,
}

/// How long an ended drop or block is remembered: two API check intervals.
const RECENT: std::time::Duration = std::time::Duration::from_secs(2 * 3600);

/// How many lists in a row that do not show a change end it.
const UNSHOWN_ENDS: u8 = 2;

/// One list as the changes read it.
#[derive(Debug, Clone, Copy)]
pub struct ListView<'a> {
    /// Its kind.
    pub kind: Kind,
    /// When it was fetched: a list is taken in once.
    pub fetched: Instant,
    /// Every asset's name.
    pub names: &'a [Box<str>],
    /// The changes it shows.
    pub shown: &'a Shown,
    /// Its values, by asset.
    pub memory: Option<&'a ListMemory>,
}

/// The score drops and SNDS blocks this replica's lists showed, each with how many lists in a
/// row have not shown it since.
#[derive(Debug, Clone, Default)]
pub struct HeldChanges {
    drops: HashMap<(Kind, Box<str>, Drop), u8>,
    blocks: HashMap<(Kind, Box<str>), u8>,
    /// The drops and blocks that ended in the last [`RECENT`], and when: one of them shown
    /// again as a change no list showed is this replica reading an answer that flipped (its
    /// change field moved with its value still), not a check it missed.
    ended: HashMap<(Kind, Box<str>, Option<Drop>), Instant>,
    /// When the list of each kind last taken in was fetched.
    taken: [Option<Instant>; 2],
}

impl HeldChanges {
    /// Takes in a list, unless it was taken in already.
    pub fn take(&mut self, list: ListView<'_>) {
        let kind = list.kind;
        if self.taken[kind as usize] == Some(list.fetched) {
            return;
        }
        self.taken[kind as usize] = Some(list.fetched);
        let remembered: HashSet<&str> = (self.drops.keys().map(|(k, name, _)| (k, name)))
            .chain(self.blocks.keys().map(|(k, name)| (k, name)))
            .filter(|(k, _)| **k == kind)
            .map(|(_, name)| &**name)
            .collect();
        let present: HashSet<Box<str>> = if remembered.is_empty() {
            HashSet::new()
        } else {
            (list.names.iter())
                .filter(|name| remembered.contains(&***name))
                .cloned()
                .collect()
        };
        let values = |name: &str| list.memory.map_or((None, None), |m| m.values(name));
        // Each list that does not show a change brings its end closer, unless the value is
        // missing; leaving the account ends it.
        let aged = |name: &str, shows: bool, value: Option<f64>, unshown: &mut u8| {
            if !present.contains(name) {
                return false;
            }
            if shows {
                *unshown = 0;
            } else if value.is_some() {
                *unshown += 1;
            }
            *unshown < UNSHOWN_ENDS
        };
        let now = list.fetched;
        let mut ended = Vec::new();
        self.drops.retain(|(k, name, drop), unshown| {
            let shown = list.shown.of(name);
            let shows = shown.drop == Some(*drop) || shown.missed_drop == Some(*drop);
            let held = *k != kind || aged(name, shows, values(name).0, unshown);
            if !held {
                ended.push((*k, name.clone(), Some(*drop)));
            }
            held
        });
        self.blocks.retain(|(k, name), unshown| {
            let shown = list.shown.of(name);
            let shows = shown.blocked || shown.missed_block;
            let held = *k != kind || aged(name, shows, values(name).1, unshown);
            if !held {
                ended.push((*k, name.clone(), None));
            }
            held
        });
        self.ended
            .retain(|_, at| now.saturating_duration_since(*at) < RECENT);
        self.ended.extend(ended.into_iter().map(|key| (key, now)));
        let recent = |name: &str, drop: Option<Drop>| {
            self.ended.contains_key(&(kind, Box::from(name), drop))
        };
        let mut shown_now = Vec::new();
        for (name, shown) in list.shown.iter() {
            let missed_drop = shown.missed_drop.filter(|d| !recent(name, Some(*d)));
            for drop in [shown.drop, missed_drop].into_iter().flatten() {
                shown_now.push((name, Some(drop)));
            }
            if shown.blocked || (shown.missed_block && !recent(name, None)) {
                shown_now.push((name, None));
            }
        }
        for (name, drop) in shown_now {
            match drop {
                Some(drop) => self.drops.insert((kind, name.into(), drop), 0),
                None => self.blocks.insert((kind, name.into()), 0),
            };
        }
    }

    /// The drops and blocks as the state store keeps them: each by kind (its index in
    /// [`Kind::ALL`]) and asset.
    pub(super) fn kept(&self) -> KeptChanges {
        KeptChanges {
            drops: (self.drops())
                .map(|(kind, asset, (from, to))| (kind as u8, asset.to_owned(), from, to))
                .collect(),
            blocks: (self.blocks())
                .map(|(kind, asset)| (kind as u8, asset.to_owned()))
                .collect(),
        }
    }

    /// The drops and blocks the state store kept, none yet unshown: the list the restart
    /// serves first is taken in again.
    pub(super) fn from_kept(kept: KeptChanges) -> HeldChanges {
        let kind = |k: u8| Kind::ALL.get(usize::from(k)).copied();
        let drops = (kept.drops.into_iter())
            .filter_map(|(k, asset, from, to)| Some(((kind(k)?, asset.into(), (from, to)), 0)));
        let blocks =
            (kept.blocks.into_iter()).filter_map(|(k, asset)| Some(((kind(k)?, asset.into()), 0)));
        HeldChanges {
            drops: drops.collect(),
            blocks: blocks.collect(),
            ended: HashMap::new(),
            taken: [None; 2],
        }
    }

    /// The drops held, with their assets.
    pub fn drops(&self) -> impl Iterator<Item = (Kind, &str, Drop)> {
        (self.drops.keys()).map(|(kind, name, drop)| (*kind, &**name, *drop))
    }

    /// The blocks held, with their assets.
    pub fn blocks(&self) -> impl Iterator<Item = (Kind, &str)> {
        self.blocks.keys().map(|(kind, name)| (*kind, &**name))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::time::Duration;

    use super::*;
    use crate::model::{Asset, AssetSink, Remembering};
    use crate::upstream::dto::{ListItem, NamedItem};

    pub(crate) const NAME: &str = "192.0.2.1";

    /// The lists of a story, each taken in five minutes after the last.
    pub(crate) struct Polls {
        pub(crate) held: HeldChanges,
        start: Instant,
        polls: u64,
        previous: Option<std::sync::Arc<ListMemory>>,
    }

    /// A sink that notes what each asset shows and keeps its name.
    #[derive(Default)]
    struct Noted {
        names: Vec<Box<str>>,
        shown: Shown,
    }

    impl AssetSink for Noted {
        fn push(&mut self, asset: Asset) {
            self.shown.note(&asset);
            self.names.push(asset.name.into_boxed_str());
        }
    }

    impl Polls {
        pub(crate) fn new() -> Polls {
            Polls {
                held: HeldChanges::default(),
                start: Instant::now(),
                polls: 0,
                previous: None,
            }
        }

        /// A list with the asset's score and its change, and SNDS block and its change (`None`:
        /// the asset is not in it).
        pub(crate) fn list(&mut self, asset: Option<(Option<f64>, f64, f64, f64)>) -> &mut Self {
            let mut sink = Remembering::new(Noted::default(), self.previous.take());
            if let Some((score, change, blocked, block_change)) = asset {
                let named = NamedItem {
                    name: NAME.to_owned(),
                    item: ListItem::default(),
                };
                let mut asset = Asset::from_item(Kind::Ip, named, 8, &mut Vec::new());
                asset.senderscore = score;
                asset.senderscore_change = Some(change);
                asset.snds_blocked = Some(blocked);
                asset.snds_blocked_change = Some(block_change);
                sink.push(asset);
            }
            let (noted, memory) = sink.finish();
            self.polls += 1;
            self.held.take(ListView {
                kind: Kind::Ip,
                fetched: self.start + Duration::from_secs(300 * self.polls),
                names: &noted.names,
                shown: &noted.shown,
                memory: Some(&memory),
            });
            self.previous = Some(std::sync::Arc::new(memory));
            self
        }

        fn drops(&self) -> Vec<Drop> {
            self.held.drops().map(|(_, _, drop)| drop).collect()
        }

        fn blocked(&self) -> bool {
            self.held.blocks().count() == 1
        }
    }

    #[test]
    fn a_drop_is_held_through_an_answer_that_flips_and_ends_at_the_second_list_without_it() {
        let mut polls = Polls::new();
        polls.list(Some((Some(70.0), -15.0, 0.0, 0.0)));
        assert_eq!(polls.drops(), vec![(85, 70)]);
        // The change field flips back and forth at every poll: one drop throughout.
        for _ in 0..6 {
            polls.list(Some((Some(70.0), 0.0, 0.0, 0.0)));
            assert_eq!(polls.drops(), vec![(85, 70)]);
            polls.list(Some((Some(70.0), -15.0, 0.0, 0.0)));
            assert_eq!(polls.drops(), vec![(85, 70)]);
        }
        polls.list(Some((Some(70.0), 0.0, 0.0, 0.0)));
        polls.list(Some((Some(70.0), 0.0, 0.0, 0.0)));
        assert_eq!(polls.drops(), vec![]);
    }

    #[test]
    fn a_missing_score_ends_no_drop_and_leaving_the_account_ends_it_at_once() {
        let mut polls = Polls::new();
        polls.list(Some((Some(70.0), -15.0, 0.0, 0.0)));
        for _ in 0..4 {
            polls.list(Some((None, 0.0, 0.0, 0.0)));
        }
        assert_eq!(polls.drops(), vec![(85, 70)], "20 minutes without a score");
        polls.list(Some((Some(70.0), -15.0, 0.0, 0.0)));
        assert_eq!(polls.drops(), vec![(85, 70)]);
        polls.list(None);
        assert_eq!(polls.drops(), vec![]);
    }

    #[test]
    fn a_drop_no_list_showed_is_held_from_the_first_list_after_it_and_a_block_like_a_drop() {
        let mut polls = Polls::new();
        polls.list(Some((Some(85.0), 0.0, 0.0, 0.0)));
        // Two checks while no poll came: 85 to 70, then 70 to 60 at the last one.
        polls.list(Some((Some(60.0), -10.0, 1.0, 1.0)));
        let mut drops = polls.drops();
        drops.sort();
        assert_eq!(drops, vec![(70, 60), (85, 70)]);
        assert!(polls.blocked());
        polls.list(Some((Some(60.0), 0.0, 1.0, 0.0)));
        polls.list(Some((Some(60.0), 0.0, 1.0, 0.0)));
        assert_eq!(polls.drops(), vec![]);
        assert!(!polls.blocked(), "blocked since a check already paged");
    }

    #[test]
    fn a_change_field_that_flips_after_a_drop_ended_does_not_read_as_the_drop_again() {
        let mut polls = Polls::new();
        polls.list(Some((Some(70.0), -15.0, 0.0, 0.0)));
        // The next check recovers the score; two lists later the drop has ended.
        polls.list(Some((Some(85.0), 15.0, 0.0, 0.0)));
        polls.list(Some((Some(85.0), 15.0, 0.0, 0.0)));
        assert_eq!(polls.drops(), vec![]);
        // The change field flips to 0 and back with the score still: read as a drop at a check
        // no list showed (85 to 70) and the recovery, the drop that just ended.
        polls.list(Some((Some(85.0), 0.0, 0.0, 0.0)));
        polls.list(Some((Some(85.0), 15.0, 0.0, 0.0)));
        assert_eq!(polls.drops(), vec![]);
    }
}
