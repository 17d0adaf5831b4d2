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
//! - Subscriptions to the same query (the same statement as printed back, the same
//!   parameter values) share one `Query`: one result kept, one run per commit, one batch
//!   handed to each. A subscription that joins one already kept starts from that result,
//!   which is the last commit's.
//! - A query is kept the way `plan::Upkeep` says: per entity or joined row
//!   (`entity.rs`: only the entities the change log, `changelog.rs`, noted for a
//!   relation's components are read again), per group (`group.rs`), or by running it
//!   again at each commit and comparing its result with the one kept (the way every
//!   query can be kept, and the reference the others are tested against; also taken,
//!   until the plan is bound again, by a group whose avg is past what is kept exactly).
//!   A query per entity whose components the log did not watch through the last commit
//!   (it was just subscribed, or a LOAD put another world in place) is read whole once.
//! - A reader that lets more than `max_pending` batches wait has them merged into one
//!   (diffs of the same row summed, rows that cancel dropped, the tick the latest): what
//!   it adds up stays exact, and what waits is bounded by the results at two commits.
//! - A query that stops running (a component dropped, a failing row), or whose result
//!   grows past the memory limit, ends every subscription to it with that error, after
//!   the batches before it.
//! - No query runs on a world a panicking write left half written.
//! - A dropped or ended `Subscription` is forgotten at the next commit; a `Query` with no
//!   subscription left, with it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use hashbrown::HashMap;
use parking_lot::{Condvar, Mutex, RwLockWriteGuard};

use super::{Client, State};
use crate::error::{Error, Result};
use crate::exec::{Outcome, Run};
use crate::location::Location;
use crate::parse;
use crate::plan::{DataType, OutputColumn, ParamValues};
use crate::storage::{ComponentId, Entity, Key, Value};

mod changelog;
mod entity;
mod family;
mod group;

use changelog::ChangeLog;

/// How many batches a subscription keeps waiting for its reader at first (`PRAGMA
/// max_pending_batches`); past it, the waiting batches are merged into one.
pub const DEFAULT_MAX_PENDING: usize = 1024;

/// A database's subscriptions.
#[derive(Debug)]
pub(crate) struct Live {
    queries: Mutex<Vec<Arc<Query>>>,
    /// Whether there may be any: a commit without subscriptions looks no further.
    any: AtomicBool,
    /// `PRAGMA max_pending_batches`.
    max_pending: AtomicUsize,
    /// The change log's count of takes after the last one here: a log that counts
    /// otherwise is not the one taken from (a world put back from an older copy).
    taken: AtomicU64,
    /// A write panicked under the lock: what the log noted may not be all it changed.
    resync: AtomicBool,
}

impl Default for Live {
    fn default() -> Self {
        Live {
            queries: Mutex::default(),
            any: AtomicBool::new(false),
            max_pending: AtomicUsize::new(DEFAULT_MAX_PENDING),
            taken: AtomicU64::new(0),
            resync: AtomicBool::new(false),
        }
    }
}

/// A query kept for its subscriptions: the result at the last commit.
#[derive(Debug)]
struct Query {
    statement: parse::Statement,
    params: ParamValues,
    /// The statement printed back and its parameters' values: what makes two
    /// subscriptions the same.
    identity: String,
    kept: Mutex<Kept>,
    feeds: Mutex<Vec<Weak<Feed>>>,
    /// Its family, when it is one of subscriptions that differ only in a constant.
    route: std::sync::OnceLock<family::Route>,
}

#[derive(Debug)]
struct Kept {
    columns: Vec<(String, DataType)>,
    held: Held,
    /// How it is kept, as bound for the world at `Shape`'s stamp.
    shape: Shape,
    /// The change log has noted every change to the components of a query kept per
    /// entity since the last commit: only what it noted is read again.
    logged: bool,
}

