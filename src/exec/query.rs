//! Queries: a select's rows (scanned, or joined in `join.rs`) filtered and projected or
//! aggregated, then DISTINCT, UNION/EXCEPT/INTERSECT, ORDER BY and LIMIT.
//!
//! A query over one entity scan runs morsel by morsel on borrowed slices, never
//! materializing the scan. Subqueries of expressions come back here through the
//! `Subqueries` impl of `Reader`.

use std::cell::RefCell;

use hashbrown::HashMap;

use super::Chunk;
use super::Split;
use super::aggregate::Aggregator;
use super::error::{ExecError, ExecErrorKind};
use super::eval::{Selection, Subqueries, count_passing, eval, select_rows};
use super::join::{for_each_chunk, join_all};
use super::parallel;
use super::reader::Reader;
use super::scan::{Home, TableRows, for_each_morsel, index_limit, read_runs, rows_in, scan_runs};
use super::sort::{SORT_CHECK, Top, order_rows};
use crate::location::Location;
use crate::parse::SetOp;
use crate::plan::ParamValues;
use crate::plan::{
    BoundExpr, BoundKind, DataType, EntityScan, IdKey, Output, PointRead, ProbePlan, QueryPlan, Relation,
    RelationSource, ScanColumn, SelectPlan, SetPlan, SortKey,
};
use crate::storage::{Entity, Key, Table, TableId, Value, World};
use crate::vector::cast;
use crate::vector::{Batch, Data, Datum, Vector};

type Result<T> = std::result::Result<T, ExecError>;

impl Subqueries for Reader<'_> {
    fn run(&self, plan: &QueryPlan) -> Result<Chunk> {
        run_query(plan, self)
    }

    fn run_apart(&self, plan: &QueryPlan) -> Result<Chunk> {
        let mark = self.budget.used();
        let rows = run_query(plan, self);
        self.budget.release_to(mark);
        rows
    }

    fn keep(&self, bytes: usize, at: Location) -> Result<()> {
        self.budget.charge(bytes, at)
    }

    fn give_back(&self, bytes: usize) {
        self.budget.release(bytes);
    }
}

/// `query`'s rows, its relation number `r` (an entity scan) reading only `ids` when
/// given as `(r, ids)`: the rows of the entities a write wrote (RETURNING), of those a
/// subscription's components changed for (`engine/live/entity.rs`).
pub fn rows_for(query: &QueryPlan, ids: Option<(usize, Vec<Entity>)>, reader: &Reader<'_>) -> Result<Chunk> {
    let Some((r, ids)) = ids else {
        return run_query(query, reader);
    };
    let SetPlan::Select(select) = &query.body else {
        return Err(ExecError::internal(
            reader.at,
            "a query read for some entities is not one select",
        ));
    };
    let Some(RelationSource::Entities(scan)) = select.relations.get(r).map(|r| &r.source) else {
        return Err(ExecError::internal(
            reader.at,
            "a query read for some entities has no entity scan there",
        ));
    };
    reader.with_ids(scan, ids, || run_query(query, reader))
}

pub fn run_query(plan: &QueryPlan, reader: &Reader<'_>) -> Result<Chunk> {
    super::profile::timed(
        reader.profile,
        plan,
        |c: &Chunk| c.len,
        || query_rows(plan, reader),
    )
}

