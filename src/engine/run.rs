//! One statement's run: its plan, the change tracking it asks for, the read or write
//! lock it runs under, its event cursors, and a file database's journal around a write.
//!
//! Invariants:
//! - A read whose kept plan names the fields it reads holds just those (`beside.rs`)
//!   when it can, and reads under the read lock beside UPDATEs of other fields; any other
//!   read holds the whole database.
//! - Every statement is planned once per run, and walks down once: a read under the read
//!   lock; a reader whose plan may ask for change tracking under the upgradable lock,
//!   which becomes the read lock when the tracking is on, or the write lock that turns it
//!   on (once per component). A reader plans there only until its slot was first bound
//!   (`PlanSlot::may_track`); after, only a catalog change that makes its plan ask for
//!   tracking not on sends a read from the read lock to the upgradable one.
//! - The same steps run a system's statement in a tick (`schedule::tick`): the plan from
//!   its slot, `exec::start_tracking`, and `exec::run_write`, which answers a point read
//!   from its table (the one place that does).
//! - A write is journaled before it runs and flushed after, as `PRAGMA synchronous` says;
//!   one that panics under the lock abandons a file database (`AbandonOnPanic`).
//! - A prepared statement's cursors move past what it read only once it succeeded.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use parking_lot::Mutex;

use super::{Client, State, durable, journal, save};
use crate::error::{BoxResult, Error};
use crate::exec::{Budget, Chunk, Clock, EventCursors, EventReads, Outcome, Run, TableCache};
use crate::location::Location;
use crate::parse::{self, StatementKind};
use crate::plan::{self, ParamValues, Plan, PlanSlot};

