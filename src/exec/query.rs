//! Queries: scans, joins, filters, projection, then DISTINCT, UNION, ORDER BY and LIMIT.
//!
//! A query over one entity scan runs table by table on borrowed slices. Joins with ON
//! materialize each relation (its own filter applied during its scan) and join them by
//! hash on an equality between the two sides, or pair by pair otherwise.

use std::borrow::Cow;
use std::cell::RefCell;
use std::ops::{Bound, Range};

use hashbrown::HashMap;

use super::aggregate::{Aggregator, KeyVal, key_of};
use super::error::ExecError;
use super::eval::{EvalCtx, Selection, eval, select_rows};
use super::functions::{cast, value_cmp};
use super::vector::{Batch, Data, Datum, Vector};
use super::{Chunk, TableCache};
use crate::index::{Indexes, Probe};
use crate::parse::{Location, SetOp};
use crate::plan::{
    BExpr, BKind, CmpOp, DataType, EntityScan, IdKey, IndexLookup, JoinCondition, JoinKind, Output,
    ParamValues, ProbePlan, ProbeValue, QueryPlan, Relation, RelationSource, ScanColumn, SelectPlan, SetPlan,
    cast_value, like_prefix,
};
use crate::storage::{Entity, Table, TableId, Value, World};

type Result<T> = std::result::Result<T, ExecError>;

/// Series longer than this are refused rather than exhausting memory.
const MAX_SERIES: i64 = 1 << 31;

pub fn run_query(plan: &QueryPlan, cx: &EvalCtx<'_>) -> Result<Chunk> {
    let mut chunk = run_set(&plan.body, plan, cx)?;
    if !plan.order_by.is_empty() {
        let mut order: Vec<u32> = (0..chunk.len as u32).collect();
        let keys: Vec<Vec<Value>> = plan
            .order_by
            .iter()
            .map(|k| (0..chunk.len).map(|i| chunk.columns[k.column].get(i)).collect())
            .collect();
        order.sort_by(|&a, &b| {
            for (k, values) in plan.order_by.iter().zip(&keys) {
                let (x, y) = (&values[a as usize], &values[b as usize]);
                let ord = match (x == &Value::Null, y == &Value::Null) {
                    (true, true) => std::cmp::Ordering::Equal,
                    (true, false) => {
                        if k.nulls_first {
                            std::cmp::Ordering::Less
                        } else {
                            std::cmp::Ordering::Greater
                        }
                    }
                    (false, true) => {
                        if k.nulls_first {
                            std::cmp::Ordering::Greater
                        } else {
                            std::cmp::Ordering::Less
                        }
                    }
                    (false, false) => {
                        let o = value_cmp(x, y);
                        if k.desc { o.reverse() } else { o }
                    }
                };
                if ord != std::cmp::Ordering::Equal {
                    return ord;
                }
            }
            std::cmp::Ordering::Equal
        });
        chunk = gather_chunk(&chunk, &order);
    }
    let start = plan.offset.min(chunk.len);
    let end = plan
        .limit
        .map_or(chunk.len, |l| start.saturating_add(l).min(chunk.len));
    if start > 0 || end < chunk.len {
        chunk = Chunk {
            columns: chunk.columns.iter().map(|c| c.slice(start, end)).collect(),
            len: end - start,
        };
    }
    chunk.columns.truncate(plan.columns.len());
    Ok(chunk)
}

fn gather_chunk(chunk: &Chunk, rows: &[u32]) -> Chunk {
    Chunk {
        columns: chunk.columns.iter().map(|c| c.gather(rows)).collect(),
        len: rows.len(),
    }
}

