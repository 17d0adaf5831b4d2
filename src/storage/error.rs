//! The storage layer's errors. Each names what was wrong and with what (entity, component,
//! field, expected and found type), so the language layer only has to add where in the
//! statement it happened.

use super::ids::{ComponentId, Entity, EventId};
use super::value::FieldType;

/// Why the storage kernel refused a read or a write. A refused write changed nothing.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// A row range that runs past the end of a table.
    #[error("rows {start}..{end} are not within the table's {len} rows")]
    RowRange {
        /// The first row asked for.
        start: usize,
        /// One past the last row asked for.
        end: usize,
        /// The table's row count.
        len: usize,
    },

    /// `begin` while a transaction is open.
    #[error("a transaction is already open (commit or roll it back first)")]
    TransactionOpen,

    /// `begin`, `commit` or `rollback` while a tick runs (from a Rust system).
    #[error(
        "a tick is running: a system cannot begin, commit or roll back a transaction (the tick is undone or kept as a whole)"
    )]
    InSavepoint,

    /// `commit` or `rollback` with no transaction open.
    #[error("no transaction is open (begin starts one)")]
    NoTransaction,

    /// An id that no spawn ever returned.
    #[error("entity {0} does not exist: no entity with that id was ever spawned")]
    NoSuchEntity(Entity),

    /// An id whose entity was despawned.
    #[error("entity {0} was despawned; its id no longer refers to anything")]
    DespawnedEntity(Entity),

    /// A component name that the catalog does not hold.
    #[error("unknown component {0}")]
    UnknownComponent(String),

    /// A component id whose component was dropped.
    #[error("component id {0} does not name a component of this database (it was dropped)")]
    UnknownComponentId(ComponentId),

    /// A door filter that names a sparse component beside others: its values are not in
    /// the archetype tables.
    #[error(
        "{0} is sparse: its values are in a table of its own, not beside other components; filter on it alone (Filter::new().with({0})) to get that table, or look each entity up (World::has, World::value)"
    )]
    SparseInFilter(String),

    /// A component name that is already taken.
    #[error("component {0} already exists")]
    ComponentExists(String),

    /// A name already given to something of the other kind (components and events share
    /// one namespace).
    #[error("{name} is already the name of {by}")]
    NameTaken {
        /// The name.
        name: String,
        /// "an event" or "a component".
        by: &'static str,
    },

    /// An event type name that the catalog does not hold.
    #[error("unknown event {0}")]
    UnknownEvent(String),

    /// An event id whose event type was dropped.
    #[error("event id {0:?} does not name an event type of this database (it was dropped)")]
    UnknownEventId(EventId),

    /// An event type declared to keep its rows for no tick at all.
    #[error("event {0} must keep its rows for at least 1 tick")]
    KeepZero(String),

    /// Rows emitted with the wrong columns.
    #[error("rows for event {event} do not fit it: {message}")]
    EventShape {
        /// The event type.
        event: String,
        /// What did not fit.
        message: String,
    },

    /// An empty component or field name.
    #[error("a {what} name must not be empty")]
    EmptyName {
        /// "component" or "field".
        what: &'static str,
    },

    /// A component that declares a field name twice.
    #[error("component {component} declares field {field} twice")]
    DuplicateField {
        /// The component.
        component: String,
        /// The repeated field.
        field: String,
    },

    /// A component with more fields than a column index can address.
    #[error("component {component} declares {count} fields; at most 65535 are allowed")]
    TooManyFields {
        /// The component.
        component: String,
        /// How many fields it declares.
        count: usize,
    },

    /// A field name that the component does not declare.
    #[error("component {component} has no field {field}")]
    UnknownField {
        /// The component.
        component: String,
        /// The field asked for.
        field: String,
    },

    /// A field number past the component's last field.
    #[error("component {component} has {count} fields; there is no field number {index}")]
    FieldIndexOutOfRange {
        /// The component.
        component: String,
        /// The number asked for.
        index: usize,
        /// How many fields it has.
        count: usize,
    },

    /// A value of another type than the field's.
    #[error("type mismatch for {component}.{field}: expected {expected}, found {found}")]
    TypeMismatch {
        /// The component.
        component: String,
        /// The field.
        field: String,
        /// The field's type.
        expected: FieldType,
        /// The value given, with its type.
        found: String,
    },

    /// A component value with too few or too many field values.
    #[error("component {component} has {expected} fields but {found} values were given")]
    FieldCount {
        /// The component.
        component: String,
        /// Its number of fields.
        expected: usize,
        /// The number of values given.
        found: usize,
    },

    /// One component given twice for one entity (the component).
    #[error("component {0} is given more than once for one entity")]
    RepeatedComponent(String),

    /// Attaching a component that the entity already has.
    #[error("entity {entity} already has component {component}")]
    AlreadyHasComponent {
        /// The entity.
        entity: Entity,
        /// The component.
        component: String,
    },

    /// Reading, writing or detaching a component that the entity does not have.
    #[error("entity {entity} does not have component {component}")]
    MissingComponent {
        /// The entity.
        entity: Entity,
        /// The component.
        component: String,
    },

    /// A batch spawn whose columns differ in length.
    #[error("the batch has {expected} entities but column {component}.{field} has {found} values")]
    BatchLength {
        /// The component of the short or long column.
        component: String,
        /// Its field.
        field: String,
        /// The batch's entity count.
        expected: usize,
        /// The column's length.
        found: usize,
    },

    /// SPAWN AT an id that is alive, or that cannot be given out.
    #[error("cannot spawn entity {entity}: {reason}")]
    IdTaken {
        /// The id asked for.
        entity: Entity,
        /// Why it cannot be given.
        reason: String,
    },

    /// More entities asked for than ids are left.
    #[error("cannot spawn {requested} entities: only {available} entity ids are left")]
    OutOfEntities {
        /// How many were asked for.
        requested: usize,
        /// How many ids are left.
        available: u64,
    },

    /// Every component id has been given out.
    #[error("all 4294967296 component ids have been used")]
    OutOfComponentIds,

    /// Every event type id has been given out.
    #[error("all 4294967296 event type ids have been used")]
    OutOfEventIds,

    /// A column borrowed from a table whose entities do not have its component.
    #[error("archetype table {table} has no column {component}.{field}: it does not hold {component}")]
    ColumnNotInTable {
        /// The table's name.
        table: String,
        /// The component asked for.
        component: String,
        /// The field asked for.
        field: String,
    },

    /// A column borrowed as another type than the one it stores.
    #[error("column {component}.{field} holds {stored} values; it was asked for as {requested}")]
    ColumnType {
        /// The component.
        component: String,
        /// The field.
        field: String,
        /// The type the column stores.
        stored: FieldType,
        /// The type asked for.
        requested: FieldType,
    },

    /// A Rust system registered with a `SystemAccess` reached a field its declaration does
    /// not name (to read: not declared read or written; to write: not declared written).
    #[error(
        "system {system} {how} {component}.{field}, which the access it was registered with does not declare (add .{how}(\"{component}.{field}\") to its SystemAccess; a field declared with .writes may be read too)"
    )]
    Undeclared {
        /// The system.
        system: String,
        /// The component.
        component: String,
        /// The field.
        field: String,
        /// `"reads"` or `"writes"`.
        how: &'static str,
    },

    /// A Rust system registered with a `SystemAccess` looked for tables by components
    /// none of which its declaration names.
    #[error(
        "system {system} looks for tables by components its access does not declare (a filter of a SystemView must ask for a component the SystemAccess names)"
    )]
    UndeclaredTables {
        /// The system.
        system: String,
    },

    /// One column asked for twice in one mutable borrow.
    #[error("column {component}.{field} is asked for twice in one borrow; ask for each column once")]
    ColumnRepeated {
        /// The component.
        component: String,
        /// The field.
        field: String,
    },
}
