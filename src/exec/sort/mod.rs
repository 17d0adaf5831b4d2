//! The executor's sorts, for ORDER BY and for window orders: stable (rows equal on every
//! key keep the order they came in), stoppable between pieces of `SORT_CHECK` rows, and
//! over typed columns, never a boxed value per comparison. Each row's keys are coded
//! into one `u128` (`keys::Packed`: numbers, booleans and ids whole, a text by its first
//! eight bytes), so the sort compares integers and looks at the columns only where codes
//! tie; codes that hold every key whole are sorted by their bits (`radix.rs`). A LIMIT
//! keeps only its rows in a bounded heap (`smallest`) instead of sorting them all.
//!
//! `column.rs` is the typed view of a column the keys read; `keys.rs` the keys and their
//! codes; `radix.rs` the radix sort; `top.rs` a select's first rows kept as they come.

mod column;
mod keys;
mod radix;
mod top;

use std::cmp::Ordering;

pub(in crate::exec) use column::{Column, Values};
pub(in crate::exec) use keys::{Key, Packed, compare};
use radix::{RADIX_MIN, radix_sort};
pub(in crate::exec) use top::Top;

use super::Chunk;
use super::error::ExecError;
use super::reader::Reader;
use crate::plan::SortKey;

type Result<T> = std::result::Result<T, ExecError>;

/// The positions of `chunk`'s rows in the order of `order` (ORDER BY's keys, as columns of
/// the chunk), stably; only the first `first` of them when given (a LIMIT with its
/// OFFSET). Charges what it holds to the statement's budget and stops at an interrupt.
pub(in crate::exec) fn order_rows(
    chunk: &Chunk,
    order: &[SortKey],
    first: Option<usize>,
    reader: &Reader<'_>,
) -> Result<Vec<u32>> {
    let n = chunk.len;
    let keys = Key::all_of(order, |c| chunk.columns.get(c));
    let k = first.map_or(n, |f| f.min(n));
    let check = || reader.budget.check(reader.at);
    let Some(packed) = Packed::new(&keys, n, check)? else {
        // No key: the rows as they came.
        return Ok((0..k as u32).collect());
    };
    // A heap of k replaces a sort of n when k is small beside n; past that, a sort of
    // all moves fewer rows.
    if k < n / 4 {
        reader.budget.charge(k.saturating_mul(16), reader.at)?;
        let less = |a: &u128, b: &u128| packed.order(&keys, *a, *b).is_lt();
        let codes = smallest(n, k, |r| packed.key(r), less, check)?;
        return Ok(codes.iter().map(|&c| (c & packed.row_mask) as u32).collect());
    }
    // Codes of 64 bits where they fit: half the memory to write and move.
    if packed.top_bit <= 64 {
        sort_all::<u64>(&packed, &keys, n, k, reader)
    } else {
        sort_all::<u128>(&packed, &keys, n, k, reader)
    }
}

