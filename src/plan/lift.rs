//! Constants lifted out of a statement into parameters, so that the texts of one shape
//! (`parse::shape`: the same text but for its literals' values) share one plan, each run
//! giving its own text's values.
//!
//! A literal is lifted only where the binder treats a parameter as it treats a constant of
//! the same value: it reads both through `BoundExpr::as_const`, casts both the same way
//! (a parameter's cast is left for the run, and the plan is bound again for a value the
//! cast refuses: `ParamCast`), and a point read or an index search takes either. Those
//! places are:
//! - in the WHERE of a SELECT (one select, not a set operation), an UPDATE or a DELETE,
//!   through AND, OR and NOT: a side of a comparison whose other side reads a column, and
//!   the bounds of a BETWEEN whose operand reads a column;
//! - the value of an UPDATE's `SET field = literal`;
//! - in a SET value or a compared side that reads a column, an operand of `+`, `-` or `*`
//!   whose other operand reads a column (`SET x = x + 0.5`, `WHERE P.x * 2.0 > P.y`), at
//!   any depth of such arithmetic (not `/` or `%`, whose constant divisor the planner
//!   reads);
//! - the arguments of a SPAWN without FROM (`SPAWN C(x => 1.5)`);
//! - the ids of `DESPAWN 5, 6`.
//!
//! Literals anywhere else (the select list, which names the columns; GROUP BY, ORDER BY
//! and LIMIT, which read constants for themselves; function arguments, arithmetic, IN
//! lists, subqueries) stay in the statement, and a text of the same shape shares the plan
//! only when it has the same values there.
//!
//! Invariants:
//! - A statement with a parameter of its own is not lifted.
//! - The lifted statement has `?k` at the place of its k-th lifted literal (in the order
//!   of the text) and is otherwise the statement as parsed.
//! - `Lifted::values` gives, for another text of the shape, the values the parser would
//!   read there, each of the kind (INT, FLOAT, TEXT) this statement had; or nothing.

use crate::parse::{
    BinaryOp, Expr, ExprKind, Literal, MaskedLiteral, Param, SetExpr, Shape, Statement, StatementKind,
    UnaryOp,
};
use crate::storage::Value;

/// A statement with some of its literals lifted into parameters.
#[derive(Debug)]
pub struct Lifted {
    /// The statement, `?1` … `?n` where the lifted literals were.
    pub statement: Statement,
    /// How each parameter's value is read from a text of the shape, in order.
    slots: Vec<Slot>,
    /// The shape's literals that stay in the statement: their positions among the
    /// shape's literals and the text they had, which another text must repeat.
    kept: Vec<(usize, Box<str>)>,
}

/// Where a parameter's value is in a text of the shape.
#[derive(Debug)]
struct Slot {
    /// Its position among the shape's masked literals.
    literal: usize,
    /// The parser folded the `-` before it into it (`-5`).
    negated: bool,
    /// The kind its value must have: the one the statement was bound with.
    kind: LiteralKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LiteralKind {
    Int,
    Float,
    Text,
}

impl LiteralKind {
    fn of(l: &Literal) -> Option<LiteralKind> {
        match l {
            Literal::Int(_) => Some(LiteralKind::Int),
            Literal::Float(_) => Some(LiteralKind::Float),
            Literal::Text(_) => Some(LiteralKind::Text),
            Literal::Null | Literal::Bool(_) => None,
        }
    }
}

/// Why a statement was not lifted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotLifted {
    /// No text of its shape can be: it has no literal in the places above, or a
    /// parameter of its own.
    Shape,
    /// This text cannot be: whether the parser folded a `-` into a literal cannot be told
    /// (`x - 0`). Another text of the shape may be.
    Text,
}

