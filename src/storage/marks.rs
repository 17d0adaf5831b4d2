//! Change marks: for each component some reader asks about (`changed()`, `added()`), every
//! table holding it keeps, beside its columns, the world tick at which each row got the
//! component and the tick at which each of its fields last got a different value. A reader
//! that last ran at tick `k` sees a row as changed (added) when its mark is after `k`.
//!
//! Marks are row data, like the values: they live in the table and every row operation
//! (push, swap-remove, a move to another table, truncate, swap) applies to them as to the
//! columns, so they follow their rows at no cost beyond copying one `u64` each.
//!
//! Invariants:
//! - A mark list has one mark per row of its table, in row order.
//! - `blocks[b]` is at least every mark of rows `b * BLOCK_ROWS ..` of its block, and
//!   `latest` at least every mark: upper bounds, so a scan may skip a block (a table) whose
//!   bound is not after its reader's tick, and never skips a row marked after it. Moves
//!   and undo only ever raise them.
//! - A component nobody asked about has no marks, and its writes compare nothing.
//! - Tracking, once on, stays on: a rollback (even to an image of the whole world, after a
//!   component type was dropped) keeps what is tracked; ROLLBACK puts marks back as they
//!   were before the transaction (`undo.rs`).

/// Rows per block of marks: a `changed()` scan skips a block whose latest mark is not
/// after its reader's tick.
pub const BLOCK_ROWS: usize = 1024;

/// The marks of one field (when its values last changed) or one component (when it was
/// added) in one table.
#[derive(Clone, Debug, Default)]
pub struct MarkList {
    ticks: Vec<u64>,
    blocks: Vec<u64>,
    latest: u64,
}

impl MarkList {
    /// `len` rows, all marked `tick`.
    pub fn new(len: usize, tick: u64) -> MarkList {
        MarkList {
            ticks: vec![tick; len],
            blocks: vec![tick; len.div_ceil(BLOCK_ROWS)],
            latest: tick,
        }
    }

    /// One mark per row.
    pub fn ticks(&self) -> &[u64] {
        &self.ticks
    }

    /// At least every mark.
    pub fn latest(&self) -> u64 {
        self.latest
    }

    /// At least every mark of each block of `BLOCK_ROWS` rows, in row order.
    pub fn blocks(&self) -> &[u64] {
        &self.blocks
    }

    /// The mark of `row`.
    pub fn get(&self, row: usize) -> Option<u64> {
        self.ticks.get(row).copied()
    }

    fn raise(&mut self, row: usize, tick: u64) {
        if let Some(b) = self.blocks.get_mut(row / BLOCK_ROWS) {
            *b = (*b).max(tick);
        }
        self.latest = self.latest.max(tick);
    }

    /// Marks as a snapshot kept them, one per row; the bounds computed from them.
    pub fn from_ticks(ticks: Vec<u64>) -> MarkList {
        let mut list = MarkList {
            ticks,
            blocks: Vec::new(),
            latest: 0,
        };
        list.reblock_from(0);
        list
    }

    /// A new last row, marked `tick`.
    pub fn push(&mut self, tick: u64) {
        if self.ticks.len().is_multiple_of(BLOCK_ROWS) {
            self.blocks.push(tick);
        }
        self.ticks.push(tick);
        self.raise(self.ticks.len() - 1, tick);
    }

    /// `n` new last rows, marked `tick`.
    pub fn push_n(&mut self, n: usize, tick: u64) {
        let len = self.ticks.len();
        self.ticks.resize(len + n, tick);
        self.reblock_from(len);
    }

    /// Marks `row` with `tick` (a later tick, or an earlier one put back by undo).
    pub fn set(&mut self, row: usize, tick: u64) {
        if let Some(t) = self.ticks.get_mut(row) {
            *t = tick;
            self.raise(row, tick);
        }
    }

    /// Removes `row`, the last row's mark taking its place; returns the removed mark.
    pub fn swap_remove(&mut self, row: usize) -> Option<u64> {
        if row >= self.ticks.len() {
            return None;
        }
        let removed = self.ticks.swap_remove(row);
        if let Some(&moved) = self.ticks.get(row) {
            self.raise(row, moved);
        }
        self.blocks.truncate(self.ticks.len().div_ceil(BLOCK_ROWS));
        Some(removed)
    }

    /// Removes the rows `holes` one after another as `swap_remove` does; with `keep`,
    /// returns the removed marks in that order.
    pub fn swap_remove_each(&mut self, holes: &[u32], keep: bool) -> Option<Vec<u64>> {
        let mut out = keep.then(|| Vec::with_capacity(holes.len()));
        for &hole in holes {
            if let Some(mark) = self.swap_remove(hole as usize)
                && let Some(out) = &mut out
            {
                out.push(mark);
            }
        }
        out
    }

    /// Puts back the marks `swap_remove_each(holes, true)` removed, newest first.
    pub fn restore_each(&mut self, holes: &[u32], mut removed: Vec<u64>) {
        for &hole in holes.iter().rev() {
            let Some(mark) = removed.pop() else {
                return;
            };
            self.push(mark);
            self.swap(hole as usize, self.ticks.len() - 1);
        }
    }

