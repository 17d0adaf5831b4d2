//! Bound expressions: names resolved to slots, types known, casts made explicit. The
//! executor evaluates them a batch of rows at a time (`exec/eval/`).

use std::sync::OnceLock;
use std::sync::atomic::AtomicUsize;

use parking_lot::Mutex;

use hashbrown::HashMap;

use super::QueryPlan;
use super::value_set::ValueSet;
use crate::func::{Function, Nulls};
use crate::location::Location;
use crate::storage::{Key, Value};
use crate::vector::{CmpOp, DataType};

// A plan is a tree of these, built and walked for every text bound: kept at 72 bytes (a
// large or rare part is boxed), checked here so that growing it is a decision.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<BoundExpr>() <= 72);

#[derive(Debug)]
pub struct BoundExpr {
    pub kind: BoundKind,
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

/// The direct operands of an expression, by reference or by mutable reference: the one
/// list both `visit_children` and `visit_children_mut` read.
macro_rules! each_child {
    ($kind:expr, $f:ident $(, $mutable:tt)?) => {
        match $kind {
            BoundKind::Const(_) | BoundKind::Param { .. } | BoundKind::Outer(_) | BoundKind::Slot(_) => {}
            // A correlated subquery's outer values are computed from the batch it runs for.
            BoundKind::Subquery { correlated, .. } | BoundKind::Exists { correlated, .. } => {
                if let Some(c) = correlated {
                    for (_, e) in & $($mutable)? c.sets {
                        $f(e);
                    }
                }
            }
            BoundKind::Neg(e)
            | BoundKind::Not(e)
            | BoundKind::Cast(e, _)
            | BoundKind::IsNull { expr: e, .. } => $f(e),
            BoundKind::InSubquery { expr, correlated, .. } => {
                $f(expr);
                if let Some(c) = correlated {
                    for (_, e) in & $($mutable)? c.sets {
                        $f(e);
                    }
                }
            }
            BoundKind::Arith(_, a, b)
            | BoundKind::Compare(_, a, b)
            | BoundKind::IsDistinct(a, b, _)
            | BoundKind::And(a, b)
            | BoundKind::Or(a, b)
            | BoundKind::Concat(a, b)
            | BoundKind::Like {
                expr: a, pattern: b, ..
            } => {
                $f(a);
                $f(b);
            }
            BoundKind::InList { expr, list, .. } => {
                $f(expr);
                for e in list {
                    $f(e);
                }
            }
            BoundKind::Case { branches, otherwise } => {
                for (w, t) in branches {
                    $f(w);
                    $f(t);
                }
                if let Some(e) = otherwise {
                    $f(e);
                }
            }
            BoundKind::Call(_, args) => {
                for e in args {
                    $f(e);
                }
            }
        }
    };
}

#[derive(Debug)]
pub enum BoundKind {
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
    /// A column of a query around this one, read by a correlated subquery: the value the
    /// enclosing subquery node set for the row it runs for (`Correlated::sets`). The number
    /// is the statement's own for that outer column.
    Outer(usize),
    Neg(Box<BoundExpr>),
    Not(Box<BoundExpr>),
    /// Both operands already have the result type.
    Arith(ArithOp, Box<BoundExpr>, Box<BoundExpr>),
    /// Both operands already have one common type.
    Compare(CmpOp, Box<BoundExpr>, Box<BoundExpr>),
    /// `IS DISTINCT FROM` (true: `IS NOT DISTINCT FROM`): a comparison in which NULL is a
    /// value and every NaN one value, never NULL. Both operands have one common type.
    IsDistinct(Box<BoundExpr>, Box<BoundExpr>, bool),
    And(Box<BoundExpr>, Box<BoundExpr>),
    Or(Box<BoundExpr>, Box<BoundExpr>),
    Concat(Box<BoundExpr>, Box<BoundExpr>),
    IsNull {
        expr: Box<BoundExpr>,
        negated: bool,
    },
    /// Items already cast to the operand's type.
    InList {
        expr: Box<BoundExpr>,
        list: Vec<BoundExpr>,
        negated: bool,
    },
    /// Uncorrelated: run once per statement execution, on first use, its values held in
    /// `values`; correlated: run per distinct outer values. The values are held in the
    /// comparison's type `ty` (`expr` has that type too, or is an INT compared with ids).
    InSubquery {
        expr: Box<BoundExpr>,
        query: Box<QueryPlan>,
        negated: bool,
        ty: DataType,
        values: OnceLock<Box<ValueSet>>,
        correlated: Option<Box<Correlated>>,
    },
    Like {
        expr: Box<BoundExpr>,
        pattern: Box<BoundExpr>,
        negated: bool,
        case_insensitive: bool,
        /// `ESCAPE 'c'`: makes the next `%`, `_` or `c` in the pattern literal.
        escape: Option<char>,
    },
    Case {
        branches: Vec<(BoundExpr, BoundExpr)>,
        otherwise: Option<Box<BoundExpr>>,
    },
    /// To `ty`; when the value is being assigned to a field, that field (`Component.field`),
    /// which a value that does not fit names in its error.
    Cast(Box<BoundExpr>, Option<Box<str>>),
    /// A scalar function of `func/`, its arguments converted as its signature asks.
    Call(Function, Vec<BoundExpr>),
    /// A scalar subquery: its one value (NULL when it returns no row).
    Subquery {
        query: Box<QueryPlan>,
        value: OnceLock<Value>,
        correlated: Option<Box<Correlated>>,
    },
    Exists {
        query: Box<QueryPlan>,
        negated: bool,
        value: OnceLock<bool>,
        correlated: Option<Box<Correlated>>,
    },
}

/// What makes a subquery correlated: the columns of the query around it that it reads.
/// It runs once per distinct combination of the outer values it reads (kept in `results`
/// while the statement runs), not once per statement.
#[derive(Debug)]
pub struct Correlated {
    /// The outer values the row it runs for gives (`BoundKind::Outer(n)` inside reads
    /// value `n`), each an expression over the enclosing query's batch.
    pub sets: Vec<(usize, BoundExpr)>,
    /// Every outer value its plan reads, deep inside too: these and those set by
    /// subqueries further out. Its results are kept per their values.
    pub uses: Vec<usize>,
    /// It calls a volatile function (`random()`): it runs for every row, nothing kept.
    pub volatile: bool,
    /// The results of this run of the statement, by the values of `uses` (compared bit
    /// for bit: -0.0 is not 0.0 here). Forgotten between runs, and when it grows large.
    pub results: Box<Mutex<HashMap<Vec<Key>, Ran>>>,
    /// What `results` holds, as charged to the statement's memory budget.
    pub kept_bytes: AtomicUsize,
}

/// One run's result of a correlated subquery, as its kind keeps it.
#[derive(Debug)]
pub enum Ran {
    Value(Value),
    Exists(bool),
    Set(Box<ValueSet>),
}

impl BoundExpr {
    pub fn new(kind: BoundKind, ty: DataType, at: Location) -> BoundExpr {
        BoundExpr { kind, ty, at }
    }

