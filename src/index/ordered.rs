//! The ordered index's structure: a B-tree of `(key, entity)` pairs, so equal keys sit
//! together in id order and a range of keys is one walk; each entity's key is kept beside
//! it (by slot) so that a changed or removed value finds its old pair. Keys are
//! `storage::Key`, the one value order every sort and group uses: -0.0 and 0.0 are one
//! key, NaN sorts above every number (SQL comparisons with NaN are false, so a search that
//! includes NaN only adds candidates the filter drops). A function index keeps a tuple of
//! keys per entity (`Ordered<Box<[Key]>>`), compared part by part.

use std::collections::BTreeSet;
use std::ops::Bound;

use crate::storage::{Entity, Key, SlotMap};

/// A key range; both ends as SQL wrote them (`<` excludes, `<=` includes).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KeyRange<K = Key> {
    pub lo: Bound<K>,
    pub hi: Bound<K>,
}

#[derive(Clone, Debug)]
pub(crate) struct Ordered<K = Key> {
    tree: BTreeSet<(K, Entity)>,
    /// Each entity's key, by slot.
    keys: SlotMap<K>,
}

impl<K> Default for Ordered<K> {
    fn default() -> Self {
        Ordered {
            tree: BTreeSet::new(),
            keys: SlotMap::default(),
        }
    }
}

const FIRST: Entity = match Entity::from_bits(1) {
    Some(e) => e,
    None => unreachable!(),
};
const LAST: Entity = match Entity::from_bits(u64::MAX) {
    Some(e) => e,
    None => unreachable!(),
};

impl<K: Ord + Clone> Ordered<K> {
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// An index of `pairs` (each entity once), built in one pass over them sorted: what
    /// filling an empty index costs, instead of one descent of the tree per pair.
    pub fn from_pairs(mut pairs: Vec<(K, Entity)>) -> Ordered<K> {
        let mut keys = SlotMap::default();
        for (k, e) in &pairs {
            keys.insert(e.slot(), k.clone());
        }
        pairs.sort_unstable();
        Ordered {
            tree: pairs.into_iter().collect(),
            keys,
        }
    }

    pub fn key_of(&self, entity: Entity) -> Option<&K> {
        self.keys.get(entity.slot())
    }

    /// Files `entity` under `key` (no key: out of the index), wherever it was before.
    pub fn insert(&mut self, entity: Entity, key: Option<K>) {
        if self.key_of(entity) == key.as_ref() {
            return;
        }
        self.remove(entity);
        let Some(key) = key else { return };
        self.tree.insert((key.clone(), entity));
        self.keys.insert(entity.slot(), key);
    }

    pub fn remove(&mut self, entity: Entity) {
        if let Some(key) = self.keys.remove(entity.slot()) {
            self.tree.remove(&(key, entity));
        }
    }

    /// The entities whose key equals `key`.
    pub fn equal(&self, key: &K, limit: usize, out: &mut Vec<Entity>) {
        self.range(
            &KeyRange {
                lo: Bound::Included(key.clone()),
                hi: Bound::Included(key.clone()),
            },
            limit,
            out,
        );
    }

