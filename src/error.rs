//! The crate's one error type, folding each layer's own error enum. A program can match on
//! the layer, then on the variant.

use crate::storage::StorageError;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Storage(#[from] StorageError),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
