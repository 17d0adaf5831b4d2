//! A prepared statement as the engine keeps it between runs: the parsed statement, its
//! text as written (for a file database's journal), its plan slot, its scans' table lists
//! and its event cursors. Every front end's prepared statement is one of these (the Rust
//! API's `Statement` adds rusqlite's parameter checks and its rows' memory).
//!
//! Invariants:
//! - It is planned at its first run (its parameters' types known then), and bound again
//!   only when the catalog, a rollback or its parameters' types call for it.
//! - It is one reader of events and changes from run to run: its cursors move past what
//!   a run read only once the run succeeded.
//! - A run whose kept plan is a point read may be answered past `Client::run`
//!   (`Client::point_read`) only where the ordinary way would do nothing more than read
//!   that row: it never waits, and steps back to the ordinary way otherwise.
//! - Likewise a run whose kept plan is an UPDATE may be run past `Client::run`
//!   (`Client::kept_write`) only where the ordinary way would do nothing more than take
//!   the write lock, run the plan and give the lock back (subscriptions getting their
//!   batch as after any commit): it never waits, changes nothing before it knows it will
//!   run, and steps back to the ordinary way otherwise.

use std::cell::RefCell;
use std::sync::Arc;

use parking_lot::Mutex;

use super::Client;
use super::run::RunContext;
use crate::error::{BoxResult, Error, Result};
use crate::exec::{Chunk, EventCursors, Outcome, TableCache};
use crate::parse::{self, StatementKind};
use crate::plan::{self, DataType, OutputColumn, ParamValues, Plan, PlanSlot};

/// A parsed statement and what its runs keep for the next.
#[derive(Debug)]
pub(crate) struct PreparedStatement {
    statement: parse::Statement,
    /// As written, for a file database's journal.
    text: String,
    cache: RefCell<TableCache>,
    plan: RefCell<PlanSlot>,
    events: Arc<Mutex<EventCursors>>,
}

impl PreparedStatement {
    /// `sql`, one statement, parsed (its syntax checked now; names and types at its
    /// first run).
    pub(crate) fn new(sql: &str) -> Result<PreparedStatement> {
        Ok(PreparedStatement {
            statement: parse::parse_one(sql)?,
            text: sql.trim().to_owned(),
            cache: RefCell::default(),
            plan: RefCell::default(),
            events: Arc::default(),
        })
    }

    /// The parsed statement.
    pub(crate) fn statement(&self) -> &parse::Statement {
        &self.statement
    }

    /// The statement as written.
    #[cfg(feature = "server")]
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// How many distinct table lists it has cached (one per scan).
    pub(crate) fn cached_scans(&self) -> usize {
        self.cache.borrow().len()
    }

    /// Forgets a subquery's result kept for one run, before it waits for its next use.
    pub(crate) fn forget_results(&mut self) {
        self.plan.get_mut().forget_results();
    }
}

/// Where a point read's columns go (a trait, not a closure: a closure there was called
/// out of line, 60 more instructions a prepared point read).
pub(super) trait KeptColumns {
    /// Holds the kept plan's `columns`.
    fn take_from(&mut self, columns: &Arc<[OutputColumn]>);

    /// Holds `plan`'s columns; `true`.
    #[inline]
    fn take(&mut self, plan: &crate::plan::QueryPlan) -> bool {
        self.take_from(&plan.columns);
        true
    }
}

/// A prepared statement's last result's columns, taken again only when the plan changed.
impl KeptColumns for Arc<[OutputColumn]> {
    #[inline]
    fn take_from(&mut self, columns: &Arc<[OutputColumn]>) {
        if !Arc::ptr_eq(self, columns) {
            *self = Arc::clone(columns);
        }
    }
}

/// A text's new result's columns.
impl KeptColumns for Option<Arc<[OutputColumn]>> {
    #[inline]
    fn take_from(&mut self, columns: &Arc<[OutputColumn]>) {
        *self = Some(Arc::clone(columns));
    }
}

