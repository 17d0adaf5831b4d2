//! Window functions, over the rows a select made (`plan/window.rs` states their layout).
//!
//! For each distinct window order the rows are sorted once (stably: peers keep the order
//! they came in): on one `u128` per row when it holds every key whole (numbers,
//! booleans, ids, short texts), else by typed comparisons of the partition's and the
//! ORDER BY's columns;
//! the sort gives each position its partition and its peer group. Every call of that order is
//! then computed a column at a time, in one pass over the positions:
//! - ranks, `ntile`, `lag`/`lead` from a row's place in its partition and peer group;
//! - frames as two bounds per position, which never move back within a partition (every
//!   frame ROWS, RANGE or GROUPS can describe slides forward), so most aggregates over
//!   them add each row once and take it away once: counts, INT sums (exact, in 128 bits)
//!   and booleans as running totals, min and max in a monotonic queue, string_agg
//!   extended as rows come (and joined again when its frame lost one). Float sums,
//!   averages and variances read a segment tree instead (`float_frames`): a float taken
//!   away from a running total is not exact.
//!
//! The results come out in the last window's order, as PostgreSQL and SQLite give them
//! without an ORDER BY.
//!
//! Here: the entry (`compute`) and each call's dispatch (`compute_call`, the ranks among
//! it). `sorted.rs` sorts once per window order; `positions.rs` holds what a row's place
//! gives (`ntile`, `lag`/`lead`, values picked by position); `frames.rs` the frames'
//! bounds; `slide.rs` the aggregates over frames that slide, `segment_tree.rs` the float
//! ones; `column.rs` the results they make. The typed columns they read and the sort's
//! keys are the executor's (`exec::sort`).

mod column;
mod frames;
mod positions;
mod segment_tree;
mod slide;
mod sorted;

use std::borrow::Cow;

use super::sort::Column;
use frames::{frames, offset};
use positions::{ntile, per_position, picked, shift};
use slide::aggregate;
use sorted::Sorted;

use super::Chunk;
use super::error::ExecError;
use super::eval::eval;
use super::reader::Reader;
use crate::plan::{WindowCall, WindowFunc, WindowPlan, WindowSort};
use crate::vector::{Batch, Data, Datum, Vector};

type Result<T> = std::result::Result<T, ExecError>;

/// Loops look at the interrupt once per this many positions.
const CHECK: usize = 1 << 14;

/// The rows a window function reads past the last: a NULL (`picked`).
const NONE: u32 = u32::MAX;

/// The select's output with `plan`'s windows computed: its select list over `chunk` (the
/// rows its `Output` made) and the calls' results.
pub fn compute(plan: &WindowPlan, chunk: Chunk, reader: &Reader<'_>) -> Result<Chunk> {
    let n = chunk.len;
    if n >= (u32::MAX / 2) as usize {
        return Err(ExecError::arithmetic(
            reader.at,
            format!(
                "window functions take at most {} rows, and the select made {n}",
                u32::MAX / 2
            ),
        ));
    }
    let mut results: Vec<Option<Vector<'static>>> = plan.calls.iter().map(|_| None).collect();
    let mut orders = Vec::with_capacity(plan.sorts.len());
    for (s, sort) in plan.sorts.iter().enumerate() {
        // EXPLAIN ANALYZE times each order: its sort and its calls.
        let order = super::profile::timed(
            reader.profile,
            sort,
            |order: &Vec<u32>| order.len(),
            || -> Result<Vec<u32>> {
                let sorted = Sorted::new(&chunk, sort, reader)?;
                for (c, call) in plan.calls.iter().enumerate().filter(|(_, c)| c.sort == s) {
                    let column = compute_call(call, &chunk, &sorted, sort, reader)?;
                    reader.budget.charge(column.bytes(), reader.at)?;
                    results[c] = Some(column);
                }
                Ok(sorted.order)
            },
        )?;
        orders.push(order);
    }
    let Some(last) = orders.last() else {
        return Err(ExecError::internal(reader.at, "a window plan without a sort"));
    };
    // Every column in the last window's order: a call of another order through where
    // each row stands in its own.
    reader.budget.charge(
        chunk.columns.iter().map(Vector::bytes).sum::<usize>() + n * 8,
        reader.at,
    )?;
    let mut columns: Vec<Vector<'static>> = chunk.columns.iter().map(|c| c.gather(last)).collect();
    for (call, result) in plan.calls.iter().zip(results) {
        let Some(result) = result else {
            return Err(ExecError::internal(reader.at, "a window call of no sort"));
        };
        if call.sort + 1 == orders.len() {
            columns.push(result);
            continue;
        }
        let mut place = vec![0u32; n];
        for (p, &row) in orders[call.sort].iter().enumerate() {
            place[row as usize] = p as u32;
        }
        let through: Vec<u32> = last.iter().map(|&row| place[row as usize]).collect();
        columns.push(result.gather(&through));
    }
    drop(chunk);
    let batch = Batch {
        len: n,
        slots: columns.iter().map(|v| Some(Datum::Vector(v.view()))).collect(),
    };
    let cx = reader.eval();
    let mut outputs = Vec::with_capacity(plan.outputs.len());
    for e in &plan.outputs {
        let v = eval(e, &batch, &cx)?.into_vector(e.ty, n).into_owned();
        reader.budget.charge(v.bytes(), reader.at)?;
        outputs.push(v);
    }
    Ok(Chunk {
        columns: outputs,
        len: n,
    })
}

