//! Parallel execution: a statement over many rows splits its morsels into as many
//! stretches as `PRAGMA threads` allows, run by the statement's thread and ecsql's own
//! pool of waiting threads (`pool`), and its result is the one a single thread gives.
//!
//! Invariants:
//! - Each thread takes one contiguous stretch of the morsels, in order; stretches are
//!   merged in order (rows appended, aggregates merged as `aggregate.rs` says), so the
//!   rows, their order and every sum are those of one thread.
//! - When stretches fail, the error is the first stretch's that failed: the one a single
//!   thread, reading the morsels in order, would have met first.
//! - Only what reads the same whatever the thread runs it: expressions without
//!   `random()`, subqueries or outer values (`pure`).
//! - Small statements stay on one thread: a statement is split only into as many
//!   stretches as it has `min_parallel_rows` rows (a stretch may be shorter when its
//!   morsels are of very different sizes), and into no more than the machine's cores.

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;

use super::Chunk;
use super::Clock;
use super::budget::{Split, cores};
use super::error::ExecError;
use super::eval::{EvalCtx, Subqueries};
use crate::location::Location;
use crate::plan::{BoundExpr, BoundKind, ParamValues, QueryPlan};
use crate::storage::Value;

type Result<T> = std::result::Result<T, ExecError>;

/// The fewest rows a part is given unless `PRAGMA min_parallel_rows` says otherwise:
/// waking a waiting thread costs 40-70 µs on this project's 2-core machine, which simple
/// passes over 65,536 to 250,000 rows did not win back (docs/performance.md).
pub const DEFAULT_MIN_ROWS: usize = 1 << 18;

/// `items` (each of `rows(item)` rows) as contiguous stretches of about equal rows: at
/// most `split.threads` of them and the machine's cores, and no more than there are
/// `split.min_rows` rows; `None` when one thread should do it all.
pub fn split<T>(items: &[T], rows: impl Fn(&T) -> usize, split: Split) -> Option<Vec<&[T]>> {
    let total: usize = items.iter().map(&rows).sum();
    let parts = split
        .threads
        .min(cores())
        .min(total / split.min_rows.max(1))
        .min(items.len());
    if parts < 2 {
        return None;
    }
    let mut stretches = Vec::with_capacity(parts);
    let (mut start, mut taken) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        taken += rows(item);
        // Close the stretch once it holds its share of the rows.
        let share = total * (stretches.len() + 1) / parts;
        if taken >= share && stretches.len() + 1 < parts && i + 1 < items.len() {
            stretches.push(&items[start..=i]);
            start = i + 1;
        }
    }
    stretches.push(&items[start..]);
    Some(stretches)
}

