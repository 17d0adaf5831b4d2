//! Subscriptions kept per entity (`plan::Upkeep::PerEntity`): the query's rows kept by
//! the entities each comes from (one, or one of each relation of a join); at a commit,
//! only the entities the change log (`changelog.rs`) noted for a relation's components
//! are read again (the query with that relation's scan narrowed to them, joined to the
//! others: through the entity index or an index where the join allows, else to their
//! whole rows), and each row compared with the one kept.
//!
//! Invariants:
//! - `Rows` holds, for each row of the result, that row (the query's columns, without
//!   the entities) by its `RowKey`: the query's result at the last commit, as a bag.
//!   For a join, `Rows::index` finds, for an entity of a relation, the keys of every row
//!   it is in (a superset: a key it names may be gone).
//! - A row none of whose entities a relation's read took again is the same as at the
//!   last commit (`plan::Upkeep`): the rows that changed are among those kept or read
//!   again with such an entity (`Rows::affected`).
//! - A batch made here is the one a run of the whole query and a comparison would make:
//!   a row that did not change adds nothing; one that changed adds -old +new; rows that
//!   cancel (one left with the values another came with) are summed away.
//! - The plan is bound again whenever the catalog, a rollback or a LOAD may have made it
//!   stale (`Stamp`); a query that stops binding ends its subscriptions.

use std::cell::RefCell;

use hashbrown::HashMap;
use smallvec::{SmallVec, smallvec};

use super::State;
use crate::error::{Error, Result};
use crate::exec::{Budget, Chunk, ExecError, Run};
use crate::parse;
use crate::plan::{DataType, ParamValues, Plan, QueryPlan, RelationSource, SetPlan, Upkeep};
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

/// A query's plan for being kept per entity: its rows followed by their entities, one
/// for each relation (for a query kept per group, each row's contribution followed by
/// its entities).
#[derive(Debug)]
pub(super) struct Bound {
    plan: QueryPlan,
    /// A query kept per group: the query itself, whose HAVING and select list make a
    /// group's row of its key values and aggregates' results (`group.rs`).
    pub(super) folded: Option<QueryPlan>,
    /// For each relation, the components whose changes change its rows, and those its
    /// entities must have (`Upkeep::PerEntity`).
    relations: Vec<(Vec<ComponentId>, Vec<ComponentId>)>,
    /// Every relation's components: what the change log watches for it.
    pub(super) components: Vec<ComponentId>,
    pub(super) stamp: Stamp,
}

impl Bound {
    /// The query's own columns (not the entities after them).
    pub(super) fn columns(&self) -> Vec<(String, DataType)> {
        if let Some(folded) = &self.folded {
            return folded.columns.iter().map(|c| (c.name.clone(), c.ty)).collect();
        }
        let columns = &self.plan.columns;
        columns[..columns.len().saturating_sub(self.relations.len())]
            .iter()
            .map(|c| (c.name.clone(), c.ty))
            .collect()
    }

    /// How many relations the query joins (one when it joins none).
    pub(super) fn relations(&self) -> usize {
        self.relations.len()
    }

    /// For each relation, the entities of the change log's `log` whose changes may
    /// change its rows, sorted; `None` when there are none.
    pub(super) fn changed(&self, log: &HashMap<ComponentId, Vec<Entity>>) -> Option<Vec<Vec<Entity>>> {
        let mut any = false;
        let changed = self
            .relations
            .iter()
            .map(|(components, _)| {
                let mut ids: Vec<Entity> = components
                    .iter()
                    .filter_map(|c| log.get(c))
                    .flatten()
                    .copied()
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                any |= !ids.is_empty();
                ids
            })
            .collect();
        any.then_some(changed)
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
        match *crate::plan::plan(statement, &state.world, params)?.0 {
            Plan::Query(query) => Ok(Some(query)),
            _ => Ok(None),
        }
    };
    let Some(mut plan) = query(state)? else {
        return Ok(None);
    };
    let (relations, folded) = match Upkeep::of(&plan) {
        Upkeep::PerEntity { relations } => {
            if crate::plan::with_entity_column(&mut plan).is_none() {
                return Ok(None);
            }
            (relations, None)
        }
        Upkeep::PerGroup { relations } => {
            // Bound twice: the query, and its contributions.
            let Some(folded) = query(state)? else {
                return Ok(None);
            };
            if crate::plan::contributions(&mut plan).is_none() {
                return Ok(None);
            }
            (relations, Some(folded))
        }
        Upkeep::Rerun { .. } => return Ok(None),
    };
    let required = match &plan.body {
        SetPlan::Select(select) => select
            .relations
            .iter()
            .map(|r| match &r.source {
                RelationSource::Entities(scan) => scan.required.to_vec(),
                _ => Vec::new(),
            })
            .collect(),
        _ => Vec::new(),
    };
    let relations: Vec<(Vec<ComponentId>, Vec<ComponentId>)> = relations
        .into_iter()
        .map(|r| r.components)
        .zip(required)
        .collect();
    let mut components: Vec<ComponentId> = relations.iter().flat_map(|(c, _)| c.iter().copied()).collect();
    components.sort_unstable();
    components.dedup();
    Ok(Some(Bound {
        plan,
        folded,
        relations,
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
        input: None,
    })
}

/// The entities a row comes from: one for each relation of the query, in FROM order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct RowKey(SmallVec<[Entity; 2]>);

impl RowKey {
    /// The key of a row of a one-relation query: its entity.
    pub(super) fn one(e: Entity) -> RowKey {
        RowKey(smallvec![e])
    }
}

impl std::ops::Deref for RowKey {
    type Target = [Entity];

