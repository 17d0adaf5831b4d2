//! The values a statement's parameters take for one run.

use crate::parse as ast;
use crate::storage::Value;

/// Values for a statement's parameters: `?N` takes `positional[N-1]`, `:name`/`$name` the
/// named value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParamValues {
    /// Values of `?`, `?N` and `$N`, in order.
    pub positional: Vec<Value>,
    /// Values of `:name` and `$name`, by name (without the sigil).
    pub named: Vec<(String, Value)>,
    /// Missing parameters read as NULL instead of failing (to learn a result's columns
    /// before any values are given).
    pub lenient: bool,
}

impl ParamValues {
    /// No values, not lenient; the vectors' memory is kept.
    pub fn clear(&mut self) {
        self.positional.clear();
        self.named.clear();
        self.lenient = false;
    }

    /// The value given for `p`: NULL when missing and `lenient`, `None` when missing.
    pub fn get(&self, p: &ast::Param) -> Option<&Value> {
        match p {
            ast::Param::Position(n) => n.checked_sub(1).and_then(|i| self.positional.get(i)),
            ast::Param::Named { name, .. } => self.named.iter().find(|(k, _)| k == name).map(|(_, v)| v),
        }
        .or(if self.lenient { Some(&Value::Null) } else { None })
    }
}
