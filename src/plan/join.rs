//! Join planning: which conditions join which relations. Runs after binding, over the
//! bound FROM list and WHERE.
//!
//! The relations before the first `LEFT JOIN … ON` are joined by inner joins (a comma
//! join of entities is `JOIN … ON true`), which commute: their ON conditions and the WHERE
//! conditions that read only them form one pool. A condition on one relation filters that
//! relation while it is scanned; a condition on several is applied by the join step that
//! first has all of them, as a hash key when it is an equality whose two sides read
//! disjoint relations. The executor picks the order (`exec/query.rs`, `join_all`): it
//! knows each relation's size after its filter. Relations from the first LEFT JOIN on
//! follow in FROM order with their own ON, and the WHERE conditions that read them (or
//! read nothing) stay above the join.

use super::expr::{BoundExpr, BoundKind};
use super::{JoinKind, Relation};
use crate::storage::Value;
use crate::vector::CmpOp;

/// How the relations of a FROM list are joined.
#[derive(Debug, Default)]
pub struct JoinPlan {
    /// Relations `0..free` are inner-joined in an order chosen when the statement runs.
    pub free: usize,
    /// The conditions joining them, each reading at least two of them.
    pub conditions: Vec<JoinCondition>,
}

#[derive(Debug)]
pub struct JoinCondition {
    pub expr: BoundExpr,
    /// The relations the condition reads, sorted.
    pub relations: Vec<usize>,
    /// For `a = b` whose sides read disjoint relations: the relations of `a` and of `b`.
    pub equi: Option<(Vec<usize>, Vec<usize>)>,
}

impl JoinCondition {
    /// The two sides of an equality condition.
    pub fn sides(&self) -> Option<(&BoundExpr, &BoundExpr)> {
        match &self.expr.kind {
            BoundKind::Compare(CmpOp::Eq, l, r) if self.equi.is_some() => Some((l, r)),
            _ => None,
        }
    }
}

/// The relations `e` reads, sorted and without repeats.
pub fn relations_of(e: &BoundExpr, relation_of_slot: &impl Fn(usize) -> usize) -> Vec<usize> {
    let mut rels = Vec::new();
    e.visit_slots(&mut |s| rels.push(relation_of_slot(s)));
    rels.sort_unstable();
    rels.dedup();
    rels
}

/// Splits `e` into its AND-ed parts.
fn conjuncts(e: BoundExpr, out: &mut Vec<BoundExpr>) {
    match e.kind {
        BoundKind::And(l, r) => {
            conjuncts(*l, out);
            conjuncts(*r, out);
        }
        _ => out.push(e),
    }
}

/// Plans the joins of `relations`. `residual` holds the WHERE conditions not already
/// pushed into one relation's scan; those the join takes over are removed from it. Moves
/// the ON conditions of the freely ordered relations into the plan (or into the scan of
/// the one relation they read) and leaves the others' ON as it is.
pub fn plan_joins(
    relations: &mut [Relation],
    residual: &mut Vec<BoundExpr>,
    relation_of_slot: impl Fn(usize) -> usize,
) -> JoinPlan {
    let free = relations
        .iter()
        .position(|r| r.join == JoinKind::Left)
        .unwrap_or(relations.len());
    let mut pool = Vec::new();
    for r in relations.iter_mut().take(free) {
        if let Some(on) = r.on.take() {
            conjuncts(on, &mut pool);
        }
    }
    // A condition that may refuse a row (a division by a column, say) is checked above
    // the join, after every other: the rows it sees are then those that pass the rest,
    // whatever order the relations are joined in. Its relations' inner joins commute with
    // the LEFT JOINs after them, so moving it up changes no result.
    let (refusing, pool): (Vec<BoundExpr>, Vec<BoundExpr>) =
        pool.into_iter().partition(BoundExpr::may_refuse_rows);
    let mut pool = pool;
    let mut kept = Vec::new();
    let mut last = refusing;
    for e in std::mem::take(residual) {
        let rels = relations_of(&e, &relation_of_slot);
        if e.may_refuse_rows() {
            last.push(e);
        } else if rels.len() >= 2 && rels.iter().all(|&r| r < free) {
            pool.push(e);
        } else {
            kept.push(e);
        }
    }
    kept.extend(last);
    *residual = kept;
    let mut conditions = Vec::new();
    for e in pool {
        let rels = relations_of(&e, &relation_of_slot);
        match rels.as_slice() {
            // `ON true` and the like decide nothing per row.
            [] if matches!(e.kind, BoundKind::Const(Value::Bool(true))) => {}
            [] => residual.push(e),
            [r] => {
                let relation = &mut relations[*r];
                relation.filter = Some(match relation.filter.take() {
                    None => e,
                    Some(f) => {
                        let at = f.at;
                        BoundExpr::new(
                            BoundKind::And(Box::new(f), Box::new(e)),
                            super::DataType::Bool,
                            at,
                        )
                    }
                });
            }
            _ => {
                let equi = match &e.kind {
                    BoundKind::Compare(CmpOp::Eq, l, r) => {
                        let (a, b) = (
                            relations_of(l, &relation_of_slot),
                            relations_of(r, &relation_of_slot),
                        );
                        let disjoint = !a.is_empty() && !b.is_empty() && a.iter().all(|x| !b.contains(x));
                        disjoint.then_some((a, b))
                    }
                    _ => None,
                };
                conditions.push(JoinCondition {
                    expr: e,
                    relations: rels,
                    equi,
                });
            }
        }
    }
    JoinPlan { free, conditions }
}
