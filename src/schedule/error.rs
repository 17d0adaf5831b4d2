//! The schedule's errors: systems and phases that do not exist or already do, orders
//! that cannot all hold, and ticks asked for with values that are not a count or a
//! length of time. Each names the systems or phases involved and where the statement
//! wrote them. A statement of a system that fails brings its layer's error, and a tick
//! that fails wraps it in `System`, naming the tick, the system and the statement. The
//! crate's `Error` is built from this one (`error.rs`), never the other way round.

use crate::exec::ExecError;
use crate::location::Location;
use crate::plan::PlanError;
use crate::storage::StorageError;

/// Why a system or phase statement, or a TICK, was refused. A refused statement changed
/// nothing.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// A system name that the schedule does not hold.
    #[error("unknown system {name} at {at}{hint}")]
    UnknownSystem {
        /// The name as written.
        name: String,
        /// Where it was written.
        at: Location,
        /// The systems there are, or how to make one.
        hint: String,
    },
    /// CREATE SYSTEM of a name already taken.
    #[error("system {name} already exists at {at} (DROP SYSTEM {name} first to replace it)")]
    SystemExists {
        /// The name.
        name: String,
        /// Where the statement names it.
        at: Location,
    },
    /// A phase name that the schedule does not hold.
    #[error("unknown phase {name} at {at} (phases, in order: {phases})")]
    UnknownPhase {
        /// The name as written.
        name: String,
        /// Where it was written.
        at: Location,
        /// The phases there are, in run order.
        phases: String,
    },
    /// CREATE PHASE of a name already taken.
    #[error("phase {name} already exists at {at}")]
    PhaseExists {
        /// The name.
        name: String,
        /// Where the statement names it.
        at: Location,
    },
    /// A statement about systems or phases that cannot be done as asked.
    #[error("{message} at {at}")]
    Invalid {
        /// What is wrong, and what to do instead.
        message: String,
        /// Where.
        at: Location,
    },
    /// BEFORE/AFTER clauses that cannot all hold.
    #[error("system {system} at {at} would make a cycle in the run order: {cycle}")]
    Cycle {
        /// The system being made.
        system: String,
        /// The systems around the cycle, each running before the next.
        cycle: String,
        /// Where the statement names the system.
        at: Location,
    },
    /// A system's statement (or WHEN) did not bind.
    #[error("{0}")]
    Plan(#[from] PlanError),
    /// A system's statement failed as it ran.
    #[error("{0}")]
    Exec(#[from] ExecError),
    /// The storage refused what a tick asked of it.
    #[error("{0}")]
    Storage(#[from] StorageError),
    /// A system failed while a tick ran; the whole tick was undone. Its `source` is the
    /// cause: `Plan` or `Exec` (a statement that did not bind or failed, with its place in
    /// the system's text), `Storage`, `RustSystem`, or `Invalid` (a WHEN that is no
    /// condition).
    #[non_exhaustive]
    #[error("tick {tick} was undone{}: system {system} failed{place}: {source}", kept_before(*kept))]
    System {
        /// The system's name.
        system: String,
        /// The number of the tick that was undone.
        tick: u64,
        /// The ticks of the same `TICK n` that ran before it, each whole, and stay.
        kept: u64,
        /// Where in the system: ` at statement 2 (UPDATE …)`, ` in its WHEN condition`,
        /// or empty for a Rust system.
        place: String,
        /// Why it failed.
        source: Box<ScheduleError>,
    },
    /// What a Rust system returned as its error, or its panic (only as the `source` of
    /// a failed tick's `System`).
    #[error("{0}")]
    RustSystem(String),
    /// A Rust system refused when it is registered: the access it declares names a
    /// field its component does not have. Written in Rust, it has no place in a text.
    #[error("{0}")]
    Unregistered(String),
}

/// ` (TICK kept the 4 ticks it had run before it)`, or nothing when it had run none.
fn kept_before(kept: u64) -> String {
    match kept {
        0 => String::new(),
        1 => " (TICK kept the tick it had run before it)".to_owned(),
        n => format!(" (TICK kept the {n} ticks it had run before it)"),
    }
}

impl ScheduleError {
    /// Where in the statement text the error is (unknown for a failed tick: its place is
    /// in the system's text).
    pub fn at(&self) -> Location {
        match self {
            ScheduleError::UnknownSystem { at, .. }
            | ScheduleError::SystemExists { at, .. }
            | ScheduleError::UnknownPhase { at, .. }
            | ScheduleError::PhaseExists { at, .. }
            | ScheduleError::Invalid { at, .. }
            | ScheduleError::Cycle { at, .. } => *at,
            ScheduleError::Plan(e) => e.at(),
            ScheduleError::Exec(e) => e.at(),
            ScheduleError::Storage(_)
            | ScheduleError::System { .. }
            | ScheduleError::RustSystem(_)
            | ScheduleError::Unregistered(_) => Location::default(),
        }
    }

    pub(crate) fn invalid(at: Location, message: impl Into<String>) -> ScheduleError {
        ScheduleError::Invalid {
            message: message.into(),
            at,
        }
    }
}
