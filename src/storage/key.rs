//! The one order and the one hash of values, shared by every sort, group, DISTINCT, set
//! operation, hash join, min/max and the ordered index, so that they all agree with each
//! other and with SQL's `=`.
//!
//! Invariants:
//! - Floats are compared and hashed in their canonical form (`canonical_float`): -0.0 is
//!   0.0, every NaN is one value, above every number (+inf included). REAL values are
//!   widened to f64 exactly, so a REAL and the FLOAT of the same number are one key.
//! - `value_order` and `Key`'s `Ord` agree on values of one type; NULL sorts after every
//!   value (callers flip it for NULLS FIRST and DESC).
//! - Two values are one `Key` exactly when `value_order` says they are equal and they are
//!   of one type class (numbers of different types meet only after a cast).

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use super::value::Value;

/// `x` in the form every comparison uses: one zero and one NaN.
pub fn canonical_float(x: f64) -> f64 {
    if x == 0.0 {
        0.0
    } else if x.is_nan() {
        f64::NAN
    } else {
        x
    }
}

/// Whether writing `new` over `old` leaves the value the same in the one order (-0.0 is
/// 0.0, a NaN is every NaN): such a write is not a change.
pub fn same_value(old: &Value, new: &Value) -> bool {
    value_order(old, new) == Ordering::Equal
}

/// Compares two floats in the order of `canonical_float`.
pub fn float_order(a: f64, b: f64) -> Ordering {
    canonical_float(a).total_cmp(&canonical_float(b))
}

/// `x` as an integer whose order is `float_order`'s (the bits `f64::total_cmp`
/// compares), for loops that compare one float against many as plain integers.
pub fn float_rank(x: f64) -> i64 {
    let bits = canonical_float(x).to_bits() as i64;
    bits ^ (((bits >> 63) as u64) >> 1) as i64
}

/// Orders two values: of one type as `Key` does, NULL after everything; numbers of
/// different types (a UNION of mixed columns after its cast) as floats.
pub fn value_order(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => float_order(*x, *y),
        (Value::Real(x), Value::Real(y)) => float_order(f64::from(*x), f64::from(*y)),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Text(x), Value::Text(y)) => x.cmp(y),
        (Value::Entity(x), Value::Entity(y)) => x.to_bits().cmp(&y.to_bits()),
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Greater,
        (_, Value::Null) => Ordering::Less,
        (x, y) => match (number(x), number(y)) {
            (Some(a), Some(b)) => float_order(a, b),
            _ => Key::of(x).cmp(&Key::of(y)),
        },
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(x) => Some(*x),
        Value::Real(x) => Some(f64::from(*x)),
        _ => None,
    }
}

/// A value as an owned key with a total order and a hash that agree with `value_order`.
/// Kinds order as declared: booleans, integers, floats, text, entities, then NULL.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    Bool(bool),
    Int(i64),
    /// FLOAT and REAL values, canonical (see `canonical_float`).
    Float(FloatKey),
    Text(Box<str>),
    Entity(u64),
    Null,
}

impl Key {
    pub fn of(value: &Value) -> Key {
        match value {
            Value::Bool(b) => Key::Bool(*b),
            Value::Int(i) => Key::Int(*i),
            Value::Float(f) => Key::float(*f),
            Value::Real(f) => Key::float(f64::from(*f)),
            Value::Text(s) => Key::Text(s.as_str().into()),
            Value::Entity(e) => Key::Entity(e.to_bits()),
            Value::Null => Key::Null,
        }
    }

    /// `value` as a key that tells apart what `of` makes one: -0.0 from 0.0, and NaNs by
    /// their bits. For keeping results by their exact inputs (a correlated subquery's).
    pub fn exact(value: &Value) -> Key {
        match value {
            Value::Float(f) => Key::Float(FloatKey(*f)),
            Value::Real(f) => Key::Float(FloatKey(f64::from(*f))),
            _ => Key::of(value),
        }
    }

    pub fn float(x: f64) -> Key {
        Key::Float(FloatKey(canonical_float(x)))
    }
}

/// A canonical float: equal, hashed and ordered by its bits' total order.
#[derive(Clone, Copy, Debug)]
pub struct FloatKey(f64);

impl PartialEq for FloatKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for FloatKey {}

impl Hash for FloatKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

impl PartialOrd for FloatKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FloatKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_zero_one_nan_above_every_number_and_null_last() {
        let values = [
            Value::Null,
            Value::Float(f64::NAN),
            Value::Float(f64::INFINITY),
            Value::Float(-0.0),
            Value::Float(0.0),
            Value::Float(-1.0),
            Value::Float(-f64::NAN),
        ];
        let mut sorted = values.to_vec();
        sorted.sort_by(value_order);
        let text: Vec<String> = sorted.iter().map(|v| format!("{v:?}")).collect();
        assert_eq!(
            text,
            [
                "Float(-1.0)",
                "Float(-0.0)",
                "Float(0.0)",
                "Float(inf)",
                "Float(NaN)",
                "Float(NaN)",
                "Null"
            ]
        );
        for a in &values {
            for b in &values {
                let (ka, kb) = (Key::of(a), Key::of(b));
                assert_eq!(value_order(a, b), ka.cmp(&kb), "{a:?} vs {b:?}");
                assert_eq!(value_order(a, b) == Ordering::Equal, ka == kb, "{a:?} vs {b:?}");
            }
        }
        assert_eq!(Key::of(&Value::Real(0.5)), Key::of(&Value::Float(0.5)));
    }

    #[test]
    fn float_rank_orders_as_float_order() {
        let floats = [
            f64::NEG_INFINITY,
            f64::MIN,
            -1.5,
            -f64::MIN_POSITIVE,
            -0.0,
            0.0,
            5e-324,
            1.0,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7ff0_0000_0000_0001),
            f64::from_bits(0xfff8_0000_0000_0001),
            -5e-324,
            -f64::MAX,
        ];
        for &a in &floats {
            for &b in &floats {
                let ranks = float_rank(a).cmp(&float_rank(b));
                assert_eq!(ranks, float_order(a, b), "{a:?} vs {b:?}");
            }
        }
    }
}
