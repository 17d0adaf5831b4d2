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

mod cached;
mod durable;
mod journal;
mod params;
mod row;
mod save;
mod settings;
pub use save::write_atomically;
mod systems;
mod wait;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock};

pub use durable::{DEFAULT_CHECKPOINT_SIZE, OpenOptions, OpenProgress, Synchronous};
pub use params::{Params, ToParam};
use row::Recycler;
pub use row::{FromRow, FromValue, Row, RowIndex, Rows};
pub use wait::InterruptHandle;

use crate::error::{BoxResult, Error, Result};
use crate::exec::{Budget, Chunk, Clock, EventCursors, EventReads, ExecError, Outcome, Run, TableCache};
use crate::location::Location;
use crate::parse::{self, StatementKind};
use crate::plan::{self, DataType, OutputColumn, ParamValues, Plan, PlanSlot};
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

    /// Runs a statement of a file database's journal again: its text from the
    /// connection's kept texts (texts that differ only in constants share one plan, as
    /// `execute`'s do), with the seed, write tick and cursors it ran with.
    fn run_replayed(&self, entry: &journal::Entry, text: &cached::Text) -> Result<Outcome> {
        let reader = entry.reader.clone().map(|c| Arc::new(Mutex::new(c)));
        let base = RunContext {
            reader: reader.as_ref(),
            seed: Some(entry.seed),
            replay: true,
            ..RunContext::default()
        };
        let sql = entry.text.as_str();
        self.run_text_with(text, &entry.params, sql, Location::new(1, 1), sql, base)
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

    /// `sql`, one statement, from the connection's kept texts when it was given lately
    /// (or its shape was, when `params` gives no values).
    fn text(&self, sql: &str, params: &ParamValues) -> Result<cached::Text> {
        let start = Location::new(1, 1);
        let shape = match self.kept_text(sql, start, params) {
            Ok(text) => return Ok(text),
            Err(shape) => shape,
        };
        let statement = parse::parse_one(sql)?;
        Ok(self.keep_text(sql, start, statement, shape))
    }

    /// The text kept for `sql` (starting at `start`), or the statement kept for its
    /// shape with `sql`'s values; else `sql`'s shape, when its constants may be lifted
    /// (`params` gives no values, and `PRAGMA parameterize` is not off).
    fn kept_text(
        &self,
        sql: &str,
        start: Location,
        params: &ParamValues,
    ) -> Result<cached::Text, Option<parse::Shape>> {
        let gives_none = params.positional.is_empty() && params.named.is_empty();
        self.texts.lock().find(sql, start, gives_none)
    }

    /// `statement`, parsed from `sql` (of shape `shape`), kept for its shape with its
    /// constants lifted, or for its text, as the connection keeps them.
    fn keep_text(
        &self,
        sql: &str,
        start: Location,
        statement: parse::Statement,
        shape: Option<parse::Shape>,
    ) -> cached::Text {
        self.texts.lock().keep(sql, start, statement, shape)
    }

    /// Runs a statement given as text (`sql`, starting at `start`; `written`: as
    /// written, for the journal), with the plan and table lists its text (or its shape)
    /// keeps, unless a run of the same text is under way (a statement run from inside
    /// it): then with its own. A shape's statement that fails to plan runs as `sql`
    /// writes it instead, so that the error is the text's own.
    fn run_text(
        &self,
        text: &cached::Text,
        params: &ParamValues,
        sql: &str,
        start: Location,
        written: &str,
    ) -> Result<Outcome> {
        self.run_text_with(text, params, sql, start, written, RunContext::default())
    }

    /// `run_text`, with what `base` brings (a replayed statement's seed and cursors).
    fn run_text_with(
        &self,
        text: &cached::Text,
        params: &ParamValues,
        sql: &str,
        start: Location,
        written: &str,
        base: RunContext<'_>,
    ) -> Result<Outcome> {
        let with = RunContext {
            text: Some(written),
            ..base
        };
        match text {
            cached::Text::Lifted(kept, values) => {
                let with = RunContext { lifted: true, ..with };
                let ran = self.run_kept(&kept.lifted.statement, &kept.slots, values, with, Some(start));
                let Err(Error::Plan(_)) = ran else {
                    return ran;
                };
                // Planned before anything ran: nothing was done. As written, the text
                // gives its own error, or plans where its shape's statement did not.
                let mut statements = parse::parse_at(sql, start)?;
                let (Some(statement), true) = (statements.pop(), statements.is_empty()) else {
                    return ran;
                };
                let again = self
                    .run(
                        &statement,
                        params,
                        RunContext {
                            lifted: false,
                            ..with
                        },
                    )
                    .map_err(Error::from);
                if again.is_ok() {
                    kept.refuse();
                }
                again
            }
            cached::Text::Once(statement) => self.run(statement, params, with).map_err(Error::from),
            cached::Text::Kept(kept) => {
                let moved = text.at_origin().then_some(start);
                self.run_kept(&kept.statement, &kept.slots, params, with, moved)
            }
        }
    }

    /// Runs a kept statement with the plan and table lists kept beside it, or with its own
    /// when a run of it is under way (a statement run from inside it). `moved`: where the
    /// statement's text begins, when it was parsed as beginning at line 1, column 1 (its
    /// error is moved there).
    fn run_kept(
        &self,
        statement: &parse::Statement,
        slots: &Mutex<cached::Slots>,
        params: &ParamValues,
        with: RunContext<'_>,
        moved: Option<Location>,
    ) -> Result<Outcome> {
        let placed = |mut e: Box<Error>| {
            if let Some(start) = moved {
                move_lock_error(&mut e, statement.at, start);
                e.move_to(start);
            }
            Error::from(e)
        };
        let Some(slots) = slots.try_lock() else {
            return self.run(statement, params, with).map_err(placed);
        };
        let ran = self.run(
            statement,
            params,
            RunContext {
                cache: Some(&slots.tables),
                plans: Some(&slots.plan),
                ..with
            },
        );
        // A subquery's result is not kept waiting for the next run of the text.
        slots.plan.borrow_mut().forget_results();
        ran.map_err(placed)
    }

    /// Parses a statement once, to run many times. It is planned at its first run (when
    /// its parameters' types are known), so an unknown component or field is an error of
    /// that run, not of `prepare`; its syntax is checked here.
    ///
    /// ```
    /// # use ecsql::{Database, Error, PlanError};
    /// let conn = Database::open_in_memory().connect();
    /// assert!(conn.prepare("SELEC id FROM Gold").is_err());
    /// let mut total = conn.prepare("SELECT sum(n) FROM Gold")?;
    /// let first = total.query_row((), |r| r.get::<_, Option<i64>>(0));
    /// assert!(matches!(first, Err(Error::Plan(PlanError::UnknownComponent { .. }))));
    /// conn.execute("CREATE COMPONENT Gold (n INT)", ())?;
    /// conn.execute("SPAWN Gold(5)", ())?;
    /// assert_eq!(total.query_row((), |r| r.get::<_, i64>(0))?, 5);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn prepare(&self, sql: &str) -> Result<Statement<'_>> {
        Ok(Statement {
            connection: self,
            prepared: Prepared {
                statement: parse::parse_one(sql)?,
                text: sql.trim().to_owned(),
                cache: RefCell::default(),
                plan: RefCell::default(),
                events: Arc::default(),
                params: ParamValues::default(),
                results: Recycler::default(),
            },
        })
    }

    /// `prepare`, from the connection's cache of prepared statements (rusqlite's
    /// `prepare_cached`): the statement prepared from the same text (spaces around it
    /// aside) before, with its plan and table lists, when it is there. The statement goes
    /// back to the cache when the `CachedStatement` is dropped (`discard` drops it for
    /// good); the cache keeps the 16 most lately used
    /// (`set_prepared_statement_cache_capacity`). While it stays cached, a statement is
    /// the same reader of events and changes from one use to the next, as one the caller
    /// kept would be. One that left the cache (pushed out by others, flushed, or a second
    /// copy taken while the first was out) starts over as a new reader, which sees every
    /// event row still kept and every row as changed: a program that reads events or
    /// changes through a statement should keep the statement itself.
    ///
    /// ```
    /// # use ecsql::Database;
    /// let conn = Database::open_in_memory().connect();
    /// conn.execute("CREATE COMPONENT Gold (n INT)", ())?;
    /// for n in 0..3 {
    ///     let mut spawn = conn.prepare_cached("SPAWN Gold(?1)")?;
    ///     spawn.execute([n])?;
    /// }
    /// let mut total = conn.prepare_cached("SELECT sum(n) FROM Gold")?;
    /// assert_eq!(total.query_row((), |r| r.get::<_, i64>(0))?, 3);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn prepare_cached(&self, sql: &str) -> Result<CachedStatement<'_>> {
        let sql = sql.trim();
        let parked = self.prepared.lock().take(sql);
        let statement = match parked {
            Some(prepared) => Statement {
                connection: self,
                prepared,
            },
            None => self.prepare(sql)?,
        };
        Ok(CachedStatement {
            key: sql.to_owned(),
            statement,
        })
    }

    /// How many statements `prepare_cached` keeps (16 unless set); 0 keeps none.
    pub fn set_prepared_statement_cache_capacity(&self, capacity: usize) {
        self.prepared.lock().set_capacity(capacity);
    }

    /// Drops every statement `prepare_cached` keeps, and the texts the connection keeps
    /// parsed and planned for `execute` and `query_row`.
    pub fn flush_prepared_statement_cache(&self) {
        self.prepared.lock().clear();
        self.texts.lock().clear();
    }

    /// Begins a transaction, as rusqlite's `transaction()`: `commit` keeps it, `rollback`
    /// (or dropping the guard, as an early `?` return does) undoes it.
    ///
    /// ```
    /// # use ecsql::Database;
    /// let conn = Database::open_in_memory().connect();
    /// conn.execute("CREATE COMPONENT Gold (n INT)", ())?;
    /// {
    ///     let tx = conn.transaction()?;
    ///     tx.execute("SPAWN Gold(10)", ())?;
    ///     tx.commit()?;
    /// }
    /// {
    ///     let tx = conn.transaction()?;
    ///     tx.execute("SPAWN Gold(99)", ())?;
    ///     // Dropped without commit: undone.
    /// }
    /// assert_eq!(conn.query_row("SELECT sum(n) FROM Gold", (), |r| r.get::<_, i64>(0))?, 10);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn transaction(&self) -> Result<Transaction<'_>> {
        self.execute("BEGIN", ())?;
        Ok(Transaction {
            conn: self,
            open: true,
            serial: self.tx_serial.load(Ordering::Relaxed),
        })
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

    /// Enters an API call for the interrupt handle; leaves it when dropped.
    fn enter(&self) -> Call<'_> {
        let (turn, took) = self.interrupt.enter();
        Call {
            interrupt: &self.interrupt,
            turn,
            took,
        }
    }

    /// This database, as the thread-local record of held locks names it.
    fn key(&self) -> usize {
        Arc::as_ptr(&self.shared) as usize
    }

    fn owner_allows(&self) -> bool {
        let owner = self.shared.tx_owner.load(Ordering::SeqCst);
        owner == 0 || owner == self.id
    }

    /// The read lock, once no other connection holds a transaction.
    fn read_state(&self, at: Location) -> BoxResult<parking_lot::RwLockReadGuard<'_, State>> {
        let lock = &self.shared.state;
        self.acquire(at, || lock.try_read(), |wait| lock.try_read_for(wait))
    }

    /// The write lock, once no other connection holds a transaction.
    fn write_state(&self, at: Location) -> BoxResult<parking_lot::RwLockWriteGuard<'_, State>> {
        let lock = &self.shared.state;
        self.acquire(at, || lock.try_write(), |wait| lock.try_write_for(wait))
    }

    /// A guard of the state's lock (`try_now` takes it without waiting, `try_for` waits up
    /// to a while), once no other connection holds a transaction: fails rather than wait
    /// for this thread itself, past the busy timeout, or once interrupted.
    fn acquire<G>(
        &self,
        at: Location,
        try_now: impl Fn() -> Option<G>,
        try_for: impl Fn(Duration) -> Option<G>,
    ) -> BoxResult<G> {
        if let Some(file) = self.file() {
            file.refuse_if_abandoned()?;
        }
        if wait::held(self.key()) {
            return Err(Box::new(Error::Misuse(format!(
                "the database was used at {at} from inside with_world/with_world_mut on the same \
                 thread, which holds its lock: that would wait for itself forever (finish the \
                 closure first, or use the World it was given)"
            ))));
        }
        // The usual case costs one try, without reading the clock.
        if let Some(guard) = try_now().filter(|_| self.owner_allows()) {
            return Ok(guard);
        }
        let deadline = std::time::Instant::now() + self.busy_timeout();
        loop {
            match try_for(self.slice(deadline)) {
                Some(guard) if self.owner_allows() => return Ok(guard),
                Some(guard) => {
                    drop(guard);
                    self.wait_for_transaction(deadline, at)?;
                }
                None => self.still_waiting(deadline, at)?,
            }
        }
    }

    /// How long the next try may block: until the deadline, at most `POLL`.
    fn slice(&self, deadline: std::time::Instant) -> Duration {
        deadline
            .saturating_duration_since(std::time::Instant::now())
            .min(wait::POLL)
    }

    /// After a try that timed out: fails once interrupted or past the deadline.
    fn still_waiting(&self, deadline: std::time::Instant, at: Location) -> Result<()> {
        let turn = self.interrupt.running_turn();
        if turn != 0 && self.interrupt.is_interrupted(turn) {
            return Err(ExecError::Interrupted { at }.into());
        }
        if std::time::Instant::now() >= deadline {
            return Err(Error::Busy(format!(
                "database is busy at {at}: another connection's statement held it for the whole \
                 busy timeout ({} ms; Connection::set_busy_timeout or PRAGMA busy_timeout waits \
                 longer)",
                self.busy_timeout().as_millis()
            )));
        }
        Ok(())
    }

    /// Waits until no other connection holds a transaction, until the deadline at most.
    fn wait_for_transaction(&self, deadline: std::time::Instant, at: Location) -> Result<()> {
        let mut holder = self.shared.tx_lock.lock();
        while !self.owner_allows() {
            if holder.thread == Some(std::thread::current().id()) {
                return Err(Error::Busy(format!(
                    "database is locked at {at}: connection {} on this same thread holds an open \
                     transaction, so waiting for it would never end (COMMIT or ROLLBACK it, or \
                     run the statement on that connection)",
                    self.shared.tx_owner.load(Ordering::SeqCst)
                )));
            }
            let turn = self.interrupt.running_turn();
            if turn != 0 && self.interrupt.is_interrupted(turn) {
                return Err(ExecError::Interrupted { at }.into());
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                let held = holder.since.map_or(0.0, |s| s.elapsed().as_secs_f64());
                return Err(Error::Busy(format!(
                    "database is busy at {at}: connection {} has held a transaction for {held:.1} s, \
                     longer than the busy timeout ({} ms; Connection::set_busy_timeout or PRAGMA \
                     busy_timeout waits longer)",
                    self.shared.tx_owner.load(Ordering::SeqCst),
                    self.busy_timeout().as_millis()
                )));
            }
            self.shared
                .tx_done
                .wait_for(&mut holder, (deadline - now).min(wait::POLL));
        }
        Ok(())
    }

    fn end_transaction(&self) {
        let mut holder = self.shared.tx_lock.lock();
        *holder = wait::TxHolder::default();
        self.shared.tx_owner.store(0, Ordering::SeqCst);
        self.shared.tx_done.notify_all();
    }

    /// This call's budget: its interrupt turn and the database's memory limit.
    fn budget(&self) -> Budget<'_> {
        let budget = Budget::new(self.shared.memory_limit.load(Ordering::Relaxed))
            .with_split(crate::exec::Split {
                threads: self.threads(),
                min_rows: self.min_parallel_rows(),
            })
            .with_recursion_limit(self.shared.recursion_limit.load(Ordering::Relaxed));
        match self.interrupt.running_turn() {
            0 => budget,
            turn => budget.interruptible(&self.interrupt.target, turn),
        }
    }

    /// Runs one statement, as `with` says (a prepared statement's plan, cache and cursors,
    /// which move past what it read once it succeeded; a replayed statement's seed). A
    /// file database journals a write before it runs and flushes it after, as
    /// `PRAGMA synchronous` says.
    fn run(
        &self,
        statement: &parse::Statement,
        params: &ParamValues,
        with: RunContext<'_>,
    ) -> BoxResult<Outcome> {
        let at = statement.at;
        match &statement.kind {
            StatementKind::Begin => return Ok(self.begin(at)?),
            StatementKind::Pragma { name, value } => {
                let (name, name_at) = (
                    name.as_ref().map(|n| n.value.as_str()),
                    name.as_ref().map_or(at, |n| n.at),
                );
                return Ok(self.pragma(name, value.as_deref(), name_at, with.replay)?);
            }
            StatementKind::Save { path } => return Ok(self.save(&save::file_name(path, params, at)?, at)?),
            StatementKind::Load { path } => return Ok(self.load(&save::file_name(path, params, at)?, at)?),
            StatementKind::Checkpoint => return Ok(self.checkpoint_statement(at)?),
            kind if kind.is_schedule() => return Ok(self.run_schedule(statement, params, with)?),
            StatementKind::Commit | StatementKind::Rollback => {
                return Ok(self.end(matches!(statement.kind, StatementKind::Rollback), at)?);
            }
            _ => {}
        }
        if !statement.kind.is_read_only() {
            self.refuse_in_setup(statement.kind.verb())?;
        }
        let own_cache;
        let cache = match with.cache {
            Some(cache) => cache,
            None => {
                own_cache = RefCell::default();
                &own_cache
            }
        };
        let (plans, reader) = (with.plans, with.reader);
        let budget = self.budget();
        budget.check(at).map_err(Error::from)?;
        let cursors_of = |reader: Option<&Arc<Mutex<EventCursors>>>| {
            reader.map(|cursors| EventReads {
                from: cursors.lock().clone(),
                ..EventReads::default()
            })
        };
        let read_only = statement.kind.is_read_only();
        // A read runs under the read lock, unless it asks about changes of a component
        // not tracked yet: then, once, under the write lock that turns tracking on.
        let mut done = None;
        let mut world = 0;
        let mut reads = None;
        if read_only {
            let state = self.read_state(at)?;
            let mut slot = plans.map(RefCell::borrow_mut);
            let plan = state.planned(slot.as_deref_mut(), statement, params)?;
            // A point read (one entity by its id, `point_query`) that reads no events and
            // asks nothing about changes is answered here, past the run's set-up.
            if !plan.reads_cursors()
                && let Plan::Query(q) = &*plan
            {
                let spare = with.spare.and_then(|s| s.try_borrow_mut().ok()?.take());
                if let Some(rows) = crate::exec::point_query(q, &state.world, params, spare) {
                    return Ok(Outcome::rows(q.columns.clone(), rows));
                }
            }
            let tracked = tracking_to_start(&plan, reader.is_some());
            // A plan that reads no events and asks nothing about changes neither reads
            // the reader's cursors nor moves them.
            reads = cursors_of(reader.filter(|_| plan.reads_cursors()));
            world = enter_world(&mut reads, state.loads);
            let clock = state.schedule.clock();
            let run = self.run_of(cache, state.restores, at, params, &budget, clock, reads.as_ref());
            if tracked.iter().all(|a| a.is_on(&state.world)) {
                let outcome = crate::exec::run_read(
                    &plan,
                    &state.world,
                    Run {
                        seed: with.seed,
                        spare: with.spare,
                        ..run
                    },
                )
                .map_err(Error::from)?;
                if reads.is_none() {
                    // No cursors to move, nothing to flush: the read is done.
                    return Ok(outcome);
                }
                done = Some((outcome, state.world.tick(), !tracked.is_empty(), None));
            }
        }
        let (outcome, end, asks_changes, written) = match done {
            Some(done) => done,
            None => {
                let mut state = self.write_state(at)?;
                let _abandon = AbandonOnPanic(self.file(), WRITE_PANICKED);
                let state = &mut *state;
                reads = cursors_of(reader);
                world = enter_world(&mut reads, state.loads);
                let clock = state.schedule.clock();
                let run = self.run_of(cache, state.restores, at, params, &budget, clock, reads.as_ref());
                let mut slot = plans.map(RefCell::borrow_mut);
                let plan = state.planned(slot.as_deref_mut(), statement, params)?;
                let tracked = tracking_to_start(&plan, reader.is_some());
                for asked in tracked {
                    if !asked.is_on(&state.world) {
                        let tick = state.world.tick();
                        asked
                            .start(&mut state.world)
                            .map_err(|e| Error::from(ExecError::storage(at, e)))?;
                        self.journal_tracking(state, with.replay, *asked, tick);
                    }
                }
                let (ran, written) = if read_only {
                    (
                        crate::exec::run_read(
                            &plan,
                            &state.world,
                            Run {
                                seed: with.seed,
                                spare: with.spare,
                                ..run
                            },
                        ),
                        None,
                    )
                } else if matches!(statement.kind, StatementKind::ExplainAnalyze { keep: false, .. }) {
                    // Its write is undone when it has run: nothing to journal (with KEEP
                    // it is journaled as any write, and replayed as one).
                    (crate::exec::run_write(&plan, &mut state.world, run), None)
                } else if matches!(statement.kind, StatementKind::CopyFrom { .. }) {
                    // What a file gave cannot be journaled as a statement (the file may
                    // change): a file database keeps it by a checkpoint, as LOAD's.
                    let ran = crate::exec::run_write(&plan, &mut state.world, run);
                    if ran.is_ok() {
                        self.unjournaled(state);
                    }
                    (ran, None)
                } else {
                    let seed = with.seed.unwrap_or_else(crate::exec::fresh_seed);
                    let tick = state.world.tick();
                    let ahead = self.journal_ahead(state, with.replay, || journal::Entry {
                        text: with.text.map_or_else(|| statement.to_string(), str::to_owned),
                        params: if with.lifted {
                            ParamValues::default()
                        } else {
                            params.clone()
                        },
                        seed,
                        tick,
                        reader: reads.as_ref().map(|r| r.from.clone()),
                        rust_systems: Vec::new(),
                    })?;
                    let ran = crate::exec::run_write(
                        &plan,
                        &mut state.world,
                        Run {
                            seed: Some(seed),
                            ..run
                        },
                    );
                    let written = self.journal_settle(state, ahead, ran.is_ok());
                    (ran, written)
                };
                (
                    ran.map_err(Error::from)?,
                    state.world.tick(),
                    !tracked.is_empty(),
                    written,
                )
            }
        };
        if let (Some(cursors), Some(reads)) = (reader, reads) {
            let changes = asks_changes.then_some(end);
            self.advance_reader(cursors, &reads.reached.into_inner(), changes, world);
        }
        // A read leaves nothing to flush or checkpoint (a tracking start whose record
        // failed is checkpointed by the next write, before it runs).
        if !read_only {
            self.make_durable(written, at)?;
            if matches!(statement.kind, StatementKind::CopyFrom { .. }) {
                self.keep_unjournaled(at)?;
            }
        }
        Ok(outcome)
    }

    /// COMMIT, or ROLLBACK (`undone`). A file database's COMMIT journals the transaction
    /// first: when that fails, the transaction is rolled back and COMMIT fails.
    fn end(&self, undone: bool, at: Location) -> Result<Outcome> {
        if self.is_autocommit() {
            return Err(ExecError::Transaction {
                message: "no transaction is open (BEGIN starts one)".into(),
                at,
            }
            .into());
        }
        let mut state = self.write_state(at)?;
        let journaled = self.journal_end(&mut state, undone);
        let undone = undone || journaled.is_err();
        let ended = if undone {
            state.restores += 1;
            state.world.rollback()
        } else {
            state.world.commit()
        };
        if ended.is_err() {
            // The world's transaction was ended through with_world_mut: what it kept is
            // not what the journal says.
            self.unjournaled(&mut state);
        }
        state.end_schedule_transaction(undone);
        let unjournaled = state.unjournaled;
        drop(state);
        self.end_readers_transaction(undone);
        self.end_transaction();
        let written = match journaled {
            Ok(written) => written,
            Err(e) => {
                return Err(ExecError::Transaction {
                    message: format!("the transaction was rolled back: {e}"),
                    at,
                }
                .into());
            }
        };
        if let Err(e) = ended {
            let message = format!("{e} (the world's transaction was ended through with_world_mut)");
            return Err(ExecError::Transaction { message, at }.into());
        }
        self.make_durable(written, at)?;
        if unjournaled {
            self.keep_unjournaled(at)?;
        }
        Ok(Outcome::default())
    }

    #[allow(clippy::too_many_arguments)]
    fn run_of<'r>(
        &self,
        cache: &'r RefCell<TableCache>,
        restores: u64,
        at: Location,
        params: &'r ParamValues,
        budget: &'r Budget<'r>,
        clock: Clock,
        events: Option<&'r EventReads>,
    ) -> Run<'r> {
        Run {
            cache,
            restores,
            at,
            params,
            budget,
            clock,
            events,
            seed: None,
            spare: None,
            profile: None,
        }
    }

    /// A prepared statement read events up to `reached`, and changes until write tick
    /// `changes` (when it asks about changes): its cursors move there. Inside a
    /// transaction, where they stood before is kept for ROLLBACK (once per statement).
    fn advance_reader(
        &self,
        cursors: &Arc<Mutex<EventCursors>>,
        reached: &EventCursors,
        changes: Option<u64>,
        world: u64,
    ) {
        if reached.iter().next().is_none() && changes.is_none() {
            return;
        }
        let mut current = cursors.lock();
        current.enter_world(world);
        if !self.is_autocommit() {
            let mut readers = self.tx_readers.lock();
            let known = readers
                .iter()
                .any(|(weak, _)| weak.upgrade().is_some_and(|c| Arc::ptr_eq(&c, cursors)));
            if !known {
                readers.push((Arc::downgrade(cursors), current.clone()));
            }
        }
        current.advance_all(reached);
        if let Some(tick) = changes {
            current.saw_changes_until(tick);
        }
    }

    /// The transaction ended: on ROLLBACK the prepared statements' cursors go back.
    fn end_readers_transaction(&self, undone: bool) {
        let readers = std::mem::take(&mut *self.tx_readers.lock());
        if undone {
            for (weak, before) in readers {
                if let Some(cursors) = weak.upgrade() {
                    *cursors.lock() = before;
                }
            }
        }
    }

    /// `PRAGMA name [= value]` (`settings::SETTINGS`): sets the setting when given a
    /// value, and returns it as one row; a bare `PRAGMA` lists every setting.
    fn pragma(&self, name: Option<&str>, value: Option<&str>, at: Location, replay: bool) -> Result<Outcome> {
        let Some(name) = name else {
            let columns = settings::LIST_COLUMNS.map(|c| (c, DataType::Text));
            return Ok(Outcome::of_rows(&columns, settings::list(self)?));
        };
        let current = settings::pragma(self, name, value, at, replay)?;
        let name = name.to_ascii_lowercase();
        let ty = DataType::of(&current);
        Ok(Outcome::of_rows(&[(name.as_str(), ty)], vec![vec![current]]))
    }

    fn begin(&self, at: Location) -> Result<Outcome> {
        let mut state = self.write_state(at)?;
        if !self.is_autocommit() {
            return Err(ExecError::Transaction {
                message: "a transaction is already open (COMMIT or ROLLBACK it first)".into(),
                at,
            }
            .into());
        }
        self.checkpoint_if_behind(&mut state)?;
        if let Err(e) = state.world.begin() {
            let message = format!("{e} (one was begun through with_world_mut)");
            return Err(ExecError::Transaction { message, at }.into());
        }
        state.in_begin = true;
        state.schedule_image = None;
        self.tx_serial.fetch_add(1, Ordering::Relaxed);
        let mut holder = self.shared.tx_lock.lock();
        *holder = wait::TxHolder {
            thread: Some(std::thread::current().id()),
            since: Some(std::time::Instant::now()),
        };
        self.shared.tx_owner.store(self.id, Ordering::SeqCst);
        Ok(Outcome::default())
    }
}

