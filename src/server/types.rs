//! ecsql's types and values as PostgreSQL's: INT is int8, FLOAT float8, REAL float4, BOOL
//! bool, TEXT text, and an ENTITY an int8 (its id's bits, as `CAST(id AS INT)` gives).
//! Errors become PostgreSQL's error fields: a SQLSTATE, the message, and the position in
//! the statement's text that psql points at.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use pgwire::api::Type;
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::error::ErrorInfo;
use pgwire::messages::data::DataRow;

use crate::exec::Chunk;
use crate::location::Location;
use crate::vector::{Data, Vector};
use crate::{DataType, Error, Value};

/// The ecsql type of a parameter a client declared as `ty` (an integer, a float or a
/// boolean); `None` for one left to the server, text included (any type goes, as text).
pub(super) fn declared(ty: &Type) -> Option<DataType> {
    match *ty {
        Type::INT2 | Type::INT4 | Type::INT8 | Type::OID => Some(DataType::Int),
        Type::FLOAT4 => Some(DataType::Real),
        // A numeric is read as FLOAT, whatever its digits.
        Type::FLOAT8 | Type::NUMERIC => Some(DataType::Float),
        Type::BOOL => Some(DataType::Bool),
        _ => None,
    }
}

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

/// The data rows of `chunk` from row `from` on, each column in its format: written
/// straight from the typed columns (no value boxed per cell), into one buffer the rows
/// are split from.
pub(super) fn data_rows(chunk: &Chunk, from: usize, formats: &[FieldFormat]) -> Vec<DataRow> {
    let count = chunk.columns.len();
    let validity: Vec<_> = chunk.columns.iter().map(Vector::validity).collect();
    let mut buf = BytesMut::with_capacity((chunk.len - from.min(chunk.len)) * (count * 12 + 8));
    let mut rows = Vec::with_capacity(chunk.len.saturating_sub(from));
    for row in from..chunk.len {
        for ((column, valid), format) in chunk.columns.iter().zip(&validity).zip(formats) {
            if valid.as_ref().is_some_and(|v| !v[row]) {
                buf.put_i32(-1);
                continue;
            }
            let binary = *format == FieldFormat::Binary;
            match &column.data {
                Data::Null => buf.put_i32(-1),
                Data::Int(v) if binary => {
                    buf.put_i32(8);
                    buf.put_i64(v[row]);
                }
                Data::Float(v) if binary => {
                    buf.put_i32(8);
                    buf.put_f64(v[row]);
                }
                Data::Real(v) if binary => {
                    buf.put_i32(4);
                    buf.put_f32(v[row]);
                }
                Data::Bool(v) if binary => {
                    buf.put_i32(1);
                    buf.put_u8(u8::from(v[row]));
                }
                Data::Entity(v) if binary => match v[row] {
                    Some(e) => {
                        buf.put_i32(8);
                        buf.put_i64(e.to_bits() as i64);
                    }
                    None => buf.put_i32(-1),
                },
                Data::Text(v) => {
                    let text = v[row].as_bytes();
                    buf.put_i32(text.len() as i32);
                    buf.put_slice(text);
                }
                Data::Int(v) => digits(&mut buf, v[row]),
                Data::Float(v) => text(&mut buf, format_args!("{}", Float::double(v[row]))),
                Data::Real(v) => text(&mut buf, format_args!("{}", Float::real(v[row]))),
                Data::Bool(v) => {
                    buf.put_i32(1);
                    buf.put_u8(if v[row] { b't' } else { b'f' });
                }
                Data::Entity(v) => match v[row] {
                    Some(e) => digits(&mut buf, e.to_bits() as i64),
                    None => buf.put_i32(-1),
                },
            }
        }
        rows.push(DataRow::new(buf.split(), count as i16));
    }
    rows
}

/// Writes an integer as a text field (itoa: no formatting machinery per cell).
fn digits(buf: &mut BytesMut, value: i64) {
    let mut number = itoa::Buffer::new();
    let text = number.format(value).as_bytes();
    buf.put_i32(text.len() as i32);
    buf.put_slice(text);
}

