//! Compound assignments written in place: an UPDATE whose every assignment is
//! `f = f op e` over a REAL or FLOAT field (`x = x + vx * delta_time()`, the shape of a
//! game's systems) computes `e` for a batch and then `f op= e` straight into the lent
//! column, as a hand-written loop over the columns does, instead of computing each new
//! value into a column of its own and copying that in. A whole table of one morsel at
//! most (or one computed apart, as systems that run together compute) gets a new column
//! instead, each value `old[i] op e[i]` written once (`append_applied`), which takes
//! the old one's place (an open savepoint keeps the old one, as staged values' do); its
//! `e` is read from the table's columns where they lie when `e` is a field (times a
//! scale), with no batch made (`from_table`).
//!
//! Invariants:
//! - Only where every other part of the statement reads the old values first: no WHERE
//!   and no `e` reads a field the statement writes, so `f` is read once, by its own
//!   assignment, at the row it writes.
//! - `f op e` is the very operation the expression's kernel does (IEEE arithmetic of the
//!   field's type: REAL in f32, FLOAT in f64), so the values written are the same bits.
//!   `e op f` is taken for `+` and `*` only, whose operands commute.
//! - The plan is one that cannot fail (`UpdatePlan::cannot_fail`, so `op` is `+`, `-` or
//!   `*`): `e` has the field's type and no NULL, which `check` verifies rather than
//!   trusts. A batch computes and checks every assignment's `e` before it writes any, so
//!   one that fails (a `CAST(delta_time() AS REAL)` out of range) writes nothing.
//! - `e = g * s` with `s` the same for every row (`vx * delta_time()`) is kept as `g`'s
//!   values and `s`, multiplied as they are applied: `f op (g[i] * s)`, the same two
//!   rounded operations the kernels do one after the other (Rust never fuses them), with
//!   no vector of products.
//! - The loop over a run of rows is built for AVX2 and for the baseline, and the one the
//!   processor can run is taken (`whole_rows`); a value the same for every row
//!   (`apply_scalar`) over a column shorter than `WIDE_FROM` takes a third loop, inlined
//!   where it is called. All do the same IEEE operations, so the same bits, a NaN's
//!   sign and payload aside (which Rust leaves open); a test checks each against a plain
//!   loop on values of every kind.

use std::ops::Range;

use smallvec::SmallVec;

use super::error::ExecError;
use super::eval::{EvalCtx, eval, eval_once};
use crate::location::Location;
use crate::plan::{
    ArithOp, Assignment, BoundExpr, BoundKind, CompoundForm, CompoundPart, CompoundShape, DataType,
    EntityScan, ScanColumn, UpdatePlan,
};
use crate::storage::{Column, ColumnSliceMut, FieldId, Table};
use crate::storage::{FieldType, Value};
use crate::vector::KernelError;
use crate::vector::kernels::{Side, side_float, side_real};
use crate::vector::{Batch, Data, Datum, Vector};

type Result<T> = std::result::Result<T, ExecError>;

/// One assignment `f = f op e`: the operation and `e`.
pub(super) type Compound<'p> = (ArithOp, &'p BoundExpr);

/// The compound form of each of an UPDATE's assignments, in order (`compounds`).
#[derive(Clone, Copy)]
pub(super) struct Compounds<'p> {
    shape: &'p [CompoundPart],
    assignments: &'p [Assignment],
}

impl<'p> Compounds<'p> {
    /// Each assignment's operation and `e` (every assignment has both: `compounds` checks).
    pub(super) fn iter(self) -> impl Iterator<Item = Compound<'p>> {
        self.parts().map(|(op, e, _)| (op, e))
    }

    /// Each assignment's operation, `e`, and how `e` is computed.
    pub(super) fn parts(self) -> impl Iterator<Item = (ArithOp, &'p BoundExpr, CompoundForm)> {
        self.shape
            .iter()
            .zip(self.assignments)
            .filter_map(|(part, a)| match &a.value.kind {
                BoundKind::Arith(_, left, r) => {
                    Some((part.op, if part.right { &**r } else { &**left }, part.form))
                }
                _ => None,
            })
    }

    /// Whether every `e` is the same for every row (`BoundExpr::same_every_row`).
    pub(super) fn all_same(self) -> bool {
        self.shape.iter().all(|p| p.form == CompoundForm::Same)
    }

    /// Whether every `e` is read from a table's columns (`from_table`).
    pub(super) fn all_from_columns(self) -> bool {
        self.shape
            .iter()
            .all(|p| matches!(p.form, CompoundForm::Field(_) | CompoundForm::Scaled { .. }))
    }

    pub(super) fn len(self) -> usize {
        self.shape.len()
    }
}

