//! `SlotMap`: values kept by entity slot, for structures beside the tables (the entity
//! index's neighbours: the indexes' "where is this entity" maps). Dense in a vector while
//! the slots are; a slot far past the vector's end (an entity spawned at a high id) goes
//! to a sparse map instead, so any slot costs memory for one value.
//!
//! Invariants: a slot is in the vector or in the map, never both; the vector grows only
//! to a slot within `max(len, 65,536)` of its end, and takes the map's entries below its
//! new end when it grows.

use std::collections::BTreeMap;

/// How far past its end the dense vector grows to reach a slot, at least.
const DENSE_REACH: usize = 1 << 16;

/// Values by slot number.
#[derive(Clone, Debug)]
pub(crate) struct SlotMap<V> {
    dense: Vec<Option<V>>,
    sparse: BTreeMap<u32, V>,
}

impl<V> Default for SlotMap<V> {
    fn default() -> Self {
        SlotMap {
            dense: Vec::new(),
            sparse: BTreeMap::new(),
        }
    }
}

impl<V> SlotMap<V> {
    #[inline]
    pub fn get(&self, slot: u32) -> Option<&V> {
        match self.dense.get(slot as usize) {
            Some(v) => v.as_ref(),
            None if self.sparse.is_empty() => None,
            None => self.sparse.get(&slot),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, slot: u32) -> Option<&mut V> {
        match self.dense.get_mut(slot as usize) {
            Some(v) => v.as_mut(),
            None => self.sparse.get_mut(&slot),
        }
    }

    /// Puts `value` at `slot`; gives back the value it replaced.
    pub fn insert(&mut self, slot: u32, value: V) -> Option<V> {
        let at = slot as usize;
        let len = self.dense.len();
        if at >= len && at < len + len.max(DENSE_REACH) {
            self.dense.resize_with(at + 1, || None);
            let above = self.sparse.split_off(&slot.saturating_add(1));
            for (s, v) in std::mem::replace(&mut self.sparse, above) {
                self.dense[s as usize] = Some(v);
            }
        }
        match self.dense.get_mut(at) {
            Some(cell) => cell.replace(value),
            None => self.sparse.insert(slot, value),
        }
    }

    /// Takes the value at `slot` out.
    pub fn remove(&mut self, slot: u32) -> Option<V> {
        match self.dense.get_mut(slot as usize) {
            Some(cell) => cell.take(),
            None => self.sparse.remove(&slot),
        }
    }

    pub fn clear(&mut self) {
        self.dense.clear();
        self.sparse.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn far_slots_cost_one_entry_and_near_ones_join_the_vector() {
        let mut map = SlotMap::default();
        assert_eq!(map.insert(3, 'a'), None);
        assert_eq!(map.insert(u32::MAX, 'z'), None);
        assert_eq!(map.insert(4_000_000, 'm'), None);
        assert!(map.dense.len() < 10, "the far slots did not grow the vector");
        assert_eq!(
            (map.get(3), map.get(u32::MAX), map.get(4_000_000)),
            (Some(&'a'), Some(&'z'), Some(&'m'))
        );
        assert_eq!(map.get(5), None);
        // Slots near the end grow it; it takes the sparse entries it now covers.
        let mut at = 0;
        while at < 4_000_000 {
            at += 60_000;
            map.insert(at, 'n');
        }
        assert!(map.dense.len() > 4_000_000);
        assert_eq!(map.sparse.len(), 1, "4,000,000 moved into the vector");
        assert_eq!(map.get(4_000_000), Some(&'m'));
        assert_eq!(map.insert(u32::MAX, 'y'), Some('z'));
        assert_eq!(map.remove(u32::MAX), Some('y'));
        assert_eq!(map.remove(3), Some('a'));
        assert_eq!((map.get(3), map.get(u32::MAX)), (None, None));
    }
}