/// An INT argument of a call, at a row: `None` for NULL.
fn int_at(chunk: &Chunk, column: usize, row: usize) -> Option<i64> {
    Column::of(&chunk.columns[column]).int(row)
}

fn compute_call(
    call: &WindowCall,
    chunk: &Chunk,
    sorted: &Sorted,
    sort: &WindowSort,
    reader: &Reader<'_>,
) -> Result<Vector<'static>> {
    let n = sorted.len();
    let check = |p: usize| {
        if p.is_multiple_of(CHECK) {
            reader.budget.check(reader.at)
        } else {
            Ok(())
        }
    };
    let ints = |f: &mut dyn FnMut(usize, usize, usize) -> i64| -> Result<Vector<'static>> {
        Ok(Vector::from_data(
            Data::Int(Cow::Owned(per_position(sorted, reader, f)?)),
            n,
        ))
    };
    let floats = |f: &mut dyn FnMut(usize, usize, usize) -> f64| -> Result<Vector<'static>> {
        Ok(Vector::from_data(
            Data::Float(Cow::Owned(per_position(sorted, reader, f)?)),
            n,
        ))
    };
    let rank = |p: usize, start: usize| (sorted.peers(p).0 - start + 1) as i64;
    if !call.func.framed() {
        // A frame's offsets are refused as they are for the functions that read frames.
        offset(&call.frame.start, "start", reader)?;
        offset(&call.frame.end, "end", reader)?;
    }
    match &call.func {
        WindowFunc::RowNumber => ints(&mut |p, start, _| (p - start + 1) as i64),
        WindowFunc::Rank => ints(&mut |p, start, _| rank(p, start)),
        WindowFunc::DenseRank => {
            ints(&mut |p, start, _| (sorted.group_of[p] - sorted.group_of[start]) as i64 + 1)
        }
        WindowFunc::PercentRank => floats(&mut |p, start, end| {
            if end - start > 1 {
                (rank(p, start) - 1) as f64 / (end - start - 1) as f64
            } else {
                0.0
            }
        }),
        WindowFunc::CumeDist => {
            floats(&mut |p, start, end| (sorted.peers(p).1 - start) as f64 / (end - start) as f64)
        }
        WindowFunc::Ntile => ntile(call, chunk, sorted, reader),
        WindowFunc::Shift { forward } => shift(call, *forward, chunk, sorted, reader),
        WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue => {
            let (starts, ends) = frames(&call.frame, chunk, sorted, sort, reader)?;
            let value = &chunk.columns[call.args[0]];
            let mut picks = Vec::with_capacity(n);
            for p in 0..n {
                check(p)?;
                let (fs, fe) = (starts[p] as usize, ends[p] as usize);
                let pick = match call.func {
                    WindowFunc::FirstValue => (fs < fe).then_some(fs),
                    WindowFunc::LastValue => (fs < fe).then(|| fe - 1),
                    _ => match int_at(chunk, call.args[1], sorted.order[p] as usize) {
                        None => None,
                        Some(k) if k <= 0 => {
                            return Err(ExecError::arithmetic(
                                call.at,
                                format!("nth_value's position must be 1 or more, found {k}"),
                            ));
                        }
                        Some(k) => fs.checked_add(k as usize - 1).filter(|&q| q < fe),
                    },
                };
                picks.push(pick.map_or(NONE, |q| sorted.order[q]));
            }
            Ok(picked(&[value], &picks))
        }
        WindowFunc::Aggregate { func, separator } => {
            let (starts, ends) = frames(&call.frame, chunk, sorted, sort, reader)?;
            aggregate(call, *func, separator, chunk, sorted, &starts, &ends, reader)
        }
    }
}
