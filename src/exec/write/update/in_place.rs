//! A plain UPDATE of a large table, written in place on several threads: which tables
//! qualify (`tables_for_threads`: expressions that read the same on any thread, fields not
//! tracked for changes, whole runs), and their columns lent and cut where each thread's
//! stretch begins, each thread writing its own rows (`update_in_place`). Every row's new
//! values depend on that row alone, so the table ends as one thread would leave it.

use std::borrow::Cow;
use std::ops::Range;

use super::batch::{OneTick, Runs, plain_direct, stage_update};
use crate::exec::error::{ExecError, ExecErrorKind};
use crate::exec::eval::{Selection, select_rows};
use crate::exec::scan::{Home, MORSEL_ROWS, TableRows};
use crate::exec::write::values::Result;
use crate::exec::{Run, Split, compound, parallel};
use crate::plan::{EntityScan, ScanColumn, UpdatePlan};
use crate::storage::{Column, ColumnSliceMut, Entity, FieldId, TableId, Value, World};
use crate::vector::{Batch, Data, Datum, Vector};

/// A table's runs, cut into the stretches its threads take (`parallel::split`).
type Stretches = Vec<Vec<Range<usize>>>;

/// The large tables a plain UPDATE writes in place (`update_in_place`), each with its runs
/// cut into stretches, one per thread, and the runs left to write batch by batch. A table
/// qualifies in an UPDATE whose writes cannot fail, of expressions that read the same on
/// any thread (`parallel::pure`), over archetype fields and ids only, when the fields it
/// writes are not tracked for changes and it is read in whole runs: of enough rows for
/// two threads or more, or, when every assignment is a compound one (`compound.rs`),
/// of more rows than one morsel's (one stretch, on the statement's thread). With `every`,
/// a table of any size qualifies (one stretch at least): for a write beside others.
pub(super) fn tables_for_threads(
    plan: &UpdatePlan,
    scan: &EntityScan,
    home: Home,
    split: Split,
    world: &World,
    runs: Runs,
    every: bool,
) -> (Vec<(TableId, Stretches)>, Runs) {
    let rows = |group: &[(TableId, TableRows)]| group.iter().map(|(_, r)| r.len()).sum::<usize>();
    let threads =
        |group: &[(TableId, TableRows)]| split.threads > 1 && rows(group) >= split.min_rows.saturating_mul(2);
    // Most statements (small tables, many of them) stop here, having looked at their
    // tables' sizes only, not at their expressions.
    let big_enough = || {
        runs.chunk_by(|a, b| a.0 == b.0)
            .any(|g| threads(g) || rows(g) > MORSEL_ROWS)
    };
    let plain = || plain_direct(plan, home) && super::values_are_pure(plan);
    if !(every || big_enough()) || !plain() {
        return (Vec::new(), runs);
    }
    let compound = compound::compounds(plan, scan).is_some();
    // One morsel's table is written as one batch, which replaces its columns outright:
    // in place gains from two morsels on.
    let enough =
        |group: &[(TableId, TableRows)]| every || threads(group) || (compound && rows(group) > MORSEL_ROWS);
    if !runs.chunk_by(|a, b| a.0 == b.0).any(enough) {
        return (Vec::new(), runs);
    }
    let (mut big, mut rest) = (Vec::new(), Vec::new());
    for group in runs.chunk_by(|a, b| a.0 == b.0) {
        let table = group[0].0;
        if !enough(group) {
            rest.extend(group.iter().cloned());
            continue;
        }
        let ranges: Option<Vec<Range<usize>>> = group
            .iter()
            .map(|(_, rows)| match rows {
                TableRows::Run(r) => Some(r.clone()),
                TableRows::Picked(_) => None,
            })
            .collect();
        let untracked = world.table(table).is_some_and(|t| {
            plan.assignments.iter().all(|a| {
                t.column_index(a.field)
                    .is_some_and(|c| t.get().column_marks(c).is_none())
            })
        });
        let stretches = ranges.filter(|_| untracked).and_then(|r| {
            let split = threads(group)
                .then(|| parallel::split(&r, Range::len, split))
                .flatten();
            match split {
                Some(parts) => Some(parts.into_iter().map(<[_]>::to_vec).collect()),
                None => (compound || every).then(|| vec![r]),
            }
        });
        match stretches {
            Some(stretches) => big.push((table, stretches)),
            None => rest.extend(group.iter().cloned()),
        }
    }
    (big, rest)
}

