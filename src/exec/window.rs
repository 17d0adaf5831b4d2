//! Window functions, over the rows a select made (`plan/window.rs` states their layout).
//!
//! For each distinct window order the rows are sorted once (stably: peers keep the order
//! they came in): on one `u128` per row when every key is a number, a boolean or an id
//! (`Packed`), else by typed comparisons of the partition's and the ORDER BY's columns;
//! the sort gives each position its partition and its peer group. Every call of that order is
//! then computed a column at a time, in one pass over the positions:
//! - ranks, `ntile`, `lag`/`lead` from a row's place in its partition and peer group;
//! - frames as two bounds per position, which never move back within a partition (every
//!   frame ROWS, RANGE or GROUPS can describe slides forward), so most aggregates over
//!   them add each row once and take it away once: counts, INT sums (exact, in 128 bits)
//!   and booleans as running totals, min and max in a monotonic queue, string_agg
//!   extended as rows come (and joined again when its frame lost one). Float sums,
//!   averages and variances read a segment tree instead (`float_frames`): a float taken
//!   away from a running total is not exact.
//!
//! The results come out in the last window's order, as PostgreSQL and SQLite give them
//! without an ORDER BY.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::VecDeque;

use super::Chunk;
use super::aggregate::{join_text, spread};
use super::error::ExecError;
use super::eval::eval;
use super::reader::Reader;
use super::sort::sort_stopping;
use crate::location::Location;
use crate::plan::{
    AggFunc, FrameEdge, FramePlan, FrameUnits, WindowCall, WindowFunc, WindowPlan, WindowSort,
};
use crate::storage::{Entity, Value, canonical_float, float_order};
use crate::vector::{Batch, Data, Datum, Vector};

type Result<T> = std::result::Result<T, ExecError>;

/// Loops look at the interrupt once per this many positions.
const CHECK: usize = 1 << 14;

/// The rows a window function reads past the last: a NULL (`picked`).
const NONE: u32 = u32::MAX;

/// The select's output with `plan`'s windows computed: its select list over `chunk` (the
/// rows its `Output` made) and the calls' results.
pub fn compute(plan: &WindowPlan, chunk: Chunk, reader: &Reader<'_>) -> Result<Chunk> {
    let n = chunk.len;
    if n >= (u32::MAX / 2) as usize {
        return Err(ExecError::arithmetic(
            reader.at,
            format!(
                "window functions take at most {} rows, and the select made {n}",
                u32::MAX / 2
            ),
        ));
    }
    let mut results: Vec<Option<Vector<'static>>> = plan.calls.iter().map(|_| None).collect();
    let mut orders = Vec::with_capacity(plan.sorts.len());
    for (s, sort) in plan.sorts.iter().enumerate() {
        // EXPLAIN ANALYZE times each order: its sort and its calls.
        let order = super::profile::timed(
            reader.profile,
            sort,
            |order: &Vec<u32>| order.len(),
            || -> Result<Vec<u32>> {
                let sorted = Sorted::new(&chunk, sort, reader)?;
                for (c, call) in plan.calls.iter().enumerate().filter(|(_, c)| c.sort == s) {
                    let column = compute_call(call, &chunk, &sorted, sort, reader)?;
                    reader.budget.charge(column.bytes(), reader.at)?;
                    results[c] = Some(column);
                }
                Ok(sorted.order)
            },
        )?;
        orders.push(order);
    }
    let Some(last) = orders.last() else {
        return Err(ExecError::internal(reader.at, "a window plan without a sort"));
    };
    // Every column in the last window's order: a call of another order through where
    // each row stands in its own.
    reader.budget.charge(
        chunk.columns.iter().map(Vector::bytes).sum::<usize>() + n * 8,
        reader.at,
    )?;
    let mut columns: Vec<Vector<'static>> = chunk.columns.iter().map(|c| c.gather(last)).collect();
    for (call, result) in plan.calls.iter().zip(results) {
        let Some(result) = result else {
            return Err(ExecError::internal(reader.at, "a window call of no sort"));
        };
        if call.sort + 1 == orders.len() {
            columns.push(result);
            continue;
        }
        let mut place = vec![0u32; n];
        for (p, &row) in orders[call.sort].iter().enumerate() {
            place[row as usize] = p as u32;
        }
        let through: Vec<u32> = last.iter().map(|&row| place[row as usize]).collect();
        columns.push(result.gather(&through));
    }
    drop(chunk);
    let batch = Batch {
        len: n,
        slots: columns.iter().map(|v| Some(Datum::Vector(v.view()))).collect(),
    };
    let cx = reader.eval();
    let mut outputs = Vec::with_capacity(plan.outputs.len());
    for e in &plan.outputs {
        let v = eval(e, &batch, &cx)?.into_vector(e.ty, n).into_owned();
        reader.budget.charge(v.bytes(), reader.at)?;
        outputs.push(v);
    }
    Ok(Chunk {
        columns: outputs,
        len: n,
    })
}

