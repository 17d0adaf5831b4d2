//! The rows in one window's order, sorted once (stably: peers keep the order they came
//! in), with each position's partition and peer group: on one `u128` per row when it
//! holds every key whole (`Packed::exact`: numbers, booleans, ids, short texts), sorted
//! by its bits, else by typed comparisons of the partition's and the ORDER BY's columns
//! (`compare`).

use super::{CHECK, Result};
use crate::exec::Chunk;
use crate::exec::reader::Reader;
use crate::exec::sort::{Column, Key, Packed, codes_of, compare, sort_codes, sort_stopping};
use crate::plan::WindowSort;

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
        let order_keys = Key::all_of(&sort.order, |c| chunk.columns.get(c));
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
        let all: Vec<Key<'_>> = partition.iter().chain(&order_keys).copied().collect();
        let check = || reader.budget.check(reader.at);
        let order = match Packed::new(&all, n, check)?.filter(|p| p.exact) {
            Some(packed) => {
                // Each row's whole sort key one number: sorted as numbers, and its
                // partition and peers told apart by their bits.
                reader.budget.charge(n.saturating_mul(32), reader.at)?;
                let mut keys: Vec<u128> = codes_of(&packed, n, check)?;
                sort_codes(&mut keys, &packed, &all, check)?;
                // Keys that differ from this bit up are in different partitions.
                let order_shift = match partition.len() {
                    0 => 128,
                    p => packed.start_of(p - 1),
                };
                let mut order = Vec::with_capacity(n);
                for (p, &key) in keys.iter().enumerate() {
                    if p.is_multiple_of(CHECK) {
                        reader.budget.check(reader.at)?;
                    }
                    order.push((key & packed.row_mask) as u32);
                    let before = keys[p.saturating_sub(1)];
                    boundaries(
                        p,
                        p > 0 && (before ^ key).checked_shr(order_shift).unwrap_or(0) != 0,
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