/// The result at the last commit.
#[derive(Debug)]
enum Held {
    /// Each distinct row, its values and how many times (a query run again).
    Bag(Bag),
    /// Each entity's row (a query kept per entity).
    Entities(entity::Rows),
    /// Each group's row, and each entity's contribution (a query kept per group).
    Groups(group::Groups),
}

impl Held {
    fn bag(&self) -> std::borrow::Cow<'_, Bag> {
        match self {
            Held::Bag(bag) => std::borrow::Cow::Borrowed(bag),
            Held::Entities(rows) => std::borrow::Cow::Owned(rows.bag()),
            Held::Groups(groups) => std::borrow::Cow::Owned(groups.bag()),
        }
    }

    /// The entities of the rows of a query kept per entity (none for another).
    fn entities(&self) -> Vec<Entity> {
        match self {
            Held::Entities(rows) => rows.keys().filter_map(|k| k.first().copied()).collect(),
            _ => Vec::new(),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Held::Bag(bag) => bytes(bag),
            Held::Entities(rows) => rows.bytes,
            Held::Groups(groups) => groups.bytes(),
        }
    }
}

/// How a query is kept (`plan::Upkeep`), with what that needs.
#[derive(Debug)]
enum Shape {
    /// Run again at each commit; found so for the world at this stamp.
    Rerun(entity::Stamp),
    PerEntity(Box<entity::Bound>),
}

impl Shape {
    fn stamp(&self) -> entity::Stamp {
        match self {
            Shape::Rerun(stamp) => *stamp,
            Shape::PerEntity(bound) => bound.stamp,
        }
    }
}

/// One subscription: the batches waiting for its reader.
#[derive(Debug)]
pub(crate) struct Feed {
    /// The database's key in the record of locks a thread holds (`wait::held`).
    key: usize,
    inner: Mutex<Inner>,
    ready: Condvar,
}

#[derive(Debug, Default)]
struct Inner {
    pending: VecDeque<Arc<Batch>>,
    /// Why it ended, once it did (the reader gets this after the pending batches).
    ended: Option<String>,
}

/// Rows and how their counts changed, as a batch holds them.
type Changes = Vec<(Vec<Value>, i64)>;

/// A query's columns: names and types.
type Columns = Arc<[(String, DataType)]>;

/// What changed at one commit (or at several, merged): the query's columns, the tick,
/// each row and its count's change, retractions first.
#[derive(Debug)]
struct Batch {
    columns: Columns,
    tick: u64,
    rows: Changes,
}

impl Live {
    pub(crate) fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    pub(crate) fn max_pending(&self) -> usize {
        self.max_pending.load(Ordering::Relaxed)
    }

    pub(crate) fn set_max_pending(&self, n: usize) {
        self.max_pending.store(n.max(1), Ordering::Relaxed);
    }

