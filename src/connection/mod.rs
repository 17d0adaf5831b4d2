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
//! This room is the API only, a thin layer over the engine (`crate::engine`): a
//! `Database` is an engine, a `Connection` a client on it, and each method hands its
//! work to them. By concern: `statement` (prepared statements and their cache),
//! `transaction` (the `Transaction` guard), `open` (opening a file database), `params`
//! and `row` (values in and rows out).

mod open;
mod params;
mod row;
mod statement;
mod subscription;
mod systems;
mod transaction;
mod typed;

use std::time::Duration;

use parking_lot::Mutex;

use crate::engine::{Client, Engine};
pub use crate::engine::{
    Concurrency, DEFAULT_BUSY_TIMEOUT, DEFAULT_CHECKPOINT_SIZE, DEFAULT_MAX_PENDING,
    DEFAULT_MIN_PARALLEL_ROWS, InterruptHandle, MAX_THREADS, OpenProgress, Synchronous, write_atomically,
};
pub use open::OpenOptions;
pub use params::{Params, ToParam};
pub use row::{FromRow, FromValue, Row, RowIndex, Rows};
pub use statement::{CachedStatement, Statement};
use statement::{check_params, executed};
pub use subscription::Subscription;
pub use transaction::Transaction;
pub use typed::{
    Added, Bundle, Changed, ColumnSource, Component, FieldSpec, FieldValue, Mut, Query, QueryData,
    QueryFilter, QueryIter, QueryTables, Ref, ValuesMut, With, Without,
};

use crate::error::{Error, Result};
use crate::location::Location;
use crate::plan::{OutputColumn, ParamValues};
use crate::storage::{Entity, World};

/// An ecsql database: in memory (`open_in_memory`), or kept in a file (`open`).
#[derive(Clone, Debug)]
pub struct Database {
    engine: std::sync::Arc<Engine>,
}

impl Database {
    /// A new, empty database that lives in memory.
    pub fn open_in_memory() -> Database {
        Database {
            engine: Engine::new(),
        }
    }

    /// A new connection to this database, for the calling thread.
    pub fn connect(&self) -> Connection {
        Connection::on(Client::new(&self.engine))
    }

    /// What the UPDATEs written beside other statements did since the database was
    /// opened: counters that show connections on different components overlapping, not a
    /// measure of time.
    ///
    /// An UPDATE that is written in place (one entity scan; values that cannot fail and
    /// read the same on any thread, of fields no index follows and whose changes are not
    /// tracked; outside a transaction; short enough that it is not made stoppable, under
    /// 50 ms projected) holds only the fields it reads and writes instead of the whole
    /// database: two connections updating different components write at the same time.
    /// Writes whose fields meet (one writes what the other reads or writes) take turns.
    /// A read whose plan names the fields it reads holds just those, beside UPDATEs of
    /// other fields. Every other statement holds the whole database: it waits until no
    /// such UPDATE holds fields, and none takes fields while it runs or waits. A statement
    /// goes this way from the second run of a prepared (or cached) statement on, once its
    /// plan is kept; an UPDATE, when its scan finds 2,048 rows or more (a shorter one
    /// holds the whole database too briefly for the difference to pay; one whose last run
    /// found fewer is not tried so at its next).
    ///
    /// ```
    /// # use ecsql::Database;
    /// let db = Database::open_in_memory();
    /// let conn = db.connect();
    /// conn.execute_batch("CREATE COMPONENT Health (hp FLOAT); SPAWN Health(hp => 1.0) FROM range(5000)")?;
    /// let mut heal = conn.prepare("UPDATE Health SET hp = hp + 1.0")?;
    /// heal.execute(())?;
    /// heal.execute(())?;
    /// let counts = db.concurrency();
    /// // Its second run held Health.hp only; alone, it overlapped no other.
    /// assert_eq!((counts.beside, counts.overlapped), (1, 0));
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn concurrency(&self) -> Concurrency {
        self.engine.concurrency()
    }
}

