//! An UPDATE over many small tables (a world of many archetypes): a value the same for
//! every row (`v = v * 2`) applied to each whole table in place (`whole_table_scalars`,
//! `lend_scalars`); a compound one that differs by row (`x = x + vx * delta_time()`)
//! applied per table to copies of its columns, which replace the old ones
//! (`whole_table_compounds`); any other computed a pack of tables to a batch
//! (`stage_pack`, `write_pack`), so that evaluating the expressions costs once per pack,
//! not per table.

use std::ops::Range;

use smallvec::SmallVec;

use super::batch::{OneTick, Runs, Staged, plain_direct, stage_update};
use crate::exec::error::ExecError;
use crate::exec::eval::{Selection, eval_once};
use crate::exec::parallel::PureEval;
use crate::exec::reader::Reader;
use crate::exec::scan::{Home, MORSEL_ROWS, TableRows, table_batch};
use crate::exec::write::values::{Result, reader};
use crate::exec::{Run, compound};
use crate::location::Location;
use crate::plan::{
    ArithOp, Assignment, BoundExpr, BoundKind, EntityScan, ParamValues, ScanColumn, UpdatePlan,
};
use crate::storage::{Column, FieldId, FieldType, Lend, SpareColumns, TableId, Value, Values, World};
use crate::vector::{Batch, Datum, Vector};

/// `v = v * 2` (`scalar_compounds`) over archetype tables the scan reads whole
/// (`whole_tables`), each of one morsel's rows at most and none enough for threads:
/// each table's columns are rewritten in place straight from the scan's table list, with
/// no runs listed, what a world of many small archetypes asks of a system; and `f = f op
/// e` with `e` different by row likewise, a table at a time (`whole_table_compounds`).
/// The list is looked up once: its rows are counted from it, and `most` (outside a
/// transaction: how many rows are never long, `update`'s) refuses more. `most` is `None`
/// inside a transaction, where a statement not of that shape is not counted at all.
/// `stoppable`: as `update_scan`'s.
#[allow(clippy::too_many_arguments)]
pub(super) fn whole_table_scalars(
    plan: &UpdatePlan,
    scan: &EntityScan,
    home: Home,
    world: &mut World,
    run: Run<'_>,
    most: Option<usize>,
    tick: &mut OneTick,
    stoppable: bool,
) -> Result<Whole> {
    let plain = plain_direct(plan, home);
    if !matches!(home, Home::Dense)
        || (!plain && most.is_none())
        || !super::reads_whole(super::route(plan), run)
    {
        return Ok(Whole::Not { rows: None });
    }
    // The cache lends the list without holding the world; for one field, with where
    // its column is in each table, kept between runs.
    let mut cache = run.cache.borrow_mut();
    let (tables, known) = match plan.assignments.as_slice() {
        [a] if plain => cache.columns(world, scan, run.restores, a.field),
        _ => (&*cache.tables(world, scan, run.restores), None),
    };
    let whole = count_rows(tables, world);
    let WholeRows { rows, longest, .. } = whole;
    let not = Ok(Whole::Not { rows: Some(rows) });
    let (split, at) = (run.budget.split(), run.at);
    if !plain
        || most.is_some_and(|most| rows > most)
        || longest > MORSEL_ROWS
        || (split.threads >= 2 && longest >= split.min_rows.saturating_mul(2))
    {
        return not;
    }
    // No row: nothing is evaluated (a system with nothing to do costs the least).
    if rows == 0 {
        return Ok(Whole::Wrote {
            rows,
            affected: 0,
            left: Vec::new(),
        });
    }
    let written = match scalar_compounds(plan, scan, run.params, || reader(world, run))? {
        Some(scalars) => {
            run.budget.check(at)?;
            let tick = tick.take(world);
            Some(lend_scalars(
                world,
                tables,
                known,
                &plan.assignments,
                &scalars,
                tick,
                at,
            )?)
        }
        None => {
            let packs = whole.packs_pay();
            whole_table_compounds(plan, scan, world, run, (tables, known), tick, (stoppable, packs))?
        }
    };
    match written {
        Some((affected, left)) => Ok(Whole::Wrote { rows, affected, left }),
        None => not,
    }
}