    pub fn constant(value: Value, at: Location) -> BoundExpr {
        let ty = DataType::of(&value);
        BoundExpr {
            kind: BoundKind::Const(value),
            ty,
            at,
        }
    }

    pub fn slot(slot: usize, ty: DataType, at: Location) -> BoundExpr {
        BoundExpr {
            kind: BoundKind::Slot(slot),
            ty,
            at,
        }
    }

    /// Whether the value depends on no row: only constants, parameters and operators
    /// over them (no column, outer column, subquery or function call), so one evaluation
    /// with the run's parameters gives it for every row.
    pub fn row_free(&self) -> bool {
        match &self.kind {
            BoundKind::Const(_) | BoundKind::Param { .. } => true,
            BoundKind::Slot(_)
            | BoundKind::Outer(_)
            | BoundKind::Subquery { .. }
            | BoundKind::Exists { .. }
            | BoundKind::InSubquery { .. }
            | BoundKind::Call(..) => false,
            kind => {
                let mut free = true;
                let mut each = |e: &BoundExpr| free &= e.row_free();
                each_child!(kind, each);
                free
            }
        }
    }

    pub fn as_const(&self) -> Option<&Value> {
        match &self.kind {
            BoundKind::Const(v) | BoundKind::Param { value: v, .. } => Some(v),
            _ => None,
        }
    }

