//! What one list shows of its assets' score drops and SNDS blocks, kept for the few assets it
//! shows one for, so that the events can be told after the list's assets are rendered and
//! dropped.

use std::collections::HashMap;

use super::Asset;

/// A Sender Score drop: the score before and after it, as whole numbers.
pub type Drop = (i64, i64);

/// The score drops and SNDS blocks one asset's list item shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Changes {
    /// The drop at the API's last check (`senderscore_change.last_check` below 0).
    pub drop: Option<Drop>,
    /// A drop at checks before it that no list of this replica showed
    /// ([`Asset::senderscore_missed_change`] below 0).
    pub missed_drop: Option<Drop>,
    /// Blocked by SNDS at the last check.
    pub blocked: bool,
    /// Blocked at a check no list of this replica showed.
    pub missed_block: bool,
}

impl Changes {
    /// What `asset` shows.
    pub fn of(asset: &Asset) -> Changes {
        let whole = |v: f64| v.round() as i64;
        let score = asset.senderscore;
        let change = asset.senderscore_change.unwrap_or(0.0);
        let drop = score
            .filter(|_| change < 0.0)
            .map(|s| (whole(s - change), whole(s)));
        let missed_drop = score
            .zip(asset.senderscore_missed_change.filter(|m| *m < 0.0))
            .map(|(s, missed)| (whole(s - change - missed), whole(s - change)));
        let began =
            asset.snds_blocked == Some(1.0) && asset.snds_blocked_change.is_some_and(|c| c > 0.0);
        let missed_block = asset.snds_blocked_missed_change.is_some_and(|m| m > 0.0);
        Changes {
            drop,
            missed_drop,
            blocked: began,
            missed_block,
        }
    }
}

/// What one list shows of its assets' changes, for the assets it shows one for.
#[derive(Debug, Clone, Default)]
pub struct Shown(HashMap<Box<str>, Changes>);

impl Shown {
    /// Notes what `asset` shows, if anything.
    pub fn note(&mut self, asset: &Asset) {
        let changes = Changes::of(asset);
        if changes != Changes::default() {
            self.0.insert(asset.name.as_str().into(), changes);
        }
    }

    /// What the list shows of the asset `name`.
    pub fn of(&self, name: &str) -> Changes {
        self.0.get(name).copied().unwrap_or_default()
    }

    /// Every asset the list shows a change of, with it.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Changes)> {
        self.0.iter().map(|(name, changes)| (&**name, *changes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::dto::{ListItem, NamedItem};
    use crate::vocabulary::Kind;

    fn asset(score: Option<f64>, change: f64, missed: Option<f64>) -> Asset {
        let named = NamedItem {
            name: "192.0.2.1".to_owned(),
            item: ListItem::default(),
        };
        let mut asset = Asset::from_item(Kind::Ip, named, 8, &mut Vec::new());
        asset.senderscore = score;
        asset.senderscore_change = Some(change);
        asset.senderscore_missed_change = missed;
        asset
    }

    #[test]
    fn a_drop_at_the_last_check_and_one_no_list_showed_are_told_by_their_scores() {
        let shown = Changes::of(&asset(Some(60.0), -10.0, Some(-15.0)));
        assert_eq!(shown.drop, Some((70, 60)));
        assert_eq!(shown.missed_drop, Some((85, 70)));
        assert!(!shown.blocked);
        assert_eq!(
            Changes::of(&asset(Some(60.0), 5.0, None)),
            Changes::default()
        );
        assert_eq!(Changes::of(&asset(None, -10.0, None)), Changes::default());
    }

    #[test]
    fn an_snds_block_shows_when_it_began_at_the_last_check_or_at_one_no_list_showed() {
        let mut blocked = asset(Some(80.0), 0.0, None);
        blocked.snds_blocked = Some(1.0);
        blocked.snds_blocked_change = Some(1.0);
        assert!(Changes::of(&blocked).blocked);
        blocked.snds_blocked_change = Some(0.0);
        assert!(
            !Changes::of(&blocked).blocked,
            "blocked since an earlier check"
        );
        blocked.snds_blocked_missed_change = Some(1.0);
        assert!(Changes::of(&blocked).missed_block);
    }
}
