//! Live queries: `Connection::subscribe` keeps a query's result and, after every commit
//! that changes it, queues a batch of what changed: the rows that left (diff -n) and those
//! that came (diff +n), as bags (a row present twice counts 2).
//!
//! Invariants:
//! - A batch is made under the write lock, by the write that committed, before any other
//!   statement runs: it is the difference between the result at the commit before and at
//!   this one, and adding every batch up gives the result at this commit. A write inside
//!   a transaction makes none; its COMMIT makes one for all it did; a ROLLBACK none. Each
//!   tick of a TICK outside a transaction is a commit (`systems.rs` hands each but the
//!   last here between ticks).
//!   While a subscription is open no write runs beside others (`beside.rs`), so every
//!   commit passes here.
//! - Each commit runs each subscription's query again and compares it with the result
//!   kept (the way every query can be kept; cheaper ways for the shapes that allow them
//!   come on top of this one, which stays their reference).
//! - A subscription whose query stops running (a component dropped, a failing row) ends
//!   with that error, after the batches before it; so does one whose consumer lets
//!   `MAX_PENDING` batches wait, or whose result grows past the memory limit: its memory
//!   stays bounded.
//! - No query runs on a world a panicking write left half written.
//! - A dropped or ended `Subscription` is forgotten at the next commit.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use hashbrown::HashMap;
use parking_lot::{Condvar, Mutex, RwLockWriteGuard};

use super::{Client, State};
use crate::error::{Error, Result};
use crate::exec::{Budget, Outcome, Run};
use crate::location::Location;
use crate::parse;
use crate::plan::{DataType, OutputColumn, ParamValues};
use crate::storage::{Key, Value};

/// The most batches a subscription keeps waiting for its consumer; one more ends it.
pub const MAX_PENDING: usize = 1024;

/// A database's subscriptions.
#[derive(Debug, Default)]
pub(crate) struct Live {
    feeds: Mutex<Vec<Weak<Feed>>>,
    /// Whether there may be any: a commit without subscriptions looks no further.
    any: AtomicBool,
}

/// One subscription: its query, the result kept, the batches waiting.
#[derive(Debug)]
pub(crate) struct Feed {
    statement: parse::Statement,
    params: ParamValues,
    /// The database's key in the record of locks a thread holds (`wait::held`).
    key: usize,
    inner: Mutex<Inner>,
    ready: Condvar,
}

#[derive(Debug, Default)]
struct Inner {
    /// The result at the last commit: each distinct row, its values and how many times.
    kept: HashMap<Vec<Key>, (Vec<Value>, i64)>,
    columns: Vec<(String, DataType)>,
    pending: VecDeque<Outcome>,
    /// Why it ended, once it did (the consumer gets this after the pending batches).
    ended: Option<String>,
}

impl Live {
    pub(crate) fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Starts a subscription to `statement` (a query) on `state`: its first batch is the
    /// whole result, every row with a positive diff.
    pub(crate) fn subscribe(
        &self,
        statement: parse::Statement,
        params: ParamValues,
        state: &State,
        limit: usize,
        key: usize,
    ) -> Result<Arc<Feed>> {
        let (columns, bag) = run(&statement, &params, state, limit)?;
        let feed = Arc::new(Feed {
            statement,
            params,
            key,
            inner: Mutex::new(Inner {
                columns,
                ..Inner::default()
            }),
            ready: Condvar::new(),
        });
        {
            let mut inner = feed.inner.lock();
            let tick = state.schedule.clock().tick;
            let first = diff(&inner.kept, &bag);
            let batch = batch(&inner.columns, tick, first);
            inner.kept = bag;
            inner.pending.push_back(batch);
        }
        let mut feeds = self.feeds.lock();
        feeds.push(Arc::downgrade(&feed));
        self.any.store(true, Ordering::Release);
        Ok(feed)
    }

