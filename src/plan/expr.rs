//! Bound expressions: names resolved to slots, types known, casts made explicit. The
//! executor evaluates them a batch of rows at a time (`exec/eval.rs`).

use std::cell::OnceCell;

use super::{DataType, QueryPlan};
use crate::parse::Location;
use crate::storage::Value;

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Abs,
    Sqrt,
    Pow,
    Floor,
    Ceil,
    Round,
    Least,
    Greatest,
    Lower,
    Upper,
    Length,
    Substr,
    Coalesce,
    Random,
}

#[derive(Debug)]
pub enum BKind {
    Const(Value),
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
    /// Uncorrelated: run once per statement execution, on first use.
    InSubquery {
        expr: Box<BExpr>,
        query: Box<QueryPlan>,
        negated: bool,
        values: OnceCell<Vec<Value>>,
    },
    Like {
        expr: Box<BExpr>,
        pattern: Box<BExpr>,
        negated: bool,
        case_insensitive: bool,
    },
    Case {
        branches: Vec<(BExpr, BExpr)>,
        otherwise: Option<Box<BExpr>>,
    },
    /// To `ty`.
    Cast(Box<BExpr>),
    Call(Func, Vec<BExpr>),
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
            BKind::Const(v) => Some(v),
            _ => None,
        }
    }

    /// Calls `f` on every slot this expression reads (not inside subqueries, which read
    /// their own batches).
    pub fn visit_slots(&self, f: &mut impl FnMut(usize)) {
        match &self.kind {
            BKind::Const(_) | BKind::Subquery { .. } | BKind::Exists { .. } => {}
            BKind::Slot(s) => f(*s),
            BKind::Neg(e) | BKind::Not(e) | BKind::Cast(e) | BKind::IsNull { expr: e, .. } => {
                e.visit_slots(f)
            }
            BKind::InSubquery { expr, .. } => expr.visit_slots(f),
            BKind::Arith(_, a, b)
            | BKind::Compare(_, a, b)
            | BKind::And(a, b)
            | BKind::Or(a, b)
            | BKind::Concat(a, b)
            | BKind::Like {
                expr: a, pattern: b, ..
            } => {
                a.visit_slots(f);
                b.visit_slots(f);
            }
            BKind::InList { expr, list, .. } => {
                expr.visit_slots(f);
                list.iter().for_each(|e| e.visit_slots(f));
            }
            BKind::Case { branches, otherwise } => {
                for (w, t) in branches {
                    w.visit_slots(f);
                    t.visit_slots(f);
                }
                if let Some(e) = otherwise {
                    e.visit_slots(f);
                }
            }
            BKind::Call(_, args) => args.iter().for_each(|e| e.visit_slots(f)),
        }
    }
}
