//! A function index's entries, computed: the index layer asks (`index::RowKeys`) for rows
//! of a table, and its expressions are evaluated here over those rows' columns, a batch
//! at a time, as a scan evaluates a select list.
//!
//! Invariants:
//! - The expressions read only the component's fields and the id, and call nothing
//!   volatile or clock-reading (the binder refused the rest), so the same row gives the
//!   same entry whenever it is computed.
//! - A batch that fails is computed again row by row, so exactly the rows that fail are
//!   `Entry::Failed` (which every search then hands the scan's filter to fail on).

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::sync::Arc;

use super::eval::{EvalCtx, Selection, eval, selection_of};
use super::parallel::NoSubqueries;
use crate::func::Clock;
use crate::index::{Definition, Entry, IndexError, RowKeys};
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
    fn entries(&self, table: &Table, rows: Written<'_>, out: &mut Vec<Entry>) {
        let mut each = |part: Part<'_>| match self.batch_entries(table, &part) {
            Some(entries) => out.extend(entries),
            // Row by row, to find the rows that fail.
            None => {
                for row in part.rows() {
                    let one = Part::Run(row..row + 1);
                    out.extend(self.batch_entries(table, &one).unwrap_or(vec![Entry::Failed]));
                }
            }
        };
        match rows {
            Written::Span(start, end) => {
                let mut at = start;
                while at < end {
                    let to = end.min(at.saturating_add(BATCH_ROWS));
                    each(Part::Run(at..to));
                    at = to;
                }
            }
            Written::Picked(picked) => picked.chunks(BATCH_ROWS).for_each(|p| each(Part::Picked(p))),
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

    fn rows(&self) -> Vec<usize> {
        match self {
            Part::Run(r) => r.clone().collect(),
            Part::Picked(p) => p.iter().map(|&r| r as usize).collect(),
        }
    }
}

impl ExprKeys {
    /// The entries of the rows `part`, or `None` when evaluating them failed.
    fn batch_entries(&self, table: &Table, part: &Part<'_>) -> Option<Vec<Entry>> {
        let keys = &*self.0;
        let len = part.len();
        let mut batch = Batch::new(len, keys.width);
        for &(slot, column) in &keys.columns {
            let datum = match (column, part) {
                (ScanColumn::Id, _) => {
                    let entities = table.entities();
                    let ids = part
                        .rows()
                        .into_iter()
                        .map(|r| entities.get(r).copied().map(Some))
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
                Selection::None => return Some(vec![Entry::Out; len]),
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
        // The parts of each kept row's key, built expression by expression.
        let mut parts: Vec<Vec<Key>> = vec![Vec::with_capacity(keys.exprs.len()); count];
        for e in &keys.exprs {
            let d = eval(e, batch, &cx).ok()?;
            for (row, p) in parts.iter_mut().enumerate() {
                p.push(Key::of(&d.get(row)));
            }
        }
        let mut parts = parts.into_iter().map(|p| Entry::Keys(p.into()));
        let entries = match kept {
            None => parts.collect(),
            Some(picked) => {
                let mut entries = vec![Entry::Out; len];
                for (r, entry) in picked.into_iter().zip(parts.by_ref()) {
                    entries[r as usize] = entry;
                }
                entries
            }
        };
        Some(entries)
    }
}
