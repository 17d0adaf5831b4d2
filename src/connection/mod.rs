//! `Database` and `Connection`: the one way in for the REPL, scripts and Rust programs,
//! in the shape of rusqlite.
//!
//! A `Database` is shared (`Send + Sync`, cheap to clone); each thread makes its own
//! `Connection`. Statements that only read run in parallel under a read lock; writes are
//! serialized under the write lock. Every statement is atomic: the executor checks all it
//! will write before it writes. `BEGIN` opens the world's undo log and makes this
//! connection the only one that may run statements until `COMMIT` (which keeps the changes)
//! or `ROLLBACK` (which undoes them): other connections wait, so nobody reads uncommitted
//! data or loses an update to a rollback.
//!
//! This file holds `Database`, `Connection` and their shared state; the rest is by
//! concern: `run` (one statement's run: plan, tracking, lock, journal), `text`
//! (statements given as text, and the kept texts of `cached`), `statement` (prepared
//! statements), `transaction` (BEGIN, COMMIT, ROLLBACK), `locks` (the lock and waiting
//! for it), `settings` (PRAGMA), `systems` (the schedule's statements and ticks),
//! `durable`, `journal` and `save` (a file database), `params` and `row` (values in and
//! rows out).

mod cached;
mod durable;
mod journal;
mod locks;
mod params;
mod row;
mod run;
mod save;
mod settings;
mod statement;
mod text;
mod transaction;
pub use save::write_atomically;
mod systems;
mod wait;

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock};

pub use durable::{DEFAULT_CHECKPOINT_SIZE, OpenOptions, OpenProgress, Synchronous};
pub use params::{Params, ToParam};
pub use row::{FromRow, FromValue, Row, RowIndex, Rows};
use run::{AbandonOnPanic, RunContext, WRITE_PANICKED};
pub use statement::{CachedStatement, Statement};
use statement::{Prepared, check_params, executed};
pub use transaction::Transaction;
pub use wait::InterruptHandle;

use crate::error::{BoxResult, Error, Result};
use crate::exec::{EventCursors, Outcome};
use crate::location::Location;
use crate::parse;
use crate::plan::{self, OutputColumn, ParamValues, PlanSlot};
use crate::schedule::{self, Schedule};
use crate::storage::World;

/// An ecsql database: in memory (`open_in_memory`), or kept in a file (`open`).
#[derive(Clone, Debug)]
pub struct Database {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
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
}

/// Rust systems registered, waiting to be made: name, clauses, closure.
#[derive(Default)]
struct PendingRust(Vec<(String, String, schedule::RustSystem)>);

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

impl Database {
    /// A new, empty database that lives in memory.
    pub fn open_in_memory() -> Database {
        Database {
            shared: Arc::new(Shared {
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
                recursion_limit: AtomicUsize::new(crate::exec::DEFAULT_RECURSION_LIMIT),
                file: OnceLock::new(),
                synchronous: AtomicU8::new(Synchronous::Full as u8),
                checkpoint_size: AtomicU64::new(DEFAULT_CHECKPOINT_SIZE),
                setting_up: AtomicBool::new(false),
                pending_rust: Mutex::default(),
            }),
        }
    }

