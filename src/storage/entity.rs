//! The entity index: which slots of the ids (`ids.rs`) are live, their generations, and where each
//! live entity's row is. What a row holds lives in `table/`; which table an entity belongs
//! in is decided by `world/`.

use std::collections::BTreeMap;

use super::error::StorageError;
use super::ids::{Entity, TableId, TableRow};

/// Where a live entity's row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Location {
    pub table: TableId,
    pub row: TableRow,
}

#[derive(Clone, Debug)]
struct Slot {
    generation: u32,
    /// `None` while the slot is free (or retired).
    location: Option<Location>,
}

/// How to take back one change to the index, for a transaction's undo log. Applied in
/// the reverse order of the changes, each puts the index back exactly as it was.
#[derive(Clone, Debug)]
pub(crate) enum IdsUndo {
    /// Ids were issued: the `reused` slots came off the free list, in that order, and the
    /// others were new slots from `end_before` on (in the dense part, which had
    /// `dense_before` slots, or in the sparse tail).
    Issued {
        reused: Vec<u32>,
        dense_before: usize,
        end_before: u64,
    },
    /// Ids were claimed (`SPAWN AT`): each claimed slot that existed had the generation
    /// given and no entity; the others were new. The free list was `free` (`None`:
    /// unchanged).
    Claimed {
        ids: Vec<Entity>,
        generations: Vec<(u32, u32)>,
        dense_before: usize,
        end_before: u64,
        free: Option<Vec<u32>>,
    },
    /// `entities` were freed, in that order (each slot onto the free list unless it was
    /// retired). Their locations are put back by the undo of their rows' removal (logged
    /// before this record, so applied after it).
    FreedMany { entities: Vec<Entity> },
}

/// The id of a slot being handed out. Slot 0 is a placeholder never put on the free list
/// nor pushed, and `reserve` keeps slots within 32 bits, so this cannot fail.
fn issued(slot: u64, generation: u32) -> Entity {
    match Entity::new(slot as u32, generation) {
        Some(entity) => entity,
        None => unreachable!("slot 0 is never handed out"),
    }
}

/// The highest slot number an id can carry.
const MAX_SLOT: u64 = u32::MAX as u64;

/// How far past the dense slots a claimed slot may be and still extend them (the skipped
/// slots cost 16 bytes each): at most this many, or as many as there are already.
const DENSE_REACH: usize = 1 << 16;

/// Slot -> (generation, location). Slots are dense in a vector from 0; a slot claimed far
/// past its end (`SPAWN AT` a high id) goes into a sparse tail instead, so that an id of
/// any slot costs memory for one entry, and while the tail holds anything new slots join
/// it. Freed slots are reused last-in-first-out with their generation bumped; a slot whose
/// generation would wrap is retired instead, so an old id can never name a new entity.
#[derive(Clone, Debug)]
pub(crate) struct EntityIndex {
    /// `slots[0]` is a placeholder so that slot numbers are vector indexes.
    slots: Vec<Slot>,
    /// Slots at or past `slots.len()` that are in use, by number (ordered, so that the
    /// index prints the same whatever order they came in).
    tail: BTreeMap<u32, Slot>,
    /// One past the highest slot ever used: where the next new slot is.
    end: u64,
    free: Vec<u32>,
    live: usize,
}

/// An entity index without its locations, as a snapshot keeps it: each dense slot's
/// generation, the tail's slots and generations, where the next new slot is, and the free
/// list in order. Locations come back from the tables (`EntityIndex::place`).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct IndexParts {
    pub generations: Vec<u32>,
    pub tail: Vec<(u32, u32)>,
    pub end: u64,
    pub free: Vec<u32>,
}

impl EntityIndex {
    /// The index's state for a snapshot (see `IndexParts`).
    pub fn parts(&self) -> IndexParts {
        IndexParts {
            generations: self.slots.iter().map(|s| s.generation).collect(),
            tail: self.tail.iter().map(|(&k, s)| (k, s.generation)).collect(),
            end: self.end,
            free: self.free.clone(),
        }
    }

