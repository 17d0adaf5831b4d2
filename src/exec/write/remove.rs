//! DELETE (a component detached from entities) and DESPAWN (entities removed): the
//! targets are read first, then removed, many a piece at a time; what undoing them keeps
//! is charged to the statement's memory before the first is removed.

use super::pieces::{WRITE_PIECE, fits, is_sparse, keep_undo, table_pieces, write_in_pieces};
use super::values::{Result, ids_of, reader};
use crate::exec::error::ExecError;
use crate::exec::query::run_query;
use crate::exec::{Outcome, Run};
use crate::location::Location;
use crate::plan::QueryPlan;
use crate::storage::{ComponentId, Entity, LiveSet, World};

fn check_live(world: &World, e: Option<Entity>, at: Location) -> Result<Entity> {
    let e = e.ok_or_else(|| ExecError::constraint(at, "an entity id is NULL"))?;
    world.locate(e).map_err(|err| ExecError::storage(at, err))?;
    Ok(e)
}

fn entity_ids(ids: &QueryPlan, world: &World, run: Run<'_>) -> Result<Vec<Option<Entity>>> {
    let chunk = run_query(ids, &reader(world, run))?;
    ids_of(&chunk, 0, run.at)
}

pub fn delete(component: ComponentId, ids: &QueryPlan, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let ids = delete_targets(ids, world, run)?;
    delete_of(component, ids, world, run)
}

/// The entities a DELETE detaches its component from.
pub(super) fn delete_targets(ids: &QueryPlan, world: &World, run: Run<'_>) -> Result<Vec<Entity>> {
    Ok(entity_ids(ids, world, run)?.into_iter().flatten().collect())
}

/// Detaches `component` from `ids`, which hold it.
pub(super) fn delete_of(
    component: ComponentId,
    ids: Vec<Entity>,
    world: &mut World,
    run: Run<'_>,
) -> Result<Outcome> {
    let at = run.at;
    let pieces = match ids.len() > WRITE_PIECE && !is_sparse(world, component) {
        true => table_pieces(world, &ids, run)?,
        false => Vec::new(),
    };
    let stoppable = keep_undo(world, run, component, &ids, false, &pieces)?;
    if pieces.len() <= 1 {
        // One piece (a whole table's moves are one): one write.
        world
            .remove_batch(component, &ids)
            .map_err(|err| ExecError::storage(at, err))?;
    } else {
        write_in_pieces(world, run, pieces.len(), stoppable, |world, k| {
            let of: Vec<Entity> = pieces[k].iter().map(|&i| ids[i as usize]).collect();
            world
                .remove_batch(component, &of)
                .map_err(|err| ExecError::storage(at, err))
        })?;
    }
    Ok(Outcome {
        affected: ids.len(),
        ..Default::default()
    })
}

pub fn despawn(ids: &QueryPlan, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let unique = despawn_targets(ids, world, run)?;
    despawn_of(unique, world, run)
}

/// The entities a DESPAWN removes, each once, in the order given; a dead one is an
/// error.
pub(super) fn despawn_targets(ids: &QueryPlan, world: &World, run: Run<'_>) -> Result<Vec<Entity>> {
    let at = run.at;
    let ids = entity_ids(ids, world, run)?;
    let mut unique = Vec::with_capacity(ids.len());
    let mut seen = LiveSet::default();
    for (k, id) in ids.into_iter().enumerate() {
        if k % WRITE_PIECE == WRITE_PIECE - 1 {
            run.budget.check(at)?;
        }
        let e = check_live(world, id, at)?;
        if seen.insert(e) {
            unique.push(e);
        }
    }
    Ok(unique)
}

/// Removes `unique`, live entities each given once.
pub(super) fn despawn_of(unique: Vec<Entity>, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let at = run.at;
    // What is kept to undo the removals with (inside a transaction, or in a savepoint)
    // is counted as the statement's memory: inside a transaction a DESPAWN past the
    // limit fails before it begins; outside one, it runs to its end once writing. (Added
    // up a piece at a time, the interrupt looked at between pieces.)
    let undo = |world: &World| -> Result<usize> {
        let mut bytes = 0usize;
        for piece in unique.chunks(WRITE_PIECE) {
            run.budget.check(at)?;
            bytes = bytes.saturating_add(world.despawn_undo_bytes(piece));
        }
        Ok(bytes)
    };
    let stoppable = if world.in_transaction() {
        run.budget.charge(undo(world)?, at)?;
        true
    } else {
        unique.len() > WRITE_PIECE && fits(run.budget.charge(undo(world)?, at))?
    };
    // In the order given, a `WRITE_PIECE` at a time (ids are freed, and so reused, in
    // that order).
    let pieces: Vec<&[Entity]> = unique.chunks(WRITE_PIECE).collect();
    write_in_pieces(world, run, pieces.len(), stoppable, |world, k| {
        world
            .despawn_batch(pieces[k])
            .map_err(|err| ExecError::storage(at, err))
    })?;
    Ok(Outcome {
        affected: unique.len(),
        ..Default::default()
    })
}
