//! ORDER BY … LIMIT over a select's rows as they are made (`Top`): only the rows that
//! may still be among the first `k` are kept, so a top 5 of six million rows holds and
//! copies a handful of rows, not six million.
//!
//! Invariants: after a trim, `kept`'s first `k` rows are the first `k` of every row seen
//! so far in the ORDER BY's order, stably (rows equal on every key in the order they
//! came), and the last of them is the bar a later row must beat, strictly, to be kept:
//! a later row equal to it came after it, so it is not among the first `k`. Rows are
//! kept in the order they came between trims; a trim sorts stably. A sort key is
//! evaluated once per row and that value is the one kept.

use std::cmp::Ordering;

use super::keys::{Key, compare_across};
use super::{Result, Values, order_rows};
use crate::exec::eval::eval;
use crate::exec::reader::Reader;
use crate::exec::{Chunk, Vector};
use crate::plan::{BoundExpr, SortKey};
use crate::storage::float_rank;
use crate::vector::Batch;

/// A trim waits until at least this many rows are kept beside the `k` (and `k` more):
/// a small LIMIT trims once per few batches, not once per row.
const SLACK: usize = 1024;

pub(in crate::exec) struct Top<'p> {
    exprs: &'p [BoundExpr],
    order: &'p [SortKey],
    k: usize,
    /// The rows kept, one vector per expression.
    kept: Vec<Vector<'static>>,
    len: usize,
    /// Whether `kept`'s first `k` rows are trimmed (so its row `k - 1` is the bar).
    trimmed: bool,
    /// What `kept` is charged to the statement's budget.
    charged: usize,
    /// Rows it was given, kept or not (EXPLAIN ANALYZE says how many the select made).
    given: usize,
}

