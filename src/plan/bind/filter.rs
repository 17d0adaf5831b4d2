//! WHERE: split into conjuncts; `has(C)` and `NOT has(C)` fold into the scan's required
//! and excluded components; conjuncts over one relation are pushed into its scan;
//! `id = …` becomes an id lookup; the rest are join conditions or the residual filter.

use smallvec::SmallVec;

use super::scope::{Ctx, Scope};
use super::syntax::contains_aggregate;
use super::{Binder, Result};

use crate::parse as ast;
use crate::parse::{BinaryOp, ExprKind, Ident, UnaryOp};
use crate::plan::{BoundExpr, BoundKind, PlanError, join};
use crate::vector::DataType;

impl<'a> Binder<'a> {
    /// WHERE: `has()`/`NOT has()` conjuncts fold into the first entity's scan; conditions on
    /// one relation of a join move into that relation's scan; the rest stays.
    pub(super) fn filter(
        &self,
        filter: Option<&ast::Expr>,
        scope: &mut Scope,
    ) -> Result<(Option<BoundExpr>, Option<String>)> {
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
        // Most filters are one condition, kept inline.
        let mut rest: SmallVec<[BoundExpr; 1]> = SmallVec::new();
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
            if self.explaining {
                texts.push(c.to_string());
            }
            let b = self.expr(c, scope, &mut Ctx::Row("WHERE"))?;
            rest.push(self.expect_bool(b, "WHERE")?);
        }
        let text = if texts.is_empty() {
            None
        } else {
            Some(texts.join(" AND "))
        };
        if scope.relations.len() <= 1 {
            return Ok((and_all(rest), text));
        }
        let mut residual = Vec::new();
        let mut pushed: Vec<Vec<BoundExpr>> = (0..scope.relations.len()).map(|_| Vec::new()).collect();
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
                // rows the other conditions remove (see BoundExpr::may_refuse_rows).
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
    pub(super) fn plan_joins(&self, scope: &mut Scope, residual: &mut Vec<BoundExpr>) {
        if scope.relations.len() > 1 {
            let slot_types = &scope.slot_types;
            scope.joins = join::plan_joins(&mut scope.relations, residual, |s| slot_types[s].0);
        }
    }

    pub(super) fn expect_bool(&self, e: BoundExpr, clause: &str) -> Result<BoundExpr> {
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

/// For EXPLAIN (`SelectText::conditions`): each AND-ed part of the ON conditions of
/// `from` and of `filter`, as written, with where it starts.
pub(super) fn condition_texts(
    from: &[ast::FromItem],
    filter: Option<&ast::Expr>,
) -> Vec<(crate::location::Location, String)> {
    from.iter()
        .flat_map(|item| item.joins.iter().filter_map(|j| j.on.as_ref()))
        .chain(filter)
        .flat_map(conjuncts)
        .map(|e| (e.at, e.to_string()))
        .collect()
}

pub(super) fn conjuncts(e: &ast::Expr) -> SmallVec<[&ast::Expr; 4]> {
    match &e.kind {
        ExprKind::Binary(ab, BinaryOp::And) => {
            let mut v = conjuncts(&ab[0]);
            v.extend(conjuncts(&ab[1]));
            v
        }
        _ => smallvec::smallvec![e],
    }
}

/// `exprs` joined by AND, left to right; `None` for none.
pub(super) fn and_all(exprs: impl IntoIterator<Item = BoundExpr>) -> Option<BoundExpr> {
    let mut exprs = exprs.into_iter();
    let first = exprs.next()?;
    Some(exprs.fold(first, |acc, e| {
        let at = acc.at;
        BoundExpr::new(BoundKind::And(Box::new(acc), Box::new(e)), DataType::Bool, at)
    }))
}
