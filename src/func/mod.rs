//! The scalar functions: each is defined once, in one file of this folder, with its
//! names, its signature (the argument types it accepts, the type each is converted to,
//! the result type), what it promises (whether it can fail, when it is NULL, whether it
//! gives the same result for the same arguments) and its kernel over typed vectors.
//!
//! The binder looks a call up here by name and asks the function to type it; the
//! executor calls the kernel. The "unknown function" hint is generated from this table.
//! This floor stands on `vector/` and knows nothing of plans or the world.

mod arrays;
mod choice;
mod clock;
mod distance;
mod float;
mod math;
mod pg;
mod random;
mod regex;
mod rows;
mod strings;
mod text;
mod whole;

use std::cell::Cell;
use std::fmt;

pub use clock::Clock;

use crate::location::Location;
use crate::vector::{DataType, Datum, KernelError, Operand};

/// How an argument is converted before the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Convert {
    /// To this type.
    To(DataType),
    /// As an operand of a comparison in this type: an INT compared with ids stays INT
    /// (kernels compare the two as integers).
    Operand(DataType),
}

/// What a call's argument types come to.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    /// How each argument is converted.
    pub args: Vec<Convert>,
    /// The type of the result.
    pub result: DataType,
}

impl Signature {
    /// Each argument converted to its type in `args`.
    pub fn converting(args: impl IntoIterator<Item = DataType>, result: DataType) -> Signature {
        Signature {
            args: args.into_iter().map(Convert::To).collect(),
            result,
        }
    }
}

/// The types of `args`.
fn types(args: &[Operand]) -> impl Iterator<Item = DataType> + '_ {
    args.iter().map(|a| a.ty)
}

/// Why a call does not type.
#[derive(Clone, Debug, PartialEq)]
pub enum Mismatch {
    /// The call has too few or too many arguments.
    Arity(String),
    /// An argument (its position, when one argument is to blame) has a type the function
    /// does not take.
    Type { arg: Option<usize>, message: String },
}

/// When a function's result is NULL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nulls {
    /// Only where one of its arguments is NULL (not necessarily wherever one is).
    FromArguments,
    /// Never.
    Never,
    /// It depends on the values (coalesce, nullif, …).
    Sometimes,
}

/// What a function promises about every call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Properties {
    /// Some argument values make it an error (overflow, a negative square root).
    pub can_fail: bool,
    /// When its result is NULL.
    pub nulls: Nulls,
    /// It may give different results for the same arguments (`random()`): two calls are
    /// never the same expression.
    pub volatile: bool,
    /// It reads the statement's clock (`tick()`): the same for every row of a statement,
    /// not from one statement to the next, so no index may keep its value.
    pub clock: bool,
    /// Its arguments are written as points, `f((x, y), (a, b))`, and arrive as their
    /// coordinates: the first point's, then the second's.
    pub points: bool,
}

impl Properties {
    /// A function that cannot fail and is NULL only where an argument is.
    pub const TOTAL: Properties = Properties {
        can_fail: false,
        nulls: Nulls::FromArguments,
        volatile: false,
        clock: false,
        points: false,
    };
}

/// What a kernel gets besides its arguments.
pub struct Call<'a> {
    /// The result type, as the signature gave it.
    pub ty: DataType,
    /// The rows of the batch (a scalar argument stands for all of them).
    pub len: usize,
    /// Where the call is written, for errors.
    pub at: Location,
    /// The state of `random()`'s sequence for this statement.
    pub rng: &'a Cell<u64>,
    /// The tick the statement runs in, for `tick()` and `delta_time()`.
    pub clock: Clock,
}

/// One scalar function.
pub trait ScalarFunction: Sync {
    /// Its name, then its aliases, in lower case.
    fn names(&self) -> &'static [&'static str];
    /// Types a call of it written as `name` (for messages) with arguments `args`.
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch>;
    /// What it promises.
    fn properties(&self) -> Properties;
    /// Whether some values of arguments of these types (those `signature` gave) make a
    /// call an error: `properties().can_fail` unless the types rule it out.
    fn can_fail(&self, args: &[DataType]) -> bool {
        let _ = args;
        self.properties().can_fail
    }
    /// Computes it over a batch. The arguments have the types `signature` gave.
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError>;
}

