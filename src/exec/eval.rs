//! Vectorized expression evaluation: a bound expression over a `Batch`, one typed slice
//! at a time. Conditional parts (AND, OR, CASE) evaluate their right-hand side only on the
//! rows that need it, so `y <> 0 AND 10 / y > 1` never divides by zero.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;

use super::Chunk;
use super::error::ExecError;
use super::like;
use crate::func::{Call, Clock};
use crate::location::Location;
use crate::plan::{ArithOp, BoundExpr, BoundKind, Correlated, ParamValues, QueryPlan, Ran, ValueSet};
use crate::storage::{Key, Value};
use crate::vector::kernels::{
    Side, all_valid, bools, both_scalar, both_valid, compare, distinct, finish, is_null_scalar, scatter,
    side_int, side_real, text_at, zip,
};
use crate::vector::{Batch, CmpOp, Data, DataType, Datum, Vector, any_infinite, cast, infinite_bit};

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
            let call = Call {
                ty: e.ty,
                len: b.len,
                at: e.at,
                rng: cx.rng,
                clock: cx.clock,
            };
            f.invoke(values, &call)?
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

/// The values an `IN (SELECT …)` subquery returns, as a set in the comparison's type `ty`
/// (`apart`: run as a correlated subquery is).
fn value_set(
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
    let mut set = ValueSet::new([], ty).map_err(|message| ExecError::TypeMismatch { message, at })?;
    if let Some(column) = chunk.columns.first() {
        // A piece at a time, the interrupt looked at between pieces (a charge of nothing).
        let mut from = 0;
        while from < chunk.len {
            cx.subqueries.keep(0, at)?;
            let to = (from + SET_PIECE).min(chunk.len);
            set.extend((from..to).map(|i| column.get(i)), ty)
                .map_err(|message| ExecError::TypeMismatch { message, at })?;
            from = to;
        }
    }
    Ok(set)
}

/// How many values an `IN (SELECT …)` set takes between two looks at the interrupt.
const SET_PIECE: usize = 1 << 16;

/// The one value of a scalar subquery's result: NULL for no row, an error for more than one.
fn scalar_of(chunk: &Chunk, at: Location) -> Result<Value> {
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
fn per_outer_values<'b>(
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

/// Evaluates a condition into a selection: the rows where it is TRUE.
pub fn select_rows(e: &BoundExpr, b: &Batch<'_>, cx: &EvalCtx<'_>) -> Result<Selection> {
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

/// How many rows of a batch of `len` pass a filter whose value is `d`: what a sink that
/// reads no column (`count(*)`) needs, without the positions.
pub fn count_selected(d: &Datum<'_>, len: usize) -> usize {
    match d {
        Datum::Scalar(Value::Bool(true)) => len,
        Datum::Scalar(_) => 0,
        Datum::Vector(v) => match (&v.data, v.validity()) {
            (Data::Bool(values), None) => values.iter().filter(|&&x| x).count(),
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
                None => true_rows(values.iter().copied()),
                Some(valid) => true_rows(values.iter().zip(valid.iter()).map(|(&x, &ok)| x & ok)),
            };
            if rows.len() == len {
                Selection::All
            } else if rows.is_empty() {
                Selection::None
            } else {
                Selection::Rows(rows)
            }
        }
    }
}

// ---- arithmetic ---------------------------------------------------------------------------

fn negate<'a>(d: Datum<'a>, at: Location) -> Result<Datum<'a>> {
    if is_null_scalar(&d) {
        return Ok(Datum::Scalar(Value::Null));
    }
    let zero = match &d {
        Datum::Scalar(v) => Datum::Scalar(match v {
            Value::Int(_) => Value::Int(0),
            Value::Float(_) => Value::Float(0.0),
            _ => Value::Real(0.0),
        }),
        Datum::Vector(v) => Datum::Scalar(match v.data {
            Data::Int(_) => Value::Int(0),
            Data::Float(_) => Value::Float(0.0),
            _ => Value::Real(0.0),
        }),
    };
    let len = match &d {
        Datum::Vector(v) => v.len(),
        Datum::Scalar(_) => 1,
    };
    arith(ArithOp::Sub, zero, d, len, false, at)
}

/// What `narrowed_arith` made of a cast.
enum Narrowed<'b> {
    /// The cast's result.
    Done(Datum<'b>),
    /// The value to cast, computed on the way (a value out of REAL's range was met: the
    /// cast says which).
    Computed(Datum<'b>),
    /// Not a cast it handles.
    No,
}

/// `CAST(l op r AS REAL)` of FLOAT `+`, `-` or `*` (a FLOAT expression stored into a REAL
/// field): the last operation's results narrowed as they are made, with no FLOAT vector
/// between them. Values out of REAL's range are looked for after, as `cast` does.
fn narrowed_arith<'b>(
    e: &BoundExpr,
    x: &BoundExpr,
    b: &'b Batch<'_>,
    cx: &EvalCtx<'_>,
) -> Result<Narrowed<'b>> {
    let BoundKind::Arith(op @ (ArithOp::Add | ArithOp::Sub | ArithOp::Mul), l, r) = &x.kind else {
        return Ok(Narrowed::No);
    };
    if e.ty != DataType::Real || x.ty != DataType::Float {
        return Ok(Narrowed::No);
    }
    let is_product =
        |p: &BoundExpr| matches!(p.kind, BoundKind::Arith(ArithOp::Mul, _, _)) && p.ty == DataType::Float;
    if matches!(op, ArithOp::Add | ArithOp::Sub) && (is_product(r) || (*op == ArithOp::Add && is_product(l)))
    {
        // `a ± y * z` (or `y * z + a`): integrating a position or a velocity.
        let (a, product, product_first) = if is_product(r) {
            (l, r, false)
        } else {
            (r, l, true)
        };
        let BoundKind::Arith(_, y, z) = &product.kind else {
            return Ok(Narrowed::No);
        };
        // Left to right, as written: which error is met first and the order random()
        // draws in are those of the passes this replaces (as in `real_multiply_add`; a
        // function returning the three was a memcpy of them, 4% of tick_20_systems).
        let (a, y, z) = if product_first {
            let y = eval(unwidened(y, x.ty), b, cx)?;
            let z = eval(unwidened(z, x.ty), b, cx)?;
            (eval(unwidened(a, x.ty), b, cx)?, y, z)
        } else {
            let a = eval(unwidened(a, x.ty), b, cx)?;
            (
                a,
                eval(unwidened(y, x.ty), b, cx)?,
                eval(unwidened(z, x.ty), b, cx)?,
            )
        };
        if let Some(done) = multiply_add(*op == ArithOp::Sub, product_first, &a, &y, &z, b.len, x.at)? {
            return Ok(Narrowed::Done(done));
        }
        let yz = arith(ArithOp::Mul, y, z, b.len, true, product.at)?;
        return if product_first {
            narrow_pair(*op, yz, a, b.len, x.at)
        } else {
            narrow_pair(*op, a, yz, b.len, x.at)
        };
    }
    let l = eval(unwidened(l, x.ty), b, cx)?;
    let r = eval(unwidened(r, x.ty), b, cx)?;
    narrow_pair(*op, l, r, b.len, x.at)
}

