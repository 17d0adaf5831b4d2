//! The columnar door: pick the archetype tables matching a set of required and excluded
//! components, then borrow each table's entity ids and typed column slices (`&[f32]`,
//! `&mut [f32]` …) so a loop over them runs at native ECS speed. The SQL executor works
//! through the same door. Borrowed slices cannot change a table's length, so whatever a
//! caller does with them, the tables stay consistent with the entity index.
//! When a component's changes are tracked, a column lent to write marks every row it
//! lends as changed (the door cannot see what the caller writes; one lent to read only,
//! as a declared Rust system's view lends it, marks nothing); `TableMut::write` compares
//! the values it is given and marks only the rows that really change.

use std::ops::{Deref, Range};

use super::column::{Column, ColumnSliceMut, ColumnValue, Values};
use super::component::Components;
use super::error::StorageError;
use super::ids::{ComponentId, Entity, FieldId, TableId};
use super::observe::{Observers, Written};
use super::table::Table;
use super::undo::{CellRows, Undo, UndoLog};
use super::value::FieldType;
use super::world::World;

type Result<T> = std::result::Result<T, StorageError>;

/// Which tables a query visits: those holding every `with` component and no `without` one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    with: Vec<ComponentId>,
    without: Vec<ComponentId>,
}

impl Filter {
    /// A filter that every table matches.
    pub fn new() -> Filter {
        Filter::default()
    }

    /// The components a table must hold.
    pub(crate) fn required(&self) -> &[ComponentId] {
        &self.with
    }

    /// Also requires `component`.
    pub fn with(mut self, component: ComponentId) -> Filter {
        self.with.push(component);
        self
    }

    /// Also excludes tables that hold `component`.
    pub fn without(mut self, component: ComponentId) -> Filter {
        self.without.push(component);
        self
    }

    /// True when `table` holds every required component and no excluded one.
    pub fn matches(&self, table: &Table) -> bool {
        self.with.iter().all(|&c| table.contains(c)) && !self.without.iter().any(|&c| table.contains(c))
    }
}

impl World {
    /// The ids of the tables `filter` selects, in id order, decided from the component sets
    /// alone without reading a row. Includes empty tables; callers skip them as they like.
    ///
    /// A sparse component's values are in a table of its own (`ComponentDef::sparse_table`):
    /// a filter that requires it alone selects that table; naming it beside other
    /// components is refused (`StorageError::SparseInFilter`).
    pub fn matching_tables(&self, filter: &Filter) -> Result<Vec<TableId>> {
        for &c in filter.with.iter().chain(&filter.without) {
            let def = self.catalog.get(c)?;
            if let Some(table) = def.sparse_table() {
                if filter.with == [c] && filter.without.is_empty() {
                    return Ok(vec![table]);
                }
                return Err(StorageError::SparseInFilter(def.name().to_owned()));
            }
        }
        // Start from the required component held by the fewest tables.
        let narrowest = filter
            .with
            .iter()
            .map(|&c| self.archetypes.with_component(c))
            .min_by_key(|tables| tables.len());
        let candidates: Vec<TableId> = match narrowest {
            Some(tables) => tables.to_vec(),
            None => self.tables().map(Table::id).collect(),
        };
        Ok(candidates
            .into_iter()
            .filter(|&id| self.archetypes.get(id).is_some_and(|t| filter.matches(t)))
            .collect())
    }

    /// Read access to one table, with typed column slices.
    #[inline]
    pub fn table(&self, id: TableId) -> Option<TableRef<'_>> {
        Some(TableRef {
            table: self.archetypes.get(id)?,
            catalog: &self.catalog,
        })
    }

    /// Write access to one table's values (never its shape). Columns borrowed mutably are
    /// stamped with a new tick, as any write is; when the borrow ends, the world's
    /// observers watching them (indexes…) are told of the rows it could have changed.
    pub fn table_mut(&mut self, id: TableId) -> Option<TableMut<'_>> {
        self.archetypes.get(id)?;
        let tick = self.next_tick();
        self.table_mut_at(id, tick)
    }

    /// `table_mut`, stamping the tick `tick` the caller took (`next_tick`): a statement
    /// that writes several tables, or one table in parts, writes them all at its tick.
    #[inline]
    pub(crate) fn table_mut_at(&mut self, id: TableId, tick: u64) -> Option<TableMut<'_>> {
        Some(TableMut {
            table: self.archetypes.get_mut(id)?,
            catalog: &self.catalog,
            observers: &mut self.observers,
            undo: self.undo_log.as_mut(),
            tick,
            written: Vec::new(),
            rows: None,
        })
    }
}

