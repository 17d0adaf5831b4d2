//! Transactions by undo log: while a transaction is open, every change the world makes
//! first records how to take itself back, and ROLLBACK applies those records newest first.
//! BEGIN and COMMIT cost nothing; ROLLBACK costs what the transaction changed.
//!
//! Invariants:
//! - Nothing is recorded outside a transaction: a world that never opens one pays only
//!   the test of an `Option` per write.
//! - Each record takes back exactly one change, given the world as that change left it;
//!   applied newest first, they restore the tables (row order included), the entity index
//!   (generations and free list included) and the catalog exactly.
//! - Derived structures follow the data: undoing a row change tells the observers, as the
//!   change itself did, so indexes are put back by the same calls that keep them current.
//!   Changes to the observers themselves (CREATE/DROP INDEX) save the observers whole, and
//!   dropping a component saves the whole world: both are schema changes, rare inside a
//!   transaction, and their cost is said in the docs.
//! - The world's write tick only moves forward: a rollback is a change too, and stamps the
//!   tables it touched with a new tick (what indexes and table caches look at).
//! - Change marks (`marks.rs`) are put back as they were, not stamped: the readers that
//!   ran inside the transaction (systems, prepared statements) have their ticks put back
//!   with it, and no other reader saw the undone values, so to every reader the rows are
//!   as if the transaction never ran. Rows whose old marks were not kept (written before
//!   tracking began, inside the transaction) are marked with the rollback's tick.
//!
//! This file holds the records; `World::undo` (in `world/rollback.rs`) applies them.

use super::column::Column;
use super::entity::{IdsUndo, Location};
use super::events::{DroppedRows, EventQueue};
use super::ids::{ComponentId, Entity, EventId, TableId, TableRow};
use super::observe::Observers;
use super::removals::DroppedRemovals;
use super::table::{MovedRows, RemovedRows};
use super::value::Value;

/// The records of an open transaction, oldest first. `W` is the world, which a record
/// may hold whole (the storage's `World`; named here only as a parameter, so that the
/// records need nothing of the world's code).
#[derive(Clone, Debug)]
pub(crate) struct UndoLog<W> {
    entries: Vec<Undo<W>>,
}

impl<W> Default for UndoLog<W> {
    fn default() -> Self {
        UndoLog { entries: Vec::new() }
    }
}

/// How to take back one change.
#[derive(Clone, Debug)]
pub(crate) enum Undo<W> {
    /// A change to the entity index.
    Ids(IdsUndo),
    /// `count` rows were appended to the end of `table`.
    Appended { table: TableId, count: usize },
    /// Rows moved from `from` to the end of `to` by attaching or detaching `component`
    /// (a batch), kept typed in `moved`.
    RowsMoved {
        from: TableId,
        to: TableId,
        component: ComponentId,
        moved: MovedRows,
    },
    /// Rows of `table` were removed (a despawn), kept typed in `removed`.
    RowsRemoved { table: TableId, removed: RemovedRows },
    /// Rows of a sparse component's `table` were removed (a detach or a despawn), kept
    /// typed in `removed`.
    SparseRowsRemoved { table: TableId, removed: RemovedRows },
    /// `entity`, holding `values` (its full row), was swap-removed from `row` of a sparse
    /// component's `table`.
    Removed {
        table: TableId,
        row: TableRow,
        entity: Entity,
        values: Vec<Value>,
        /// Its change marks, as `Table::row_marks` lists them.
        marks: Vec<u64>,
    },
    /// `entity` moved from `from` to the end of `to` by attaching or detaching
    /// `component`; `dropped` are the values of the detached component's fields.
    Moved {
        entity: Entity,
        from: Location,
        to: TableId,
        component: ComponentId,
        dropped: Vec<Value>,
        /// The detached component's change marks, when tracked.
        dropped_marks: Vec<u64>,
    },
    /// The values of `column` of `table` at `rows` were `old`, and their change marks
    /// `marks` (when the field is tracked).
    Cells {
        table: TableId,
        column: usize,
        rows: CellRows,
        old: Column,
        marks: Option<Vec<u64>>,
    },
    /// A table was created (the last one).
    TableCreated,
    /// A component was declared (the last one).
    ComponentCreated,
    /// An event type was declared (the last one).
    EventCreated,
    /// An event type was dropped; this was its queue.
    EventDropped(Box<EventQueue>),
    /// `count` rows were emitted to the end of `event`'s queue.
    Emitted { event: EventId, count: usize },
    /// These rows were dropped from the front of `event`'s queue.
    EventsDropped { event: EventId, rows: DroppedRows },
    /// An entry was logged at the end of `component`'s removal log.
    Logged { component: ComponentId },
    /// These entries were dropped from the front of `component`'s removal log.
    RemovalsDropped {
        component: ComponentId,
        front: DroppedRemovals,
    },
    /// The observers were these.
    Observers(Observers),
    /// The whole world was this.
    World(Box<W>),
}

/// Which rows a `Cells` record covers.
#[derive(Clone, Debug)]
pub(crate) enum CellRows {
    /// From this row on, as many as the record holds.
    From(usize),
    /// These rows, one per value.
    Picked(Vec<u32>),
}

impl<W> Undo<W> {
    /// Whether it holds text values enough to be worth freeing off the thread
    /// (`garbage.rs`).
    pub fn holds_many_texts(&self) -> bool {
        match self {
            Undo::RowsRemoved { removed, .. } | Undo::SparseRowsRemoved { removed, .. } => {
                removed.holds_many_texts()
            }
            Undo::RowsMoved { moved, .. } => moved.holds_many_texts(),
            Undo::Cells { old, .. } => old.holds_many_texts(),
            _ => false,
        }
    }
}

impl<W> UndoLog<W> {
    pub fn push(&mut self, undo: Undo<W>) {
        self.entries.push(undo);
    }

    /// A log in `entries`' room (what it holds is dropped first).
    pub fn from_records(mut entries: Vec<Undo<W>>) -> Self {
        entries.clear();
        UndoLog { entries }
    }

    /// The records, newest last.
    pub fn into_records(self) -> Vec<Undo<W>> {
        self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Takes the records from `mark` on out of the log (newest last).
    pub fn split_off(&mut self, mark: usize) -> Vec<Undo<W>> {
        self.entries.split_off(mark.min(self.entries.len()))
    }
}