/// `statement` (parsed from `sql`, whose shape is `shape`) with the literals it has in the
/// places above lifted into parameters.
pub fn lift(statement: &Statement, sql: &str, shape: &Shape) -> Result<Lifted, NotLifted> {
    if statement.params.positional > 0 || !statement.params.named.is_empty() {
        return Err(NotLifted::Shape);
    }
    let mut lifted = statement.clone();
    let mut found = Vec::new();
    places(&mut lifted.kind, &mut found);
    let mut slots = Vec::new();
    let mut by_literal = Vec::new();
    let mut untold = false;
    for e in &mut found {
        let ExprKind::Literal(value) = &e.kind else {
            continue;
        };
        let Ok(literal) = shape.literals.binary_search_by(|l| l.at.cmp(&e.at)) else {
            continue;
        };
        let Some(kind) = LiteralKind::of(value) else {
            continue;
        };
        let Some(negated) = negated(&shape.literals[literal], sql, value) else {
            untold = true;
            continue;
        };
        by_literal.push((literal, negated, kind, e));
    }
    if by_literal.is_empty() {
        return Err(if untold { NotLifted::Text } else { NotLifted::Shape });
    }
    // Numbered in the order of the text, as a text's own `?`s are.
    by_literal.sort_by_key(|(literal, ..)| *literal);
    for (k, (literal, negated, kind, e)) in by_literal.into_iter().enumerate() {
        e.kind = ExprKind::Param(Param::Position(k + 1));
        slots.push(Slot {
            literal,
            negated,
            kind,
        });
    }
    lifted.params.positional = slots.len();
    let mut is_lifted = vec![false; shape.literals.len()];
    for s in &slots {
        is_lifted[s.literal] = true;
    }
    let kept = (shape.literals.iter().enumerate())
        .filter(|&(i, _)| !is_lifted[i])
        .map(|(i, l)| (i, Box::from(l.written(sql))))
        .collect();
    Ok(Lifted {
        statement: lifted,
        slots,
        kept,
    })
}

impl Lifted {
    /// The parameters' values for `sql`, a text of the shape `shape` (the shape this
    /// statement was lifted from): `None` when its kept literals differ from this
    /// statement's, or a lifted one is not of the kind it was.
    pub fn values(&self, sql: &str, shape: &Shape) -> Option<Vec<Value>> {
        for (i, written) in &self.kept {
            if shape.literals.get(*i)?.written(sql) != &**written {
                return None;
            }
        }
        self.slots
            .iter()
            .map(|s| {
                let value = shape.literals.get(s.literal)?.value(sql, s.negated)?;
                match value {
                    Literal::Int(i) if s.kind == LiteralKind::Int => Some(Value::Int(i)),
                    Literal::Float(x) if s.kind == LiteralKind::Float => Some(Value::Float(x)),
                    Literal::Text(t) if s.kind == LiteralKind::Text => Some(Value::Text(t)),
                    _ => None,
                }
            })
            .collect()
    }
}

/// Whether the parser folded a `-` into `value`, the literal it read at `l` of `sql`:
/// `None` when that cannot be told (an integer zero after a `-`, as in `x - 0`) or
/// `value` is neither.
fn negated(l: &MaskedLiteral, sql: &str, value: &Literal) -> Option<bool> {
    let same = |v: Option<Literal>| v.is_some_and(|v| same_literal(&v, value));
    let plain = same(l.value(sql, false));
    if !l.after_minus {
        return plain.then_some(false);
    }
    match (plain, same(l.value(sql, true))) {
        (true, false) => Some(false),
        (false, true) => Some(true),
        _ => None,
    }
}