/// A table borrowed for reading. Derefs to `Table` for its ids, name and columns.
#[derive(Clone, Copy)]
pub struct TableRef<'w> {
    table: &'w Table,
    catalog: &'w Components,
}

impl<'w> Deref for TableRef<'w> {
    type Target = Table;
    fn deref(&self) -> &Table {
        self.table
    }
}

impl<'w> TableRef<'w> {
    /// The component's and field's names of `field`, for messages.
    pub(crate) fn field_names(&self, field: FieldId) -> (String, String) {
        names(self.catalog, field)
    }

    /// The table itself, for as long as the world is borrowed.
    pub fn get(&self) -> &'w Table {
        self.table
    }

    /// `field`'s values, one per row, as `&[T]`.
    pub fn slice<T: ColumnValue>(&self, field: FieldId) -> Result<&'w [T]> {
        let index = column_of(self.table, self.catalog, field)?;
        let column = &self.table.columns()[index];
        column
            .as_slice()
            .ok_or_else(|| type_error::<T>(self.catalog, field, column))
    }
}

impl World {
    /// A lender of `fields`' whole columns in table after table, each stamped `tick`
    /// (`ColumnLender`); refused when a field names no field of a component, or is named
    /// twice.
    pub(crate) fn column_lender<'f>(
        &mut self,
        fields: &'f [FieldId],
        tick: u64,
    ) -> Result<ColumnLender<'_, 'f>> {
        for (i, &field) in fields.iter().enumerate() {
            self.catalog.get(field.component())?.field_def(field)?;
            if fields[..i].contains(&field) {
                let (component, field) = names(&self.catalog, field);
                return Err(StorageError::ColumnRepeated { component, field });
            }
        }
        Ok(ColumnLender {
            watched: fields
                .iter()
                .copied()
                .filter(|&f| self.observers.watches(f))
                .collect(),
            archetypes: &mut self.archetypes,
            catalog: &self.catalog,
            observers: &mut self.observers,
            undo: self.undo_log.as_mut(),
            fields,
            tick,
            noted: None,
        })
    }

    /// `field`'s whole column rewritten in place by `each`, in each of `tables` in turn
    /// (`known`: where the column is in each, as an earlier run found it: `column_at`),
    /// stamped `tick`, its old values logged in an open transaction and the observers
    /// watching the field told of each table once `each` returns: what `ColumnLender`
    /// does for one field, in one loop. A world of many small archetypes pays this per table for
    /// each UPDATE of one field (a system's), so nothing is set up per table that one
    /// field does not need, and an empty table is not touched. A table whose field is
    /// tracked for changes is not written but listed in `Rewritten::tracked` (only rows
    /// whose values differ may be marked). Stops at the first table that is not there
    /// (`Rewritten::vanished`) or whose column `each` refuses (gives false:
    /// `Rewritten::refused`), or that lacks the field (the error): the tables before it
    /// stay written, their old values logged, as `ColumnLender`'s do.
    pub(crate) fn rewrite_column(
        &mut self,
        field: FieldId,
        tables: &[TableId],
        known: Option<&[u32]>,
        tick: u64,
        mut each: impl FnMut(ColumnSliceMut<'_>) -> bool,
    ) -> Result<Rewritten> {
        self.catalog.get(field.component())?.field_def(field)?;
        let watched = self.observers.watches(field);
        let mut done = Rewritten::default();
        for (i, &table) in tables.iter().enumerate() {
            let Some(t) = self.archetypes.get_mut(table) else {
                done.vanished = Some(table);
                return Ok(done);
            };
            let known = known.and_then(|c| c.get(i)).copied();
            let index = column_at(t, &self.catalog, field, known)?;
            if t.column_marks(index).is_some() {
                done.tracked.push(table);
                continue;
            }
            let len = t.len();
            if len == 0 {
                continue;
            }
            if let Some(log) = self.undo_log.as_mut() {
                log.push(whole_column_undo(table, t, index, len));
            }
            if let Some(column) = t.column_mut(index, tick)
                && !each(ColumnSliceMut::of(column))
            {
                done.refused = Some(table);
                return Ok(done);
            }
            if watched {
                self.observers
                    .written(t, Written::Span(0, len), std::slice::from_ref(&field));
            }
            done.rows += len;
        }
        Ok(done)
    }
}

