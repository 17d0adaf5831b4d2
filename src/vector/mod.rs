//! Values in flight: the types an expression's values can have (`DataType`), the typed
//! column batches every operator works on (`Vector`, `Datum`, `Batch`), the kernels that
//! loop over them, and CAST. This floor knows storage's values and columns, and nothing
//! of expressions, plans or the world: the function table (`func/`), the binder (`plan/`)
//! and the executor (`exec/`) all stand on it.

mod cast;
mod data;
mod error;
pub mod kernels;
mod types;

pub use cast::{any_infinite, cast, cast_one, infinite_bit, store_cast, store_value};
pub use data::{Batch, ColumnSlice, Data, Datum, Vector};
pub use error::{KernelError, MAX_TEXT, check_text_length};
pub use types::{
    CmpOp, DataType, Operand, assignable, cast_value, compares_unconverted, comparison_type,
    comparison_unify, float_to_real, format_float, numeric_common, unify_types,
};
