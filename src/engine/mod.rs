//! The engine: one database's state (its world, its schedule, a file database's files),
//! the lock over it, transactions, settings, and the runner every way in uses. It knows
//! no front end: the Rust API (`connection/`) is a thin layer over it, and another front
//! end (a network server) would sit beside that one, on the same engine.
//!
//! An `Engine` is shared by everyone who uses a database; each of them holds a `Client` on
//! it (a `Connection` holds one), with what is its own: its busy timeout, its interrupt,
//! its transaction, its kept texts.
//!
//! Invariants:
//! - Statements that only read run in parallel under the read lock; writes are serialized
//!   under the write lock. Every statement is atomic: the executor checks all it will
//!   write before it writes.
//! - No thread reaches an `Engine` but through an `Arc<Engine>` of its own (a `Client`'s,
//!   a `Database`'s) or with work a call gives to ecsql's thread pool (`exec::parallel`,
//!   an `in_place_scope`), all done before that call returns: no `&Engine`, `&Client`,
//!   pointer or `Weak` outlives the call that lent it, and a `Client` is used from one
//!   thread at a time (not `Sync`).
//!   So a client that is its engine's only handle (`Client::alone`), between calls of its
//!   own, knows no other thread is inside: a point read of such a client reads the state
//!   without the lock when this thread holds no guard of it (`Client::point_read`).
//! - `BEGIN` opens the world's undo log and makes its client the only one that may run
//!   statements until `COMMIT` (which keeps the changes) or `ROLLBACK` (which undoes
//!   them): other clients wait, so nobody reads uncommitted data or loses an update to a
//!   rollback. A client dropped inside a transaction rolls it back.
//!
//! By concern: `run` (one statement's run: plan, tracking, lock, journal), `text`
//! (statements given as text, and the kept texts of `cached`), `transaction` (BEGIN,
//! COMMIT, ROLLBACK), `locks` (the lock and waiting for it), `beside` (the fields an
//! UPDATE written in place or a read holds instead of the whole database), `settings`
//! (PRAGMA),
//! `systems` (the schedule's statements and ticks), `durable`, `journal` and `save` (a
//! file database), `wait` (interrupts and sizes), `live` (subscriptions, told of every
//! commit by the write lock's guard, `live::Writing`).

mod beside;
mod cached;
mod durable;
mod journal;
mod live;
mod locks;
mod prepared;
mod run;
mod save;
mod session;
mod settings;
mod systems;
mod text;
mod timeout;
mod transaction;
mod wait;

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock};

pub use beside::Concurrency;
pub(crate) use durable::{CHECKPOINT_AFTER_REPLAY, Progress, Setup, open_files};
pub use durable::{DEFAULT_CHECKPOINT_SIZE, OpenProgress, Synchronous};
pub use live::DEFAULT_MAX_PENDING;
pub(crate) use live::Feed;
pub(crate) use prepared::PreparedStatement;
use run::RunContext;
use run::{AbandonOnPanic, WRITE_PANICKED};
pub use save::write_atomically;
#[cfg(feature = "server")]
pub(crate) use settings::{is_connections_own, is_database_wide};
pub(crate) use wait::Interrupt;
pub use wait::InterruptHandle;
#[cfg(feature = "server")]
pub(crate) use wait::parse_size;

use crate::error::{BoxResult, Error, Result};
use crate::exec::EventCursors;
use crate::location::Location;
use crate::parse;
use crate::plan::{self, ParamValues, PlanSlot};
use crate::schedule::{self, Schedule};
use crate::storage::World;

