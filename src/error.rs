//! The one error type of the crate's API. Each layer has its own error (parse, plan, exec,
//! storage, schedule); this folds them together, so a program can match the layer and
//! then the kind (`Error::Plan(PlanError { kind: PlanErrorKind::UnknownComponent { .. },
//! .. })`) or just print it.

use crate::exec::ExecError;
use crate::index::IndexError;
use crate::location::Location;
use crate::parse::ParseError;
use crate::plan::PlanError;
use crate::schedule::ScheduleError;
use crate::storage::StorageError;

/// Any error of the crate's API: one variant per layer, each wrapping that layer's error,
/// and the API's own.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The text is not a statement: bad syntax, with line and column.
    #[error("syntax error: {0}")]
    Parse(#[from] ParseError),
    /// Names or types do not fit the catalog: unknown component or field, ambiguity,
    /// type mismatch, missing parameter.
    #[error("{0}")]
    Plan(#[from] PlanError),
    /// Running the statement failed: no such entity, constraint, arithmetic.
    #[error("{0}")]
    Exec(#[from] ExecError),
    /// From the storage kernel, used directly through `World`.
    #[error("{0}")]
    Storage(#[from] StorageError),
    /// From an index definition made directly (`index::create_index`).
    #[error("{0}")]
    Index(#[from] IndexError),
    /// A system or phase statement, or a TICK, that cannot be done: an unknown or taken
    /// name, an order that makes a cycle, a bad tick count; or a tick that a system failed
    /// in (`ScheduleError::System`: the tick, the system, where in it and why), undone whole
    /// while the ticks before it of the same `TICK n` stay.
    #[error("{0}")]
    Schedule(#[source] ScheduleError),
    /// A program's own error, returned from a closure ecsql called (`Database::open_with`'s
    /// set-up).
    #[error("{0}")]
    External(String),
    /// A result column asked for by a name or position the result does not have.
    #[error("no result column {0}")]
    InvalidColumn(String),
    /// A row read as a tuple of another size (`FromRow`): a tuple takes every column.
    #[error(
        "a row of {found} columns read as a tuple of {wanted} values: a tuple takes every column of the row, in order (select only the columns it holds)"
    )]
    InvalidColumnCount {
        /// The values the tuple holds.
        wanted: usize,
        /// The columns the row has.
        found: usize,
    },
    /// A result value read as a Rust type it does not convert to.
    #[error("column {column} holds {found}, which cannot be read as {wanted}")]
    InvalidColumnType {
        /// The column's name or position.
        column: String,
        /// The value's type.
        found: String,
        /// The Rust type asked for.
        wanted: &'static str,
    },
    /// `query_row` of a query that returned nothing.
    #[error("the query returned no rows")]
    QueryReturnedNoRows,
    /// More positional values than the statement has parameters (as in rusqlite).
    #[error(
        "{} given, but the statement has {}",
        counted(*given, "parameter value was", "parameter values were"),
        counted(*expected, "positional parameter", "positional parameters")
    )]
    InvalidParameterCount {
        /// How many positional values were given.
        given: usize,
        /// How many positional parameters the statement has (its highest `?N`).
        expected: usize,
    },
    /// A named value for a parameter the statement does not have (as in rusqlite).
    #[error("the statement has no parameter named {0} (its names: {1})")]
    InvalidParameterName(String, String),
    /// `execute` of a query, or of a write with RETURNING, that returned rows (as in
    /// rusqlite): the rows would be lost. A write was done all the same.
    #[error(
        "execute() is for statements that return no rows, and this one returned rows: read a query's rows with query, query_row or query_map; a write with RETURNING was done all the same (run it with query to read its rows, not again)"
    )]
    ExecuteReturnedResults,
    /// The database stayed locked by another connection for the whole busy timeout, or
    /// by a transaction on this same thread (which waiting could never end).
    #[error("{}", placed(message, *at))]
    Busy {
        /// What held it, for how long, and what to do: `what: why`.
        message: String,
        /// Where the statement that waited begins (unknown for an API call that is no
        /// statement).
        at: Location,
    },
    /// Misuse of the API: a write in `open_with`'s set-up, a statement run from inside
    /// `with_world` on the same database, a tick's length that is no length.
    #[error("{}", placed(message, *at))]
    Misuse {
        /// What was done and why it cannot be: `what: why`.
        message: String,
        /// Where the statement begins, when a statement did it.
        at: Location,
    },
    /// A file database's files: opening, recovering, journaling, checkpointing.
    #[error("{0}")]
    File(FileError),
}

/// `.optional()` on the result of a query of one row (`query_row`), as rusqlite's trait
/// of the same name: no row is `Ok(None)` instead of [`Error::QueryReturnedNoRows`].
///
/// ```
/// # use ecsql::{Database, OptionalExtension};
/// let conn = Database::open_in_memory().connect();
/// conn.execute_batch("CREATE COMPONENT Health (hp INT); SPAWN Health(5);")?;
/// let low: Option<i64> = conn
///     .query_row("SELECT Health.hp FROM Health WHERE Health.hp < 10", (), |r| r.get(0))
///     .optional()?;
/// assert_eq!(low, Some(5));
/// let none: Option<i64> = conn
///     .query_row("SELECT Health.hp FROM Health WHERE Health.hp > 10", (), |r| r.get(0))
///     .optional()?;
/// assert_eq!(none, None);
/// # Ok::<(), ecsql::Error>(())
/// ```
pub trait OptionalExtension<T> {
    /// `Ok(None)` for no row; any other error stays an error.
    fn optional(self) -> Result<Option<T>>;
}

