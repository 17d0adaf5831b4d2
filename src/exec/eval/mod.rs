//! Vectorized expression evaluation: a bound expression over a `Batch`, one typed slice
//! at a time. Conditional parts (AND, OR, CASE) evaluate their right-hand side only on the
//! rows that need it, so `y <> 0 AND 10 / y > 1` never divides by zero.
//!
//! Here: what evaluation may need beyond the batch (`EvalCtx`), the one dispatch over an
//! expression's kinds (`eval`), the one value of an expression the same for every row
//! (`eval_once`), the selections a condition makes, and `||`. Arithmetic is
//! `arith.rs`, its one-pass shapes `fused.rs`; NOT, AND, OR and CASE are `logic.rs`; the
//! subqueries an expression holds are `subquery.rs`.

mod arith;
mod conjunction;
mod fused;
mod logic;
mod subquery;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::cell::{Cell, RefCell};

use arith::{arith, negate, unwidened};
use fused::{Narrowed, is_real_product, narrowed_arith, real_multiply_add};
use logic::{case, logic, map_bool, or_data};
use subquery::{membership, per_outer_values, scalar_of, value_set};

use super::Chunk;
use super::error::ExecError;
use super::like;
use crate::func::{Call, Clock};
use crate::location::Location;
use crate::plan::{ArithOp, BoundExpr, BoundKind, ParamValues, QueryPlan, Ran};
use crate::storage::Value;
use crate::vector::kernels::{
    bools, both_scalar, both_valid, compare, distinct, finish, is_null_scalar, text_at,
};
use crate::vector::{Batch, CmpOp, Data, DataType, Datum, cast, cast_one, float_to_real};

type Result<T> = std::result::Result<T, ExecError>;

/// Runs the subqueries an expression holds (`IN (SELECT …)`, `EXISTS`, a scalar
/// subquery): the one way evaluation reaches rows beyond its batch.
pub trait Subqueries {
    fn run(&self, plan: &QueryPlan) -> Result<Chunk>;
    /// `run` for a correlated subquery, run again for each outer row: what the run holds
    /// while it runs is given back to the statement's memory budget when it returns.
    fn run_apart(&self, plan: &QueryPlan) -> Result<Chunk>;
    /// Charges the statement's memory budget with `bytes` kept (a correlated subquery's
    /// results), at `at`; fails too when the statement is interrupted (so a charge of
    /// nothing looks at the interrupt).
    fn keep(&self, bytes: usize, at: Location) -> Result<()>;
    /// Gives back `bytes` kept before.
    fn give_back(&self, bytes: usize);
}

/// What evaluation may need beyond the batch: this run's parameter values, the random
/// number generator of `random()`, a way to run subqueries, and the outer values of the
/// correlated subqueries running.
#[derive(Clone, Copy)]
pub struct EvalCtx<'a> {
    pub params: &'a ParamValues,
    /// `BoundKind::Outer(n)` reads value `n`: set by the correlated subquery node around
    /// it for the row it runs for.
    pub outer: &'a RefCell<Vec<Value>>,
    pub rng: &'a Cell<u64>,
    pub subqueries: &'a dyn Subqueries,
    /// The tick the statement runs in.
    pub clock: Clock,
}

impl EvalCtx<'_> {
    fn run_subquery(&self, plan: &QueryPlan) -> Result<Chunk> {
        self.subqueries.run(plan)
    }
}

