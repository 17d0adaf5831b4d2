//! Normal forms of bound expressions, for matching a query's conditions to a function
//! index's expressions: two expressions with one normal form compute the same value for
//! every row, and fail on the same rows.
//!
//! Invariants:
//! - A form names each column through the caller (`Columns`), so an index's expression
//!   (bound over its component) and a query's (bound over its FROM list) meet on the
//!   field they read, not on the slots either was given.
//! - Every node carries its result type, and a constant its type and bits: `x + 1` over
//!   an INT and over a REAL differ, `x + 0.0` and `x + -0.0` differ (they do for x = -0.0).
//! - Operand order is forgotten only where it changes nothing: `+` and `*` (exact or
//!   IEEE, either way commutative), `=`, `<>`, IS [NOT] DISTINCT FROM, and AND and OR
//!   when no operand can fail (otherwise which operand is evaluated first decides which
//!   rows fail). `a > b` is written `b < a`, `a >= b` as `b <= a`.
//! - A constant cast is written as the value it casts to, so a literal the binder cast
//!   and one it folded meet.
//! - A parameter has the form of the value it was bound with only when the caller says
//!   so (`params`), which then records that it read one: a plan that matched an index
//!   through a parameter's value holds for that value alone (plan caching turns the
//!   literals of a repeated text into parameters).
//! - An expression with no normal form (an outer value, a subquery, a volatile or
//!   clock-reading call, a parameter when not asked) has none: `None`.
use std::cell::Cell;

use std::fmt::Write as _;
use std::ops::Bound;

use super::expr::{ArithOp, BoundExpr, BoundKind};
use crate::storage::{Value, value_order};
use crate::vector::CmpOp;

/// What a slot of the expression reads, as text (`None`: nothing a form may name).
pub type Columns<'c> = dyn Fn(usize) -> Option<String> + 'c;

/// A scan column as a normal form names it: the same for every binding that reads it.
pub fn column_name(c: super::ScanColumn) -> String {
    format!("{c:?}")
}

/// `e`'s normal form. With `params`, a parameter's form is its bound value, and
/// `params` is set when one is read.
pub fn normal_form(e: &BoundExpr, columns: &Columns<'_>, params: Option<&Cell<bool>>) -> Option<String> {
    let mut out = String::new();
    write_form(e, columns, params, &mut out)?;
    Some(out)
}

fn forms(es: &[&BoundExpr], columns: &Columns<'_>, params: Option<&Cell<bool>>) -> Option<Vec<String>> {
    es.iter().map(|e| normal_form(e, columns, params)).collect()
}

#[recursive::recursive]
fn write_form(
    e: &BoundExpr,
    columns: &Columns<'_>,
    params: Option<&Cell<bool>>,
    out: &mut String,
) -> Option<()> {
    let ty = e.ty;
    let node = |out: &mut String, name: &str, parts: &[String]| {
        let _ = write!(out, "({name}:{ty}");
        for p in parts {
            out.push(' ');
            out.push_str(p);
        }
        out.push(')');
    };
    match &e.kind {
        BoundKind::Const(v) => {
            let _ = write!(out, "{v:?}");
        }
        BoundKind::Slot(s) => out.push_str(&columns(*s)?),
        BoundKind::Param { .. } | BoundKind::Cast(..) if constant(e, params).is_some() => {
            let _ = write!(out, "{:?}", constant(e, params)?);
        }
        BoundKind::Param { .. }
        | BoundKind::Outer(_)
        | BoundKind::Subquery { .. }
        | BoundKind::Exists { .. }
        | BoundKind::InSubquery { .. } => return None,
        BoundKind::Neg(x) => node(out, "neg", &forms(&[x], columns, params)?),
        BoundKind::Not(x) => node(out, "not", &forms(&[x], columns, params)?),
        BoundKind::Arith(op, l, r) => {
            let mut parts = forms(&[l, r], columns, params)?;
            if matches!(op, ArithOp::Add | ArithOp::Mul) {
                parts.sort();
            }
            node(out, &format!("{op:?}"), &parts);
        }
        BoundKind::Compare(op, l, r) => {
            let (op, l, r) = match op {
                CmpOp::Gt => (CmpOp::Lt, r, l),
                CmpOp::GtEq => (CmpOp::LtEq, r, l),
                _ => (*op, l, r),
            };
            let mut parts = forms(&[l, r], columns, params)?;
            if matches!(op, CmpOp::Eq | CmpOp::NotEq) {
                parts.sort();
            }
            node(out, &format!("{op:?}"), &parts);
        }
        BoundKind::IsDistinct(l, r, negated) => {
            let mut parts = forms(&[l, r], columns, params)?;
            parts.sort();
            node(out, if *negated { "same" } else { "distinct" }, &parts);
        }
        BoundKind::And(..) | BoundKind::Or(..) => {
            let and = matches!(e.kind, BoundKind::And(..));
            let mut operands = Vec::new();
            chain(e, and, &mut operands);
            let mut parts = forms(&operands, columns, params)?;
            if operands.iter().all(|x| x.cannot_fail()) {
                parts.sort();
            }
            node(out, if and { "and" } else { "or" }, &parts);
        }
        BoundKind::Concat(l, r) => node(out, "||", &forms(&[l, r], columns, params)?),
        BoundKind::IsNull { expr, negated } => node(
            out,
            if *negated { "notnull" } else { "null" },
            &forms(&[expr], columns, params)?,
        ),
        BoundKind::InList { expr, list, negated } => {
            let mut items: Vec<&BoundExpr> = vec![expr];
            items.extend(list);
            node(
                out,
                if *negated { "notin" } else { "in" },
                &forms(&items, columns, params)?,
            );
        }
        BoundKind::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
            escape,
        } => {
            let name = format!("like{negated}{case_insensitive}{escape:?}");
            node(out, &name, &forms(&[expr, pattern], columns, params)?);
        }
        BoundKind::Case { branches, otherwise } => {
            let mut items: Vec<&BoundExpr> = Vec::new();
            for (w, t) in branches {
                items.push(w);
                items.push(t);
            }
            let mut parts = forms(&items, columns, params)?;
            match otherwise {
                Some(x) => parts.push(normal_form(x, columns, params)?),
                None => parts.push("-".to_owned()),
            }
            node(out, "case", &parts);
        }
        // A cast into a field checks the field's range and names it in its error.
        BoundKind::Cast(x, field) => {
            let name = match field {
                Some(f) => format!("cast {f}"),
                None => "cast".to_owned(),
            };
            node(out, &name, &forms(&[x], columns, params)?);
        }
        BoundKind::Call(f, args) => {
            let p = f.properties();
            if p.volatile || p.clock {
                return None;
            }
            let args: Vec<&BoundExpr> = args.iter().collect();
            node(out, &format!("fn {}", f.name()), &forms(&args, columns, params)?);
        }
    }
    Some(())
}

