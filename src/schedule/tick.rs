//! Running ticks: every enabled system once, in run order, inside one savepoint of the
//! world's undo log, so that a tick is all or nothing without copying the world.
//!
//! Invariants:
//! - A tick either completes (its changes, emitted events, cursor moves and the clock's
//!   advance all kept) or is undone whole: the world back to the savepoint, the clock and
//!   every system's state as they were. `TICK n` stops at a failing tick; the ticks before
//!   it stay.
//! - Each statement runs on the world as the statements before it left it, with a fresh
//!   budget (same interrupt, same memory limit) and a `random()` seed made from the
//!   system's name, the tick and the statement's position, so a run repeats exactly.
//! - A system's statements read the events past its cursors; when it has run, its
//!   cursors pass what any of them read. At the end of the tick an event type drops the
//!   rows every system reading it has seen, and those emitted `keep` ticks ago or more
//!   (counted as dropped unseen when some reader had not seen them).

// The clock that times each system (SHOW SYSTEM RUNS): the time-stamp counter, read in
// a few ns. Durations are taken saturating (`together.rs`).
use quanta::Instant;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::{Body, Schedule, ScheduleError, System, SystemDef};
use crate::exec::{self, Budget, Clock, EventReads, Outcome, Run, TableCache};
use crate::location::Location;
use crate::parse::Statement;
use crate::plan::{ParamValues, Plan, PlanSlot};
use crate::storage::{ComponentId, DEFAULT_KEEP, EventId, Value, World};

type Result<T> = std::result::Result<T, ScheduleError>;

/// A system written in Rust: it gets the world (the columnar door) and the tick's clock,
/// and returns an error to fail the tick.
pub type RustSystem = Box<
    dyn FnMut(&mut World, Clock) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> + Send,
>;

/// A Rust system's closure as the schedule keeps it, with the access it declared
/// (`Connection::create_system_with_access`), if it declared one.
pub struct RustClosure {
    pub run: RustSystem,
    pub access: Option<super::SystemAccess>,
}

impl RustClosure {
    /// A closure given the whole world: it runs alone.
    pub fn whole(run: RustSystem) -> RustClosure {
        RustClosure { run, access: None }
    }
}

/// What a TICK runs with besides the world.
#[derive(Debug)]
pub struct Env<'a> {
    /// The database's restore count, part of the plans' and table caches' keys.
    pub restores: u64,
    /// The TICK's budget: each statement gets a fresh one with its interrupt and limit.
    pub budget: &'a Budget<'a>,
    /// Where the TICK statement is.
    pub at: Location,
    /// How many threads the tick's systems may run on at the same time
    /// (`PRAGMA tick_threads`; 1: one after another).
    pub tick_threads: usize,
}

impl Schedule {
    /// Runs `count` ticks (after setting dt, when given), each atomic; stops at the first
    /// that fails. A TICK whose first tick fails leaves dt as it was too.
    pub fn run_ticks(
        &mut self,
        world: &mut World,
        count: u64,
        dt: Option<f64>,
        env: &Env<'_>,
    ) -> Result<u64> {
        self.run_ticks_keeping(world, count, dt, env, &mut |_| Ok(()))
    }

    /// `run_ticks`, with `keep` asked before each tick is kept, given the world's write
    /// tick when the tick began (a file database journals the tick there): when it says
    /// no, the tick is undone as a failing one is, and the run stops with its message.
    pub fn run_ticks_keeping(
        &mut self,
        world: &mut World,
        count: u64,
        dt: Option<f64>,
        env: &Env<'_>,
        keep: &mut dyn FnMut(u64) -> std::result::Result<(), String>,
    ) -> Result<u64> {
        let before = self.clock;
        if let Some(dt) = dt {
            self.clock.dt = dt;
        }
        for ran in 0..count {
            let result = env
                .budget
                .check(env.at)
                .map_err(ScheduleError::from)
                .and_then(|()| self.run_tick(world, env, keep));
            if let Err(e) = result {
                if ran == 0 {
                    self.clock = before;
                }
                return Err(e);
            }
        }
        Ok(count)
    }