/// A handle on a `Database`, one per thread: a connection moves between threads (`Send`)
/// but is used from one at a time (not `Sync`), as rusqlite's is. Open one per thread
/// that uses the database. A connection alone on its database (no `Database` kept, no
/// other connection) answers a prepared point read without taking any lock.
///
/// ```compile_fail
/// fn shared_between_threads<T: Sync>() {}
/// shared_between_threads::<ecsql::Connection>();
/// ```
#[derive(Debug)]
pub struct Connection {
    client: Client,
    /// `prepare_cached`'s statements between uses.
    prepared: Mutex<statement::StatementCache>,
    /// `query_row`'s last result of a text, whose memory the next one's point read
    /// writes its row into.
    text_result: std::cell::RefCell<row::TextResult>,
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

impl StatementResult {
    /// The result of `statement` (written as `text`, when known) that ran to `o`.
    pub(crate) fn new(
        statement: &crate::parse::Statement,
        text: Option<&str>,
        o: crate::exec::Outcome,
    ) -> StatementResult {
        StatementResult {
            statement: text.map_or_else(|| statement.to_string(), str::to_owned),
            verb: statement.kind.verb(),
            columns: o.columns.to_vec(),
            rows: o.returns_rows.then(|| Rows::new(o.columns.into_arc(), o.rows)),
            affected: o.affected,
        }
    }
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
        let check = |s: &_| Ok(check_params(s, &values)?);
        self.client.run_one(sql, &values, None, check, |s, outcome| {
            executed(&s.kind, &outcome)
        })
    }

