//! Scans: the rows an entity scan reads, as batches of typed column slices. A walk reads
//! each table's rows in runs of at most `MORSEL_ROWS`, borrowed in place; a scan narrowed
//! to a few entities (by its ids or an index) copies just those rows out, in the order a
//! walk would meet them, so either way a filter above sees the same rows in the same order.
//! Sparse components are read beside the archetype tables: each row's entity is looked up
//! in their tables, rows that must (not) have one are kept (dropped) accordingly, and a
//! scan that requires one held by fewer entities than its tables have rows starts from
//! that component's entities instead of walking.

use std::borrow::Cow;
use std::ops::{Bound, Range};

use super::error::ExecError;
use super::reader::Reader;
use crate::index::{IndexKind, Indexes, Probe};
use crate::parse::Param;
use crate::plan::{
    DataType, EntityScan, IdKey, IndexLookup, ParamValues, ProbePlan, ProbeValue, ScanColumn, SkipTest,
    cast_value, like_prefix,
};
use crate::storage::{
    BLOCK_ROWS, ColumnCell, ComponentId, Entity, FieldId, KeyRange, MarkList, Table, TableId, Value, World,
    ZoneKey, member_key,
};
use crate::vector::CmpOp;
use crate::vector::{Batch, Data, Datum, Vector};

type Result<T> = std::result::Result<T, ExecError>;

pub fn rows_in(world: &World, tables: &[TableId]) -> usize {
    tables
        .iter()
        .map(|&t| world.table(t).map_or(0, |t| t.len()))
        .sum()
}

/// Rows per batch when a scan walks a table: few enough that an expression's intermediate
/// vectors stay in cache (2,048 REALs are 8 KiB), many enough that the per-batch set-up
/// is noise.
pub const MORSEL_ROWS: usize = 2048;

/// Calls `f` for every batch of at most `MORSEL_ROWS` rows that `scan` reads, with those
/// rows' columns borrowed (a run) or copied (rows an index picked) as a batch. Returns
/// true when the scan walked every row of its tables rather than only picked ones.
pub fn for_each_morsel<'w>(
    scan: &EntityScan,
    width: usize,
    reader: &Reader<'w>,
    mut f: impl FnMut(Batch<'w>) -> Result<()>,
) -> Result<bool> {
    let (runs, walked) = scan_runs(scan, reader, Home::Any);
    read_runs(scan, width, reader, &runs, |batch| f(std::mem::take(batch)))?;
    Ok(walked)
}

/// Calls `f` for the batch of each of `runs` (as `scan_runs` gives them), in order. The
/// batches are one batch filled again for each run, so that a caller which only reads
/// them pays for its list of slots once per scan rather than once per run (a `count(*)`
/// over 100 tables read 500 runs, and making each run's list was a fifth of its time); a
/// caller that keeps a batch takes it (`std::mem::take`).
pub fn read_runs<'w>(
    scan: &EntityScan,
    width: usize,
    reader: &Reader<'w>,
    runs: &[(TableId, TableRows)],
    mut f: impl FnMut(&mut Batch<'w>) -> Result<()>,
) -> Result<()> {
    let mut batch = Batch::default();
    for (id, rows) in runs {
        if let Some(table) = reader.world.table(*id) {
            fill_batch(
                &mut batch,
                scan,
                reader.world,
                table.get(),
                width,
                rows,
                reader.changes_since(),
                |_| true,
            );
            f(&mut batch)?;
        }
    }
    Ok(())
}

/// Which rows of one table a batch reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableRows {
    /// Adjacent rows, read in place.
    Run(Range<usize>),
    /// Scattered rows in ascending order (the ids or index candidates a scan was narrowed
    /// to), copied out into one batch so that a hundred hits cost one batch, not a hundred.
    Picked(Vec<u32>),
}

impl TableRows {
    /// How many rows.
    pub fn len(&self) -> usize {
        match self {
            TableRows::Run(rows) => rows.len(),
            TableRows::Picked(rows) => rows.len(),
        }
    }
}

/// Where a scan's batches come from: the archetype tables, or a sparse component's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// As `sparse_home` decides for the scan.
    Any,
    /// The archetype tables (an UPDATE of a dense component writes them in place).
    Dense,
    /// The table of the sparse component an UPDATE writes.
    Sparse(TableId),
}

/// The rows `scan` reads, as batches of at most `MORSEL_ROWS` rows of one table, in table
/// order and row order within a table. A scan with `ids`, or whose index narrows it to
/// few enough candidates, reads only the rows the entity index gives for those entities,
/// in the same order a walk would meet them. A scan that starts from a sparse component
/// (`home`, `sparse_home`) reads that component's table instead, in its row order, and
/// keeps the rows whose entities have the rest. Also says whether the scan walked its
/// table(s) rather than reading only the rows its ids or index picked.
pub fn scan_runs(scan: &EntityScan, reader: &Reader<'_>, home: Home) -> (Vec<(TableId, TableRows)>, bool) {
    let start = match home {
        Home::Any => sparse_home(scan, reader),
        Home::Dense => None,
        Home::Sparse(table) => Some(table),
    };
    let (runs, walked) = match start {
        Some(table) => sparse_runs(scan, reader, table),
        None => dense_runs(scan, reader),
    };
    let runs = keep_members(scan, reader, start, runs);
    if let Some(profile) = reader.profile {
        profile.record(scan, |s| {
            s.runs += 1;
            for (table, rows) in &runs {
                let rows = rows.len() as u64;
                s.rows += rows;
                match s.tables.iter_mut().find(|(t, _)| t == table) {
                    Some((_, n)) => *n += rows,
                    None => s.tables.push((*table, rows)),
                }
            }
            if scan.index.is_some() || scan.ids.is_some() {
                if walked {
                    s.walked += 1;
                } else {
                    s.indexed += 1;
                }
            }
        });
    }
    (runs, walked)
}

