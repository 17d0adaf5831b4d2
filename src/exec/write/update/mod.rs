//! UPDATE: a statement of one entity scan is computed batch by batch (`update_scan`).
//! One whose writes cannot fail writes each batch as soon as it is computed (over a large
//! table in place, on several threads: `in_place.rs`; over small tables a pack of them at
//! a time: `small_tables.rs`); any other computes every batch first and writes only when
//! all succeeded (`batch.rs`). One that joins other entities (`UPDATE … FROM`) is
//! `joined.rs`.

mod batch;
mod in_place;
mod joined;
mod small_tables;

use std::ops::Range;

use batch::{OneTick, Pending, Runs, Staged, plain_direct, stage_update, write_staged};
use in_place::{tables_for_threads, update_in_place, write_table_beside};
use joined::update_joined;
use small_tables::{
    Whole, is_small_table, lend_scalars, pack_small_tables, scalar_compounds, stage_pack,
    whole_table_scalars, write_pack,
};

use crate::exec::compound;
use crate::exec::error::ExecError;
use crate::exec::eval::Selection;
use crate::exec::parallel::PureEval;
use crate::exec::reader::Reader;
use crate::exec::scan::{
    Home, MORSEL_ROWS, TableRows, fill_batch, key_id, scan_holds, scan_runs, table_batch, whole_tables,
};
use crate::exec::write::pieces::fits;
use crate::exec::write::values::{Result, reader};
use crate::exec::{Outcome, Run};
use crate::location::Location;
use crate::plan::{EntityScan, IdKey, RelationSource, UpdatePlan, UpdateRoute};
use crate::storage::{Column, Entity, FieldId, TableId, World};

/// The one entity scan an UPDATE reads, when it joins nothing else.
fn single_scan(plan: &UpdatePlan) -> Option<&EntityScan> {
    match plan.select.relations.as_slice() {
        [r] if r.on.is_none() && r.filter.is_none() => match &r.source {
            RelationSource::Entities(scan) => Some(scan),
            _ => None,
        },
        _ => None,
    }
}

/// `plan`'s route (`UpdateRoute`), found on its first run and kept in it.
fn route(plan: &UpdatePlan) -> UpdateRoute {
    *plan.route.get_or_init(|| {
        let Some(scan) = single_scan(plan) else {
            return UpdateRoute::default();
        };
        UpdateRoute {
            single: true,
            plain: batch::plain_scan(plan, scan),
            // Whole tables for a reader that asks about no change.
            whole: whole_tables(scan, None),
            changes: scan.changes.is_some(),
            filter: plan.select.filter.is_some(),
            all_same: compound::compounds(plan, scan).is_some_and(|c| c.all_same()),
            point: point_scan(plan, scan),
            slots: slots_read(plan),
        }
    })
}

/// Whether an UPDATE's one scan names one entity by its id, a constant or a parameter,
/// with no WHERE left to check, no index, zone map or change mark to narrow it and no
/// sparse component to look up (`UpdateRoute::point`; `update_point` writes it).
fn point_scan(plan: &UpdatePlan, scan: &EntityScan) -> bool {
    plan.select.filter.is_none()
        && matches!(scan.ids.as_deref(), Some([IdKey::Entity(_) | IdKey::Param(_)]))
        && scan.index.is_none()
        && scan.skips.is_empty()
        && scan.changes.is_none()
        && scan.sparse.is_empty()
        && !scan.reads_sparse
}

/// The slots an UPDATE's WHERE and new values read (`UpdateRoute::slots`).
fn slots_read(plan: &UpdatePlan) -> u64 {
    let mut bits = 0u64;
    let mut mark = |s: usize| {
        bits |= match s {
            0..64 => 1 << s,
            _ => u64::MAX,
        }
    };
    if let Some(f) = &plan.select.filter {
        f.visit_slots(&mut mark);
    }
    for a in &plan.assignments {
        a.value.visit_slots(&mut mark);
    }
    bits
}

/// The one entity scan an UPDATE reads, by its route: its first relation's, read
/// without the checks `single_scan` made on the first run.
fn routed_scan(plan: &UpdatePlan, route: UpdateRoute) -> Option<&EntityScan> {
    if !route.single {
        return None;
    }
    match plan.select.relations.first().map(|r| &r.source) {
        Some(RelationSource::Entities(scan)) => Some(scan),
        _ => None,
    }
}

/// Whether the one scan of an UPDATE of route `route` reads whole tables in `run`
/// (`scan::whole_tables`).
fn reads_whole(route: UpdateRoute, run: Run<'_>) -> bool {
    route.whole && !(route.changes && run.changes_since().is_some())
}

/// Where an UPDATE's batches come from: a sparse component's values are written in its
/// own table, so the scan starts there.
fn home_of(plan: &UpdatePlan, world: &World) -> Home {
    match world.component(plan.target).ok().and_then(|d| d.sparse_table()) {
        Some(table) => Home::Sparse(table),
        None => Home::Dense,
    }
}

