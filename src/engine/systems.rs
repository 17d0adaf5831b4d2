//! The engine's side of the schedule: the statements about systems, phases and
//! ticks, `PRAGMA tick` / `PRAGMA delta_time`, and the Rust API (`tick`, `tick_with_dt`,
//! `create_system`, `clock`). They run under the database's write lock (SHOW SYSTEMS,
//! SHOW EVENTS and EXPLAIN TICK under the read lock), and inside a transaction the
//! schedule's image is kept before its first change, for ROLLBACK.

use std::cell::RefCell;

use super::journal::{Entry, Record, Step};
use super::settings::Clocked;
use super::{Client, wait};
use crate::error::{Error, Result};
use crate::exec::{self, Clock, ExecError, ExecErrorKind, Outcome, Run, TableCache};
use crate::location::Location;
use crate::parse::{self, Expr, StatementKind};
use crate::plan::PlanErrorKind;
use crate::plan::{self, DataType, ParamValues};
use crate::schedule::{
    self, Env, RustClosure, RustSystem, ScheduleError, SystemAccess, SystemView, ViewSystem,
};
use crate::storage::{Value, World};

/// The text of a tick's journal record, its count the parameter (`replay_tick`).
pub(super) const TICK_RECORD: &str = "TICK ?1";
/// The same with its `dt` the second parameter.
pub(super) const TICK_DT_RECORD: &str = "TICK ?1 WITH dt = ?2";

impl Client {
    /// Runs a statement of the schedule (`StatementKind::is_schedule`).
    pub(super) fn run_schedule(
        &self,
        statement: &parse::Statement,
        params: &ParamValues,
        with: super::RunContext<'_>,
    ) -> Result<Outcome> {
        let at = statement.at;
        match &statement.kind {
            StatementKind::ShowSystems
            | StatementKind::ShowSystemRuns
            | StatementKind::ShowEvents
            | StatementKind::ExplainTick => {
                let state = self.read_state(at)?;
                return match &statement.kind {
                    StatementKind::ShowSystems => Ok(state.schedule.show_systems(&state.world)),
                    StatementKind::ShowSystemRuns => Ok(state.schedule.show_system_runs()),
                    StatementKind::ShowEvents => Ok(state.schedule.show_events(&state.world)),
                    _ => {
                        let budget = self.budget();
                        let lines = state
                            .schedule
                            .explain_tick(&state.world, state.restores, &budget)?;
                        let rows = lines.into_iter().map(|l| vec![Value::Text(l)]).collect();
                        Ok(Outcome::of_rows(&[("plan", DataType::Text)], rows))
                    }
                };
            }
            _ => {}
        }
        self.refuse_in_setup(statement.kind.verb(), statement.at)?;
        let budget = self.budget();
        budget.check(at)?;
        let mut guard = self.write_state(at)?;
        let state = &mut *guard;
        // (A TICK's count and dt are read before anything is written; `ticks_under`
        // abandons the file for a tick that panics as it writes.)
        if let StatementKind::Tick { count, dt } = &statement.kind {
            let clock = state.schedule.clock();
            let count = match count {
                Some(e) => tick_count(value_of(e, &state.world, params, clock, &budget)?, e.at)?,
                None => 1,
            };
            let dt = match dt {
                Some(e) => Some(seconds(value_of(e, &state.world, params, clock, &budget)?, e.at)?),
                None => None,
            };
            let ran = self.ticks_under(guard, count, dt, &budget, at, with.replay)?;
            return Ok(Outcome {
                affected: usize::try_from(ran).unwrap_or(usize::MAX),
                ..Outcome::default()
            });
        }
        let _abandon = super::AbandonOnPanic(self.file(), super::WRITE_PANICKED);
        let tick = state.world.tick();
        let ahead = self.journal_ahead(state, with.replay, || Entry {
            text: with.text.map_or_else(|| statement.to_string(), str::to_owned),
            params: params.clone(),
            tick,
            ..Entry::default()
        })?;
        let done = self.change_schedule(state, statement, with.replay);
        let written = self.journal_settle(state, ahead, done.is_ok());
        drop(guard);
        done?;
        self.make_durable(written, at)?;
        Ok(Outcome::default())
    }