    /// Keeps the first `len` marks.
    pub fn truncate(&mut self, len: usize) {
        self.ticks.truncate(len);
        self.blocks.truncate(len.div_ceil(BLOCK_ROWS));
    }

    /// Exchanges the marks of rows `a` and `b`.
    pub fn swap(&mut self, a: usize, b: usize) {
        if a < self.ticks.len() && b < self.ticks.len() {
            self.ticks.swap(a, b);
            let (ta, tb) = (self.ticks[a], self.ticks[b]);
            self.raise(a, ta);
            self.raise(b, tb);
        }
    }

    /// Moves every mark of `other` onto the end.
    pub fn append(&mut self, other: &mut MarkList) {
        let len = self.ticks.len();
        self.ticks.append(&mut other.ticks);
        other.clear();
        self.reblock_from(len);
    }

    /// Removes every mark.
    pub fn clear(&mut self) {
        self.ticks.clear();
        self.blocks.clear();
    }

    /// Copies of the marks of rows `from ..` (as many as `count`).
    pub fn copy_range(&self, from: usize, count: usize) -> Vec<u64> {
        self.ticks
            .get(from..from + count)
            .map_or_else(Vec::new, <[u64]>::to_vec)
    }

    /// Copies of the marks of `rows`.
    pub fn copy_rows(&self, rows: &[u32]) -> Vec<u64> {
        rows.iter().filter_map(|&r| self.get(r as usize)).collect()
    }

    /// Marks rows `range` with `tick`.
    pub fn set_range(&mut self, range: std::ops::Range<usize>, tick: u64) {
        let end = range.end.min(self.ticks.len());
        if range.start >= end {
            return;
        }
        self.ticks[range.start..end].fill(tick);
        for b in range.start / BLOCK_ROWS..end.div_ceil(BLOCK_ROWS) {
            if let Some(block) = self.blocks.get_mut(b) {
                *block = (*block).max(tick);
            }
        }
        self.latest = self.latest.max(tick);
    }

    /// Marks with `tick` the rows `first + k` for which `differs[k]`, block by block.
    pub fn mark_where(&mut self, first: usize, differs: &[bool], tick: u64) {
        let end = self.ticks.len().min(first.saturating_add(differs.len()));
        let mut row = first;
        while row < end {
            let stop = ((row / BLOCK_ROWS + 1) * BLOCK_ROWS).min(end);
            let mut any = false;
            for (t, &d) in self.ticks[row..stop].iter_mut().zip(&differs[row - first..]) {
                *t = if d { tick } else { *t };
                any |= d;
            }
            if any {
                self.raise(row, tick);
            }
            row = stop;
        }
    }

    /// Recomputes the bounds of the blocks from the one holding `row` on (after rows were
    /// appended there).
    fn reblock_from(&mut self, row: usize) {
        let first = row / BLOCK_ROWS;
        self.blocks
            .truncate(first + usize::from(!row.is_multiple_of(BLOCK_ROWS)));
        let mut start = self.blocks.len() * BLOCK_ROWS;
        if let Some(b) = self.blocks.get_mut(first) {
            let end = (first * BLOCK_ROWS + BLOCK_ROWS).min(self.ticks.len());
            *b = self.ticks[row..end].iter().copied().fold(*b, u64::max);
            self.latest = self.latest.max(*b);
        }
        while start < self.ticks.len() {
            let end = (start + BLOCK_ROWS).min(self.ticks.len());
            let block = self.ticks[start..end].iter().copied().max().unwrap_or(0);
            self.blocks.push(block);
            self.latest = self.latest.max(block);
            start = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bounds hold after any sequence of operations: each block's is at least each
    /// of its marks, `latest` at least every mark, one block per `BLOCK_ROWS` rows.
    fn check(m: &MarkList) {
        assert_eq!(m.blocks.len(), m.ticks.len().div_ceil(BLOCK_ROWS));
        for (row, &t) in m.ticks.iter().enumerate() {
            assert!(m.blocks[row / BLOCK_ROWS] >= t, "block bound below row {row}");
            assert!(m.latest >= t);
        }
    }

    #[test]
    fn bounds_hold_through_every_operation() {
        let mut m = MarkList::new(1500, 3);
        check(&m);
        m.push(9);
        m.push_n(2000, 4);
        check(&m);
        m.set(10, 20);
        m.swap_remove(5);
        check(&m);
        assert_eq!(
            m.get(5),
            Some(4),
            "the last row's mark took the removed row's place"
        );
        m.swap(0, 3000);
        m.truncate(1025);
        check(&m);
        let mut other = MarkList::new(700, 30);
        m.append(&mut other);
        assert!(other.ticks().is_empty());
        check(&m);
        m.set_range(1000..1100, 40);
        check(&m);
        assert_eq!(m.latest(), 40);
        assert_eq!(m.copy_range(1099, 2), vec![40, 30]);
        m.truncate(0);
        check(&m);
        m.push(1);
        check(&m);
    }
}
