//! Statement parameters from Rust values: tuples, arrays and slices for `?`/`?N`, and
//! `(name, value)` pairs for `:name`/`$name`.

use crate::plan::ParamValues;
use crate::storage::{Entity, Value};

/// A Rust value that can stand for a parameter.
pub trait ToParam {
    /// The value the parameter takes.
    fn to_param(&self) -> Value;
}

macro_rules! to_param {
    ($($t:ty => $f:expr),* $(,)?) => {
        $(impl ToParam for $t {
            // Inline: a value returned from a call out of line was written to memory in
            // two halves and read back whole, a store-forwarding stall of a point read.
            #[inline]
            fn to_param(&self) -> Value {
                let f: fn(&$t) -> Value = $f;
                f(self)
            }
        })*
    };
}

to_param! {
    i64 => |v| Value::Int(*v),
    i32 => |v| Value::Int(i64::from(*v)),
    i16 => |v| Value::Int(i64::from(*v)),
    u32 => |v| Value::Int(i64::from(*v)),
    u16 => |v| Value::Int(i64::from(*v)),
    u8 => |v| Value::Int(i64::from(*v)),
    f64 => |v| Value::Float(*v),
    f32 => |v| Value::Real(*v),
    bool => |v| Value::Bool(*v),
    str => |v| Value::Text(v.to_owned()),
    String => |v| Value::Text(v.clone()),
    Entity => |v| Value::Entity(*v),
    Value => |v| v.clone(),
}

impl<T: ToParam + ?Sized> ToParam for &T {
    #[inline]
    fn to_param(&self) -> Value {
        (**self).to_param()
    }
}

impl<T: ToParam> ToParam for Option<T> {
    #[inline]
    fn to_param(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToParam::to_param)
    }
}

/// Anything that supplies a statement's parameters.
pub trait Params {
    /// The parameter values, by position and by name.
    fn into_values(self) -> ParamValues;

    /// The parameter values written over `values`: a prepared statement keeps one
    /// `ParamValues` between runs, so that a run whose values fit its vectors allocates
    /// nothing for them. The provided method replaces `values` with `into_values()`.
    fn write_into(self, values: &mut ParamValues)
    where
        Self: Sized,
    {
        *values = self.into_values();
    }
}

impl Params for ParamValues {
    fn into_values(self) -> ParamValues {
        self
    }
}

impl Params for () {
    fn into_values(self) -> ParamValues {
        ParamValues::default()
    }

    fn write_into(self, values: &mut ParamValues) {
        values.clear();
    }
}

/// Writes `positional` over `values` (no named values, not lenient), in the vectors it has.
#[inline]
fn write_positional(values: &mut ParamValues, positional: impl IntoIterator<Item = Value>) {
    values.clear();
    // Pushed one by one: `extend`'s reserve and fold, called out of line, were 49
    // instructions of a prepared point read's one parameter.
    for value in positional {
        values.positional.push(value);
    }
}

macro_rules! tuple_params {
    ($($name:ident),+) => {
        impl<$($name: ToParam),+> Params for ($($name,)+) {
            #[allow(non_snake_case)]
            fn into_values(self) -> ParamValues {
                let ($($name,)+) = self;
                ParamValues { positional: vec![$($name.to_param()),+], named: Vec::new(), lenient: false }
            }

            #[allow(non_snake_case)]
            fn write_into(self, values: &mut ParamValues) {
                let ($($name,)+) = self;
                write_positional(values, [$($name.to_param()),+]);
            }
        }
    };
}
tuple_params!(A);
tuple_params!(A, B);
tuple_params!(A, B, C);
tuple_params!(A, B, C, D);
tuple_params!(A, B, C, D, E);
tuple_params!(A, B, C, D, E, F);
tuple_params!(A, B, C, D, E, F, G);
tuple_params!(A, B, C, D, E, F, G, H);

impl<T: ToParam, const N: usize> Params for [T; N] {
    fn into_values(self) -> ParamValues {
        self.as_slice().into_values()
    }

    #[inline]
    fn write_into(self, values: &mut ParamValues) {
        self.as_slice().write_into(values);
    }
}

