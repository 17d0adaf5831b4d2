//! A statement's read of the world: the world, the statement's table cache and parameter
//! values, and the random sequence of `random()`. Scans, joins and queries take a
//! `Reader`; expressions take only the `EvalCtx` it lends them, whose subqueries run back
//! through the reader (the `Subqueries` impl lives with `run_query`, in `query.rs`), so
//! evaluation never names the world.

use std::cell::{Cell, RefCell};

use super::eval::EvalCtx;
use super::{Budget, Run, TableCache};
use crate::plan::{EntityScan, ParamValues};
use crate::storage::{TableId, World};

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
}

impl<'w> Reader<'w> {
    pub fn new(world: &'w World, run: Run<'w>, rng: u64) -> Reader<'w> {
        Reader {
            world,
            cache: run.cache,
            restores: run.restores,
            params: run.params,
            rng: Cell::new(rng),
            budget: run.budget,
            at: run.at,
        }
    }

    /// What expressions evaluated in this read need.
    pub fn eval(&self) -> EvalCtx<'_> {
        EvalCtx {
            params: self.params,
            rng: &self.rng,
            subqueries: self,
        }
    }

    /// The tables `scan` reads, in table order (cached per statement).
    pub fn tables(&self, scan: &EntityScan) -> Vec<TableId> {
        self.cache.borrow_mut().tables(self.world, scan, self.restores)
    }
}
