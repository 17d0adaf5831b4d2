//! ecsql: an in-memory entity database. Underneath, an archetype Entity-Component-System;
//! on top, an SQL-like language.
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod connection;
mod error;
mod exec;
mod files;
mod func;
mod garbage;
mod index;
mod location;
mod parse;
mod plan;
mod schedule;
mod storage;
mod transfer;
mod vector;

/// The examples of docs/embedding.md, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/embedding.md")]
pub struct EmbeddingGuide;

pub use connection::{
    CachedStatement, Connection, DEFAULT_BUSY_TIMEOUT, DEFAULT_CHECKPOINT_SIZE, DEFAULT_MIN_PARALLEL_ROWS,
    Database, FromRow, FromValue, InterruptHandle, MAX_THREADS, OpenOptions, OpenProgress, Params, Row,
    RowIndex, Rows, Statement, StatementResult, Synchronous, ToParam, Transaction,
};
pub use error::{Error, FileError, Result};
pub use exec::{Clock, ExecError};
pub use index::{IndexError, Indexes, create_index, drop_index};
pub use location::Location;
pub use parse::ParseError;
pub use plan::{OutputColumn, ParamValues, PlanError};
pub use schedule::{RustSystem, ScheduleError};
pub use storage::{
    Column, ColumnValue, ComponentDef, ComponentId, Entity, EventId, EventQueue, FieldDef, FieldId,
    FieldType, Filter, MarkList, RemovalLog, SnapshotError, StorageError, StorageKind, Table, TableId,
    TableName, TableRow, Value, World,
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
