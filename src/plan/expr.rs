//! Bound expressions: names resolved to slots, types known, casts made explicit. The
//! executor evaluates them a batch of rows at a time (`exec/eval.rs`).

use std::cell::OnceCell;

use super::QueryPlan;
use super::value_set::ValueSet;
use crate::func::{Function, Nulls};
use crate::parse::Location;
use crate::storage::Value;
use crate::vector::{CmpOp, DataType};

#[derive(Debug)]
pub struct BExpr {
    pub kind: BKind,
    pub ty: DataType,
    pub at: Location,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

#[derive(Debug)]
pub enum BKind {
    Const(Value),
    /// A statement parameter. `value` is the one it was bound with, which the binder reads
    /// as it would a constant's; execution reads the run's own value (of the same type:
    /// a prepared statement re-binds when the types change).
    Param {
        param: crate::parse::Param,
        value: Value,
    },
    /// A column of the batch being evaluated.
    Slot(usize),
    Neg(Box<BExpr>),
    Not(Box<BExpr>),
    /// Both operands already have the result type.
    Arith(ArithOp, Box<BExpr>, Box<BExpr>),
    /// Both operands already have one common type.
    Compare(CmpOp, Box<BExpr>, Box<BExpr>),
    And(Box<BExpr>, Box<BExpr>),
    Or(Box<BExpr>, Box<BExpr>),
    Concat(Box<BExpr>, Box<BExpr>),
    IsNull {
        expr: Box<BExpr>,
        negated: bool,
    },
    /// Items already cast to the operand's type.
    InList {
        expr: Box<BExpr>,
        list: Vec<BExpr>,
        negated: bool,
    },
    /// Uncorrelated: run once per statement execution, on first use, its values held in
    /// the comparison's type `ty` (`expr` has that type too, or is an INT compared with
    /// ids).
    InSubquery {
        expr: Box<BExpr>,
        query: Box<QueryPlan>,
        negated: bool,
        ty: DataType,
        values: OnceCell<Box<ValueSet>>,
    },
    Like {
        expr: Box<BExpr>,
        pattern: Box<BExpr>,
        negated: bool,
        case_insensitive: bool,
        /// `ESCAPE 'c'`: makes the next `%`, `_` or `c` in the pattern literal.
        escape: Option<char>,
    },
    Case {
        branches: Vec<(BExpr, BExpr)>,
        otherwise: Option<Box<BExpr>>,
    },
    /// To `ty`.
    Cast(Box<BExpr>),
    /// A scalar function of `func/`, its arguments converted as its signature asks.
    Call(Function, Vec<BExpr>),
    Subquery {
        query: Box<QueryPlan>,
        value: OnceCell<Value>,
    },
    Exists {
        query: Box<QueryPlan>,
        negated: bool,
        value: OnceCell<bool>,
    },
}

impl BExpr {
    pub fn new(kind: BKind, ty: DataType, at: Location) -> BExpr {
        BExpr { kind, ty, at }
    }

    pub fn constant(value: Value, at: Location) -> BExpr {
        let ty = DataType::of(&value);
        BExpr {
            kind: BKind::Const(value),
            ty,
            at,
        }
    }

    pub fn slot(slot: usize, ty: DataType, at: Location) -> BExpr {
        BExpr {
            kind: BKind::Slot(slot),
            ty,
            at,
        }
    }

    pub fn as_const(&self) -> Option<&Value> {
        match &self.kind {
            BKind::Const(v) | BKind::Param { value: v, .. } => Some(v),
            _ => None,
        }
    }

