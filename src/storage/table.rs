//! One archetype table: the entities that hold exactly one set of components, stored as one
//! dense typed column per field (struct of arrays), plus the cached edges to the tables one
//! component away. Finding or creating tables is `archetypes.rs`'s job; keeping the entity
//! index in step with row moves is `world/`'s.

use std::fmt;

use hashbrown::HashMap;

use super::column::Column;
use super::component::Components;
use super::ids::{ComponentId, Entity, FieldId, TableId, TableRow};
use super::marks::MarkList;
use super::value::Value;

/// The user-visible name of a table, `arch_` and 16 hex digits: the XOR of its components'
/// stable hashes (probed to the next free number in the rare case of a collision).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TableName(pub(crate) u64);

impl TableName {
    /// The number in the name.
    pub fn hash(self) -> u64 {
        self.0
    }

    /// Reads `arch_` followed by 1 to 16 hex digits.
    pub fn parse(name: &str) -> Option<TableName> {
        let hex = name.strip_prefix("arch_")?;
        if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(hex, 16).ok().map(TableName)
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "arch_{:016x}", self.0)
    }
}

/// Where rows of one table are, as the entity index (kept by `world/`) knows it: what
/// `remove_rows` and `restore_rows` ask and tell as rows move.
pub(crate) trait RowIndex {
    /// The row of a live entity of the table.
    fn row_of(&self, entity: Entity) -> Option<TableRow>;
    /// `entity` is at `row` now.
    fn moved(&mut self, entity: Entity, row: TableRow);
}

/// Rows `Table::remove_rows` took out, kept typed to be put back by `Table::restore_rows`.
#[derive(Clone, Debug)]
pub(crate) struct RemovedRows {
    /// The row each removal took, in order, each counted in the table as the removals
    /// before it left it. `None`: every row went at once, and the rest holds the table's
    /// rows in their order.
    holes: Option<Vec<u32>>,
    /// The entities that went, in the order of `holes`.
    entities: Vec<Entity>,
    /// Per column of the table, the values that went, in the same order.
    columns: Vec<Column>,
    /// Per mark list the table kept then, the marks that went.
    marks: Vec<(MarkAt, MarkList)>,
}

impl RemovedRows {
    /// How many rows went.
    pub(crate) fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether it holds text values enough to be worth freeing off the thread.
    pub(crate) fn holds_many_texts(&self) -> bool {
        self.columns.iter().any(Column::holds_many_texts)
    }
}

/// Rows `Table::move_rows` took from one table to the end of another, kept to be put
/// back by `Table::unmove_rows`.
#[derive(Clone, Debug)]
pub(crate) struct MovedRows {
    /// As `RemovedRows::holes`; `None`: every row of the source moved at once, in its
    /// order.
    holes: Option<Vec<u32>>,
    /// How many rows went to the end of the destination.
    count: usize,
    /// Per column of the source the destination lacks (a detached component's), the
    /// values that went, in the order they moved.
    dropped: Vec<Column>,
    /// Per mark list of the source the destination lacks, the marks that went.
    dropped_marks: Vec<(MarkAt, MarkList)>,
}

impl MovedRows {
    /// How many rows went to the end of the destination.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Whether it holds text values enough to be worth freeing off the thread.
    pub(crate) fn holds_many_texts(&self) -> bool {
        self.dropped.iter().any(Column::holds_many_texts)
    }
}

/// The rows `Table::restore_rows` put back.
pub(crate) enum Restored {
    /// These rows (every row went at once, and came back so).
    Rows(std::ops::Range<usize>),
    /// The rows of these entities, wherever they are now.
    Entities(Vec<Entity>),
}

/// Which of a table's mark lists: a column's changes, or a component's additions (by its
/// place in the table's components).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MarkAt {
    Changed(usize),
    Added(usize),
}

