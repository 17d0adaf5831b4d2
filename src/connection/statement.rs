//! Prepared statements of the Rust API: `Statement`, the engine's `PreparedStatement`
//! (its kept plan, table lists and event cursors) with rusqlite's parameter checks and its
//! rows' memory, and `CachedStatement`, one lent from the connection's cache.
//!
//! Invariants:
//! - The values given are checked against the statement's parameters as rusqlite does,
//!   and dropped when the run ends; their vectors stay.
//! - `prepare_cached` keeps at most its capacity of statements, the most lately used
//!   first; one taken from it is the same reader of events and changes from one use to
//!   the next, as if the program had kept it.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::mem::ManuallyDrop;

use super::row::{Lent, MappedRows, Recycler};
use super::{Connection, FromRow, Params, Row, Rows};
use crate::engine::PreparedStatement;
use crate::error::{BoxResult, Error, Result};
use crate::exec::Outcome;
use crate::parse::{self, StatementKind};
use crate::plan::{OutputColumn, ParamValues};

impl Connection {
    /// Parses a statement once, to run many times. It is planned at its first run (when
    /// its parameters' types are known), so an unknown component or field is an error of
    /// that run, not of `prepare`; its syntax is checked here.
    ///
    /// ```
    /// # use ecsql::{Database, Error, PlanError, PlanErrorKind};
    /// let conn = Database::open_in_memory().connect();
    /// assert!(conn.prepare("SELEC id FROM Gold").is_err());
    /// let mut total = conn.prepare("SELECT sum(n) FROM Gold")?;
    /// let first = total.query_row((), |r| r.get::<_, Option<i64>>(0));
    /// assert!(matches!(first, Err(Error::Plan(PlanError { kind: PlanErrorKind::UnknownComponent { .. }, .. }))));
    /// conn.execute("CREATE COMPONENT Gold (n INT)", ())?;
    /// conn.execute("SPAWN Gold(5)", ())?;
    /// assert_eq!(total.query_row((), |r| r.get::<_, i64>(0))?, 5);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn prepare(&self, sql: &str) -> Result<Statement<'_>> {
        Ok(Statement {
            connection: self,
            prepared: Box::new(Prepared {
                statement: PreparedStatement::new(sql)?,
                params: ParamValues::default(),
                results: Recycler::default(),
            }),
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
        let (key, statement) = match parked {
            Some((key, prepared)) => (
                key,
                Statement {
                    connection: self,
                    prepared,
                },
            ),
            None => (sql.to_owned(), self.prepare(sql)?),
        };
        Ok(CachedStatement {
            key,
            statement: ManuallyDrop::new(statement),
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
        self.client.forget_texts();
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
    /// Boxed: the cache moves it in and out whole.
    prepared: Box<Prepared>,
}

/// What a prepared statement keeps, apart from its connection (`prepare_cached` keeps it
/// between uses).
#[derive(Debug)]
pub(super) struct Prepared {
    /// The statement as the engine runs it, with its plan, table lists and cursors.
    statement: PreparedStatement,
    /// The vectors a run's parameter values are written into (emptied when it ends).
    params: ParamValues,
    /// The last small result, whose memory the next run's result reuses.
    results: Recycler,
}

impl Prepared {
    /// Runs the statement the ordinary way with the values written into `params` (and
    /// checked), its result in the last one's memory where it fits.
    fn query_written(&mut self, client: &crate::engine::Client) -> BoxResult<Rows> {
        let spare = RefCell::new(self.results.spare());
        let _call = client.enter();
        let outcome = client.run_prepared(&self.statement, &self.params, &spare)?;
        Ok(self.results.rows(outcome.columns.into_arc(), outcome.rows))
    }
}

impl Statement<'_> {
    /// Runs the statement with `params`, its result in new memory.
    pub(super) fn run(&mut self, params: impl Params) -> BoxResult<Outcome> {
        self.with_values(params, |p, client| {
            let _call = client.enter();
            client.run_prepared(&p.statement, &p.params, &RefCell::new(None))
        })
    }

    /// Runs the statement with `params`; gives how many entities or rows it wrote. A query
    /// that returns rows is an error (`Error::ExecuteReturnedResults`), as in rusqlite.
    pub fn execute(&mut self, params: impl Params) -> Result<usize> {
        let outcome = self.run(params)?;
        executed(&self.prepared.statement.statement().kind, &outcome)
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
        let client = &self.connection.client;
        let p = &mut self.prepared;
        params.write_into(&mut p.params);
        if let Err(e) = check_params(p.statement.statement(), &p.params) {
            p.params.clear();
            return Err(*e);
        }
        // A point read whose kept plan holds lends its row straight from the statement's
        // own result (`Client::point_read`), with no count of its own, and the row stays
        // with the statement: `f`'s answer is returned as it is, so that it is written
        // where the caller takes it rather than moved up through each layer (an `Error`
        // is 120 bytes).
        let lent = p.results.lend_point(
            || client.keeps_point_read(&p.statement),
            |columns, chunk| client.point_read(&p.statement, &p.params, columns, chunk),
        );
        match lent {
            Some(lent) => {
                p.params.clear();
                match lent {
                    Lent::Kept(row) => f(row),
                    Lent::Taken(row) => f(&row),
                    Lent::Empty => Err(Error::QueryReturnedNoRows),
                }
            }
            None => {
                let rows = p.query_written(client);
                p.params.clear();
                // A match, not `ok_or`: an error built and dropped on every call cost a
                // point read 14 instructions.
                match rows.map_err(|e| *e)?.next()? {
                    Some(row) => f(&row),
                    None => Err(Error::QueryReturnedNoRows),
                }
            }
        }
    }

    /// Runs the statement with `params` and gives its rows.
    pub fn query(&mut self, params: impl Params) -> Result<Rows> {
        let rows = self.with_values(params, |p, client| {
            // A point read whose kept plan holds writes its row over the last result's
            // (`Client::point_read`), past the statement machinery.
            let point = p
                .results
                .refill(|columns, chunk| client.point_read(&p.statement, &p.params, columns, chunk));
            match point {
                Some(rows) => Ok(rows),
                None => p.query_written(client),
            }
        });
        Ok(rows?)
    }

    /// `params` written into the statement's vectors and checked, then `f` run with them;
    /// the values go whatever it gave (a long text given is not kept until the next run),
    /// their vectors stay.
    fn with_values<R>(
        &mut self,
        params: impl Params,
        f: impl FnOnce(&mut Prepared, &crate::engine::Client) -> BoxResult<R>,
    ) -> BoxResult<R> {
        let p = &mut self.prepared;
        params.write_into(&mut p.params);
        let ran =
            check_params(p.statement.statement(), &p.params).and_then(|()| f(p, &self.connection.client));
        p.params.clear();
        ran
    }

    /// `query`, each row mapped by `f`.
    pub fn query_map<T, F>(&mut self, params: impl Params, f: F) -> Result<impl Iterator<Item = Result<T>>>
    where
        F: FnMut(&Row) -> Result<T>,
    {
        let rows = self.query(params)?.lend();
        Ok(MappedRows { rows, f })
    }

    /// `query`, each row made a `T` ([`FromRow`]: a tuple of column types, or a struct of
    /// the program's own).
    pub fn query_as<T: FromRow>(&mut self, params: impl Params) -> Result<Vec<T>> {
        let mut rows = self.query(params)?.lend();
        let mut out = Vec::with_capacity(rows.remaining());
        while let Some(row) = rows.next_with(T::from_row) {
            out.push(row?);
        }
        Ok(out)
    }

    /// The result's column names and types against the current catalog (parameters read
    /// as NULL for this).
    pub fn columns(&self) -> Result<Vec<OutputColumn>> {
        self.connection.client.columns(&self.prepared.statement)
    }

    /// The names of the result's columns, learned without running the statement.
    pub fn column_names(&self) -> Result<Vec<String>> {
        Ok(self.columns()?.into_iter().map(|c| c.name).collect())
    }

    /// The statement as parsed.
    #[cfg(feature = "server")]
    pub(crate) fn parsed(&self) -> &parse::Statement {
        self.prepared.statement.statement()
    }

    /// Runs the statement with `params`, whatever it is: its rows, or what it wrote.
    #[cfg(feature = "server")]
    pub(crate) fn run_any(&mut self, params: impl Params) -> Result<super::StatementResult> {
        let outcome = self.run(params)?;
        let p = &self.prepared.statement;
        Ok(super::StatementResult::new(
            p.statement(),
            Some(p.text()),
            outcome,
        ))
    }

    /// The types the statement's positional parameters are used as (`None` where any type
    /// goes) and its result's columns, against the current catalog, without running it.
    #[cfg(feature = "server")]
    pub(crate) fn describe(&self) -> Result<(Vec<Option<crate::plan::DataType>>, Vec<OutputColumn>)> {
        self.describe_declared(&[])
    }

    /// `describe`, each parameter whose type the client declared (`Some`) of that type.
    #[cfg(feature = "server")]
    pub(crate) fn describe_declared(
        &self,
        declared: &[Option<crate::plan::DataType>],
    ) -> Result<(Vec<Option<crate::plan::DataType>>, Vec<OutputColumn>)> {
        self.connection
            .client
            .describe(&self.prepared.statement, declared)
    }

    /// How many distinct table lists the statement has cached (one per scan).
    pub fn cached_scans(&self) -> usize {
        self.prepared.statement.cached_scans()
    }
}

/// A statement from `Connection::prepare_cached`: used as a [`Statement`], and given back
/// to the connection's cache when dropped.
#[derive(Debug)]
pub struct CachedStatement<'c> {
    /// Its text, as the cache keeps it; emptied by `discard`.
    key: String,
    /// Taken out only by `drop` (to go back to the cache, or to be dropped).
    statement: ManuallyDrop<Statement<'c>>,
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
        // SAFETY: `statement` is taken out here only, once, and not touched after: this
        // is the `CachedStatement`'s drop. (Taken instead of replaced, so that giving a
        // statement back allocates nothing.)
        let Statement {
            connection,
            mut prepared,
        } = unsafe { ManuallyDrop::take(&mut self.statement) };
        if self.key.is_empty() {
            return;
        }
        // A subquery's result, or the last result, is not kept waiting for the
        // statement's next use, but for a point read's row: its next read is written
        // over it (`Client::point_read`).
        prepared.statement.forget_results();
        prepared.results.keep_one_small_row();
        let key = std::mem::take(&mut self.key);
        connection.prepared.lock().park(key, prepared);
    }
}

/// What `execute` gives for a statement's outcome: the count it wrote, or an error for a
/// query, or a write with RETURNING, that returned rows (a SPAWN's ids are its count, not
/// results).
pub(super) fn executed(kind: &StatementKind, outcome: &Outcome) -> Result<usize> {
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
#[inline]
pub(super) fn check_params(statement: &parse::Statement, values: &ParamValues) -> BoxResult<()> {
    let has = &statement.params;
    if values.positional.len() <= has.positional && values.named.is_empty() {
        return Ok(());
    }
    wrong_params(has, values)
}

/// `check_params`' answer for values it could not pass at a glance.
#[cold]
fn wrong_params(has: &parse::Parameters, values: &ParamValues) -> BoxResult<()> {
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

/// How many statements `prepare_cached` keeps by default, as rusqlite.
const DEFAULT_PREPARED_CAPACITY: usize = 16;

/// `prepare_cached`'s statements, put back when their `CachedStatement` is dropped: the
/// most lately used first, at most `capacity`.
#[derive(Debug)]
pub(super) struct StatementCache {
    parked: VecDeque<(String, Box<Prepared>)>,
    capacity: usize,
}

impl Default for StatementCache {
    fn default() -> StatementCache {
        StatementCache {
            parked: VecDeque::new(),
            capacity: DEFAULT_PREPARED_CAPACITY,
        }
    }
}

impl StatementCache {
    /// Takes out the statement kept for `sql`, if any, with its text.
    pub(super) fn take(&mut self, sql: &str) -> Option<(String, Box<Prepared>)> {
        let at = self.parked.iter().position(|(text, _)| text == sql)?;
        self.parked.remove(at)
    }

    /// Keeps `prepared` for its text, first (in place of another of the same text, taken
    /// out twice); the least lately used goes past capacity.
    pub(super) fn park(&mut self, sql: String, prepared: Box<Prepared>) {
        if self.capacity == 0 {
            return;
        }
        self.parked.retain(|(text, _)| *text != sql);
        self.parked.push_front((sql, prepared));
        self.parked.truncate(self.capacity);
    }

    pub(super) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.parked.truncate(capacity);
    }

    pub(super) fn clear(&mut self) {
        self.parked.clear();
    }
}