impl<T: ToParam> Params for &[T] {
    fn into_values(self) -> ParamValues {
        ParamValues {
            positional: self.iter().map(ToParam::to_param).collect(),
            named: Vec::new(),
            lenient: false,
        }
    }

    #[inline]
    fn write_into(self, values: &mut ParamValues) {
        write_positional(values, self.iter().map(ToParam::to_param));
    }
}

impl Params for Vec<Value> {
    fn into_values(self) -> ParamValues {
        ParamValues {
            positional: self,
            named: Vec::new(),
            lenient: false,
        }
    }
}

/// Named parameters: `&[(":dt", &0.016)]`, or of several types `named_params! {":dt":
/// 0.016, ":who": "ziggy"}`. The sigil (`:`, `$` or `@`) is optional.
///
/// ```
/// # use ecsql::{Database, named_params};
/// let conn = Database::open_in_memory().connect();
/// let x: f64 = conn.query_row("SELECT :dt * 2", &[(":dt", &0.5)], |r| r.get(0))?;
/// assert_eq!(x, 1.0);
/// let who: String = conn.query_row(
///     "SELECT :who || ' ' || CAST($n AS TEXT)",
///     named_params! {":who": "ziggy", "$n": 3},
///     |r| r.get(0),
/// )?;
/// assert_eq!(who, "ziggy 3");
/// # Ok::<(), ecsql::Error>(())
/// ```
impl<T: ToParam> Params for &[(&str, T)] {
    fn into_values(self) -> ParamValues {
        let mut values = ParamValues::default();
        self.write_into(&mut values);
        values
    }

    fn write_into(self, values: &mut ParamValues) {
        values.clear();
        values.named.extend(
            self.iter()
                .map(|(k, v)| (k.trim_start_matches([':', '$', '@']).to_owned(), v.to_param())),
        );
    }
}

impl<T: ToParam, const N: usize> Params for &[(&str, T); N] {
    fn into_values(self) -> ParamValues {
        self.as_slice().into_values()
    }

    fn write_into(self, values: &mut ParamValues) {
        self.as_slice().write_into(values);
    }
}

impl<T: ToParam, const N: usize> Params for [(&str, T); N] {
    fn into_values(self) -> ParamValues {
        self.as_slice().into_values()
    }

    fn write_into(self, values: &mut ParamValues) {
        self.as_slice().write_into(values);
    }
}

/// Parameters of several types by position (`?1`, `?2`, … or `$1`, `$2`, …), as rusqlite's
/// macro of the same name: `params![x, "name", 0.5]`.
///
/// ```
/// # use ecsql::{Database, params};
/// let conn = Database::open_in_memory().connect();
/// conn.execute_batch("CREATE COMPONENT Unit (name TEXT, hp INT, speed REAL);")?;
/// conn.execute("SPAWN Unit(?1, ?2, ?3)", params!["orc", 30, 1.5f32])?;
/// let (name, hp): (String, i64) =
///     conn.query_row("SELECT Unit.name, Unit.hp FROM Unit WHERE Unit.speed > ?1", params![1.0], |r| {
///         Ok((r.get(0)?, r.get(1)?))
///     })?;
/// assert_eq!((name.as_str(), hp), ("orc", 30));
/// assert_eq!(conn.execute("UPDATE Unit SET hp = 0", params![])?, 1);
/// # Ok::<(), ecsql::Error>(())
/// ```
#[macro_export]
macro_rules! params {
    () => {
        [] as [&dyn $crate::ToParam; 0]
    };
    ($($value:expr),+ $(,)?) => {
        [$(&$value as &dyn $crate::ToParam),+]
    };
}

/// Named parameters of several types, as rusqlite's macro of the same name:
/// `named_params! {":dt": 0.016, ":who": "ziggy"}`.
#[macro_export]
macro_rules! named_params {
    () => {
        [] as [(&str, &dyn $crate::ToParam); 0]
    };
    ($($name:literal : $value:expr),+ $(,)?) => {
        [$(($name, &$value as &dyn $crate::ToParam)),+]
    };
}