/// The values a condition allows one expression, when it compares the expression with
/// constants: `e < 10`, `10 > e`, `e = 3`, `e IN (1, 5)` (as 1 to 5): the expression's
/// normal form and the two bounds. `None` for any other condition, and for a constant
/// that is NULL or NaN (which no value compares with). With `params`, a parameter is its
/// bound value (noted there).
pub fn constant_range(
    atom: &BoundExpr,
    columns: &Columns<'_>,
    params: Option<&Cell<bool>>,
) -> Option<(String, Bound<Value>, Bound<Value>)> {
    let (e, lo, hi) = match &atom.kind {
        BoundKind::Compare(op, l, r) => {
            let (e, op, v) = match (constant(r, params), constant(l, params)) {
                (Some(v), _) => (l, *op, v),
                (None, Some(v)) => (r, op.flipped(), v),
                (None, None) => return None,
            };
            match op {
                CmpOp::Eq => (e, Bound::Included(v.clone()), Bound::Included(v)),
                CmpOp::Lt => (e, Bound::Unbounded, Bound::Excluded(v)),
                CmpOp::LtEq => (e, Bound::Unbounded, Bound::Included(v)),
                CmpOp::Gt => (e, Bound::Excluded(v), Bound::Unbounded),
                CmpOp::GtEq => (e, Bound::Included(v), Bound::Unbounded),
                CmpOp::NotEq => return None,
            }
        }
        BoundKind::InList {
            expr,
            list,
            negated: false,
        } if !list.is_empty() => {
            let mut values = list
                .iter()
                .map(|x| constant(x, params))
                .collect::<Option<Vec<_>>>()?;
            values.sort_by(value_order);
            let lo = values.first()?.clone();
            let hi = values.last()?.clone();
            (expr, Bound::Included(lo), Bound::Included(hi))
        }
        _ => return None,
    };
    Some((normal_form(e, columns, params)?, lo, hi))
}

