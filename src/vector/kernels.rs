//! Typed kernels: the loops over `Datum`s that expressions and functions share. A datum
//! is a scalar (one value for every row) or a vector; each kernel reads its operands as
//! typed slices (`Side`), works a whole batch at once and gives back a datum with the
//! operands' NULLs combined. Nothing here knows expressions, plans or the world.

use std::borrow::Cow;

use super::data::{Data, Datum, Vector};
use super::error::KernelError;
use super::types::{CmpOp, DataType};
use crate::location::Location;
use crate::storage::{Entity, Value};

type Result<T> = std::result::Result<T, KernelError>;

pub fn bools<'a>(values: Vec<bool>, valid: Option<Vec<bool>>) -> Datum<'a> {
    let len = values.len();
    Datum::Vector(Vector::new(
        Data::Bool(Cow::Owned(values)),
        valid.map(Cow::Owned),
        len,
    ))
}

/// The validity of two operands combined: a row is valid when both are.
pub fn both_valid(a: &Datum<'_>, b: &Datum<'_>, len: usize) -> Option<Vec<bool>> {
    all_valid(&[a, b], len)
}

/// `both_valid` of any number of operands: a row is valid where every operand is.
pub fn all_valid(operands: &[&Datum<'_>], len: usize) -> Option<Vec<bool>> {
    let mask = |d: &Datum<'_>| -> Option<Vec<bool>> {
        match d {
            Datum::Scalar(Value::Null) => Some(vec![false; len]),
            Datum::Scalar(_) => None,
            Datum::Vector(v) => v.validity().map(Cow::into_owned),
        }
    };
    operands.iter().fold(None, |acc, d| match (acc, mask(d)) {
        (None, m) | (m, None) => m,
        (Some(x), Some(y)) => Some(x.iter().zip(&y).map(|(a, b)| *a && *b).collect()),
    })
}

/// A typed operand: one value for every row, or a slice.
#[derive(Clone, Copy)]
pub enum Side<'x, T> {
    One(T),
    Many(&'x [T]),
}

impl<T: Copy + Default> Side<'_, T> {
    /// The value of row `i` (a default past the end, which callers never ask for).
    pub fn at(&self, i: usize) -> T {
        match self {
            Side::One(x) => *x,
            Side::Many(x) => x.get(i).copied().unwrap_or_default(),
        }
    }
}

pub fn zip<T: Copy, U>(a: Side<'_, T>, b: Side<'_, T>, f: impl Fn(T, T) -> U) -> Vec<U> {
    match (a, b) {
        (Side::Many(x), Side::Many(y)) => x.iter().zip(y).map(|(&x, &y)| f(x, y)).collect(),
        (Side::Many(x), Side::One(y)) => x.iter().map(|&x| f(x, y)).collect(),
        (Side::One(x), Side::Many(y)) => y.iter().map(|&y| f(x, y)).collect(),
        (Side::One(x), Side::One(y)) => vec![f(x, y)],
    }
}

macro_rules! side_fn {
    ($name:ident, $t:ty, $value:ident, $data:ident) => {
        pub fn $name<'x>(d: &'x Datum<'_>, at: Location) -> Result<Side<'x, $t>> {
            match d {
                Datum::Scalar(Value::$value(x)) => Ok(Side::One(*x)),
                Datum::Scalar(Value::Null) => Ok(Side::One(<$t>::default())),
                Datum::Vector(v) => match &v.data {
                    Data::$data(s) => Ok(Side::Many(s)),
                    Data::Null => Err(KernelError::internal(
                        at,
                        "an all-NULL vector reached a typed kernel",
                    )),
                    _ => Err(KernelError::internal(
                        at,
                        format!(
                            "expected {} data, found {}",
                            stringify!($value),
                            v.data_type()
                        ),
                    )),
                },
                Datum::Scalar(other) => Err(KernelError::internal(
                    at,
                    format!(
                        "expected {}, found {}",
                        stringify!($value),
                        other.describe()
                    ),
                )),
            }
        }
    };
}
side_fn!(side_int, i64, Int, Int);
side_fn!(side_float, f64, Float, Float);
side_fn!(side_real, f32, Real, Real);
side_fn!(side_bool, bool, Bool, Bool);

