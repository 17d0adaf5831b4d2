//! Window results with NULLs, built a value at a time (`Nullable`), as an aggregate's
//! results are made. The typed columns they read are `exec::sort::Column`.

use std::borrow::Cow;

use crate::vector::{Data, Vector};

/// Values with NULLs, as an aggregate's results are made.
pub(super) struct Nullable<T> {
    values: Vec<T>,
    valid: Vec<bool>,
}

impl<T: Default> Nullable<T> {
    pub(super) fn new(n: usize) -> Nullable<T> {
        Nullable {
            values: Vec::with_capacity(n),
            valid: Vec::with_capacity(n),
        }
    }

    pub(super) fn push(&mut self, v: Option<T>) {
        self.valid.push(v.is_some());
        self.values.push(v.unwrap_or_default());
    }

    pub(super) fn finish(self, data: impl FnOnce(Vec<T>) -> Data<'static>) -> Vector<'static> {
        let n = self.values.len();
        let valid = (!self.valid.iter().all(|&v| v)).then_some(Cow::Owned(self.valid));
        Vector::new(data(self.values), valid, n)
    }
}