/// The compound form of each of `plan`'s assignments, in order, when every one has it
/// and nothing else reads a written field (see the module's invariants); `None`
/// otherwise. Found on the plan's first run and kept in it (`UpdatePlan::compound`).
pub(super) fn compounds<'p>(plan: &'p UpdatePlan, scan: &EntityScan) -> Option<Compounds<'p>> {
    let shape = plan.compound.get_or_init(|| shape(plan, scan)).as_deref()?;
    // The shape was found from these assignments; were it ever of others, `iter` would
    // pair operators with the wrong fields: then the UPDATE is not taken as compound.
    let fits = shape.len() == plan.assignments.len()
        && plan
            .assignments
            .iter()
            .all(|a| matches!(a.value.kind, BoundKind::Arith(..)));
    fits.then_some(Compounds {
        shape,
        assignments: &plan.assignments,
    })
}

/// Each assignment's compound form, with how its `e` is computed (`CompoundForm`), when
/// every one is compound.
fn shape(plan: &UpdatePlan, scan: &EntityScan) -> CompoundShape {
    let field_of = |slot: usize| field_of(scan, slot);
    let written = |slot: usize| field_of(slot).is_some_and(|f| plan.assignments.iter().any(|a| a.field == f));
    let reads_written = |e: &BoundExpr| {
        let mut reads = false;
        e.visit_slots(&mut |s| reads |= written(s));
        reads
    };
    if plan.select.filter.as_ref().is_some_and(reads_written) {
        return None;
    }
    plan.assignments
        .iter()
        .map(|a| {
            let ty = a.value.ty;
            if !matches!(ty, DataType::Real | DataType::Float) || DataType::from(a.ty) != ty {
                return None;
            }
            let BoundKind::Arith(op, left, right) = &a.value.kind else {
                return None;
            };
            if !matches!(op, ArithOp::Add | ArithOp::Sub | ArithOp::Mul) {
                return None;
            }
            let own = |e: &BoundExpr| matches!(e.kind, BoundKind::Slot(s) if field_of(s) == Some(a.field));
            let (rest, right) = if own(left) {
                (right, true)
            } else if own(right) && matches!(op, ArithOp::Add | ArithOp::Mul) {
                (left, false)
            } else {
                return None;
            };
            (rest.ty == ty && !reads_written(rest)).then(|| CompoundPart {
                op: *op,
                right,
                form: form(rest, scan),
            })
        })
        .collect()
}

/// How `e` is computed (`CompoundForm`).
fn form(e: &BoundExpr, scan: &EntityScan) -> CompoundForm {
    let field = |g: &BoundExpr| match g.kind {
        BoundKind::Slot(slot) => field_of(scan, slot),
        _ => None,
    };
    if e.same_every_row() {
        return CompoundForm::Same;
    }
    if let Some(f) = field(e) {
        return CompoundForm::Field(f);
    }
    match (scaled(e), &e.kind) {
        (Some((g, s)), BoundKind::Arith(_, _, right)) => match field(g) {
            Some(field) => CompoundForm::Scaled {
                field,
                scale_right: std::ptr::eq(&**right, s),
            },
            None => CompoundForm::Rows,
        },
        _ => CompoundForm::Rows,
    }
}

/// An assignment's `e` computed for a batch: its values, or for `g * s` with `s` the
/// same for every row, `g`'s values and `s`.
pub(super) enum Computed<'b> {
    Values(Datum<'b>),
    Scaled(Datum<'b>, Datum<'b>),
}

/// Computes `e` for `batch` and checks it (`check`): nothing is written yet.
pub(super) fn compute<'b>(
    e: &BoundExpr,
    batch: &'b Batch<'_>,
    cx: &EvalCtx<'_>,
    at: Location,
) -> Result<Computed<'b>> {
    match scaled(e) {
        Some((g, s)) => {
            // `s` reads no row: evaluated for one, not broadcast over the batch and cast.
            let g = eval(g, batch, cx)?;
            let s = Datum::Scalar(eval_once(s, cx)?);
            check(&g, batch.len, at)?;
            check(&s, batch.len, at)?;
            Ok(Computed::Scaled(g, s))
        }
        _ => {
            let values = eval(e, batch, cx)?;
            check(&values, batch.len, at)?;
            Ok(Computed::Values(values))
        }
    }
}