pub fn is_null_scalar(d: &Datum<'_>) -> bool {
    matches!(d, Datum::Scalar(Value::Null)) || matches!(d, Datum::Vector(v) if matches!(v.data, Data::Null))
}

pub fn both_scalar(a: &Datum<'_>, b: &Datum<'_>) -> bool {
    matches!((a, b), (Datum::Scalar(_), Datum::Scalar(_)))
}

/// Wraps kernel output: a scalar when both inputs were scalars.
pub fn finish<'a>(data: Data<'static>, len_out: usize, valid: Option<Vec<bool>>, scalar: bool) -> Datum<'a> {
    let v = Vector::new(data, valid.map(Cow::Owned), len_out);
    if scalar {
        Datum::Scalar(v.get(0))
    } else {
        Datum::Vector(v)
    }
}

// ---- comparison ---------------------------------------------------------------------------

pub fn cmp_fn<T: PartialOrd>(op: CmpOp) -> impl Fn(T, T) -> bool {
    move |x, y| match op {
        CmpOp::Eq => x == y,
        CmpOp::NotEq => x != y,
        CmpOp::Lt => x < y,
        CmpOp::LtEq => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::GtEq => x >= y,
    }
}

/// `zip` with the comparison `op`, chosen once outside the loop so that each loop is a
/// plain comparison the compiler vectorizes (`cmp_fn`'s match inside it was 40% of a
/// filtered count).
fn cmp_zip<T: PartialOrd + Copy>(op: CmpOp, a: Side<'_, T>, b: Side<'_, T>) -> Vec<bool> {
    match op {
        CmpOp::Eq => zip(a, b, |x, y| x == y),
        CmpOp::NotEq => zip(a, b, |x, y| x != y),
        CmpOp::Lt => zip(a, b, |x, y| x < y),
        CmpOp::LtEq => zip(a, b, |x, y| x <= y),
        CmpOp::Gt => zip(a, b, |x, y| x > y),
        CmpOp::GtEq => zip(a, b, |x, y| x >= y),
    }
}

pub fn compare<'a>(op: CmpOp, l: &Datum<'_>, r: &Datum<'_>, len: usize, at: Location) -> Result<Datum<'a>> {
    if is_null_scalar(l) || is_null_scalar(r) {
        return Ok(Datum::Scalar(Value::Null));
    }
    let scalar = both_scalar(l, r);
    let n = if scalar { 1 } else { len };
    let valid = if scalar { None } else { both_valid(l, r, len) };
    let type_of = |d: &Datum<'_>| match d {
        Datum::Scalar(v) => DataType::of(v),
        Datum::Vector(v) => v.data_type(),
    };
    let (ty, rty) = (type_of(l), type_of(r));
    if ty != rty {
        // Only an id against an integer meets unconverted (`comparison_type`): compared as
        // integers, the id as its 64-bit unsigned value.
        let (Some(a), Some(b)) = (id_or_int(l, ty), id_or_int(r, rty)) else {
            return Err(KernelError::internal(
                at,
                format!("cannot compare {ty} with {rty}"),
            ));
        };
        let f = cmp_fn::<i128>(op);
        let out = (0..n).map(|i| f(a(i), b(i))).collect();
        return Ok(finish(Data::Bool(Cow::Owned(out)), n, valid, scalar));
    }
    let out: Vec<bool> = match ty {
        DataType::Int => cmp_zip(op, side_int(l, at)?, side_int(r, at)?),
        DataType::Float => cmp_zip(op, side_float(l, at)?, side_float(r, at)?),
        DataType::Real => cmp_zip(op, side_real(l, at)?, side_real(r, at)?),
        DataType::Bool => cmp_zip(op, side_bool(l, at)?, side_bool(r, at)?),
        DataType::Text => {
            let f = cmp_fn::<&str>(op);
            (0..n).map(|i| f(text_at(l, i), text_at(r, i))).collect()
        }
        DataType::Entity => {
            let f = cmp_fn::<u64>(op);
            (0..n).map(|i| f(entity_at(l, i), entity_at(r, i))).collect()
        }
        DataType::Null => return Ok(Datum::Scalar(Value::Null)),
    };
    Ok(finish(Data::Bool(Cow::Owned(out)), n, valid, scalar))
}

