//! INSERT: rows appended to an event's queue (`emit`), or a component attached to
//! entities, each named once, its conflicts (an entity that has it already) failed,
//! skipped, replaced or updated as the statement says. Every value is computed and
//! checked before the first is written.

use super::pieces::{WRITE_PIECE, is_sparse, keep_undo, table_pieces, write_in_pieces};
use super::values::{Result, full_columns, ids_of, reader, to_column};
use crate::exec::error::ExecError;
use crate::exec::eval::eval;
use crate::exec::query::run_query;
use crate::exec::{Outcome, Run};
use crate::plan::{ConflictPlan, DataType, EmitPlan, InsertPlan};
use crate::storage::{Entity, FieldId, LiveSet, Value, World};
use crate::vector::{Batch, Datum, Vector};

/// `INSERT INTO Event …`: the rows, every field a column (given, or its default), appended
/// to the event's queue stamped with the run's tick.
pub fn emit(plan: &EmitPlan, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let at = run.at;
    let chunk = run_query(&plan.rows, &reader(world, run))?;
    let len = chunk.len;
    let queue = world.event(plan.event).map_err(|e| ExecError::storage(at, e))?;
    let name = queue.name().to_owned();
    let defaults: Vec<(String, Value)> = queue
        .fields()
        .iter()
        .map(|f| (format!("{name}.{}", f.name()), f.default_value().clone()))
        .collect();
    let mut columns = Vec::with_capacity(plan.fields.len());
    for (f, ty) in plan.fields.iter().enumerate() {
        let (what, default) = &defaults[f];
        let (v, value_at) = match plan.field_columns[f] {
            Some(c) => (
                chunk.columns[c].view(),
                plan.column_at.get(c).copied().unwrap_or(at),
            ),
            None => (Vector::broadcast(default, DataType::from(*ty), len), at),
        };
        columns.push(to_column(v, *ty, what, value_at)?);
    }
    if len > 0 {
        world
            .emit(plan.event, columns, len, run.clock.tick)
            .map_err(|e| ExecError::storage(at, e))?;
    }
    Ok(Outcome {
        affected: len,
        ..Default::default()
    })
}