/// The field `scan` reads into `slot`, if it reads one there.
fn field_of(scan: &EntityScan, slot: usize) -> Option<FieldId> {
    scan.columns.iter().find_map(|&(s, c)| match c {
        ScanColumn::Field(f) if s == slot => Some(f),
        _ => None,
    })
}

/// `e` as `g * s` (or `s * g`) with `s` the same for every row and `g` not, both of
/// `e`'s type: what `compute` and `from_table` apply as `f op (g[i] * s)`.
fn scaled(e: &BoundExpr) -> Option<(&BoundExpr, &BoundExpr)> {
    let (g, s) = match &e.kind {
        BoundKind::Arith(ArithOp::Mul, g, s) if s.same_every_row() && !g.same_every_row() => (g, s),
        BoundKind::Arith(ArithOp::Mul, s, g) if s.same_every_row() && !g.same_every_row() => (g, s),
        _ => return None,
    };
    (g.ty == e.ty && s.ty == e.ty).then_some((&**g, &**s))
}

/// Each assignment's new column for the whole of `table` (`len` rows): `old op e` for
/// the values of `e` computed for it (`values`, one per assignment, in order, each passed
/// `check`), built in the room `room` gives, `stride` rows at a time, `between` called
/// before every stretch but the first (to look at the interrupt).
#[allow(clippy::too_many_arguments)]
pub(super) fn new_columns(
    values: &[(ArithOp, Computed<'_>)],
    assignments: &[Assignment],
    table: &Table,
    len: usize,
    mut room: impl FnMut(FieldType, usize) -> Column,
    stride: usize,
    mut between: impl FnMut() -> Result<()>,
    at: Location,
) -> Result<SmallVec<[(FieldId, Column); 2]>> {
    let (mut columns, mut first) = (SmallVec::new(), true);
    for ((op, e), a) in values.iter().zip(assignments) {
        let old = written_column(table, a.field, at)?;
        let mut new = room(old.field_type(), len);
        for start in (0..len).step_by(stride.max(1)) {
            if !std::mem::take(&mut first) {
                between()?;
            }
            append_applied(
                *op,
                old,
                start..len.min(start.saturating_add(stride)),
                e,
                &mut new,
                at,
            )?;
        }
        columns.push((a.field, new));
    }
    Ok(columns)
}

/// `new_columns` of one assignment, `field op e`, in one stretch; `known`: where
/// `field`'s column is in `table`, as the statement's table list kept it.
#[allow(clippy::too_many_arguments)]
pub(super) fn new_column(
    op: ArithOp,
    e: &Computed<'_>,
    field: FieldId,
    known: Option<u32>,
    table: &Table,
    len: usize,
    room: impl FnOnce(FieldType, usize) -> Column,
    at: Location,
) -> Result<Column> {
    let old = table
        .column_index_known(field, known)
        .and_then(|index| table.column_at(index))
        .ok_or_else(|| lacks_written(at))?;
    let mut new = room(old.field_type(), len);
    append_applied(op, old, 0..len, e, &mut new, at)?;
    Ok(new)
}

/// The column of `field` an UPDATE writes in `table`.
fn written_column(table: &Table, field: FieldId, at: Location) -> Result<&Column> {
    table.column(field).ok_or_else(|| lacks_written(at))
}

/// The error for a table without the column an UPDATE writes.
#[cold]
fn lacks_written(at: Location) -> ExecError {
    ExecError::internal(at, "an UPDATE's table lacks a field it writes")
}

/// Each assignment's scale (`delta_time()` in `vx * delta_time()`), once `from_table`
/// computed it: the same for every row, so for every table of the statement.
pub(super) type Scales = SmallVec<[Option<Value>; 2]>;

/// No scale computed yet for any of `n` assignments (room for two at least, made
/// without a loop: a system's statement makes one a run).
pub(super) fn scales(n: usize) -> Scales {
    if n <= 2 {
        Scales::from_buf([None, None])
    } else {
        (0..n).map(|_| None).collect()
    }
}

/// `e` for the whole of `table` (`len` rows of it) read straight from the table, when it
/// is one of its fields (`vx`), or one times an expression the same for every row (`vx *
/// delta_time()`, the scale computed here for the statement's first table and kept in
/// `scale` for the rest), as its `form` (found with the plan's compound shape) says: no
/// batch is made and nothing is evaluated per row. The same operands `compute` makes, so
/// the same operations are done on the same values. `None` for `e` of any other form, a
/// scan that reads a sparse component (whose values are looked up by entity) and a sparse
/// table or one that lacks the field: a batch of the table's rows is computed from then
/// (`compute`).
pub(super) fn from_table<'t>(
    e: &BoundExpr,
    form: CompoundForm,
    scan: &EntityScan,
    table: &'t Table,
    len: usize,
    (cx, scale): (&EvalCtx<'_>, &mut Option<Value>),
    at: Location,
) -> Option<Result<Computed<'t>>> {
    if scan.reads_sparse || table.id().is_sparse() {
        return None;
    }
    let read_column = |field: FieldId| {
        let column = table.column(field).filter(|c| c.len() == len)?;
        Some(Datum::Vector(Vector::from_column(column, 0..len)))
    };
    let computed = match form {
        CompoundForm::Field(field) => Computed::Values(read_column(field)?),
        CompoundForm::Scaled { field, scale_right } => {
            let g = read_column(field)?;
            let s = match &e.kind {
                BoundKind::Arith(_, left, right) => {
                    if scale_right {
                        right
                    } else {
                        left
                    }
                }
                _ => return None,
            };
            let s = match scale {
                Some(s) => s.clone(),
                None => match eval_once(s, cx) {
                    Ok(s) => scale.insert(s).clone(),
                    Err(e) => return Some(Err(e)),
                },
            };
            Computed::Scaled(g, Datum::Scalar(s))
        }
        CompoundForm::Same | CompoundForm::Rows => return None,
    };
    let (Computed::Values(g) | Computed::Scaled(g, _)) = &computed;
    if let Err(e) = check(g, len, at) {
        return Some(Err(e));
    }
    if let Computed::Scaled(_, s) = &computed
        && let Err(e) = check(s, 1, at)
    {
        return Some(Err(e));
    }
    Some(Ok(computed))
}

/// Checks that `e`, computed for `count` rows, can be applied: no NULL (a validity mask
/// may be present, as CASE leaves one, but must mark every row valid) and one value per
/// row. Called for every assignment of a batch before any is applied.
pub(super) fn check(e: &Datum<'_>, count: usize, at: Location) -> Result<()> {
    let fits = match e {
        Datum::Scalar(v) => !matches!(v, Value::Null),
        Datum::Vector(v) => {
            !matches!(v.data, Data::Null)
                && v.len() == count
                && v.valid.as_ref().is_none_or(|valid| !valid.contains(&false))
        }
    };
    if fits {
        Ok(())
    } else {
        Err(ExecError::internal(at, "an in-place UPDATE's value has NULLs"))
    }
}

/// `dst[first + i] op= e[i]` for each of `count` rows, or for the rows `first +
/// picked[i]` when rows are picked (the `i`th value of `e` each), `e[i]` being `g[i] * s`
/// for a scaled `e`; `e` passed `check` (`compute` checks it).
pub(super) fn apply(
    op: ArithOp,
    dst: &mut ColumnSliceMut<'_>,
    first: usize,
    picked: Option<&[u32]>,
    count: usize,
    e: &Computed<'_>,
    at: Location,
) -> Result<()> {
    let done = match dst {
        ColumnSliceMut::Real(d) => apply_typed(op, Target::rows(d, first, picked, count), e, side_real, at)?,
        ColumnSliceMut::Float(d) => {
            apply_typed(op, Target::rows(d, first, picked, count), e, side_float, at)?
        }
        _ => None,
    };
    done.ok_or_else(|| ExecError::internal(at, "an in-place UPDATE's value does not fit its field"))
}

/// Appends `old[i] op e[i]` to `new` for each row `i` of `rows` (`e[i]` being `g[i] * s`
/// for a scaled `e`, which has a value for every row of `old`): a whole table's new
/// column (to take the old one's place) built in one pass over `old`, in as many calls as
/// its writer wants to look at the interrupt. `e` passed `check`.
pub(super) fn append_applied(
    op: ArithOp,
    old: &Column,
    rows: Range<usize>,
    e: &Computed<'_>,
    new: &mut Column,
    at: Location,
) -> Result<()> {
    let first = rows.start;
    let done = match (old, new) {
        (Column::Real(old), Column::Real(new)) => match old.get(rows) {
            Some(old) => apply_typed(op, Target::New { new, old, first }, e, side_real, at)?,
            None => None,
        },
        (Column::Float(old), Column::Float(new)) => match old.get(rows) {
            Some(old) => apply_typed(op, Target::New { new, old, first }, e, side_float, at)?,
            None => None,
        },
        _ => None,
    };
    done.ok_or_else(|| ExecError::internal(at, "an in-place UPDATE's value does not fit its field"))
}

/// Where `combine` writes `x op e[i]`.
enum Target<'d, T> {
    /// In place: `x` is `dst[first + i]` for each of `count` rows, or `dst[first +
    /// picked[i]]` when rows are picked.
    Rows {
        dst: &'d mut [T],
        first: usize,
        picked: Option<&'d [u32]>,
        count: usize,
    },
    /// Appended to `new`: `x` is `old[i]`, for every row of `old`, whose first is `e`'s
    /// row `first`.
    New {
        new: &'d mut Vec<T>,
        old: &'d [T],
        first: usize,
    },
}