/// One database, shared by its clients.
#[derive(Debug)]
pub(crate) struct Engine {
    state: RwLock<State>,
    /// The connection that holds an open transaction, or 0.
    tx_owner: AtomicU64,
    /// That connection's thread and when it began, for the messages of those who wait.
    tx_lock: Mutex<wait::TxHolder>,
    tx_done: Condvar,
    next_connection: AtomicU64,
    /// The most working memory one statement may hold, in bytes (`PRAGMA memory_limit`).
    memory_limit: AtomicUsize,
    /// How many threads one statement may run on (`PRAGMA threads`).
    threads: AtomicUsize,
    /// The fewest rows each thread of a split statement takes (`PRAGMA min_parallel_rows`).
    min_parallel_rows: AtomicUsize,
    /// How many threads the systems of a tick may run on (`PRAGMA tick_threads`).
    tick_threads: AtomicUsize,
    /// The most rounds a recursive WITH query may run (`PRAGMA recursion_limit`).
    recursion_limit: AtomicUsize,
    /// A file database's files (set once its journal has been run again).
    file: OnceLock<durable::FileDb>,
    /// `PRAGMA synchronous`, as a `Synchronous`.
    synchronous: AtomicU8,
    /// `PRAGMA checkpoint_size`, in bytes.
    checkpoint_size: AtomicU64,
    /// `Database::open_with`'s set-up is running: it registers Rust systems, and what it
    /// would write would not be journaled.
    setting_up: AtomicBool,
    /// Rust systems the set-up registered that the snapshot did not hold: made where the
    /// journal made them, or after it.
    pending_rust: Mutex<PendingRust>,
    /// Whole readers, and the fields held by writes beside each other (`beside.rs`).
    fields: beside::FieldLocks,
    /// The subscriptions, told of every commit (`live.rs`).
    live: live::Live,
}

/// Rust systems registered, waiting to be made: name, clauses, closure.
#[derive(Default)]
struct PendingRust(Vec<(String, String, schedule::RustClosure)>);

impl std::fmt::Debug for PendingRust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _, _)| name))
            .finish()
    }
}

#[derive(Debug)]
struct State {
    world: World,
    /// Counts rollbacks: a restored world may reuse table ids, so cached table lists from
    /// before must not be trusted.
    restores: u64,
    /// Counts LOADs: the world readers' cursors stand in (`EventCursors::enter_world`).
    loads: u64,
    /// Systems, phases and the clock.
    schedule: Schedule,
    /// The schedule as it was before the open transaction first changed it, for ROLLBACK.
    schedule_image: Option<schedule::Image>,
    /// A transaction begun by BEGIN is open (not one begun on the world directly, through
    /// `with_world_mut`, which COMMIT and ROLLBACK do not end).
    in_begin: bool,
    /// What the open transaction did, for a file database's journal at COMMIT.
    tx_steps: Vec<journal::Step>,
    /// A file database's world holds changes its journal does not (the columnar door's,
    /// a LOAD's): the next moment outside a transaction checkpoints.
    unjournaled: bool,
}

impl State {
    /// The plan for a run of `statement` against this state (the prepared statement's
    /// kept one, in `slot`).
    fn planned<'s>(
        &self,
        slot: Option<&'s mut PlanSlot>,
        statement: &parse::Statement,
        params: &ParamValues,
    ) -> BoxResult<plan::Planned<'s>> {
        plan::planned(slot, statement, &self.world, self.restores, params)
            .map_err(|e| Box::new(Error::from(*e)))
    }

    /// Keeps the schedule's image for ROLLBACK before its first change inside a
    /// transaction.
    fn schedule_changes(&mut self) -> &mut Schedule {
        self.keep_schedule_image();
        &mut self.schedule
    }

    fn keep_schedule_image(&mut self) {
        if self.in_begin && self.world.in_transaction() && self.schedule_image.is_none() {
            self.schedule_image = Some(self.schedule.image());
        }
    }

    /// A transaction ended: ROLLBACK (`undone`) puts back the schedule's image.
    fn end_schedule_transaction(&mut self, undone: bool) {
        self.in_begin = false;
        match self.schedule_image.take() {
            Some(image) if undone => {
                self.schedule.restore(image);
                self.world.set_log_tick(self.schedule.clock().tick);
            }
            _ => {}
        }
    }
}

impl Engine {
    /// What the writes beside others did so far (`beside.rs`).
    pub(crate) fn concurrency(&self) -> Concurrency {
        self.fields.counts()
    }

