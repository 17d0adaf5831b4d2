//! Subscriptions kept per entity (`plan::Upkeep::PerEntity`): the query's rows kept by
//! the entity each comes from; at a commit, only the entities the change log
//! (`changelog.rs`) noted for the query's components are read again (the query with its
//! scan narrowed to them), and each one's row compared with the one kept.
//!
//! Invariants:
//! - `Rows` holds, for each entity the query gives a row for, that row (the query's
//!   columns, without the entity): the query's result at the last commit, as a bag.
//! - A batch made here is the one a run of the whole query and a comparison would make:
//!   an entity whose row did not change adds nothing; one whose row changed adds -old
//!   +new; rows of several entities that cancel (one left with the values another came
//!   with) are summed away.
//! - The plan is bound again whenever the catalog, a rollback or a LOAD may have made it
//!   stale (`Stamp`); a query that stops binding ends its subscriptions.

use std::cell::RefCell;

use hashbrown::HashMap;

use super::State;
use crate::error::{Error, Result};
use crate::exec::{Budget, Chunk, ExecError, Run};
use crate::parse;
use crate::plan::{DataType, ParamValues, Plan, QueryPlan, Upkeep};
use crate::storage::{ComponentId, Entity, Value};

/// What a plan was bound for: the catalog, the rollbacks and the LOADs as they were.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stamp {
    schema: u64,
    restores: u64,
    loads: u64,
}

impl Stamp {
    pub(super) fn of(state: &State) -> Stamp {
        Stamp {
            schema: state.world.schema_stamp(),
            restores: state.restores,
            loads: state.loads,
        }
    }
}

/// A query's plan for being kept per entity: its rows followed by their entity (for a
/// query kept per group, each row's contribution followed by its entity).
#[derive(Debug)]
pub(super) struct Bound {
    plan: QueryPlan,
    /// A query kept per group: the query itself, whose HAVING and select list make a
    /// group's row of its key values and aggregates' results (`group.rs`).
    pub(super) folded: Option<QueryPlan>,
    /// The components whose changes it reads (`Upkeep::PerEntity`).
    pub(super) components: Vec<ComponentId>,
    pub(super) stamp: Stamp,
}

impl Bound {
    /// The query's own columns (not the entity after them).
    pub(super) fn columns(&self) -> Vec<(String, DataType)> {
        if let Some(folded) = &self.folded {
            return folded.columns.iter().map(|c| (c.name.clone(), c.ty)).collect();
        }
        let columns = &self.plan.columns;
        columns[..columns.len().saturating_sub(1)]
            .iter()
            .map(|c| (c.name.clone(), c.ty))
            .collect()
    }
}

/// Binds `statement` for `state`: `Ok(None)` when it is not a query kept per entity or
/// per group.
pub(super) fn bind(
    statement: &parse::Statement,
    params: &ParamValues,
    state: &State,
) -> Result<Option<Bound>> {
    let query = |state: &State| -> Result<Option<QueryPlan>> {
        match crate::plan::plan(statement, &state.world, params)? {
            (Plan::Query(query), _) => Ok(Some(query)),
            _ => Ok(None),
        }
    };
    let Some(mut plan) = query(state)? else {
        return Ok(None);
    };
    let (components, folded) = match Upkeep::of(&plan) {
        Upkeep::PerEntity { components } => {
            if crate::plan::with_entity_column(&mut plan).is_none() {
                return Ok(None);
            }
            (components, None)
        }
        Upkeep::PerGroup { components } => {
            // Bound twice: the query, and its contributions.
            let Some(folded) = query(state)? else {
                return Ok(None);
            };
            if crate::plan::contributions(&mut plan).is_none() {
                return Ok(None);
            }
            (components, Some(folded))
        }
        Upkeep::Rerun { .. } => return Ok(None),
    };
    Ok(Some(Bound {
        plan,
        folded,
        components,
        stamp: Stamp::of(state),
    }))
}

/// Runs `f` with a run of a kept query's plan on `state`: no reader, nothing tracked.
pub(super) fn with_run<T>(
    state: &State,
    params: &ParamValues,
    limit: usize,
    f: impl FnOnce(Run<'_>) -> T,
) -> T {
    let cache = RefCell::default();
    let budget = Budget::new(limit);
    f(Run {
        cache: &cache,
        restores: state.restores,
        at: crate::location::Location::default(),
        params,
        budget: &budget,
        clock: state.schedule.clock(),
        events: None,
        seed: None,
        spare: None,
        profile: None,
    })
}

/// Each entity's row, as kept.
#[derive(Debug, Default)]
pub(super) struct Rows {
    pub(super) by_entity: HashMap<Entity, Vec<Value>>,
    /// About how many bytes they hold (`super::row_bytes`).
    pub(super) bytes: usize,
}

impl Rows {
    /// The rows as a bag, in the order of their entities.
    pub(super) fn bag(&self) -> super::Bag {
        let mut entities: Vec<Entity> = self.by_entity.keys().copied().collect();
        entities.sort_unstable();
        super::bag_of(entities.iter().map(|e| &self.by_entity[e]))
    }
}

/// The rows `bound` gives for `ids` (all entities: `None`), by entity.
pub(super) fn read(
    bound: &Bound,
    params: &ParamValues,
    state: &State,
    limit: usize,
    ids: Option<Vec<Entity>>,
) -> Result<Rows> {
    let at = crate::location::Location::default();
    let chunk: Chunk = with_run(state, params, limit, |run| {
        crate::exec::query_rows_for(&bound.plan, ids, &state.world, run)
    })?;
    let mut rows = Rows::default();
    for i in 0..chunk.len {
        let mut row = chunk.row(i);
        let Some(Value::Entity(e)) = row.pop() else {
            return Err(Error::from(ExecError::internal(
                at,
                "a row kept per entity has no entity",
            )));
        };
        rows.bytes += super::row_bytes(&row);
        rows.by_entity.insert(e, row);
    }
    Ok(rows)
}

/// The entities of `ids` read again (`fresh`) against those kept: `kept` becomes the
/// result now; what changed, retractions first, each part in the entities' order.
pub(super) fn update(kept: &mut Rows, ids: &[Entity], mut fresh: Rows) -> Vec<(Vec<Value>, i64)> {
    let mut changes = Vec::new();
    for e in ids {
        let new = fresh.by_entity.remove(e);
        let same = match (kept.by_entity.get(e), &new) {
            (Some(old), Some(new)) => super::same_row(old, new),
            (None, None) => true,
            _ => false,
        };
        if same {
            continue;
        }
        if let Some(old) = kept.by_entity.remove(e) {
            kept.bytes = kept.bytes.saturating_sub(super::row_bytes(&old));
            changes.push((old, -1));
        }
        if let Some(new) = new {
            kept.bytes += super::row_bytes(&new);
            kept.by_entity.insert(*e, new.clone());
            changes.push((new, 1));
        }
    }
    super::consolidate(changes)
}