impl<'d, T> Target<'d, T> {
    /// `count` rows of `dst` from `first` (or those `picked`), in place.
    fn rows(dst: &'d mut [T], first: usize, picked: Option<&'d [u32]>, count: usize) -> Target<'d, T> {
        Target::Rows {
            dst,
            first,
            picked,
            count,
        }
    }

    /// Every row of `dst`, in place.
    fn whole(dst: &'d mut [T]) -> Target<'d, T> {
        let count = dst.len();
        Target::rows(dst, 0, None, count)
    }
}

/// `apply` or `append_applied` over columns of `T`, whose values `side` reads; `None` (nothing
/// written) when `e` does not fit.
fn apply_typed<T>(
    op: ArithOp,
    target: Target<'_, T>,
    e: &Computed<'_>,
    side: for<'x> fn(&'x Datum<'_>, Location) -> std::result::Result<Side<'x, T>, KernelError>,
    at: Location,
) -> Result<Option<()>>
where
    T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
{
    Ok(match e {
        Computed::Values(v) => each_op(op, target, side(v, at)?, |y| y),
        Computed::Scaled(g, s) => match side(s, at)? {
            Side::One(s) => each_op(op, target, side(g, at)?, move |y| y * s),
            Side::Many(_) => None,
        },
    })
}

