//! The subqueries an expression holds: `IN (SELECT …)` as a set of values probed row by
//! row (`value_set`, `membership`), a scalar subquery's one value (`scalar_of`), and a
//! correlated subquery run for each outer row, its results kept by the outer values it
//! reads (`per_outer_values`), within a bound on memory.

use std::sync::atomic::Ordering;

use super::{EvalCtx, Result, eval};
use crate::exec::Chunk;
use crate::exec::error::{ExecError, ExecErrorKind};
use crate::location::Location;
use crate::plan::{BoundExpr, Correlated, QueryPlan, Ran, ValueSet};
use crate::storage::{Key, Value};
use crate::vector::kernels::bools;
use crate::vector::{Batch, Data, DataType, Datum, Vector};

/// The values an `IN (SELECT …)` subquery returns, as a set in the comparison's type `ty`
/// (`apart`: run as a correlated subquery is).
pub(super) fn value_set(
    query: &QueryPlan,
    ty: DataType,
    cx: &EvalCtx<'_>,
    at: Location,
    apart: bool,
) -> Result<ValueSet> {
    let chunk = if apart {
        cx.subqueries.run_apart(query)?
    } else {
        cx.run_subquery(query)?
    };
    let mut set = ValueSet::new([], ty)
        .map_err(|message| ExecError::new(at, ExecErrorKind::TypeMismatch { message }))?;
    if let Some(column) = chunk.columns.first() {
        // A piece at a time, the interrupt looked at between pieces (a charge of nothing).
        let mut from = 0;
        while from < chunk.len {
            cx.subqueries.keep(0, at)?;
            let to = (from + SET_PIECE).min(chunk.len);
            set.extend((from..to).map(|i| column.get(i)), ty)
                .map_err(|message| ExecError::new(at, ExecErrorKind::TypeMismatch { message }))?;
            from = to;
        }
    }
    Ok(set)
}

/// How many values an `IN (SELECT …)` set takes between two looks at the interrupt.
const SET_PIECE: usize = 1 << 16;

/// The one value of a scalar subquery's result: NULL for no row, an error for more than one.
pub(super) fn scalar_of(chunk: &Chunk, at: Location) -> Result<Value> {
    if chunk.len > 1 {
        return Err(ExecError::constraint(
            at,
            "a scalar subquery returned more than one row",
        ));
    }
    Ok(match chunk.columns.first() {
        Some(column) if chunk.len == 1 => column.get(0),
        _ => Value::Null,
    })
}

/// How many results a correlated subquery keeps (by distinct outer values) before it
/// forgets them all and starts again: a bound on memory, not on correctness. Sets of
/// `IN (SELECT …)` may be large, so fewer of them are kept.
const KEPT_RESULTS: usize = 16_384;
const KEPT_SETS: usize = 256;

/// Evaluates a correlated subquery node over `b`: for each row, its outer values set
/// from that row (`Correlated::sets`), its result the one kept for the same values of
/// everything it reads from outside (`Correlated::uses`) or else `run` now; `answer`
/// turns the result into the row's value.
pub(super) fn per_outer_values<'b>(
    e: &BoundExpr,
    c: &Correlated,
    b: &Batch<'_>,
    cx: &EvalCtx<'_>,
    run: impl Fn() -> Result<Ran>,
    answer: impl Fn(&Ran, usize) -> Result<Value>,
) -> Result<Datum<'b>> {
    let mut sets = Vec::with_capacity(c.sets.len());
    for (n, x) in &c.sets {
        sets.push((*n, eval(x, b, cx)?.into_owned()));
    }
    let mut out = Vec::with_capacity(b.len);
    for row in 0..b.len {
        let key: Vec<Key> = {
            let mut outer = cx.outer.borrow_mut();
            for (n, d) in &sets {
                if outer.len() <= *n {
                    outer.resize(*n + 1, Value::Null);
                }
                outer[*n] = d.get(row);
            }
            c.uses
                .iter()
                .map(|&n| Key::exact(outer.get(n).unwrap_or(&Value::Null)))
                .collect()
        };
        if c.volatile {
            out.push(answer(&run()?, row)?);
            continue;
        }
        if let Some(ran) = c.results.lock().get(&key) {
            out.push(answer(ran, row)?);
            continue;
        }
        let ran = run()?;
        out.push(answer(&ran, row)?);
        let mut kept = c.results.lock();
        let limit = if matches!(ran, Ran::Set(_)) {
            KEPT_SETS
        } else {
            KEPT_RESULTS
        };
        if kept.len() >= limit {
            kept.clear();
            cx.subqueries.give_back(c.kept_bytes.swap(0, Ordering::Relaxed));
        }
        let bytes = 48 * key.len().max(1)
            + match &ran {
                Ran::Set(set) => set.bytes(),
                _ => 48,
            };
        cx.subqueries.keep(bytes, e.at)?;
        c.kept_bytes.fetch_add(bytes, Ordering::Relaxed);
        kept.insert(key, ran);
    }
    Ok(Datum::Vector(Vector::from_values(e.ty, &out)))
}

/// `d IN set` (or NOT IN) per row, probing the typed set without boxing: TRUE when found,
/// else NULL when the set holds a NULL, else FALSE; NULL rows stay NULL.
pub(super) fn membership<'a>(
    d: &Datum<'_>,
    set: &ValueSet,
    ty: DataType,
    negated: bool,
    len: usize,
) -> Datum<'a> {
    let answer = |found: bool| -> (bool, bool) {
        // (value, valid)
        if found {
            (!negated, true)
        } else if set.has_null {
            (false, false)
        } else {
            (negated, true)
        }
    };
    // Nothing is in an empty set, NULL included: `NULL IN (empty)` is false, as in SQL.
    if set.is_empty() {
        return Datum::Scalar(Value::Bool(negated));
    }
    let v = match d {
        Datum::Scalar(Value::Null) => return Datum::Scalar(Value::Null),
        Datum::Scalar(x) => {
            let one = Datum::Vector(Vector::broadcast(x, DataType::of(x), 1));
            return Datum::Scalar(membership(&one, set, ty, negated, 1).get(0));
        }
        Datum::Vector(v) => v,
    };
    let found: Vec<bool> = match &v.data {
        Data::Null => return Datum::Scalar(Value::Null),
        Data::Int(x) if ty == DataType::Entity => x.iter().map(|&i| set.has_int_as_entity(i)).collect(),
        Data::Int(x) => x.iter().map(|&i| set.has_int(i)).collect(),
        Data::Float(x) => x.iter().map(|&f| set.has_float(f)).collect(),
        Data::Real(x) => x.iter().map(|&f| set.has_float(f64::from(f))).collect(),
        Data::Bool(x) => x.iter().map(|&b| set.has_bool(b)).collect(),
        Data::Text(x) => x.iter().map(|t| set.has_text(t)).collect(),
        Data::Entity(x) => x
            .iter()
            .map(|e| e.is_some_and(|e| set.has_entity(e.to_bits())))
            .collect(),
    };
    let mut values = Vec::with_capacity(len);
    let mut valid = Vec::with_capacity(len);
    for (i, &hit) in found.iter().enumerate() {
        let (value, ok) = answer(hit);
        values.push(value);
        valid.push(ok && v.is_valid(i));
    }
    let valid = if valid.iter().all(|&x| x) {
        None
    } else {
        Some(valid)
    };
    bools(values, valid)
}