fn run_set(set: &SetPlan, plan: &QueryPlan, cx: &EvalCtx<'_>) -> Result<Chunk> {
    match set {
        SetPlan::Select(s) => run_select(s, cx),
        SetPlan::Values(rows) => {
            let empty = Batch::new(1, 0);
            // The VALUES' own column types (the binder cast every row to them); a set
            // operation above casts the whole chunk to the type its sides meet in.
            let mut columns: Vec<Vector<'static>> = rows
                .first()
                .map(|row| row.iter().map(|e| Vector::empty(e.ty)).collect())
                .unwrap_or_default();
            for row in rows {
                for (i, e) in row.iter().enumerate() {
                    columns[i].push_value(&eval(e, &empty, cx)?.get(0));
                }
            }
            Ok(Chunk {
                columns,
                len: rows.len(),
            })
        }
        SetPlan::SetOp { op, left, right, all } => {
            let a = run_set(left, plan, cx)?;
            let b = run_set(right, plan, cx)?;
            let types: Vec<DataType> = plan.columns.iter().map(|c| c.ty).collect();
            let a = cast_chunk(a, &types)?;
            let b = cast_chunk(b, &types)?;
            Ok(set_op(*op, a, b, *all))
        }
    }
}

/// A row of a chunk as a hash key (NULLs equal, -0.0 is 0.0: rows are "not distinct").
fn row_key(chunk: &Chunk, i: usize) -> Vec<KeyVal> {
    chunk.columns.iter().map(|c| key_of(&c.get(i))).collect()
}

/// UNION, EXCEPT, INTERSECT of two chunks with the same column types, keeping the left
/// side's row order (then the right's, for UNION). Without ALL each result row is
/// distinct; with ALL, EXCEPT ALL removes one left row per equal right row and
/// INTERSECT ALL keeps as many as both sides have.
fn set_op(op: SetOp, mut a: Chunk, b: Chunk, all: bool) -> Chunk {
    if op == SetOp::Union {
        for (x, y) in a.columns.iter_mut().zip(&b.columns) {
            x.append(y);
        }
        a.len += b.len;
        return if all { a } else { distinct(a) };
    }
    let mut right: HashMap<Vec<KeyVal>, usize> = HashMap::new();
    for j in 0..b.len {
        *right.entry(row_key(&b, j)).or_default() += 1;
    }
    let mut seen = hashbrown::HashSet::new();
    let keep: Vec<u32> = (0..a.len)
        .filter(|&i| {
            let key = row_key(&a, i);
            let count = right.get_mut(&key);
            match (op, all, count) {
                (SetOp::Except, true, Some(n)) if *n > 0 => {
                    *n -= 1;
                    false
                }
                (SetOp::Except, true, _) => true,
                (SetOp::Except, false, found) => found.is_none() && seen.insert(key),
                (SetOp::Intersect, true, Some(n)) if *n > 0 => {
                    *n -= 1;
                    true
                }
                (SetOp::Intersect, true, _) => false,
                (SetOp::Intersect, false, found) => found.is_some() && seen.insert(key),
                // Handled above.
                (SetOp::Union, ..) => true,
            }
        })
        .map(|i| i as u32)
        .collect();
    gather_chunk(&a, &keep)
}

fn cast_chunk(chunk: Chunk, types: &[DataType]) -> Result<Chunk> {
    let len = chunk.len;
    let columns = chunk
        .columns
        .into_iter()
        .zip(types)
        .map(|(c, &ty)| {
            if c.data_type() == ty || matches!(c.data, Data::Null) {
                Ok(c)
            } else {
                Ok(cast(Datum::Vector(c), ty, Location::default())?
                    .into_vector(ty, len)
                    .into_owned())
            }
        })
        .collect::<Result<_>>()?;
    Ok(Chunk { columns, len })
}

/// Keeps the first of each set of equal rows.
fn distinct(chunk: Chunk) -> Chunk {
    let mut seen = hashbrown::HashSet::new();
    let keep: Vec<u32> = (0..chunk.len)
        .filter(|&i| {
            seen.insert(
                chunk
                    .columns
                    .iter()
                    .map(|c| key_of(&c.get(i)))
                    .collect::<Vec<KeyVal>>(),
            )
        })
        .map(|i| i as u32)
        .collect();
    if keep.len() == chunk.len {
        chunk
    } else {
        gather_chunk(&chunk, &keep)
    }
}

