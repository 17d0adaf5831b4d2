//! Zone maps: for each INT, FLOAT, REAL and ENTITY column of a table, the least and the
//! greatest value of the whole column and of each block of `BLOCK_ROWS` rows, so that a
//! scan whose condition wants values no block holds (`hp < 10` of a table whose least
//! `hp` is 50) skips the table, or the block, without reading it.
//!
//! A column's zones are computed when a scan first asks for them and kept in its
//! `ColumnCell` until the column is next lent to write (which drops them: see
//! `cell.rs`), so they always describe the values the column holds when read.
//!
//! Invariants:
//! - `blocks[b]` holds the least and the greatest of rows `b * BLOCK_ROWS ..` of its
//!   block, and `whole` those of every row. NULLs (an ENTITY column's `None`) and NaNs
//!   are left out: no comparison with `=`, `<`, `<=`, `>` or `>=` is true of them, so a
//!   condition that cannot hold of the values left skips their rows rightly.
//! - A block (or column) with no value left has a least value above its greatest, and
//!   every `may_hold` of it is false.
//! - Bounds compare as the comparison kernels compare: integers and ids as 128-bit
//!   integers (an id as its unsigned 64 bits), FLOAT and REAL as `f64` (every REAL is one
//!   exactly, so the order is REAL's own), `-0.0` equal to `0.0`.

use std::ops::Bound;

use super::column::Column;
use super::ids::Entity;
use super::marks::BLOCK_ROWS;

/// A value as zone maps compare it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ZoneKey {
    /// An INT, or an id's 64 bits.
    Int(i128),
    /// A FLOAT or REAL.
    Float(f64),
}

/// The values a condition accepts of one field: `lo ..= hi`, `lo .. hi`, and so on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyRange {
    pub lo: Bound<ZoneKey>,
    pub hi: Bound<ZoneKey>,
}

impl KeyRange {
    /// Just `v`.
    pub fn point(v: ZoneKey) -> KeyRange {
        KeyRange {
            lo: Bound::Included(v),
            hi: Bound::Included(v),
        }
    }
}

/// The least and the greatest values of one column: of every row, and of each block.
#[derive(Clone, Debug, PartialEq)]
pub struct Zones {
    order: Order,
    /// A REAL column's: its bounds are REALs (for EXPLAIN to show them as such).
    real: bool,
}

/// The bounds in the order of the column's type.
#[derive(Clone, Debug, PartialEq)]
enum Order {
    /// An INT or ENTITY column's.
    Int(Bounds<i128>),
    /// A FLOAT or REAL column's.
    Float(Bounds<f64>),
}

/// The least and greatest value of every row (`whole`) and of each block of rows.
#[derive(Clone, Debug, PartialEq)]
struct Bounds<K> {
    whole: (K, K),
    blocks: Vec<(K, K)>,
}

impl Zones {
    /// The zones of `column`; `None` for a type zones do not order (BOOL, TEXT).
    pub(crate) fn of(column: &Column) -> Option<Zones> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: `of_wide` needs AVX2 and nothing else, and the processor has it.
            return unsafe { of_wide(column) };
        }
        of_column(column)
    }

    /// How many blocks of `BLOCK_ROWS` rows the column has.
    pub fn blocks(&self) -> usize {
        match &self.order {
            Order::Int(b) => b.blocks.len(),
            Order::Float(b) => b.blocks.len(),
        }
    }

    /// Whether some value of the column (`block: None`) or of block `block` may be in
    /// `range`: false only when none is.
    pub fn may_hold(&self, range: &KeyRange, block: Option<usize>) -> bool {
        match &self.order {
            Order::Int(b) => b.may_hold(range, block, |k| match k {
                ZoneKey::Int(v) => Some(v),
                ZoneKey::Float(_) => None,
            }),
            Order::Float(b) => b.may_hold(range, block, |k| match k {
                ZoneKey::Float(v) => Some(v),
                ZoneKey::Int(_) => None,
            }),
        }
    }

    /// Whether the column is REAL (its bounds are REALs, kept as the FLOATs they are).
    pub fn is_real(&self) -> bool {
        self.real
    }

    /// The least and greatest value of the whole column, or `None` when it holds none
    /// (every row NULL or NaN, or no row): for EXPLAIN.
    pub fn whole_span(&self) -> Option<(ZoneKey, ZoneKey)> {
        match &self.order {
            Order::Int(Bounds { whole: (lo, hi), .. }) => {
                (lo <= hi).then_some((ZoneKey::Int(*lo), ZoneKey::Int(*hi)))
            }
            Order::Float(Bounds { whole: (lo, hi), .. }) => {
                (lo <= hi).then_some((ZoneKey::Float(*lo), ZoneKey::Float(*hi)))
            }
        }
    }
}

