//! The storage layer's errors. Each names what was wrong and with what (entity, component,
//! field, expected and found type), so the language layer only has to add where in the
//! statement it happened.

use super::component::ComponentId;
use super::entity::Entity;
use super::value::FieldType;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StorageError {
    #[error("rows {start}..{end} are not within the table's {len} rows")]
    RowRange { start: usize, end: usize, len: usize },

    #[error("entity {0} does not exist: no entity with that id was ever spawned")]
    NoSuchEntity(Entity),

    #[error("entity {0} was despawned; its id no longer refers to anything")]
    DespawnedEntity(Entity),

    #[error("unknown component {0}")]
    UnknownComponent(String),

    #[error("component id {0} does not name a component of this database (it was dropped)")]
    UnknownComponentId(ComponentId),

    #[error("component {0} already exists")]
    ComponentExists(String),

    #[error("a {what} name must not be empty")]
    EmptyName { what: &'static str },

    #[error("component {component} declares field {field} twice")]
    DuplicateField { component: String, field: String },

    #[error("component {component} declares {count} fields; at most 65535 are allowed")]
    TooManyFields { component: String, count: usize },

    #[error("component {component} has no field {field}")]
    UnknownField { component: String, field: String },

    #[error("component {component} has {count} fields; there is no field number {index}")]
    FieldIndexOutOfRange {
        component: String,
        index: usize,
        count: usize,
    },

    #[error("type mismatch for {component}.{field}: expected {expected}, found {found}")]
    TypeMismatch {
        component: String,
        field: String,
        expected: FieldType,
        found: String,
    },

    #[error("component {component} has {expected} fields but {found} values were given")]
    FieldCount {
        component: String,
        expected: usize,
        found: usize,
    },

    #[error("component {0} is given more than once for one entity")]
    RepeatedComponent(String),

    #[error("entity {entity} already has component {component}")]
    AlreadyHasComponent { entity: Entity, component: String },

    #[error("entity {entity} does not have component {component}")]
    MissingComponent { entity: Entity, component: String },

    #[error("the batch has {expected} entities but column {component}.{field} has {found} values")]
    BatchLength {
        component: String,
        field: String,
        expected: usize,
        found: usize,
    },

    #[error("cannot spawn entity {entity}: {reason}")]
    IdTaken { entity: Entity, reason: String },

    #[error("cannot spawn {requested} entities: only {available} entity ids are left")]
    OutOfEntities { requested: usize, available: u64 },

    #[error("all 4294967296 component ids have been used")]
    OutOfComponentIds,

    #[error("archetype table {table} has no column {component}.{field}: it does not hold {component}")]
    ColumnNotInTable {
        table: String,
        component: String,
        field: String,
    },

    #[error("column {component}.{field} holds {stored} values; it was asked for as {requested}")]
    ColumnType {
        component: String,
        field: String,
        stored: FieldType,
        requested: FieldType,
    },

    #[error("column {component}.{field} is asked for twice in one borrow; ask for each column once")]
    ColumnRepeated { component: String, field: String },
}
