//! Rows one at a time, or a table's all at once: pushed or appended (checked values, in
//! column order), one cell written, swap-removed, moved to the table one component away,
//! truncated and put back. Every column, and every mark list, stays as long as the
//! table's entities; the caller keeps the entity index in step with the rows that move.

use crate::storage::column::Column;
use crate::storage::ids::{ComponentId, Entity, TableRow};
use crate::storage::marks::MarkList;
use crate::storage::value::Value;

use super::Table;

impl Table {
    /// Appends one row. `values` holds, per component of the table in order, that
    /// component's full row of field values, already checked against the schema, one
    /// after another as `values` gives them.
    pub(crate) fn push_row(
        &mut self,
        entity: Entity,
        values: impl IntoIterator<Item = Value>,
        tick: u64,
    ) -> TableRow {
        let row = self.push_entity(entity, tick);
        self.each_marks(|m| m.push(tick));
        let mut values = values.into_iter();
        for column in &mut self.columns {
            // Checked by the caller (one value of its type per column); a mismatch here
            // would be a bug, so fail loudly in tests.
            let pushed = values.next().map(|value| column.push(value));
            debug_assert!(matches!(pushed, Some(Ok(_))), "unchecked value reached a column");
        }
        debug_assert!(values.next().is_none(), "more values than the table has columns");
        row
    }

    fn push_entity(&mut self, entity: Entity, tick: u64) -> TableRow {
        self.entities.push(entity);
        self.rows_changed_at = tick;
        TableRow((self.entities.len() - 1) as u32)
    }

    /// Appends many rows column-wise: `columns` are in this table's column order, each as
    /// long as `entities`, already checked.
    pub(crate) fn append_rows(&mut self, entities: &[Entity], columns: Vec<Column>, tick: u64) {
        self.entities.extend_from_slice(entities);
        for (dst, mut src) in self.columns.iter_mut().zip(columns) {
            dst.append(&mut src);
        }
        self.each_marks(|m| m.push_n(entities.len(), tick));
        self.rows_changed_at = tick;
    }

    /// Removes `row`, moving the last row into its place. Returns the entity that moved (the
    /// one that was last), which the caller must re-locate; `None` if `row` was last.
    pub(crate) fn swap_remove(&mut self, row: TableRow, tick: u64) -> Option<Entity> {
        let row = row.index();
        self.entities.swap_remove(row);
        for column in &mut self.columns {
            column.swap_remove(row);
        }
        self.each_marks(|m| {
            m.swap_remove(row);
        });
        self.rows_changed_at = tick;
        self.entities.get(row).copied()
    }

    /// Overwrites one cell; the value was checked against the field's type. A tracked
    /// field's row is marked only when the value differs from the one it replaces.
    pub(crate) fn set(&mut self, row: TableRow, column: usize, value: Value, tick: u64) {
        if let Some(col) = self.columns.get_mut(column) {
            let differs = self.changed[column].is_some()
                && col
                    .get(row.index())
                    .is_none_or(|old| !crate::storage::key::same_value(&old, &value));
            let written = col.set(row.index(), value);
            debug_assert!(written.is_ok(), "unchecked value reached a column");
            self.column_changed_at[column].set(tick);
            if differs && let Some(marks) = &mut self.changed[column] {
                marks.set(row.index(), tick);
            }
        }
    }

    /// Moves `row` from `src` to `dst`, whose component set differs from `src`'s by one
    /// component. Columns both tables share are moved; columns only `src` has are dropped;
    /// columns only `dst` has take `added` (that component's checked row of values).
    /// Returns the new row in `dst` and the entity swap-moved in `src`, if any.
    pub(crate) fn move_row(
        src: &mut Table,
        row: TableRow,
        dst: &mut Table,
        added: Vec<Value>,
        tick: u64,
    ) -> (TableRow, Option<Entity>) {
        let r = row.index();
        // A mark moved to a table that does not track its component is dropped; one the
        // other table tracks but this one does not is taken to be `tick`.
        fn move_mark(src: &mut Option<MarkList>, dst: &mut Option<MarkList>, row: usize, tick: u64) {
            let mark = src.as_mut().and_then(|m| m.swap_remove(row));
            if let Some(d) = dst {
                d.push(mark.unwrap_or(tick));
            }
        }
        for (i, &component) in src.components.iter().enumerate() {
            let src_cols = src.component_range(i);
            match dst.components.binary_search(&component) {
                Ok(j) => {
                    let dst_cols = dst.component_range(j);
                    for (s, d) in src_cols.zip(dst_cols) {
                        src.columns[s].move_row_to(r, &mut dst.columns[d]);
                        move_mark(&mut src.changed[s], &mut dst.changed[d], r, tick);
                    }
                    move_mark(&mut src.added[i], &mut dst.added[j], r, tick);
                }
                Err(_) => {
                    for s in src_cols {
                        src.columns[s].swap_remove(r);
                        if let Some(m) = &mut src.changed[s] {
                            m.swap_remove(r);
                        }
                    }
                    if let Some(m) = &mut src.added[i] {
                        m.swap_remove(r);
                    }
                }
            }
        }
        let mut added = added.into_iter();
        for (j, &component) in dst.components.iter().enumerate() {
            if !src.contains(component) {
                for d in dst.component_range(j) {
                    let pushed = added.next().map(|v| dst.columns[d].push(v));
                    debug_assert!(matches!(pushed, Some(Ok(()))), "unchecked value reached a column");
                    if let Some(m) = &mut dst.changed[d] {
                        m.push(tick);
                    }
                }
                if let Some(m) = &mut dst.added[j] {
                    m.push(tick);
                }
            }
        }
        let entity = src.entities.swap_remove(r);
        src.rows_changed_at = tick;
        let new_row = dst.push_entity(entity, tick);
        (new_row, src.entities.get(r).copied())
    }

