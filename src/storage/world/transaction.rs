//! Transactions and savepoints: the undo log opened by BEGIN (or by a savepoint, which
//! makes a tick atomic), kept by COMMIT and RELEASE, taken back by ROLLBACK (applied in
//! `rollback.rs`). Every concern records here (`record`) how to take its change back, so
//! that a rollback leaves the world exactly as the transaction found it; while a
//! savepoint is open, BEGIN, COMMIT and ROLLBACK are refused. Also what a despawn or a
//! move would add to the log, in bytes, for a writer to weigh before it starts.

use crate::storage::cell::ColumnCell;
use crate::storage::column::{Column, SpareColumns};
use crate::storage::error::StorageError;
use crate::storage::ids::{ComponentId, Entity};
use crate::storage::table::Table;
use crate::storage::undo::{Undo, UndoLog};

use super::{Result, World};

/// A point in a world's changes to come back to (see `World::savepoint`).
#[derive(Debug)]
#[must_use = "a savepoint is released or rolled back to"]
pub struct Savepoint {
    /// The savepoint opened the transaction itself.
    opened: bool,
    /// How many undo records there were.
    mark: usize,
}

/// The most records a closed transaction's emptied log keeps room for.
const SPARE_RECORDS: usize = 256;

impl World {
    /// Opens a transaction: from now on every change records how to take itself back,
    /// until `commit` keeps them all or `rollback` undoes them all. Costs nothing now; fails
    /// if a transaction is already open.
    pub fn begin(&mut self) -> Result<()> {
        self.no_savepoint()?;
        if self.undo_log.is_some() {
            return Err(StorageError::TransactionOpen);
        }
        self.open_log();
        Ok(())
    }

    /// Keeps every change since `begin` and closes the transaction. Costs nothing.
    pub fn commit(&mut self) -> Result<()> {
        self.no_savepoint()?;
        self.settle_pending();
        let log = self.undo_log.take().ok_or(StorageError::NoTransaction)?;
        self.keep_spare(log.into_records());
        Ok(())
    }

    /// Opens the undo log, in the spare record list if there is one.
    fn open_log(&mut self) {
        self.undo_log = Some(UndoLog::from_records(std::mem::take(&mut self.spare_log)));
    }

    /// Drops a closed log's records (the old values they held go with them) and keeps
    /// the emptied list for the next transaction, unless it grew large.
    fn keep_spare(&mut self, mut records: Vec<Undo<World>>) {
        if records.capacity() == 0 || records.capacity() > SPARE_RECORDS {
            if records.iter().any(Undo::holds_many_texts) {
                crate::garbage::drop_later(records);
            }
            return;
        }
        // A column's old values leave their room to the next column built anew; what
        // the last transaction left untaken goes. Many texts are freed off this thread
        // (`garbage.rs`), as a truncate does. One pass: a tick closes a log of a record
        // or more per system.
        self.spare_columns.clear();
        let mut texts: Vec<Undo<World>> = Vec::new();
        for record in records.drain(..) {
            if record.holds_many_texts() {
                texts.push(record);
            } else if let Undo::Cells { old, .. } = record {
                self.spare_columns.keep(old);
            }
        }
        if !texts.is_empty() {
            crate::garbage::drop_later(texts);
        }
        // The spare was taken when this log opened: nothing is dropped here.
        self.spare_log = records;
    }

    /// The emptied columns kept for reuse (`SpareColumns`), lent to a writer that builds
    /// columns anew while it reads the tables; given back with `keep_spare_columns`.
    pub(crate) fn take_spare_columns(&mut self) -> SpareColumns {
        std::mem::take(&mut self.spare_columns)
    }

    /// Gives back what `take_spare_columns` lent.
    pub(crate) fn keep_spare_columns(&mut self, spares: SpareColumns) {
        self.spare_columns = spares;
    }

    /// Refuses to begin or end a transaction inside a savepoint: a tick undoes itself
    /// through the log, which a Rust system must leave as it found it.
    fn no_savepoint(&self) -> Result<()> {
        match self.savepoints {
            0 => Ok(()),
            _ => Err(StorageError::InSavepoint),
        }
    }

    /// Undoes every change since `begin`, newest first, and closes the transaction: the
    /// tables, ids and catalog are as they were at `begin`, the indexes hold what they held.
    /// Costs what the transaction changed.
    pub fn rollback(&mut self) -> Result<()> {
        self.no_savepoint()?;
        self.settle_pending();
        let log = self.undo_log.take().ok_or(StorageError::NoTransaction)?;
        self.undo(log.into_records());
        Ok(())
    }

    /// True between `begin` and `commit`/`rollback`.
    pub fn in_transaction(&self) -> bool {
        self.undo_log.is_some()
    }

    /// Marks a point that `rollback_to` can undo back to, inside an open transaction or
    /// not (then a transaction is opened, and `release` or `rollback_to` closes it). A
    /// tick is made atomic this way, whether or not BEGIN came first.
    pub(crate) fn savepoint(&mut self) -> Savepoint {
        self.savepoints += 1;
        match &self.undo_log {
            Some(log) => Savepoint {
                opened: false,
                mark: log.len(),
            },
            None => {
                self.open_log();
                Savepoint {
                    opened: true,
                    mark: 0,
                }
            }
        }
    }

    /// Keeps every change since `savepoint` (in the enclosing transaction, if any).
    pub(crate) fn release(&mut self, savepoint: Savepoint) {
        self.savepoints = self.savepoints.saturating_sub(1);
        if savepoint.opened
            && let Some(log) = self.undo_log.take()
        {
            self.keep_spare(log.into_records());
        }
    }

