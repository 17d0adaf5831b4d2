//! Index joins: the access pass's choice of a spatial index to join by. A join condition
//! `distance(p, q) < r` (or `<=`, either way round) where `p` is exactly the point a
//! spatial index keeps for one freely joined relation's entities, and `q` reads other
//! relations, becomes a `SpatialJoin`: the executor then finds, for each row of the other
//! side, the index's entities within `r` of `q`, instead of pairing every row with every
//! row (`exec/join.rs`).
//!
//! Invariants: the condition stays in the join plan and is checked on every pair the
//! search gives, so the search need only find a superset, and no choice changes a result.
//! A condition that calls a volatile function (`random()`) is left to pair every row: a
//! reach drawn once per row cannot stand for draws made per pair.
//! `r` may add a term that reads the indexed relation itself (`a.radius + b.radius`): its
//! largest value bounds it. A relation on the nullable side of a LEFT JOIN is never
//! searched this way (its conditions are not in the join plan).

use super::expr::{BoundExpr, BoundKind};
use super::join::{SpatialJoin, added_terms, distance_below, relations_of};
use super::{RelationSource, ScanColumn, SelectPlan};
use crate::index::{IndexKind, Indexes};
use crate::storage::{FieldId, World};

/// Gives each join condition of `select` that a spatial index can serve its `SpatialJoin`.
pub(super) fn choose_spatial_joins(world: &World, select: &mut SelectPlan) {
    let indexes = Indexes::of(world);
    if select.joins.conditions.is_empty() || !indexes.iter().any(|i| i.kind() == IndexKind::Spatial) {
        return;
    }
    let owner = super::join::slot_owners(select);
    let relation_of = |s: usize| owner.get(s).copied().flatten().unwrap_or(usize::MAX);
    let free = select.joins.free.min(select.relations.len());
    let SelectPlan {
        relations,
        joins,
        width,
        ..
    } = select;
    let mut moot: Vec<(String, Vec<usize>)> = Vec::new();
    for condition in &mut joins.conditions {
        if condition.equi.is_some() {
            continue;
        }
        let Some((p, q, radius)) = distance_below(&condition.expr) else {
            continue;
        };
        // A search drawn once per row cannot stand for draws made per pair.
        let mut volatile = false;
        condition.expr.visit(&mut |e| {
            volatile |= matches!(&e.kind, BoundKind::Call(f, _) if f.properties().volatile);
        });
        if volatile {
            continue;
        }
        for (mine, other, center_first) in [(p, q, false), (q, p, true)] {
            let Some(first) = mine.first() else { break };
            let BoundKind::Slot(s) = first.kind else { continue };
            let r = relation_of(s);
            if r >= free {
                continue;
            }
            let Some(RelationSource::Entities(scan)) = relations.get_mut(r).map(|x| &mut x.source) else {
                continue;
            };
            let fields: Option<Vec<FieldId>> = mine.iter().map(|e| field_of(&scan.columns, e)).collect();
            let Some(fields) = fields else { continue };
            let Some(index) = indexes.iter().find(|i| {
                i.kind() == IndexKind::Spatial
                    && i.fields() == fields
                    && scan.required.contains(&i.component())
            }) else {
                continue;
            };
            let center_relations = relations_of_all(other, &relation_of);
            if center_relations.contains(&r) || center_relations.contains(&usize::MAX) {
                continue;
            }
            let mut terms = Vec::new();
            added_terms(radius, &mut terms);
            let reach: Vec<Vec<usize>> = terms.into_iter().map(|t| relations_of(t, &relation_of)).collect();
            // A term reading the searched relation is bounded by its largest value there,
            // so it may read nothing else.
            if reach
                .iter()
                .any(|rels| rels.contains(&usize::MAX) || (rels.contains(&r) && rels.len() > 1))
            {
                continue;
            }
            // The scans' own notes that the index serves none of their conditions are
            // moot: it serves the join.
            moot.push((
                format!("index {} not used", index.name()),
                condition.relations.clone(),
            ));
            let id_slot = match scan.columns.iter().find(|(_, c)| *c == ScanColumn::Id) {
                Some(&(slot, _)) => slot,
                None => {
                    let slot = *width;
                    *width += 1;
                    scan.columns.push((slot, ScanColumn::Id));
                    slot
                }
            };
            condition.spatial = Some(SpatialJoin {
                relation: r,
                index: index.name().to_owned(),
                id_slot,
                center_first,
                center_relations,
                reach_relations: reach,
            });
            break;
        }
    }
    for (note, rels) in moot {
        for r in rels {
            if let Some(RelationSource::Entities(scan)) = relations.get_mut(r).map(|x| &mut x.source) {
                scan.index_notes.retain(|n| !n.starts_with(&note));
            }
        }
    }
}

/// The field a bare column of a scan reads.
fn field_of(columns: &[(usize, ScanColumn)], e: &BoundExpr) -> Option<FieldId> {
    let BoundKind::Slot(s) = e.kind else { return None };
    columns.iter().find_map(|&(slot, c)| match c {
        ScanColumn::Field(f) if slot == s => Some(f),
        _ => None,
    })
}

/// The relations any of `exprs` reads.
fn relations_of_all(exprs: &[BoundExpr], relation_of: &impl Fn(usize) -> usize) -> Vec<usize> {
    let mut all: Vec<usize> = exprs.iter().flat_map(|e| relations_of(e, relation_of)).collect();
    all.sort_unstable();
    all.dedup();
    all
}
