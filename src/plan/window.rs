//! Window functions, as planned: what a select computes over the rows it made (after
//! WHERE, GROUP BY and HAVING, before DISTINCT and ORDER BY).
//!
//! Invariants the binder keeps (`bind/window.rs`) and the executor relies on
//! (`exec/window/`):
//! - The select's `Output` makes a column per slot of the batch its select list was bound
//!   over (the scanned row, or a group's keys and aggregates; a column nothing reads is
//!   NULL), then one per window input.
//! - Every window input (an argument, a PARTITION BY or ORDER BY value) is one of those
//!   columns, computed once however many windows read it.
//! - `outputs` read that batch followed by one column per call, in `calls`' order.
//! - Frame offsets are constants or parameters; a RANGE offset has its ORDER BY key's
//!   type, which is a number (FLOAT for a REAL key). A call that reads no frame keeps
//!   the one written only so that its offsets are checked when it runs.

use super::{AggFunc, BoundExpr, DataType, SortKey};

#[derive(Debug)]
pub struct WindowPlan {
    /// The orders rows are sorted in, each once, however many calls share it.
    pub sorts: Vec<WindowSort>,
    pub calls: Vec<WindowCall>,
    /// The select list (then the hidden ORDER BY values), over the columns the select's
    /// `Output` makes and one per call after them.
    pub outputs: Vec<BoundExpr>,
}

/// Rows sorted by their partition's values (equal ones together), then by the window's
/// ORDER BY within each partition.
#[derive(Debug, Clone)]
pub struct WindowSort {
    /// Columns (of the `width`) whose values make a partition.
    pub partition: Vec<usize>,
    /// The window's ORDER BY: columns of the `width`, with their direction.
    pub order: Vec<SortKey>,
    /// For EXPLAIN: the window as written, `(PARTITION BY … ORDER BY …)`.
    pub text: String,
}

#[derive(Debug)]
pub struct WindowCall {
    pub func: WindowFunc,
    /// Its arguments: columns of the `width`.
    pub args: Vec<usize>,
    /// Which of `WindowPlan::sorts` it is computed over.
    pub sort: usize,
    pub frame: FramePlan,
    pub ty: DataType,
    /// Where it is written, which its errors point at.
    pub at: crate::location::Location,
    /// For EXPLAIN: the call as written.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum WindowFunc {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    /// `ntile(n)`: the bucket, 1 to n, of rows dealt out in order.
    Ntile,
    /// `lag(x [, offset [, default]])` (`lead`: `forward`).
    Shift {
        forward: bool,
    },
    FirstValue,
    LastValue,
    NthValue,
    /// An aggregate over the frame; `separator` is string_agg's.
    Aggregate {
        func: AggFunc,
        separator: String,
    },
}

impl WindowFunc {
    /// Whether its value depends on the frame (the others read the partition and the
    /// row's place in it).
    pub fn framed(&self) -> bool {
        matches!(
            self,
            WindowFunc::FirstValue
                | WindowFunc::LastValue
                | WindowFunc::NthValue
                | WindowFunc::Aggregate { .. }
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameUnits {
    Rows,
    Range,
    Groups,
}

#[derive(Debug)]
pub enum FrameEdge {
    UnboundedPreceding,
    /// An offset: a constant or parameter, a number of rows or groups (INT), or for RANGE
    /// a distance of the ORDER BY key's type.
    Preceding(BoundExpr),
    CurrentRow,
    Following(BoundExpr),
    UnboundedFollowing,
}

/// The rows of its partition a call reads for each row: `start` to `end`, both
/// inclusive, counted in `units`.
#[derive(Debug)]
pub struct FramePlan {
    pub units: FrameUnits,
    pub start: FrameEdge,
    pub end: FrameEdge,
}

impl FramePlan {
    /// The frame without a frame clause: the partition to the row's last peer with an
    /// ORDER BY, else all of it (every row a peer of every other).
    pub fn default_frame() -> FramePlan {
        FramePlan {
            units: FrameUnits::Range,
            start: FrameEdge::UnboundedPreceding,
            end: FrameEdge::CurrentRow,
        }
    }
}

impl FramePlan {
    /// Its offsets (constants or parameters).
    pub fn offsets(&self) -> impl Iterator<Item = &BoundExpr> {
        [&self.start, &self.end]
            .into_iter()
            .filter_map(|edge| match edge {
                FrameEdge::Preceding(e) | FrameEdge::Following(e) => Some(e),
                _ => None,
            })
    }

    pub fn offsets_mut(&mut self) -> impl Iterator<Item = &mut BoundExpr> {
        [&mut self.start, &mut self.end]
            .into_iter()
            .filter_map(|edge| match edge {
                FrameEdge::Preceding(e) | FrameEdge::Following(e) => Some(e),
                _ => None,
            })
    }
}