/// What `World::rewrite_column` did.
#[derive(Debug, Default)]
pub(crate) struct Rewritten {
    /// The rows written.
    pub(crate) rows: usize,
    /// The tables not written, their field tracked for changes, in order.
    pub(crate) tracked: Vec<TableId>,
    /// The table whose column the writer refused, where it stopped.
    pub(crate) refused: Option<TableId>,
    /// The table the world does not hold (a stale list), where it stopped.
    pub(crate) vanished: Option<TableId>,
}

/// A world lent for rewriting some fields' columns, whole, in table after table (a
/// compound UPDATE of many small tables, `v = v * 2`): each table's columns are stamped,
/// noted for the observers and their old values logged in an open transaction, as
/// `TableMut` does for what it lends, but which observers watch the fields and whether a
/// transaction is open are asked once for all the tables, here. A table's columns are
/// all lent or none is. The observers hear of a table once the next one is lent or the
/// lender is dropped, after its values were written, in one call for all its fields.
pub(crate) struct ColumnLender<'w, 'f> {
    archetypes: &'w mut super::archetypes::Archetypes,
    catalog: &'w Components,
    observers: &'w mut Observers,
    undo: Option<&'w mut UndoLog<World>>,
    fields: &'f [FieldId],
    /// Those of `fields` an observer watches.
    watched: Vec<FieldId>,
    tick: u64,
    /// The table lent last and its rows, when an observer watches a field.
    noted: Option<(TableId, usize)>,
}

/// What `ColumnLender::lend` did with one table.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Lend {
    /// Lent every field's column, of `rows` rows (none for an empty table, which
    /// nothing stamps, logs or notes).
    Lent { rows: usize },
    /// A field's changes are tracked in this table (only rows whose values differ may
    /// be marked, which a lent column cannot tell): nothing was lent; write through
    /// `TableMut::write_values`.
    Tracked,
    /// No table has this id.
    NoTable,
}

impl ColumnLender<'_, '_> {
    /// Lends each field's whole column of `table` to `each`, in the order of the fields
    /// (with the field's position among them), to rewrite in place.
    #[inline]
    pub(crate) fn lend(
        &mut self,
        table: TableId,
        mut each: impl FnMut(usize, ColumnSliceMut<'_>),
    ) -> Result<Lend> {
        self.settle();
        let Some(t) = self.archetypes.get_mut(table) else {
            return Ok(Lend::NoTable);
        };
        // Where each field's column is: on the stack for a few fields (most UPDATEs).
        let (mut few, mut many) = ([0usize; 4], Vec::new());
        let columns: &mut [usize] = match self.fields.len() {
            n if n <= few.len() => &mut few[..n],
            n => {
                many.resize(n, 0);
                &mut many
            }
        };
        for (k, &field) in self.fields.iter().enumerate() {
            columns[k] = column_at(t, self.catalog, field, None)?;
        }
        if columns.iter().any(|&c| t.column_marks(c).is_some()) {
            return Ok(Lend::Tracked);
        }
        let len = t.len();
        if len > 0 {
            if let Some(log) = self.undo.as_deref_mut() {
                for &index in columns.iter() {
                    log.push(whole_column_undo(table, t, index, len));
                }
            }
            if !self.watched.is_empty() {
                self.noted = Some((table, len));
            }
        }
        for (k, &index) in columns.iter().enumerate() {
            let column = if len > 0 {
                t.column_mut(index, self.tick)
            } else {
                t.entities_and_columns_mut().1.get_mut(index).map(|c| &mut **c)
            };
            if let Some(column) = column {
                each(k, ColumnSliceMut::of(column));
            }
        }
        Ok(Lend::Lent { rows: len })
    }

    /// Tells the observers of the table lent last.
    #[inline]
    fn settle(&mut self) {
        if let Some((id, len)) = self.noted.take()
            && let Some(t) = self.archetypes.get(id)
        {
            self.observers.written(t, Written::Span(0, len), &self.watched);
        }
    }
}

impl Drop for ColumnLender<'_, '_> {
    fn drop(&mut self) {
        self.settle();
    }
}

/// A table borrowed for writing values in place.
pub struct TableMut<'w> {
    table: &'w mut Table,
    catalog: &'w Components,
    observers: &'w mut Observers,
    /// The open transaction's log, which keeps the old values of every column lent.
    undo: Option<&'w mut UndoLog<World>>,
    tick: u64,
    /// Watched fields borrowed for writing, and the rows they may have changed (`None`:
    /// all of them); reported to the observers on drop.
    written: Vec<FieldId>,
    rows: Option<Reached>,
}