/// ecsql's own pool of waiting threads: one fewer than the machine's cores, as the thread
/// that runs a statement takes its first stretch. Not rayon's global pool: a program's
/// own rayon jobs never run inside a statement's wait (where one calling ecsql would wait
/// for the lock the statement holds), nor hold up its stretches. `None` when the system
/// refuses to start it: every stretch then runs on the statement's thread.
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(cores().saturating_sub(1).max(1))
            .thread_name(|i| format!("ecsql-worker-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Runs `work` on each stretch (what a thread needs of it: its morsels, the rows it may
/// write), the first on this thread and the others on ecsql's pool (`pool`), and gives
/// their results in stretch order. At most the machine's cores run at once, whatever the
/// number of stretches. A stretch whose work panics is an internal error, not a panic of
/// the caller.
pub fn run<S: Send, R: Send>(
    stretches: Vec<S>,
    at: Location,
    work: impl Fn(S) -> R + Sync,
) -> Result<Vec<R>> {
    let work = &work;
    let mut results: Vec<Option<R>> = stretches.iter().map(|_| None).collect();
    // One stretch runs on this thread, with no pool to start or wake.
    let pool = if stretches.len() > 1 { pool() } else { None };
    let Some(pool) = pool else {
        for (stretch, slot) in stretches.into_iter().zip(results.iter_mut()) {
            *slot = catch(|| work(stretch));
        }
        return collect(results, at);
    };
    pool.in_place_scope(|scope| {
        let mut pairs = stretches.into_iter().zip(results.iter_mut());
        let first = pairs.next();
        for (stretch, slot) in pairs {
            scope.spawn(move |_| *slot = catch(|| work(stretch)));
        }
        // The first stretch runs on this thread, while the pool runs the others.
        if let Some((stretch, slot)) = first {
            *slot = catch(|| work(stretch));
        }
    });
    collect(results, at)
}

/// Each stretch's result, or an internal error for one that panicked.
fn collect<R>(results: Vec<Option<R>>, at: Location) -> Result<Vec<R>> {
    results
        .into_iter()
        .map(|r| r.ok_or_else(|| ExecError::internal(at, "a thread of the statement panicked")))
        .collect()
}

/// `f`'s result, or `None` when it panicked.
fn catch<R>(f: impl FnOnce() -> R) -> Option<R> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok()
}

/// What evaluating `pure` expressions needs besides the parameters and the clock: an
/// outer value list and a `random()` state neither reads, and no subqueries. A
/// statement's other threads evaluate with it, and so may its own thread where a
/// `Reader` would cost more than the expression (a system's UPDATE of a small table).
#[derive(Default)]
pub struct PureEval {
    outer: RefCell<Vec<Value>>,
    rng: Cell<u64>,
}

impl PureEval {
    /// The context to evaluate `pure` expressions with.
    pub fn cx<'a>(&'a self, params: &'a ParamValues, clock: Clock) -> EvalCtx<'a> {
        EvalCtx {
            params,
            outer: &self.outer,
            rng: &self.rng,
            subqueries: &NoSubqueries,
            clock,
        }
    }
}

/// The subqueries of a statement's other threads: none (they run only `pure`
/// expressions, which hold none).
pub struct NoSubqueries;

impl Subqueries for NoSubqueries {
    fn run(&self, _: &QueryPlan) -> Result<Chunk> {
        Err(ExecError::internal(
            Location::default(),
            "a subquery on a worker thread",
        ))
    }

    fn run_apart(&self, plan: &QueryPlan) -> Result<Chunk> {
        self.run(plan)
    }

    fn keep(&self, _: usize, _: Location) -> Result<()> {
        Ok(())
    }

    fn give_back(&self, _: usize) {}
}

/// True when `e` evaluates the same on any thread and any number of times: no
/// `random()`, no subquery, no value of a query around it.
pub fn pure(e: &BoundExpr) -> bool {
    let mut pure = true;
    e.visit(&mut |node| {
        pure &= match &node.kind {
            BoundKind::Outer(_)
            | BoundKind::InSubquery { .. }
            | BoundKind::Subquery { .. }
            | BoundKind::Exists { .. } => false,
            BoundKind::Call(f, _) => !f.properties().volatile,
            _ => true,
        }
    });
    pure
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stretches_cover_every_item_in_order_with_enough_rows() {
        const MIN: usize = 100;
        let two = |threads| Split {
            threads,
            min_rows: MIN,
        };
        let items: Vec<usize> = vec![MIN; 7];
        if cores() >= 2 {
            let parts = split(&items, |&r| r, two(2)).unwrap();
            assert_eq!(parts.len(), 2);
            assert_eq!(parts.concat(), items);
            assert_eq!(parts[0].len(), 4);
        }
        // Too few rows for two parts, or one thread allowed: one.
        assert!(split(&[MIN + 1], |&r| r, two(2)).is_none());
        assert!(split(&[MIN, MIN - 1], |&r| r, two(2)).is_none());
        assert!(split(&[MIN, MIN], |&r| r, two(1)).is_none());
        // Never more parts than cores.
        assert!(split(&items, |&r| r, two(64)).is_none_or(|p| p.len() <= cores()));
        // Uneven items: each stretch is whole items, none empty.
        for items in [vec![10 * MIN, 1, 1, 1, MIN], vec![1, 1, 10 * MIN]] {
            for threads in 2..6 {
                if let Some(parts) = split(&items, |&r| r, two(threads)) {
                    assert!(parts.iter().all(|p| !p.is_empty()));
                    assert_eq!(parts.concat(), items);
                }
            }
        }
    }

    #[test]
    fn results_come_in_stretch_order() {
        let items: Vec<u32> = (0..100).collect();
        let stretches: Vec<&[u32]> = items.chunks(7).collect();
        let sums = run(stretches, Location::default(), |s| s.iter().sum::<u32>()).unwrap();
        let expected: Vec<u32> = items.chunks(7).map(|s| s.iter().sum()).collect();
        assert_eq!(sums, expected);
    }
}