    /// A new connection to this database, for the calling thread.
    pub fn connect(&self) -> Connection {
        let id = self.shared.next_connection.fetch_add(1, Ordering::Relaxed);
        Connection {
            shared: Arc::clone(&self.shared),
            id,
            busy_timeout_ms: AtomicU64::new(DEFAULT_BUSY_TIMEOUT.as_millis() as u64),
            interrupt: Arc::default(),
            tx_readers: Mutex::default(),
            tx_serial: AtomicU64::new(0),
            texts: Mutex::default(),
            prepared: Mutex::default(),
        }
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

/// A handle on a `Database`, one per thread.
#[derive(Debug)]
pub struct Connection {
    shared: Arc<Shared>,
    id: u64,
    busy_timeout_ms: AtomicU64,
    interrupt: Arc<wait::Interrupt>,
    /// The event cursors of this connection's prepared statements that moved inside the
    /// open transaction, with where they stood before it: ROLLBACK puts them back.
    tx_readers: Mutex<Vec<(Weak<Mutex<EventCursors>>, EventCursors)>>,
    /// Counts this connection's BEGINs (for `Transaction`'s guard).
    tx_serial: AtomicU64,
    /// The statements `execute`, `query_row` and one-statement scripts were given as text
    /// lately, parsed and planned: the same text again skips the parser and the planner.
    texts: Mutex<cached::TextCache>,
    /// `prepare_cached`'s statements between uses.
    prepared: Mutex<cached::StatementCache>,
}

/// What one statement of a script produced, for shells that print results.
#[derive(Debug)]
pub struct StatementResult {
    /// The statement's text: as written when the script is that one statement, else as
    /// parsed (printed back).
    pub statement: String,
    /// Its leading keyword(s): `"SELECT"`, `"SPAWN"`, `"CREATE COMPONENT"`, …; a write
    /// with RETURNING is `"UPDATE … RETURNING"` and so on.
    pub verb: &'static str,
    /// The result's columns (none for statements that return no rows).
    pub columns: Vec<OutputColumn>,
    /// The rows, for a statement that returns rows.
    pub rows: Option<Rows>,
    /// How many entities or rows the statement wrote.
    pub affected: usize,
}

impl Connection {
    /// Runs one statement and returns how many entities it spawned, changed or removed
    /// (COPY: how many rows it copied). A query that returns rows is an error, as in
    /// rusqlite (`Error::ExecuteReturnedResults`): its rows are read with `query_row`, or a
    /// prepared statement's `query`.
    ///
    /// ```
    /// # use ecsql::{Database, Error};
    /// let conn = Database::open_in_memory().connect();
    /// conn.execute("CREATE COMPONENT Health (hp INT)", ())?;
    /// assert_eq!(conn.execute("SPAWN Health(hp => i) FROM range(3) AS r(i)", ())?, 3);
    /// assert_eq!(conn.execute("UPDATE Health SET hp = Health.hp + 1 WHERE Health.hp > 0", ())?, 2);
    /// assert!(matches!(conn.execute("SELECT Health.hp FROM Health", ()), Err(Error::ExecuteReturnedResults)));
    /// assert_eq!(conn.execute("SELECT Health.hp FROM Health WHERE Health.hp > 5", ())?, 0);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn execute(&self, sql: &str, params: impl Params) -> Result<usize> {
        let values = params.into_values();
        let text = self.text(sql, &values)?;
        check_params(text.statement(), &values)?;
        let _call = self.enter();
        let outcome = self.run_text(&text, &values, sql, Location::new(1, 1), sql.trim())?;
        executed(&text.statement().kind, &outcome)
    }

    /// Runs every statement of a script, in order, stopping at the first error.
    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        let _call = self.enter();
        for statement in parse::parse(sql)? {
            self.run(&statement, &ParamValues::default(), RunContext::default())?;
        }
        Ok(())
    }

    /// Runs every statement of a script and hands each result (or error) to `each`; stops
    /// when `each` returns false. A syntax error anywhere stops the script before it runs.
    pub fn run_script(&self, sql: &str, each: impl FnMut(Result<StatementResult>) -> bool) -> Result<()> {
        self.run_script_at(sql, Location::new(1, 1), each)
    }

    /// `run_script` for text that begins at `start` in a larger file, so that the
    /// locations in errors are places in that file.
    pub fn run_script_at(
        &self,
        sql: &str,
        start: Location,
        each: impl FnMut(Result<StatementResult>) -> bool,
    ) -> Result<()> {
        self.run_script_with(sql, start, &ParamValues::default(), each)
    }