/// The rows a borrowed table's writes reached so far.
enum Reached {
    Span(Range<usize>),
    /// Exactly these, ascending: what writes that picked their rows reached.
    Picked(Vec<u32>),
}

impl Reached {
    /// Both `self`'s rows and `other`'s: the picked rows of both, or a span holding both.
    fn with(self, other: Reached) -> Reached {
        match (self, other) {
            (Reached::Picked(a), Reached::Picked(b)) if a == b => Reached::Picked(a),
            (Reached::Picked(a), Reached::Picked(b)) => {
                let mut all = a;
                all.extend(b);
                all.sort_unstable();
                all.dedup();
                Reached::Picked(all)
            }
            (a, b) => {
                let (a, b) = (a.span(), b.span());
                Reached::Span(a.start.min(b.start)..a.end.max(b.end))
            }
        }
    }

    fn span(&self) -> Range<usize> {
        match self {
            Reached::Span(r) => r.clone(),
            Reached::Picked(p) => match (p.first(), p.last()) {
                (Some(&a), Some(&b)) => a as usize..b as usize + 1,
                _ => 0..0,
            },
        }
    }
}

impl Drop for TableMut<'_> {
    fn drop(&mut self) {
        if !self.written.is_empty() {
            let all = 0..self.table.len();
            let rows = match &self.rows {
                Some(Reached::Span(r)) => Written::from(r),
                Some(Reached::Picked(p)) => Written::Picked(p),
                None => Written::from(&all),
            };
            self.observers.written(self.table, rows, &self.written);
        }
    }
}

impl<'w> Deref for TableMut<'w> {
    type Target = Table;
    fn deref(&self) -> &Table {
        self.table
    }
}

impl<'w> TableMut<'w> {
    /// `field`'s values, one per row, as `&[T]`.
    pub fn slice<T: ColumnValue>(&self, field: FieldId) -> Result<&[T]> {
        let index = column_of(self.table, self.catalog, field)?;
        let column = &self.table.columns()[index];
        column
            .as_slice()
            .ok_or_else(|| type_error::<T>(self.catalog, field, column))
    }

    /// The component's and field's names of `field`, for messages.
    pub(crate) fn field_names(&self, field: FieldId) -> (String, String) {
        names(self.catalog, field)
    }

    /// `field`'s values, one per row, as `&mut [T]`.
    pub fn slice_mut<T: ColumnValue>(&mut self, field: FieldId) -> Result<&mut [T]> {
        let [column] = self.columns([field])?;
        column.into_mut()
    }

    /// Rows `rows` lie in the table.
    fn check_rows(&self, rows: &Range<usize>) -> Result<()> {
        let len = self.table.len();
        if rows.start > rows.end || rows.end > len {
            return Err(StorageError::RowRange {
                start: rows.start,
                end: rows.end,
                len,
            });
        }
        Ok(())
    }

    /// `field`'s values in rows `rows` only, as `&mut [T]`: what a writer that knows which
    /// rows it changes asks for, so that indexes re-file only those.
    pub fn rows_mut<T: ColumnValue>(&mut self, field: FieldId, rows: Range<usize>) -> Result<&mut [T]> {
        self.check_rows(&rows)?;
        let [column] = self.borrow([field], rows.clone(), None)?;
        Ok(&mut column.into_mut()?[rows])
    }

    /// Writes `values` (a column of `field`'s type) over the rows from `first` on, one
    /// value per row. Unlike a slice lent by `rows_mut`, which marks every row it lends as
    /// changed when the field's changes are tracked (`World::track_changes`), this marks
    /// only the rows whose value differs from the one it replaces.
    pub fn write(&mut self, field: FieldId, first: usize, values: Column) -> Result<()> {
        self.write_values(
            field,
            first..first.saturating_add(values.len()),
            None,
            Values::Own(values),
        )
    }