/// Whether every value between `inner`'s bounds lies between `outer`'s: the values of one
/// type, compared as SQL does.
pub fn within(inner: (&Bound<Value>, &Bound<Value>), outer: (&Bound<Value>, &Bound<Value>)) -> bool {
    use std::cmp::Ordering::{Greater, Less};
    let same_type = |a: &Value, b: &Value| a.field_type() == b.field_type();
    let lo = match (inner.0, outer.0) {
        (_, Bound::Unbounded) => true,
        (Bound::Unbounded, _) => false,
        (Bound::Included(i) | Bound::Excluded(i), Bound::Included(o)) if same_type(i, o) => {
            value_order(i, o) != Less
        }
        (Bound::Included(i), Bound::Excluded(o)) if same_type(i, o) => value_order(i, o) == Greater,
        (Bound::Excluded(i), Bound::Excluded(o)) if same_type(i, o) => value_order(i, o) != Less,
        _ => false,
    };
    let hi = match (inner.1, outer.1) {
        (_, Bound::Unbounded) => true,
        (Bound::Unbounded, _) => false,
        (Bound::Included(i) | Bound::Excluded(i), Bound::Included(o)) if same_type(i, o) => {
            value_order(i, o) != Greater
        }
        (Bound::Included(i), Bound::Excluded(o)) if same_type(i, o) => value_order(i, o) == Less,
        (Bound::Excluded(i), Bound::Excluded(o)) if same_type(i, o) => value_order(i, o) != Greater,
        _ => false,
    };
    lo && hi
}

/// A constant operand (a cast of one, cast; with `params`, a parameter's bound value,
/// noted there), unless NULL or NaN.
fn constant(e: &BoundExpr, params: Option<&Cell<bool>>) -> Option<Value> {
    let leaf = |x: &BoundExpr| match (&x.kind, params) {
        (BoundKind::Const(v), _) => Some(v.clone()),
        (BoundKind::Param { value, .. }, Some(read)) => {
            read.set(true);
            Some(value.clone())
        }
        _ => None,
    };
    let v = match &e.kind {
        BoundKind::Cast(x, None) => super::cast_value(&leaf(x)?, e.ty).ok()?,
        _ => leaf(e)?,
    };
    match v {
        Value::Null => None,
        Value::Float(x) if x.is_nan() => None,
        Value::Real(x) if x.is_nan() => None,
        v => Some(v),
    }
}

/// The operands of a chain of ANDs (`and`) or ORs, flattened.
fn chain<'e>(e: &'e BoundExpr, and: bool, out: &mut Vec<&'e BoundExpr>) {
    match &e.kind {
        BoundKind::And(l, r) if and => {
            chain(l, and, out);
            chain(r, and, out);
        }
        BoundKind::Or(l, r) if !and => {
            chain(l, and, out);
            chain(r, and, out);
        }
        _ => out.push(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::location::Location;
    use crate::storage::Value;
    use crate::vector::DataType;

    fn slot(s: usize, ty: DataType) -> BoundExpr {
        BoundExpr::new(BoundKind::Slot(s), ty, Location::default())
    }

    fn arith(op: ArithOp, l: BoundExpr, r: BoundExpr) -> BoundExpr {
        let ty = l.ty;
        BoundExpr::new(
            BoundKind::Arith(op, Box::new(l), Box::new(r)),
            ty,
            Location::default(),
        )
    }

    fn compare(op: CmpOp, l: BoundExpr, r: BoundExpr) -> BoundExpr {
        BoundExpr::new(
            BoundKind::Compare(op, Box::new(l), Box::new(r)),
            DataType::Bool,
            Location::default(),
        )
    }

    fn constant(v: Value, ty: DataType) -> BoundExpr {
        BoundExpr::new(BoundKind::Const(v), ty, Location::default())
    }

    #[test]
    fn commuted_operands_share_a_form_and_other_shapes_do_not() {
        // Slots 0 and 1 read x and y; slot 7 reads x too (another binding of it).
        let columns = |s: usize| match s {
            0 | 7 => Some("x".to_owned()),
            1 => Some("y".to_owned()),
            _ => None,
        };
        let form = |e: &BoundExpr| normal_form(e, &columns, None);
        let int = DataType::Int;
        let x_plus_y = arith(ArithOp::Add, slot(0, int), slot(1, int));
        let y_plus_x = arith(ArithOp::Add, slot(1, int), slot(7, int));
        assert_eq!(form(&x_plus_y), form(&y_plus_x));
        let x_minus_y = arith(ArithOp::Sub, slot(0, int), slot(1, int));
        let y_minus_x = arith(ArithOp::Sub, slot(1, int), slot(0, int));
        assert_ne!(form(&x_minus_y), form(&y_minus_x));
        let gt = compare(CmpOp::Gt, slot(0, int), constant(Value::Int(5), int));
        let lt = compare(CmpOp::Lt, constant(Value::Int(5), int), slot(7, int));
        assert_eq!(form(&gt), form(&lt));
        let real = DataType::Real;
        let zero = arith(ArithOp::Add, slot(0, real), constant(Value::Real(0.0), real));
        let minus_zero = arith(ArithOp::Add, slot(0, real), constant(Value::Real(-0.0), real));
        assert_ne!(form(&zero), form(&minus_zero));
        assert_eq!(
            form(&slot(9, int)),
            None,
            "a slot the caller cannot name has no form"
        );
    }
}
