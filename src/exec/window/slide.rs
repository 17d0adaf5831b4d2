//! Aggregates over frames that only slide forward: each row is added once, at the frame's
//! end, and taken away once, at its start. Counts, INT sums (exact, in 128 bits) and
//! booleans as running totals, min and max in a monotonic queue, string_agg extended as
//! rows come (and joined again when its frame lost one); float sums, averages and
//! variances read a segment tree instead (`segment_tree.rs`).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::VecDeque;

use super::column::Nullable;
use super::positions::picked;
use super::segment_tree::float_frames;
use super::sorted::Sorted;
use super::{CHECK, NONE, Result};
use crate::exec::Chunk;
use crate::exec::aggregate::join_text;
use crate::exec::error::ExecError;
use crate::exec::reader::Reader;
use crate::exec::sort::{Column, Values};
use crate::location::Location;
use crate::plan::{AggFunc, WindowCall};
use crate::vector::{Data, Vector};

/// An aggregate over frames that only slide forward: each row is added once, at the
/// frame's end, and taken away once, at its start.
trait Slide {
    /// Forgets every row (the frame moved past all of them: a new partition).
    fn reset(&mut self);
    fn add(&mut self, row: usize);
    fn remove(&mut self, row: usize);
    /// Pushes the value for the frame as it is now; says how many bytes that value keeps
    /// beyond its column's fixed width (a text's), and how many rows it went over to
    /// make it beyond the one (string_agg's joining again).
    fn emit(&mut self) -> Result<(usize, usize)>;
    fn finish(self: Box<Self>) -> Vector<'static>;
}

/// Runs `acc` over each position's frame, `starts[p]` to `ends[p]`.
fn slide(
    acc: &mut dyn Slide,
    sorted: &Sorted,
    starts: &[u32],
    ends: &[u32],
    reader: &Reader<'_>,
) -> Result<()> {
    let (mut lo, mut hi) = (0usize, 0usize);
    let (mut kept, mut work) = (0usize, 0usize);
    for p in 0..sorted.len() {
        if p.is_multiple_of(CHECK) || kept > 1 << 20 || work > CHECK {
            reader.budget.charge(kept, reader.at)?;
            (kept, work) = (0, 0);
        }
        let (fs, fe) = (starts[p] as usize, ends[p] as usize);
        if fs >= hi {
            acc.reset();
            (lo, hi) = (fs, fs);
        }
        while lo < fs {
            acc.remove(sorted.order[lo] as usize);
            lo += 1;
        }
        while hi < fe {
            acc.add(sorted.order[hi] as usize);
            hi += 1;
        }
        let (bytes, rows) = acc.emit()?;
        kept += bytes;
        work += rows;
    }
    reader.budget.charge(kept, reader.at)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn aggregate(
    call: &WindowCall,
    func: AggFunc,
    separator: &str,
    chunk: &Chunk,
    sorted: &Sorted,
    starts: &[u32],
    ends: &[u32],
    reader: &Reader<'_>,
) -> Result<Vector<'static>> {
    let n = sorted.len();
    let arg = call.args.first().map(|&a| &chunk.columns[a]);
    let column = arg.map(Column::of);
    let Some(c) = column else {
        // count(*): the frame's length.
        let out: Vec<i64> = starts.iter().zip(ends).map(|(&s, &e)| i64::from(e - s)).collect();
        return Ok(Vector::from_data(Data::Int(Cow::Owned(out)), n));
    };
    let mut acc: Box<dyn Slide + '_> = match func {
        AggFunc::CountStar | AggFunc::Count => Box::new(Count {
            column: c,
            count: 0,
            out: Vec::with_capacity(n),
        }),
        AggFunc::Sum if call.ty == crate::plan::DataType::Int => Box::new(SumInt {
            column: c,
            sum: 0,
            count: 0,
            out: Nullable::new(n),
            at: call.at,
        }),
        AggFunc::Sum | AggFunc::Avg | AggFunc::Spread { .. } => {
            return float_frames(func, c, sorted, starts, ends, reader);
        }
        AggFunc::Min | AggFunc::Max => Box::new(Extreme {
            column: c,
            max: func == AggFunc::Max,
            best: VecDeque::new(),
            picks: Vec::with_capacity(n),
            source: arg,
        }),
        AggFunc::BoolAnd | AggFunc::BoolOr => Box::new(Logic {
            column: c,
            trues: 0,
            falses: 0,
            and: func == AggFunc::BoolAnd,
            out: Nullable::new(n),
        }),
        AggFunc::StringAgg => Box::new(Texts {
            column: c,
            separator,
            rows: VecDeque::new(),
            joined: None,
            stale: false,
            out: Vec::with_capacity(n),
            at: call.at,
        }),
    };
    slide(acc.as_mut(), sorted, starts, ends, reader)?;
    Ok(acc.finish())
}

struct Count<'c> {
    column: Column<'c>,
    count: i64,
    out: Vec<i64>,
}

impl Slide for Count<'_> {
    fn reset(&mut self) {
        self.count = 0;
    }
    fn add(&mut self, row: usize) {
        self.count += i64::from(!self.column.is_null(row));
    }
    fn remove(&mut self, row: usize) {
        self.count -= i64::from(!self.column.is_null(row));
    }
    fn emit(&mut self) -> Result<(usize, usize)> {
        self.out.push(self.count);
        Ok((0, 0))
    }
    fn finish(self: Box<Self>) -> Vector<'static> {
        let n = self.out.len();
        Vector::from_data(Data::Int(Cow::Owned(self.out)), n)
    }
}

/// An INT sum: exact in 128 bits, refused at a frame whose sum is out of INT's range.
struct SumInt<'c> {
    column: Column<'c>,
    sum: i128,
    count: i64,
    out: Nullable<i64>,
    at: Location,
}