    /// The entities, in FROM order.
    fn deref(&self) -> &[Entity] {
        &self.0
    }
}

impl std::hash::Hash for RowKey {
    /// Each entity's bits, without the count (every key of a query has one entity for
    /// each of its relations): a one-relation query's key hashes as its entity does.
    /// Written out and inlined because each commit hashes every key read again several
    /// times; hashing through the list's own `Hash` compiled to a call per lookup.
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        for e in &self.0 {
            state.write_u64(e.to_bits());
        }
    }
}

/// Each row as kept, by the entities it comes from.
#[derive(Debug, Default)]
pub(super) struct Rows {
    by_key: HashMap<RowKey, Vec<Value>>,
    /// For a join, for each relation: the keys of the rows each of its entities is in,
    /// to find the rows a changed entity was in.
    index: Vec<HashMap<Entity, Keys>>,
    /// About how many bytes they hold (`super::row_bytes`).
    pub(super) bytes: usize,
}

impl Rows {
    /// No rows, of a query of `relations` relations.
    fn new(relations: usize) -> Rows {
        Rows {
            index: match relations {
                0 | 1 => Vec::new(),
                n => (0..n).map(|_| HashMap::new()).collect(),
            },
            ..Rows::default()
        }
    }

    pub(super) fn get(&self, key: &RowKey) -> Option<&Vec<Value>> {
        self.by_key.get(key)
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Vec<Value>> {
        self.by_key.values()
    }

    pub(super) fn keys(&self) -> impl Iterator<Item = &RowKey> {
        self.by_key.keys()
    }

    /// The rows and their keys, in no order.
    pub(super) fn into_rows(self) -> impl Iterator<Item = (RowKey, Vec<Value>)> {
        self.by_key.into_iter()
    }

    /// Keeps `row` under `key`, unless a row is kept under it already: that one stays
    /// (a read's first row of a key is its row; every other caller inserts a key that
    /// is not kept). One lookup.
    pub(super) fn insert(&mut self, key: RowKey, row: Vec<Value>) {
        let hashbrown::hash_map::Entry::Vacant(slot) = self.by_key.entry(key) else {
            return;
        };
        self.bytes += super::row_bytes(&row) + INDEXED * self.index.len();
        if self.index.is_empty() {
            slot.insert(row);
            return;
        }
        let key = slot.key().clone();
        slot.insert(row);
        for (map, e) in self.index.iter_mut().zip(key.iter()) {
            map.entry(*e).or_default().insert(&key);
        }
    }

    pub(super) fn remove(&mut self, key: &RowKey) -> Option<Vec<Value>> {
        let row = self.by_key.remove(key)?;
        self.bytes = self
            .bytes
            .saturating_sub(super::row_bytes(&row) + INDEXED * self.index.len());
        for (map, e) in self.index.iter_mut().zip(key.iter()) {
            if let Some(keys) = map.get_mut(e)
                && keys.remove(key)
            {
                map.remove(e);
            }
        }
        Some(row)
    }

    /// The rows as a bag, in the order of their entities.
    pub(super) fn bag(&self) -> super::Bag {
        let mut keys: Vec<&RowKey> = self.by_key.keys().collect();
        keys.sort_unstable();
        super::bag_of(keys.into_iter().map(|k| &self.by_key[k]))
    }

    /// The keys of the rows that may have changed: those kept or `fresh` with, for
    /// some relation, one of its `changed` entities; sorted.
    pub(super) fn affected(&self, changed: &[Vec<Entity>], fresh: &Rows) -> Vec<RowKey> {
        if let [ids] = changed {
            // One relation: its rows read again are those of `ids`, sorted already.
            return ids.iter().map(|e| RowKey::one(*e)).collect();
        }
        let mut keys: Vec<RowKey> = fresh.by_key.keys().cloned().collect();
        match self.index.as_slice() {
            [] => keys.extend(changed.iter().flatten().map(|e| RowKey::one(*e))),
            index => {
                for (map, ids) in index.iter().zip(changed) {
                    for keys_of in ids.iter().filter_map(|e| map.get(e)) {
                        keys_of.each(|k| keys.push(k.clone()));
                    }
                }
            }
        }
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}

/// The keys of the rows one entity of a join's relation is in: a few in a list, more in
/// a set (an entity many rows join to, taken out of one row at a time).
#[derive(Debug)]
enum Keys {
    Few(SmallVec<[RowKey; 1]>),
    Many(hashbrown::HashSet<RowKey>),
}

impl Default for Keys {
    fn default() -> Self {
        Keys::Few(SmallVec::new())
    }
}

/// About how many bytes a joined row's key takes in each relation's index
/// (`benches/live_memory.rs` measures about 90).
const INDEXED: usize = 96;

/// Past this many keys, a list becomes a set.
const FEW_KEYS: usize = 16;

impl Keys {
    fn insert(&mut self, key: &RowKey) {
        match self {
            Keys::Few(list) if list.len() < FEW_KEYS => list.push(key.clone()),
            Keys::Few(list) => {
                let mut set: hashbrown::HashSet<RowKey> = list.drain(..).collect();
                set.insert(key.clone());
                *self = Keys::Many(set);
            }
            Keys::Many(set) => {
                set.insert(key.clone());
            }
        }
    }

    /// Takes `key` out; whether none is left.
    fn remove(&mut self, key: &RowKey) -> bool {
        match self {
            Keys::Few(list) => {
                if let Some(i) = list.iter().position(|k| k == key) {
                    list.swap_remove(i);
                }
                list.is_empty()
            }
            Keys::Many(set) => {
                set.remove(key);
                set.is_empty()
            }
        }
    }

    fn each(&self, mut f: impl FnMut(&RowKey)) {
        match self {
            Keys::Few(list) => list.iter().for_each(f),
            Keys::Many(set) => set.iter().for_each(&mut f),
        }
    }
}

/// The rows `bound` gives: every one (`changed` `None`), or, for each relation, those
/// with one of its `changed` entities that still has the components the relation
/// requires.
pub(super) fn read(
    bound: &Bound,
    params: &ParamValues,
    state: &State,
    limit: usize,
    changed: Option<&[Vec<Entity>]>,
) -> Result<Rows> {
    let mut rows = Rows::new(bound.relations.len());
    let Some(changed) = changed else {
        read_into(&mut rows, bound, params, state, limit, None)?;
        return Ok(rows);
    };
    let joined = bound.relations.len() > 1;
    for (r, (ids, (_, required))) in changed.iter().zip(&bound.relations).enumerate() {
        // An entity without them has no rows: a join read from it would read the other
        // relations for none.
        let ids: Vec<Entity> = ids
            .iter()
            .copied()
            .filter(|e| !joined || required.iter().all(|c| state.world.has(*e, *c).unwrap_or(false)))
            .collect();
        if !ids.is_empty() {
            read_into(&mut rows, bound, params, state, limit, Some((r, ids)))?;
        }
    }
    Ok(rows)
}

/// Adds the rows `bound` gives (its relation `r` reading only `ids` when given as
/// `(r, ids)`) to `rows`; a row already there (read from another relation's entity) is
/// the same row.
fn read_into(
    rows: &mut Rows,
    bound: &Bound,
    params: &ParamValues,
    state: &State,
    limit: usize,
    ids: Option<(usize, Vec<Entity>)>,
) -> Result<()> {
    let at = crate::location::Location::default();
    let chunk: Chunk = with_run(state, params, limit, |run| {
        crate::exec::query_rows_for(&bound.plan, ids, &state.world, run)
    })?;
    let n = bound.relations.len();
    for i in 0..chunk.len {
        let mut row = chunk.row(i);
        let mut key = RowKey(SmallVec::with_capacity(n));
        for v in row.drain(row.len().saturating_sub(n)..) {
            match v {
                Value::Entity(e) => key.0.push(e),
                _ => {
                    return Err(Error::from(ExecError::internal(
                        at,
                        "a row kept per entity has no entity",
                    )));
                }
            }
        }
        if key.len() != n {
            return Err(Error::from(ExecError::internal(
                at,
                "a row kept per entity has no entity",
            )));
        }
        rows.insert(key, row);
    }
    Ok(())
}

/// The rows of the keys `affected` read again (`fresh`) against those kept: `kept`
/// becomes the result now; what changed, retractions first, each part in the keys'
/// order.
pub(super) fn update(kept: &mut Rows, affected: &[RowKey], mut fresh: Rows) -> super::Changes {
    let mut changes = Vec::new();
    for key in affected {
        let new = fresh.by_key.remove(key);
        match (kept.by_key.get_mut(key), new) {
            (None, None) => {}
            (Some(old), Some(new)) => {
                if super::same_row(old, &new) {
                    continue;
                }
                // The same key with other values: replaced where it is kept (its place
                // in the index is unchanged), without a second lookup.
                kept.bytes = (kept.bytes + super::row_bytes(&new)).saturating_sub(super::row_bytes(old));
                let old = std::mem::replace(old, new.clone());
                changes.push((old, -1));
                changes.push((new, 1));
            }
            (Some(_), None) => {
                if let Some(old) = kept.remove(key) {
                    changes.push((old, -1));
                }
            }
            (None, Some(new)) => {
                kept.insert(key.clone(), new.clone());
                changes.push((new, 1));
            }
        }
    }
    super::consolidate(changes)
}