/// Whether `plan` is a compound UPDATE (`compound.rs`), for EXPLAIN.
pub fn is_compound(plan: &UpdatePlan) -> bool {
    single_scan(plan).is_some_and(|scan| compound::compounds(plan, scan).is_some())
}

/// For EXPLAIN: the tables a run of `plan` now would write in place (`update_in_place`),
/// each with its number of stretches (threads) and its rows.
pub fn threads_for_explain(plan: &UpdatePlan, reader: &Reader<'_>) -> Vec<(TableId, usize, usize)> {
    let Some(scan) = single_scan(plan) else {
        return Vec::new();
    };
    let home = home_of(plan, reader.world);
    let (runs, _) = scan_runs(scan, reader, home);
    let (big, _) = tables_for_threads(plan, scan, home, reader.budget.split(), reader.world, runs, false);
    big.into_iter()
        .map(|(table, stretches)| {
            let rows = stretches.iter().flatten().map(Range::len).sum();
            (table, stretches.len(), rows)
        })
        .collect()
}

/// Runs an UPDATE; each entity written is added to `touched`, when given (then the plan
/// is never `cannot_fail`, so its writes take the way that names them).
pub fn update(
    plan: &UpdatePlan,
    world: &mut World,
    run: Run<'_>,
    touched: Option<&mut Vec<Entity>>,
) -> Result<Outcome> {
    if touched.is_some() && plan.cannot_fail {
        return Err(ExecError::internal(
            run.at,
            "an UPDATE with RETURNING was planned to write directly",
        ));
    }
    let route = route(plan);
    let Some(scan) = routed_scan(plan, route) else {
        return update_joined(plan, world, run, touched);
    };
    // A statement whose every batch is sure to succeed writes each batch as soon as it is
    // computed, while its values are still in cache (any other computes every batch's new
    // values first and writes only when all succeeded, so a failure writes nothing). One
    // that may run long keeps the old values it writes over, in a savepoint, and looks at
    // the interrupt between batches: stopped, it puts them back.
    let home = home_of(plan, world);
    // EXPLAIN ANALYZE measures the scan, which a write of one entity by its id skips.
    if route.point && matches!(home, Home::Dense) && run.profile.is_none() {
        return update_point(plan, scan, world, run, touched);
    }
    if !plan.cannot_fail {
        return update_scan(plan, scan, home, world, run, false, touched, Counted::Nothing);
    }
    // Outside a transaction, its runs are read once: for `runs_long`, the count
    // `short_for_beside` reads, and the scan. A scan of whole tables, each of one morsel
    // at most, too few rows in all to be long, is written at once from the statement's
    // cached table list, which counts its rows too (`whole_table_scalars`); any other scan
    // of whole tables too few to be long lists its runs and runs at once. Inside one (a
    // system's run in a tick), whole tables are written so too, in a savepoint.
    let in_transaction = world.in_transaction();
    let counted = match in_transaction {
        true => Counted::Nothing,
        false => {
            let mut tick = OneTick::default();
            let most = Some(NEVER_LONG_ROWS);
            match whole_table_scalars(plan, scan, home, world, run, most, &mut tick, false)? {
                Whole::Wrote { rows, affected, left } => {
                    plan.scanned.store(rows, std::sync::atomic::Ordering::Relaxed);
                    if left.is_empty() {
                        return Ok(Outcome {
                            affected,
                            ..Default::default()
                        });
                    }
                    let wrote = Counted::Wrote { affected, left, tick };
                    return update_scan(plan, scan, home, world, run, false, None, wrote);
                }
                Whole::Not { rows: Some(rows) } if rows <= NEVER_LONG_ROWS => {
                    plan.scanned.store(rows, std::sync::atomic::Ordering::Relaxed);
                    return update_scan(plan, scan, home, world, run, false, touched, Counted::Nothing);
                }
                Whole::Not { .. } => {}
            }
            let (runs, _) = scan_runs(scan, &reader(world, run), home);
            let rows = runs.iter().map(|(_, r)| r.len()).sum();
            plan.scanned.store(rows, std::sync::atomic::Ordering::Relaxed);
            if !runs_long(plan, scan, (&runs, rows), world, run)? {
                return update_scan(plan, scan, home, world, run, false, touched, Counted::Runs(runs));
            }
            Counted::Runs(runs)
        }
    };
    let savepoint = world.savepoint();
    let ran = match in_transaction {
        true => {
            let mut tick = OneTick::default();
            match whole_table_scalars(plan, scan, home, world, run, None, &mut tick, true) {
                Ok(Whole::Wrote { affected, left, .. }) if left.is_empty() => Ok(Outcome {
                    affected,
                    ..Default::default()
                }),
                Ok(Whole::Wrote { affected, left, .. }) => {
                    let wrote = Counted::Wrote { affected, left, tick };
                    update_scan(plan, scan, home, world, run, true, None, wrote)
                }
                Ok(Whole::Not { .. }) => update_scan(plan, scan, home, world, run, true, None, counted),
                Err(e) => Err(e),
            }
        }
        false => update_scan(plan, scan, home, world, run, true, None, counted),
    };
    match ran {
        Ok(outcome) => {
            world.release(savepoint);
            Ok(outcome)
        }
        Err(e) => {
            world.rollback_to(savepoint);
            Err(e)
        }
    }
}

