//! RETURNING: a query's rows read back for the entities a write wrote, before the write
//! for DELETE and DESPAWN, after it for the others. One that fails after the write undoes
//! it: the statement is one.

use super::insert::insert;
use super::remove::{delete_of, delete_targets, despawn_of, despawn_targets};
use super::spawn::spawn;
use super::update::update;
use super::values::{Result, ids_of, reader};
use crate::exec::error::ExecError;
use crate::exec::{Chunk, Outcome, Run};
use crate::plan::{Plan, QueryPlan};
use crate::storage::{Entity, World};

/// A write with RETURNING (`Plan::Returning`): `query`'s rows for the entities `write`
/// wrote, read before the write for DELETE and DESPAWN (the values they remove), after it
/// for the others. A RETURNING that fails after the write undoes it: the statement is one.
pub fn returning(write: &Plan, query: &QueryPlan, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let at = run.at;
    let (affected, rows) = match write {
        Plan::Delete { component, ids } => {
            let ids = delete_targets(ids, world, run)?;
            let rows = read_written(query, ids.clone(), world, run)?;
            (delete_of(*component, ids, world, run)?.affected, rows)
        }
        Plan::Despawn { ids } => {
            let unique = despawn_targets(ids, world, run)?;
            let rows = read_written(query, unique.clone(), world, run)?;
            (despawn_of(unique, world, run)?.affected, rows)
        }
        Plan::Spawn(_) | Plan::Insert(_) | Plan::Update(_) => {
            let savepoint = world.savepoint();
            let written = (|| {
                let mut touched = Vec::new();
                let affected = match write {
                    Plan::Spawn(p) => {
                        let outcome = spawn(p, world, run)?;
                        touched = ids_of(&outcome.rows, 0, at)?.into_iter().flatten().collect();
                        outcome.affected
                    }
                    Plan::Insert(p) => insert(p, world, run, Some(&mut touched))?.affected,
                    Plan::Update(p) => update(p, world, run, Some(&mut touched))?.affected,
                    _ => 0,
                };
                Ok((affected, read_written(query, touched, world, run)?))
            })();
            match written {
                Ok(done) => {
                    world.release(savepoint);
                    done
                }
                Err(e) => {
                    world.rollback_to(savepoint);
                    return Err(e);
                }
            }
        }
        _ => {
            return Err(ExecError::internal(
                at,
                "RETURNING after a statement that writes no rows",
            ));
        }
    };
    Ok(Outcome {
        affected,
        ..Outcome::rows(query.columns.clone(), rows)
    })
}

/// `query`'s rows with its one entity scan reading only `ids`.
fn read_written(query: &QueryPlan, ids: Vec<Entity>, world: &World, run: Run<'_>) -> Result<Chunk> {
    crate::exec::query::rows_for(query, Some((0, ids)), &reader(world, run))
}