/// What a run of `plan` must have tracked (changes, removals): a reader's (a prepared
/// statement's, whose next run sees what changed after this one). Any other statement,
/// and EXPLAIN, sees every row as changed and every removal still logged, and turns no
/// tracking on.
fn tracking_to_start<'p>(plan: &'p plan::Planned<'_>, reader: bool) -> &'p [plan::Tracking] {
    match &**plan {
        Plan::Explain(_) => &[],
        _ if reader => plan.tracks(),
        _ => &[],
    }
}

/// Puts a reader's cursors in the world `loads` LOADs made (`EventCursors::enter_world`);
/// returns that world.
fn enter_world(reads: &mut Option<EventReads>, loads: u64) -> u64 {
    if let Some(reads) = reads {
        reads.from.enter_world(loads);
    }
    loads
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

/// An open transaction (`Connection::transaction`): its statements run through it (it
/// derefs to the `Connection`); `commit` keeps them, `rollback` or a drop undoes them.
#[derive(Debug)]
pub struct Transaction<'c> {
    conn: &'c Connection,
    open: bool,
    /// Which of the connection's transactions it is (a COMMIT run through it by hand,
    /// then a BEGIN, makes another that is not the guard's to roll back).
    serial: u64,
}

impl Transaction<'_> {
    /// Keeps the transaction's changes (COMMIT). When COMMIT fails, the guard, dropped,
    /// rolls back what is still open.
    pub fn commit(mut self) -> Result<()> {
        self.conn.execute("COMMIT", ())?;
        self.open = false;
        Ok(())
    }

    /// Undoes the transaction's changes (ROLLBACK).
    pub fn rollback(mut self) -> Result<()> {
        self.conn.execute("ROLLBACK", ())?;
        self.open = false;
        Ok(())
    }
}

