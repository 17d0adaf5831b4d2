//! Unit tests of evaluation: AND evaluates its right side only where the left may pass,
//! the one-pass REAL sums of products are the two rounded operations, bit for bit, and a
//! conjunction worked in place passes the rows the general evaluation passes.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};

use super::arith::float_op;
use super::fused::ScaledSum;
use super::*;
use crate::vector::Vector;
use crate::vector::kernels::Side;
use crate::xorshift;

/// Expressions without subqueries need no world: these refuse to run any.
struct NoSubqueries;

impl Subqueries for NoSubqueries {
    fn run(&self, _: &QueryPlan) -> Result<Chunk> {
        Err(ExecError::internal(Location::default(), "no subqueries here"))
    }

    fn run_apart(&self, plan: &QueryPlan) -> Result<Chunk> {
        self.run(plan)
    }

    fn keep(&self, _: usize, _: Location) -> Result<()> {
        Ok(())
    }

    fn give_back(&self, _: usize) {}
}

/// What an evaluation with no parameters, no outer row and no subqueries reads.
struct Bare {
    params: ParamValues,
    outer: RefCell<Vec<Value>>,
    rng: Cell<u64>,
}

impl Default for Bare {
    fn default() -> Bare {
        Bare {
            params: ParamValues::default(),
            outer: RefCell::default(),
            rng: Cell::new(1),
        }
    }
}

impl Bare {
    fn cx(&self) -> EvalCtx<'_> {
        EvalCtx {
            params: &self.params,
            outer: &self.outer,
            rng: &self.rng,
            subqueries: &NoSubqueries,
            clock: Clock::default(),
        }
    }
}

fn int(v: i64) -> BoundExpr {
    BoundExpr::constant(Value::Int(v), Location::default())
}

fn op(kind: BoundKind, ty: DataType) -> BoundExpr {
    BoundExpr::new(kind, ty, Location::default())
}

/// A one-slot batch of INTs, `None` for NULL.
fn ints(values: &[Option<i64>]) -> Batch<'static> {
    let mut b = Batch::new(values.len(), 1);
    let data: Vec<i64> = values.iter().map(|v| v.unwrap_or(0)).collect();
    let valid: Vec<bool> = values.iter().map(Option::is_some).collect();
    b.slots[0] = Some(Datum::Vector(Vector::new(
        Data::Int(Cow::Owned(data)),
        Some(Cow::Owned(valid)),
        values.len(),
    )));
    b
}

#[test]
fn and_evaluates_its_right_side_only_where_the_left_may_pass() {
    // y <> 0 AND 10 / y > 1, over y = 2, 0, NULL, 20: dividing the 0 would fail.
    let y = || BoundExpr::slot(0, DataType::Int, Location::default());
    let nonzero = op(
        BoundKind::Compare(CmpOp::NotEq, Box::new(y()), Box::new(int(0))),
        DataType::Bool,
    );
    let quotient = op(
        BoundKind::Arith(ArithOp::Div, Box::new(int(10)), Box::new(y())),
        DataType::Int,
    );
    let big = op(
        BoundKind::Compare(CmpOp::Gt, Box::new(quotient), Box::new(int(1))),
        DataType::Bool,
    );
    let both = op(BoundKind::And(Box::new(nonzero), Box::new(big)), DataType::Bool);
    let batch = ints(&[Some(2), Some(0), None, Some(20)]);
    let bare = Bare::default();
    let cx = bare.cx();
    let out = eval(&both, &batch, &cx).expect("no row divides by zero");
    let got: Vec<Value> = (0..4).map(|i| out.get(i)).collect();
    assert_eq!(
        got,
        vec![
            Value::Bool(true),
            Value::Bool(false),
            Value::Null,
            Value::Bool(false)
        ]
    );
    assert!(matches!(select_rows(&both, &batch, &cx), Ok(Selection::Rows(r)) if r == vec![0]));
}