/// An archetype table.
#[derive(Clone, Debug)]
pub struct Table {
    id: TableId,
    name: TableName,
    /// XOR of the component hashes; equals `name` unless a collision forced a probe.
    set_hash: u64,
    /// Sorted, so membership is a binary search and equal sets compare equal.
    components: Box<[ComponentId]>,
    /// `columns[column_start[i] .. column_start[i + 1]]` are the fields of `components[i]`.
    column_start: Box<[usize]>,
    columns: Vec<Column>,
    entities: Vec<Entity>,
    /// The world tick at which each column's values were last written, and at which rows
    /// were last added or removed: what indexes and change detection will look at to know
    /// what to refresh.
    column_changed_at: Vec<u64>,
    rows_changed_at: u64,
    /// Per column: when each row's value last changed, for the fields of components
    /// whose changes are tracked (`marks.rs`); `None` for the others.
    changed: Vec<Option<MarkList>>,
    /// Whether any column keeps marks (some of `changed` is `Some`): what a writer asks
    /// first, answered from the table itself rather than from `changed`'s own memory.
    marked: bool,
    /// Per component (in `components` order): when each row got it, when tracked.
    added: Vec<Option<MarkList>>,
    /// Cached transitions: the table this one becomes with a component added or removed.
    pub(crate) add_edges: HashMap<ComponentId, TableId>,
    pub(crate) remove_edges: HashMap<ComponentId, TableId>,
}

impl Table {
    /// An empty table for `components` (sorted, existing).
    pub(crate) fn new(
        id: TableId,
        name: TableName,
        set_hash: u64,
        components: Box<[ComponentId]>,
        catalog: &Components,
    ) -> Table {
        let mut column_start = Vec::with_capacity(components.len() + 1);
        let mut columns = Vec::new();
        for &c in components.iter() {
            column_start.push(columns.len());
            if let Ok(def) = catalog.get(c) {
                columns.extend(def.fields().iter().map(|f| Column::new(f.ty())));
            }
        }
        column_start.push(columns.len());
        let mut table = Table {
            id,
            name,
            set_hash,
            column_start: column_start.into(),
            column_changed_at: vec![0; columns.len()],
            changed: vec![None; columns.len()],
            marked: false,
            added: vec![None; components.len()],
            components,
            columns,
            entities: Vec::new(),
            rows_changed_at: 0,
            add_edges: HashMap::new(),
            remove_edges: HashMap::new(),
        };
        let tracked: Vec<ComponentId> = table
            .components
            .iter()
            .copied()
            .filter(|&c| catalog.get(c).is_ok_and(|d| d.is_tracked()))
            .collect();
        // A new table holds no rows yet.
        for c in tracked {
            table.track(c, 0);
        }
        table
    }

    /// Starts keeping change marks for `component`'s rows (if the table holds it and does
    /// not already): every row present is marked `tick`, as if added and changed then.
    pub(crate) fn track(&mut self, component: ComponentId, tick: u64) {
        let Ok(i) = self.components.binary_search(&component) else {
            return;
        };
        if self.added[i].is_some() {
            return;
        }
        let len = self.len();
        self.added[i] = Some(MarkList::new(len, tick));
        for column in self.component_range(i) {
            self.changed[column] = Some(MarkList::new(len, tick));
            self.marked = true;
        }
    }

    /// The marks of `component` (when each row got it, then when each of its fields last
    /// changed, in field order), as a snapshot kept them: refused unless there is one
    /// list per field plus one, each with one mark per row.
    pub(crate) fn restore_marks(
        &mut self,
        component: ComponentId,
        mut lists: Vec<MarkList>,
    ) -> Result<(), String> {
        let Ok(i) = self.components.binary_search(&component) else {
            return Err(format!(
                "table {} does not hold component id {}",
                self.name, component.0
            ));
        };
        let range = self.component_range(i);
        if lists.len() != range.len() + 1 || lists.iter().any(|m| m.ticks().len() != self.len()) {
            return Err(format!(
                "table {} has {} rows and component id {} {} fields: its marks do not fit",
                self.name,
                self.len(),
                component.0,
                range.len()
            ));
        }
        let changed = lists.split_off(1);
        self.added[i] = lists.pop();
        for (column, marks) in range.zip(changed) {
            self.changed[column] = Some(marks);
            self.marked = true;
        }
        Ok(())
    }