/// Whether `scan_runs` over the archetype tables (`Home::Dense`), by a statement's own
/// reader (which no join by id narrows: a join sets that on the reader it reads
/// through), reads every row of each of the scan's tables, in order, and nothing else:
/// no ids or index narrows the scan, no zone map or filter skips tables, no sparse
/// component is checked, and no reader's `changed()` walk skips rows (`since`:
/// `Run::changes_since`).
pub fn whole_tables(scan: &EntityScan, since: Option<u64>) -> bool {
    scan.ids.is_none()
        && scan.index.is_none()
        && scan.skips.is_empty()
        && scan.sparse.is_empty()
        && !(scan.changes.is_some() && since.is_some())
}

/// The table of the sparse component a scan starts from, if any: the one a reader's
/// `changed()`/`added()` in WHERE asks about; else the required sparse component held by
/// the fewest entities, when they are no more than the rows of the archetype tables the
/// scan would walk.
pub fn sparse_home(scan: &EntityScan, reader: &Reader<'_>) -> Option<TableId> {
    let world = reader.world;
    if let Some(column) = scan.changes {
        match sparse_asked(world, column) {
            Some(table) => return Some(table),
            // A reader's changed() of a dense component skips unchanged tables and blocks.
            None if reader.changes_since().is_some() => return None,
            None => {}
        }
    }
    let (table, held) = scan
        .sparse
        .iter()
        .filter(|m| m.must == Some(true))
        .map(|m| (m.table, world.table(m.table).map_or(0, |t| t.len())))
        .min_by_key(|&(_, held)| held)?;
    (held <= rows_in(world, &reader.tables(scan))).then_some(table)
}

/// The rows of sparse table `home` a scan reads: its ids', or its index's candidates, when
/// it has them (and they are few enough), else the rows a reader's `changed()` asks for,
/// else all; then those whose entities have the scan's other components.
fn sparse_runs(scan: &EntityScan, reader: &Reader<'_>, home: TableId) -> (Vec<(TableId, TableRows)>, bool) {
    let world = reader.world;
    let len = world.table(home).map_or(0, |t| t.len());
    let picked = match candidates(scan, reader, index_limit(len)) {
        Some(found) if named(scan, reader) || found.len() <= index_limit(len) => Some(found),
        _ => None,
    };
    let walked = picked.is_none();
    let runs: Vec<(TableId, TableRows)> = match picked {
        Some(found) => {
            let mut rows: Vec<u32> = found
                .into_iter()
                .filter_map(|e| world.sparse_row(home, e))
                .map(|r| r as u32)
                .collect();
            rows.sort_unstable();
            rows.dedup();
            rows.chunks(MORSEL_ROWS)
                .map(|c| (home, TableRows::Picked(c.to_vec())))
                .collect()
        }
        None => {
            let changes = scan
                .changes
                .zip(reader.changes_since())
                .filter(|&(column, _)| sparse_asked(world, column) == Some(home));
            let zones = Skipping::new(scan, reader);
            if changes.is_some() || zones.is_some() {
                skipping_walk(scan, reader, &[home], changes, zones.as_ref())
            } else {
                morsels(len).map(|rows| (home, TableRows::Run(rows))).collect()
            }
        }
    };
    (runs, walked)
}

/// The rows of `runs` whose entities have each sparse component `scan` requires and none
/// it excludes (`home`'s rows all have its own), and, for rows of a sparse
/// table, whose archetype table is one the scan matches. A run kept whole stays a run.
fn keep_members(
    scan: &EntityScan,
    reader: &Reader<'_>,
    home: Option<TableId>,
    runs: Vec<(TableId, TableRows)>,
) -> Vec<(TableId, TableRows)> {
    let world = reader.world;
    // Every row of `home` has its component (but `has(S) AND NOT has(S)` still holds none).
    let members: Vec<(TableId, bool)> = scan
        .sparse
        .iter()
        .filter_map(|m| Some((m.table, m.must?)))
        .filter(|&(t, must)| !(must && Some(t) == home))
        .collect();
    // A sparse table's rows must also be in an archetype table the scan matches, unless it
    // matches them all.
    let matched: Option<Vec<TableId>> = match home {
        Some(_) if !scan.required.is_empty() || !scan.excluded.is_empty() || scan.only.is_some() => {
            let mut tables = reader.tables(scan).to_vec();
            tables.sort_unstable();
            Some(tables)
        }
        _ => None,
    };
    // When every table holding entities is one the scan matches, each row passes that
    // check: it is skipped (it costs an entity lookup a row), when the rows are more than
    // the tables to look over.
    let rows: usize = runs.iter().map(|(_, rows)| rows.len()).sum();
    let matched = matched.filter(|tables| {
        rows <= world.table_count()
            || world
                .tables()
                .any(|t| !t.is_empty() && tables.binary_search(&t.id()).is_err())
    });
    if members.is_empty() && matched.is_none() {
        return runs;
    }
    let mut out = Vec::with_capacity(runs.len());
    for (id, rows) in runs {
        let Some(table) = world.table(id) else {
            continue;
        };
        let entities = table.get().entities();
        let passes = |row: u32| {
            let e = entities[row as usize];
            members
                .iter()
                .all(|&(t, must)| world.sparse_row(t, e).is_some() == must)
                && matched.as_ref().is_none_or(|tables| {
                    world
                        .find(e)
                        .is_some_and(|(t, _)| tables.binary_search(&t).is_ok())
                })
        };
        let picked: Vec<u32> = match &rows {
            TableRows::Run(run) => {
                let picked: Vec<u32> = (run.start as u32..run.end as u32)
                    .filter(|&r| passes(r))
                    .collect();
                if picked.len() == run.len() {
                    out.push((id, rows));
                    continue;
                }
                picked
            }
            TableRows::Picked(list) => list.iter().copied().filter(|&r| passes(r)).collect(),
        };
        if !picked.is_empty() {
            out.push((id, TableRows::Picked(picked)));
        }
    }
    out
}

