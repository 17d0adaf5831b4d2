//! A join step served by a spatial index (`plan::SpatialJoin`): for each row of the
//! searching side, the index's entities within reach of the row's point, mapped to the
//! rows of the indexed side through their ids. What it pairs is a superset of what the
//! condition accepts (the reach is widened past rounding, and a term read from the indexed
//! side counts as its largest value); the join checks the condition on each pair once
//! every relation it reads is joined. Pairs come in the order a pair-by-pair join makes
//! them (by left row, then right row), so the choice changes no result and no order.
//! Memory: the id map of the indexed side, and the pairs (when the indexed side is the
//! left one, they are sorted whole before they go on); and a relation not joined yet
//! whose largest value bounds the reach is read whole (`bounding_relations`).

use super::error::ExecError;
use super::eval::eval;
use super::reader::Reader;
use crate::index::{Indexes, number};
use crate::plan::{JoinCondition, SpatialJoin};
use crate::storage::Value;
use crate::vector::{Batch, Datum};

type Result<T> = std::result::Result<T, ExecError>;

/// How a join step uses a spatial join condition.
pub struct SpatialStep<'p> {
    condition: &'p JoinCondition,
    join: &'p SpatialJoin,
    /// The relation joined in this step is the indexed one (else the rows joined so far
    /// hold it, and the new relation's rows search).
    indexed_is_next: bool,
}

/// A condition among `pending` whose spatial index can join relation `next` to the rows of
/// the relations `joined`: the index keeps one side's points and the other side computes
/// the center, and every term of the reach is computed per searching row or bounded by
/// the largest value of the one relation it reads.
pub fn spatial_step<'p>(
    pending: &[&'p JoinCondition],
    joined: &[usize],
    next: usize,
) -> Option<SpatialStep<'p>> {
    pending.iter().find_map(|&condition| {
        let join = condition.spatial.as_ref()?;
        let indexed_is_next =
            join.relation == next && join.center_relations.iter().all(|r| joined.contains(r));
        let indexed_joined =
            joined.contains(&join.relation) && join.center_relations.iter().all(|&r| r == next);
        if !indexed_is_next && !indexed_joined {
            return None;
        }
        let searching = |r: usize| {
            if indexed_is_next {
                joined.contains(&r)
            } else {
                r == next
            }
        };
        let computable = join
            .reach_relations
            .iter()
            .all(|rels| rels.iter().all(|&r| searching(r)) || rels.len() == 1);
        computable.then_some(SpatialStep {
            condition,
            join,
            indexed_is_next,
        })
    })
}