/// The one value of `e`, an expression the same for every row
/// (`BoundExpr::same_every_row`: `delta_time()`, `CAST(delta_time() AS REAL)`, `?`),
/// computed once for a statement rather than per row. A constant, a parameter and a call
/// without arguments, cast or not, are computed here without a batch, by the same
/// function and cast kernels `eval` calls, so to the same value or the same error; any
/// other expression by `eval` over one row. NULL for a result of no row.
pub fn eval_once(e: &BoundExpr, cx: &EvalCtx<'_>) -> Result<Value> {
    // One match, no closure: a system's `x + vx * delta_time()` asks for its scale once
    // a run, and its run costs what each of these steps does.
    let (leaf, cast) = match &e.kind {
        BoundKind::Cast(x, None) => (&**x, true),
        _ => (e, false),
    };
    let value = match &leaf.kind {
        BoundKind::Const(v) if cast => return Ok(cast_one(v, e.ty, e.at)?),
        BoundKind::Const(v) => return Ok(v.clone()),
        BoundKind::Param { param, value } => {
            let v = cx.params.get(param).unwrap_or(value);
            return if cast {
                Ok(cast_one(v, e.ty, e.at)?)
            } else {
                Ok(v.clone())
            };
        }
        BoundKind::Call(f, args) if args.is_empty() => first(f.invoke(Vec::new(), &call(leaf, 1, cx))?),
        _ => return Ok(first(eval(e, &Batch::new(1, 0), cx)?)),
    };
    match (cast, &value, e.ty) {
        (false, ..) => Ok(value),
        // The FLOAT clock in REAL arithmetic (`vx * delta_time()` over REAL fields, once
        // per system and tick) is converted as `cast_one` converts it, past its match of
        // every pair of types; a value out of REAL's range takes that way to its error.
        (true, Value::Float(x), DataType::Real) if let Some(r) = float_to_real(*x) => Ok(Value::Real(r)),
        (true, ..) => Ok(cast_one(&value, e.ty, e.at)?),
    }
}

/// What a function called by `e` over `len` rows is told: its type and place, the
/// statement's random sequence and clock.
fn call<'c>(e: &BoundExpr, len: usize, cx: &EvalCtx<'c>) -> Call<'c> {
    Call {
        ty: e.ty,
        len,
        at: e.at,
        rng: cx.rng,
        clock: cx.clock,
    }
}

/// The first value of `d` (its only one when it is a scalar); NULL when it has none.
fn first(d: Datum<'_>) -> Value {
    match d {
        Datum::Scalar(v) => v,
        Datum::Vector(v) if !v.is_empty() => v.get(0),
        Datum::Vector(_) => Value::Null,
    }
}