    /// Puts `values` in place of `field`'s whole column (its type, one value per row),
    /// keeping the old column itself as the open transaction's undo record: every row
    /// rewritten with no copy of the new values into the column, nor of the old ones into
    /// the log.
    /// `known`: where the column is, as the statement's table list kept it (`column_at`).
    pub(crate) fn replace_column(
        &mut self,
        field: FieldId,
        known: Option<u32>,
        values: Column,
    ) -> Result<()> {
        let index = match known {
            Some(_) => column_at(self.table, self.catalog, field, known)?,
            None => column_of(self.table, self.catalog, field)?,
        };
        let len = self.table.len();
        self.check_type(index, field, values.field_type())?;
        if values.len() != len {
            return Err(StorageError::RowRange {
                start: 0,
                end: values.len(),
                len,
            });
        }
        let table_id = self.table.id();
        let Some(column) = self.table.column_mut(index, self.tick) else {
            return Err(StorageError::RowRange {
                start: 0,
                end: len,
                len,
            });
        };
        let old = std::mem::replace(column, values);
        let old_marks = self.mark_changes(index, |table, marks, tick| {
            marks.mark_where(
                0,
                &old.differs(0, &Values::Part(&table.columns()[index], 0..len)),
                tick,
            );
        });
        if let Some(log) = self.undo.as_deref_mut() {
            log.push(Undo::Cells {
                table: table_id,
                column: index,
                rows: CellRows::From(0),
                old,
                marks: old_marks,
            });
        }
        self.note_written(field, 0..len);
        Ok(())
    }

    /// Writes `values` (of `field`'s type) over rows `rows`, or over only `picked` of them
    /// (counted from `rows.start`, ascending; one value each), keeping the old values for
    /// an open transaction. A tracked field's rows are marked only where the value
    /// differs from the one it replaces. A column of values for every row of the table
    /// becomes `replace_column`; rows of another column are copied in place.
    pub(crate) fn write_values(
        &mut self,
        field: FieldId,
        rows: Range<usize>,
        picked: Option<&[u32]>,
        values: Values<'_>,
    ) -> Result<()> {
        let len = self.table.len();
        let count = picked.map_or(rows.len(), <[u32]>::len);
        let last = picked.and_then(|p| p.last()).map_or(0, |&r| r as usize + 1);
        if rows.start > rows.end || rows.end > len || last > rows.len() || values.len() != count {
            return Err(StorageError::RowRange {
                start: rows.start,
                end: rows.start.saturating_add(values.len()),
                len,
            });
        }
        if let Values::Part(column, part) = &values
            && (part.start > part.end || part.end > column.len())
        {
            return Err(StorageError::RowRange {
                start: part.start,
                end: part.end,
                len: column.len(),
            });
        }
        let values = match values {
            Values::Own(values) if picked.is_none() && rows.start == 0 && rows.end == len => {
                return self.replace_column(field, None, values);
            }
            values => values,
        };
        let index = column_of(self.table, self.catalog, field)?;
        self.check_type(index, field, values.field_type())?;
        let at: Option<Vec<u32>> = picked.map(|p| p.iter().map(|&r| r + rows.start as u32).collect());
        if let Some(log) = self.undo.as_deref_mut() {
            let column = &self.table.columns()[index];
            let marks = self.table.column_marks(index);
            let (cells, old, old_marks) = match &at {
                None => (
                    CellRows::From(rows.start),
                    column.copy_range(rows.clone()),
                    marks.map(|m| m.copy_range(rows.start, rows.len())),
                ),
                Some(at) => (
                    CellRows::Picked(at.clone()),
                    column.copy_rows(at),
                    marks.map(|m| m.copy_rows(at)),
                ),
            };
            log.push(Undo::Cells {
                table: self.table.id(),
                column: index,
                rows: cells,
                old,
                marks: old_marks,
            });
        }
        let tick = self.tick;
        let table = &mut *self.table;
        if table.column_marks(index).is_some() {
            match &at {
                None => {
                    let differs = table.columns()[index].differs(rows.start, &values);
                    if let Some(marks) = table.column_marks_mut(index) {
                        marks.mark_where(rows.start, &differs, tick);
                    }
                }
                Some(at) => {
                    let mut changed = Vec::new();
                    table.columns()[index].each_change_at(at, &values, |r| changed.push(r));
                    if let Some(marks) = table.column_marks_mut(index) {
                        changed.into_iter().for_each(|row| marks.set(row, tick));
                    }
                }
            }
        }
        let Some(column) = table.column_mut(index, tick) else {
            return Err(StorageError::RowRange {
                start: rows.start,
                end: rows.end,
                len,
            });
        };
        match &at {
            None => column.write_range(rows.start, values),
            Some(at) => column.write_rows(at, values),
        }
        match at {
            Some(at) => self.note_picked(field, at),
            None => self.note_written(field, rows),
        }
        Ok(())
    }