impl Client {
    /// A prepared point read (one entity by its id: `PlanSlot::kept_point`) answered past
    /// the statement machinery, its row written over `rows` (the statement's last result,
    /// whose `columns` it sets), when nothing calls for more: no transaction open on this
    /// connection or another, the read lock free at once, no write beside others holding
    /// fields (`FieldLocks::quick_read`), not inside `with_world` on this thread, the file
    /// not abandoned, and the kept plan still holding. A client alone on its engine
    /// (`Client::alone`) whose lock no guard holds reads without taking it or counting
    /// itself: no atomic read-modify-write at all. `false` otherwise, having changed
    /// nothing but perhaps some of `rows`' vectors (which the caller then drops or reuses
    /// as memory only): the caller runs the statement the ordinary way, which answers
    /// every one of those cases (waits, errors, binds again). It enters no interrupt turn:
    /// it never waits, and reads one row.
    #[inline]
    pub(crate) fn point_read(
        &self,
        prepared: &PreparedStatement,
        params: &ParamValues,
        columns: &mut Arc<[OutputColumn]>,
        rows: &mut Chunk,
    ) -> bool {
        self.point_read_slot(&prepared.plan, params, rows, columns)
    }

    /// Whether `prepared`'s kept plan is a point read (`PlanSlot::kept_point`), holding
    /// or not: what decides whether a statement keeps a result of its own for
    /// `query_row` to lend.
    pub(crate) fn keeps_point_read(&self, prepared: &PreparedStatement) -> bool {
        prepared
            .plan
            .try_borrow()
            .is_ok_and(|slot| slot.kept_point().is_some())
    }

    /// `point_read` of the plan kept in `slot` (a prepared statement's, or a kept text's),
    /// its row written over `rows` and its columns given to `columns`.
    #[inline]
    pub(super) fn point_read_slot(
        &self,
        slot: &RefCell<PlanSlot>,
        params: &ParamValues,
        rows: &mut Chunk,
        columns: &mut impl KeptColumns,
    ) -> bool {
        if self.open.load(std::sync::atomic::Ordering::Relaxed) != 0
            || super::wait::held(self.key())
            || self.file().is_some_and(|f| f.refuse_if_abandoned().is_err())
        {
            return false;
        }
        let Ok(slot) = slot.try_borrow() else {
            return false;
        };
        // Any other statement (an UPDATE, a scan) goes its way without touching a lock.
        let Some((plan, point)) = slot.kept_point() else {
            return false;
        };
        let lock = &self.engine.state;
        if self.alone() && !lock.is_locked() {
            // SAFETY: no other thread can be inside the engine or come in: the client
            // is the engine's only handle (`alone`), used from one thread at a time (it
            // is not `Sync`), and no reference to the engine outlives the call that lent
            // it, work on the thread pool included (the invariants in `engine/mod.rs`).
            // On this thread, `held` said no call up the stack holds the lock, and
            // `is_locked` (a relaxed load, which this thread's own guards are enough
            // for) says no guard is alive. So nothing writes the state while this
            // shared reference lives.
            let state = unsafe { &*lock.data_ptr() };
            let read = self.point_read_in(&slot, point, state, params, rows);
            #[cfg(test)]
            tests::LONE_READS.with(|n| n.set(n.get() + usize::from(read)));
            return read && columns.take(plan);
        }
        let Some(state) = lock.try_read() else {
            return false;
        };
        let Some(_quick) = self.engine.fields.quick_read() else {
            return false;
        };
        self.point_read_in(&slot, point, &state, params, rows) && columns.take(plan)
    }

    /// `point_read_slot`'s read, once it may read `state`.
    #[inline]
    fn point_read_in(
        &self,
        slot: &PlanSlot,
        point: &crate::plan::PointRead,
        state: &super::State,
        params: &ParamValues,
        rows: &mut Chunk,
    ) -> bool {
        if !self.owner_allows() || !slot.kept_holds(&state.world, state.restores, params) {
            return false;
        }
        if !crate::exec::point_into(point, &state.world, params, rows) {
            return false;
        }
        #[cfg(test)]
        tests::SHORT_READS.with(|n| n.set(n.get() + 1));
        true
    }

