//! Systems run at the same time, with the serial tick's result. A group is a run of
//! consecutive systems (in run order) whose bodies are one UPDATE of one entity scan, or
//! Rust closures that declared their access, and that pairwise do not conflict
//! (`conflicts.rs`): each UPDATE computes what it writes against the world as the group
//! found it, on ecsql's threads, and then, on the tick's thread, in run order, each
//! writes it, and each Rust system runs in its turn.
//!
//! Invariants:
//! - Writing in run order is the serial tick: a system of the group reads nothing another
//!   one of it writes, so what it computed is what it would compute after them; write
//!   ticks, change marks, undo records, index updates and its cursors' moves then happen
//!   in the serial order, on one thread.
//! - The first failing system in run order is the one reported: errors are kept until
//!   their system's turn to write, and a system whose plan is not ready (bound just now
//!   asking for tracking that is off) runs in its turn, as the serial tick runs it.
//! - A group runs together only when its systems' rows are worth it (at least
//!   `min_parallel_rows` in all), two threads or more are allowed (`PRAGMA tick_threads`)
//!   on a machine of two cores or more, their staged values fit the memory limit together
//!   (one after another, an UPDATE that cannot fail holds none), and no system before it
//!   in the tick changed the catalog; else its systems run one after another, as any
//!   other system does.
//! - Groups are found when the schedule, the catalog or the tables change, not each tick.

// Every duration is taken saturating: quanta says a later version may panic when a
// reading is earlier than the one it is measured from.
use quanta::Instant;
use std::ops::Range;
use std::time::Duration;

use super::conflicts::{Access, Universe};
use super::{Body, Schedule, System};
use crate::exec::{self, Clock, EventReads, Staged};
use crate::storage::{TableId, World};

type Result<T> = std::result::Result<T, super::ScheduleError>;

/// The groups of one schedule and world, and what they were found for.
#[derive(Debug, Default)]
pub(crate) struct Groups {
    key: Option<GroupKey>,
    groups: Vec<Group>,
}

/// Systems that may run together: their positions in run order, and for each, the tables
/// its scans reach and the fields it writes (to weigh, each tick, the rows it computes and
/// the memory its staged values hold).
#[derive(Clone, Debug)]
struct Group {
    positions: Range<usize>,
    systems: Vec<(Vec<TableId>, usize)>,
}

#[derive(Debug, PartialEq)]
struct GroupKey {
    schema: u64,
    tables: usize,
    order: Vec<usize>,
    /// Each system's definition and whether it is enabled.
    systems: Vec<(u64, bool)>,
    restores: u64,
}

/// What one system of a group computed.
enum Computed {
    Staged(Staged),
    /// Its plan must run as the serial tick runs it (bound just now and asking for
    /// tracking that is off, or no longer an UPDATE of one scan).
    InTurn,
}

impl Schedule {
    /// The groups of systems that may run together in this tick: found again when the
    /// schedule, the catalog or the tables changed since they were last found.
    fn groups(&mut self, world: &World, restores: u64) -> &[Group] {
        // Compared in place: a tick of small systems should not pay for a new key.
        let same = self.groups.key.as_ref().is_some_and(|k| {
            k.schema == world.schema_stamp()
                && k.tables == world.table_count()
                && k.restores == restores
                && k.order == self.order
                && k.systems.len() == self.systems.len()
                && k.systems
                    .iter()
                    .zip(&self.systems)
                    .all(|(&(id, enabled), s)| id == s.def.id && enabled == s.state.enabled)
        });
        if !same {
            self.groups.groups = self.find_groups(world);
            self.groups.key = Some(GroupKey {
                schema: world.schema_stamp(),
                tables: world.table_count(),
                order: self.order.clone(),
                systems: self.systems.iter().map(|s| (s.def.id, s.state.enabled)).collect(),
                restores,
            });
        }
        &self.groups.groups
    }