    /// A journal's tick record run again (`TICK ?1`, `TICK ?1 WITH dt = ?2`: `count` and
    /// `dt` its parameters) at write tick `tick`, as `run_schedule` runs that statement,
    /// without looking its text up and binding it: a journal of ticks holds little else.
    pub(super) fn replay_tick(&self, count: &Value, dt: Option<&Value>, tick: u64) -> Result<()> {
        let at = Location::new(1, 1);
        self.mark_queried();
        self.before_write("TICK", at)?;
        let count = tick_count(count.clone(), at)?;
        let dt = dt.map(|dt| seconds(dt.clone(), at)).transpose()?;
        let budget = self.budget();
        budget.check(at)?;
        let mut guard = self.write_state(at)?;
        guard.world.tick_up_to(tick);
        self.ticks_under(guard, count, dt, &budget, at, true).map(drop)
    }

    /// Runs `count` ticks under the write lock `guard` (a TICK's, `Connection::tick`'s)
    /// and makes them durable as `PRAGMA synchronous` says once the lock is let go.
    /// Gives how many ran.
    fn ticks_under(
        &self,
        mut guard: super::live::Writing<'_>,
        count: u64,
        dt: Option<f64>,
        budget: &exec::Budget<'_>,
        at: Location,
        replay: bool,
    ) -> Result<u64> {
        let _abandon = super::AbandonOnPanic(self.file(), super::WRITE_PANICKED);
        let state = &mut *guard;
        let holding = wait::Holding::new(self.key());
        let env = self.tick_env(state.restores, budget, at);
        let (ran, written) = self.journaled_ticks(state, count, dt, &env, replay)?;
        drop(holding);
        drop(guard);
        self.make_durable(written, at)?;
        ran
    }

    /// What a TICK at `at` runs with: this call's budget and the database's settings.
    fn tick_env<'b>(&self, restores: u64, budget: &'b crate::exec::Budget<'b>, at: Location) -> Env<'b> {
        Env {
            restores,
            budget,
            at,
            tick_threads: self.tick_threads(),
        }
    }

    /// Runs `count` ticks (each `dt` long from now on, when given), journaled (in a file
    /// database) as the ticks that stayed. Gives how many ran (or why the next failed),
    /// and the record to flush.
    fn journaled_ticks(
        &self,
        state: &mut super::State,
        count: u64,
        dt: Option<f64>,
        env: &Env<'_>,
        replay: bool,
    ) -> Result<(Result<u64>, Option<super::durable::Written>)> {
        // A journal entry is made only for a file database's journal, outside a replay:
        // a tick in memory does not walk the systems for their names.
        let rust_systems = match self.file() {
            Some(_) if !replay => state.schedule.rust_systems(),
            _ => Vec::new(),
        };
        let entry = |n: u64, dt: Option<f64>, tick: u64| {
            let mut params = ParamValues::default();
            params
                .positional
                .push(Value::Int(i64::try_from(n).unwrap_or(i64::MAX)));
            let text = match dt {
                None => TICK_RECORD,
                Some(dt) => {
                    params.positional.push(Value::Float(dt));
                    TICK_DT_RECORD
                }
            };
            Entry {
                text: text.to_owned(),
                params,
                rust_systems: rust_systems.clone(),
                tick,
                ..Entry::default()
            }
        };
        let before = state.schedule.clock().tick;
        let (ran, written) = if count > 0
            && self.file().is_some()
            && !replay
            && !state.in_begin
            && !state.world.in_transaction()
        {
            self.ticks_one_by_one(state, count, dt, env, entry)?
        } else {
            self.ticks_at_once(state, count, dt, env, replay, entry)?
        };
        let clock = state.schedule.clock().tick;
        let ran = ran.map_err(|e| with_ticks_kept(e, clock.saturating_sub(before), clock, env.at));
        Ok((ran, written))
    }