    /// The entities whose key lies in `range`, until `out` holds `limit`.
    pub fn range(&self, range: &KeyRange<K>, limit: usize, out: &mut Vec<Entity>) {
        let lo = match &range.lo {
            Bound::Included(k) => Bound::Included((k.clone(), FIRST)),
            Bound::Excluded(k) => Bound::Excluded((k.clone(), LAST)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let hi = match &range.hi {
            Bound::Included(k) => Bound::Included((k.clone(), LAST)),
            Bound::Excluded(k) => Bound::Excluded((k.clone(), FIRST)),
            Bound::Unbounded => Bound::Unbounded,
        };
        if is_empty(&lo, &hi) {
            return;
        }
        let room = limit.saturating_sub(out.len());
        out.extend(self.tree.range((lo, hi)).take(room).map(|(_, e)| *e));
    }

    /// Every (key, entity) pair in key order, for consistency checks.
    pub fn pairs(&self) -> impl Iterator<Item = &(K, Entity)> {
        self.tree.iter()
    }
}

impl Ordered<Key> {
    /// The entities whose TEXT key starts with `prefix`, until `out` holds `limit`.
    pub fn prefix(&self, prefix: &str, limit: usize, out: &mut Vec<Entity>) {
        let from = Bound::Included((Key::Text(prefix.into()), FIRST));
        let room = limit.saturating_sub(out.len());
        out.extend(
            self.tree
                .range((from, Bound::Unbounded))
                .take_while(|(k, _)| matches!(k, Key::Text(t) if t.starts_with(prefix)))
                .take(room)
                .map(|(_, e)| *e),
        );
    }
}

/// `BTreeSet::range` panics on a range whose start is past its end; SQL just finds nothing.
fn is_empty<K: Ord>(lo: &Bound<(K, Entity)>, hi: &Bound<(K, Entity)>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b))
        | (Bound::Excluded(a), Bound::Excluded(b)) => a >= b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(bits: u64) -> Entity {
        Entity::from_bits(bits).expect("non-zero")
    }

    fn found(f: impl FnOnce(&mut Vec<Entity>)) -> Vec<u64> {
        let mut out = Vec::new();
        f(&mut out);
        out.into_iter().map(Entity::to_bits).collect()
    }

    #[test]
    fn ranges_agree_with_sql_comparison() {
        let mut o: Ordered = Ordered::default();
        for (i, x) in [-1.5, -0.0, 0.0, 2.0, f64::NAN, 2.0].into_iter().enumerate() {
            o.insert(e(i as u64 + 1), Some(Key::float(x)));
        }
        let zero = Key::float(0.0);
        assert_eq!(
            found(|out| o.equal(&Key::float(-0.0), usize::MAX, out)),
            vec![2, 3]
        );
        let range = KeyRange {
            lo: Bound::Excluded(zero.clone()),
            hi: Bound::Included(Key::float(2.0)),
        };
        assert_eq!(found(|out| o.range(&range, usize::MAX, out)), vec![4, 6]);
        let empty = KeyRange {
            lo: Bound::Included(Key::float(3.0)),
            hi: Bound::Excluded(Key::float(1.0)),
        };
        assert_eq!(found(|out| o.range(&empty, usize::MAX, out)), Vec::<u64>::new());
        o.insert(e(4), None);
        o.insert(e(6), Some(Key::float(-9.0)));
        assert_eq!(found(|out| o.range(&range, usize::MAX, out)), Vec::<u64>::new());
        assert_eq!(o.len(), 5);
    }

    #[test]
    fn prefixes_stop_at_the_first_key_without_them() {
        let mut o: Ordered = Ordered::default();
        for (i, s) in ["zig", "ziggy", "ziggy2", "zag", "zih", "Ziggy"]
            .into_iter()
            .enumerate()
        {
            o.insert(e(i as u64 + 1), Some(Key::Text(s.into())));
        }
        assert_eq!(found(|out| o.prefix("zigg", usize::MAX, out)), vec![2, 3]);
        assert_eq!(found(|out| o.prefix("", usize::MAX, out)).len(), 6);
        // A search stops once it holds its limit.
        assert_eq!(found(|out| o.prefix("", 4, out)).len(), 4);
        assert_eq!(found(|out| o.prefix("zigg", 1, out)), vec![2]);
        let all = KeyRange {
            lo: Bound::Unbounded,
            hi: Bound::Unbounded,
        };
        assert_eq!(found(|out| o.range(&all, 3, out)), vec![6, 4, 1]);
        let mut out = vec![e(9)];
        o.equal(&Key::Text("zig".into()), 1, &mut out);
        assert_eq!(out.len(), 1, "the limit counts what `out` held before");
    }
}