/// The entities a scan is narrowed to: its ids, or its index's candidates when they are
/// at most `limit` (more is more than the caller would use: `Index::search` gives up);
/// `None` when it has neither or the index cannot narrow it that far.
pub(super) fn candidates(scan: &EntityScan, reader: &Reader<'_>, limit: usize) -> Option<Vec<Entity>> {
    // A join by id reads a scan that has no ids or index of its own (`join_all`); a
    // subscription's entities (`query::rows_for`) narrow a scan whose own ids, taken out
    // of its WHERE, still hold.
    if let Some(ids) = reader.ids_for(scan) {
        return Some(match scan.ids.is_some() {
            true => {
                let own: hashbrown::HashSet<Entity> = own_ids(scan, reader).into_iter().collect();
                ids.into_iter().filter(|e| own.contains(e)).collect()
            }
            false => ids,
        });
    }
    match (&scan.ids, &scan.index) {
        (Some(_), _) => Some(own_ids(scan, reader)),
        (None, Some(lookup)) => index_candidates(lookup, reader, limit),
        (None, None) => None,
    }
}

/// The entities a scan's own ids (from `id = …` or `id IN (…)` in its WHERE) name.
fn own_ids(scan: &EntityScan, reader: &Reader<'_>) -> Vec<Entity> {
    let params = reader.params;
    scan.ids
        .iter()
        .flatten()
        .filter_map(|key| match key {
            IdKey::Entity(e) => Some(*e),
            IdKey::Param(p) => params.get(p).and_then(named_id),
            IdKey::Outer(n) => reader.outer_value(*n).as_ref().and_then(named_id),
        })
        .collect()
}

/// The rows a search of `scan`'s index is weighed against (`index_limit`): those of the
/// sparse table it starts from, or of the archetype tables it would walk.
pub fn index_basis(scan: &EntityScan, reader: &Reader<'_>) -> usize {
    match sparse_home(scan, reader) {
        Some(table) => reader.world.table(table).map_or(0, |t| t.len()),
        None => estimated_rows(scan, reader),
    }
}

/// The rows `scan` would walk, before its filter: what a join by id orders its relation
/// by until it reads it.
pub fn estimated_rows(scan: &EntityScan, reader: &Reader<'_>) -> usize {
    rows_in(reader.world, &reader.tables(scan))
}

/// Whether `scan` reads only entities named to it (its ids, or a join by id's), however
/// many: then never a walk.
fn named(scan: &EntityScan, reader: &Reader<'_>) -> bool {
    scan.ids.is_some() || reader.looks_up(scan)
}

/// The entity `key` names with `params`, when it is a constant or a parameter (`None`
/// for an outer query's value, which only a reader has).
#[inline]
pub(super) fn key_id(key: &IdKey, params: &ParamValues) -> Option<Entity> {
    match key {
        IdKey::Entity(e) => Some(*e),
        // A positional parameter's value taken at once (`ParamValues::get`, out of line,
        // answers a named one, and a missing one while learning columns).
        IdKey::Param(p @ Param::Position(n)) => params
            .positional
            .get(n.wrapping_sub(1))
            .or_else(|| params.get(p))
            .and_then(named_id),
        IdKey::Param(p) => params.get(p).and_then(named_id),
        IdKey::Outer(_) => None,
    }
}

/// The entity an id key's value names: an id, or an integer that is one's bits.
#[inline]
pub(super) fn named_id(v: &Value) -> Option<Entity> {
    match v {
        Value::Entity(e) => Some(*e),
        Value::Int(i) => u64::try_from(*i).ok().and_then(Entity::from_bits),
        _ => None,
    }
}

/// `scan_runs` over the archetype tables, before the sparse components' checks.
fn dense_runs(scan: &EntityScan, reader: &Reader<'_>) -> (Vec<(TableId, TableRows)>, bool) {
    let world = reader.world;
    if named(scan, reader)
        && let Some(found) = candidates(scan, reader, 0)
    {
        return (picked_runs(scan, world, found), false);
    }
    let tables = reader.tables(scan);
    let walk = |tables: &[TableId]| -> Vec<(TableId, TableRows)> {
        let changes = scan
            .changes
            .zip(reader.changes_since())
            .filter(|&(column, _)| sparse_asked(world, column).is_none());
        let zones = Skipping::new(scan, reader);
        if changes.is_some() || zones.is_some() {
            return skipping_walk(scan, reader, tables, changes, zones.as_ref());
        }
        // Most tables are one morsel: room for one run each, made once.
        let mut runs = Vec::with_capacity(tables.len());
        for &id in tables {
            let len = world.table(id).map_or(0, |t| t.len());
            runs.extend(morsels(len).map(|rows| (id, TableRows::Run(rows))));
        }
        runs
    };
    // A required sparse component held by few entities narrows the scan like an index
    // (an UPDATE of an archetype component reads the archetype tables, not its table).
    let skips_changes = scan.changes.is_some() && reader.changes_since().is_some();
    let few_holders = || {
        if skips_changes {
            // A reader's changed() walk skips more than the holders would narrow.
            return None;
        }
        scan.sparse
            .iter()
            .filter(|m| m.must == Some(true))
            .filter_map(|m| world.table(m.table))
            .map(|t| t.get().entities())
            .min_by_key(|e| e.len())
            .map(<[Entity]>::to_vec)
    };
    let rows = rows_in(world, &tables);
    let entities: Vec<Entity> = match candidates(scan, reader, index_limit(rows)).or_else(few_holders) {
        // Finding, sorting and reading many scattered rows costs more than a walk over
        // all of them; either way the filter gives the same rows.
        Some(found) if found.len() <= index_limit(rows) => found,
        _ => return (walk(&tables), true),
    };
    (picked_runs(scan, world, entities), false)
}