/// Runs an INSERT; each entity it attached to, spawned or changed is added to `touched`,
/// when given.
pub fn insert(
    plan: &InsertPlan,
    world: &mut World,
    run: Run<'_>,
    touched: Option<&mut Vec<Entity>>,
) -> Result<Outcome> {
    let at = run.at;
    let chunk = run_query(&plan.rows, &reader(world, run))?;
    let len = chunk.len;
    let def = world
        .component(plan.component)
        .map_err(|e| ExecError::storage(at, e))?;
    let name = def.name().to_owned();
    let field_names: Vec<String> = def
        .fields()
        .iter()
        .map(|f| format!("{name}.{}", f.name()))
        .collect();

    let fields = full_columns(
        def,
        len,
        |f| {
            plan.field_columns[f].map(|c| {
                (
                    chunk.columns[c].view(),
                    plan.column_at.get(c).copied().unwrap_or(at),
                )
            })
        },
        at,
    )?;
    let Some(id_column) = plan.id_column else {
        if len == 0 {
            return Ok(Outcome::default());
        }
        let ids = world
            .spawn_columns(len, vec![(plan.component, fields)])
            .map_err(|e| ExecError::storage(at, e))?;
        if let Some(touched) = touched {
            touched.extend_from_slice(&ids);
        }
        return Ok(Outcome {
            affected: ids.len(),
            ..Default::default()
        });
    };

    let ids = ids_of(&chunk, id_column, at)?;
    let mut seen = LiveSet::default();
    let mut attach = Vec::with_capacity(ids.len());
    let mut conflicts = Vec::new();
    let has = world
        .has_test(plan.component)
        .map_err(|err| ExecError::storage(at, err))?;
    for (row, id) in ids.into_iter().enumerate() {
        if row % WRITE_PIECE == WRITE_PIECE - 1 {
            run.budget.check(at)?;
        }
        // A dead id fails here, before it could count as a repeat.
        let e = id.ok_or_else(|| ExecError::constraint(at, "an entity id is NULL"))?;
        let holds = has(e).map_err(|err| ExecError::storage(at, err))?;
        if !seen.insert(e) {
            return Err(ExecError::constraint(
                at,
                format!("entity {e} appears twice in one INSERT into {name}"),
            ));
        }
        if holds {
            match plan.on_conflict {
                ConflictPlan::Fail => {
                    return Err(ExecError::constraint(
                        at,
                        format!(
                            "entity {e} already has {name} (use INSERT OR REPLACE or ON CONFLICT DO UPDATE to change it)"
                        ),
                    ));
                }
                ConflictPlan::DoNothing => {}
                _ => conflicts.push((row, e)),
            }
        } else {
            attach.push((row, e));
        }
    }
    drop(has);
    let row_values =
        |row: usize| -> Vec<Value> { fields.iter().map(|c| c.get(row).unwrap_or(Value::Null)).collect() };

    // Conflicting rows: their new values, computed before anything is written.
    let mut updates: Vec<(Entity, Vec<(usize, Value)>)> = Vec::new();
    match &plan.on_conflict {
        ConflictPlan::Replace => {
            for &(row, e) in &conflicts {
                updates.push((e, row_values(row).into_iter().enumerate().collect()));
            }
        }
        ConflictPlan::DoUpdate(sets) if !conflicts.is_empty() => {
            let n = plan.fields.len();
            let mut batch = Batch::new(conflicts.len(), 2 * n);
            for (f, column) in fields.iter().enumerate() {
                let ty = DataType::from(plan.fields[f]);
                let mut current = Vector::empty(ty);
                let mut proposed = Vector::empty(ty);
                for &(row, e) in &conflicts {
                    let field = FieldId::new(plan.component, f as u16);
                    current.push_value(&world.value(e, field).map_err(|err| ExecError::storage(at, err))?);
                    proposed.push_value(&column.get(row).unwrap_or(Value::Null));
                }
                batch.slots[f] = Some(Datum::Vector(current));
                batch.slots[n + f] = Some(Datum::Vector(proposed));
            }
            let read = reader(world, run);
            let cx = read.eval();
            let mut computed = Vec::new();
            for (f, e) in sets {
                let v = eval(e, &batch, &cx)?.into_vector(e.ty, conflicts.len());
                let column = to_column(v, plan.fields[*f], &field_names[*f], e.at)?;
                computed.push((*f, column));
            }
            for (k, &(_, e)) in conflicts.iter().enumerate() {
                updates.push((
                    e,
                    computed
                        .iter()
                        .map(|(f, c)| (*f, c.get(k).unwrap_or(Value::Null)))
                        .collect(),
                ));
            }
        }
        _ => {}
    }

    let affected = attach.len() + updates.len();
    if let Some(touched) = touched {
        touched.extend(attach.iter().map(|&(_, e)| e));
        touched.extend(updates.iter().map(|(e, _)| *e));
    }
    if !attach.is_empty() {
        // Column-wise: the attached rows' values, as columns (all of them when every row
        // attaches, as in `INSERT INTO C (id, …) SELECT id, … FROM …`).
        let (rows, entities): (Vec<u32>, Vec<Entity>) =
            attach.iter().map(|&(row, e)| (row as u32, e)).unzip();
        let every = rows.len() == len && rows.iter().enumerate().all(|(k, &r)| r as usize == k);
        let columns = if every && updates.is_empty() {
            fields
        } else {
            fields.iter().map(|c| c.copy_rows(&rows)).collect()
        };
        let pieces = match entities.len() > WRITE_PIECE && !is_sparse(world, plan.component) {
            true => table_pieces(world, &entities, run)?,
            false => Vec::new(),
        };
        let stoppable = keep_undo(world, run, plan.component, &entities, true, &pieces)?;
        if pieces.len() <= 1 {
            // One piece (a whole table's moves are one): one write.
            world
                .insert_checked_batch(plan.component, &entities, columns)
                .map_err(|err| ExecError::storage(at, err))?;
        } else {
            write_in_pieces(world, run, pieces.len(), stoppable, |world, k| {
                let piece = &pieces[k];
                let values = columns.iter().map(|c| c.copy_rows(piece)).collect();
                let of: Vec<Entity> = piece.iter().map(|&i| entities[i as usize]).collect();
                world
                    .insert_checked_batch(plan.component, &of, values)
                    .map_err(|err| ExecError::storage(at, err))
            })?;
        }
    }
    for (e, values) in updates {
        for (f, v) in values {
            let field = FieldId::new(plan.component, f as u16);
            world
                .set(e, field, v)
                .map_err(|err| ExecError::storage(at, err))?;
        }
    }
    Ok(Outcome {
        affected,
        ..Default::default()
    })
}