/// A typed view of one column.
#[derive(Clone, Copy)]
enum Values<'c> {
    Null,
    Int(&'c [i64]),
    Float(&'c [f64]),
    Real(&'c [f32]),
    Bool(&'c [bool]),
    Text(&'c [String]),
    Entity(&'c [Option<Entity>]),
}

#[derive(Clone, Copy)]
struct Column<'c> {
    values: Values<'c>,
    valid: Option<&'c [bool]>,
}

impl<'c> Column<'c> {
    fn of(v: &'c Vector<'_>) -> Column<'c> {
        let values = match &v.data {
            Data::Null => Values::Null,
            Data::Int(x) => Values::Int(x),
            Data::Float(x) => Values::Float(x),
            Data::Real(x) => Values::Real(x),
            Data::Bool(x) => Values::Bool(x),
            Data::Text(x) => Values::Text(x),
            Data::Entity(x) => Values::Entity(x),
        };
        Column {
            values,
            valid: v.valid.as_deref(),
        }
    }

    fn is_null(&self, r: usize) -> bool {
        if self.valid.is_some_and(|v| !v[r]) {
            return true;
        }
        match self.values {
            Values::Null => true,
            Values::Entity(e) => e[r].is_none(),
            _ => false,
        }
    }

    /// Two values, neither NULL, in ORDER BY's order (as `value_order` has it).
    fn order(&self, a: usize, b: usize) -> Ordering {
        match self.values {
            Values::Null => Ordering::Equal,
            Values::Int(x) => x[a].cmp(&x[b]),
            Values::Float(x) => float_order(x[a], x[b]),
            Values::Real(x) => float_order(f64::from(x[a]), f64::from(x[b])),
            Values::Bool(x) => x[a].cmp(&x[b]),
            Values::Text(x) => x[a].cmp(&x[b]),
            Values::Entity(x) => x[a].map(Entity::to_bits).cmp(&x[b].map(Entity::to_bits)),
        }
    }

    /// Whether rows `a` and `b` hold the same value, NULL the same as NULL.
    fn same(&self, a: usize, b: usize) -> bool {
        match (self.is_null(a), self.is_null(b)) {
            (true, true) => true,
            (false, false) => self.order(a, b) == Ordering::Equal,
            _ => false,
        }
    }

    /// A number's value as a float (0 for what is not a number).
    fn float(&self, r: usize) -> f64 {
        match self.values {
            Values::Int(x) => x[r] as f64,
            Values::Float(x) => x[r],
            Values::Real(x) => f64::from(x[r]),
            _ => 0.0,
        }
    }

    fn int(&self, r: usize) -> Option<i64> {
        match self.values {
            Values::Int(x) if !self.is_null(r) => Some(x[r]),
            _ => None,
        }
    }
}

/// One column of a sort.
struct Key<'c> {
    column: Column<'c>,
    desc: bool,
    nulls_first: bool,
}

fn compare(keys: &[Key<'_>], a: usize, b: usize) -> Ordering {
    for k in keys {
        let ord = match (k.column.is_null(a), k.column.is_null(b)) {
            (true, true) => Ordering::Equal,
            (true, false) if k.nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if k.nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                let o = k.column.order(a, b);
                if k.desc { o.reverse() } else { o }
            }
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

/// A sort's keys coded into one `u128` per row, when they fit: each key's values as
/// unsigned codes in the sort's order (shifted to start at 0, so that few bits hold
/// them; reversed for DESC; a bit above them for NULL's place), the partition's keys
/// first, then the ORDER BY's, then the row's number (which makes every key unique and
/// the sort stable). Texts have no such code.
struct Packed<'c> {
    fields: Vec<Field<'c>>,
    /// How many low bits hold the row number, and those bits.
    row_bits: u32,
    row_mask: u128,
    /// Where the partition's keys start: 128 when there are none (so `checked_shr`).
    order_shift: u32,
}

/// One key of a `Packed`.
struct Field<'c> {
    column: Column<'c>,
    /// The smallest and largest code of its values that are not NULL.
    min: u64,
    max: u64,
    /// Bits for `code - min`.
    bits: u32,
    /// Whether a value is NULL somewhere: a bit above the value's says which.
    nulls: bool,
    desc: bool,
    nulls_first: bool,
    /// Where its bits start in the packed key.
    shift: u32,
}

impl<'c> Field<'c> {
    /// A value's code: unsigned, ordered as the values are (floats by IEEE's total order
    /// of their canonical form, as `float_order`).
    fn code(column: &Column<'_>, r: usize) -> Option<u64> {
        let float = |bits: u64, sign: u64| if bits & sign != 0 { !bits } else { bits | sign };
        Some(match column.values {
            Values::Int(x) => (x[r] as u64) ^ (1 << 63),
            Values::Float(x) => float(canonical_float(x[r]).to_bits(), 1 << 63),
            Values::Real(x) => float(canonical_float(f64::from(x[r])).to_bits(), 1 << 63),
            Values::Bool(x) => u64::from(x[r]),
            Values::Entity(x) => x[r]?.to_bits(),
            Values::Null | Values::Text(_) => return None,
        })
    }

    fn new(key: &Key<'c>, n: usize) -> Option<Field<'c>> {
        if matches!(key.column.values, Values::Text(_)) {
            return None;
        }
        let (mut min, mut max, mut nulls) = (u64::MAX, 0u64, false);
        for r in 0..n {
            let code = if key.column.is_null(r) {
                None
            } else {
                Field::code(&key.column, r)
            };
            match code {
                Some(c) => {
                    min = min.min(c);
                    max = max.max(c);
                }
                None => nulls = true,
            }
        }
        if min > max {
            (min, max) = (0, 0);
        }
        Some(Field {
            column: key.column,
            min,
            max,
            bits: 64 - (max - min).leading_zeros(),
            nulls,
            desc: key.desc,
            nulls_first: key.nulls_first,
            shift: 0,
        })
    }

    fn width(&self) -> u32 {
        self.bits + u32::from(self.nulls)
    }

    /// Its bits of row `r`'s key, in place.
    fn bits_of(&self, r: usize) -> u128 {
        let code = if self.column.is_null(r) {
            None
        } else {
            Field::code(&self.column, r)
        };
        let field = match code {
            None if self.nulls_first => 0,
            None => 1u128 << self.bits,
            Some(c) => {
                let v = if self.desc { self.max - c } else { c - self.min };
                let flag = if self.nulls && self.nulls_first {
                    1u128 << self.bits
                } else {
                    0
                };
                u128::from(v) | flag
            }
        };
        field.checked_shl(self.shift).unwrap_or(0)
    }
}

impl<'c> Packed<'c> {
    fn new(partition: &[Key<'c>], order: &[Key<'c>], n: usize) -> Option<Packed<'c>> {
        let row_bits = (usize::BITS - n.leading_zeros()).max(1);
        let mut fields = Vec::new();
        for key in partition.iter().chain(order) {
            fields.push(Field::new(key, n)?);
        }
        let total: u32 = fields.iter().map(Field::width).sum::<u32>() + row_bits;
        if total > 128 {
            return None;
        }
        // From the last field up: the row's number in the lowest bits.
        let mut shift = row_bits;
        let mut order_shift = row_bits;
        for (i, field) in fields.iter_mut().enumerate().rev() {
            field.shift = shift;
            shift += field.width();
            if i >= partition.len() {
                order_shift = shift;
            }
        }
        Some(Packed {
            fields,
            row_bits,
            row_mask: (1u128 << row_bits) - 1,
            order_shift,
        })
    }

    fn key(&self, r: usize) -> u128 {
        self.fields.iter().fold(r as u128, |key, f| key | f.bits_of(r))
    }
}

/// The rows in one window's order, with their partitions and peer groups.
struct Sorted {
    /// The row at each position.
    order: Vec<u32>,
    /// Where each partition starts, then the number of rows.
    parts: Vec<u32>,
    /// Per position, its partition (of `parts`).
    part_of: Vec<u32>,
    /// Where each peer group starts, then the number of rows.
    groups: Vec<u32>,
    /// Per position, its peer group (of `groups`).
    group_of: Vec<u32>,
}

impl Sorted {
    fn new(chunk: &Chunk, sort: &WindowSort, reader: &Reader<'_>) -> Result<Sorted> {
        let n = chunk.len;
        reader.budget.charge(n.saturating_mul(16), reader.at)?;
        let partition: Vec<Key<'_>> = sort
            .partition
            .iter()
            .map(|&c| Key {
                column: Column::of(&chunk.columns[c]),
                desc: false,
                nulls_first: false,
            })
            .collect();
        let order_keys: Vec<Key<'_>> = sort
            .order
            .iter()
            .map(|k| Key {
                column: Column::of(&chunk.columns[k.column]),
                desc: k.desc,
                nulls_first: k.nulls_first,
            })
            .collect();
        let (mut parts, mut groups) = (vec![0u32], vec![0u32]);
        let (mut part_of, mut group_of) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut boundaries = |p: usize, new_part: bool, new_group: bool| {
            if new_part {
                parts.push(p as u32);
            }
            if new_part || new_group {
                groups.push(p as u32);
            }
            part_of.push((parts.len() - 1) as u32);
            group_of.push((groups.len() - 1) as u32);
        };
        let order = match Packed::new(&partition, &order_keys, n) {
            Some(packed) => {
                // Each row's whole sort key one number: sorted as numbers, and its
                // partition and peers told apart by their bits.
                reader.budget.charge(n.saturating_mul(32), reader.at)?;
                let mut keys: Vec<u128> = Vec::with_capacity(n);
                for r in 0..n {
                    if r.is_multiple_of(CHECK) {
                        reader.budget.check(reader.at)?;
                    }
                    keys.push(packed.key(r));
                }
                sort_stopping(&mut keys, u128::cmp, || reader.budget.check(reader.at))?;
                let mut order = Vec::with_capacity(n);
                for (p, &key) in keys.iter().enumerate() {
                    if p.is_multiple_of(CHECK) {
                        reader.budget.check(reader.at)?;
                    }
                    order.push((key & packed.row_mask) as u32);
                    let before = keys[p.saturating_sub(1)];
                    boundaries(
                        p,
                        p > 0 && (before ^ key).checked_shr(packed.order_shift).unwrap_or(0) != 0,
                        p > 0 && (before ^ key) >> packed.row_bits != 0,
                    );
                }
                order
            }
            None => {
                let mut order: Vec<u32> = (0..n as u32).collect();
                if !partition.is_empty() || !order_keys.is_empty() {
                    let compare_rows = |&a: &u32, &b: &u32| {
                        compare(&partition, a as usize, b as usize)
                            .then_with(|| compare(&order_keys, a as usize, b as usize))
                    };
                    sort_stopping(&mut order, compare_rows, || reader.budget.check(reader.at))?;
                }
                for p in 0..n {
                    if p.is_multiple_of(CHECK) {
                        reader.budget.check(reader.at)?;
                    }
                    let (a, b) = (order[p.saturating_sub(1)] as usize, order[p] as usize);
                    let new_part = p > 0 && !partition.iter().all(|k| k.column.same(a, b));
                    let new_group = p > 0 && !order_keys.iter().all(|k| k.column.same(a, b));
                    boundaries(p, new_part, new_group);
                }
                order
            }
        };
        if n == 0 {
            parts.clear();
            groups.clear();
        }
        parts.push(n as u32);
        groups.push(n as u32);
        Ok(Sorted {
            order,
            parts,
            part_of,
            groups,
            group_of,
        })
    }

    fn len(&self) -> usize {
        self.order.len()
    }

    /// The partition of position `p`: its first position and the one past its last.
    fn partition(&self, p: usize) -> (usize, usize) {
        let i = self.part_of[p] as usize;
        (self.parts[i] as usize, self.parts[i + 1] as usize)
    }

    /// The peer group of position `p`, as `partition`.
    fn peers(&self, p: usize) -> (usize, usize) {
        let i = self.group_of[p] as usize;
        (self.groups[i] as usize, self.groups[i + 1] as usize)
    }
}

/// An INT argument of a call, at a row: `None` for NULL.
fn int_at(chunk: &Chunk, column: usize, row: usize) -> Option<i64> {
    Column::of(&chunk.columns[column]).int(row)
}

fn compute_call(
    call: &WindowCall,
    chunk: &Chunk,
    sorted: &Sorted,
    sort: &WindowSort,
    reader: &Reader<'_>,
) -> Result<Vector<'static>> {
    let n = sorted.len();
    let check = |p: usize| {
        if p.is_multiple_of(CHECK) {
            reader.budget.check(reader.at)
        } else {
            Ok(())
        }
    };
    let ints = |f: &mut dyn FnMut(usize, usize, usize) -> i64| -> Result<Vector<'static>> {
        Ok(Vector::from_data(
            Data::Int(Cow::Owned(per_position(sorted, reader, f)?)),
            n,
        ))
    };
    let floats = |f: &mut dyn FnMut(usize, usize, usize) -> f64| -> Result<Vector<'static>> {
        Ok(Vector::from_data(
            Data::Float(Cow::Owned(per_position(sorted, reader, f)?)),
            n,
        ))
    };
    let rank = |p: usize, start: usize| (sorted.peers(p).0 - start + 1) as i64;
    if !call.func.framed() {
        // A frame's offsets are refused as they are for the functions that read frames.
        offset(&call.frame.start, "start", reader)?;
        offset(&call.frame.end, "end", reader)?;
    }
    match &call.func {
        WindowFunc::RowNumber => ints(&mut |p, start, _| (p - start + 1) as i64),
        WindowFunc::Rank => ints(&mut |p, start, _| rank(p, start)),
        WindowFunc::DenseRank => {
            ints(&mut |p, start, _| (sorted.group_of[p] - sorted.group_of[start]) as i64 + 1)
        }
        WindowFunc::PercentRank => floats(&mut |p, start, end| {
            if end - start > 1 {
                (rank(p, start) - 1) as f64 / (end - start - 1) as f64
            } else {
                0.0
            }
        }),
        WindowFunc::CumeDist => {
            floats(&mut |p, start, end| (sorted.peers(p).1 - start) as f64 / (end - start) as f64)
        }
        WindowFunc::Ntile => ntile(call, chunk, sorted, reader),
        WindowFunc::Shift { forward } => shift(call, *forward, chunk, sorted, reader),
        WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue => {
            let (starts, ends) = frames(&call.frame, chunk, sorted, sort, reader)?;
            let value = &chunk.columns[call.args[0]];
            let mut picks = Vec::with_capacity(n);
            for p in 0..n {
                check(p)?;
                let (fs, fe) = (starts[p] as usize, ends[p] as usize);
                let pick = match call.func {
                    WindowFunc::FirstValue => (fs < fe).then_some(fs),
                    WindowFunc::LastValue => (fs < fe).then(|| fe - 1),
                    _ => match int_at(chunk, call.args[1], sorted.order[p] as usize) {
                        None => None,
                        Some(k) if k <= 0 => {
                            return Err(ExecError::arithmetic(
                                call.at,
                                format!("nth_value's position must be 1 or more, found {k}"),
                            ));
                        }
                        Some(k) => fs.checked_add(k as usize - 1).filter(|&q| q < fe),
                    },
                };
                picks.push(pick.map_or(NONE, |q| sorted.order[q]));
            }
            Ok(picked(&[value], &picks))
        }
        WindowFunc::Aggregate { func, separator } => {
            let (starts, ends) = frames(&call.frame, chunk, sorted, sort, reader)?;
            aggregate(call, *func, separator, chunk, sorted, &starts, &ends, reader)
        }
    }
}

