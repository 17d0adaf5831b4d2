//! SPAWN: new entities made of a query's rows, at the ids chosen (`SPAWN AT`) or at new
//! ones. Every value is converted and checked before the first entity is made; many rows
//! are written a piece at a time inside a savepoint, so that an interrupt leaves none.
//! One entity of values computed from no table (a SPAWN of values written out) is made
//! from its values, with the same conversions and errors, without a column for each.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use smallvec::SmallVec;

use super::pieces::{WRITE_PIECE, in_pieces};
use super::values::{Result, ids_of, reader, to_column, to_value};
use crate::exec::error::ExecError;
use crate::exec::query::{eval_lone_row, lone_row_of, run_query};
use crate::exec::{Chunk, Outcome, Run};
use crate::plan::{BoundExpr, OutputColumn, SpawnPlan};
use crate::storage::{Entity, SpawnRow, Value, World};
use crate::vector::{Data, Vector};

thread_local! {
    /// SPAWN's answer's one column, made once a thread (a SPAWN of one entity by text paid
    /// four allocations for a new one): each thread counts its own references, so threads
    /// that spawn share no cache line for it.
    static ID_COLUMN: Arc<[OutputColumn]> = Arc::new([OutputColumn::id()]);
}

/// The new entities' ids, SPAWN's rows.
fn ids_outcome(ids: &[Entity]) -> Outcome {
    let column = ID_COLUMN
        .try_with(Arc::clone)
        .unwrap_or_else(|_| Arc::new([OutputColumn::id()]));
    let data: Vec<Option<Entity>> = ids.iter().map(|&e| Some(e)).collect();
    let v = Vector::from_data(Data::Entity(Cow::Owned(data)), ids.len());
    Outcome {
        columns: crate::exec::OutputColumns::from(column),
        rows: Chunk {
            columns: vec![v],
            len: ids.len(),
        },
        affected: ids.len(),
        returns_rows: true,
    }
}

pub fn spawn(plan: &SpawnPlan, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let at = run.at;
    if plan.id_column.is_none()
        && run.profile.is_none()
        && let Some((exprs, width)) = lone_row_of(&plan.rows)
    {
        return spawn_one(plan, exprs, width, world, run);
    }
    let chunk = run_query(&plan.rows, &reader(world, run))?;
    let len = chunk.len;
    let chosen_ids = match plan.id_column {
        Some(column) => Some(
            ids_of(&chunk, column, at)?
                .into_iter()
                .map(|id| id.ok_or_else(|| ExecError::constraint(at, "SPAWN AT was given a NULL id")))
                .collect::<Result<Vec<Entity>>>()?,
        ),
        None => None,
    };
    let mut columns = chunk.columns.into_iter();
    let mut components = Vec::with_capacity(plan.components.len());
    let mut cols_done = 0;
    for (component, types) in &plan.components {
        let mut cols = Vec::with_capacity(types.len());
        for ty in types {
            let Some(v) = columns.next() else {
                return Err(ExecError::internal(
                    at,
                    "SPAWN rows have fewer columns than fields",
                ));
            };
            let i = cols_done;
            cols_done += 1;
            let value_at = plan.value_at.get(i).copied().unwrap_or(at);
            cols.push(to_column(v, *ty, &ValueName(plan, world, i), value_at)?);
        }
        components.push((*component, cols));
    }
    if len == 0 {
        return Ok(ids_outcome(&[]));
    }
    let spawn = |world: &mut World, len: usize, components, chosen: Option<&[Entity]>| match chosen {
        Some(ids) => world.spawn_batch_at(ids, components).map(|()| ids.to_vec()),
        None => world.spawn_columns(len, components),
    };
    if len <= WRITE_PIECE {
        let ids =
            spawn(world, len, components, chosen_ids.as_deref()).map_err(|e| ExecError::storage(at, e))?;
        return Ok(ids_outcome(&ids));
    }
    // Many rows are written a piece at a time, the interrupt looked at between pieces,
    // inside a savepoint: an interrupt (or a piece refused) undoes the pieces written,
    // which costs a record per piece (appended rows come off the tables' ends).
    let savepoint = world.savepoint();
    let mut ids = Vec::with_capacity(len);
    let mut from = 0;
    let mut pieces = in_pieces(components, len, WRITE_PIECE).into_iter();
    while let Some((rows, piece)) = pieces.next() {
        let chosen = chosen_ids.as_deref().map(|c| &c[from..from + rows]);
        let written = run
            .budget
            .check(at)
            .and_then(|()| spawn(world, rows, piece, chosen).map_err(|e| ExecError::storage(at, e)));
        match written {
            Ok(piece_ids) => ids.extend(piece_ids),
            Err(e) => {
                world.rollback_to(savepoint);
                // The pieces not written are freed off this thread (`garbage.rs`).
                crate::garbage::drop_later(pieces.collect::<Vec<_>>());
                return Err(e);
            }
        }
        from += rows;
    }
    world.release(savepoint);
    Ok(ids_outcome(&ids))
}

/// The field of value `i` of a SPAWN's rows (`Component.field`), as its error names it;
/// written out only then (the plan leaves the rows' columns unnamed).
struct ValueName<'p>(&'p SpawnPlan, &'p World, usize);

impl fmt::Display for ValueName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ValueName(plan, world, mut i) = *self;
        for (component, types) in &plan.components {
            if i < types.len() {
                return match world.component(*component) {
                    Ok(def) => match def.fields().get(i) {
                        Some(field) => write!(f, "{}.{}", def.name(), field.name()),
                        None => write!(f, "{}", def.name()),
                    },
                    Err(_) => f.write_str("a field"),
                };
            }
            i -= types.len();
        }
        f.write_str("id")
    }
}

/// A SPAWN of one entity whose values are computed from no table (written out, as most
/// are): every value is computed, then each converted to its field's type, as `spawn`
/// does it for a column of rows (the same errors, in the same order), and the entity is
/// made from the values, with no vector or column for any of them. EXPLAIN ANALYZE
/// takes the general way, which it can time.
fn spawn_one(
    plan: &SpawnPlan,
    exprs: &[BoundExpr],
    width: usize,
    world: &mut World,
    run: Run<'_>,
) -> Result<Outcome> {
    let at = run.at;
    // Up to two components, and a component's row of up to 4 values, are held in place.
    let mut components: SpawnRow = plan
        .components
        .iter()
        .map(|(component, types)| (*component, SmallVec::with_capacity(types.len())))
        .collect();
    // Each value into its component's row as it is computed; converted once all are.
    let mut owners = plan
        .components
        .iter()
        .enumerate()
        .flat_map(|(c, (_, types))| std::iter::repeat_n(c, types.len()));
    let uneven = || ExecError::internal(at, "SPAWN's row has not one value per field");
    eval_lone_row(exprs, width, &plan.value_at, &reader(world, run), |value| {
        let c = owners.next().ok_or_else(uneven)?;
        components[c].1.push(value);
        Ok(())
    })?;
    if owners.next().is_some() {
        return Err(uneven());
    }
    let mut i = 0;
    for ((_, row), (_, types)) in components.iter_mut().zip(&plan.components) {
        for (value, &ty) in row.iter_mut().zip(types) {
            let value_at = plan.value_at.get(i).copied().unwrap_or(at);
            let given = std::mem::replace(value, Value::Null);
            *value = to_value(given, ty, &ValueName(plan, world, i), value_at)?;
            i += 1;
        }
    }
    let id = world
        .spawn_row(&mut components)
        .map_err(|e| ExecError::storage(at, e))?;
    Ok(ids_outcome(&[id]))
}