impl<'p> Top<'p> {
    /// The first `k` rows in `order`'s order (keys naming `exprs`' columns) of the rows
    /// `exprs` make.
    pub(in crate::exec) fn new(exprs: &'p [BoundExpr], order: &'p [SortKey], k: usize) -> Top<'p> {
        Top {
            exprs,
            order,
            k,
            kept: exprs.iter().map(|e| Vector::empty(e.ty)).collect(),
            len: 0,
            trimmed: false,
            charged: 0,
            given: 0,
        }
    }

    /// Keeps those of the batch's rows that beat the bar (all of them before the first
    /// trim): their sort keys (and columns that may fail) are evaluated over the batch,
    /// the other columns over the rows kept only.
    pub(in crate::exec) fn push(&mut self, batch: &Batch<'_>, reader: &Reader<'_>) -> Result<()> {
        self.given += batch.len;
        if self.k == 0 || batch.len == 0 {
            return Ok(());
        }
        let cx = &reader.eval();
        let n = batch.len;
        // The sort keys over every row, and so any column that may fail (a division,
        // say): its error must not depend on which rows the bar lets through.
        let mut keys: Vec<Option<Vector<'_>>> = self.exprs.iter().map(|_| None).collect();
        let whole = self
            .order
            .iter()
            .map(|k| k.column)
            .chain((0..self.exprs.len()).filter(|&i| !self.exprs[i].cannot_fail()));
        for i in whole {
            if keys[i].is_none() {
                let e = &self.exprs[i];
                keys[i] = Some(eval(e, batch, cx)?.into_vector(e.ty, n));
            }
        }
        let rows: Option<Vec<u32>> = if self.trimmed {
            let bar = self.k - 1;
            let mine = Key::all_of(self.order, |c| keys[c].as_ref());
            let theirs = Key::all_of(self.order, |c| self.kept.get(c));
            let beat = beating(&mine, &theirs, bar, n);
            if beat.is_empty() {
                return Ok(());
            }
            (beat.len() < n).then_some(beat)
        } else {
            None
        };
        // The other columns over the rows kept only.
        let gathered;
        let rest = match &rows {
            Some(rows) => {
                gathered = batch.gather(rows);
                &gathered
            }
            None => batch,
        };
        let added = rest.len;
        let mut grown = 0;
        for (i, e) in self.exprs.iter().enumerate() {
            let made: Vector<'_>;
            let v = match (&keys[i], &rows) {
                (Some(key), Some(rows)) => {
                    made = key.gather(rows);
                    &made
                }
                (Some(key), None) => key,
                (None, _) => {
                    made = eval(e, rest, cx)?.into_vector(e.ty, added);
                    &made
                }
            };
            grown += v.bytes();
            self.kept[i].append(v);
        }
        self.len += added;
        reader.budget.charge(grown, reader.at)?;
        self.charged += grown;
        self.trim_when_full(reader)
    }

    /// Takes in `later`, a top of the rows after this one's.
    pub(in crate::exec) fn merge(&mut self, later: Top<'p>, reader: &Reader<'_>) -> Result<()> {
        self.given += later.given;
        if later.len == 0 {
            return Ok(());
        }
        for (mine, theirs) in self.kept.iter_mut().zip(later.kept) {
            mine.append_owned(theirs);
        }
        // What `later` charged was its own thread's share; what the merged top keeps is
        // charged to the statement once merged (`scan_in_parallel`).
        self.len += later.len;
        self.trimmed = false;
        self.trim_when_full(reader)
    }

    /// Trims once the rows kept pass twice `k` (and `k` more than `SLACK`).
    fn trim_when_full(&mut self, reader: &Reader<'_>) -> Result<()> {
        if self.len >= self.k.saturating_mul(2).max(self.k.saturating_add(SLACK)) {
            self.trim(reader)?;
        }
        Ok(())
    }

    /// Marks the batch slots its expressions read.
    pub(in crate::exec) fn visit_slots(&self, mark: &mut impl FnMut(usize)) {
        self.exprs.iter().for_each(|e| e.visit_slots(mark));
    }

    /// Rows kept so far.
    pub(in crate::exec) fn len(&self) -> usize {
        self.len
    }

    /// Rows it was given so far, kept or not.
    pub(in crate::exec) fn given(&self) -> usize {
        self.given
    }

    /// About how many bytes it keeps.
    pub(in crate::exec) fn bytes(&self) -> usize {
        self.kept.iter().map(Vector::bytes).sum()
    }

    /// The rows kept: the first `k` among them, in the order they came but for those a
    /// trim put first (which came before the rest), so that a stable sort of them by
    /// the ORDER BY gives the first `k` rows.
    pub(in crate::exec) fn finish(mut self) -> Chunk {
        Chunk {
            columns: std::mem::take(&mut self.kept),
            len: self.len,
        }
    }

    /// Sorts the rows kept, stably, keeping the first `k`; the last of them is the bar.
    fn trim(&mut self, reader: &Reader<'_>) -> Result<()> {
        let chunk = Chunk {
            columns: std::mem::take(&mut self.kept),
            len: self.len,
        };
        // The sort's working memory is given back once it is done: a top holds its rows.
        let mark = reader.budget.used();
        let order = order_rows(&chunk, self.order, Some(self.k), reader);
        reader.budget.release_to(mark);
        let order = order?;
        self.kept = chunk.columns.iter().map(|c| c.gather(&order)).collect();
        self.len = order.len();
        self.trimmed = self.len == self.k;
        let bytes = self.bytes();
        reader.budget.release(self.charged.saturating_sub(bytes));
        self.charged = self.charged.min(bytes);
        Ok(())
    }
}

