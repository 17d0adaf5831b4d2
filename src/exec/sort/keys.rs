//! A sort's keys over typed columns: compared column by column (`compare`), and coded
//! into one `u128` per row (`Packed`) so that a sort compares integers: each leading key
//! that fits in its bits (a number, a boolean or an id whole; a text by as many of its
//! first bytes as fit, whole when it is that short), then the row's number.
//!
//! Invariants: two rows whose codes differ above the row's number are in the order of
//! their codes, by `compare`; rows whose codes agree there are in `compare`'s order
//! followed by their numbers (`Packed::order`). When the code holds every key whole
//! (`Packed::exact`: numbers, booleans, ids, texts short enough and without NUL)
//! the codes alone are that order, and no two rows share a code; so a sort of exact
//! codes, stable or not, is the stable sort by `compare`.

use std::cmp::Ordering;

use super::SORT_CHECK;
use super::column::{Column, Values};
use crate::exec::Vector;
use crate::plan::SortKey;
use crate::storage::float_rank;

/// One column of a sort.
#[derive(Clone, Copy)]
pub(in crate::exec) struct Key<'c> {
    pub(in crate::exec) column: Column<'c>,
    pub(in crate::exec) desc: bool,
    pub(in crate::exec) nulls_first: bool,
}

impl<'c> Key<'c> {
    /// ORDER BY's keys `order` over the columns `column` gives (by their numbers; a
    /// number it has no column for is left out).
    pub(in crate::exec) fn all_of(
        order: &[SortKey],
        column: impl Fn(usize) -> Option<&'c Vector<'c>>,
    ) -> Vec<Key<'c>> {
        order
            .iter()
            .filter_map(|k| {
                Some(Key {
                    column: Column::of(column(k.column)?),
                    desc: k.desc,
                    nulls_first: k.nulls_first,
                })
            })
            .collect()
    }
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

/// A sort's keys coded into one `u128` per row: the leading keys' values as unsigned
/// codes in the sort's order (shifted to start at 0, so that few bits hold them;
/// reversed for DESC; a bit above them for NULL's place), the first key highest, as many
/// keys as fit up to the first text its code cannot hold whole (coded by as many first
/// bytes as fit), then the row's number (which makes every code unique and the sort
/// stable).
pub(in crate::exec) struct Packed<'c> {
    fields: Vec<Field<'c>>,
    /// How many low bits hold the row number, and those bits.
    pub(in crate::exec) row_bits: u32,
    pub(in crate::exec) row_mask: u128,
    /// The bits above the fields': unused.
    pub(in crate::exec) top_bit: u32,
    /// Whether the code holds every key whole, so that codes alone order the rows.
    pub(in crate::exec) exact: bool,
}

/// One key of a `Packed`.
struct Field<'c> {
    column: Column<'c>,
    /// The smallest and largest code of its values that are not NULL.
    min: u128,
    max: u128,
    /// Bits for `code - min`.
    bits: u32,
    /// Whether a value is NULL somewhere: a bit above the value's says which.
    nulls: bool,
    /// For a text, how many of its first bytes the code holds.
    text_bytes: usize,
    /// Whether its codes are its values whole (not a text's first bytes).
    exact: bool,
    desc: bool,
    nulls_first: bool,
    /// Where its bits start in the packed key.
    shift: u32,
}

impl<'c> Field<'c> {
    /// Calls `f` with each row of `rows` and its value's code (`None` for NULL), one
    /// `match` on the column's type for all of them: unsigned, ordered as the values are
    /// (floats by IEEE's total order of their canonical form, as `float_order`; texts
    /// by their first `text_bytes` bytes, as a big-endian number, shorter ones padded
    /// with zeros, so that a code orders two texts unless it ties them).
    fn each_code(
        column: &Column<'_>,
        text_bytes: usize,
        rows: std::ops::Range<usize>,
        mut f: impl FnMut(usize, Option<u128>),
    ) {
        // `float_rank`'s order, moved to start at 0.
        let float = |x: f64| u128::from(float_rank(x) as u64 ^ (1 << 63));
        // One loop per type, `code` inlined into it.
        fn each(
            column: &Column<'_>,
            rows: std::ops::Range<usize>,
            f: &mut impl FnMut(usize, Option<u128>),
            code: impl Fn(usize) -> u128,
        ) {
            if column.never_null() {
                rows.for_each(|r| f(r, Some(code(r))));
            } else {
                rows.for_each(|r| f(r, (!column.flagged_null(r)).then(|| code(r))));
            }
        }
        let c = column;
        match column.values {
            Values::Int(x) => each(c, rows, &mut f, |r| u128::from((x[r] as u64) ^ (1 << 63))),
            Values::Float(x) => each(c, rows, &mut f, |r| float(x[r])),
            Values::Real(x) => each(c, rows, &mut f, |r| float(f64::from(x[r]))),
            Values::Bool(x) => each(c, rows, &mut f, |r| u128::from(x[r])),
            Values::Text(x) => {
                let unused = 8 * (16 - text_bytes as u32);
                each(c, rows, &mut f, |r| {
                    let mut first = [0u8; 16];
                    let bytes = x[r].as_bytes();
                    let n = bytes.len().min(text_bytes);
                    first[..n].copy_from_slice(&bytes[..n]);
                    u128::from_be_bytes(first).checked_shr(unused).unwrap_or(0)
                })
            }
            Values::Entity(x) => {
                for r in rows {
                    let id = x[r].filter(|_| !column.flagged_null(r));
                    f(r, id.map(|e| u128::from(e.to_bits())));
                }
            }
            Values::Null => rows.for_each(|r| f(r, None)),
        }
    }