/// What `whole_table_scalars` did.
pub(super) enum Whole {
    /// Wrote `affected` of the `rows` its tables hold; `left`: the runs of the tables left
    /// to write through packs (for `lend_scalars`, those whose fields are tracked for
    /// changes; for `whole_table_compounds`, the small ones when packs pay for them).
    Wrote {
        rows: usize,
        affected: usize,
        left: Runs,
    },
    /// Wrote nothing: the statement or a table is not of that shape. `rows`: what its
    /// tables hold, when they were counted (whole tables of a dense component).
    Not { rows: Option<usize> },
}

/// The rows of the archetype tables a scan reads whole (`whole_tables`), the most any of
/// them holds, and how many are small (1 to `SMALL_TABLE` rows) with how many rows.
#[derive(Clone, Copy, Default)]
struct WholeRows {
    rows: usize,
    longest: usize,
    small: usize,
    small_rows: usize,
}

impl WholeRows {
    /// Whether a compound UPDATE's small tables are computed in packs
    /// (`whole_table_compounds`) rather than each in a pass of its own. Measured with
    /// `x = x + v * delta_time()` over 1 to 256 tables of 5 to 80 rows
    /// (docs/performance.md): a pack costs about 340 ns more than one table's pass, and
    /// saves 5 ns to 10 ns a table of 5 to 15 rows, none from about 20 rows. So packs pay
    /// from `PACK_TABLES` small tables averaging fewer than `PACK_ROWS` rows.
    fn packs_pay(&self) -> bool {
        self.small >= PACK_TABLES && self.small_rows < self.small.saturating_mul(PACK_ROWS)
    }
}

/// The fewest small tables packs pay for (`WholeRows::packs_pay`).
const PACK_TABLES: usize = 96;
/// The most rows a small table averages where packs pay (`WholeRows::packs_pay`).
const PACK_ROWS: usize = 16;

/// The rows of `tables`, the most any of them holds, and their small ones.
fn count_rows(tables: &[TableId], world: &World) -> WholeRows {
    let mut whole = WholeRows::default();
    for &t in tables {
        let len = world.table(t).map_or(0, |t| t.len());
        whole.rows += len;
        whole.longest = whole.longest.max(len);
        if (1..=SMALL_TABLE).contains(&len) {
            whole.small += 1;
            whole.small_rows += len;
        }
    }
    whole
}

/// `f = f op e` (`compound.rs`) with `e` different from row to row (`x = x + vx *
/// delta_time()`, a system over a world of many archetypes) over `tables`, whole tables
/// of one morsel's rows at most (`whole_table_scalars`). Each table gets its `e` computed
/// from its columns where they lie and, for each written field, a new column of `old op
/// e` (`compound::append_applied`), built in the room of a column a closed transaction
/// left (`World::take_spare_columns`), which takes the old one's place (an open
/// savepoint keeps the old one as its undo record, and its room comes back as a spare
/// when the savepoint's transaction closes): no batch of new values is made as a vector
/// and converted; a field tracked for changes gets marked the rows whose values differ,
/// as any column replaced whole does. When `packs`
/// (`WholeRows::packs_pay`: many tables of few rows), those of `SMALL_TABLE` rows at
/// most are given back as runs instead, for packs (one evaluation of `e` for many of
/// them costs less than one per table).
/// Gives the rows written and those runs; `None`, having written nothing, for a statement
/// of another shape (a WHERE, `random()` or a subquery in `e`). `stoppable`: the
/// interrupt is looked at before each table, not only before the first.
fn whole_table_compounds(
    plan: &UpdatePlan,
    scan: &EntityScan,
    world: &mut World,
    run: Run<'_>,
    tables: crate::exec::Columns<'_>,
    tick: &mut OneTick,
    (stoppable, packs): (bool, bool),
) -> Result<Option<(usize, Runs)>> {
    if super::route(plan).filter || !super::values_are_pure(plan) {
        return Ok(None);
    }
    let Some(compounds) = compound::compounds(plan, scan) else {
        return Ok(None);
    };
    // The columns written are built in spare columns' room, lent by the world meanwhile.
    let mut spares = world.take_spare_columns();
    let written = write_compounds(
        plan,
        scan,
        compounds,
        world,
        run,
        tables,
        tick,
        (stoppable, packs),
        &mut spares,
    );
    world.keep_spare_columns(spares);
    written.map(Some)
}