#[recursive::recursive]
pub fn eval<'b>(e: &BoundExpr, b: &'b Batch<'_>, cx: &EvalCtx<'_>) -> Result<Datum<'b>> {
    Ok(match &e.kind {
        BoundKind::Const(v) => Datum::Scalar(v.clone()),
        BoundKind::Param { param, value } => Datum::Scalar(cx.params.get(param).unwrap_or(value).clone()),
        BoundKind::Outer(n) => match cx.outer.borrow().get(*n) {
            Some(v) => Datum::Scalar(v.clone()),
            None => return Err(ExecError::internal(e.at, format!("outer value {n} was not set"))),
        },
        BoundKind::Slot(s) => match b.slots.get(*s) {
            Some(Some(d)) => d.view(),
            _ => return Err(ExecError::internal(e.at, format!("slot {s} was not filled"))),
        },
        BoundKind::Neg(x) => {
            let d = eval(x, b, cx)?;
            negate(d, e.at)?
        }
        BoundKind::Not(x) => {
            let d = eval(x, b, cx)?;
            map_bool(d, |v| !v)
        }
        BoundKind::Arith(op @ (ArithOp::Add | ArithOp::Sub), l, r)
            if e.ty == DataType::Real && (is_real_product(l) || is_real_product(r)) =>
        {
            real_multiply_add(*op, l, r, b, cx, e.at)?
        }
        BoundKind::Arith(op, l, r) => {
            // A REAL widened to FLOAT for FLOAT arithmetic is read as REAL and widened
            // inside the kernel, value by value, instead of as a vector of its own.
            let l = eval(unwidened(l, e.ty), b, cx)?;
            let r = eval(unwidened(r, e.ty), b, cx)?;
            arith(*op, l, r, b.len, e.ty == DataType::Float, e.at)?
        }
        BoundKind::Compare(op, l, r) => {
            let l = eval(l, b, cx)?;
            let r = eval(r, b, cx)?;
            compare(*op, &l, &r, b.len, e.at)?
        }
        BoundKind::IsDistinct(l, r, negated) => {
            let l = eval(l, b, cx)?;
            let r = eval(r, b, cx)?;
            distinct(&l, &r, b.len, *negated, e.at)?
        }
        BoundKind::And(l, r) => logic(true, l, r, b, cx)?,
        BoundKind::Or(l, r) => logic(false, l, r, b, cx)?,
        BoundKind::Concat(l, r) => {
            let l = eval(l, b, cx)?;
            let r = eval(r, b, cx)?;
            concat(&l, &r, b.len, e.at)?
        }
        BoundKind::IsNull { expr, negated } => {
            let d = eval(expr, b, cx)?;
            match d {
                Datum::Scalar(v) => Datum::Scalar(Value::Bool((v == Value::Null) != *negated)),
                Datum::Vector(v) => {
                    let out: Vec<bool> = (0..v.len()).map(|i| v.is_valid(i) == *negated).collect();
                    bools(out, None)
                }
            }
        }
        BoundKind::InList { expr, list, negated } => {
            let d = eval(expr, b, cx)?;
            let mut acc: Option<Datum<'static>> = None;
            for item in list {
                let v = eval(item, b, cx)?;
                let eq = compare(CmpOp::Eq, &d, &v, b.len, e.at)?.into_owned();
                acc = Some(match acc {
                    None => eq,
                    Some(prev) => or_data(&prev, &eq, b.len),
                });
            }
            let result = acc.unwrap_or(Datum::Scalar(Value::Bool(false)));
            if *negated {
                map_bool(result, |v| !v)
            } else {
                result
            }
        }
        BoundKind::InSubquery {
            expr,
            query,
            negated,
            ty,
            correlated: Some(c),
            ..
        } => {
            let d = eval(expr, b, cx)?;
            let run = || Ok(Ran::Set(Box::new(value_set(query, *ty, cx, e.at, true)?)));
            per_outer_values(e, c, b, cx, run, |ran, row| match ran {
                Ran::Set(set) => Ok(membership(&Datum::Scalar(d.get(row)), set, *ty, *negated, 1).get(0)),
                _ => Err(ExecError::internal(e.at, "IN (SELECT …) kept no set")),
            })?
        }
        BoundKind::InSubquery {
            expr,
            query,
            negated,
            ty,
            values,
            correlated: None,
        } => {
            if values.get().is_none() {
                let _ = values.set(Box::new(value_set(query, *ty, cx, e.at, false)?));
            }
            let Some(set) = values.get() else {
                return Err(ExecError::internal(e.at, "IN (SELECT …) without its values"));
            };
            let d = eval(expr, b, cx)?;
            membership(&d, set, *ty, *negated, b.len)
        }
        BoundKind::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
            escape,
        } => {
            let s = eval(expr, b, cx)?;
            let p = eval(pattern, b, cx)?;
            let how = like::LikeMode {
                negated: *negated,
                case_insensitive: *case_insensitive,
                escape: *escape,
            };
            like::like(&s, &p, how, b.len, e.at)?
        }
        BoundKind::Case { branches, otherwise } => case(e, branches, otherwise.as_deref(), b, cx)?,
        BoundKind::Cast(x, field) => {
            let d = match narrowed_arith(e, x, b, cx)? {
                Narrowed::Done(d) => return Ok(d),
                Narrowed::Computed(d) => d,
                Narrowed::No => eval(x, b, cx)?,
            };
            match field {
                Some(field) => crate::vector::store_cast(d, e.ty, field, e.at)?,
                None => cast(d, e.ty, e.at)?,
            }
        }
        BoundKind::Call(f, args) => {
            let mut values = Vec::with_capacity(args.len());
            for a in args {
                values.push(eval(a, b, cx)?);
            }
            f.invoke(values, &call(e, b.len, cx))?
        }
        BoundKind::Subquery {
            query,
            correlated: Some(c),
            ..
        } => {
            let run = || Ok(Ran::Value(scalar_of(&cx.subqueries.run_apart(query)?, e.at)?));
            per_outer_values(e, c, b, cx, run, |ran, _| match ran {
                Ran::Value(v) => Ok(v.clone()),
                _ => Err(ExecError::internal(e.at, "a scalar subquery kept no value")),
            })?
        }
        BoundKind::Subquery {
            query,
            value,
            correlated: None,
        } => {
            if value.get().is_none() {
                let v = scalar_of(&cx.run_subquery(query)?, e.at)?;
                let _ = value.set(v);
            }
            Datum::Scalar(value.get().cloned().unwrap_or(Value::Null))
        }
        BoundKind::Exists {
            query,
            negated,
            correlated: Some(c),
            ..
        } => {
            let run = || Ok(Ran::Exists(cx.subqueries.run_apart(query)?.len > 0));
            per_outer_values(e, c, b, cx, run, |ran, _| match ran {
                Ran::Exists(found) => Ok(Value::Bool(*found != *negated)),
                _ => Err(ExecError::internal(e.at, "EXISTS kept no answer")),
            })?
        }
        BoundKind::Exists {
            query,
            negated,
            value,
            correlated: None,
        } => {
            if value.get().is_none() {
                let chunk = cx.run_subquery(query)?;
                let _ = value.set(chunk.len > 0);
            }
            Datum::Scalar(Value::Bool(value.get().copied().unwrap_or(false) != *negated))
        }
    })
}

