//! The index layer's errors: what was asked of which index, component or field, and what
//! would have worked instead.

use crate::storage::{FieldType, StorageError};

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum IndexError {
    /// The component or a field named is not in the catalog.
    #[error(transparent)]
    Storage(#[from] StorageError),

    #[error("an index name must not be empty")]
    EmptyName,

    #[error("index {0} already exists")]
    Exists(String),

    #[error("unknown index {0} (SHOW INDEXES lists them)")]
    Unknown(String),

    #[error("{component} ({fields}) already has the {kind} index {name}")]
    Duplicate {
        component: String,
        fields: String,
        kind: &'static str,
        name: String,
    },

    #[error("a spatial index takes 2 or 3 fields (x, y [, z]) of one component, found {0}")]
    SpatialFieldCount(usize),

    #[error("CREATE INDEX takes one field, found {0} (CREATE SPATIAL INDEX indexes points of 2 or 3 fields)")]
    ValueFieldCount(usize),

    #[error("{component}.{field} is {ty}; a spatial index needs INT, REAL or FLOAT coordinates")]
    NotACoordinate {
        component: String,
        field: String,
        ty: FieldType,
    },

    #[error("{component} names field {field} twice")]
    RepeatedField { component: String, field: String },
}