/// `update` of the one entity its scan names by its id (`UpdateRoute::point`): the row is
/// found through the entity index and its new values computed and written as one batch,
/// past the lists of runs, the projections of a long write and the pending batches a scan
/// of many rows goes through. A write of one row is short, so it keeps no savepoint of its
/// own (a transaction's undo log still records it); it writes nothing if its values fail.
fn update_point(
    plan: &UpdatePlan,
    scan: &EntityScan,
    world: &mut World,
    run: Run<'_>,
    touched: Option<&mut Vec<Entity>>,
) -> Result<Outcome> {
    #[cfg(test)]
    tests::POINT_WRITES.with(|n| n.set(n.get() + 1));
    let at = run.at;
    let id = match scan.ids.as_deref() {
        Some([key]) => key_id(key, run.params),
        _ => None,
    };
    let found = id
        .and_then(|id| Some((id, world.find(id)?)))
        .filter(|(_, (table, _))| world.table(*table).is_some_and(|t| scan_holds(scan, &t)));
    plan.scanned
        .store(usize::from(found.is_some()), std::sync::atomic::Ordering::Relaxed);
    let Some((id, (table, row))) = found else {
        return Ok(Outcome::default());
    };
    run.budget.check(at)?;
    let rows = TableRows::Run(row.index()..row.index() + 1);
    let mut rng = crate::exec::seed(&run);
    let Some(s) = stage_rows(plan, scan, world, run, &mut rng, table, &rows)? else {
        return Ok(Outcome::default());
    };
    // Staged values are charged as a scan's are: those of a write that may fail.
    if !plan.cannot_fail {
        let bytes: usize = s.columns.iter().map(|(_, c)| c.len() * 16).sum();
        run.budget.charge(bytes, at)?;
    }
    if let Some(touched) = touched {
        touched.push(id);
    }
    let tick = world.next_tick();
    write_staged(world, s, tick, at)?;
    Ok(Outcome {
        affected: 1,
        ..Default::default()
    })
}

/// What `update` read of a scan's rows before writing them, for `update_scan`.
enum Counted {
    /// Nothing: whole tables (`whole_table_scalars`) were tried already, or cannot be
    /// written so; the scan's runs are listed.
    Nothing,
    /// The scan's runs (`scan_runs`); whole tables are tried first.
    Runs(Runs),
    /// Its whole tables written by `whole_table_scalars`, but for the runs `left`, at
    /// `tick`.
    Wrote {
        affected: usize,
        left: Runs,
        tick: OneTick,
    },
}

/// The most rows a direct UPDATE has and is never projected to run long (`runs_long`).
const NEVER_LONG_ROWS: usize = 4 * MORSEL_ROWS;

/// How long a direct UPDATE may write with no way to stop it (keeping no old values):
/// one projected to take longer keeps them, so that an interrupt can undo it.
const UNSTOPPABLE: std::time::Duration = std::time::Duration::from_millis(50);

/// The rows `runs_long` computes to time a direct UPDATE: enough to weigh what a row
/// costs, few enough that the sample costs ~1% of a simple UPDATE of 1M rows.
const SAMPLE_ROWS: usize = 512;

/// Whether a direct UPDATE outside a transaction is projected to take longer than
/// `UNSTOPPABLE` on one thread: the values of its first `SAMPLE_ROWS` rows are computed
/// (and dropped) and timed, and their time scaled to all its rows. Fewer rows than a few
/// morsels' are never long. The old values it would keep must fit in the memory limit
/// (they are charged to it); else it runs as one that is short.
fn runs_long(
    plan: &UpdatePlan,
    scan: &EntityScan,
    (runs, rows): (&Runs, usize),
    world: &World,
    run: Run<'_>,
) -> Result<bool> {
    let read = reader(world, run);
    if rows <= NEVER_LONG_ROWS {
        return Ok(false);
    }
    // The first runs, up to `SAMPLE_ROWS` rows (a world of small tables has short runs,
    // each a batch of its own, as it will be written).
    let began = std::time::Instant::now();
    let mut sampled = 0;
    for (table, rows) in runs {
        let Some(t) = world.table(*table) else {
            continue;
        };
        let want = SAMPLE_ROWS - sampled;
        let (sample, span) = match rows {
            TableRows::Run(r) => {
                let r = r.start..r.end.min(r.start + want);
                (TableRows::Run(r.clone()), r)
            }
            TableRows::Picked(p) => {
                let p = p[..p.len().min(want)].to_vec();
                let span = 0..p.len();
                (TableRows::Picked(p), span)
            }
        };
        let batch = table_batch(
            scan,
            world,
            t.get(),
            plan.select.width,
            &sample,
            read.changes_since(),
        );
        // The sample's reader has a copy of the statement's random state: the run's own
        // values are not changed by it.
        drop(stage_update(plan, *table, span, &batch, &read.eval())?);
        sampled += sample.len();
        if sampled >= SAMPLE_ROWS {
            break;
        }
    }
    let took = began.elapsed().as_secs_f64() * rows as f64 / sampled.max(1) as f64;
    if took <= UNSTOPPABLE.as_secs_f64() {
        return Ok(false);
    }
    let bytes = rows.saturating_mul(plan.assignments.len()).saturating_mul(16);
    fits(run.budget.charge(bytes, run.at))
}