fn query_rows(plan: &QueryPlan, reader: &Reader<'_>) -> Result<Chunk> {
    // A select that is the whole body keeps only what ORDER BY … LIMIT keeps of it; a
    // side of a set operation makes all its rows.
    let keep = match &plan.body {
        SetPlan::Select(s) => keep_first(plan, s),
        _ => None,
    };
    let mut chunk = run_set(&plan.body, plan, keep, reader)?;
    let start = |len: usize| plan.offset.min(len);
    let end = |len: usize| plan.limit.map_or(len, |l| start(len).saturating_add(l).min(len));
    if !plan.order_by.is_empty() {
        // Only the rows OFFSET and LIMIT leave are gathered, and only the columns shown.
        let first = plan.limit.map(|l| plan.offset.saturating_add(l));
        let mut order = order_rows(&chunk, &plan.order_by, first, reader)?;
        reader.budget.check(reader.at)?;
        let (from, to) = (start(order.len()), end(order.len()));
        order.truncate(to);
        order.drain(..from);
        chunk.columns.truncate(plan.columns.len());
        // Copied in pieces, looking at the interrupt between them: millions of texts
        // take a while.
        let columns = chunk
            .columns
            .iter()
            .map(|c| c.gather_checked(&order, SORT_CHECK, || reader.budget.check(reader.at)))
            .collect::<Result<_>>()?;
        return Ok(Chunk {
            columns,
            len: order.len(),
        });
    }
    let (from, to) = (start(chunk.len), end(chunk.len));
    if from > 0 || to < chunk.len {
        chunk = Chunk {
            columns: chunk.columns.iter().map(|c| c.slice(from, to)).collect(),
            len: to - from,
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

#[recursive::recursive]
/// `set`'s rows; a select keeps only `keep`'s when given (the body of `plan` itself, as
/// `keep_first` says). Recursive: the stack grows here for deep nesting.
fn run_set(set: &SetPlan, plan: &QueryPlan, keep: Option<Keep<'_>>, reader: &Reader<'_>) -> Result<Chunk> {
    match set {
        SetPlan::Select(s) => run_select(s, keep, reader),
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
                    columns[i].push_value(&eval(e, &empty, &reader.eval())?.get(0));
                }
            }
            Ok(Chunk {
                columns,
                len: rows.len(),
            })
        }
        SetPlan::SetOp { op, left, right, all } => {
            let a = run_set(left, plan, None, reader)?;
            let b = run_set(right, plan, None, reader)?;
            let types: Vec<DataType> = plan.columns.iter().map(|c| c.ty).collect();
            let a = cast_chunk(a, &types)?;
            let b = cast_chunk(b, &types)?;
            // A hash key per row of both sides.
            reader
                .budget
                .charge((a.len + b.len).saturating_mul(64), reader.at)?;
            Ok(set_op(*op, a, b, *all))
        }
        SetPlan::Recursive {
            anchor,
            step,
            all,
            work,
            at,
        } => recursive(anchor, step, (*all, *work, *at), plan, reader),
    }
}

/// WITH RECURSIVE (`SetPlan::Recursive`): the anchor's rows, then round after round the
/// step's over the rows the round before added, until a round adds none. Without `all`
/// a row found before is dropped (its hash key kept for every row found). Each round
/// looks at the interrupt and charges what it keeps; past `recursion_limit` rounds it
/// is an error.
fn recursive(
    anchor: &SetPlan,
    step: &SetPlan,
    (all, work, at): (bool, usize, Location),
    plan: &QueryPlan,
    reader: &Reader<'_>,
) -> Result<Chunk> {
    let types: Vec<DataType> = plan.columns.iter().map(|c| c.ty).collect();
    let mut seen: hashbrown::HashSet<Vec<Key>> = hashbrown::HashSet::new();
    let mut new_rows = |chunk: Chunk| -> Result<Chunk> {
        let chunk = cast_chunk(chunk, &types)?;
        if all {
            return Ok(chunk);
        }
        reader.budget.charge(chunk.len.saturating_mul(64), reader.at)?;
        let keep: Vec<u32> = (0..chunk.len)
            .filter(|&i| seen.insert(row_key(&chunk, i)))
            .map(|i| i as u32)
            .collect();
        Ok(match keep.len() == chunk.len {
            true => chunk,
            false => gather_chunk(&chunk, &keep),
        })
    };
    let first = new_rows(run_set(anchor, plan, None, reader)?)?;
    let mut result = Chunk {
        columns: first.columns.clone(),
        len: first.len,
    };
    let mut last = std::rc::Rc::new(first);
    let mut rounds = 0usize;
    while last.len > 0 {
        reader.budget.check(reader.at)?;
        rounds += 1;
        let added = reader.with_work(work, last, || run_set(step, plan, None, reader))?;
        let added = new_rows(added)?;
        // A round past the limit that adds nothing ends the query as it should.
        if rounds > reader.budget.recursion_limit() && added.len > 0 {
            return Err(ExecError::new(
                at,
                ExecErrorKind::RecursionLimit {
                    rounds: reader.budget.recursion_limit(),
                },
            ));
        }
        let bytes: usize = added.columns.iter().map(Vector::bytes).sum();
        reader.budget.charge(bytes, reader.at)?;
        for (kept, more) in result.columns.iter_mut().zip(&added.columns) {
            kept.append(more);
        }
        result.len += added.len;
        last = std::rc::Rc::new(added);
    }
    Ok(result)
}

