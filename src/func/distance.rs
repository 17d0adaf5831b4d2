//! distance((x, y[, z]), (a, b[, c])): the Euclidean distance between two points, in
//! FLOAT. A spatial index can serve `distance(…) < r` and ORDER BY distance.

use std::borrow::Cow;

use super::{Call, Mismatch, Properties, ScalarFunction, Signature, numeric, types};
use crate::location::Location;
use crate::storage::Value;
use crate::vector::{Data, DataType, Datum, KernelError, Operand, Vector};

type Result<T> = std::result::Result<T, KernelError>;

/// How a call reads.
pub const USAGE: &str = "distance takes two points of 2 or 3 coordinates: distance((x, y, z), (0, 0, 0))";

pub struct Distance;

impl ScalarFunction for Distance {
    fn names(&self) -> &'static [&'static str] {
        &["distance"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> std::result::Result<Signature, Mismatch> {
        if !matches!(args.len(), 4 | 6) {
            return Err(Mismatch::Arity(USAGE.to_owned()));
        }
        for (i, a) in args.iter().enumerate() {
            numeric(name, args, i).map_err(|_| Mismatch::Type {
                arg: Some(i),
                message: format!("{name} needs numbers as coordinates, found {}", a.ty),
            })?;
        }
        Ok(Signature::converting(types(args), DataType::Float))
    }
    fn properties(&self) -> Properties {
        Properties {
            points: true,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>> {
        distance(&args, call.len, call.at)
    }
}

/// One coordinate of a batch of points: a constant or a typed column.
#[derive(Clone, Copy)]
enum Coordinate<'x> {
    One(f64),
    Real(&'x [f32]),
    Float(&'x [f64]),
    Int(&'x [i64]),
}

impl<'x> Coordinate<'x> {
    fn of(d: &'x Datum<'_>, at: Location) -> Result<Option<Coordinate<'x>>> {
        Ok(Some(match d {
            Datum::Scalar(Value::Null) => return Ok(None),
            Datum::Scalar(Value::Int(i)) => Coordinate::One(*i as f64),
            Datum::Scalar(Value::Float(f)) => Coordinate::One(*f),
            Datum::Scalar(Value::Real(f)) => Coordinate::One(f64::from(*f)),
            Datum::Vector(v) => match &v.data {
                Data::Real(x) => Coordinate::Real(x),
                Data::Float(x) => Coordinate::Float(x),
                Data::Int(x) => Coordinate::Int(x),
                Data::Null => return Ok(None),
                _ => {
                    return Err(KernelError::internal(
                        at,
                        "distance() got a coordinate that is not a number",
                    ));
                }
            },
            Datum::Scalar(_) => {
                return Err(KernelError::internal(
                    at,
                    "distance() got a coordinate that is not a number",
                ));
            }
        }))
    }

    fn at(self, i: usize) -> f64 {
        match self {
            Coordinate::One(x) => x,
            Coordinate::Real(x) => f64::from(x[i]),
            Coordinate::Float(x) => x[i],
            Coordinate::Int(x) => x[i] as f64,
        }
    }
}

/// Adds `(a - b)²` to every row's sum, with the common shapes (a column against a
/// constant) as their own loops so that they vectorize.
fn add_squares(sum: &mut [f64], a: Coordinate<'_>, b: Coordinate<'_>) {
    match (a, b) {
        (Coordinate::Real(x), Coordinate::One(c)) | (Coordinate::One(c), Coordinate::Real(x)) => {
            for (s, &x) in sum.iter_mut().zip(x) {
                let d = f64::from(x) - c;
                *s += d * d;
            }
        }
        (Coordinate::Float(x), Coordinate::One(c)) | (Coordinate::One(c), Coordinate::Float(x)) => {
            for (s, &x) in sum.iter_mut().zip(x) {
                let d = x - c;
                *s += d * d;
            }
        }
        _ => {
            for (i, s) in sum.iter_mut().enumerate() {
                let d = a.at(i) - b.at(i);
                *s += d * d;
            }
        }
    }
}

/// `distance(p, q)` over a batch: the square root of the summed squared differences of
/// coordinates, in FLOAT, NULL where any coordinate is.
fn distance(args: &[Datum<'_>], len: usize, at: Location) -> Result<Datum<'static>> {
    let dims = args.len() / 2;
    let scalar = args.iter().all(|a| matches!(a, Datum::Scalar(_)));
    let n = if scalar { 1 } else { len };
    let mut sum = vec![0.0; n];
    for d in 0..dims {
        let (Some(a), Some(b)) = (
            Coordinate::of(&args[d], at)?,
            Coordinate::of(&args[d + dims], at)?,
        ) else {
            return Ok(Datum::Scalar(Value::Null));
        };
        add_squares(&mut sum, a, b);
    }
    sum.iter_mut().for_each(|s| *s = s.sqrt());
    let mut valid: Option<Vec<bool>> = None;
    for a in args {
        if let Datum::Vector(v) = a
            && let Some(mask) = v.validity()
        {
            match &mut valid {
                Some(all) => all.iter_mut().zip(mask.iter()).for_each(|(x, y)| *x &= *y),
                None => valid = Some(mask.into_owned()),
            }
        }
    }
    let v = Vector::new(Data::Float(Cow::Owned(sum)), valid.map(Cow::Owned), n);
    Ok(if scalar {
        Datum::Scalar(v.get(0))
    } else {
        Datum::Vector(v)
    })
}
