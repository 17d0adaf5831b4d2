//! A least-significant-digit radix sort of exact sort codes (`keys::Packed`): each pass
//! orders the codes by 11 more of their bits, stably, so that codes made in row order
//! and sorted by their bits above the row's number come out in the order of those bits
//! and then of the rows: the stable sort, in a few linear passes instead of n log n
//! comparisons. Passes whose digit is the same in every code are skipped.

use super::{Code, Result, SORT_CHECK};

/// Bits per pass: 2,048 counters, which stay in the first-level cache.
const DIGIT: u32 = 11;

/// Below this many codes a comparison sort is as fast.
pub(super) const RADIX_MIN: usize = 1 << 12;

/// Sorts `codes`, which are in the order of their low `low` bits (the rows' numbers) and
/// zero from `high` up, by their bits `low..high`, stably; looks at `check` once per
/// `SORT_CHECK` codes moved. A failing `check` stops it; `codes` then holds the same
/// codes in some order.
pub(super) fn radix_sort<C: Code>(
    codes: &mut Vec<C>,
    low: u32,
    high: u32,
    check: impl Fn() -> Result<()>,
) -> Result<()> {
    let n = codes.len();
    let mut spare = vec![C::default(); n];
    let mut shift = low;
    while shift < high {
        let mut counts = vec![0usize; 1 << DIGIT];
        let mask = (1u128 << DIGIT) - 1;
        for (i, &c) in codes.iter().enumerate() {
            if i.is_multiple_of(SORT_CHECK) {
                check()?;
            }
            counts[((c.wide() >> shift) & mask) as usize] += 1;
        }
        // Every code has this digit alike: the pass would move nothing.
        if counts.contains(&n) {
            shift += DIGIT;
            continue;
        }
        let mut at = 0;
        for count in &mut counts {
            let here = *count;
            *count = at;
            at += here;
        }
        for (i, &c) in codes.iter().enumerate() {
            if i.is_multiple_of(SORT_CHECK) {
                check()?;
            }
            let digit = ((c.wide() >> shift) & mask) as usize;
            spare[counts[digit]] = c;
            counts[digit] += 1;
        }
        std::mem::swap(codes, &mut spare);
        shift += DIGIT;
    }
    Ok(())
}