    /// A prepared UPDATE (its kept plan `PlanSlot::kept_write`) run past the statement
    /// machinery, under the write lock, when the ordinary way would do no more than that:
    /// a database in memory (no journal to write ahead), not in `Database::open_with`'s
    /// set-up, no transaction open on any connection (asked again under the lock: a BEGIN
    /// elsewhere takes the lock to hold the database), no READ ONLY default, an UPDATE the
    /// ordinary way would not write beside others (`exec::short_for_beside`), the
    /// interrupt not asked, the write lock free and no field held at once (a thread inside
    /// `with_world` holds the lock: its UPDATE goes the ordinary way, which refuses it),
    /// and the kept plan still holding. `None` otherwise, having changed nothing: the
    /// caller runs the statement the ordinary way, which answers each of those cases
    /// (waits, errors, journals, binds again). As after any write, the subscriptions get
    /// their batch before the lock is given back (`live::Writing`).
    #[inline]
    fn kept_write(&self, prepared: &PreparedStatement, params: &ParamValues) -> Option<BoxResult<Outcome>> {
        use std::sync::atomic::Ordering;
        // Any other statement (a read, a SPAWN) goes its way after one look at its slot.
        let slot = prepared.plan.try_borrow().ok()?;
        let plan = slot.kept_write()?;
        if self.open.load(Ordering::Relaxed) != 0
            || self.engine.tx_owner.load(Ordering::SeqCst) != 0
            || self.file().is_some()
            || self.read_only_default.load(Ordering::Relaxed)
            || self.engine.setting_up.load(Ordering::SeqCst)
            || super::beside::beside_fields(&slot).is_some()
        {
            return None;
        }
        let at = prepared.statement.at;
        let budget = self.budget();
        budget.check(at).ok()?;
        let guard = self.engine.state.try_write()?;
        // A transaction begun elsewhere since the look above holds the database now (its
        // owner is set under this lock, where the ordinary way checks it too).
        if self.engine.tx_owner.load(Ordering::SeqCst) != 0
            || self.engine.fields.any_fields_held()
            || !slot.kept_holds(&guard.world, guard.restores, params)
        {
            return None;
        }
        let mut state = super::live::Writing::new(guard, self);
        let state = &mut *state;
        let run = crate::exec::Run {
            cache: &prepared.cache,
            restores: state.restores,
            at,
            params,
            budget: &budget,
            clock: state.schedule.clock(),
            events: None,
            seed: Some(crate::exec::fresh_seed()),
            spare: None,
            profile: None,
            input: None,
        };
        let ran = crate::exec::run_write(plan, &mut state.world, run);
        #[cfg(test)]
        tests::KEPT_WRITES.with(|n| n.set(n.get() + usize::from(ran.is_ok())));
        Some(ran.map_err(|e| Box::new(Error::from(e))))
    }

    /// Runs `prepared` with `params`, its result written into `spare`'s memory where it
    /// can be (a point read's); a kept UPDATE past the statement machinery where it may
    /// be (`kept_write`).
    #[inline]
    pub(crate) fn run_prepared(
        &self,
        prepared: &PreparedStatement,
        params: &ParamValues,
        spare: &RefCell<Option<Chunk>>,
    ) -> BoxResult<Outcome> {
        let p = prepared;
        if let Some(ran) = self.kept_write(p, params) {
            return ran;
        }
        self.run(
            &p.statement,
            params,
            RunContext::prepared(&p.cache, &p.plan, &p.events, &p.text, spare),
        )
    }

    /// Runs `statement` (written as `text`) with `input`, the rows a server's client sent
    /// with `COPY … FROM STDIN`.
    #[cfg(feature = "server")]
    pub(crate) fn run_with_input(
        &self,
        statement: &parse::Statement,
        text: &str,
        input: &[u8],
    ) -> BoxResult<Outcome> {
        let _call = self.enter();
        self.run(
            statement,
            &ParamValues::default(),
            RunContext {
                text: Some(text),
                input: Some(input),
                ..RunContext::default()
            },
        )
    }

    /// The result's columns of `prepared` against the current catalog, learned without
    /// running it.
    pub(crate) fn columns(&self, prepared: &PreparedStatement) -> Result<Vec<OutputColumn>> {
        Ok(self.describe(prepared, &[])?.1)
    }