    fn run_tick(
        &mut self,
        world: &mut World,
        env: &Env<'_>,
        keep: &mut dyn FnMut(u64) -> std::result::Result<(), String>,
    ) -> Result<()> {
        // Ticks are numbered as tick() gives them, up to INT's largest value.
        let Some(next) = self
            .clock
            .tick
            .checked_add(1)
            .filter(|&t| i64::try_from(t).is_ok())
        else {
            return Err(ScheduleError::invalid(
                env.at,
                format!(
                    "the clock is at tick {}, the last there is: PRAGMA tick = 0 starts it again",
                    self.clock.tick
                ),
            ));
        };
        let started = world.tick();
        let savepoint = world.savepoint();
        let clock = self.clock;
        let mut states = std::mem::take(&mut self.saved);
        states.clear();
        states.extend(self.systems.iter().map(|s| s.state.clone()));
        self.clock.tick = next;
        world.set_log_tick(next);
        let result = self
            .run_systems(world, env)
            .and_then(|()| self.drop_events(world))
            .and_then(|()| {
                keep(started)
                    .map_err(|m| ScheduleError::invalid(env.at, format!("the tick could not be kept: {m}")))
            });
        match result {
            Ok(()) => {
                world.release(savepoint);
                self.saved = states;
                Ok(())
            }
            Err(e) => {
                world.rollback_to(savepoint);
                self.clock = clock;
                world.set_log_tick(clock.tick);
                for (s, state) in self.systems.iter_mut().zip(states.drain(..)) {
                    s.state = state;
                }
                self.saved = states;
                Err(e)
            }
        }
    }

