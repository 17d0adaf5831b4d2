//! ecsql: an in-memory entity database. Underneath, an archetype Entity-Component-System;
//! on top, an SQL-like language.
#![doc = include_str!("../README.md")]

pub mod error;
pub mod parse;
pub mod storage;

pub use error::{Error, Result};
pub use storage::{
    Column, ColumnValue, ComponentDef, ComponentId, Entity, FieldDef, FieldId, FieldType, Filter,
    StorageError, Table, TableId, TableName, TableRow, Value, World,
};
