//! The schedule: systems, phases and the clock, and the ticks that run them.
//!
//! A system is a named list of statements (or a Rust closure) run once per tick, in an
//! order fixed by phases, BEFORE/AFTER and creation order (`order.rs`, `define.rs`);
//! `tick.rs` runs ticks, each atomic through a savepoint of the world's undo log;
//! `saved.rs` shows the schedule and writes it out. The schedule lives
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

mod conflicts;
mod define;
mod error;
mod order;
mod saved;
mod tick;
mod together;
mod view;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

pub use error::ScheduleError;
pub use tick::{Env, RustClosure, RustSystem};
pub use view::{SystemAccess, SystemView, ViewSystem, ViewTable, ViewTableMut};

type Result<T> = std::result::Result<T, ScheduleError>;
use crate::exec::{Clock, EventCursors, TableCache};
use crate::parse::{self, Ident, Statement, SystemSpec};
use crate::plan::{PlanSlot, Tracking};
use crate::storage::{ComponentId, EventId};

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
    /// The systems that may run at the same time, as last found (`together.rs`).
    groups: together::Groups,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            phases: BUILTIN_PHASES.iter().map(|p| (*p).to_owned()).collect(),
            systems: Vec::new(),
            order: Vec::new(),
            clock: Clock::default(),
            saved: Vec::new(),
            groups: together::Groups::default(),
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
    /// A number no other definition of this process has (the groups' key: `together.rs`).
    id: u64,
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
    /// register it again (`Schedule::fill_rust_system`); with the access it declared, when
    /// it declared one (`SystemAccess`).
    Rust(Mutex<Option<RustSystem>>, Mutex<Option<SystemAccess>>),
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Body::Sql(statements) => f.debug_tuple("Sql").field(statements).finish(),
            Body::Rust(..) => f.write_str("Rust"),
        }
    }
}

/// What changes as a system runs.
#[derive(Clone, Debug)]
pub(crate) struct SystemState {
    enabled: bool,
    runs: u64,
    /// How many of those runs computed beside other systems (`together.rs`).
    together: u64,
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
            Body::Rust(..) => 0,
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
    /// Its last `RECENT_RUNS` runs, oldest first (`SHOW SYSTEM RUNS`): a measurement,
    /// not state, so neither a failed tick nor a rollback takes a run back.
    recent: VecDeque<Run>,
    /// Its name hashed, once: what each run's `random()` seeds start from (`tick::seed`).
    name_hash: u64,
}

/// One run of a system, as `SHOW SYSTEM RUNS` lists it.
#[derive(Clone, Copy, Debug)]
struct Run {
    tick: u64,
    time: Duration,
    /// Rows and entities its statements wrote (`None` for a Rust closure, which does
    /// not say).
    rows: Option<u64>,
}

/// How many runs of each system `SHOW SYSTEM RUNS` keeps: two seconds at 60 ticks a
/// second.
const RECENT_RUNS: usize = 120;

impl System {
    fn new(def: Arc<SystemDef>, state: SystemState, prepared: Prepared) -> System {
        let reads = prepared.reads();
        System {
            name_hash: tick::name_hash(&def.name),
            def,
            state,
            prepared: Mutex::new(prepared),
            reads,
            recent: VecDeque::new(),
        }
    }
}

/// Counts a run of a system: its state's count and time, and its place among its recent
/// runs.
fn count_run(
    state: &mut SystemState,
    recent: &mut VecDeque<Run>,
    tick: u64,
    time: Duration,
    rows: Option<u64>,
) {
    state.runs += 1;
    state.last_time = Some(time);
    if recent.len() == RECENT_RUNS {
        recent.pop_front();
    }
    recent.push_back(Run { tick, time, rows });
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
                let (prepared, recent) = match old.iter().position(|s| Arc::ptr_eq(&s.def, &def)) {
                    Some(i) => {
                        let s = old.swap_remove(i);
                        (s.prepared, s.recent)
                    }
                    None => (Mutex::new(Prepared::new(&def)), VecDeque::new()),
                };
                System {
                    name_hash: tick::name_hash(&def.name),
                    def,
                    state,
                    prepared,
                    reads,
                    recent,
                }
            })
            .collect();
        self.phases = image.phases;
        self.order = image.order;
        self.clock = image.clock;
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
            name: name.value.to_string(),
            at: name.at,
            hint,
        }
    }

    fn unknown_phase(&self, name: &Ident) -> ScheduleError {
        ScheduleError::UnknownPhase {
            name: name.value.to_string(),
            at: name.at,
            phases: self.phases.join(", "),
        }
    }
}

/// `SELECT expression`: how a WHEN condition, a TICK's count and its dt are evaluated.
pub fn select_of(condition: parse::Expr) -> Statement {
    let at = condition.at;
    let select = parse::Select {
        distinct: false,
        items: smallvec::smallvec![parse::SelectItem::Expr {
            expr: condition,
            alias: None,
        }],
        from: parse::FromList::new(),
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
