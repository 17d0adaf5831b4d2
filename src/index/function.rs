//! Function indexes: `CREATE INDEX ON Position (floor(x / 16), floor(y / 16))` keeps, per
//! entity holding the component, the values of its expressions as one tuple of keys in a
//! B-tree (`Ordered<Box<[Key]>>`); a partial one (`… WHERE hp < 10`) keeps only the
//! entities its predicate is TRUE for.
//!
//! Invariants:
//! - The index layer stands below the executor, so it does not evaluate expressions: the
//!   definition holds a `RowKeys`, which the executor implements, and the index asks it for
//!   exactly the rows the world says were spawned, attached or written (in the fields the
//!   expressions read). `evaluated` counts those rows.
//! - An entity whose expressions (or predicate) fail to evaluate (an overflow, a division
//!   by zero) is kept in `failed` and given to every search as a candidate, so the scan's
//!   own filter evaluates it and fails as a walk would: an index never hides an error.
//! - A key part that is NULL is kept (as `Key::Null`): a condition on another part may
//!   still match the row; a search never asks for NULL.
//! - What the planner matches a query's conditions against is here as text: each
//!   expression's normal form (`shapes`) and the predicate's conjuncts (`conditions`),
//!   made by `plan/` when the index was defined.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::{Bound, Range};
use std::sync::Arc;

use super::ordered::{KeyRange, Ordered};
use crate::storage::{Entity, FieldId, FieldType, Key, Table, Value, Written};

/// What a function index keeps of one row.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry {
    /// The values of its expressions, in order.
    Keys(Box<[Key]>),
    /// Its predicate is not TRUE for the row: not in the index.
    Out,
    /// Evaluating the expressions or the predicate failed for the row.
    Failed,
}

/// Computes a function index's entries: the executor's evaluation of the index's
/// expressions, handed down to the index layer.
pub trait RowKeys: fmt::Debug + Send + Sync {
    /// Appends one entry for each of `rows` of `table` (a table holding the indexed
    /// component), in order.
    fn entries(&self, table: &Table, rows: Written<'_>, out: &mut Vec<Entry>);
}

/// One conjunct of a partial index's predicate, for the planner's implication test.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    /// The conjunct's normal form: a query conjunct of the same form implies it.
    pub shape: String,
    /// When the conjunct compares an expression with a constant (`hp < 10`, `x BETWEEN 0
    /// AND 5` is two): that expression's normal form and the values it allows. A query
    /// conjunct allowing only values inside these implies it.
    pub range: Option<(String, Bound<Value>, Bound<Value>)>,
}

/// What CREATE INDEX said of a function index, bound.
#[derive(Clone, Debug)]
pub struct Definition {
    /// The expressions as SQL (as SHOW INDEXES, EXPLAIN and a saved database write them).
    pub exprs: Vec<String>,
    /// The predicate as SQL, for a partial index.
    pub predicate: Option<String>,
    /// Each expression's normal form.
    pub shapes: Vec<String>,
    /// Each expression's type: what a search's values must have.
    pub types: Vec<FieldType>,
    /// The predicate's conjuncts.
    pub conditions: Vec<Condition>,
    /// Every field the expressions and the predicate read: writes to these recompute rows.
    pub reads: Vec<FieldId>,
    pub keys: Arc<dyn RowKeys>,
}

/// A function index's structure.
#[derive(Clone, Debug)]
pub(crate) struct Function {
    pub def: Definition,
    tree: Ordered<Box<[Key]>>,
    /// Entities whose entry failed to compute, by bits.
    failed: BTreeSet<Entity>,
    /// How many rows' entries have been computed since the index was made.
    pub evaluated: u64,
}

impl Function {
    pub fn new(def: Definition) -> Function {
        Function {
            def,
            tree: Ordered::default(),
            failed: BTreeSet::new(),
            evaluated: 0,
        }
    }

    /// The entities held, those whose entry failed included.
    pub fn len(&self) -> usize {
        self.tree.len() + self.failed.len()
    }

    /// Computes and files rows `rows` of `table`.
    pub fn file_rows(&mut self, table: &Table, rows: Range<usize>) {
        self.file_picked(table, Written::from(&rows));
    }