/// The value of an assignment's `e` the same for every row (`v = v * 2`), of the
/// field's type: what `apply_scalar` combines each row with, resolved once a statement.
#[derive(Clone, Copy, Debug)]
pub(super) enum Scalar {
    Real(f32),
    Float(f64),
}

/// `value` (computed once for the statement) as a `Scalar` for a field of type `ty`; an
/// error for a NULL or a value not of the field's type, which `compounds` never lets
/// through.
pub(super) fn scalar(value: &Value, ty: FieldType, at: Location) -> Result<Scalar> {
    match (value, ty) {
        (&Value::Real(x), FieldType::Real) => Ok(Scalar::Real(x)),
        (&Value::Float(x), FieldType::Float) => Ok(Scalar::Float(x)),
        (Value::Null, _) => Err(ExecError::internal(at, "an in-place UPDATE's value has NULLs")),
        _ => Err(ExecError::internal(
            at,
            "an in-place UPDATE's value does not fit its field",
        )),
    }
}

/// `dst[i] op= value` for every row of `dst`; false, having written nothing, when `value`
/// is not of the column's type or `op` is not `+`, `-` or `*` (`unfit`). Called once per
/// table of an UPDATE over many small ones (`small_tables.rs`), so inlined into its loop
/// whole.
#[inline(always)]
pub(super) fn apply_scalar(op: ArithOp, dst: &mut ColumnSliceMut<'_>, value: Scalar) -> bool {
    match (dst, value) {
        (ColumnSliceMut::Real(dst), Scalar::Real(s)) => scalar_rows(op, dst, s).is_some(),
        (ColumnSliceMut::Float(dst), Scalar::Float(s)) => scalar_rows(op, dst, s).is_some(),
        _ => false,
    }
}

