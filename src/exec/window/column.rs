//! Typed columns, as window functions read and make them: a column's values seen through
//! one `match` on its type (`Column`: NULLs, ORDER BY's order, numbers), and results with
//! NULLs built a value at a time (`Nullable`).

use std::borrow::Cow;
use std::cmp::Ordering;

use crate::storage::{Entity, float_order};
use crate::vector::{Data, Vector};

/// A typed view of one column.
#[derive(Clone, Copy)]
pub(super) enum Values<'c> {
    Null,
    Int(&'c [i64]),
    Float(&'c [f64]),
    Real(&'c [f32]),
    Bool(&'c [bool]),
    Text(&'c [String]),
    Entity(&'c [Option<Entity>]),
}

#[derive(Clone, Copy)]
pub(super) struct Column<'c> {
    pub(super) values: Values<'c>,
    valid: Option<&'c [bool]>,
}

impl<'c> Column<'c> {
    pub(super) fn of(v: &'c Vector<'_>) -> Column<'c> {
        let values = match &v.data {
            Data::Null => Values::Null,
            Data::Int(x) => Values::Int(x),
            Data::Float(x) => Values::Float(x),
            Data::Real(x) => Values::Real(x),
            Data::Bool(x) => Values::Bool(x),
            Data::Text(x) => Values::Text(x),
            Data::Entity(x) => Values::Entity(x),
        };
        Column {
            values,
            valid: v.valid.as_deref(),
        }
    }

    pub(super) fn is_null(&self, r: usize) -> bool {
        if self.valid.is_some_and(|v| !v[r]) {
            return true;
        }
        match self.values {
            Values::Null => true,
            Values::Entity(e) => e[r].is_none(),
            _ => false,
        }
    }

    /// Two values, neither NULL, in ORDER BY's order (as `value_order` has it).
    pub(super) fn order(&self, a: usize, b: usize) -> Ordering {
        match self.values {
            Values::Null => Ordering::Equal,
            Values::Int(x) => x[a].cmp(&x[b]),
            Values::Float(x) => float_order(x[a], x[b]),
            Values::Real(x) => float_order(f64::from(x[a]), f64::from(x[b])),
            Values::Bool(x) => x[a].cmp(&x[b]),
            Values::Text(x) => x[a].cmp(&x[b]),
            Values::Entity(x) => x[a].map(Entity::to_bits).cmp(&x[b].map(Entity::to_bits)),
        }
    }

    /// Whether rows `a` and `b` hold the same value, NULL the same as NULL.
    pub(super) fn same(&self, a: usize, b: usize) -> bool {
        match (self.is_null(a), self.is_null(b)) {
            (true, true) => true,
            (false, false) => self.order(a, b) == Ordering::Equal,
            _ => false,
        }
    }

    /// A number's value as a float (0 for what is not a number).
    pub(super) fn float(&self, r: usize) -> f64 {
        match self.values {
            Values::Int(x) => x[r] as f64,
            Values::Float(x) => x[r],
            Values::Real(x) => f64::from(x[r]),
            _ => 0.0,
        }
    }

    pub(super) fn int(&self, r: usize) -> Option<i64> {
        match self.values {
            Values::Int(x) if !self.is_null(r) => Some(x[r]),
            _ => None,
        }
    }
}

/// Values with NULLs, as an aggregate's results are made.
pub(super) struct Nullable<T> {
    values: Vec<T>,
    valid: Vec<bool>,
}

impl<T: Default> Nullable<T> {
    pub(super) fn new(n: usize) -> Nullable<T> {
        Nullable {
            values: Vec::with_capacity(n),
            valid: Vec::with_capacity(n),
        }
    }

    pub(super) fn push(&mut self, v: Option<T>) {
        self.valid.push(v.is_some());
        self.values.push(v.unwrap_or_default());
    }

    pub(super) fn finish(self, data: impl FnOnce(Vec<T>) -> Data<'static>) -> Vector<'static> {
        let n = self.values.len();
        let valid = (!self.valid.iter().all(|&v| v)).then_some(Cow::Owned(self.valid));
        Vector::new(data(self.values), valid, n)
    }
}