pub fn run_select(plan: &SelectPlan, cx: &EvalCtx<'_>) -> Result<Chunk> {
    let mut sink = Sink::new(&plan.output);
    let reads = sink.reads(plan.width);
    match plan.relations.as_slice() {
        [] => {
            let batch = Batch::new(1, plan.width);
            feed(plan, &batch, &mut sink, &reads, cx)?;
        }
        [
            Relation {
                source: RelationSource::Entities(scan),
                filter: None,
                on: None,
                ..
            },
        ] => match nearest_k(scan) {
            None => {
                for_each_morsel(scan, plan.width, cx, |batch| {
                    feed(plan, &batch, &mut sink, &reads, cx)
                })?;
            }
            Some(k) => sink = widen_nearest(plan, scan, k, &reads, cx)?,
        },
        _ => {
            let joined = join_all(plan, cx)?;
            feed(plan, &joined, &mut sink, &reads, cx)?;
        }
    }
    let chunk = sink.finish(cx)?;
    Ok(if plan.distinct { distinct(chunk) } else { chunk })
}

/// The k of a scan served by a k-nearest search.
fn nearest_k(scan: &EntityScan) -> Option<usize> {
    match scan.index.as_deref()?.probe {
        ProbePlan::Nearest { k, .. } => Some(k),
        _ => None,
    }
}

/// A k-nearest scan: the k nearest points may fail the rest of WHERE or lack a component
/// the scan requires, so while fewer than k rows pass, the search is repeated for 4×
/// as many points. It stops with k rows (every point not searched is farther than every
/// point searched, so those are the k nearest that pass) or once the scan walked every
/// row instead (the search would have found too many points, or could not narrow it).
fn widen_nearest<'p>(
    plan: &'p SelectPlan,
    scan: &EntityScan,
    k: usize,
    reads: &[bool],
    cx: &EvalCtx<'_>,
) -> Result<Sink<'p>> {
    let tables = cx.cache.borrow_mut().tables(cx.world, scan, cx.generation);
    let rows = rows_in(cx.world, &tables);
    let mut widened = scan.clone();
    let mut reach = k;
    loop {
        let mut sink = Sink::new(&plan.output);
        // A walk (the search could not narrow the scan) read every row.
        let walked = for_each_morsel(&widened, plan.width, cx, |batch| {
            feed(plan, &batch, &mut sink, reads, cx)
        })?;
        // A search for more than `rows / WALK_FRACTION` points always walks, so that
        // attempt read every row; the test also ends the loop when no table matches.
        if sink.len() >= k || walked || reach > rows / WALK_FRACTION {
            return Ok(sink);
        }
        reach = reach.saturating_mul(4);
        if let Some(lookup) = widened.index.as_deref_mut() {
            if let ProbePlan::Nearest { k, .. } = &mut lookup.probe {
                *k = reach;
            }
        }
    }
}