/// `f` of each position, its partition's first position and the one past its last.
fn per_position<T>(
    sorted: &Sorted,
    reader: &Reader<'_>,
    f: &mut dyn FnMut(usize, usize, usize) -> T,
) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(sorted.len());
    for p in 0..sorted.len() {
        if p.is_multiple_of(CHECK) {
            reader.budget.check(reader.at)?;
        }
        let (start, end) = sorted.partition(p);
        out.push(f(p, start, end));
    }
    Ok(out)
}

/// The values at `picks`, read from `sources` one after the other (a pick past a
/// source's rows reads the next one), `NONE` for NULL.
fn picked(sources: &[&Vector<'_>], picks: &[u32]) -> Vector<'static> {
    let mut all = sources[0].view().into_owned();
    for s in &sources[1..] {
        all.append(s);
    }
    let null = all.len() as u32;
    all.push_value(&Value::Null);
    let picks: Vec<u32> = picks.iter().map(|&p| if p == NONE { null } else { p }).collect();
    all.gather(&picks)
}

/// `ntile(k)`: the rows of each partition dealt into `k` buckets in order, the first
/// ones a row larger when they do not divide evenly (PostgreSQL's and SQLite's rule).
/// `k` is read at the partition's first row.
fn ntile(call: &WindowCall, chunk: &Chunk, sorted: &Sorted, reader: &Reader<'_>) -> Result<Vector<'static>> {
    let n = sorted.len();
    let mut out = vec![0i64; n];
    let mut valid = vec![true; n];
    let mut p = 0;
    while p < n {
        reader.budget.check(reader.at)?;
        let (start, end) = sorted.partition(p);
        match int_at(chunk, call.args[0], sorted.order[start] as usize) {
            None => valid[start..end].fill(false),
            Some(k) if k <= 0 => {
                return Err(ExecError::arithmetic(
                    call.at,
                    format!("ntile's number of buckets must be 1 or more, found {k}"),
                ));
            }
            Some(k) => {
                let rows = (end - start) as u64;
                let k = (k as u64).min(rows.max(1));
                let (size, extra) = (rows / k, rows % k);
                // The first `extra` buckets hold `size + 1` rows.
                for (i, bucket) in out[start..end].iter_mut().enumerate() {
                    let i = i as u64;
                    let big = extra * (size + 1);
                    *bucket = if i < big {
                        i / (size + 1) + 1
                    } else {
                        extra + (i - big) / size.max(1) + 1
                    } as i64;
                }
            }
        }
        p = end;
    }
    let valid = (!valid.iter().all(|&v| v)).then_some(Cow::Owned(valid));
    Ok(Vector::new(Data::Int(Cow::Owned(out)), valid, n))
}

/// `lag(x, offset, default)` (`lead`: `forward`): x at the row `offset` before (after) in
/// the partition, else the default; NULL for a NULL offset.
fn shift(
    call: &WindowCall,
    forward: bool,
    chunk: &Chunk,
    sorted: &Sorted,
    reader: &Reader<'_>,
) -> Result<Vector<'static>> {
    let n = sorted.len();
    let (value, default) = (&chunk.columns[call.args[0]], &chunk.columns[call.args[2]]);
    let mut picks = Vec::with_capacity(n);
    for p in 0..n {
        if p.is_multiple_of(CHECK) {
            reader.budget.check(reader.at)?;
        }
        let row = sorted.order[p] as usize;
        let Some(offset) = int_at(chunk, call.args[1], row) else {
            picks.push(NONE);
            continue;
        };
        let (start, end) = sorted.partition(p);
        let target = if forward {
            (p as i128) + i128::from(offset)
        } else {
            (p as i128) - i128::from(offset)
        };
        picks.push(if target >= start as i128 && target < end as i128 {
            sorted.order[target as usize]
        } else {
            // The default, at this row.
            (n + row) as u32
        });
    }
    Ok(picked(&[value, default], &picks))
}

/// A frame offset's value: a count (ROWS, GROUPS) or a distance (RANGE).
#[derive(Clone, Copy)]
enum Offset {
    Count(u64),
    Int(i64),
    Float(f64),
}

fn offset(edge: &FrameEdge, what: &str, reader: &Reader<'_>) -> Result<Option<Offset>> {
    let (FrameEdge::Preceding(e) | FrameEdge::Following(e)) = edge else {
        return Ok(None);
    };
    let value = eval(e, &Batch::new(1, 0), &reader.eval())?.get(0);
    let bad = |message: String| Err(ExecError::arithmetic(e.at, message));
    match value {
        Value::Null => bad(format!("a window frame's {what} offset must not be NULL")),
        Value::Int(k) if k < 0 => bad(format!(
            "a window frame's {what} offset must not be negative, found {k}"
        )),
        Value::Int(k) => Ok(Some(Offset::Int(k))),
        Value::Float(x) if x.is_nan() || x < 0.0 => bad(format!(
            "a window frame's {what} offset must be 0 or more, found {x}"
        )),
        Value::Float(x) => Ok(Some(Offset::Float(x))),
        Value::Real(x) if x.is_nan() || x < 0.0 => bad(format!(
            "a window frame's {what} offset must be 0 or more, found {x}"
        )),
        Value::Real(x) => Ok(Some(Offset::Float(f64::from(x)))),
        other => bad(format!(
            "a window frame's {what} offset must be a number, found {other:?}"
        )),
    }
}

/// Each position's frame: its first position and the one past its last (never before
/// the first: an empty frame starts and ends at one place).
fn frames(
    frame: &FramePlan,
    chunk: &Chunk,
    sorted: &Sorted,
    sort: &WindowSort,
    reader: &Reader<'_>,
) -> Result<(Vec<u32>, Vec<u32>)> {
    let n = sorted.len();
    reader.budget.charge(n.saturating_mul(8), reader.at)?;
    let counts = |o: Option<Offset>| match o {
        Some(Offset::Int(k)) => Some(Offset::Count(k as u64)),
        o => o,
    };
    let (mut low, mut high) = (
        offset(&frame.start, "start", reader)?,
        offset(&frame.end, "end", reader)?,
    );
    if frame.units != FrameUnits::Range {
        (low, high) = (counts(low), counts(high));
    }
    // RANGE with an offset: the one ORDER BY key, where its values are not NULL.
    let key = match (frame.units, low.or(high)) {
        (FrameUnits::Range, Some(_)) => RangeKey::new(chunk, sorted, sort),
        _ => None,
    };
    let (mut starts, mut ends) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for p in 0..n {
        if p.is_multiple_of(CHECK) {
            reader.budget.check(reader.at)?;
        }
        let (ps, pe) = sorted.partition(p);
        let start = edge(
            &frame.start,
            low,
            true,
            p,
            (ps, pe),
            frame.units,
            sorted,
            key.as_ref(),
        );
        let end = edge(
            &frame.end,
            high,
            false,
            p,
            (ps, pe),
            frame.units,
            sorted,
            key.as_ref(),
        );
        starts.push(start as u32);
        ends.push(end.max(start) as u32);
    }
    Ok((starts, ends))
}

/// Where a frame's start (`start`) or end (one past its last row) is for position `p`.
#[allow(clippy::too_many_arguments)]
fn edge(
    edge: &FrameEdge,
    offset: Option<Offset>,
    start: bool,
    p: usize,
    (ps, pe): (usize, usize),
    units: FrameUnits,
    sorted: &Sorted,
    key: Option<&RangeKey<'_>>,
) -> usize {
    let (peer_start, peer_end) = sorted.peers(p);
    let preceding = matches!(edge, FrameEdge::Preceding(_));
    match edge {
        FrameEdge::UnboundedPreceding => ps,
        FrameEdge::UnboundedFollowing => pe,
        FrameEdge::CurrentRow => match units {
            FrameUnits::Rows if start => p,
            FrameUnits::Rows => p + 1,
            _ if start => peer_start,
            _ => peer_end,
        },
        FrameEdge::Preceding(_) | FrameEdge::Following(_) => match (units, offset) {
            (FrameUnits::Rows, Some(Offset::Count(k))) => {
                // The row `k` before or after, then past it for an end.
                let at = if preceding {
                    (p as u64).saturating_sub(k) as i128 - if (p as u64) < k { 1 } else { 0 }
                } else {
                    (p as i128).saturating_add(k as i128)
                };
                let at = if start { at } else { at + 1 };
                at.clamp(ps as i128, pe as i128) as usize
            }
            (FrameUnits::Groups, Some(Offset::Count(k))) => {
                let (g, first, last) = (
                    sorted.group_of[p] as u64,
                    sorted.group_of[ps] as u64,
                    sorted.group_of[pe - 1] as u64,
                );
                let target = if preceding {
                    g.checked_sub(k).filter(|&t| t >= first)
                } else {
                    g.checked_add(k).filter(|&t| t <= last)
                };
                match (target, start, preceding) {
                    (Some(t), true, _) => sorted.groups[t as usize] as usize,
                    (Some(t), false, _) => sorted.groups[t as usize + 1] as usize,
                    // Before the partition's first group.
                    (None, _, true) => ps,
                    (None, _, false) => pe,
                }
            }
            (FrameUnits::Range, Some(o)) => match key {
                Some(key) => key.edge(p, o, preceding, start, (ps, pe), (peer_start, peer_end)),
                None => {
                    if start {
                        peer_start
                    } else {
                        peer_end
                    }
                }
            },
            _ => {
                if start {
                    peer_start
                } else {
                    peer_end
                }
            }
        },
    }
}

/// A RANGE frame's ORDER BY key, read by position.
struct RangeKey<'c> {
    column: Column<'c>,
    order: &'c [u32],
    desc: bool,
    nulls_first: bool,
}

impl<'c> RangeKey<'c> {
    fn new(chunk: &'c Chunk, sorted: &'c Sorted, sort: &WindowSort) -> Option<RangeKey<'c>> {
        let [key] = sort.order.as_slice() else {
            return None;
        };
        Some(RangeKey {
            column: Column::of(&chunk.columns[key.column]),
            order: &sorted.order,
            desc: key.desc,
            nulls_first: key.nulls_first,
        })
    }

    /// A RANGE frame's edge at position `p`: the first row (`start`) or the one past the
    /// last whose key is within `offset` before (`preceding`) or after the row's, in the
    /// sort's direction. A row whose key is NULL has its peers (the partition's NULLs)
    /// for any offset's frame.
    #[allow(clippy::too_many_arguments)]
    fn edge(
        &self,
        p: usize,
        offset: Offset,
        preceding: bool,
        start: bool,
        (ps, pe): (usize, usize),
        (peer_start, peer_end): (usize, usize),
    ) -> usize {
        let row = self.order[p] as usize;
        if self.column.is_null(row) {
            return if start { peer_start } else { peer_end };
        }
        let is_null = |&r: &u32| self.column.is_null(r as usize);
        let (ns, ne) = if self.nulls_first {
            (ps + self.order[ps..pe].partition_point(is_null), pe)
        } else {
            (ps, ps + self.order[ps..pe].partition_point(|r| !is_null(r)))
        };
        // Toward larger keys: PRECEDING in a descending sort, FOLLOWING in an ascending one.
        let up = preceding == self.desc;
        let place: Box<dyn Fn(usize) -> Ordering + '_> = match (self.column.values, offset) {
            (Values::Int(x), Offset::Int(k)) => {
                let bound = if up {
                    i128::from(x[row]) + i128::from(k)
                } else {
                    i128::from(x[row]) - i128::from(k)
                };
                Box::new(move |r| i128::from(x[r]).cmp(&bound))
            }
            (_, Offset::Float(k)) => {
                let v = self.column.float(row);
                let mut bound = if up { v + k } else { v - k };
                if bound.is_nan() && !v.is_nan() {
                    // An infinite key and an infinite offset: every value but NaN is
                    // within it, to that side (PostgreSQL's rule, which looks at NaN first).
                    bound = if start != self.desc {
                        f64::NEG_INFINITY
                    } else {
                        f64::INFINITY
                    };
                }
                Box::new(move |r| float_order(self.column.float(r), bound))
            }
            // The binder gives an INT key an INT offset and a float key a float one.
            _ => return if start { peer_start } else { peer_end },
        };
        let sorted = |r: usize| {
            let o = place(r);
            if self.desc { o.reverse() } else { o }
        };
        let within = &self.order[ns..ne];
        ns + if start {
            within.partition_point(|&r| sorted(r as usize) == Ordering::Less)
        } else {
            within.partition_point(|&r| sorted(r as usize) != Ordering::Greater)
        }
    }
}

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
fn aggregate(
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

/// Values with NULLs, as an aggregate's results are made.
struct Nullable<T> {
    values: Vec<T>,
    valid: Vec<bool>,
}

impl<T: Default> Nullable<T> {
    fn new(n: usize) -> Nullable<T> {
        Nullable {
            values: Vec::with_capacity(n),
            valid: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, v: Option<T>) {
        self.valid.push(v.is_some());
        self.values.push(v.unwrap_or_default());
    }

    fn finish(self, data: impl FnOnce(Vec<T>) -> Data<'static>) -> Vector<'static> {
        let n = self.values.len();
        let valid = (!self.valid.iter().all(|&v| v)).then_some(Cow::Owned(self.valid));
        Vector::new(data(self.values), valid, n)
    }
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

/// A float sum, average or variance of a frame, from a segment tree over the positions:
/// each node holds its rows' count, sum, and (of the finite values) count, mean and sum
/// of squared differences from the mean, combined in order by Chan's formula. A frame
/// is then `O(log n)` nodes, whatever its size and however it slides: no value is ever
/// taken away from a running total, so no cancellation or overflow lingers past the
/// frame it happened in (a float's value cannot be taken back exactly, which is why
/// PostgreSQL gives float aggregates no inverse either).
fn float_frames(
    func: AggFunc,
    column: Column<'_>,
    sorted: &Sorted,
    starts: &[u32],
    ends: &[u32],
    reader: &Reader<'_>,
) -> Result<Vector<'static>> {
    let n = sorted.len();
    reader.budget.charge(
        n.saturating_mul(2 * std::mem::size_of::<Moments>() + 16),
        reader.at,
    )?;
    let mut nodes = vec![Moments::default(); 2 * n];
    for (p, &row) in sorted.order.iter().enumerate() {
        if p.is_multiple_of(CHECK) {
            reader.budget.check(reader.at)?;
        }
        let row = row as usize;
        if !column.is_null(row) {
            nodes[n + p] = Moments::of(column.float(row));
        }
    }
    for i in (1..n).rev() {
        nodes[i] = nodes[2 * i].then(&nodes[2 * i + 1]);
    }
    let mut out = Nullable::new(n);
    for p in 0..n {
        if p.is_multiple_of(CHECK) {
            reader.budget.check(reader.at)?;
        }
        let m = frame_moments(&nodes, n, starts[p] as usize, ends[p] as usize);
        out.push(m.result(func));
    }
    Ok(out.finish(|v| Data::Float(Cow::Owned(v))))
}

/// The moments of positions `lo..hi`, combined left to right from the tree's nodes.
fn frame_moments(nodes: &[Moments], n: usize, lo: usize, hi: usize) -> Moments {
    let (mut left, mut right) = (Moments::default(), Moments::default());
    let (mut l, mut r) = (lo + n, hi + n);
    while l < r {
        if l & 1 == 1 {
            left = left.then(&nodes[l]);
            l += 1;
        }
        if r & 1 == 1 {
            r -= 1;
            right = nodes[r].then(&right);
        }
        l >>= 1;
        r >>= 1;
    }
    left.then(&right)
}

/// What a float aggregate needs of some rows.
#[derive(Clone, Copy, Debug, Default)]
struct Moments {
    /// Values that are not NULL.
    count: i64,
    /// Their sum, in IEEE arithmetic (an infinity or NaN among them makes it one).
    sum: f64,
    /// The finite ones: how many, their mean, their sum of squared differences from it.
    finite: i64,
    mean: f64,
    squares: f64,
}

impl Moments {
    fn of(x: f64) -> Moments {
        let finite = x.is_finite();
        Moments {
            count: 1,
            sum: x,
            finite: i64::from(finite),
            mean: if finite { x } else { 0.0 },
            squares: 0.0,
        }
    }

    /// These rows, then `later`'s.
    fn then(&self, later: &Moments) -> Moments {
        let finite = self.finite + later.finite;
        let (mean, squares) = match (self.finite, later.finite) {
            (0, _) => (later.mean, later.squares),
            (_, 0) => (self.mean, self.squares),
            (a, b) => {
                let (a, b, all) = (a as f64, b as f64, finite as f64);
                let delta = later.mean - self.mean;
                (
                    self.mean + delta * b / all,
                    self.squares + later.squares + delta * delta * a * b / all,
                )
            }
        };
        Moments {
            count: self.count + later.count,
            sum: self.sum + later.sum,
            finite,
            mean,
            squares,
        }
    }

    fn result(&self, func: AggFunc) -> Option<f64> {
        match func {
            _ if self.count == 0 => None,
            AggFunc::Avg => Some(self.sum / self.count as f64),
            // A value that is not finite makes the variance NaN.
            AggFunc::Spread { sample, root } => match spread(self.count, self.squares, sample, root) {
                Value::Float(_) if self.finite < self.count => Some(f64::NAN),
                Value::Float(x) => Some(x),
                _ => None,
            },
            _ => Some(self.sum),
        }
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