    /// A new, empty database that lives in memory.
    pub(crate) fn new() -> Arc<Engine> {
        Arc::new(Engine {
            state: RwLock::new(State {
                world: World::new(),
                restores: 0,
                loads: 0,
                schedule: Schedule::default(),
                schedule_image: None,
                in_begin: false,
                tx_steps: Vec::new(),
                unjournaled: false,
            }),
            tx_owner: AtomicU64::new(0),
            tx_lock: Mutex::new(wait::TxHolder::default()),
            tx_done: Condvar::new(),
            next_connection: AtomicU64::new(1),
            memory_limit: AtomicUsize::new(wait::default_memory_limit()),
            threads: AtomicUsize::new(wait::default_threads()),
            min_parallel_rows: AtomicUsize::new(DEFAULT_MIN_PARALLEL_ROWS),
            tick_threads: AtomicUsize::new(wait::default_threads()),
            recursion_limit: AtomicUsize::new(crate::exec::DEFAULT_RECURSION_LIMIT),
            file: OnceLock::new(),
            synchronous: AtomicU8::new(Synchronous::Full as u8),
            checkpoint_size: AtomicU64::new(DEFAULT_CHECKPOINT_SIZE),
            setting_up: AtomicBool::new(false),
            pending_rust: Mutex::default(),
            fields: beside::FieldLocks::default(),
            live: live::Live::default(),
        })
    }
}

/// How long a statement waits by default for another connection's transaction or
/// statement before it fails with [`Error::Busy`].
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The most threads one statement may run on (`PRAGMA threads`).
pub const MAX_THREADS: usize = 256;

/// The fewest rows each part of a split statement takes at first (`PRAGMA
/// min_parallel_rows`).
pub const DEFAULT_MIN_PARALLEL_ROWS: usize = crate::exec::DEFAULT_MIN_ROWS;

/// One client's handle on an `Engine` (a `Connection` holds one).
#[derive(Debug)]
pub(crate) struct Client {
    engine: Arc<Engine>,
    id: u64,
    busy_timeout_ms: AtomicU64,
    interrupt: Arc<wait::Interrupt>,
    /// The most working memory one of this client's statements may hold, below the
    /// database's limit (a server's clients have one); `usize::MAX` for none.
    memory_cap: AtomicUsize,
    /// The event cursors of this client's prepared statements that moved inside the open
    /// transaction, with where they stood before it: ROLLBACK puts them back.
    tx_readers: Mutex<Vec<(Weak<Mutex<EventCursors>>, EventCursors)>>,
    /// Counts this client's BEGINs (for `Transaction`'s guard).
    tx_serial: AtomicU64,
    /// The statements `execute`, `query_row` and one-statement scripts were given as text
    /// lately, parsed and planned: the same text again skips the parser and the planner.
    texts: Mutex<cached::TextCache>,
    /// The PostgreSQL settings this client has `SET` (`session.rs`).
    session: Mutex<Vec<(&'static str, String)>>,
    /// The transaction this client has open, as its BEGIN asked (`transaction::Open`,
    /// encoded; 0 for none). One begun READ COMMITTED is open before it holds the
    /// database (`tx_owner`): from its first write.
    open: AtomicU8,
    /// The isolation level a BEGIN that names none takes when the client has not SET
    /// `default_transaction_isolation` (a server's clients: READ COMMITTED).
    base_isolation: AtomicU8,
    /// `default_transaction_read_only` (kept with the SET settings too): read by every
    /// write.
    read_only_default: AtomicBool,
    /// The settings SET inside the open transaction, with what they were before it:
    /// ROLLBACK puts them all back, COMMIT those SET LOCAL (`session.rs`).
    tx_settings: Mutex<Vec<session::Changed>>,
    /// The last entity a SPAWN of this client made (its bits; 0 for none yet).
    last_spawned: AtomicU64,
    /// A client is used from one thread at a time (`Send`, not `Sync`): so a client
    /// alone on its engine knows no other thread is inside it (`Client::alone`), and
    /// its interrupt's turns are taken with plain stores (`wait::Interrupt::enter`).
    one_thread: std::marker::PhantomData<std::cell::Cell<()>>,
}

impl Client {
    /// A new client on `engine`, for the calling thread.
    pub(crate) fn new(engine: &Arc<Engine>) -> Client {
        Client::with_interrupt(engine, &Arc::default())
    }