    /// Undoes every change since `savepoint`, newest first; the enclosing transaction, if
    /// any, stays open with what came before.
    pub(crate) fn rollback_to(&mut self, savepoint: Savepoint) {
        self.savepoints = self.savepoints.saturating_sub(1);
        let Some(log) = &mut self.undo_log else {
            return;
        };
        let records = log.split_off(savepoint.mark);
        if savepoint.opened {
            self.undo_log = None;
        }
        self.undo(records);
    }

    /// Records `undo` when a transaction is open.
    pub(super) fn record(&mut self, undo: impl FnOnce(&World) -> Undo<World>) {
        if self.undo_log.is_some() {
            let undo = undo(self);
            if let Some(log) = &mut self.undo_log {
                log.push(undo);
            }
        }
    }

    /// Records the whole world (before a schema change too large to take back piece by
    /// piece) when a transaction is open.
    pub(super) fn record_image(&mut self) {
        if let Some(mut log) = self.undo_log.take() {
            log.push(Undo::World(Box::new(self.clone())));
            self.undo_log = Some(log);
        }
    }

    /// Records a `TableCreated` for each table beyond the first `before`.
    pub(super) fn record_new_tables(&mut self, before: usize) {
        if let Some(log) = &mut self.undo_log {
            for _ in before..self.archetypes.len() {
                log.push(Undo::TableCreated);
            }
        }
    }

    /// About how many bytes an undo log (a transaction's, a savepoint's) grows by when
    /// `entities` (live, each once) are despawned: each entity twice (its row's and its
    /// id's records), its row (typed, a text's bytes too), its marks, and a sparse
    /// component's row (typed, with its place and entity).
    pub(crate) fn despawn_undo_bytes(&self, entities: &[Entity]) -> usize {
        const PER_ENTITY: usize = 2 * std::mem::size_of::<Entity>() + std::mem::size_of::<u32>();
        let sparse_row =
            |t: &Table| std::mem::size_of::<u32>() + std::mem::size_of::<Entity>() + row_bytes(t);
        let sparse: Vec<&Table> = self.archetypes.sparse_sets().map(|s| s.table()).collect();
        let mut bytes = 0usize;
        for &entity in entities {
            let Ok(at) = self.entities.locate(entity) else {
                continue;
            };
            let Some(table) = self.archetypes.get(at.table) else {
                continue;
            };
            bytes = bytes.saturating_add(PER_ENTITY + row_bytes(table));
            for column in table.columns() {
                if let Column::Text(v) = &**column {
                    bytes = bytes.saturating_add(v.get(at.row.index()).map_or(0, |t| t.len()));
                }
            }
            for set in &sparse {
                if self
                    .archetypes
                    .sparse(set.id())
                    .is_some_and(|s| s.row_of(entity).is_some())
                {
                    bytes = bytes.saturating_add(sparse_row(set));
                }
            }
        }
        bytes
    }

    /// About how many bytes an undo log (a transaction's, a savepoint's) grows by when
    /// `component` is attached to (`attach`) or detached from `entities` (live, each once,
    /// each lacking or holding it): an archetype row's place in its table, and for a
    /// detach the values it loses (typed; a text's bytes too, as a despawn's, though they
    /// move with it) and their marks; a sparse component's attach is one record. (A whole
    /// table, whose columns move whole, keeps no more than its places: see
    /// `is_whole_table`.)
    pub(crate) fn move_undo_bytes(&self, component: ComponentId, entities: &[Entity], attach: bool) -> usize {
        const HOLE: usize = std::mem::size_of::<u32>();
        let Ok(def) = self.catalog.get(component) else {
            return 0;
        };
        let sparse = def.sparse_table().and_then(|t| self.archetypes.sparse(t));
        let marks = match def.is_tracked() {
            true => (def.fields().len() + 1) * std::mem::size_of::<u64>(),
            false => 0,
        };
        let text_bytes = |columns: &[ColumnCell], row: usize| -> usize {
            columns
                .iter()
                .map(|c| match &**c {
                    Column::Text(v) => v.get(row).map_or(0, |t| t.len()),
                    _ => 0,
                })
                .sum()
        };
        match (attach, sparse) {
            (true, Some(_)) => 0,
            (true, None) => entities.len().saturating_mul(HOLE),
            (false, Some(set)) => {
                // A row's place, its entity and its values, typed.
                let record = HOLE + std::mem::size_of::<Entity>() + row_bytes(set.table());
                entities.iter().fold(0usize, |bytes, &e| {
                    let texts = set
                        .row_of(e)
                        .map_or(0, |row| text_bytes(set.table().columns(), row));
                    bytes.saturating_add(record + texts)
                })
            }
            (false, None) => {
                // The values' sizes are the fields' types'; only texts are looked up.
                let values: usize = def
                    .fields()
                    .iter()
                    .map(|f| Column::new(f.ty()).value_size())
                    .sum();
                let fixed = entities.len().saturating_mul(HOLE + values + marks);
                if !def
                    .fields()
                    .iter()
                    .any(|f| f.ty() == crate::storage::value::FieldType::Text)
                {
                    return fixed;
                }
                entities.iter().fold(fixed, |bytes, &e| {
                    let Ok(at) = self.entities.locate(e) else {
                        return bytes;
                    };
                    let texts = self
                        .archetypes
                        .get(at.table)
                        .and_then(|t| t.component_columns(component))
                        .map_or(0, |columns| text_bytes(columns, at.row.index()));
                    bytes.saturating_add(texts)
                })
            }
        }
    }
}

/// The bytes a row of `table` takes in typed columns and mark lists (a text's own bytes
/// not counted).
fn row_bytes(table: &Table) -> usize {
    let marks = table.mark_lists() * std::mem::size_of::<u64>();
    table.columns().iter().map(|c| c.value_size()).sum::<usize>() + marks
}
