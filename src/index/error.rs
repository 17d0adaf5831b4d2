//! The index layer's errors: what was asked of which index, component or field, and what
//! would have worked instead.

use crate::storage::{FieldType, StorageError};

/// Why an index could not be made or dropped.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The component or a field named is not in the catalog.
    #[error(transparent)]
    Storage(#[from] StorageError),

    /// CREATE INDEX with an empty name.
    #[error("an index name must not be empty")]
    EmptyName,

    /// CREATE INDEX of a name that is already taken (the name).
    #[error("index {0} already exists")]
    Exists(String),

    /// DROP INDEX of a name that names no index (the name).
    #[error("unknown index {0} (SHOW INDEXES lists them)")]
    Unknown(String),

    /// An index of the same kind over the same fields already exists.
    #[error("{component} ({fields}) already has the {kind} index {name}")]
    Duplicate {
        /// The component.
        component: String,
        /// The fields, comma-separated.
        fields: String,
        /// "spatial", "ordered" or "relation".
        kind: &'static str,
        /// The name of the index that exists.
        name: String,
    },

    /// Fields of more than one component (the first field's component named).
    #[error("an index's fields are all of one component; {0} names fields of another")]
    MixedComponents(String),

    /// CREATE SPATIAL INDEX over a number of fields other than 2 or 3 (the number).
    #[error("a spatial index takes 2 or 3 fields (x, y [, z]) of one component, found {0}")]
    SpatialFieldCount(usize),

    /// CREATE INDEX over a number of fields other than 1 (the number).
    #[error(
        "an ordered or relation index takes one field, found {0} (in SQL, CREATE INDEX ON C (a, b) makes a function index over several; CREATE SPATIAL INDEX indexes points of 2 or 3 fields)"
    )]
    ValueFieldCount(usize),

    /// A filter index over more or fewer than one field.
    #[error("a filter index takes one field, found {0}: make one filter index for each field")]
    FilterFieldCount(usize),

    /// A spatial index over a field that is not a number.
    #[error("{component}.{field} is {ty}; a spatial index needs INT, REAL or FLOAT coordinates")]
    NotACoordinate {
        /// The component.
        component: String,
        /// The field.
        field: String,
        /// Its type.
        ty: FieldType,
    },

    /// A spatial index that names one field twice.
    #[error("{component} names field {field} twice")]
    RepeatedField {
        /// The component.
        component: String,
        /// The field named twice.
        field: String,
    },
}