    /// A new client on `engine` that `interrupt` stops (an open's, whose handle the
    /// program holds before the client exists).
    fn with_interrupt(engine: &Arc<Engine>, interrupt: &Arc<wait::Interrupt>) -> Client {
        let id = engine.next_connection.fetch_add(1, Ordering::Relaxed);
        Client {
            engine: Arc::clone(engine),
            id,
            busy_timeout_ms: AtomicU64::new(DEFAULT_BUSY_TIMEOUT.as_millis() as u64),
            interrupt: Arc::clone(interrupt),
            memory_cap: AtomicUsize::new(usize::MAX),
            tx_readers: Mutex::default(),
            tx_serial: AtomicU64::new(0),
            texts: Mutex::default(),
            session: Mutex::default(),
            open: AtomicU8::new(0),
            base_isolation: AtomicU8::new(parse::Isolation::Serializable as u8),
            read_only_default: AtomicBool::new(false),
            tx_settings: Mutex::default(),
            last_spawned: AtomicU64::new(0),
            one_thread: std::marker::PhantomData,
        }
    }

    /// The last entity a SPAWN of this client made, if one has.
    pub(crate) fn last_spawned(&self) -> Option<crate::storage::Entity> {
        crate::storage::Entity::from_bits(self.last_spawned.load(Ordering::Relaxed))
    }

    /// True outside BEGIN … COMMIT/ROLLBACK.
    pub(crate) fn is_autocommit(&self) -> bool {
        !self.holds_transaction() && self.open.load(Ordering::SeqCst) == 0
    }

    /// True while this client's transaction holds the database (every other connection
    /// waits): from BEGIN, or from the first write of one begun READ COMMITTED.
    pub(crate) fn holds_transaction(&self) -> bool {
        self.engine.tx_owner.load(Ordering::SeqCst) == self.id
    }

    /// Drops the texts this client keeps parsed and planned.
    pub(crate) fn forget_texts(&self) {
        self.texts.lock().clear();
    }

    /// Counts this client's BEGINs: a `Transaction` guard ends only its own.
    pub(crate) fn tx_serial(&self) -> u64 {
        self.tx_serial.load(Ordering::Relaxed)
    }

    /// A handle that stops this client's running statement from another thread.
    pub(crate) fn interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle {
            state: Arc::clone(&self.interrupt),
        }
    }

    /// `Connection::busy_timeout`.
    pub(crate) fn busy_timeout(&self) -> Duration {
        Duration::from_millis(self.busy_timeout_ms.load(Ordering::Relaxed))
    }

    /// `Connection::synchronous`.
    pub(crate) fn synchronous(&self) -> Synchronous {
        Synchronous::from_u8(self.engine.synchronous.load(Ordering::Relaxed))
    }

    /// `Connection::set_synchronous`.
    pub(crate) fn set_synchronous(&self, s: Synchronous) {
        self.engine.synchronous.store(s as u8, Ordering::Relaxed);
    }

    /// `Connection::checkpoint_size`.
    pub(crate) fn checkpoint_size(&self) -> u64 {
        self.engine.checkpoint_size.load(Ordering::Relaxed)
    }

    /// `Connection::set_checkpoint_size`.
    pub(crate) fn set_checkpoint_size(&self, bytes: u64) {
        self.engine.checkpoint_size.store(bytes, Ordering::Relaxed);
    }

    /// `Connection::set_busy_timeout`.
    pub(crate) fn set_busy_timeout(&self, timeout: Duration) {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self.busy_timeout_ms.store(ms, Ordering::Relaxed);
    }

    /// `Connection::statement_timeout`.
    pub(crate) fn statement_timeout(&self) -> Option<Duration> {
        self.interrupt.timeout()
    }

