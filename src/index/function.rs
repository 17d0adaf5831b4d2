//! Function indexes: `CREATE INDEX ON Position (floor(x / 16), floor(y / 16))` keeps, per
//! entity holding the component, the values of its expressions as one tuple of keys in a
//! B-tree (`Ordered<Tuple>`); a partial one (`… WHERE hp < 10`) keeps only the
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Its key parts are in `Entries::parts`.
    Kept,
    /// Its predicate is not TRUE for the row: not in the index.
    Out,
    /// Evaluating the expressions or the predicate failed for the row.
    Failed,
}

/// Computed entries of a run of rows, column by column: each row's status, and each
/// expression's values for every row (`Key::Null` where the row is not kept).
#[derive(Debug, Default)]
pub struct Entries {
    pub status: Vec<Status>,
    /// One column per expression, `status.len()` keys each.
    pub parts: Vec<Vec<Key>>,
}

impl Entries {
    /// Whether row `r`'s parts equal `key`.
    fn same(&self, r: usize, key: &[Key]) -> bool {
        key.len() == self.parts.len() && self.parts.iter().zip(key).all(|(p, k)| p.get(r) == Some(k))
    }

    fn key(&self, r: usize) -> Tuple {
        Tuple::of(self.parts.iter().map(|p| p.get(r).cloned().unwrap_or(Key::Null)))
    }
}

/// Computes a function index's entries: the executor's evaluation of the index's
/// expressions, handed down to the index layer.
pub trait RowKeys: fmt::Debug + Send + Sync {
    /// The entries of `rows` of `table` (a table holding the indexed component), in
    /// order, into `out` (which holds none before).
    fn entries(&self, table: &Table, rows: Written<'_>, out: &mut Entries);
}

/// A function index's key: its expressions' values, ordered part by part as a slice is.
/// Up to two parts are kept inline, so that a comparison in the tree reads no other memory
/// (for numbers; a TEXT part points at its text): with the tuple behind a pointer every
/// comparison of a descent missed the cache, and keeping a million moving entities' cells
/// cost twice the time.
#[derive(Clone, Debug)]
pub(crate) enum Tuple {
    Inline { len: u8, keys: [Key; 2] },
    Heap(Arc<[Key]>),
}

impl Tuple {
    fn of(keys: impl IntoIterator<Item = Key>) -> Tuple {
        let keys: Vec<Key> = keys.into_iter().collect();
        match keys.len() {
            0 => Tuple::Inline {
                len: 0,
                keys: [Key::Null, Key::Null],
            },
            1 | 2 => {
                let len = keys.len() as u8;
                let mut it = keys.into_iter();
                let first = it.next().unwrap_or(Key::Null);
                let second = it.next().unwrap_or(Key::Null);
                Tuple::Inline {
                    len,
                    keys: [first, second],
                }
            }
            _ => Tuple::Heap(keys.into()),
        }
    }

    fn as_slice(&self) -> &[Key] {
        match self {
            Tuple::Inline { len, keys } => &keys[..usize::from(*len).min(2)],
            Tuple::Heap(keys) => keys,
        }
    }
}

impl PartialEq for Tuple {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Tuple {}

impl PartialOrd for Tuple {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Tuple {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
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
    /// Each tuple shared by the tree and the per-entity map.
    tree: Ordered<Tuple>,
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

    /// Computes and files the run of rows `rows` of `table`.
    pub fn file_rows(&mut self, table: &Table, rows: Range<usize>) {
        self.file_picked(table, Written::from(&rows));
    }

    /// Computes and files the rows `rows` of `table`. A row whose key is unchanged costs
    /// a comparison: no allocation, no change to the tree.
    pub fn file_picked(&mut self, table: &Table, rows: Written<'_>) {
        let all = table.entities();
        let mut entries = Entries::default();
        self.def.keys.entries(table, rows, &mut entries);
        self.evaluated += entries.status.len() as u64;
        let rows_of: Box<dyn Iterator<Item = usize>> = match rows {
            Written::Span(start, end) => Box::new(start..end),
            Written::Picked(p) => Box::new(p.iter().map(|&r| r as usize)),
        };
        for (i, row) in rows_of.enumerate() {
            let (Some(&e), Some(&status)) = (all.get(row), entries.status.get(i)) else {
                continue;
            };
            if !self.failed.is_empty() && status != Status::Failed {
                self.failed.remove(&e);
            }
            match status {
                Status::Kept => {
                    if self.tree.key_of(e).is_some_and(|k| entries.same(i, k.as_slice())) {
                        continue;
                    }
                    self.tree.insert(e, Some(entries.key(i)));
                }
                Status::Out => self.tree.insert(e, None),
                Status::Failed => {
                    self.tree.insert(e, None);
                    self.failed.insert(e);
                }
            }
        }
    }

    /// Fills an empty index from every row of `tables` (those holding the component).
    pub fn fill<'t>(&mut self, tables: impl Iterator<Item = &'t Table>) {
        let mut pairs = Vec::new();
        for table in tables {
            let mut entries = Entries::default();
            self.def
                .keys
                .entries(table, Written::Span(0, table.len()), &mut entries);
            self.evaluated += entries.status.len() as u64;
            for (i, (&e, status)) in table.entities().iter().zip(&entries.status).enumerate() {
                match status {
                    Status::Kept => pairs.push((entries.key(i), e)),
                    Status::Out => {}
                    Status::Failed => {
                        self.failed.insert(e);
                    }
                }
            }
        }
        self.tree = Ordered::from_pairs(pairs);
    }

    pub fn remove(&mut self, entity: Entity) {
        self.tree.insert(entity, None);
        self.failed.remove(&entity);
    }

    /// The entities whose expressions failed: every search's candidates.
    pub fn failed(&self) -> impl Iterator<Item = Entity> + '_ {
        self.failed.iter().copied()
    }

    /// The entities whose first `equal.len()` keys are `equal` and whose next key lies
    /// between `lo` and `hi` (no bound: any), until `out` holds `limit` (the failed ones
    /// are the caller's to add). `None` when a value is not of its expression's type (the
    /// caller walks).
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
        let short = |last: Option<Key>| Tuple::of(prefix.iter().cloned().chain(last));
        let padded = |last: Option<Key>| {
            let mut k: Vec<Key> = prefix.iter().cloned().chain(last).collect();
            k.resize(parts, Key::Null);
            Tuple::of(k)
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
        let mut all: Vec<(Entity, String)> = self
            .tree
            .pairs()
            .map(|(k, e)| (*e, format!("{:?}", k.as_slice())))
            .collect();
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