impl std::ops::Deref for Transaction<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Transaction<'_> {
    /// A transaction neither committed nor rolled back is rolled back.
    fn drop(&mut self) {
        let own = self.conn.tx_serial.load(Ordering::Relaxed) == self.serial;
        if self.open && own && !self.conn.is_autocommit() {
            let _ = self.conn.execute("ROLLBACK", ());
        }
    }
}

/// What a run brings beyond its statement and parameters (`Connection::run`).
#[derive(Clone, Copy, Default)]
struct RunContext<'a> {
    /// A prepared statement's table lists (a one-off run keeps its own).
    cache: Option<&'a RefCell<TableCache>>,
    /// The slot a prepared statement keeps its plan in.
    plans: Option<&'a RefCell<PlanSlot>>,
    /// A prepared statement's cursors.
    reader: Option<&'a Arc<Mutex<EventCursors>>>,
    /// The statement's text as written (else it is printed back for the journal).
    text: Option<&'a str>,
    /// The `random()` seed: a replayed statement's; else a fresh one.
    seed: Option<u64>,
    /// The memory of the statement's last result, for a point read to write into.
    spare: Option<&'a RefCell<Option<Chunk>>>,
    /// Run again from a file database's journal: journaled already.
    replay: bool,
    /// A shape's statement (`cached::Text::Lifted`), whose parameters are the written
    /// text's constants: the journal keeps the text without them.
    lifted: bool,
}

