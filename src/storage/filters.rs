//! Membership filters: for a column a filter index covers, per block of `FILTER_ROWS` rows,
//! a compact set of the block's values that answers "surely not here" or "maybe" for
//! `= v` and `IN (…)`, so that a scan skips the tables and blocks that cannot hold a
//! value it looks for (`CREATE INDEX … USING filter`).
//!
//! A column's filters are built when a scan first asks and kept in its `ColumnCell`
//! until the column is next lent to write, like its zone maps (`zones.rs`): they always
//! describe the values the column holds when read, and a write costs nothing but their
//! drop.
//!
//! Invariants:
//! - A value is filed by `member_key`, and a probe looked up by the same: a value equal to
//!   another under `=` has the same key (-0.0 and 0.0 alike), so a filter never says "not
//!   here" of a value a block holds. NULL and NaN equal nothing and are never filed.
//! - A block of at most `EXACT` distinct keys keeps them (no false "maybe"); a
//!   larger one a binary fuse filter (`xorf::BinaryFuse8`: about 9 bits a key, a false
//!   "maybe" for about 0.4% of absent keys). A key's 64-bit hash colliding with another's
//!   gives a false "maybe", never a false "not here".

use std::time::{Duration, Instant};

use xorf::{BinaryFuse8, Filter};

use super::column::Column;
use super::hash::{mix64, stable_hash};
use super::marks::BLOCK_ROWS;
use super::value::Value;

/// Blocks of at most this many distinct values keep them exactly.
const EXACT: usize = 8;

/// Rows per filter: 16 of the zone maps' blocks. A binary fuse filter takes more bits a
/// key the fewer its keys (xorf sizes it 1.37 times its keys at 1,024, 1.23 at 16,384,
/// 1.125 from a million): 12.6 bits a row for 1,024 distinct values, 10 for 16,384, so a
/// filter index stays under 12 bits a row whatever the values.
pub const FILTER_ROWS: usize = 16 * BLOCK_ROWS;

/// The filters of one column: one per block of `FILTER_ROWS` rows.
#[derive(Clone, Debug)]
pub struct Filters {
    blocks: Vec<Member>,
    bytes: usize,
    built_in: Duration,
}

#[derive(Clone, Debug)]
enum Member {
    /// The block's distinct keys, sorted, the first `len` of them (kept in place: one
    /// memory read fewer for the many tables of a few values each).
    Exact {
        keys: [u64; EXACT],
        len: u8,
    },
    Fuse(BinaryFuse8),
    /// Nothing is known: the block may hold any value.
    Any,
}

impl Filters {
    /// The filters of `column`'s blocks.
    pub(crate) fn of(column: &Column) -> Filters {
        let start = Instant::now();
        let (mut filed, mut slots, mut keys) = (Vec::new(), Vec::new(), Vec::new());
        let blocks: Vec<Member> = (0..column.len().div_ceil(FILTER_ROWS))
            .map(|b| {
                filed.clear();
                let rows = b * FILTER_ROWS..((b + 1) * FILTER_ROWS).min(column.len());
                file_keys(column, rows, &mut filed);
                distinct(&filed, &mut slots, &mut keys);
                if keys.len() <= EXACT {
                    let mut exact = [0; EXACT];
                    exact[..keys.len()].copy_from_slice(&keys);
                    return Member::Exact {
                        keys: exact,
                        len: keys.len() as u8,
                    };
                }
                match BinaryFuse8::try_from(keys.as_slice()) {
                    Ok(fuse) => Member::Fuse(fuse),
                    // Construction fails on repeated keys (`distinct` leaves none) or after
                    // its tries run out: then this block rules nothing out.
                    Err(_) => Member::Any,
                }
            })
            .collect();
        let bytes = blocks
            .iter()
            .map(|m| match m {
                Member::Fuse(f) => f.len(),
                Member::Exact { .. } | Member::Any => 0,
            } + std::mem::size_of::<Member>())
            .sum();
        Filters {
            blocks,
            bytes,
            built_in: start.elapsed(),
        }
    }

    /// How many blocks of `FILTER_ROWS` rows the column has.
    #[cfg(test)]
    fn blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Whether the zone maps' block `block` (of `BLOCK_ROWS` rows) may hold a value whose
    /// key is `key`: false only when it surely does not. A block past those known may.
    pub fn may_hold(&self, key: u64, block: usize) -> bool {
        match self.blocks.get(block / (FILTER_ROWS / BLOCK_ROWS)) {
            Some(Member::Exact { keys, len }) => keys[..usize::from(*len)].contains(&key),
            Some(Member::Fuse(fuse)) => fuse.contains(&key),
            Some(Member::Any) | None => true,
        }
    }

    /// The memory the filters take, in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// How long building them took.
    pub fn built_in(&self) -> Duration {
        self.built_in
    }
}

