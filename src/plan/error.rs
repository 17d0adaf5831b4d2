//! The bind/plan layer's errors: names that do not resolve, types that do not fit,
//! statements that make no sense against the catalog. Each says where (line and column)
//! and what was expected.

use crate::parse::Location;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("unknown component {name} at {at}{hint}")]
    UnknownComponent {
        name: String,
        at: Location,
        hint: String,
    },
    #[error("component {component} has no field {field} at {at} (its fields: {fields})")]
    UnknownField {
        component: String,
        field: String,
        fields: String,
        at: Location,
    },
    #[error("unknown column {name} at {at}{hint}")]
    UnknownColumn {
        name: String,
        at: Location,
        hint: String,
    },
    #[error("{name} is ambiguous at {at}: it could be {candidates}; qualify it")]
    Ambiguous {
        name: String,
        candidates: String,
        at: Location,
    },
    #[error("type mismatch at {at}: {message}")]
    TypeMismatch { message: String, at: Location },
    #[error("component {name} already exists at {at}")]
    ComponentExists { name: String, at: Location },
    #[error("unknown function {name} at {at}{hint}")]
    UnknownFunction {
        name: String,
        at: Location,
        hint: String,
    },
    #[error("no value given for parameter {name} at {at}")]
    MissingParameter { name: String, at: Location },
    #[error("{what} is not supported at {at}")]
    Unsupported { what: String, at: Location },
    #[error("{message} at {at}")]
    Invalid { message: String, at: Location },
}

impl PlanError {
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