/// Moves the place a lock's error (`acquire`: `Busy`, `Misuse`) writes into its message,
/// the place `at` where the statement begins as parsed from line 1, column 1, to where it
/// is in the text that begins at `start`. (The other errors carry their place apart:
/// `Error::move_to`.)
fn move_lock_error(e: &mut Error, at: Location, start: Location) {
    if let Error::Busy(message) | Error::Misuse(message) = e {
        let written = format!(" at {at}");
        if let Some(i) = message.find(&written) {
            let moved = format!(" at {}", at.moved_to(start));
            message.replace_range(i..i + written.len(), &moved);
        }
    }
}

/// Dropped while a panic unwinds through what holds it (a closure given to
/// `with_world_mut`, a write under the database's lock) on a file database: abandons the
/// database, whose memory may hold a part of a write its file never will (`why`).
struct AbandonOnPanic<'f>(Option<&'f durable::FileDb>, &'static str);

impl Drop for AbandonOnPanic<'_> {
    fn drop(&mut self) {
        if let Some(file) = self.0
            && std::thread::panicking()
        {
            file.abandon(self.1);
        }
    }
}

/// What a write that panicked under the lock abandons a file database for.
const WRITE_PANICKED: &str = "a statement panicked as it wrote (a fault of ecsql's: please report it)";

