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

use super::DataType;
use super::expr::{ArithOp, BoundExpr, BoundKind};
use super::{JoinKind, Relation, RelationSource, ScanColumn};
use crate::func::DISTANCE;
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
    /// For such an equality with a side that is the bare id of an entity relation (`n.id
    /// = c.parent`; both sides in `s.id = n.id`): those relations, each of which, joined
    /// after the other side, is read through the entity index, only the entities the
    /// other side names.
    pub by_id: Vec<usize>,
    /// For `distance(p, q) < r` where a spatial index keeps `p` for one relation's
    /// entities: how the index finds that relation's rows near each row of the others
    /// (chosen by the access pass, `index_join.rs`).
    pub spatial: Option<SpatialJoin>,
}

/// A join condition `distance(p, q) < r` (or `<=`; either side) whose point `p` is the
/// point a spatial index keeps for the entities of `relation`: joined to rows of the other
/// relations, `relation`'s rows are the index's entities within `r` of each row's `q`,
/// instead of every pair. The condition itself is still checked on every pair, once every
/// relation it reads is joined; the search only has to find a superset.
#[derive(Debug)]
pub struct SpatialJoin {
    /// The relation whose entities the index keeps.
    pub relation: usize,
    /// The spatial index's name.
    pub index: String,
    /// The slot holding `relation`'s ids.
    pub id_slot: usize,
    /// Whether `q` is the first point of the `distance` call (else the second).
    pub center_first: bool,
    /// The relations `q` reads (never `relation`).
    pub center_relations: Vec<usize>,
    /// The relations each of `r`'s added terms reads (`SpatialJoin::parts`). A term the
    /// searching side cannot compute per row (one that reads `relation`, or a relation
    /// not joined yet) reads one relation, and its largest value there bounds it.
    pub reach_relations: Vec<Vec<usize>>,
}

impl SpatialJoin {
    /// `q` and the added terms of `r` in `condition` (the condition this was chosen for).
    pub fn parts<'c>(&self, condition: &'c BoundExpr) -> Option<(&'c [BoundExpr], Vec<&'c BoundExpr>)> {
        let (p, q, radius) = distance_below(condition)?;
        let mut terms = Vec::new();
        added_terms(radius, &mut terms);
        Some((if self.center_first { p } else { q }, terms))
    }
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
                let mut by_id = Vec::new();
                let equi = match &e.kind {
                    BoundKind::Compare(CmpOp::Eq, l, r) => {
                        let (a, b) = (
                            relations_of(l, &relation_of_slot),
                            relations_of(r, &relation_of_slot),
                        );
                        let disjoint = !a.is_empty() && !b.is_empty() && a.iter().all(|x| !b.contains(x));
                        let id_of = |side: &BoundExpr| {
                            let BoundKind::Slot(s) = side.kind else {
                                return None;
                            };
                            let r = relation_of_slot(s);
                            match &relations.get(r)?.source {
                                RelationSource::Entities(scan)
                                    if scan.columns.contains(&(s, ScanColumn::Id)) =>
                                {
                                    Some(r)
                                }
                                _ => None,
                            }
                        };
                        if disjoint {
                            by_id = [id_of(l), id_of(r)].into_iter().flatten().collect();
                        }
                        disjoint.then_some((a, b))
                    }
                    _ => None,
                };
                conditions.push(JoinCondition {
                    expr: e,
                    relations: rels,
                    equi,
                    by_id,
                    spatial: None,
                });
            }
        }
    }
    JoinPlan { free, conditions }
}

/// The relation that fills each slot of `select`.
pub fn slot_owners(select: &super::SelectPlan) -> smallvec::SmallVec<[Option<usize>; 16]> {
    let mut owner = smallvec::smallvec![None; select.width];
    let mut own = |slot: usize, r: usize| {
        if let Some(o) = owner.get_mut(slot) {
            *o = Some(r);
        }
    };
    for (r, relation) in select.relations.iter().enumerate() {
        match &relation.source {
            RelationSource::Entities(scan) => scan.columns.iter().for_each(|&(slot, _)| own(slot, r)),
            RelationSource::Series { slot, .. } | RelationSource::Removed { slot, .. } => own(*slot, r),
            RelationSource::Traversal(w) => {
                own(w.id_slot, r);
                own(w.depth_slot, r);
            }
            RelationSource::Query { slots, .. }
            | RelationSource::WorkTable { slots, .. }
            | RelationSource::Catalog { slots, .. } => slots.iter().for_each(|&slot| own(slot, r)),
            RelationSource::Events(e) => e.columns.iter().for_each(|&(slot, _)| own(slot, r)),
        }
    }
    owner
}

/// `distance(p, q) < r` or `<=` (or `r > distance(p, q)`, `>=`): the two points, axis by
/// axis, and `r`.
pub fn distance_below(e: &BoundExpr) -> Option<(&[BoundExpr], &[BoundExpr], &BoundExpr)> {
    let BoundKind::Compare(op, l, r) = &e.kind else {
        return None;
    };
    let distance = |e: &BoundExpr| matches!(&e.kind, BoundKind::Call(f, _) if *f == DISTANCE);
    let (call, radius) = match op {
        CmpOp::Lt | CmpOp::LtEq if distance(l) => (l, r),
        CmpOp::Gt | CmpOp::GtEq if distance(r) => (r, l),
        _ => return None,
    };
    let BoundKind::Call(_, args) = &call.kind else {
        return None;
    };
    if args.len() % 2 != 0 {
        return None;
    }
    let (p, q) = args.split_at(args.len() / 2);
    Some((p, q, radius))
}

/// The terms of `e` as a sum (`a + b + c` → a, b, c), through a sum's conversion to
/// FLOAT or REAL (which moves it less than the search's widening).
pub fn added_terms<'e>(e: &'e BoundExpr, out: &mut Vec<&'e BoundExpr>) {
    let number = |ty: DataType| matches!(ty, DataType::Int | DataType::Real | DataType::Float);
    match &e.kind {
        BoundKind::Arith(ArithOp::Add, a, b) => {
            added_terms(a, out);
            added_terms(b, out);
        }
        BoundKind::Cast(inner, _)
            if matches!(e.ty, DataType::Real | DataType::Float)
                && number(inner.ty)
                && matches!(inner.kind, BoundKind::Arith(ArithOp::Add, _, _)) =>
        {
            added_terms(inner, out)
        }
        _ => out.push(e),
    }
}

/// In `on`, an equality of the bare id of the relation `scan` reads with an expression of
/// none of its columns (`n.id = c.parent`): that expression, whose values name the only
/// entities the relation need be read for (a LEFT JOIN's, `exec/join.rs`).
pub fn id_equality<'e>(on: &'e BoundExpr, scan: &super::EntityScan) -> Option<&'e BoundExpr> {
    let own = |s: usize| scan.columns.iter().any(|&(slot, _)| slot == s);
    let is_id =
        |e: &BoundExpr| matches!(e.kind, BoundKind::Slot(s) if scan.columns.contains(&(s, ScanColumn::Id)));
    let other = |e: &BoundExpr| {
        let mut free = true;
        e.visit_slots(&mut |s| free &= !own(s));
        free
    };
    match &on.kind {
        BoundKind::Compare(CmpOp::Eq, a, b) if is_id(a) && other(b) => Some(b),
        BoundKind::Compare(CmpOp::Eq, a, b) if is_id(b) && other(a) => Some(a),
        BoundKind::And(a, b) => id_equality(a, scan).or_else(|| id_equality(b, scan)),
        _ => None,
    }
}