    /// Starts a subscription to `statement` (a query) on `state`: its first batch is the
    /// whole result, every row with a positive diff. A query kept already for another
    /// subscription is not run again: its result is this commit's.
    pub(crate) fn subscribe(
        &self,
        statement: parse::Statement,
        params: ParamValues,
        state: &State,
        limit: usize,
        key: usize,
    ) -> Result<Arc<Feed>> {
        let identity = format!("{statement}\u{0}{:?}\u{0}{:?}", params.positional, params.named);
        let feed = Arc::new(Feed {
            key,
            inner: Mutex::default(),
            ready: Condvar::new(),
        });
        let tick = state.schedule.clock().tick;
        // Held while the query runs: two subscriptions to one query keep it once.
        let mut queries = self.queries.lock();
        let query = match queries.iter().find(|q| q.identity == identity) {
            Some(query) => Arc::clone(query),
            None => {
                let bound = entity::bind(&statement, &params, state)?;
                let whole = match &bound {
                    Some(bound) => read_whole(bound, &params, state, limit)?,
                    None => None,
                };
                let kept = match (bound, whole) {
                    (Some(bound), Some(held)) => Kept {
                        columns: bound.columns(),
                        held,
                        // The log already follows its components (for another query):
                        // the next commit reads only what changed.
                        logged: follows(state, &bound.components),
                        shape: Shape::PerEntity(Box::new(bound)),
                    },
                    _ => {
                        let (columns, bag) = run(&statement, &params, state, limit)?;
                        Kept {
                            columns,
                            held: Held::Bag(bag),
                            shape: Shape::Rerun(entity::Stamp::of(state)),
                            logged: false,
                        }
                    }
                };
                let alone = matches!(
                    (&kept.shape, &kept.held),
                    (Shape::PerEntity(bound), Held::Entities(_)) if bound.relations() == 1
                );
                // One of subscriptions that differ only in a constant: its family, found
                // or made.
                let related =
                    family::family_of(&statement, &params)
                        .filter(|_| alone)
                        .and_then(|(shared, value)| {
                            let ty = DataType::of(&value);
                            let id = family::identity(&statement, ty);
                            let found = queries
                                .iter()
                                .filter_map(|q| q.route.get())
                                .find(|r| r.family.identity == id)
                                .map(|r| Arc::clone(&r.family));
                            let family =
                                found.or_else(|| family::Family::new(&statement, shared, ty, state))?;
                            Some((family, value))
                        });
                let query = Arc::new(Query {
                    statement,
                    params,
                    identity,
                    kept: Mutex::new(kept),
                    feeds: Mutex::default(),
                    route: std::sync::OnceLock::new(),
                });
                if let Some((family, value)) = related {
                    let _ = query.route.set(family::Family::join(&family, &query, &value));
                }
                queries.push(Arc::clone(&query));
                query
            }
        };
        let first = {
            let kept = query.kept.lock();
            let rows = diff(&Bag::new(), &kept.held.bag());
            Batch {
                columns: kept.columns.clone().into(),
                tick,
                rows,
            }
        };
        feed.inner.lock().pending.push_back(Arc::new(first));
        query.feeds.lock().push(Arc::downgrade(&feed));
        self.any.store(true, Ordering::Release);
        Ok(feed)
    }