    /// Whether `self` and `other` compute the same thing: the same structure over the same
    /// slots, constants and parameters (where each was written does not matter). An
    /// expression with a subquery or `random()` is the same as nothing, not even itself.
    pub fn same_as(&self, other: &BExpr) -> bool {
        let all = |a: &[BExpr], b: &[BExpr]| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_as(y));
        self.ty == other.ty
            && match (&self.kind, &other.kind) {
                // Floats by their bits: -0.0 and 0.0 are equal but print differently, and
                // NaN is the same constant as itself.
                (BKind::Const(Value::Float(a)), BKind::Const(Value::Float(b))) => a.to_bits() == b.to_bits(),
                (BKind::Const(Value::Real(a)), BKind::Const(Value::Real(b))) => a.to_bits() == b.to_bits(),
                (BKind::Const(a), BKind::Const(b)) => a == b,
                (BKind::Param { param: a, .. }, BKind::Param { param: b, .. }) => a == b,
                (BKind::Slot(a), BKind::Slot(b)) => a == b,
                (BKind::Neg(a), BKind::Neg(b))
                | (BKind::Not(a), BKind::Not(b))
                | (BKind::Cast(a), BKind::Cast(b)) => a.same_as(b),
                (BKind::Arith(o, a, b), BKind::Arith(p, c, d)) => o == p && a.same_as(c) && b.same_as(d),
                (BKind::Compare(o, a, b), BKind::Compare(p, c, d)) => o == p && a.same_as(c) && b.same_as(d),
                (BKind::And(a, b), BKind::And(c, d))
                | (BKind::Or(a, b), BKind::Or(c, d))
                | (BKind::Concat(a, b), BKind::Concat(c, d)) => a.same_as(c) && b.same_as(d),
                (BKind::IsNull { expr: a, negated: n }, BKind::IsNull { expr: b, negated: m }) => {
                    n == m && a.same_as(b)
                }
                (
                    BKind::InList {
                        expr: a,
                        list: l,
                        negated: n,
                    },
                    BKind::InList {
                        expr: b,
                        list: k,
                        negated: m,
                    },
                ) => n == m && a.same_as(b) && all(l, k),
                (
                    BKind::Like {
                        expr: a,
                        pattern: p,
                        negated: n,
                        case_insensitive: i,
                        escape: e,
                    },
                    BKind::Like {
                        expr: b,
                        pattern: q,
                        negated: m,
                        case_insensitive: j,
                        escape: f,
                    },
                ) => n == m && i == j && e == f && a.same_as(b) && p.same_as(q),
                (
                    BKind::Case {
                        branches: a,
                        otherwise: o,
                    },
                    BKind::Case {
                        branches: b,
                        otherwise: p,
                    },
                ) => {
                    a.len() == b.len()
                        && a.iter()
                            .zip(b)
                            .all(|((w, t), (v, u))| w.same_as(v) && t.same_as(u))
                        && match (o, p) {
                            (None, None) => true,
                            (Some(x), Some(y)) => x.same_as(y),
                            _ => false,
                        }
                }
                (BKind::Call(f, a), BKind::Call(g, b)) => f == g && !f.properties().volatile && all(a, b),
                _ => false,
            }
    }

    /// Calls `f` on every slot this expression reads (not inside subqueries, which read
    /// their own batches).
    pub fn visit_slots(&self, f: &mut impl FnMut(usize)) {
        match &self.kind {
            BKind::Slot(s) => f(*s),
            _ => self.visit_children(&mut |c| c.visit_slots(f)),
        }
    }

    /// True when evaluating this expression raises no error on any row, whatever the data:
    /// no integer arithmetic (it may overflow), no division (by zero), no casts, calls or
    /// LIKE patterns that may refuse a value, no subqueries. The executor then evaluates
    /// it without AND/OR's short-circuit bookkeeping, and lets UPDATE write batch by batch
    /// (a statement whose later batch could fail must stage everything first).
    pub fn cannot_fail(&self) -> bool {
        let float = matches!(self.ty, DataType::Real | DataType::Float);
        match &self.kind {
            BKind::Const(_) | BKind::Param { .. } | BKind::Slot(_) => true,
            BKind::Neg(x) => float && x.cannot_fail(),
            BKind::Arith(op, l, r) => {
                float
                    && matches!(op, ArithOp::Add | ArithOp::Sub | ArithOp::Mul)
                    && l.cannot_fail()
                    && r.cannot_fail()
            }
            BKind::Not(x) | BKind::IsNull { expr: x, .. } => x.cannot_fail(),
            BKind::Compare(_, l, r) | BKind::And(l, r) | BKind::Or(l, r) => {
                l.cannot_fail() && r.cannot_fail()
            }
            BKind::InList { expr, list, .. } => expr.cannot_fail() && list.iter().all(BExpr::cannot_fail),
            BKind::Call(f, args) => !f.properties().can_fail && args.iter().all(BExpr::cannot_fail),
            BKind::Case { branches, otherwise } => {
                branches.iter().all(|(w, t)| w.cannot_fail() && t.cannot_fail())
                    && otherwise.as_deref().is_none_or(BExpr::cannot_fail)
            }
            _ => false,
        }
    }

