//! random(): a FLOAT in [0, 1), a new one for every row.

use std::borrow::Cow;
use std::cell::Cell;

use super::{Call, Mismatch, Nulls, Properties, ScalarFunction, Signature, arity};
use crate::vector::{Data, DataType, Datum, KernelError, Operand, Vector};

pub struct Random;

impl ScalarFunction for Random {
    fn names(&self) -> &'static [&'static str] {
        &["random"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 0, 0)?;
        Ok(Signature::converting([], DataType::Float))
    }
    fn properties(&self) -> Properties {
        Properties {
            nulls: Nulls::Never,
            volatile: true,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, _: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let v: Vec<f64> = (0..call.len).map(|_| next_random(call.rng)).collect();
        Ok(Datum::Vector(Vector::from_data(
            Data::Float(Cow::Owned(v)),
            call.len,
        )))
    }
}

/// The next number of `random()`'s sequence, in [0, 1).
fn next_random(rng: &Cell<u64>) -> f64 {
    // SplitMix64: small, fast, good enough for random().
    let mut z = rng.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
    rng.set(z);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}