    /// The types `prepared`'s positional parameters are used as (`None` where any type
    /// goes) and its result's columns, against the current catalog, learned without running
    /// it (the catalog's answers, which change nothing, are run for their columns): what a
    /// client preparing a statement over the wire is told. A parameter whose type the
    /// client `declared` has that type (`None`: as it is used).
    pub(crate) fn describe(
        &self,
        prepared: &PreparedStatement,
        declared: &[Option<DataType>],
    ) -> Result<(Vec<Option<DataType>>, Vec<OutputColumn>)> {
        let statement = &prepared.statement;
        let untyped = || vec![None; statement.params.positional];
        match &statement.kind {
            StatementKind::ShowSystems
            | StatementKind::ShowSystemRuns
            | StatementKind::ShowEvents
            | StatementKind::ExplainTick => {
                let _call = self.enter();
                let outcome = self.run_schedule(statement, &ParamValues::default(), RunContext::default())?;
                return Ok((untyped(), outcome.columns.to_vec()));
            }
            // The schedule's other statements, and SAVE, LOAD and CHECKPOINT, return no rows.
            kind if kind.is_schedule() => return Ok((untyped(), Vec::new())),
            StatementKind::Save { .. }
            | StatementKind::Load { .. }
            | StatementKind::Checkpoint
            | StatementKind::SetVariable { .. } => {
                return Ok((untyped(), Vec::new()));
            }
            StatementKind::ShowComponents
            | StatementKind::ShowArchetypes
            | StatementKind::ShowIndexes
            | StatementKind::Describe { .. }
            | StatementKind::ShowVariable { .. }
            | StatementKind::Pragma { .. } => {
                // A PRAGMA that sets answers with the setting, as one that reads it does.
                let read = match &statement.kind {
                    StatementKind::Pragma { name, value: Some(_) } => parse::Statement {
                        kind: StatementKind::Pragma {
                            name: name.clone(),
                            value: None,
                        },
                        ..statement.clone()
                    },
                    _ => statement.clone(),
                };
                let _call = self.enter();
                let outcome = self.run(&read, &ParamValues::default(), RunContext::default())?;
                return Ok((untyped(), outcome.columns.to_vec()));
            }
            // A live query streamed by COPY: its parameters are its query's, and it returns
            // no rows (its lines come as COPY's data).
            StatementKind::CopySubscribe { query, .. } => {
                let select = parse::Statement {
                    kind: StatementKind::Select((**query).clone()),
                    ..statement.clone()
                };
                let (_, types) = self.with_world(|w| plan::bind_described(&select, w, declared))??;
                return Ok((types, Vec::new()));
            }
            _ => {}
        }
        let (plan, types) = self.with_world(|w| plan::bind_described(statement, w, declared))??;
        let columns = match plan {
            Plan::Query(q) => q.columns.to_vec(),
            Plan::Returning { query, .. } => query.columns.to_vec(),
            // SPAWN answers with the ids it spawned.
            Plan::Spawn(_) => vec![OutputColumn::id()],
            Plan::Explain(_) | Plan::Subscribe(_) | Plan::ExplainAnalyze { .. } => vec![OutputColumn {
                name: "plan".to_owned(),
                ty: DataType::Text,
            }],
            _ => Vec::new(),
        };
        Ok((types, columns))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};

    use crate::{Database, Entity, Result};

    thread_local! {
        /// Point reads this thread had answered the short way.
        pub(super) static SHORT_READS: Cell<usize> = const { Cell::new(0) };
        /// Point reads this thread answered without the lock, its connection alone on
        /// the database.
        pub(super) static LONE_READS: Cell<usize> = const { Cell::new(0) };
        /// Prepared UPDATEs this thread ran past the statement machinery and that
        /// succeeded.
        pub(super) static KEPT_WRITES: Cell<usize> = const { Cell::new(0) };
    }

    fn lone_reads() -> usize {
        LONE_READS.with(Cell::get)
    }

    fn kept_writes() -> usize {
        KEPT_WRITES.with(Cell::get)
    }