/// Whether `e` is a REAL product (`vx * delta_time()`).
fn is_real_product(e: &BoundExpr) -> bool {
    e.ty == DataType::Real && matches!(e.kind, BoundKind::Arith(ArithOp::Mul, _, _))
}

/// `l ± r` in REAL where a side is a REAL product (`is_real_product`): `x + vx *
/// delta_time()`, a position integrated by its velocity. Its operands are evaluated as
/// written, left to right; when the sum's other side is a vector and the product a vector
/// times a value the same for every row, the result is made in one pass (`ScaledSum`),
/// with no vector of products. Any other shape is the two passes.
fn real_multiply_add<'b>(
    op: ArithOp,
    l: &BoundExpr,
    r: &BoundExpr,
    b: &'b Batch<'_>,
    cx: &EvalCtx<'_>,
    at: Location,
) -> Result<Datum<'b>> {
    let product_first = !is_real_product(r);
    let (a, product) = if product_first { (r, l) } else { (l, r) };
    let BoundKind::Arith(_, y, z) = &product.kind else {
        return Err(ExecError::internal(at, "a product without operands"));
    };
    // Left to right, as written (as in `narrowed_arith`).
    let (a, y, z) = if product_first {
        let y = eval(y, b, cx)?;
        let z = eval(z, b, cx)?;
        (eval(a, b, cx)?, y, z)
    } else {
        let a = eval(a, b, cx)?;
        (a, eval(y, b, cx)?, eval(z, b, cx)?)
    };
    if !([&a, &y, &z].iter().any(|d| is_null_scalar(d))) {
        // Operands not read as REAL (none the binder makes) take the two passes.
        let sides = (
            side_real(&a, at).ok(),
            side_real(&y, at).ok(),
            side_real(&z, at).ok(),
        );
        let (xs, vs, s) = match sides {
            (Some(Side::Many(xs)), Some(Side::Many(vs)), Some(Side::One(s)))
            | (Some(Side::Many(xs)), Some(Side::One(s)), Some(Side::Many(vs))) => (xs, vs, s),
            _ => (&[][..], &[][..], 0.0),
        };
        if xs.len() == b.len && vs.len() == b.len && b.len > 0 {
            let sum = ScaledSum {
                sub: op == ArithOp::Sub,
                product_first,
            };
            let out = sum.run(xs, vs, s);
            let valid = all_valid(&[&a, &y, &z], b.len);
            return Ok(finish(Data::Real(Cow::Owned(out)), b.len, valid, false));
        }
    }
    let yz = arith(ArithOp::Mul, y, z, b.len, false, product.at)?;
    if product_first {
        arith(op, yz, a, b.len, false, at)
    } else {
        arith(op, a, yz, b.len, false, at)
    }
}

/// `x ± v * s` over REAL vectors `x`, `v` and a REAL `s` (`v * s ± x` when
/// `product_first`): the very f32 operations of the two passes it replaces (Rust never
/// fuses a multiply and an add), so the same values. (A NaN's payload is the one thing
/// neither promises: the compiler may swap the operands of `+` and `*`.)
#[derive(Clone, Copy)]
struct ScaledSum {
    sub: bool,
    product_first: bool,
}

impl ScaledSum {
    fn run(self, xs: &[f32], vs: &[f32], s: f32) -> Vec<f32> {
        macro_rules! each {
            ($f:expr) => {
                xs.iter().zip(vs).map(|(&x, &v)| $f(x, v)).collect()
            };
        }
        match (self.sub, self.product_first) {
            (false, false) => each!(|x: f32, v: f32| x + v * s),
            (false, true) => each!(|x: f32, v: f32| v * s + x),
            (true, false) => each!(|x: f32, v: f32| x - v * s),
            (true, true) => each!(|x: f32, v: f32| v * s - x),
        }
    }
}