/// An API call in progress, for the interrupt handle: leaves its turn when dropped.
struct Call<'c> {
    interrupt: &'c wait::Interrupt,
    turn: u64,
    took: bool,
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        if self.took {
            self.interrupt.leave(self.turn);
        }
    }
}

/// A parsed statement, run as often as needed. It keeps its plan between runs (bound
/// again only when the catalog, a rollback or its parameters' types call for it), and the
/// archetype tables its scans matched, extending that list when new tables appear.
///
/// It is also a reader of events: each run reads only the event rows it has not read in
/// an earlier run (rows other statements emitted since, across ticks), while a statement
/// run through `execute` reads every row still kept.
#[derive(Debug)]
pub struct Statement<'c> {
    connection: &'c Connection,
    prepared: Prepared,
}

/// What a prepared statement keeps, apart from its connection (`prepare_cached` keeps it
/// between uses).
#[derive(Debug)]
struct Prepared {
    statement: parse::Statement,
    /// As written, for a file database's journal.
    text: String,
    cache: RefCell<TableCache>,
    plan: RefCell<PlanSlot>,
    events: Arc<Mutex<EventCursors>>,
    /// The vectors a run's parameter values are written into (emptied when it ends).
    params: ParamValues,
    /// The last small result, whose memory the next run's result reuses.
    results: Recycler,
}