/// `update` of one entity scan; `stoppable`: inside a savepoint, looking at the interrupt
/// between batches even once it wrote; `counted`: what was read of its rows already.
#[allow(clippy::too_many_arguments)]
fn update_scan(
    plan: &UpdatePlan,
    scan: &EntityScan,
    home: Home,
    world: &mut World,
    run: Run<'_>,
    stoppable: bool,
    mut touched: Option<&mut Vec<Entity>>,
    counted: Counted,
) -> Result<Outcome> {
    let at = run.at;
    let direct = plan.cannot_fail;
    let mut rng = crate::exec::seed(&run);
    let mut pending = Pending::default();
    // Every write of the statement is stamped with one tick, however many batches and
    // threads write it, taken at its first write.
    let mut tick = OneTick::default();
    // What `whole_table_scalars` leaves (tables tracked for changes, or too small for a
    // pass of their own) is written by packs and batches.
    let (wrote, listed) = match counted {
        Counted::Wrote {
            affected,
            left,
            tick: took,
        } => {
            tick = took;
            (Some((affected, left)), None)
        }
        Counted::Runs(runs) => {
            let wrote = match whole_table_scalars(plan, scan, home, world, run, None, &mut tick, stoppable)? {
                Whole::Wrote { affected, left, .. } => Some((affected, left)),
                Whole::Not { .. } => None,
            };
            (wrote, Some(runs))
        }
        Counted::Nothing => (None, None),
    };
    let (mut affected, runs, left_over) = match wrote {
        Some((affected, left)) => (affected, left, true),
        None => {
            let mut affected = 0;
            let runs = listed.unwrap_or_else(|| scan_runs(scan, &reader(world, run), home).0);
            let (big, runs) = tables_for_threads(plan, scan, home, run.budget.split(), world, runs, false);
            if !big.is_empty() {
                run.budget.check(at)?;
                for (table, rows) in big {
                    affected += update_in_place(plan, scan, world, run, table, &rows, &mut tick, stoppable)?;
                }
            }
            (affected, runs, false)
        }
    };
    // Every table written whole (a system over tables of one morsel at most): done.
    if left_over && runs.is_empty() {
        return Ok(Outcome {
            affected,
            ..Default::default()
        });
    }
    // Small tables (a world of many archetypes) are computed together, a pack of them
    // to a batch, so that evaluating the expressions costs once per pack, not per table.
    // (A statement's runs are most often all of one kind: then they are not copied.)
    let (small, runs): (Runs, Runs) = if !plain_direct(plan, home) {
        (Vec::new(), runs)
    } else if runs.iter().all(|r| is_small_table(&r.1)) {
        (runs, Vec::new())
    } else if !runs.iter().any(|r| is_small_table(&r.1)) {
        (Vec::new(), runs)
    } else {
        runs.into_iter().partition(|r| is_small_table(&r.1))
    };
    // `v = v * 2` over small tables: the value is the same for every row, so each table
    // is multiplied in place, with no pack gathered and no values computed per row.
    let scalars = match small.as_slice() {
        [] => None,
        _ if left_over => None,
        _ => scalar_compounds(plan, scan, run.params, || Reader::continuing(world, run, rng))?,
    };
    let small = match &scalars {
        Some(scalars) => {
            // Once a direct UPDATE wrote, it runs to its end, unless it can undo.
            if affected == 0 || stoppable {
                run.budget.check(at)?;
            }
            // Small tables are whole tables (`is_small_table`).
            let tables: Vec<TableId> = small.iter().map(|(t, _)| *t).collect();
            let tick = tick.take(world);
            let (written, tracked) =
                lend_scalars(world, &tables, None, &plan.assignments, scalars, tick, at)?;
            affected += written;
            tracked
        }
        None => small,
    };
    for pack in pack_small_tables(&small) {
        // Once a direct UPDATE wrote, it runs to its end, unless it can undo.
        if affected == 0 || stoppable {
            run.budget.check(at)?;
        }
        let pack = &small[pack];
        let read = Reader::continuing(world, run, rng);
        let staged = stage_pack(plan, scan, pack, &read)?;
        rng = read.rng.get();
        if let Some(staged) = staged {
            affected += write_pack(world, pack, staged, &mut tick, at)?;
        }
    }
    for (table, batch_rows) in runs {
        // Once a direct UPDATE wrote, it runs to its end (stopping would keep half of it),
        // unless it can undo.
        if !direct || affected == 0 || stoppable {
            run.budget.check(at)?;
        }
        let Some(s) = stage_rows(plan, scan, world, run, &mut rng, table, &batch_rows)? else {
            continue;
        };
        affected += match &s.selection {
            Selection::Rows(r) => r.len(),
            _ => s.rows.len(),
        };
        if let Some(touched) = touched.as_deref_mut()
            && let Some(t) = world.table(table)
        {
            let entities = &t.get().entities()[s.rows.clone()];
            match &s.selection {
                Selection::All => touched.extend_from_slice(entities),
                Selection::Rows(r) => touched.extend(r.iter().map(|&i| entities[i as usize])),
                Selection::None => {}
            }
        }
        if direct {
            let tick = tick.take(world);
            write_staged(world, s, tick, at)?;
        } else {
            let bytes: usize = s.columns.iter().map(|(_, c)| c.len() * 16).sum();
            run.budget.charge(bytes, at)?;
            let table_len = world.table(table).map_or(0, |t| t.len());
            pending.push(s, table_len, run.budget, at)?;
        }
    }
    pending.write(world, &mut tick, at)?;
    Ok(Outcome {
        affected,
        ..Default::default()
    })
}