/// Writes `value` as a text field: its length, then its characters.
fn text(buf: &mut BytesMut, value: std::fmt::Arguments<'_>) {
    let at = buf.len();
    buf.put_i32(0);
    // Writing into memory cannot fail.
    let _ = std::fmt::Write::write_fmt(buf, value);
    let len = (buf.len() - at - 4) as i32;
    buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

/// A float as PostgreSQL writes one in text: the shortest digits that read back as the
/// same number, in fixed notation for decimal exponents from -4 to below 15 (6 for a
/// REAL), else as `1.5e+20`; `Infinity`, `-Infinity`, `NaN`.
struct Float {
    value: f64,
    /// A REAL's (its value widened, exactly, from `f32`).
    real: bool,
}

impl Float {
    fn double(value: f64) -> Float {
        Float { value, real: false }
    }

    fn real(value: f32) -> Float {
        Float {
            value: value.into(),
            real: true,
        }
    }
}

impl std::fmt::Display for Float {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.value;
        if v.is_nan() {
            return f.write_str("NaN");
        }
        if v.is_infinite() {
            return f.write_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
        }
        if v.is_sign_negative() {
            f.write_str("-")?;
        }
        if v == 0.0 {
            return f.write_str("0");
        }
        // The shortest digits that read back as the same value, and the exponent of the
        // first: `1.5e-7` is digits 15, exponent -7.
        let scientific = if self.real {
            format!("{:e}", v.abs() as f32)
        } else {
            format!("{:e}", v.abs())
        };
        let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
        let exponent: i32 = exponent.parse().unwrap_or(0);
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        let fixed_below = if self.real { 6 } else { 15 };
        if (-4..fixed_below).contains(&exponent) {
            if exponent < 0 {
                let zeros = "0".repeat((-exponent - 1) as usize);
                return write!(f, "0.{zeros}{digits}");
            }
            let whole = exponent as usize + 1;
            if digits.len() <= whole {
                let zeros = "0".repeat(whole - digits.len());
                return write!(f, "{digits}{zeros}");
            }
            return write!(f, "{}.{}", &digits[..whole], &digits[whole..]);
        }
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        let sign = if exponent < 0 { '-' } else { '+' };
        write!(f, "{first}{dot}{rest}e{sign}{:02}", exponent.abs())
    }
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
        (Type::NUMERIC, true) => Value::Float(binary_numeric(bytes)?),
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
            Value::Float(t.parse().map_err(|_| syntax(t))?)
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
                "ecsql does not read type {} in binary format: send it as text, or as int8, float8, float4, numeric, bool or text",
                other.name()
            ));
        }
    })
}