    /// `journaled_ticks` in memory, in a replay, or inside a transaction: one entry.
    fn ticks_at_once(
        &self,
        state: &mut super::State,
        count: u64,
        dt: Option<f64>,
        env: &Env<'_>,
        replay: bool,
        entry: impl Fn(u64, Option<f64>, u64) -> Entry,
    ) -> Result<(Result<u64>, Option<super::durable::Written>)> {
        // Inside a transaction, its record at COMMIT holds the ticks that stayed.
        let tick = state.world.tick();
        let ahead = self.journal_ahead(state, replay, || entry(count, dt, tick))?;
        let before = state.schedule.clock().tick;
        state.keep_schedule_image();
        let ran = if self.file().is_none() && !state.in_begin && !state.world.in_transaction() {
            self.ticks_publishing(state, count, dt, env)
        } else {
            state.schedule.run_ticks(&mut state.world, count, dt, env)
        };
        let stayed = state.schedule.clock().tick.saturating_sub(before).min(count);
        if ran.is_ok() || stayed == 0 {
            let written = self.journal_settle(state, ahead, ran.is_ok());
            return Ok((ran.map_err(Error::from), written));
        }
        // The ticks before the one that failed stay: the journal says so.
        self.journal_settle(state, ahead, false);
        let ahead = match self.journal_ahead(state, replay, || entry(stayed, dt, tick)) {
            Ok(ahead) => ahead,
            Err(e) => {
                // They stay in memory all the same: a checkpoint must keep them.
                self.unjournaled(state);
                return Err(e);
            }
        };
        let written = self.journal_settle(state, ahead, true);
        Ok((ran.map_err(Error::from), written))
    }

    /// Ticks in memory outside a transaction: each tick a commit of its own, each handed
    /// to the subscriptions (`live.rs`) as it ends, the last by the write lock's guard.
    /// Without a subscription, all at once.
    fn ticks_publishing(
        &self,
        state: &mut super::State,
        count: u64,
        dt: Option<f64>,
        env: &Env<'_>,
    ) -> std::result::Result<u64, crate::schedule::ScheduleError> {
        if !self.engine.live.any() {
            return state.schedule.run_ticks(&mut state.world, count, dt, env);
        }
        let limit = self
            .engine
            .memory_limit
            .load(std::sync::atomic::Ordering::Relaxed);
        for n in 0..count {
            // dt is set by the first tick.
            let dt = if n == 0 { dt } else { None };
            state.schedule.run_ticks(&mut state.world, 1, dt, env)?;
            if n + 1 < count {
                self.engine.live.publish(state, limit);
            }
        }
        Ok(count)
    }

    /// A file database's TICK outside a transaction: each tick is a commit of its own,
    /// its record written once it ran and before it is kept (a failed write undoes it),
    /// so a crash of the process loses at most the tick that was running (a crash of the
    /// machine, the ticks not flushed: none acknowledged) and opening never runs a tick
    /// nobody saw finish. The journal is flushed when a tick finds the last flush a
    /// second old (`full` and `normal`; the last tick's flush is the caller's), and
    /// checkpointed between ticks when due.
    fn ticks_one_by_one(
        &self,
        state: &mut super::State,
        count: u64,
        dt: Option<f64>,
        env: &Env<'_>,
        entry: impl Fn(u64, Option<f64>, u64) -> Entry,
    ) -> Result<(Result<u64>, Option<super::durable::Written>)> {
        let Some(file) = self.file() else {
            return Err(ExecError::internal(env.at, "ticks one by one without a file").into());
        };
        // A world the journal does not hold all of is checkpointed first.
        self.checkpoint_if_behind(state)?;
        let mut written = None;
        let mut ran = 0;
        while ran < count {
            // dt is set by the first tick (and put back if that one fails).
            let dt = if ran == 0 { dt } else { None };
            let mut refused = None;
            let mut keep = |started: u64| {
                let record = Record::kept(vec![Step::Statement(entry(1, dt, started))]);
                match file.append(&record) {
                    Ok((_, w)) => {
                        written = Some(w);
                        Ok(())
                    }
                    Err(e) => {
                        let message = e.to_string();
                        refused = Some(e);
                        Err(message)
                    }
                }
            };
            let ticked = state
                .schedule
                .run_ticks_keeping(&mut state.world, 1, dt, env, &mut keep);
            if let Err(e) = ticked {
                return Ok((Err(refused.unwrap_or_else(|| Error::from(e))), written));
            }
            ran += 1;
            if ran < count {
                // Each tick is a commit: the subscriptions get its batch (the last one's
                // comes with the write lock's guard).
                let limit = self
                    .engine
                    .memory_limit
                    .load(std::sync::atomic::Ordering::Relaxed);
                self.engine.live.publish(state, limit);
                self.between_ticks(state, written)?;
            }
        }
        Ok((Ok(count), written))
    }

