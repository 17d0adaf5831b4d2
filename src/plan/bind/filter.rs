//! WHERE: split into conjuncts; `has(C)` and `NOT has(C)` fold into the scan's required
//! and excluded components; conjuncts over one relation are pushed into its scan;
//! `id = …` becomes an id lookup; the rest are join conditions or the residual filter.

use super::scope::{Ctx, Scope};
use super::syntax::contains_aggregate;
use super::{Binder, Result};

use crate::index::Indexes;
use crate::parse as ast;
use crate::parse::{BinaryOp, ExprKind, Ident, UnaryOp};
use crate::plan::{BExpr, BKind, IdKey, PlanError, ScanColumn};
use crate::storage::Value;
use crate::vector::{CmpOp, DataType};

impl<'a> Binder<'a> {
    /// WHERE: `has()`/`NOT has()` conjuncts fold into the first entity's scan; conditions on
    /// one relation of a join move into that relation's scan; the rest stays.
    pub(super) fn filter(
        &self,
        filter: Option<&ast::Expr>,
        scope: &mut Scope,
    ) -> Result<(Option<BExpr>, Option<String>)> {
        let Some(filter) = filter else {
            let mut residual = Vec::new();
            self.plan_joins(scope, &mut residual);
            return Ok((and_all(residual), None));
        };
        if contains_aggregate(filter) {
            return Err(PlanError::invalid(
                filter.at,
                "aggregate functions are not allowed in WHERE (use HAVING)",
            ));
        }
        let mut rest = Vec::new();
        let mut texts = Vec::new();
        for c in conjuncts(filter) {
            if let (Some((component, negated)), Some(r)) = (as_has(c), scope.first_entity) {
                let id = self.component(component)?.id();
                if let Some(scan) = scope.scan_mut(r) {
                    let list = if negated {
                        &mut scan.excluded
                    } else {
                        &mut scan.required
                    };
                    if !list.contains(&id) {
                        list.push(id);
                    }
                    continue;
                }
            }
            texts.push(c.to_string());
            let b = self.expr(c, scope, &mut Ctx::Row("WHERE"))?;
            if let Some((slot, ids)) = id_lookup(&b) {
                let r = scope.relation_of_slot(slot);
                if !scope.nullable.contains(&r) {
                    if let Some(scan) = scope.scan_mut(r) {
                        if scan.ids.is_none() && scan.columns.contains(&(slot, ScanColumn::Id)) {
                            scan.ids = Some(ids);
                        }
                    }
                }
            }
            rest.push(self.expect_bool(b, "WHERE")?);
        }
        let text = if texts.is_empty() {
            None
        } else {
            Some(texts.join(" AND "))
        };
        self.choose_indexes(&rest, scope);
        if scope.relations.len() <= 1 {
            return Ok((and_all(rest), text));
        }
        let mut residual = Vec::new();
        let mut pushed: Vec<Vec<BExpr>> = (0..scope.relations.len()).map(|_| Vec::new()).collect();
        for e in rest {
            let mut rels = Vec::new();
            e.visit_slots(&mut |s| {
                let r = scope.relation_of_slot(s);
                if !rels.contains(&r) {
                    rels.push(r);
                }
            });
            match rels.as_slice() {
                // A condition that may refuse a row waits until the join has removed the
                // rows the other conditions remove (see BExpr::may_refuse_rows).
                [r] if !scope.nullable.contains(r) && !e.may_refuse_rows() => pushed[*r].push(e),
                _ => residual.push(e),
            }
        }
        for (r, exprs) in pushed.into_iter().enumerate() {
            scope.relations[r].filter = and_all(exprs);
        }
        self.plan_joins(scope, &mut residual);
        Ok((and_all(residual), text))
    }

    /// Hands the join conditions among `residual` (and the inner joins' ON) to the
    /// scope's join plan.
    pub(super) fn plan_joins(&self, scope: &mut Scope, residual: &mut Vec<BExpr>) {
        if scope.relations.len() > 1 {
            let slot_types = &scope.slot_types;
            scope.joins = crate::plan::join::plan_joins(&mut scope.relations, residual, |s| slot_types[s].0);
        }
    }