/// The rows of `n` (keys `mine`) that come before row `bar` of `theirs`: its first key
/// compared in a loop of its own type where it is a number or a text without NULLs, the
/// rest only for rows that tie it there.
fn beating(mine: &[Key<'_>], theirs: &[Key<'_>], bar: usize, n: usize) -> Vec<u32> {
    let rest = |r: usize| compare_across(&mine[1..], r, &theirs[1..], bar).is_lt();
    let mut out = Vec::new();
    let (a, b) = (&mine[0], &theirs[0]);
    let plain = a.column.never_null() && !b.column.is_null(bar);
    match (a.column.values, b.column.values) {
        (Values::Int(x), Values::Int(y)) if plain => {
            first_key_beats(x, |v| v, y[bar], a.desc, rest, &mut out);
        }
        (Values::Float(x), Values::Float(y)) if plain => {
            first_key_beats(x, float_rank, float_rank(y[bar]), a.desc, rest, &mut out);
        }
        (Values::Real(x), Values::Real(y)) if plain => {
            let rank = |v: f32| float_rank(f64::from(v));
            first_key_beats(x, rank, rank(y[bar]), a.desc, rest, &mut out);
        }
        (Values::Text(x), Values::Text(y)) if plain => {
            first_text_beats(x, &y[bar], a.desc, rest, &mut out);
        }
        _ => {
            for r in 0..n {
                if compare_across(mine, r, theirs, bar).is_lt() {
                    out.push(r as u32);
                }
            }
        }
    }
    out
}

/// Pushes the rows of `column` that come before the bar on the first key (`rank`'s
/// order, reversed when `desc`), and those that tie it there and come before it on the
/// rest. Past the first trim it runs once per row of every batch and keeps almost none,
/// so it is most of a small LIMIT's time: a run of rows is tested at once, in a loop
/// without branches the compiler can widen, and looked at row by row only when one of
/// them may be kept.
fn first_key_beats<T: Copy>(
    column: &[T],
    rank: impl Fn(T) -> i64,
    bar: i64,
    desc: bool,
    rest: impl FnMut(usize) -> bool,
    out: &mut Vec<u32>,
) {
    if desc {
        runs_beating(column, |v| rank(v) >= bar, |v| rank(v) > bar, rest, out);
    } else {
        runs_beating(column, |v| rank(v) <= bar, |v| rank(v) < bar, rest, out);
    }
}

/// `first_key_beats` for one direction: `ties_or_beats` holds for a row that may be
/// kept, `beats` for one kept whatever its other keys.
fn runs_beating<T: Copy>(
    column: &[T],
    ties_or_beats: impl Fn(T) -> bool,
    beats: impl Fn(T) -> bool,
    mut rest: impl FnMut(usize) -> bool,
    out: &mut Vec<u32>,
) {
    const RUN: usize = 32;
    for (at, run) in column.chunks(RUN).enumerate() {
        if !run.iter().fold(false, |any, &v| any | ties_or_beats(v)) {
            continue;
        }
        for (i, &v) in run.iter().enumerate() {
            let r = at * RUN + i;
            if beats(v) || (ties_or_beats(v) && rest(r)) {
                out.push(r as u32);
            }
        }
    }
}

/// `first_key_beats` for a text first key: each text's first eight bytes, read as one
/// big-endian number (zeros past its end), are compared with the bar's, and the texts
/// are compared whole only where those are equal. Two texts whose padded first eight
/// bytes differ are in the order those numbers are (their first difference lies there,
/// or one ends there and the other goes on with a byte above zero), so no row's text is
/// passed to a comparison call unless it shares the bar's start.
fn first_text_beats(
    column: &[String],
    bar: &str,
    desc: bool,
    mut rest: impl FnMut(usize) -> bool,
    out: &mut Vec<u32>,
) {
    let before = if desc { Ordering::Greater } else { Ordering::Less };
    let (bar, bar_start) = (bar.as_bytes(), text_start(bar.as_bytes()));
    for (r, text) in column.iter().enumerate() {
        let text = text.as_bytes();
        let start = text_start(text);
        let o = if start == bar_start {
            text.cmp(bar)
        } else {
            start.cmp(&bar_start)
        };
        if o == before || (o == Ordering::Equal && rest(r)) {
            out.push(r as u32);
        }
    }
}

/// A text's first eight bytes as a big-endian number, zeros past its end.
#[inline]
fn text_start(text: &[u8]) -> u64 {
    match text.first_chunk::<8>() {
        Some(start) => u64::from_be_bytes(*start),
        None => {
            let mut start = [0u8; 8];
            start[..text.len()].copy_from_slice(text);
            u64::from_be_bytes(start)
        }
    }
}
