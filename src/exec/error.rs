//! The executor's errors: what went wrong while reading or writing rows, and at which
//! statement or expression. The place is held once, beside the kind of error
//! ([`ExecError::at`]), so moving an error into a larger text touches one field.

use std::fmt;

use crate::index::IndexError;
use crate::location::Location;
use crate::storage::StorageError;
use crate::vector::KernelError;

/// Why a statement failed while it ran: what went wrong ([`ExecErrorKind`]) and the place
/// in the statement text that was being executed. A failed statement wrote nothing.
///
/// Match the kind: `Error::Exec(ExecError { kind: ExecErrorKind::Interrupted, .. })`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ExecError {
    /// What went wrong.
    pub kind: ExecErrorKind,
    /// Where in the statement text.
    pub at: Location,
}

/// What went wrong while a statement ran (the kind of an [`ExecError`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ExecErrorKind {
    /// Integer overflow, division by zero, a square root of a negative number…
    Arithmetic {
        /// What overflowed or was out of the operation's domain.
        message: String,
    },
    /// An entity id that was never spawned.
    NoSuchEntity {
        /// The id, as its 64 bits.
        entity: u64,
    },
    /// An entity id whose entity was despawned.
    DespawnedEntity {
        /// The id, as its 64 bits.
        entity: u64,
    },
    /// A value that does not convert to the type it is used as (a text cast to INT…).
    TypeMismatch {
        /// The value and the type it was asked to be.
        message: String,
    },
    /// A write the data forbids: attaching a component twice, NULL into a non-ENTITY field.
    Constraint {
        /// Which entity, component and field, and why.
        message: String,
    },
    /// BEGIN inside a transaction, COMMIT or ROLLBACK outside one.
    Transaction {
        /// What was asked and the transaction state.
        message: String,
    },
    /// A write inside a READ ONLY transaction (BEGIN READ ONLY, SET TRANSACTION READ ONLY,
    /// or any statement under `default_transaction_read_only = on`).
    ReadOnlyTransaction {
        /// The write's leading keyword(s), e.g. `UPDATE`.
        verb: &'static str,
    },
    /// The storage layer refused a write (see [`StorageError`]).
    Storage {
        /// What storage said.
        source: StorageError,
    },
    /// CREATE or DROP INDEX asked for what cannot be.
    Index {
        /// What the index layer said.
        source: IndexError,
    },
    /// The connection's interrupt handle stopped the statement (Ctrl-C in the shell).
    Interrupted,
    /// The statement ran longer than the connection's statement timeout
    /// (`PRAGMA statement_timeout`) and was stopped.
    TimedOut {
        /// The timeout.
        after: std::time::Duration,
    },
    /// The interrupt handle stopped a TICK of several ticks: each tick is whole, so the
    /// ticks it had run stay and the one running (if one was) was undone.
    TickInterrupted {
        /// How many ticks the TICK ran and kept.
        kept: u64,
        /// The clock's tick now: the last tick kept.
        clock: u64,
        /// The tick that was running and was undone, if one was.
        undone: Option<u64>,
    },
    /// The statement's working memory (rows held for joins, groups, sorts, results)
    /// would pass the database's memory limit.
    MemoryLimit {
        /// The bytes the statement would hold.
        needed: usize,
        /// The limit.
        limit: usize,
    },
    /// A recursive WITH query still adding rows after the most rounds it may run.
    RecursionLimit {
        /// The rounds it ran (the limit).
        rounds: usize,
    },
    /// A text value longer than the limit.
    TextTooLong {
        /// The length the value would have.
        length: usize,
        /// The limit.
        limit: usize,
    },
    /// A file that SAVE could not write or LOAD could not read (or that holds no world).
    File {
        /// The file, as the statement named it.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// COPY could not read or write its file, or a value in the file does not fit its
    /// column: where (the line, and the column by number and name) and what was expected.
    /// Nothing was written to the database.
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
    },
    /// A broken invariant inside ecsql, reported instead of a panic.
    Internal {
        /// What was broken.
        message: String,
    },
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.at;
        match &self.kind {
            ExecErrorKind::Arithmetic { message }
            | ExecErrorKind::Constraint { message }
            | ExecErrorKind::Transaction { message } => write!(f, "{message} at {at}"),
            ExecErrorKind::ReadOnlyTransaction { verb } => write!(
                f,
                "cannot run {verb} in a read-only transaction at {at}: end it (COMMIT or ROLLBACK) and BEGIN READ WRITE to write (default_transaction_read_only = off makes that BEGIN's default)"
            ),
            ExecErrorKind::NoSuchEntity { entity } => write!(f, "entity {entity} does not exist at {at}"),
            ExecErrorKind::DespawnedEntity { entity } => write!(f, "entity {entity} was despawned at {at}"),
            ExecErrorKind::TypeMismatch { message } => write!(f, "type mismatch at {at}: {message}"),
            ExecErrorKind::Storage { source } => write!(f, "{source} at {at}"),
            ExecErrorKind::Index { source } => write!(f, "{source} at {at}"),
            ExecErrorKind::Interrupted => {
                write!(
                    f,
                    "interrupted{}: the statement was stopped and changed nothing",
                    where_known(at)
                )
            }
            ExecErrorKind::TimedOut { after } => write!(
                f,
                "statement timeout{}: the statement ran longer than {} ms (PRAGMA statement_timeout) and was stopped; it changed nothing",
                where_known(at),
                after.as_millis()
            ),
            ExecErrorKind::TickInterrupted { kept, clock, undone } => {
                write!(f, "interrupted at {at}: {}", ticks_kept(*kept, *clock, *undone))
            }
            ExecErrorKind::MemoryLimit { needed, limit } => write!(
                f,
                "out of memory at {at}: the statement needs more than {limit} bytes of working memory \
                 ({needed} so far); raise it with PRAGMA memory_limit, or have the statement hold \
                 less (fewer rows: a WHERE, a LIMIT, an aggregate instead of every row; or smaller values)"
            ),
            ExecErrorKind::RecursionLimit { rounds } => write!(
                f,
                "recursion limit at {at}: a recursive WITH query ran {rounds} rounds and was still adding \
                 rows; give its recursive part a WHERE that ends it, or raise PRAGMA recursion_limit"
            ),
            ExecErrorKind::TextTooLong { length, limit } => write!(
                f,
                "text too long at {at}: {length} bytes, and a text value may hold at most {limit}"
            ),
            ExecErrorKind::File { path, message } => write!(f, "{path}: {message} at {at}"),
            ExecErrorKind::Copy {
                path,
                line,
                row,
                column,
                message,
            } => write!(
                f,
                "{path}: {}{message} at {at}",
                place(*line, *row, column.as_deref())
            ),
            ExecErrorKind::Internal { message } => write!(f, "internal error: {message} at {at}"),
        }
    }
}