    /// When each row's value of `field` last changed, if its component is tracked.
    pub fn changed_marks(&self, field: FieldId) -> Option<&MarkList> {
        self.changed.get(self.column_index(field)?)?.as_ref()
    }

    /// When each row got `component`, if it is tracked.
    pub fn added_marks(&self, component: ComponentId) -> Option<&MarkList> {
        let i = self.components.binary_search(&component).ok()?;
        self.added[i].as_ref()
    }

    /// The marks of one column (by its index in `columns()`), if tracked.
    pub(crate) fn column_marks(&self, column: usize) -> Option<&MarkList> {
        if !self.marked {
            return None;
        }
        self.changed.get(column)?.as_ref()
    }

    /// Columns `indexes` (distinct, in range) and their change marks, mutably.
    #[allow(clippy::type_complexity)]
    pub(crate) fn columns_and_marks_mut<const N: usize>(
        &mut self,
        indexes: [usize; N],
    ) -> Option<([&mut Column; N], [&mut Option<MarkList>; N])> {
        let columns = self.columns.get_disjoint_mut(indexes).ok()?;
        let marks = self.changed.get_disjoint_mut(indexes).ok()?;
        Some((columns, marks))
    }

    /// The marks of one column, mutably (for the writers in `query.rs`).
    pub(crate) fn column_marks_mut(&mut self, column: usize) -> Option<&mut MarkList> {
        self.changed.get_mut(column)?.as_mut()
    }

    /// Every mark list, each with the row operation applied.
    fn each_marks(&mut self, mut f: impl FnMut(&mut MarkList)) {
        self.changed
            .iter_mut()
            .chain(&mut self.added)
            .flatten()
            .for_each(&mut f);
    }

    /// Every mark of `row` of the tracked components `keep` says yes to, component by
    /// component (its added mark, then its fields'): what undoing a despawn or a detach
    /// puts back with `set_row_marks`.
    pub(crate) fn row_marks(&self, row: usize, keep: impl Fn(ComponentId) -> bool) -> Vec<u64> {
        let mut marks = Vec::new();
        for (i, &component) in self.components.iter().enumerate() {
            if !keep(component) {
                continue;
            }
            if let Some(added) = &self.added[i] {
                marks.extend(added.get(row));
                for column in self.component_range(i) {
                    marks.extend(self.changed[column].as_ref().and_then(|m| m.get(row)));
                }
            }
        }
        marks
    }

    /// Puts back marks `row_marks` took (with the same `keep`); a list of another length
    /// (tracking began in between) is left as it is.
    pub(crate) fn set_row_marks(&mut self, row: usize, marks: &[u64], keep: impl Fn(ComponentId) -> bool) {
        let mut lists: Vec<&mut MarkList> = Vec::new();
        let (components, added, changed) = (&self.components, &mut self.added, &mut self.changed);
        let mut changed_iter = changed.iter_mut().enumerate();
        for (i, (&component, added)) in components.iter().zip(added.iter_mut()).enumerate() {
            let range = self.column_start[i]..self.column_start[i + 1];
            let fields: Vec<&mut MarkList> = changed_iter
                .by_ref()
                .take(range.len())
                .filter_map(|(_, m)| m.as_mut())
                .collect();
            if keep(component)
                && let Some(a) = added.as_mut()
            {
                lists.push(a);
                lists.extend(fields);
            }
        }
        if lists.len() == marks.len() {
            for (list, &tick) in lists.into_iter().zip(marks) {
                list.set(row, tick);
            }
        }
    }

    /// The table's id.
    pub fn id(&self) -> TableId {
        self.id
    }

    /// The table's name, `arch_…`.
    pub fn name(&self) -> TableName {
        self.name
    }

    pub(crate) fn set_hash(&self) -> u64 {
        self.set_hash
    }

    /// The component set, sorted by id.
    pub fn components(&self) -> &[ComponentId] {
        &self.components
    }

    /// True when the table's entities have `component`.
    pub fn contains(&self, component: ComponentId) -> bool {
        self.components.binary_search(&component).is_ok()
    }

