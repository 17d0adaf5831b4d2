//! GROUP BY and aggregates. Rows are assigned a group number by their key values; each
//! aggregate then folds its argument vector into per-group state. Without GROUP BY there
//! is one group, and count/sum/avg fold typed slices directly.
//!
//! Invariants (what lets a statement's threads aggregate apart and merge, `merge`, with
//! the result one thread gets):
//! - An INT sum is exact (128 bits) until `finish`, which refuses one out of INT's range:
//!   the order rows are added in cannot change it.
//! - Without GROUP BY, a float sum (and avg's) adds each batch's values from zero in row
//!   order, then that partial to the total, batch after batch. An aggregator of a later
//!   stretch of batches keeps its partials apart (`deferred`) for `merge` to add in order.
//! - Groups are numbered in the order their first row comes; a merge numbers the other
//!   side's new groups after these, in its order.

use hashbrown::{HashMap, HashSet};

use super::Chunk;
use super::error::ExecError;
use super::eval::{EvalCtx, Selection, eval, select_rows};
use crate::location::Location;
use crate::plan::{AggCall, AggFunc, BoundExpr, DataType};
use crate::storage::{Key, Value, value_order};
use crate::vector::{Batch, Data, Datum, Vector};

type Result<T> = std::result::Result<T, ExecError>;

/// Per-group state of one aggregate.
enum State {
    Count(Vec<i64>),
    SumInt {
        sums: Vec<i128>,
        seen: Vec<bool>,
    },
    /// A float sum, or an average (`avg`: the sum over the count).
    SumFloat {
        sums: Vec<f64>,
        counts: Vec<i64>,
        /// Without GROUP BY, when deferred: each batch's partial sum, in order.
        partials: Vec<f64>,
        avg: bool,
    },
    Extreme {
        best: Vec<Value>,
        max: bool,
    },
    /// bool_and (`and`) or bool_or: per group, `None` until a value is seen.
    Logic {
        values: Vec<Option<bool>>,
        and: bool,
    },
    /// A variance or standard deviation: per group the count, mean and sum of squared
    /// differences from the mean (Welford's update, one value at a time, in row order).
    Spread {
        counts: Vec<i64>,
        means: Vec<f64>,
        squares: Vec<f64>,
        sample: bool,
        root: bool,
    },
    /// string_agg: per group the texts joined so far (`None` until one is seen).
    Texts {
        joined: Vec<Option<String>>,
        separator: String,
    },
    /// DISTINCT: the distinct values per group, folded at the end.
    Distinct(Vec<Vec<Value>>, Vec<HashSet<Key>>),
}

/// `joined` with `separator` and `text` after it, unless it would pass `MAX_TEXT`.
pub(super) fn join_text(
    joined: &mut Option<String>,
    separator: &str,
    text: &str,
    at: Location,
) -> Result<()> {
    let length = joined.as_ref().map_or(0, |j| j.len() + separator.len()) + text.len();
    if length > crate::vector::MAX_TEXT {
        return Err(ExecError::arithmetic(
            at,
            format!(
                "text too long: string_agg would make {length} bytes, and a text value may hold at most {}",
                crate::vector::MAX_TEXT
            ),
        ));
    }
    match joined {
        Some(j) => {
            j.push_str(separator);
            j.push_str(text);
        }
        None => *joined = Some(text.to_owned()),
    }
    Ok(())
}

/// A variance (or its root) from a count and the sum of squared differences from the
/// mean: NULL for no value (or one, for a sample's).
pub(super) fn spread(count: i64, squares: f64, sample: bool, root: bool) -> Value {
    let divisor = if sample { count - 1 } else { count };
    if divisor <= 0 {
        return Value::Null;
    }
    let variance = squares / divisor as f64;
    Value::Float(if root { variance.sqrt() } else { variance })
}

pub struct Aggregator<'p> {
    keys: &'p [BoundExpr],
    aggs: &'p [AggCall],
    having: Option<&'p BoundExpr>,
    outputs: &'p [BoundExpr],
    groups: HashMap<Vec<Key>, u32>,
    key_values: Vec<Vec<Value>>,
    /// What the groups' keys hold on the heap (`group_of`), for `footprint`.
    key_heap: usize,
    states: Vec<State>,
    /// A later stretch of a statement's batches: float partials are kept, not added.
    deferred: bool,
}

