//! The storage layer: an archetype Entity-Component-System held in memory.
//!
//! The ids (`ids.rs`) are what everything else names: entities, components, fields,
//! tables, rows. The entity index (`entity.rs`) keeps generations and rows; component types are declared at run time
//! (`component.rs`); every distinct component set is one archetype table (`table/`) of
//! dense typed columns (`column.rs`, each kept in a `cell.rs` with its zone maps and filters), found by a stable hash of the set (`archetypes.rs`,
//! `hash.rs`). `World` (`world/`) is the one type that changes them, atomically per
//! operation; `query.rs` is the columnar door for loops over matching tables.
//! Events (`events.rs`) are rows that are not entities: a queue of typed columns per event
//! type, appended to and dropped from the front. Removal logs (`removals.rs`) keep the ids
//! that lost a component, for `removed()`.
//! `observe.rs` is the seam for structures kept beside the tables (indexes, change
//! tracking, a journal): the world tells each `Observer` of every change it makes.
//!
//! Nothing here knows SQL, nor any layer above: names arrive resolved to ids, values
//! already of the declared type, and observers are known only by their trait.

mod archetypes;
mod cell;
mod column;
mod component;
mod entity;
mod error;
mod events;
mod filters;
mod hash;
mod ids;
mod key;
mod loan;
mod marks;
#[cfg(test)]
mod marks_model;
mod observe;
mod query;
mod removals;
mod slots;
mod snapshot;
mod sparse;
mod table;
#[cfg(test)]
mod tests;
mod undo;
mod value;
mod world;
mod zones;

pub use cell::ColumnCell;
pub use column::{Column, ColumnSliceMut, ColumnValue};
pub(crate) use column::{SpareColumns, Values};
pub use component::{ComponentDef, FieldDef, StorageKind};
pub use error::StorageError;
pub use events::{DEFAULT_KEEP, EventQueue};
pub use filters::member_key;
pub use ids::{ComponentId, Entity, EventId, FieldId, LiveSet, TableId, TableRow};
pub use key::{Key, canonical_float, float_order, float_rank, value_order};
pub(crate) use loan::{Asked, Lent};
pub use marks::{BLOCK_ROWS, MarkList};
pub use observe::{Observer, Written};
pub(crate) use query::Lend;
pub use query::{ColumnMut, Filter, TableMut, TableRef};
pub use removals::RemovalLog;
pub(crate) use slots::SlotMap;
pub(crate) use snapshot::MAGIC as SNAPSHOT_MAGIC;
pub use snapshot::SnapshotError;
pub(crate) use snapshot::read::{In as BytesIn, ReadBytes};
pub(crate) use snapshot::write::Out as BytesOut;
pub use table::{Table, TableName};
pub use value::{FieldType, Value};
pub(crate) use world::SpawnRow;
pub use world::World;
pub use zones::{KeyRange, ZoneKey};