/// The same f32 bits, or both a NaN.
fn same_bits(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// A batch of REAL slots, `None` for NULL.
fn reals(slots: &[&[Option<f32>]]) -> Batch<'static> {
    let len = slots[0].len();
    let mut b = Batch::new(len, slots.len());
    for (slot, values) in b.slots.iter_mut().zip(slots) {
        let data: Vec<f32> = values.iter().map(|v| v.unwrap_or(0.0)).collect();
        let valid: Vec<bool> = values.iter().map(Option::is_some).collect();
        *slot = Some(Datum::Vector(Vector::new(
            Data::Real(Cow::Owned(data)),
            Some(Cow::Owned(valid)),
            len,
        )));
    }
    b
}

#[test]
fn real_sums_of_products_are_the_two_rounded_operations_row_by_row() {
    // `a ± y * z` and `y * z ± a` in REAL, over every mix of columns (with NULLs,
    // infinities, NaNs of two payloads, -0) and constants (NULL and NaN among them):
    // the one-pass path and the two passes it stands for must give each row the bits
    // of f32 `a ± (y * z)` (any NaN for a NaN: Rust fixes no payload).
    let x = [
        Some(1.5),
        None,
        Some(f32::MAX),
        Some(-0.0),
        Some(f32::NAN),
        Some(3.0e-39),
        Some(-7.25),
    ];
    let v = [
        Some(2.0),
        Some(1.0),
        Some(f32::MAX),
        Some(0.0),
        Some(f32::from_bits(0x7fc0_1234)),
        None,
        Some(f32::INFINITY),
    ];
    let w = [
        Some(0.1),
        Some(4.0),
        Some(2.0),
        Some(-0.0),
        None,
        Some(1.0),
        Some(-1.0),
    ];
    let batch = reals(&[&x, &v, &w]);
    let columns: [&[Option<f32>]; 3] = [&x, &v, &w];
    let bare = Bare::default();
    let cx = bare.cx();
    // An operand: a slot, or a constant (`None`: NULL).
    #[derive(Clone, Copy, Debug)]
    enum Term {
        Slot(usize),
        Constant(Option<f32>),
    }
    let expr = |t: Term| match t {
        Term::Slot(s) => BoundExpr::slot(s, DataType::Real, Location::default()),
        Term::Constant(Some(c)) => BoundExpr::constant(Value::Real(c), Location::default()),
        Term::Constant(None) => {
            let null = BoundExpr::constant(Value::Null, Location::default());
            op(BoundKind::Cast(Box::new(null), None), DataType::Real)
        }
    };
    let value = |t: Term, row: usize| match t {
        Term::Slot(s) => columns[s][row],
        Term::Constant(c) => c,
    };
    let terms = [
        Term::Slot(0),
        Term::Slot(1),
        Term::Slot(2),
        Term::Constant(Some(1.0 / 60.0)),
        Term::Constant(Some(-3.0)),
        Term::Constant(Some(f32::from_bits(0x7fc0_0777))),
        Term::Constant(None),
    ];
    let mut cases = 0;
    for sub in [false, true] {
        for product_first in [false, true] {
            for &a in &terms {
                for &y in &terms {
                    for &z in &terms {
                        let product = op(
                            BoundKind::Arith(ArithOp::Mul, Box::new(expr(y)), Box::new(expr(z))),
                            DataType::Real,
                        );
                        let operation = if sub { ArithOp::Sub } else { ArithOp::Add };
                        let (l, r) = if product_first {
                            (product, expr(a))
                        } else {
                            (expr(a), product)
                        };
                        let e = op(
                            BoundKind::Arith(operation, Box::new(l), Box::new(r)),
                            DataType::Real,
                        );
                        let out = eval(&e, &batch, &cx).expect("REAL + - * cannot fail");
                        for row in 0..batch.len {
                            let want = match (value(a, row), value(y, row), value(z, row)) {
                                (Some(a), Some(y), Some(z)) => {
                                    let p = y * z;
                                    Value::Real(match (sub, product_first) {
                                        (false, false) => a + p,
                                        (false, true) => p + a,
                                        (true, false) => a - p,
                                        (true, true) => p - a,
                                    })
                                }
                                _ => Value::Null,
                            };
                            let got = out.get(row);
                            let same = match (&got, &want) {
                                (Value::Real(g), Value::Real(w)) => same_bits(*g, *w),
                                _ => got == want,
                            };
                            assert!(
                                same,
                                "{a:?} {y:?} {z:?} sub={sub} product_first={product_first} row {row}: {got:?}, want {want:?}"
                            );
                        }
                        cases += 1;
                    }
                }
            }
        }
    }
    assert_eq!(cases, 4 * 7 * 7 * 7);
    // No rows: nothing to compute, and nothing fails.
    let empty = reals(&[&[], &[]]);
    let product = op(
        BoundKind::Arith(
            ArithOp::Mul,
            Box::new(expr(Term::Slot(1))),
            Box::new(expr(terms[3])),
        ),
        DataType::Real,
    );
    let sum = op(
        BoundKind::Arith(ArithOp::Add, Box::new(expr(Term::Slot(0))), Box::new(product)),
        DataType::Real,
    );
    let out = eval(&sum, &empty, &cx).expect("no rows, no error");
    assert_eq!(out.into_vector(DataType::Real, 0).len(), 0);
}

