//! `Buckets<K>`: entities grouped by a hashable key (a relation's target, a grid cell),
//! with O(1) insert, move and remove. What the key means, and how to search several
//! buckets, is the business of the index that uses it.

use std::hash::Hash;

use hashbrown::HashMap;

use crate::storage::{Entity, SlotMap};

/// Each entity sits in at most one bucket, with a value of its own (`V`: a grid cell's
/// point, so that a search reads a cell's points where its entities are; nothing for a
/// relation's targets); `at` (indexed by entity slot) remembers which bucket and where in
/// it, so removing an entity is a swap-remove, not a search.
#[derive(Clone, Debug)]
pub struct Buckets<K, V = ()> {
    map: HashMap<K, Bucket<V>>,
    at: SlotMap<(K, u32)>,
    len: usize,
}

/// One bucket's entities and their values, side by side (the same length, the same order).
#[derive(Clone, Debug)]
struct Bucket<V> {
    entities: Vec<Entity>,
    values: Vec<V>,
}

impl<V> Default for Bucket<V> {
    fn default() -> Self {
        Bucket {
            entities: Vec::new(),
            values: Vec::new(),
        }
    }
}

impl<K, V> Default for Buckets<K, V> {
    fn default() -> Self {
        Buckets {
            map: HashMap::new(),
            at: SlotMap::default(),
            len: 0,
        }
    }
}

impl<K: Copy + Hash + Eq> Buckets<K> {
    /// Puts `entity` in `key`'s bucket, moving it out of the one it was in.
    pub fn insert(&mut self, entity: Entity, key: K) {
        self.insert_with(entity, key, ());
    }
}

impl<K: Copy + Hash + Eq, V: Copy> Buckets<K, V> {
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

    /// The value filed with `entity`.
    pub fn value_of(&self, entity: Entity) -> Option<V> {
        let &(key, position) = self.at.get(entity.slot())?;
        self.map.get(&key)?.values.get(position as usize).copied()
    }

    /// Puts `entity` in `key`'s bucket with `value`, moving it out of the one it was in
    /// (or only changing its value, when it stays).
    pub fn insert_with(&mut self, entity: Entity, key: K, value: V) {
        if let Some(&(at, position)) = self.at.get(entity.slot())
            && at == key
            && let Some(slot) = self
                .map
                .get_mut(&key)
                .and_then(|b| b.values.get_mut(position as usize))
        {
            *slot = value;
            return;
        }
        self.remove(entity);
        let bucket = self.map.entry(key).or_default();
        let position = bucket.entities.len() as u32;
        bucket.entities.push(entity);
        bucket.values.push(value);
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
        bucket.entities.swap_remove(position as usize);
        bucket.values.swap_remove(position as usize);
        if let Some(&moved) = bucket.entities.get(position as usize)
            && let Some((_, p)) = self.at.get_mut(moved.slot())
        {
            *p = position;
        }
        // An empty bucket is dropped so that iterating buckets costs what they hold.
        if bucket.entities.is_empty() {
            self.map.remove(&key);
        }
    }

    /// The entities in `key`'s bucket, in no particular order.
    pub fn get(&self, key: &K) -> &[Entity] {
        self.map.get(key).map_or(&[], |b| b.entities.as_slice())
    }

    /// The entities in `key`'s bucket and their values, in the same order.
    pub fn get_with(&self, key: &K) -> (&[Entity], &[V]) {
        self.map
            .get(key)
            .map_or((&[], &[]), |b| (b.entities.as_slice(), b.values.as_slice()))
    }

    /// Every non-empty bucket, with its entities and their values.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &[Entity], &[V])> {
        self.map
            .iter()
            .map(|(k, b)| (k, b.entities.as_slice(), b.values.as_slice()))
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

    #[test]
    fn values_follow_their_entities_through_moves_and_swap_removes() {
        let mut b: Buckets<u8, i32> = Buckets::default();
        b.insert_with(e(1), 7, 10);
        b.insert_with(e(2), 7, 20);
        b.insert_with(e(3), 7, 30);
        // Same bucket: the value changes in place; another bucket: it moves with it.
        b.insert_with(e(2), 7, 21);
        b.insert_with(e(1), 9, 11);
        let (entities, values) = b.get_with(&7);
        let mut pairs: Vec<(Entity, i32)> = entities.iter().copied().zip(values.iter().copied()).collect();
        pairs.sort();
        assert_eq!(pairs, vec![(e(2), 21), (e(3), 30)]);
        assert_eq!(b.value_of(e(1)), Some(11));
        b.remove(e(2));
        assert_eq!(b.get_with(&7), (&[e(3)][..], &[30][..]));
        assert_eq!((b.value_of(e(3)), b.value_of(e(2))), (Some(30), None));
        assert_eq!(b.len(), 2);
    }
}
