//! Sparse sets: a component declared `WITH (storage = sparse)` is kept outside the
//! archetype tables, in a table of its own that holds only the entities that have it (its
//! fields as dense columns, with change marks, as in any table), plus an index from entity
//! slot to row. Attaching or detaching it appends or swap-removes a row here and moves no
//! archetype row; an entity's archetype table does not list its sparse components.
//!
//! Invariants:
//! - The index maps `e.slot()` to `row + 1` for every entity `e` at `row` of the table,
//!   and nothing else to anything but 0. Slots below `slots.len()` are kept in the vector,
//!   the others in `far`. The vector grows (doubling, so that entries move from `far` to
//!   it a logarithmic number of times) only to reach a slot below a few thousand or eight
//!   times the rows held: its size follows how many entities have the component, not the
//!   largest id, and a component held by few entities with large slots is a hash map. A
//!   lookup also compares the entity stored at the row, so a stale id (an older
//!   generation of the slot) is never taken for the live one.
//! - Rows change only through these methods, which keep `slots` in step; values are
//!   written in place like any table's (through `table_mut`).

use hashbrown::HashMap;

use super::column::Column;
use super::ids::{Entity, TableRow};
use super::table::{RemovedRows, Restored, RowIndex, Table};
use super::value::Value;

/// One sparse component's rows and its index by entity slot.
#[derive(Clone, Debug)]
pub(crate) struct SparseSet {
    table: Table,
    slots: Vec<u32>,
    far: HashMap<u32, u32>,
}

/// The vector of slots may always grow to this many entries, and to `SLOTS_PER_ROW` per row
/// held beyond that.
const NEAR_SLOTS: usize = 4096;
const SLOTS_PER_ROW: usize = 8;

impl SparseSet {
    pub fn new(table: Table) -> SparseSet {
        SparseSet {
            table,
            slots: Vec::new(),
            far: HashMap::new(),
        }
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The table, for writing values in place (never for adding or removing rows).
    pub fn table_mut(&mut self) -> &mut Table {
        &mut self.table
    }

    /// The row holding `entity`, if it has the component.
    pub fn row_of(&self, entity: Entity) -> Option<usize> {
        let slot = entity.slot();
        let pointer = match self.slots.get(slot as usize) {
            Some(&p) => p,
            None => *self.far.get(&slot)?,
        };
        let row = pointer.checked_sub(1)? as usize;
        (self.table.entities().get(row) == Some(&entity)).then_some(row)
    }

    fn point(&mut self, entity: Entity, row: usize) {
        self.reach(entity.slot() as usize);
        self.set(entity.slot(), row as u32 + 1);
    }

    /// The largest slot the vector may reach now (one past it).
    fn bound(&self) -> usize {
        NEAR_SLOTS + SLOTS_PER_ROW * self.table.len()
    }

    /// Grows the vector to reach slot `s` when it may (below `bound`).
    fn reach(&mut self, s: usize) {
        let bound = self.bound();
        reach(&mut self.slots, &mut self.far, s, bound);
    }

    /// Points `slot` at `pointer` (a row + 1), in the vector when it reaches the slot.
    #[inline]
    fn set(&mut self, slot: u32, pointer: u32) {
        set(&mut self.slots, &mut self.far, slot, pointer);
    }

    fn forget(&mut self, entity: Entity) {
        forget(&mut self.slots, &mut self.far, entity.slot());
    }

    /// Appends `entity` with its checked row of values.
    pub fn push(&mut self, entity: Entity, values: impl IntoIterator<Item = Value>, tick: u64) -> TableRow {
        let row = self.table.push_row(entity, values, tick);
        self.point(entity, row.index());
        row
    }

    /// Appends many entities column-wise (checked columns in field order).
    pub fn append(&mut self, entities: &[Entity], columns: Vec<Column>, tick: u64) {
        let first = self.table.len();
        self.table.append_rows(entities, columns, tick);
        // The vector grows once, to the largest slot it may reach (as `point` for each
        // would), and then each entity costs one store.
        let bound = self.bound();
        let top = entities
            .iter()
            .map(|e| e.slot() as usize)
            .filter(|&s| s < bound)
            .max();
        if let Some(top) = top {
            self.reach(top);
        }
        for (i, &e) in entities.iter().enumerate() {
            self.set(e.slot(), (first + i) as u32 + 1);
        }
    }

    /// Removes `row`, moving the last row into its place.
    pub fn swap_remove(&mut self, row: TableRow, tick: u64) {
        if let Some(&gone) = self.table.entities().get(row.index()) {
            self.forget(gone);
        }
        if let Some(moved) = self.table.swap_remove(row, tick) {
            self.point(moved, row.index());
        }
    }

    /// Keeps the first `len` rows (undoing rows appended at the end).
    pub fn truncate(&mut self, len: usize, tick: u64) {
        let gone = self.table.entities().get(len..).unwrap_or(&[]);
        if len == 0 && gone.len() * 8 >= self.slots.len() {
            // Every row goes, and they are many for the vector's size: zero it whole.
            self.slots.fill(0);
            self.far.clear();
        } else {
            let gone = gone.to_vec();
            gone.into_iter().for_each(|e| self.forget(e));
        }
        self.table.truncate(len, tick);
    }

    /// Puts a removed row back at `row` (the undo of `swap_remove`): the row there moves to
    /// the end.
    pub fn restore_row(&mut self, row: TableRow, entity: Entity, values: Vec<Value>, tick: u64) {
        if let Some(moved) = self.table.restore_row(row, entity, values, tick) {
            self.point(moved, self.table.len() - 1);
        }
        self.point(entity, row.index());
    }

    /// Removes the rows of `entities` (distinct, each holding the component) as
    /// `swap_remove` would one after another, column by column (all of them at once when
    /// they are every row). With `keep` (inside a transaction) returns them typed, for
    /// `restore_rows`.
    pub fn remove_rows(&mut self, entities: &[Entity], keep: bool, tick: u64) -> Option<RemovedRows> {
        let bound = self.bound();
        let SparseSet { table, slots, far } = self;
        let removed = table.remove_rows(entities, &mut SlotRows { slots, far, bound }, keep, tick);
        if table.is_empty() && entities.len() * SLOTS_PER_ROW >= slots.len() {
            // Every row went, and they are many for the vector's size: zero it whole.
            slots.fill(0);
            far.clear();
        } else {
            entities.iter().for_each(|e| forget(slots, far, e.slot()));
        }
        removed
    }

    /// Puts back rows `remove_rows` took (the undo of it), the table and its index as
    /// they were before.
    pub fn restore_rows(&mut self, removed: RemovedRows, tick: u64) -> Restored {
        let bound = NEAR_SLOTS + SLOTS_PER_ROW * (self.table.len() + removed.len());
        let SparseSet { table, slots, far } = self;
        table.restore_rows(removed, &mut SlotRows { slots, far, bound }, tick)
    }

    /// Whether `slots` and the table agree (for `World::check_integrity`).
    pub fn check(&self) -> Result<(), String> {
        for (row, &e) in self.table.entities().iter().enumerate() {
            if self.row_of(e) != Some(row) {
                return Err(format!(
                    "sparse set: entity {e} at row {row} is not indexed there"
                ));
            }
        }
        let indexed = self.slots.iter().filter(|&&s| s != 0).count() + self.far.len();
        if indexed != self.table.len() {
            return Err(format!(
                "sparse set: {indexed} slots indexed for {} rows",
                self.table.len()
            ));
        }
        Ok(())
    }
}

/// The index of a set being rewritten by `Table::remove_rows` or `restore_rows`: where
/// each of its entities is (taken as said: they are the set's), and pointing an entity at
/// its new row (the vector growing as far as `bound`).
struct SlotRows<'s> {
    slots: &'s mut Vec<u32>,
    far: &'s mut HashMap<u32, u32>,
    bound: usize,
}

