//! ecsql is an in-memory entity database for games and simulations: an archetype
//! Entity-Component-System underneath, queried, written and run with an SQL-like language.
//!
//! Entities are generational 64-bit ids ([`Entity`]); components are declared at run time
//! with typed fields; every distinct set of components is one archetype table whose fields
//! are dense typed columns. A program runs statements through a [`Connection`], in the
//! manner of rusqlite, and reaches the same tables as typed slices through the columnar
//! door ([`Connection::with_world_mut`]) where a loop must run at native ECS speed.
//!
//! # Example
//!
//! ```
//! use ecsql::{Database, Entity};
//!
//! let db = Database::open_in_memory();
//! let conn = db.connect();
//! conn.execute("CREATE COMPONENT Position (x REAL, y REAL)", ())?;
//! let first: Entity = conn.query_row("SPAWN Position(1, 2)", (), |row| row.get(0))?;
//! conn.execute("SPAWN Position(x => i, y => 0) FROM range(10) AS r(i)", ())?;
//!
//! // Parsed once, planned at its first run; the plan is kept between runs.
//! let mut stmt = conn.prepare("SELECT id, Position.x FROM Position WHERE Position.x < ?1 ORDER BY id")?;
//! let mut rows = stmt.query((1.5,))?;
//! let mut found = Vec::new();
//! while let Some(row) = rows.next()? {
//!     let (id, x): (Entity, f32) = (row.get(0)?, row.get("Position.x")?);
//!     found.push((id, x));
//! }
//! assert_eq!(found.len(), 3); // the entity at x = 1, and those at x = 0 and x = 1
//! assert_eq!(found[0], (first, 1.0));
//! # Ok::<(), ecsql::Error>(())
//! ```
//!
//! # The main types
//!
//! - [`Database`]: the database, in memory ([`Database::open_in_memory`]) or in a file
//!   ([`Database::open`]); `Send + Sync`, shared by every thread.
//! - [`Connection`]: one per thread, from [`Database::connect`]: [`execute`](Connection::execute),
//!   [`execute_batch`](Connection::execute_batch), [`query_row`](Connection::query_row),
//!   [`prepare`](Connection::prepare), [`transaction`](Connection::transaction),
//!   [`tick`](Connection::tick).
//! - [`Statement`]: a prepared statement, its plan and matching tables kept between runs.
//! - [`Rows`] and [`Row`]: a result; [`Row::get`] reads a value as any [`FromValue`] type,
//!   [`Rows::column`] hands over a whole column as a typed slice, and [`FromRow`] makes
//!   each row a type of the program's.
//! - [`Params`]: a statement's parameters, from tuples, arrays, slices and [`params!`]
//!   (`?`, `?N`), or by name from pairs and [`named_params!`] (`:name`, `$name`,
//!   `@name`); [`OptionalExtension`] turns no row into `None`.
//! - [`World`]: the storage kernel itself, the columnar door: [`World::matching_tables`]
//!   and [`World::table_mut`] give typed column slices of every matching table. A
//!   connection lends its world through [`Connection::with_world`] and
//!   [`Connection::with_world_mut`].
//! - [`Error`]: one error type, one variant per layer ([`ParseError`], [`PlanError`],
//!   [`ExecError`], [`StorageError`], …), with [`Error::location`] giving the line and
//!   column in the statement's text.
//!
//! # Cargo features
//!
//! - `cli` (on by default): the `ecsql` binary, the shell and script runner, and what it
//!   needs (rustyline). A program that embeds the library builds without it:
//!   `default-features = false`.
//! - `arrow`: `COPY` to and from Arrow IPC and Parquet files, and `Rows::record_batch`
//!   (the arrow and parquet crates; the `arrow_array` crate is re-exported).
//!
//! # Further reading
//!
//! In the repository: [docs/tutorial.md](docs/tutorial.md) (a first session),
//! [docs/language.md](docs/language.md) (every statement, type, operator and function),
//! [docs/embedding.md](docs/embedding.md) (this API at length),
//! [docs/durability.md](docs/durability.md) (a database in a file),
//! [docs/performance.md](docs/performance.md) (every workload beside hecs, SQLite and
//! DuckDB), [docs/scale-out.md](docs/scale-out.md) (Parquet for DuckDB, DataFusion and
//! Spark) and [docs/architecture.md](docs/architecture.md) (how it is built).
#![warn(missing_docs)]

