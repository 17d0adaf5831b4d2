//! The schedule: systems, phases and the clock, and the ticks that run them.
//!
//! A system is a named list of statements (or a Rust closure) run once per tick, in an
//! order fixed by phases, BEFORE/AFTER and creation order (`order.rs`); `tick.rs` runs
//! ticks, each atomic through a savepoint of the world's undo log. The schedule lives
//! beside the `World` in the database's state, under the same lock.
//!
//! Invariants:
//! - `order` is always a valid run order of `systems` (recomputed on every change, and a
//!   change that would make a cycle is refused before anything changes).
//! - Every name a system's BEFORE/AFTER gives is a system of the schedule: dropping a
//!   system another one is ordered against is refused.
//! - A system's definition (`SystemDef`) never changes once made; what changes per tick
//!   (enabled, runs, cursors) is its `SystemState`, which a failed tick puts back. A
//!   transaction's rollback puts back an `Image` of both, taken before its first change.
//! - Plans are kept per statement (`PlanSlot`) and bound again when the catalog changes;
//!   they are not part of an image.

mod error;
mod order;
mod tick;

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

pub use error::ScheduleError;
pub use tick::{Env, RustSystem};

type Result<T> = std::result::Result<T, ScheduleError>;
use crate::exec::{Clock, EventCursors, Outcome, TableCache};
use crate::location::Location;
use crate::parse::{self, Ident, Statement, SystemSpec};
use crate::plan::{DataType, ParamValues, PlanSlot, Tracking};
use crate::storage::{ComponentId, EventId, Value, World};

/// The phases every schedule has, in run order; `update` is where systems go unless told.
pub const BUILTIN_PHASES: [&str; 3] = ["pre_update", "update", "post_update"];

/// Systems, phases and the clock of one database.
#[derive(Debug)]
pub struct Schedule {
    /// Phase names in run order.
    phases: Vec<String>,
    /// In creation order.
    systems: Vec<System>,
    /// Indexes into `systems`, in run order.
    order: Vec<usize>,
    clock: Clock,
    /// The systems' states as the running tick found them (a buffer kept between ticks).
    saved: Vec<SystemState>,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            phases: BUILTIN_PHASES.iter().map(|p| (*p).to_owned()).collect(),
            systems: Vec::new(),
            order: Vec::new(),
            clock: Clock::default(),
            saved: Vec::new(),
        }
    }
}

/// A system as a snapshot keeps it (`Schedule::saved`, `Schedule::from_saved`).
#[derive(Clone, Debug)]
pub struct SavedSystem {
    pub name: String,
    /// A Rust closure's (the snapshot keeps where it stands, not the closure).
    pub rust: bool,
    /// A SQL system's `CREATE SYSTEM` statement as declared; a Rust system's clauses.
    pub text: String,
    pub enabled: bool,
    pub runs: u64,
    /// What it has seen of events and changes.
    pub cursors: EventCursors,
}

/// What a system is: fixed once made.
#[derive(Debug)]
pub(crate) struct SystemDef {
    name: String,
    phase: String,
    before: Vec<String>,
    after: Vec<String>,
    every: Option<u64>,
    /// `SELECT (condition)`, when the system has a WHEN.
    when: Option<Statement>,
    /// The condition as written, for EXPLAIN TICK.
    when_text: Option<String>,
    body: Body,
    /// As declared, for `.schema` and `.dump` (SQL systems).
    spec: Option<SystemSpec>,
    /// A Rust system's clauses as registered, for a snapshot.
    clauses: Option<String>,
}

enum Body {
    Sql(Vec<Statement>),
    /// A Rust closure; `None` while a system read from a file waits for the program to
    /// register it again (`Schedule::fill_rust_system`).
    Rust(Mutex<Option<RustSystem>>),
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Body::Sql(statements) => f.debug_tuple("Sql").field(statements).finish(),
            Body::Rust(_) => f.write_str("Rust"),
        }
    }
}

/// What changes as a system runs.
#[derive(Clone, Debug)]
pub(crate) struct SystemState {
    enabled: bool,
    runs: u64,
    last_time: Option<Duration>,
    /// How far it has read each event type.
    cursors: EventCursors,
}

/// A system's plans and table caches: one per statement, and one for WHEN.
#[derive(Debug, Default)]
struct Prepared {
    slots: Vec<PlanSlot>,
    caches: Vec<RefCell<TableCache>>,
    when: PlanSlot,
    when_cache: RefCell<TableCache>,
}