    /// The number of rows (entities).
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// True when the table holds no entity.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// Row `i` holds entity `entities()[i]`.
    pub fn entities(&self) -> &[Entity] {
        &self.entities
    }

    /// All columns, component by component (in id order), field by field.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The entities and every column, the columns mutably: an UPDATE lends some columns
    /// to write and the rest to read (`TableMut::lend_columns`). Stamps no tick.
    pub(crate) fn entities_and_columns_mut(&mut self) -> (&[Entity], &mut [Column]) {
        (&self.entities, &mut self.columns)
    }

    /// Where `field`'s column is in `columns()`, if this table has it.
    #[inline]
    pub fn column_index(&self, field: FieldId) -> Option<usize> {
        let i = self.components.binary_search(&field.component()).ok()?;
        let column = self.column_start[i] + field.index();
        (column < self.column_start[i + 1]).then_some(column)
    }

    /// The column of `field`, when the table's entities have its component.
    pub fn column(&self, field: FieldId) -> Option<&Column> {
        self.columns.get(self.column_index(field)?)
    }

    /// The columns of one component's fields, in declaration order.
    pub fn component_columns(&self, component: ComponentId) -> Option<&[Column]> {
        let i = self.components.binary_search(&component).ok()?;
        Some(&self.columns[self.column_start[i]..self.column_start[i + 1]])
    }

    /// The world tick at which `field`'s values were last written.
    pub fn column_changed_at(&self, field: FieldId) -> Option<u64> {
        Some(self.column_changed_at[self.column_index(field)?])
    }

    /// The world tick at which rows were last added to or removed from this table.
    pub fn rows_changed_at(&self) -> u64 {
        self.rows_changed_at
    }

    pub(crate) fn mark_column_changed(&mut self, column: usize, tick: u64) {
        if let Some(at) = self.column_changed_at.get_mut(column) {
            *at = tick;
        }
    }

    fn component_range(&self, position: usize) -> std::ops::Range<usize> {
        self.column_start[position]..self.column_start[position + 1]
    }

    /// Appends one row. `values` holds, per component of the table in order, that
    /// component's full row of field values, already checked against the schema.
    pub(crate) fn push_row(&mut self, entity: Entity, values: Vec<Vec<Value>>, tick: u64) -> TableRow {
        let row = self.push_entity(entity, tick);
        self.each_marks(|m| m.push(tick));
        let cells = values.into_iter().flatten();
        for (column, value) in self.columns.iter_mut().zip(cells) {
            // Checked by the caller; a mismatch here would be a bug, so fail loudly in tests.
            let pushed = column.push(value);
            debug_assert!(pushed.is_ok(), "unchecked value reached a column");
        }
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
                    .is_none_or(|old| !super::key::same_value(&old, &value));
            let written = col.set(row.index(), value);
            debug_assert!(written.is_ok(), "unchecked value reached a column");
            self.column_changed_at[column] = tick;
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
        src.columns.iter_mut().for_each(Column::clear);
        src.each_marks(MarkList::clear);
        dst.entities.append(&mut src.entities);
        src.rows_changed_at = tick;
        dst.rows_changed_at = tick;
        first
    }