/// A row of a chunk as a hash key (NULLs equal, -0.0 is 0.0: rows are "not distinct").
fn row_key(chunk: &Chunk, i: usize) -> Vec<Key> {
    chunk.columns.iter().map(|c| Key::of(&c.get(i))).collect()
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
    let mut right: HashMap<Vec<Key>, usize> = HashMap::new();
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
                    .map(|c| Key::of(&c.get(i)))
                    .collect::<Vec<Key>>(),
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

/// What a query's ORDER BY and LIMIT keep of a select's rows: the first `k` in the
/// order of the keys (columns of the select's list).
#[derive(Clone, Copy)]
struct Keep<'p> {
    order: &'p [SortKey],
    k: usize,
}

/// The rows `query`'s ORDER BY … LIMIT keeps of its body `select`, when the select can
/// keep only those as it makes them (a `Top`): its rows are its list's, with no
/// DISTINCT or window to see them all first.
fn keep_first<'p>(query: &'p QueryPlan, select: &SelectPlan) -> Option<Keep<'p>> {
    let plain = matches!(select.output, Output::Rows(_)) && !select.distinct && select.window.is_none();
    (plain && !query.order_by.is_empty()).then_some(())?;
    Some(Keep {
        order: &query.order_by,
        k: query.offset.saturating_add(query.limit?),
    })
}

fn run_select(plan: &SelectPlan, keep: Option<Keep<'_>>, reader: &Reader<'_>) -> Result<Chunk> {
    super::profile::timed(
        reader.profile,
        plan,
        |c: &Chunk| c.len,
        || select_rows_of(plan, keep, reader),
    )
}

fn select_rows_of(plan: &SelectPlan, keep: Option<Keep<'_>>, reader: &Reader<'_>) -> Result<Chunk> {
    // A point read inside a larger query (a subquery, a side of a UNION), or one with
    // an ORDER BY: each run works out again whether it is one.
    if let Some(scan) = lone_scan(plan)
        && reader.profile.is_none()
        && !reader.looks_up(scan)
        && let Some(point) = point_of(plan, scan)
    {
        let mut chunk = Chunk::default();
        if read_point(&point, reader.world, reader.params, &mut chunk) {
            return Ok(chunk);
        }
    }
    // One row computed from no table (`SELECT 1 + 2`): each output is evaluated once,
    // straight into its column, with no sink around it.
    if keep.is_none()
        && reader.profile.is_none()
        && let Some(exprs) = lone_row(plan)
    {
        return one_row(exprs, plan.width, reader);
    }
    let mut sink = Sink::new(&plan.output, keep);
    let reads = sink.reads(plan.width);
    match plan.relations.as_slice() {
        // A WHERE that depends on no row (constants, parameters) and is not TRUE lets no
        // row through: nothing is scanned or joined, whatever the tables hold.
        _ if passes_nothing(plan, reader)? => {}
        [] => {
            let batch = Batch::new(1, plan.width);
            feed(plan, &batch, &mut sink, &reads, reader)?;
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
                let (runs, _) = scan_runs(scan, reader, Home::Any);
                match scan_in_parallel(plan, keep, scan, &runs, &reads, reader)? {
                    Some(merged) => sink = merged,
                    None => read_runs(scan, plan.width, reader, &runs, |batch| {
                        reader.budget.check(reader.at)?;
                        feed(plan, batch, &mut sink, &reads, reader)
                    })?,
                }
            }
            Some(k) => sink = widen_nearest(plan, scan, k, &reads, reader)?,
        },
        [relation] if relation.on.is_none() && plan.joins.conditions.is_empty() => {
            for_each_chunk(relation, plan.width, reader, &mut |batch| {
                feed(plan, &batch, &mut sink, &reads, reader)
            })?;
        }
        _ => {
            join_all(plan, reader, &mut |batch| {
                feed(plan, &batch, &mut sink, &reads, reader)
            })?;
        }
    }
    // EXPLAIN ANALYZE counts the rows the select made, not those its ORDER BY … LIMIT
    // kept (the query's Sort line says how many it kept of them).
    if let (Some(profile), Sink::Top(top)) = (reader.profile, &sink) {
        profile.record(plan, |s| {
            s.topped = Some(s.topped.unwrap_or(0) + top.given() as u64);
        });
    }
    let mut chunk = sink.finish(reader)?;
    if let Some(window) = &plan.window {
        chunk = super::window::compute(window, chunk, reader)?;
    }
    if plan.distinct {
        // A hash key per row.
        reader.budget.charge(chunk.len.saturating_mul(64), reader.at)?;
        return Ok(distinct(chunk));
    }
    Ok(chunk)
}

