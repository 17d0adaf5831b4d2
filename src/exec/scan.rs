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

use hashbrown::HashMap;

use super::error::ExecError;
use super::reader::Reader;
use crate::index::{Indexes, Probe};
use crate::plan::{
    EntityScan, IdKey, IndexLookup, ParamValues, ProbePlan, ProbeValue, ScanColumn, cast_value, like_prefix,
};
use crate::storage::{BLOCK_ROWS, Entity, FieldId, MarkList, Table, TableId, Value, World};
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
    let batches = scan_runs(scan, reader);
    let walked = batches.iter().any(|(_, rows)| matches!(rows, TableRows::Run(_)));
    for (id, rows) in batches {
        if let Some(table) = reader.world.table(id) {
            f(table_batch(
                scan,
                reader.world,
                table.get(),
                width,
                &rows,
                reader.changes_since(),
            ))?;
        }
    }
    Ok(walked)
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
    /// The rows as runs of adjacent rows, for writers that borrow a range of a column.
    pub fn runs(&self) -> Vec<Range<usize>> {
        match self {
            TableRows::Run(rows) => vec![rows.clone()],
            TableRows::Picked(picked) => {
                let mut runs: Vec<Range<usize>> = Vec::new();
                for &row in picked {
                    let row = row as usize;
                    match runs.last_mut() {
                        Some(run) if run.end == row => run.end += 1,
                        _ => runs.push(row..row + 1),
                    }
                }
                runs
            }
        }
    }
}

/// The rows `scan` reads, as batches of at most `MORSEL_ROWS` rows of one table, in table
/// order and row order within a table. A scan with `ids`, or whose index narrows it to
/// few enough candidates, reads only the rows the entity index gives for those entities,
/// in the same order a walk would meet them.
pub fn scan_runs(scan: &EntityScan, reader: &Reader<'_>) -> Vec<(TableId, TableRows)> {
    let runs = dense_runs(scan, reader);
    if scan.sparse.iter().all(|m| m.must.is_none()) {
        return runs;
    }
    keep_sparse_members(scan, reader.world, runs)
}