impl RowIndex for SlotRows<'_> {
    fn row_of(&self, entity: Entity) -> Option<TableRow> {
        let slot = entity.slot();
        let pointer = match self.slots.get(slot as usize) {
            Some(&p) => p,
            None => *self.far.get(&slot)?,
        };
        Some(TableRow(pointer.checked_sub(1)?))
    }

    fn moved(&mut self, entity: Entity, row: TableRow) {
        reach(self.slots, self.far, entity.slot() as usize, self.bound);
        set(self.slots, self.far, entity.slot(), row.0 + 1);
    }
}

/// Grows `slots` to reach slot `s` when it may (below `bound`), moving the far slots it
/// reaches into it.
fn reach(slots: &mut Vec<u32>, far: &mut HashMap<u32, u32>, s: usize, bound: usize) {
    if s >= slots.len() && s < bound {
        let len = (s + 1).max(2 * slots.len()).min(bound);
        slots.resize(len, 0);
        if !far.is_empty() {
            let near: Vec<(u32, u32)> = far.extract_if(|&k, _| (k as usize) < len).collect();
            for (k, p) in near {
                slots[k as usize] = p;
            }
        }
    }
}

/// Points `slot` at `pointer` (a row + 1), in the vector when it reaches the slot.
#[inline]
fn set(slots: &mut [u32], far: &mut HashMap<u32, u32>, slot: u32, pointer: u32) {
    match slots.get_mut(slot as usize) {
        Some(p) => *p = pointer,
        None => {
            far.insert(slot, pointer);
        }
    }
}

fn forget(slots: &mut [u32], far: &mut HashMap<u32, u32>, slot: u32) {
    match slots.get_mut(slot as usize) {
        Some(p) => *p = 0,
        None => {
            far.remove(&slot);
        }
    }
}