    /// Gives each entity scan not on the nullable side of a LEFT JOIN the index that
    /// best serves the conjuncts reading only it.
    pub(super) fn choose_indexes(&self, conjuncts: &[BExpr], scope: &mut Scope) {
        if Indexes::of(self.world).is_empty() {
            return;
        }
        for r in 0..scope.relations.len() {
            if scope.nullable.contains(&r) {
                continue;
            }
            let own: Vec<&BExpr> = conjuncts
                .iter()
                .filter(|e| {
                    let mut only = true;
                    e.visit_slots(&mut |s| only &= scope.relation_of_slot(s) == r);
                    only
                })
                .collect();
            if let Some(scan) = scope.scan_mut(r) {
                crate::plan::access::choose_index(self.world, scan, &own);
            }
        }
    }

    pub(super) fn expect_bool(&self, e: BExpr, clause: &str) -> Result<BExpr> {
        match e.ty {
            DataType::Bool => Ok(e),
            DataType::Null => self.cast(e, DataType::Bool),
            other => Err(PlanError::type_mismatch(
                e.at,
                format!("{clause} needs a BOOL condition, found {other}"),
            )),
        }
    }
}

/// `has(C)` → `Some((C, false))`, `NOT has(C)` → `Some((C, true))`.
pub(super) fn as_has(e: &ast::Expr) -> Option<(&Ident, bool)> {
    match &e.kind {
        ExprKind::Function {
            name,
            args,
            star: false,
            distinct: false,
        } if name.value.eq_ignore_ascii_case("has") => match args.as_slice() {
            [
                ast::Expr {
                    kind: ExprKind::Column(parts),
                    ..
                },
            ] if parts.len() == 1 => Some((&parts[0], false)),
            _ => None,
        },
        ExprKind::Unary(UnaryOp::Not, inner) => as_has(inner).map(|(c, neg)| (c, !neg)),
        _ => None,
    }
}

pub(super) fn conjuncts(e: &ast::Expr) -> Vec<&ast::Expr> {
    match &e.kind {
        ExprKind::Binary(a, BinaryOp::And, b) => {
            let mut v = conjuncts(a);
            v.extend(conjuncts(b));
            v
        }
        _ => vec![e],
    }
}

/// `slot = e`, `e = slot` or `slot IN (e, …)` with constant or parameter entity ids: the
/// slot and the ids. NULLs match nothing and are left out.
pub(super) fn id_lookup(e: &BExpr) -> Option<(usize, Vec<IdKey>)> {
    let (slot, values): (usize, Vec<&BExpr>) = match &e.kind {
        BKind::Compare(CmpOp::Eq, l, r) => match (&l.kind, &r.kind) {
            (BKind::Slot(s), _) => (*s, vec![&**r]),
            (_, BKind::Slot(s)) => (*s, vec![&**l]),
            _ => return None,
        },
        BKind::InList {
            expr,
            list,
            negated: false,
        } => match expr.kind {
            BKind::Slot(s) => (s, list.iter().collect()),
            _ => return None,
        },
        _ => return None,
    };
    let mut ids = Vec::with_capacity(values.len());
    for v in values {
        match &v.kind {
            BKind::Const(Value::Entity(e)) => ids.push(IdKey::Entity(*e)),
            // An integer parameter compared with ids names the id of its value.
            BKind::Param {
                param,
                value: Value::Entity(_) | Value::Int(_),
            } => ids.push(IdKey::Param(param.clone())),
            // A non-positive integer names no id, and NULL matches nothing.
            BKind::Const(Value::Null | Value::Int(_))
            | BKind::Param {
                value: Value::Null, ..
            } => {}
            _ => return None,
        }
    }
    Some((slot, ids))
}

pub(super) fn and_all(mut exprs: Vec<BExpr>) -> Option<BExpr> {
    let first = if exprs.is_empty() {
        return None;
    } else {
        exprs.remove(0)
    };
    Some(exprs.into_iter().fold(first, |acc, e| {
        let at = acc.at;
        BExpr::new(BKind::And(Box::new(acc), Box::new(e)), DataType::Bool, at)
    }))
}
