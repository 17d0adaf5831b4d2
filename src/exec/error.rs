//! The executor's errors: what went wrong while reading or writing rows, and at which
//! statement or expression.

use crate::index::IndexError;
use crate::parse::Location;
use crate::storage::StorageError;
use crate::vector::KernelError;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ExecError {
    /// Integer overflow, division by zero, a square root of a negative number…
    #[error("{message} at {at}")]
    Arithmetic { message: String, at: Location },
    #[error("entity {entity} does not exist at {at}")]
    NoSuchEntity { entity: u64, at: Location },
    #[error("entity {entity} was despawned at {at}")]
    DespawnedEntity { entity: u64, at: Location },
    #[error("type mismatch at {at}: {message}")]
    TypeMismatch { message: String, at: Location },
    /// A write the data forbids: attaching a component twice, NULL into a non-ENTITY field.
    #[error("{message} at {at}")]
    Constraint { message: String, at: Location },
    #[error("{message} at {at}")]
    Transaction { message: String, at: Location },
    #[error("{source} at {at}")]
    Storage { source: StorageError, at: Location },
    /// CREATE or DROP INDEX asked for what cannot be.
    #[error("{source} at {at}")]
    Index { source: IndexError, at: Location },
    /// A broken invariant inside ecsql, reported instead of a panic.
    #[error("internal error: {message} at {at}")]
    Internal { message: String, at: Location },
}

impl From<KernelError> for ExecError {
    fn from(e: KernelError) -> ExecError {
        match e {
            KernelError::Arithmetic { message, at } => ExecError::Arithmetic { message, at },
            KernelError::TypeMismatch { message, at } => ExecError::TypeMismatch { message, at },
            KernelError::Internal { message, at } => ExecError::Internal { message, at },
        }
    }
}

impl ExecError {
    pub fn at(&self) -> Location {
        match self {
            ExecError::Arithmetic { at, .. }
            | ExecError::NoSuchEntity { at, .. }
            | ExecError::DespawnedEntity { at, .. }
            | ExecError::TypeMismatch { at, .. }
            | ExecError::Constraint { at, .. }
            | ExecError::Transaction { at, .. }
            | ExecError::Storage { at, .. }
            | ExecError::Index { at, .. }
            | ExecError::Internal { at, .. } => *at,
        }
    }

    pub(crate) fn arithmetic(at: Location, message: impl Into<String>) -> ExecError {
        ExecError::Arithmetic {
            message: message.into(),
            at,
        }
    }

    pub(crate) fn internal(at: Location, message: impl Into<String>) -> ExecError {
        ExecError::Internal {
            message: message.into(),
            at,
        }
    }

    pub(crate) fn constraint(at: Location, message: impl Into<String>) -> ExecError {
        ExecError::Constraint {
            message: message.into(),
            at,
        }
    }

    /// A storage error, with stale or unknown entities turned into their own variants.
    pub(crate) fn storage(at: Location, source: StorageError) -> ExecError {
        match source {
            StorageError::NoSuchEntity(e) => ExecError::NoSuchEntity {
                entity: e.to_bits(),
                at,
            },
            StorageError::DespawnedEntity(e) => ExecError::DespawnedEntity {
                entity: e.to_bits(),
                at,
            },
            source => ExecError::Storage { source, at },
        }
    }
}
