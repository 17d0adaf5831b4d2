//! `descendants(root, C.field)` and `ancestors(e, C.field)`: traversing a relation (an
//! ENTITY field pointing from child to parent) transitively. Descendants go down level by
//! level, through the field's relation index when there is one and otherwise through a
//! map of the field built by one pass over the tables holding it; ancestors follow the
//! field upward one entity at a time. Both keep a visited set, so a cycle ends the traversal
//! and every entity comes out once; neither returns its starting entity.
//!
//! Rows come out by depth, and by id within a depth, whichever way children were found,
//! so a query gives the same rows with or without the index.
//!
//! Each level (descendants) or each 4,096 steps (ancestors) checks the statement's budget
//! for an interrupt, and the rows kept are charged to it.

use hashbrown::{HashMap, HashSet};

use super::Budget;
use super::error::ExecError;
use super::reader::Reader;
use crate::location::Location;

use crate::index::{Index, IndexKind, Indexes};
use crate::plan::{Traversal, TraversalDirection};
use crate::storage::{Column, Entity, FieldId, World};

type Result<T> = std::result::Result<T, ExecError>;

/// Bytes a traversal keeps per entity reached: the row, and its place in the visited set.
const BYTES_PER_ENTITY: usize = 40;

/// The traversal's rows: each entity reached and its depth.
pub fn traverse(w: &Traversal, reader: &Reader<'_>) -> Result<Vec<(Entity, i64)>> {
    let start = match &w.start_expr {
        Some(e) => {
            let none = crate::vector::Batch::new(1, 0);
            match super::eval::eval(e, &none, &reader.eval())?.get(0) {
                crate::storage::Value::Entity(e) => Some(e),
                _ => None,
            }
        }
        None => w.start,
    };
    let Some(start) = start else {
        return Ok(Vec::new());
    };
    let (world, budget, at) = (reader.world, reader.budget, reader.at);
    match w.direction {
        TraversalDirection::Descendants => descendants(start, w.field, world, budget, at),
        TraversalDirection::Ancestors => ancestors(start, w.field, world, budget, at),
    }
}

/// The relation index over `field`, which a descendants traversal uses when there is one.
pub fn relation_index(field: FieldId, world: &World) -> Option<&Index> {
    Indexes::of(world)
        .iter()
        .find(|i| i.kind() == IndexKind::Relation && i.fields() == [field])
}

fn descendants(
    root: Entity,
    field: FieldId,
    world: &World,
    budget: &Budget<'_>,
    at: Location,
) -> Result<Vec<(Entity, i64)>> {
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
        budget.charge(next.len() * BYTES_PER_ENTITY, at)?;
        next.sort_unstable();
        out.extend(next.iter().map(|&e| (e, depth)));
        level = next;
    }
    Ok(out)
}

/// parent → the entities whose `field` points at it, from one pass over the tables.
fn children_map(field: FieldId, world: &World) -> HashMap<Entity, Vec<Entity>> {
    let mut map: HashMap<Entity, Vec<Entity>> = HashMap::new();
    for table in world.all_tables() {
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

fn ancestors(
    start: Entity,
    field: FieldId,
    world: &World,
    budget: &Budget<'_>,
    at: Location,
) -> Result<Vec<(Entity, i64)>> {
    let mut seen = HashSet::new();
    seen.insert(start);
    let mut out = Vec::new();
    let here = at;
    let mut at = start;
    let mut depth = 0;
    // A despawned or dangling parent ends the traversal: only live entities are returned.
    while let Ok(crate::storage::Value::Entity(parent)) = world.value(at, field) {
        if !world.contains(parent) || !seen.insert(parent) {
            break;
        }
        depth += 1;
        out.push((parent, depth));
        at = parent;
        if depth % 4096 == 0 {
            budget.charge(4096 * BYTES_PER_ENTITY, here)?;
        }
    }
    Ok(out)
}