/// The outputs of `plan` when it makes one row from no table (`SELECT 1 + 2`, a SPAWN
/// of values written out): no relation, WHERE, window or DISTINCT.
fn lone_row(plan: &SelectPlan) -> Option<&[BoundExpr]> {
    match &plan.output {
        Output::Rows(exprs)
            if plan.relations.is_empty()
                && plan.filter.is_none()
                && plan.window.is_none()
                && !plan.distinct =>
        {
            Some(exprs)
        }
        _ => None,
    }
}

/// The outputs of `query`, and its select's width, when it is a select of one row from
/// no table (`lone_row`) with no ORDER BY, LIMIT or OFFSET: what a writer may evaluate
/// a value at a time (`eval_lone_row`) instead of running the query.
pub(in crate::exec) fn lone_row_of(query: &QueryPlan) -> Option<(&[BoundExpr], usize)> {
    match &query.body {
        SetPlan::Select(s) if query.order_by.is_empty() && query.limit.is_none() && query.offset == 0 => {
            lone_row(s).map(|exprs| (exprs, s.width))
        }
        _ => None,
    }
}

/// The value of each of `exprs` (`lone_row_of`'s) for their one row, given to `each` in
/// order: the values `one_row` makes, each charged to the budget as `one_row` charges its
/// column, without a vector for each. A value past the budget is refused at its place in
/// `value_at` (the statement's where it has none).
pub(in crate::exec) fn eval_lone_row(
    exprs: &[BoundExpr],
    width: usize,
    value_at: &[Location],
    reader: &Reader<'_>,
    mut each: impl FnMut(Value) -> Result<()>,
) -> Result<()> {
    let batch = Batch::new(1, width);
    let cx = &reader.eval();
    for (i, e) in exprs.iter().enumerate() {
        // A constant (most values written out are) is taken as it is, without `eval`'s
        // stack check and dispatch.
        let computed = match &e.kind {
            BoundKind::Const(v) => Datum::Scalar(v.clone()),
            _ => eval(e, &batch, cx)?,
        };
        let (value, bytes) = match computed {
            Datum::Scalar(v) => {
                let bytes = Vector::one_bytes(&v, e.ty);
                (v, bytes)
            }
            Datum::Vector(v) if v.len() == 1 => (v.get(0), v.bytes()),
            Datum::Vector(_) => {
                return Err(ExecError::internal(
                    reader.at,
                    "a value of one row gave another count",
                ));
            }
        };
        let at = value_at.get(i).copied().unwrap_or(reader.at);
        reader.budget.charge(bytes, at)?;
        each(value)?;
    }
    Ok(())
}

/// The one row of `exprs` over no table, as `Sink::Rows` makes it from one batch: each
/// column of its expression's type, charged to the budget.
fn one_row(exprs: &[BoundExpr], width: usize, reader: &Reader<'_>) -> Result<Chunk> {
    let batch = Batch::new(1, width);
    let cx = &reader.eval();
    let mut columns = Vec::with_capacity(exprs.len());
    for e in exprs {
        let v = eval(e, &batch, cx)?.into_vector(e.ty, 1);
        reader.budget.charge(v.bytes(), reader.at)?;
        columns.push(owned_column(v, e.ty));
    }
    Ok(Chunk { columns, len: 1 })
}

/// `v`'s values as a column of type `ty`: taken as they are when they are owned already
/// (computed, not read from a table) and of that type, copied into a new column
/// otherwise.
fn owned_column(v: Vector<'_>, ty: DataType) -> Vector<'static> {
    if v.is_owned() && v.data_type() == ty {
        return v.into_owned();
    }
    let mut column = Vector::empty(ty);
    column.append(&v);
    column
}

/// The stretches a select over one entity scan reading `runs` is split into, one per
/// thread (`parallel::split`); `None` when it runs on one thread: one allowed, too few
/// rows, expressions that must run here (not `pure`), float sums per group, or no work
/// per row at all (a bare `count(*)`, which adds up batch lengths: waking a thread costs
/// more).
fn stretches_of<'r>(
    plan: &SelectPlan,
    runs: &'r [(TableId, TableRows)],
    split: Split,
) -> Option<Vec<&'r [(TableId, TableRows)]>> {
    if plan.filter.is_none()
        && matches!(&plan.output, Output::Aggregate { keys, aggs, .. }
            if keys.is_empty() && aggs.iter().all(|a| a.arg.is_none()))
    {
        return None;
    }
    // How many rows first: most statements stop there, having looked at no expression.
    let stretches = parallel::split(runs, |(_, rows)| rows.len(), split)?;
    let outputs = match &plan.output {
        Output::Rows(exprs) => exprs.iter().all(parallel::pure),
        Output::Aggregate { keys, aggs, .. } => {
            Aggregator::mergeable(keys, aggs)
                && keys.iter().all(parallel::pure)
                && aggs.iter().filter_map(|a| a.arg.as_ref()).all(parallel::pure)
        }
    };
    (outputs && plan.filter.as_ref().is_none_or(parallel::pure)).then_some(stretches)
}

