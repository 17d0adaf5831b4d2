//! A sort's keys over typed columns: compared column by column (`compare`), or coded
//! into one `u128` per row when every key is a number, a boolean or an id and their
//! codes fit (`Packed`), so that a sort compares integers.
//!
//! Invariant: `Packed::key` orders rows exactly as `compare` followed by the row's
//! number does (NULLs where each key puts them, DESC reversed), and no two rows share a
//! key; so a sort of packed keys, stable or not, is the stable sort by `compare`.

use std::cmp::Ordering;

use super::column::{Column, Values};
use crate::storage::canonical_float;

/// One column of a sort.
#[derive(Clone, Copy)]
pub(in crate::exec) struct Key<'c> {
    pub(in crate::exec) column: Column<'c>,
    pub(in crate::exec) desc: bool,
    pub(in crate::exec) nulls_first: bool,
}

/// Rows `a` and `b` in the keys' order (equal when every key is).
pub(in crate::exec) fn compare(keys: &[Key<'_>], a: usize, b: usize) -> Ordering {
    compare_across(keys, a, keys, b)
}

/// Row `a` of `left`'s columns against row `b` of `right`'s, the same keys over two sets
/// of rows of the same types (a batch's rows against those a top-k kept).
pub(in crate::exec) fn compare_across(left: &[Key<'_>], a: usize, right: &[Key<'_>], b: usize) -> Ordering {
    for (k, r) in left.iter().zip(right) {
        let ord = match (k.column.is_null(a), r.column.is_null(b)) {
            (true, true) => Ordering::Equal,
            (true, false) if k.nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if k.nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                let o = k.column.order_with(a, &r.column, b);
                if k.desc { o.reverse() } else { o }
            }
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

/// A sort's keys coded into one `u128` per row, when they fit: each key's values as
/// unsigned codes in the sort's order (shifted to start at 0, so that few bits hold
/// them; reversed for DESC; a bit above them for NULL's place), the first key highest,
/// then the row's number (which makes every key unique and the sort stable). Texts
/// have no such code.
pub(in crate::exec) struct Packed<'c> {
    fields: Vec<Field<'c>>,
    /// How many low bits hold the row number, and those bits.
    pub(in crate::exec) row_bits: u32,
    pub(in crate::exec) row_mask: u128,
}

/// One key of a `Packed`.
struct Field<'c> {
    column: Column<'c>,
    /// The smallest and largest code of its values that are not NULL.
    min: u64,
    max: u64,
    /// Bits for `code - min`.
    bits: u32,
    /// Whether a value is NULL somewhere: a bit above the value's says which.
    nulls: bool,
    desc: bool,
    nulls_first: bool,
    /// Where its bits start in the packed key.
    shift: u32,
}

impl<'c> Field<'c> {
    /// A value's code: unsigned, ordered as the values are (floats by IEEE's total order
    /// of their canonical form, as `float_order`).
    fn code(column: &Column<'_>, r: usize) -> Option<u64> {
        let float = |bits: u64, sign: u64| if bits & sign != 0 { !bits } else { bits | sign };
        Some(match column.values {
            Values::Int(x) => (x[r] as u64) ^ (1 << 63),
            Values::Float(x) => float(canonical_float(x[r]).to_bits(), 1 << 63),
            Values::Real(x) => float(canonical_float(f64::from(x[r])).to_bits(), 1 << 63),
            Values::Bool(x) => u64::from(x[r]),
            Values::Entity(x) => x[r]?.to_bits(),
            Values::Null | Values::Text(_) => return None,
        })
    }

    fn new(key: &Key<'c>, n: usize) -> Option<Field<'c>> {
        if matches!(key.column.values, Values::Text(_)) {
            return None;
        }
        let (mut min, mut max, mut nulls) = (u64::MAX, 0u64, false);
        for r in 0..n {
            let code = if key.column.is_null(r) {
                None
            } else {
                Field::code(&key.column, r)
            };
            match code {
                Some(c) => {
                    min = min.min(c);
                    max = max.max(c);
                }
                None => nulls = true,
            }
        }
        if min > max {
            (min, max) = (0, 0);
        }
        Some(Field {
            column: key.column,
            min,
            max,
            bits: 64 - (max - min).leading_zeros(),
            nulls,
            desc: key.desc,
            nulls_first: key.nulls_first,
            shift: 0,
        })
    }

    fn width(&self) -> u32 {
        self.bits + u32::from(self.nulls)
    }

    /// Its bits of row `r`'s key, in place.
    fn bits_of(&self, r: usize) -> u128 {
        let code = if self.column.is_null(r) {
            None
        } else {
            Field::code(&self.column, r)
        };
        let field = match code {
            None if self.nulls_first => 0,
            None => 1u128 << self.bits,
            Some(c) => {
                let v = if self.desc { self.max - c } else { c - self.min };
                let flag = if self.nulls && self.nulls_first {
                    1u128 << self.bits
                } else {
                    0
                };
                u128::from(v) | flag
            }
        };
        field.checked_shl(self.shift).unwrap_or(0)
    }
}

impl<'c> Packed<'c> {
    /// `keys` over `n` rows packed, or `None` when one is a text or they need more than
    /// 128 bits together with the row's number.
    pub(in crate::exec) fn new(keys: &[Key<'c>], n: usize) -> Option<Packed<'c>> {
        let row_bits = (usize::BITS - n.leading_zeros()).max(1);
        let mut fields = Vec::with_capacity(keys.len());
        for key in keys {
            fields.push(Field::new(key, n)?);
        }
        let total: u32 = fields.iter().map(Field::width).sum::<u32>() + row_bits;
        if total > 128 {
            return None;
        }
        // From the last field up: the row's number in the lowest bits.
        let mut shift = row_bits;
        for field in fields.iter_mut().rev() {
            field.shift = shift;
            shift += field.width();
        }
        Some(Packed {
            fields,
            row_bits,
            row_mask: (1u128 << row_bits) - 1,
        })
    }

    /// Row `r`'s key.
    pub(in crate::exec) fn key(&self, r: usize) -> u128 {
        self.fields.iter().fold(r as u128, |key, f| key | f.bits_of(r))
    }

    /// The lowest bit of key number `i` (128 past the last key): two keys that agree
    /// above it agree on keys `0..i`.
    pub(in crate::exec) fn start_of(&self, i: usize) -> u32 {
        self.fields.get(i).map_or(128, |f| f.shift)
    }
}
