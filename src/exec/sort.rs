//! The one sort the executor has: stable, and stoppable between pieces, for ORDER BY and
//! for window orders.

use super::error::ExecError;

type Result<T> = std::result::Result<T, ExecError>;

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
}