    /// Runs `update`, giving what it wrote and how many runs went past the statement
    /// machinery (`Client::kept_write`).
    fn kept(update: &mut crate::Statement<'_>) -> Result<(usize, usize)> {
        let before = kept_writes();
        let wrote = update.execute(())?;
        Ok((wrote, kept_writes() - before))
    }

    fn sum(conn: &crate::Connection) -> Result<f64> {
        conn.query_row("SELECT sum(Data.v) FROM Data", (), |r| r.get(0))
    }

    #[test]
    fn a_kept_update_runs_the_short_way_only_where_nothing_else_is_owed() -> Result<()> {
        let db = Database::open_in_memory();
        let conn = db.connect();
        conn.execute_batch(
            "CREATE COMPONENT Data (v REAL); CREATE TAG A;
             SPAWN Data(1), A FROM range(20); SPAWN Data(1) FROM range(20);",
        )?;
        let mut double = conn.prepare("UPDATE Data SET v = Data.v * 2")?;
        // The first run plans; each after it is a short one, and writes.
        assert_eq!(kept(&mut double)?, (40, 0));
        assert_eq!(kept(&mut double)?, (40, 1));
        assert_eq!(sum(&conn)?, 160.0);
        // Inside a transaction the ordinary way writes (its undo kept), and ROLLBACK
        // undoes it; after it the plan is bound again (a rollback may renumber tables),
        // then the short way again.
        conn.execute_batch("BEGIN")?;
        assert_eq!(kept(&mut double)?, (40, 0));
        conn.execute_batch("ROLLBACK")?;
        assert_eq!(sum(&conn)?, 160.0);
        assert_eq!(kept(&mut double)?, (40, 0));
        assert_eq!(kept(&mut double)?, (40, 1));
        // So too in a transaction begun READ COMMITTED, open but not yet holding the
        // database before its first write.
        conn.execute_batch("BEGIN ISOLATION LEVEL READ COMMITTED")?;
        assert_eq!(kept(&mut double)?, (40, 0));
        conn.execute_batch("ROLLBACK")?;
        assert_eq!(sum(&conn)?, 640.0);
        assert_eq!(kept(&mut double)?, (40, 0));
        // Another connection's transaction holds the database: the ordinary way, which
        // waits for it, and here (no wait allowed) says it is busy, having written nothing.
        let other = db.connect();
        other.execute_batch("BEGIN; UPDATE Data SET v = 1 WHERE Data.v < 0")?;
        conn.set_busy_timeout(std::time::Duration::ZERO);
        let before = kept_writes();
        let busy = double.execute(());
        assert!(matches!(busy, Err(crate::Error::Busy { .. })), "{busy:?}");
        assert_eq!(kept_writes(), before);
        other.execute_batch("COMMIT")?;
        assert_eq!(sum(&conn)?, 1280.0);
        // Writes refused by default: refused as the ordinary way refuses them.
        conn.execute_batch("SET default_transaction_read_only = on")?;
        let refused = double
            .execute(())
            .expect_err("a READ ONLY default refuses the UPDATE");
        assert!(refused.to_string().contains("read-only"), "{refused}");
        conn.execute_batch("SET default_transaction_read_only = off")?;
        // Inside `with_world` on this thread: the ordinary way, which refuses to wait
        // for the lock this thread holds.
        let inside = conn.with_world(|_| kept(&mut double).map(|(_, short)| short));
        assert!(
            matches!(inside, Ok(Err(crate::Error::Misuse { .. }))),
            "{inside:?}"
        );
        // A subscription gets the write's batch: the old sum leaves, the new one comes.
        let live = conn.subscribe("SELECT sum(Data.v) FROM Data", ())?;
        assert_eq!(live.try_next()?.expect("the first batch").count(), 1);
        assert_eq!(kept(&mut double)?, (40, 1));
        // Each row: the sum, the tick, the diff.
        let mut batch: Vec<(i64, f64)> = live
            .try_next()?
            .expect("the write's batch")
            .map(|r| {
                let r = r?;
                Ok((r.get(2)?, r.get(0)?))
            })
            .collect::<Result<_>>()?;
        batch.sort_by_key(|row| row.0);
        assert_eq!(batch, [(-1, 1280.0), (1, 2560.0)]);
        drop(live);
        // A catalog change binds the plan again (the ordinary way), then short again.
        conn.execute_batch("CREATE COMPONENT B (w INT); SPAWN Data(1), B(0)")?;
        assert_eq!(kept(&mut double)?, (41, 0));
        assert_eq!(kept(&mut double)?, (41, 1));
        Ok(())
    }