/// The new values of one batch of a table's rows (`batch_rows`), staged; `None` when the
/// batch has no rows or WHERE selects none. `rng` is the statement's `random()` state,
/// carried from batch to batch. Scattered rows are read as one batch and staged as picked
/// rows of the span they lie in.
fn stage_rows(
    plan: &UpdatePlan,
    scan: &EntityScan,
    world: &World,
    run: Run<'_>,
    rng: &mut u64,
    table: TableId,
    batch_rows: &TableRows,
) -> Result<Option<Staged>> {
    let span = match batch_rows {
        TableRows::Run(rows) => rows.clone(),
        TableRows::Picked(picked) => match (picked.first(), picked.last()) {
            (Some(&first), Some(&last)) => first as usize..last as usize + 1,
            _ => return Ok(None),
        },
    };
    let read = Reader::continuing(world, run, *rng);
    // Only the slots the WHERE and the new values read (`UpdateRoute::slots`); none for
    // values of constants and parameters with no WHERE left (an UPDATE of one entity by
    // its id, the most common write of all), which then read no column at all.
    let slots = route(plan).slots;
    let batch = match world.table(table) {
        Some(_) if slots == 0 => crate::vector::Batch {
            len: batch_rows.len(),
            slots: Vec::new(),
        },
        Some(t) => {
            let reads = |s: usize| slots == u64::MAX || (s < 64 && slots >> s & 1 == 1);
            let mut batch = crate::vector::Batch::default();
            let since = read.changes_since();
            fill_batch(
                &mut batch,
                scan,
                world,
                t.get(),
                plan.select.width,
                batch_rows,
                since,
                reads,
            );
            batch
        }
        None => return Err(ExecError::internal(run.at, "a table vanished during UPDATE")),
    };
    let stage = stage_update(plan, table, span.clone(), &batch, &read.eval())?;
    *rng = read.rng.get();
    let Some(mut s) = stage else {
        return Ok(None);
    };
    if let TableRows::Picked(picked) = batch_rows {
        let at_row = |i: usize| picked[i] - span.start as u32;
        s.selection = match s.selection {
            Selection::All => Selection::Rows((0..picked.len()).map(at_row).collect()),
            Selection::Rows(selected) => {
                Selection::Rows(selected.iter().map(|&i| at_row(i as usize)).collect())
            }
            Selection::None => Selection::None,
        };
    }
    Ok(Some(s))
}

/// An UPDATE's new values, computed against a world it has not written yet: the one
/// `write_staged_update` writes later, stamped with one write tick as a run writes them.
pub struct StagedUpdate {
    pending: Pending,
    affected: usize,
}