impl std::error::Error for ExecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ExecErrorKind::Storage { source } => Some(source),
            ExecErrorKind::Index { source } => Some(source),
            _ => None,
        }
    }
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
            KernelError::Arithmetic { message, at } => {
                ExecError::new(at, ExecErrorKind::Arithmetic { message })
            }
            KernelError::TypeMismatch { message, at } => {
                ExecError::new(at, ExecErrorKind::TypeMismatch { message })
            }
            KernelError::Internal { message, at } => ExecError::new(at, ExecErrorKind::Internal { message }),
            KernelError::TextTooLong { length, at } => ExecError::new(
                at,
                ExecErrorKind::TextTooLong {
                    length,
                    limit: crate::vector::MAX_TEXT,
                },
            ),
        }
    }
}

impl ExecError {
    /// The error of `kind` at `at`.
    pub(crate) fn new(at: Location, kind: ExecErrorKind) -> ExecError {
        ExecError { kind, at }
    }

    /// Where in the statement text the error is.
    pub fn at(&self) -> Location {
        self.at
    }

    /// Its place, for moving it (`Error::relocate`).
    pub(crate) fn at_mut(&mut self) -> &mut Location {
        &mut self.at
    }

    /// When an interrupt stopped the statement (a TICK's included): what it left, as the
    /// error says it (`the statement running was stopped and changed nothing`, `TICK kept
    /// the 40 ticks it had run … and undid tick 41, which was running`).
    pub fn interrupted_outcome(&self) -> Option<String> {
        match &self.kind {
            ExecErrorKind::Interrupted | ExecErrorKind::TimedOut { .. } => {
                Some("the statement running was stopped and changed nothing".into())
            }
            ExecErrorKind::TickInterrupted { kept, clock, undone } => {
                Some(ticks_kept(*kept, *clock, *undone))
            }
            _ => None,
        }
    }

    pub(crate) fn arithmetic(at: Location, message: impl Into<String>) -> ExecError {
        ExecError::new(
            at,
            ExecErrorKind::Arithmetic {
                message: message.into(),
            },
        )
    }

    pub(crate) fn internal(at: Location, message: impl Into<String>) -> ExecError {
        ExecError::new(
            at,
            ExecErrorKind::Internal {
                message: message.into(),
            },
        )
    }

    pub(crate) fn transaction(at: Location, message: impl Into<String>) -> ExecError {
        ExecError::new(
            at,
            ExecErrorKind::Transaction {
                message: message.into(),
            },
        )
    }

    pub(crate) fn constraint(at: Location, message: impl Into<String>) -> ExecError {
        ExecError::new(
            at,
            ExecErrorKind::Constraint {
                message: message.into(),
            },
        )
    }

    /// A storage error, with stale or unknown entities turned into their own variants.
    pub(crate) fn storage(at: Location, source: StorageError) -> ExecError {
        let kind = match source {
            StorageError::NoSuchEntity(e) => ExecErrorKind::NoSuchEntity { entity: e.to_bits() },
            StorageError::DespawnedEntity(e) => ExecErrorKind::DespawnedEntity { entity: e.to_bits() },
            source => ExecErrorKind::Storage { source },
        };
        ExecError::new(at, kind)
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

/// ` at line L, column C` for a known place; nothing for a statement's whole run (a wait
/// before it had a place).
fn where_known(at: Location) -> String {
    if at.is_known() {
        format!(" at {at}")
    } else {
        String::new()
    }
}