/// `Zones::of` compiled for AVX2: four `i64` or `f64` lanes to a compare where the
/// baseline x86-64 build has SSE2, which compares no 64-bit integers at all.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn of_wide(column: &Column) -> Option<Zones> {
    of_column(column)
}

/// The zones of `column`, inlined into each build of `Zones::of`. Each block is folded in
/// its own type, eight lanes at a time (`least_greatest`), so that a block costs a few
/// vector compares per eight values; an id is never 0, which an ENTITY NULL's bits are.
#[inline(always)]
fn of_column(column: &Column) -> Option<Zones> {
    let real = matches!(column, Column::Real(_));
    let order = match column {
        Column::Int(v) => Order::Int(Bounds::of(v, |c| {
            let (lo, hi) = least_greatest(c, |&x| x, i64::MAX, i64::MIN);
            (i128::from(lo), i128::from(hi))
        })),
        Column::Entity(v) => Order::Int(Bounds::of(v, |c| {
            // NULL (0) less one is the greatest of all, so it is never the least; and it
            // is the greatest only when every row is NULL, which `hi` (0) tells.
            let (lo, _) = least_greatest(c, |e| e.map_or(0, Entity::to_bits).wrapping_sub(1), u64::MAX, 0);
            let (_, hi) = least_greatest(c, |e| e.map_or(0, Entity::to_bits), u64::MAX, 0);
            match hi {
                0 => (i128::MAX, i128::MIN),
                _ => (i128::from(lo) + 1, i128::from(hi)),
            }
        })),
        Column::Float(v) => Order::Float(Bounds::of(v, |c| {
            least_greatest(c, |&x| x, f64::INFINITY, f64::NEG_INFINITY)
        })),
        Column::Real(v) => Order::Float(Bounds::of(v, |c| {
            let (lo, hi) = least_greatest(c, |&x| x, f32::INFINITY, f32::NEG_INFINITY);
            (f64::from(lo), f64::from(hi))
        })),
        Column::Bool(_) | Column::Text(_) => return None,
    };
    Some(Zones { order, real })
}

/// The least and greatest of `key` over `values`, starting from `(lo, hi)`, in eight
/// independent lanes joined at the end: no compare waits for the one before, and the
/// compiler makes each lane step one vector compare and select. A NaN compares false
/// both ways and is left out.
#[inline(always)]
fn least_greatest<T, K: Copy + PartialOrd>(values: &[T], key: impl Fn(&T) -> K, lo: K, hi: K) -> (K, K) {
    let (mut los, mut his) = ([lo; 8], [hi; 8]);
    let mut lanes = values.chunks_exact(8);
    for eight in &mut lanes {
        for k in 0..8 {
            let x = key(&eight[k]);
            los[k] = if x < los[k] { x } else { los[k] };
            his[k] = if x > his[k] { x } else { his[k] };
        }
    }
    for (k, v) in lanes.remainder().iter().enumerate() {
        let x = key(v);
        los[k] = if x < los[k] { x } else { los[k] };
        his[k] = if x > his[k] { x } else { his[k] };
    }
    let lo = los.into_iter().fold(lo, |a, x| if x < a { x } else { a });
    let hi = his.into_iter().fold(hi, |a, x| if x > a { x } else { a });
    (lo, hi)
}

impl<K: Copy + PartialOrd + Ends> Bounds<K> {
    /// The bounds of each block of `values` (`block` gives a block's least and greatest,
    /// `(MAX, MIN)` when it holds no value), and of all of them.
    fn of<T>(values: &[T], block: impl Fn(&[T]) -> (K, K)) -> Bounds<K> {
        let blocks: Vec<(K, K)> = values.chunks(BLOCK_ROWS).map(block).collect();
        let whole = blocks.iter().fold((K::MAX, K::MIN), |(lo, hi), &(l, h)| {
            (if l < lo { l } else { lo }, if h > hi { h } else { hi })
        });
        Bounds { whole, blocks }
    }