/// Computes what `plan` would write to `world` without writing it, when the UPDATE reads
/// one entity scan (`None` for one that joins others, which must run as `update` runs).
/// What it writes then, by `write_staged_update`, is what `update` writes; what it reads
/// must not change in between.
pub fn stage_whole_update(plan: &UpdatePlan, world: &World, run: Run<'_>) -> Result<Option<StagedUpdate>> {
    let Some(scan) = single_scan(plan) else {
        return Ok(None);
    };
    let home = home_of(plan, world);
    // Batches of many morsels give the same values as morsels only where no value depends
    // on the batch: no `random()` (whose draws go batch by batch), no subquery, and no
    // error, whose first one in a batch could be another row's.
    let same_in_any_batch = plan.cannot_fail && values_are_pure(plan);
    if same_in_any_batch && let Some(staged) = stage_compound_tables(plan, scan, home, world, run)? {
        return Ok(Some(staged));
    }
    let mut rng = crate::exec::seed(&run);
    let (runs, _) = scan_runs(scan, &reader(world, run), home);
    let runs = if same_in_any_batch {
        joined_runs(runs)
    } else {
        runs
    };
    let mut pending = Pending::default();
    let mut affected = 0;
    for (table, batch_rows) in runs {
        run.budget.check(run.at)?;
        // What a batch of many morsels will hold is charged before it is computed.
        let estimate = match batch_rows.len() > MORSEL_ROWS {
            true => batch_rows
                .len()
                .saturating_mul(plan.assignments.len())
                .saturating_mul(16),
            false => 0,
        };
        run.budget.charge(estimate, run.at)?;
        let Some(s) = stage_rows(plan, scan, world, run, &mut rng, table, &batch_rows)? else {
            continue;
        };
        affected += match &s.selection {
            Selection::Rows(r) => r.len(),
            _ => s.rows.len(),
        };
        let bytes: usize = s.columns.iter().map(|(_, c)| c.len() * 16).sum();
        run.budget.charge(bytes.saturating_sub(estimate), run.at)?;
        let table_len = world.table(table).map_or(0, |t| t.len());
        pending.push(s, table_len, run.budget, run.at)?;
    }
    Ok(Some(StagedUpdate { pending, affected }))
}

/// `stage_whole_update` of a compound UPDATE (`compound.rs`: every assignment `f = f op
/// e`, no WHERE) whose scan reads whole archetype tables (`whole_tables`) and whose
/// every `e` is read from the tables' columns where they lie (`compound::from_table`: a
/// field, or one times a value the same for every row): each table's new columns are
/// built in one pass from its columns, looking at the interrupt every
/// `STAGED_BATCH_ROWS` rows, with no batch made and no value copied after it is
/// computed. `None`, having computed nothing, for an UPDATE of another shape.
fn stage_compound_tables(
    plan: &UpdatePlan,
    scan: &EntityScan,
    home: Home,
    world: &World,
    run: Run<'_>,
) -> Result<Option<StagedUpdate>> {
    let route = route(plan);
    if route.filter || !plain_direct(plan, home) || !reads_whole(route, run) {
        return Ok(None);
    }
    let Some(compounds) = compound::compounds(plan, scan) else {
        return Ok(None);
    };
    if !compounds.all_from_columns() {
        return Ok(None);
    }
    let at = run.at;
    let tables = run.cache.borrow_mut().tables(world, scan, run.restores).to_vec();
    let pure = PureEval::default();
    let cx = pure.cx(run.params, run.clock);
    let mut scales = compound::scales(plan.assignments.len());
    let (mut pending, mut affected) = (Pending::default(), 0);
    for table in tables {
        let Some(t) = world.table(table) else {
            return Err(ExecError::internal(at, "a table vanished during UPDATE"));
        };
        let (t, len) = (t.get(), t.len());
        if len == 0 {
            continue;
        }
        run.budget.check(at)?;
        // Charged as staged values are, before they are computed.
        let bytes = len.saturating_mul(plan.assignments.len()).saturating_mul(16);
        run.budget.charge(bytes, at)?;
        let mut values = smallvec::SmallVec::<[_; 2]>::new();
        for ((op, e, form), scale) in compounds.parts().zip(&mut scales) {
            let Some(value) = compound::from_table(e, form, scan, t, len, (&cx, scale), at) else {
                return Err(ExecError::internal(
                    at,
                    "an UPDATE's table lacks a field it reads",
                ));
            };
            values.push((op, value?));
        }
        let check = || run.budget.check(at);
        let columns = compound::new_columns(
            &values,
            &plan.assignments,
            t,
            len,
            Column::with_capacity,
            STAGED_BATCH_ROWS,
            check,
            at,
        )?;
        affected += len;
        pending.push(Staged::whole(table, len, columns.into_vec()), len, run.budget, at)?;
    }
    Ok(Some(StagedUpdate { pending, affected }))
}

/// Whether the UPDATE's WHERE and new values read the same on any thread, in any batch,
/// any number of times (`parallel::pure`: no `random()`, no subquery). Found on the
/// plan's first run that asks and kept in it (`UpdatePlan::pure`): a system's UPDATE
/// asks every tick.
fn values_are_pure(plan: &UpdatePlan) -> bool {
    *plan.pure.get_or_init(|| {
        plan.select
            .filter
            .as_ref()
            .is_none_or(crate::exec::parallel::pure)
            && plan
                .assignments
                .iter()
                .all(|a| crate::exec::parallel::pure(&a.value))
    })
}

/// The most rows one batch of a staged UPDATE computes (`joined_runs`).
const STAGED_BATCH_ROWS: usize = 1 << 16;