/// Columns of fewer rows than this are combined with a scalar by a loop of their own
/// (`short_rows`), inlined where it is called: for an archetype's 20 rows, a call into
/// the AVX2 build (`wide_rows`) and back cost more than the lanes it adds save
/// (`frag_iter`).
const WIDE_FROM: usize = 64;

/// `apply_scalar` of one column type.
#[inline(always)]
fn scalar_rows<T>(op: ArithOp, dst: &mut [T], s: T) -> Option<()>
where
    T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
{
    if dst.len() >= WIDE_FROM {
        return each_op(op, Target::whole(dst), Side::One(s), |y| y);
    }
    match op {
        ArithOp::Add => short_rows(dst, |x| x + s),
        ArithOp::Sub => short_rows(dst, |x| x - s),
        ArithOp::Mul => short_rows(dst, |x| x * s),
        ArithOp::Div | ArithOp::Mod => return None,
    }
    Some(())
}

/// `x = f(x)` over a short column: four at a time (one SSE2 operation for REAL, two for
/// FLOAT), then the last few one by one. Left to itself, the compiler unrolls for long
/// columns and pays for it in checks and a remainder loop on short ones. As arrays of
/// four rather than `chunks_exact_mut`'s slices: 5,570 -> 5,466 instructions a
/// `frag_iter` run (callgrind).
#[inline(always)]
fn short_rows<T: Copy>(dst: &mut [T], f: impl Fn(T) -> T) {
    let (fours, rest) = dst.as_chunks_mut::<4>();
    for four in fours {
        *four = four.map(&f);
    }
    for x in rest {
        *x = f(*x);
    }
}

/// The error of a value that does not fit its field (`compounds` lets none through).
#[cold]
pub(super) fn unfit(at: Location) -> ExecError {
    ExecError::internal(at, "an in-place UPDATE's value does not fit its field")
}

/// `combine` with `op`'s function, chosen once for the whole batch, of each value as
/// `value` makes it (itself, or a product); `None` for an operator `compounds` never
/// takes.
fn each_op<T>(op: ArithOp, target: Target<'_, T>, e: Side<'_, T>, value: impl Fn(T) -> T) -> Option<()>
where
    T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
{
    match op {
        ArithOp::Add => combine(target, e, |x, y| x + value(y)),
        ArithOp::Sub => combine(target, e, |x, y| x - value(y)),
        ArithOp::Mul => combine(target, e, |x, y| x * value(y)),
        ArithOp::Div | ArithOp::Mod => None,
    }
}

/// `x = f(x, e[i])` over the rows `target` names; `None` when one lies past its column or
/// `e` has fewer values than rows (nothing written then, as picked rows ascend).
fn combine<T: Copy>(target: Target<'_, T>, e: Side<'_, T>, f: impl Fn(T, T) -> T) -> Option<()> {
    let enough = |rows: usize| match e {
        Side::One(_) => true,
        Side::Many(ys) => ys.len() >= rows,
    };
    match target {
        Target::Rows {
            dst,
            first,
            picked: None,
            count,
        } => {
            let dst = dst.get_mut(first..first.checked_add(count)?)?;
            enough(dst.len()).then(|| whole_rows(Whole::Rows(dst), e, f))
        }
        Target::Rows {
            dst,
            first,
            picked: Some(rows),
            ..
        } => {
            // Picked rows ascend: the last one in range means all are.
            if rows.last().is_some_and(|&r| first + r as usize >= dst.len()) || !enough(rows.len()) {
                return None;
            }
            for (i, &r) in rows.iter().enumerate() {
                let y = match e {
                    Side::One(y) => y,
                    Side::Many(ys) => *ys.get(i)?,
                };
                let x = dst.get_mut(first + r as usize)?;
                *x = f(*x, y);
            }
            Some(())
        }
        Target::New { new, old, first } => {
            let e = match e {
                Side::One(y) => Side::One(y),
                Side::Many(ys) => Side::Many(ys.get(first..first.checked_add(old.len())?)?),
            };
            whole_rows(Whole::New(new, old), e, f);
            Some(())
        }
    }
}

/// The rows `whole_rows` writes: a run of a column in place, or those appended to a new
/// column from an old one's.
enum Whole<'d, T> {
    Rows(&'d mut [T]),
    New(&'d mut Vec<T>, &'d [T]),
}