impl Prepared {
    fn new(def: &SystemDef) -> Prepared {
        let n = match &def.body {
            Body::Sql(statements) => statements.len(),
            Body::Rust(_) => 0,
        };
        Prepared {
            slots: (0..n).map(|_| PlanSlot::default()).collect(),
            caches: (0..n).map(|_| RefCell::default()).collect(),
            ..Prepared::default()
        }
    }

    /// The event types and removal logs the system reads (as its plans were last bound),
    /// each once.
    fn reads(&self) -> Reads {
        let mut reads = Reads::default();
        for slot in &self.slots {
            for &e in slot.reads() {
                if !reads.events.contains(&e) {
                    reads.events.push(e);
                }
            }
            for &t in slot.tracks() {
                if let Tracking::Removals(c) = t
                    && !reads.removals.contains(&c)
                {
                    reads.removals.push(c);
                }
            }
        }
        reads
    }
}

/// What a system's statements read that is kept for its readers: event types, and the
/// removal logs of components (`removed()`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Reads {
    events: Vec<EventId>,
    removals: Vec<ComponentId>,
}

#[derive(Debug)]
struct System {
    def: Arc<SystemDef>,
    state: SystemState,
    /// Plans hold cells that are not `Sync`; they are only reached with the schedule
    /// held mutably (a TICK, under the write lock), so the lock is never contended.
    prepared: Mutex<Prepared>,
    /// The event types and removal logs its statements read, as last bound.
    reads: Reads,
}

impl System {
    fn new(def: Arc<SystemDef>, state: SystemState, prepared: Prepared) -> System {
        let reads = prepared.reads();
        System {
            def,
            state,
            prepared: Mutex::new(prepared),
            reads,
        }
    }
}

/// The schedule as it was, for a transaction's rollback.
#[derive(Clone, Debug)]
pub struct Image {
    phases: Vec<String>,
    /// Each system, its state, and the event types it reads (which a system dropped and
    /// put back must keep reading before it runs again).
    systems: Vec<(Arc<SystemDef>, SystemState, Reads)>,
    order: Vec<usize>,
    clock: Clock,
}

impl Schedule {
    /// Where the clock stands: the last tick run and its dt.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// A copy of everything a rollback must put back.
    pub fn image(&self) -> Image {
        Image {
            phases: self.phases.clone(),
            systems: self
                .systems
                .iter()
                .map(|s| (Arc::clone(&s.def), s.state.clone(), s.reads.clone()))
                .collect(),
            order: self.order.clone(),
            clock: self.clock,
        }
    }

    /// Puts back what `image` holds, keeping the plans of the systems that stay.
    pub fn restore(&mut self, image: Image) {
        let mut old = std::mem::take(&mut self.systems);
        self.systems = image
            .systems
            .into_iter()
            .map(|(def, state, reads)| {
                let prepared = match old.iter().position(|s| Arc::ptr_eq(&s.def, &def)) {
                    Some(i) => old.swap_remove(i).prepared,
                    None => Mutex::new(Prepared::new(&def)),
                };
                System {
                    def,
                    state,
                    prepared,
                    reads,
                }
            })
            .collect();
        self.phases = image.phases;
        self.order = image.order;
        self.clock = image.clock;
    }

    /// The names of the Rust systems that have their closure, in the order they were made.
    pub fn rust_systems(&self) -> Vec<String> {
        self.systems
            .iter()
            .filter(|s| matches!(&s.def.body, Body::Rust(f) if f.lock().is_some()))
            .map(|s| s.def.name.clone())
            .collect()
    }