/// `runs` with consecutive runs of one table joined, up to `STAGED_BATCH_ROWS` rows each:
/// an UPDATE computed apart keeps every value it computes, so a batch of many morsels
/// costs what a morsel costs, without a buffer made, copied into the staged column and
/// freed per morsel (in a profile of four such UPDATEs computed together, 16% of the
/// time was freeing those buffers and 8% copying them). Only for an UPDATE whose values
/// do not depend on the batch (`stage_whole_update`); a batch stays small enough (tens
/// of µs of arithmetic) to check the budget and the interrupt often.
fn joined_runs(runs: Vec<(TableId, TableRows)>) -> Vec<(TableId, TableRows)> {
    let mut joined: Vec<(TableId, TableRows)> = Vec::with_capacity(runs.len());
    for (table, rows) in runs {
        if let (Some((last_table, TableRows::Run(last))), TableRows::Run(next)) = (joined.last_mut(), &rows)
            && *last_table == table
            && last.end == next.start
            && last.len() + next.len() <= STAGED_BATCH_ROWS
        {
            last.end = next.end;
            continue;
        }
        joined.push((table, rows));
    }
    joined
}

/// Writes what `stage_whole_update` computed.
pub fn write_staged_update(staged: StagedUpdate, world: &mut World, at: Location) -> Result<Outcome> {
    staged.pending.write(world, &mut OneTick::default(), at)?;
    Ok(Outcome {
        affected: staged.affected,
        ..Default::default()
    })
}

/// The fewest rows an UPDATE writes beside others (`update_beside`): one morsel's. A
/// short UPDATE holds the write lock too briefly for writing beside others to pay for its
/// own steps (fields held, tables lent one by one, two locks): 26 tables of 20 rows took
/// 9.8 µs beside, 0.7 µs under the write lock.
const BESIDE_MIN_ROWS: usize = MORSEL_ROWS;

/// Whether `plan`'s last run found it an UPDATE too short to write beside others
/// (`BESIDE_MIN_ROWS`): the next is not tried so (its tables may have grown since; that
/// run, under the write lock, counts them again for the one after).
pub fn short_for_beside(plan: &crate::plan::Plan) -> bool {
    match plan {
        crate::plan::Plan::Update(p) => {
            p.scanned.load(std::sync::atomic::Ordering::Relaxed) < BESIDE_MIN_ROWS
        }
        _ => false,
    }
}

/// What an UPDATE written beside others wrote into its world's columns (`update_beside`),
/// not stamped yet: each table and the span of rows written there, and how many rows.
pub struct Beside {
    fields: Vec<FieldId>,
    tables: Vec<(TableId, Range<usize>)>,
    affected: usize,
}

/// Writes `plan` into `world`'s columns in place, through the world shared with the
/// statements beside it, when it is an UPDATE that `update` would write in place whole:
/// of one entity scan, that cannot fail, short (`runs_long`), reading the same on any
/// thread, its every table large enough and untracked (`tables_for_threads`), outside a
/// transaction. `None`, with nothing written, for any other; then it runs as `update`.
/// What it wrote is stamped by `stamp_beside`, under the write lock.
///
/// # Safety
/// The caller holds the fields `plan` writes alone until `stamp_beside` (no reference to
/// their columns exists or is made meanwhile, but this function's own).
pub unsafe fn update_beside(plan: &UpdatePlan, world: &World, run: Run<'_>) -> Result<Option<Beside>> {
    let Some(scan) = single_scan(plan) else {
        return Ok(None);
    };
    let home = home_of(plan, world);
    // An observed field (an index's) is told of its rows under the write lock, after.
    let watched = plan.assignments.iter().any(|a| world.watched(a.field));
    if !plan.cannot_fail || watched || world.in_transaction() {
        return Ok(None);
    }
    let (runs, _) = scan_runs(scan, &reader(world, run), home);
    let rows = runs.iter().map(|(_, r)| r.len()).sum::<usize>();
    plan.scanned.store(rows, std::sync::atomic::Ordering::Relaxed);
    if rows < BESIDE_MIN_ROWS || runs_long(plan, scan, (&runs, rows), world, run)? {
        return Ok(None);
    }
    let (big, rest) = tables_for_threads(plan, scan, home, run.budget.split(), world, runs, true);
    if big.is_empty() || !rest.is_empty() {
        return Ok(None);
    }
    run.budget.check(run.at)?;
    let mut beside = Beside {
        fields: plan.assignments.iter().map(|a| a.field).collect(),
        tables: Vec::with_capacity(big.len()),
        affected: 0,
    };
    for (table, stretches) in big {
        // SAFETY: the caller holds the written fields alone.
        if let Some((written, span)) =
            unsafe { write_table_beside(plan, scan, world, run, table, &stretches)? }
        {
            beside.affected += written;
            beside.tables.push((table, span));
        }
    }
    Ok(Some(beside))
}