impl Slide for SumInt<'_> {
    fn reset(&mut self) {
        (self.sum, self.count) = (0, 0);
    }
    fn add(&mut self, row: usize) {
        if let Some(x) = self.column.int(row) {
            self.sum += i128::from(x);
            self.count += 1;
        }
    }
    fn remove(&mut self, row: usize) {
        if let Some(x) = self.column.int(row) {
            self.sum -= i128::from(x);
            self.count -= 1;
        }
    }
    fn emit(&mut self) -> Result<(usize, usize)> {
        let sum = match self.count {
            0 => None,
            _ => Some(
                i64::try_from(self.sum)
                    .map_err(|_| ExecError::arithmetic(self.at, "sum out of range for INT"))?,
            ),
        };
        self.out.push(sum);
        Ok((0, 0))
    }
    fn finish(self: Box<Self>) -> Vector<'static> {
        self.out.finish(|v| Data::Int(Cow::Owned(v)))
    }
}

/// min or max: the frame's rows that could still be its extreme, best first (each later
/// one worse than the one before it), so the best is at the front as rows leave.
struct Extreme<'c> {
    column: Column<'c>,
    max: bool,
    best: VecDeque<u32>,
    picks: Vec<u32>,
    source: Option<&'c Vector<'static>>,
}

impl Slide for Extreme<'_> {
    fn reset(&mut self) {
        self.best.clear();
    }
    fn add(&mut self, row: usize) {
        if self.column.is_null(row) {
            return;
        }
        while let Some(&last) = self.best.back() {
            let o = self.column.order(last as usize, row);
            let beaten = if self.max {
                o != Ordering::Greater
            } else {
                o != Ordering::Less
            };
            if !beaten {
                break;
            }
            self.best.pop_back();
        }
        self.best.push_back(row as u32);
    }
    fn remove(&mut self, row: usize) {
        if self.best.front() == Some(&(row as u32)) {
            self.best.pop_front();
        }
    }
    fn emit(&mut self) -> Result<(usize, usize)> {
        self.picks.push(self.best.front().copied().unwrap_or(NONE));
        Ok((0, 0))
    }
    fn finish(self: Box<Self>) -> Vector<'static> {
        match self.source {
            Some(source) => picked(&[source], &self.picks),
            None => Vector::nulls(self.picks.len()),
        }
    }
}

/// bool_and or bool_or: how many of the frame's values are true and false.
struct Logic<'c> {
    column: Column<'c>,
    trues: i64,
    falses: i64,
    and: bool,
    out: Nullable<bool>,
}

impl Logic<'_> {
    fn count(&mut self, row: usize, sign: i64) {
        if let Values::Bool(x) = self.column.values
            && !self.column.is_null(row)
        {
            if x[row] {
                self.trues += sign;
            } else {
                self.falses += sign;
            }
        }
    }
}

impl Slide for Logic<'_> {
    fn reset(&mut self) {
        (self.trues, self.falses) = (0, 0);
    }
    fn add(&mut self, row: usize) {
        self.count(row, 1);
    }
    fn remove(&mut self, row: usize) {
        self.count(row, -1);
    }
    fn emit(&mut self) -> Result<(usize, usize)> {
        let value = (self.trues + self.falses > 0).then_some(if self.and {
            self.falses == 0
        } else {
            self.trues > 0
        });
        self.out.push(value);
        Ok((0, 0))
    }
    fn finish(self: Box<Self>) -> Vector<'static> {
        self.out.finish(|v| Data::Bool(Cow::Owned(v)))
    }
}

/// string_agg: the frame's texts joined, extended as rows come and joined again when one
/// has left.
struct Texts<'c> {
    column: Column<'c>,
    separator: &'c str,
    /// The frame's rows that hold a text, in order.
    rows: VecDeque<u32>,
    joined: Option<String>,
    /// A row left the frame since `joined` was made.
    stale: bool,
    out: Vec<Option<String>>,
    at: Location,
}

impl Texts<'_> {
    fn text(&self, row: usize) -> &str {
        match self.column.values {
            Values::Text(x) => &x[row],
            _ => "",
        }
    }
}

impl Slide for Texts<'_> {
    fn reset(&mut self) {
        self.rows.clear();
        self.joined = None;
        self.stale = false;
    }
    fn add(&mut self, row: usize) {
        if self.column.is_null(row) {
            return;
        }
        self.rows.push_back(row as u32);
        if !self.stale {
            let mut joined = self.joined.take();
            // Too long is found again, and refused, in `emit`.
            self.stale = join_text(&mut joined, self.separator, self.text(row), self.at).is_err();
            self.joined = joined;
        }
    }
    fn remove(&mut self, row: usize) {
        if self.rows.front() == Some(&(row as u32)) {
            self.rows.pop_front();
            self.stale = true;
        }
    }
    fn emit(&mut self) -> Result<(usize, usize)> {
        let mut work = 0;
        if self.stale {
            let mut joined = None;
            for &row in &self.rows {
                join_text(&mut joined, self.separator, self.text(row as usize), self.at)?;
            }
            self.joined = joined;
            self.stale = false;
            work = self.rows.len();
        }
        let bytes = self.joined.as_ref().map_or(0, String::len);
        self.out.push(self.joined.clone());
        Ok((bytes, work))
    }
    fn finish(self: Box<Self>) -> Vector<'static> {
        let n = self.out.len();
        let valid: Vec<bool> = self.out.iter().map(Option::is_some).collect();
        let values: Vec<String> = self.out.into_iter().map(Option::unwrap_or_default).collect();
        let valid = (!valid.iter().all(|&v| v)).then_some(Cow::Owned(valid));
        Vector::new(Data::Text(Cow::Owned(values)), valid, n)
    }
}