/// `l op r` in FLOAT, narrowed to REAL as the values are made; `Computed` (the FLOAT
/// values, for the cast to check) where a value is out of REAL's range or an operand is a
/// NULL or every operand a scalar.
fn narrow_pair<'b>(
    op: ArithOp,
    l: Datum<'_>,
    r: Datum<'_>,
    len: usize,
    at: Location,
) -> Result<Narrowed<'b>> {
    let plain = |d: &Datum<'_>| !is_null_scalar(d);
    if !(plain(&l) && plain(&r)) || both_scalar(&l, &r) {
        return Ok(Narrowed::Computed(arith(op, l, r, len, true, at)?));
    }
    let (wl, wr) = (side_wide(&l, at)?, side_wide(&r, at)?);
    let f = |p: f64| p as f32;
    let out: Vec<f32> = match op {
        ArithOp::Add => wide_zip(wl, wr, |a, c| f(a + c)),
        ArithOp::Sub => wide_zip(wl, wr, |a, c| f(a - c)),
        _ => wide_zip(wl, wr, |a, c| f(a * c)),
    };
    if any_infinite(&out) {
        // Some value is infinite: computed again in FLOAT, the cast finds which.
        return Ok(Narrowed::Computed(arith(op, l, r, len, true, at)?));
    }
    let valid = both_valid(&l, &r, len);
    Ok(Narrowed::Done(finish(
        Data::Real(Cow::Owned(out)),
        len,
        valid,
        false,
    )))
}

/// `a ± y * z` (`y * z - a` when `product_first`) in FLOAT narrowed to REAL in one pass,
/// when `a` is a vector and the product is a vector times a scalar (dt, a constant): the
/// same operations in the same order as the passes it replaces. `None` for other shapes
/// and when a value is out of REAL's range (the caller computes it the long way).
fn multiply_add<'a>(
    sub: bool,
    product_first: bool,
    a: &Datum<'_>,
    y: &Datum<'_>,
    z: &Datum<'_>,
    len: usize,
    at: Location,
) -> Result<Option<Datum<'a>>> {
    // A NULL scalar or an all-NULL vector: the general path makes the result NULL.
    if [a, y, z].iter().any(|d| is_null_scalar(d)) {
        return Ok(None);
    }
    let (wa, wy, wz) = (side_wide(a, at)?, side_wide(y, at)?, side_wide(z, at)?);
    let (v, s) = match (wy, wz) {
        (Wide::One(s), v @ (Wide::F32(_) | Wide::F64(_)))
        | (v @ (Wide::F32(_) | Wide::F64(_)), Wide::One(s)) => (v, s),
        _ => return Ok(None),
    };
    // The values, and whether one became an infinity (tested as it is made: one integer
    // test on its bits, branch-free, so the loop stays vectorized and no second pass reads
    // the values again).
    fn run<A: Copy + Into<f64>, V: Copy + Into<f64>>(
        a: &[A],
        v: &[V],
        s: f64,
        g: impl Fn(f64, f64) -> f64,
    ) -> (Vec<f32>, bool) {
        let mut infinite = 0u32;
        let out = a
            .iter()
            .zip(v)
            .map(|(&a, &v)| {
                let x = g(a.into(), v.into() * s) as f32;
                infinite |= infinite_bit(x);
                x
            })
            .collect();
        (out, infinite != 0)
    }
    macro_rules! with {
        ($g:expr) => {
            match (wa, v) {
                (Wide::F32(a), Wide::F32(v)) => run(a, v, s, $g),
                (Wide::F32(a), Wide::F64(v)) => run(a, v, s, $g),
                (Wide::F64(a), Wide::F32(v)) => run(a, v, s, $g),
                (Wide::F64(a), Wide::F64(v)) => run(a, v, s, $g),
                _ => return Ok(None),
            }
        };
    }
    let (out, infinite) = match (sub, product_first) {
        (false, _) => with!(|a: f64, p: f64| a + p),
        (true, false) => with!(|a: f64, p: f64| a - p),
        (true, true) => with!(|a: f64, p: f64| p - a),
    };
    if out.len() != len || infinite {
        return Ok(None);
    }
    let valid = all_valid(&[a, y, z], len);
    Ok(Some(finish(Data::Real(Cow::Owned(out)), len, valid, false)))
}

/// The REAL expression under a cast to FLOAT that feeds FLOAT arithmetic (`arith` widens
/// REAL operands itself), or `e`.
fn unwidened(e: &BoundExpr, ty: DataType) -> &BoundExpr {
    match &e.kind {
        BoundKind::Cast(inner, _)
            if ty == DataType::Float && e.ty == DataType::Float && inner.ty == DataType::Real =>
        {
            inner
        }
        _ => e,
    }
}