impl<T> OptionalExtension<T> for Result<T> {
    fn optional(self) -> Result<Option<T>> {
        match self {
            Ok(value) => Ok(Some(value)),
            Err(Error::QueryReturnedNoRows) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl Error {
    /// Where in the statement text the error is, when it has a place.
    pub fn location(&self) -> Option<Location> {
        let at = match self {
            Error::Parse(e) => e.at,
            Error::Plan(e) => e.at(),
            Error::Exec(e) => e.at(),
            Error::Schedule(e) => e.at(),
            Error::Busy { at, .. } | Error::Misuse { at, .. } => *at,
            _ => return None,
        };
        at.is_known().then_some(at)
    }

    /// Makes the error of a statement parsed as beginning at line 1, column 1 the one
    /// its text gives parsed where it begins, at `start` of a larger text. Only a
    /// statement's own errors move (a parse, plan or run error, a wait for the lock),
    /// never a schedule's, whose places may be in a system's text.
    pub(crate) fn move_to(&mut self, start: Location) {
        self.relocate(|at| at.moved_to(start));
    }

    /// Puts the place of a statement's own error (as `move_to` names them) where `to`
    /// says; a place not known stays so.
    pub(crate) fn relocate(&mut self, to: impl Fn(Location) -> Location) {
        let at = match self {
            Error::Parse(e) => &mut e.at,
            Error::Plan(e) => e.at_mut(),
            Error::Exec(e) => e.at_mut(),
            Error::Busy { at, .. } | Error::Misuse { at, .. } => at,
            _ => return,
        };
        if at.is_known() {
            *at = to(*at);
        }
    }
}

/// A lock's or a misuse's message (`what: why`) with the place of its statement, when it
/// has one, after the what: `database is busy at line 3, column 1: …`.
fn placed(message: &str, at: Location) -> String {
    match (at.is_known(), message.split_once(": ")) {
        (true, Some((what, why))) => format!("{what} at {at}: {why}"),
        (true, None) => format!("{message} at {at}"),
        (false, _) => message.to_owned(),
    }
}

/// `n` and the noun phrase that goes with it: `1 parameter value was`, `2 … were`.
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The schedule's errors as the API gives them: a statement that did not bind or failed
/// as its layer's own error, the rest (a failed tick among them) as `Error::Schedule`.
impl From<ScheduleError> for Error {
    fn from(e: ScheduleError) -> Error {
        match e {
            ScheduleError::Plan(e) => Error::Plan(e),
            ScheduleError::Exec(e) => Error::Exec(e),
            ScheduleError::Storage(e) => Error::Storage(e),
            other => Error::Schedule(other),
        }
    }
}

/// Why a file database could not be opened, or could not keep a change. Each names the
/// file (and, for damage, the byte offset).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// Reading or writing a file failed.
    #[error("cannot {action} {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What was being done: `open`, `read`, `write the journal`, …
        action: &'static str,
        /// The system's error.
        message: String,
    },
    /// Another `Database` holds the file open (in this process or another).
    #[error(
        "{path} is open in another process (or by another Database of this one, perhaps by another name: a link to the same file), or being written by one (a SAVE, a COPY, an .output): a database file has one writer at a time; close the other first"
    )]
    Locked {
        /// The database file.
        path: String,
    },
    /// The snapshot is damaged, cut short, from a newer version or not a snapshot.
    #[error("{path}: {message}")]
    Snapshot {
        /// The snapshot file.
        path: String,
        /// What is wrong, with the byte offset.
        message: String,
    },
    /// The journal is damaged before its last record (a damaged or unfinished last record
    /// is cut off, as a write the crash did not finish).
    #[error("{path} is damaged at byte {offset}: {message}")]
    Journal {
        /// The journal file.
        path: String,
        /// Where the damage is.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// A journaled statement failed when run again on opening.
    #[error("{path}: the record at byte {offset} ({statement}) cannot be run again: {message}")]
    Replay {
        /// The journal file.
        path: String,
        /// The record's offset.
        offset: u64,
        /// The statement.
        statement: String,
        /// Why.
        message: String,
    },
    /// The database was left with changes in memory that its file does not have (a
    /// closure given to `with_world_mut` panicked halfway): it takes no more statements,
    /// so that memory and file never disagree. Opened again, it is as of its last commit.
    #[error(
        "{path} can no longer be used here: {why}, which left changes in memory that the file does not have; open the database again (Database::open) to go on from its last commit"
    )]
    Abandoned {
        /// The database file.
        path: String,
        /// What happened.
        why: String,
    },
    /// Opening was stopped (an interrupt, or `OpenOptions::progress` said so) while it
    /// ran the journal. Nothing was changed: opened again, the journal runs to its end.
    #[error(
        "opening {path} was stopped after running {replayed} of its journal's {total} bytes: nothing was changed, and opening it again runs the journal to its end"
    )]
    OpenInterrupted {
        /// The database file.
        path: String,
        /// The journal's bytes run before it stopped.
        replayed: u64,
        /// The journal's bytes of records.
        total: u64,
    },
    /// The path cannot be a database: a folder, or a journal without its snapshot.
    #[error("{path}: {message}")]
    Invalid {
        /// The path.
        path: String,
        /// Why.
        message: String,
    },
}

/// A result whose error is the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A result whose error is boxed, for the crate's hot paths: handed back, it is the size
/// of its value rather than of the largest error (`Error` is 120 bytes), and so costs no
/// copy of a wide value on the way out. The API converts it back (`Error: From<Box<Error>>`).
pub(crate) type BoxResult<T> = std::result::Result<T, Box<Error>>;

impl From<Box<Error>> for Error {
    fn from(boxed: Box<Error>) -> Error {
        *boxed
    }
}
