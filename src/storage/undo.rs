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
//!   tables it touched with a new tick.

use super::column::Column;
use super::entity::{IdsUndo, Location};
use super::ids::{ComponentId, Entity, TableId, TableRow};
use super::observe::Observers;
use super::value::Value;
use super::world::World;

/// The records of an open transaction, oldest first.
#[derive(Clone, Debug, Default)]
pub(crate) struct UndoLog {
    entries: Vec<Undo>,
}

/// How to take back one change.
#[derive(Clone, Debug)]
pub(crate) enum Undo {
    /// A change to the entity index.
    Ids(IdsUndo),
    /// `count` rows were appended to the end of `table`.
    Appended { table: TableId, count: usize },
    /// `entity`, holding `values` (its full row), was swap-removed from `row` of `table`.
    Removed {
        table: TableId,
        row: TableRow,
        entity: Entity,
        values: Vec<Value>,
    },
    /// `entity` moved from `from` to the end of `to` by attaching or detaching
    /// `component`; `dropped` are the values of the detached component's fields.
    Moved {
        entity: Entity,
        from: Location,
        to: TableId,
        component: ComponentId,
        dropped: Vec<Value>,
    },
    /// The values of `column` of `table` at `rows` were `old`.
    Cells {
        table: TableId,
        column: usize,
        rows: CellRows,
        old: Column,
    },
    /// A table was created (the last one).
    TableCreated,
    /// A component was declared (the last one).
    ComponentCreated,
    /// The observers were these.
    Observers(Observers),
    /// The whole world was this.
    World(Box<World>),
}

/// Which rows a `Cells` record covers.
#[derive(Clone, Debug)]
pub(crate) enum CellRows {
    /// From this row on, as many as the record holds.
    From(usize),
    /// These rows, one per value.
    Picked(Vec<u32>),
}

impl UndoLog {
    pub fn push(&mut self, undo: Undo) {
        self.entries.push(undo);
    }

    /// The records, newest last.
    pub fn into_records(self) -> Vec<Undo> {
        self.entries
    }
}

impl World {
    /// Takes back `records` (newest last), newest first.
    pub(crate) fn undo(&mut self, records: Vec<Undo>) {
        let tick = self.next_tick();
        for record in records.into_iter().rev() {
            self.undo_one(record, tick);
        }
        // Tables created and dropped again may have their ids reused: cached lists of
        // table ids must be rebuilt, not extended.
        self.layout_epoch += 1;
    }

    fn undo_one(&mut self, record: Undo, tick: u64) {
        match record {
            Undo::Ids(ids) => self.entities.undo(ids),
            Undo::Appended { table, count } => {
                let Some(t) = self.archetypes.get_mut(table) else {
                    return;
                };
                let keep = t.len().saturating_sub(count);
                for row in (keep..t.len()).rev() {
                    self.observers.despawning(t, row);
                }
                t.truncate(keep, tick);
            }
            Undo::Removed {
                table,
                row,
                entity,
                values,
            } => {
                let Some(t) = self.archetypes.get_mut(table) else {
                    return;
                };
                if let Some(moved) = t.restore_row(row, entity, values, tick) {
                    let last = TableRow((t.len() - 1) as u32);
                    self.entities.set_location(moved, Location { table, row: last });
                }
                self.observers.spawned(t, row.index()..row.index() + 1);
            }
            Undo::Moved {
                entity,
                from,
                to,
                component,
                dropped,
            } => {
                let attached = self.archetypes.get(to).is_some_and(|t| t.contains(component));
                if attached {
                    self.observers.detached(entity, component);
                }
                let Some([dst, src]) = self.archetypes.pair_mut(to, from.table) else {
                    return;
                };
                let Some(last) = dst.len().checked_sub(1) else {
                    return;
                };
                let (_, swapped) =
                    super::table::Table::move_row(dst, TableRow(last as u32), src, dropped, tick);
                debug_assert!(swapped.is_none(), "the moved row was the last of its table");
                if let Some(back) = src.move_last_to(from.row) {
                    let end = TableRow((src.len() - 1) as u32);
                    self.entities.set_location(
                        back,
                        Location {
                            table: from.table,
                            row: end,
                        },
                    );
                }
                self.entities.set_location(entity, from);
                if !attached {
                    self.observers.attached(src, from.row.index(), component);
                }
            }
            Undo::Cells {
                table,
                column,
                rows,
                old,
            } => {
                let Some(t) = self.archetypes.get_mut(table) else {
                    return;
                };
                let len = old.len();
                let Some(c) = t.column_mut(column, tick) else {
                    return;
                };
                let span = match rows {
                    CellRows::From(first) => {
                        c.write_range(first, old);
                        first..first + len
                    }
                    CellRows::Picked(rows) => {
                        let span = match (rows.iter().min(), rows.iter().max()) {
                            (Some(&lo), Some(&hi)) => lo as usize..hi as usize + 1,
                            _ => 0..0,
                        };
                        c.write_rows(&rows, old);
                        span
                    }
                };
                if let Some(field) = t.field_of(column) {
                    if self.observers.watches(field) {
                        self.observers.written(t, span, &[field]);
                    }
                }
            }
            Undo::TableCreated => self.archetypes.remove_last(),
            Undo::ComponentCreated => self.catalog.remove_last(),
            Undo::Observers(observers) => self.observers = observers,
            Undo::World(world) => {
                let (log, tick, epoch) = (self.undo_log.take(), self.tick, self.layout_epoch);
                *self = *world;
                self.undo_log = log;
                self.tick = self.tick.max(tick);
                self.layout_epoch = self.layout_epoch.max(epoch);
            }
        }
    }
}