/// The distinct keys of `filed` into `out`, in no order, through an open-addressing set
/// of at least twice as many slots (`slots`, kept between blocks): the keys are 64-bit
/// hashes already, so their low bits pick the slot. A few nanoseconds a key, where
/// sorting a block's 1,024 keys to drop the repeats took about ten (the filters of
/// `benches/index.rs`'s `index_filter_after_write`: 7.4 ms for 1M rows sorted).
fn distinct(filed: &[u64], slots: &mut Vec<u64>, out: &mut Vec<u64>) {
    let size = (filed.len() * 2).next_power_of_two().max(16);
    slots.clear();
    slots.resize(size, 0);
    let mask = size - 1;
    out.clear();
    // 0 marks an empty slot, so a key of 0 is kept aside.
    let mut zero = false;
    for &k in filed {
        if k == 0 {
            zero = true;
            continue;
        }
        let mut i = k as usize & mask;
        // At most half the slots are taken: an empty one is always found.
        while let Some(&s) = slots.get(i) {
            if s == k {
                break;
            }
            if s == 0 {
                slots[i] = k;
                out.push(k);
                break;
            }
            i = (i + 1) & mask;
        }
    }
    if zero {
        out.push(0);
    }
}

/// The key a filter files `v` under, or looks it up by; `None` for NULL and NaN, which
/// equal no value.
pub fn member_key(v: &Value) -> Option<u64> {
    Some(match v {
        Value::Null => return None,
        Value::Int(i) => int_key(*i),
        Value::Float(f) => float_key(*f)?,
        Value::Real(f) => float_key(f64::from(*f))?,
        Value::Bool(b) => int_key(i64::from(*b)),
        Value::Text(t) => stable_hash(t.as_bytes()),
        Value::Entity(e) => int_key(e.to_bits() as i64),
    })
}

fn int_key(i: i64) -> u64 {
    mix64(i as u64)
}

/// A float's key: -0.0 as 0.0 (equal under `=`); NaN has none. A REAL is keyed as the
/// FLOAT it is exactly, so one key function serves both.
fn float_key(f: f64) -> Option<u64> {
    if f.is_nan() {
        return None;
    }
    let f = if f == 0.0 { 0.0 } else { f };
    Some(mix64(f.to_bits() ^ 0x9e37_79b9_7f4a_7c15))
}

/// The keys of rows `rows` of `column`, appended to `out` (NULL and NaN left out).
fn file_keys(column: &Column, rows: std::ops::Range<usize>, out: &mut Vec<u64>) {
    match column {
        Column::Int(v) => out.extend(v[rows].iter().map(|&i| int_key(i))),
        Column::Float(v) => out.extend(v[rows].iter().filter_map(|&f| float_key(f))),
        Column::Real(v) => out.extend(v[rows].iter().filter_map(|&f| float_key(f64::from(f)))),
        Column::Bool(v) => out.extend(v[rows].iter().map(|&b| int_key(i64::from(b)))),
        Column::Text(v) => out.extend(v[rows].iter().map(|t| stable_hash(t.as_bytes()))),
        Column::Entity(v) => out.extend(
            v[rows]
                .iter()
                .filter_map(|e| e.map(|e| int_key(e.to_bits() as i64))),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Entity;

    #[test]
    fn a_filter_never_says_not_here_of_a_value_its_block_holds() {
        for n in [0usize, 1, 7, 8, 9, 100, 1024, 1025, 5000, FILTER_ROWS + 1] {
            let values: Vec<i64> = (0..n as i64).map(|i| i * 7919 % 100_003).collect();
            let f = Filters::of(&Column::Int(values.clone()));
            assert_eq!(f.blocks(), n.div_ceil(FILTER_ROWS));
            for (row, v) in values.iter().enumerate() {
                let key = member_key(&Value::Int(*v)).unwrap();
                assert!(f.may_hold(key, row / BLOCK_ROWS), "{n} rows: {v} at {row}");
            }
            // Absent values: mostly "not here" (exact sets never say otherwise); a block
            // past the column's may hold anything.
            if n == 0 {
                assert!(f.may_hold(member_key(&Value::Int(-1)).unwrap(), 0));
                continue;
            }
            let absent = (0..10_000)
                .filter(|i| f.may_hold(member_key(&Value::Int(-1 - i)).unwrap(), 0))
                .count();
            assert!(
                absent <= 100,
                "{n} rows: {absent} of 10,000 absent values may be here"
            );
        }
    }

    #[test]
    fn equal_values_share_a_key_and_null_and_nan_have_none() {
        assert_eq!(member_key(&Value::Float(-0.0)), member_key(&Value::Float(0.0)));
        assert_eq!(member_key(&Value::Real(-0.0)), member_key(&Value::Float(0.0)));
        assert_eq!(member_key(&Value::Real(0.5)), member_key(&Value::Float(0.5)));
        assert_eq!(member_key(&Value::Float(f64::NAN)), None);
        assert_eq!(member_key(&Value::Null), None);
        let f = Filters::of(&Column::Float(vec![-0.0, f64::NAN, 2.5]));
        assert!(f.may_hold(member_key(&Value::Float(0.0)).unwrap(), 0));
        let ids = Filters::of(&Column::Entity(vec![None, Entity::from_bits(5)]));
        assert!(ids.may_hold(
            member_key(&Value::Entity(Entity::from_bits(5).unwrap())).unwrap(),
            0
        ));
        assert!(!ids.may_hold(
            member_key(&Value::Entity(Entity::from_bits(6).unwrap())).unwrap(),
            0
        ));
        let texts = Filters::of(&Column::Text(vec!["a".into(), "b".into()]));
        assert!(texts.may_hold(member_key(&Value::Text("b".into())).unwrap(), 0));
        assert!(!texts.may_hold(member_key(&Value::Text("B".into())).unwrap(), 0));
    }
}
