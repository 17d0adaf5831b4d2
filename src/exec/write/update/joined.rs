//! UPDATE … FROM with a join to other entities: every row is joined, filtered and
//! computed first, an entity the join matched twice is refused, and only then is each
//! target's new values set, one by one.

use hashbrown::HashSet;

use crate::exec::error::ExecError;
use crate::exec::eval::{Selection, eval, select_rows};
use crate::exec::join::join_all_kept;
use crate::exec::write::values::{Result, reader, to_column};
use crate::exec::{Outcome, Run};
use crate::plan::{BoundExpr, DataType, UpdatePlan};
use crate::storage::{Entity, Value, World};

/// UPDATE … FROM with a join to other entities: rows are joined first, then each target
/// entity's new values are set one by one.
pub(super) fn update_joined(
    plan: &UpdatePlan,
    world: &mut World,
    run: Run<'_>,
    touched: Option<&mut Vec<Entity>>,
) -> Result<Outcome> {
    let at = run.at;
    let mut writes: Vec<(Entity, Vec<Value>)> = Vec::new();
    {
        let read = reader(world, run);
        let cx = read.eval();
        let select = &plan.select;
        let joined = join_all_kept(select, &read)?;
        let selection = match &select.filter {
            Some(f) => select_rows(f, &joined, &cx)?,
            None => Selection::All,
        };
        let rows = match &selection {
            Selection::None => return Ok(Outcome::default()),
            Selection::All => None,
            Selection::Rows(r) => Some(joined.gather(r)),
        };
        let input = rows.as_ref().unwrap_or(&joined);
        let Some(id_slot) = plan.id_slot else {
            return Err(ExecError::internal(at, "a joined UPDATE without the target's id"));
        };
        let id = BoundExpr::slot(id_slot, DataType::Entity, at);
        let ids = eval(&id, input, &cx)?.into_vector(DataType::Entity, input.len);
        let mut columns = Vec::new();
        for a in &plan.assignments {
            let v = eval(&a.value, input, &cx)?.into_vector(a.value.ty, input.len);
            columns.push(to_column(v, a.ty, &a.name, a.value.at)?);
        }
        let mut seen = HashSet::new();
        for row in 0..input.len {
            let Value::Entity(e) = ids.get(row) else { continue };
            if !seen.insert(e) {
                return Err(ExecError::constraint(
                    at,
                    format!("UPDATE would write entity {e} twice: the join matched it more than once"),
                ));
            }
            writes.push((
                e,
                columns
                    .iter()
                    .map(|c| c.get(row).unwrap_or(Value::Null))
                    .collect(),
            ));
        }
    }
    let affected = writes.len();
    if let Some(touched) = touched {
        touched.extend(writes.iter().map(|(e, _)| *e));
    }
    for (e, values) in writes {
        for (a, v) in plan.assignments.iter().zip(values) {
            world
                .set(e, a.field, v)
                .map_err(|err| ExecError::storage(at, err))?;
        }
    }
    Ok(Outcome {
        affected,
        ..Default::default()
    })
}