/// For EXPLAIN: into how many stretches a run of `plan` now would split its rows, and
/// how many rows those are (`None`: one thread).
pub fn split_for_explain(plan: &SelectPlan, reader: &Reader<'_>) -> Option<(usize, usize)> {
    let [
        Relation {
            source: RelationSource::Entities(scan),
            filter: None,
            on: None,
            ..
        },
    ] = plan.relations.as_slice()
    else {
        return None;
    };
    if nearest_k(scan).is_some() {
        return None;
    }
    let (runs, _) = scan_runs(scan, reader, Home::Any);
    let stretches = stretches_of(plan, &runs, reader.budget.split())?;
    Some((stretches.len(), runs.iter().map(|(_, r)| r.len()).sum()))
}

/// A scan of many rows split among the statement's threads (`parallel.rs`), each
/// feeding a sink of its own, merged in order; `None` when it stays on this thread: one
/// thread allowed, too few rows, expressions that must run here (not `pure`), or float
/// sums per group (which only one thread adds in the order one thread would).
fn scan_in_parallel<'p>(
    plan: &'p SelectPlan,
    keep: Option<Keep<'p>>,
    scan: &EntityScan,
    runs: &[(TableId, TableRows)],
    reads: &[bool],
    reader: &Reader<'_>,
) -> Result<Option<Sink<'p>>> {
    let Some(stretches) = stretches_of(plan, runs, reader.budget.split()) else {
        return Ok(None);
    };
    let share = reader.share();
    let sinks = parallel::run(stretches, reader.at, |stretch| -> Result<Sink<'p>> {
        let cache = RefCell::default();
        // Each stretch charges its share of the budget (together they hold no more than
        // the statement may); what the merged sink keeps is charged below (a group every
        // stretch met is kept once, not once per stretch).
        let budget = share.part_budget();
        let reader = Reader::of_share(share, &cache, &budget);
        let mut sink = Sink::new(&plan.output, keep).deferred();
        read_runs(scan, plan.width, &reader, stretch, |batch| {
            reader.budget.check(reader.at)?;
            feed(plan, batch, &mut sink, reads, &reader)
        })?;
        Ok(sink)
    })?;
    // A stretch past its share (each holding its own copy of groups every stretch meets,
    // say) gives way to one thread, which holds what the statement does on one: the
    // result, and whether it fits, are one thread's.
    if sinks.iter().any(|s| {
        matches!(
            s,
            Err(ExecError {
                kind: ExecErrorKind::MemoryLimit { .. },
                ..
            })
        )
    }) {
        drop(sinks);
        return Ok(None);
    }
    let mut merged = Sink::new(&plan.output, keep);
    for sink in sinks {
        merged.merge(sink?, reader)?;
    }
    reader.budget.charge(merged.bytes(), reader.at)?;
    Ok(Some(merged))
}

/// A query that is a point read (`point_of`) with nothing around it (no ORDER BY, no
/// OFFSET, no LIMIT 0), run straight from its plan: no reader, no set or select dispatch,
/// its row written over `rows` (its vectors' memory reused). Whether it is one is worked
/// out on the plan's first run and kept (`QueryPlan::point`); `false` when it is not, or
/// when the general path must answer (`rows` then perhaps changed).
#[inline]
pub fn point_query(plan: &QueryPlan, world: &World, params: &ParamValues, rows: &mut Chunk) -> bool {
    let point = plan.point.get_or_init(|| {
        if !plan.order_by.is_empty() || plan.offset > 0 || plan.limit == Some(0) {
            return None;
        }
        let (select, scan) = point_select(&plan.body)?;
        point_of(select, scan)
    });
    point
        .as_ref()
        .is_some_and(|point| read_point(point, world, params, rows))
}

