//! The executor's errors: what went wrong while reading or writing rows, and at which
//! statement or expression.

use crate::index::IndexError;
use crate::location::Location;
use crate::storage::StorageError;
use crate::vector::KernelError;

/// Why a statement failed while it ran. Every variant carries the place in the statement
/// text that was being executed ([`ExecError::at`]); a failed statement wrote nothing.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// Integer overflow, division by zero, a square root of a negative number…
    #[error("{message} at {at}")]
    Arithmetic {
        /// What overflowed or was out of the operation's domain.
        message: String,
        /// The operation.
        at: Location,
    },
    /// An entity id that was never spawned.
    #[error("entity {entity} does not exist at {at}")]
    NoSuchEntity {
        /// The id, as its 64 bits.
        entity: u64,
        /// Where the statement used it.
        at: Location,
    },
    /// An entity id whose entity was despawned.
    #[error("entity {entity} was despawned at {at}")]
    DespawnedEntity {
        /// The id, as its 64 bits.
        entity: u64,
        /// Where the statement used it.
        at: Location,
    },
    /// A value that does not convert to the type it is used as (a text cast to INT…).
    #[error("type mismatch at {at}: {message}")]
    TypeMismatch {
        /// The value and the type it was asked to be.
        message: String,
        /// The expression.
        at: Location,
    },
    /// A write the data forbids: attaching a component twice, NULL into a non-ENTITY field.
    #[error("{message} at {at}")]
    Constraint {
        /// Which entity, component and field, and why.
        message: String,
        /// The statement or value.
        at: Location,
    },
    /// BEGIN inside a transaction, COMMIT or ROLLBACK outside one.
    #[error("{message} at {at}")]
    Transaction {
        /// What was asked and the transaction state.
        message: String,
        /// The statement.
        at: Location,
    },
    /// The storage layer refused a write (see [`StorageError`]).
    #[error("{source} at {at}")]
    Storage {
        /// What storage said.
        source: StorageError,
        /// The statement.
        at: Location,
    },
    /// CREATE or DROP INDEX asked for what cannot be.
    #[error("{source} at {at}")]
    Index {
        /// What the index layer said.
        source: IndexError,
        /// The statement.
        at: Location,
    },
    /// The connection's interrupt handle stopped the statement (Ctrl-C in the shell).
    #[error("interrupted at {at}: the statement was stopped and changed nothing")]
    Interrupted {
        /// The statement.
        at: Location,
    },
    /// The interrupt handle stopped a TICK of several ticks: each tick is whole, so the
    /// ticks it had run stay and the one running (if one was) was undone.
    #[error("interrupted at {at}: {}", ticks_kept(*kept, *clock, *undone))]
    TickInterrupted {
        /// How many ticks the TICK ran and kept.
        kept: u64,
        /// The clock's tick now: the last tick kept.
        clock: u64,
        /// The tick that was running and was undone, if one was.
        undone: Option<u64>,
        /// The statement.
        at: Location,
    },
    /// The statement's working memory (rows held for joins, groups, sorts, results)
    /// would pass the database's memory limit.
    #[error(
        "out of memory at {at}: the statement needs more than {limit} bytes of working memory \
         ({needed} so far); raise it with PRAGMA memory_limit, or narrow the statement \
         (a WHERE, a LIMIT, an aggregate instead of every row)"
    )]
    MemoryLimit {
        /// The bytes the statement would hold.
        needed: usize,
        /// The limit.
        limit: usize,
        /// The statement.
        at: Location,
    },
    /// A recursive WITH query still adding rows after the most rounds it may run.
    #[error(
        "recursion limit at {at}: a recursive WITH query ran {rounds} rounds and was still adding \
         rows; give its recursive part a WHERE that ends it, or raise PRAGMA recursion_limit"
    )]
    RecursionLimit {
        /// The rounds it ran (the limit).
        rounds: usize,
        /// The statement.
        at: Location,
    },
    /// A text value longer than the limit.
    #[error("text too long at {at}: {length} bytes, and a text value may hold at most {limit}")]
    TextTooLong {
        /// The length the value would have.
        length: usize,
        /// The limit.
        limit: usize,
        /// The expression that made it.
        at: Location,
    },
    /// A file that SAVE could not write or LOAD could not read (or that holds no world).
    #[error("{path}: {message} at {at}")]
    File {
        /// The file, as the statement named it.
        path: String,
        /// What went wrong.
        message: String,
        /// Where the statement starts.
        at: Location,
    },
    /// COPY could not read or write its file, or a value in the file does not fit its
    /// column: where (the line, and the column by number and name) and what was expected.
    /// Nothing was written to the database.
    #[error("{path}: {}{message} at {at}", place(*.line, *.row, .column.as_deref()))]
    Copy {
        /// The file, as the statement named it.
        path: String,
        /// The line of a CSV or JSON file (1 is the first), when the error is about one.
        line: Option<u64>,
        /// The row of a Parquet or Arrow file (1 is the first), when the error is about one.
        row: Option<u64>,
        /// The column, as `number (name)`, when the error is about one.
        column: Option<String>,
        /// What is wrong, and what was expected.
        message: String,
        /// Where the statement starts.
        at: Location,
    },
    /// A broken invariant inside ecsql, reported instead of a panic.
    #[error("internal error: {message} at {at}")]
    Internal {
        /// What was broken.
        message: String,
        /// Where in the statement it happened.
        at: Location,
    },
}

