//! The ids that stand for storage's things everywhere else: entities (generational),
//! component types, fields, tables and rows. Plain `Copy` values with no behaviour beyond
//! their bits, so every other file of storage (values, errors, the catalog, tables, the
//! entity index) can name them without naming each other.

use std::fmt;
use std::num::NonZeroU64;

/// A generational entity id: the low 32 bits are the slot, the high 32 bits the generation.
///
/// Slot 0 is never issued, so no id is 0 (which lets `Option<Entity>` stay 8 bytes and keeps
/// a raw 0 free to mean "no entity"). First-generation ids are therefore 1, 2, 3 …, and print
/// as such; an id whose slot was recycled carries a higher generation and prints as its full
/// 64-bit value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Entity(NonZeroU64);

impl Entity {
    /// An id no entity ever has (the highest generation of the highest slot): what a
    /// read that was checked never to meet NULL falls back on.
    pub(crate) const DANGLING: Entity = Entity(NonZeroU64::MAX);

    /// The id with these raw bits, or `None` for 0, which is never an id.
    pub const fn from_bits(bits: u64) -> Option<Entity> {
        match NonZeroU64::new(bits) {
            Some(bits) => Some(Entity(bits)),
            None => None,
        }
    }

    /// The id as one 64-bit number (its generation in the high half, its slot in the low
    /// half), as SQL shows it.
    pub fn to_bits(self) -> u64 {
        self.0.get()
    }

    /// The slot: which entry of the entity index the id names.
    pub fn slot(self) -> u32 {
        self.0.get() as u32
    }

    /// The generation: how many times the slot was reused before this id was given.
    pub fn generation(self) -> u32 {
        (self.0.get() >> 32) as u32
    }

    /// `None` for slot 0, which is never issued.
    pub(super) fn new(slot: u32, generation: u32) -> Option<Entity> {
        Entity::from_bits((u64::from(generation) << 32) | u64::from(slot))
    }
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_bits())
    }
}

impl fmt::Debug for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.generation() {
            0 => write!(f, "Entity({})", self.slot()),
            g => write!(f, "Entity({}v{g})", self.slot()),
        }
    }
}

/// A component type. Ids are never reused, so an id kept past `drop_component` is refused
/// rather than taken for a later component.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ComponentId(pub(super) u32);

impl ComponentId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }

    /// The id's number, for a snapshot.
    pub(crate) fn to_raw(self) -> u32 {
        self.0
    }

    /// The id numbered `raw` (a snapshot's; the catalog checks it when it is used).
    pub(crate) fn from_raw(raw: u32) -> ComponentId {
        ComponentId(raw)
    }
}

impl fmt::Display for ComponentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// An event type. A dropped type's id is never given again, as a component's is not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(pub(super) u32);

impl EventId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }

    /// The id's number, for a snapshot.
    pub(crate) fn to_raw(self) -> u32 {
        self.0
    }

    /// The id numbered `raw` (a snapshot's; the world checks it when it is used).
    pub(crate) fn from_raw(raw: u32) -> EventId {
        EventId(raw)
    }
}

/// One field of one component: the component and the field's position in its declaration.
/// Obtained from `World::field`, so a program names fields once and then indexes columns
/// without string lookups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldId {
    component: ComponentId,
    index: u16,
}

impl FieldId {
    pub(crate) fn new(component: ComponentId, index: u16) -> FieldId {
        FieldId { component, index }
    }

    /// The component the field belongs to.
    pub fn component(self) -> ComponentId {
        self.component
    }

    /// The field's position among its component's fields.
    pub fn index(self) -> usize {
        usize::from(self.index)
    }
}

/// An archetype table's position in the world. Stable until a component type is dropped,
/// which removes every table holding it and renumbers the rest (see `World::layout_epoch`).
/// A sparse component's table has an id of its own kind (`is_sparse`), outside that list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableId(pub(crate) u32);

/// The bit that makes a `TableId` name a sparse component's table.
const SPARSE_TABLE: u32 = 1 << 31;

impl TableId {
    /// The table of entities without components; it always exists.
    pub const VOID: TableId = TableId(0);

    /// The table's position in the world's list of archetype tables (for a sparse
    /// component's table, a number past any of them).
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// True for the table of a sparse component (`WITH (storage = sparse)`), which holds
    /// the entities that have it beside their archetype tables.
    pub fn is_sparse(self) -> bool {
        self.0 & SPARSE_TABLE != 0
    }

    /// The id of the `k`th sparse component's table.
    pub(crate) fn sparse(k: usize) -> Option<TableId> {
        u32::try_from(k)
            .ok()
            .filter(|&k| k < SPARSE_TABLE)
            .map(|k| TableId(k | SPARSE_TABLE))
    }

    /// `k` for the `k`th sparse component's table.
    pub(crate) fn sparse_index(self) -> Option<usize> {
        self.is_sparse().then_some((self.0 & !SPARSE_TABLE) as usize)
    }
}

/// A row of one table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableRow(pub(crate) u32);

impl TableRow {
    /// The row's position in its table.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A set of entities that are alive at once, by slot (a live slot holds one generation):
/// the first few slots in a list looked through, so a statement of one or a few ids pays
/// nothing for the slots' reach; past them, one bit per slot below `DENSE_SLOTS`, so a
/// million inserts cost a pass over 128 KiB rather than a hash table; the far slots
/// `SPAWN AT` may claim go to a hash set, so a distant id costs no more than itself. Not
/// for ids that may be dead.
#[derive(Debug, Default)]
pub struct LiveSet {
    few: Vec<u32>,
    /// The list was full once: the slots are in `bits` and `far`.
    spilled: bool,
    bits: Vec<u64>,
    far: hashbrown::HashSet<u32>,
}

/// The slots a `LiveSet` keeps as bits (2 MiB of them at most).
const DENSE_SLOTS: usize = 1 << 24;

/// How many slots a `LiveSet` keeps in its list before it turns to bits.
const FEW_SLOTS: usize = 32;

impl LiveSet {
    /// Adds `e`; false when it was there already.
    pub fn insert(&mut self, e: Entity) -> bool {
        if !self.spilled {
            if self.few.contains(&e.slot()) {
                return false;
            }
            if self.few.len() < FEW_SLOTS {
                self.few.push(e.slot());
                return true;
            }
            // Past the list: its slots go to the bits (and the far set), once.
            self.spilled = true;
            for slot in std::mem::take(&mut self.few) {
                self.insert_slot(slot);
            }
        }
        self.insert_slot(e.slot())
    }

    fn insert_slot(&mut self, slot: u32) -> bool {
        let slot = slot as usize;
        if slot >= DENSE_SLOTS {
            return self.far.insert(slot as u32);
        }
        let (word, bit) = (slot / 64, 1u64 << (slot % 64));
        if word >= self.bits.len() {
            self.bits.resize(word + 1, 0);
        }
        let fresh = self.bits[word] & bit == 0;
        self.bits[word] |= bit;
        fresh
    }

    /// How many words of bits it holds (for tests).
    #[cfg(test)]
    pub(crate) fn bits_len(&self) -> usize {
        self.bits.len()
    }
}