/// Evaluates a condition into a selection: the rows where it is TRUE.
pub fn select_rows(e: &BoundExpr, b: &Batch<'_>, cx: &EvalCtx<'_>) -> Result<Selection> {
    let mut flags = Vec::new();
    if conjunction::pass_flags(e, b, cx, &mut flags)? {
        return Ok(selection_from_rows(true_rows_of(&flags), b.len));
    }
    let d = eval(e, b, cx)?;
    Ok(selection_of(&d, b.len))
}

/// Which rows of a batch pass a filter.
#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    All,
    None,
    Rows(Vec<u32>),
}

/// The positions of the `true`s. Branch-free: each position is written, and the cursor
/// moves on only past a `true`, so a filter passing rows at random costs no mispredictions.
fn true_rows(flags: impl ExactSizeIterator<Item = bool>) -> Vec<u32> {
    let mut rows = vec![0u32; flags.len()];
    let mut kept = 0;
    for (i, keep) in flags.enumerate() {
        rows[kept] = i as u32;
        kept += usize::from(keep);
    }
    rows.truncate(kept);
    rows
}

/// `true_rows` of flags in memory. They are counted first (16 flags an instruction): none
/// passing makes no list, all passing needs no look at each, and when fewer than one in
/// 32 pass (a selective filter, such as a radius that passes about 100 of 1M points) they
/// are read eight at a time: eight falses passed over with one load and one compare, a
/// group holding a `true` written branch-free as `true_rows` writes it, into a list of
/// only the passing rows. Denser flags go through `true_rows`, whose branch-free loop is
/// faster there (eight at a time measured 1.4-2x slower at 8-100% passing: a mispredicted
/// branch a group). On `index_radius/scan` the scan went from 1.56-1.62 to 1.42-1.47 ms
/// (alternating runs, Intel machine).
fn true_rows_of(flags: &[bool]) -> Vec<u32> {
    let passing = conjunction::count_true(flags);
    if passing == 0 {
        return Vec::new();
    }
    if passing == flags.len() {
        return (0..passing as u32).collect();
    }
    if passing.saturating_mul(32) >= flags.len() {
        return true_rows(flags.iter().copied());
    }
    // Written at `kept`, which is at most `passing` (the trues before a position).
    let mut rows = vec![0u32; passing + 1];
    let mut kept = 0;
    let (groups, rest) = flags.as_chunks::<8>();
    for (g, group) in groups.iter().enumerate() {
        // A bool's byte is 0 or 1: the eight read as one number are 0 when all are false.
        if u64::from_ne_bytes(group.map(u8::from)) == 0 {
            continue;
        }
        for (j, &keep) in group.iter().enumerate() {
            rows[kept] = (g * 8 + j) as u32;
            kept += usize::from(keep);
        }
    }
    let done = groups.len() * 8;
    for (j, &keep) in rest.iter().enumerate() {
        rows[kept] = (done + j) as u32;
        kept += usize::from(keep);
    }
    rows.truncate(passing);
    rows
}

