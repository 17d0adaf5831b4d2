//! One archetype table: the entities that hold exactly one set of components, stored as one
//! dense typed column per field (struct of arrays), plus the cached edges to the tables one
//! component away. Finding or creating tables is `archetypes.rs`'s job; keeping the entity
//! index in step with row moves is `world/`'s.
//!
//! `Table` and the records its rows' moves leave behind are defined here, with what reads
//! a table; what changes one is split by concern: `rows.rs` (a row pushed, written,
//! swap-removed, moved to another table, put back; rows appended or truncated),
//! `batch.rs` (many rows removed or moved to another table at once, column by column, and
//! put back exactly) and `tracking.rs` (the change marks kept beside the columns of
//! tracked components, one per row).

mod batch;
mod rows;
mod tracking;

use std::fmt;

use hashbrown::HashMap;

use super::cell::ColumnCell;
use super::column::{Column, Stamp};
use super::component::Components;
use super::ids::{ComponentId, Entity, FieldId, TableId, TableRow};
use super::marks::MarkList;

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
    columns: Vec<ColumnCell>,
    entities: Vec<Entity>,
    /// The world tick at which each column's values were last written, and at which rows
    /// were last added or removed: what indexes and change detection will look at to know
    /// what to refresh.
    column_changed_at: Vec<Stamp>,
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
                columns.extend(def.fields().iter().map(|f| ColumnCell::new(Column::new(f.ty()))));
            }
        }
        column_start.push(columns.len());
        let mut table = Table {
            id,
            name,
            set_hash,
            column_start: column_start.into(),
            column_changed_at: (0..columns.len()).map(|_| Stamp::default()).collect(),
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
    #[inline]
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
    #[inline]
    pub fn columns(&self) -> &[ColumnCell] {
        &self.columns
    }

    /// The entities and every column, the columns mutably: an UPDATE lends some columns
    /// to write and the rest to read (`TableMut::lend_columns`). Stamps no tick.
    pub(crate) fn entities_and_columns_mut(&mut self) -> (&[Entity], &mut [ColumnCell]) {
        (&self.entities, &mut self.columns)
    }

    /// Where `field`'s column is in `columns()`, if this table has it.
    #[inline]
    pub fn column_index(&self, field: FieldId) -> Option<usize> {
        let i = self.components.binary_search(&field.component()).ok()?;
        let column = self.column_start[i] + field.index();
        (column < self.column_start[i + 1]).then_some(column)
    }

    /// `column_index`, taking `known` (where an earlier lookup found the column, kept
    /// with a statement's table list, which is dropped whenever table ids may change
    /// hands) when it is one of this table's positions: a statement run again over the
    /// same tables looks nothing up.
    #[inline]
    pub fn column_index_known(&self, field: FieldId, known: Option<u32>) -> Option<usize> {
        let index = match known.map(|c| c as usize) {
            Some(c) if c < self.columns.len() => Some(c),
            _ => self.column_index(field),
        };
        debug_assert_eq!(index, self.column_index(field));
        index
    }

    /// The column at `at` (`column_index`'s answer).
    #[inline]
    pub fn column_at(&self, at: usize) -> Option<&Column> {
        self.columns.get(at).map(|c| &**c)
    }

    /// The column of `field`, when the table's entities have its component.
    pub fn column(&self, field: FieldId) -> Option<&Column> {
        self.columns.get(self.column_index(field)?).map(|c| &**c)
    }

    /// The cell of `field`'s column, to drop what is known of it without lending the
    /// column to write.
    pub(crate) fn column_cell_mut(&mut self, field: FieldId) -> Option<&mut ColumnCell> {
        let i = self.column_index(field)?;
        self.columns.get_mut(i)
    }

    /// The columns of one component's fields, in declaration order.
    pub fn component_columns(&self, component: ComponentId) -> Option<&[ColumnCell]> {
        let i = self.components.binary_search(&component).ok()?;
        Some(&self.columns[self.column_start[i]..self.column_start[i + 1]])
    }

    /// The world tick at which `field`'s values were last written.
    pub fn column_changed_at(&self, field: FieldId) -> Option<u64> {
        Some(self.column_changed_at[self.column_index(field)?].get())
    }

    /// The world tick at which rows were last added to or removed from this table.
    pub fn rows_changed_at(&self) -> u64 {
        self.rows_changed_at
    }

    pub(crate) fn mark_column_changed(&mut self, column: usize, tick: u64) {
        if let Some(at) = self.column_changed_at.get_mut(column) {
            at.set(tick);
        }
    }

    /// Stamps `column` as written at `tick` by a write beside others, which holds its
    /// field alone (`ColumnCell`'s invariant).
    pub(crate) fn mark_column_changed_beside(&self, column: usize, tick: u64) {
        if let Some(at) = self.column_changed_at.get(column) {
            at.set_beside(tick);
        }
    }

    fn component_range(&self, position: usize) -> std::ops::Range<usize> {
        self.column_start[position]..self.column_start[position + 1]
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

    #[inline]
    pub(crate) fn column_mut(&mut self, column: usize, tick: u64) -> Option<&mut Column> {
        self.column_changed_at.get_mut(column)?.set(tick);
        self.columns.get_mut(column).map(|c| &mut **c)
    }

    pub(crate) fn renumber(&mut self, id: TableId) {
        self.id = id;
        self.add_edges.clear();
        self.remove_edges.clear();
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