/// `x = f(x, e[i])` for every row of `rows` (`e` has a value for each), the loop of
/// most compound UPDATEs. Compiled twice: for AVX2, taken when the processor has it
/// (known once, then a load and a test), which does eight REAL or four FLOAT lanes at a
/// time where the baseline x86-64 build does SSE2's four or two; and for the baseline.
/// The same IEEE operations either way (nothing is fused: Rust never contracts `a * b +
/// c`), so the same bits, a NaN's sign and payload aside.
#[inline(always)]
fn whole_rows<T: Copy>(rows: Whole<'_, T>, e: Side<'_, T>, f: impl Fn(T, T) -> T) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: `wide_rows` needs AVX2 and nothing else, and the processor has it.
        unsafe { wide_rows(rows, e, f) };
        return;
    }
    rows_of(rows, e, f);
}

/// `whole_rows` compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn wide_rows<T: Copy>(rows: Whole<'_, T>, e: Side<'_, T>, f: impl Fn(T, T) -> T) {
    rows_of(rows, e, f);
}

/// The loop of `whole_rows`, inlined into each of its builds. Into a new column, the
/// values are pushed from an iterator of known length (one capacity check, then plain
/// stores), not written over a copy of the old ones.
#[inline(always)]
fn rows_of<T: Copy>(rows: Whole<'_, T>, e: Side<'_, T>, f: impl Fn(T, T) -> T) {
    match (rows, e) {
        (Whole::Rows(dst), Side::One(y)) => dst.iter_mut().for_each(|x| *x = f(*x, y)),
        (Whole::Rows(dst), Side::Many(ys)) => dst.iter_mut().zip(ys).for_each(|(x, &y)| *x = f(*x, y)),
        (Whole::New(new, old), Side::One(y)) => new.extend(old.iter().map(|&x| f(x, y))),
        (Whole::New(new, old), Side::Many(ys)) => new.extend(old.iter().zip(ys).map(|(&x, &y)| f(x, y))),
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::{Computed, Scalar, append_applied, apply, apply_scalar};
    use crate::location::Location;
    use crate::plan::ArithOp;
    use crate::storage::{Column, ColumnSliceMut, Value};
    use crate::vector::{Data, Datum, Vector};

    /// `n` values of every kind a REAL or FLOAT column may hold: the specials (signed
    /// zeros, a subnormal, the largest finite, infinities, NaNs of both signs), and
    /// values from random bits over the whole exponent range, of either sign.
    fn values<T: Copy>(special: &[T], from_bits: impl Fn(u64) -> T, n: usize, seed: u64) -> Vec<T> {
        let mut state = seed;
        (0..n)
            .map(|i| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                match i % 5 {
                    0 => special[(state >> 33) as usize % special.len()],
                    _ => from_bits(state),
                }
            })
            .collect()
    }

    /// The values of a float type that arithmetic treats apart.
    macro_rules! specials {
        ($t:ty) => {
            [
                0.0,
                -0.0,
                <$t>::MIN_POSITIVE / 3.0,
                <$t>::MAX,
                <$t>::INFINITY,
                <$t>::NEG_INFINITY,
                <$t>::NAN,
                -<$t>::NAN,
            ]
        };
    }

    /// `apply` in place and `append_applied` into a new column (whose loops over a run of
    /// rows take the AVX2 build where the processor has it, the baseline's elsewhere),
    /// and `apply_scalar` (whose short columns take a loop of their own), against a plain
    /// loop of the same IEEE operation, row by row: `x op y`, `x op (y * s)` and `x op
    /// s` for `+ - *`, at every length around a vector's width and `apply_scalar`'s
    /// change of loop, `s` ordinary and special. A NaN matches a NaN whatever
    /// its payload (Rust leaves a NaN result's sign and payload open); anything else
    /// must match bit for bit. Built optimized (`cargo test --release`), this compares
    /// the vectorized loops; unoptimized, the operations alone.
    macro_rules! against_a_plain_loop {
        ($t:ty, $data:ident, $value:ident, $column:ident, $xs:expr, $ys:expr) => {{
            let (xs, ys): (&[$t], &[$t]) = ($xs, $ys);
            let ops: [(ArithOp, fn($t, $t) -> $t); 3] = [
                (ArithOp::Add, |a, b| a + b),
                (ArithOp::Sub, |a, b| a - b),
                (ArithOp::Mul, |a, b| a * b),
            ];
            let scales: Vec<$t> = ys.iter().copied().step_by(97).take(12).collect();
            let same = |a: $t, b: $t| (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits();
            for len in (0..40).chain([63, 64, 65, 70, 255, 256, 257, 1000]) {
                for (op, plain) in ops {
                    let vector =
                        || Datum::Vector(Vector::from_data(Data::$data(Cow::Borrowed(&ys[..len])), len));
                    let mut forms: Vec<(String, Computed<'_>, Box<dyn Fn(usize) -> $t>)> =
                        vec![("y".into(), Computed::Values(vector()), Box::new(move |i| ys[i]))];
                    for &s in &scales {
                        forms.push((
                            format!("y * {s:?}"),
                            Computed::Scaled(vector(), Datum::Scalar(Value::$value(s))),
                            Box::new(move |i| ys[i] * s),
                        ));
                        forms.push((
                            format!("{s:?}"),
                            Computed::Values(Datum::Scalar(Value::$value(s))),
                            Box::new(move |_| s),
                        ));
                    }
                    for &s in &scales {
                        let mut got = xs[..len].to_vec();
                        let done =
                            apply_scalar(op, &mut ColumnSliceMut::$column(&mut got), Scalar::$value(s));
                        assert!(done, "x {op:?} {s:?} as a scalar was refused");
                        for (i, &g) in got.iter().enumerate() {
                            let want = plain(xs[i], s);
                            assert!(
                                same(g, want),
                                "x {op:?} {s:?} as a scalar, length {len}, row {i}: {g:?}, expected {want:?}"
                            );
                        }
                    }
                    for (name, e, operand) in &forms {
                        let mut got = xs[..len].to_vec();
                        apply(
                            op,
                            &mut ColumnSliceMut::$column(&mut got),
                            0,
                            None,
                            len,
                            e,
                            Location::default(),
                        )
                        .unwrap();
                        // Appended to a new column in two calls, split at any row.
                        let (old, split) = (Column::$column(xs[..len].to_vec()), len * 2 / 5);
                        let mut new = Column::$column(Vec::new());
                        for rows in [0..split, split..len] {
                            append_applied(op, &old, rows, e, &mut new, Location::default()).unwrap();
                        }
                        let Column::$column(new) = new else {
                            panic!("append_applied changed the column's type");
                        };
                        assert_eq!(new.len(), len, "x {op:?} {name} into a new column");
                        for (how, got) in [("in place", &got), ("into a new column", &new)] {
                            for (i, &g) in got.iter().enumerate() {
                                let want = plain(xs[i], operand(i));
                                assert!(
                                    same(g, want),
                                    "x {op:?} {name} {how}, length {len}, row {i}: {g:?}, expected {want:?}"
                                );
                            }
                        }
                    }
                }
            }
        }};
    }

    #[test]
    fn compound_loops_write_what_a_plain_loop_of_the_same_operation_writes() {
        let n = 1000;
        let real = |bits: u64| f32::from_bits((bits >> 32) as u32);
        let (xs, ys) = (
            values(&specials!(f32), real, n, 1),
            values(&specials!(f32), real, n, 2),
        );
        against_a_plain_loop!(f32, Real, Real, Real, &xs, &ys);
        let float = |bits: u64| f64::from_bits(bits.rotate_left(29));
        let (xs, ys) = (
            values(&specials!(f64), float, n, 3),
            values(&specials!(f64), float, n, 4),
        );
        against_a_plain_loop!(f64, Float, Float, Float, &xs, &ys);
    }

    /// `apply_scalar` refuses, writing nothing, an operator the compound shape never
    /// takes and a value of another type than the column's.
    #[test]
    fn a_scalar_refused_writes_nothing() {
        for len in [3, 100] {
            let before: Vec<f32> = (0..len).map(|i| i as f32 + 0.5).collect();
            let mut got = before.clone();
            for (op, value) in [
                (ArithOp::Div, Scalar::Real(2.0)),
                (ArithOp::Mod, Scalar::Real(2.0)),
                (ArithOp::Mul, Scalar::Float(2.0)),
            ] {
                assert!(!apply_scalar(op, &mut ColumnSliceMut::Real(&mut got), value));
                assert_eq!(got, before, "{op:?} by {value:?} wrote, length {len}");
            }
        }
    }
}