    #[test]
    fn an_update_to_write_beside_others_goes_the_ordinary_way() -> Result<()> {
        let db = Database::open_in_memory();
        let conn = db.connect();
        // An UPDATE long enough to write beside others' goes the ordinary way, which
        // writes it so.
        conn.execute_batch("CREATE COMPONENT Big (n FLOAT); SPAWN Big(i) FROM range(5000) AS r(i)")?;
        let mut bump = conn.prepare("UPDATE Big SET n = Big.n + 1.0")?;
        let beside = db.concurrency().beside;
        for _ in 0..3 {
            assert_eq!(kept(&mut bump)?, (5000, 0));
        }
        assert_eq!(
            db.concurrency().beside - beside,
            2,
            "its runs after the first wrote beside others"
        );
        let n: f64 = conn.query_row("SELECT sum(Big.n) FROM Big", (), |r| r.get(0))?;
        assert_eq!(n, (4999 * 5000 / 2 + 3 * 5000) as f64);
        Ok(())
    }

    #[test]
    fn a_file_database_journals_every_kept_update() -> Result<()> {
        let dir = std::env::temp_dir().join(format!("ecsql-kept-write-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| crate::Error::Misuse {
            message: e.to_string(),
            at: crate::Location::new(1, 1),
        })?;
        let path = dir.join("kept.db");
        {
            let conn = Database::open(&path)?.connect();
            conn.execute_batch("CREATE COMPONENT Data (v REAL); SPAWN Data(1) FROM range(10);")?;
            let mut double = conn.prepare("UPDATE Data SET v = Data.v * 2")?;
            for _ in 0..3 {
                assert_eq!(kept(&mut double)?, (10, 0), "journaled the ordinary way");
            }
        }
        let reopened = Database::open(&path)?.connect();
        let kept_sum = sum(&reopened);
        drop(reopened);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(kept_sum?, 80.0);
        Ok(())
    }

    fn short_reads() -> usize {
        SHORT_READS.with(Cell::get)
    }

    #[test]
    fn a_kept_point_read_is_answered_the_short_way_where_nothing_else_is_owed() -> Result<()> {
        let conn = Database::open_in_memory().connect();
        conn.execute_batch(
            "CREATE COMPONENT Position (x REAL, y REAL);
             SPAWN Position(i * 0.5, 0) FROM range(10) AS r(i);",
        )?;
        let ids: Vec<Entity> = {
            let mut all = conn.prepare("SELECT id FROM Position ORDER BY Position.x")?;
            let mut rows = all.query(())?;
            let mut ids = Vec::new();
            while let Some(row) = rows.next()? {
                ids.push(row.get(0)?);
            }
            ids
        };
        let mut x_of = conn.prepare("SELECT Position.x FROM Position WHERE id = ?1")?;
        let mut read = |i: usize| -> Result<(f64, usize)> {
            let before = short_reads();
            let x = x_of.query_row([ids[i]], |r| r.get(0))?;
            Ok((x, short_reads() - before))
        };
        // The first run plans; each after it, by query_row, is a short one.
        assert_eq!(read(0)?, (0.0, 0));
        for i in 1..10 {
            assert_eq!(read(i)?, (i as f64 * 0.5, 1));
        }
        // Inside a transaction the ordinary way answers (what the transaction wrote is
        // read there), and the short way again after it.
        conn.execute_batch("BEGIN; UPDATE Position SET x = 100 WHERE Position.y = 0")?;
        assert_eq!(read(3)?, (100.0, 0));
        conn.execute_batch("ROLLBACK")?;
        assert_eq!(read(3)?, (1.5, 0), "a rollback plans again");
        assert_eq!(read(4)?, (2.0, 1));
        // By query and the rows' next, too.
        let before = short_reads();
        let x: f64 = x_of.query([ids[5]])?.next()?.expect("a row").get(0)?;
        assert_eq!((x, short_reads() - before), (2.5, 1));
        // A text run through the connection, the same each time or with its id written
        // in (its shape's plan), as a prepared statement's: each once the connection keeps
        // the text (from its second run) and its plan (from the run after).
        let by_text = |i: usize, written: bool| -> Result<(f64, usize)> {
            let before = short_reads();
            let x = match written {
                false => conn.query_row("SELECT Position.x FROM Position WHERE id = ?1", [ids[i]], |r| {
                    r.get(0)
                })?,
                true => conn.query_row(
                    &format!("SELECT Position.x FROM Position WHERE id = {}", ids[i].to_bits()),
                    (),
                    |r| r.get(0),
                )?,
            };
            Ok((x, short_reads() - before))
        };
        // (Ids 1 to 9: a literal of one digit, one shape; 10 is of another.)
        for written in [false, true] {
            assert_eq!(by_text(0, written)?, (0.0, 0));
            assert_eq!(by_text(1, written)?.0, 0.5);
            for i in 2..9 {
                assert_eq!(by_text(i, written)?, (i as f64 * 0.5, 1), "written in: {written}");
            }
        }
        // A read that is not by id never is.
        let mut by_x = conn.prepare("SELECT Position.y FROM Position WHERE Position.x = ?1")?;
        let before = short_reads();
        for i in 0..5 {
            let y: f64 = by_x.query_row([i as f64 * 0.5], |r| r.get(0))?;
            assert_eq!(y, 0.0);
        }
        assert_eq!(short_reads(), before);
        Ok(())
    }