/// Where a column of a batch of a table lent for writing comes from.
#[derive(Clone, Copy)]
enum Source {
    Id,
    /// The `k`th field written.
    Written(usize),
    /// The table's column of this index.
    Read(usize),
    Missing,
}

/// One large table's share of a plain UPDATE (`tables_for_threads`), written in place:
/// the columns it writes are lent (`TableMut::lend_columns`) and cut where the threads'
/// stretches begin, and each thread computes its stretch's batches and writes them into
/// its own rows, batch after batch. Every row's new values depend on that row alone
/// (`parallel::pure`), so the table ends as one thread would leave it. Gives how many rows
/// were updated.
#[allow(clippy::too_many_arguments)]
pub(super) fn update_in_place(
    plan: &UpdatePlan,
    scan: &EntityScan,
    world: &mut World,
    run: Run<'_>,
    table_id: TableId,
    stretches: &[Vec<Range<usize>>],
    tick: &mut OneTick,
    stoppable: bool,
) -> Result<usize> {
    let at = run.at;
    let vanished = || ExecError::internal(at, "a table vanished during UPDATE");
    let fields: Vec<FieldId> = plan.assignments.iter().map(|a| a.field).collect();
    let mut table = world
        .table_mut_at(table_id, tick.peek(world))
        .ok_or_else(vanished)?;
    let sources = sources(scan, &fields, |f| table.column_index(f));
    let lent = table
        .lend_columns(&fields)
        .map_err(|e| ExecError::storage(at, e))?
        .ok_or_else(|| ExecError::internal(at, "a field tracked for changes was lent to write in place"))?;
    let reads = Reads {
        entities: lent.entities,
        columns: &lent.read,
        keeps_old: lent.keeps_old,
    };
    let done = write_stretches(
        plan, scan, run, table_id, &sources, reads, lent.write, stretches, stoppable,
    )?;
    let Some(span) = done.span else {
        return match done.stopped {
            true => Err(ExecError::new(at, ExecErrorKind::Interrupted)),
            false => Ok(0),
        };
    };
    table
        .written_in_place(&fields, span, done.old)
        .map_err(|e| ExecError::storage(at, e))?;
    drop(table);
    tick.take(world);
    match done.stopped {
        true => Err(ExecError::new(at, ExecErrorKind::Interrupted)),
        false => Ok(done.affected),
    }
}

/// Where each of the scan's columns comes from in a table whose columns `index` finds.
fn sources(
    scan: &EntityScan,
    fields: &[FieldId],
    index: impl Fn(FieldId) -> Option<usize>,
) -> Vec<(usize, Source)> {
    scan.columns
        .iter()
        .map(|&(slot, column)| {
            let source = match column {
                ScanColumn::Field(f) => match fields.iter().position(|&w| w == f) {
                    Some(k) => Source::Written(k),
                    None => index(f).map_or(Source::Missing, Source::Read),
                },
                _ => Source::Id,
            };
            (slot, source)
        })
        .collect()
}

/// What a stretch reads of its table besides the columns it writes: the ids, the
/// columns (`None` where written), and whether to keep the old values of the rows it
/// writes (for an open transaction's undo log).
#[derive(Clone, Copy)]
struct Reads<'t> {
    entities: &'t [Entity],
    columns: &'t [Option<&'t Column>],
    keeps_old: bool,
}