/// A FLOAT operand: a FLOAT or REAL scalar, or a vector of either (REAL values are
/// widened as they are read).
#[derive(Clone, Copy)]
enum Wide<'x> {
    One(f64),
    F64(&'x [f64]),
    F32(&'x [f32]),
}

fn side_wide<'x>(d: &'x Datum<'_>, at: Location) -> Result<Wide<'x>> {
    Ok(match d {
        Datum::Scalar(Value::Float(x)) => Wide::One(*x),
        Datum::Scalar(Value::Real(x)) => Wide::One(f64::from(*x)),
        Datum::Scalar(Value::Null) => Wide::One(0.0),
        Datum::Vector(v) => match &v.data {
            Data::Float(s) => Wide::F64(s),
            Data::Real(s) => Wide::F32(s),
            _ => {
                return Err(ExecError::internal(
                    at,
                    format!("expected FLOAT or REAL data, found {}", v.data_type()),
                ));
            }
        },
        Datum::Scalar(other) => {
            return Err(ExecError::internal(
                at,
                format!("expected a FLOAT or REAL, found {}", other.describe()),
            ));
        }
    })
}

/// `f` over two FLOAT operands, row by row (into FLOAT values, or REAL ones narrowed as
/// they are made).
fn wide_zip<U>(a: Wide<'_>, b: Wide<'_>, f: impl Fn(f64, f64) -> U) -> Vec<U> {
    fn many<A: Copy + Into<f64>, B: Copy + Into<f64>, U>(
        a: &[A],
        b: &[B],
        f: impl Fn(f64, f64) -> U,
    ) -> Vec<U> {
        a.iter().zip(b).map(|(&x, &y)| f(x.into(), y.into())).collect()
    }
    fn left<A: Copy + Into<f64>, U>(a: &[A], y: f64, f: impl Fn(f64, f64) -> U) -> Vec<U> {
        a.iter().map(|&x| f(x.into(), y)).collect()
    }
    fn right<B: Copy + Into<f64>, U>(x: f64, b: &[B], f: impl Fn(f64, f64) -> U) -> Vec<U> {
        b.iter().map(|&y| f(x, y.into())).collect()
    }
    match (a, b) {
        (Wide::F64(x), Wide::F64(y)) => many(x, y, f),
        (Wide::F64(x), Wide::F32(y)) => many(x, y, f),
        (Wide::F32(x), Wide::F64(y)) => many(x, y, f),
        (Wide::F32(x), Wide::F32(y)) => many(x, y, f),
        (Wide::F64(x), Wide::One(y)) => left(x, y, f),
        (Wide::F32(x), Wide::One(y)) => left(x, y, f),
        (Wide::One(x), Wide::F64(y)) => right(x, y, f),
        (Wide::One(x), Wide::F32(y)) => right(x, y, f),
        (Wide::One(x), Wide::One(y)) => vec![f(x, y)],
    }
}

/// The FLOAT values of `d` taken out of it, when they are its own (not borrowed from a
/// table) and `n` long.
fn owned_floats(d: &mut Datum<'_>, n: usize) -> Option<Vec<f64>> {
    match d {
        Datum::Vector(v) => match &mut v.data {
            Data::Float(Cow::Owned(values)) if values.len() == n => Some(std::mem::take(values)),
            _ => None,
        },
        Datum::Scalar(_) => None,
    }
}

/// `out[i] = out[i] op other[i]` (`out_is_left`), or `other[i] op out[i]`.
fn in_place(op: ArithOp, out: &mut [f64], other: Wide<'_>, out_is_left: bool) {
    fn each<T: Copy + Into<f64>>(out: &mut [f64], other: &[T], f: impl Fn(f64, f64) -> f64) {
        out.iter_mut().zip(other).for_each(|(o, &y)| *o = f(*o, y.into()));
    }
    macro_rules! apply {
        ($f:expr) => {
            match other {
                Wide::One(y) => out.iter_mut().for_each(|o| *o = $f(*o, y)),
                Wide::F64(s) => each(out, s, $f),
                Wide::F32(s) => each(out, s, $f),
            }
        };
    }
    match (op, out_is_left) {
        (ArithOp::Add, _) => apply!(|x: f64, y: f64| x + y),
        (ArithOp::Mul, _) => apply!(|x: f64, y: f64| x * y),
        (ArithOp::Sub, true) => apply!(|x: f64, y: f64| x - y),
        (ArithOp::Sub, false) => apply!(|x: f64, y: f64| y - x),
        (ArithOp::Div, true) => apply!(|x: f64, y: f64| x / y),
        (ArithOp::Div, false) => apply!(|x: f64, y: f64| y / x),
        (ArithOp::Mod, true) => apply!(|x: f64, y: f64| x % y),
        (ArithOp::Mod, false) => apply!(|x: f64, y: f64| y % x),
    }
}

/// `l op r` of `n` values: written into an operand that is already a vector of this
/// statement's own (a product, a sum), taken out of it by `owned`, with `apply(out,
/// other, out_is_left)`: no new vector, one stream of memory less; else into a new one
/// (`fresh`).
fn into_own_operand<T>(
    (mut l, mut r, n): (Datum<'_>, Datum<'_>, usize),
    owned: fn(&mut Datum<'_>, usize) -> Option<Vec<T>>,
    apply: impl Fn(&mut [T], &Datum<'_>, bool) -> Result<()>,
    fresh: impl FnOnce(&Datum<'_>, &Datum<'_>) -> Result<Vec<T>>,
) -> Result<Vec<T>> {
    if let Some(mut out) = owned(&mut l, n) {
        apply(&mut out, &r, true)?;
        Ok(out)
    } else if let Some(mut out) = owned(&mut r, n) {
        apply(&mut out, &l, false)?;
        Ok(out)
    } else {
        fresh(&l, &r)
    }
}

/// `d`'s REAL values when they are a vector of `n` this evaluation made (taken out of it).
fn owned_reals(d: &mut Datum<'_>, n: usize) -> Option<Vec<f32>> {
    match d {
        Datum::Vector(v) => match &mut v.data {
            Data::Real(Cow::Owned(values)) if values.len() == n => Some(std::mem::take(values)),
            _ => None,
        },
        Datum::Scalar(_) => None,
    }
}

/// `out[i] = out[i] op other[i]` (`out_is_left`), or `other[i] op out[i]`, in REAL.
fn real_in_place(op: ArithOp, out: &mut [f32], other: Side<'_, f32>, out_is_left: bool) {
    macro_rules! apply {
        ($f:expr) => {
            match other {
                Side::One(y) => out.iter_mut().for_each(|o| *o = $f(*o, y)),
                Side::Many(s) => out.iter_mut().zip(s).for_each(|(o, &y)| *o = $f(*o, y)),
            }
        };
    }
    match (op, out_is_left) {
        (ArithOp::Add, _) => apply!(|x: f32, y: f32| x + y),
        (ArithOp::Mul, _) => apply!(|x: f32, y: f32| x * y),
        (ArithOp::Sub, true) => apply!(|x: f32, y: f32| x - y),
        (ArithOp::Sub, false) => apply!(|x: f32, y: f32| y - x),
        (ArithOp::Div, true) => apply!(|x: f32, y: f32| x / y),
        (ArithOp::Div, false) => apply!(|x: f32, y: f32| y / x),
        (ArithOp::Mod, true) => apply!(|x: f32, y: f32| x % y),
        (ArithOp::Mod, false) => apply!(|x: f32, y: f32| y % x),
    }
}

fn wide_op(op: ArithOp, a: Wide<'_>, b: Wide<'_>) -> Vec<f64> {
    match op {
        ArithOp::Add => wide_zip(a, b, |x, y| x + y),
        ArithOp::Sub => wide_zip(a, b, |x, y| x - y),
        ArithOp::Mul => wide_zip(a, b, |x, y| x * y),
        ArithOp::Div => wide_zip(a, b, |x, y| x / y),
        ArithOp::Mod => wide_zip(a, b, |x, y| x % y),
    }
}

/// `l op r` over `len` rows. `wide`: the expression is FLOAT, so it is computed in FLOAT
/// even when both operands arrive as REAL (their casts to FLOAT were skipped, see
/// `unwidened`).
pub(super) fn arith<'a>(
    op: ArithOp,
    l: Datum<'_>,
    r: Datum<'_>,
    len: usize,
    wide: bool,
    at: Location,
) -> Result<Datum<'a>> {
    if is_null_scalar(&l) || is_null_scalar(&r) {
        return Ok(Datum::Scalar(Value::Null));
    }
    let scalar = both_scalar(&l, &r);
    let n = if scalar { 1 } else { len };
    let valid = if scalar { None } else { both_valid(&l, &r, len) };
    let is_valid = |i: usize| valid.as_ref().is_none_or(|v| v[i]);
    let int = matches!(&l, Datum::Scalar(Value::Int(_)))
        || matches!(&l, Datum::Vector(v) if matches!(v.data, Data::Int(_)));
    let is_float = |d: &Datum<'_>| {
        matches!(d, Datum::Scalar(Value::Float(_)))
            || matches!(d, Datum::Vector(v) if matches!(v.data, Data::Float(_)))
    };
    // FLOAT when either side is: a REAL side is widened as it is read.
    let float = wide || is_float(&l) || is_float(&r);
    let data = if int {
        let (a, b) = (side_int(&l, at)?, side_int(&r, at)?);
        if matches!(op, ArithOp::Div | ArithOp::Mod) {
            check_zero(b, n, &is_valid, |x| x == 0, at)?;
        }
        let out: Vec<Option<i64>> = match op {
            ArithOp::Add => zip(a, b, i64::checked_add),
            ArithOp::Sub => zip(a, b, i64::checked_sub),
            ArithOp::Mul => zip(a, b, i64::checked_mul),
            // Divisors of NULL rows are 0 here; they are not errors.
            ArithOp::Div => zip(a, b, |x, y| if y == 0 { Some(0) } else { x.checked_div(y) }),
            ArithOp::Mod => zip(a, b, |x, y| if y == 0 { Some(0) } else { x.checked_rem(y) }),
        };
        if let Some(i) = out
            .iter()
            .enumerate()
            .position(|(i, v)| v.is_none() && is_valid(i))
        {
            let _ = i;
            return Err(ExecError::arithmetic(
                at,
                "integer out of range (INT is a 64-bit integer)",
            ));
        }
        Data::Int(Cow::Owned(out.into_iter().map(|v| v.unwrap_or(0)).collect()))
    } else if float {
        if matches!(op, ArithOp::Div | ArithOp::Mod) {
            let zero = match side_wide(&r, at)? {
                Wide::One(y) => y == 0.0 && (0..n).any(is_valid),
                Wide::F64(ys) => ys.iter().enumerate().any(|(i, &y)| y == 0.0 && is_valid(i)),
                Wide::F32(ys) => ys.iter().enumerate().any(|(i, &y)| y == 0.0 && is_valid(i)),
            };
            if zero {
                return Err(ExecError::arithmetic(at, "division by zero"));
            }
        }
        let out = into_own_operand(
            (l, r, n),
            owned_floats,
            |out, other, left| {
                in_place(op, out, side_wide(other, at)?, left);
                Ok(())
            },
            |l, r| Ok(wide_op(op, side_wide(l, at)?, side_wide(r, at)?)),
        )?;
        Data::Float(Cow::Owned(out))
    } else {
        if matches!(op, ArithOp::Div | ArithOp::Mod) {
            check_zero(side_real(&r, at)?, n, &is_valid, |x| x == 0.0, at)?;
        }
        let out = into_own_operand(
            (l, r, n),
            owned_reals,
            |out, other, left| {
                real_in_place(op, out, side_real(other, at)?, left);
                Ok(())
            },
            |l, r| Ok(float_op(op, side_real(l, at)?, side_real(r, at)?)),
        )?;
        Data::Real(Cow::Owned(out))
    };
    Ok(finish(data, n, valid, scalar))
}