    /// Whether `self` and `other` compute the same thing: the same structure over the same
    /// slots, constants and parameters (where each was written does not matter). An
    /// expression with a subquery or `random()` is the same as nothing, not even itself.
    pub fn same_as(&self, other: &BoundExpr) -> bool {
        let all = |a: &[BoundExpr], b: &[BoundExpr]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_as(y))
        };
        self.ty == other.ty
            && match (&self.kind, &other.kind) {
                // Floats by their bits: -0.0 and 0.0 are equal but print differently, and
                // NaN is the same constant as itself.
                (BoundKind::Const(Value::Float(a)), BoundKind::Const(Value::Float(b))) => {
                    a.to_bits() == b.to_bits()
                }
                (BoundKind::Const(Value::Real(a)), BoundKind::Const(Value::Real(b))) => {
                    a.to_bits() == b.to_bits()
                }
                (BoundKind::Const(a), BoundKind::Const(b)) => a == b,
                (BoundKind::Param { param: a, .. }, BoundKind::Param { param: b, .. }) => a == b,
                (BoundKind::Slot(a), BoundKind::Slot(b)) | (BoundKind::Outer(a), BoundKind::Outer(b)) => {
                    a == b
                }
                (BoundKind::Neg(a), BoundKind::Neg(b))
                | (BoundKind::Not(a), BoundKind::Not(b))
                | (BoundKind::Cast(a, _), BoundKind::Cast(b, _)) => a.same_as(b),
                (BoundKind::Arith(o, a, b), BoundKind::Arith(p, c, d)) => {
                    o == p && a.same_as(c) && b.same_as(d)
                }
                (BoundKind::Compare(o, a, b), BoundKind::Compare(p, c, d)) => {
                    o == p && a.same_as(c) && b.same_as(d)
                }
                (BoundKind::IsDistinct(a, b, n), BoundKind::IsDistinct(c, d, m)) => {
                    n == m && a.same_as(c) && b.same_as(d)
                }
                (BoundKind::And(a, b), BoundKind::And(c, d))
                | (BoundKind::Or(a, b), BoundKind::Or(c, d))
                | (BoundKind::Concat(a, b), BoundKind::Concat(c, d)) => a.same_as(c) && b.same_as(d),
                (BoundKind::IsNull { expr: a, negated: n }, BoundKind::IsNull { expr: b, negated: m }) => {
                    n == m && a.same_as(b)
                }
                (
                    BoundKind::InList {
                        expr: a,
                        list: l,
                        negated: n,
                    },
                    BoundKind::InList {
                        expr: b,
                        list: k,
                        negated: m,
                    },
                ) => n == m && a.same_as(b) && all(l, k),
                (
                    BoundKind::Like {
                        expr: a,
                        pattern: p,
                        negated: n,
                        case_insensitive: i,
                        escape: e,
                    },
                    BoundKind::Like {
                        expr: b,
                        pattern: q,
                        negated: m,
                        case_insensitive: j,
                        escape: f,
                    },
                ) => n == m && i == j && e == f && a.same_as(b) && p.same_as(q),
                (
                    BoundKind::Case {
                        branches: a,
                        otherwise: o,
                    },
                    BoundKind::Case {
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
                (BoundKind::Call(f, a), BoundKind::Call(g, b)) => {
                    f == g && !f.properties().volatile && all(a, b)
                }
                _ => false,
            }
    }

    /// Calls `f` on this expression and every node below it (not inside subqueries).
    pub fn visit<'e>(&'e self, f: &mut impl FnMut(&'e BoundExpr)) {
        f(self);
        self.visit_children(&mut |c| c.visit(f));
    }

    /// Calls `f` on every slot this expression reads (not inside subqueries, which read
    /// their own batches).
    pub fn visit_slots(&self, f: &mut impl FnMut(usize)) {
        match &self.kind {
            BoundKind::Slot(s) => f(*s),
            _ => self.visit_children(&mut |c| c.visit_slots(f)),
        }
    }

    /// True when evaluating this expression raises no error on any row, whatever the data:
    /// no integer arithmetic (it may overflow), no division (by zero), no casts, calls or
    /// LIKE patterns that may refuse a value, no subqueries. The executor then evaluates
    /// it without AND/OR's short-circuit bookkeeping, and lets UPDATE write batch by batch
    /// (a statement whose later batch could fail must stage everything first).
    pub fn cannot_fail(&self) -> bool {
        self.never_fails(false)
    }

    /// `cannot_fail`, but a part that is the same for every row of a run
    /// (`same_every_row`: `CAST(delta_time() AS REAL)`) may fail: it gives the same value
    /// or error in every batch, so it fails, if at all, in the first batch that evaluates
    /// it, before that batch writes and after no other did. What an UPDATE asks to write
    /// batch by batch.
    pub fn cannot_fail_after_first_batch(&self) -> bool {
        self.never_fails(true)
    }

    /// `cannot_fail` (`per_run`: `cannot_fail_after_first_batch`).
    fn never_fails(&self, per_run: bool) -> bool {
        if per_run && self.same_every_row() {
            return true;
        }
        let float = matches!(self.ty, DataType::Real | DataType::Float);
        let ok = |e: &BoundExpr| e.never_fails(per_run);
        match &self.kind {
            BoundKind::Const(_) | BoundKind::Param { .. } | BoundKind::Outer(_) | BoundKind::Slot(_) => true,
            BoundKind::Neg(x) => float && ok(x),
            BoundKind::Arith(op, l, r) => {
                float && matches!(op, ArithOp::Add | ArithOp::Sub | ArithOp::Mul) && ok(l) && ok(r)
            }
            BoundKind::Not(x) | BoundKind::IsNull { expr: x, .. } => ok(x),
            BoundKind::Compare(_, l, r)
            | BoundKind::IsDistinct(l, r, _)
            | BoundKind::And(l, r)
            | BoundKind::Or(l, r) => ok(l) && ok(r),
            BoundKind::InList { expr, list, .. } => ok(expr) && list.iter().all(ok),
            BoundKind::Call(f, args) => {
                let types: Vec<DataType> = args.iter().map(|a| a.ty).collect();
                !f.can_fail(&types) && args.iter().all(ok)
            }
            BoundKind::Case { branches, otherwise } => {
                branches.iter().all(|(w, t)| ok(w) && ok(t)) && otherwise.as_deref().is_none_or(ok)
            }
            _ => false,
        }
    }

    /// True when the expression gives the same value (or error) every time a statement
    /// evaluates it: a constant, a parameter, a call of no argument that is not volatile
    /// (`delta_time()`, `tick()`; not `random()`), or a cast or negation of one. Looked at
    /// this shallowly so that asking it of every node of a deep expression stays cheap.
    pub fn same_every_row(&self) -> bool {
        let mut e = self;
        loop {
            match &e.kind {
                BoundKind::Const(_) | BoundKind::Param { .. } => return true,
                BoundKind::Call(f, args) => return args.is_empty() && !f.properties().volatile,
                BoundKind::Cast(x, _) | BoundKind::Neg(x) => e = x,
                _ => return false,
            }
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
            BoundKind::Arith(ArithOp::Div | ArithOp::Mod, _, divisor) => {
                !matches!(
                    divisor.kind,
                    BoundKind::Const(Value::Int(n)) if n != 0
                ) && !matches!(divisor.kind, BoundKind::Const(Value::Float(x)) if x != 0.0)
                    && !matches!(divisor.kind, BoundKind::Const(Value::Real(x)) if x != 0.0)
            }
            // A parameter's cast was tried on its value when the plan was chosen
            // (`ParamCast`).
            BoundKind::Cast(x, _) => {
                x.ty == DataType::Text
                    && self.ty != DataType::Text
                    && !matches!(x.kind, BoundKind::Param { .. })
            }
            _ => false,
        };
        let mut below = false;
        self.visit_children(&mut |c| below |= c.may_refuse_rows());
        here || below
    }

    /// Calls `f` on each direct operand (not inside subqueries).
    pub(crate) fn visit_children<'e>(&'e self, f: &mut impl FnMut(&'e BoundExpr)) {
        each_child!(&self.kind, f)
    }

    /// Calls `f` on each direct operand (not inside subqueries), to change it.
    pub fn visit_children_mut(&mut self, f: &mut impl FnMut(&mut BoundExpr)) {
        each_child!(&mut self.kind, f, mut)
    }

    /// True when no row can make this expression NULL, given which slots never hold NULL.
    pub fn never_null(&self, slot_never_null: &impl Fn(usize) -> bool) -> bool {
        let inner = |e: &BoundExpr| e.never_null(slot_never_null);
        match &self.kind {
            BoundKind::Const(v) | BoundKind::Param { value: v, .. } => *v != Value::Null,
            // ENTITY values may be NULL wherever they come from.
            BoundKind::Slot(s) => self.ty != DataType::Entity && slot_never_null(*s),
            BoundKind::IsNull { .. } | BoundKind::IsDistinct(..) => true,
            BoundKind::Neg(x) | BoundKind::Not(x) => inner(x),
            // Only a cast to ENTITY makes NULL of a value (an integer 0 or below).
            BoundKind::Cast(x, _) => self.ty != DataType::Entity && inner(x),
            BoundKind::Arith(_, l, r)
            | BoundKind::Compare(_, l, r)
            | BoundKind::And(l, r)
            | BoundKind::Or(l, r)
            | BoundKind::Concat(l, r) => inner(l) && inner(r),
            BoundKind::Call(f, args) => match f.properties().nulls {
                Nulls::Never => true,
                Nulls::FromArguments => args.iter().all(inner),
                Nulls::Sometimes => false,
            },
            BoundKind::Case {
                branches,
                otherwise: Some(otherwise),
            } => branches.iter().all(|(_, t)| inner(t)) && inner(otherwise),
            _ => false,
        }
    }
}
