//! Which of a scan's conditions a function index serves: a condition whose expression has
//! the normal form of one of the index's (`plan/normal.rs`), compared with a constant, a
//! parameter or an outer value of the expression's own type. A partial index serves only
//! a scan whose conditions imply its WHERE, conjunct by conjunct: the same conjunct, or a
//! comparison of the same expression with constants allowing only values its WHERE allows.
//!
//! The search: equality on the first expressions, then a range on the next (`IN` for a
//! one-expression index); or, for a partial index with no such condition, every entity it
//! holds. As with every index, the scan still checks the whole WHERE on each candidate.
//!
//! A parameter inside a condition's expression (`hp * ?1`, as plan caching lifts `hp *
//! 2`) or bounding it (`hp < ?1` against a partial index's `hp < 10`) is read by its
//! bound value; when that decided a match, `value_used` is set and the plan holds for
//! these values alone.

use std::cell::Cell;
use std::cmp::Ordering;
use std::ops::Bound;

use super::expr::{BoundExpr, BoundKind};
use super::normal::{column_name, constant_range, normal_form, within};
use super::probe::{IndexLookup, ProbePlan, ProbeValue, probe_value};
use super::{DataType, EntityScan};
use crate::index::{Definition, Index, IndexKind};
use crate::storage::{FieldType, Value, value_order};
use crate::vector::CmpOp;

/// How `index` (a function index) serves the conditions `parts` of `scan`, ranked as
/// `access::serve` ranks (lower is narrower), or why it does not.
pub(super) fn serve_function(
    index: &Index,
    scan: &EntityScan,
    parts: &[&BoundExpr],
    value_used: &Cell<bool>,
) -> Result<(u8, IndexLookup), String> {
    let Some(def) = index.definition() else {
        return Err("it is not a function index".to_owned());
    };
    let columns = |s: usize| {
        scan.columns
            .iter()
            .find_map(|&(slot, c)| (slot == s).then(|| column_name(c)))
    };
    if let Some(why) = not_implied(def, parts, &columns, value_used) {
        return Err(why);
    }
    let lookup = |probe: ProbePlan, serves: String| IndexLookup {
        index: index.name().to_owned(),
        kind: IndexKind::Function,
        probe,
        serves,
    };
    // Each part as `expression op value`, the expression one of the index's (by position).
    let mut compared: Vec<(usize, CmpOp, ProbeValue)> = Vec::new();
    let mut listed: Option<Vec<ProbeValue>> = None;
    for e in parts {
        match &e.kind {
            BoundKind::Compare(op, l, r) if *op != CmpOp::NotEq => {
                let found = [(l, r, *op), (r, l, op.flipped())]
                    .into_iter()
                    .find_map(|(x, v, op)| {
                        let (i, v) = operand_for(def, x, v, &columns, value_used)?;
                        Some((i, op, v))
                    });
                compared.extend(found);
            }
            BoundKind::InList {
                expr,
                list,
                negated: false,
            } if def.shapes.len() == 1 && listed.is_none() => {
                let read = Cell::new(false);
                if position(def, expr, &columns, &read) == Some(0) {
                    listed = list.iter().map(|x| operand(def, 0, x)).collect();
                    if listed.is_some() && read.get() {
                        value_used.set(true);
                    }
                }
            }
            _ => {}
        }
        // A BOOL expression of the index used as a condition is `= TRUE`, under NOT
        // `= FALSE` (NULL passes neither).
        let (x, truth) = match &e.kind {
            BoundKind::Not(x) => (&**x, false),
            _ => (*e, true),
        };
        let read = Cell::new(false);
        if let Some(i) = position(def, x, &columns, &read)
            && def.types.get(i) == Some(&FieldType::Bool)
        {
            compared.push((i, CmpOp::Eq, ProbeValue::Const(Value::Bool(truth))));
            if read.get() {
                value_used.set(true);
            }
        }
    }
    let mut equal = Vec::new();
    let mut texts = Vec::new();
    for i in 0..def.exprs.len() {
        let Some(v) = compared
            .iter()
            .find_map(|(j, op, v)| (*j == i && *op == CmpOp::Eq).then_some(v))
        else {
            break;
        };
        texts.push(format!("{} = {v}", self::written(def, i)));
        equal.push(v.clone());
    }
    let n = def.exprs.len();
    if equal.len() == n {
        // TRUE or FALSE alone splits the rows in two: ranked below a range.
        let rank = match def.types.iter().all(|t| *t == FieldType::Bool) {
            true => 5,
            false => 0,
        };
        let probe = ProbePlan::Tuple {
            equal,
            lo: Bound::Unbounded,
            hi: Bound::Unbounded,
        };
        return Ok((rank, lookup(probe, texts.join(" AND "))));
    }
    if equal.is_empty()
        && let Some(values) = listed
    {
        let list: Vec<String> = values.iter().map(ToString::to_string).collect();
        let text = format!("{} IN ({})", written(def, 0), list.join(", "));
        return Ok((1, lookup(ProbePlan::Equal(values), text)));
    }
    let next = equal.len();
    // Of several bounds on one side, the narrowest when constants tell (`hp < 10 AND hp <
    // 1`), else the first.
    let (mut lo, mut hi) = (Bound::Unbounded, Bound::Unbounded);
    for (i, op, v) in &compared {
        if *i != next {
            continue;
        }
        match op {
            CmpOp::Gt => narrow(&mut lo, Bound::Excluded(v.clone()), Ordering::Greater),
            CmpOp::GtEq => narrow(&mut lo, Bound::Included(v.clone()), Ordering::Greater),
            CmpOp::Lt => narrow(&mut hi, Bound::Excluded(v.clone()), Ordering::Less),
            CmpOp::LtEq => narrow(&mut hi, Bound::Included(v.clone()), Ordering::Less),
            _ => {}
        }
    }
    for (bound, (open, closed)) in [(&lo, (">", ">=")), (&hi, ("<", "<="))] {
        match bound {
            Bound::Excluded(v) => texts.push(format!("{} {open} {v}", written(def, next))),
            Bound::Included(v) => texts.push(format!("{} {closed} {v}", written(def, next))),
            Bound::Unbounded => {}
        }
    }
    if !texts.is_empty() {
        return Ok((4, lookup(ProbePlan::Tuple { equal, lo, hi }, texts.join(" AND "))));
    }
    if let Some(p) = &def.predicate {
        let probe = ProbePlan::Tuple {
            equal,
            lo: Bound::Unbounded,
            hi: Bound::Unbounded,
        };
        return Ok((6, lookup(probe, format!("{p} (every entity the index holds)"))));
    }
    let types: Vec<String> = def.types.iter().map(ToString::to_string).collect();
    Err(format!(
        "no condition {} = value{} with constants or parameters of its type ({})",
        written(def, 0),
        if n == 1 {
            ", IN (…), <, <=, >, >= or BETWEEN"
        } else {
            " (the first expressions equal to values, the next compared by <, <=, >, >= or BETWEEN)"
        },
        types.join(", ")
    ))
}