/// `whole_table_compounds` of a statement of that shape (`compounds`), each new column
/// built in `spares`' room where it has some.
#[allow(clippy::too_many_arguments)]
fn write_compounds(
    plan: &UpdatePlan,
    scan: &EntityScan,
    compounds: compound::Compounds<'_>,
    world: &mut World,
    run: Run<'_>,
    (tables, known): crate::exec::Columns<'_>,
    tick: &mut OneTick,
    (stoppable, packs): (bool, bool),
    spares: &mut SpareColumns,
) -> Result<(usize, Runs)> {
    let at = run.at;
    let (mut affected, mut rest) = (0, Vec::new());
    // The values are pure (`values_are_pure`): no subquery, no `random()`, no value of an
    // outer query; nothing but parameters and the clock to read, the same for every table.
    let pure = PureEval::default();
    let cx = pure.cx(run.params, run.clock);
    let mut scales = compound::scales(plan.assignments.len());
    for (i, &table) in tables.iter().enumerate() {
        // Where the field written is in this table, as the table list kept it (kept for
        // an UPDATE of one field only).
        let known = known
            .filter(|_| plan.assignments.len() == 1)
            .and_then(|k| k.get(i))
            .copied();
        let Some(t) = world.table(table) else {
            return Err(ExecError::internal(at, "a table vanished during UPDATE"));
        };
        let (t, len) = (t.get(), t.len());
        if len == 0 {
            continue;
        }
        if packs && len <= SMALL_TABLE {
            rest.push((table, TableRows::Run(0..len)));
            continue;
        }
        // Once it wrote, a direct UPDATE runs to its end, unless it can undo.
        if affected == 0 || stoppable {
            run.budget.check(at)?;
        }
        // Every new column is built before any is written: each assignment's `e` is
        // computed and checked, its column built and `e` dropped, one after another. One
        // entry for each assignment: most UPDATEs have one or two, kept on the stack.
        let new = {
            // Made only when some `e` is not read from a column.
            let batch = std::cell::OnceCell::new();
            let mut columns: SmallVec<[(FieldId, Column); 2]> = SmallVec::new();
            for (((op, e, form), a), scale) in compounds.parts().zip(&plan.assignments).zip(&mut scales) {
                let value = match compound::from_table(e, form, scan, t, len, (&cx, scale), at) {
                    Some(value) => value?,
                    None => {
                        let batch = batch.get_or_init(|| {
                            let rows = TableRows::Run(0..len);
                            table_batch(scan, world, t, plan.select.width, &rows, run.changes_since())
                        });
                        compound::compute(e, batch, &cx, at)?
                    }
                };
                let room = |ty, len| spares.take(ty, len);
                columns.push((
                    a.field,
                    compound::new_column(op, &value, a.field, known, t, len, room, at)?,
                ));
            }
            columns
        };
        let tick = tick.take(world);
        let Some(mut t) = world.table_mut_at(table, tick) else {
            return Err(ExecError::internal(at, "a table vanished during UPDATE"));
        };
        // Each a whole column, in the old one's place.
        for (field, column) in new {
            t.replace_column(field, known, column)
                .map_err(|e| ExecError::storage(at, e))?;
        }
        affected += len;
    }
    Ok((affected, rest))
}