impl Statement<'_> {
    /// Runs the statement with `params`; its result is written into `spare`'s memory
    /// where it can be (a point read's).
    fn run(&mut self, params: impl Params, spare: Option<Chunk>) -> BoxResult<Outcome> {
        let _call = self.connection.enter();
        let p = &mut self.prepared;
        params.write_into(&mut p.params);
        let spare = RefCell::new(spare);
        let ran = check_params(&p.statement, &p.params).and_then(|()| {
            self.connection.run(
                &p.statement,
                &p.params,
                RunContext {
                    cache: Some(&p.cache),
                    plans: Some(&p.plan),
                    reader: Some(&p.events),
                    text: Some(&p.text),
                    spare: Some(&spare),
                    ..RunContext::default()
                },
            )
        });
        // The values go, whether the run succeeded or not (a long text given is not
        // kept until the next run); their vectors stay.
        p.params.clear();
        ran
    }

    /// Runs the statement with `params`; gives how many entities or rows it wrote. A query
    /// that returns rows is an error (`Error::ExecuteReturnedResults`), as in rusqlite.
    pub fn execute(&mut self, params: impl Params) -> Result<usize> {
        let outcome = self.run(params, None)?;
        executed(&self.prepared.statement.kind, &outcome)
    }

    /// Runs the statement with `params` and maps its first row with `f` (as
    /// `Connection::query_row`, for a prepared statement).
    ///
    /// ```
    /// # use ecsql::Database;
    /// let conn = Database::open_in_memory().connect();
    /// let mut twice = conn.prepare("SELECT ?1 * 2")?;
    /// assert_eq!(twice.query_row([21], |r| r.get::<_, i64>(0))?, 42);
    /// assert!(matches!(
    ///     conn.prepare("SELECT 1 WHERE FALSE")?.query_row((), |r| r.get::<_, i64>(0)),
    ///     Err(ecsql::Error::QueryReturnedNoRows)
    /// ));
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn query_row<T>(&mut self, params: impl Params, f: impl FnOnce(&Row) -> Result<T>) -> Result<T> {
        match self.query(params)?.next()? {
            Some(row) => f(&row),
            None => Err(Error::QueryReturnedNoRows),
        }
    }

    /// Runs the statement with `params` and gives its rows.
    pub fn query(&mut self, params: impl Params) -> Result<Rows> {
        let spare = self.prepared.results.spare();
        let outcome = self.run(params, spare)?;
        Ok(self.prepared.results.rows(outcome.columns, outcome.rows))
    }

    /// `query`, each row mapped by `f`.
    pub fn query_map<T, F>(
        &mut self,
        params: impl Params,
        mut f: F,
    ) -> Result<impl Iterator<Item = Result<T>>>
    where
        F: FnMut(&Row) -> Result<T>,
    {
        let rows = self.query(params)?;
        Ok(rows.map(move |row| row.and_then(|r| f(&r))))
    }

    /// `query`, each row made a `T` ([`FromRow`]: a tuple of column types, or a struct of
    /// the program's own).
    pub fn query_as<T: FromRow>(&mut self, params: impl Params) -> Result<Vec<T>> {
        let rows = self.query(params)?;
        let mut out = Vec::with_capacity(rows.remaining());
        for row in rows {
            out.push(T::from_row(&row?)?);
        }
        Ok(out)
    }

    /// The result's column names and types against the current catalog (parameters read
    /// as NULL for this).
    pub fn columns(&self) -> Result<Vec<OutputColumn>> {
        let plan = self.connection.with_world(|w| {
            plan::bind(
                &self.prepared.statement,
                w,
                &ParamValues {
                    lenient: true,
                    ..Default::default()
                },
            )
        })??;
        Ok(match plan {
            Plan::Query(q) => q.columns.to_vec(),
            _ => Vec::new(),
        })
    }

    /// The names of the result's columns, learned without running the statement.
    pub fn column_names(&self) -> Result<Vec<String>> {
        Ok(self.columns()?.into_iter().map(|c| c.name).collect())
    }

    /// How many distinct table lists the statement has cached (one per scan).
    pub fn cached_scans(&self) -> usize {
        self.prepared.cache.borrow().len()
    }
}