#[test]
fn the_one_pass_scaled_sum_is_the_two_passes_bit_for_bit() {
    // `ScaledSum` against the general kernels it replaces (a product, then a sum),
    // with the constant on either side of the product, NaNs of two payloads among the
    // values (any NaN for a NaN: Rust fixes no payload).
    let nan_a = f32::from_bits(0x7fc0_0001);
    let nan_b = f32::from_bits(0x7fc0_0002);
    let xs = [1.5, -0.0, f32::MAX, nan_a, 3.0e-39, -7.25, nan_a, 0.1];
    let vs = [2.0, 0.0, f32::MAX, 1.0, nan_b, f32::INFINITY, nan_b, 0.2];
    for s in [1.0 / 60.0, -3.0, 0.0, f32::INFINITY, nan_b, nan_a] {
        for sub in [false, true] {
            for product_first in [false, true] {
                for scalar_first in [false, true] {
                    let sum = ScaledSum { sub, product_first };
                    let (y, z) = if scalar_first {
                        (Side::One(s), Side::Many(&vs[..]))
                    } else {
                        (Side::Many(&vs[..]), Side::One(s))
                    };
                    let product = float_op(ArithOp::Mul, y, z);
                    let op = if sub { ArithOp::Sub } else { ArithOp::Add };
                    let want = if product_first {
                        float_op(op, Side::Many(&product), Side::Many(&xs))
                    } else {
                        float_op(op, Side::Many(&xs), Side::Many(&product))
                    };
                    let got = sum.run(&xs, &vs, s);
                    assert!(
                        got.len() == want.len() && got.iter().zip(&want).all(|(&g, &w)| same_bits(g, w)),
                        "s={s} sub={sub} product_first={product_first} scalar_first={scalar_first}: \
                         {got:?}, want {want:?}"
                    );
                }
            }
        }
    }
}

/// A batch of 64 rows: slot 0 INT, 1 FLOAT, 2 REAL, each with NULLs and few distinct
/// values (so that equal rows are common), the floats with NaN, 0.0 and -0.0.
fn numbers(next: &mut impl FnMut() -> u64) -> Batch<'static> {
    const FLOATS: [f64; 6] = [-1.0, -0.0, 0.0, 0.5, 1.0, f64::NAN];
    let len = 64;
    let valid: Vec<Vec<bool>> = (0..3)
        .map(|_| (0..len).map(|_| !next().is_multiple_of(5)).collect())
        .collect();
    let ints: Vec<i64> = (0..len).map(|_| (next() % 5) as i64 - 2).collect();
    let floats: Vec<f64> = (0..len).map(|_| FLOATS[(next() % 6) as usize]).collect();
    let reals: Vec<f32> = (0..len).map(|_| FLOATS[(next() % 6) as usize] as f32).collect();
    let mut b = Batch::new(len, 3);
    let data = [
        Data::Int(Cow::Owned(ints)),
        Data::Float(Cow::Owned(floats)),
        Data::Real(Cow::Owned(reals)),
    ];
    for ((slot, data), valid) in b.slots.iter_mut().zip(data).zip(valid) {
        *slot = Some(Datum::Vector(Vector::new(data, Some(Cow::Owned(valid)), len)));
    }
    b
}