/// The rows of the entities `picked` (a scan's ids, a join by id's, an index's
/// candidates, a sparse component's holders) that a scan reads, in the order a walk
/// would meet them (tables in id order, rows in order): each entity's table is checked
/// where the entity is found, so no list of the scan's tables is searched (a statement
/// planned for one run, an UPDATE of one entity by text, paid about 800 instructions to
/// make one).
fn picked_runs(scan: &EntityScan, world: &World, picked: Vec<Entity>) -> Vec<(TableId, TableRows)> {
    let row_of = |e: Entity| {
        let (t, row) = world.find(e)?;
        world
            .table(t)
            .is_some_and(|table| scan_holds(scan, &table))
            .then_some(())?;
        Some((t, u32::try_from(row.index()).ok()?))
    };
    if let [one] = picked[..] {
        return row_of(one).map_or_else(Vec::new, |(t, row)| vec![(t, TableRows::Picked(vec![row]))]);
    }
    let mut found: Vec<(TableId, u32)> = picked.into_iter().filter_map(row_of).collect();
    found.sort_unstable();
    found.dedup();
    let mut batches: Vec<(TableId, TableRows)> = Vec::with_capacity(1);
    for (table, row) in found {
        match batches.last_mut() {
            Some((t, TableRows::Picked(rows))) if *t == table && rows.len() < MORSEL_ROWS => rows.push(row),
            _ => batches.push((table, TableRows::Picked(vec![row]))),
        }
    }
    batches
}

/// Whether `scan` reads archetype table `table` (`reads_table`).
pub(super) fn scan_holds(scan: &EntityScan, table: &Table) -> bool {
    reads_table(scan.only, &scan.required, &scan.excluded, table)
}

/// Whether a scan of `only` (its one table, if it names one), `required` and `excluded`
/// reads archetype table `table`: its one table, else any holding every component it
/// requires and none it excludes.
pub(super) fn reads_table(
    only: Option<TableId>,
    required: &[ComponentId],
    excluded: &[ComponentId],
    table: &Table,
) -> bool {
    only.is_none_or(|only| only == table.id())
        && required.iter().all(|c| table.contains(*c))
        && !excluded.iter().any(|c| table.contains(*c))
}

/// The table of the sparse component `column` (`changed()`, `added()`) asks about; `None`
/// for a dense one.
pub fn sparse_asked(world: &World, column: ScanColumn) -> Option<TableId> {
    world.component(column.asks_changes_of()?).ok()?.sparse_table()
}

/// An index's candidates are used only while they are at most this fraction (1/n) of the
/// rows a walk would read, and a search stops past it. `benches/index.rs` (`index_range_*`,
/// 1M rows, keys scattered over them): the index reads 0.5% of the rows in 0.37 of a
/// two-core walk's time and 1.5% in about 1.5 times it.
pub const WALK_FRACTION: usize = 64;

/// However few the rows, an index's candidates are used while there are at most this
/// many: reading a handful of scattered rows costs microseconds either way.
pub const WALK_FLOOR: usize = 64;

/// The most candidates an index search may give a scan that would otherwise walk `rows`
/// rows (`WALK_FRACTION`, `WALK_FLOOR`).
pub fn index_limit(rows: usize) -> usize {
    (rows / WALK_FRACTION).max(WALK_FLOOR)
}

/// The entities `lookup`'s index gives for this run's values; `None` when it cannot narrow
/// the scan (the index is gone, a value has the wrong type).
fn index_candidates(lookup: &IndexLookup, reader: &Reader<'_>, limit: usize) -> Option<Vec<Entity>> {
    let world = reader.world;
    let value = |v: &ProbeValue| probe_now(v, reader);
    let values = |vs: &[ProbeValue]| vs.iter().map(value).collect::<Option<Vec<_>>>();
    let bound = |b: &Bound<ProbeValue>| -> Option<Bound<Value>> {
        Some(match b {
            Bound::Included(v) => Bound::Included(value(v)?),
            Bound::Excluded(v) => Bound::Excluded(value(v)?),
            Bound::Unbounded => Bound::Unbounded,
        })
    };
    let optional = |vs: &[Option<ProbeValue>]| -> Option<Vec<Option<Value>>> {
        vs.iter()
            .map(|v| match v {
                Some(v) => value(v).map(Some),
                None => Some(None),
            })
            .collect()
    };
    let probe = match &lookup.probe {
        ProbePlan::Within { center, radius } => Probe::Within {
            center: values(center)?,
            radius: value(radius)?,
        },
        ProbePlan::Box { lo, hi } => Probe::Box {
            lo: optional(lo)?,
            hi: optional(hi)?,
        },
        ProbePlan::Nearest { center, k } => Probe::Nearest {
            center: values(center)?,
            k: *k,
        },
        ProbePlan::Equal(vs) => Probe::Equal(values(vs)?),
        ProbePlan::Range { lo, hi } => Probe::Range {
            lo: bound(lo)?,
            hi: bound(hi)?,
        },
        ProbePlan::Tuple { equal, lo, hi } => Probe::Tuple {
            equal: values(equal)?,
            lo: bound(lo)?,
            hi: bound(hi)?,
        },
        ProbePlan::Prefix(p) => match value(p)? {
            Value::Text(t) => Probe::Prefix(like_prefix(&t).to_owned()),
            // LIKE NULL matches nothing.
            Value::Null => return Some(Vec::new()),
            _ => return None,
        },
    };
    Indexes::of(world).get(&lookup.index)?.search(&probe, limit)
}

/// A search operand's value in this run: a constant, or a parameter or outer value cast
/// to the type the plan compares it in, as the filter casts it; `None` when it is not
/// known (an unbound parameter) or does not cast.
fn probe_now(v: &ProbeValue, reader: &Reader<'_>) -> Option<Value> {
    let cast = |v: &Value, ty: DataType| match v {
        Value::Null => Some(Value::Null),
        v => cast_value(v, ty).ok(),
    };
    match v {
        ProbeValue::Const(v) => Some(v.clone()),
        ProbeValue::Param { param, ty } => cast(reader.params.get(param)?, *ty),
        ProbeValue::Outer { n, ty } => cast(&reader.outer_value(*n)?, *ty),
    }
}

/// A scan's skip conditions (`EntityScan::skips`) with this run's values: per condition,
/// its field and what passes it: for zone maps the ranges of values (one for a comparison,
/// one per value for IN), for a filter index the keys of the values looked for (none when
/// no value can pass, as against NULL). Conditions whose values are not known, or not of
/// a type they can use, decide nothing.
pub struct Skipping {
    conditions: Vec<(FieldId, Passes)>,
}