/// A statement from `Connection::prepare_cached`: used as a [`Statement`], and given back
/// to the connection's cache when dropped.
#[derive(Debug)]
pub struct CachedStatement<'c> {
    key: String,
    statement: Statement<'c>,
}

impl<'c> std::ops::Deref for CachedStatement<'c> {
    type Target = Statement<'c>;

    fn deref(&self) -> &Statement<'c> {
        &self.statement
    }
}

impl<'c> std::ops::DerefMut for CachedStatement<'c> {
    fn deref_mut(&mut self) -> &mut Statement<'c> {
        &mut self.statement
    }
}

impl CachedStatement<'_> {
    /// Drops the statement instead of giving it back to the cache (rusqlite's `discard`).
    pub fn discard(mut self) {
        self.key.clear();
    }
}

impl Drop for CachedStatement<'_> {
    fn drop(&mut self) {
        if self.key.is_empty() {
            return;
        }
        let mut prepared = std::mem::replace(&mut self.statement.prepared, Prepared::gone());
        // A subquery's result, or the last result, is not kept waiting for the
        // statement's next use.
        prepared.plan.get_mut().forget_results();
        prepared.results.clear();
        let key = std::mem::take(&mut self.key);
        self.statement.connection.prepared.lock().park(key, prepared);
    }
}