impl Client {
    /// This call's budget: its interrupt turn (and timeout) and the database's memory
    /// limit (or the client's, when lower).
    pub(super) fn budget(&self) -> Budget<'_> {
        let limit = self
            .engine
            .memory_limit
            .load(Ordering::Relaxed)
            .min(self.memory_cap.load(Ordering::Relaxed));
        let budget = Budget::new(limit)
            .with_split(crate::exec::Split {
                threads: self.threads(),
                min_rows: self.min_parallel_rows(),
            })
            .with_recursion_limit(self.engine.recursion_limit.load(Ordering::Relaxed));
        match self.interrupt.running_turn() {
            0 => budget,
            turn => {
                let budget = budget.interruptible(&self.interrupt.target, turn);
                match self.interrupt.timeout() {
                    Some(after) => budget.timing_out(&self.interrupt.timed_out, after),
                    None => budget,
                }
            }
        }
    }

    /// Runs one statement, as `with` says (a prepared statement's plan, cache and cursors,
    /// which move past what it read once it succeeded; a replayed statement's seed). A
    /// file database journals a write before it runs and flushes it after, as
    /// `PRAGMA synchronous` says.
    pub(super) fn run(
        &self,
        statement: &parse::Statement,
        params: &ParamValues,
        with: RunContext<'_>,
    ) -> BoxResult<Outcome> {
        let at = statement.at;
        if !statement.kind.is_control() {
            self.mark_queried();
        }
        if statement.kind.writes() {
            self.before_write(statement.kind.verb(), at)?;
        }
        if let Some(done) = self.run_apart(statement, params, with)? {
            return Ok(done);
        }
        let own_cache;
        let cache = match with.cache {
            Some(cache) => cache,
            None => {
                own_cache = RefCell::default();
                &own_cache
            }
        };
        let budget = self.budget();
        budget.check(at).map_err(Error::from)?;
        let step = Step {
            statement,
            params,
            with,
            cache,
            budget: &budget,
        };
        if statement.kind.is_read_only() {
            return self.read(&step);
        }
        let outcome = self.write(&step)?;
        if matches!(statement.kind, StatementKind::Spawn { .. }) {
            self.spawned(&outcome);
        }
        Ok(outcome)
    }

    /// Runs the statements that are not planned (transactions, settings, SAVE and LOAD,
    /// the schedule's) or are refused here; `None` for the rest, which `run` plans. Apart
    /// from `run`, so that their arms' locals do not widen its frame, which every planned
    /// statement's run goes through.
    #[inline(never)]
    fn run_apart(
        &self,
        statement: &parse::Statement,
        params: &ParamValues,
        with: RunContext<'_>,
    ) -> BoxResult<Option<Outcome>> {
        let at = statement.at;
        match &statement.kind {
            StatementKind::Begin(modes) => Ok(Some(self.begin(*modes, at)?)),
            StatementKind::Pragma { name, value } => {
                let (name, name_at) = (
                    name.as_ref().map(|n| n.value.as_str()),
                    name.as_ref().map_or(at, |n| n.at),
                );
                Ok(Some(self.pragma(name, value.as_deref(), name_at, with.replay)?))
            }
            StatementKind::SetVariable { name, value, local } => {
                Ok(Some(self.set_variable(&name.value, value.as_deref(), *local, name.at, with.replay)?))
            }
            StatementKind::ShowVariable { name } => {
                let (name, name_at) = (
                    name.as_ref().map(|n| n.value.as_str()),
                    name.as_ref().map_or(at, |n| n.at),
                );
                Ok(Some(self.show_variable(name, name_at, with.replay)?))
            }
            StatementKind::Save { path } => Ok(Some(self.save(&save::file_name(path, params, at)?, at)?)),
            StatementKind::Load { path } => Ok(Some(self.load(&save::file_name(path, params, at)?, at)?)),
            StatementKind::Checkpoint => Ok(Some(self.checkpoint_statement(at)?)),
            StatementKind::CopySubscribe { .. } => {
                Err(Box::new(Error::Misuse {
                    message: "COPY (SUBSCRIBE …) TO STDOUT streams a live query to a client of ecsql serve: here, subscribe with SUBSCRIBE (the shell) or Connection::subscribe".to_owned(),
                    at,
                }))
            }
            StatementKind::Subscribe(_) => {
                Err(Box::new(Error::Misuse {
                    message: "SUBSCRIBE opens a live query, which a statement's run cannot hand back: open it with Connection::subscribe (the shell runs SUBSCRIBE and .subscribe itself)".to_owned(),
                    at,
                }))
            }
            kind if kind.is_schedule() => Ok(Some(self.run_schedule(statement, params, with)?)),
            StatementKind::Commit | StatementKind::Rollback => {
                Ok(Some(self.end(matches!(statement.kind, StatementKind::Rollback), at)?))
            }
            _ => Ok(None),
        }
    }

    /// Keeps the last entity a SPAWN made (the last row of its ids), for
    /// `Connection::last_spawned`.
    fn spawned(&self, outcome: &Outcome) {
        let last = outcome
            .rows
            .len
            .checked_sub(1)
            .and_then(|i| match outcome.rows.columns.first() {
                Some(ids) => match ids.get(i) {
                    crate::storage::Value::Entity(e) => Some(e),
                    _ => None,
                },
                None => None,
            });
        if let Some(e) = last {
            self.last_spawned.store(e.to_bits(), Ordering::Relaxed);
        }
    }

    /// Runs a read: planned once, under the read lock; a reader whose plan may ask for
    /// change tracking the world does not keep yet plans under the upgradable lock, which
    /// becomes the read lock when every tracking asked for is on, else the write lock
    /// that turns it on (once per component). The plan is made once either way.
    fn read(&self, step: &Step<'_>) -> BoxResult<Outcome> {
        let at = step.statement.at;
        let may_track =
            step.with.reader.is_some() && step.with.plans.is_some_and(|slot| slot.borrow().may_track());
        if !may_track && let Some((_held, fields)) = self.hold_reads(step) {
            // Only the fields it reads held (`beside.rs`): under the read lock, beside
            // UPDATEs of others, while its kept plan still reads just those.
            let lock = &self.engine.state;
            let state = self.acquire(at, || lock.try_read(), |wait| lock.try_read_for(wait))?;
            let mut slot = step.with.plans.map(RefCell::borrow_mut);
            drop(state.planned(slot.as_deref_mut(), step.statement, step.params)?);
            if slot.as_ref().and_then(|s| s.staged()) == Some(&fields) {
                let plan = state.planned(slot.as_deref_mut(), step.statement, step.params)?;
                if tracking_to_start(&plan, step.with.reader.is_some()).is_empty() {
                    // Dropped in reverse order: the lock is given back before the fields.
                    return self.read_planned(&state, &plan, step);
                }
            }
        }
        if !may_track {
            let state = self.read_state(at)?;
            let mut slot = step.with.plans.map(RefCell::borrow_mut);
            let plan = state.planned(slot.as_deref_mut(), step.statement, step.params)?;
            let tracked = tracking_to_start(&plan, step.with.reader.is_some());
            if tracked.iter().all(|t| t.is_on(&state.world)) {
                return self.read_planned(&state, &plan, step);
            }
            // The catalog moved since the kept plan, which now asks for tracking: the
            // run starts again under the upgradable lock (once per such change).
        }
        let state = self.upgradable_state(at)?;
        let mut slot = step.with.plans.map(RefCell::borrow_mut);
        let plan = state.planned(slot.as_deref_mut(), step.statement, step.params)?;
        let tracked = tracking_to_start(&plan, step.with.reader.is_some());
        if tracked.iter().all(|t| t.is_on(&state.world)) {
            let state = state.downgrade();
            return self.read_planned(&state, &plan, step);
        }
        let mut state = self.upgrade(state, at)?;
        let _abandon = AbandonOnPanic(self.file(), WRITE_PANICKED);
        let state = &mut *state;
        self.start_tracking(state, tracked, at, step.with.replay)?;
        self.read_planned(state, &plan, step)
    }

    /// Runs a planned read on `state`, whatever lock holds it, and moves a reader's
    /// cursors past what it read. A point read (one entity by its id) is answered from
    /// its table by `exec::run_read`, the one place that knows it.
    fn read_planned(&self, state: &State, plan: &plan::Planned<'_>, step: &Step<'_>) -> BoxResult<Outcome> {
        let reader = step.with.reader;
        // A plan that reads no events and asks nothing about changes neither reads the
        // reader's cursors nor moves them.
        let mut reads = cursors_of(reader.filter(|_| plan.reads_cursors()));
        let world = enter_world(&mut reads, state.loads);
        let run = Run {
            seed: step.with.seed,
            spare: step.with.spare,
            ..self.run_of(step, state.restores, state.schedule.clock(), reads.as_ref())
        };
        let outcome = crate::exec::run_read(plan, &state.world, run).map_err(Error::from)?;
        if let (Some(cursors), Some(reads)) = (reader, reads) {
            let asks_changes = !tracking_to_start(plan, true).is_empty();
            let changes = asks_changes.then_some(state.world.tick());
            self.advance_reader(cursors, &reads.reached.into_inner(), changes, world);
        }
        Ok(outcome)
    }

    /// Runs a write under the write lock: planned, the tracking a reader asks for turned
    /// on, journaled before it runs (a file database) and flushed after.
    /// An UPDATE that can compute its values apart from writing them computes beside
    /// the others when someone else holds the lock (`beside.rs`).
    fn write(&self, step: &Step<'_>) -> BoxResult<Outcome> {
        let at = step.statement.at;
        self.refuse_in_setup(step.statement.kind.verb(), at)?;
        if let Some(ran) = self.write_beside(step) {
            return ran;
        }
        self.write_under(step, self.write_state(at)?)
    }

    /// Runs a write under the write lock `guard` holds.
    pub(super) fn write_under(
        &self,
        step: &Step<'_>,
        mut guard: super::live::Writing<'_>,
    ) -> BoxResult<Outcome> {
        let (statement, params, with) = (step.statement, step.params, step.with);
        let at = statement.at;
        let abandon = AbandonOnPanic(self.file(), WRITE_PANICKED);
        let state = &mut *guard;
        let mut slot = with.plans.map(RefCell::borrow_mut);
        let plan = state.planned(slot.as_deref_mut(), statement, params)?;
        // As for a read: a plan that reads no events and asks nothing about changes
        // neither reads the reader's cursors nor moves them (nor needs them journaled).
        let mut reads = cursors_of(with.reader.filter(|_| plan.reads_cursors()));
        let world = enter_world(&mut reads, state.loads);
        let run = self.run_of(step, state.restores, state.schedule.clock(), reads.as_ref());
        let tracked = tracking_to_start(&plan, with.reader.is_some());
        self.start_tracking(state, tracked, at, with.replay)?;
        let (ran, written) = if matches!(statement.kind, StatementKind::ExplainAnalyze { keep: false, .. }) {
            // Its write is undone when it has run: nothing to journal (with KEEP it is
            // journaled as any write, and replayed as one).
            (crate::exec::run_write(&plan, &mut state.world, run), None)
        } else if matches!(statement.kind, StatementKind::CopyFrom { .. }) {
            // What a file gave cannot be journaled as a statement (the file may change):
            // a file database keeps it by a checkpoint, as LOAD's.
            let ran = crate::exec::run_write(&plan, &mut state.world, run);
            if ran.is_ok() {
                self.unjournaled(state);
            }
            (ran, None)
        } else {
            let seed = with.seed.unwrap_or_else(crate::exec::fresh_seed);
            let tick = state.world.tick();
            let ahead = self.journal_ahead(state, with.replay, || {
                step.entry(seed, tick, reads.as_ref().map(|r| r.from.clone()))
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
        let outcome = ran.map_err(Error::from)?;
        if let (Some(cursors), Some(reads)) = (with.reader, reads) {
            let changes = (!tracked.is_empty()).then_some(state.world.tick());
            self.advance_reader(cursors, &reads.reached.into_inner(), changes, world);
        }
        // Flushing and checkpointing take the lock of their own.
        drop((slot, abandon, guard));
        self.make_durable(written, at)?;
        if matches!(statement.kind, StatementKind::CopyFrom { .. }) {
            self.keep_unjournaled(at)?;
        }
        Ok(outcome)
    }

    /// Turns on the tracking a reader's plan asks for (`exec::start_tracking`), each
    /// start journaled by a file database, those started before a failing one included.
    fn start_tracking(
        &self,
        state: &mut State,
        tracked: &[plan::Tracking],
        at: Location,
        replay: bool,
    ) -> BoxResult<()> {
        // Most plans ask for none: nothing to look at or journal.
        if tracked.is_empty() {
            return Ok(());
        }
        let mut started = Vec::new();
        let begun = crate::exec::start_tracking(tracked, &mut state.world, at, |asked, tick| {
            started.push((asked, tick));
        });
        for (asked, tick) in started {
            self.journal_tracking(state, replay, asked, tick);
        }
        Ok(begun.map_err(Error::from)?)
    }

    /// The run of `step` on a world of `restores` rollbacks at `clock`, reading `events`.
    pub(super) fn run_of<'r>(
        &self,
        step: &Step<'r>,
        restores: u64,
        clock: Clock,
        events: Option<&'r EventReads>,
    ) -> Run<'r> {
        Run {
            cache: step.cache,
            restores,
            at: step.statement.at,
            params: step.params,
            budget: step.budget,
            clock,
            events,
            seed: None,
            spare: None,
            profile: None,
            input: step.with.input,
        }
    }

    /// A prepared statement read events up to `reached`, and changes until write tick
    /// `changes` (when it asks about changes): its cursors move there. Inside a
    /// transaction, where they stood before is kept for ROLLBACK (once per statement).
    pub(super) fn advance_reader(
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
}

/// What a run of `plan` must have tracked (changes, removals): a reader's (a prepared
/// statement's, whose next run sees what changed after this one). Any other statement,
/// and EXPLAIN, sees every row as changed and every removal still logged, and turns no
/// tracking on.
pub(super) fn tracking_to_start<'p>(plan: &'p plan::Planned<'_>, reader: bool) -> &'p [plan::Tracking] {
    match &**plan {
        Plan::Explain(_) => &[],
        _ if reader => plan.tracks(),
        _ => &[],
    }
}

/// A reader's cursors as they stand, for a run that reads past them.
fn cursors_of(reader: Option<&Arc<Mutex<EventCursors>>>) -> Option<EventReads> {
    reader.map(|cursors| EventReads {
        from: cursors.lock().clone(),
        ..EventReads::default()
    })
}

/// One statement's run as `Client::run` hands it on: the statement, its values, what
/// the run brings, and the table lists and budget made for it.
pub(super) struct Step<'a> {
    pub(super) statement: &'a parse::Statement,
    pub(super) params: &'a ParamValues,
    pub(super) with: RunContext<'a>,
    cache: &'a RefCell<TableCache>,
    budget: &'a Budget<'a>,
}

