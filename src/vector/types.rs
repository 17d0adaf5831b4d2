//! The types a value in flight can have (the six field types plus the type of a bare
//! NULL), the comparison operators, one value's conversion (`cast_value`, CAST's rules),
//! and the type rules that need only types: where values sharing a column meet, and how
//! two comparison types fold. The rules that also look at an expression (a constant
//! adapts to a REAL column) are the binder's, in `plan/types.rs`.

use std::fmt;

use crate::storage::{FieldType, Value};

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl CmpOp {
    /// Every operator, in declaration order (for tests that try each).
    #[cfg(test)]
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::NotEq,
        CmpOp::Lt,
        CmpOp::LtEq,
        CmpOp::Gt,
        CmpOp::GtEq,
    ];

    /// The operator as SQL writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::NotEq => "<>",
            CmpOp::Lt => "<",
            CmpOp::LtEq => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
        }
    }

    /// The operator with its sides swapped: `5 > x` is `x < 5`.
    pub fn flipped(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::LtEq => CmpOp::GtEq,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::GtEq => CmpOp::LtEq,
            other => other,
        }
    }
}

/// The type of a value in flight: one of the six field types, or the type of a bare NULL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    /// A 64-bit integer.
    Int,
    /// A 64-bit float.
    Float,
    /// A 32-bit float.
    Real,
    /// true or false.
    Bool,
    /// UTF-8 text.
    Text,
    /// An entity's id.
    Entity,
    /// The type of the literal NULL: it takes whatever type it meets.
    Null,
}

impl DataType {
    /// The type of `value` (NULL's own for NULL).
    #[inline]
    pub fn of(value: &Value) -> DataType {
        value.field_type().map_or(DataType::Null, DataType::from)
    }

    /// True for INT, FLOAT and REAL.
    pub fn is_numeric(self) -> bool {
        matches!(self, DataType::Int | DataType::Float | DataType::Real)
    }

    /// The field type of the same name; `None` for NULL.
    pub fn field_type(self) -> Option<FieldType> {
        match self {
            DataType::Int => Some(FieldType::Int),
            DataType::Float => Some(FieldType::Float),
            DataType::Real => Some(FieldType::Real),
            DataType::Bool => Some(FieldType::Bool),
            DataType::Text => Some(FieldType::Text),
            DataType::Entity => Some(FieldType::Entity),
            DataType::Null => None,
        }
    }

    /// The name as SQL writes it: `INT`, `REAL`, … `NULL`.
    pub fn name(self) -> &'static str {
        self.field_type().map_or("NULL", FieldType::name)
    }
}