    /// A statement that changes the schedule (not TICK).
    fn change_schedule(
        &self,
        state: &mut super::State,
        statement: &parse::Statement,
        replay: bool,
    ) -> Result<()> {
        let at = statement.at;
        let restores = state.restores;
        match &statement.kind {
            StatementKind::CreateSystem(spec) => {
                state.keep_schedule_image();
                // A system read back from a journal was checked when it was made (and a
                // journal of an older ecsql must open all the same).
                let logs = state
                    .schedule
                    .create_system(spec, &state.world, restores, !replay)?;
                for c in logs {
                    state
                        .world
                        .track_removals(c)
                        .map_err(|e| crate::exec::ExecError::storage(at, e))?;
                }
            }
            StatementKind::DropSystem { name, if_exists } => {
                state.schedule_changes().drop_system(name, *if_exists)?;
            }
            StatementKind::AlterSystem { name, enable } => {
                state.schedule_changes().set_enabled(name, *enable)?;
            }
            StatementKind::CreatePhase { name, before, anchor } => {
                state.schedule_changes().create_phase(name, *before, anchor)?;
            }
            StatementKind::DropPhase { name, if_exists } => {
                state.schedule_changes().drop_phase(name, *if_exists)?;
            }
            _ => return Err(ScheduleError::invalid(at, "not a statement of the schedule").into()),
        }
        Ok(())
    }

    /// `PRAGMA tick = n` and `PRAGMA delta_time = seconds` (`v`, as written): sets the
    /// clock (what `tick()` and `delta_time()` give outside a tick); `.dump` writes them.
    pub(super) fn set_clock(&self, to: Clocked, v: &str, at: Location, replay: bool) -> Result<Clock> {
        let name = to.name();
        let invalid = |message: String| -> Error {
            plan::PlanError::new(at, PlanErrorKind::Invalid { message }).into()
        };
        self.refuse_in_setup(&format!("PRAGMA {name} ="), at)?;
        self.before_write(to.verb(), at)?;
        let mut state = self.write_state(at)?;
        let mut clock = state.schedule.clock();
        match to {
            Clocked::Tick(tick) => clock.tick = tick,
            Clocked::Dt(dt) => clock.dt = dt,
        }
        let rows = |n: usize| if n == 1 { "row" } else { "rows" };
        let mut kept: Vec<String> = state
            .world
            .events()
            .filter(|e| !e.is_empty())
            .map(|e| format!("{}: {} {}", e.name(), e.len(), rows(e.len())))
            .collect();
        for (c, log) in state.world.removal_logs().filter(|(_, log)| !log.is_empty()) {
            let name = state.world.component(c).map_or("?", |d| d.name());
            kept.push(format!("removed({name}): {} {}", log.len(), rows(log.len())));
        }
        if clock.tick < state.schedule.clock().tick && !kept.is_empty() {
            return Err(invalid(format!(
                "PRAGMA tick cannot move the clock back while events are kept ({}): their \
                 ages would run backwards; TICK until they are dropped, or DROP EVENT",
                kept.join(", ")
            )));
        }
        let tick = state.world.tick();
        let ahead = self.journal_ahead(&mut state, replay, || Entry {
            text: format!("PRAGMA {name} = {v}"),
            tick,
            ..Entry::default()
        })?;
        state.schedule_changes().set_clock(clock);
        state.world.set_log_tick(clock.tick);
        let written = self.journal_settle(&mut state, ahead, true);
        drop(state);
        self.make_durable(written, at)?;
        Ok(clock)
    }

    /// `Connection::tick`.
    pub(crate) fn tick(&self, n: u64) -> Result<u64> {
        self.ticks(n, None)
    }