/// The select and its one scan, when `set` is a select of one entity scan with no
/// filter (`lone_scan`).
fn point_select(set: &SetPlan) -> Option<(&SelectPlan, &EntityScan)> {
    let SetPlan::Select(select) = set else {
        return None;
    };
    Some((select, lone_scan(select)?))
}

/// The one entity scan of `select`, when it has no filter of its own or the select's.
fn lone_scan(select: &SelectPlan) -> Option<&EntityScan> {
    match select.relations.as_slice() {
        [
            Relation {
                source: RelationSource::Entities(scan),
                filter: None,
                on: None,
                ..
            },
        ] if select.filter.is_none() => Some(scan),
        _ => None,
    }
}

/// A point read: a select of one entity named by its id (`WHERE id = ?1`, answered by
/// the lookup), whose list reads the entity's fields and id as they are, with nothing
/// else to filter, compute or sort. `None` for anything else (or more than one id, or an
/// outer query's id).
fn point_of(plan: &SelectPlan, scan: &EntityScan) -> Option<Box<PointRead>> {
    if plan.distinct
        || plan.window.is_some()
        || !scan.sparse.is_empty()
        || scan.reads_sparse
        || scan.changes.is_some()
    {
        return None;
    }
    let Output::Rows(exprs) = &plan.output else {
        return None;
    };
    let [key] = scan.ids.as_deref()? else {
        return None;
    };
    if matches!(key, IdKey::Outer(_)) {
        return None;
    }
    let columns = exprs
        .iter()
        .map(|e| match e.kind {
            BoundKind::Slot(s) => scan
                .columns
                .iter()
                .find(|(slot, c)| *slot == s && matches!(c, ScanColumn::Id | ScanColumn::Field(_)))
                .map(|&(_, c)| c),
            _ => None,
        })
        .collect::<Option<_>>()?;
    Some(Box::new(PointRead {
        last: std::sync::atomic::AtomicU64::new(0),
        id: key.clone(),
        only: scan.only,
        required: scan.required.iter().copied().collect(),
        excluded: scan.excluded.iter().copied().collect(),
        columns,
        types: exprs.iter().map(|e| e.ty).collect(),
    }))
}

/// The id `point` reads, with `params`.
#[inline]
fn point_id(point: &PointRead, params: &ParamValues) -> Option<Entity> {
    super::scan::key_id(&point.id, params)
}

/// `point`'s row (none when the entity is not alive or not in a table the scan reads),
/// read straight from its table past the batch machinery and written over `rows`, whose
/// vectors' memory it reuses; `false` when the entity's table lacks a column read (the
/// general path answers then).
#[inline]
pub(super) fn read_point(point: &PointRead, world: &World, params: &ParamValues, rows: &mut Chunk) -> bool {
    if matches!(point.id, IdKey::Outer(_)) {
        return false;
    }
    let id = point_id(point, params);
    let found = id
        .and_then(|id| world.find(id))
        .and_then(|(at, row)| Some((at, world.table(at)?.get(), row.index())));
    // The table the last read found its entity in (`PointRead::last`): known to be read,
    // and the column of a lone field output known there.
    let last = point.last.load(std::sync::atomic::Ordering::Relaxed);
    let tag = found.map_or(0, |(at, ..)| (u64::from(at.0) + 1) << 32);
    let known = tag != 0 && last >> 32 == tag >> 32;
    let found = found.filter(|(_, table, _)| known || reads(point, table));
    let out = &mut rows.columns;
    if out.len() != point.columns.len() {
        out.truncate(point.columns.len());
        out.resize_with(point.columns.len(), || Vector::nulls(0));
    }
    let Some((_, table, row)) = found else {
        for (into, &ty) in out.iter_mut().zip(&point.types) {
            into.clear_as(ty);
        }
        rows.len = 0;
        return true;
    };
    if let ([ScanColumn::Field(f)], [into]) = (&*point.columns, out.as_mut_slice()) {
        let at = match known {
            true => Some(last as u32 as usize),
            false => table.column_index(*f),
        };
        let Some(column) = at.and_then(|at| table.column_at(at)) else {
            return false;
        };
        if !known && let Some(at) = at.and_then(|at| u32::try_from(at).ok()) {
            point
                .last
                .store(tag | u64::from(at), std::sync::atomic::Ordering::Relaxed);
        }
        into.assign_cell(column, row);
        rows.len = 1;
        return true;
    }
    if !known {
        point
            .last
            .store(tag | u64::from(u32::MAX), std::sync::atomic::Ordering::Relaxed);
    }
    for (&column, into) in point.columns.iter().zip(out.iter_mut()) {
        match column {
            ScanColumn::Id => into.assign_ids(&[table.entities().get(row).copied()]),
            ScanColumn::Field(f) => match table.column(f) {
                Some(c) => into.assign_cell(c, row),
                None => return false,
            },
            _ => return false,
        }
    }
    rows.len = 1;
    true
}