    /// `Connection::set_statement_timeout`: `None` for none; an error past the longest
    /// this client may set (`limit_statements`).
    pub(crate) fn set_statement_timeout(&self, timeout: Option<Duration>) -> Result<(), String> {
        let ms = timeout.map_or(0, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1));
        let cap = self.interrupt.timeout_cap_ms.load(Ordering::Relaxed);
        if cap != 0 && ms > cap {
            return Err(format!(
                "this connection's statements may run at most {cap} ms (the server's limit): set a statement_timeout from 1 to {cap}, or 0 for the limit"
            ));
        }
        // None of its own: a server's client still has the server's limit.
        let ms = if ms == 0 { cap } else { ms };
        self.interrupt.timeout_ms.store(ms, Ordering::Relaxed);
        Ok(())
    }

    /// Bounds this client's statements (a server's client): each may run at most
    /// `timeout` (which it may lower, never raise) and hold at most `memory` bytes of
    /// working memory (below the database's limit).
    #[cfg(feature = "server")]
    pub(crate) fn limit_statements(&self, timeout: Option<Duration>, memory: Option<usize>) {
        let ms = timeout.map_or(0, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1));
        self.interrupt.timeout_cap_ms.store(ms, Ordering::Relaxed);
        self.interrupt.timeout_ms.store(ms, Ordering::Relaxed);
        self.memory_cap
            .store(memory.unwrap_or(usize::MAX), Ordering::Relaxed);
    }

    /// `Connection::memory_limit`.
    pub(crate) fn memory_limit(&self) -> usize {
        self.engine.memory_limit.load(Ordering::Relaxed)
    }

    /// `Connection::set_memory_limit`.
    pub(crate) fn set_memory_limit(&self, bytes: usize) {
        self.engine.memory_limit.store(bytes, Ordering::Relaxed);
    }

    /// `Connection::threads`.
    pub(crate) fn threads(&self) -> usize {
        self.engine.threads.load(Ordering::Relaxed)
    }

    /// `Connection::set_threads`.
    pub(crate) fn set_threads(&self, threads: usize) {
        self.engine
            .threads
            .store(threads.clamp(1, MAX_THREADS), Ordering::Relaxed);
    }

    /// `PRAGMA tick_threads`.
    pub(crate) fn tick_threads(&self) -> usize {
        self.engine.tick_threads.load(Ordering::Relaxed)
    }

    /// `PRAGMA tick_threads = n`.
    pub(crate) fn set_tick_threads(&self, threads: usize) {
        self.engine
            .tick_threads
            .store(threads.clamp(1, MAX_THREADS), Ordering::Relaxed);
    }

    /// `Connection::min_parallel_rows`.
    pub(crate) fn min_parallel_rows(&self) -> usize {
        self.engine.min_parallel_rows.load(Ordering::Relaxed)
    }

    /// `Connection::set_min_parallel_rows`.
    pub(crate) fn set_min_parallel_rows(&self, rows: usize) {
        self.engine
            .min_parallel_rows
            .store(rows.max(1), Ordering::Relaxed);
    }

    /// The columnar door, read side (`Connection::with_world`): `f` runs under the read
    /// lock; inside it, a statement on this database from this thread fails instead of
    /// waiting for itself.
    pub(crate) fn with_world<T>(&self, f: impl FnOnce(&World) -> T) -> Result<T> {
        let _call = self.enter();
        let state = self.read_state(Location::default())?;
        let _holding = wait::Holding::new(self.key());
        Ok(f(&state.world))
    }

    /// The columnar door, write side (`Connection::with_world_mut`): `f` runs under the
    /// write lock; a file database checkpoints what it wrote, and one whose `f` panics is
    /// abandoned.
    pub(crate) fn with_world_mut<T>(&self, f: impl FnOnce(&mut World) -> T) -> Result<T> {
        let _call = self.enter();
        self.refuse_in_setup("with_world_mut", Location::default())?;
        self.before_write("with_world_mut", Location::default())?;
        let mut state = self.write_state(Location::default())?;
        let holding = wait::Holding::new(self.key());
        // A file database whose closure panics keeps what it wrote in memory only: it is
        // abandoned, so that nothing reads or keeps it (`FileError::Abandoned`).
        let abandon = AbandonOnPanic(self.file(), "a closure given to with_world_mut panicked");
        let out = f(&mut state.world);
        // What a typed query leaked inside `f` still owes is paid before anyone else
        // reads the world.
        state.world.settle_pending();
        drop(abandon);
        drop(holding);
        // A file database cannot journal what `f` did: it checkpoints instead.
        self.unjournaled(&mut state);
        drop(state);
        self.keep_unjournaled(Location::default())?;
        Ok(out)
    }
}

impl Drop for Client {
    /// A client that goes away inside a transaction rolls it back.
    fn drop(&mut self) {
        if self.holds_transaction() {
            let mut state = self.engine.state.write();
            // Only the tracking it turned on stays; a failed record asks for a checkpoint.
            let _ = self.journal_end(&mut state, true);
            if state.world.rollback().is_ok() {
                state.restores += 1;
            }
            state.end_schedule_transaction(true);
            drop(state);
            self.end_readers_transaction(true);
            self.end_transaction();
        }
    }
}