/// The rows of `runs` whose entities have each sparse component `scan` requires and none
/// it excludes; a run kept whole stays a run.
fn keep_sparse_members(
    scan: &EntityScan,
    world: &World,
    runs: Vec<(TableId, TableRows)>,
) -> Vec<(TableId, TableRows)> {
    let members: Vec<(TableId, bool)> = scan
        .sparse
        .iter()
        .filter_map(|m| Some((m.table, m.must?)))
        .collect();
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

/// `scan_runs` before the sparse components' checks.
fn dense_runs(scan: &EntityScan, reader: &Reader<'_>) -> Vec<(TableId, TableRows)> {
    let (world, params) = (reader.world, reader.params);
    let tables = reader.tables(scan);
    let walk = |tables: &[TableId]| -> Vec<(TableId, TableRows)> {
        if let (Some(column), Some(since)) = (scan.changes, reader.changes_since())
            && sparse_asked(world, column).is_none()
        {
            return changed_walk(world, tables, column, since);
        }
        tables
            .iter()
            .flat_map(|&id| {
                morsels(world.table(id).map_or(0, |t| t.len())).map(move |rows| (id, TableRows::Run(rows)))
            })
            .collect()
    };
    let entities: Vec<Entity> = match (&scan.ids, &scan.index) {
        (Some(ids), _) => ids
            .iter()
            .filter_map(|key| match key {
                IdKey::Entity(e) => Some(*e),
                IdKey::Param(p) => match params.get(p) {
                    Some(Value::Entity(e)) => Some(*e),
                    Some(Value::Int(i)) => u64::try_from(*i).ok().and_then(Entity::from_bits),
                    _ => None,
                },
            })
            .collect(),
        (None, Some(lookup)) => {
            let rows = rows_in(world, &tables);
            match index_candidates(lookup, world, params) {
                // Finding, sorting and reading many scattered rows costs more than a walk
                // over all of them; either way the filter gives the same rows.
                Some(found) if found.len() <= rows / WALK_FRACTION => found,
                _ => return walk(&tables),
            }
        }
        (None, None) => match sparse_start(scan, reader, &tables) {
            Some(found) => found,
            None => return walk(&tables),
        },
    };
    let order: HashMap<TableId, usize> = tables.iter().enumerate().map(|(i, &t)| (t, i)).collect();
    let mut found: Vec<(usize, TableId, u32)> = entities
        .into_iter()
        .filter_map(|e| world.locate(e).ok())
        .filter_map(|(t, row)| Some((*order.get(&t)?, t, u32::try_from(row.index()).ok()?)))
        .collect();
    found.sort_unstable();
    found.dedup();
    let mut batches: Vec<(TableId, TableRows)> = Vec::new();
    for (_, table, row) in found {
        match batches.last_mut() {
            Some((t, TableRows::Picked(rows))) if *t == table && rows.len() < MORSEL_ROWS => rows.push(row),
            _ => batches.push((table, TableRows::Picked(vec![row]))),
        }
    }
    batches
}

/// The table of the sparse component `column` (`changed()`, `added()`) asks about; `None`
/// for a dense one.
pub fn sparse_asked(world: &World, column: ScanColumn) -> Option<TableId> {
    world.component(column.asks_changes_of()?).ok()?.sparse_table()
}

/// The entities a scan that requires a sparse component starts from, instead of walking
/// its tables: for a reader's `changed()`/`added()` of a sparse component WHERE requires,
/// those its marks say changed since the reader's last run (every holder on a first run);
/// else the holders of the required sparse component held by the fewest entities, when
/// they are fewer than the rows of the tables.
fn sparse_start(scan: &EntityScan, reader: &Reader<'_>, tables: &[TableId]) -> Option<Vec<Entity>> {
    let world = reader.world;
    if let Some(column) = scan.changes
        && let Some(id) = sparse_asked(world, column)
    {
        let table = world.table(id)?.get();
        let Some(since) = reader.changes_since() else {
            return Some(table.entities().to_vec());
        };
        let mut found = Vec::new();
        for (_, rows) in changed_walk(world, &[id], column, since) {
            if let TableRows::Run(run) = rows {
                found.extend_from_slice(&table.entities()[run]);
            }
        }
        return Some(found);
    }
    let smallest = scan
        .sparse
        .iter()
        .filter(|m| m.must == Some(true))
        .filter_map(|m| world.table(m.table))
        .map(|t| t.get())
        .min_by_key(|t| t.len())?;
    (smallest.len() < rows_in(world, tables)).then(|| smallest.entities().to_vec())
}

/// An index's candidates are used only while they are at most this fraction (1/n) of the
/// rows a walk would read.
pub const WALK_FRACTION: usize = 8;

/// The entities `lookup`'s index gives for this run's values; `None` when it cannot narrow
/// the scan (the index is gone, a value has the wrong type).
fn index_candidates(lookup: &IndexLookup, world: &World, params: &ParamValues) -> Option<Vec<Entity>> {
    let value = |v: &ProbeValue| -> Option<Value> {
        match v {
            ProbeValue::Const(v) => Some(v.clone()),
            ProbeValue::Param { param, ty } => match params.get(param)? {
                Value::Null => Some(Value::Null),
                v => cast_value(v, *ty).ok(),
            },
        }
    };
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
        ProbePlan::Prefix(p) => match value(p)? {
            Value::Text(t) => Probe::Prefix(like_prefix(&t).to_owned()),
            // LIKE NULL matches nothing.
            Value::Null => return Some(Vec::new()),
            _ => return None,
        },
    };
    Indexes::of(world).get(&lookup.index)?.search(&probe)
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

/// A walk over `tables` for a scan whose WHERE requires `column` (`changed()`, `added()`)
/// of a reader that last ran at write tick `since`: only the blocks of rows that some
/// mark list marks after it, in runs of at most `MORSEL_ROWS`; tables without the
/// component, or whose marks are all older, are not read at all.
fn changed_walk(
    world: &World,
    tables: &[TableId],
    column: ScanColumn,
    since: u64,
) -> Vec<(TableId, TableRows)> {
    let mut out = Vec::new();
    for &id in tables {
        let Some(table) = world.table(id) else {
            continue;
        };
        let table = table.get();
        match marks_of(table, column) {
            Marks::Absent => continue,
            Marks::Untracked => {
                out.extend(morsels(table.len()).map(|rows| (id, TableRows::Run(rows))));
                continue;
            }
            Marks::Tracked => {}
        }
        let mut latest = 0;
        each_list(table, column, |m| latest = latest.max(m.latest()));
        if latest <= since {
            continue;
        }
        let blocks = table.len().div_ceil(BLOCK_ROWS);
        let mut start = None;
        for b in 0..=blocks {
            let mut hit = false;
            if b < blocks {
                each_list(table, column, |m| {
                    hit |= m.blocks().get(b).is_none_or(|&t| t > since)
                });
            }
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
    let len = match rows {
        TableRows::Run(run) => run.len(),
        TableRows::Picked(picked) => picked.len(),
    };
    let mut batch = Batch::new(len, width);
    let mut sparse = SparseRows::default();
    for &(slot, column) in &scan.columns {
        if scan.reads_sparse
            && let Some(datum) = sparse.read(world, table, rows, column, since)
        {
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
    batch
}

/// A batch's rows in the tables of the sparse components its columns read: per sparse
/// table, each row's row there (`None` where the entity lacks the component), looked up
/// once per batch.
#[derive(Default)]
struct SparseRows {
    found: Vec<(TableId, Vec<Option<u32>>)>,
}

impl SparseRows {
    /// `column` of the batch when it reads a sparse component (`None` for the others,
    /// which the home table answers).
    fn read<'t>(
        &mut self,
        world: &'t World,
        home: &Table,
        rows: &TableRows,
        column: ScanColumn,
        since: Option<u64>,
    ) -> Option<Datum<'t>> {
        let component = match column {
            ScanColumn::Field(f) | ScanColumn::Changed(f) => f.component(),
            ScanColumn::Has(c) | ScanColumn::ChangedAny(c) | ScanColumn::Added(c) => c,
            ScanColumn::Id | ScanColumn::Archetype => return None,
        };
        let id = world.component(component).ok()?.sparse_table()?;
        if home.id() == id {
            return None;
        }
        let table = world.table(id)?.get();
        let at = match self.found.iter().position(|(t, _)| *t == id) {
            Some(i) => i,
            None => {
                let entities = home.entities();
                let each = |r: usize| world.sparse_row(id, entities[r]).map(|r| r as u32);
                let found: Vec<Option<u32>> = match rows {
                    TableRows::Run(run) => run.clone().map(each).collect(),
                    TableRows::Picked(picked) => picked.iter().map(|&r| each(r as usize)).collect(),
                };
                self.found.push((id, found));
                self.found.len() - 1
            }
        };
        let found = &self.found[at].1;
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
}