/// Whether `name` is a filter index on `field` in the reader's world.
fn filter_index(reader: &Reader<'_>, name: &str, field: FieldId) -> bool {
    Indexes::of(reader.world)
        .get(name)
        .is_some_and(|i| i.kind() == IndexKind::Filter && i.fields() == [field])
}

/// What passes one skip condition.
enum Passes {
    /// Values in one of these ranges; `None`: any (the condition decides nothing).
    Ranges(Option<Vec<KeyRange>>),
    /// Values with one of these keys (`member_key`).
    Keys(Vec<u64>),
}

/// What a table's zone maps and filters say of a scan's rows in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkipVerdict {
    /// Every block may hold rows that pass (or nothing can tell).
    Read,
    /// No row passes condition `n` (in `EntityScan::skips` order).
    Skip(usize),
    /// Only the blocks of `BLOCK_ROWS` rows marked true may.
    Blocks(Vec<bool>),
    /// Every block is ruled out, not all by the same condition.
    AllBlocks,
}

impl Skipping {
    /// `None` when the scan has no skip condition this run can use.
    pub fn new(scan: &EntityScan, reader: &Reader<'_>) -> Option<Skipping> {
        if scan.skips.is_empty() {
            return None;
        }
        let key = |v: Value| -> Option<Option<ZoneKey>> {
            Some(match v {
                Value::Null => None,
                Value::Int(i) => Some(ZoneKey::Int(i128::from(i))),
                Value::Entity(e) => Some(ZoneKey::Int(i128::from(e.to_bits()))),
                Value::Float(f) => Some(ZoneKey::Float(f)),
                Value::Real(r) => Some(ZoneKey::Float(f64::from(r))),
                _ => return None,
            })
        };
        let values = |vs: &[ProbeValue]| {
            vs.iter()
                .map(|v| probe_now(v, reader))
                .collect::<Option<Vec<_>>>()
        };
        let mut conditions = Vec::with_capacity(scan.skips.len());
        for z in &scan.skips {
            let passes = match &z.test {
                SkipTest::Compare(op, v) => Passes::Ranges(probe_now(v, reader).and_then(key).map(|k| {
                    // Compared with NULL, no row passes.
                    k.map(|k| {
                        let (lo, hi) = match op {
                            CmpOp::Eq => (Bound::Included(k), Bound::Included(k)),
                            CmpOp::Lt => (Bound::Unbounded, Bound::Excluded(k)),
                            CmpOp::LtEq => (Bound::Unbounded, Bound::Included(k)),
                            CmpOp::Gt => (Bound::Excluded(k), Bound::Unbounded),
                            CmpOp::GtEq => (Bound::Included(k), Bound::Unbounded),
                            // The plan never makes one: every value may pass.
                            CmpOp::NotEq => (Bound::Unbounded, Bound::Unbounded),
                        };
                        KeyRange { lo, hi }
                    })
                    .into_iter()
                    .collect()
                })),
                // A NULL in the list matches no row.
                SkipTest::In(vs) => Passes::Ranges(values(vs).and_then(|vs| {
                    let keys = vs.into_iter().map(key).collect::<Option<Vec<_>>>()?;
                    Some(keys.into_iter().flatten().map(KeyRange::point).collect())
                })),
                // The index may be gone since the plan was made (a transaction that made it
                // rolled back): then its filters decide nothing, and none are made.
                SkipTest::Member { index, values: vs } => {
                    match (filter_index(reader, index, z.field), values(vs)) {
                        // NULL and NaN have no key: they match nothing.
                        (true, Some(vs)) => Passes::Keys(vs.iter().filter_map(member_key).collect()),
                        _ => Passes::Ranges(None),
                    }
                }
            };
            conditions.push((z.field, passes));
        }
        if conditions.iter().all(|(_, p)| matches!(p, Passes::Ranges(None))) {
            return None;
        }
        Some(Skipping { conditions })
    }

    /// Which of `table`'s rows may pass every condition. Cheapest first: filters already
    /// made (an equality rules out more), then each zone map's whole-column bounds (made in
    /// a pass of well under a nanosecond a row), then filters still to be made (several
    /// nanoseconds a row), then the zone maps' blocks.
    pub fn verdict(&self, table: &Table) -> SkipVerdict {
        if table.is_empty() {
            return SkipVerdict::Read;
        }
        let blocks = table.len().div_ceil(BLOCK_ROWS);
        let mut keep: Option<Vec<bool>> = None;
        let cell = |field: FieldId| table.column_index(field).and_then(|i| table.columns().get(i));
        let keyed = |made: bool| {
            self.conditions
                .iter()
                .enumerate()
                .filter_map(move |(n, (field, passes))| match passes {
                    Passes::Keys(keys) => {
                        let cell = cell(*field)?;
                        (cell.made_filters().is_some() == made).then_some((n, cell, keys))
                    }
                    Passes::Ranges(_) => None,
                })
        };
        let mut zoned = Vec::new();
        for (n, cell, keys) in keyed(true) {
            if !self.filtered(cell, keys, blocks, &mut keep) {
                return SkipVerdict::Skip(n);
            }
        }
        for (n, (field, passes)) in self.conditions.iter().enumerate() {
            let (Passes::Ranges(Some(ranges)), Some(zones)) = (passes, cell(*field).and_then(|c| c.zones()))
            else {
                continue;
            };
            if !ranges.iter().any(|r| zones.may_hold(r, None)) {
                return SkipVerdict::Skip(n);
            }
            if zones.blocks() > 1 {
                zoned.push((zones, ranges));
            }
        }
        for (n, cell, keys) in keyed(false) {
            if !self.filtered(cell, keys, blocks, &mut keep) {
                return SkipVerdict::Skip(n);
            }
        }
        for (zones, ranges) in zoned {
            let keep = keep.get_or_insert_with(|| vec![true; blocks]);
            for (b, k) in keep.iter_mut().enumerate() {
                *k &= ranges.iter().any(|r| zones.may_hold(r, Some(b)));
            }
        }
        match keep {
            Some(keep) if keep.contains(&false) => match keep.contains(&true) {
                true => SkipVerdict::Blocks(keep),
                false => SkipVerdict::AllBlocks,
            },
            _ => SkipVerdict::Read,
        }
    }

