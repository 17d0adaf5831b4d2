//! The parse layer's error: where in the text, and what was expected or found.

use crate::location::Location;

/// Text that is not a statement ecsql reads.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message} at {at}")]
pub struct ParseError {
    /// Where in the text (line and column).
    pub at: Location,
    /// What was expected and what was found.
    pub message: String,
}

impl ParseError {
    /// A parse error at `at`.
    pub fn new(at: Location, message: impl Into<String>) -> ParseError {
        ParseError {
            at,
            message: message.into(),
        }
    }
}
