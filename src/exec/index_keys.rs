//! A function index's entries, computed: the index layer asks (`index::RowKeys`) for rows
//! of a table, and its expressions are evaluated here over those rows' columns, a batch
//! at a time, as a scan evaluates a select list.
//!
//! Invariants:
//! - The expressions read only the component's fields and the id, and call nothing
//!   volatile or clock-reading (the binder refused the rest), so the same row gives the
//!   same entry whenever it is computed.
//! - A batch that fails is halved until its failing rows are found, so exactly the rows
//!   that fail are `Status::Failed` (which every search then hands the scan's filter to
//!   fail on).
//! - Keys are read from the results' typed vectors, never through a boxed value per row.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::sync::Arc;

use super::eval::{EvalCtx, Selection, eval, selection_of};
use super::parallel::NoSubqueries;
use crate::func::Clock;
use crate::index::{Definition, Entries, IndexError, RowKeys, Status};
use crate::plan::{FunctionIndexPlan, IndexKeys, ParamValues, ScanColumn};
use crate::storage::{Key, Table, Value, Written};
use crate::vector::{Batch, Data, Datum, Vector};

/// Makes the function index `plan` defines (named `name`, or after its fields), filled
/// from every row holding its component. Returns the name.
pub fn create_function_index(
    world: &mut crate::storage::World,
    name: Option<&str>,
    plan: &FunctionIndexPlan,
) -> Result<String, IndexError> {
    let def = Definition {
        exprs: plan.exprs.clone(),
        predicate: plan.predicate.clone(),
        shapes: plan.shapes.clone(),
        types: plan.types.clone(),
        conditions: plan.conditions.clone(),
        reads: plan.reads.clone(),
        keys: Arc::new(ExprKeys(plan.keys.clone())),
    };
    crate::index::create_function_index(world, name, plan.keys.component, def)
}

/// Rows computed in one batch.
const BATCH_ROWS: usize = 4096;

/// `IndexKeys` as the index layer calls it.
#[derive(Debug)]
struct ExprKeys(Arc<IndexKeys>);

impl RowKeys for ExprKeys {
    fn entries(&self, table: &Table, rows: Written<'_>, out: &mut Entries) {
        out.parts = vec![Vec::with_capacity(rows.len()); self.0.exprs.len()];
        match rows {
            Written::Span(start, end) => {
                let mut at = start;
                while at < end {
                    let to = end.min(at.saturating_add(BATCH_ROWS));
                    self.part_entries(table, &Part::Run(at..to), out);
                    at = to;
                }
            }
            Written::Picked(picked) => {
                for p in picked.chunks(BATCH_ROWS) {
                    self.part_entries(table, &Part::Picked(p), out);
                }
            }
        }
    }
}

/// Rows of a table computed in one batch: a run of them, or some picked (ascending).
enum Part<'a> {
    Run(Range<usize>),
    Picked(&'a [u32]),
}

impl Part<'_> {
    fn len(&self) -> usize {
        match self {
            Part::Run(r) => r.len(),
            Part::Picked(p) => p.len(),
        }
    }

    /// The first `n` rows, and the rest.
    fn split(&self, n: usize) -> (Part<'_>, Part<'_>) {
        match self {
            Part::Run(r) => (Part::Run(r.start..r.start + n), Part::Run(r.start + n..r.end)),
            Part::Picked(p) => {
                let (a, b) = p.split_at(n);
                (Part::Picked(a), Part::Picked(b))
            }
        }
    }
}

impl ExprKeys {
    /// Appends the entries of the rows `part` to `out`. A batch that fails is halved until
    /// the rows that fail are found, one by one.
    fn part_entries(&self, table: &Table, part: &Part<'_>, out: &mut Entries) {
        if self.batch_entries(table, part, out).is_some() {
            return;
        }
        if part.len() <= 1 {
            out.status.extend((0..part.len()).map(|_| Status::Failed));
            for p in &mut out.parts {
                p.extend((0..part.len()).map(|_| Key::Null));
            }
            return;
        }
        let (a, b) = part.split(part.len() / 2);
        self.part_entries(table, &a, out);
        self.part_entries(table, &b, out);
    }