    /// Computes and files the rows `rows` of `table`.
    pub fn file_picked(&mut self, table: &Table, rows: Written<'_>) {
        let all = table.entities();
        let entities: Vec<Entity> = match rows {
            Written::Span(start, end) => match all.get(start..end) {
                Some(e) => e.to_vec(),
                None => return,
            },
            Written::Picked(p) => match p.iter().map(|&r| all.get(r as usize).copied()).collect() {
                Some(e) => e,
                None => return,
            },
        };
        let mut entries = Vec::with_capacity(entities.len());
        self.def.keys.entries(table, rows, &mut entries);
        self.evaluated += entities.len() as u64;
        for (e, entry) in entities.into_iter().zip(entries) {
            match entry {
                Entry::Keys(k) => {
                    self.failed.remove(&e);
                    self.tree.insert(e, Some(k));
                }
                Entry::Out => {
                    self.failed.remove(&e);
                    self.tree.insert(e, None);
                }
                Entry::Failed => {
                    self.tree.insert(e, None);
                    self.failed.insert(e);
                }
            }
        }
    }

    pub fn remove(&mut self, entity: Entity) {
        self.tree.insert(entity, None);
        self.failed.remove(&entity);
    }

    /// The entities whose first `equal.len()` keys are `equal` and whose next key lies
    /// between `lo` and `hi` (no bound: any), until `out` holds `limit`; the failed ones
    /// always. `None` when a value is not of its expression's type (the caller walks).
    pub fn search(
        &self,
        equal: &[Value],
        lo: &Bound<Value>,
        hi: &Bound<Value>,
        limit: usize,
        out: &mut Vec<Entity>,
    ) -> Option<()> {
        let parts = self.def.types.len();
        let key = |v: &Value, i: usize| -> Option<Key> {
            (v.field_type() == self.def.types.get(i).copied()).then(|| Key::of(v))
        };
        let bounded = !matches!((lo, hi), (Bound::Unbounded, Bound::Unbounded));
        if equal.len() > parts || (bounded && equal.len() >= parts) {
            return None;
        }
        out.extend(self.failed.iter().copied());
        // A NULL compares NULL: no row matches.
        if equal
            .iter()
            .chain(bound_value(lo))
            .chain(bound_value(hi))
            .any(|v| *v == Value::Null)
        {
            return Some(());
        }
        let mut prefix = Vec::with_capacity(parts);
        for (i, v) in equal.iter().enumerate() {
            prefix.push(key(v, i)?);
        }
        let at = equal.len();
        // A prefix of the tuple sorts before every tuple it starts; padded with NULL (the
        // greatest key) it sorts after them.
        let short = |last: Option<Key>| -> Box<[Key]> { prefix.iter().cloned().chain(last).collect() };
        let padded = |last: Option<Key>| -> Box<[Key]> {
            let mut k: Vec<Key> = prefix.iter().cloned().chain(last).collect();
            k.resize(parts, Key::Null);
            k.into()
        };
        let range = KeyRange {
            lo: match lo {
                Bound::Included(v) => Bound::Included(short(Some(key(v, at)?))),
                Bound::Excluded(v) => Bound::Excluded(padded(Some(key(v, at)?))),
                Bound::Unbounded => Bound::Included(short(None)),
            },
            hi: match hi {
                Bound::Included(v) => Bound::Included(padded(Some(key(v, at)?))),
                Bound::Excluded(v) => Bound::Excluded(short(Some(key(v, at)?))),
                // A range open above still stops below NULL, the greatest key, which no
                // comparison matches.
                Bound::Unbounded if bounded => Bound::Excluded(short(Some(Key::Null))),
                Bound::Unbounded if prefix.is_empty() => Bound::Unbounded,
                Bound::Unbounded => Bound::Included(padded(None)),
            },
        };
        self.tree.range(&range, limit, out);
        Some(())
    }

    /// Every entry, comparable between two indexes of the same rows.
    pub fn entries(&self) -> Vec<(Entity, String)> {
        let mut all: Vec<(Entity, String)> = self.tree.pairs().map(|(k, e)| (*e, format!("{k:?}"))).collect();
        all.extend(self.failed.iter().map(|&e| (e, "failed".to_owned())));
        all
    }
}

fn bound_value(b: &Bound<Value>) -> Option<&Value> {
    match b {
        Bound::Included(v) | Bound::Excluded(v) => Some(v),
        Bound::Unbounded => None,
    }
}