    /// After a commit, under the write lock: each subscription's batch of what changed,
    /// when something did. Every write that took the lock is asked (an event emitted or a
    /// component dropped moves no write tick: nothing cheaper tells every change).
    pub(crate) fn publish(&self, state: &mut State, limit: usize) {
        if !self.any() || state.world.in_transaction() {
            return;
        }
        let mut queries = self.queries.lock();
        // Dropped and ended subscriptions are forgotten, and queries none reads: when
        // none is left, writes run beside others again.
        queries.retain(|q| {
            let mut feeds = q.feeds.lock();
            feeds.retain(|f| f.upgrade().is_some_and(|f| f.inner.lock().ended.is_none()));
            if feeds.is_empty()
                && let Some(route) = q.route.get()
            {
                let entities = q.kept.lock().held.entities();
                route.family.leave(route, &entities);
            }
            !feeds.is_empty()
        });
        // What the change log noted since the last commit; `None` when none was kept (no
        // query kept per entity yet, or a LOAD put another world in its place), when it
        // is not the log taken from last (a world put back from an older copy), when it
        // noted too much, or after a write that panicked.
        let resync = self.resync.swap(false, Ordering::Relaxed);
        let log = state.world.observer_log::<ChangeLog>().and_then(|log| {
            let ours = log.taken() == self.taken.load(Ordering::Relaxed);
            let noted = log.take();
            self.taken.store(log.taken(), Ordering::Relaxed);
            noted.filter(|_| ours && !resync)
        });
        let tick = state.schedule.clock().tick;
        let max_pending = self.max_pending();
        // Families first: one pass over the changes for each.
        let mut shared = HashMap::new();
        {
            let mut families: HashMap<usize, (Arc<family::Family>, Vec<&Arc<Query>>)> = HashMap::new();
            for query in queries.iter() {
                if let Some(route) = query.route.get() {
                    families
                        .entry(Arc::as_ptr(&route.family) as usize)
                        .or_insert_with(|| (Arc::clone(&route.family), Vec::new()))
                        .1
                        .push(query);
                }
            }
            for (family, members) in families.values() {
                family.advance(members, state, limit, log.as_ref(), &mut shared);
            }
        }
        let mut failed = Vec::new();
        for (i, query) in queries.iter().enumerate() {
            let result = match shared.remove(&family::address(query)) {
                Some(result) => result,
                None => advance(query, &mut query.kept.lock(), state, limit, log.as_ref()),
            };
            let mut kept = query.kept.lock();
            let why = match result {
                Ok(_) if kept.held.bytes() > limit => format!(
                    "the subscription ended at tick {tick}: its result grew past the memory limit of {limit} bytes (PRAGMA memory_limit; subscribe again to a narrower query)"
                ),
                Ok(rows) => {
                    if rows.is_empty() {
                        continue;
                    }
                    let batch = Arc::new(Batch {
                        columns: kept.columns.clone().into(),
                        tick,
                        rows,
                    });
                    for feed in query.feeds.lock().iter().filter_map(Weak::upgrade) {
                        feed.push(&batch, max_pending);
                    }
                    continue;
                }
                Err(e) => format!(
                    "the subscription ended at tick {tick}: its query no longer runs ({e}); subscribe again once it does"
                ),
            };
            let entities = kept.held.entities();
            kept.held = Held::Bag(Bag::new());
            drop(kept);
            for feed in query.feeds.lock().iter().filter_map(Weak::upgrade) {
                feed.end(why.clone());
            }
            if let Some(route) = query.route.get() {
                route.family.leave(route, &entities);
            }
            failed.push(i);
        }
        for i in failed.into_iter().rev() {
            queries.remove(i);
        }
        if watch(&queries, state) {
            self.taken.store(0, Ordering::Relaxed);
        }
        if queries.is_empty() {
            self.any.store(false, Ordering::Release);
        }
    }
}

/// `query`'s rows that changed at this commit, `kept` made the result now: the entities
/// the change log noted read again for a query kept per entity (all of them when the
/// log did not watch its components through the last commit), else the whole query run
/// again and compared.
fn advance(
    query: &Query,
    kept: &mut Kept,
    state: &State,
    limit: usize,
    log: Option<&HashMap<ComponentId, Vec<Entity>>>,
) -> Result<Changes> {
    let stamp = entity::Stamp::of(state);
    if kept.shape.stamp() != stamp {
        let before = match &kept.shape {
            Shape::PerEntity(bound) => Some(bound.components.clone()),
            Shape::Rerun(_) => None,
        };
        kept.shape = match entity::bind(&query.statement, &query.params, state)? {
            Some(bound) => {
                same_columns(&kept.columns, &bound.columns())?;
                // The log watched what the query reads before only if that is the same.
                kept.logged &= before.as_ref() == Some(&bound.components);
                Shape::PerEntity(Box::new(bound))
            }
            None => Shape::Rerun(stamp),
        };
    }
    let Shape::PerEntity(bound) = &kept.shape else {
        return rerun(query, kept, state, limit);
    };
    let log = log.filter(|_| kept.logged);
    let fits = matches!(
        (&kept.held, &bound.folded),
        (Held::Entities(_), None) | (Held::Groups(_), Some(_))
    );
    let rows = match (log, fits) {
        (Some(log), true) => {
            let Some(changed) = bound.changed(log) else {
                return Ok(Vec::new());
            };
            let fresh = entity::read(bound, &query.params, state, limit, Some(&changed))?;
            match &mut kept.held {
                Held::Groups(groups) => groups.update(bound, &changed, fresh, &query.params, state, limit)?,
                Held::Entities(rows) => {
                    let affected = rows.affected(&changed, &fresh);
                    Some(entity::update(rows, &affected, fresh))
                }
                Held::Bag(_) => Some(Vec::new()),
            }
        }
        _ => match read_whole(bound, &query.params, state, limit)? {
            Some(held) => {
                let changed = diff(&kept.held.bag(), &held.bag());
                kept.held = held;
                // `watch` makes the log note its components from now on.
                kept.logged = true;
                Some(changed)
            }
            None => None,
        },
    };
    match rows {
        Some(rows) => Ok(rows),
        // A group's avg past what is kept exactly.
        None => rerun(query, kept, state, limit),
    }
}

