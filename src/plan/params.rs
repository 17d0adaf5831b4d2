//! The values a statement's parameters take for one run.

use crate::parse as ast;
use crate::storage::Value;
use crate::vector::DataType;

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
    #[inline]
    pub fn clear(&mut self) {
        self.positional.clear();
        if !self.named.is_empty() {
            self.named.clear();
        }
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

/// A cast of a parameter's value that a plan leaves for its run (a comparison's or an
/// assignment's, `Binder::cast_param`), so that the plan serves the parameter's other
/// values too. A kept plan serves a value only if the cast takes it; for one it refuses,
/// the statement is bound again and fails as it would with that value written as a
/// constant.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamCast {
    param: ast::Param,
    to: DataType,
    /// The field an assigned value is stored into (`Component.field`), which is
    /// stricter than a cast (a FLOAT stored into INT must be whole) and named in errors.
    field: Option<Box<str>>,
}

impl ParamCast {
    pub fn new(param: ast::Param, to: DataType, field: Option<&dyn std::fmt::Display>) -> ParamCast {
        ParamCast {
            param,
            to,
            field: field.map(|f| f.to_string().into_boxed_str()),
        }
    }

    /// `value` cast, or why it cannot be.
    pub fn apply(&self, value: &Value) -> Result<Value, String> {
        match &self.field {
            Some(field) => crate::vector::store_value(value, self.to, field),
            None => crate::vector::cast_value(value, self.to),
        }
    }

    /// Whether the cast takes the value `params` give the parameter.
    pub fn takes(&self, params: &ParamValues) -> bool {
        params.get(&self.param).is_some_and(|v| self.apply(v).is_ok())
    }
}