/// Computes and writes `stretches` of a table into `write` (its written columns, in the
/// assignments' order), cut where each stretch begins, one thread a stretch; gives what
/// they wrote, in row order.
#[allow(clippy::too_many_arguments)]
fn write_stretches(
    plan: &UpdatePlan,
    scan: &EntityScan,
    run: Run<'_>,
    table_id: TableId,
    sources: &[(usize, Source)],
    reads: Reads<'_>,
    write: Vec<&mut Column>,
    stretches: &[Vec<Range<usize>>],
    stoppable: bool,
) -> Result<InPlace> {
    let (at, budget) = (run.at, run.budget);
    // Each stretch's piece of every written column: the rows from its first run's start
    // to the next stretch's (the first from row 0).
    let mut rest: Vec<ColumnSliceMut<'_>> = write.into_iter().map(ColumnSliceMut::of).collect();
    let mut items = Vec::with_capacity(stretches.len());
    let mut base = 0;
    for (k, stretch) in stretches.iter().enumerate() {
        let end = stretches
            .get(k + 1)
            .and_then(|s| s.first())
            .map_or(usize::MAX, |r| r.start);
        let (mine, next): (Vec<_>, Vec<_>) = rest
            .into_iter()
            .map(|piece| piece.split_at(end.saturating_sub(base)))
            .unzip();
        items.push((stretch.as_slice(), base, mine));
        rest = next;
        base = end;
    }
    let (entities, read, keeps_old) = (reads.entities, reads.columns, reads.keeps_old);
    let (params, clock, width) = (run.params, run.clock, plan.select.width);
    // Every assignment `f = f op e`: each batch computes `e` and writes `f op= e` in
    // place (`compound.rs`); the batch then never reads a written field.
    let compounds = compound::compounds(plan, scan);
    let done = parallel::run(items, at, |(stretch, base, mut pieces)| -> Result<InPlace> {
        let pure = parallel::PureEval::default();
        let cx = pure.cx(params, clock);
        let mut done = InPlace::default();
        // A compound UPDATE's batches are a few morsels long (`COMPOUND_ROWS`).
        let batches = match &compounds {
            Some(_) => join_runs(stretch, COMPOUND_ROWS),
            None => stretch.to_vec(),
        };
        for rows in &batches {
            // Stopped, a stretch keeps what it wrote, with its old values: the statement
            // then fails and its savepoint puts them back.
            if stoppable && budget.check(at).is_err() {
                done.stopped = true;
                break;
            }
            let offset = rows.start - base;
            let batch_of = |pieces| lent_batch(sources, rows, offset, width, entities, read, pieces);
            // The old values of the rows about to be written, for an open transaction
            // (its undo log names the table's rows).
            let keep_old =
                |done: &mut InPlace, k: usize, piece: &ColumnSliceMut<'_>, picked: Option<&[u32]>, count| {
                    if keeps_old {
                        let old = piece.read(offset, picked, count);
                        let at = picked.map(|p| p.iter().map(|&r| r + rows.start as u32).collect());
                        done.old.push((k, rows.start, at, old));
                    }
                };
            if let Some(compounds) = &compounds {
                // No written field is read: the batch holds the others only.
                let batch = batch_of(None);
                let selection = match &plan.select.filter {
                    Some(f) => select_rows(f, &batch, &cx)?,
                    None => Selection::All,
                };
                let gathered = match &selection {
                    Selection::None => continue,
                    Selection::All => None,
                    Selection::Rows(r) => Some(batch.gather(r)),
                };
                let input = gathered.as_ref().unwrap_or(&batch);
                let picked = match &selection {
                    Selection::Rows(r) => Some(r.as_slice()),
                    _ => None,
                };
                // Every value is computed and checked before any is written: one that
                // fails leaves the batch (and, failing in the first, the stretch) unwritten.
                let mut values = Vec::with_capacity(compounds.len());
                for (op, e) in compounds.iter() {
                    values.push((op, compound::compute(e, input, &cx, at)?));
                }
                for (k, ((op, e), piece)) in values.iter().zip(&mut pieces).enumerate() {
                    keep_old(&mut done, k, piece, picked, input.len);
                    compound::apply(*op, piece, offset, picked, input.len, e, at)?;
                }
                done.wrote(rows, picked);
                continue;
            }
            let staged = stage_update(plan, table_id, rows.clone(), &batch_of(Some(&pieces)), &cx)?;
            let Some(s) = staged else {
                continue;
            };
            let picked = match &s.selection {
                Selection::Rows(r) => Some(r.as_slice()),
                _ => None,
            };
            let count = picked.map_or(rows.len(), <[u32]>::len);
            done.wrote(rows, picked);
            for (k, ((_, values), piece)) in s.columns.into_iter().zip(&mut pieces).enumerate() {
                keep_old(&mut done, k, piece, picked, count);
                if !piece.write(offset, picked, values) {
                    return Err(ExecError::internal(
                        at,
                        "an UPDATE's value is not of its field's type",
                    ));
                }
            }
        }
        Ok(done)
    })?;
    // The stretches' rows in order: the span they wrote, and the old values, for the
    // observers and an open transaction.
    let mut all = InPlace::default();
    for part in done {
        let part = part?;
        all.stopped |= part.stopped;
        all.affected += part.affected;
        if let Some(s) = part.span {
            all.span = Some(all.span.map_or(s.clone(), |t| t.start..s.end));
        }
        all.old.extend(part.old);
    }
    Ok(all)
}

