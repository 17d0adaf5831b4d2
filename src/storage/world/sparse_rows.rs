//! The rows of sparse components' tables, pushed, appended and taken, for a spawn, a
//! despawn, an attach or a detach: each recorded for a rollback, logged as a removal where
//! tracked, and told to the observers, as an archetype row's change is.

use crate::storage::column::Column;
use crate::storage::entity::Location;
use crate::storage::ids::{ComponentId, Entity, TableId, TableRow};
use crate::storage::undo::Undo;
use crate::storage::value::Value;

use super::World;

impl World {
    /// Gives a live `entity` that lacks it the sparse component of `table`, with its
    /// checked row of values.
    pub(super) fn sparse_push(
        &mut self,
        table: TableId,
        entity: Entity,
        values: impl IntoIterator<Item = Value>,
        tick: u64,
    ) {
        let Some(set) = self.archetypes.sparse_mut(table) else {
            return;
        };
        let row = set.push(entity, values, tick);
        self.record(|_| Undo::Appended { table, count: 1 });
        if let Some(t) = self.archetypes.get(table)
            && let Some(&c) = t.components().first()
        {
            self.observers.attached(t, row.index()..row.index() + 1, c);
        }
    }

    /// `sparse_push` of many new entities at once, column-wise.
    pub(super) fn sparse_append(
        &mut self,
        table: TableId,
        entities: &[Entity],
        columns: Vec<Column>,
        tick: u64,
    ) {
        let Some(set) = self.archetypes.sparse_mut(table) else {
            return;
        };
        let first = set.table().len();
        set.append(entities, columns, tick);
        self.record(|_| Undo::Appended {
            table,
            count: entities.len(),
        });
        self.report_spawned(table, first..first + entities.len());
    }

    /// Takes the rows of `entities` (live, distinct, each holding it) from the sparse
    /// `component`'s `table` at one tick, column by column (inside a transaction, kept
    /// typed to undo), and reports each as detached.
    pub(super) fn sparse_remove_rows(
        &mut self,
        table: TableId,
        component: ComponentId,
        entities: &[Entity],
        tick: u64,
    ) {
        let keep = self.undo_log.is_some();
        let Some(set) = self.archetypes.sparse_mut(table) else {
            return;
        };
        if let Some(removed) = set.remove_rows(entities, keep, tick) {
            self.record(|_| Undo::SparseRowsRemoved { table, removed });
        }
        for &entity in entities {
            if !self.removals.is_empty() {
                self.log_removals(entity, &[component], tick);
            }
            self.observers.detached(entity, component);
        }
    }

    /// Takes the sparse component of `table` from `entity`, which has it.
    pub(super) fn sparse_remove(&mut self, table: TableId, entity: Entity, tick: u64) {
        let Some(row) = self.archetypes.sparse(table).and_then(|s| s.row_of(entity)) else {
            return;
        };
        self.record(|w| {
            let t = w.table_of(Location {
                table,
                row: TableRow(row as u32),
            });
            Undo::Removed {
                table,
                row: TableRow(row as u32),
                entity,
                values: t.row_values(row, |_| true),
                marks: t.row_marks(row, |_| true),
            }
        });
        let component = self
            .archetypes
            .get(table)
            .and_then(|t| t.components().first().copied());
        if let Some(set) = self.archetypes.sparse_mut(table) {
            set.swap_remove(TableRow(row as u32), tick);
        }
        if let Some(c) = component {
            if !self.removals.is_empty() {
                self.log_removals(entity, &[c], tick);
            }
            self.observers.detached(entity, c);
        }
    }
}