/// Expression `i` of `def` as EXPLAIN writes it in a condition: in parentheses when BOOL
/// (`(hp % 3 = 0) = TRUE`).
fn written(def: &Definition, i: usize) -> String {
    let text = def.exprs.get(i).map_or("?", String::as_str);
    match def.types.get(i) {
        Some(FieldType::Bool) => format!("({text})"),
        _ => text.to_owned(),
    }
}

/// Makes `bound` the narrower of itself and `new`: the one whose constant lies further
/// towards `inward` (Greater for a lower bound), an excluded one at a tie. A bound that is
/// not a constant of the same type as the other stays as it is (the first one written).
fn narrow(bound: &mut Bound<ProbeValue>, new: Bound<ProbeValue>, inward: Ordering) {
    let value = |b: &Bound<ProbeValue>| match b {
        Bound::Included(ProbeValue::Const(v)) | Bound::Excluded(ProbeValue::Const(v)) => Some(v.clone()),
        _ => None,
    };
    let replace = match (&*bound, value(bound), value(&new)) {
        (Bound::Unbounded, _, _) => true,
        (_, Some(old), Some(v)) if old.field_type() == v.field_type() => match value_order(&v, &old) {
            Ordering::Equal => matches!(new, Bound::Excluded(_)),
            o => o == inward,
        },
        _ => false,
    };
    if replace {
        *bound = new;
    }
}

/// Which of `def`'s expressions `e` computes (a parameter read by its value, noted in
/// `read`).
fn position(
    def: &Definition,
    e: &BoundExpr,
    columns: &dyn Fn(usize) -> Option<String>,
    read: &Cell<bool>,
) -> Option<usize> {
    let form = normal_form(e, columns, Some(read))?;
    def.shapes.iter().position(|s| *s == form)
}

/// When `x` is one of `def`'s expressions and `v` a search value for it: which one, and
/// the value (`value_used` set when a parameter's value made `x` match).
fn operand_for(
    def: &Definition,
    x: &BoundExpr,
    v: &BoundExpr,
    columns: &dyn Fn(usize) -> Option<String>,
    value_used: &Cell<bool>,
) -> Option<(usize, ProbeValue)> {
    let read = Cell::new(false);
    let i = position(def, x, columns, &read)?;
    let v = operand(def, i, v)?;
    if read.get() {
        value_used.set(true);
    }
    Some((i, v))
}

/// `v` as a search value for expression `i`: a constant, parameter or outer value of its
/// type.
fn operand(def: &Definition, i: usize, v: &BoundExpr) -> Option<ProbeValue> {
    let ty = DataType::from(*def.types.get(i)?);
    (v.ty == ty).then(|| probe_value(v)).flatten()
}

/// Why `parts` do not imply `def`'s WHERE (`None`: they do, or there is none;
/// `value_used` set when a parameter's value decided it).
fn not_implied(
    def: &Definition,
    parts: &[&BoundExpr],
    columns: &dyn Fn(usize) -> Option<String>,
    value_used: &Cell<bool>,
) -> Option<String> {
    let predicate = def.predicate.as_ref()?;
    // Each part's form and range, and whether a parameter's value went into them.
    let read: Vec<Cell<bool>> = parts.iter().map(|_| Cell::new(false)).collect();
    let forms: Vec<Option<String>> = parts
        .iter()
        .zip(&read)
        .map(|(e, r)| normal_form(e, columns, Some(r)))
        .collect();
    let ranges: Vec<_> = parts
        .iter()
        .zip(&read)
        .map(|(e, r)| constant_range(e, columns, Some(r)))
        .collect();
    let mut used = false;
    for c in &def.conditions {
        let same = forms.iter().position(|f| f.as_deref() == Some(c.shape.as_str()));
        let inside = c.range.as_ref().and_then(|(shape, lo, hi)| {
            ranges.iter().position(|r| {
                r.as_ref()
                    .is_some_and(|(s, l, h)| s == shape && within((l, h), (lo, hi)))
            })
        });
        match same.or(inside) {
            Some(i) => used |= read[i].get(),
            None => {
                return Some(format!(
                    "its WHERE {predicate} is not implied by the conditions on this scan (each of its conditions must be among them, or a comparison of the same expression with constants of its type that allows only values it allows)"
                ));
            }
        }
    }
    if used {
        value_used.set(true);
    }
    None
}