    /// Appends the entries of the rows `part` to `out`, or leaves `out` as it was and
    /// says `None` when evaluating them failed.
    fn batch_entries(&self, table: &Table, part: &Part<'_>, out: &mut Entries) -> Option<()> {
        let keys = &*self.0;
        let len = part.len();
        let mut batch = Batch::new(len, keys.width);
        for &(slot, column) in &keys.columns {
            let datum = match (column, part) {
                (ScanColumn::Id, Part::Run(rows)) => {
                    let ids = table
                        .entities()
                        .get(rows.clone())?
                        .iter()
                        .map(|&e| Some(e))
                        .collect();
                    Datum::Vector(Vector::from_data(Data::Entity(Cow::Owned(ids)), len))
                }
                (ScanColumn::Id, Part::Picked(picked)) => {
                    let entities = table.entities();
                    let ids = picked
                        .iter()
                        .map(|&r| entities.get(r as usize).copied().map(Some))
                        .collect::<Option<Vec<_>>>()?;
                    Datum::Vector(Vector::from_data(Data::Entity(Cow::Owned(ids)), len))
                }
                (ScanColumn::Field(f), Part::Run(rows)) => match table.column(f) {
                    Some(c) if rows.end <= c.len() => Datum::Vector(Vector::from_column(c, rows.clone())),
                    Some(_) => return None,
                    None => Datum::Scalar(Value::Null),
                },
                (ScanColumn::Field(f), Part::Picked(picked)) => match table.column(f) {
                    Some(c) if picked.last().is_none_or(|&r| (r as usize) < c.len()) => {
                        Datum::Vector(Vector::gather_column(c, picked))
                    }
                    Some(_) => return None,
                    None => Datum::Scalar(Value::Null),
                },
                _ => return None,
            };
            *batch.slots.get_mut(slot)? = Some(datum);
        }
        let params = ParamValues::default();
        let outer = RefCell::new(Vec::new());
        let rng = Cell::new(0);
        let cx = EvalCtx {
            params: &params,
            outer: &outer,
            rng: &rng,
            subqueries: &NoSubqueries,
            clock: Clock::default(),
        };
        // The rows the predicate keeps; the expressions are computed for those alone (a
        // partial index's WHERE may be what keeps them from failing: `10 / x … WHERE x <> 0`).
        let kept: Option<Vec<u32>> = match &keys.predicate {
            None => None,
            Some(p) => match selection_of(&eval(p, &batch, &cx).ok()?, len) {
                Selection::All => None,
                Selection::None => Some(Vec::new()),
                Selection::Rows(picked) => Some(picked),
            },
        };
        let gathered;
        let (batch, count) = match &kept {
            Some(picked) => {
                gathered = batch.gather(picked);
                (&gathered, picked.len())
            }
            None => (&batch, len),
        };
        let mut columns = Vec::with_capacity(keys.exprs.len());
        for e in &keys.exprs {
            let d = eval(e, batch, &cx).ok()?;
            let mut column = Vec::with_capacity(count);
            key_column(&d, count, &mut column);
            columns.push(column);
        }
        match kept {
            None => {
                out.status.extend((0..len).map(|_| Status::Kept));
                for (p, c) in out.parts.iter_mut().zip(columns) {
                    p.extend(c);
                }
            }
            Some(picked) => {
                let mut status = vec![Status::Out; len];
                for &r in &picked {
                    status[r as usize] = Status::Kept;
                }
                out.status.extend(status);
                for (p, c) in out.parts.iter_mut().zip(columns) {
                    let mut full = vec![Key::Null; len];
                    for (&r, k) in picked.iter().zip(c) {
                        full[r as usize] = k;
                    }
                    p.extend(full);
                }
            }
        }
        Some(())
    }
}

/// The keys of `d`'s `len` values, read from its typed data: no value boxed per row.
fn key_column(d: &Datum<'_>, len: usize, out: &mut Vec<Key>) {
    let v = match d {
        Datum::Scalar(v) => {
            out.extend(std::iter::repeat_n(Key::of(v), len));
            return;
        }
        Datum::Vector(v) => v,
    };
    let valid = |i: usize| {
        v.valid
            .as_ref()
            .is_none_or(|m| m.get(i).copied().unwrap_or(false))
    };
    match &v.data {
        Data::Null => out.extend(std::iter::repeat_n(Key::Null, len)),
        Data::Int(xs) => out.extend(
            xs.iter()
                .enumerate()
                .map(|(i, &x)| if valid(i) { Key::Int(x) } else { Key::Null }),
        ),
        Data::Float(xs) => out.extend(
            xs.iter()
                .enumerate()
                .map(|(i, &x)| if valid(i) { Key::float(x) } else { Key::Null }),
        ),
        Data::Real(xs) => out.extend(xs.iter().enumerate().map(|(i, &x)| {
            if valid(i) {
                Key::float(f64::from(x))
            } else {
                Key::Null
            }
        })),
        Data::Bool(xs) => out.extend(
            xs.iter()
                .enumerate()
                .map(|(i, &x)| if valid(i) { Key::Bool(x) } else { Key::Null }),
        ),
        Data::Text(xs) => out.extend(xs.iter().enumerate().map(|(i, x)| {
            if valid(i) {
                Key::Text(x.as_str().into())
            } else {
                Key::Null
            }
        })),
        Data::Entity(xs) => out.extend(xs.iter().enumerate().map(|(i, x)| match x {
            Some(e) if valid(i) => Key::Entity(e.to_bits()),
            _ => Key::Null,
        })),
    }
}
