//! What a row's place in its partition gives: a value for each position (the ranks),
//! `ntile`'s buckets, `lag` and `lead`, and values read at picked positions (`picked`,
//! `NONE` for NULL).

use std::borrow::Cow;

use super::sorted::Sorted;
use super::{CHECK, NONE, Result, int_at};
use crate::exec::Chunk;
use crate::exec::error::ExecError;
use crate::exec::reader::Reader;
use crate::plan::WindowCall;
use crate::storage::Value;
use crate::vector::{Data, Vector};

/// `f` of each position, its partition's first position and the one past its last.
pub(super) fn per_position<T>(
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
pub(super) fn picked(sources: &[&Vector<'_>], picks: &[u32]) -> Vector<'static> {
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
pub(super) fn ntile(
    call: &WindowCall,
    chunk: &Chunk,
    sorted: &Sorted,
    reader: &Reader<'_>,
) -> Result<Vector<'static>> {
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
pub(super) fn shift(
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