/// The most rows a batch of a compound UPDATE written in place takes (`update_in_place`):
/// each of its `f op= e` loops then walks two long streams of memory, which the hardware
/// prefetchers keep ahead of, rather than restarting them every morsel. On the AMD machine
/// of docs/performance.md the one-thread UPDATE of 1M rows went from 1.21-1.37 ms to
/// 0.52-0.56 ms (the columnar door's time); a value that is computed (not read where it
/// lies) takes a vector of this many rows.
const COMPOUND_ROWS: usize = 8 * MORSEL_ROWS;

/// `runs` (ascending, not overlapping) with adjacent ones joined, each at most `most` rows
/// long unless it was already.
fn join_runs(runs: &[Range<usize>], most: usize) -> Vec<Range<usize>> {
    let mut joined: Vec<Range<usize>> = Vec::with_capacity(runs.len());
    for run in runs {
        match joined.last_mut() {
            Some(last) if last.end == run.start && last.len() + run.len() <= most => last.end = run.end,
            _ => joined.push(run.clone()),
        }
    }
    joined
}

/// The batch of rows `rows` of a table lent for writing (`update_in_place`): its ids, the
/// columns it reads, and the written fields' pieces (from `offset` in them) when given
/// (a compound UPDATE's batch reads none).
fn lent_batch<'b>(
    sources: &[(usize, Source)],
    rows: &Range<usize>,
    offset: usize,
    width: usize,
    entities: &[Entity],
    read: &[Option<&'b Column>],
    pieces: Option<&'b [ColumnSliceMut<'_>]>,
) -> Batch<'b> {
    let mut batch = Batch::new(rows.len(), width);
    for &(slot, source) in sources {
        let datum = match source {
            Source::Id => {
                let ids = entities[rows.clone()].iter().map(|&e| Some(e)).collect();
                Datum::Vector(Vector::from_data(Data::Entity(Cow::Owned(ids)), rows.len()))
            }
            Source::Written(k) => match pieces.and_then(|p| p.get(k)) {
                Some(piece) => Datum::Vector(Vector::from_piece(piece, offset..offset + rows.len())),
                None => continue,
            },
            Source::Read(i) => match read.get(i).copied().flatten() {
                Some(c) => Datum::Vector(Vector::from_column(c, rows.clone())),
                None => Datum::Scalar(Value::Null),
            },
            Source::Missing => Datum::Scalar(Value::Null),
        };
        if let Some(s) = batch.slots.get_mut(slot) {
            *s = Some(datum);
        }
    }
    batch
}