impl Step<'_> {
    /// The journal's record of this statement, run with `seed` at write tick `tick`,
    /// reading events from the cursors `reader` when it reads any.
    pub(super) fn entry(&self, seed: u64, tick: u64, reader: Option<EventCursors>) -> journal::Entry {
        journal::Entry {
            text: self
                .with
                .text
                .map_or_else(|| self.statement.to_string(), str::to_owned),
            params: self.params.clone(),
            seed,
            tick,
            reader,
            rust_systems: Vec::new(),
        }
    }
}

/// Puts a reader's cursors in the world `loads` LOADs made (`EventCursors::enter_world`);
/// returns that world.
pub(super) fn enter_world(reads: &mut Option<EventReads>, loads: u64) -> u64 {
    if let Some(reads) = reads {
        reads.from.enter_world(loads);
    }
    loads
}

/// What a run brings beyond its statement and parameters (`Client::run`).
#[derive(Clone, Copy, Default)]
pub(super) struct RunContext<'a> {
    /// A prepared statement's table lists (a one-off run keeps its own).
    pub(super) cache: Option<&'a RefCell<TableCache>>,
    /// The slot a prepared statement keeps its plan in.
    pub(super) plans: Option<&'a RefCell<PlanSlot>>,
    /// A prepared statement's cursors.
    pub(super) reader: Option<&'a Arc<Mutex<EventCursors>>>,
    /// The text the journal keeps for the statement: as written, or a shared shape's
    /// statement with its parameters (else the statement is printed back).
    pub(super) text: Option<&'a str>,
    /// The `random()` seed: a replayed statement's; else a fresh one.
    pub(super) seed: Option<u64>,
    /// The memory of the caller's last result (a prepared statement's, or `query_row`'s
    /// last text's), for a point read to write into.
    pub(super) spare: Option<&'a RefCell<Option<Chunk>>>,
    /// Run again from a file database's journal: journaled already.
    pub(super) replay: bool,
    /// The rows a server's client sent with `COPY … FROM STDIN`.
    pub(super) input: Option<&'a [u8]>,
}

impl<'a> RunContext<'a> {
    /// A prepared statement's run: its table lists, plan slot and cursors, its text as
    /// written (for a file database's journal), and its last result's memory.
    pub(super) fn prepared(
        cache: &'a RefCell<TableCache>,
        plans: &'a RefCell<PlanSlot>,
        reader: &'a Arc<Mutex<EventCursors>>,
        text: &'a str,
        spare: &'a RefCell<Option<Chunk>>,
    ) -> RunContext<'a> {
        RunContext {
            cache: Some(cache),
            plans: Some(plans),
            reader: Some(reader),
            text: Some(text),
            spare: Some(spare),
            ..RunContext::default()
        }
    }
}

/// Dropped while a panic unwinds through what holds it (a closure given to
/// `with_world_mut`, a write under the database's lock) on a file database: abandons the
/// database, whose memory may hold a part of a write its file never will (`why`).
pub(super) struct AbandonOnPanic<'f>(pub(super) Option<&'f durable::FileDb>, pub(super) &'static str);

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
pub(super) const WRITE_PANICKED: &str =
    "a statement panicked as it wrote (a fault of ecsql's: please report it)";