    /// Whether `cell`'s filters may hold one of `keys` in some block, narrowing `keep` to
    /// the blocks that may.
    fn filtered(&self, cell: &ColumnCell, keys: &[u64], blocks: usize, keep: &mut Option<Vec<bool>>) -> bool {
        let filters = cell.filters();
        // Most tables are one block: answered without a list of blocks.
        if blocks <= 1 {
            return keys.iter().any(|&k| filters.may_hold(k, 0));
        }
        let may: Vec<bool> = (0..blocks)
            .map(|b| keys.iter().any(|&k| filters.may_hold(k, b)))
            .collect();
        if !may.contains(&true) {
            return false;
        }
        let keep = keep.get_or_insert_with(|| vec![true; blocks]);
        for (k, m) in keep.iter_mut().zip(may) {
            *k &= m;
        }
        true
    }
}

/// `changed()` or `added()` of rows `rows` of `table`: whether each row's mark is after
/// the reader's tick `since`. A table without the component answers false; every row of
/// one that has it is new to a reader with no tick yet, and to one whose table keeps no
/// marks (which tracking, turned on before any run that asks, does not leave).
fn changes<'t>(
    table: &Table,
    column: ScanColumn,
    rows: &TableRows,
    len: usize,
    since: Option<u64>,
) -> Datum<'t> {
    match marks_of(table, column) {
        Marks::Absent => return Datum::Scalar(Value::Bool(false)),
        Marks::Untracked => return Datum::Scalar(Value::Bool(true)),
        Marks::Tracked => {}
    }
    let Some(since) = since else {
        return Datum::Scalar(Value::Bool(true));
    };
    let mut latest = 0;
    each_list(table, column, |m| latest = latest.max(m.latest()));
    if latest <= since {
        return Datum::Scalar(Value::Bool(false));
    }
    let mut out = vec![false; len];
    each_list(table, column, |list| {
        let ticks = list.ticks();
        match rows {
            TableRows::Run(run) => match ticks.get(run.clone()) {
                Some(ticks) => out.iter_mut().zip(ticks).for_each(|(o, &t)| *o |= t > since),
                // Marks not one per row would break an invariant: every row may have changed.
                None => out.fill(true),
            },
            TableRows::Picked(picked) => {
                for (o, &r) in out.iter_mut().zip(picked) {
                    *o |= ticks.get(r as usize).is_none_or(|&t| t > since);
                }
            }
        }
    });
    Datum::Vector(Vector::from_data(Data::Bool(Cow::Owned(out)), len))
}

/// What a table's change marks can say about `changed()` / `added()` (`column`).
enum Marks {
    /// The table does not hold the component: no row has changed.
    Absent,
    /// It keeps no marks for it: every row may have.
    Untracked,
    /// Its mark lists (`each_list`) say which rows have.
    Tracked,
}

fn marks_of(table: &Table, column: ScanColumn) -> Marks {
    let Some(component) = column.asks_changes_of() else {
        return Marks::Untracked;
    };
    if !table.contains(component) {
        return Marks::Absent;
    }
    let mut any = false;
    each_list(table, column, |_| any = true);
    if any { Marks::Tracked } else { Marks::Untracked }
}

/// Calls `f` with each mark list whose marks say whether a row changed for `column`: the
/// field's for `changed(C.field)`, every field's for `changed(C)` (a tag has none: its
/// added marks), the added marks for `added(C)`.
fn each_list<'t>(table: &'t Table, column: ScanColumn, mut f: impl FnMut(&'t MarkList)) {
    match column {
        ScanColumn::Changed(field) => table.changed_marks(field).into_iter().for_each(&mut f),
        ScanColumn::ChangedAny(c) => {
            let fields = table.component_columns(c).map_or(0, <[_]>::len);
            if fields == 0 {
                table.added_marks(c).into_iter().for_each(&mut f);
            }
            for i in 0..fields {
                if let Some(m) = u16::try_from(i)
                    .ok()
                    .and_then(|i| table.changed_marks(FieldId::new(c, i)))
                {
                    f(m);
                }
            }
        }
        ScanColumn::Added(c) => table.added_marks(c).into_iter().for_each(f),
        _ => {}
    }
}