    /// The field whose values `columns()[column]` holds.
    pub(crate) fn field_of(&self, column: usize) -> Option<FieldId> {
        let i = self
            .column_start
            .partition_point(|&start| start <= column)
            .checked_sub(1)?;
        let component = *self.components.get(i)?;
        Some(FieldId::new(
            component,
            u16::try_from(column - self.column_start[i]).ok()?,
        ))
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
            if c.holds_text() && c.len() >= len + super::column::MANY_TEXTS {
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
        self.push_row(entity, vec![values], tick);
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

    /// Removes the rows of `entities` (distinct, each in this table), one after another
    /// as `swap_remove` does, column by column; `rows` says where each is and is told of
    /// each entity that moves. A table losing every row is emptied at once. With `keep`
    /// (inside a transaction) returns what went, for `restore_rows`: typed columns, no
    /// value boxed, and when every row goes, the table's own memory.
    pub(crate) fn remove_rows(
        &mut self,
        entities: &[Entity],
        rows: &mut impl RowIndex,
        keep: bool,
        tick: u64,
    ) -> Option<RemovedRows> {
        self.rows_changed_at = tick;
        if entities.len() == self.len() {
            if !keep {
                self.truncate(0, tick);
                return None;
            }
            let marks = self
                .mark_slots()
                .map(|(at, list)| (at, std::mem::take(list)))
                .collect();
            let columns = self
                .columns
                .iter_mut()
                .map(|c| std::mem::replace(c, Column::new(c.field_type())))
                .collect();
            return Some(RemovedRows {
                holes: None,
                entities: std::mem::take(&mut self.entities),
                columns,
                marks,
            });
        }
        let mut holes = Vec::with_capacity(entities.len());
        let mut gone = Vec::with_capacity(if keep { entities.len() } else { 0 });
        for &entity in entities {
            let Some(row) = rows.row_of(entity).filter(|r| r.index() < self.entities.len()) else {
                continue;
            };
            self.entities.swap_remove(row.index());
            if let Some(&moved) = self.entities.get(row.index()) {
                rows.moved(moved, row);
            }
            holes.push(row.0);
            if keep {
                gone.push(entity);
            }
        }
        let columns: Vec<Column> = self
            .columns
            .iter_mut()
            .filter_map(|c| c.swap_remove_each(&holes, keep))
            .collect();
        let marks: Vec<(MarkAt, MarkList)> = self
            .mark_slots()
            .filter_map(|(at, list)| Some((at, MarkList::from_ticks(list.swap_remove_each(&holes, keep)?))))
            .collect();
        keep.then_some(RemovedRows {
            holes: Some(holes),
            entities: gone,
            columns,
            marks,
        })
    }

    /// Puts back rows `remove_rows` took, leaving the table as it was before (rows in the
    /// same order); `rows` is told where each entity is then. A mark list begun since
    /// (tracking that started in between) marks the rows put back `tick`.
    pub(crate) fn restore_rows(
        &mut self,
        removed: RemovedRows,
        rows: &mut impl RowIndex,
        tick: u64,
    ) -> Restored {
        self.rows_changed_at = tick;
        let RemovedRows {
            holes,
            entities,
            columns,
            mut marks,
        } = removed;
        let count = entities.len();
        let marks_of = |at: MarkAt| match marks.iter().position(|(a, _)| *a == at) {
            Some(i) => marks.swap_remove(i).1,
            None => MarkList::new(count, tick),
        };
        self.put_back(holes, entities, columns, marks_of, rows)
    }

    /// Puts back rows taken out one after another by swap-removes (`holes`; `None`: every
    /// row at once, the table empty now), given their entities, their values per column
    /// and their marks per mark list the table keeps: the table as it was before, `rows`
    /// told where each entity is.
    fn put_back(
        &mut self,
        holes: Option<Vec<u32>>,
        entities: Vec<Entity>,
        columns: Vec<Column>,
        mut marks_of: impl FnMut(MarkAt) -> MarkList,
        rows: &mut impl RowIndex,
    ) -> Restored {
        let Some(holes) = holes else {
            // Every row went at once: the table is empty again (what came after was undone
            // first), and takes its columns back whole.
            for (dst, mut src) in self.columns.iter_mut().zip(columns) {
                if dst.is_empty() {
                    *dst = src;
                } else {
                    dst.append(&mut src);
                }
            }
            let slots: Vec<MarkAt> = self.mark_slots().map(|(at, _)| at).collect();
            for at in slots {
                let mut list = marks_of(at);
                if let Some(dst) = self.mark_list_mut(at) {
                    if dst.ticks().is_empty() {
                        *dst = list;
                    } else {
                        dst.append(&mut list);
                    }
                }
            }
            let first = self.entities.len();
            if first == 0 {
                self.entities = entities;
            } else {
                self.entities.extend_from_slice(&entities);
            }
            for (row, &entity) in self.entities.iter().enumerate().skip(first) {
                rows.moved(entity, TableRow(row as u32));
            }
            return Restored::Rows(first..self.entities.len());
        };
        for (&hole, &entity) in holes.iter().zip(&entities).rev() {
            self.entities.push(entity);
            let last = self.entities.len() - 1;
            if (hole as usize) < last {
                self.entities.swap(hole as usize, last);
                rows.moved(self.entities[last], TableRow(last as u32));
            }
            rows.moved(entity, TableRow(hole.min(last as u32)));
        }
        for (column, values) in self.columns.iter_mut().zip(columns) {
            column.restore_each(&holes, values);
        }
        let slots: Vec<MarkAt> = self.mark_slots().map(|(at, _)| at).collect();
        for at in slots {
            let list = marks_of(at);
            if let Some(dst) = self.mark_list_mut(at) {
                dst.restore_each(&holes, list.ticks().to_vec());
            }
        }
        Restored::Entities(entities)
    }

    /// Moves the rows of `entities` (distinct, each in `src`) to the end of `dst`, whose
    /// components differ from `src`'s by one, as `move_row` would one after another: each
    /// swap-removed from `src` and appended to `dst` in the order given, column by
    /// column. `rows` says where each is in `src` and is told of each entity that moves
    /// within it; the caller locates the moved ones in `dst`, from the returned first row
    /// on, in order. When `entities` are `src`'s rows in their order, its columns move
    /// whole. `dst`'s columns `src` lacks take `added` (checked, in `dst`'s column order,
    /// a row per entity in order) and are marked `tick`. With `keep` (inside a
    /// transaction) returns what `unmove_rows` puts back with: the rows' places, and the
    /// values and marks `dst` has no column for (a detached component's), typed.
    pub(crate) fn move_rows(
        src: &mut Table,
        dst: &mut Table,
        entities: &[Entity],
        rows: &mut impl RowIndex,
        added: Vec<Column>,
        keep: bool,
        tick: u64,
    ) -> Option<(usize, Option<MovedRows>)> {
        let first = dst.len();
        let count = entities.len();
        let whole = count == src.len() && entities == src.entities.as_slice();
        // What cannot be moved as asked is not moved at all (the caller checked it).
        if !whole
            && entities
                .iter()
                .any(|&e| rows.row_of(e).is_none_or(|r| r.index() >= src.len()))
        {
            debug_assert!(false, "an entity to move is not in its table");
            return None;
        }
        let holes = match whole {
            true => None,
            false => {
                let mut holes = Vec::with_capacity(count);
                for &entity in entities {
                    let Some(row) = rows.row_of(entity) else {
                        continue;
                    };
                    src.entities.swap_remove(row.index());
                    if let Some(&moved) = src.entities.get(row.index()) {
                        rows.moved(moved, row);
                    }
                    holes.push(row.0);
                }
                Some(holes)
            }
        };
        // Takes the rows (all, or the holes) out of one column or mark list.
        fn take(column: &mut Column, holes: Option<&[u32]>) -> Column {
            match holes {
                Some(holes) => column
                    .swap_remove_each(holes, true)
                    .unwrap_or_else(|| Column::new(column.field_type())),
                None => std::mem::replace(column, Column::new(column.field_type())),
            }
        }
        fn take_marks(list: &mut MarkList, holes: Option<&[u32]>) -> MarkList {
            match holes {
                Some(holes) => MarkList::from_ticks(list.swap_remove_each(holes, true).unwrap_or_default()),
                None => std::mem::take(list),
            }
        }
        fn drop_marks(list: &mut MarkList, holes: Option<&[u32]>) {
            match holes {
                Some(holes) => drop(list.swap_remove_each(holes, false)),
                None => list.clear(),
            }
        }
        // A mark that moves to a table that keeps none is dropped; one the destination
        // keeps and the source did not is `tick`.
        fn put_marks(src: Option<MarkList>, dst: &mut Option<MarkList>, count: usize, tick: u64) {
            match (src, dst) {
                (Some(mut s), Some(d)) => d.append(&mut s),
                (None, Some(d)) => d.push_n(count, tick),
                _ => {}
            }
        }
        let holes_ref = holes.as_deref();
        let (mut dropped, mut dropped_marks) = (Vec::new(), Vec::new());
        for (i, &component) in src.components.iter().enumerate() {
            let range = src.component_range(i);
            match dst.components.binary_search(&component) {
                Ok(j) => {
                    for (s, d) in range.zip(dst.component_range(j)) {
                        let mut values = take(&mut src.columns[s], holes_ref);
                        dst.columns[d].append(&mut values);
                        let marks = src.changed[s].as_mut().map(|l| take_marks(l, holes_ref));
                        put_marks(marks, &mut dst.changed[d], count, tick);
                    }
                    let marks = src.added[i].as_mut().map(|l| take_marks(l, holes_ref));
                    put_marks(marks, &mut dst.added[j], count, tick);
                }
                Err(_) => {
                    for s in range {
                        match (keep, holes_ref) {
                            (true, _) => dropped.push(take(&mut src.columns[s], holes_ref)),
                            (false, Some(holes)) => drop(src.columns[s].swap_remove_each(holes, false)),
                            (false, None) => {
                                // Many texts are freed off this thread (`garbage.rs`).
                                let gone = take(&mut src.columns[s], None);
                                if gone.holds_many_texts() {
                                    crate::garbage::drop_later(gone);
                                }
                            }
                        }
                        if let Some(list) = src.changed[s].as_mut() {
                            match keep {
                                true => dropped_marks.push((MarkAt::Changed(s), take_marks(list, holes_ref))),
                                false => drop_marks(list, holes_ref),
                            }
                        }
                    }
                    if let Some(list) = src.added[i].as_mut() {
                        match keep {
                            true => dropped_marks.push((MarkAt::Added(i), take_marks(list, holes_ref))),
                            false => drop_marks(list, holes_ref),
                        }
                    }
                }
            }
        }
        let mut added = added.into_iter();
        for (j, &component) in dst.components.iter().enumerate() {
            if src.contains(component) {
                continue;
            }
            for d in dst.component_range(j) {
                if let Some(mut column) = added.next() {
                    debug_assert_eq!(column.len(), count, "an added column of another length");
                    dst.columns[d].append(&mut column);
                }
                put_marks(None, &mut dst.changed[d], count, tick);
            }
            put_marks(None, &mut dst.added[j], count, tick);
        }
        match whole {
            true => dst.entities.append(&mut src.entities),
            false => dst.entities.extend_from_slice(entities),
        }
        src.rows_changed_at = tick;
        dst.rows_changed_at = tick;
        let moved = keep.then_some(MovedRows {
            holes,
            count,
            dropped,
            dropped_marks,
        });
        Some((first, moved))
    }

    /// Puts back rows `move_rows` took from `src` to the end of `dst`, leaving both as
    /// they were before (rows in the same order); `rows` is told where each entity is in
    /// `src` then. The marks put back are those the rows had (of a component both tables
    /// hold, as `dst` kept them); a list of `src`'s that had none for them (tracking begun
    /// since) marks them `tick`.
    pub(crate) fn unmove_rows(
        src: &mut Table,
        dst: &mut Table,
        moved: MovedRows,
        rows: &mut impl RowIndex,
        tick: u64,
    ) -> Restored {
        let MovedRows {
            holes,
            count,
            dropped,
            mut dropped_marks,
        } = moved;
        let Some(start) = dst.len().checked_sub(count) else {
            debug_assert!(false, "a table lost rows a move put at its end");
            return Restored::Entities(Vec::new());
        };
        // The tail of `dst` (or what it had no column for), per column of `src`.
        let mut dropped = dropped.into_iter();
        let mut values: Vec<Column> = Vec::with_capacity(src.columns.len());
        let mut marks: Vec<(MarkAt, Vec<u64>)> = Vec::new();
        // Marks only for the lists `src` keeps now (the others' are not asked for).
        let tail_marks = |list: &Option<MarkList>| {
            list.as_ref()
                .and_then(|l| l.ticks().get(start..))
                .map(<[u64]>::to_vec)
        };
        let mut kept = |at: MarkAt| {
            let k = dropped_marks.iter().position(|(a, _)| *a == at)?;
            Some(dropped_marks.swap_remove(k).1.ticks().to_vec())
        };
        for (i, &component) in src.components.iter().enumerate() {
            let range = src.component_range(i);
            let tracked = src.added[i].is_some();
            match dst.components.binary_search(&component) {
                Ok(j) => {
                    for (s, d) in range.zip(dst.component_range(j)) {
                        values.push(dst.columns[d].split_off(start));
                        if src.changed[s].is_some()
                            && let Some(ticks) = tail_marks(&dst.changed[d])
                        {
                            marks.push((MarkAt::Changed(s), ticks));
                        }
                    }
                    if tracked && let Some(ticks) = tail_marks(&dst.added[j]) {
                        marks.push((MarkAt::Added(i), ticks));
                    }
                }
                Err(_) => {
                    for s in range {
                        values.push(
                            dropped
                                .next()
                                .unwrap_or_else(|| Column::new(src.columns[s].field_type())),
                        );
                        if src.changed[s].is_some()
                            && let Some(ticks) = kept(MarkAt::Changed(s))
                        {
                            marks.push((MarkAt::Changed(s), ticks));
                        }
                    }
                    if tracked && let Some(ticks) = kept(MarkAt::Added(i)) {
                        marks.push((MarkAt::Added(i), ticks));
                    }
                }
            }
        }
        // `dst` as it was: its tail goes, with the values it alone had (an attach's).
        for column in &mut dst.columns {
            if column.len() > start {
                if column.holds_text() && column.len() >= start + super::column::MANY_TEXTS {
                    crate::garbage::drop_later(column.split_off(start));
                } else {
                    column.truncate(start);
                }
            }
        }
        dst.each_marks(|m| m.truncate(start));
        let entities = dst.entities.split_off(start);
        dst.rows_changed_at = tick;
        src.rows_changed_at = tick;
        let marks_of = |at: MarkAt| match marks.iter().position(|(a, _)| *a == at) {
            Some(k) => MarkList::from_ticks(marks.swap_remove(k).1),
            None => MarkList::new(count, tick),
        };
        src.put_back(holes, entities, values, marks_of, rows)
    }

    /// How many mark lists the table keeps (each a `u64` a row).
    pub(crate) fn mark_lists(&self) -> usize {
        self.changed.iter().chain(&self.added).flatten().count()
    }

    /// Every mark list the table keeps, with where it is.
    fn mark_slots(&mut self) -> impl Iterator<Item = (MarkAt, &mut MarkList)> {
        let changed = self
            .changed
            .iter_mut()
            .enumerate()
            .filter_map(|(i, m)| Some((MarkAt::Changed(i), m.as_mut()?)));
        let added = self
            .added
            .iter_mut()
            .enumerate()
            .filter_map(|(i, m)| Some((MarkAt::Added(i), m.as_mut()?)));
        changed.chain(added)
    }

    fn mark_list_mut(&mut self, at: MarkAt) -> Option<&mut MarkList> {
        match at {
            MarkAt::Changed(i) => self.changed.get_mut(i)?.as_mut(),
            MarkAt::Added(i) => self.added.get_mut(i)?.as_mut(),
        }
    }

    pub(crate) fn column_mut(&mut self, column: usize, tick: u64) -> Option<&mut Column> {
        *self.column_changed_at.get_mut(column)? = tick;
        self.columns.get_mut(column)
    }

    pub(crate) fn renumber(&mut self, id: TableId) {
        self.id = id;
        self.add_edges.clear();
        self.remove_edges.clear();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_print_and_parse() {
        let name = TableName(0x3f9c_0a12_d4e5_b671);
        assert_eq!(name.to_string(), "arch_3f9c0a12d4e5b671");
        assert_eq!(TableName::parse("arch_3f9c0a12d4e5b671"), Some(name));
        assert_eq!(TableName::parse("arch_"), None);
        assert_eq!(TableName::parse("arch_xyz"), None);
        assert_eq!(TableName::parse("arch_+1"), None);
        assert_eq!(TableName::parse("arch_00000000000000000"), None);
        assert_eq!(TableName::parse("Position"), None);
    }
}
