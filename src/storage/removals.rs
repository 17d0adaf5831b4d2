//! Removal logs: for each component whose removals are tracked, the ids that lost it
//! (detached, or despawned holding it), in the order they lost it. `removed(C)` reads
//! them.
//!
//! Invariants:
//! - An entry is appended by the world's write that took the component away, stamped with
//!   that write's tick (the world's write tick, which only grows) and with the schedule
//!   tick it happened in (for how long it is kept). Both stamps never decrease along a
//!   log, so "what a reader has not seen" (write tick above its cursor) is a suffix, and
//!   "what is older than `keep` ticks" a prefix.
//! - Entries leave only from the front (`drop_front`), and only when the schedule says so;
//!   a rollback takes back the entries of the writes it undoes, and puts back the ones
//!   dropped meanwhile.
//! - A log exists only for a component some reader asked `removed()` of: a world that
//!   never asks logs nothing.

use super::ids::Entity;

/// The ids that lost one component, oldest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RemovalLog {
    entities: Vec<Entity>,
    /// The world's write tick of each entry.
    writes: Vec<u64>,
    /// The schedule tick each entry was logged in.
    ticks: Vec<u64>,
}

/// Entries dropped from a log's front, kept to put them back.
#[derive(Clone, Debug, Default)]
pub(crate) struct DroppedRemovals {
    entities: Vec<Entity>,
    writes: Vec<u64>,
    ticks: Vec<u64>,
}

impl RemovalLog {
    /// How many entries are kept.
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// True when none is.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// The ids that lost the component after write tick `since` (all kept for `None`),
    /// oldest first.
    pub fn since(&self, since: Option<u64>) -> &[Entity] {
        &self.entities[self.logged_until(since)..]
    }

    /// How many of the first entries were logged at or before write tick `tick` (none for
    /// `None`).
    pub fn logged_until(&self, tick: Option<u64>) -> usize {
        tick.map_or(0, |t| self.writes.partition_point(|&w| w <= t))
    }

    /// How many of the first entries were logged before schedule tick `tick`.
    pub fn logged_before_tick(&self, tick: u64) -> usize {
        self.ticks.partition_point(|&t| t < tick)
    }

    /// The entries, as three lists: the ids, their write ticks, their schedule ticks.
    pub(crate) fn entries(&self) -> (&[Entity], &[u64], &[u64]) {
        (&self.entities, &self.writes, &self.ticks)
    }

    /// A log as a snapshot kept it; `None` when its lists differ in length or a stamp
    /// decreases along them.
    pub(crate) fn from_entries(
        entities: Vec<Entity>,
        writes: Vec<u64>,
        ticks: Vec<u64>,
    ) -> Option<RemovalLog> {
        let ordered = |v: &[u64]| v.windows(2).all(|w| w[0] <= w[1]);
        (entities.len() == writes.len() && writes.len() == ticks.len() && ordered(&writes) && ordered(&ticks))
            .then_some(RemovalLog {
                entities,
                writes,
                ticks,
            })
    }

    pub(crate) fn push(&mut self, entity: Entity, write: u64, tick: u64) {
        // Stamps never decrease along the log, whatever the caller gives.
        let write = self.writes.last().map_or(write, |&w| w.max(write));
        let tick = self.ticks.last().map_or(tick, |&t| t.max(tick));
        self.entities.push(entity);
        self.writes.push(write);
        self.ticks.push(tick);
    }

    /// Takes back the last entry (the undo of `push`).
    pub(crate) fn pop(&mut self) {
        self.entities.pop();
        self.writes.pop();
        self.ticks.pop();
    }

    pub(crate) fn drop_front(&mut self, count: usize) -> DroppedRemovals {
        let count = count.min(self.entities.len());
        DroppedRemovals {
            entities: self.entities.drain(..count).collect(),
            writes: self.writes.drain(..count).collect(),
            ticks: self.ticks.drain(..count).collect(),
        }
    }

    /// Puts entries dropped by `drop_front` back in front.
    pub(crate) fn undrop(&mut self, front: DroppedRemovals) {
        prepend(&mut self.entities, front.entities);
        prepend(&mut self.writes, front.writes);
        prepend(&mut self.ticks, front.ticks);
    }
}

fn prepend<T>(dst: &mut Vec<T>, mut front: Vec<T>) {
    front.append(dst);
    *dst = front;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(i: u32) -> Entity {
        Entity::new(i, 1).unwrap()
    }

    #[test]
    fn since_is_the_suffix_after_a_write_tick() {
        let mut log = RemovalLog::default();
        log.push(e(1), 5, 1);
        log.push(e(2), 7, 1);
        log.push(e(3), 7, 2);
        assert_eq!(log.since(None), &[e(1), e(2), e(3)]);
        assert_eq!(log.since(Some(4)), &[e(1), e(2), e(3)]);
        assert_eq!(log.since(Some(5)), &[e(2), e(3)]);
        assert_eq!(log.since(Some(7)), &[] as &[Entity]);
        assert_eq!(log.logged_before_tick(2), 2);
    }

    #[test]
    fn dropped_entries_come_back_in_front() {
        let mut log = RemovalLog::default();
        for i in 1..=4 {
            log.push(e(i), u64::from(i), u64::from(i));
        }
        let before = log.clone();
        let front = log.drop_front(3);
        assert_eq!(log.since(None), &[e(4)]);
        log.undrop(front);
        assert_eq!(log, before);
        log.pop();
        assert_eq!(log.since(None), &[e(1), e(2), e(3)]);
    }
}
