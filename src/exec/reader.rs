//! A statement's read of the world: the world, the statement's table cache and parameter
//! values, and the random sequence of `random()`. Scans, joins and queries take a
//! `Reader` (all but a query that is a point read, run straight from its plan by
//! `query::point_query`); expressions take only the `EvalCtx` it lends them, whose subqueries run back
//! through the reader (the `Subqueries` impl lives with `run_query`, in `query.rs`), so
//! evaluation never names the world.

use std::cell::{Cell, RefCell};
use std::ops::Range;

use super::eval::EvalCtx;
use super::{Budget, Chunk, Clock, EventReads, ExecError, Run, TableCache};
use crate::plan::{EntityScan, ParamValues};
use crate::storage::{ComponentId, Entity, EventId, EventQueue, TableId, World};

/// What the threads of one statement share of its `Reader`: everything but its caches,
/// its random sequence and its event cursors (`Reader::share`).
#[derive(Clone, Copy)]
pub struct ReadShare<'w> {
    world: &'w World,
    restores: u64,
    params: &'w ParamValues,
    budget: &'w Budget<'w>,
    at: crate::location::Location,
    clock: Clock,
    since: Option<u64>,
    profile: Option<&'w super::profile::Profile>,
}

impl<'w> ReadShare<'w> {
    /// The budget a stretch of the read on another thread starts with (`Budget::part`).
    pub fn part_budget(&self) -> Budget<'w> {
        self.budget.part()
    }
}

pub struct Reader<'w> {
    pub world: &'w World,
    cache: &'w RefCell<TableCache>,
    restores: u64,
    pub params: &'w ParamValues,
    /// The state of `random()`'s sequence; an UPDATE carries it from batch to batch.
    pub rng: Cell<u64>,
    /// The statement's interrupt and memory budget.
    pub budget: &'w Budget<'w>,
    /// Where the statement starts, for the errors of the budget.
    pub at: crate::location::Location,
    pub clock: Clock,
    events: Option<&'w EventReads>,
    /// The write tick after which rows count as changed for this read's reader.
    since: Option<u64>,
    /// The outer values of the correlated subqueries running (`EvalCtx::outer`).
    outer: RefCell<Vec<crate::storage::Value>>,
    /// A scan (by address) read only for these entities: a join by id (`with_ids`).
    looked_up: RefCell<Option<(usize, Vec<Entity>)>>,
    /// The rows each recursive query running added in its last round, by its `work`
    /// number (`with_work`).
    work: RefCell<Vec<(usize, std::rc::Rc<Chunk>)>>,
    /// EXPLAIN ANALYZE's measurements, when this run takes them.
    pub profile: Option<&'w super::profile::Profile>,
}

