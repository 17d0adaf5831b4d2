//! The bind/plan layer's errors: names that do not resolve, types that do not fit,
//! statements that make no sense against the catalog. Each says where (line and column,
//! held once beside the kind of error) and what was expected.

use std::fmt;

use crate::location::Location;

/// Why a statement could not be bound against the catalog: what did not fit
/// ([`PlanErrorKind`]) and the place in the statement text.
///
/// Match the kind: `Error::Plan(PlanError { kind: PlanErrorKind::UnknownComponent { name, .. }, .. })`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PlanError {
    /// What did not fit.
    pub kind: PlanErrorKind,
    /// Where in the statement text.
    pub at: Location,
}

/// What did not fit the catalog (the kind of a [`PlanError`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PlanErrorKind {
    /// A component name that the catalog does not hold.
    UnknownComponent {
        /// The name as written.
        name: String,
        /// A suggestion (a close name), empty or starting with "; ".
        hint: String,
    },
    /// A field that the named component does not declare.
    UnknownField {
        /// The component that was named.
        component: String,
        /// The field as written.
        field: String,
        /// The component's fields, comma-separated.
        fields: String,
    },
    /// A bare name that no component in scope has as a field, and no alias names.
    UnknownColumn {
        /// The name as written.
        name: String,
        /// A suggestion, empty or starting with "; ".
        hint: String,
    },
    /// A bare name that more than one component in scope has as a field.
    Ambiguous {
        /// The name as written.
        name: String,
        /// The qualified names it could mean, comma-separated.
        candidates: String,
    },
    /// Operands or a value whose types do not fit where they are used.
    TypeMismatch {
        /// What was expected and what was found.
        message: String,
    },
    /// CREATE COMPONENT of a name that is already taken.
    ComponentExists {
        /// The name.
        name: String,
    },
    /// A call of a function that does not exist.
    UnknownFunction {
        /// The name as written.
        name: String,
        /// A suggestion, empty or starting with "; ".
        hint: String,
    },
    /// A parameter (`?1`, `:name`) that the statement uses but was given no value.
    MissingParameter {
        /// The parameter as written.
        name: String,
    },
    /// SQL that is valid elsewhere but that ecsql does not do (yet).
    Unsupported {
        /// The feature.
        what: String,
    },
    /// A statement that makes no sense against the catalog, with what was expected.
    Invalid {
        /// What was wrong and what was expected.
        message: String,
    },
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.at;
        match &self.kind {
            PlanErrorKind::UnknownComponent { name, hint } => {
                write!(f, "unknown component {name} at {at}{hint}")
            }
            PlanErrorKind::UnknownField {
                component,
                field,
                fields,
            } => write!(
                f,
                "component {component} has no field {field} at {at} (its fields: {fields})"
            ),
            PlanErrorKind::UnknownColumn { name, hint } => write!(f, "unknown column {name} at {at}{hint}"),
            PlanErrorKind::Ambiguous { name, candidates } => {
                write!(
                    f,
                    "{name} is ambiguous at {at}: it could be {candidates}; qualify it"
                )
            }
            PlanErrorKind::TypeMismatch { message } => write!(f, "type mismatch at {at}: {message}"),
            PlanErrorKind::ComponentExists { name } => write!(f, "component {name} already exists at {at}"),
            PlanErrorKind::UnknownFunction { name, hint } => {
                write!(f, "unknown function {name} at {at}{hint}")
            }
            PlanErrorKind::MissingParameter { name } => {
                write!(f, "no value given for parameter {name} at {at}")
            }
            PlanErrorKind::Unsupported { what } => write!(f, "{what} is not supported at {at}"),
            PlanErrorKind::Invalid { message } => write!(f, "{message} at {at}"),
        }
    }
}

impl std::error::Error for PlanError {}

impl PlanError {
    /// The error of `kind` at `at`.
    pub(crate) fn new(at: Location, kind: PlanErrorKind) -> PlanError {
        PlanError { kind, at }
    }

    /// Where in the statement text the error is.
    pub fn at(&self) -> Location {
        self.at
    }

    /// Its place, for moving it (`Error::relocate`).
    pub(crate) fn at_mut(&mut self) -> &mut Location {
        &mut self.at
    }

    pub(crate) fn invalid(at: Location, message: impl Into<String>) -> PlanError {
        PlanError::new(
            at,
            PlanErrorKind::Invalid {
                message: message.into(),
            },
        )
    }

    pub(crate) fn type_mismatch(at: Location, message: impl Into<String>) -> PlanError {
        PlanError::new(
            at,
            PlanErrorKind::TypeMismatch {
                message: message.into(),
            },
        )
    }
}