impl From<FieldType> for DataType {
    fn from(ty: FieldType) -> DataType {
        match ty {
            FieldType::Int => DataType::Int,
            FieldType::Float => DataType::Float,
            FieldType::Real => DataType::Real,
            FieldType::Bool => DataType::Bool,
            FieldType::Text => DataType::Text,
            FieldType::Entity => DataType::Entity,
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `x` as a REAL, or `None` when it is finite but past REAL's range (it would become an
/// infinity). Infinities and NaN stay what they are; a value between REALs rounds.
pub fn float_to_real(x: f64) -> Option<f32> {
    let r = x as f32;
    (r.is_finite() || !x.is_finite()).then_some(r)
}

/// One value converted to `to`, by the same rules as `CAST` (and as the assignment of a
/// value to a field of another numeric type). `Err` says why it does not convert.
pub fn cast_value(value: &Value, to: DataType) -> Result<Value, String> {
    use crate::storage::Entity;
    let fail = || format!("cannot convert {} to {}", value.describe(), to.name());
    let out_of_range = || format!("{} is out of range for {}", value.describe(), to.name());
    Ok(match (value, to) {
        (Value::Null, _) | (_, DataType::Null) => Value::Null,
        (v, t) if DataType::of(v) == t => v.clone(),
        (Value::Int(i), DataType::Float) => Value::Float(*i as f64),
        (Value::Int(i), DataType::Real) => Value::Real(*i as f32),
        (Value::Int(i), DataType::Bool) => Value::Bool(*i != 0),
        (Value::Int(i), DataType::Text) => Value::Text(i.to_string()),
        (Value::Int(i), DataType::Entity) => u64::try_from(*i)
            .ok()
            .and_then(Entity::from_bits)
            .map_or(Value::Null, Value::Entity),
        (Value::Float(x), DataType::Int) => Value::Int(float_to_int(*x).ok_or_else(out_of_range)?),
        (Value::Float(x), DataType::Real) => Value::Real(float_to_real(*x).ok_or_else(out_of_range)?),
        (Value::Float(x), DataType::Text) => Value::Text(format_float(*x)),
        (Value::Real(x), DataType::Int) => Value::Int(float_to_int(*x as f64).ok_or_else(out_of_range)?),
        (Value::Real(x), DataType::Float) => Value::Float(*x as f64),
        (Value::Real(x), DataType::Text) => Value::Text(format_float(*x as f64)),
        (Value::Bool(b), DataType::Int) => Value::Int(*b as i64),
        (Value::Bool(b), DataType::Text) => Value::Text(if *b { "true" } else { "false" }.to_owned()),
        (Value::Text(s), DataType::Int) => Value::Int(s.trim().parse().map_err(|_| fail())?),
        (Value::Text(s), DataType::Float) => Value::Float(s.trim().parse().map_err(|_| fail())?),
        (Value::Text(s), DataType::Real) => {
            let x: f64 = s.trim().parse().map_err(|_| fail())?;
            Value::Real(float_to_real(x).ok_or_else(out_of_range)?)
        }
        (Value::Text(s), DataType::Bool) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "t" | "yes" | "y" | "on" | "1" => Value::Bool(true),
            "false" | "f" | "no" | "n" | "off" | "0" => Value::Bool(false),
            _ => return Err(fail()),
        },
        (Value::Text(s), DataType::Entity) => {
            let bits: u64 = s.trim().parse().map_err(|_| fail())?;
            Entity::from_bits(bits).map_or(Value::Null, Value::Entity)
        }
        (Value::Entity(e), DataType::Int) => {
            Value::Int(i64::try_from(e.to_bits()).map_err(|_| out_of_range())?)
        }
        (Value::Entity(e), DataType::Text) => Value::Text(e.to_string()),
        _ => return Err(fail()),
    })
}

/// Rounds half away from zero; `None` when the result does not fit an i64.
pub fn float_to_int(x: f64) -> Option<i64> {
    let r = x.round();
    // 2^63 is exactly representable; anything at or above it does not fit.
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&r) {
        Some(r as i64)
    } else {
        None
    }
}

/// Floats as text: the shortest form that reads back the same (`1.5`, `2`, `1e-7`).
pub fn format_float(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// Whether a value of type `from` may be stored in a field of type `to`: the same type,
/// NULL (checked against the field when written), any number into any number, or an
/// integer into an ENTITY field (ids are written as integers).
pub fn assignable(from: DataType, to: DataType) -> bool {
    from == to
        || from == DataType::Null
        || (from.is_numeric() && to.is_numeric())
        || (from == DataType::Int && to == DataType::Entity)
}

/// The type values of types `a` and `b` take when they share one column: a CASE's
/// branches, coalesce's arguments, a VALUES or UNION column. ENTITY with INT is INT, so
/// that `coalesce(C.parent, 0)` can hold its 0 (an id past 2^63 − 1 then fails to convert,
/// with an error).
pub fn unify_types(a: DataType, b: DataType) -> Option<DataType> {
    use DataType::*;
    Some(match (a, b) {
        (x, y) if x == y => x,
        (Null, t) | (t, Null) => t,
        (Int, Real) | (Real, Int) => Real,
        (x, y) if x.is_numeric() && y.is_numeric() => Float,
        (Entity, Int) | (Int, Entity) => Int,
        _ => return None,
    })
}

/// Two comparison types folded into one (an IN list compares its operand with each item).
pub fn comparison_unify(a: DataType, b: DataType) -> Option<DataType> {
    match (a, b) {
        (DataType::Entity, DataType::Int) | (DataType::Int, DataType::Entity) => Some(DataType::Entity),
        _ => unify_types(a, b),
    }
}

/// Whether an operand of type `from` is left as it is in a comparison of type `to`:
/// INT against ENTITY (the kernel compares them as integers).
pub fn compares_unconverted(from: DataType, to: DataType) -> bool {
    from == DataType::Int && to == DataType::Entity
}

/// An operand as the type rules see it: its type, and whether it is a constant (a
/// constant adapts to the type of what it meets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    pub ty: DataType,
    pub constant: bool,
}

/// The type two numbers meet in for arithmetic and comparison. A constant adapts to a
/// REAL column instead of widening it (`Position.x < 0.1` compares in REAL).
pub fn numeric_common(l: Operand, r: Operand) -> Option<DataType> {
    use DataType::*;
    Some(match (l.ty, r.ty) {
        (Null, Null) => Null,
        (Null, t) | (t, Null) if t.is_numeric() => t,
        (x, y) if x == y && x.is_numeric() => x,
        (Real, Float) if r.constant => Real,
        (Float, Real) if l.constant => Real,
        (Int, Real) | (Real, Int) => Real,
        (Int | Real | Float, Int | Real | Float) => Float,
        _ => return None,
    })
}

/// The type `l` and `r` are compared in (`=`, `<`, IN, BETWEEN, nullif, …). Numbers meet
/// as in arithmetic. ENTITY with INT compares in ENTITY, but the INT side is not
/// converted: an id compares with an integer as its 64-bit unsigned value
/// (`CAST(id AS INT)` for ids below 2^63), and no id is 0 or negative, so `id > 0` holds
/// for every id and `id = -1` for none.
pub fn comparison_type(l: Operand, r: Operand) -> Option<DataType> {
    if l.ty.is_numeric() && r.ty.is_numeric() {
        return numeric_common(l, r);
    }
    comparison_unify(l.ty, r.ty)
}
