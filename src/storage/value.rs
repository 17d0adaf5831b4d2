//! Field types and the boxed `Value` used at the edges of the storage: single-entity
//! operations and results handed to a user. The hot paths (batch spawns, the columnar door)
//! move typed `Vec`s and slices instead; see `column.rs`.

use std::fmt;

use super::ids::Entity;

/// The declared type of a component field. The set is closed, so a column can be an enum of
/// typed `Vec`s rather than anything dynamic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// 64-bit signed integer.
    Int,
    /// 64-bit float.
    Float,
    /// 32-bit float.
    Real,
    /// true or false.
    Bool,
    /// UTF-8 text.
    Text,
    /// A reference to an entity; the only type that may be NULL.
    Entity,
}

impl FieldType {
    /// Every field type.
    pub const ALL: [FieldType; 6] = [
        FieldType::Int,
        FieldType::Float,
        FieldType::Real,
        FieldType::Bool,
        FieldType::Text,
        FieldType::Entity,
    ];

    /// The value a field of this type takes when its component declares no default.
    pub fn zero(self) -> Value {
        match self {
            FieldType::Int => Value::Int(0),
            FieldType::Float => Value::Float(0.0),
            FieldType::Real => Value::Real(0.0),
            FieldType::Bool => Value::Bool(false),
            FieldType::Text => Value::Text(String::new()),
            FieldType::Entity => Value::Null,
        }
    }

    /// The type's name as the language spells it (`INT`, `REAL`, …).
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Int => "INT",
            FieldType::Float => "FLOAT",
            FieldType::Real => "REAL",
            FieldType::Bool => "BOOL",
            FieldType::Text => "TEXT",
            FieldType::Entity => "ENTITY",
        }
    }

    /// Whether `value` may be stored in a field of this type, exactly as it is: the storage
    /// never casts, so an `Int` is not a `Real` here. (The language layer converts literals
    /// to the declared type before they reach the storage.)
    pub fn accepts(self, value: &Value) -> bool {
        matches!(
            (self, value),
            (FieldType::Int, Value::Int(_))
                | (FieldType::Float, Value::Float(_))
                | (FieldType::Real, Value::Real(_))
                | (FieldType::Bool, Value::Bool(_))
                | (FieldType::Text, Value::Text(_))
                | (FieldType::Entity, Value::Entity(_) | Value::Null)
        )
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One field value, boxed. Used for single-entity reads and writes and for results; never
/// one per cell on a scan.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// No value.
    Null,
    /// A 64-bit integer.
    Int(i64),
    /// A 64-bit float.
    Float(f64),
    /// A 32-bit float.
    Real(f32),
    /// true or false.
    Bool(bool),
    /// UTF-8 text.
    Text(String),
    /// An entity's id.
    Entity(Entity),
}

impl Value {
    /// The field type this value belongs to; `None` for NULL, which has no type of its own.
    pub fn field_type(&self) -> Option<FieldType> {
        match self {
            Value::Null => None,
            Value::Int(_) => Some(FieldType::Int),
            Value::Float(_) => Some(FieldType::Float),
            Value::Real(_) => Some(FieldType::Real),
            Value::Bool(_) => Some(FieldType::Bool),
            Value::Text(_) => Some(FieldType::Text),
            Value::Entity(_) => Some(FieldType::Entity),
        }
    }

    /// The value with its type, for error messages: `TEXT 'abc'`, `INT 3`, `NULL`.
    pub fn describe(&self) -> String {
        match self.field_type() {
            Some(ty) => format!("{ty} {self}"),
            None => self.to_string(),
        }
    }
}

/// Values print as SQL literals, so a printed value reads back as the same value.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v:?}"),
            Value::Real(v) => write!(f, "{v:?}"),
            Value::Bool(true) => f.write_str("TRUE"),
            Value::Bool(false) => f.write_str("FALSE"),
            Value::Text(s) => write!(f, "'{}'", s.replace('\'', "''")),
            Value::Entity(e) => write!(f, "{e}"),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}
impl From<f32> for Value {
    fn from(v: f32) -> Self {
        Value::Real(v)
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_owned())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}
impl From<Entity> for Value {
    fn from(v: Entity) -> Self {
        Value::Entity(v)
    }
}
impl From<Option<Entity>> for Value {
    fn from(v: Option<Entity>) -> Self {
        v.map_or(Value::Null, Value::Entity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_never_casts_between_types() {
        assert!(!FieldType::Real.accepts(&Value::Int(1)));
        assert!(!FieldType::Int.accepts(&Value::Float(1.0)));
        assert!(!FieldType::Float.accepts(&Value::Real(1.0)));
        assert!(!FieldType::Int.accepts(&Value::Null));
        assert!(FieldType::Entity.accepts(&Value::Null));
        for ty in FieldType::ALL {
            assert!(ty.accepts(&ty.zero()), "{ty}'s zero must fit {ty}");
        }
    }

    #[test]
    fn values_print_as_literals() {
        assert_eq!(Value::Text("it's".into()).to_string(), "'it''s'");
        assert_eq!(Value::Real(1.0).to_string(), "1.0");
        assert_eq!(Value::Text("a".into()).describe(), "TEXT 'a'");
        assert_eq!(Value::Null.describe(), "NULL");
    }
}
