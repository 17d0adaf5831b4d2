//! An UPDATE's batches: the runs of rows it reads (`Runs`; `plain_direct`, the shape whose
//! batches are read straight from the tables), a batch's new values computed and checked
//! (`stage_update`), held until every batch succeeded (`Pending`) and written
//! (`write_staged`); every write of a statement is stamped with one tick (`OneTick`).

use std::ops::Range;

use crate::exec::error::ExecError;
use crate::exec::eval::{EvalCtx, Selection, eval, select_rows};
use crate::exec::scan::{Home, TableRows};
use crate::exec::write::values::{Result, to_column};
use crate::location::Location;
use crate::plan::{EntityScan, ScanColumn, UpdatePlan};
use crate::storage::{Column, FieldId, TableId, Values, World};
use crate::vector::Batch;

/// New values for some rows of one table, ready to be written.
pub(super) struct Staged {
    table: TableId,
    /// The rows of the table the batch covered; `selection` counts from its start.
    pub(super) rows: Range<usize>,
    pub(super) selection: Selection,
    pub(super) columns: Vec<(FieldId, Column)>,
}

impl Staged {
    /// New values for every row of `table` (`len` rows), a column for each field.
    pub(super) fn whole(table: TableId, len: usize, columns: Vec<(FieldId, Column)>) -> Staged {
        Staged {
            table,
            rows: 0..len,
            selection: Selection::All,
            columns,
        }
    }
}

/// An UPDATE whose writes cannot fail (written batch by batch) of an archetype
/// component, reading only archetype fields and ids, none optional: what packs of small
/// tables and writing in place on several threads both read batches of directly.
///
/// Read from the plan's route (`plain_scan` found it on the plan's first run).
pub(super) fn plain_direct(plan: &UpdatePlan, home: Home) -> bool {
    super::route(plan).plain && matches!(home, Home::Dense)
}

/// `plain_direct` but the home: found once, for the plan's route.
pub(super) fn plain_scan(plan: &UpdatePlan, scan: &EntityScan) -> bool {
    plan.cannot_fail
        && !scan.reads_sparse
        && scan.optional.is_empty()
        && scan
            .columns
            .iter()
            .all(|(_, c)| matches!(c, ScanColumn::Field(_) | ScanColumn::Id))
}

/// The one tick all of a statement's writes are stamped with, taken (`World::next_tick`)
/// at its first write: a statement that writes nothing leaves the world's tick as it was.
#[derive(Default)]
pub(super) struct OneTick(Option<u64>);

impl OneTick {
    pub(super) fn take(&mut self, world: &mut World) -> u64 {
        *self.0.get_or_insert_with(|| world.next_tick())
    }

    /// The tick `take` gives, without taking it yet.
    pub(super) fn peek(&self, world: &World) -> u64 {
        self.0.unwrap_or(world.tick() + 1)
    }
}

/// Batches to read: a table and which of its rows.
pub(super) type Runs = Vec<(TableId, TableRows)>;

/// The batches an UPDATE computed but has not written yet, in row order. A batch that
/// continues the open one (the same table, the next rows, every row of both selected) is
/// joined onto it, so that batches which together rewrite a whole table replace its
/// columns outright (the old columns become the undo record) rather than being copied in
/// while the old values are copied out to the log.
#[derive(Default)]
pub(super) struct Pending {
    closed: Vec<Staged>,
    open: Option<Staged>,
}

impl Pending {
    /// Adds `s`, the next batch of a table of `table_len` rows. The first join makes room
    /// at once for every row left in the table, so that the columns grow without copies;
    /// that room is charged to `budget` (16 bytes a value, as staged values are) first.
    pub(super) fn push(
        &mut self,
        s: Staged,
        table_len: usize,
        budget: &crate::exec::Budget<'_>,
        at: Location,
    ) -> Result<()> {
        if let Some(open) = &mut self.open
            && Self::continues(open, &s)
        {
            for ((_, joined), (_, mut next)) in open.columns.iter_mut().zip(s.columns) {
                let room = table_len.saturating_sub(open.rows.start + joined.len());
                if joined.capacity() < joined.len() + room {
                    budget.charge(room.saturating_mul(16), at)?;
                    joined.reserve(room);
                }
                joined.append(&mut next);
            }
            open.rows.end = s.rows.end;
            return Ok(());
        }
        if let Some(earlier) = self.open.replace(s) {
            self.closed.push(earlier);
        }
        Ok(())
    }

    /// Whether `next` takes up where `open` ends, selecting every row, with values of the
    /// same fields and types.
    fn continues(open: &Staged, next: &Staged) -> bool {
        open.table == next.table
            && open.rows.end == next.rows.start
            && matches!(open.selection, Selection::All)
            && matches!(next.selection, Selection::All)
            && open.columns.len() == next.columns.len()
            && open.columns.iter().zip(&next.columns).all(|((f, a), (g, b))| {
                f == g && a.field_type() == b.field_type() && a.len() == open.rows.len()
            })
            && next.columns.iter().all(|(_, c)| c.len() == next.rows.len())
    }

    /// Writes every batch, in order.
    pub(super) fn write(self, world: &mut World, tick: &mut OneTick, at: Location) -> Result<()> {
        for s in self.closed.into_iter().chain(self.open) {
            let tick = tick.take(world);
            write_staged(world, s, tick, at)?;
        }
        Ok(())
    }
}

/// The new values of one batch's selected rows; `None` when WHERE selects none.
pub(super) fn stage_update(
    plan: &UpdatePlan,
    table: TableId,
    rows: Range<usize>,
    batch: &Batch<'_>,
    cx: &EvalCtx<'_>,
) -> Result<Option<Staged>> {
    let selection = match &plan.select.filter {
        Some(f) => select_rows(f, batch, cx)?,
        None => Selection::All,
    };
    let gathered = match &selection {
        Selection::None => return Ok(None),
        Selection::All => None,
        Selection::Rows(r) => Some(batch.gather(r)),
    };
    let input = gathered.as_ref().unwrap_or(batch);
    let mut columns = Vec::with_capacity(plan.assignments.len());
    for a in &plan.assignments {
        let v = eval(&a.value, input, cx)?.into_vector(a.value.ty, input.len);
        columns.push((a.field, to_column(v, a.ty, &a.name, a.value.at)?));
    }
    Ok(Some(Staged {
        table,
        rows,
        selection,
        columns,
    }))
}

pub(super) fn write_staged(world: &mut World, s: Staged, tick: u64, at: Location) -> Result<()> {
    let Some(mut table) = world.table_mut_at(s.table, tick) else {
        return Err(ExecError::internal(at, "a table vanished during UPDATE"));
    };
    for (field, values) in s.columns {
        write_column(&mut table, field, values, s.rows.clone(), &s.selection)
            .map_err(|e| ExecError::storage(at, e))?;
    }
    Ok(())
}

fn write_column(
    table: &mut crate::storage::TableMut<'_>,
    field: FieldId,
    values: Column,
    rows: Range<usize>,
    selection: &Selection,
) -> std::result::Result<(), crate::storage::StorageError> {
    match selection {
        Selection::All => table.write_values(field, rows, None, Values::Own(values)),
        // Writing only the picked rows keeps a transaction's undo log to what is written.
        Selection::Rows(picked) => table.write_values(field, rows, Some(picked), Values::Own(values)),
        Selection::None => Ok(()),
    }
}