    /// `Connection::tick_with_dt`.
    pub(crate) fn tick_with_dt(&self, n: u64, dt: f64) -> Result<u64> {
        if !(dt.is_finite() && dt >= 0.0) {
            return Err(Error::Misuse {
                message: format!(
                    "tick_with_dt: a tick's dt is a length of time in seconds (0 or more), not {dt}"
                ),
                at: Location::default(),
            });
        }
        self.ticks(n, Some(dt))
    }

    fn ticks(&self, n: u64, dt: Option<f64>) -> Result<u64> {
        let _call = self.enter();
        self.refuse_in_setup("TICK", Location::default())?;
        let at = Location::default();
        self.before_write("TICK", at)?;
        let budget = self.budget();
        let guard = self.write_state(at)?;
        self.ticks_under(guard, n, dt, &budget, at, false)
    }

    /// `Connection::schedule_sql`.
    pub(crate) fn schedule_sql(&self) -> Result<Vec<String>> {
        let _call = self.enter();
        let state = self.read_state(Location::default())?;
        Ok(state.schedule.schema(&state.world))
    }

    /// `Connection::clock`.
    pub(crate) fn clock(&self) -> Result<Clock> {
        self.clock_at(Location::default())
    }

    /// The clock, as a statement at `at` reads it (`PRAGMA tick`).
    pub(crate) fn clock_at(&self, at: Location) -> Result<Clock> {
        let _call = self.enter();
        Ok(self.read_state(at)?.schedule.clock())
    }

    /// `Connection::create_system`.
    pub(crate) fn create_system<F>(&self, name: &str, clauses: &str, f: F) -> Result<()>
    where
        F: FnMut(&mut World, Clock) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>>
            + Send
            + 'static,
    {
        self.register_rust_system(name, clauses, RustClosure::whole(Box::new(f)))
    }

    /// `Connection::create_system_with_access`: `f` gets a view of the world that lends
    /// what `access` declares, read against the world each tick.
    pub(crate) fn create_system_with_access(
        &self,
        name: &str,
        clauses: &str,
        access: SystemAccess,
        mut f: ViewSystem,
    ) -> Result<()> {
        // In a file database's set-up the world is the last checkpoint's, before the
        // journal that may make the field: checked at each tick instead.
        let setting_up = self.engine.setting_up.load(std::sync::atomic::Ordering::SeqCst);
        if !setting_up && let Some(why) = self.with_world(|w| access.misnamed(w))? {
            let message = format!("system {name} cannot be registered: {why}");
            return Err(ScheduleError::Unregistered(message).into());
        }
        let declared = access.clone();
        let system = name.to_owned();
        let run: RustSystem = Box::new(move |world: &mut World, clock: Clock| {
            let resolved = declared.resolve(world)?;
            f(&mut SystemView::new(world, &system, &resolved), clock)
        });
        let closure = RustClosure {
            run,
            access: Some(access),
        };
        self.register_rust_system(name, clauses, closure)
    }

    /// Registers a Rust system's closure: given to the system of that name read from a
    /// file and waiting for it, kept for after the journal in a set-up, else made now.
    fn register_rust_system(&self, name: &str, clauses: &str, f: RustClosure) -> Result<()> {
        let _call = self.enter();
        parse::system_clauses(name, clauses)?;
        // A Rust system read from a file waits under its name for its closure.
        let Some(f) = self
            .write_state(Location::default())?
            .schedule
            .fill_rust_system(name, f)
        else {
            return Ok(());
        };
        if self.engine.setting_up.load(std::sync::atomic::Ordering::SeqCst) {
            // Made where the journal made it, if it did; else once the journal has run.
            self.engine
                .pending_rust
                .lock()
                .0
                .push((name.to_owned(), clauses.to_owned(), f));
            return Ok(());
        }
        self.make_rust_system(name, clauses, Some(f), false)
    }

