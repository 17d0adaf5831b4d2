//! Lending the columns of many tables at once, some to read and some to write: what a
//! typed query iterates over, entity after entity across tables, with every table's
//! slices alive together (`World::lend_tables`). The bookkeeping a write owes is split
//! around the loan: before it, the written columns are stamped with one tick and an open
//! transaction's log gets their old values; after it, `World::settle` marks exactly the
//! rows whose values differ (for a tracked component, compared with a copy taken before)
//! and tells the observers (indexes) of the rows lent to write.
//!
//! Invariants:
//! - A field is lent to write at most once and then not also to read: `lend_tables`
//!   refuses (`ColumnRepeated`) otherwise, so the slices never alias.
//! - Until its `Settle` is paid (`settle_pending`), the observers and the change marks
//!   may be stale: the world keeps it, and pays it at the next loan, a commit or a
//!   rollback, and (the engine, the schedule) when a closure given the world returns, so
//!   a borrower that leaks its query (`mem::forget`) cannot leave them stale for anyone
//!   else. Meanwhile the borrower holds the world (`&mut World`), so no one reads them.
//! - Lending shapes nothing: no row is added, removed or moved, so the entity index stays
//!   true whatever the caller writes.

use super::column::{Column, Values};
use super::error::StorageError;
use super::ids::{Entity, FieldId, TableId};
use super::observe::Written as Rows;
use super::undo::{CellRows, Undo};
use super::world::{Settle, World};

type Result<T> = std::result::Result<T, StorageError>;

/// One field a loan asks for, and whether it is to be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Asked {
    pub field: FieldId,
    pub write: bool,
}

/// A column lent by `lend_tables`.
pub(crate) enum Lent<'w> {
    Read(&'w Column),
    Write(&'w mut Column),
}

/// One table's part of a loan: its entities, and per field asked its column (`None`
/// where the table does not hold the field's component).
pub(crate) struct LentTable<'w> {
    pub entities: &'w [Entity],
    pub columns: Vec<Option<Lent<'w>>>,
}

impl World {
    /// Lends `fields` of each table of `tables` (ids as `matching_tables` gives them,
    /// ascending) all at once, each column to read or to write as asked; what the loan
    /// owes is kept until `settle_pending` (paying what an earlier loan owes first).
    pub(crate) fn lend_tables(&mut self, tables: &[TableId], fields: &[Asked]) -> Result<Vec<LentTable<'_>>> {
        self.settle_pending();
        for (i, asked) in fields.iter().enumerate() {
            self.catalog
                .get(asked.field.component())?
                .field_def(asked.field)?;
            let clash = fields[..i]
                .iter()
                .any(|a| a.field == asked.field && (a.write || asked.write));
            if clash {
                let (component, field) = super::query::names(&self.catalog, asked.field);
                return Err(StorageError::ColumnRepeated { component, field });
            }
        }
        let writes = fields.iter().any(|a| a.write);
        let tick = if writes { self.next_tick() } else { self.tick() };
        let mut settle = Settle {
            tick,
            tables: Vec::new(),
        };
        if writes {
            for &id in tables {
                let Some(table) = self.archetypes.get_mut(id) else {
                    continue;
                };
                let len = table.len();
                let mut written = Vec::new();
                for asked in fields.iter().filter(|a| a.write) {
                    let Some(index) = table.column_index(asked.field) else {
                        continue;
                    };
                    table.mark_column_changed(index, tick);
                    let tracked = table.column_marks(index).is_some();
                    // One copy of the old values: the undo log's, and the compare's too
                    // when the field is tracked (then a second).
                    let mut before = (tracked || self.undo_log.is_some())
                        .then(|| table.columns()[index].copy_range(0..len));
                    if let Some(log) = self.undo_log.as_mut()
                        && len > 0
                        && let Some(old) = if tracked { before.clone() } else { before.take() }
                    {
                        log.push(Undo::Cells {
                            table: id,
                            column: index,
                            rows: CellRows::From(0),
                            old,
                            marks: table.column_marks(index).map(|m| m.copy_range(0, len)),
                        });
                    }
                    written.push((asked.field, index, before.filter(|_| tracked)));
                }
                if !written.is_empty() {
                    settle.tables.push((id, len, written));
                }
            }
        }
        if !settle.tables.is_empty() {
            self.pending = Some(settle);
        }
        let mut lent = Vec::with_capacity(tables.len());
        for table in self.archetypes.tables_mut(tables) {
            let indexes: Vec<Option<usize>> = fields.iter().map(|a| table.column_index(a.field)).collect();
            let (entities, cells) = table.entities_and_columns_mut();
            let mut columns: Vec<Option<Lent<'_>>> = fields.iter().map(|_| None).collect();
            for (index, cell) in cells.iter_mut().enumerate() {
                let askers: Vec<usize> = (0..fields.len()).filter(|&k| indexes[k] == Some(index)).collect();
                match askers.as_slice() {
                    [] => {}
                    [k] if fields[*k].write => columns[*k] = Some(Lent::Write(cell)),
                    readers => {
                        let column: &Column = cell;
                        for &k in readers {
                            columns[k] = Some(Lent::Read(column));
                        }
                    }
                }
            }
            lent.push(LentTable { entities, columns });
        }
        Ok(lent)
    }

    /// Pays what the last loan owes, once it has ended: marks the rows whose values the
    /// loan changed, in the tracked fields it lent to write, and tells the observers.
    pub(crate) fn settle_pending(&mut self) {
        let Some(settle) = self.pending.take() else {
            return;
        };
        let tick = settle.tick;
        for (id, len, written) in settle.tables {
            let Some(table) = self.archetypes.get_mut(id) else {
                continue;
            };
            let mut fields = Vec::with_capacity(written.len());
            for (field, index, before) in written {
                fields.push(field);
                let Some(old) = before else { continue };
                let differs = old.differs(0, &Values::Part(&table.columns()[index], 0..len));
                if let Some(marks) = table.column_marks_mut(index) {
                    marks.mark_where(0, &differs, tick);
                }
            }
            if let Some(table) = self.archetypes.get(id) {
                fields.retain(|&f| self.observers.watches(f));
                if !fields.is_empty() {
                    self.observers.written(table, Rows::Span(0, len), &fields);
                }
            }
        }
    }
}