impl SpatialStep<'_> {
    /// Whether relation `r` is on the searching side of this step (joining `next` to
    /// the relations `joined`).
    fn searches(&self, r: usize, joined: &[usize], next: usize) -> bool {
        if self.indexed_is_next {
            joined.contains(&r)
        } else {
            r == next
        }
    }

    /// The relations, neither `next` nor joined yet, whose rows bound a term of the reach
    /// (by its largest value): `pairs` needs their rows (`rows_of`).
    pub fn bounding_relations(&self, joined: &[usize], next: usize) -> Vec<usize> {
        let on_searching_side = |r: usize| self.searches(r, joined, next);
        self.join
            .reach_relations
            .iter()
            .filter(|rels| !rels.iter().all(|&r| on_searching_side(r)))
            .filter_map(|rels| rels.first().copied())
            .filter(|&r| r != next && !joined.contains(&r))
            .collect()
    }

    /// Pairs (left row, right row) of `left` (the rows joined so far) and `right` (the
    /// relation `next`) that the index finds near each other, handed to `pair` in
    /// pair-by-pair order. `rows_of` gives the rows of a relation not joined yet, to bound
    /// a term of the reach that reads it. `None` when the index is gone or the condition
    /// is not the one planned (the caller pairs every row instead).
    #[allow(clippy::too_many_arguments)]
    pub fn pairs<'b>(
        &self,
        left: &Batch<'_>,
        right: &Batch<'_>,
        joined: &[usize],
        next: usize,
        rows_of: impl Fn(usize) -> Option<&'b Batch<'static>>,
        reader: &Reader<'_>,
        pair: &mut dyn FnMut(u32, u32) -> Result<()>,
    ) -> Result<Option<()>> {
        let Some(index) = Indexes::of(reader.world).get(&self.join.index) else {
            return Ok(None);
        };
        let Some((center, terms)) = self.join.parts(&self.condition.expr) else {
            return Ok(None);
        };
        let (searching, indexed) = if self.indexed_is_next {
            (left, right)
        } else {
            (right, left)
        };
        // Nothing to pair: nothing evaluated, as pairing every row would evaluate nothing.
        if indexed.len == 0 || searching.len == 0 {
            return Ok(Some(()));
        }
        let on_searching_side = |r: usize| self.searches(r, joined, next);
        let cx = reader.eval();
        // Each term: computed per searching row, or bounded by its largest value.
        let mut per_row: Vec<Datum<'_>> = Vec::new();
        let mut bound = 0.0f64;
        for (term, rels) in terms.iter().zip(&self.join.reach_relations) {
            if rels.iter().all(|&r| on_searching_side(r)) {
                per_row.push(eval(term, searching, &cx)?);
                continue;
            }
            let Some(&r) = rels.first() else {
                return Ok(None);
            };
            let holder = if r == next {
                right
            } else if joined.contains(&r) {
                left
            } else {
                match rows_of(r) {
                    Some(b) => b,
                    None => return Ok(None),
                }
            };
            let values = eval(term, holder, &cx)?;
            match largest(&values, holder.len) {
                Some(m) => bound += m,
                // No row has a value the condition could accept: nothing pairs.
                None => return Ok(Some(())),
            }
        }
        let centers: Vec<Datum<'_>> = center
            .iter()
            .map(|e| eval(e, searching, &cx))
            .collect::<Result<_>>()?;
        let ids = by_entity(indexed, self.join.id_slot);
        let mut found = Vec::new();
        let mut rows: Vec<u32> = Vec::new();
        let mut sorted_pairs: Vec<(u32, u32)> = Vec::new();
        for i in 0..searching.len {
            if i % 256 == 0 {
                reader.budget.check(reader.at)?;
            }
            let Some(point) = point_at(&centers, i) else {
                continue;
            };
            let mut reach = bound;
            for d in &per_row {
                match number(&d.get(i)) {
                    Some(v) => reach += v,
                    None => reach = f64::NAN,
                }
            }
            if reach.is_nan() {
                continue;
            }
            // Past the rounding of the condition's own arithmetic (REAL sums round at
            // about 6e-8 relative).
            let reach = reach + reach.abs() * 1e-6 + 1e-9;
            found.clear();
            index.within(point, reach, &mut found);
            rows.clear();
            for e in &found {
                let bits = e.to_bits();
                let start = ids.partition_point(|&(b, _)| b < bits);
                rows.extend(
                    ids[start..]
                        .iter()
                        .take_while(|&&(b, _)| b == bits)
                        .map(|&(_, j)| j),
                );
            }
            rows.sort_unstable();
            rows.dedup();
            for &j in &rows {
                if self.indexed_is_next {
                    pair(i as u32, j)?;
                } else {
                    // Kept until sorted: charged to the statement's memory.
                    if sorted_pairs.len().is_multiple_of(PAIRS_CHARGED) {
                        reader
                            .budget
                            .charge(PAIRS_CHARGED * size_of::<(u32, u32)>(), reader.at)?;
                    }
                    sorted_pairs.push((j, i as u32));
                }
            }
        }
        if !self.indexed_is_next {
            sorted_pairs.sort_unstable();
            for (l, r) in sorted_pairs {
                pair(l, r)?;
            }
        }
        Ok(Some(()))
    }
}

/// The rows of `batch` by the entity in `slot`: (id bits, row), sorted.
fn by_entity(batch: &Batch<'_>, slot: usize) -> Vec<(u64, u32)> {
    let Some(Some(ids)) = batch.slots.get(slot) else {
        return Vec::new();
    };
    let mut out: Vec<(u64, u32)> = (0..batch.len)
        .filter_map(|j| match ids.get(j) {
            Value::Entity(e) => Some((e.to_bits(), j as u32)),
            _ => None,
        })
        .collect();
    out.sort_unstable();
    out
}

/// The largest value of `d` over `len` rows that a `<` could still accept: NULL and NaN
/// rows never can. `None` when there is no such row.
fn largest(d: &Datum<'_>, len: usize) -> Option<f64> {
    (0..len)
        .filter_map(|i| number(&d.get(i)))
        .filter(|v| !v.is_nan())
        .reduce(f64::max)
}

/// The point of row `i`: `None` where an axis is NULL (the distance is NULL then).
fn point_at(centers: &[Datum<'_>], i: usize) -> Option<[f64; 3]> {
    let mut p = [0.0; 3];
    for (d, c) in centers.iter().enumerate().take(3) {
        p[d] = number(&c.get(i))?;
    }
    Some(p)
}

/// How many pairs kept for sorting are charged to the budget at a time.
const PAIRS_CHARGED: usize = 4096;