impl Prepared {
    /// What a `CachedStatement` leaves behind when its statement goes back to the cache.
    fn gone() -> Prepared {
        Prepared {
            statement: parse::Statement {
                kind: StatementKind::Begin,
                at: Location::default(),
                params: parse::Parameters::default(),
            },
            text: String::new(),
            cache: RefCell::default(),
            plan: RefCell::default(),
            events: Arc::default(),
            params: ParamValues::default(),
            results: Recycler::default(),
        }
    }
}

/// What `execute` gives for a statement's outcome: the count it wrote, or an error for a
/// query, or a write with RETURNING, that returned rows (a SPAWN's ids are its count, not
/// results).
fn executed(kind: &StatementKind, outcome: &Outcome) -> Result<usize> {
    let query = kind.is_read_only() && !matches!(kind, StatementKind::CopyTo { .. });
    let returning = matches!(kind, StatementKind::Returning { .. });
    if (query || returning) && outcome.returns_rows && outcome.rows.len > 0 {
        return Err(Error::ExecuteReturnedResults);
    }
    Ok(if query { 0 } else { outcome.affected })
}

/// Refuses the values `values` gives `statement` as rusqlite does: more positional values
/// than it has parameters, or a named value it has no parameter for (a misspelt name
/// would otherwise pass unnoticed). (A statement whose constants were lifted is given
/// none: it was written with no parameter.)
fn check_params(statement: &parse::Statement, values: &ParamValues) -> BoxResult<()> {
    let has = &statement.params;
    if values.positional.len() > has.positional {
        return Err(Box::new(Error::InvalidParameterCount {
            given: values.positional.len(),
            expected: has.positional,
        }));
    }
    if let Some((name, _)) = values.named.iter().find(|(n, _)| !has.named.contains(n)) {
        let names = if has.named.is_empty() {
            "none".to_owned()
        } else {
            has.named.join(", ")
        };
        return Err(Box::new(Error::InvalidParameterName(name.clone(), names)));
    }
    Ok(())
}