    /// Refuses values of another type than column `index` (`field`'s) holds.
    fn check_type(&self, index: usize, field: FieldId, requested: FieldType) -> Result<()> {
        let stored = self.table.columns()[index].field_type();
        if requested == stored {
            return Ok(());
        }
        let (component, field) = names(self.catalog, field);
        Err(StorageError::ColumnType {
            component,
            field,
            stored,
            requested,
        })
    }

    /// Marks the changed rows of column `index` through `mark` (given the table as
    /// written, the column's marks and the tick), when the field is tracked; returns the
    /// marks as they were, for the undo log (only while a transaction is open).
    fn mark_changes(
        &mut self,
        index: usize,
        mark: impl FnOnce(&Table, &mut super::marks::MarkList, u64),
    ) -> Option<Vec<u64>> {
        // Taken out for the while, so that the table can be read meanwhile.
        let mut marks = std::mem::take(self.table.column_marks_mut(index)?);
        let old = self.undo.is_some().then(|| marks.ticks().to_vec());
        mark(self.table, &mut marks, self.tick);
        if let Some(list) = self.table.column_marks_mut(index) {
            *list = marks;
        }
        old
    }

    /// Tells the observers watching `field`, when the borrow ends, that rows `rows` may
    /// have new values.
    fn note_written(&mut self, field: FieldId, rows: Range<usize>) {
        self.note(field, Reached::Span(rows));
    }

    /// `note_written` for the rows `picked` (ascending) alone.
    fn note_picked(&mut self, field: FieldId, picked: Vec<u32>) {
        self.note(field, Reached::Picked(picked));
    }

    fn note(&mut self, field: FieldId, rows: Reached) {
        if self.observers.watches(field) {
            if !self.written.contains(&field) {
                self.written.push(field);
            }
            self.rows = Some(match self.rows.take() {
                Some(r) => r.with(rows),
                None => rows,
            });
        }
    }