    /// `run_script_at`, every statement given `params` (a shell's `.parameter set`): each
    /// statement reads those of its parameters it names.
    ///
    /// ```
    /// # use ecsql::{Database, Location, ParamValues, Value};
    /// let conn = Database::open_in_memory().connect();
    /// let params = ParamValues {
    ///     positional: vec![Value::Float(0.5)],
    ///     named: vec![("who".into(), Value::Text("ziggy".into()))],
    ///     ..ParamValues::default()
    /// };
    /// let mut seen = Vec::new();
    /// conn.run_script_with("SELECT ?1 * 4 AS x; SELECT :who AS who; SELECT 1", Location::new(1, 1), &params, |r| {
    ///     seen.push(r.map(|r| r.rows.unwrap().next().unwrap().unwrap().get::<_, Value>(0).unwrap()));
    ///     true
    /// })?;
    /// assert_eq!(seen[0].as_ref().unwrap(), &Value::Float(2.0));
    /// assert_eq!(seen[1].as_ref().unwrap(), &Value::Text("ziggy".into()));
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn run_script_with(
        &self,
        sql: &str,
        start: Location,
        params: &ParamValues,
        mut each: impl FnMut(Result<StatementResult>) -> bool,
    ) -> Result<()> {
        let _call = self.enter();
        let result = |statement: &parse::Statement, text: Option<&str>, o: Outcome| StatementResult {
            statement: text.map_or_else(|| statement.to_string(), str::to_owned),
            verb: statement.kind.verb(),
            columns: o.columns.to_vec(),
            rows: o.returns_rows.then(|| Rows::new(o.columns, o.rows)),
            affected: o.affected,
        };
        // One statement's text is the script itself; printing a statement back (a dump's
        // thousand rows of values) cost a seventh of reading one.
        let alone = sql.trim().trim_end_matches(';').trim_end();
        // A statement is the same text however far it stands from the last one's end.
        let (sql, start) = parse::skip_space(sql, start);
        let shape = match self.kept_text(sql, start, params) {
            Ok(text) => {
                let ran = self.run_text(&text, params, sql, start, alone);
                each(ran.map(|o| result(text.statement(), Some(alone), o)));
                return Ok(());
            }
            Err(shape) => shape,
        };
        let mut statements = parse::parse_at(sql, start)?;
        if statements.len() == 1
            && let Some(statement) = statements.pop()
        {
            let text = self.keep_text(sql, start, statement, shape);
            let ran = self.run_text(&text, params, sql, start, alone);
            each(ran.map(|o| result(text.statement(), Some(alone), o)));
            return Ok(());
        }
        for statement in statements {
            let ran = self
                .run(&statement, params, RunContext::default())
                .map_err(Error::from);
            if !each(ran.map(|o| result(&statement, None, o))) {
                break;
            }
        }
        Ok(())
    }

    /// Runs a statement expected to return rows and maps its first row with `f`.
    pub fn query_row<T>(
        &self,
        sql: &str,
        params: impl Params,
        f: impl FnOnce(&Row) -> Result<T>,
    ) -> Result<T> {
        // Run once, it is no reader: like `execute`, it sees every row as changed and every
        // event kept, and moves no cursor.
        let values = params.into_values();
        let text = self.text(sql, &values)?;
        check_params(text.statement(), &values)?;
        let _call = self.enter();
        let outcome = self.run_text(&text, &values, sql, Location::new(1, 1), sql.trim())?;
        match Rows::new(outcome.columns, outcome.rows).next()? {
            Some(row) => f(&row),
            None => Err(Error::QueryReturnedNoRows),
        }
    }

    /// True outside BEGIN … COMMIT/ROLLBACK.
    pub fn is_autocommit(&self) -> bool {
        self.shared.tx_owner.load(Ordering::SeqCst) != self.id
    }