/// The first `k` of `n` rows by a sort of all their codes, held as `C`s.
fn sort_all<C: Code>(
    packed: &Packed<'_>,
    keys: &[Key<'_>],
    n: usize,
    k: usize,
    reader: &Reader<'_>,
) -> Result<Vec<u32>> {
    let check = || reader.budget.check(reader.at);
    // The codes, and the sort's second copy of them.
    reader
        .budget
        .charge(n.saturating_mul(2 * size_of::<C>()), reader.at)?;
    let mut codes: Vec<C> = codes_of(packed, n, check)?;
    sort_codes(&mut codes, packed, keys, check)?;
    codes.truncate(k);
    Ok(codes
        .iter()
        .map(|&c| (c.wide() & packed.row_mask) as u32)
        .collect())
}

/// A row's sort code as held for a sort: a `u128`, or a `u64` when the codes fit one.
pub(in crate::exec) trait Code: Copy + Default + Ord + Send {
    /// The low 64 or 128 bits of a code.
    fn narrow(code: u128) -> Self;
    fn wide(self) -> u128;
}

impl Code for u128 {
    fn narrow(code: u128) -> u128 {
        code
    }
    fn wide(self) -> u128 {
        self
    }
}

impl Code for u64 {
    fn narrow(code: u128) -> u64 {
        code as u64
    }
    fn wide(self) -> u128 {
        u128::from(self)
    }
}

/// Every row's code (`Packed::key`), in row order: made a piece of `SORT_CHECK` rows
/// and a field at a time.
pub(in crate::exec) fn codes_of<C: Code>(
    packed: &Packed<'_>,
    n: usize,
    check: impl Fn() -> Result<()>,
) -> Result<Vec<C>> {
    let mut codes = vec![C::default(); n];
    let mut piece = vec![0u128; SORT_CHECK.min(n)];
    for (i, out) in codes.chunks_mut(SORT_CHECK).enumerate() {
        check()?;
        let piece = &mut piece[..out.len()];
        packed.fill(i * SORT_CHECK, piece);
        out.iter_mut()
            .zip(piece.iter())
            .for_each(|(o, &c)| *o = C::narrow(c));
    }
    Ok(codes)
}

/// Sorts rows' codes made in row order (`codes_of`) into the rows' order, stably: exact
/// codes of many rows by their bits (`radix_sort`), others by `Packed::order` (which
/// looks at `keys` where codes tie).
pub(in crate::exec) fn sort_codes<C: Code>(
    codes: &mut Vec<C>,
    packed: &Packed<'_>,
    keys: &[Key<'_>],
    check: impl Fn() -> Result<()>,
) -> Result<()> {
    if packed.exact && codes.len() >= RADIX_MIN {
        return radix_sort(codes, packed.row_bits, packed.top_bit, check);
    }
    sort_stopping(codes, |a, b| packed.order(keys, a.wide(), b.wide()), check)
}

/// The `k` smallest of the items `item(0..n)` by `less` (a strict total order: no two
/// items equal), smallest first: a max-heap of the `k` smallest so far, whose top each
/// later item must beat to get in, so most items cost one comparison. Looks at `check`
/// once per `SORT_CHECK` items.
fn smallest<T: Copy>(
    n: usize,
    k: usize,
    item: impl Fn(usize) -> T,
    less: impl Fn(&T, &T) -> bool,
    check: impl Fn() -> Result<()>,
) -> Result<Vec<T>> {
    let mut heap: Vec<T> = Vec::with_capacity(k);
    if k == 0 {
        return Ok(heap);
    }
    for r in 0..n {
        if r.is_multiple_of(SORT_CHECK) {
            check()?;
        }
        let x = item(r);
        if heap.len() < k {
            // Up from the bottom while greater than its parent.
            heap.push(x);
            let mut i = heap.len() - 1;
            while i > 0 && less(&heap[(i - 1) / 2], &heap[i]) {
                heap.swap(i, (i - 1) / 2);
                i = (i - 1) / 2;
            }
        } else if less(&x, &heap[0]) {
            // The greatest out; down from the top while less than a child.
            heap[0] = x;
            let mut i = 0;
            loop {
                let (l, r) = (2 * i + 1, 2 * i + 2);
                let mut big = i;
                if l < k && less(&heap[big], &heap[l]) {
                    big = l;
                }
                if r < k && less(&heap[big], &heap[r]) {
                    big = r;
                }
                if big == i {
                    break;
                }
                heap.swap(i, big);
                i = big;
            }
        }
    }
    heap.sort_unstable_by(|a, b| {
        if less(a, b) {
            Ordering::Less
        } else if less(b, a) {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    });
    Ok(heap)
}

/// A sort looks at the interrupt once per this many rows: of keys made, of rows sorted,
/// of rows merged.
pub const SORT_CHECK: usize = 1 << 14;

/// Sorts `order` by `compare`, stably (as `sort_by`, whose result it gives), looking at
/// `check` between pieces of `SORT_CHECK` rows: runs of that many sorted apart, then
/// merged pairwise, a pass at a time. A failing `check` (an interrupt) stops it at once;
/// `order` is then some order of the same rows.
pub fn sort_stopping<T: Copy + Default>(
    order: &mut Vec<T>,
    compare: impl Fn(&T, &T) -> std::cmp::Ordering,
    check: impl Fn() -> Result<()>,
) -> Result<()> {
    let n = order.len();
    for run in order.chunks_mut(SORT_CHECK) {
        check()?;
        run.sort_by(&compare);
    }
    let mut merged = vec![T::default(); n];
    let mut width = SORT_CHECK;
    while width < n {
        for start in (0..n).step_by(2 * width) {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j) = (start, mid);
            for (k, out) in merged[start..end].iter_mut().enumerate() {
                if k % SORT_CHECK == 0 {
                    check()?;
                }
                // The left run's row first among equals: stable.
                let left =
                    j >= end || (i < mid && compare(&order[i], &order[j]) != std::cmp::Ordering::Greater);
                *out = if left { order[i] } else { order[j] };
                if left {
                    i += 1;
                } else {
                    j += 1;
                }
            }
        }
        std::mem::swap(order, &mut merged);
        width *= 2;
    }
    Ok(())
}

#[cfg(test)]
mod sort_tests {
    use super::*;
    use crate::exec::ExecErrorKind;
    use crate::location::Location;

    /// The pieces and merges give what `sort_by` gives (a stable sort has one answer),
    /// with many ties, at every size around the piece's; a check that fails stops it.
    #[test]
    fn a_sort_in_pieces_gives_the_stable_sort_and_stops_when_told() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        for n in [
            0,
            1,
            2,
            SORT_CHECK - 1,
            SORT_CHECK,
            SORT_CHECK + 1,
            3 * SORT_CHECK + 5,
            70_000,
        ] {
            let keys: Vec<u32> = (0..n).map(|_| next() % 50).collect();
            let compare = |a: &u32, b: &u32| keys[*a as usize].cmp(&keys[*b as usize]);
            let mut want: Vec<u32> = (0..n as u32).collect();
            want.sort_by(compare);
            let mut got: Vec<u32> = (0..n as u32).collect();
            sort_stopping(&mut got, compare, || Ok(())).unwrap();
            assert_eq!(got, want, "{n} rows");
        }
        let calls = std::cell::Cell::new(0);
        let mut order: Vec<u32> = (0..100_000).rev().collect();
        let stopped = sort_stopping(
            &mut order,
            |a, b| a.cmp(b),
            || {
                calls.set(calls.get() + 1);
                if calls.get() > 3 {
                    Err(ExecError::new(Location::default(), ExecErrorKind::Interrupted))
                } else {
                    Ok(())
                }
            },
        );
        assert!(matches!(
            stopped,
            Err(ExecError {
                kind: ExecErrorKind::Interrupted,
                ..
            })
        ));
        let mut rows = order.clone();
        rows.sort_unstable();
        assert_eq!(
            rows,
            (0..100_000).collect::<Vec<u32>>(),
            "the rows are all still there"
        );
    }

    /// A sort's codes are made from its keys a piece of `SORT_CHECK` rows at a time, the
    /// check looked at before each piece of each pass (a text key has two: its longest
    /// value, then its codes); a check that fails stops it there.
    #[test]
    fn codes_are_made_in_pieces_and_stop_when_told() {
        use crate::vector::{Data, Vector};
        use std::borrow::Cow;
        let n = 3 * SORT_CHECK + 5;
        let texts: Vec<String> = (0..n).map(|i| format!("t{}", i * 7919 % n)).collect();
        let texts = Vector::from_data(Data::Text(Cow::Owned(texts)), n);
        let ints = Vector::from_data(Data::Int(Cow::Owned((0..n as i64).rev().collect())), n);
        let keys = Key::all_of(
            &[
                SortKey {
                    column: 0,
                    desc: false,
                    nulls_first: false,
                },
                SortKey {
                    column: 1,
                    desc: true,
                    nulls_first: false,
                },
            ],
            |c| [&texts, &ints].get(c).copied(),
        );
        let calls = std::cell::Cell::new(0);
        let stop_after = |last: usize| {
            let calls = &calls;
            move || {
                calls.set(calls.get() + 1);
                match calls.get() > last {
                    true => Err(ExecError::new(Location::default(), ExecErrorKind::Interrupted)),
                    false => Ok(()),
                }
            }
        };
        let packed = Packed::new(&keys, n, stop_after(usize::MAX)).unwrap().unwrap();
        assert!(packed.exact, "short texts and numbers are coded whole");
        // Four pieces: the text's longest value and codes, then the number's codes.
        assert_eq!(calls.get(), 3 * 4);
        calls.set(0);
        let stopped = Packed::new(&keys, n, stop_after(5));
        assert!(matches!(
            stopped,
            Err(ExecError {
                kind: ExecErrorKind::Interrupted,
                ..
            })
        ));
        assert_eq!(calls.get(), 6, "it stopped at the check that failed");
    }
}