/// `field op= value` for each assignment and its value (`scalar_compounds`) over the whole
/// of each table of `tables`, in place: one field by `World::rewrite_column` (`known`:
/// where its column is in each table, as `TableCache::columns` kept it), several through
/// one `ColumnLender`. Gives the rows written and the runs of the tables whose fields are
/// tracked for changes, which are not written here (packs write them, marking only the
/// rows whose values differ).
pub(super) fn lend_scalars(
    world: &mut World,
    tables: &[TableId],
    known: Option<&[u32]>,
    assignments: &[Assignment],
    scalars: &[(ArithOp, compound::Scalar)],
    tick: u64,
    at: Location,
) -> Result<(usize, Runs)> {
    if let ([a], &[(op, value)]) = (assignments, scalars) {
        // One field, the most of UPDATEs: each table's column straight to the kernel.
        let done = world
            .rewrite_column(a.field, tables, known, tick, |mut column| {
                compound::apply_scalar(op, &mut column, value)
            })
            .map_err(|e| ExecError::storage(at, e))?;
        if done.refused.is_some() {
            return Err(compound::unfit(at));
        }
        if done.vanished.is_some() {
            return Err(ExecError::internal(at, "a table vanished during UPDATE"));
        }
        return Ok((done.rows, tracked_runs(world, done.tracked)));
    }
    let fields: Vec<FieldId> = assignments.iter().map(|a| a.field).collect();
    let mut lender = world
        .column_lender(&fields, tick)
        .map_err(|e| ExecError::storage(at, e))?;
    let (mut affected, mut tracked, mut failed) = (0, Vec::new(), None);
    for &table in tables {
        // Every field of a table is checked before any is lent: all are written or none.
        // The error is moved only when there is one (an `ExecError` is large).
        let lent = lender.lend(table, |k, mut column| {
            if failed.is_none()
                && let Some(&(op, value)) = scalars.get(k)
                && !compound::apply_scalar(op, &mut column, value)
            {
                failed = Some(compound::unfit(at));
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        match lent.map_err(|e| ExecError::storage(at, e))? {
            Lend::Lent { rows } => affected += rows,
            Lend::Tracked => tracked.push(table),
            Lend::NoTable => return Err(ExecError::internal(at, "a table vanished during UPDATE")),
        }
    }
    drop(lender);
    Ok((affected, tracked_runs(world, tracked)))
}

/// The runs `lend_scalars` gives back: each of `tracked`'s tables whole, the empty ones
/// left out.
fn tracked_runs(world: &World, tracked: Vec<TableId>) -> Runs {
    tracked
        .into_iter()
        .filter_map(|t| {
            let len = world.table(t)?.len();
            (len > 0).then_some((t, TableRows::Run(0..len)))
        })
        .collect()
}

/// The value of each compound assignment (`compound.rs`) of `plan`, when every one is the
/// same for every row (`BoundExpr::same_every_row`: `v = v * 2`, `x = x + delta_time()`)
/// and the UPDATE has no WHERE: each is then computed once, here, by the reader `read`
/// makes.
pub(super) fn scalar_compounds<'w>(
    plan: &UpdatePlan,
    scan: &EntityScan,
    params: &ParamValues,
    read: impl FnOnce() -> Reader<'w>,
) -> Result<Option<Scalars>> {
    let route = super::route(plan);
    if route.filter || !route.all_same {
        return Ok(None);
    }
    let Some(compounds) = compound::compounds(plan, scan) else {
        return Ok(None);
    };
    // A constant or a parameter (`v = v * 2`, `v = v * ?1`) is taken as it is, as
    // `eval_once` would take it; a reader is made only for anything else.
    fn plain<'a>(e: &'a BoundExpr, params: &'a ParamValues) -> Option<&'a Value> {
        match &e.kind {
            BoundKind::Const(v) => Some(v),
            BoundKind::Param { param, value } => Some(params.get(param).unwrap_or(value)),
            _ => None,
        }
    }
    let mut scalars = Scalars::new();
    for ((op, e), a) in compounds.iter().zip(&plan.assignments) {
        let Some(value) = plain(e, params) else {
            break;
        };
        scalars.push((op, compound::scalar(value, a.ty, e.at)?));
    }
    if scalars.len() == plan.assignments.len() {
        return Ok(Some(scalars));
    }
    scalars.clear();
    let read = read();
    let cx = read.eval();
    for ((op, e), a) in compounds.iter().zip(&plan.assignments) {
        scalars.push((op, compound::scalar(&eval_once(e, &cx)?, a.ty, e.at)?));
    }
    Ok(Some(scalars))
}

/// Each compound assignment's operator and value the same for every row
/// (`scalar_compounds`): most UPDATEs have one or two, kept on the stack.
pub(super) type Scalars = SmallVec<[(ArithOp, compound::Scalar); 2]>;

/// Tables of at most this many rows are read in packs (`pack_small_tables`), those of a
/// compound UPDATE only when packs pay (`WholeRows::packs_pay`).
const SMALL_TABLE: usize = 256;

/// Whether a scan's run is a whole small table, to be read in a pack with others.
pub(super) fn is_small_table(rows: &TableRows) -> bool {
    matches!(rows, TableRows::Run(r) if r.start == 0 && r.len() <= SMALL_TABLE)
}

/// The packs `small` (whole small tables, `is_small_table`) is read in: up to
/// `MORSEL_ROWS` rows a pack, each read as one batch (`stage_pack`). Given as ranges of
/// `small`, in order.
pub(super) fn pack_small_tables(small: &[(TableId, TableRows)]) -> Vec<Range<usize>> {
    let mut packs = Vec::new();
    let (mut start, mut rows) = (0, 0);
    for (i, (_, run)) in small.iter().enumerate() {
        if rows + run.len() > MORSEL_ROWS && i > start {
            packs.push(start..i);
            (start, rows) = (i, 0);
        }
        rows += run.len();
    }
    if start < small.len() {
        packs.push(start..small.len());
    }
    packs
}

/// The rows of a packed run (`pack_small_tables` packs only runs).
fn run_rows(rows: &TableRows, at: Location) -> Result<Range<usize>> {
    match rows {
        TableRows::Run(r) => Ok(r.clone()),
        TableRows::Picked(_) => Err(ExecError::internal(
            at,
            "a pack of small tables holds picked rows",
        )),
    }
}

/// One pack of whole small tables: their rows read into one batch and the new values
/// computed once (`write_pack` writes each table's share); `None` when none is selected.
pub(super) fn stage_pack(
    plan: &UpdatePlan,
    scan: &EntityScan,
    pack: &[(TableId, TableRows)],
    read: &Reader<'_>,
) -> Result<Option<Staged>> {
    let (at, world) = (read.at, read.world);
    let total: usize = pack.iter().map(|(_, r)| r.len()).sum();
    // Each column read, the pack's tables' rows one after another.
    let mut joined: Vec<(usize, Column)> = Vec::with_capacity(scan.columns.len());
    for &(slot, column) in &scan.columns {
        let mut values: Option<Column> = None;
        for (table, rows) in pack {
            let rows = run_rows(rows, at)?;
            let Some(t) = world.table(*table) else {
                return Err(ExecError::internal(at, "a table vanished during UPDATE"));
            };
            let t = t.get();
            let appended = match column {
                ScanColumn::Id => {
                    match values.get_or_insert_with(|| Column::with_capacity(FieldType::Entity, total)) {
                        Column::Entity(ids) => {
                            ids.extend(t.entities()[rows.clone()].iter().map(|&e| Some(e)));
                            true
                        }
                        _ => false,
                    }
                }
                ScanColumn::Field(f) => match t.column(f) {
                    Some(c) => values
                        .get_or_insert_with(|| Column::with_capacity(c.field_type(), total))
                        .extend_from(c, rows.clone()),
                    None => false,
                },
                _ => false,
            };
            if !appended {
                return Err(ExecError::internal(
                    at,
                    "a packed table lacks a field the UPDATE reads",
                ));
            }
        }
        joined.extend(values.map(|v| (slot, v)));
    }
    let mut batch = Batch::new(total, plan.select.width);
    for (slot, values) in &joined {
        if let Some(s) = batch.slots.get_mut(*slot) {
            *s = Some(Datum::Vector(Vector::from_column(values, 0..total)));
        }
    }
    let Some((first, _)) = pack.first() else {
        return Ok(None);
    };
    stage_update(plan, *first, 0..total, &batch, &read.eval())
}

/// Writes each table's share of a pack's new values (`stage_pack`); gives how many rows.
pub(super) fn write_pack(
    world: &mut World,
    pack: &[(TableId, TableRows)],
    staged: Staged,
    tick: &mut OneTick,
    at: Location,
) -> Result<usize> {
    // Each table's share: its rows of the pack, and of the values computed, those of its
    // selected rows.
    let mut affected = 0;
    let (mut start, mut value) = (0usize, 0usize);
    // The selected rows are in ascending order: each table's are the next run of them.
    let mut next_picked = 0usize;
    for (table, rows) in pack {
        let rows = run_rows(rows, at)?;
        let end = start + rows.len();
        let (selection, count) = match &staged.selection {
            Selection::Rows(picked) => {
                let rest = picked.get(next_picked..).unwrap_or(&[]);
                let n = rest.partition_point(|&r| (r as usize) < end);
                let mine: Vec<u32> = rest[..n].iter().map(|&r| r - start as u32).collect();
                next_picked += n;
                (Selection::Rows(mine), n)
            }
            _ => (Selection::All, rows.len()),
        };
        start = end;
        if count == 0 {
            continue;
        }
        let tick = tick.take(world);
        let Some(mut t) = world.table_mut_at(*table, tick) else {
            return Err(ExecError::internal(at, "a table vanished during UPDATE"));
        };
        let picked = match &selection {
            Selection::Rows(picked) => Some(picked.as_slice()),
            _ => None,
        };
        for (field, values) in &staged.columns {
            let share = Values::Part(values, value..value + count);
            t.write_values(*field, rows.clone(), picked, share)
                .map_err(|e| ExecError::storage(at, e))?;
        }
        value += count;
        affected += count;
    }
    Ok(affected)
}