/// `query` run again and compared with what `kept` holds; kept so until the plan is
/// bound again.
fn rerun(query: &Query, kept: &mut Kept, state: &State, limit: usize) -> Result<Changes> {
    let (columns, bag) = run(&query.statement, &query.params, state, limit)?;
    same_columns(&kept.columns, &columns)?;
    let changed = diff(&kept.held.bag(), &bag);
    kept.held = Held::Bag(bag);
    kept.shape = Shape::Rerun(entity::Stamp::of(state));
    kept.logged = false;
    Ok(changed)
}

/// Refuses a query whose columns are no longer those its subscription began with (a
/// component dropped and made again with other fields): its batches would not fit.
fn same_columns(kept: &[(String, DataType)], now: &[(String, DataType)]) -> Result<()> {
    if kept == now {
        return Ok(());
    }
    let list = |c: &[(String, DataType)]| {
        c.iter()
            .map(|(n, t)| format!("{n} {}", t.name()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(Error::Misuse {
        message: format!(
            "its columns are now ({}), not ({}) as when it began",
            list(now),
            list(kept)
        ),
        at: Location::default(),
    })
}

/// The whole result of a query kept per entity or per group; `None` when a group's avg
/// is past what is kept exactly (`group.rs`).
fn read_whole(
    bound: &entity::Bound,
    params: &ParamValues,
    state: &State,
    limit: usize,
) -> Result<Option<Held>> {
    let rows = entity::read(bound, params, state, limit, None)?;
    Ok(match bound.folded {
        Some(_) => group::Groups::new(bound, rows, params, state, limit)?.map(Held::Groups),
        None => Some(Held::Entities(rows)),
    })
}

/// Whether the change log, between commits, follows `components` (`ChangeLog::follows`).
fn follows(state: &State, components: &[ComponentId]) -> bool {
    state
        .world
        .observer::<ChangeLog>()
        .is_some_and(|log| log.follows(components))
}

/// Makes the change log watch the components of every query kept per entity (and no
/// others), adding it to the world the first time one is kept (then true).
fn watch(queries: &[Arc<Query>], state: &mut State) -> bool {
    let mut components: Vec<ComponentId> = Vec::new();
    for query in queries {
        if let Shape::PerEntity(bound) = &query.kept.lock().shape {
            components.extend(&bound.components);
        }
    }
    components.sort_unstable();
    components.dedup();
    match state.world.observer_log::<ChangeLog>() {
        Some(log) => {
            if !log.watches_exactly(&components) {
                log.watch(components);
            }
            false
        }
        None if components.is_empty() => false,
        None => {
            let mut log = ChangeLog::default();
            log.watch(components);
            state.world.observe(log);
            true
        }
    }
}

impl Feed {
    /// Queues `batch`; past `max_pending` waiting, merges them all into one.
    fn push(&self, batch: &Arc<Batch>, max_pending: usize) {
        let mut inner = self.inner.lock();
        if inner.ended.is_some() {
            return;
        }
        inner.pending.push_back(Arc::clone(batch));
        if inner.pending.len() > max_pending {
            let merged = merge(inner.pending.drain(..));
            inner.pending.push_back(Arc::new(merged));
        }
        drop(inner);
        self.ready.notify_all();
    }

    fn end(&self, why: String) {
        let mut inner = self.inner.lock();
        inner.ended.get_or_insert(why);
        drop(inner);
        self.ready.notify_all();
    }

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
        return Ok(Some(outcome(&batch)));
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
    /// Subscribes to the query `sql` (`SUBSCRIBE query`, or the query alone; its text
    /// beginning at `start`) with `params`: the feed, its first batch (the whole result)
    /// waiting. Refused inside a transaction, whose changes are not committed.
    pub(crate) fn subscribe(&self, sql: &str, start: Location, params: &ParamValues) -> Result<Arc<Feed>> {
        let _call = self.enter();
        let mut statements = parse::parse_at(sql, start)?;
        let statement = match (statements.pop(), statements.is_empty()) {
            (Some(statement), true) => statement,
            (Some(second), false) => {
                return Err(Error::Misuse {
                    message: "a subscription is to one query, and this text holds more than one statement"
                        .to_owned(),
                    at: second.at,
                });
            }
            (None, _) => {
                return Err(Error::Misuse {
                    message: "a subscription needs a query (SELECT or WITH …), and the text holds none"
                        .to_owned(),
                    at: start,
                });
            }
        };
        let statement = match statement.kind {
            parse::StatementKind::Subscribe(query) => *query,
            _ => statement,
        };
        let at = statement.at;
        if !matches!(statement.kind, parse::StatementKind::Select(_)) {
            return Err(Error::Misuse {
                message: format!(
                    "a subscription is to a query (SELECT, WITH or VALUES), not to {}",
                    statement.kind.verb()
                ),
                at,
            });
        }
        if self.holds_transaction() {
            return Err(Error::Misuse {
                message: "subscribe before BEGIN or after COMMIT: inside a transaction that has written, the first batch would hold what is not committed"
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
        // A write that panicked left the world half written: no query runs on it, and
        // the next commit reads whole what it keeps.
        if std::thread::panicking() {
            engine.live.resync.store(true, Ordering::Relaxed);
        } else if engine.live.any() {
            let limit = engine.memory_limit.load(Ordering::Relaxed);
            engine.live.publish(&mut self.guard, limit);
        }
    }
}

/// A result as a bag: each distinct row, its values, how many times it is there, and
/// where it first is in the result (batches list rows in the result's order).
type Bag = HashMap<Vec<Key>, Counted>;

#[derive(Clone, Debug)]
struct Counted {
    row: Vec<Value>,
    n: i64,
    first: usize,
}

/// Runs the query on `state`: its columns and its rows as a bag.
fn run(
    statement: &parse::Statement,
    params: &ParamValues,
    state: &State,
    limit: usize,
) -> Result<(Vec<(String, DataType)>, Bag)> {
    let plan = state.planned(None, statement, params).map_err(|e| *e)?;
    let outcome = entity::with_run(state, params, limit, |run| {
        crate::exec::run_read(
            &plan,
            &state.world,
            Run {
                at: statement.at,
                ..run
            },
        )
    })?;
    let columns = outcome
        .columns
        .iter()
        .map(|c: &OutputColumn| (c.name.to_string(), c.ty))
        .collect();
    let rows: Vec<Vec<Value>> = (0..outcome.rows.len).map(|i| outcome.rows.row(i)).collect();
    Ok((columns, bag_of(rows.iter())))
}

/// About how many bytes a kept result holds: what a subscription's memory is bounded by.
fn bytes(bag: &Bag) -> usize {
    bag.values().map(|Counted { row, .. }| row_bytes(row)).sum()
}

/// About how many bytes a kept row holds.
fn row_bytes(row: &[Value]) -> usize {
    let value = |v: &Value| match v {
        Value::Text(s) => 32 + s.len(),
        _ => 16,
    };
    64 + row.iter().map(|v| 2 * value(v)).sum::<usize>()
}

/// What changed from `old` to `new`: each row and its count's change; the rows that
/// left first, in the order they had in `old`, then those that came, in their order in
/// `new`. (A consumer applying them in order never holds a negative count.)
fn diff(old: &Bag, new: &Bag) -> Changes {
    let mut out = Vec::new();
    for (key, was) in old {
        let now = new.get(key).map_or(0, |c| c.n);
        if now < was.n {
            out.push((false, was.first, &was.row, now - was.n));
        }
    }
    for (key, is) in new {
        let before = old.get(key).map_or(0, |c| c.n);
        if is.n > before {
            out.push((true, is.first, &is.row, is.n - before));
        }
    }
    out.sort_unstable_by_key(|&(came, first, _, _)| (came, first));
    out.into_iter().map(|(_, _, row, d)| (row.clone(), d)).collect()
}

/// A batch as rows: the query's columns, then `tick` and `diff`.
fn outcome(batch: &Batch) -> Outcome {
    let mut names: Vec<(&str, DataType)> = batch.columns.iter().map(|(n, t)| (n.as_str(), *t)).collect();
    names.push(("tick", DataType::Int));
    names.push(("diff", DataType::Int));
    let tick = i64::try_from(batch.tick).unwrap_or(i64::MAX);
    let rows = batch
        .rows
        .iter()
        .map(|(row, d)| {
            let mut row = row.clone();
            row.push(Value::Int(tick));
            row.push(Value::Int(*d));
            row
        })
        .collect();
    Outcome::of_rows(&names, rows)
}

/// Batches that waited, as one: each row's diffs summed (rows that cancel out dropped),
/// retractions first, at the last batch's tick. Adding it up gives what adding them up
/// gave.
fn merge(batches: impl Iterator<Item = Arc<Batch>>) -> Batch {
    let mut changes = Vec::new();
    let mut last: Option<(Columns, u64)> = None;
    for batch in batches {
        changes.extend(batch.rows.iter().map(|(row, d)| (row.clone(), *d)));
        last = Some((Arc::clone(&batch.columns), batch.tick));
    }
    let (columns, tick) = last.unwrap_or_else(|| (Arc::from(Vec::new()), 0));
    Batch {
        columns,
        tick,
        rows: consolidate(changes),
    }
}

/// Changes of rows, in order, as a batch holds them: each row's diffs summed, rows
/// whose diffs cancel left out, the rows that left first, then those that came, each
/// part in the order its rows first came.
fn consolidate(changes: Changes) -> Changes {
    let mut sums: HashMap<Vec<Key>, (Vec<Value>, i64, usize)> = HashMap::new();
    for (at, (row, d)) in changes.into_iter().enumerate() {
        let key: Vec<Key> = row.iter().map(Key::exact).collect();
        sums.entry(key).or_insert((row, 0, at)).1 += d;
    }
    let mut rows: Vec<(bool, usize, Vec<Value>, i64)> = sums
        .into_values()
        .filter(|(_, d, _)| *d != 0)
        .map(|(row, d, at)| (d > 0, at, row, d))
        .collect();
    rows.sort_unstable_by_key(|&(came, at, _, _)| (came, at));
    rows.into_iter().map(|(_, _, row, d)| (row, d)).collect()
}

/// Rows, in order, as a bag.
fn bag_of<'r>(rows: impl Iterator<Item = &'r Vec<Value>>) -> Bag {
    let mut bag = Bag::new();
    for (i, row) in rows.enumerate() {
        let key: Vec<Key> = row.iter().map(Key::exact).collect();
        bag.entry(key)
            .or_insert_with(|| Counted {
                row: row.clone(),
                n: 0,
                first: i,
            })
            .n += 1;
    }
    bag
}

/// Whether two rows hold the same values (bit for bit, as bags count them).
fn same_row(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Key::exact(x) == Key::exact(y))
}
