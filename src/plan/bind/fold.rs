//! Constant expressions computed while binding, where the plan needs a value rather than
//! an expression (a number series' bounds): a constant, its negation, integer arithmetic
//! of constants, a cast of one, and a call of a function that gives the same result for
//! the same arguments, of constants. Where computing it fails, the expression is left as
//! it is: the caller's error says what it needs.

use std::cell::Cell;

use crate::func::{Call, Clock};
use crate::plan::{ArithOp, BoundExpr, BoundKind};
use crate::storage::Value;
use crate::vector::{Datum, cast_value};

/// `b`'s value, when it is known without a row; `None` otherwise (or where computing it
/// fails: the run then says why).
pub(super) fn constant(b: &BoundExpr) -> Option<Value> {
    match &b.kind {
        BoundKind::Const(v) => Some(v.clone()),
        BoundKind::Neg(inner) => match constant(inner)? {
            Value::Int(i) => i.checked_neg().map(Value::Int),
            Value::Float(f) => Some(Value::Float(-f)),
            _ => None,
        },
        // Integers only: a float's sum is left to the run, which says what overflows.
        BoundKind::Arith(op, a, b) => match (constant(a)?, constant(b)?) {
            (Value::Int(a), Value::Int(b)) => match op {
                ArithOp::Add => a.checked_add(b),
                ArithOp::Sub => a.checked_sub(b),
                ArithOp::Mul => a.checked_mul(b),
                ArithOp::Div => a.checked_div(b),
                ArithOp::Mod => a.checked_rem(b),
            }
            .map(Value::Int),
            _ => None,
        },
        BoundKind::Cast(inner, _) => cast_value(&constant(inner)?, b.ty).ok(),
        BoundKind::Call(function, args) => {
            let p = function.properties();
            if p.volatile || p.clock {
                return None;
            }
            let values = args
                .iter()
                .map(|a| constant(a).map(Datum::Scalar))
                .collect::<Option<Vec<_>>>()?;
            let rng = Cell::new(0);
            let call = Call {
                ty: b.ty,
                len: 1,
                at: b.at,
                rng: &rng,
                clock: Clock::default(),
            };
            match function.invoke(values, &call).ok()? {
                Datum::Scalar(v) => Some(v),
                Datum::Vector(v) => (v.len() == 1).then(|| v.get(0)),
            }
        }
        _ => None,
    }
}