fn float_op<
    T: Copy
        + std::ops::Add<Output = T>
        + std::ops::Sub<Output = T>
        + std::ops::Mul<Output = T>
        + std::ops::Div<Output = T>
        + std::ops::Rem<Output = T>,
>(
    op: ArithOp,
    a: Side<'_, T>,
    b: Side<'_, T>,
) -> Vec<T> {
    match op {
        ArithOp::Add => zip(a, b, |x, y| x + y),
        ArithOp::Sub => zip(a, b, |x, y| x - y),
        ArithOp::Mul => zip(a, b, |x, y| x * y),
        ArithOp::Div => zip(a, b, |x, y| x / y),
        ArithOp::Mod => zip(a, b, |x, y| x % y),
    }
}

fn check_zero<T: Copy>(
    b: Side<'_, T>,
    n: usize,
    is_valid: &impl Fn(usize) -> bool,
    zero: impl Fn(T) -> bool,
    at: Location,
) -> Result<()> {
    let bad = match b {
        Side::One(y) => zero(y) && (0..n).any(is_valid),
        Side::Many(ys) => ys.iter().enumerate().any(|(i, &y)| zero(y) && is_valid(i)),
    };
    if bad {
        Err(ExecError::arithmetic(at, "division by zero"))
    } else {
        Ok(())
    }
}

// ---- membership ---------------------------------------------------------------------------

