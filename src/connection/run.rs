//! One statement's run: its plan, the change tracking it asks for, the read or write
//! lock it runs under, its event cursors, and a file database's journal around a write.
//!
//! Invariants:
//! - A read runs under the read lock; it takes the write lock only when it must turn on
//!   the tracking of a component's changes first (once per component).
//! - A write is journaled before it runs and flushed after, as `PRAGMA synchronous` says;
//!   one that panics under the lock abandons a file database (`AbandonOnPanic`).
//! - A prepared statement's cursors move past what it read only once it succeeded.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use parking_lot::Mutex;

use super::{Connection, durable, journal, save};
use crate::error::{BoxResult, Error};
use crate::exec::{Budget, Chunk, Clock, EventCursors, EventReads, ExecError, Outcome, Run, TableCache};
use crate::location::Location;
use crate::parse::{self, StatementKind};
use crate::plan::{self, ParamValues, Plan, PlanSlot};

impl Connection {
    /// This call's budget: its interrupt turn and the database's memory limit.
    pub(super) fn budget(&self) -> Budget<'_> {
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
    pub(super) fn run(
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

    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_of<'r>(
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

/// Puts a reader's cursors in the world `loads` LOADs made (`EventCursors::enter_world`);
/// returns that world.
pub(super) fn enter_world(reads: &mut Option<EventReads>, loads: u64) -> u64 {
    if let Some(reads) = reads {
        reads.from.enter_world(loads);
    }
    loads
}

/// What a run brings beyond its statement and parameters (`Connection::run`).
#[derive(Clone, Copy, Default)]
pub(super) struct RunContext<'a> {
    /// A prepared statement's table lists (a one-off run keeps its own).
    pub(super) cache: Option<&'a RefCell<TableCache>>,
    /// The slot a prepared statement keeps its plan in.
    pub(super) plans: Option<&'a RefCell<PlanSlot>>,
    /// A prepared statement's cursors.
    pub(super) reader: Option<&'a Arc<Mutex<EventCursors>>>,
    /// The statement's text as written (else it is printed back for the journal).
    pub(super) text: Option<&'a str>,
    /// The `random()` seed: a replayed statement's; else a fresh one.
    pub(super) seed: Option<u64>,
    /// The memory of the statement's last result, for a point read to write into.
    pub(super) spare: Option<&'a RefCell<Option<Chunk>>>,
    /// Run again from a file database's journal: journaled already.
    pub(super) replay: bool,
    /// A shape's statement (`cached::Text::Lifted`), whose parameters are the written
    /// text's constants: the journal keeps the text without them.
    pub(super) lifted: bool,
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