    /// Moves every row of `src` onto the end of `dst`, column by column. Columns `dst`
    /// lacks are discarded; the columns of the components only `dst` has come from `added`
    /// (checked columns of `src.len()` rows each, in `dst`'s column order), marked changed
    /// and added at `tick`. Returns the first new row in `dst`.
    pub(crate) fn move_all_rows(src: &mut Table, dst: &mut Table, added: Vec<Column>, tick: u64) -> TableRow {
        let first = TableRow(dst.entities.len() as u32);
        let moved = src.len();
        let mut added = added.into_iter();
        for (j, &component) in dst.components.iter().enumerate() {
            if let Ok(i) = src.components.binary_search(&component) {
                for (s, d) in src.component_range(i).zip(dst.component_range(j)) {
                    dst.columns[d].append(&mut src.columns[s]);
                    append_marks(&mut src.changed[s], &mut dst.changed[d], moved, tick);
                }
                append_marks(&mut src.added[i], &mut dst.added[j], moved, tick);
            } else {
                for d in dst.component_range(j) {
                    if let Some(mut column) = added.next() {
                        debug_assert_eq!(column.len(), moved, "an added column of another length");
                        dst.columns[d].append(&mut column);
                    }
                    append_marks(&mut None, &mut dst.changed[d], moved, tick);
                }
                append_marks(&mut None, &mut dst.added[j], moved, tick);
            }
        }
        src.columns.iter_mut().for_each(|c| c.clear());
        src.each_marks(MarkList::clear);
        dst.entities.append(&mut src.entities);
        src.rows_changed_at = tick;
        dst.rows_changed_at = tick;
        first
    }

    /// Every value of `row` in the columns of components `keep` does not say no to, in
    /// column order: what undoing a despawn or a detach puts back.
    pub(crate) fn row_values(&self, row: usize, keep: impl Fn(ComponentId) -> bool) -> Vec<Value> {
        let mut values = Vec::new();
        for (i, &component) in self.components.iter().enumerate() {
            if keep(component) {
                let columns = &self.columns[self.component_range(i)];
                values.extend(columns.iter().map(|c| c.get(row).unwrap_or(Value::Null)));
            }
        }
        values
    }

    /// Keeps the first `len` rows (undoing rows appended at the end).
    pub(crate) fn truncate(&mut self, len: usize, tick: u64) {
        self.entities.truncate(len);
        for c in &mut self.columns {
            if c.holds_text() && c.len() >= len + crate::storage::column::MANY_TEXTS {
                // Many text values: freed off this thread (`garbage.rs`).
                crate::garbage::drop_later(c.split_off(len));
            } else {
                c.truncate(len);
            }
        }
        self.each_marks(|m| m.truncate(len));
        self.rows_changed_at = tick;
    }

    /// Puts a removed row back where `swap_remove` took it from: `entity` with `values` (a
    /// full, checked row in column order) goes to `row`, and the row there moves to the end.
    /// Returns the entity that moved to the end, which the caller must re-locate.
    pub(crate) fn restore_row(
        &mut self,
        row: TableRow,
        entity: Entity,
        values: Vec<Value>,
        tick: u64,
    ) -> Option<Entity> {
        self.push_row(entity, values, tick);
        self.move_last_to(row)
    }

    /// Swaps the last row into `row` (undoing the swap of a `swap_remove`); returns the
    /// entity that moved to the end, if `row` was not already last.
    pub(crate) fn move_last_to(&mut self, row: TableRow) -> Option<Entity> {
        let (row, last) = (row.index(), self.entities.len().checked_sub(1)?);
        if row >= last {
            return None;
        }
        self.entities.swap(row, last);
        self.columns.iter_mut().for_each(|c| c.swap(row, last));
        self.each_marks(|m| m.swap(row, last));
        Some(self.entities[last])
    }
}

/// Moves `count` marks of `src` onto the end of `dst` (or marks them `tick` there, when
/// `src` kept none; drops them when `dst` keeps none).
fn append_marks(src: &mut Option<MarkList>, dst: &mut Option<MarkList>, count: usize, tick: u64) {
    match (src, dst) {
        (Some(s), Some(d)) => d.append(s),
        (None, Some(d)) => d.push_n(count, tick),
        (Some(s), None) => s.clear(),
        (None, None) => {}
    }
}