mod catalog_views;
mod connection;
mod engine;
mod error;
mod exec;
mod files;
mod func;
mod garbage;
mod index;
mod location;
mod parse;
mod plan;
mod postgres;
mod schedule;
#[cfg(feature = "server")]
pub mod server;
mod storage;
mod transfer;
mod vector;

/// The examples of docs/embedding.md, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/embedding.md")]
pub struct EmbeddingGuide;

/// The examples of README.md, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use connection::{
    Added, Bundle, CachedStatement, Changed, ColumnSource, Component, Concurrency, Connection,
    DEFAULT_BUSY_TIMEOUT, DEFAULT_CHECKPOINT_SIZE, DEFAULT_MAX_PENDING, DEFAULT_MIN_PARALLEL_ROWS, Database,
    FieldSpec, FieldValue, FromRow, FromValue, InterruptHandle, MAX_THREADS, Mut, OpenOptions, OpenProgress,
    Params, Query, QueryData, QueryFilter, QueryIter, QueryTables, Ref, Row, RowIndex, Rows, Statement,
    StatementResult, Subscription, Synchronous, ToParam, Transaction, ValuesMut, With, Without,
};
/// `#[derive(Component)]` and `#[derive(FromRow)]`: a struct as a component, or as what
/// a query's row makes (the `derive` feature).
#[cfg(feature = "derive")]
pub use ecsql_derive::{Component, FromRow};
pub use error::{Error, FileError, OptionalExtension, Result};
pub use exec::{Clock, ExecError, ExecErrorKind};
pub use index::{IndexError, IndexMethod, Indexes, create_index, drop_index};
pub use location::Location;
pub use parse::ParseError;
pub use plan::{OutputColumn, ParamValues, PlanError, PlanErrorKind};
pub use schedule::{RustSystem, ScheduleError, SystemAccess, SystemView, ViewTable, ViewTableMut};
pub use storage::{
    Column, ColumnCell, ColumnValue, ComponentDef, ComponentId, Entity, EventId, EventQueue, FieldDef,
    FieldId, FieldType, Filter, MarkList, RemovalLog, SnapshotError, StorageError, StorageKind, Table,
    TableId, TableName, TableRow, Value, World,
};
pub use storage::{ColumnMut, TableMut, TableRef};
pub use vector::{ColumnSlice, DataType};

/// The `arrow-array` crate `Rows::record_batch` returns batches of (the `arrow` feature).
#[cfg(feature = "arrow")]
pub use arrow_array;

/// For programs that handle ecsql script text as the `ecsql` shell does: splitting it into
/// statements, checking its syntax, quoting names, writing floats as ecsql does.
pub mod script {
    pub use crate::connection::write_atomically;
    pub use crate::files::create_output;
    pub use crate::parse::{Split, is_blank, quote_name, split_statements};
    pub use crate::transfer::json::push_string as push_json_string;
    pub use crate::vector::format_float;

    use crate::ParseError;

    /// Checks that `sql` is one statement (a trailing `;` is allowed) that parses.
    pub fn check_one(sql: &str) -> Result<(), ParseError> {
        crate::parse::parse_one(sql).map(|_| ())
    }

    /// Checks that every statement of `sql` parses; gives how many there are.
    pub fn check(sql: &str) -> Result<usize, ParseError> {
        crate::parse::parse(sql).map(|statements| statements.len())
    }
}

/// The index structures on their own, for `benches/structures.rs` only: not part of the
/// API.
#[doc(hidden)]
pub mod bench_support {
    pub use crate::index::structures::{Buckets, Grid, Point};
}

/// A xorshift generator from `state`: the random inputs of the unit tests.
#[cfg(test)]
pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