/// A numeric in PostgreSQL's binary format (its digit count, the weight of its first
/// base-10000 digit, its sign, its scale, then the digits), as the nearest float (as
/// pgjdbc sends a BigDecimal).
fn binary_numeric(bytes: &[u8]) -> Result<f64, String> {
    let short = || {
        format!(
            "a numeric in binary format of {} bytes does not hold what it says",
            bytes.len()
        )
    };
    let word = |i: usize| -> Result<u16, String> {
        bytes
            .get(i..i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(short)
    };
    let (count, weight, sign) = (usize::from(word(0)?), word(2)? as i16, word(4)?);
    match sign {
        0xC000 => return Ok(f64::NAN),
        0xD000 => return Ok(f64::INFINITY),
        0xF000 => return Ok(f64::NEG_INFINITY),
        0x0000 | 0x4000 => {}
        other => {
            return Err(format!(
                "a numeric in binary format with the sign word {other:#06x}"
            ));
        }
    }
    if bytes.len() != 8 + 2 * count {
        return Err(short());
    }
    let mut value = 0.0_f64;
    for i in 0..count {
        let digit = word(8 + 2 * i)?;
        if digit >= 10_000 {
            return Err(format!(
                "a numeric in binary format with the base-10000 digit {digit}"
            ));
        }
        let power = i32::from(weight) - i as i32;
        value += f64::from(digit) * 10_000_f64.powi(power);
    }
    Ok(if sign == 0x4000 { -value } else { value })
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

/// The format of each of `columns` result columns that `format` asks for; an error when
/// it names a count of formats other than none, one, or one per column.
pub(super) fn result_formats(format: &Format, columns: usize) -> Result<Vec<FieldFormat>, Box<ErrorInfo>> {
    match format {
        Format::UnifiedText => Ok(vec![FieldFormat::Text; columns]),
        Format::UnifiedBinary => Ok(vec![FieldFormat::Binary; columns]),
        Format::Individual(codes) if codes.len() == columns => {
            Ok(codes.iter().map(|c| FieldFormat::from(*c)).collect())
        }
        Format::Individual(codes) => Err(protocol(format!(
            "bind message has {} result formats but query has {columns} columns",
            codes.len()
        ))),
    }
}

/// A 08P01 error: the client broke the protocol's rules.
pub(super) fn protocol(message: String) -> Box<ErrorInfo> {
    Box::new(ErrorInfo::new("ERROR".to_owned(), "08P01".to_owned(), message))
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
            X::ReadOnlyTransaction { .. } => "25006",
            // A value of the data that does not fit its column (a file's read or write is
            // the server's, which a client does not reach).
            X::Copy { line, row, .. } if line.is_some() || row.is_some() => "22P02",
            X::Interrupted | X::TickInterrupted { .. } | X::TimedOut { .. } => "57014",
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

#[cfg(test)]
mod tests {
    use super::{Float, binary_numeric};

    #[test]
    fn numerics_in_binary_read_as_floats() {
        // 1.75: digits [1, 7500], weight 0, scale 2; -12345.6: [1, 2345, 6000], weight 1.
        let numeric = |words: &[u16]| words.iter().flat_map(|w| w.to_be_bytes()).collect::<Vec<u8>>();
        assert_eq!(binary_numeric(&numeric(&[2, 0, 0, 2, 1, 7500])), Ok(1.75));
        assert_eq!(
            binary_numeric(&numeric(&[3, 1, 0x4000, 1, 1, 2345, 6000])),
            Ok(-12345.6)
        );
        assert_eq!(binary_numeric(&numeric(&[0, 0, 0, 0])), Ok(0.0));
        assert!(binary_numeric(&numeric(&[0, 0, 0xC000, 0])).unwrap().is_nan());
        // What a stranger may send: short, long, a digit past 9999, an unknown sign.
        assert!(binary_numeric(&[0, 3]).is_err());
        assert!(binary_numeric(&numeric(&[5, 0, 0, 0, 1])).is_err());
        assert!(binary_numeric(&numeric(&[1, 0, 0, 0, 10_000])).is_err());
        assert!(binary_numeric(&numeric(&[1, 0, 0x1234, 0, 1])).is_err());
    }

    #[test]
    fn floats_read_as_postgresql_writes_them() {
        let float8 = |v: f64| Float::double(v).to_string();
        let float4 = |v: f32| Float::real(v).to_string();
        for (v, text) in [
            (1.0, "1"),
            (0.25, "0.25"),
            (-2.5, "-2.5"),
            (0.0, "0"),
            (-0.0, "-0"),
            (0.1, "0.1"),
            (1e-4, "0.0001"),
            (1.5e-5, "1.5e-05"),
            (123456789012345.0, "123456789012345"),
            (1e15, "1e+15"),
            (1.2345e300, "1.2345e+300"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (f64::NAN, "NaN"),
            (1.0 / 3.0, "0.3333333333333333"),
        ] {
            assert_eq!(float8(v), text, "{v:e}");
        }
        for (v, text) in [
            (1.5_f32, "1.5"),
            (0.1, "0.1"),
            (123456.0, "123456"),
            (1e6, "1e+06"),
            (1.0 / 3.0, "0.33333334"),
        ] {
            assert_eq!(float4(v), text, "{v:e}");
        }
    }
}