    /// True when some row's values can make this expression an error whatever the rest of
    /// the statement: a division or remainder by anything but a nonzero constant, or a
    /// cast of text (which may not be a number). Integer overflow is left out: it needs
    /// extreme values, not ordinary rows like a zero. The join planner evaluates such a
    /// condition only after every other one, so that the rows other conditions remove
    /// never reach it, whatever order the relations are joined in.
    pub fn may_refuse_rows(&self) -> bool {
        let here = match &self.kind {
            BKind::Arith(ArithOp::Div | ArithOp::Mod, _, divisor) => {
                !matches!(
                    divisor.kind,
                    BKind::Const(Value::Int(n)) if n != 0
                ) && !matches!(divisor.kind, BKind::Const(Value::Float(x)) if x != 0.0)
                    && !matches!(divisor.kind, BKind::Const(Value::Real(x)) if x != 0.0)
            }
            BKind::Cast(x) => x.ty == DataType::Text && self.ty != DataType::Text,
            _ => false,
        };
        let mut below = false;
        self.visit_children(&mut |c| below |= c.may_refuse_rows());
        here || below
    }

    /// Calls `f` on each direct operand (not inside subqueries).
    fn visit_children(&self, f: &mut impl FnMut(&BExpr)) {
        match &self.kind {
            BKind::Const(_)
            | BKind::Param { .. }
            | BKind::Subquery { .. }
            | BKind::Exists { .. }
            | BKind::Slot(_) => {}
            BKind::Neg(e) | BKind::Not(e) | BKind::Cast(e) | BKind::IsNull { expr: e, .. } => f(e),
            BKind::InSubquery { expr, .. } => f(expr),
            BKind::Arith(_, a, b)
            | BKind::Compare(_, a, b)
            | BKind::And(a, b)
            | BKind::Or(a, b)
            | BKind::Concat(a, b)
            | BKind::Like {
                expr: a, pattern: b, ..
            } => {
                f(a);
                f(b);
            }
            BKind::InList { expr, list, .. } => {
                f(expr);
                list.iter().for_each(f);
            }
            BKind::Case { branches, otherwise } => {
                for (w, t) in branches {
                    f(w);
                    f(t);
                }
                if let Some(e) = otherwise {
                    f(e);
                }
            }
            BKind::Call(_, args) => args.iter().for_each(f),
        }
    }

    /// True when no row can make this expression NULL, given which slots never hold NULL.
    pub fn never_null(&self, slot_never_null: &impl Fn(usize) -> bool) -> bool {
        let inner = |e: &BExpr| e.never_null(slot_never_null);
        match &self.kind {
            BKind::Const(v) | BKind::Param { value: v, .. } => *v != Value::Null,
            // ENTITY values may be NULL wherever they come from.
            BKind::Slot(s) => self.ty != DataType::Entity && slot_never_null(*s),
            BKind::IsNull { .. } => true,
            BKind::Neg(x) | BKind::Not(x) => inner(x),
            BKind::Arith(_, l, r)
            | BKind::Compare(_, l, r)
            | BKind::And(l, r)
            | BKind::Or(l, r)
            | BKind::Concat(l, r) => inner(l) && inner(r),
            BKind::Call(f, args) => match f.properties().nulls {
                Nulls::Never => true,
                Nulls::FromArguments => args.iter().all(inner),
                Nulls::Sometimes => false,
            },
            BKind::Case {
                branches,
                otherwise: Some(otherwise),
            } => branches.iter().all(|(_, t)| inner(t)) && inner(otherwise),
            _ => false,
        }
    }
}