/// Equal, floats bit for bit (so that -0.0 is not 0.0).
fn same_literal(a: &Literal, b: &Literal) -> bool {
    match (a, b) {
        (Literal::Float(x), Literal::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// The literals of `kind` in the places a parameter serves as the literal would.
fn places<'s>(kind: &'s mut StatementKind, out: &mut Vec<&'s mut Expr>) {
    match kind {
        StatementKind::Select(q) => {
            if let SetExpr::Select(s) = &mut q.body
                && let Some(filter) = &mut s.filter
            {
                condition(filter, out);
            }
        }
        StatementKind::Update {
            assignments, filter, ..
        } => {
            for a in assignments {
                if reads_column(&a.value) {
                    arithmetic(&mut a.value, out);
                } else {
                    literal(&mut a.value, out);
                }
            }
            if let Some(filter) = filter {
                condition(filter, out);
            }
        }
        StatementKind::Delete {
            filter: Some(filter), ..
        } => condition(filter, out),
        StatementKind::Spawn {
            at: None,
            items,
            source: None,
        } => {
            for arg in items.iter_mut().flat_map(|i| &mut i.args) {
                literal(&mut arg.value, out);
            }
        }
        StatementKind::Despawn { ids } => {
            for id in ids {
                literal(id, out);
            }
        }
        _ => {}
    }
}

fn literal<'s>(e: &'s mut Expr, out: &mut Vec<&'s mut Expr>) {
    if matches!(e.kind, ExprKind::Literal(_)) {
        out.push(e);
    }
}

/// The literals a WHERE condition compares a column's value with.
fn condition<'s>(e: &'s mut Expr, out: &mut Vec<&'s mut Expr>) {
    match &mut e.kind {
        ExprKind::Binary(lr, BinaryOp::And | BinaryOp::Or) => {
            let [l, r] = &mut **lr;
            condition(l, out);
            condition(r, out);
        }
        ExprKind::Unary(UnaryOp::Not, x) => condition(x, out),
        ExprKind::Binary(lr, op) if is_comparison(*op) => {
            let [l, r] = &mut **lr;
            let (left_reads, right_reads) = (reads_column(l), reads_column(r));
            for (side, reads, other_reads) in [(l, left_reads, right_reads), (r, right_reads, left_reads)] {
                if reads {
                    arithmetic(side, out);
                } else if other_reads {
                    literal(side, out);
                }
            }
        }
        ExprKind::Between { expr, low, high, .. } if reads_column(expr) => {
            literal(low, out);
            literal(high, out);
        }
        _ => {}
    }
}

/// How deep into arithmetic literals are looked for (which bounds the walk: each level
/// asks its operands whether they read a column).
const ARITHMETIC_DEPTH: usize = 8;

/// The literals of `e`, which reads a column, that are operands of `+`, `-` or `*` whose
/// other operand reads a column.
fn arithmetic<'s>(e: &'s mut Expr, out: &mut Vec<&'s mut Expr>) {
    arithmetic_within(e, out, ARITHMETIC_DEPTH);
}

fn arithmetic_within<'s>(e: &'s mut Expr, out: &mut Vec<&'s mut Expr>, depth: usize) {
    let Some(depth) = depth.checked_sub(1) else {
        return;
    };
    if let ExprKind::Binary(lr, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul) = &mut e.kind {
        let [l, r] = &mut **lr;
        let (left_reads, right_reads) = (reads_column(l), reads_column(r));
        for (side, reads, other_reads) in [(l, left_reads, right_reads), (r, right_reads, left_reads)] {
            if reads {
                arithmetic_within(side, out, depth);
            } else if other_reads {
                literal(side, out);
            }
        }
    }
}

fn is_comparison(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq
    )
}

/// Whether `e` reads a column of the row (outside any subquery).
fn reads_column(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Column(_) => true,
        ExprKind::Literal(_) | ExprKind::Param(_) => false,
        ExprKind::Subquery(_) | ExprKind::Exists { .. } | ExprKind::InSubquery { .. } => false,
        ExprKind::Unary(_, x) | ExprKind::Cast { expr: x, .. } | ExprKind::IsNull { expr: x, .. } => {
            reads_column(x)
        }
        ExprKind::Binary(lr, _) => reads_column(&lr[0]) || reads_column(&lr[1]),
        ExprKind::Function { args, .. } | ExprKind::Tuple(args) => args.iter().any(reads_column),
        ExprKind::Over { .. } => true,
        _ => false,
    }
}
