//! The values of an `IN (SELECT …)`, held as a typed hash set in the comparison's type so
//! that each row probes it once instead of comparing with every value. Equality is SQL's
//! `=`: -0.0 is 0.0, NaN equals nothing, an id equals the integer of its 64-bit value.
//! NULLs are not stored; `has_null` remembers one was seen, since `x IN (…, NULL)` is
//! NULL rather than false when `x` is not found.

use hashbrown::HashSet;

use super::{DataType, cast_value};
use crate::storage::{Value, canonical_float};

#[derive(Debug, Default)]
pub struct ValueSet {
    ints: HashSet<i64>,
    /// FLOAT and REAL values, widened to f64 and canonical (one zero).
    floats: HashSet<u64>,
    texts: HashSet<String>,
    bools: [bool; 2],
    /// Entity ids, and positive integers compared with ids.
    entities: HashSet<u64>,
    pub has_null: bool,
    /// Whether no value at all came in (values that can equal nothing, like NaN, count).
    empty: bool,
}

impl ValueSet {
    /// The set of `values` as compared in type `ty`. Errs with the reason when a value
    /// does not convert to `ty` (text that is not a number, say).
    pub fn new(values: impl IntoIterator<Item = Value>, ty: DataType) -> Result<ValueSet, String> {
        let mut set = ValueSet {
            empty: true,
            ..ValueSet::default()
        };
        set.extend(values, ty)?;
        Ok(set)
    }

    /// Adds `values`, as `new` takes them (a set built a piece at a time).
    pub fn extend(&mut self, values: impl IntoIterator<Item = Value>, ty: DataType) -> Result<(), String> {
        let set = self;
        for v in values {
            set.empty = false;
            match (&v, ty) {
                (Value::Null, _) => set.has_null = true,
                // An integer compared with ids: only a positive one can equal an id.
                (Value::Int(i), DataType::Entity) => {
                    if let Ok(bits) = u64::try_from(*i) {
                        set.entities.insert(bits);
                    }
                }
                (Value::Entity(e), DataType::Entity) => {
                    set.entities.insert(e.to_bits());
                }
                _ => set.insert(cast_value(&v, ty)?),
            }
        }
        Ok(())
    }

    fn insert(&mut self, v: Value) {
        match v {
            Value::Null => self.has_null = true,
            Value::Int(i) => {
                self.ints.insert(i);
            }
            Value::Float(x) => self.insert_float(x),
            Value::Real(x) => self.insert_float(f64::from(x)),
            Value::Bool(b) => self.bools[usize::from(b)] = true,
            Value::Text(s) => {
                self.texts.insert(s);
            }
            Value::Entity(e) => {
                self.entities.insert(e.to_bits());
            }
        }
    }

    fn insert_float(&mut self, x: f64) {
        if !x.is_nan() {
            self.floats.insert(canonical_float(x).to_bits());
        }
    }

    /// Whether the subquery returned no row at all (not even a NULL).
    /// About how many bytes the set holds.
    pub fn bytes(&self) -> usize {
        let texts: usize = self.texts.iter().map(|t| t.len() + 32).sum();
        16 * (self.ints.len() + self.floats.len() + self.entities.len()) + texts + 64
    }

    pub fn is_empty(&self) -> bool {
        self.empty
    }

    pub fn has_int(&self, i: i64) -> bool {
        self.ints.contains(&i)
    }

    /// An INT compared with ids.
    pub fn has_int_as_entity(&self, i: i64) -> bool {
        u64::try_from(i).is_ok_and(|bits| self.entities.contains(&bits))
    }

    pub fn has_float(&self, x: f64) -> bool {
        !x.is_nan() && self.floats.contains(&canonical_float(x).to_bits())
    }

    pub fn has_text(&self, s: &str) -> bool {
        self.texts.contains(s)
    }

    pub fn has_bool(&self, b: bool) -> bool {
        self.bools[usize::from(b)]
    }

    pub fn has_entity(&self, bits: u64) -> bool {
        self.entities.contains(&bits)
    }
}