fn rows_in(world: &World, tables: &[TableId]) -> usize {
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
    cx: &EvalCtx<'w>,
    mut f: impl FnMut(Batch<'w>) -> Result<()>,
) -> Result<bool> {
    let batches = scan_runs(scan, cx.world, cx.cache, cx.generation, cx.params);
    let walked = batches.iter().any(|(_, rows)| matches!(rows, TableRows::Run(_)));
    for (id, rows) in batches {
        if let Some(table) = cx.world.table(id) {
            f(table_batch(scan, table.get(), width, &rows))?;
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
pub fn scan_runs(
    scan: &EntityScan,
    world: &World,
    cache: &RefCell<TableCache>,
    generation: u64,
    params: &ParamValues,
) -> Vec<(TableId, TableRows)> {
    let tables = cache.borrow_mut().tables(world, scan, generation);
    let walk = |tables: Vec<TableId>| -> Vec<(TableId, TableRows)> {
        tables
            .into_iter()
            .flat_map(|id| {
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
                _ => return walk(tables),
            }
        }
        (None, None) => return walk(tables),
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

/// An index's candidates are used only while they are at most this fraction (1/n) of the
/// rows a walk would read.
const WALK_FRACTION: usize = 8;

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

/// `0..len` cut into runs of at most `MORSEL_ROWS`.
fn morsels(len: usize) -> impl Iterator<Item = Range<usize>> {
    (0..len)
        .step_by(MORSEL_ROWS)
        .map(move |start| start..(start + MORSEL_ROWS).min(len))
}

/// The columns that a scan reads from rows `rows` of one table: borrowed for a run,
/// copied for picked rows.
pub fn table_batch<'t>(scan: &EntityScan, table: &'t Table, width: usize, rows: &TableRows) -> Batch<'t> {
    let len = match rows {
        TableRows::Run(run) => run.len(),
        TableRows::Picked(picked) => picked.len(),
    };
    let mut batch = Batch::new(len, width);
    for &(slot, column) in &scan.columns {
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
            ScanColumn::Archetype => Datum::Scalar(Value::Text(table.name().to_string())),
        };
        if let Some(s) = batch.slots.get_mut(slot) {
            *s = Some(datum);
        }
    }
    batch
}

/// Filter, then hand the surviving rows to the sink (only the columns it reads: a
/// `count(*)` reads none).
fn feed(
    plan: &SelectPlan,
    batch: &Batch<'_>,
    sink: &mut Sink<'_>,
    reads: &[bool],
    cx: &EvalCtx<'_>,
) -> Result<()> {
    let selection = match &plan.filter {
        Some(f) => select_rows(f, batch, cx)?,
        None => Selection::All,
    };
    match selection {
        Selection::None => Ok(()),
        Selection::All => sink.push(batch, cx),
        Selection::Rows(rows) => {
            let reads = |slot: usize| reads.get(slot).copied().unwrap_or(true);
            sink.push(&batch.gather_slots(&rows, reads), cx)
        }
    }
}

enum Sink<'p> {
    Rows {
        exprs: &'p [BExpr],
        columns: Vec<Vector<'static>>,
        len: usize,
    },
    Aggregate(Box<Aggregator<'p>>),
}

impl<'p> Sink<'p> {
    fn new(output: &'p Output) -> Sink<'p> {
        match output {
            Output::Rows(exprs) => Sink::Rows {
                exprs,
                columns: exprs.iter().map(|e| Vector::empty(e.ty)).collect(),
                len: 0,
            },
            Output::Aggregate {
                keys,
                aggs,
                having,
                outputs,
            } => Sink::Aggregate(Box::new(Aggregator::new(keys, aggs, having.as_ref(), outputs))),
        }
    }

    /// Which of a batch's `width` slots the sink reads.
    fn reads(&self, width: usize) -> Vec<bool> {
        let mut reads = vec![false; width];
        let mut mark = |slot: usize| {
            if let Some(r) = reads.get_mut(slot) {
                *r = true;
            }
        };
        match self {
            Sink::Rows { exprs, .. } => exprs.iter().for_each(|e| e.visit_slots(&mut mark)),
            Sink::Aggregate(a) => a.visit_slots(&mut mark),
        }
        reads
    }

    fn push(&mut self, batch: &Batch<'_>, cx: &EvalCtx<'_>) -> Result<()> {
        match self {
            Sink::Rows { exprs, columns, len } => {
                for (e, column) in exprs.iter().zip(columns.iter_mut()) {
                    let v = eval(e, batch, cx)?.into_vector(e.ty, batch.len);
                    column.append(&v);
                }
                *len += batch.len;
                Ok(())
            }
            Sink::Aggregate(a) => a.push(batch, cx),
        }
    }

    /// Rows pushed so far (groups are not counted until `finish`).
    fn len(&self) -> usize {
        match self {
            Sink::Rows { len, .. } => *len,
            Sink::Aggregate(_) => 0,
        }
    }

    fn finish(self, cx: &EvalCtx<'_>) -> Result<Chunk> {
        match self {
            Sink::Rows { columns, len, .. } => Ok(Chunk { columns, len }),
            Sink::Aggregate(a) => a.finish(cx),
        }
    }
}

// ---- joins --------------------------------------------------------------------------------

/// One relation's rows as an owned batch, its pushed-down filter applied.
fn materialize(relation: &Relation, width: usize, cx: &EvalCtx<'_>) -> Result<Batch<'static>> {
    let mut out = Batch::new(0, width);
    let append = |batch: Batch<'_>, out: &mut Batch<'static>| -> Result<()> {
        let batch = match &relation.filter {
            None => batch,
            Some(f) => match select_rows(f, &batch, cx)? {
                Selection::All => batch,
                Selection::None => return Ok(()),
                Selection::Rows(rows) => batch.gather(&rows),
            },
        };
        append_batch(out, &batch);
        Ok(())
    };
    match &relation.source {
        RelationSource::Entities(scan) => {
            for_each_morsel(scan, width, cx, |batch| append(batch, &mut out))?;
            // Slots a scan fills are present even when no table matched.
            for &(slot, _) in &scan.columns {
                if out.slots[slot].is_none() {
                    out.slots[slot] = Some(Datum::Vector(Vector::nulls(0)));
                }
            }
        }
        RelationSource::Series { start, end, slot } => {
            let n = if end < start {
                0
            } else {
                end.saturating_sub(*start).saturating_add(1)
            };
            if n > MAX_SERIES {
                return Err(ExecError::constraint(
                    Location::default(),
                    format!("a series of {n} rows is too long (at most {MAX_SERIES})"),
                ));
            }
            let values: Vec<i64> = (0..n).map(|i| start + i).collect();
            let mut batch = Batch::new(n as usize, width);
            batch.slots[*slot] = Some(Datum::Vector(Vector::from_data(
                Data::Int(Cow::Owned(values)),
                n as usize,
            )));
            append(batch, &mut out)?;
        }
        RelationSource::Walk(w) => {
            let rows = super::walk::walk(w, cx.world);
            let mut batch = Batch::new(rows.len(), width);
            let ids: Vec<Option<Entity>> = rows.iter().map(|&(e, _)| Some(e)).collect();
            let depths: Vec<i64> = rows.iter().map(|&(_, d)| d).collect();
            batch.slots[w.id_slot] = Some(Datum::Vector(Vector::from_data(
                Data::Entity(Cow::Owned(ids)),
                rows.len(),
            )));
            batch.slots[w.depth_slot] = Some(Datum::Vector(Vector::from_data(
                Data::Int(Cow::Owned(depths)),
                rows.len(),
            )));
            append(batch, &mut out)?;
        }
        RelationSource::Query { plan, slots } => {
            let chunk = run_query(plan, cx)?;
            let mut batch = Batch::new(chunk.len, width);
            for (column, &slot) in chunk.columns.into_iter().zip(slots) {
                batch.slots[slot] = Some(Datum::Vector(column));
            }
            append(batch, &mut out)?;
        }
    }
    Ok(out)
}

fn append_batch(out: &mut Batch<'static>, batch: &Batch<'_>) {
    for (slot, datum) in batch.slots.iter().enumerate() {
        let Some(d) = datum else { continue };
        let v = d.view().into_vector(datum_type(d), batch.len);
        match &mut out.slots[slot] {
            Some(Datum::Vector(existing)) => existing.append(&v),
            other => {
                let mut grown = Vector::nulls(out.len);
                grown.append(&v);
                *other = Some(Datum::Vector(grown));
            }
        }
    }
    out.len += batch.len;
    // Slots this batch did not fill keep their length.
    for d in out.slots.iter_mut().flatten() {
        if let Datum::Vector(v) = d {
            if v.len() < out.len {
                v.append(&Vector::nulls(out.len - v.len()));
            }
        }
    }
}

fn datum_type(d: &Datum<'_>) -> DataType {
    match d {
        Datum::Scalar(v) => DataType::of(v),
        Datum::Vector(v) => v.data_type(),
    }
}

/// Joins a select's relations. The freely ordered ones (`JoinPlan::free`) are each
/// materialized with their own filter, then joined smallest first: each step takes, among
/// the relations a hash key connects to those joined so far, the one with the fewest rows
/// (any smallest one when none is connected: a cross product), joins on every key that
/// connects it and applies every condition that step makes decidable. Ties go to FROM
/// order, so the same data joins the same way every run. The relations after them
/// (from the first LEFT JOIN on) then follow in FROM order with their ON.
pub fn join_all(plan: &SelectPlan, cx: &EvalCtx<'_>) -> Result<Batch<'static>> {
    let width = plan.width;
    let free = plan.joins.free.min(plan.relations.len());
    let mut inputs: Vec<Option<Batch<'static>>> = Vec::with_capacity(free);
    for relation in &plan.relations[..free] {
        inputs.push(Some(materialize(relation, width, cx)?));
    }
    let rows = |inputs: &[Option<Batch<'static>>], r: usize| inputs[r].as_ref().map_or(usize::MAX, |b| b.len);
    let mut pending: Vec<&JoinCondition> = plan.joins.conditions.iter().collect();
    let mut joined: Vec<usize> = Vec::new();
    let mut acc: Option<Batch<'static>> = None;
    while joined.len() < free {
        let remaining = (0..free).filter(|r| !joined.contains(r));
        let connects = |r: usize, c: &JoinCondition| match &c.equi {
            Some((a, b)) => {
                (b == &[r] && a.iter().all(|x| joined.contains(x)))
                    || (a == &[r] && b.iter().all(|x| joined.contains(x)))
            }
            None => false,
        };
        let connected: Vec<usize> = remaining
            .clone()
            .filter(|&r| !joined.is_empty() && pending.iter().any(|c| connects(r, c)))
            .collect();
        let pool: Vec<usize> = if connected.is_empty() {
            remaining.collect()
        } else {
            connected
        };
        let Some(&next) = pool.iter().min_by_key(|&&r| (rows(&inputs, r), r)) else {
            break;
        };
        let Some(right) = inputs[next].take() else {
            return Err(ExecError::internal(
                Location::default(),
                "a relation was joined twice",
            ));
        };
        // The hash keys connecting `next`, oriented (joined side, `next`'s side); then
        // every other condition this step can decide.
        let mut keys: Vec<(&BExpr, &BExpr)> = Vec::new();
        let mut checks: Vec<&BExpr> = Vec::new();
        pending.retain(|c| {
            let decidable = c.relations.iter().all(|x| *x == next || joined.contains(x));
            if !decidable {
                return true;
            }
            match (c.sides(), &c.equi) {
                (Some((l, r)), Some((a, _))) if connects(next, c) => {
                    keys.push(if a == &[next] { (r, l) } else { (l, r) });
                }
                _ => checks.push(&c.expr),
            }
            false
        });
        acc = Some(match acc {
            None => filter_batch(right, &checks, cx)?,
            Some(left) => inner_join(left, right, &keys, &checks, cx)?,
        });
        joined.push(next);
    }
    if !pending.is_empty() {
        return Err(ExecError::internal(
            Location::default(),
            "a join condition was left unapplied",
        ));
    }
    for relation in &plan.relations[free..] {
        let right = materialize(relation, width, cx)?;
        acc = Some(match acc {
            None => right,
            Some(left) => join(left, right, relation, cx)?,
        });
    }
    Ok(acc.unwrap_or_else(|| Batch::new(1, width)))
}

/// The rows of `batch` that pass every one of `checks`.
fn filter_batch(batch: Batch<'static>, checks: &[&BExpr], cx: &EvalCtx<'_>) -> Result<Batch<'static>> {
    let mut batch = batch;
    for check in checks {
        batch = match select_rows(check, &batch, cx)? {
            Selection::All => batch,
            Selection::None => batch.gather(&[]),
            Selection::Rows(rows) => batch.gather(&rows),
        };
    }
    Ok(batch)
}

/// A join key per row: `None` where a key is NULL or NaN (equal to nothing). An integer
/// compared with ids keys as the id of its value.
fn join_keys(exprs: &[&BExpr], batch: &Batch<'_>, cx: &EvalCtx<'_>) -> Result<Vec<Option<Vec<KeyVal>>>> {
    let columns: Vec<Datum<'_>> = exprs.iter().map(|e| eval(e, batch, cx)).collect::<Result<_>>()?;
    Ok((0..batch.len)
        .map(|i| {
            columns
                .iter()
                .map(|d| match d.get(i) {
                    Value::Null => None,
                    Value::Float(x) if x.is_nan() => None,
                    Value::Real(x) if x.is_nan() => None,
                    Value::Int(n) if n > 0 => Some(KeyVal::Entity(n as u64)),
                    v => Some(key_of(&v)),
                })
                .collect()
        })
        .collect())
}

/// An inner join of the rows joined so far with the next relation: by hash on `keys`
/// (each a pair of expressions over the left and right rows), pair by pair without keys;
/// the pairs that pass every one of `checks` are kept. Pairs are made and checked a
/// bounded chunk at a time.
fn inner_join(
    left: Batch<'static>,
    right: Batch<'static>,
    keys: &[(&BExpr, &BExpr)],
    checks: &[&BExpr],
    cx: &EvalCtx<'_>,
) -> Result<Batch<'static>> {
    let mut out = Batch::new(0, left.slots.len());
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    let flush = |pairs: &mut Vec<(u32, u32)>, out: &mut Batch<'static>| -> Result<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        let l: Vec<u32> = pairs.iter().map(|p| p.0).collect();
        let r: Vec<u32> = pairs.iter().map(|p| p.1).collect();
        let mut combined = left.gather(&l);
        merge_slots(&mut combined, right.gather(&r));
        let combined = filter_batch(combined, checks, cx)?;
        append_batch(out, &combined);
        pairs.clear();
        Ok(())
    };
    if keys.is_empty() {
        for i in 0..left.len {
            for j in 0..right.len {
                pairs.push((i as u32, j as u32));
                if pairs.len() >= PAIR_CHUNK {
                    flush(&mut pairs, &mut out)?;
                }
            }
        }
    } else {
        let left_exprs: Vec<&BExpr> = keys.iter().map(|k| k.0).collect();
        let right_exprs: Vec<&BExpr> = keys.iter().map(|k| k.1).collect();
        let left_keys = join_keys(&left_exprs, &left, cx)?;
        let right_keys = join_keys(&right_exprs, &right, cx)?;
        // Build on the smaller side, probe with the other; pairs stay (left, right).
        let build_left = left.len < right.len;
        let (build, probe) = if build_left {
            (&left_keys, &right_keys)
        } else {
            (&right_keys, &left_keys)
        };
        let mut table: HashMap<&[KeyVal], Vec<u32>> = HashMap::new();
        for (j, k) in build.iter().enumerate() {
            if let Some(k) = k {
                table.entry(k.as_slice()).or_default().push(j as u32);
            }
        }
        for (i, k) in probe.iter().enumerate() {
            let Some(matches) = k.as_deref().and_then(|k| table.get(k)) else {
                continue;
            };
            for &j in matches {
                pairs.push(if build_left { (j, i as u32) } else { (i as u32, j) });
            }
            if pairs.len() >= PAIR_CHUNK {
                flush(&mut pairs, &mut out)?;
            }
        }
    }
    flush(&mut pairs, &mut out)?;
    // A slot either side fills is present even when the join produced no rows.
    for ((out_slot, l), r) in out.slots.iter_mut().zip(&left.slots).zip(&right.slots) {
        if (l.is_some() || r.is_some()) && out_slot.is_none() {
            *out_slot = Some(Datum::Vector(Vector::nulls(out.len)));
        }
    }
    Ok(out)
}

/// An equality in `on` between a slot of the left rows and a slot of the right rows.
fn equi_key(on: &BExpr, left: &Batch<'_>, right: &Batch<'_>) -> Option<(usize, usize)> {
    match &on.kind {
        BKind::Compare(CmpOp::Eq, a, b) => match (&a.kind, &b.kind) {
            (BKind::Slot(x), BKind::Slot(y)) => {
                let side = |s: usize, b: &Batch<'_>| b.slots.get(s).is_some_and(Option::is_some);
                if side(*x, left) && side(*y, right) {
                    Some((*x, *y))
                } else if side(*y, left) && side(*x, right) {
                    Some((*y, *x))
                } else {
                    None
                }
            }
            _ => None,
        },
        BKind::And(a, b) => equi_key(a, left, right).or_else(|| equi_key(b, left, right)),
        _ => None,
    }
}

/// Rows paired per chunk of the nested loop, bounding memory.
const PAIR_CHUNK: usize = 1 << 20;

fn join(
    left: Batch<'static>,
    right: Batch<'static>,
    relation: &Relation,
    cx: &EvalCtx<'_>,
) -> Result<Batch<'static>> {
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    let mut out = Batch::new(0, left.slots.len());
    let on = relation.on.as_ref();
    let flush =
        |pairs: &mut Vec<(u32, u32)>, out: &mut Batch<'static>, matched: &mut Vec<bool>| -> Result<()> {
            if pairs.is_empty() {
                return Ok(());
            }
            let l: Vec<u32> = pairs.iter().map(|p| p.0).collect();
            let r: Vec<u32> = pairs.iter().map(|p| p.1).collect();
            let mut combined = left.gather(&l);
            let rb = right.gather(&r);
            merge_slots(&mut combined, rb);
            let keep = match on {
                Some(cond) => select_rows(cond, &combined, cx)?,
                None => Selection::All,
            };
            let rows: Vec<u32> = match keep {
                Selection::All => (0..combined.len as u32).collect(),
                Selection::None => Vec::new(),
                Selection::Rows(rows) => rows,
            };
            for &k in &rows {
                matched[l[k as usize] as usize] = true;
            }
            append_batch(out, &combined.gather(&rows));
            pairs.clear();
            Ok(())
        };
    let mut matched = vec![false; left.len];
    match on.and_then(|o| equi_key(o, &left, &right)) {
        Some((ls, rs)) => {
            let key_at =
                |b: &Batch<'_>, s: usize, i: usize| b.slots[s].as_ref().map_or(Value::Null, |d| d.get(i));
            let mut index: HashMap<KeyVal, Vec<u32>> = HashMap::new();
            for j in 0..right.len {
                let v = key_at(&right, rs, j);
                if v != Value::Null {
                    index.entry(key_of(&v)).or_default().push(j as u32);
                }
            }
            for i in 0..left.len {
                let v = key_at(&left, ls, i);
                if v == Value::Null {
                    continue;
                }
                if let Some(js) = index.get(&key_of(&v)) {
                    pairs.extend(js.iter().map(|&j| (i as u32, j)));
                }
                if pairs.len() >= PAIR_CHUNK {
                    flush(&mut pairs, &mut out, &mut matched)?;
                }
            }
        }
        None => {
            for i in 0..left.len {
                for j in 0..right.len {
                    pairs.push((i as u32, j as u32));
                    if pairs.len() >= PAIR_CHUNK {
                        flush(&mut pairs, &mut out, &mut matched)?;
                    }
                }
            }
        }
    }
    flush(&mut pairs, &mut out, &mut matched)?;
    if relation.join == JoinKind::Left {
        let unmatched: Vec<u32> = (0..left.len).filter(|&i| !matched[i]).map(|i| i as u32).collect();
        if !unmatched.is_empty() {
            let mut rows = left.gather(&unmatched);
            for (slot, d) in right.slots.iter().enumerate() {
                if let Some(d) = d {
                    let ty = datum_type(d);
                    rows.slots[slot] = Some(Datum::Vector(Vector::broadcast(
                        &Value::Null,
                        ty,
                        unmatched.len(),
                    )));
                }
            }
            append_batch(&mut out, &rows);
        }
    }
    // A slot either side fills is present even when the join produced no rows.
    for ((out_slot, l), r) in out.slots.iter_mut().zip(&left.slots).zip(&right.slots) {
        if (l.is_some() || r.is_some()) && out_slot.is_none() {
            *out_slot = Some(Datum::Vector(Vector::nulls(out.len)));
        }
    }
    Ok(out)
}

fn merge_slots(into: &mut Batch<'static>, other: Batch<'static>) {
    for (slot, d) in other.slots.into_iter().enumerate() {
        if d.is_some() && into.slots[slot].is_none() {
            into.slots[slot] = d;
        }
    }
}