/// A walk over `tables` that skips tables and blocks of `BLOCK_ROWS` rows no row of which
/// can pass: for a scan whose WHERE requires `changed()`/`added()` of a reader that last
/// ran at write tick `since` (`changes`), those that no mark list marks after it (tables
/// without the component are not read at all); for a scan with zone conditions
/// (`zones`), those whose zone maps rule a condition out. The rest are read in runs of at
/// most `MORSEL_ROWS`. An EXPLAIN ANALYZE counts what zone maps skipped.
fn skipping_walk(
    scan: &EntityScan,
    reader: &Reader<'_>,
    tables: &[TableId],
    changes: Option<(ScanColumn, u64)>,
    zones: Option<&Skipping>,
) -> Vec<(TableId, TableRows)> {
    let mut out = Vec::new();
    let (mut skipped_tables, mut skipped_blocks) = (0, 0);
    for &id in tables {
        let Some(table) = reader.world.table(id) else {
            continue;
        };
        let table = table.get();
        let blocks = table.len().div_ceil(BLOCK_ROWS);
        // Per block, whether it may hold rows that pass; `None`: all may.
        let mut keep: Option<Vec<bool>> = None;
        if let Some((column, since)) = changes {
            match marks_of(table, column) {
                Marks::Absent => continue,
                Marks::Untracked => {}
                Marks::Tracked => {
                    let mut latest = 0;
                    each_list(table, column, |m| latest = latest.max(m.latest()));
                    if latest <= since {
                        continue;
                    }
                    let mut hit = vec![false; blocks];
                    each_list(table, column, |m| {
                        for (b, h) in hit.iter_mut().enumerate() {
                            *h |= m.blocks().get(b).is_none_or(|&t| t > since);
                        }
                    });
                    keep = Some(hit);
                }
            }
        }
        if let Some(zones) = zones {
            match zones.verdict(table) {
                SkipVerdict::Read => {}
                SkipVerdict::Skip(_) | SkipVerdict::AllBlocks => {
                    skipped_tables += 1;
                    continue;
                }
                SkipVerdict::Blocks(may) => {
                    let keep = keep.get_or_insert_with(|| vec![true; blocks]);
                    for (k, m) in keep.iter_mut().zip(may) {
                        skipped_blocks += usize::from(*k && !m);
                        *k &= m;
                    }
                }
            }
        }
        let Some(keep) = keep else {
            out.extend(morsels(table.len()).map(|rows| (id, TableRows::Run(rows))));
            continue;
        };
        let mut start = None;
        for b in 0..=blocks {
            let hit = keep.get(b).copied().unwrap_or(false);
            match (hit, start) {
                (true, None) => start = Some(b * BLOCK_ROWS),
                (false, Some(s)) => {
                    let end = (b * BLOCK_ROWS).min(table.len());
                    out.extend(morsels(end - s).map(|r| (id, TableRows::Run(s + r.start..s + r.end))));
                    start = None;
                }
                _ => {}
            }
        }
    }
    if let Some(profile) = reader.profile
        && zones.is_some()
    {
        profile.record(scan, |s| {
            s.zone_tables += skipped_tables;
            s.zone_blocks += skipped_blocks as u64;
        });
    }
    out
}

/// `0..len` cut into runs of at most `MORSEL_ROWS`.
fn morsels(len: usize) -> impl Iterator<Item = Range<usize>> {
    (0..len)
        .step_by(MORSEL_ROWS)
        .map(move |start| start..(start + MORSEL_ROWS).min(len))
}

/// The columns that a scan reads from rows `rows` of one table: borrowed for a run,
/// copied for picked rows. `since` is the reader's tick for `changed()` and `added()`.
pub fn table_batch<'t>(
    scan: &EntityScan,
    world: &'t World,
    table: &'t Table,
    width: usize,
    rows: &TableRows,
    since: Option<u64>,
) -> Batch<'t> {
    let mut batch = Batch::default();
    fill_batch(&mut batch, scan, world, table, width, rows, since, |_| true);
    batch
}

/// `table_batch` into `batch`, whose slots' list is kept (its values are dropped), of
/// only the slots `read` says something reads (the others stay unfilled): a statement
/// whose id lookup answered its WHERE reads no id column.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn fill_batch<'t>(
    batch: &mut Batch<'t>,
    scan: &EntityScan,
    world: &'t World,
    table: &'t Table,
    width: usize,
    rows: &TableRows,
    since: Option<u64>,
    read: impl Fn(usize) -> bool,
) {
    let len = rows.len();
    batch.len = len;
    batch.slots.clear();
    batch.slots.resize_with(width, || None);
    let mut lookups = Lookups::default();
    let looks_up = scan.reads_sparse || table.id().is_sparse();
    for &(slot, column) in &scan.columns {
        if !read(slot) {
            continue;
        }
        if looks_up && let Some(datum) = lookups.read(world, table, rows, column, since) {
            if let Some(s) = batch.slots.get_mut(slot) {
                *s = Some(datum);
            }
            continue;
        }
        let datum = match column {
            ScanColumn::Id => {
                let entities = table.entities();
                let ids: Vec<_> = match rows {
                    TableRows::Run(run) => entities[run.clone()].iter().map(|&e| Some(e)).collect(),
                    TableRows::Picked(picked) => picked.iter().map(|&r| Some(entities[r as usize])).collect(),
                };
                Datum::Vector(Vector::from_data(Data::Entity(Cow::Owned(ids)), len))
            }
            ScanColumn::Field(f) => match (table.column(f), rows) {
                (Some(c), TableRows::Run(run)) => Datum::Vector(Vector::from_column(c, run.clone())),
                (Some(c), TableRows::Picked(picked)) => Datum::Vector(Vector::gather_column(c, picked)),
                (None, _) => Datum::Scalar(Value::Null),
            },
            ScanColumn::Has(c) => Datum::Scalar(Value::Bool(table.contains(c))),
            ScanColumn::Changed(_) | ScanColumn::ChangedAny(_) | ScanColumn::Added(_) => {
                changes(table, column, rows, len, since)
            }
            ScanColumn::Archetype => Datum::Scalar(Value::Text(table.name().to_string())),
        };
        if let Some(s) = batch.slots.get_mut(slot) {
            *s = Some(datum);
        }
    }
}

/// What a batch looks up by entity, once per batch: each row's row in the tables of the
/// sparse components its columns read (`None` where the entity lacks one), and, for a batch
/// of a sparse table's rows, each row's archetype table and row.
#[derive(Default)]
struct Lookups {
    sparse: Vec<(TableId, Vec<Option<u32>>)>,
    located: Option<Vec<(TableId, u32)>>,
}

/// The entities of rows `rows` of `table`.
fn row_entities<'t>(table: &'t Table, rows: &'t TableRows) -> impl Iterator<Item = Entity> + 't {
    let entities = table.entities();
    let (run, picked) = match rows {
        TableRows::Run(run) => (run.clone(), &[][..]),
        TableRows::Picked(picked) => (0..0, &picked[..]),
    };
    entities[run]
        .iter()
        .copied()
        .chain(picked.iter().map(move |&r| entities[r as usize]))
}

