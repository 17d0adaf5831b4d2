//! ecsql's types and values as PostgreSQL's: INT is int8, FLOAT float8, REAL float4, BOOL
//! bool, TEXT text, and an ENTITY an int8 (its id's bits, as `CAST(id AS INT)` gives).
//! Errors become PostgreSQL's error fields: a SQLSTATE, the message, and the position in
//! the statement's text that psql points at.

use std::sync::Arc;

use pgwire::api::Type;
use pgwire::api::results::{DataRowEncoder, FieldFormat, FieldInfo};
use pgwire::error::{ErrorInfo, PgWireResult};
use pgwire::messages::data::DataRow;

use crate::location::Location;
use crate::{DataType, Error, Value};

/// PostgreSQL's type of an ecsql column.
pub(super) fn pg_type(ty: DataType) -> Type {
    match ty {
        DataType::Int | DataType::Entity => Type::INT8,
        DataType::Float => Type::FLOAT8,
        DataType::Real => Type::FLOAT4,
        DataType::Bool => Type::BOOL,
        // A column of NULLs only (`SELECT NULL`) reads as text.
        DataType::Text | DataType::Null => Type::TEXT,
    }
}

/// A row description of columns named `names` of types `types`, in `formats`.
pub(super) fn fields(names: &[&str], types: &[DataType], formats: &[FieldFormat]) -> Arc<Vec<FieldInfo>> {
    Arc::new(
        names
            .iter()
            .zip(types)
            .zip(formats)
            .map(|((name, ty), format)| FieldInfo::new((*name).to_owned(), None, None, pg_type(*ty), *format))
            .collect(),
    )
}

/// One row's values, of the columns' `types`, encoded as the encoder's fields describe
/// them (text or binary). A value of another type than its column's (none should be) is
/// cast to it first, so that its bytes are always of the type described.
pub(super) fn data_row(
    encoder: &mut DataRowEncoder,
    values: &[Value],
    types: &[DataType],
) -> PgWireResult<DataRow> {
    for (value, ty) in values.iter().zip(types) {
        let cast;
        let value = if *value == Value::Null || DataType::of(value) == *ty || *ty == DataType::Null {
            value
        } else {
            cast = crate::plan::cast_value(value, *ty).unwrap_or(Value::Null);
            &cast
        };
        match value {
            Value::Null => encoder.encode_field(&None::<i64>)?,
            Value::Int(i) => encoder.encode_field(i)?,
            Value::Float(f) => encoder.encode_field(f)?,
            Value::Real(f) => encoder.encode_field(f)?,
            Value::Bool(b) => encoder.encode_field(b)?,
            Value::Text(s) => encoder.encode_field(&s.as_str())?,
            Value::Entity(e) => encoder.encode_field(&(e.to_bits() as i64))?,
        }
    }
    Ok(encoder.take_row())
}

/// A parameter's value sent as `bytes` of type `ty`, in binary format or text; why it
/// does not read as one.
pub(super) fn read_param(bytes: &[u8], ty: &Type, binary: bool) -> Result<Value, String> {
    let text = || {
        std::str::from_utf8(bytes).map_err(|_| format!("the value of type {} is not UTF-8 text", ty.name()))
    };
    let syntax = |t: &str| format!("invalid input syntax for type {}: \"{t}\"", ty.name());
    Ok(match (ty.clone(), binary) {
        (Type::INT8, true) => Value::Int(i64::from_be_bytes(fixed::<8>(bytes, ty)?)),
        (Type::INT4, true) => Value::Int(i32::from_be_bytes(fixed::<4>(bytes, ty)?).into()),
        (Type::INT2, true) => Value::Int(i16::from_be_bytes(fixed::<2>(bytes, ty)?).into()),
        (Type::OID, true) => Value::Int(u32::from_be_bytes(fixed::<4>(bytes, ty)?).into()),
        (Type::FLOAT8, true) => Value::Float(f64::from_be_bytes(fixed::<8>(bytes, ty)?)),
        (Type::FLOAT4, true) => Value::Real(f32::from_be_bytes(fixed::<4>(bytes, ty)?)),
        (Type::BOOL, true) => Value::Bool(fixed::<1>(bytes, ty)? != [0]),
        (Type::INT8 | Type::INT4 | Type::INT2 | Type::OID, false) => {
            let t = text()?;
            Value::Int(t.trim().parse().map_err(|_| syntax(t))?)
        }
        (Type::FLOAT8, false) => {
            let t = text()?;
            Value::Float(t.trim().parse().map_err(|_| syntax(t))?)
        }
        (Type::FLOAT4, false) => {
            let t = text()?;
            Value::Real(t.trim().parse().map_err(|_| syntax(t))?)
        }
        (Type::NUMERIC, false) => {
            let t = text()?.trim();
            match t.parse::<i64>() {
                Ok(i) => Value::Int(i),
                Err(_) => Value::Float(t.parse().map_err(|_| syntax(t))?),
            }
        }
        (Type::BOOL, false) => {
            let t = text()?;
            match t.trim().to_ascii_lowercase().as_str() {
                "t" | "true" | "y" | "yes" | "on" | "1" => Value::Bool(true),
                "f" | "false" | "n" | "no" | "off" | "0" => Value::Bool(false),
                _ => return Err(syntax(t)),
            }
        }
        (Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN, _) | (_, false) => {
            Value::Text(text()?.to_owned())
        }
        (other, true) => {
            return Err(format!(
                "ecsql does not read type {} in binary format: send it as text, or as int8, float8, float4, bool or text",
                other.name()
            ));
        }
    })
}

