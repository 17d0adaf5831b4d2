//! A typed view of one column (`Column`): its values seen through one `match` on its
//! type, with NULLs and ORDER BY's order. Sorts (ORDER BY, window orders) and window
//! functions read rows through it, never as boxed values.

use std::cmp::Ordering;

use crate::storage::{Entity, float_order};
use crate::vector::{Data, Vector};

/// A typed view of one column.
#[derive(Clone, Copy)]
pub(in crate::exec) enum Values<'c> {
    Null,
    Int(&'c [i64]),
    Float(&'c [f64]),
    Real(&'c [f32]),
    Bool(&'c [bool]),
    Text(&'c [String]),
    Entity(&'c [Option<Entity>]),
}

#[derive(Clone, Copy)]
pub(in crate::exec) struct Column<'c> {
    pub(in crate::exec) values: Values<'c>,
    valid: Option<&'c [bool]>,
}

impl<'c> Column<'c> {
    pub(in crate::exec) fn of(v: &'c Vector<'_>) -> Column<'c> {
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

    /// Whether no value is NULL: the column has no NULL flags and is of a type whose
    /// values are never NULL.
    pub(in crate::exec) fn never_null(&self) -> bool {
        self.valid.is_none() && !matches!(self.values, Values::Null | Values::Entity(_))
    }

    /// Whether row `r` has a NULL flag (an ENTITY column's missing id aside).
    pub(in crate::exec) fn flagged_null(&self, r: usize) -> bool {
        self.valid.is_some_and(|v| !v[r])
    }

    pub(in crate::exec) fn is_null(&self, r: usize) -> bool {
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
    pub(in crate::exec) fn order(&self, a: usize, b: usize) -> Ordering {
        self.order_with(a, self, b)
    }

    /// Row `a`'s value against row `b` of `other`, a column of the same type, neither
    /// NULL, in ORDER BY's order.
    pub(in crate::exec) fn order_with(&self, a: usize, other: &Column<'_>, b: usize) -> Ordering {
        match (self.values, other.values) {
            (Values::Int(x), Values::Int(y)) => x[a].cmp(&y[b]),
            (Values::Float(x), Values::Float(y)) => float_order(x[a], y[b]),
            (Values::Real(x), Values::Real(y)) => float_order(f64::from(x[a]), f64::from(y[b])),
            (Values::Bool(x), Values::Bool(y)) => x[a].cmp(&y[b]),
            (Values::Text(x), Values::Text(y)) => x[a].cmp(&y[b]),
            (Values::Entity(x), Values::Entity(y)) => {
                x[a].map(Entity::to_bits).cmp(&y[b].map(Entity::to_bits))
            }
            // NULL columns, or (never, the two are one type) columns of two types.
            _ => Ordering::Equal,
        }
    }

    /// Whether rows `a` and `b` hold the same value, NULL the same as NULL.
    pub(in crate::exec) fn same(&self, a: usize, b: usize) -> bool {
        match (self.is_null(a), self.is_null(b)) {
            (true, true) => true,
            (false, false) => self.order(a, b) == Ordering::Equal,
            _ => false,
        }
    }

    /// A number's value as a float (0 for what is not a number).
    pub(in crate::exec) fn float(&self, r: usize) -> f64 {
        match self.values {
            Values::Int(x) => x[r] as f64,
            Values::Float(x) => x[r],
            Values::Real(x) => f64::from(x[r]),
            _ => 0.0,
        }
    }

    pub(in crate::exec) fn int(&self, r: usize) -> Option<i64> {
        match self.values {
            Values::Int(x) if !self.is_null(r) => Some(x[r]),
            _ => None,
        }
    }
}