impl Lookups {
    /// `column` of the batch when the home table cannot answer it: a sparse component's
    /// (looked up in its table), or, in a batch of a sparse table's rows, an archetype
    /// component's (looked up where each entity's archetype row is). `None` for the
    /// columns the home table answers.
    fn read<'t>(
        &mut self,
        world: &'t World,
        home: &Table,
        rows: &TableRows,
        column: ScanColumn,
        since: Option<u64>,
    ) -> Option<Datum<'t>> {
        if column == ScanColumn::Archetype && home.id().is_sparse() {
            return Some(self.archetypes(world, home, rows));
        }
        let component = column.component()?;
        if home.contains(component) {
            return None;
        }
        match world.component(component).ok()?.sparse_table() {
            Some(id) => self.sparse(world, id, home, rows, column, since),
            None if home.id().is_sparse() => Some(self.dense(world, home, rows, column, since)),
            None => None,
        }
    }

    /// A column of the sparse component of table `id`, for the rows of another table.
    fn sparse<'t>(
        &mut self,
        world: &'t World,
        id: TableId,
        home: &Table,
        rows: &TableRows,
        column: ScanColumn,
        since: Option<u64>,
    ) -> Option<Datum<'t>> {
        let table = world.table(id)?.get();
        let at = match self.sparse.iter().position(|(t, _)| *t == id) {
            Some(i) => i,
            None => {
                let found = row_entities(home, rows)
                    .map(|e| world.sparse_row(id, e).map(|r| r as u32))
                    .collect();
                self.sparse.push((id, found));
                self.sparse.len() - 1
            }
        };
        let found = &self.sparse[at].1;
        let len = found.len();
        let present: Vec<bool> = found.iter().map(Option::is_some).collect();
        Some(match column {
            ScanColumn::Field(f) => match table.column(f) {
                Some(c) if present.iter().any(|&p| p) => {
                    let picked: Vec<u32> = found.iter().map(|r| r.unwrap_or(0)).collect();
                    let mut v = Vector::gather_column(c, &picked);
                    if present.iter().any(|&p| !p) {
                        v.valid = Some(Cow::Owned(present));
                    }
                    Datum::Vector(v)
                }
                _ => Datum::Scalar(Value::Null),
            },
            ScanColumn::Has(_) => Datum::Vector(Vector::from_data(Data::Bool(Cow::Owned(present)), len)),
            _ => {
                let picked: Vec<u32> = found.iter().flatten().copied().collect();
                let n = picked.len();
                let marked = changes(table, column, &TableRows::Picked(picked), n, since);
                // Spread the answers for the rows present back over the batch's rows.
                let mut answers = (0..).map(|k| marked.get(k));
                let out: Vec<bool> = present
                    .iter()
                    .map(|&p| p && answers.next() == Some(Value::Bool(true)))
                    .collect();
                Datum::Vector(Vector::from_data(Data::Bool(Cow::Owned(out)), len))
            }
        })
    }

    /// Each row's archetype table and row, for the rows of a sparse table (whose entities
    /// are all alive).
    fn located(&mut self, world: &World, home: &Table, rows: &TableRows) -> &[(TableId, u32)] {
        self.located.get_or_insert_with(|| {
            // A loop of its own over each kind of rows, not one over `row_entities`' chain,
            // whose fold called the lookup out of line for each row (a 20,000-row sparse
            // join, `benches/changes.rs` `join_sum_sparse`: 115 -> 94 µs by this loop
            // alone, 82 µs with `EntityIndex::locate` inlined as well; one generic helper
            // serving this and `sparse` measured 88-91 µs).
            let entities = home.entities();
            let at = |e: Entity| match world.find(e) {
                Some((t, r)) => (t, r.index() as u32),
                None => (TableId::VOID, u32::MAX),
            };
            match rows {
                TableRows::Run(run) => entities[run.clone()].iter().map(|&e| at(e)).collect(),
                TableRows::Picked(picked) => picked.iter().map(|&r| at(entities[r as usize])).collect(),
            }
        })
    }

    /// A column of an archetype component, for the rows of a sparse table: read, run by
    /// run of rows whose entities share an archetype table, from those tables.
    fn dense<'t>(
        &mut self,
        world: &'t World,
        home: &Table,
        rows: &TableRows,
        column: ScanColumn,
        since: Option<u64>,
    ) -> Datum<'t> {
        let located = self.located(world, home, rows);
        let mut out: Option<Vector<'t>> = None;
        let mut flags: Vec<bool> = Vec::with_capacity(located.len());
        for run in located.chunk_by(|a, b| a.0 == b.0) {
            let n = run.len();
            let picked: Vec<u32> = run.iter().map(|&(_, r)| r).collect();
            let table = world.table(run[0].0).map(|t| t.get());
            match column {
                ScanColumn::Field(f) => {
                    let part = match table.and_then(|t| t.column(f)) {
                        Some(c) if picked.iter().all(|&r| (r as usize) < c.len()) => {
                            Vector::gather_column(c, &picked)
                        }
                        _ => Vector::nulls(n),
                    };
                    match &mut out {
                        None => out = Some(part),
                        Some(out) => out.append(&part),
                    }
                }
                ScanColumn::Has(c) => {
                    flags.extend(std::iter::repeat_n(table.is_some_and(|t| t.contains(c)), n))
                }
                _ => match table {
                    Some(t) => {
                        let marked = changes(t, column, &TableRows::Picked(picked), n, since);
                        flags.extend((0..n).map(|k| marked.get(k) == Value::Bool(true)));
                    }
                    None => flags.extend(std::iter::repeat_n(false, n)),
                },
            }
        }
        match column {
            ScanColumn::Field(_) => Datum::Vector(out.unwrap_or_else(|| Vector::nulls(0))),
            _ => {
                let len = flags.len();
                Datum::Vector(Vector::from_data(Data::Bool(Cow::Owned(flags)), len))
            }
        }
    }

    /// The `archetype` column (of `entities`) for the rows of a sparse table.
    fn archetypes<'t>(&mut self, world: &'t World, home: &Table, rows: &TableRows) -> Datum<'t> {
        let names: Vec<String> = self
            .located(world, home, rows)
            .iter()
            .map(|&(t, _)| {
                world
                    .table(t)
                    .map_or_else(String::new, |t| t.get().name().to_string())
            })
            .collect();
        let len = names.len();
        Datum::Vector(Vector::from_data(Data::Text(Cow::Owned(names)), len))
    }
}