    /// The field of `key` over `n` rows, a text's code taking as many bytes as its
    /// longest value has and `room` bits (less one for NULL's place) hold; `None` when
    /// that is none. Its passes over the rows call `check` between pieces of
    /// `SORT_CHECK` rows, and stop at its error.
    fn new<E>(
        key: &Key<'c>,
        n: usize,
        room: u32,
        check: &impl Fn() -> Result<(), E>,
    ) -> Result<Option<Field<'c>>, E> {
        let pieces = || {
            (0..n)
                .step_by(SORT_CHECK)
                .map(move |s| s..(s + SORT_CHECK).min(n))
        };
        let text_bytes = match key.column.values {
            Values::Text(x) => {
                let mut longest = 0;
                for piece in pieces() {
                    check()?;
                    longest = x[piece].iter().map(String::len).fold(longest, usize::max);
                }
                longest.min(room.saturating_sub(1) as usize / 8).min(16)
            }
            _ => 0,
        };
        let (mut min, mut max, mut nulls) = (u128::MAX, 0u128, false);
        let mut exact = true;
        let mut code = |r: usize, code: Option<u128>| match code {
            Some(c) => {
                min = min.min(c);
                max = max.max(c);
                // A text that fits its code and holds no NUL is its code whole (its
                // bytes were just read for the code).
                if let Values::Text(x) = key.column.values
                    && exact
                {
                    exact = x[r].len() <= text_bytes && !x[r].as_bytes().contains(&0);
                }
            }
            None => nulls = true,
        };
        for piece in pieces() {
            check()?;
            Field::each_code(&key.column, text_bytes, piece, &mut code);
        }
        if matches!(key.column.values, Values::Text(_)) && text_bytes == 0 && !exact {
            return Ok(None);
        }
        if min > max {
            (min, max) = (0, 0);
        }
        Ok(Some(Field {
            column: key.column,
            min,
            max,
            bits: 128 - (max - min).leading_zeros(),
            nulls,
            text_bytes,
            exact,
            desc: key.desc,
            nulls_first: key.nulls_first,
            shift: 0,
        }))
    }

    fn width(&self) -> u32 {
        self.bits + u32::from(self.nulls)
    }

    /// Its bits of the key of a row whose value has `code`, in place.
    fn place(&self, code: Option<u128>) -> u128 {
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
                v | flag
            }
        };
        field.checked_shl(self.shift).unwrap_or(0)
    }
}

impl<'c> Packed<'c> {
    /// `keys` over `n` rows coded: as many leading keys as fit beside the row's number,
    /// up to and with the first text. `None` without keys. It reads each key's values
    /// whole (a text's twice) and calls `check` between pieces of `SORT_CHECK` rows,
    /// stopping at its error (an interrupt).
    pub(in crate::exec) fn new<E>(
        keys: &[Key<'c>],
        n: usize,
        check: impl Fn() -> Result<(), E>,
    ) -> Result<Option<Packed<'c>>, E> {
        let row_bits = (usize::BITS - n.leading_zeros()).max(1);
        let mut fields: Vec<Field<'c>> = Vec::with_capacity(keys.len());
        let mut used = row_bits;
        let mut exact = true;
        for key in keys {
            let Some(field) = Field::new(key, n, 128 - used, &check)? else {
                exact = false;
                break;
            };
            if used + field.width() > 128 {
                exact = false;
                break;
            }
            used += field.width();
            let whole = field.exact;
            fields.push(field);
            if !whole {
                exact = false;
                break;
            }
        }
        if fields.is_empty() {
            return Ok(None);
        }
        // From the last field up: the row's number in the lowest bits.
        let mut shift = row_bits;
        for field in fields.iter_mut().rev() {
            field.shift = shift;
            shift += field.width();
        }
        Ok(Some(Packed {
            fields,
            row_bits,
            row_mask: (1u128 << row_bits) - 1,
            top_bit: shift,
            exact,
        }))
    }

    /// Two rows' codes in the order of their rows: by the codes where they differ above
    /// the rows' numbers (or the codes are exact), else by the keys themselves (`keys`,
    /// those the codes were made of), then the numbers.
    pub(in crate::exec) fn order(&self, keys: &[Key<'_>], a: u128, b: u128) -> Ordering {
        if self.exact || (a ^ b) >> self.row_bits != 0 {
            return a.cmp(&b);
        }
        let (x, y) = ((a & self.row_mask) as usize, (b & self.row_mask) as usize);
        compare(keys, x, y).then(x.cmp(&y))
    }

    /// Row `r`'s key.
    pub(in crate::exec) fn key(&self, r: usize) -> u128 {
        let mut key = r as u128;
        for f in &self.fields {
            Field::each_code(&f.column, f.text_bytes, r..r + 1, |_, code| key |= f.place(code));
        }
        key
    }

    /// The keys of rows `start..start + codes.len()` into `codes`, a field at a time.
    pub(in crate::exec) fn fill(&self, start: usize, codes: &mut [u128]) {
        for (i, c) in codes.iter_mut().enumerate() {
            *c = (start + i) as u128;
        }
        for f in &self.fields {
            let rows = start..start + codes.len();
            Field::each_code(&f.column, f.text_bytes, rows, |r, code| {
                codes[r - start] |= f.place(code)
            });
        }
    }

    /// The lowest bit of key number `i` (128 past the last key): two keys that agree
    /// above it agree on keys `0..i`.
    pub(in crate::exec) fn start_of(&self, i: usize) -> u32 {
        self.fields.get(i).map_or(128, |f| f.shift)
    }
}