/// `line 3, column 2 (hp): ` (`row 3, …` in a columnar file), or as much of it as is known.
fn place(line: Option<u64>, row: Option<u64>, column: Option<&str>) -> String {
    let at = match (line, row) {
        (Some(l), _) => Some(format!("line {l}")),
        (None, Some(r)) => Some(format!("row {r}")),
        (None, None) => None,
    };
    match (at, column) {
        (Some(a), Some(c)) => format!("{a}, column {c}: "),
        (Some(a), None) => format!("{a}: "),
        (None, Some(c)) => format!("column {c}: "),
        (None, None) => String::new(),
    }
}

impl From<KernelError> for ExecError {
    fn from(e: KernelError) -> ExecError {
        match e {
            KernelError::Arithmetic { message, at } => ExecError::Arithmetic { message, at },
            KernelError::TypeMismatch { message, at } => ExecError::TypeMismatch { message, at },
            KernelError::Internal { message, at } => ExecError::Internal { message, at },
            KernelError::TextTooLong { length, at } => ExecError::TextTooLong {
                length,
                limit: crate::vector::MAX_TEXT,
                at,
            },
        }
    }
}

impl ExecError {
    /// Where in the statement text the error is.
    pub fn at(&self) -> Location {
        match self {
            ExecError::Arithmetic { at, .. }
            | ExecError::NoSuchEntity { at, .. }
            | ExecError::DespawnedEntity { at, .. }
            | ExecError::TypeMismatch { at, .. }
            | ExecError::Constraint { at, .. }
            | ExecError::Transaction { at, .. }
            | ExecError::Storage { at, .. }
            | ExecError::Index { at, .. }
            | ExecError::Interrupted { at }
            | ExecError::TickInterrupted { at, .. }
            | ExecError::MemoryLimit { at, .. }
            | ExecError::RecursionLimit { at, .. }
            | ExecError::TextTooLong { at, .. }
            | ExecError::File { at, .. }
            | ExecError::Copy { at, .. }
            | ExecError::Internal { at, .. } => *at,
        }
    }

    /// Makes this the error of the same text begun at `start` of a larger one
    /// (`Location::moved_to`).
    pub(crate) fn move_to(&mut self, start: Location) {
        match self {
            ExecError::Arithmetic { at, .. }
            | ExecError::NoSuchEntity { at, .. }
            | ExecError::DespawnedEntity { at, .. }
            | ExecError::TypeMismatch { at, .. }
            | ExecError::Constraint { at, .. }
            | ExecError::Transaction { at, .. }
            | ExecError::Storage { at, .. }
            | ExecError::Index { at, .. }
            | ExecError::Interrupted { at }
            | ExecError::TickInterrupted { at, .. }
            | ExecError::MemoryLimit { at, .. }
            | ExecError::RecursionLimit { at, .. }
            | ExecError::TextTooLong { at, .. }
            | ExecError::File { at, .. }
            | ExecError::Copy { at, .. }
            | ExecError::Internal { at, .. } => *at = at.moved_to(start),
        }
    }

    /// When an interrupt stopped the statement (a TICK's included): what it left, as the
    /// error says it (`the statement running was stopped and changed nothing`, `TICK kept
    /// the 40 ticks it had run … and undid tick 41, which was running`).
    pub fn interrupted_outcome(&self) -> Option<String> {
        match self {
            ExecError::Interrupted { .. } => {
                Some("the statement running was stopped and changed nothing".into())
            }
            ExecError::TickInterrupted {
                kept, clock, undone, ..
            } => Some(ticks_kept(*kept, *clock, *undone)),
            _ => None,
        }
    }

    pub(crate) fn arithmetic(at: Location, message: impl Into<String>) -> ExecError {
        ExecError::Arithmetic {
            message: message.into(),
            at,
        }
    }

    pub(crate) fn internal(at: Location, message: impl Into<String>) -> ExecError {
        ExecError::Internal {
            message: message.into(),
            at,
        }
    }

    pub(crate) fn constraint(at: Location, message: impl Into<String>) -> ExecError {
        ExecError::Constraint {
            message: message.into(),
            at,
        }
    }

    /// A storage error, with stale or unknown entities turned into their own variants.
    pub(crate) fn storage(at: Location, source: StorageError) -> ExecError {
        match source {
            StorageError::NoSuchEntity(e) => ExecError::NoSuchEntity {
                entity: e.to_bits(),
                at,
            },
            StorageError::DespawnedEntity(e) => ExecError::DespawnedEntity {
                entity: e.to_bits(),
                at,
            },
            source => ExecError::Storage { source, at },
        }
    }
}

/// What an interrupted TICK kept and undid, as its error says it (and the shell after it).
fn ticks_kept(kept: u64, clock: u64, undone: Option<u64>) -> String {
    let ran = match kept {
        0 => "TICK kept no tick".to_owned(),
        1 => format!("TICK kept the tick it had run (the clock is at tick {clock})"),
        n => format!("TICK kept the {n} ticks it had run (the clock is at tick {clock})"),
    };
    match undone {
        Some(t) => format!("{ran} and undid tick {t}, which was running"),
        None => format!("{ran} and began no other"),
    }
}