impl<'p> Aggregator<'p> {
    pub fn new(
        keys: &'p [BoundExpr],
        aggs: &'p [AggCall],
        having: Option<&'p BoundExpr>,
        outputs: &'p [BoundExpr],
    ) -> Aggregator<'p> {
        let states = aggs
            .iter()
            .map(|a| {
                if a.distinct {
                    return State::Distinct(Vec::new(), Vec::new());
                }
                match a.func {
                    AggFunc::CountStar | AggFunc::Count => State::Count(Vec::new()),
                    AggFunc::Sum if a.ty == DataType::Int => State::SumInt {
                        sums: Vec::new(),
                        seen: Vec::new(),
                    },
                    AggFunc::Sum | AggFunc::Avg => State::SumFloat {
                        sums: Vec::new(),
                        counts: Vec::new(),
                        partials: Vec::new(),
                        avg: a.func == AggFunc::Avg,
                    },
                    AggFunc::Min => State::Extreme {
                        best: Vec::new(),
                        max: false,
                    },
                    AggFunc::Max => State::Extreme {
                        best: Vec::new(),
                        max: true,
                    },
                    AggFunc::BoolAnd | AggFunc::BoolOr => State::Logic {
                        values: Vec::new(),
                        and: a.func == AggFunc::BoolAnd,
                    },
                    AggFunc::StringAgg => State::Texts {
                        joined: Vec::new(),
                        separator: a.separator.clone(),
                    },
                    AggFunc::Spread { sample, root } => State::Spread {
                        counts: Vec::new(),
                        means: Vec::new(),
                        squares: Vec::new(),
                        sample,
                        root,
                    },
                }
            })
            .collect();
        let mut a = Aggregator {
            keys,
            aggs,
            having,
            outputs,
            groups: HashMap::new(),
            key_values: Vec::new(),
            key_heap: 0,
            states,
            deferred: false,
        };
        if keys.is_empty() {
            // Without GROUP BY there is exactly one group, even over no rows.
            a.group_of(Vec::new());
        }
        a
    }

    /// This aggregator, for a later stretch of a statement's batches: its float partials
    /// are kept for `merge` to add in order (module docs).
    pub fn deferred(mut self) -> Aggregator<'p> {
        self.deferred = true;
        self
    }

    /// Whether aggregators of stretches of the batches of `keys` and `aggs` merge into
    /// exactly what one aggregator of them all gives: not for a float sum or avg per group,
    /// nor for a variance (whose merge would round otherwise than its one-by-one update).
    pub fn mergeable(keys: &[BoundExpr], aggs: &[AggCall]) -> bool {
        let spread =
            |a: &AggCall| !a.distinct && matches!(a.func, AggFunc::Spread { .. } | AggFunc::StringAgg);
        !aggs.iter().any(spread)
            && (keys.is_empty()
                || aggs.iter().all(|a| {
                    a.distinct || !(a.func == AggFunc::Avg || a.func == AggFunc::Sum && a.ty != DataType::Int)
                }))
    }

    /// Takes in `later`, an aggregator of the batches that come after this one's (made
    /// `deferred`): its groups after these, its counts and sums added, its extremes
    /// compared, its distinct values after these, as if this one had read its batches.
    pub fn merge(&mut self, later: Aggregator<'p>) {
        let Aggregator {
            key_values, states, ..
        } = later;
        let groups: Vec<usize> = key_values
            .into_iter()
            .map(|k| self.group_of(k) as usize)
            .collect();
        for (state, other) in self.states.iter_mut().zip(states) {
            match (state, other) {
                (State::Count(a), State::Count(b)) => {
                    for (&g, n) in groups.iter().zip(b) {
                        a[g] += n;
                    }
                }
                (State::SumInt { sums, seen }, State::SumInt { sums: s, seen: t }) => {
                    for ((&g, x), ok) in groups.iter().zip(s).zip(t) {
                        sums[g] += x;
                        seen[g] |= ok;
                    }
                }
                (
                    State::SumFloat { sums, counts, .. },
                    State::SumFloat {
                        counts: c, partials, ..
                    },
                ) => {
                    // Without GROUP BY (`mergeable`): one group, its partials in order.
                    partials.into_iter().for_each(|p| sums[0] += p);
                    for (&g, n) in groups.iter().zip(c) {
                        counts[g] += n;
                    }
                }
                (State::Extreme { best, max }, State::Extreme { best: other, .. }) => {
                    for (&g, v) in groups.iter().zip(other) {
                        if v == Value::Null {
                            continue;
                        }
                        let better = best[g] == Value::Null || {
                            let o = value_order(&v, &best[g]);
                            if *max { o.is_gt() } else { o.is_lt() }
                        };
                        if better {
                            best[g] = v;
                        }
                    }
                }
                (State::Logic { values, and }, State::Logic { values: other, .. }) => {
                    for (&g, v) in groups.iter().zip(other) {
                        values[g] = logic(values[g], v, *and);
                    }
                }
                (State::Distinct(values, sets), State::Distinct(more, _)) => {
                    for (&g, vs) in groups.iter().zip(more) {
                        for v in vs {
                            if sets[g].insert(Key::of(&v)) {
                                values[g].push(v);
                            }
                        }
                    }
                }
                // Both sides are made from the same calls, state for state.
                _ => {}
            }
        }
    }

    fn group_of(&mut self, key: Vec<Value>) -> u32 {
        let k: Vec<Key> = key.iter().map(Key::of).collect();
        if let Some(&g) = self.groups.get(&k) {
            return g;
        }
        // What the new group's key takes on the heap, twice (as values and as hash keys):
        // the two vectors (and their allocations' headers) and each text's bytes.
        const ALLOCATION: usize = 16;
        let texts: usize = key
            .iter()
            .map(|v| match v {
                Value::Text(t) => t.len() + ALLOCATION,
                _ => 0,
            })
            .sum();
        self.key_heap += 2 * (ALLOCATION + texts)
            + key.len() * (std::mem::size_of::<Value>() + std::mem::size_of::<Key>());
        let g = self.key_values.len() as u32;
        self.groups.insert(k, g);
        self.key_values.push(key);
        for s in &mut self.states {
            match s {
                State::Count(c) => c.push(0),
                State::SumInt { sums, seen } => {
                    sums.push(0);
                    seen.push(false);
                }
                State::SumFloat { sums, counts, .. } => {
                    sums.push(0.0);
                    counts.push(0);
                }
                State::Extreme { best, .. } => best.push(Value::Null),
                State::Logic { values, .. } => values.push(None),
                State::Texts { joined, .. } => joined.push(None),
                State::Spread {
                    counts,
                    means,
                    squares,
                    ..
                } => {
                    counts.push(0);
                    means.push(0.0);
                    squares.push(0.0);
                }
                State::Distinct(values, sets) => {
                    values.push(Vec::new());
                    sets.push(HashSet::new());
                }
            }
        }
        g
    }

    /// About how many bytes the groups hold: each key (as values and as hash keys), each
    /// aggregate's state, and every value a DISTINCT aggregate keeps.
    pub fn footprint(&self) -> usize {
        // The hash table's buckets (and control bytes) as allocated, the keys' vectors as
        // allocated, what the keys hold on the heap, and a state's slot per group.
        let table = self.groups.capacity() * (std::mem::size_of::<(Vec<Key>, u32)>() + 1);
        let keys = self.key_values.capacity() * std::mem::size_of::<Vec<Value>>() + self.key_heap;
        let states = self.key_values.capacity() * self.states.len() * 24;
        let distinct: usize = self
            .states
            .iter()
            .map(|s| match s {
                State::Distinct(values, _) => values.iter().map(|v| v.len() * 64).sum(),
                State::Texts { joined, .. } => joined.iter().flatten().map(String::capacity).sum(),
                _ => 0,
            })
            .sum();
        table + keys + states + distinct
    }

    /// Calls `f` on every slot of the input batch that grouping or an aggregate reads.
    pub fn visit_slots(&self, f: &mut impl FnMut(usize)) {
        self.keys.iter().for_each(|k| k.visit_slots(f));
        self.aggs
            .iter()
            .filter_map(|a| a.arg.as_ref())
            .for_each(|e| e.visit_slots(f));
    }

    pub fn push(&mut self, batch: &Batch<'_>, cx: &EvalCtx<'_>) -> Result<()> {
        let n = batch.len;
        // Group number of each row; `None` when every row is group 0.
        let groups: Option<Vec<u32>> = if self.keys.is_empty() {
            None
        } else {
            let keys: Vec<Datum<'_>> = self
                .keys
                .iter()
                .map(|k| eval(k, batch, cx))
                .collect::<Result<_>>()?;
            Some(
                (0..n)
                    .map(|i| self.group_of(keys.iter().map(|d| d.get(i)).collect()))
                    .collect(),
            )
        };
        let group = |i: usize| groups.as_ref().map_or(0, |g| g[i] as usize);
        for (call, state) in self.aggs.iter().zip(self.states.iter_mut()) {
            let arg = match &call.arg {
                Some(e) => Some(eval(e, batch, cx)?),
                None => None,
            };
            // Every state but Count needs the argument: the binder guarantees it.
            let argument = || {
                arg.as_ref().ok_or_else(|| {
                    ExecError::internal(
                        Location::default(),
                        "an aggregate was planned without its argument",
                    )
                })
            };
            let valid = |i: usize| {
                arg.as_ref()
                    .is_none_or(|d| !matches!(d.get_valid(i), Some(false)))
            };
            match state {
                State::Count(counts) => match (&arg, &groups) {
                    (None, None) => counts[0] += n as i64,
                    (Some(Datum::Vector(v)), None) => counts[0] += (n - v.null_count()) as i64,
                    (Some(Datum::Scalar(s)), None) => {
                        counts[0] += if *s == Value::Null { 0 } else { n as i64 }
                    }
                    _ => (0..n).filter(|&i| valid(i)).for_each(|i| counts[group(i)] += 1),
                },
                // 128 bits cannot overflow with fewer than 2^64 rows: exact in any order.
                State::SumInt { sums, seen } => match argument()? {
                    Datum::Vector(v) if v.valid.is_none() && groups.is_none() => {
                        if let Data::Int(x) = &v.data
                            && !x.is_empty()
                        {
                            sums[0] += x.iter().map(|&x| i128::from(x)).sum::<i128>();
                            seen[0] = true;
                        }
                    }
                    d => {
                        for i in 0..n {
                            if let Value::Int(x) = d.get(i) {
                                let g = group(i);
                                sums[g] += i128::from(x);
                                seen[g] = true;
                            }
                        }
                    }
                },
                State::SumFloat {
                    sums,
                    counts,
                    partials,
                    ..
                } => {
                    let d = argument()?;
                    if groups.is_none() {
                        // This batch's partial, then added to the total (module docs).
                        let (mut partial, mut count) = (0.0, 0);
                        fold_floats(d, n, &group, |_, x| {
                            partial += x;
                            count += 1;
                        });
                        if count > 0 {
                            counts[0] += count;
                            if self.deferred {
                                partials.push(partial);
                            } else {
                                sums[0] += partial;
                            }
                        }
                    } else {
                        fold_floats(d, n, &group, |g, x| {
                            sums[g] += x;
                            counts[g] += 1;
                        });
                    }
                }
                State::Extreme { best, max } => {
                    let d = argument()?;
                    for i in 0..n {
                        let v = d.get(i);
                        if v == Value::Null {
                            continue;
                        }
                        let g = group(i);
                        let better = best[g] == Value::Null || {
                            let o = value_order(&v, &best[g]);
                            if *max { o.is_gt() } else { o.is_lt() }
                        };
                        if better {
                            best[g] = v;
                        }
                    }
                }
                State::Texts { joined, separator } => {
                    let d = argument()?;
                    let at = call.arg.as_ref().map_or(Location::default(), |e| e.at);
                    for i in 0..n {
                        if let Value::Text(t) = d.get(i) {
                            join_text(&mut joined[group(i)], separator, &t, at)?;
                        }
                    }
                }
                State::Logic { values, and } => match argument()? {
                    // A BOOL vector read in place, its NULL rows skipped.
                    Datum::Vector(v) if matches!(v.data, Data::Bool(_)) => {
                        if let Data::Bool(bools) = &v.data {
                            for (i, &b) in bools.iter().enumerate() {
                                if v.is_valid(i) {
                                    let g = group(i);
                                    values[g] = logic(values[g], Some(b), *and);
                                }
                            }
                        }
                    }
                    d => {
                        for i in 0..n {
                            if let Value::Bool(b) = d.get(i) {
                                let g = group(i);
                                values[g] = logic(values[g], Some(b), *and);
                            }
                        }
                    }
                },
                State::Spread {
                    counts,
                    means,
                    squares,
                    ..
                } => {
                    fold_floats(argument()?, n, &group, |g, x| {
                        counts[g] += 1;
                        let delta = x - means[g];
                        means[g] += delta / counts[g] as f64;
                        squares[g] += delta * (x - means[g]);
                    });
                }
                State::Distinct(values, sets) => {
                    let d = argument()?;
                    for i in 0..n {
                        let v = d.get(i);
                        if v == Value::Null {
                            continue;
                        }
                        let g = group(i);
                        if sets[g].insert(Key::of(&v)) {
                            values[g].push(v);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    pub fn finish(self, cx: &EvalCtx<'_>) -> Result<Chunk> {
        let groups = self.key_values.len();
        let mut batch = Batch::new(groups, self.keys.len() + self.aggs.len());
        for (k, key) in self.keys.iter().enumerate() {
            let values: Vec<Value> = self.key_values.iter().map(|row| row[k].clone()).collect();
            batch.slots[k] = Some(Datum::Vector(Vector::from_values(key.ty, &values)));
        }
        for (a, (call, state)) in self.aggs.iter().zip(self.states).enumerate() {
            let values: Vec<Value> = match state {
                State::Count(c) => c.into_iter().map(Value::Int).collect(),
                State::SumInt { sums, seen } => {
                    let at = call.arg.as_ref().map_or(Location::default(), |e| e.at);
                    sums.into_iter()
                        .zip(seen)
                        .map(|(s, ok)| match (ok, i64::try_from(s)) {
                            (false, _) => Ok(Value::Null),
                            (true, Ok(s)) => Ok(Value::Int(s)),
                            (true, Err(_)) => Err(ExecError::arithmetic(at, "sum out of range for INT")),
                        })
                        .collect::<Result<_>>()?
                }
                State::SumFloat {
                    sums, counts, avg, ..
                } => sums
                    .into_iter()
                    .zip(counts)
                    .map(|(s, c)| match (c, avg) {
                        (0, _) => Value::Null,
                        (c, true) => Value::Float(s / c as f64),
                        (_, false) => Value::Float(s),
                    })
                    .collect(),
                State::Extreme { best, .. } => best,
                State::Logic { values, .. } => values
                    .into_iter()
                    .map(|v| v.map_or(Value::Null, Value::Bool))
                    .collect(),
                State::Texts { joined, .. } => joined
                    .into_iter()
                    .map(|j| j.map_or(Value::Null, Value::Text))
                    .collect(),
                State::Spread {
                    counts,
                    squares,
                    sample,
                    root,
                    ..
                } => counts
                    .into_iter()
                    .zip(squares)
                    .map(|(c, q)| spread(c, q, sample, root))
                    .collect(),
                State::Distinct(values, _) => values
                    .into_iter()
                    .map(|vs| fold_distinct(call, vs))
                    .collect::<Result<_>>()?,
            };
            batch.slots[self.keys.len() + a] = Some(Datum::Vector(Vector::from_values(call.ty, &values)));
        }
        project(batch, self.having, self.outputs, cx)
    }
}

/// The output rows of groups laid out in `batch` (their key values, then their
/// aggregates' results): HAVING, then the select list.
fn project(
    batch: Batch<'_>,
    having: Option<&BoundExpr>,
    outputs: &[BoundExpr],
    cx: &EvalCtx<'_>,
) -> Result<Chunk> {
    let batch = match having {
        None => batch,
        Some(h) => match select_rows(h, &batch, cx)? {
            Selection::All => batch,
            Selection::None => Batch::new(0, batch.slots.len()),
            Selection::Rows(rows) => batch.gather(&rows),
        },
    };
    let mut columns = Vec::with_capacity(outputs.len());
    for e in outputs {
        let v = if batch.len == 0 {
            Vector::empty(e.ty)
        } else {
            eval(e, &batch, cx)?.into_vector(e.ty, batch.len).into_owned()
        };
        columns.push(v);
    }
    Ok(Chunk {
        columns,
        len: batch.len,
    })
}

/// The output row of one group given as its key values followed by its aggregates'
/// results (`group`, of the types of `keys` and `aggs`), as a GROUP BY's run gives it;
/// `None` when HAVING drops it.
pub fn group_output(
    keys: &[BoundExpr],
    aggs: &[AggCall],
    having: Option<&BoundExpr>,
    outputs: &[BoundExpr],
    group: &[Value],
    cx: &EvalCtx<'_>,
) -> Result<Option<Vec<Value>>> {
    let mut batch = Batch::new(1, keys.len() + aggs.len());
    let types = keys.iter().map(|k| k.ty).chain(aggs.iter().map(|a| a.ty));
    for (slot, (ty, value)) in types.zip(group).enumerate() {
        batch.slots[slot] = Some(Datum::Vector(Vector::from_values(
            ty,
            std::slice::from_ref(value),
        )));
    }
    let chunk = project(batch, having, outputs, cx)?;
    Ok((chunk.len == 1).then(|| chunk.row(0)))
}

fn fold_floats(d: &Datum<'_>, n: usize, group: &impl Fn(usize) -> usize, mut f: impl FnMut(usize, f64)) {
    match d {
        Datum::Vector(v) if v.valid.is_none() => match &v.data {
            Data::Float(x) => x.iter().enumerate().for_each(|(i, &x)| f(group(i), x)),
            Data::Real(x) => x.iter().enumerate().for_each(|(i, &x)| f(group(i), x as f64)),
            Data::Int(x) => x.iter().enumerate().for_each(|(i, &x)| f(group(i), x as f64)),
            _ => {}
        },
        _ => {
            for i in 0..n {
                match d.get(i) {
                    Value::Float(x) => f(group(i), x),
                    Value::Real(x) => f(group(i), x as f64),
                    Value::Int(x) => f(group(i), x as f64),
                    _ => {}
                }
            }
        }
    }
}

fn fold_distinct(call: &AggCall, values: Vec<Value>) -> Result<Value> {
    let as_f64 = |v: &Value| match v {
        Value::Int(i) => *i as f64,
        Value::Float(x) => *x,
        Value::Real(x) => *x as f64,
        _ => 0.0,
    };
    Ok(match call.func {
        AggFunc::CountStar | AggFunc::Count => Value::Int(values.len() as i64),
        _ if values.is_empty() => Value::Null,
        AggFunc::Sum if call.ty == DataType::Int => {
            // Exact, as a sum without DISTINCT: out of range only as a total.
            let total: i128 = values
                .iter()
                .map(|v| match v {
                    Value::Int(x) => i128::from(*x),
                    _ => 0,
                })
                .sum();
            let at = call.arg.as_ref().map_or(Location::default(), |e| e.at);
            Value::Int(
                i64::try_from(total).map_err(|_| ExecError::arithmetic(at, "sum out of range for INT"))?,
            )
        }
        AggFunc::Sum => Value::Float(values.iter().map(as_f64).sum()),
        AggFunc::Avg => Value::Float(values.iter().map(as_f64).sum::<f64>() / values.len() as f64),
        AggFunc::Min => values.into_iter().min_by(value_order).unwrap_or(Value::Null),
        AggFunc::Max => values.into_iter().max_by(value_order).unwrap_or(Value::Null),
        AggFunc::BoolAnd | AggFunc::BoolOr => {
            let and = call.func == AggFunc::BoolAnd;
            let bools = values.iter().filter_map(|v| match v {
                Value::Bool(b) => Some(*b),
                _ => None,
            });
            bools
                .fold(None, |acc, b| logic(acc, Some(b), and))
                .map_or(Value::Null, Value::Bool)
        }
        AggFunc::StringAgg => {
            let at = call.arg.as_ref().map_or(Location::default(), |e| e.at);
            let mut joined = None;
            for v in &values {
                if let Value::Text(t) = v {
                    join_text(&mut joined, &call.separator, t, at)?;
                }
            }
            joined.map_or(Value::Null, Value::Text)
        }
        AggFunc::Spread { sample, root } => {
            // The same update, over the distinct values in the order first seen.
            let (mut count, mut mean, mut squares) = (0i64, 0.0, 0.0);
            for x in values.iter().map(as_f64) {
                count += 1;
                let delta = x - mean;
                mean += delta / count as f64;
                squares += delta * (x - mean);
            }
            spread(count, squares, sample, root)
        }
    })
}

/// bool_and's (`and`) or bool_or's state after `next`.
fn logic(state: Option<bool>, next: Option<bool>, and: bool) -> Option<bool> {
    match (state, next) {
        (Some(a), Some(b)) => Some(if and { a && b } else { a || b }),
        (a, b) => a.or(b),
    }
}

impl Datum<'_> {
    /// Whether row `i` is valid; `None` for a scalar that is not NULL.
    fn get_valid(&self, i: usize) -> Option<bool> {
        match self {
            Datum::Scalar(Value::Null) => Some(false),
            Datum::Scalar(_) => None,
            Datum::Vector(v) => Some(v.is_valid(i)),
        }
    }
}
