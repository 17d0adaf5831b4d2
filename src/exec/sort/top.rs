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
use crate::storage::float_order;
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
/// compared in a loop of its own type where it is a number without NULLs, the rest only
/// for rows that tie it there.
fn beating(mine: &[Key<'_>], theirs: &[Key<'_>], bar: usize, n: usize) -> Vec<u32> {
    let rest = |r: usize| compare_across(&mine[1..], r, &theirs[1..], bar).is_lt();
    let mut out = Vec::new();
    let mut pick = |r: usize, first: Ordering, desc: bool| {
        let first = if desc { first.reverse() } else { first };
        if first.is_lt() || (first.is_eq() && rest(r)) {
            out.push(r as u32);
        }
    };
    let (a, b) = (&mine[0], &theirs[0]);
    let plain = a.column.never_null() && !b.column.is_null(bar);
    match (a.column.values, b.column.values) {
        (Values::Int(x), Values::Int(y)) if plain => {
            let y = y[bar];
            x.iter().enumerate().for_each(|(r, v)| pick(r, v.cmp(&y), a.desc));
        }
        (Values::Float(x), Values::Float(y)) if plain => {
            let y = y[bar];
            x.iter()
                .enumerate()
                .for_each(|(r, &v)| pick(r, float_order(v, y), a.desc));
        }
        (Values::Real(x), Values::Real(y)) if plain => {
            let y = f64::from(y[bar]);
            x.iter()
                .enumerate()
                .for_each(|(r, &v)| pick(r, float_order(f64::from(v), y), a.desc));
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
