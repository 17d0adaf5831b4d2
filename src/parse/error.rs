//! The parse layer's error: where in the text, and what was expected or found.

use super::ast::Location;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message} at {at}")]
pub struct ParseError {
    pub at: Location,
    pub message: String,
}

impl ParseError {
    pub fn new(at: Location, message: impl Into<String>) -> ParseError {
        ParseError {
            at,
            message: message.into(),
        }
    }
}