/// `IS DISTINCT FROM` (`negated`: `IS NOT DISTINCT FROM`): `=` with NULL equal to NULL
/// and unequal to any value, and every NaN one value (as DISTINCT and GROUP BY see them);
/// never NULL. Both operands have one type, or are an id and an integer.
pub fn distinct<'a>(
    l: &Datum<'_>,
    r: &Datum<'_>,
    len: usize,
    negated: bool,
    at: Location,
) -> Result<Datum<'a>> {
    let scalar = both_scalar(l, r);
    let n = if scalar { 1 } else { len };
    let valid_at = |d: &Datum<'_>, i: usize| match d {
        Datum::Scalar(v) => *v != Value::Null,
        Datum::Vector(v) => v.is_valid(i),
    };
    let type_of = |d: &Datum<'_>| match d {
        Datum::Scalar(v) => DataType::of(v),
        Datum::Vector(v) => v.data_type(),
    };
    let equal: Vec<bool> = if is_null_scalar(l) || is_null_scalar(r) {
        vec![false; n]
    } else {
        let nan_equal = |x: f64, y: f64| x == y || (x.is_nan() && y.is_nan());
        match (type_of(l), type_of(r)) {
            (DataType::Float, DataType::Float) => zip(side_float(l, at)?, side_float(r, at)?, nan_equal),
            (DataType::Real, DataType::Real) => zip(side_real(l, at)?, side_real(r, at)?, |x, y| {
                nan_equal(f64::from(x), f64::from(y))
            }),
            _ => match compare(CmpOp::Eq, l, r, len, at)? {
                Datum::Scalar(v) => vec![v == Value::Bool(true)],
                Datum::Vector(v) => match &v.data {
                    Data::Bool(x) => x.to_vec(),
                    _ => vec![false; n],
                },
            },
        }
    };
    let out: Vec<bool> = (0..n)
        .map(|i| {
            let same = match (valid_at(l, i), valid_at(r, i)) {
                (true, true) => equal[i],
                (a, b) => a == b,
            };
            same == negated
        })
        .collect();
    Ok(finish(Data::Bool(Cow::Owned(out)), n, None, scalar))
}

pub fn text_at<'x>(d: &'x Datum<'_>, i: usize) -> &'x str {
    match d {
        Datum::Scalar(Value::Text(s)) => s,
        Datum::Vector(v) => match &v.data {
            Data::Text(s) => &s[i],
            _ => "",
        },
        _ => "",
    }
}

/// An ENTITY or INT operand read as i128 per row (NULL rows read 0; the validity mask
/// answers for them).
pub fn id_or_int<'x>(d: &'x Datum<'_>, ty: DataType) -> Option<impl Fn(usize) -> i128 + 'x> {
    match ty {
        DataType::Entity | DataType::Int => Some(move |i: usize| match d {
            Datum::Scalar(Value::Int(x)) => i128::from(*x),
            Datum::Vector(v) => match &v.data {
                Data::Int(x) => i128::from(x[i]),
                _ => i128::from(entity_at(d, i)),
            },
            _ => i128::from(entity_at(d, i)),
        }),
        _ => None,
    }
}