/// `d IN set` (or NOT IN) per row, probing the typed set without boxing: TRUE when found,
/// else NULL when the set holds a NULL, else FALSE; NULL rows stay NULL.
fn membership<'a>(d: &Datum<'_>, set: &ValueSet, ty: DataType, negated: bool, len: usize) -> Datum<'a> {
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

// ---- logic --------------------------------------------------------------------------------

fn map_bool<'a>(d: Datum<'a>, f: impl Fn(bool) -> bool) -> Datum<'a> {
    match d {
        Datum::Scalar(Value::Bool(v)) => Datum::Scalar(Value::Bool(f(v))),
        Datum::Scalar(_) => Datum::Scalar(Value::Null),
        Datum::Vector(v) => match &v.data {
            Data::Bool(values) => {
                let out = values.iter().map(|&x| f(x)).collect();
                bools(out, v.validity().map(Cow::into_owned))
            }
            _ => Datum::Scalar(Value::Null),
        },
    }
}

/// A boolean operand read row by row without boxing: `None` is NULL.
enum BoolView<'x> {
    One(Option<bool>),
    Many(&'x [bool], Option<Cow<'x, [bool]>>),
}

impl<'x> BoolView<'x> {
    fn of(d: &'x Datum<'_>) -> BoolView<'x> {
        match d {
            Datum::Scalar(Value::Bool(b)) => BoolView::One(Some(*b)),
            Datum::Scalar(_) => BoolView::One(None),
            Datum::Vector(v) => match &v.data {
                Data::Bool(values) => BoolView::Many(values, v.validity()),
                _ => BoolView::One(None),
            },
        }
    }

    fn at(&self, i: usize) -> Option<bool> {
        match self {
            BoolView::One(b) => *b,
            BoolView::Many(values, None) => Some(values[i]),
            BoolView::Many(values, Some(valid)) => valid[i].then_some(values[i]),
        }
    }
}

/// Three-valued AND (`is_and`) or OR of two full-length operands.
fn combine<'a>(is_and: bool, a: &Datum<'_>, b: &Datum<'_>, len: usize) -> Datum<'a> {
    let (x, y) = (BoolView::of(a), BoolView::of(b));
    if let (BoolView::One(p), BoolView::One(q)) = (&x, &y) {
        return Datum::Scalar(three_valued(is_and, *p, *q).map_or(Value::Null, Value::Bool));
    }
    // The common case, no NULLs on either side, as a plain loop.
    if let (BoolView::Many(p, None), BoolView::Many(q, None)) = (&x, &y) {
        let values = if is_and {
            zip(Side::Many(p), Side::Many(q), |a, b| a & b)
        } else {
            zip(Side::Many(p), Side::Many(q), |a, b| a | b)
        };
        return bools(values, None);
    }
    let mut values = Vec::with_capacity(len);
    let mut valid = Vec::with_capacity(len);
    for i in 0..len {
        let r = three_valued(is_and, x.at(i), y.at(i));
        values.push(r.unwrap_or(false));
        valid.push(r.is_some());
    }
    let valid = if valid.iter().all(|v| *v) {
        None
    } else {
        Some(valid)
    };
    bools(values, valid)
}

fn three_valued(is_and: bool, a: Option<bool>, b: Option<bool>) -> Option<bool> {
    let decisive = !is_and;
    if a == Some(decisive) || b == Some(decisive) {
        Some(decisive)
    } else if a.is_some() && b.is_some() {
        Some(!decisive)
    } else {
        None
    }
}

fn or_data<'a>(a: &Datum<'_>, b: &Datum<'_>, len: usize) -> Datum<'a> {
    combine(false, a, b, len)
}

/// AND / OR: the right side runs only on rows the left side has not decided.
fn logic<'b>(
    is_and: bool,
    l: &BoundExpr,
    r: &BoundExpr,
    b: &'b Batch<'_>,
    cx: &EvalCtx<'_>,
) -> Result<Datum<'b>> {
    let left = eval(l, b, cx)?;
    let decisive = !is_and;
    if let Datum::Scalar(Value::Bool(v)) = left
        && v == decisive
    {
        return Ok(Datum::Scalar(Value::Bool(decisive)));
    }
    // A right side that cannot fail is cheaper to run on every row than to gather, run
    // on the undecided rows, and scatter back.
    if r.cannot_fail() {
        let right = eval(r, b, cx)?;
        return Ok(combine(is_and, &left, &right, b.len));
    }
    let view = BoolView::of(&left);
    let undecided: Vec<u32> = (0..b.len)
        .filter(|&i| view.at(i) != Some(decisive))
        .map(|i| i as u32)
        .collect();
    if matches!(left, Datum::Scalar(_)) || undecided.len() == b.len {
        let right = eval(r, b, cx)?;
        return Ok(combine(is_and, &left, &right, b.len));
    }
    if undecided.is_empty() {
        return Ok(left.into_owned());
    }
    let sub = b.gather(&undecided);
    let right_sub = eval(r, &sub, cx)?;
    // Rows the left side decided take the decisive value on the right too.
    let mut right = Vector::broadcast(&Value::Bool(decisive), DataType::Bool, b.len);
    let right_sub = right_sub.into_vector(DataType::Bool, undecided.len());
    scatter(&mut right, &undecided, &right_sub);
    Ok(combine(is_and, &left, &Datum::Vector(right), b.len))
}