    fn find_groups(&self, world: &World) -> Vec<Group> {
        let accesses = self.accesses(world);
        let universe = Universe::new(world, &accesses);
        let eligible: Vec<bool> = self
            .order
            .iter()
            .zip(&accesses)
            .map(|(&i, a)| Self::may_stage(&self.systems[i], a))
            .collect();
        let mut groups = Vec::new();
        let mut start = 0;
        while start < accesses.len() {
            if !eligible[start] {
                start += 1;
                continue;
            }
            let mut end = start + 1;
            while end < accesses.len()
                && eligible[end]
                && (start..end).all(|k| universe.conflict(&accesses[k], &accesses[end]).is_none())
            {
                end += 1;
            }
            // Two UPDATEs at least, or nothing computes beside anything.
            if accesses[start..end].iter().filter(|a| a.one_update).count() >= 2 {
                let systems = accesses[start..end]
                    .iter()
                    .map(|a| {
                        let mut tables: Vec<TableId> = Vec::new();
                        for scan in &a.footprint.scans {
                            for t in world.tables() {
                                if scan.admit(t.components()) && !tables.contains(&t.id()) {
                                    tables.push(t.id());
                                }
                            }
                        }
                        // A Rust system stages nothing: it holds no memory between.
                        let staged = if a.one_update { a.footprint.writes.len() } else { 0 };
                        (tables, staged)
                    })
                    .collect();
                groups.push(Group {
                    positions: start..end,
                    systems,
                });
            }
            start = end;
        }
        groups
    }

    /// Whether `s` may be one of a group: an enabled SQL system of one UPDATE of one
    /// entity scan, which can compute what it writes apart from writing it, or a Rust
    /// system that declared its access, which runs in its turn (on the tick's thread, as
    /// the others of the group write); either with no WHEN and no EVERY, reading no
    /// events and no removal log, and making, ending or moving no entity.
    fn may_stage(s: &System, access: &Access) -> bool {
        let f = &access.footprint;
        let declared_rust = s.def.when.is_none()
            && matches!(&s.def.body, Body::Rust(_, declared) if declared.lock().is_some());
        (access.one_update || declared_rust)
            && access.enabled
            && access.alone.is_none()
            && s.def.every.is_none()
            && f.events_read.is_empty()
            && f.removals_read.is_empty()
            && f.moves.is_none()
    }

    /// Runs every system of the tick: the groups whose rows are worth it together, the
    /// others one after another.
    pub(super) fn run_systems(&mut self, world: &mut World, env: &super::Env<'_>) -> Result<()> {
        // One clock read per system that runs: each one's time runs from the end of the
        // one before (its WHEN and the checks of systems skipped in between included).
        if self.order.is_empty() {
            return Ok(());
        }
        let min_rows = env.budget.split().min_rows;
        let limit = env.budget.limit();
        let schema = world.schema_stamp();
        // The groups whose rows are worth starting threads for, this tick, and whose
        // staged values fit the memory limit together (one after another, an UPDATE that
        // cannot fail writes as it computes and holds none).
        let mut together: Vec<Range<usize>> = Vec::new();
        // No group computes more rows than every system reading every entity: below the
        // threshold, small ticks pay nothing to look.
        let most_rows = world.len().saturating_mul(self.order.len());
        if env.tick_threads >= 2 && exec::cores() >= 2 && most_rows >= min_rows {
            for group in self.groups(world, env.restores) {
                let (mut rows, mut bytes) = (0usize, 0usize);
                for (tables, fields) in &group.systems {
                    let r: usize = tables
                        .iter()
                        .filter_map(|&t| world.table(t).map(|t| t.len()))
                        .sum();
                    rows = rows.saturating_add(r);
                    // A staged value is charged 16 bytes, and its column's room as much again.
                    bytes = bytes.saturating_add(r.saturating_mul(*fields).saturating_mul(32));
                }
                if rows >= min_rows && bytes <= limit {
                    together.push(group.positions.clone());
                }
            }
        }
        let mut stamp = Instant::now();
        let mut position = 0;
        let mut together = together.into_iter().peekable();
        while position < self.order.len() {
            // A system of this tick that changed the catalog (a Rust closure may) leaves
            // the groups found before it unproven: the rest run one after another.
            if let Some(range) = together.next_if(|r| r.start == position)
                && world.schema_stamp() == schema
            {
                position = range.end;
                self.run_together(range, world, env, &mut stamp)?;
                continue;
            }
            let i = self.order[position];
            self.run_system(i, world, env, &mut stamp)?;
            position += 1;
        }
        Ok(())
    }