#[test]
fn a_conjunction_worked_in_place_passes_the_rows_the_general_evaluation_passes() {
    const TYPES: [DataType; 3] = [DataType::Int, DataType::Float, DataType::Real];
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
    let bare = Bare::default();
    let cx = bare.cx();
    let at = Location::default();
    for _ in 0..2_000 {
        let batch = numbers(&mut next);
        // One to four comparisons of a column with a value of its type (now and then
        // NULL), either side first, ANDed.
        let mut condition: Option<BoundExpr> = None;
        for _ in 0..1 + next() % 4 {
            let slot = (next() % 3) as usize;
            let k = (next() % 5) as i64 - 2;
            let value = match (next() % 8, slot) {
                (0, _) => Value::Null,
                (_, 0) => Value::Int(k),
                (1, 1) => Value::Float(-0.0),
                (_, 1) => Value::Float(k as f64 / 2.0),
                (1, _) => Value::Real(f32::NAN),
                _ => Value::Real(k as f32 / 2.0),
            };
            let (column, value) = (
                BoundExpr::slot(slot, TYPES[slot], at),
                BoundExpr::constant(value, at),
            );
            let (l, r) = if next().is_multiple_of(2) {
                (column, value)
            } else {
                (value, column)
            };
            let op_ = CmpOp::ALL[(next() % 6) as usize];
            let compare = op(BoundKind::Compare(op_, Box::new(l), Box::new(r)), DataType::Bool);
            condition = Some(match condition {
                None => compare,
                Some(c) => op(BoundKind::And(Box::new(c), Box::new(compare)), DataType::Bool),
            });
        }
        let condition = condition.expect("one comparison at least");
        let mut flags = Vec::new();
        let worked =
            conjunction::pass_flags(&condition, &batch, &cx, &mut flags).expect("no comparison fails");
        assert!(worked, "not worked in place: {condition:?}");
        let in_place = selection_from_rows(true_rows_of(&flags), batch.len);
        let general = selection_of(
            &eval(&condition, &batch, &cx).expect("no comparison fails"),
            batch.len,
        );
        assert_eq!(in_place, general, "{condition:?}");
    }
    // A column compared with a value of another type is left to the general evaluation.
    let batch = numbers(&mut next);
    let mixed = op(
        BoundKind::Compare(
            CmpOp::Lt,
            Box::new(BoundExpr::slot(0, DataType::Int, at)),
            Box::new(BoundExpr::constant(Value::Float(0.5), at)),
        ),
        DataType::Bool,
    );
    let mut flags = Vec::new();
    assert!(!conjunction::pass_flags(&mixed, &batch, &cx, &mut flags).unwrap());
}

/// Flags in memory give the positions read one at a time give, for every length below
/// 300 (each remainder 0-7 after 0-37 whole groups of eight), at no flag true, about one
/// in 97 and one in 40 (read eight at a time), one in 7, half, and all; and one true at
/// each place of up to 100 (read eight at a time past 32).
#[test]
fn true_rows_of_flags_in_memory_are_those_read_one_by_one() {
    for len in 1..=100 {
        for at in 0..len {
            let flags: Vec<bool> = (0..len).map(|i| i == at).collect();
            assert_eq!(true_rows_of(&flags), vec![at as u32], "{len} flags, true at {at}");
        }
    }
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
    for len in 0..300 {
        for one_in in [0, 1, 2, 7, 40, 97] {
            let flags: Vec<bool> = (0..len)
                .map(|_| one_in != 0 && next().is_multiple_of(one_in))
                .collect();
            let expected: Vec<u32> = (0..len as u32).filter(|&i| flags[i as usize]).collect();
            assert_eq!(true_rows_of(&flags), expected, "{len} flags, one in {one_in}");
            assert_eq!(true_rows(flags.iter().copied()), expected);
        }
    }
}