    /// Runs every statement of a script, in order, stopping at the first error.
    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        self.client.execute_batch(sql)
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
        self.client
            .run_script(sql, start, params, &mut |statement, text, ran| {
                each(ran.map(|o| StatementResult::new(statement, text, o)))
            })
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
        let check = |s: &_| Ok(check_params(s, &values)?);
        // The last text's result lends its memory (a call inside `f` on this connection
        // finds it taken, and makes its own).
        let mut own = row::TextResult::default();
        let mut kept = self.text_result.try_borrow_mut().ok();
        let result = kept.as_deref_mut().unwrap_or(&mut own);
        let spare = std::cell::RefCell::new(result.spare());
        self.client
            .run_one(sql, &values, Some(&spare), check, |_, outcome| {
                result.first_row(outcome.columns.into_arc(), outcome.rows, f)
            })
    }

    /// The last entity a SPAWN on this connection made (its last, for a SPAWN of
    /// several), as rusqlite's `last_insert_rowid` gives the last row: `None` before the
    /// first. A SPAWN that failed, a `SPAWN … RETURNING` (its rows are what it returns:
    /// return `id`), and one of another connection or of a system leave it as it was; one
    /// inside a transaction that was rolled back still counts, as in rusqlite (the entity
    /// is gone).
    ///
    /// ```
    /// # use ecsql::Database;
    /// let conn = Database::open_in_memory().connect();
    /// conn.execute_batch("CREATE COMPONENT Health (hp INT);")?;
    /// assert_eq!(conn.last_spawned(), None);
    /// conn.execute("SPAWN Health(10)", ())?;
    /// let hero = conn.last_spawned().expect("an entity");
    /// let hp: i64 = conn.query_row("SELECT Health.hp FROM Health WHERE id = ?1", (hero,), |r| r.get(0))?;
    /// assert_eq!(hp, 10);
    /// conn.execute("SPAWN Health(i) FROM range(3) AS r(i)", ())?;
    /// let last: i64 = conn.query_row("SELECT Health.hp FROM Health WHERE id = ?1", (conn.last_spawned(),), |r| r.get(0))?;
    /// assert_eq!(last, 2);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn last_spawned(&self) -> Option<Entity> {
        self.client.last_spawned()
    }

    /// True outside BEGIN … COMMIT/ROLLBACK.
    pub fn is_autocommit(&self) -> bool {
        self.client.is_autocommit()
    }

    /// True while this connection's transaction holds the database (every other
    /// connection's statements wait): from BEGIN, or, for one begun READ COMMITTED, from
    /// its first write.
    pub fn holds_transaction(&self) -> bool {
        self.client.holds_transaction()
    }

    /// A handle that stops this connection's running statement from another thread (or
    /// a signal handler): see [`InterruptHandle`].
    pub fn get_interrupt_handle(&self) -> InterruptHandle {
        self.client.interrupt_handle()
    }

    /// How long a statement waits for another connection's transaction (or running
    /// write) before it fails with [`Error::Busy`]; [`DEFAULT_BUSY_TIMEOUT`] at first.
    pub fn busy_timeout(&self) -> Duration {
        self.client.busy_timeout()
    }

    /// When a file database flushes its journal to the disk (`PRAGMA synchronous`; one
    /// setting for the whole database): [`Synchronous::Full`] at first.
    pub fn synchronous(&self) -> Synchronous {
        self.client.synchronous()
    }

    /// Sets `synchronous` (as `PRAGMA synchronous = off | normal | full` does).
    pub fn set_synchronous(&self, s: Synchronous) {
        self.client.set_synchronous(s)
    }

    /// How large a file database's journal grows before a commit checkpoints it (`PRAGMA
    /// checkpoint_size`): [`DEFAULT_CHECKPOINT_SIZE`] at first.
    pub fn checkpoint_size(&self) -> u64 {
        self.client.checkpoint_size()
    }

    /// Sets `checkpoint_size`, in bytes.
    pub fn set_checkpoint_size(&self, bytes: u64) {
        self.client.set_checkpoint_size(bytes)
    }

    /// Sets `busy_timeout` (as `PRAGMA busy_timeout = ms` does). Zero fails at once.
    pub fn set_busy_timeout(&self, timeout: Duration) {
        self.client.set_busy_timeout(timeout)
    }

    /// How long one call on this connection (a statement, or a script's statements
    /// together) may run before it is stopped with
    /// [`ExecErrorKind::TimedOut`](crate::ExecErrorKind::TimedOut), changing nothing, as
    /// an interrupt stops it; `None` (at first) for no limit. `PRAGMA statement_timeout`
    /// reads and sets it in milliseconds.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use ecsql::{Database, Error, ExecError, ExecErrorKind};
    /// let conn = Database::open_in_memory().connect();
    /// conn.set_statement_timeout(Some(Duration::from_millis(50)))?;
    /// let e = conn
    ///     .execute("SELECT count(*) FROM range(100000000) AS a(i), range(100000000) AS b(j) WHERE a.i = -b.j - 1", ())
    ///     .unwrap_err();
    /// assert!(matches!(e, Error::Exec(ExecError { kind: ExecErrorKind::TimedOut { .. }, .. })), "{e}");
    /// conn.set_statement_timeout(None)?;
    /// assert_eq!(conn.query_row("PRAGMA statement_timeout", (), |r| r.get::<_, i64>(0))?, 0);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn statement_timeout(&self) -> Option<Duration> {
        self.client.statement_timeout()
    }

    /// Sets `statement_timeout`. A client of `ecsql serve` may lower it below the server's
    /// limit, not raise it: past that limit is [`Error::Misuse`](crate::Error::Misuse),
    /// nothing changed, and `None` is the limit.
    pub fn set_statement_timeout(&self, timeout: Option<Duration>) -> Result<()> {
        self.client
            .set_statement_timeout(timeout)
            .map_err(|message| Error::Misuse {
                message,
                at: Location::default(),
            })
    }

    /// Runs `statement` (written as `text`) with the rows a server's client sent with it
    /// (`COPY … FROM STDIN`).
    #[cfg(feature = "server")]
    pub(crate) fn run_with_input(
        &self,
        statement: &crate::parse::Statement,
        text: &str,
        input: &[u8],
    ) -> Result<StatementResult> {
        let outcome = self.client.run_with_input(statement, text, input)?;
        Ok(StatementResult::new(statement, Some(text), outcome))
    }

    /// Fails where this connection may not write: in a READ ONLY transaction, or under
    /// `default_transaction_read_only = on` outside one.
    #[cfg(feature = "server")]
    pub(crate) fn refuse_read_only(&self, verb: &'static str, at: crate::location::Location) -> Result<()> {
        self.client.refuse_read_only(verb, at)
    }

    /// A BEGIN that names no isolation level, on a connection that has not SET
    /// `default_transaction_isolation`, takes `level` (a server's clients: READ
    /// COMMITTED, as PostgreSQL's).
    #[cfg(feature = "server")]
    pub(crate) fn set_base_isolation(&self, level: crate::parse::Isolation) {
        self.client.set_base_isolation(level);
    }

    /// Bounds this connection's statements, as a server bounds its clients': each call
    /// may run at most `timeout` (which the connection may lower, never raise) and hold
    /// at most `memory` bytes of working memory (below the database's limit).
    #[cfg(feature = "server")]
    pub(crate) fn limit_statements(&self, timeout: Option<Duration>, memory: Option<usize>) {
        self.client.limit_statements(timeout, memory);
    }

    /// The most working memory one statement may hold (rows kept for joins, groups,
    /// sorts and results), in bytes; one limit for the whole database. By default 80% of
    /// the machine's memory.
    pub fn memory_limit(&self) -> usize {
        self.client.memory_limit()
    }

    /// Sets the database's `memory_limit` (as `PRAGMA memory_limit = …` does): a statement
    /// that would hold more fails with [`ExecErrorKind::MemoryLimit`](crate::ExecErrorKind::MemoryLimit) instead of running the
    /// machine out of memory.
    pub fn set_memory_limit(&self, bytes: usize) {
        self.client.set_memory_limit(bytes)
    }

    /// How many threads one statement may run on: by default the machine's cores (at most
    /// [`MAX_THREADS`]). A scan, filter, aggregate or UPDATE over many rows splits its
    /// rows among them; its result is the same as on one thread (docs/performance.md).
    pub fn threads(&self) -> usize {
        self.client.threads()
    }

    /// Sets the database's `threads` (as `PRAGMA threads = …` does), from 1 (every
    /// statement on the thread that runs it) to [`MAX_THREADS`].
    pub fn set_threads(&self, threads: usize) {
        self.client.set_threads(threads)
    }

    /// The fewest rows each part of a split statement takes (`PRAGMA min_parallel_rows`):
    /// a statement splits into no more parts than it has this many rows.
    /// [`DEFAULT_MIN_PARALLEL_ROWS`] at first.
    pub fn min_parallel_rows(&self) -> usize {
        self.client.min_parallel_rows()
    }

    /// Sets the database's `min_parallel_rows` (at least 1), as `PRAGMA
    /// min_parallel_rows = …` does: lower for statements whose rows cost much each (a
    /// GROUP BY, text work), higher where splitting does not pay.
    pub fn set_min_parallel_rows(&self, rows: usize) {
        self.client.set_min_parallel_rows(rows)
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
        self.client.with_world(f)
    }

    /// The columnar door, write side: runs `f` on the database's `World` under the write
    /// lock, as a write statement would. Unlike a statement, `f` is not atomic: what it
    /// wrote before it failed stays (inside BEGIN, ROLLBACK still undoes all of it). On a
    /// file database, an `f` that panics leaves the database refusing every later use
    /// ([`FileError::Abandoned`](crate::FileError::Abandoned)) until it is opened again,
    /// as of its last commit: memory and file never disagree.
    pub fn with_world_mut<T>(&self, f: impl FnOnce(&mut World) -> T) -> Result<T> {
        self.client.with_world_mut(f)
    }
}

impl Connection {
    /// The API's handle on `client`.
    fn on(client: Client) -> Connection {
        Connection {
            client,
            prepared: Mutex::default(),
            text_result: Default::default(),
        }
    }
}
