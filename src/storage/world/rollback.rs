//! Rollback: the records a transaction kept (`undo.rs`, recorded through
//! `transaction.rs`) applied newest first, each putting back exactly what its change took,
//! the entity index and the observers told as rows come and go. Afterwards the layout
//! epoch and the schema stamp are new, since table ids may have been reused.

use crate::storage::Written;
use crate::storage::column::Values;
use crate::storage::entity::Location;
use crate::storage::ids::{ComponentId, TableRow};
use crate::storage::table::{Restored, Table};
use crate::storage::undo::{CellRows, Undo};

use super::{Rows, SchemaStamp, World};

impl World {
    /// Takes back `records` (newest last), newest first.
    pub(crate) fn undo(&mut self, records: Vec<Undo<World>>) {
        let tick = self.next_tick();
        for record in records.into_iter().rev() {
            self.undo_one(record, tick);
        }
        // Tables created and dropped again may have their ids reused: cached lists of
        // table ids must be rebuilt, not extended.
        self.layout_epoch += 1;
        self.schema = SchemaStamp::new();
    }

    fn undo_one(&mut self, record: Undo<World>, tick: u64) {
        match record {
            Undo::Ids(ids) => self.entities.undo(ids),
            Undo::Appended { table, count } => {
                let Some(t) = self.archetypes.get(table) else {
                    return;
                };
                let keep = t.len().saturating_sub(count);
                for row in (keep..t.len()).rev() {
                    self.observers.despawning(t, row);
                }
                if let Some(set) = self.archetypes.sparse_mut(table) {
                    set.truncate(keep, tick);
                } else if let Some(t) = self.archetypes.get_mut(table) {
                    t.truncate(keep, tick);
                }
            }
            Undo::RowsMoved {
                from,
                to,
                component,
                moved,
            } => {
                // An attach's entities leave the component (told first, as they go); a
                // detach's get it back (told once their rows are back).
                let attached = self.archetypes.get(to).is_some_and(|t| t.contains(component));
                if attached && let Some(t) = self.archetypes.get(to) {
                    let tail = t.entities().len().saturating_sub(moved.count());
                    for &entity in &t.entities()[tail..] {
                        self.observers.detached(entity, component);
                    }
                }
                let Some([dst, src]) = self.archetypes.pair_mut(to, from) else {
                    return;
                };
                let mut rows = Rows {
                    index: &mut self.entities,
                    table: from,
                };
                let restored = Table::unmove_rows(src, dst, moved, &mut rows, tick);
                if attached {
                    return;
                }
                let Some(t) = self.archetypes.get(from) else {
                    return;
                };
                let rows: Vec<usize> = match restored {
                    Restored::Rows(rows) => rows.collect(),
                    Restored::Entities(entities) => entities
                        .iter()
                        .filter_map(|&e| self.entities.locate(e).ok())
                        .map(|at| at.row.index())
                        .collect(),
                };
                for row in rows {
                    self.observers.attached(t, row..row + 1, component);
                }
            }
            Undo::RowsRemoved { table, removed } => {
                let Some(t) = self.archetypes.get_mut(table) else {
                    return;
                };
                let mut rows = Rows {
                    index: &mut self.entities,
                    table,
                };
                let restored = t.restore_rows(removed, &mut rows, tick);
                let Some(t) = self.archetypes.get(table) else {
                    return;
                };
                match restored {
                    Restored::Rows(rows) => self.observers.spawned(t, rows),
                    Restored::Entities(entities) if !self.observers.is_empty() => {
                        let mut rows: Vec<usize> = entities
                            .iter()
                            .filter_map(|&e| self.entities.locate(e).ok())
                            .map(|at| at.row.index())
                            .collect();
                        rows.sort_unstable();
                        for run in rows.chunk_by(|a, b| a + 1 == *b) {
                            self.observers.spawned(t, run[0]..run[run.len() - 1] + 1);
                        }
                    }
                    Restored::Entities(_) => {}
                }
            }
            Undo::SparseRowsRemoved { table, removed } => {
                let Some(set) = self.archetypes.sparse_mut(table) else {
                    return;
                };
                let restored = set.restore_rows(removed, tick);
                let Some(set) = self.archetypes.sparse(table) else {
                    return;
                };
                let rows: Vec<usize> = match restored {
                    Restored::Rows(rows) => rows.collect(),
                    Restored::Entities(entities) => {
                        let mut rows: Vec<usize> = entities.iter().filter_map(|&e| set.row_of(e)).collect();
                        rows.sort_unstable();
                        rows
                    }
                };
                if !self.observers.is_empty() {
                    for run in rows.chunk_by(|a, b| a + 1 == *b) {
                        self.observers
                            .spawned(set.table(), run[0]..run[run.len() - 1] + 1);
                    }
                }
            }
            Undo::Removed {
                table,
                row,
                entity,
                values,
                marks,
            } => {
                if let Some(set) = self.archetypes.sparse_mut(table) {
                    set.restore_row(row, entity, values, tick);
                } else if let Some(t) = self.archetypes.get_mut(table)
                    && let Some(moved) = t.restore_row(row, entity, values, tick)
                {
                    let last = TableRow((t.len() - 1) as u32);
                    self.entities.set_location(moved, Location { table, row: last });
                }
                let Some(t) = self.archetypes.get_mut(table) else {
                    return;
                };
                t.set_row_marks(row.index(), &marks, |_| true);
                self.observers.spawned(t, row.index()..row.index() + 1);
            }
            Undo::Moved {
                entity,
                from,
                to,
                component,
                dropped,
                dropped_marks,
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
                    crate::storage::table::Table::move_row(dst, TableRow(last as u32), src, dropped, tick);
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
                src.set_row_marks(from.row.index(), &dropped_marks, |c| c == component);
                if !attached {
                    self.observers
                        .attached(src, from.row.index()..from.row.index() + 1, component);
                }
            }
            Undo::Cells {
                table,
                column,
                rows,
                old,
                marks,
            } => {
                let Some(t) = self.archetypes.get_mut(table) else {
                    return;
                };
                let len = old.len();
                let Some(c) = t.column_mut(column, tick) else {
                    return;
                };
                // The rows restored, ascending, for the observers.
                let mut picked = Vec::new();
                let span = match &rows {
                    CellRows::From(first) => {
                        c.write_range(*first, Values::Own(old));
                        *first..*first + len
                    }
                    CellRows::Picked(rows) => {
                        c.write_rows(rows, Values::Own(old));
                        picked.clone_from(rows);
                        picked.sort_unstable();
                        picked.dedup();
                        0..0
                    }
                };
                // A record taken before tracking began has no marks to put back: the
                // rows it restores are marked as changed by the undo.
                if let (None, Some(list)) = (&marks, t.column_marks_mut(column)) {
                    match &rows {
                        CellRows::From(first) => list.set_range(*first..*first + len, tick),
                        CellRows::Picked(rows) => rows.iter().for_each(|&r| list.set(r as usize, tick)),
                    }
                }
                if let (Some(marks), Some(list)) = (marks, t.column_marks_mut(column)) {
                    match &rows {
                        CellRows::From(first) => {
                            for (k, tick) in marks.into_iter().enumerate() {
                                list.set(first + k, tick);
                            }
                        }
                        CellRows::Picked(rows) => {
                            for (&row, tick) in rows.iter().zip(marks) {
                                list.set(row as usize, tick);
                            }
                        }
                    }
                }
                if let Some(field) = t.field_of(column)
                    && self.observers.watches(field)
                {
                    let reached = match &rows {
                        CellRows::From(_) => Written::from(&span),
                        CellRows::Picked(_) => Written::Picked(&picked),
                    };
                    self.observers.written(t, reached, &[field]);
                }
            }
            Undo::TableCreated => self.archetypes.remove_last(),
            Undo::ComponentCreated => {
                if self
                    .catalog
                    .remove_last()
                    .is_some_and(|def| def.sparse_table().is_some())
                {
                    self.archetypes.remove_last_sparse();
                }
            }
            Undo::EventCreated => self.events.remove_last(),
            Undo::EventDropped(queue) => self.events.restore(*queue),
            Undo::Emitted { event, count } => self.events.truncate_back(event, count),
            Undo::EventsDropped { event, rows } => self.events.undrop(event, rows),
            Undo::Logged { component } => {
                if let Some(log) = self.removal_log_mut(component) {
                    log.pop();
                }
            }
            Undo::RemovalsDropped { component, front } => {
                if let Some(log) = self.removal_log_mut(component) {
                    log.undrop(front);
                }
            }
            Undo::Observers(observers) => self.observers = observers,
            Undo::World(world) => {
                let (log, tick, epoch) = (self.undo_log.take(), self.tick.get(), self.layout_epoch);
                let savepoints = self.savepoints;
                // Tracking is not part of a transaction: what is tracked now stays so.
                let tracked: Vec<ComponentId> = self
                    .catalog
                    .iter()
                    .filter(|c| c.is_tracked())
                    .map(|c| c.id())
                    .collect();
                let logged: Vec<ComponentId> = self.removals.iter().map(|(c, _)| *c).collect();
                let log_tick = self.log_tick;
                *self = *world;
                self.log_tick = log_tick;
                self.undo_log = log;
                self.savepoints = savepoints;
                let now = self.tick.get().max(tick);
                self.tick.set(now);
                self.layout_epoch = self.layout_epoch.max(epoch);
                for c in tracked {
                    // A component the image does not have is gone with the rollback.
                    let _ = self.track_changes(c);
                }
                for c in logged {
                    let _ = self.track_removals(c);
                }
            }
        }
    }
}