    /// After a commit, under the write lock: each subscription's batch of what changed,
    /// when something did. Every write that took the lock is asked (an event emitted or a
    /// component dropped moves no write tick: nothing cheaper tells every change).
    pub(crate) fn publish(&self, state: &State, limit: usize) {
        if !self.any() || state.world.in_transaction() {
            return;
        }
        let mut feeds = self.feeds.lock();
        // Dropped and ended subscriptions are forgotten: when none is left, writes run
        // beside others again.
        feeds.retain(|f| f.upgrade().is_some_and(|f| f.inner.lock().ended.is_none()));
        if feeds.is_empty() {
            self.any.store(false, Ordering::Release);
            return;
        }
        let tick = state.schedule.clock().tick;
        for feed in feeds.iter().filter_map(Weak::upgrade) {
            let mut inner = feed.inner.lock();
            if inner.ended.is_some() {
                continue;
            }
            match run(&feed.statement, &feed.params, state, limit) {
                Ok((_, bag)) => {
                    let rows = diff(&inner.kept, &bag);
                    if rows.is_empty() {
                        continue;
                    }
                    if inner.pending.len() >= MAX_PENDING {
                        // The batches waiting stay readable; the error comes after them.
                        inner.ended = Some(format!(
                            "the subscription ended at tick {tick}: {MAX_PENDING} batches waited unread (read them with next or try_next as they come, and subscribe again)"
                        ));
                        inner.kept.clear();
                    } else if bytes(&bag) > limit {
                        inner.ended = Some(format!(
                            "the subscription ended at tick {tick}: its result grew past the memory limit of {limit} bytes (PRAGMA memory_limit; subscribe again to a narrower query)"
                        ));
                        inner.kept.clear();
                    } else {
                        let batch = batch(&inner.columns, tick, rows);
                        inner.pending.push_back(batch);
                        inner.kept = bag;
                    }
                }
                Err(e) => {
                    inner.ended = Some(format!(
                        "the subscription ended at tick {tick}: its query no longer runs ({e}); subscribe again once it does"
                    ));
                    inner.kept.clear();
                }
            }
            drop(inner);
            feed.ready.notify_all();
        }
    }
}

impl Feed {
    /// The next batch if one is waiting; `Err` once the subscription ended with an error
    /// (after every batch before it).
    pub(crate) fn try_next(&self) -> Result<Option<Outcome>> {
        let mut inner = self.inner.lock();
        next_of(&mut inner)
    }

    /// The next batch, waiting up to `timeout` for one (`Duration::MAX`: for ever).
    /// Refused on a thread that holds the database's lock (inside `with_world`, a Rust
    /// system), where no commit can come while it waits.
    pub(crate) fn next(&self, timeout: Duration) -> Result<Option<Outcome>> {
        let mut inner = self.inner.lock();
        if inner.pending.is_empty() && inner.ended.is_none() && super::wait::held(self.key) {
            return Err(Error::Misuse {
                message: "Subscription::next would wait for a commit that this thread's own hold on the database keeps out (inside with_world or a system): use try_next there".to_owned(),
                at: Location::default(),
            });
        }
        let deadline = Instant::now().checked_add(timeout);
        loop {
            if !inner.pending.is_empty() || inner.ended.is_some() {
                return next_of(&mut inner);
            }
            match deadline {
                Some(deadline) => {
                    if self.ready.wait_until(&mut inner, deadline).timed_out() {
                        return next_of(&mut inner);
                    }
                }
                None => self.ready.wait(&mut inner),
            }
        }
    }
}

fn next_of(inner: &mut Inner) -> Result<Option<Outcome>> {
    if let Some(batch) = inner.pending.pop_front() {
        return Ok(Some(batch));
    }
    match &inner.ended {
        Some(why) => Err(Error::Misuse {
            message: why.clone(),
            at: Location::default(),
        }),
        None => Ok(None),
    }
}

impl Client {
    /// Subscribes to the query `sql` with `params`: the feed, its first batch (the whole
    /// result) waiting. Refused inside a transaction, whose changes are not committed.
    pub(crate) fn subscribe(&self, sql: &str, params: &ParamValues) -> Result<Arc<Feed>> {
        let _call = self.enter();
        let statement = parse::parse_one(sql)?;
        let at = statement.at;
        if !matches!(statement.kind, parse::StatementKind::Select(_)) {
            return Err(Error::Misuse {
                message: format!(
                    "a subscription is to a query (SELECT or WITH …), not a {} statement",
                    statement.kind.verb()
                ),
                at,
            });
        }
        if !self.is_autocommit() {
            return Err(Error::Misuse {
                message: "subscribe before BEGIN or after COMMIT: inside a transaction the first batch would hold what is not committed"
                    .to_owned(),
                at,
            });
        }
        self.refuse_in_setup("subscribe", at)?;
        let state = self.read_state(at).map_err(|e| *e)?;
        if state.world.in_transaction() {
            return Err(Error::Misuse {
                message: "subscribe after the transaction begun on the world (with_world_mut) ends: its changes are not committed".to_owned(),
                at,
            });
        }
        let limit = self.engine.memory_limit.load(Ordering::Relaxed);
        self.engine
            .live
            .subscribe(statement, params.clone(), &state, limit, self.key())
    }
}