    /// Adds a Rust system (waiting for its closure when `f` is `None`), journaled in a
    /// file database unless this is a replay.
    pub(super) fn make_rust_system(
        &self,
        name: &str,
        clauses: &str,
        f: Option<RustClosure>,
        replay: bool,
    ) -> Result<()> {
        let at = Location::default();
        let spec = parse::system_clauses(name, clauses)?;
        self.before_write("a Rust system", at)?;
        let mut guard = self.write_state(at)?;
        let state = &mut *guard;
        let tick = state.world.tick();
        let ahead = self.journal_step(state, replay, || Step::RustSystem {
            name: name.to_owned(),
            clauses: clauses.to_owned(),
            tick,
        })?;
        state.keep_schedule_image();
        let made = state
            .schedule
            .create_rust_system(&spec, clauses, f, &state.world, state.restores);
        let written = self.journal_settle(state, ahead, made.is_ok());
        drop(guard);
        made?;
        self.make_durable(written, at)
    }
}

/// The value of a constant expression of a TICK (its count, its dt), evaluated as
/// `SELECT expression` (so parameters and subqueries work).
fn value_of(
    e: &Expr,
    world: &World,
    params: &ParamValues,
    clock: Clock,
    budget: &exec::Budget<'_>,
) -> Result<Value> {
    // A number or a parameter (`TICK 60`, a journal's `TICK ?1`) is its value: the
    // SELECT below would give it back as it is, after binding and running a plan.
    match &e.kind {
        parse::ExprKind::Literal(parse::Literal::Int(n)) => return Ok(Value::Int(*n)),
        parse::ExprKind::Literal(parse::Literal::Float(f)) => return Ok(Value::Float(*f)),
        parse::ExprKind::Param(p) => {
            if let Some(v) = params.get(p) {
                return Ok(v.clone());
            }
        }
        _ => {}
    }
    let statement = schedule::select_of(e.clone());
    let plan = *plan::plan(&statement, world, params)?.0;
    let cache = RefCell::new(TableCache::default());
    let budget = budget.fresh();
    let run = Run {
        cache: &cache,
        restores: 0,
        at: e.at,
        params,
        budget: &budget,
        clock,
        events: None,
        seed: None,
        spare: None,
        profile: None,
        input: None,
    };
    let outcome = exec::run_read(&plan, world, run)?;
    Ok(match outcome.rows.columns.first() {
        Some(c) if outcome.rows.len == 1 => c.get(0),
        _ => Value::Null,
    })
}

/// A TICK's error once `kept` of its ticks stayed (the clock now at `clock`), saying so: a
/// failed tick with how many ran before it, an interrupt with what it kept and what it undid
/// (`ExecErrorKind::TickInterrupted`), unless it kept and undid nothing.
fn with_ticks_kept(mut e: Error, kept: u64, clock: u64, at: Location) -> Error {
    let undone = match &mut e {
        Error::Exec(ExecError {
            kind: ExecErrorKind::Interrupted,
            ..
        }) => None,
        Error::Schedule(ScheduleError::System { tick, source, .. })
            if matches!(
                **source,
                ScheduleError::Exec(ExecError {
                    kind: ExecErrorKind::Interrupted,
                    ..
                })
            ) =>
        {
            Some(*tick)
        }
        Error::Schedule(ScheduleError::System { kept: before, .. }) => {
            *before = kept;
            return e;
        }
        _ => return e,
    };
    if kept == 0 && undone.is_none() {
        return e;
    }
    Error::Exec(ExecError::new(
        at,
        ExecErrorKind::TickInterrupted { kept, clock, undone },
    ))
}

fn tick_count(v: Value, at: Location) -> Result<u64> {
    match v {
        Value::Int(n) if n >= 0 => Ok(n as u64),
        other => Err(ScheduleError::invalid(
            at,
            format!(
                "TICK takes a whole number of ticks (0 or more), not {}",
                other.describe()
            ),
        )
        .into()),
    }
}

fn seconds(v: Value, at: Location) -> Result<f64> {
    let dt = match v {
        Value::Int(n) => Some(n as f64),
        Value::Float(f) => Some(f),
        Value::Real(f) => Some(f64::from(f)),
        _ => None,
    };
    dt.filter(|dt| dt.is_finite() && *dt >= 0.0).ok_or_else(|| {
        ScheduleError::invalid(
            at,
            format!(
                "dt is a length of time in seconds (0 or more), not {}",
                v.describe()
            ),
        )
        .into()
    })
}
