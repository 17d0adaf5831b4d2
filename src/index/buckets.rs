//! `Buckets<K>`: entities grouped by a hashable key (a relation's target, a grid cell),
//! with O(1) insert, move and remove. What the key means, and how to search several
//! buckets, is the business of the index that uses it.

use std::hash::Hash;

use hashbrown::HashMap;

use crate::storage::{Entity, SlotMap};

/// Each entity sits in at most one bucket; `at` (indexed by entity slot) remembers which
/// bucket and where in it, so removing an entity is a swap-remove, not a search.
#[derive(Clone, Debug)]
pub struct Buckets<K> {
    map: HashMap<K, Vec<Entity>>,
    at: SlotMap<(K, u32)>,
    len: usize,
}

impl<K> Default for Buckets<K> {
    fn default() -> Self {
        Buckets {
            map: HashMap::new(),
            at: SlotMap::default(),
            len: 0,
        }
    }
}

impl<K: Copy + Hash + Eq> Buckets<K> {
    /// How many entities are in some bucket.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no entity is filed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many buckets hold at least one entity.
    pub fn bucket_count(&self) -> usize {
        self.map.len()
    }

    /// The bucket `entity` is in.
    pub fn key_of(&self, entity: Entity) -> Option<K> {
        self.at.get(entity.slot()).map(|&(k, _)| k)
    }

    /// Puts `entity` in `key`'s bucket, moving it out of the one it was in.
    pub fn insert(&mut self, entity: Entity, key: K) {
        if self.key_of(entity) == Some(key) {
            return;
        }
        self.remove(entity);
        let bucket = self.map.entry(key).or_default();
        let position = bucket.len() as u32;
        bucket.push(entity);
        self.at.insert(entity.slot(), (key, position));
        self.len += 1;
    }

    /// Takes `entity` out of its bucket, if it is in one.
    pub fn remove(&mut self, entity: Entity) {
        let Some((key, position)) = self.at.remove(entity.slot()) else {
            return;
        };
        self.len -= 1;
        let Some(bucket) = self.map.get_mut(&key) else {
            return;
        };
        bucket.swap_remove(position as usize);
        if let Some(&moved) = bucket.get(position as usize)
            && let Some((_, p)) = self.at.get_mut(moved.slot())
        {
            *p = position;
        }
        // An empty bucket is dropped so that iterating buckets costs what they hold.
        if bucket.is_empty() {
            self.map.remove(&key);
        }
    }

    /// The entities in `key`'s bucket, in no particular order.
    pub fn get(&self, key: &K) -> &[Entity] {
        self.map.get(key).map_or(&[], Vec::as_slice)
    }

    /// Every non-empty bucket.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &[Entity])> {
        self.map.iter().map(|(k, v)| (k, v.as_slice()))
    }

    /// Forgets every entity.
    pub fn clear(&mut self) {
        self.map.clear();
        self.at.clear();
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(bits: u64) -> Entity {
        Entity::from_bits(bits).expect("non-zero")
    }

    #[test]
    fn entities_move_between_buckets_and_leave_them() {
        let mut b: Buckets<u8> = Buckets::default();
        b.insert(e(1), 7);
        b.insert(e(2), 7);
        b.insert(e(3), 7);
        b.insert(e(1), 9);
        let mut seven = b.get(&7).to_vec();
        seven.sort();
        assert_eq!(seven, vec![e(2), e(3)]);
        assert_eq!(b.get(&9), &[e(1)]);
        b.remove(e(2));
        assert_eq!(b.get(&7), &[e(3)]);
        assert_eq!(b.key_of(e(3)), Some(7));
        b.remove(e(3));
        b.remove(e(3));
        assert_eq!(b.bucket_count(), 1);
        assert_eq!(b.len(), 1);
        assert_eq!(b.key_of(e(2)), None);
    }
}