/// The write lock as a write holds it: derefs to the database's state; when dropped
/// outside a transaction, tells the subscriptions of what was committed (`live.rs`)
/// before the lock is given back, so that no other statement runs between a commit and
/// its batches.
pub(super) struct Writing<'c> {
    guard: RwLockWriteGuard<'c, State>,
    client: &'c Client,
}

impl<'c> Writing<'c> {
    pub(super) fn new(guard: RwLockWriteGuard<'c, State>, client: &'c Client) -> Writing<'c> {
        Writing { guard, client }
    }
}

impl std::ops::Deref for Writing<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.guard
    }
}

impl std::ops::DerefMut for Writing<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.guard
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        let engine = &self.client.engine;
        // A write that panicked left the world half written: no query runs on it.
        if engine.live.any() && !std::thread::panicking() {
            let limit = engine.memory_limit.load(Ordering::Relaxed);
            engine.live.publish(&self.guard, limit);
        }
    }
}

type Bag = HashMap<Vec<Key>, (Vec<Value>, i64)>;

/// Runs the query on `state`: its columns and its rows as a bag.
fn run(
    statement: &parse::Statement,
    params: &ParamValues,
    state: &State,
    limit: usize,
) -> Result<(Vec<(String, DataType)>, Bag)> {
    let plan = state.planned(None, statement, params).map_err(|e| *e)?;
    let cache = std::cell::RefCell::default();
    let budget = Budget::new(limit);
    let run = Run {
        cache: &cache,
        restores: state.restores,
        at: statement.at,
        params,
        budget: &budget,
        clock: state.schedule.clock(),
        events: None,
        seed: None,
        spare: None,
        profile: None,
    };
    let outcome = crate::exec::run_read(&plan, &state.world, run)?;
    let columns = outcome
        .columns
        .iter()
        .map(|c: &OutputColumn| (c.name.to_string(), c.ty))
        .collect();
    let mut bag: Bag = HashMap::new();
    for i in 0..outcome.rows.len {
        let row = outcome.rows.row(i);
        let key: Vec<Key> = row.iter().map(Key::exact).collect();
        bag.entry(key).or_insert_with(|| (row, 0)).1 += 1;
    }
    Ok((columns, bag))
}

/// About how many bytes a kept result holds: what a subscription's memory is bounded by.
fn bytes(bag: &Bag) -> usize {
    let value = |v: &Value| match v {
        Value::Text(s) => 32 + s.len(),
        _ => 16,
    };
    bag.values()
        .map(|(row, _)| 64 + row.iter().map(|v| 2 * value(v)).sum::<usize>())
        .sum()
}

/// What changed from `old` to `new`: each row and its count's change.
fn diff(old: &Bag, new: &Bag) -> Vec<(Vec<Value>, i64)> {
    let mut out = Vec::new();
    for (key, (row, n)) in old {
        let now = new.get(key).map_or(0, |(_, m)| *m);
        if now != *n {
            out.push((row.clone(), now - n));
        }
    }
    for (key, (row, m)) in new {
        if !old.contains_key(key) {
            out.push((row.clone(), *m));
        }
    }
    // Retractions first, then what came: a consumer applying them in order never holds
    // a negative count.
    out.sort_by_key(|(_, d)| *d > 0);
    out
}

/// A batch as rows: the query's columns, then `tick` and `diff`.
fn batch(columns: &[(String, DataType)], tick: u64, rows: Vec<(Vec<Value>, i64)>) -> Outcome {
    let mut names: Vec<(&str, DataType)> = columns.iter().map(|(n, t)| (n.as_str(), *t)).collect();
    names.push(("tick", DataType::Int));
    names.push(("diff", DataType::Int));
    let tick = i64::try_from(tick).unwrap_or(i64::MAX);
    let rows = rows
        .into_iter()
        .map(|(mut row, d)| {
            row.push(Value::Int(tick));
            row.push(Value::Int(d));
            row
        })
        .collect();
    Outcome::of_rows(&names, rows)
}