/// Whether `point` reads `table` (as its scan's table list would say: its own table if it
/// names one, any holding what it requires and nothing it excludes otherwise).
fn reads(point: &PointRead, table: &Table) -> bool {
    super::scan::reads_table(point.only, &point.required, &point.excluded, table)
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
    reader: &Reader<'_>,
) -> Result<Sink<'p>> {
    let rows = rows_in(reader.world, &reader.tables(scan));
    let mut widened = scan.clone();
    let mut reach = k;
    loop {
        // Its rows all kept (not a `Top`): how many pass says whether to widen.
        let mut sink = Sink::new(&plan.output, None);
        // A walk (the search could not narrow the scan) read every row.
        let walked = for_each_morsel(&widened, plan.width, reader, |batch| {
            feed(plan, &batch, &mut sink, reads, reader)
        })?;
        // A search for more than `index_limit(rows)` points always walks, so that
        // attempt read every row; the test also ends the loop when no table matches.
        if sink.len() >= k || walked || reach > index_limit(rows) {
            return Ok(sink);
        }
        reach = reach.saturating_mul(4);
        if let Some(lookup) = widened.index.as_deref_mut()
            && let ProbePlan::Nearest { k, .. } = &mut lookup.probe
        {
            *k = reach;
        }
    }
}