    fn may_hold(&self, range: &KeyRange, block: Option<usize>, key: impl Fn(ZoneKey) -> Option<K>) -> bool {
        let (lo, hi) = match block {
            None => self.whole,
            Some(b) => match self.blocks.get(b) {
                Some(&bounds) => bounds,
                // Past the blocks known: nothing is known of those rows.
                None => return true,
            },
        };
        overlaps(lo, hi, range, key)
    }
}

/// The ends of an order, for a block's starting bounds.
trait Ends {
    const MAX: Self;
    const MIN: Self;
}

impl Ends for i128 {
    const MAX: i128 = i128::MAX;
    const MIN: i128 = i128::MIN;
}

impl Ends for f64 {
    const MAX: f64 = f64::INFINITY;
    const MIN: f64 = f64::NEG_INFINITY;
}

/// Whether `lo ..= hi` (empty when `lo > hi`) meets `range`, whose ends `key` reads in
/// this order (`None`: another order, which cannot be decided here, so it may).
fn overlaps<K: Copy + PartialOrd>(
    lo: K,
    hi: K,
    range: &KeyRange,
    key: impl Fn(ZoneKey) -> Option<K>,
) -> bool {
    // Bounds are never NaN (`least_greatest` leaves NaN out); an empty run's are crossed.
    if lo > hi {
        return false;
    }
    // Each test below is false for a NaN end of `range`, as every comparison with NaN is.
    let above_lo = match range.lo {
        Bound::Unbounded => true,
        Bound::Included(v) => match key(v) {
            Some(v) => hi >= v,
            None => return true,
        },
        Bound::Excluded(v) => match key(v) {
            Some(v) => hi > v,
            None => return true,
        },
    };
    let below_hi = match range.hi {
        Bound::Unbounded => true,
        Bound::Included(v) => match key(v) {
            Some(v) => lo <= v,
            None => return true,
        },
        Bound::Excluded(v) => match key(v) {
            Some(v) => lo < v,
            None => return true,
        },
    };
    above_lo && below_hi
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lt(v: ZoneKey) -> KeyRange {
        KeyRange {
            lo: Bound::Unbounded,
            hi: Bound::Excluded(v),
        }
    }

    #[test]
    fn int_zones_hold_each_blocks_least_and_greatest() {
        let mut v: Vec<i64> = (0..3000).collect();
        v[2500] = -7;
        let z = Zones::of(&Column::Int(v)).unwrap();
        assert_eq!(z.blocks(), 3);
        assert_eq!(z.whole_span(), Some((ZoneKey::Int(-7), ZoneKey::Int(2999))));
        assert!(z.may_hold(&KeyRange::point(ZoneKey::Int(5)), Some(0)));
        assert!(!z.may_hold(&KeyRange::point(ZoneKey::Int(5)), Some(1)));
        assert!(z.may_hold(&lt(ZoneKey::Int(0)), Some(2)));
        assert!(!z.may_hold(&lt(ZoneKey::Int(0)), Some(1)));
        assert!(!z.may_hold(&lt(ZoneKey::Int(-7)), None));
        assert!(z.may_hold(&lt(ZoneKey::Int(-6)), None));
        // Another order cannot be decided: it may hold.
        assert!(z.may_hold(&lt(ZoneKey::Float(-100.0)), None));
    }

    #[test]
    fn nan_null_and_negative_zero_are_what_comparisons_make_them() {
        let z = Zones::of(&Column::Float(vec![f64::NAN, -0.0, f64::NAN])).unwrap();
        assert!(z.may_hold(&KeyRange::point(ZoneKey::Float(0.0)), None));
        assert!(!z.may_hold(&lt(ZoneKey::Float(0.0)), None));
        assert!(!z.may_hold(&KeyRange::point(ZoneKey::Float(f64::NAN)), None));
        let nan = Zones::of(&Column::Real(vec![f32::NAN; 5])).unwrap();
        assert_eq!(nan.whole_span(), None);
        assert!(!nan.may_hold(&lt(ZoneKey::Float(f64::INFINITY)), None));
        let ids = Zones::of(&Column::Entity(vec![None, Entity::from_bits(9), None])).unwrap();
        assert_eq!(ids.whole_span(), Some((ZoneKey::Int(9), ZoneKey::Int(9))));
        assert!(!ids.may_hold(&KeyRange::point(ZoneKey::Int(0)), None));
        let none = Zones::of(&Column::Entity(vec![None])).unwrap();
        assert!(!none.may_hold(&lt(ZoneKey::Int(i128::MAX)), None));
        assert!(Zones::of(&Column::Bool(vec![true])).is_none());
    }
}
