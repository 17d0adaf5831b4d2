//! Constant expressions computed while binding, where the plan needs a value rather than
//! an expression (a number series' bounds): a constant, a cast of one, and a call of a
//! function that gives the same result for the same arguments, of constants.

use std::cell::Cell;

use crate::func::{Call, Clock};
use crate::plan::{BoundExpr, BoundKind};
use crate::storage::Value;
use crate::vector::{Datum, cast_value};

/// `b`'s value, when it is known without a row; `None` otherwise (or where computing it
/// fails: the run then says why).
pub(super) fn constant(b: &BoundExpr) -> Option<Value> {
    match &b.kind {
        BoundKind::Const(v) => Some(v.clone()),
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
