//! ecsql: an in-memory entity database. Underneath, an archetype Entity-Component-System;
//! on top, an SQL-like language.
#![doc = include_str!("../README.md")]

pub mod connection;
pub mod error;
pub mod exec;
pub mod func;
pub mod index;
pub mod parse;
pub mod plan;
pub mod storage;
pub mod vector;

/// The examples of docs/embedding.md, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/embedding.md")]
pub struct EmbeddingGuide;

pub use connection::{
    Connection, Database, FromValue, Params, Row, Rows, Statement, StatementResult, ToParam,
};
pub use error::{Error, Result};
pub use exec::{ColumnSlice, ExecError};
pub use index::{IndexError, Indexes, create_index, drop_index};
pub use parse::{Location, ParseError};
pub use plan::{DataType, ParamValues, PlanError};
pub use storage::{
    Column, ColumnValue, ComponentDef, ComponentId, Entity, FieldDef, FieldId, FieldType, Filter,
    StorageError, Table, TableId, TableName, TableRow, Value, World,
};