    /// A handle that stops this connection's running statement from another thread (or
    /// a signal handler): see [`InterruptHandle`].
    pub fn get_interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle {
            state: Arc::clone(&self.interrupt),
        }
    }

    /// How long a statement waits for another connection's transaction (or running
    /// write) before it fails with [`Error::Busy`]; [`DEFAULT_BUSY_TIMEOUT`] at first.
    pub fn busy_timeout(&self) -> Duration {
        Duration::from_millis(self.busy_timeout_ms.load(Ordering::Relaxed))
    }

    /// When a file database flushes its journal to the disk (`PRAGMA synchronous`; one
    /// setting for the whole database): [`Synchronous::Full`] at first.
    pub fn synchronous(&self) -> Synchronous {
        Synchronous::from_u8(self.shared.synchronous.load(Ordering::Relaxed))
    }

    /// Sets `synchronous` (as `PRAGMA synchronous = off | normal | full` does).
    pub fn set_synchronous(&self, s: Synchronous) {
        self.shared.synchronous.store(s as u8, Ordering::Relaxed);
    }

    /// How large a file database's journal grows before a commit checkpoints it (`PRAGMA
    /// checkpoint_size`): [`DEFAULT_CHECKPOINT_SIZE`] at first.
    pub fn checkpoint_size(&self) -> u64 {
        self.shared.checkpoint_size.load(Ordering::Relaxed)
    }

    /// Sets `checkpoint_size`, in bytes.
    pub fn set_checkpoint_size(&self, bytes: u64) {
        self.shared.checkpoint_size.store(bytes, Ordering::Relaxed);
    }

    /// Sets `busy_timeout` (as `PRAGMA busy_timeout = ms` does). Zero fails at once.
    pub fn set_busy_timeout(&self, timeout: Duration) {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self.busy_timeout_ms.store(ms, Ordering::Relaxed);
    }

    /// The most working memory one statement may hold (rows kept for joins, groups,
    /// sorts and results), in bytes; one limit for the whole database. By default 80% of
    /// the machine's memory.
    pub fn memory_limit(&self) -> usize {
        self.shared.memory_limit.load(Ordering::Relaxed)
    }

    /// Sets the database's `memory_limit` (as `PRAGMA memory_limit = …` does): a statement
    /// that would hold more fails with [`ExecError::MemoryLimit`] instead of running the
    /// machine out of memory.
    pub fn set_memory_limit(&self, bytes: usize) {
        self.shared.memory_limit.store(bytes, Ordering::Relaxed);
    }

    /// How many threads one statement may run on: by default the machine's cores (at most
    /// [`MAX_THREADS`]). A scan, filter, aggregate or UPDATE over many rows splits its
    /// rows among them; its result is the same as on one thread (docs/performance.md).
    pub fn threads(&self) -> usize {
        self.shared.threads.load(Ordering::Relaxed)
    }

    /// Sets the database's `threads` (as `PRAGMA threads = …` does), from 1 (every
    /// statement on the thread that runs it) to [`MAX_THREADS`].
    pub fn set_threads(&self, threads: usize) {
        self.shared
            .threads
            .store(threads.clamp(1, MAX_THREADS), Ordering::Relaxed);
    }

    /// The fewest rows each part of a split statement takes (`PRAGMA min_parallel_rows`):
    /// a statement splits into no more parts than it has this many rows.
    /// [`DEFAULT_MIN_PARALLEL_ROWS`] at first.
    pub fn min_parallel_rows(&self) -> usize {
        self.shared.min_parallel_rows.load(Ordering::Relaxed)
    }

    /// Sets the database's `min_parallel_rows` (at least 1), as `PRAGMA
    /// min_parallel_rows = …` does: lower for statements whose rows cost much each (a
    /// GROUP BY, text work), higher where splitting does not pay.
    pub fn set_min_parallel_rows(&self, rows: usize) {
        self.shared
            .min_parallel_rows
            .store(rows.max(1), Ordering::Relaxed);
    }

    /// Names of the declared components, for completion in shells.
    pub fn component_names(&self) -> Result<Vec<String>> {
        self.with_world(|w| w.components().map(|c| c.name().to_owned()).collect())
    }

    /// `Component.field` for every field of every component, for completion in shells.
    pub fn field_names(&self) -> Result<Vec<String>> {
        self.with_world(|w| {
            w.components()
                .flat_map(|c| {
                    c.fields()
                        .iter()
                        .map(move |f| format!("{}.{}", c.name(), f.name()))
                })
                .collect()
        })
    }

    /// The columnar door, read side: runs `f` on the database's `World` under the read
    /// lock, as a query would (after waiting out another connection's transaction, for at
    /// most the busy timeout). Inside `f`, this database cannot be used from this thread:
    /// a statement there fails with [`Error::Misuse`] instead of waiting for itself.
    pub fn with_world<T>(&self, f: impl FnOnce(&World) -> T) -> Result<T> {
        let _call = self.enter();
        let state = self.read_state(Location::default())?;
        let _holding = wait::Holding::new(self.key());
        Ok(f(&state.world))
    }

    /// The columnar door, write side: runs `f` on the database's `World` under the write
    /// lock, as a write statement would. Unlike a statement, `f` is not atomic: what it
    /// wrote before it failed stays (inside BEGIN, ROLLBACK still undoes all of it). On a
    /// file database, an `f` that panics leaves the database refusing every later use
    /// ([`FileError::Abandoned`](crate::FileError::Abandoned)) until it is opened again,
    /// as of its last commit: memory and file never disagree.
    pub fn with_world_mut<T>(&self, f: impl FnOnce(&mut World) -> T) -> Result<T> {
        let _call = self.enter();
        self.refuse_in_setup("with_world_mut")?;
        let mut state = self.write_state(Location::default())?;
        let holding = wait::Holding::new(self.key());
        // A file database whose closure panics keeps what it wrote in memory only: it is
        // abandoned, so that nothing reads or keeps it (`FileError::Abandoned`).
        let abandon = AbandonOnPanic(self.file(), "a closure given to with_world_mut panicked");
        let out = f(&mut state.world);
        drop(abandon);
        drop(holding);
        // A file database cannot journal what `f` did: it checkpoints instead.
        self.unjournaled(&mut state);
        drop(state);
        self.keep_unjournaled(Location::default())?;
        Ok(out)
    }
}

impl Drop for Connection {
    /// A connection that goes away inside a transaction rolls it back.
    fn drop(&mut self) {
        if self.shared.tx_owner.load(Ordering::SeqCst) == self.id {
            let mut state = self.shared.state.write();
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