impl<'w> Reader<'w> {
    pub fn new(world: &'w World, run: Run<'w>) -> Reader<'w> {
        Reader::continuing(world, run, super::seed(&run))
    }

    /// A reader whose `random()` sequence goes on from `rng` (an UPDATE's next batch).
    pub fn continuing(world: &'w World, run: Run<'w>, rng: u64) -> Reader<'w> {
        Reader {
            world,
            cache: run.cache,
            restores: run.restores,
            params: run.params,
            rng: Cell::new(rng),
            budget: run.budget,
            at: run.at,
            clock: run.clock,
            events: run.events,
            since: run.changes_since(),
            outer: RefCell::default(),
            looked_up: RefCell::default(),
            work: RefCell::default(),
            profile: run.profile,
        }
    }

    /// What another thread of this statement needs to read as this reader does
    /// (`Reader::of_share`): its world, parameters, budget and clock, not its caches.
    pub fn share(&self) -> ReadShare<'w> {
        ReadShare {
            world: self.world,
            restores: self.restores,
            params: self.params,
            budget: self.budget,
            at: self.at,
            clock: self.clock,
            since: self.since,
            profile: self.profile,
        }
    }

    /// A reader on another thread of a statement, as `share` describes, with a table
    /// cache and a budget (`Budget::part`) of its own and no event cursors: it reads
    /// entity scans, not event rows.
    pub fn of_share(
        share: ReadShare<'w>,
        cache: &'w RefCell<TableCache>,
        budget: &'w Budget<'w>,
    ) -> Reader<'w> {
        Reader {
            world: share.world,
            cache,
            restores: share.restores,
            params: share.params,
            rng: Cell::new(0),
            budget,
            at: share.at,
            clock: share.clock,
            events: None,
            since: share.since,
            outer: RefCell::default(),
            looked_up: RefCell::default(),
            work: RefCell::default(),
            profile: share.profile,
        }
    }

    /// Runs `f` with `scan` reading only `ids` (found through the entity index, in the
    /// order a walk meets them), as a join by id reads the relation it joins.
    pub fn with_ids<T>(&self, scan: &EntityScan, ids: Vec<Entity>, f: impl FnOnce() -> T) -> T {
        let before = self
            .looked_up
            .replace(Some((std::ptr::from_ref(scan) as usize, ids)));
        let out = f();
        self.looked_up.replace(before);
        out
    }

    /// Runs `f` with the recursive query `work`'s last round being `rows`
    /// (`RelationSource::WorkTable` reads them).
    pub fn with_work<T>(&self, work: usize, rows: std::rc::Rc<Chunk>, f: impl FnOnce() -> T) -> T {
        self.work.borrow_mut().push((work, rows));
        let out = f();
        self.work.borrow_mut().pop();
        out
    }

    /// The rows the recursive query `work` added in its last round, while it runs.
    pub fn work_rows(&self, work: usize) -> Option<std::rc::Rc<Chunk>> {
        self.work
            .borrow()
            .iter()
            .rev()
            .find(|(w, _)| *w == work)
            .map(|(_, rows)| rows.clone())
    }

    /// Whether a join by id reads `scan` (`with_ids`).
    pub fn looks_up(&self, scan: &EntityScan) -> bool {
        matches!(&*self.looked_up.borrow(), Some((at, _)) if *at == std::ptr::from_ref(scan) as usize)
    }

    /// The entities `scan` is read for, when a join by id reads it (`with_ids`).
    pub fn ids_for(&self, scan: &EntityScan) -> Option<Vec<Entity>> {
        match &*self.looked_up.borrow() {
            Some((at, ids)) if *at == std::ptr::from_ref(scan) as usize => Some(ids.clone()),
            _ => None,
        }
    }

    /// The rows of `event` this read sees: past the reader's cursor, or every row kept
    /// for a statement that is not a reader. Notes how far the reader got.
    pub fn event_rows(&self, event: EventId) -> Result<(&'w EventQueue, Range<usize>), ExecError> {
        let queue = self
            .world
            .event(event)
            .map_err(|e| ExecError::storage(self.at, e))?;
        let start = match self.events {
            Some(reads) => {
                reads.reached.borrow_mut().advance(event, queue.end_seq());
                queue.row_of(reads.from.get(event))
            }
            None => 0,
        };
        Ok((queue, start..queue.len()))
    }

    /// The write tick after which rows count as changed (added) for this read's reader;
    /// `None` (every row present) for a statement that is not a reader, or a reader's
    /// first run.
    pub fn changes_since(&self) -> Option<u64> {
        self.since
    }

    /// The ids that lost `component` since this read's reader last ran (every one still
    /// logged, for a statement that is no reader or a reader's first run), oldest first.
    pub fn removed(&self, component: ComponentId) -> &'w [Entity] {
        self.world
            .removal_log(component)
            .map_or(&[], |log| log.since(self.changes_since()))
    }

    /// The outer value `n` of the correlated subquery running (`BoundKind::Outer`).
    pub fn outer_value(&self, n: usize) -> Option<crate::storage::Value> {
        self.outer.borrow().get(n).cloned()
    }

    /// What expressions evaluated in this read need.
    pub fn eval(&self) -> EvalCtx<'_> {
        EvalCtx {
            params: self.params,
            outer: &self.outer,
            rng: &self.rng,
            subqueries: self,
            clock: self.clock,
        }
    }

    /// The tables `scan` reads, in table order (cached per statement).
    pub fn tables(&self, scan: &EntityScan) -> impl std::ops::Deref<Target = [TableId]> + '_ {
        std::cell::RefMut::map(self.cache.borrow_mut(), |c| {
            c.tables(self.world, scan, self.restores)
        })
    }
}

#[cfg(test)]
mod tests {
    /// The parts a statement's threads share must cross threads.
    #[test]
    fn a_share_crosses_threads() {
        fn sync<T: Sync + Send>() {}
        sync::<super::ReadShare<'static>>();
        sync::<crate::plan::SelectPlan>();
        sync::<crate::plan::UpdatePlan>();
    }
}
