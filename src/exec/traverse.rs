//! `descendants(root, C.field)` and `ancestors(e, C.field)`: traversing a relation (an
//! ENTITY field pointing from child to parent) transitively. Descendants go down level by
//! level, through the field's relation index when there is one and otherwise through a
//! map of the field built by one pass over the tables holding it; ancestors follow the
//! field upward one entity at a time. Both keep a visited set, so a cycle ends the traversal
//! and every entity comes out once; neither returns its starting entity.
//!
//! Rows come out by depth, and by id within a depth, whichever way children were found,
//! so a query gives the same rows with or without the index.

use hashbrown::{HashMap, HashSet};

use crate::index::{Index, IndexKind, Indexes};
use crate::plan::{Traversal, TraversalDirection};
use crate::storage::{Column, Entity, FieldId, World};

/// The traversal's rows: each entity reached and its depth.
pub fn traverse(w: &Traversal, world: &World) -> Vec<(Entity, i64)> {
    let Some(start) = w.start else {
        return Vec::new();
    };
    match w.direction {
        TraversalDirection::Descendants => descendants(start, w.field, world),
        TraversalDirection::Ancestors => ancestors(start, w.field, world),
    }
}

/// The relation index over `field`, which a descendants traversal uses when there is one.
pub fn relation_index(field: FieldId, world: &World) -> Option<&Index> {
    Indexes::of(world)
        .iter()
        .find(|i| i.kind() == IndexKind::Relation && i.fields() == [field])
}

fn descendants(root: Entity, field: FieldId, world: &World) -> Vec<(Entity, i64)> {
    let index = relation_index(field, world);
    let map = if index.is_none() {
        children_map(field, world)
    } else {
        HashMap::new()
    };
    let children = |parent: Entity| -> &[Entity] {
        match index {
            Some(i) => i.sources(parent).unwrap_or(&[]),
            None => map.get(&parent).map_or(&[], Vec::as_slice),
        }
    };
    let mut seen = HashSet::new();
    seen.insert(root);
    let mut out = Vec::new();
    let mut level = vec![root];
    let mut depth = 0;
    while !level.is_empty() {
        depth += 1;
        let mut next: Vec<Entity> = level
            .iter()
            .flat_map(|&p| children(p).iter().copied())
            .filter(|&c| seen.insert(c))
            .collect();
        next.sort_unstable();
        out.extend(next.iter().map(|&e| (e, depth)));
        level = next;
    }
    out
}

/// parent → the entities whose `field` points at it, from one pass over the tables.
fn children_map(field: FieldId, world: &World) -> HashMap<Entity, Vec<Entity>> {
    let mut map: HashMap<Entity, Vec<Entity>> = HashMap::new();
    for table in world.tables() {
        let Some(Column::Entity(parents)) = table.column(field) else {
            continue;
        };
        for (&child, parent) in table.entities().iter().zip(parents) {
            if let Some(p) = parent {
                map.entry(*p).or_default().push(child);
            }
        }
    }
    map
}

fn ancestors(start: Entity, field: FieldId, world: &World) -> Vec<(Entity, i64)> {
    let mut seen = HashSet::new();
    seen.insert(start);
    let mut out = Vec::new();
    let mut at = start;
    let mut depth = 0;
    // A despawned or dangling parent ends the traversal: only live entities are returned.
    while let Ok(crate::storage::Value::Entity(parent)) = world.get(at, field) {
        if !world.contains(parent) || !seen.insert(parent) {
            break;
        }
        depth += 1;
        out.push((parent, depth));
        at = parent;
    }
    out
}