    /// Runs the systems at positions `range` of the run order: each computes what it
    /// writes at the same time as the others, then each writes it, in run order.
    fn run_together(
        &mut self,
        range: Range<usize>,
        world: &mut World,
        env: &super::Env<'_>,
        stamp: &mut Instant,
    ) -> Result<()> {
        let clock = self.clock;
        let positions: Vec<usize> = range.collect();
        let computed: Vec<(Result<Computed>, Duration)> = {
            let world: &World = world;
            let systems = &self.systems;
            let order = &self.order;
            // As many stretches of the group as `tick_threads` allows, each computed in
            // run order by one thread.
            let per_thread = positions.len().div_ceil(env.tick_threads.max(1));
            let stretches: Vec<&[usize]> = positions.chunks(per_thread.max(1)).collect();
            let ran = exec::in_parallel(stretches, env.at, |stretch| {
                stretch
                    .iter()
                    .map(|&position| {
                        let began = Instant::now();
                        let computed = compute(&systems[order[position]], world, env, clock);
                        (computed, Instant::now().saturating_duration_since(began))
                    })
                    .collect::<Vec<_>>()
            });
            // A thread that panicked is the group's first system's failure (which one it
            // was running is not known).
            match ran {
                Ok(ran) => ran.into_iter().flatten().collect(),
                Err(e) => return Err(self.failed(self.order[positions[0]], super::ScheduleError::Exec(e))),
            }
        };
        for (position, (computed, computing)) in positions.into_iter().zip(computed) {
            let i = self.order[position];
            let staged = match computed {
                Ok(Computed::Staged(staged)) => staged,
                Ok(Computed::InTurn) => {
                    *stamp = Instant::now();
                    self.run_system(i, world, env, stamp)?;
                    continue;
                }
                Err(e) => return Err(self.failed(i, e)),
            };
            let at = self.systems[i].def_statement_at();
            let writing = Instant::now();
            let written = exec::write_staged(staged, world, at).map_err(|e| self.failed(i, e.into()))?;
            let tick = self.clock.tick;
            let System {
                state,
                reads,
                prepared,
                recent,
                ..
            } = &mut self.systems[i];
            *reads = prepared.get_mut().reads();
            // The next run sees as changed what is written after this one.
            state.cursors.saw_changes_until(world.tick());
            state.together += 1;
            // Its time: what it took to compute, on its thread, and to write.
            let time = computing + Instant::now().saturating_duration_since(writing);
            super::count_run(state, recent, tick, time, Some(written.affected as u64));
        }
        *stamp = Instant::now();
        Ok(())
    }

    /// The error of system `i`'s one statement, as the serial tick names it.
    fn failed(&self, i: usize, e: super::ScheduleError) -> super::ScheduleError {
        let s = &self.systems[i];
        let place = match &s.def.body {
            Body::Sql(statements) => match statements.first() {
                Some(statement) => format!(" at statement 1 ({})", super::tick::short(statement)),
                None => String::new(),
            },
            Body::Rust(..) => String::new(),
        };
        super::ScheduleError::System {
            system: s.def.name.clone(),
            tick: self.clock.tick,
            kept: 0,
            place,
            source: Box::new(e),
        }
    }
}

impl System {
    /// Where the system's one statement starts.
    fn def_statement_at(&self) -> crate::location::Location {
        match &self.def.body {
            Body::Sql(statements) => statements.first().map_or_else(Default::default, |s| s.at),
            Body::Rust(..) => Default::default(),
        }
    }
}

/// What system `s` (one UPDATE of one scan) would write to `world` in the tick of `clock`,
/// computed without writing.
fn compute(s: &System, world: &World, env: &super::Env<'_>, clock: Clock) -> Result<Computed> {
    let Body::Sql(statements) = &s.def.body else {
        return Ok(Computed::InTurn);
    };
    let Some(statement) = statements.first() else {
        return Ok(Computed::InTurn);
    };
    let mut prepared = s.prepared.lock();
    let super::Prepared { slots, caches, .. } = &mut *prepared;
    let (Some(slot), Some(cache)) = (slots.first_mut(), caches.first()) else {
        return Ok(Computed::InTurn);
    };
    let params = &super::tick::NO_PARAMS;
    let budget = env.budget.fresh();
    let (plan, _) = slot.plan(statement, world, env.restores, params)?;
    if plan.tracks().iter().any(|t| !t.is_on(world)) {
        return Ok(Computed::InTurn);
    }
    let reads = EventReads {
        from: s.state.cursors.clone(),
        ..EventReads::default()
    };
    let seed = super::tick::seed(s.name_hash, clock.tick, 1);
    let run = super::tick::system_run(statement, cache, env, clock, &reads, seed, (params, &budget));
    Ok(match exec::stage_write(&plan, world, run)? {
        Some(staged) => Computed::Staged(staged),
        None => Computed::InTurn,
    })
}