    #[test]
    fn a_connection_alone_on_its_database_reads_a_point_without_the_lock_and_sees_every_write() -> Result<()>
    {
        let db = Database::open_in_memory();
        let conn = db.connect();
        conn.execute_batch(
            "CREATE COMPONENT Position (x REAL, y REAL);
             SPAWN Position(i * 0.5, 0) FROM range(10) AS r(i);",
        )?;
        let ids: Vec<Entity> = conn
            .prepare("SELECT id FROM Position ORDER BY Position.x")?
            .query_map((), |r| r.get(0))?
            .collect::<Result<_>>()?;
        let x_of = RefCell::new(conn.prepare("SELECT Position.x FROM Position WHERE id = ?1")?);
        // (x, answered the short way, without the lock)
        let read = |i: usize| -> Result<(f64, usize, usize)> {
            let (short, lone) = (short_reads(), lone_reads());
            let x = x_of.borrow_mut().query_row([ids[i]], |r| r.get(0))?;
            Ok((x, short_reads() - short, lone_reads() - lone))
        };
        assert_eq!(read(0)?, (0.0, 0, 0), "the first run plans");
        // While the program holds the `Database`, another thread may connect at any time.
        assert_eq!(read(1)?, (0.5, 1, 0));
        let other = db.connect();
        drop(db);
        assert_eq!(read(2)?, (1.0, 1, 0), "another connection is open");
        // It writes from its own thread and is gone: the read without the lock sees it.
        std::thread::spawn(move || other.execute("UPDATE Position SET x = x + 100", ()))
            .join()
            .expect("the writer's thread ends")?;
        assert_eq!(read(3)?.0, 101.5, "the write made the plan run again");
        assert_eq!(read(4)?, (102.0, 1, 1));
        // Its own writes too, and inside a transaction the ordinary way reads.
        conn.execute("UPDATE Position SET x = -1 WHERE id = ?1", [ids[5]])?;
        assert_eq!(read(6)?, (103.0, 1, 1));
        assert_eq!(read(5)?, (-1.0, 1, 1));
        conn.execute_batch("BEGIN; UPDATE Position SET x = 7")?;
        assert_eq!(read(7)?, (7.0, 0, 0));
        conn.execute_batch("ROLLBACK")?;
        assert_eq!(read(8)?, (104.0, 0, 0), "a rollback plans again");
        // Inside `with_world_mut` on this thread (the write lock held up the stack), a
        // point read does not read past the lock: it is refused, as any statement there.
        let inside = conn.with_world_mut(|_| read(1))?;
        assert!(matches!(inside, Err(crate::Error::Misuse { .. })), "{inside:?}");
        // A lent row cloned out of `query_row` keeps its values while the next reads
        // write theirs over the statement's own result.
        let lone = lone_reads();
        let row = x_of.borrow_mut().query_row([ids[0]], |r| Ok(r.clone()))?;
        assert_eq!(lone_reads() - lone, 1);
        assert_eq!(read(9)?, (104.5, 1, 1));
        assert_eq!(row.get::<_, f64>(0)?, 100.0);
        Ok(())
    }