/// The plan's WHERE (with the ON of its inner joins) depends on no row, or one of its
/// AND-ed parts does, and is not TRUE for this run's parameters (FALSE, NULL, `1 > 2`,
/// `?1` bound to FALSE): no row passes it.
pub(super) fn passes_nothing(plan: &SelectPlan, reader: &Reader<'_>) -> Result<bool> {
    let Some(f) = &plan.filter else {
        return Ok(false);
    };
    let mut constant = Vec::new();
    row_free_parts(f, &mut constant);
    let one = Batch::new(1, plan.width);
    for part in constant {
        if count_passing(part, &one, &reader.eval())? == 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `e` when it depends on no row, else those of its AND-ed parts that depend on none
/// and cannot fail (a part that divides or may overflow is left to the rows: it fails
/// only if one reaches it).
fn row_free_parts<'e>(e: &'e BoundExpr, out: &mut Vec<&'e BoundExpr>) {
    match &e.kind {
        _ if e.row_free() => out.push(e),
        BoundKind::And(l, r) => {
            for part in [l, r] {
                if !part.row_free() || part.cannot_fail() {
                    row_free_parts(part, out);
                }
            }
        }
        _ => {}
    }
}

/// Filter, then hand the surviving rows to the sink (only the columns it reads: a
/// `count(*)` reads none).
fn feed(
    plan: &SelectPlan,
    batch: &Batch<'_>,
    sink: &mut Sink<'_>,
    reads: &[bool],
    reader: &Reader<'_>,
) -> Result<()> {
    let cx = &reader.eval();
    if let Some(profile) = reader.profile {
        profile.record(plan, |s| s.read += batch.len as u64);
    }
    // A sink that reads no column (`count(*)`, constants) needs only how many rows pass.
    if let Some(f) = &plan.filter
        && !reads.contains(&true)
    {
        let passed = count_passing(f, batch, cx)?;
        return match passed {
            0 => Ok(()),
            // No slot: the sink reads none, and an empty list costs no allocation.
            n => sink.push(&Batch::new(n, 0), reader),
        };
    }
    let selection = match &plan.filter {
        Some(f) => select_rows(f, batch, cx)?,
        None => Selection::All,
    };
    match selection {
        Selection::None => Ok(()),
        Selection::All => sink.push(batch, reader),
        Selection::Rows(rows) => {
            let reads = |slot: usize| reads.get(slot).copied().unwrap_or(true);
            sink.push(&batch.gather_slots(&rows, reads), reader)
        }
    }
}

enum Sink<'p> {
    Rows {
        exprs: &'p [BoundExpr],
        columns: Made,
        len: usize,
    },
    Aggregate(Box<Aggregator<'p>>),
    /// ORDER BY … LIMIT's first rows only.
    Top(Box<Top<'p>>),
}

/// A query's result columns as they are made. When they are dropped unused (the statement
/// failed or was interrupted) holding many text values, those are freed off the thread
/// (`garbage.rs`), so that the statement stops at once.
#[derive(Default)]
struct Made(Vec<Vector<'static>>);

impl Made {
    fn take(&mut self) -> Vec<Vector<'static>> {
        std::mem::take(&mut self.0)
    }
}

impl std::ops::Deref for Made {
    type Target = Vec<Vector<'static>>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Made {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        if self
            .0
            .iter()
            .any(|v| v.len() >= 1 << 16 && matches!(v.data, Data::Text(_)))
        {
            crate::garbage::drop_later(self.take());
        }
    }
}

impl<'p> Sink<'p> {
    fn new(output: &'p Output, keep: Option<Keep<'p>>) -> Sink<'p> {
        match output {
            Output::Rows(exprs) if let Some(keep) = keep => {
                Sink::Top(Box::new(Top::new(exprs, keep.order, keep.k)))
            }
            Output::Rows(exprs) => Sink::Rows {
                exprs,
                columns: Made(exprs.iter().map(|e| Vector::empty(e.ty)).collect()),
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
            Sink::Top(t) => t.visit_slots(&mut mark),
        }
        reads
    }

    /// Takes a batch's rows, charging what it keeps of them to the statement's budget.
    fn push(&mut self, batch: &Batch<'_>, reader: &Reader<'_>) -> Result<()> {
        let cx = &reader.eval();
        match self {
            Sink::Rows { exprs, columns, len } => {
                for (e, column) in exprs.iter().zip(columns.iter_mut()) {
                    let v = eval(e, batch, cx)?.into_vector(e.ty, batch.len);
                    reader.budget.charge(v.bytes(), reader.at)?;
                    if column.is_empty() {
                        *column = owned_column(v, column.data_type());
                    } else {
                        column.append(&v);
                    }
                }
                *len += batch.len;
                Ok(())
            }
            Sink::Aggregate(a) => {
                let before = a.footprint();
                a.push(batch, cx)?;
                let grown = a.footprint().saturating_sub(before);
                reader.budget.charge(grown, reader.at)
            }
            Sink::Top(t) => t.push(batch, reader),
        }
    }

    /// About how many bytes it keeps: its rows, or its groups (`Aggregator::footprint`).
    fn bytes(&self) -> usize {
        match self {
            Sink::Rows { columns, .. } => columns.iter().map(Vector::bytes).sum(),
            Sink::Aggregate(a) => a.footprint(),
            Sink::Top(t) => t.bytes(),
        }
    }

    /// This sink, for a later stretch of the batches (`Aggregator::deferred`).
    fn deferred(self) -> Sink<'p> {
        match self {
            Sink::Aggregate(a) => Sink::Aggregate(Box::new(a.deferred())),
            rows => rows,
        }
    }

    /// Takes in `later`, a sink of the batches after this one's.
    fn merge(&mut self, later: Sink<'p>, reader: &Reader<'_>) -> Result<()> {
        match (self, later) {
            (
                Sink::Rows { columns, len, .. },
                Sink::Rows {
                    columns: more,
                    len: n,
                    ..
                },
            ) => {
                if *len == 0 {
                    *columns = more;
                } else {
                    columns.iter_mut().zip(more.iter()).for_each(|(c, m)| c.append(m));
                }
                *len += n;
            }
            (Sink::Aggregate(a), Sink::Aggregate(b)) => a.merge(*b),
            (Sink::Top(a), Sink::Top(b)) => a.merge(*b, reader)?,
            // Both are made from the same output.
            _ => {}
        }
        Ok(())
    }

    /// Rows pushed so far (groups are not counted until `finish`).
    fn len(&self) -> usize {
        match self {
            Sink::Rows { len, .. } => *len,
            Sink::Aggregate(_) => 0,
            Sink::Top(t) => t.len(),
        }
    }

    fn finish(self, reader: &Reader<'_>) -> Result<Chunk> {
        match self {
            Sink::Rows { mut columns, len, .. } => Ok(Chunk {
                columns: columns.take(),
                len,
            }),
            Sink::Aggregate(a) => a.finish(&reader.eval()),
            Sink::Top(t) => Ok(t.finish()),
        }
    }
}
