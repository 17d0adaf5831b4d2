//! The storage layer: an archetype Entity-Component-System held in memory.
//!
//! Entities are generational ids (`entity.rs`); component types are declared at run time
//! (`component.rs`); every distinct component set is one archetype table (`table.rs`) of
//! dense typed columns (`column.rs`), found by a stable hash of the set (`archetypes.rs`,
//! `hash.rs`). `World` (`world.rs`) is the one type that changes them, atomically per
//! operation; `query.rs` is the columnar door for loops over matching tables.
//! `observe.rs` is the seam for structures kept beside the tables (indexes, change
//! tracking, a journal): the world tells each `Observer` of every change it makes.
//!
//! Nothing here knows SQL, nor any layer above: names arrive resolved to ids, values
//! already of the declared type, and observers are known only by their trait.

mod archetypes;
mod column;
mod component;
mod entity;
mod error;
mod hash;
mod key;
mod observe;
mod query;
mod table;
#[cfg(test)]
mod tests;
mod value;
mod world;

pub use column::{Column, ColumnValue};
pub use component::{ComponentDef, ComponentId, FieldDef, FieldId};
pub use entity::Entity;
pub use error::StorageError;
pub use key::{Key, canonical_float, value_order};
pub use observe::Observer;
pub use query::{ColumnMut, Filter, TableMut, TableRef};
pub use table::{Table, TableId, TableName, TableRow};
pub use value::{FieldType, Value};
pub use world::World;