    /// An index rebuilt from `parts`, holding no entity yet; refused when the parts could
    /// not have come from an index (a free slot that does not exist, or is the placeholder
    /// or repeated; a tail slot inside the dense part; `end` short of a slot in use).
    pub fn from_parts(parts: IndexParts) -> Result<EntityIndex, String> {
        if parts.generations.is_empty() {
            return Err("the entity index has no placeholder slot".into());
        }
        let dense = parts.generations.len();
        let mut tail = BTreeMap::new();
        for &(slot, generation) in &parts.tail {
            if (slot as usize) < dense
                || tail
                    .insert(
                        slot,
                        Slot {
                            generation,
                            location: None,
                        },
                    )
                    .is_some()
            {
                return Err(format!(
                    "the entity index's tail repeats slot {slot} or overlaps the dense slots"
                ));
            }
        }
        let highest = tail
            .keys()
            .next_back()
            .map_or(dense as u64, |&s| u64::from(s) + 1);
        if parts.end < highest.max(dense as u64) || parts.end > MAX_SLOT + 1 {
            return Err(format!(
                "the entity index's next slot {} is not past the slots in use",
                parts.end
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for &slot in &parts.free {
            let exists = (slot as usize) < dense || tail.contains_key(&slot);
            if slot == 0 || !exists || !seen.insert(slot) {
                return Err(format!(
                    "the entity index's free list holds slot {slot}, which is not a free slot"
                ));
            }
        }
        Ok(EntityIndex {
            slots: parts
                .generations
                .into_iter()
                .map(|generation| Slot {
                    generation,
                    location: None,
                })
                .collect(),
            tail,
            end: parts.end,
            free: parts.free,
            live: 0,
        })
    }

    /// Records that `entity` lives at `location` (loading a snapshot): its slot must exist
    /// with its generation and hold no entity yet (`free_slot_taken` checks the free list
    /// once all are placed).
    pub fn place(&mut self, entity: Entity, location: Location) -> Result<(), String> {
        if entity.slot() == 0 {
            return Err(format!(
                "entity {entity} is in a table but names the placeholder slot"
            ));
        }
        let slot = self
            .slot_mut(entity.slot())
            .ok_or_else(|| format!("entity {entity} is in a table but the index has no slot for it"))?;
        if slot.generation != entity.generation() || slot.location.is_some() {
            return Err(format!(
                "entity {entity} is in a table twice, or under another generation than its slot's"
            ));
        }
        slot.location = Some(location);
        self.live += 1;
        Ok(())
    }

    /// Whether a free slot holds an entity (which a snapshot's index must not have).
    pub fn free_slot_taken(&self) -> Option<u32> {
        self.free
            .iter()
            .copied()
            .find(|&s| self.slot(s).is_some_and(|slot| slot.location.is_some()))
    }

    pub fn new() -> Self {
        EntityIndex {
            slots: vec![Slot {
                generation: 0,
                location: None,
            }],
            tail: BTreeMap::new(),
            end: 1,
            free: Vec::new(),
            live: 0,
        }
    }

    pub fn live(&self) -> usize {
        self.live
    }

    #[inline]
    fn slot(&self, slot: u32) -> Option<&Slot> {
        match self.slots.get(slot as usize) {
            Some(s) => Some(s),
            None => self.tail.get(&slot),
        }
    }

    fn slot_mut(&mut self, slot: u32) -> Option<&mut Slot> {
        match self.slots.get_mut(slot as usize) {
            Some(s) => Some(s),
            None => self.tail.get_mut(&slot),
        }
    }

    /// Puts a new slot at `self.end` and advances it.
    fn push_new(&mut self, slot: Slot) -> u64 {
        let number = self.end;
        if self.tail.is_empty() && number == self.slots.len() as u64 {
            self.slots.push(slot);
        } else {
            self.tail.insert(number as u32, slot);
        }
        self.end += 1;
        number
    }

    /// Fails, changing nothing, unless `n` more entities can be allocated.
    pub fn reserve(&self, n: usize) -> Result<(), StorageError> {
        let never_used = MAX_SLOT + 1 - self.end;
        let available = never_used + self.free.len() as u64;
        if n as u64 > available {
            return Err(StorageError::OutOfEntities {
                requested: n,
                available,
            });
        }
        Ok(())
    }

    /// Allocates one id placed at `location`. Call `reserve(1)` first.
    pub fn alloc(&mut self, location: Location) -> Entity {
        match self.free.pop() {
            Some(slot) => self.reuse(slot, location),
            None => {
                self.live += 1;
                let slot = self.push_new(Slot {
                    generation: 0,
                    location: Some(location),
                });
                issued(slot, 0)
            }
        }
    }

    /// Allocates `n` ids placed at consecutive rows of `table` starting at `first_row`,
    /// recycled slots first. Call `reserve(n)` first.
    pub fn alloc_many(&mut self, n: usize, table: TableId, first_row: u32) -> Vec<Entity> {
        let at = |row: u32| Location {
            table,
            row: TableRow(row),
        };
        let mut ids = Vec::with_capacity(n);
        let mut row = first_row;
        while ids.len() < n {
            let Some(slot) = self.free.pop() else { break };
            ids.push(self.reuse(slot, at(row)));
            row += 1;
        }
        let fresh = n - ids.len();
        self.live += fresh;
        if self.tail.is_empty() && self.end == self.slots.len() as u64 {
            // New slots in one extend: this is the path of large batch spawns.
            let first_slot = self.slots.len();
            self.slots.extend((row..row + fresh as u32).map(|row| Slot {
                generation: 0,
                location: Some(at(row)),
            }));
            self.end += fresh as u64;
            ids.extend((first_slot..first_slot + fresh).map(|slot| issued(slot as u64, 0)));
        } else {
            for row in row..row + fresh as u32 {
                let slot = self.push_new(Slot {
                    generation: 0,
                    location: Some(at(row)),
                });
                ids.push(issued(slot, 0));
            }
        }
        ids
    }

    /// Fails, changing nothing, unless every id can be issued as it is (`SPAWN AT`, and
    /// dumps read back): its slot holds no live entity, the id was never issued before
    /// (its generation is not below the slot's), and no slot is named twice.
    pub fn check_claims(&self, ids: &[Entity]) -> Result<(), StorageError> {
        let taken = |entity: Entity, reason: String| Err(StorageError::IdTaken { entity, reason });
        let mut seen = hashbrown::HashSet::with_capacity(ids.len());
        for &id in ids {
            let slot = id.slot();
            if slot == 0 {
                return taken(id, "slot 0 is never used (ids are issued from slot 1)".into());
            }
            if !seen.insert(slot) {
                return taken(id, "its slot is named twice in one statement".into());
            }
            let Some(entry) = self.slot(slot) else {
                continue;
            };
            if entry.location.is_some() {
                let holder = issued(u64::from(slot), entry.generation);
                return taken(id, format!("entity {holder} is alive in its slot"));
            }
            let retired = entry.generation == u32::MAX && !self.free.contains(&slot);
            if id.generation() < entry.generation || retired {
                return taken(id, "that id was despawned, and ids are never reused".into());
            }
        }
        Ok(())
    }

    /// Issues exactly `ids`, placed at consecutive rows of `table` from `first_row`. Slots
    /// skipped past the end are left empty and off the free list: only `SPAWN AT` fills
    /// them, so an id a dump once held is never handed to a new entity. A slot far past
    /// the dense ones goes to the sparse tail, costing one entry. Call `check_claims(ids)`
    /// first.
    pub fn claim_many(&mut self, ids: &[Entity], table: TableId, first_row: u32) {
        // Only a slot that is empty after having been issued can be on the free list.
        let on_free_list = !self.free.is_empty()
            && ids.iter().any(|id| {
                self.slot(id.slot())
                    .is_some_and(|s| s.location.is_none() && s.generation > 0)
            });
        for (row, id) in (first_row..).zip(ids) {
            let slot = id.slot();
            let entry = Slot {
                generation: id.generation(),
                location: Some(Location {
                    table,
                    row: TableRow(row),
                }),
            };
            let dense = self.slots.len();
            if (slot as usize) < dense {
                self.slots[slot as usize] = entry;
            } else if self.tail.is_empty() && (slot as usize) < dense + dense.max(DENSE_REACH) {
                self.slots.resize(
                    slot as usize + 1,
                    Slot {
                        generation: 0,
                        location: None,
                    },
                );
                self.slots[slot as usize] = entry;
            } else {
                self.tail.insert(slot, entry);
            }
            self.end = self.end.max(u64::from(slot) + 1);
        }
        self.live += ids.len();
        if on_free_list {
            let claimed: hashbrown::HashSet<u32> = ids.iter().map(|id| id.slot()).collect();
            self.free.retain(|slot| !claimed.contains(slot));
        }
    }

    /// The undo of an `alloc`/`alloc_many` that issued `ids`, given `before`, the
    /// index's `mark()` taken before it.
    pub fn issued_undo(ids: &[Entity], before: (usize, u64)) -> IdsUndo {
        let (dense_before, end_before) = before;
        let reused = ids
            .iter()
            .map(|id| id.slot())
            .take_while(|&slot| u64::from(slot) < end_before)
            .collect();
        IdsUndo::Issued {
            reused,
            dense_before,
            end_before,
        }
    }

    /// (dense slots, end): what an undo of new slots truncates back to.
    pub fn mark(&self) -> (usize, u64) {
        (self.slots.len(), self.end)
    }

    /// The undo of `claim_many(ids, …)`, taken before it runs.
    pub fn claim_undo(&self, ids: &[Entity]) -> IdsUndo {
        let generations = ids
            .iter()
            .filter_map(|id| Some((id.slot(), self.slot(id.slot())?.generation)))
            .collect();
        let claimed: hashbrown::HashSet<u32> = ids.iter().map(|id| id.slot()).collect();
        let free = self
            .free
            .iter()
            .any(|slot| claimed.contains(slot))
            .then(|| self.free.clone());
        IdsUndo::Claimed {
            ids: ids.to_vec(),
            generations,
            dense_before: self.slots.len(),
            end_before: self.end,
            free,
        }
    }

    /// Takes back one change (the last one not yet taken back).
    pub fn undo(&mut self, undo: IdsUndo) {
        match undo {
            IdsUndo::Issued {
                reused,
                dense_before,
                end_before,
            } => {
                self.live -= (self.end - end_before) as usize;
                self.truncate(dense_before, end_before);
                for &slot in reused.iter().rev() {
                    if let Some(entry) = self.slot_mut(slot) {
                        entry.location = None;
                        self.free.push(slot);
                        self.live -= 1;
                    }
                }
            }
            IdsUndo::Claimed {
                ids,
                generations,
                dense_before,
                end_before,
                free,
            } => {
                let existed: hashbrown::HashSet<u32> = generations.iter().map(|&(slot, _)| slot).collect();
                for &(slot, generation) in &generations {
                    if let Some(entry) = self.slot_mut(slot) {
                        entry.generation = generation;
                        entry.location = None;
                    }
                }
                for id in &ids {
                    if !existed.contains(&id.slot()) {
                        self.tail.remove(&id.slot());
                    }
                }
                self.truncate(dense_before, end_before);
                self.live -= ids.len();
                if let Some(free) = free {
                    self.free = free;
                }
            }
            IdsUndo::FreedMany { entities } => {
                for &entity in entities.iter().rev() {
                    if let Some(entry) = self.slot_mut(entity.slot()) {
                        entry.generation = entity.generation();
                        self.live += 1;
                        if entity.generation() != u32::MAX {
                            self.free.pop();
                        }
                    }
                }
            }
        }
    }

    /// Forgets the slots made since the index had `dense` dense slots and its end was
    /// `end` (those slots are empty again by now).
    fn truncate(&mut self, dense: usize, end: u64) {
        self.slots.truncate(dense);
        // An end past the last slot number leaves nothing above it to forget.
        if let Ok(end) = u32::try_from(end) {
            drop(self.tail.split_off(&end));
        }
        self.end = end;
    }

    /// The last id each despawned slot held, in the order that rebuilds this index's state
    /// of them: retired slots first (their id's generation is the last one), then the free
    /// list from the slot handed out last to the one handed out next. Claiming each id
    /// (`claim_many`) and freeing them in this order leaves every slot's generation, the
    /// retired slots and the free list as they are here. Slots skipped by a claim and never
    /// issued are not listed.
    pub fn despawned(&self) -> Vec<Entity> {
        let on_free_list: hashbrown::HashSet<u32> = self.free.iter().copied().collect();
        let entries = self
            .slots
            .iter()
            .enumerate()
            .skip(1)
            .map(|(number, entry)| (number as u32, entry))
            .chain(self.tail.iter().map(|(&number, entry)| (number, entry)));
        let retired = entries.filter(|(number, entry)| {
            entry.location.is_none() && entry.generation == u32::MAX && !on_free_list.contains(number)
        });
        let mut ids: Vec<Entity> = retired
            .map(|(number, _)| issued(u64::from(number), u32::MAX))
            .collect();
        for &number in &self.free {
            // A slot on the free list was freed with its generation bumped past the id it held.
            if let Some(entry) = self.slot(number).filter(|e| e.generation > 0) {
                ids.push(issued(u64::from(number), entry.generation - 1));
            }
        }
        ids
    }

    /// Places a slot from the free list at `location` and issues its id.
    fn reuse(&mut self, slot: u32, location: Location) -> Entity {
        self.live += 1;
        let generation = match self.slot_mut(slot) {
            Some(entry) => {
                entry.location = Some(location);
                entry.generation
            }
            None => 0,
        };
        issued(u64::from(slot), generation)
    }

    /// Looks `entity` up, telling a despawned id from one never issued. The found case is
    /// `location`, inlined into callers' per-row loops (rollback's and attach's among
    /// them); the error is made out of line.
    #[inline]
    pub fn locate(&self, entity: Entity) -> Result<Location, StorageError> {
        match self.location(entity) {
            Some(location) => Ok(location),
            None => Err(self.missing(entity)),
        }
    }

    /// Why `entity` has no location: despawned (its slot's generation reached or moved
    /// past the id's) or never issued.
    #[cold]
    #[inline(never)]
    fn missing(&self, entity: Entity) -> StorageError {
        match self.slot(entity.slot()).filter(|_| entity.slot() != 0) {
            Some(s) if s.generation >= entity.generation() => StorageError::DespawnedEntity(entity),
            _ => StorageError::NoSuchEntity(entity),
        }
    }

    /// Where `entity` lives, when it is alive: `locate` without the error, inlined (a
    /// point read's lookup).
    #[inline]
    pub fn location(&self, entity: Entity) -> Option<Location> {
        let slot = self.slot(entity.slot()).filter(|_| entity.slot() != 0)?;
        match slot.generation == entity.generation() {
            true => slot.location,
            false => None,
        }
    }

    pub fn contains(&self, entity: Entity) -> bool {
        self.locate(entity).is_ok()
    }

    /// Moves a live entity's recorded location. The caller has checked that it is live.
    pub fn set_location(&mut self, entity: Entity, location: Location) {
        if let Some(slot) = self.slot_mut(entity.slot()) {
            slot.location = Some(location);
        }
    }

    /// Frees a live entity's slot. The caller has checked that it is live.
    pub fn free(&mut self, entity: Entity) {
        let Some(slot) = self.slot_mut(entity.slot()) else {
            return;
        };
        slot.location = None;
        // A slot whose generation would wrap is retired: reusing it would hand out an id
        // that an old holder may still keep.
        let pushed = match slot.generation.checked_add(1) {
            Some(next) => {
                slot.generation = next;
                true
            }
            None => false,
        };
        self.live -= 1;
        if pushed {
            self.free.push(entity.slot());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(row: u32) -> Location {
        Location {
            table: TableId::VOID,
            row: TableRow(row),
        }
    }

    #[test]
    fn first_generation_ids_are_small_integers() {
        let mut index = EntityIndex::new();
        let ids: Vec<String> = (0..3).map(|r| index.alloc(at(r)).to_string()).collect();
        assert_eq!(ids, ["1", "2", "3"]);
        assert_eq!(Entity::from_bits(0), None);
    }

    #[test]
    fn claims_issue_exact_ids_and_refuse_live_or_old_ones() {
        let mut index = EntityIndex::new();
        let first = index.alloc_many(2, TableId::VOID, 0);
        index.free(first[1]);
        let later = Entity::new(2, 3).unwrap();
        let far = Entity::new(10, 0).unwrap();
        index.check_claims(&[later, far]).unwrap();
        index.claim_many(&[later, far], TableId::VOID, 2);
        assert!(index.contains(later) && index.contains(far));
        // Slot 2 left the free list; the skipped slots 3..9 were not put on it.
        assert_eq!(index.alloc(at(9)).slot(), 11);
        let refused = |index: &EntityIndex, id| index.check_claims(&[id]).is_err();
        assert!(refused(&index, first[0]), "alive");
        assert!(refused(&index, Entity::new(2, 2).unwrap()), "an older generation");
        assert!(refused(&index, Entity::new(0, 1).unwrap()), "slot 0");
        let twice = Entity::new(5, 0).unwrap();
        assert!(index.check_claims(&[twice, Entity::new(5, 1).unwrap()]).is_err());
        index.check_claims(&[twice]).unwrap();
    }

    #[test]
    fn reuse_bumps_the_generation_and_refuses_the_old_id() {
        let mut index = EntityIndex::new();
        let a = index.alloc(at(0));
        let b = index.alloc(at(1));
        index.free(a);
        assert_eq!(index.locate(a), Err(StorageError::DespawnedEntity(a)));
        let c = index.alloc(at(0));
        assert_eq!(c.slot(), a.slot());
        assert_eq!(c.generation(), 1);
        assert_eq!(c.to_bits(), (1 << 32) | 1);
        assert_eq!(index.locate(a), Err(StorageError::DespawnedEntity(a)));
        assert_eq!(index.locate(c), Ok(at(0)));
        assert_eq!(index.locate(b), Ok(at(1)));
        assert_eq!(index.live(), 2);
    }

    #[test]
    fn batch_allocation_takes_recycled_slots_first_and_numbers_rows() {
        let mut index = EntityIndex::new();
        let ids = index.alloc_many(3, TableId::VOID, 0);
        index.free(ids[1]);
        let batch = index.alloc_many(3, TableId::VOID, 10);
        assert_eq!(
            batch
                .iter()
                .map(|e| (e.slot(), e.generation()))
                .collect::<Vec<_>>(),
            [(2, 1), (4, 0), (5, 0)]
        );
        let rows: Vec<u32> = batch.iter().map(|&e| index.locate(e).unwrap().row.0).collect();
        assert_eq!(rows, [10, 11, 12]);
        assert_eq!(index.live(), 5);
    }

    #[test]
    fn ids_never_issued_are_told_apart_from_despawned_ones() {
        let mut index = EntityIndex::new();
        let a = index.alloc(at(0));
        let future_generation = Entity::new(a.slot(), 5).unwrap();
        let future_slot = Entity::from_bits(99).unwrap();
        let slot_zero = Entity::new(0, 3).unwrap();
        for e in [future_generation, future_slot, slot_zero] {
            assert_eq!(index.locate(e), Err(StorageError::NoSuchEntity(e)));
        }
    }

    #[test]
    fn a_claim_of_the_last_slot_costs_one_entry_and_undoes_exactly() {
        let mut index = EntityIndex::new();
        let first = index.alloc(at(0));
        let before = format!("{index:?}");
        let mark = index.mark();
        let last = Entity::new(u32::MAX, 7).unwrap();
        index.check_claims(&[last]).unwrap();
        let undo = index.claim_undo(&[last]);
        index.claim_many(&[last], TableId::VOID, 1);
        assert_eq!(index.slots.len(), 2, "no slot between was made");
        assert_eq!(index.tail.len(), 1);
        assert_eq!(index.locate(last), Ok(at(1)));
        assert!(index.reserve(1).is_err(), "no new slot is left past the last one");
        index.undo(undo);
        assert_eq!(format!("{index:?}"), before, "undone, the index is as it was");
        assert_eq!(index.mark(), mark);

        index.claim_many(&[last], TableId::VOID, 1);
        index.free(last);
        assert!(index.reserve(1).is_ok(), "the freed slot can be reused");
        let again = index.alloc(at(1));
        assert_eq!((again.slot(), again.generation()), (u32::MAX, 8));
        assert_eq!(index.locate(last), Err(StorageError::DespawnedEntity(last)));
        assert!(index.contains(first));
    }

    #[test]
    fn new_slots_after_a_far_claim_go_to_the_sparse_tail_and_undo() {
        let mut index = EntityIndex::new();
        let far = Entity::new(5_000_000, 0).unwrap();
        index.claim_many(&[far], TableId::VOID, 0);
        let before = (format!("{index:?}"), index.mark());
        let ids = index.alloc_many(3, TableId::VOID, 1);
        let slots: Vec<u32> = ids.iter().map(|e| e.slot()).collect();
        assert_eq!(slots, [5_000_001, 5_000_002, 5_000_003]);
        assert!(index.slots.len() < 10);
        assert_eq!(index.locate(ids[2]), Ok(at(3)));
        let undo = EntityIndex::issued_undo(&ids, before.1);
        index.undo(undo);
        assert_eq!((format!("{index:?}"), index.mark()), before);
    }

    #[test]
    fn claiming_and_freeing_the_despawned_ids_rebuilds_their_state() {
        let mut index = EntityIndex::new();
        let ids = index.alloc_many(6, TableId(0), 0);
        let high = Entity::new(100_000, 7).unwrap();
        let doomed = Entity::new(200_000, u32::MAX).unwrap();
        index.claim_many(&[high, doomed], TableId(0), 6);
        for &id in [ids[3], ids[1], high, doomed, ids[4]].iter() {
            index.free(id);
        }
        // Slot 2 is freed and handed out again: its last id is live, so it is not listed.
        index.free(ids[2]);
        let again = index.alloc(at(9));
        assert_eq!(again.slot(), ids[2].slot());
        let despawned = index.despawned();
        assert_eq!(despawned, vec![doomed, ids[3], ids[1], high, ids[4]]);

        // A fresh index given the live ids and then these, claimed and freed in order, is
        // the same index as far as any id can tell.
        let mut rebuilt = EntityIndex::new();
        let live = [ids[0], again, ids[5]];
        rebuilt.claim_many(&despawned, TableId(0), 0);
        for &id in &despawned {
            rebuilt.free(id);
        }
        rebuilt.claim_many(&live, TableId(0), 0);
        assert_eq!(rebuilt.free, index.free);
        for id in despawned.iter().chain(&live) {
            assert_eq!(rebuilt.locate(*id).is_ok(), index.locate(*id).is_ok(), "{id}");
            assert_eq!(
                rebuilt.check_claims(&[*id]).is_ok(),
                index.check_claims(&[*id]).is_ok(),
                "{id}"
            );
        }
        assert_eq!(rebuilt.despawned(), despawned);
        assert_eq!(rebuilt.alloc(at(0)), index.alloc(at(0)));
    }

    #[test]
    fn a_slot_whose_generation_would_wrap_is_retired() {
        let mut index = EntityIndex::new();
        let a = index.alloc(at(0));
        index.slots[a.slot() as usize].generation = u32::MAX;
        let last = Entity::new(a.slot(), u32::MAX).unwrap();
        index.free(last);
        let next = index.alloc(at(0));
        assert_ne!(next.slot(), a.slot(), "a retired slot must not be reused");
        assert_eq!(index.locate(last), Err(StorageError::DespawnedEntity(last)));
    }
}