    /// Takes the Rust systems of `other` (the running database's: closures the program
    /// registered, which a file cannot hold) into this schedule, read from a file: one the
    /// file holds under the same name takes its closure where the file put it; the others
    /// are added as they were made, enabled or not. The file's Rust systems that `other`
    /// does not have are dropped (the program's, not the file's), unless a system is
    /// ordered against one: that one waits for its closure. Refused, changing nothing,
    /// when a name is a SQL system's here, a phase is missing, or the order makes a cycle.
    pub fn adopt_rust_systems(&mut self, other: &Schedule, at: Location) -> Result<()> {
        let is_rust = |s: &System| matches!(s.def.body, Body::Rust(_));
        let before = self.systems.len();
        let kept_order = self.order.clone();
        let mut fills = Vec::new();
        for s in other.systems.iter().filter(|s| is_rust(s)) {
            let refused = match self.find(&s.def.name) {
                Some(i) if is_rust(&self.systems[i]) => {
                    fills.push((i, s));
                    continue;
                }
                Some(_) => Some(format!(
                    "its system {} has the name of the Rust system {} of this database",
                    s.def.name, s.def.name
                )),
                None if self.phase_index(&s.def.phase).is_none() => Some(format!(
                    "it has no phase {}, in which this database's Rust system {} runs",
                    s.def.phase, s.def.name
                )),
                None => None,
            };
            if let Some(message) = refused {
                self.systems.truncate(before);
                return Err(ScheduleError::invalid(at, message));
            }
            let state = SystemState {
                enabled: s.state.enabled,
                runs: 0,
                last_time: None,
                cursors: EventCursors::default(),
            };
            self.systems
                .push(System::new(Arc::clone(&s.def), state, Prepared::new(&s.def)));
        }
        match self.compute_order() {
            Ok(order) => self.order = order,
            Err(cycle) => {
                self.systems.truncate(before);
                self.order = kept_order;
                return Err(ScheduleError::invalid(
                    at,
                    format!("with this database's Rust systems its systems would run in a cycle: {cycle}"),
                ));
            }
        }
        // Nothing fails past here: the closures move.
        for (i, s) in fills {
            if let (Body::Rust(to), Body::Rust(from)) = (&self.systems[i].def.body, &s.def.body) {
                *to.lock() = from.lock().take();
            }
        }
        // The file's others go, the last made first (each is ordered only against
        // systems made before it).
        for i in (0..before).rev() {
            let s = &self.systems[i];
            let waiting = matches!(&s.def.body, Body::Rust(f) if f.lock().is_none());
            let name = s.def.name.clone();
            let referenced = self
                .systems
                .iter()
                .any(|o| o.def.before.iter().chain(&o.def.after).any(|n| *n == name));
            if waiting && !referenced {
                self.systems.remove(i);
            }
        }
        if let Ok(order) = self.compute_order() {
            self.order = order;
        }
        Ok(())
    }