    /// For an UPDATE that writes `fields` (each named once) in place, on several threads:
    /// the table's entities and columns, those of `fields` lent to write (in `fields`'
    /// order) and the others to read. Nothing is stamped or logged here: once the
    /// writers are done, `written_in_place` does it for the rows they wrote. `None` when
    /// a field's changes are tracked (only rows whose values differ may be marked, which
    /// writing in place cannot tell): the caller writes through `write_values`.
    pub(crate) fn lend_columns(&mut self, fields: &[FieldId]) -> Result<Option<LentColumns<'_>>> {
        let mut indexes = Vec::with_capacity(fields.len());
        for (i, &field) in fields.iter().enumerate() {
            if fields[..i].contains(&field) {
                let (component, field) = names(self.catalog, field);
                return Err(StorageError::ColumnRepeated { component, field });
            }
            indexes.push(column_of(self.table, self.catalog, field)?);
        }
        if indexes.iter().any(|&i| self.table.column_marks(i).is_some()) {
            return Ok(None);
        }
        let keeps_old = self.undo.is_some();
        let (entities, columns) = self.table.entities_and_columns_mut();
        let mut write: Vec<Option<&mut Column>> = (0..fields.len()).map(|_| None).collect();
        let mut read = Vec::with_capacity(columns.len());
        for (index, column) in columns.iter_mut().enumerate() {
            match indexes.iter().position(|&i| i == index) {
                Some(k) => {
                    write[k] = Some(&mut **column);
                    read.push(None);
                }
                None => read.push(Some(&**column)),
            }
        }
        Ok(Some(LentColumns {
            entities,
            read,
            write: write.into_iter().flatten().collect(),
            keeps_old,
        }))
    }

    /// After the writers of `lend_columns` wrote rows `rows` (the span of those they
    /// wrote) of `fields`: stamps those columns, notes the rows for the observers, and
    /// gives an open transaction the old values the writers kept (`LentColumns::keeps_old`),
    /// each `(k, first, picked, old)`: the `k`th field's values from row `first` on, or at
    /// the table's rows `picked`, in the order they were written.
    pub(crate) fn written_in_place(
        &mut self,
        fields: &[FieldId],
        rows: Range<usize>,
        old: Vec<(usize, usize, Option<Vec<u32>>, Column)>,
    ) -> Result<()> {
        let mut indexes = Vec::with_capacity(fields.len());
        for &field in fields {
            let index = column_of(self.table, self.catalog, field)?;
            self.table.mark_column_changed(index, self.tick);
            self.note_written(field, rows.clone());
            indexes.push(index);
        }
        if let Some(log) = self.undo.as_deref_mut() {
            for (k, first, picked, values) in old {
                let Some(&column) = indexes.get(k) else {
                    continue;
                };
                log.push(Undo::Cells {
                    table: self.table.id(),
                    column,
                    rows: picked.map_or(CellRows::From(first), CellRows::Picked),
                    old: values,
                    marks: None,
                });
            }
        }
        Ok(())
    }

    /// Several columns at once, each to be read or written as its own type: the shape of a
    /// system (`x += vx`). Each field may be named once.
    pub fn columns<const N: usize>(&mut self, fields: [FieldId; N]) -> Result<[ColumnMut<'_>; N]> {
        let all = 0..self.table.len();
        self.borrow(fields, all, None)
    }

    /// `columns`, those whose `read_only` is `None` lent to write; the others (`Some`: the
    /// system that reads them, for the error) lent to read only: neither marked nor
    /// logged, and refused by `into_mut` (`StorageError::Undeclared`).
    pub(crate) fn columns_for<'s, const N: usize>(
        &'s mut self,
        fields: [FieldId; N],
        read_only: [Option<&'s str>; N],
    ) -> Result<[ColumnMut<'s>; N]> {
        let all = 0..self.table.len();
        self.borrow(fields, all, Some(read_only))
    }

    /// `columns`, noting that only `rows` may change (of the columns not read only).
    fn borrow<'s, const N: usize>(
        &'s mut self,
        fields: [FieldId; N],
        rows: Range<usize>,
        read_only: Option<[Option<&'s str>; N]>,
    ) -> Result<[ColumnMut<'s>; N]> {
        let read_only = read_only.unwrap_or([None; N]);
        let mut indexes = [0; N];
        for (slot, &field) in indexes.iter_mut().zip(&fields) {
            *slot = column_of(self.table, self.catalog, field)?;
        }
        // Distinct fields have distinct columns, so this is the only way the borrow below
        // can overlap.
        if let Some(i) = (0..N).find(|&i| fields[..i].contains(&fields[i])) {
            let (component, field) = names(self.catalog, fields[i]);
            return Err(StorageError::ColumnRepeated { component, field });
        }
        for (&index, only_read) in indexes.iter().zip(&read_only) {
            if only_read.is_some() {
                continue;
            }
            self.table.mark_column_changed(index, self.tick);
            if let Some(log) = self.undo.as_deref_mut() {
                let column = &self.table.columns()[index];
                let marks = self.table.column_marks(index);
                log.push(Undo::Cells {
                    table: self.table.id(),
                    column: index,
                    rows: CellRows::From(rows.start),
                    old: column.copy_range(rows.clone()),
                    marks: marks.map(|m| m.copy_range(rows.start, rows.len())),
                });
            }
        }
        for (&f, only_read) in fields.iter().zip(&read_only) {
            if only_read.is_none() {
                self.note_written(f, rows.clone());
            }
        }
        let (catalog, tick) = (self.catalog, self.tick);
        let Some((columns, marks)) = self.table.columns_and_marks_mut(indexes) else {
            unreachable!("indexes are in range and distinct, as checked above");
        };
        let mut marks = marks.into_iter();
        let mut i = 0;
        Ok(columns.map(|column| {
            let field = fields[i];
            i += 1;
            let marks = marks.next().and_then(Option::as_mut);
            let reader = read_only[i - 1];
            ColumnMut {
                column,
                field,
                catalog,
                marks: marks.filter(|_| reader.is_none()).map(|m| Lent {
                    marks: m,
                    rows: rows.clone(),
                    tick,
                }),
                read_only: reader,
            }
        }))
    }
}

/// A table's columns as `TableMut::lend_columns` lends them.
pub(crate) struct LentColumns<'t> {
    /// Row `i` holds entity `entities[i]`.
    pub entities: &'t [Entity],
    /// Every column by its index in the table, `None` for those lent to write.
    pub read: Vec<Option<&'t Column>>,
    /// The columns of the fields asked for, in their order.
    pub write: Vec<&'t mut Column>,
    /// A transaction is open: the writers keep the old values of what they write, for
    /// `written_in_place` to log.
    pub keeps_old: bool,
}

