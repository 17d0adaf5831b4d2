//! The type rules as the binder asks them, over bound expressions: each reads an
//! expression as an `Operand` (its type, and whether it is a constant) and applies the
//! rule of `vector/types.rs`, where every type rule lives.

use super::expr::BoundExpr;
use crate::vector::{self, DataType, Operand};

/// `e` as the type rules see it: a constant when it is the same for every row (a
/// constant, a parameter, `delta_time()`: `BoundExpr::same_every_row`).
pub fn operand(e: &BoundExpr) -> Operand {
    Operand {
        ty: e.ty,
        constant: e.same_every_row(),
    }
}

/// The type two numbers meet in for arithmetic and comparison (`vector::numeric_common`).
pub fn numeric_common(l: &BoundExpr, r: &BoundExpr) -> Option<DataType> {
    vector::numeric_common(operand(l), operand(r))
}

/// The type `l` and `r` are compared in (`vector::comparison_type`). `compare_operand`
/// makes the casts this asks for.
pub fn comparison_type(l: &BoundExpr, r: &BoundExpr) -> Option<DataType> {
    vector::comparison_type(operand(l), operand(r))
}