/// A handle on one function of the table: what a bound expression holds.
#[derive(Clone, Copy)]
pub struct Function(&'static dyn ScalarFunction);

impl Function {
    /// Its name (not an alias).
    pub fn name(self) -> &'static str {
        self.0.names()[0]
    }

    pub fn signature(self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        self.0.signature(name, args)
    }

    pub fn properties(self) -> Properties {
        self.0.properties()
    }

    /// Whether a call with arguments of these types may be an error.
    pub fn can_fail(self, args: &[DataType]) -> bool {
        self.0.can_fail(args)
    }

    pub fn invoke(self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        self.0.invoke(args, call)
    }
}

impl PartialEq for Function {
    fn eq(&self, other: &Function) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Function {}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `distance((x, y[, z]), (a, b[, c]))`, which a spatial index can serve.
pub const DISTANCE: Function = Function(&distance::Distance);

/// Every scalar function, in the order the hint lists them.
const ALL: &[Function] = &[
    Function(&math::Abs),
    Function(&math::Sign),
    Function(&math::FLOOR),
    Function(&math::CEIL),
    Function(&math::Round),
    Function(&math::Trunc),
    Function(&math::Mod),
    Function(&float::SQRT),
    Function(&float::CBRT),
    Function(&float::POWER),
    Function(&float::EXP),
    Function(&float::LN),
    Function(&float::Log),
    Function(&float::LOG10),
    Function(&float::LOG2),
    Function(&float::SIN),
    Function(&float::COS),
    Function(&float::TAN),
    Function(&float::ASIN),
    Function(&float::ACOS),
    Function(&float::ATAN),
    Function(&float::ATAN2),
    Function(&float::SINH),
    Function(&float::COSH),
    Function(&float::TANH),
    Function(&float::DEGREES),
    Function(&float::RADIANS),
    Function(&float::Pi),
    Function(&choice::LEAST),
    Function(&choice::GREATEST),
    Function(&text::LOWER),
    Function(&text::UPPER),
    Function(&text::Length),
    Function(&text::Substr),
    Function(&strings::TRIM),
    Function(&strings::LTRIM),
    Function(&strings::RTRIM),
    Function(&strings::Replace),
    Function(&strings::Strpos),
    Function(&strings::LPAD),
    Function(&strings::RPAD),
    Function(&strings::Repeat),
    Function(&strings::Reverse),
    Function(&strings::StartsWith),
    Function(&strings::Format),
    Function(&strings::SplitPart),
    Function(&strings::CONCAT),
    Function(&strings::CONCAT_WS),
    Function(&choice::Coalesce),
    Function(&choice::IfNull),
    Function(&choice::NullIf),
    Function(&random::Random),
    Function(&clock::Tick),
    Function(&clock::DeltaTime),
    DISTANCE,
    Function(&regex::RegexpLike),
    Function(&pg::VERSION),
    Function(&pg::CURRENT_SETTING),
    Function(&pg::CURRENT_DATABASE),
    Function(&pg::CURRENT_SCHEMA),
    Function(&pg::CURRENT_USER),
    Function(&arrays::CURRENT_SCHEMAS),
    Function(&arrays::STRING_TO_ARRAY),
    Function(&arrays::PARSE_IDENT),
    Function(&pg::PG_GET_USERBYID),
    Function(&pg::IS_VISIBLE),
    Function(&pg::HAS_PRIVILEGE),
    Function(&pg::FORMAT_TYPE),
    Function(&pg::PG_GET_EXPR),
    Function(&pg::PG_ENCODING_TO_CHAR),
    Function(&pg::DESCRIPTION),
    Function(&pg::NO_DEFINITION),
    Function(&pg::PUBLISHABLE),
    Function(&pg::QUOTE_IDENT),
    Function(&pg::BACKEND_PID),
    Function(&arrays::ARRAY_TO_STRING),
    Function(&arrays::ARRAY_CONTAINS),
    Function(&arrays::ARRAY_POSITION),
    Function(&arrays::ARRAY_ELEMENT),
    Function(&arrays::ARRAY_UPPER),
    Function(&arrays::ARRAY_LOWER),
    Function(&arrays::ARRAY_LENGTH),
    Function(&arrays::CARDINALITY),
];

/// The function called `name` (any case, any alias).
pub fn lookup(name: &str) -> Option<Function> {
    ALL.iter()
        .copied()
        .find(|f| f.0.names().iter().any(|n| n.eq_ignore_ascii_case(name)))
}

/// The names among the scalar functions and `more` that `name` may have meant to call
/// (a letter or a few off, or one the start of the other), nearest first, at most five.
pub fn near(name: &str, more: &[&'static str]) -> Vec<&'static str> {
    let name = name.to_ascii_lowercase();
    let names = ALL
        .iter()
        .flat_map(|f| f.0.names().iter().copied())
        .chain(more.iter().copied());
    let mut near: Vec<(usize, &'static str)> = names
        .filter_map(|candidate| {
            let distance = edit_distance(&name, candidate);
            let prefix = name.len().min(candidate.len()) >= 3
                && (candidate.starts_with(name.as_str()) || name.starts_with(candidate));
            (distance <= (name.len() / 3).max(1) || prefix).then_some((distance, candidate))
        })
        .collect();
    near.sort();
    near.dedup_by_key(|(_, n)| *n);
    near.into_iter().take(5).map(|(_, n)| n).collect()
}

/// How many letters to change, add or drop to make `a` into `b` (names are short).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Checks a call's argument count.
fn arity(name: &str, args: &[Operand], min: usize, max: usize) -> Result<(), Mismatch> {
    if (min..=max).contains(&args.len()) {
        return Ok(());
    }
    let want = if min == max {
        format!("{min}")
    } else if max == usize::MAX {
        format!("at least {min}")
    } else {
        format!("{min} to {max}")
    };
    Err(Mismatch::Arity(format!(
        "{name} takes {want} argument(s), found {}",
        args.len()
    )))
}

/// Checks that argument `i` is a number (or a bare NULL).
fn numeric(name: &str, args: &[Operand], i: usize) -> Result<(), Mismatch> {
    match args.get(i).map(|a| a.ty) {
        Some(t) if !(t.is_numeric() || t == DataType::Null) => Err(Mismatch::Type {
            arg: Some(i),
            message: format!("{name} needs a number, found {t}"),
        }),
        _ => Ok(()),
    }
}

/// Checks that argument `i` is TEXT (or a bare NULL).
fn text(name: &str, args: &[Operand], i: usize) -> Result<(), Mismatch> {
    match args.get(i).map(|a| a.ty) {
        Some(t) if !matches!(t, DataType::Text | DataType::Null) => Err(Mismatch::Type {
            arg: Some(i),
            message: format!("{name} needs TEXT, found {t}"),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_finds_one_function_and_is_near_itself() {
        let mut seen = std::collections::HashSet::new();
        for f in ALL {
            for name in f.0.names() {
                assert_eq!(name.to_ascii_lowercase(), *name, "{name} is not lower case");
                assert!(seen.insert(*name), "{name} names two functions");
                assert_eq!(lookup(&name.to_ascii_uppercase()), Some(*f));
                assert_eq!(
                    near(name, &[]).first(),
                    Some(name),
                    "{name} is not nearest itself"
                );
            }
        }
        assert_eq!(lookup("no_such_function"), None);
    }

    #[test]
    fn the_language_guide_lists_every_function_name() {
        let guide = include_str!("../../docs/language.md");
        let start = guide.find("## Functions").expect("a Functions section");
        let section = &guide[start..];
        let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
        for f in ALL {
            for name in f.0.names() {
                assert!(
                    section.contains(&format!("`{name}")),
                    "docs/language.md omits {name}"
                );
            }
        }
    }

    fn column(ty: DataType) -> Operand {
        Operand { ty, constant: false }
    }

    #[test]
    fn signatures_convert_arguments_and_refuse_wrong_types() {
        let abs = lookup("abs").expect("abs");
        assert_eq!(
            abs.signature("abs", &[column(DataType::Real)]),
            Ok(Signature::converting([DataType::Real], DataType::Real))
        );
        assert!(matches!(
            abs.signature("abs", &[column(DataType::Text)]),
            Err(Mismatch::Type { arg: Some(0), .. })
        ));
        assert!(matches!(abs.signature("abs", &[]), Err(Mismatch::Arity(_))));
        let power = lookup("power").expect("power");
        assert_eq!(
            power.signature("power", &[column(DataType::Int), column(DataType::Real)]),
            Ok(Signature::converting([DataType::Float; 2], DataType::Float))
        );
        let coalesce = lookup("coalesce").expect("coalesce");
        let mixed = [DataType::Null, DataType::Int, DataType::Real].map(column);
        assert_eq!(
            coalesce.signature("coalesce", &mixed).map(|s| s.result),
            Ok(DataType::Real)
        );
        // A FLOAT constant compared with a REAL column compares in REAL.
        let nullif = lookup("nullif").expect("nullif");
        let constant = Operand {
            ty: DataType::Float,
            constant: true,
        };
        assert_eq!(
            nullif.signature("nullif", &[column(DataType::Real), constant]),
            Ok(Signature {
                args: vec![Convert::To(DataType::Real), Convert::Operand(DataType::Real)],
                result: DataType::Real
            })
        );
    }
}