/// How many rows of `b` pass the condition `e`: what a sink that reads no column
/// (`count(*)`) needs, without the positions.
pub fn count_passing(e: &BoundExpr, b: &Batch<'_>, cx: &EvalCtx<'_>) -> Result<usize> {
    let mut flags = Vec::new();
    if let Some(n) = conjunction::count_passing(e, b, cx, &mut flags)? {
        return Ok(n);
    }
    Ok(count_selected(&eval(e, b, cx)?, b.len))
}

/// How many rows of a batch of `len` pass a filter whose value is `d`.
fn count_selected(d: &Datum<'_>, len: usize) -> usize {
    match d {
        Datum::Scalar(Value::Bool(true)) => len,
        Datum::Scalar(_) => 0,
        Datum::Vector(v) => match (&v.data, v.validity()) {
            (Data::Bool(values), None) => conjunction::count_true(values),
            (Data::Bool(values), Some(valid)) => values
                .iter()
                .zip(valid.iter())
                .filter(|&(&x, &ok)| x & ok)
                .count(),
            _ => 0,
        },
    }
}

pub fn selection_of(d: &Datum<'_>, len: usize) -> Selection {
    match d {
        Datum::Scalar(Value::Bool(true)) => Selection::All,
        Datum::Scalar(_) => Selection::None,
        Datum::Vector(v) => {
            let Data::Bool(values) = &v.data else {
                return Selection::None;
            };
            let rows = match v.validity() {
                None => true_rows_of(values),
                Some(valid) => true_rows(values.iter().zip(valid.iter()).map(|(&x, &ok)| x & ok)),
            };
            selection_from_rows(rows, len)
        }
    }
}

/// The selection of the passing `rows` of a batch of `len`.
fn selection_from_rows(rows: Vec<u32>, len: usize) -> Selection {
    if rows.len() == len {
        Selection::All
    } else if rows.is_empty() {
        Selection::None
    } else {
        Selection::Rows(rows)
    }
}

fn concat<'a>(l: &Datum<'_>, r: &Datum<'_>, len: usize, at: Location) -> Result<Datum<'a>> {
    if is_null_scalar(l) || is_null_scalar(r) {
        return Ok(Datum::Scalar(Value::Null));
    }
    let scalar = both_scalar(l, r);
    let n = if scalar { 1 } else { len };
    let valid = if scalar { None } else { both_valid(l, r, len) };
    let out: Vec<String> = (0..n)
        .map(|i| {
            let (a, b) = (text_at(l, i), text_at(r, i));
            crate::vector::check_text_length(a.len().saturating_add(b.len()), at)?;
            let mut s = String::with_capacity(a.len() + b.len());
            s.push_str(a);
            s.push_str(b);
            Ok(s)
        })
        .collect::<std::result::Result<_, crate::vector::KernelError>>()?;
    Ok(finish(Data::Text(Cow::Owned(out)), n, valid, scalar))
}