/// Stamps what `update_beside` wrote through the world it shares, as `stamp_beside` does
/// under the write lock: its columns with one new write tick (none of its fields is
/// observed, so nothing else is told).
///
/// # Safety
/// The caller still holds the fields `update_beside` wrote alone.
pub unsafe fn stamp_beside_shared(beside: Beside, world: &World, at: Location) -> Result<Outcome> {
    if !beside.tables.is_empty() {
        let tick = world.next_tick_beside();
        for (table, _) in &beside.tables {
            let t = world
                .table(*table)
                .ok_or_else(|| ExecError::internal(at, "a table vanished during UPDATE"))?;
            for &field in &beside.fields {
                if let Some(column) = t.column_index(field) {
                    t.get().mark_column_changed_beside(column, tick);
                }
            }
        }
    }
    Ok(Outcome {
        affected: beside.affected,
        ..Default::default()
    })
}

/// Stamps what `update_beside` wrote: its columns with one new write tick, and its rows
/// for the observers (indexes…), as `update` stamps what it writes in place.
pub fn stamp_beside(beside: Beside, world: &mut World, at: Location) -> Result<Outcome> {
    let mut tick = OneTick::default();
    for (table, span) in beside.tables {
        let mut t = world
            .table_mut_at(table, tick.peek(world))
            .ok_or_else(|| ExecError::internal(at, "a table vanished during UPDATE"))?;
        t.written_in_place(&beside.fields, span, Vec::new())
            .map_err(|e| ExecError::storage(at, e))?;
        drop(t);
        tick.take(world);
    }
    Ok(Outcome {
        affected: beside.affected,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use crate::{Database, Entity, Result};

    thread_local! {
        /// UPDATEs this thread ran as point writes (`update_point`).
        pub(super) static POINT_WRITES: Cell<usize> = const { Cell::new(0) };
    }

    /// Whether running `sql` with `params` once took the point write, and how many rows it
    /// wrote.
    fn ran_as_point(
        conn: &crate::Connection,
        sql: &str,
        params: impl crate::Params,
    ) -> Result<(bool, usize)> {
        let before = POINT_WRITES.with(Cell::get);
        let written = conn.execute(sql, params)?;
        Ok((POINT_WRITES.with(Cell::get) > before, written))
    }

    #[test]
    fn an_update_of_one_entity_by_its_id_and_nothing_else_is_a_point_write() -> Result<()> {
        let conn = Database::open_in_memory().connect();
        conn.execute_batch(
            "CREATE COMPONENT Health (hp INT, armor INT);
             CREATE COMPONENT Mark (m INT) WITH (storage = sparse);
             CREATE TAG Boss;
             SPAWN Health(10, 1), Boss;
             SPAWN Health(20, 2), Mark(1);",
        )?;
        let boss: Entity = conn.query_row("SELECT id FROM Health WHERE has(Boss)", (), |r| r.get(0))?;
        let other: Entity = conn.query_row("SELECT id FROM Health WHERE NOT has(Boss)", (), |r| r.get(0))?;
        let cases: [(&str, bool, usize); 8] = [
            ("UPDATE Health SET hp = hp + 1 WHERE id = ?1", true, 1),
            ("UPDATE Health SET hp = 5 WHERE id = ?1", true, 1),
            (
                "UPDATE Health SET hp = hp + 1 WHERE id = ?1 AND has(Boss)",
                true,
                1,
            ),
            (
                "UPDATE Health SET hp = hp + 1 WHERE id = ?1 AND NOT has(Boss)",
                true,
                0,
            ),
            // A condition left to check, two ids, a profile: the general path.
            (
                "UPDATE Health SET hp = hp + 1 WHERE id = ?1 AND armor > 0",
                false,
                1,
            ),
            ("UPDATE Health SET hp = hp + 1 WHERE id IN (?1, ?1)", false, 1),
            (
                "EXPLAIN ANALYZE UPDATE Health SET hp = hp + 1 WHERE id = ?1",
                false,
                0,
            ),
            // A sparse component the scan requires.
            (
                "UPDATE Health SET hp = hp + 1 WHERE id = ?1 AND has(Mark)",
                false,
                0,
            ),
        ];
        for (sql, point, rows) in cases {
            let ran = match sql.starts_with("EXPLAIN") {
                true => {
                    let before = POINT_WRITES.with(Cell::get);
                    conn.query_row(sql, [boss], |_| Ok(()))?;
                    (POINT_WRITES.with(Cell::get) > before, 0)
                }
                false => ran_as_point(&conn, sql, [boss])?,
            };
            assert_eq!(ran, (point, rows), "{sql}");
        }
        // A sparse target is written in its own table, the general way.
        let (point, rows) = ran_as_point(&conn, "UPDATE Mark SET m = 2 WHERE id = ?1", [other])?;
        assert_eq!((point, rows), (false, 1));
        let hp: i64 = conn.query_row("SELECT Health.hp FROM Health WHERE id = ?1", [boss], |r| r.get(0))?;
        // 10, +1, =5, +1 (has Boss), +1 (armor > 0), +1 (IN): 8; EXPLAIN ANALYZE puts back
        // what it wrote.
        assert_eq!(hp, 8);
        Ok(())
    }
}