    #[test]
    fn a_point_read_finds_each_entitys_field_in_whichever_table_holds_it() -> Result<()> {
        let conn = Database::open_in_memory().connect();
        // Position's columns stand after Health's in the table of both, first in the
        // table of Position alone; the Dead one is not read.
        conn.execute_batch(
            "CREATE COMPONENT Health (hp INT, armor INT);
             CREATE COMPONENT Position (x REAL, y REAL);
             CREATE TAG Dead;
             CREATE TAG Marked;
             SPAWN Position(1, 10); SPAWN Health(5, 6), Position(2, 20); SPAWN Position(3, 30), Dead;",
        )?;
        let ids: Vec<Entity> = conn
            .prepare("SELECT id FROM Position ORDER BY Position.x")?
            .query_map((), |r| r.get(0))?
            .collect::<Result<_>>()?;
        let mut y_of = conn.prepare("SELECT Position.y FROM Position WHERE id = ?1 AND NOT has(Dead)")?;
        let mut xy_of = conn.prepare("SELECT Position.x, Position.y FROM Position WHERE id = ?1")?;
        let mut read = |i: usize| -> Result<(Option<f64>, (f64, f64))> {
            let y = match y_of.query_row([ids[i]], |r| r.get(0)) {
                Err(crate::Error::QueryReturnedNoRows) => None,
                y => Some(y?),
            };
            Ok((y, xy_of.query_row([ids[i]], |r| Ok((r.get(0)?, r.get(1)?)))?))
        };
        let before = short_reads();
        for (i, want) in [
            (0, Some(10.0)),
            (1, Some(20.0)),
            (0, Some(10.0)),
            (2, None),
            (1, Some(20.0)),
            (2, None),
        ] {
            assert_eq!(
                read(i)?,
                (want, ((i + 1) as f64, want.unwrap_or(30.0))),
                "entity {i}"
            );
        }
        assert!(
            short_reads() - before >= 8,
            "the reads after the first went the short way"
        );
        // The first entity moves to the table of both, and back.
        conn.execute("INSERT INTO Health (id, hp, armor) VALUES (?1, 1, 1)", [ids[0]])?;
        assert_eq!(read(0)?, (Some(10.0), (1.0, 10.0)));
        assert_eq!(read(1)?, (Some(20.0), (2.0, 20.0)));
        conn.execute("DELETE FROM Health WHERE id = ?1", [ids[0]])?;
        assert_eq!(read(0)?, (Some(10.0), (1.0, 10.0)));
        // The second one dies: no longer read.
        conn.execute("INSERT INTO Dead (id) VALUES (?1)", [ids[1]])?;
        assert_eq!(read(1)?, (None, (2.0, 20.0)));
        // A table made in a transaction and read there (y its second column) is gone with
        // the rollback, and the next new table takes its id with y fourth: read from it.
        conn.execute_batch("BEGIN")?;
        conn.execute("INSERT INTO Marked (id) VALUES (?1)", [ids[0]])?;
        assert_eq!(read(0)?, (Some(10.0), (1.0, 10.0)));
        conn.execute_batch("ROLLBACK")?;
        conn.execute("INSERT INTO Health (id, hp, armor) VALUES (?1, 1, 2)", [ids[0]])?;
        conn.execute("INSERT INTO Marked (id) VALUES (?1)", [ids[0]])?;
        for _ in 0..2 {
            assert_eq!(read(0)?, (Some(10.0), (1.0, 10.0)));
        }
        Ok(())
    }
}
