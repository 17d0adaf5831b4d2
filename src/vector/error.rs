//! What a kernel or a function can refuse: a value it cannot compute (overflow, the square
//! root of a negative number), a value that does not convert, or a broken invariant. Each
//! names the expression's location; the executor turns them into its own `ExecError`
//! variants of the same names.

use crate::location::Location;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// Integer overflow, a square root of a negative number, a negative substring length…
    #[error("{message} at {at}")]
    Arithmetic { message: String, at: Location },
    /// A value that does not convert to the type asked for.
    #[error("type mismatch at {at}: {message}")]
    TypeMismatch { message: String, at: Location },
    /// A text value that would be longer than `MAX_TEXT` bytes.
    #[error(
        "text too long at {at}: {length} bytes, and a text value may hold at most {}",
        MAX_TEXT
    )]
    TextTooLong { length: usize, at: Location },
    /// A broken invariant inside ecsql, reported instead of a panic.
    #[error("internal error: {message} at {at}")]
    Internal { message: String, at: Location },
}

/// The longest text value, in bytes (SQLite's default limit): text functions and `||`
/// refuse to make a longer one.
pub const MAX_TEXT: usize = 1_000_000_000;

/// Fails unless a text of `length` bytes is within `MAX_TEXT`.
pub fn check_text_length(length: usize, at: Location) -> Result<(), KernelError> {
    if length > MAX_TEXT {
        return Err(KernelError::TextTooLong { length, at });
    }
    Ok(())
}

impl KernelError {
    pub(crate) fn arithmetic(at: Location, message: impl Into<String>) -> KernelError {
        KernelError::Arithmetic {
            message: message.into(),
            at,
        }
    }

    pub(crate) fn internal(at: Location, message: impl Into<String>) -> KernelError {
        KernelError::Internal {
            message: message.into(),
            at,
        }
    }
}
