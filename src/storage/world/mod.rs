//! `World`: the storage's public face. Declares components, spawns and despawns entities,
//! attaches and detaches components (moving rows between archetype tables), reads and
//! writes fields. Every operation checks everything it can fail on before it changes
//! anything, so a failed operation leaves the world exactly as it was, and only then tells
//! its observers what changed (`observe.rs`). Inside a transaction every change first
//! records how to take itself back (`undo.rs`), and ROLLBACK applies those records here.
//! The columnar door over matching tables is in `query.rs`.
//!
//! One `World`, with an `impl` block per concern in the files of this folder: `catalog.rs`
//! (component types), `events.rs` (event types and their rows), `spawn.rs` (spawning and
//! despawning, and where each live entity is), `attach.rs` (attaching and detaching
//! components, to one entity or many), `sparse_rows.rs` (the rows of sparse components'
//! tables), `fields.rs` (which components an entity has, its fields read and written),
//! `changes.rs` (change tracking, removal logs, observers), `tables.rs` (the tables and
//! the world's counters, read; digests and the integrity check), `transaction.rs` (BEGIN,
//! COMMIT, savepoints, and recording how to take a change back) and `rollback.rs`
//! (taking changes back). This file holds the struct and what every concern shares: the
//! write tick, the table an entity is in, the entity index as one table's rows see it.

mod attach;
mod catalog;
mod changes;
mod events;
mod fields;
mod rollback;
mod sparse_rows;
mod spawn;
pub(crate) use spawn::SpawnRow;
mod tables;
mod transaction;

use std::sync::atomic::{AtomicU64, Ordering};

use super::archetypes::Archetypes;
use super::column::{SpareColumns, Stamp};
use super::component::Components;
use super::entity::{EntityIndex, Location};
use super::error::StorageError;
use super::events::Events;
use super::ids::{ComponentId, Entity, TableId, TableRow};
use super::observe::Observers;
use super::removals::RemovalLog;
use super::table::{RowIndex, Table};
use super::undo::{Undo, UndoLog};

type Result<T> = std::result::Result<T, StorageError>;

/// A field lent to write in one table (`loan.rs`): the field, its column's index and,
/// when its changes are tracked, its values before the loan.
pub(crate) type Written = (super::ids::FieldId, usize, Option<super::column::Column>);

/// What a loan of many tables owes once it ends (`loan.rs`): the tick it wrote at and,
/// per table lent to write, its id, row count and the fields written.
#[derive(Clone, Debug)]
pub(crate) struct Settle {
    pub(crate) tick: u64,
    pub(crate) tables: Vec<(TableId, usize, Vec<Written>)>,
}

/// An in-memory archetype ECS: entities, runtime-declared components and the archetype
/// tables that hold them.
#[derive(Clone, Debug)]
pub struct World {
    pub(crate) catalog: Components,
    pub(super) entities: EntityIndex,
    pub(crate) archetypes: Archetypes,
    /// Advanced by every write; tables stamp what they changed with it.
    pub(super) tick: Stamp,
    /// Advanced whenever table ids are renumbered (a component type dropped, a
    /// transaction rolled back) or an event type is dropped, so that a cached list of
    /// table ids knows it must be rebuilt rather than extended, and a kept plan that its
    /// ids may be stale.
    pub(super) layout_epoch: u64,
    /// What a plan bound against this world depends on, as one number: a new one (never
    /// handed out before, in this process) whenever a component or event type is
    /// declared or dropped, an observer is added or changed (an index defined), or a
    /// rollback puts anything back; a copy of the world gets its own. While it stays the
    /// same, so do this world's types, indexes and table ids (tables are only added).
    schema: SchemaStamp,
    /// Structures beside the tables (indexes…), told of every change below.
    pub(crate) observers: Observers,
    /// Event types and the rows each still keeps.
    pub(super) events: Events,
    /// The removal logs of the components whose removals are tracked.
    pub(super) removals: Vec<(ComponentId, RemovalLog)>,
    /// The schedule tick removals are logged in (the tick being run, or the last one).
    log_tick: u64,
    /// How to take back every change since BEGIN; `None` outside a transaction.
    pub(super) undo_log: Option<UndoLog<World>>,
    /// Savepoints open (a tick running): a transaction may not begin or end meanwhile.
    pub(super) savepoints: u32,
    /// What the last loan of many tables owes (`lend_tables`), until it is paid
    /// (`settle_pending`): when the borrower is done, at the next loan, at a commit or a
    /// rollback, and when a closure given the world returns.
    pub(crate) pending: Option<Settle>,
    /// A closed transaction's emptied record list, kept (up to `SPARE_RECORDS`) for the
    /// next one, so that a tick's savepoint does not allocate its log anew each tick.
    spare_log: Vec<Undo<World>>,
    /// The columns closed transactions' records held, emptied, for writers that build a
    /// column anew (`take_spare_columns`).
    spare_columns: SpareColumns,
}

/// A world's schema stamp (`World::schema_stamp`): a number not handed out before, in this
/// process. A copy of a world gets a new one, so that a copy put back in its place (by
/// `with_world_mut`), whose table ids may differ from the live world's however alike
/// their schemas, is never taken for it.
#[derive(Debug)]
struct SchemaStamp(u64);

impl SchemaStamp {
    fn new() -> SchemaStamp {
        static STAMPS: AtomicU64 = AtomicU64::new(1);
        SchemaStamp(STAMPS.fetch_add(1, Ordering::Relaxed))
    }
}

impl Clone for SchemaStamp {
    fn clone(&self) -> SchemaStamp {
        SchemaStamp::new()
    }
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

impl World {
    /// An empty world: no components, no entities.
    pub fn new() -> World {
        let catalog = Components::default();
        World {
            archetypes: Archetypes::new(&catalog),
            catalog,
            entities: EntityIndex::new(),
            tick: Stamp::default(),
            layout_epoch: 0,
            schema: SchemaStamp::new(),
            observers: Observers::default(),
            events: Events::default(),
            removals: Vec::new(),
            log_tick: 0,
            undo_log: None,
            savepoints: 0,
            pending: None,
            spare_log: Vec::new(),
            spare_columns: SpareColumns::default(),
        }
    }

    // ---- internals ----------------------------------------------------------------------

    pub(crate) fn next_tick(&mut self) -> u64 {
        let next = self.tick.get() + 1;
        self.tick.set(next);
        next
    }

    fn table_of(&self, at: Location) -> &Table {
        match self.archetypes.get(at.table) {
            Some(table) => table,
            None => unreachable!("the entity index points only at existing tables"),
        }
    }
}

/// The entity index as one table's rows see it, for `Table::remove_rows`/`restore_rows`.
struct Rows<'a> {
    index: &'a mut EntityIndex,
    table: TableId,
}

impl RowIndex for Rows<'_> {
    fn row_of(&self, entity: Entity) -> Option<TableRow> {
        let at = self.index.locate(entity).ok()?;
        (at.table == self.table).then_some(at.row)
    }

    fn moved(&mut self, entity: Entity, row: TableRow) {
        self.index.set_location(
            entity,
            Location {
                table: self.table,
                row,
            },
        );
    }
}