fn case<'b>(
    e: &BoundExpr,
    branches: &[(BoundExpr, BoundExpr)],
    otherwise: Option<&BoundExpr>,
    b: &'b Batch<'_>,
    cx: &EvalCtx<'_>,
) -> Result<Datum<'b>> {
    let mut result = Vector::broadcast(&Value::Null, e.ty, b.len);
    let mut remaining: Vec<u32> = (0..b.len as u32).collect();
    for (cond, value) in branches {
        if remaining.is_empty() {
            break;
        }
        let sub = b.gather(&remaining);
        let hits = match select_rows(cond, &sub, cx)? {
            Selection::All => (0..sub.len as u32).collect(),
            Selection::None => Vec::new(),
            Selection::Rows(r) => r,
        };
        if hits.is_empty() {
            continue;
        }
        let chosen = sub.gather(&hits);
        let v = eval(value, &chosen, cx)?.into_vector(e.ty, hits.len());
        let rows: Vec<u32> = hits.iter().map(|&h| remaining[h as usize]).collect();
        scatter(&mut result, &rows, &v);
        let mut hit = hits.iter().peekable();
        remaining = remaining
            .iter()
            .enumerate()
            .filter(|(k, _)| {
                if hit.peek().is_some_and(|&&h| h as usize == *k) {
                    hit.next();
                    false
                } else {
                    true
                }
            })
            .map(|(_, &r)| r)
            .collect();
    }
    if let (Some(o), false) = (otherwise, remaining.is_empty()) {
        let sub = b.gather(&remaining);
        let v = eval(o, &sub, cx)?.into_vector(e.ty, remaining.len());
        scatter(&mut result, &remaining, &v);
    }
    Ok(Datum::Vector(result))
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

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::cell::{Cell, RefCell};

    use super::*;

    /// Expressions without subqueries need no world: these refuse to run any.
    struct NoSubqueries;

    impl Subqueries for NoSubqueries {
        fn run(&self, _: &QueryPlan) -> Result<Chunk> {
            Err(ExecError::internal(Location::default(), "no subqueries here"))
        }

        fn run_apart(&self, plan: &QueryPlan) -> Result<Chunk> {
            self.run(plan)
        }

        fn keep(&self, _: usize, _: Location) -> Result<()> {
            Ok(())
        }

        fn give_back(&self, _: usize) {}
    }

    fn int(v: i64) -> BoundExpr {
        BoundExpr::constant(Value::Int(v), Location::default())
    }

    fn op(kind: BoundKind, ty: DataType) -> BoundExpr {
        BoundExpr::new(kind, ty, Location::default())
    }

    /// A one-slot batch of INTs, `None` for NULL.
    fn ints(values: &[Option<i64>]) -> Batch<'static> {
        let mut b = Batch::new(values.len(), 1);
        let data: Vec<i64> = values.iter().map(|v| v.unwrap_or(0)).collect();
        let valid: Vec<bool> = values.iter().map(Option::is_some).collect();
        b.slots[0] = Some(Datum::Vector(Vector::new(
            Data::Int(Cow::Owned(data)),
            Some(Cow::Owned(valid)),
            values.len(),
        )));
        b
    }

    #[test]
    fn and_evaluates_its_right_side_only_where_the_left_may_pass() {
        // y <> 0 AND 10 / y > 1, over y = 2, 0, NULL, 20: dividing the 0 would fail.
        let y = || BoundExpr::slot(0, DataType::Int, Location::default());
        let nonzero = op(
            BoundKind::Compare(CmpOp::NotEq, Box::new(y()), Box::new(int(0))),
            DataType::Bool,
        );
        let quotient = op(
            BoundKind::Arith(ArithOp::Div, Box::new(int(10)), Box::new(y())),
            DataType::Int,
        );
        let big = op(
            BoundKind::Compare(CmpOp::Gt, Box::new(quotient), Box::new(int(1))),
            DataType::Bool,
        );
        let both = op(BoundKind::And(Box::new(nonzero), Box::new(big)), DataType::Bool);
        let batch = ints(&[Some(2), Some(0), None, Some(20)]);
        let (params, rng, outer) = (ParamValues::default(), Cell::new(1), RefCell::default());
        let cx = EvalCtx {
            params: &params,
            outer: &outer,
            rng: &rng,
            subqueries: &NoSubqueries,
            clock: Clock::default(),
        };
        let out = eval(&both, &batch, &cx).expect("no row divides by zero");
        let got: Vec<Value> = (0..4).map(|i| out.get(i)).collect();
        assert_eq!(
            got,
            vec![
                Value::Bool(true),
                Value::Bool(false),
                Value::Null,
                Value::Bool(false)
            ]
        );
        assert!(matches!(select_rows(&both, &batch, &cx), Ok(Selection::Rows(r)) if r == vec![0]));
    }

    /// The same f32 bits, or both a NaN.
    fn same_bits(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    /// A batch of REAL slots, `None` for NULL.
    fn reals(slots: &[&[Option<f32>]]) -> Batch<'static> {
        let len = slots[0].len();
        let mut b = Batch::new(len, slots.len());
        for (slot, values) in b.slots.iter_mut().zip(slots) {
            let data: Vec<f32> = values.iter().map(|v| v.unwrap_or(0.0)).collect();
            let valid: Vec<bool> = values.iter().map(Option::is_some).collect();
            *slot = Some(Datum::Vector(Vector::new(
                Data::Real(Cow::Owned(data)),
                Some(Cow::Owned(valid)),
                len,
            )));
        }
        b
    }

    #[test]
    fn real_sums_of_products_are_the_two_rounded_operations_row_by_row() {
        // `a ± y * z` and `y * z ± a` in REAL, over every mix of columns (with NULLs,
        // infinities, NaNs of two payloads, -0) and constants (NULL and NaN among them):
        // the one-pass path and the two passes it stands for must give each row the bits
        // of f32 `a ± (y * z)` (any NaN for a NaN: Rust fixes no payload).
        let x = [
            Some(1.5),
            None,
            Some(f32::MAX),
            Some(-0.0),
            Some(f32::NAN),
            Some(3.0e-39),
            Some(-7.25),
        ];
        let v = [
            Some(2.0),
            Some(1.0),
            Some(f32::MAX),
            Some(0.0),
            Some(f32::from_bits(0x7fc0_1234)),
            None,
            Some(f32::INFINITY),
        ];
        let w = [
            Some(0.1),
            Some(4.0),
            Some(2.0),
            Some(-0.0),
            None,
            Some(1.0),
            Some(-1.0),
        ];
        let batch = reals(&[&x, &v, &w]);
        let columns: [&[Option<f32>]; 3] = [&x, &v, &w];
        let (params, rng, outer) = (ParamValues::default(), Cell::new(1), RefCell::default());
        let cx = EvalCtx {
            params: &params,
            outer: &outer,
            rng: &rng,
            subqueries: &NoSubqueries,
            clock: Clock::default(),
        };
        // An operand: a slot, or a constant (`None`: NULL).
        #[derive(Clone, Copy, Debug)]
        enum Term {
            Slot(usize),
            Constant(Option<f32>),
        }
        let expr = |t: Term| match t {
            Term::Slot(s) => BoundExpr::slot(s, DataType::Real, Location::default()),
            Term::Constant(Some(c)) => BoundExpr::constant(Value::Real(c), Location::default()),
            Term::Constant(None) => {
                let null = BoundExpr::constant(Value::Null, Location::default());
                op(BoundKind::Cast(Box::new(null), None), DataType::Real)
            }
        };
        let value = |t: Term, row: usize| match t {
            Term::Slot(s) => columns[s][row],
            Term::Constant(c) => c,
        };
        let terms = [
            Term::Slot(0),
            Term::Slot(1),
            Term::Slot(2),
            Term::Constant(Some(1.0 / 60.0)),
            Term::Constant(Some(-3.0)),
            Term::Constant(Some(f32::from_bits(0x7fc0_0777))),
            Term::Constant(None),
        ];
        let mut cases = 0;
        for sub in [false, true] {
            for product_first in [false, true] {
                for &a in &terms {
                    for &y in &terms {
                        for &z in &terms {
                            let product = op(
                                BoundKind::Arith(ArithOp::Mul, Box::new(expr(y)), Box::new(expr(z))),
                                DataType::Real,
                            );
                            let operation = if sub { ArithOp::Sub } else { ArithOp::Add };
                            let (l, r) = if product_first {
                                (product, expr(a))
                            } else {
                                (expr(a), product)
                            };
                            let e = op(
                                BoundKind::Arith(operation, Box::new(l), Box::new(r)),
                                DataType::Real,
                            );
                            let out = eval(&e, &batch, &cx).expect("REAL + - * cannot fail");
                            for row in 0..batch.len {
                                let want = match (value(a, row), value(y, row), value(z, row)) {
                                    (Some(a), Some(y), Some(z)) => {
                                        let p = y * z;
                                        Value::Real(match (sub, product_first) {
                                            (false, false) => a + p,
                                            (false, true) => p + a,
                                            (true, false) => a - p,
                                            (true, true) => p - a,
                                        })
                                    }
                                    _ => Value::Null,
                                };
                                let got = out.get(row);
                                let same = match (&got, &want) {
                                    (Value::Real(g), Value::Real(w)) => same_bits(*g, *w),
                                    _ => got == want,
                                };
                                assert!(
                                    same,
                                    "{a:?} {y:?} {z:?} sub={sub} product_first={product_first} row {row}: {got:?}, want {want:?}"
                                );
                            }
                            cases += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(cases, 4 * 7 * 7 * 7);
        // No rows: nothing to compute, and nothing fails.
        let empty = reals(&[&[], &[]]);
        let product = op(
            BoundKind::Arith(
                ArithOp::Mul,
                Box::new(expr(Term::Slot(1))),
                Box::new(expr(terms[3])),
            ),
            DataType::Real,
        );
        let sum = op(
            BoundKind::Arith(ArithOp::Add, Box::new(expr(Term::Slot(0))), Box::new(product)),
            DataType::Real,
        );
        let out = eval(&sum, &empty, &cx).expect("no rows, no error");
        assert_eq!(out.into_vector(DataType::Real, 0).len(), 0);
    }

    #[test]
    fn the_one_pass_scaled_sum_is_the_two_passes_bit_for_bit() {
        // `ScaledSum` against the general kernels it replaces (a product, then a sum),
        // with the constant on either side of the product, NaNs of two payloads among the
        // values (any NaN for a NaN: Rust fixes no payload).
        let nan_a = f32::from_bits(0x7fc0_0001);
        let nan_b = f32::from_bits(0x7fc0_0002);
        let xs = [1.5, -0.0, f32::MAX, nan_a, 3.0e-39, -7.25, nan_a, 0.1];
        let vs = [2.0, 0.0, f32::MAX, 1.0, nan_b, f32::INFINITY, nan_b, 0.2];
        for s in [1.0 / 60.0, -3.0, 0.0, f32::INFINITY, nan_b, nan_a] {
            for sub in [false, true] {
                for product_first in [false, true] {
                    for scalar_first in [false, true] {
                        let sum = ScaledSum { sub, product_first };
                        let (y, z) = if scalar_first {
                            (Side::One(s), Side::Many(&vs[..]))
                        } else {
                            (Side::Many(&vs[..]), Side::One(s))
                        };
                        let product = float_op(ArithOp::Mul, y, z);
                        let op = if sub { ArithOp::Sub } else { ArithOp::Add };
                        let want = if product_first {
                            float_op(op, Side::Many(&product), Side::Many(&xs))
                        } else {
                            float_op(op, Side::Many(&xs), Side::Many(&product))
                        };
                        let got = sum.run(&xs, &vs, s);
                        assert!(
                            got.len() == want.len() && got.iter().zip(&want).all(|(&g, &w)| same_bits(g, w)),
                            "s={s} sub={sub} product_first={product_first} scalar_first={scalar_first}: \
                             {got:?}, want {want:?}"
                        );
                    }
                }
            }
        }
    }
}