/// `bytes`, a value of `ty` in binary format, which takes exactly `N` bytes.
fn fixed<const N: usize>(bytes: &[u8], ty: &Type) -> Result<[u8; N], String> {
    bytes.try_into().map_err(|_| {
        format!(
            "a {} in binary format takes {N} bytes, found {}",
            ty.name(),
            bytes.len()
        )
    })
}

/// `e`, raised by a statement of `text`, as PostgreSQL's error fields.
pub(super) fn error_info(e: &Error, text: &str) -> ErrorInfo {
    let mut info = ErrorInfo::new("ERROR".to_owned(), sqlstate(e).to_owned(), e.to_string());
    info.position = e
        .location()
        .and_then(|at| position(text, at))
        .map(|p| p.to_string());
    info
}

/// The SQLSTATE of an error, by its kind (PostgreSQL's codes for the same failures).
fn sqlstate(e: &Error) -> &'static str {
    use crate::{ExecErrorKind as X, PlanErrorKind as P};
    match e {
        Error::Parse(_) => "42601",
        Error::Plan(p) => match &p.kind {
            P::UnknownComponent { .. } => "42P01",
            P::UnknownField { .. } | P::UnknownColumn { .. } => "42703",
            P::Ambiguous { .. } => "42702",
            P::TypeMismatch { .. } => "42804",
            P::ComponentExists { .. } => "42P07",
            P::UnknownFunction { .. } => "42883",
            P::MissingParameter { .. } => "42P02",
            P::Unsupported { .. } => "0A000",
            _ => "42000",
        },
        Error::Exec(x) => match &x.kind {
            // One kind holds both; its message tells a division by zero from the rest.
            X::Arithmetic { message } if message.contains("division by zero") => "22012",
            X::Arithmetic { .. } => "22003",
            X::NoSuchEntity { .. } | X::DespawnedEntity { .. } => "22023",
            X::TypeMismatch { .. } => "22P02",
            X::Constraint { .. } => "23514",
            X::Transaction { .. } => "25000",
            X::Interrupted | X::TickInterrupted { .. } => "57014",
            X::MemoryLimit { .. } => "53200",
            X::RecursionLimit { .. } => "54001",
            X::TextTooLong { .. } => "22001",
            _ => "XX000",
        },
        Error::Busy { .. } => "55P03",
        Error::InvalidParameterCount { .. } | Error::InvalidParameterName(..) => "08P01",
        Error::Misuse { .. } => "55000",
        _ => "XX000",
    }
}

/// The 1-based position of `at` (a line and column, 1-based) in `text`, in characters, as
/// PostgreSQL's error position counts; the end of the text is one past its last.
pub(super) fn position(text: &str, at: Location) -> Option<usize> {
    walk(text, at).map(|(chars, _)| chars + 1)
}

/// The byte offset of `at` in `text`.
pub(super) fn offset(text: &str, at: Location) -> Option<usize> {
    walk(text, at).map(|(_, bytes)| bytes)
}

/// How many characters and bytes come before `at` in `text`.
fn walk(text: &str, at: Location) -> Option<(usize, usize)> {
    let want = (at.line as usize, at.column as usize);
    let (mut line, mut column) = (1, 1);
    for (chars, (bytes, c)) in text.char_indices().enumerate() {
        if (line, column) == want {
            return Some((chars, bytes));
        }
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    ((line, column) == want).then(|| (text.chars().count(), text.len()))
}
