//! ecsql: an in-memory entity database. Underneath, an archetype Entity-Component-System;
//! on top (in progress), an SQL-like language.
//!
//! Today the crate is its storage kernel, [`World`]: generational entity ids, components
//! declared at run time, one archetype table per component set, each field one dense typed
//! column, and a columnar door ([`World::matching_tables`], [`World::table_mut`]) through
//! which Rust loops read and write `&[f32]`/`&mut [f32]` slices directly.
#![doc = include_str!("../README.md")]

pub mod error;
pub mod storage;

pub use error::{Error, Result};
pub use storage::{
    Column, ColumnValue, ComponentDef, ComponentId, Entity, FieldDef, FieldId, FieldType, Filter,
    StorageError, Table, TableId, TableName, TableRow, Value, World,
};