    /// Sets the clock, as `PRAGMA tick` and `PRAGMA delta_time` do.
    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.systems
            .iter()
            .position(|s| s.def.name.eq_ignore_ascii_case(name))
    }

    fn phase_index(&self, name: &str) -> Option<usize> {
        self.phases.iter().position(|p| p.eq_ignore_ascii_case(name))
    }

    fn unknown_system(&self, name: &Ident) -> ScheduleError {
        let names: Vec<&str> = self.systems.iter().map(|s| s.def.name.as_str()).collect();
        let hint = if names.is_empty() {
            " (no systems exist yet: CREATE SYSTEM makes one)".to_owned()
        } else {
            format!(" (systems: {})", names.join(", "))
        };
        ScheduleError::UnknownSystem {
            name: name.value.clone(),
            at: name.at,
            hint,
        }
    }

    fn unknown_phase(&self, name: &Ident) -> ScheduleError {
        ScheduleError::UnknownPhase {
            name: name.value.clone(),
            at: name.at,
            phases: self.phases.join(", "),
        }
    }

    // ---- making systems -----------------------------------------------------------------

    /// `CREATE SYSTEM`: checks the name, the phase and the order, binds every statement
    /// (and WHEN) against `world`, and adds the system. Returns the components whose
    /// removals it reads (`removed()`), whose logs must start now: the system's first run
    /// sees what was lost since it was made.
    pub fn create_system(
        &mut self,
        spec: &SystemSpec,
        world: &World,
        restores: u64,
        check_text: bool,
    ) -> Result<Vec<ComponentId>> {
        // A snapshot keeps the system as its printed text: one that would not read back
        // would make a file that does not open (`check_text`).
        if check_text && let Err(why) = parse::system_reads_back(spec) {
            return Err(ScheduleError::invalid(
                spec.name.at,
                format!(
                    "system {} cannot be kept as written: {why}; this is ecsql's fault (please report it): write the statement another way",
                    spec.name.value
                ),
            ));
        }
        let body = Body::Sql(spec.body.clone());
        self.add(spec, body, Some(spec.clone()), world, restores)
    }

    /// A Rust closure as a system, ordered by `clauses` (parsed into `spec`, whose body is
    /// ignored); without one, a system waiting for its closure.
    pub fn create_rust_system(
        &mut self,
        spec: &SystemSpec,
        clauses: &str,
        f: Option<RustSystem>,
        world: &World,
        restores: u64,
    ) -> Result<()> {
        self.add(spec, Body::Rust(Mutex::new(f)), None, world, restores)?;
        if let Some(s) = self.systems.last_mut()
            && let Some(def) = Arc::get_mut(&mut s.def)
        {
            def.clauses = Some(clauses.to_owned());
        }
        Ok(())
    }

    /// Gives `f` to the Rust system `name` read from a file and waiting for its closure;
    /// gives `f` back when there is no such system waiting.
    pub fn fill_rust_system(&self, name: &str, f: RustSystem) -> Option<RustSystem> {
        let waiting = self.find(name).and_then(|i| match &self.systems[i].def.body {
            Body::Rust(slot) if slot.lock().is_none() => Some(slot),
            _ => None,
        });
        match waiting {
            Some(slot) => {
                *slot.lock() = Some(f);
                None
            }
            None => Some(f),
        }
    }

    /// Takes the closure of the Rust system `name` (which then waits for one), with its
    /// clauses.
    pub fn take_rust_closure(&self, name: &str) -> Option<(String, RustSystem)> {
        let s = &self.systems[self.find(name)?];
        match &s.def.body {
            Body::Rust(slot) => {
                let f = slot.lock().take()?;
                Some((s.def.clauses.clone().unwrap_or_default(), f))
            }
            Body::Sql(_) => None,
        }
    }

    /// Every system in the order it was made, as a snapshot keeps it.
    pub fn saved(&self) -> Vec<SavedSystem> {
        self.systems
            .iter()
            .map(|s| SavedSystem {
                name: s.def.name.clone(),
                rust: matches!(s.def.body, Body::Rust(_)),
                text: match (&s.def.spec, &s.def.clauses) {
                    (Some(spec), _) => spec.to_string(),
                    (None, Some(clauses)) => clauses.clone(),
                    (None, None) => String::new(),
                },
                enabled: s.state.enabled,
                runs: s.state.runs,
                cursors: s.state.cursors.clone(),
            })
            .collect()
    }

    /// The schedule a snapshot kept: its phases (`CREATE PHASE` statements) and systems,
    /// made again in their order, each where it stood; a SQL system that no longer binds is
    /// kept as it was (its next run binds it, or fails), a Rust system waits for its
    /// closure. Starts the removal logs its systems read.
    pub fn from_saved(
        phases: &str,
        systems: Vec<SavedSystem>,
        world: &mut World,
    ) -> std::result::Result<Schedule, String> {
        let mut schedule = Schedule::default();
        let statements = parse::parse(phases).map_err(|e| format!("its phases do not read back: {e}"))?;
        for s in &statements {
            match &s.kind {
                parse::StatementKind::CreatePhase { name, before, anchor } => schedule
                    .create_phase(name, *before, anchor)
                    .map_err(|e| format!("its phases do not fit: {e}"))?,
                other => return Err(format!("its phases hold a {} statement", other.verb())),
            }
        }
        for saved in systems {
            let made = if saved.rust {
                parse::system_clauses(&saved.name, &saved.text)
                    .map_err(|e| e.to_string())
                    .and_then(|spec| {
                        schedule
                            .create_rust_system(&spec, &saved.text, None, world, 0)
                            .map_err(|e| e.to_string())
                    })
            } else {
                match parse::parse_one(&saved.text).map(|s| s.kind) {
                    Ok(parse::StatementKind::CreateSystem(spec)) => schedule
                        .add_unchecked(&spec, world)
                        .map_err(|e| e.to_string())
                        .and_then(|logs| {
                            logs.into_iter()
                                .try_for_each(|c| world.track_removals(c).map(drop))
                                .map_err(|e| e.to_string())
                        }),
                    Ok(_) => Err("it is not a CREATE SYSTEM statement".to_owned()),
                    Err(e) => Err(e.to_string()),
                }
            };
            made.map_err(|e| format!("its system {} does not fit: {e}", saved.name))?;
            if let Some(s) = schedule.systems.last_mut() {
                s.state.enabled = saved.enabled;
                s.state.runs = saved.runs;
                s.state.cursors = saved.cursors;
            }
        }
        Ok(schedule)
    }

    /// A SQL system made as a snapshot kept it: bound now if it binds, else at its run.
    fn add_unchecked(&mut self, spec: &SystemSpec, world: &World) -> Result<Vec<ComponentId>> {
        let sql = || Body::Sql(spec.body.clone());
        match self.add(spec, sql(), Some(spec.clone()), world, 0) {
            Err(ScheduleError::Plan(_) | ScheduleError::Exec(_) | ScheduleError::Storage(_)) => {
                self.add_with(spec, sql(), Some(spec.clone()), world, 0, false)
            }
            other => other,
        }
    }

    fn add(
        &mut self,
        spec: &SystemSpec,
        body: Body,
        text: Option<SystemSpec>,
        world: &World,
        restores: u64,
    ) -> Result<Vec<ComponentId>> {
        self.add_with(spec, body, text, world, restores, true)
    }

    /// `add`; with `bind` false, statements are left to bind at their first run.
    fn add_with(
        &mut self,
        spec: &SystemSpec,
        body: Body,
        text: Option<SystemSpec>,
        world: &World,
        restores: u64,
        bind: bool,
    ) -> Result<Vec<ComponentId>> {
        let name = &spec.name;
        if name.value.is_empty() || name.value.chars().any(char::is_control) {
            return Err(ScheduleError::invalid(
                name.at,
                format!("a system's name must be a name, not {:?}", name.value),
            ));
        }
        if self.find(&name.value).is_some() {
            return Err(ScheduleError::SystemExists {
                name: name.value.clone(),
                at: name.at,
            });
        }
        let phase = match &spec.phase {
            Some(p) => match self.phase_index(&p.value) {
                Some(i) => self.phases[i].clone(),
                None => return Err(self.unknown_phase(p)),
            },
            None => "update".to_owned(),
        };
        let mut before = Vec::new();
        let mut after = Vec::new();
        for (list, out, word) in [
            (&spec.before, &mut before, "BEFORE"),
            (&spec.after, &mut after, "AFTER"),
        ] {
            for other in list {
                if other.value.eq_ignore_ascii_case(&name.value) {
                    return Err(ScheduleError::invalid(
                        other.at,
                        format!("system {} cannot run {word} itself", name.value),
                    ));
                }
                let Some(i) = self.find(&other.value) else {
                    return Err(self.unknown_system(other));
                };
                out.push(self.systems[i].def.name.clone());
            }
        }
        let when = spec.when.as_ref().map(|cond| select_of(cond.clone()));
        let def = SystemDef {
            name: name.value.clone(),
            phase,
            before,
            after,
            every: spec.every,
            when,
            when_text: spec.when.as_ref().map(|c| c.to_string()),
            body,
            spec: text,
            clauses: None,
        };
        self.check_phases_agree(&def, name.at)?;
        let mut prepared = Prepared::new(&def);
        if bind {
            bind_all(&def, &mut prepared, world, restores)?;
        }
        let state = SystemState {
            enabled: true,
            runs: 0,
            last_time: None,
            cursors: EventCursors::default(),
        };
        let system = System::new(Arc::new(def), state, prepared);
        let logs = system.reads.removals.clone();
        self.systems.push(system);
        match self.compute_order() {
            Ok(order) => {
                self.order = order;
                Ok(logs)
            }
            Err(cycle) => {
                self.systems.pop();
                Err(ScheduleError::Cycle {
                    system: name.value.clone(),
                    cycle,
                    at: name.at,
                })
            }
        }
    }

    /// A BEFORE/AFTER across phases must agree with the phases' order.
    fn check_phases_agree(&self, def: &SystemDef, at: Location) -> Result<()> {
        let mine = self.phase_index(&def.phase).unwrap_or(0);
        for (list, earlier) in [(&def.before, false), (&def.after, true)] {
            for other in list {
                let Some(o) = self.find(other) else { continue };
                let theirs = self.phase_index(&self.systems[o].def.phase).unwrap_or(0);
                let contradicts = if earlier { theirs > mine } else { theirs < mine };
                if contradicts {
                    let word = if earlier { "AFTER" } else { "BEFORE" };
                    return Err(ScheduleError::invalid(
                        at,
                        format!(
                            "system {} in phase {} cannot run {word} {other}, which is in phase {}: \
                             phases run in order ({})",
                            def.name,
                            def.phase,
                            self.systems[o].def.phase,
                            self.phases.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Computes the run order again after a change that cannot make a cycle (a system
    /// dropped, a phase made).
    fn reorder(&mut self, at: Location) -> Result<()> {
        self.order = self.compute_order().map_err(|cycle| {
            ScheduleError::invalid(at, format!("internal error: the run order has a cycle: {cycle}"))
        })?;
        Ok(())
    }

    /// The run order of the systems, or the names around a cycle.
    fn compute_order(&self) -> std::result::Result<Vec<usize>, String> {
        let mut nodes: Vec<order::Node> = self
            .systems
            .iter()
            .map(|s| order::Node {
                phase: self.phase_index(&s.def.phase).unwrap_or(0),
                before: Vec::new(),
            })
            .collect();
        // Only orders inside one phase are edges: across phases, the phases' order holds
        // (and `check_phases_agree` refused one that contradicts it).
        for (i, s) in self.systems.iter().enumerate() {
            // `i BEFORE b` and `i AFTER a` (which is `a BEFORE i`), as (first, then).
            let mut edges: Vec<(usize, usize)> = s
                .def
                .before
                .iter()
                .filter_map(|b| self.find(b))
                .map(|b| (i, b))
                .collect();
            edges.extend(s.def.after.iter().filter_map(|a| self.find(a)).map(|a| (a, i)));
            for (first, then) in edges {
                if nodes[first].phase == nodes[then].phase && !nodes[first].before.contains(&then) {
                    nodes[first].before.push(then);
                }
            }
        }
        order::run_order(&nodes).map_err(|cycle| {
            let mut names: Vec<&str> = cycle.iter().map(|&i| self.systems[i].def.name.as_str()).collect();
            if let Some(&first) = names.first() {
                names.push(first);
            }
            names.join(" runs before ")
        })
    }

    /// `DROP SYSTEM`.
    pub fn drop_system(&mut self, name: &Ident, if_exists: bool) -> Result<()> {
        let Some(i) = self.find(&name.value) else {
            if if_exists {
                return Ok(());
            }
            return Err(self.unknown_system(name));
        };
        let dropped = self.systems[i].def.name.clone();
        let dependents: Vec<&str> = self
            .systems
            .iter()
            .filter(|s| s.def.before.iter().chain(&s.def.after).any(|o| *o == dropped))
            .map(|s| s.def.name.as_str())
            .collect();
        if !dependents.is_empty() {
            return Err(ScheduleError::invalid(
                name.at,
                format!(
                    "system {dropped} cannot be dropped: {} {} ordered against it (drop {} first)",
                    dependents.join(", "),
                    if dependents.len() == 1 { "is" } else { "are" },
                    dependents.join(", "),
                ),
            ));
        }
        self.systems.remove(i);
        self.reorder(name.at)
    }

    /// `ALTER SYSTEM name ENABLE | DISABLE`.
    pub fn set_enabled(&mut self, name: &Ident, enabled: bool) -> Result<()> {
        let Some(i) = self.find(&name.value) else {
            return Err(self.unknown_system(name));
        };
        self.systems[i].state.enabled = enabled;
        Ok(())
    }

    /// `CREATE PHASE name BEFORE | AFTER anchor`.
    pub fn create_phase(&mut self, name: &Ident, before: bool, anchor: &Ident) -> Result<()> {
        if self.phase_index(&name.value).is_some() {
            return Err(ScheduleError::PhaseExists {
                name: name.value.clone(),
                at: name.at,
            });
        }
        let Some(a) = self.phase_index(&anchor.value) else {
            return Err(self.unknown_phase(anchor));
        };
        let at = if before { a } else { a + 1 };
        self.phases.insert(at, name.value.clone());
        self.reorder(name.at)
    }

    /// `DROP PHASE`: only a phase that was made, and holds no system.
    pub fn drop_phase(&mut self, name: &Ident, if_exists: bool) -> Result<()> {
        let Some(i) = self.phase_index(&name.value) else {
            if if_exists {
                return Ok(());
            }
            return Err(self.unknown_phase(name));
        };
        let phase = self.phases[i].clone();
        if BUILTIN_PHASES.iter().any(|b| b.eq_ignore_ascii_case(&phase)) {
            return Err(ScheduleError::invalid(
                name.at,
                format!("phase {phase} is built in and cannot be dropped"),
            ));
        }
        let inside: Vec<&str> = self
            .systems
            .iter()
            .filter(|s| s.def.phase == phase)
            .map(|s| s.def.name.as_str())
            .collect();
        if !inside.is_empty() {
            return Err(ScheduleError::invalid(
                name.at,
                format!(
                    "phase {phase} still holds systems {} (drop them first)",
                    inside.join(", ")
                ),
            ));
        }
        self.phases.remove(i);
        Ok(())
    }

    // ---- what it shows --------------------------------------------------------------------

    /// `SHOW SYSTEMS`: one row per system, in run order.
    pub fn show_systems(&self) -> Outcome {
        let mut rows: Vec<Vec<Value>> = Vec::new();
        for (position, &i) in self.order.iter().enumerate() {
            let s = &self.systems[i];
            rows.push(vec![
                Value::Text(s.def.name.clone()),
                Value::Text(s.def.phase.clone()),
                Value::Int(position as i64 + 1),
                Value::Bool(s.state.enabled),
                s.def
                    .every
                    .map_or(Value::Null, |n| Value::Int(i64::try_from(n).unwrap_or(i64::MAX))),
                Value::Int(i64::try_from(s.state.runs).unwrap_or(i64::MAX)),
                s.state
                    .last_time
                    // In ms, to the µs: finer is the clock's noise.
                    .map_or(Value::Null, |t| {
                        Value::Float((t.as_secs_f64() * 1e6).round() / 1e3)
                    }),
                Value::Text(match s.def.body {
                    Body::Sql(_) => "sql".to_owned(),
                    Body::Rust(_) => "rust".to_owned(),
                }),
            ]);
        }
        Outcome::of_rows(
            &[
                ("name", DataType::Text),
                ("phase", DataType::Text),
                ("order", DataType::Int),
                ("enabled", DataType::Bool),
                ("every", DataType::Int),
                ("runs", DataType::Int),
                ("last_ms", DataType::Float),
                ("kind", DataType::Text),
            ],
            rows,
        )
    }

    /// `SHOW EVENTS`: one row per event type.
    pub fn show_events(&self, world: &World) -> Outcome {
        let rows = world
            .events()
            .map(|e| {
                let readers = self.readers(e.id()).count();
                vec![
                    Value::Text(e.name().to_owned()),
                    Value::Int(e.len() as i64),
                    Value::Int(readers as i64),
                    Value::Int(i64::try_from(e.keep()).unwrap_or(i64::MAX)),
                    Value::Int(i64::try_from(e.dropped_unseen()).unwrap_or(i64::MAX)),
                ]
            })
            .collect();
        Outcome::of_rows(
            &[
                ("event", DataType::Text),
                ("kept", DataType::Int),
                ("readers", DataType::Int),
                ("keep_ticks", DataType::Int),
                ("dropped_unseen", DataType::Int),
            ],
            rows,
        )
    }

    /// The systems that read `event`, by index.
    fn readers(&self, event: EventId) -> impl Iterator<Item = usize> + '_ {
        self.systems
            .iter()
            .enumerate()
            .filter(move |(_, s)| s.reads.events.contains(&event))
            .map(|(i, _)| i)
    }

    /// The systems that read `component`'s removal log, by position.
    fn removal_readers(&self, component: ComponentId) -> impl Iterator<Item = usize> + '_ {
        self.systems
            .iter()
            .enumerate()
            .filter(move |(_, s)| s.reads.removals.contains(&component))
            .map(|(i, _)| i)
    }

    /// The text that makes every phase made by CREATE PHASE and every SQL system again,
    /// in an order that reads back (phases first; systems so that each comes after those
    /// it names), with ALTER SYSTEM … DISABLE for the disabled ones. What cannot be read
    /// back is written as a comment that says why: a Rust system (the program registers
    /// it again), a system whose statements no longer bind against `world`; a system
    /// ordered against one of those is written without that clause, which a comment
    /// names.
    pub fn schema(&self, world: &World) -> Vec<String> {
        let mut out = self.phase_statements();
        self.system_statements(world, &mut out);
        out
    }

    /// `CREATE PHASE` for each phase made, in an order that makes them again.
    pub fn phase_statements(&self) -> Vec<String> {
        let mut out = Vec::new();
        // Each phase is made next to one that exists by then: those before the first
        // built-in phase from it backwards (BEFORE the next), the others forwards (AFTER
        // the one before).
        let builtin = |p: &str| BUILTIN_PHASES.iter().any(|b| b.eq_ignore_ascii_case(p));
        let first = self.phases.iter().position(|p| builtin(p)).unwrap_or(0);
        let phase = |i: usize, word: &str, anchor: usize| {
            format!(
                "CREATE PHASE {} {word} {};",
                parse::quote_name(&self.phases[i]),
                parse::quote_name(&self.phases[anchor])
            )
        };
        for i in (0..first).rev() {
            out.push(phase(i, "BEFORE", i + 1));
        }
        for i in first + 1..self.phases.len() {
            if !builtin(&self.phases[i]) {
                out.push(phase(i, "AFTER", i - 1));
            }
        }
        out
    }

    /// `schema`'s systems, onto `out`.
    fn system_statements(&self, world: &World, out: &mut Vec<String>) {
        // Systems in creation order: each names only systems made before it.
        let mut written: Vec<&str> = Vec::new();
        for s in &self.systems {
            let name = parse::quote_name(&s.def.name);
            let spec = match (&s.def.body, &s.def.spec) {
                (Body::Sql(statements), Some(spec)) => {
                    match unbound(statements, s.def.when.as_ref(), world) {
                        None => spec,
                        Some(why) => {
                            out.push(format!(
                                "-- system {name} is not written: it no longer binds ({why})"
                            ));
                            continue;
                        }
                    }
                }
                _ => {
                    out.push(format!(
                        "-- system {name} is a Rust closure: the program registers it again"
                    ));
                    continue;
                }
            };
            let mut spec = spec.clone();
            let keep = |list: &mut Vec<Ident>, word: &str, out: &mut Vec<String>| {
                list.retain(|other| {
                    let found = written.iter().any(|w| w.eq_ignore_ascii_case(&other.value));
                    if !found {
                        out.push(format!(
                            "-- system {name} ran {word} {}, which is not written here",
                            parse::quote_name(&other.value)
                        ));
                    }
                    found
                });
            };
            keep(&mut spec.before, "BEFORE", out);
            keep(&mut spec.after, "AFTER", out);
            out.push(format!("{spec};"));
            written.push(&s.def.name);
            if !s.state.enabled {
                out.push(format!(
                    "ALTER SYSTEM {} DISABLE;",
                    parse::quote_name(&s.def.name)
                ));
            }
        }
    }
}

/// Why `statements` (or `when`) no longer bind against `world`, if they do not.
fn unbound(statements: &[Statement], when: Option<&Statement>, world: &World) -> Option<String> {
    let params = ParamValues::default();
    statements
        .iter()
        .chain(when)
        .find_map(|s| crate::plan::plan(s, world, &params).err())
        .map(|e| e.to_string())
}

/// `SELECT expression`: how a WHEN condition, a TICK's count and its dt are evaluated.
pub fn select_of(condition: parse::Expr) -> Statement {
    let at = condition.at;
    let select = parse::Select {
        distinct: false,
        items: vec![parse::SelectItem::Expr {
            expr: condition,
            alias: None,
        }],
        from: Vec::new(),
        filter: None,
        group_by: Vec::new(),
        having: None,
        windows: Vec::new(),
        at,
    };
    Statement {
        kind: parse::StatementKind::Select(parse::Query {
            body: parse::SetExpr::Select(Box::new(select)),
            order_by: Vec::new(),
            limit: None,
            offset: None,
            at,
        }),
        at,
        params: parse::Parameters::default(),
    }
}

/// Binds every statement of `def` (and its WHEN, which must be a condition) against
/// `world`, keeping the plans in `prepared`.
fn bind_all(def: &SystemDef, prepared: &mut Prepared, world: &World, restores: u64) -> Result<()> {
    let params = ParamValues::default();
    // A system runs with no parameter values: say so rather than "no value given".
    let no_parameters = |e: crate::plan::PlanError| -> ScheduleError {
        match e {
            crate::plan::PlanError::MissingParameter { name, at } => ScheduleError::invalid(
                at,
                format!(
                    "a system's statements take no parameters, and {name} is one: write a constant, \
                     or read the value from a component"
                ),
            ),
            other => other.into(),
        }
    };
    if let Body::Sql(statements) = &def.body {
        for (statement, slot) in statements.iter().zip(&mut prepared.slots) {
            slot.plan(statement, world, restores, &params)
                .map_err(no_parameters)?;
        }
    }
    if let Some(when) = &def.when {
        let (plan, _) = prepared
            .when
            .plan(when, world, restores, &params)
            .map_err(no_parameters)?;
        if let crate::plan::Plan::Query(q) = &*plan {
            let ty = q.columns.first().map_or(DataType::Null, |c| c.ty);
            if !matches!(ty, DataType::Bool | DataType::Null) {
                return Err(ScheduleError::invalid(
                    when.at,
                    format!("WHEN takes a condition (BOOL), found {ty}"),
                ));
            }
        }
    }
    Ok(())
}