/// What one stretch of `update_in_place` wrote: how many rows, the span from the first
/// to the last, and (in a transaction) the old values, per field and batch, with the
/// batch's first row and the table's rows it picked.
#[derive(Default)]
struct InPlace {
    affected: usize,
    span: Option<Range<usize>>,
    old: Vec<(usize, usize, Option<Vec<u32>>, Column)>,
    /// Stopped by an interrupt before its last batch.
    stopped: bool,
}

impl InPlace {
    /// Counts a batch's writes: of its rows `rows`, or of only `picked` of them (counted
    /// from `rows.start`, ascending).
    fn wrote(&mut self, rows: &Range<usize>, picked: Option<&[u32]>) {
        self.affected += picked.map_or(rows.len(), <[u32]>::len);
        let first = rows.start + picked.and_then(|p| p.first()).map_or(0, |&r| r as usize);
        let last = picked
            .and_then(|p| p.last())
            .map_or(rows.end, |&r| rows.start + r as usize + 1);
        self.span = Some(self.span.as_ref().map_or(first..last, |s| s.start..last));
    }
}

/// One table's share of an UPDATE written beside others (`update_beside`): written in
/// place as `update_in_place` writes it, through the world shared with the statements
/// beside it, its written columns lent by `ColumnCell::lend_beside`. Nothing is stamped:
/// `stamp_beside` does it under the write lock. Gives how many rows were written, and the
/// span from the first to the last.
///
/// # Safety
/// The caller holds `plan`'s written fields alone until it returns (no reference to
/// their columns exists or is made meanwhile, but these), and no transaction is open.
pub(super) unsafe fn write_table_beside(
    plan: &UpdatePlan,
    scan: &EntityScan,
    world: &World,
    run: Run<'_>,
    table_id: TableId,
    stretches: &[Vec<Range<usize>>],
) -> Result<Option<(usize, Range<usize>)>> {
    let at = run.at;
    let table = world
        .table(table_id)
        .ok_or_else(|| ExecError::internal(at, "a table vanished during UPDATE"))?;
    let table = table.get();
    let fields: Vec<FieldId> = plan.assignments.iter().map(|a| a.field).collect();
    let written: Vec<usize> = fields
        .iter()
        .map(|&f| table.column_index(f))
        .collect::<Option<_>>()
        .ok_or_else(|| ExecError::internal(at, "an UPDATE's table lacks a field it writes"))?;
    if (1..written.len()).any(|i| written[..i].contains(&written[i])) {
        return Err(ExecError::internal(
            at,
            "an UPDATE beside others writes a field twice",
        ));
    }
    let cells = table.columns();
    let sources = sources(scan, &fields, |f| table.column_index(f));
    // Only the columns the plan reads are looked at: another write beside this one may
    // hold any other column of the table. (The plan reads none it writes.)
    let reads = |i: usize| {
        sources
            .iter()
            .any(|&(_, s)| matches!(s, Source::Read(r) if r == i))
    };
    let columns: Vec<Option<&Column>> = (cells.iter().enumerate())
        .map(|(i, c)| (reads(i) && !written.contains(&i)).then(|| &**c))
        .collect();
    // SAFETY: the caller holds these fields alone; each column is lent once (the fields
    // are distinct, so are their columns), and `columns` lends none of them. What is known
    // of them (zones, filters) was asked for by this statement's scan before, and nothing
    // asks again while they are lent.
    let write: Vec<&mut Column> = written
        .iter()
        .map(|&i| unsafe { cells[i].lend_beside() })
        .collect();
    let reads = Reads {
        entities: table.entities(),
        columns: &columns,
        keeps_old: false,
    };
    let done = write_stretches(
        plan, scan, run, table_id, &sources, reads, write, stretches, false,
    )?;
    Ok(done.span.map(|span| (done.affected, span)))
}