    pub(super) fn run_system(
        &mut self,
        i: usize,
        world: &mut World,
        env: &Env<'_>,
        stamp: &mut Instant,
    ) -> Result<()> {
        let clock = self.clock;
        // The system's parts borrowed apart: its definition is read while its state and
        // plans are written.
        let System {
            def,
            state,
            prepared,
            reads: last_reads,
            recent,
            name_hash,
        } = &mut self.systems[i];
        let def: &SystemDef = def;
        if !state.enabled || def.every.is_some_and(|n| !clock.tick.is_multiple_of(n)) {
            return Ok(());
        }
        let fail = |place: String, source: ScheduleError| ScheduleError::System {
            system: def.name.clone(),
            tick: clock.tick,
            // How many ticks of its TICK stay is known above a tick: `with_ticks_kept`.
            kept: 0,
            place,
            source: Box::new(source),
        };
        let seed = |k: usize| seed(*name_hash, clock.tick, k);
        let prepared = prepared.get_mut();
        if let Some(when) = &def.when {
            let reads = EventReads {
                from: state.cursors.clone(),
                ..EventReads::default()
            };
            let (outcome, _) = run_one(
                when,
                &mut prepared.when,
                &prepared.when_cache,
                world,
                env,
                clock,
                &reads,
                seed(0),
            )
            .map_err(|e| fail(" in its WHEN condition".into(), e))?;
            // Bound again after a change of the catalog, the condition may no longer be one.
            let ty = outcome
                .columns
                .first()
                .map_or(crate::plan::DataType::Null, |c| c.ty);
            if !matches!(ty, crate::plan::DataType::Bool | crate::plan::DataType::Null) {
                let wrong =
                    ScheduleError::invalid(when.at, format!("WHEN takes a condition (BOOL), found {ty}"));
                return Err(fail(" in its WHEN condition".into(), wrong));
            }
            let holds = outcome.rows.len > 0
                && outcome
                    .rows
                    .columns
                    .first()
                    .is_some_and(|c| c.get(0) == Value::Bool(true));
            if !holds {
                *stamp = Instant::now();
                return Ok(());
            }
        }
        let reads = EventReads {
            from: state.cursors.clone(),
            ..EventReads::default()
        };
        let mut rows = Some(0u64);
        match &def.body {
            Body::Sql(statements) => {
                let mut bound = false;
                for (k, statement) in statements.iter().enumerate() {
                    let (slot, cache) = (&mut prepared.slots[k], &prepared.caches[k]);
                    let (outcome, fresh) =
                        run_one(statement, slot, cache, world, env, clock, &reads, seed(k + 1)).map_err(
                            |e| fail(format!(" at statement {} ({})", k + 1, short(statement)), e),
                        )?;
                    rows = rows.map(|n| n + outcome.affected as u64);
                    bound |= fresh;
                }
                if bound {
                    *last_reads = prepared.reads();
                }
            }
            Body::Rust(f, _) => {
                rows = None;
                let mut f = f.lock();
                let Some(f) = f.as_mut() else {
                    return Err(fail(
                        String::new(),
                        ScheduleError::RustSystem(format!(
                            "it is a Rust system read from a file, whose closure this program has not registered (Connection::create_system or create_system_with_access with its name, in Database::open_with's set-up; or DROP SYSTEM {})",
                            def.name
                        )),
                    ));
                };
                let clock = clock.for_reader(state.cursors.changes_since());
                let result = catch_unwind(AssertUnwindSafe(|| f(world, clock)));
                // What a typed query it leaked still owes is paid before the next system.
                world.settle_pending();
                match result {
                    Ok(Ok(())) => {}
                    // A storage error (a view's `Undeclared` among them) keeps its type.
                    Ok(Err(e)) => {
                        let e = match e.downcast::<crate::storage::StorageError>() {
                            Ok(e) => ScheduleError::Storage(*e),
                            Err(e) => ScheduleError::RustSystem(e.to_string()),
                        };
                        return Err(fail(String::new(), e));
                    }
                    Err(panic) => {
                        let message = panic
                            .downcast_ref::<&str>()
                            .map(|s| (*s).to_owned())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "a panic".to_owned());
                        return Err(fail(
                            String::new(),
                            ScheduleError::RustSystem(format!("it panicked: {message}")),
                        ));
                    }
                }
            }
        }
        state.cursors.advance_all(&reads.reached.borrow());
        // The next run sees as changed what is written after this one.
        state.cursors.saw_changes_until(world.tick());
        let now = Instant::now();
        super::count_run(
            state,
            recent,
            clock.tick,
            now.saturating_duration_since(*stamp),
            rows,
        );
        *stamp = now;
        Ok(())
    }

    /// At the end of a tick: each event type drops the rows every system that reads it
    /// has seen, and those kept for `keep` ticks.
    fn drop_events(&self, world: &mut World) -> Result<()> {
        let tick = self.clock.tick;
        let ids: Vec<EventId> = world.events().filter(|e| !e.is_empty()).map(|e| e.id()).collect();
        for id in ids {
            let queue = world.event(id)?;
            let mut readers = self.readers(id).peekable();
            let seen_by_all = match readers.peek() {
                None => None,
                Some(_) => readers
                    .map(|r| queue.row_of(self.systems[r].state.cursors.get(id)))
                    .min(),
            };
            // Emitted in tick t, a row lives through tick t + keep.
            let expired = match tick.saturating_add(1).checked_sub(queue.keep()) {
                Some(cut) if cut > 0 => queue.emitted_before(cut),
                _ => 0,
            };
            let seen = seen_by_all.unwrap_or(0);
            let count = seen.max(expired);
            if count == 0 {
                continue;
            }
            let unseen = match seen_by_all {
                Some(seen) => (count - seen) as u64,
                None => 0,
            };
            world.drop_events(id, count, unseen)?;
        }
        // Removal logs likewise: what every system reading one has seen, and what is
        // older than the events' keep.
        let logs: Vec<ComponentId> = world
            .removal_logs()
            .filter(|(_, log)| !log.is_empty())
            .map(|(c, _)| c)
            .collect();
        for c in logs {
            let Some(log) = world.removal_log(c) else {
                continue;
            };
            let seen = self
                .removal_readers(c)
                .map(|r| log.logged_until(self.systems[r].state.cursors.changes_since()))
                .min()
                .unwrap_or(0);
            let expired = match tick.saturating_add(1).checked_sub(DEFAULT_KEEP) {
                Some(cut) if cut > 0 => log.logged_before_tick(cut),
                _ => 0,
            };
            let count = seen.max(expired);
            if count > 0 {
                world.drop_removals(c, count);
            }
        }
        Ok(())
    }

    /// `EXPLAIN TICK`: the phases in order, each system with its clauses, and each
    /// statement's plan as EXPLAIN prints it.
    pub fn explain_tick(&self, world: &World, restores: u64, budget: &Budget<'_>) -> Result<Vec<String>> {
        let enabled = self.systems.iter().filter(|s| s.state.enabled).count();
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        let mut lines = vec![format!(
            "Next tick: {}; {} ({enabled} enabled) in {}, dt = {} s",
            self.clock.tick + 1,
            plural(self.systems.len(), "system"),
            plural(self.phases.len(), "phase"),
            crate::vector::format_float(self.clock.dt)
        )];
        let accesses = self.accesses(world);
        let universe = super::conflicts::Universe::new(world, &accesses);
        let standings = super::conflicts::standings(&universe, &accesses);
        let mut waves: Vec<Vec<&str>> = Vec::new();
        for (access, standing) in accesses.iter().zip(&standings) {
            if let Some(w) = standing.wave {
                if waves.len() < w {
                    waves.resize_with(w, Vec::new);
                }
                waves[w - 1].push(&access.name);
            }
        }
        if !waves.is_empty() {
            let waves: Vec<String> = waves.iter().map(|w| w.join(", ")).collect();
            lines.push(format!("May run at the same time: {}", waves.join("; then ")));
        }
        let mut position = 0;
        for phase in &self.phases {
            lines.push(format!("Phase {phase}"));
            for &i in &self.order {
                let s = &self.systems[i];
                if s.def.phase != *phase {
                    continue;
                }
                position += 1;
                let mut notes = Vec::new();
                if !s.state.enabled {
                    notes.push("disabled".to_owned());
                }
                if let Some(n) = s.def.every {
                    notes.push(format!("every {n} ticks"));
                }
                if let Some(when) = &s.def.when_text {
                    notes.push(format!("when {when}"));
                }
                let notes = if notes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", notes.join(", "))
                };
                lines.push(format!("  {position}. {}{notes}", s.def.name));
                for (earlier, why) in &standings[position - 1].waits {
                    lines.push(format!("    waits for {}: {why}", accesses[*earlier].name));
                }
                match &s.def.body {
                    Body::Rust(_, declared) => lines.push(match declared.lock().as_ref() {
                        Some(access) => format!("    a Rust closure, given {}", access.describe()),
                        None => "    a Rust closure, given the world".to_owned(),
                    }),
                    Body::Sql(statements) => {
                        for statement in statements {
                            lines.push(format!("    {statement}"));
                            let plan = match crate::plan::plan_to_explain(statement, world) {
                                Ok(plan) => plan,
                                Err(e) => {
                                    lines.push(format!("      does not bind, so the next TICK fails: {e}"));
                                    continue;
                                }
                            };
                            let explained = Plan::Explain(Box::new(plan));
                            let cache = std::cell::RefCell::new(TableCache::default());
                            let params = ParamValues::default();
                            let budget = budget.fresh();
                            let run = Run {
                                cache: &cache,
                                restores,
                                at: statement.at,
                                params: &params,
                                budget: &budget,
                                clock: self.clock,
                                events: None,
                                seed: Some(0),
                                spare: None,
                                profile: None,
                                input: None,
                            };
                            let outcome = exec::run_read(&explained, world, run)?;
                            if let Some(column) = outcome.rows.columns.first() {
                                for row in 0..outcome.rows.len {
                                    if let Value::Text(t) = column.get(row) {
                                        lines.push(format!("      {t}"));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        Ok(lines)
    }
}

/// Runs one statement of a system: its kept plan (bound again when the catalog changed),
/// its table cache, the tick's clock, the system's event cursors. Also says whether it
/// was bound just now.
#[allow(clippy::too_many_arguments)]
fn run_one(
    statement: &Statement,
    slot: &mut PlanSlot,
    cache: &std::cell::RefCell<TableCache>,
    world: &mut World,
    env: &Env<'_>,
    clock: Clock,
    reads: &EventReads,
    seed: u64,
) -> Result<(Outcome, bool)> {
    let params = &NO_PARAMS;
    let budget = env.budget.fresh();
    let (plan, bound) = slot.plan(statement, world, env.restores, params)?;
    // Asking about changes of a component turns their tracking on, before the first run
    // (nothing to journal: the TICK that runs the system is).
    exec::start_tracking(plan.tracks(), world, statement.at, |_, _| {})?;
    let run = system_run(statement, cache, env, clock, reads, seed, (params, &budget));
    Ok((exec::run_write(&plan, world, run)?, bound))
}

/// A system statement's parameters: none (one list for every run, made and dropped by
/// none of them).
pub(super) static NO_PARAMS: ParamValues = ParamValues {
    positional: Vec::new(),
    named: Vec::new(),
    lenient: false,
};

/// The run of a system's statement in a tick: its table cache, the tick's clock, the
/// system's event cursors, its `random()` seed, and the (no) parameters and the budget
/// made for it; whether it runs alone (`run_one`) or computes beside others
/// (`together.rs`).
pub(super) fn system_run<'r>(
    statement: &Statement,
    cache: &'r std::cell::RefCell<TableCache>,
    env: &Env<'_>,
    clock: Clock,
    reads: &'r EventReads,
    seed: u64,
    (params, budget): (&'r ParamValues, &'r Budget<'r>),
) -> Run<'r> {
    Run {
        cache,
        restores: env.restores,
        at: statement.at,
        params,
        budget,
        clock,
        events: Some(reads),
        seed: Some(seed),
        spare: None,
        profile: None,
        input: None,
    }
}

/// A system's name hashed, as `seed` starts from it: case does not count, as in names.
pub(super) fn name_hash(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The `random()` seed of statement `k` of the system whose name hashes to `name_hash`
/// (`name_hash`) in tick `tick`: the same every run, different for every statement and
/// tick.
pub(super) fn seed(name_hash: u64, tick: u64, k: usize) -> u64 {
    let h = name_hash;
    let mut z = h ^ tick.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (k as u64).rotate_left(32);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A statement's text for an error message, cut at 80 characters.
pub(super) fn short(statement: &Statement) -> String {
    let text = statement.to_string();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn seeds_differ_by_statement_tick_and_system() {
        let seed = |name: &str, tick, k| super::seed(super::name_hash(name), tick, k);
        let s = seed("gravity", 1, 1);
        assert_eq!(s, seed("GRAVITY", 1, 1));
        assert_ne!(s, seed("gravity", 2, 1));
        assert_ne!(s, seed("gravity", 1, 2));
        assert_ne!(s, seed("movement", 1, 1));
    }
}
