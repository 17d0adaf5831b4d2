//! lower, upper, length and substr over TEXT.

use super::rows::row_wise;
use super::{Call, Mismatch, Properties, ScalarFunction, Signature, arity, text, types};
use crate::storage::Value;
use crate::vector::kernels::map_values;
use crate::vector::{DataType, Datum, KernelError, Operand};

/// lower and upper.
pub struct Case {
    names: &'static [&'static str],
    convert: fn(&str) -> String,
}

pub const LOWER: Case = Case {
    names: &["lower"],
    convert: str::to_lowercase,
};

pub const UPPER: Case = Case {
    names: &["upper"],
    convert: str::to_uppercase,
};

/// One TEXT argument; the result is `result`.
fn one_text(name: &str, args: &[Operand], result: DataType) -> Result<Signature, Mismatch> {
    arity(name, args, 1, 1)?;
    text(name, args, 0)?;
    Ok(Signature::converting(types(args), result))
}

fn only(args: Vec<Datum<'_>>) -> Datum<'_> {
    args.into_iter().next().unwrap_or(Datum::Scalar(Value::Null))
}

impl ScalarFunction for Case {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        one_text(name, args, DataType::Text)
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let convert = self.convert;
        map_values(
            only(args),
            call.ty,
            |v| {
                Ok(match v {
                    Value::Text(s) => {
                        // Changing case can lengthen a text (ß → SS): measure a long one
                        // first, so an over-long result is refused before it is made.
                        let limit = crate::vector::MAX_TEXT;
                        if s.len() > limit / 3 {
                            let length: usize =
                                s.chars().map(|c| convert(c.encode_utf8(&mut [0; 4])).len()).sum();
                            if length > limit {
                                return Err(format!(
                                    "text too long: {length} bytes, and a text value may hold at most {limit}"
                                ));
                            }
                        }
                        Value::Text(convert(&s))
                    }
                    other => other,
                })
            },
            call.at,
        )
    }
}

pub struct Length;

impl ScalarFunction for Length {
    fn names(&self) -> &'static [&'static str] {
        &["length", "char_length"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        one_text(name, args, DataType::Int)
    }
    fn properties(&self) -> Properties {
        Properties::TOTAL
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        map_values(
            only(args),
            call.ty,
            |v| {
                Ok(match v {
                    Value::Text(s) => Value::Int(s.chars().count() as i64),
                    other => other,
                })
            },
            call.at,
        )
    }
}

pub struct Substr;

impl ScalarFunction for Substr {
    fn names(&self) -> &'static [&'static str] {
        &["substr", "substring"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 2, 3)?;
        text(name, args, 0)?;
        for (i, t) in types(args).enumerate().skip(1) {
            if !matches!(t, DataType::Int | DataType::Null) {
                return Err(Mismatch::Type {
                    arg: Some(i),
                    message: format!("{name} takes INT positions, found {t}"),
                });
            }
        }
        Ok(Signature::converting(types(args), DataType::Text))
    }
    fn properties(&self) -> Properties {
        // A negative count is an error; a NULL count reads to the end.
        Properties {
            can_fail: true,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let mut args = args;
        args.resize_with(3, || Datum::Scalar(Value::Null));
        let substr = |vals: &[Value]| {
            let (Value::Text(s), Value::Int(start)) = (&vals[0], &vals[1]) else {
                return Ok(Value::Null);
            };
            let count = match &vals[2] {
                Value::Int(c) if *c < 0 => {
                    return Err("negative substring length not allowed".to_owned());
                }
                Value::Int(c) => Some(*c),
                _ => None,
            };
            // PostgreSQL: positions are 1-based and may start before the string.
            let first = *start;
            let end = count.map(|c| first.saturating_add(c));
            let out: String = s
                .chars()
                .enumerate()
                .filter(|(i, _)| {
                    let pos = *i as i64 + 1;
                    pos >= first && end.is_none_or(|e| pos < e)
                })
                .map(|(_, c)| c)
                .collect();
            Ok(Value::Text(out))
        };
        row_wise(&args, call.ty, call.len, substr, call.at, true)
    }
}
