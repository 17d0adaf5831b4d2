//! The rows in one window's order, sorted once (stably: peers keep the order they came
//! in), with each position's partition and peer group: on one `u128` per row when every
//! key is a number, a boolean or an id (`Packed`), else by typed comparisons of the
//! partition's and the ORDER BY's columns (`compare`).

use std::cmp::Ordering;

use super::column::{Column, Values};
use super::{CHECK, Result};
use crate::exec::Chunk;
use crate::exec::reader::Reader;
use crate::exec::sort::sort_stopping;
use crate::plan::WindowSort;
use crate::storage::canonical_float;

/// One column of a sort.
struct Key<'c> {
    column: Column<'c>,
    desc: bool,
    nulls_first: bool,
}

fn compare(keys: &[Key<'_>], a: usize, b: usize) -> Ordering {
    for k in keys {
        let ord = match (k.column.is_null(a), k.column.is_null(b)) {
            (true, true) => Ordering::Equal,
            (true, false) if k.nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if k.nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                let o = k.column.order(a, b);
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
/// them; reversed for DESC; a bit above them for NULL's place), the partition's keys
/// first, then the ORDER BY's, then the row's number (which makes every key unique and
/// the sort stable). Texts have no such code.
struct Packed<'c> {
    fields: Vec<Field<'c>>,
    /// How many low bits hold the row number, and those bits.
    row_bits: u32,
    row_mask: u128,
    /// Where the partition's keys start: 128 when there are none (so `checked_shr`).
    order_shift: u32,
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
    fn new(partition: &[Key<'c>], order: &[Key<'c>], n: usize) -> Option<Packed<'c>> {
        let row_bits = (usize::BITS - n.leading_zeros()).max(1);
        let mut fields = Vec::new();
        for key in partition.iter().chain(order) {
            fields.push(Field::new(key, n)?);
        }
        let total: u32 = fields.iter().map(Field::width).sum::<u32>() + row_bits;
        if total > 128 {
            return None;
        }
        // From the last field up: the row's number in the lowest bits.
        let mut shift = row_bits;
        let mut order_shift = row_bits;
        for (i, field) in fields.iter_mut().enumerate().rev() {
            field.shift = shift;
            shift += field.width();
            if i >= partition.len() {
                order_shift = shift;
            }
        }
        Some(Packed {
            fields,
            row_bits,
            row_mask: (1u128 << row_bits) - 1,
            order_shift,
        })
    }

    fn key(&self, r: usize) -> u128 {
        self.fields.iter().fold(r as u128, |key, f| key | f.bits_of(r))
    }
}

/// The rows in one window's order, with their partitions and peer groups.
pub(super) struct Sorted {
    /// The row at each position.
    pub(super) order: Vec<u32>,
    /// Where each partition starts, then the number of rows.
    parts: Vec<u32>,
    /// Per position, its partition (of `parts`).
    part_of: Vec<u32>,
    /// Where each peer group starts, then the number of rows.
    pub(super) groups: Vec<u32>,
    /// Per position, its peer group (of `groups`).
    pub(super) group_of: Vec<u32>,
}

impl Sorted {
    pub(super) fn new(chunk: &Chunk, sort: &WindowSort, reader: &Reader<'_>) -> Result<Sorted> {
        let n = chunk.len;
        reader.budget.charge(n.saturating_mul(16), reader.at)?;
        let partition: Vec<Key<'_>> = sort
            .partition
            .iter()
            .map(|&c| Key {
                column: Column::of(&chunk.columns[c]),
                desc: false,
                nulls_first: false,
            })
            .collect();
        let order_keys: Vec<Key<'_>> = sort
            .order
            .iter()
            .map(|k| Key {
                column: Column::of(&chunk.columns[k.column]),
                desc: k.desc,
                nulls_first: k.nulls_first,
            })
            .collect();
        let (mut parts, mut groups) = (vec![0u32], vec![0u32]);
        let (mut part_of, mut group_of) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut boundaries = |p: usize, new_part: bool, new_group: bool| {
            if new_part {
                parts.push(p as u32);
            }
            if new_part || new_group {
                groups.push(p as u32);
            }
            part_of.push((parts.len() - 1) as u32);
            group_of.push((groups.len() - 1) as u32);
        };
        let order = match Packed::new(&partition, &order_keys, n) {
            Some(packed) => {
                // Each row's whole sort key one number: sorted as numbers, and its
                // partition and peers told apart by their bits.
                reader.budget.charge(n.saturating_mul(32), reader.at)?;
                let mut keys: Vec<u128> = Vec::with_capacity(n);
                for r in 0..n {
                    if r.is_multiple_of(CHECK) {
                        reader.budget.check(reader.at)?;
                    }
                    keys.push(packed.key(r));
                }
                sort_stopping(&mut keys, u128::cmp, || reader.budget.check(reader.at))?;
                let mut order = Vec::with_capacity(n);
                for (p, &key) in keys.iter().enumerate() {
                    if p.is_multiple_of(CHECK) {
                        reader.budget.check(reader.at)?;
                    }
                    order.push((key & packed.row_mask) as u32);
                    let before = keys[p.saturating_sub(1)];
                    boundaries(
                        p,
                        p > 0 && (before ^ key).checked_shr(packed.order_shift).unwrap_or(0) != 0,
                        p > 0 && (before ^ key) >> packed.row_bits != 0,
                    );
                }
                order
            }
            None => {
                let mut order: Vec<u32> = (0..n as u32).collect();
                if !partition.is_empty() || !order_keys.is_empty() {
                    let compare_rows = |&a: &u32, &b: &u32| {
                        compare(&partition, a as usize, b as usize)
                            .then_with(|| compare(&order_keys, a as usize, b as usize))
                    };
                    sort_stopping(&mut order, compare_rows, || reader.budget.check(reader.at))?;
                }
                for p in 0..n {
                    if p.is_multiple_of(CHECK) {
                        reader.budget.check(reader.at)?;
                    }
                    let (a, b) = (order[p.saturating_sub(1)] as usize, order[p] as usize);
                    let new_part = p > 0 && !partition.iter().all(|k| k.column.same(a, b));
                    let new_group = p > 0 && !order_keys.iter().all(|k| k.column.same(a, b));
                    boundaries(p, new_part, new_group);
                }
                order
            }
        };
        if n == 0 {
            parts.clear();
            groups.clear();
        }
        parts.push(n as u32);
        groups.push(n as u32);
        Ok(Sorted {
            order,
            parts,
            part_of,
            groups,
            group_of,
        })
    }

    pub(super) fn len(&self) -> usize {
        self.order.len()
    }

    /// The partition of position `p`: its first position and the one past its last.
    pub(super) fn partition(&self, p: usize) -> (usize, usize) {
        let i = self.part_of[p] as usize;
        (self.parts[i] as usize, self.parts[i + 1] as usize)
    }

    /// The peer group of position `p`, as `partition`.
    pub(super) fn peers(&self, p: usize) -> (usize, usize) {
        let i = self.group_of[p] as usize;
        (self.groups[i] as usize, self.groups[i + 1] as usize)
    }
}