/// One column of a `TableMut::columns` borrow, not yet given its Rust type.
pub struct ColumnMut<'a> {
    column: &'a mut Column,
    field: FieldId,
    catalog: &'a Components,
    /// The field's change marks, when tracked: taking the column as `&mut` marks the rows
    /// lent as changed (the door cannot know which it will write).
    marks: Option<Lent<'a>>,
    /// Lent to read only, to this system (`SystemView`): `into_mut` refuses.
    read_only: Option<&'a str>,
}

/// The change marks of a column lent for writing, and the rows lent.
struct Lent<'a> {
    marks: &'a mut super::marks::MarkList,
    rows: Range<usize>,
    tick: u64,
}

impl<'a> ColumnMut<'a> {
    /// The column as `&[T]`, for the columns a loop only reads.
    pub fn into_ref<T: ColumnValue>(self) -> Result<&'a [T]> {
        let (catalog, field) = (self.catalog, self.field);
        let column: &'a Column = self.column;
        column
            .as_slice()
            .ok_or_else(|| type_error::<T>(catalog, field, column))
    }

    /// The column as `&mut [T]`.
    pub fn into_mut<T: ColumnValue>(self) -> Result<&'a mut [T]> {
        let ColumnMut {
            column,
            field,
            catalog,
            marks,
            read_only,
        } = self;
        if let Some(system) = read_only {
            let (component, field) = names(catalog, field);
            return Err(StorageError::Undeclared {
                system: system.to_owned(),
                component,
                field,
                how: "writes",
            });
        }
        let stored = column.field_type();
        if column.as_mut_slice::<T>().is_some()
            && let Some(lent) = marks
        {
            lent.marks.set_range(lent.rows, lent.tick);
        }
        column.as_mut_slice().ok_or_else(|| {
            let (component, field) = names(catalog, field);
            StorageError::ColumnType {
                component,
                field,
                stored,
                requested: T::TYPE,
            }
        })
    }
}

/// `field`'s column index in `table`, or why there is none.
fn column_of(table: &Table, catalog: &Components, field: FieldId) -> Result<usize> {
    if let Some(index) = table.column_index(field) {
        return Ok(index);
    }
    let def = catalog.get(field.component())?;
    def.field_def(field)?;
    table
        .column_index(field)
        .ok_or_else(|| not_in_table(table, catalog, field))
}

/// Where `field`'s column is in `t`: at `known`, the position an earlier run found (kept
/// with the statement's table list, which is dropped whenever table ids may change
/// hands), when it is one of `t`'s; else looked up.
#[inline]
fn column_at(t: &Table, catalog: &Components, field: FieldId, known: Option<u32>) -> Result<usize> {
    t.column_index_known(field, known)
        .ok_or_else(|| not_in_table(t, catalog, field))
}

/// The undo record of column `index` of `t` (table `table`) before it is rewritten whole:
/// its `len` values, and no marks (neither whole-column writer writes a tracked column).
fn whole_column_undo(table: TableId, t: &Table, index: usize, len: usize) -> Undo<World> {
    Undo::Cells {
        table,
        column: index,
        rows: CellRows::From(0),
        old: t.columns()[index].copy_range(0..len),
        marks: None,
    }
}

/// The error for `field`, which `table` has no column of.
#[cold]
fn not_in_table(table: &Table, catalog: &Components, field: FieldId) -> StorageError {
    let (component, field) = names(catalog, field);
    StorageError::ColumnNotInTable {
        table: table.name().to_string(),
        component,
        field,
    }
}

fn type_error<T: ColumnValue>(catalog: &Components, field: FieldId, column: &Column) -> StorageError {
    let (component, field) = names(catalog, field);
    StorageError::ColumnType {
        component,
        field,
        stored: column.field_type(),
        requested: T::TYPE,
    }
}

/// The component's and field's names, for messages; the caller has checked they exist.
pub(super) fn names(catalog: &Components, field: FieldId) -> (String, String) {
    match catalog.get(field.component()) {
        Ok(def) => (
            def.name().to_owned(),
            def.fields()
                .get(field.index())
                .map_or_else(|| format!("#{}", field.index()), |f| f.name().to_owned()),
        ),
        Err(_) => (field.component().to_string(), format!("#{}", field.index())),
    }
}
