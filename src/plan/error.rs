//! The bind/plan layer's errors: names that do not resolve, types that do not fit,
//! statements that make no sense against the catalog. Each says where (line and column)
//! and what was expected.

use crate::location::Location;

/// Why a statement could not be bound against the catalog. Every variant carries the
/// place in the statement text ([`PlanError::at`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A component name that the catalog does not hold.
    #[error("unknown component {name} at {at}{hint}")]
    UnknownComponent {
        /// The name as written.
        name: String,
        /// Where it was written.
        at: Location,
        /// A suggestion (a close name), empty or starting with "; ".
        hint: String,
    },
    /// A field that the named component does not declare.
    #[error("component {component} has no field {field} at {at} (its fields: {fields})")]
    UnknownField {
        /// The component that was named.
        component: String,
        /// The field as written.
        field: String,
        /// The component's fields, comma-separated.
        fields: String,
        /// Where the field was written.
        at: Location,
    },
    /// A bare name that no component in scope has as a field, and no alias names.
    #[error("unknown column {name} at {at}{hint}")]
    UnknownColumn {
        /// The name as written.
        name: String,
        /// Where it was written.
        at: Location,
        /// A suggestion, empty or starting with "; ".
        hint: String,
    },
    /// A bare name that more than one component in scope has as a field.
    #[error("{name} is ambiguous at {at}: it could be {candidates}; qualify it")]
    Ambiguous {
        /// The name as written.
        name: String,
        /// The qualified names it could mean, comma-separated.
        candidates: String,
        /// Where it was written.
        at: Location,
    },
    /// Operands or a value whose types do not fit where they are used.
    #[error("type mismatch at {at}: {message}")]
    TypeMismatch {
        /// What was expected and what was found.
        message: String,
        /// Where the expression starts.
        at: Location,
    },
    /// CREATE COMPONENT of a name that is already taken.
    #[error("component {name} already exists at {at}")]
    ComponentExists {
        /// The name.
        name: String,
        /// Where the statement names it.
        at: Location,
    },
    /// A call of a function that does not exist.
    #[error("unknown function {name} at {at}{hint}")]
    UnknownFunction {
        /// The name as written.
        name: String,
        /// Where it was written.
        at: Location,
        /// A suggestion, empty or starting with "; ".
        hint: String,
    },
    /// A parameter (`?1`, `:name`) that the statement uses but was given no value.
    #[error("no value given for parameter {name} at {at}")]
    MissingParameter {
        /// The parameter as written.
        name: String,
        /// Where it was written.
        at: Location,
    },
    /// SQL that is valid elsewhere but that ecsql does not do (yet).
    #[error("{what} is not supported at {at}")]
    Unsupported {
        /// The feature.
        what: String,
        /// Where it was used.
        at: Location,
    },
    /// A statement that makes no sense against the catalog, with what was expected.
    #[error("{message} at {at}")]
    Invalid {
        /// What was wrong and what was expected.
        message: String,
        /// Where.
        at: Location,
    },
}

impl PlanError {
    /// Where in the statement text the error is.
    pub fn at(&self) -> Location {
        match self {
            PlanError::UnknownComponent { at, .. }
            | PlanError::UnknownField { at, .. }
            | PlanError::UnknownColumn { at, .. }
            | PlanError::Ambiguous { at, .. }
            | PlanError::TypeMismatch { at, .. }
            | PlanError::ComponentExists { at, .. }
            | PlanError::UnknownFunction { at, .. }
            | PlanError::MissingParameter { at, .. }
            | PlanError::Unsupported { at, .. }
            | PlanError::Invalid { at, .. } => *at,
        }
    }

    /// Makes this the error of the same text begun at `start` of a larger one
    /// (`Location::moved_to`).
    pub(crate) fn move_to(&mut self, start: Location) {
        match self {
            PlanError::UnknownComponent { at, .. }
            | PlanError::UnknownField { at, .. }
            | PlanError::UnknownColumn { at, .. }
            | PlanError::Ambiguous { at, .. }
            | PlanError::TypeMismatch { at, .. }
            | PlanError::ComponentExists { at, .. }
            | PlanError::UnknownFunction { at, .. }
            | PlanError::MissingParameter { at, .. }
            | PlanError::Unsupported { at, .. }
            | PlanError::Invalid { at, .. } => *at = at.moved_to(start),
        }
    }

    pub(crate) fn invalid(at: Location, message: impl Into<String>) -> PlanError {
        PlanError::Invalid {
            message: message.into(),
            at,
        }
    }

    pub(crate) fn type_mismatch(at: Location, message: impl Into<String>) -> PlanError {
        PlanError::TypeMismatch {
            message: message.into(),
            at,
        }
    }
}
