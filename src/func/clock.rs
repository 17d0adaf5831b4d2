//! tick() and delta_time(): the number of the tick being run (outside a tick, the last
//! one run; 0 before any) and its length in seconds. One value for every row of a
//! statement: they read the run's clock, which the schedule sets. A Rust system's clock
//! also carries the write tick its last run ended at (`Clock::changes_since`), which the
//! schedule keeps with the system's state and puts back with a failed tick.

use super::{Call, Mismatch, Nulls, Properties, ScalarFunction, Signature, arity};
use crate::storage::Value;
use crate::vector::{DataType, Datum, KernelError, Operand};

/// Where a statement stands in the simulation's time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Clock {
    /// The tick being run, or the last one run (0 before any).
    pub tick: u64,
    /// Its length in seconds.
    pub dt: f64,
    /// For a Rust system's run: the write tick its last run ended at (`None` before its
    /// first), which a failed tick puts back with the system's other state.
    pub(crate) since: Option<u64>,
}

impl Clock {
    /// A clock at tick `tick` of `dt` seconds.
    pub fn new(tick: u64, dt: f64) -> Clock {
        Clock {
            tick,
            dt,
            since: None,
        }
    }

    /// For a Rust system: the world's write tick when its last run ended (`None` at its
    /// first run), after which what changed is new to this run: what a typed query's
    /// `Changed<T>` and `Added<T>` count from (`Query::since`). `None` elsewhere.
    pub fn changes_since(&self) -> Option<u64> {
        self.since
    }

    /// This clock, for a reader that last ended at write tick `since`.
    pub(crate) fn for_reader(self, since: Option<u64>) -> Clock {
        Clock { since, ..self }
    }
}

/// The length of a tick until one is given: 1/60 s.
pub const DEFAULT_DT: f64 = 1.0 / 60.0;

impl Default for Clock {
    fn default() -> Self {
        Clock {
            tick: 0,
            dt: DEFAULT_DT,
            since: None,
        }
    }
}

pub struct Tick;

impl ScalarFunction for Tick {
    fn names(&self) -> &'static [&'static str] {
        &["tick"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 0, 0)?;
        Ok(Signature::converting([], DataType::Int))
    }
    fn properties(&self) -> Properties {
        Properties {
            nulls: Nulls::Never,
            clock: true,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, _: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let tick = i64::try_from(call.clock.tick).unwrap_or(i64::MAX);
        Ok(Datum::Scalar(Value::Int(tick)))
    }
}

pub struct DeltaTime;

impl ScalarFunction for DeltaTime {
    fn names(&self) -> &'static [&'static str] {
        &["delta_time"]
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        arity(name, args, 0, 0)?;
        Ok(Signature::converting([], DataType::Float))
    }
    fn properties(&self) -> Properties {
        Properties {
            nulls: Nulls::Never,
            clock: true,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, _: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        Ok(Datum::Scalar(Value::Float(call.clock.dt)))
    }
}