pub fn entity_at(d: &Datum<'_>, i: usize) -> u64 {
    match d {
        Datum::Scalar(Value::Entity(e)) => e.to_bits(),
        Datum::Vector(v) => match &v.data {
            Data::Entity(s) => s[i].map_or(0, Entity::to_bits),
            _ => 0,
        },
        _ => 0,
    }
}

/// Writes `src`'s rows into `dst` at `rows`. Both have the same type (or `src` is all NULL).
pub fn scatter(dst: &mut Vector<'static>, rows: &[u32], src: &Vector<'_>) {
    fn copy<T: Clone>(dst: &mut Cow<'static, [T]>, rows: &[u32], src: &[T]) {
        let dst = dst.to_mut();
        for (v, &row) in src.iter().zip(rows) {
            dst[row as usize] = v.clone();
        }
    }
    match (&mut dst.data, &src.data) {
        (Data::Int(d), Data::Int(s)) => copy(d, rows, s),
        (Data::Float(d), Data::Float(s)) => copy(d, rows, s),
        (Data::Real(d), Data::Real(s)) => copy(d, rows, s),
        (Data::Bool(d), Data::Bool(s)) => copy(d, rows, s),
        (Data::Text(d), Data::Text(s)) => copy(d, rows, s),
        (Data::Entity(d), Data::Entity(s)) => copy(d, rows, s),
        _ => {
            for (k, &row) in rows.iter().enumerate() {
                set_value(dst, row as usize, &src.get(k));
            }
            return;
        }
    }
    // Validity follows the source rows.
    if dst.valid.is_some() || src.valid.is_some() {
        let len = dst.len();
        let valid = dst
            .valid
            .get_or_insert_with(|| Cow::Owned(vec![true; len]))
            .to_mut();
        for (k, &row) in rows.iter().enumerate() {
            valid[row as usize] = src.is_valid(k);
        }
    }
}

pub fn set_value(dst: &mut Vector<'static>, row: usize, value: &Value) {
    let ok = match (&mut dst.data, value) {
        (_, Value::Null) => false,
        (Data::Int(v), Value::Int(x)) => {
            v.to_mut()[row] = *x;
            true
        }
        (Data::Float(v), Value::Float(x)) => {
            v.to_mut()[row] = *x;
            true
        }
        (Data::Real(v), Value::Real(x)) => {
            v.to_mut()[row] = *x;
            true
        }
        (Data::Bool(v), Value::Bool(x)) => {
            v.to_mut()[row] = *x;
            true
        }
        (Data::Text(v), Value::Text(x)) => {
            v.to_mut()[row].clone_from(x);
            true
        }
        (Data::Entity(v), Value::Entity(x)) => {
            v.to_mut()[row] = Some(*x);
            true
        }
        _ => false,
    };
    let len = dst.len();
    if ok {
        if let Some(valid) = &mut dst.valid {
            valid.to_mut()[row] = true;
        }
    } else {
        dst.valid
            .get_or_insert_with(|| Cow::Owned(vec![true; len]))
            .to_mut()[row] = false;
    }
}

/// Applies `f` to every valid row of `d`; NULL rows stay NULL. Scalars stay scalars.
pub fn map_values<'a>(
    d: Datum<'_>,
    ty: DataType,
    f: impl Fn(Value) -> std::result::Result<Value, String>,
    at: Location,
) -> Result<Datum<'a>> {
    let err = |m: String| KernelError::arithmetic(at, m);
    match d {
        Datum::Scalar(Value::Null) => Ok(Datum::Scalar(Value::Null)),
        Datum::Scalar(v) => Ok(Datum::Scalar(f(v).map_err(err)?)),
        Datum::Vector(v) => {
            let mut out = Vector::empty(ty);
            for i in 0..v.len() {
                let x = v.get(i);
                if x == Value::Null {
                    out.push_value(&Value::Null);
                } else {
                    out.push_value(&f(x).map_err(err)?);
                }
            }
            Ok(Datum::Vector(out))
        }
    }
}
