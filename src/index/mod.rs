//! Secondary indexes: optional structures that find the entities a predicate can match
//! without walking every row. An index never changes a result — it hands the executor a
//! superset of candidate entities, and the scan's own filter decides each one.
//!
//! Three kinds, each over one component's fields:
//! - spatial (`spatial.rs`): 2D or 3D points in a uniform grid, for radius, box and
//!   k-nearest searches;
//! - ordered (`ordered.rs`): a B-tree of one field's values, for equality, IN, ranges and
//!   text prefixes;
//! - relation (`buckets.rs`): one ENTITY field's targets, each a bucket of the entities
//!   pointing at it;
//! - filter: one field's values as membership filters per table block (`USING filter`),
//!   which hold nothing here: the filters are made from each table's column when a scan
//!   first asks and dropped when the column is written (`storage/filters.rs`), so no
//!   write keeps them and a scan skips the blocks they rule out instead of reading
//!   candidates;
//! - function (`function.rs`): the values of expressions over one component's fields, a
//!   tuple per entity in a B-tree, for equality on them all or on the first ones and a
//!   range on the next; partial when only the entities a predicate is TRUE for are kept.
//!
//! `Indexes` is one of the world's observers (`storage::Observer`): the world tells it of
//! every write (spawn, attach, detach, despawn, a written column, a dropped component) and
//! copies it with itself, so a transaction's ROLLBACK restores the indexes exactly. Index
//! definitions (CREATE/DROP INDEX) live here, in `define.rs`; storage knows no index.
//! Which index serves which SQL is decided in `plan/`; the values a search needs are
//! computed in `exec/`.

mod buckets;
mod define;
mod error;
mod function;
mod ordered;
mod spatial;

use std::fmt;
use std::ops::{Bound, Range};

pub use define::{create_function_index, create_index, drop_index};
pub use error::IndexError;
pub use function::{Condition, Definition, Entries, RowKeys, Status};

/// The structures themselves, public only so that `benches/structures.rs` can measure them
/// beside the alternatives they were chosen over; not part of the supported API.
#[doc(hidden)]
pub mod structures {
    pub use super::buckets::Buckets;
    pub use super::spatial::{Grid, Point};
}

use buckets::Buckets;
use function::Function;
use ordered::{KeyRange, Ordered};
use spatial::{Grid, Point};

use crate::storage::{
    Column, ComponentId, Entity, FieldId, FieldType, Key, Observer, Table, Value, World, Written,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexKind {
    Spatial,
    Ordered,
    Relation,
    Filter,
    Function,
}

impl IndexKind {
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::Spatial => "spatial",
            IndexKind::Ordered => "ordered",
            IndexKind::Relation => "relation",
            IndexKind::Filter => "filter",
            IndexKind::Function => "function",
        }
    }
}

impl fmt::Display for IndexKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a search asks, with the values of this run.
#[derive(Clone, Debug, PartialEq)]
pub enum Probe {
    /// `distance(point, center) < radius` or `<=`.
    Within {
        center: Vec<Value>,
        radius: Value,
    },
    /// Each indexed axis between its two bounds (a missing bound: no limit that side).
    Box {
        lo: Vec<Option<Value>>,
        hi: Vec<Option<Value>>,
    },
    /// The `k` entities nearest `center` (and every entity tied with the k-th).
    Nearest {
        center: Vec<Value>,
        k: usize,
    },
    /// The field equals one of these.
    Equal(Vec<Value>),
    Range {
        lo: Bound<Value>,
        hi: Bound<Value>,
    },
    /// A TEXT field starting with this.
    Prefix(String),
    /// A function index's expressions: the first ones equal to `equal`, the next between
    /// `lo` and `hi`.
    Tuple {
        equal: Vec<Value>,
        lo: Bound<Value>,
        hi: Bound<Value>,
    },
}

/// One index: its name, what it covers, and the structure.
#[derive(Clone, Debug)]
pub struct Index {
    name: String,
    kind: IndexKind,
    component: ComponentId,
    fields: Vec<FieldId>,
    /// The first field's type: what a probe's values must have.
    key_type: FieldType,
    data: Structure,
}

#[derive(Clone, Debug)]
enum Structure {
    Grid(Grid),
    Ordered(Ordered),
    Relation(Buckets<Entity>),
    /// A filter index's filters are kept by the columns.
    Columns,
    Function(Box<Function>),
}

impl Index {
    /// An empty index; `create_index` checks the fields and fills it.
    pub(crate) fn new(
        name: String,
        kind: IndexKind,
        component: ComponentId,
        fields: Vec<FieldId>,
        key_type: FieldType,
    ) -> Index {
        let data = match kind {
            IndexKind::Spatial => Structure::Grid(Grid::new(fields.len())),
            IndexKind::Ordered => Structure::Ordered(Ordered::default()),
            IndexKind::Relation => Structure::Relation(Buckets::default()),
            IndexKind::Filter | IndexKind::Function => Structure::Columns,
        };
        Index {
            name,
            kind,
            component,
            fields,
            key_type,
            data,
        }
    }

    /// An empty function index over `component`; `create_function_index` fills it.
    pub(crate) fn function(name: String, component: ComponentId, def: Definition) -> Index {
        Index {
            name,
            kind: IndexKind::Function,
            component,
            fields: def.reads.clone(),
            key_type: def.types.first().copied().unwrap_or(FieldType::Int),
            data: Structure::Function(Box::new(Function::new(def))),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// A function index's definition.
    pub fn definition(&self) -> Option<&Definition> {
        match &self.data {
            Structure::Function(f) => Some(&f.def),
            _ => None,
        }
    }

    /// How many rows a function index has computed its expressions for since it was
    /// made (or loaded); `None` for other kinds.
    pub fn evaluated(&self) -> Option<u64> {
        match &self.data {
            Structure::Function(f) => Some(f.evaluated),
            _ => None,
        }
    }

    pub fn kind(&self) -> IndexKind {
        self.kind
    }

    pub fn component(&self) -> ComponentId {
        self.component
    }

    pub fn fields(&self) -> &[FieldId] {
        &self.fields
    }

    /// How many entities the index holds (an ENTITY field that is NULL is not held, nor
    /// a row a partial index's predicate is not TRUE for; a filter index holds none
    /// itself).
    pub fn len(&self) -> usize {
        match &self.data {
            Structure::Grid(g) => g.len(),
            Structure::Ordered(o) => o.len(),
            Structure::Relation(b) => b.len(),
            Structure::Columns => 0,
            Structure::Function(f) => f.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A line for SHOW INDEXES and EXPLAIN about the structure's shape.
    pub fn detail(&self) -> String {
        match &self.data {
            Structure::Grid(g) => format!("grid, cell size {:.3}", g.cell_size()),
            Structure::Ordered(_) => "B-tree".to_owned(),
            Structure::Relation(b) => format!("hash, {} targets", b.bucket_count()),
            Structure::Columns => {
                "per block of 16384 rows its values (up to 8) or a binary fuse filter of them".to_owned()
            }
            Structure::Function(f) => format!("B-tree, {} rows computed", f.evaluated),
        }
    }

    /// The candidates for `probe`, in no particular order (possibly repeated), or `None`
    /// when this index cannot narrow it down to at most `limit` (the caller scans
    /// instead). A search stops as soon as it knows it would find more: a B-tree range
    /// reads no further, a grid counts its cells' points before reading any.
    pub fn search(&self, probe: &Probe, limit: usize) -> Option<Vec<Entity>> {
        let mut out = Vec::new();
        // A B-tree reads one past `limit` to know there are more.
        let past = limit.saturating_add(1);
        let fits = match (&self.data, probe) {
            (Structure::Grid(g), Probe::Within { center, radius }) => {
                g.within(point(center)?, number(radius)?, limit, &mut out)
            }
            (Structure::Grid(g), Probe::Box { lo, hi }) => {
                let bound = |b: &Option<Value>, none: f64| b.as_ref().map_or(Some(none), number);
                let mut l = [f64::NEG_INFINITY; 3];
                let mut h = [f64::INFINITY; 3];
                for d in 0..self.fields.len() {
                    l[d] = bound(lo.get(d)?, f64::NEG_INFINITY)?;
                    h[d] = bound(hi.get(d)?, f64::INFINITY)?;
                }
                g.in_box(l, h, limit, &mut out)
            }
            (Structure::Grid(g), Probe::Nearest { center, k }) => {
                let reach = g.kth_distance(point(center)?, *k)?;
                g.within_finite(point(center)?, reach, limit, &mut out)
            }
            (Structure::Ordered(o), Probe::Equal(values)) => {
                // A value listed twice (`IN (5, 5)`) is looked up once.
                let mut keys = Vec::with_capacity(values.len());
                for v in values {
                    if !matches!(v, Value::Null) {
                        keys.push(self.key(v)?);
                    }
                }
                keys.sort_unstable();
                keys.dedup();
                for key in &keys {
                    o.equal(key, past, &mut out);
                }
                out.len() <= limit
            }
            (Structure::Ordered(o), Probe::Range { lo, hi }) => {
                // A NULL bound makes the comparison NULL: no row can match.
                if [lo, hi]
                    .iter()
                    .any(|b| matches!(b, Bound::Included(Value::Null) | Bound::Excluded(Value::Null)))
                {
                    return Some(out);
                }
                let key = |b: &Bound<Value>| -> Option<Bound<Key>> {
                    Some(match b {
                        Bound::Included(v) => Bound::Included(self.key(v)?),
                        Bound::Excluded(v) => Bound::Excluded(self.key(v)?),
                        Bound::Unbounded => Bound::Unbounded,
                    })
                };
                o.range(
                    &KeyRange {
                        lo: key(lo)?,
                        hi: key(hi)?,
                    },
                    past,
                    &mut out,
                );
                out.len() <= limit
            }
            (Structure::Ordered(o), Probe::Prefix(p)) => {
                o.prefix(p, past, &mut out);
                out.len() <= limit
            }
            (Structure::Function(f), probe) => {
                // The rows whose expressions failed are candidates of every search, once.
                out.extend(f.failed());
                match probe {
                    Probe::Equal(values) => {
                        let mut values = values.clone();
                        values.sort_by(crate::storage::value_order);
                        values.dedup_by(|a, b| crate::storage::value_order(a, b).is_eq());
                        for v in values {
                            f.search(&[v], &Bound::Unbounded, &Bound::Unbounded, past, &mut out)?;
                        }
                    }
                    Probe::Range { lo, hi } => f.search(&[], lo, hi, past, &mut out)?,
                    Probe::Tuple { equal, lo, hi } => f.search(equal, lo, hi, past, &mut out)?,
                    _ => return None,
                }
                out.len() <= limit
            }
            (Structure::Relation(_), Probe::Equal(values)) => {
                let mut targets = Vec::with_capacity(values.len());
                for v in values {
                    match v {
                        Value::Entity(e) => targets.push(*e),
                        Value::Null => {}
                        _ => return None,
                    }
                }
                return self.pointing_at(targets, limit);
            }
            _ => return None,
        };
        fits.then_some(out)
    }

    /// A relation's index: the entities whose field points at one of `targets` (given in
    /// any order, repeated or not), or `None` when they are more than `limit` or this is
    /// not a relation's index. What a join by the relation reads, with no value boxed.
    pub fn pointing_at(&self, mut targets: Vec<Entity>, limit: usize) -> Option<Vec<Entity>> {
        let Structure::Relation(b) = &self.data else {
            return None;
        };
        targets.sort_unstable();
        targets.dedup();
        let mut out = Vec::new();
        for e in &targets {
            let found = b.get(e);
            if out.len() + found.len() > limit {
                return None;
            }
            out.extend_from_slice(found);
        }
        Some(out)
    }

    /// Candidates for `distance(point, center) <= radius` (and `<`), appended to `out`:
    /// a spatial index's search for one row of an index join. `None` when this is not a
    /// spatial index.
    pub fn within(&self, center: [f64; 3], radius: f64, out: &mut Vec<Entity>) -> Option<()> {
        match &self.data {
            Structure::Grid(g) => {
                g.within(center, radius, usize::MAX, out);
                Some(())
            }
            _ => None,
        }
    }

    /// The key of a probe's value; `None` (so the caller scans) if its type is not the
    /// field's, which would compare differently.
    fn key(&self, v: &Value) -> Option<Key> {
        (v.field_type() == Some(self.key_type)).then(|| Key::of(v))
    }

    /// The entities pointing at `target` through a relation index.
    pub fn sources(&self, target: Entity) -> Option<&[Entity]> {
        match &self.data {
            Structure::Relation(b) => Some(b.get(&target)),
            _ => None,
        }
    }

    /// Files rows `rows` of `table` (which holds the component).
    fn file_rows(&mut self, table: &Table, rows: Range<usize>) {
        if let Structure::Function(f) = &mut self.data {
            f.file_rows(table, rows);
            return;
        }
        let entities = &table.entities()[rows.clone()];
        let columns: Vec<&Column> = self.fields.iter().filter_map(|&f| table.column(f)).collect();
        if columns.len() != self.fields.len() {
            return;
        }
        match &mut self.data {
            Structure::Grid(g) => {
                let coordinate = |c: &Column, row: usize| match c {
                    Column::Real(v) => f64::from(v[row]),
                    Column::Float(v) => v[row],
                    Column::Int(v) => v[row] as f64,
                    _ => f64::NAN,
                };
                for (&e, row) in entities.iter().zip(rows) {
                    let mut p = [0.0; 3];
                    for (d, c) in columns.iter().enumerate() {
                        p[d] = coordinate(c, row);
                    }
                    g.insert(e, p);
                }
            }
            Structure::Ordered(o) => {
                for (&e, row) in entities.iter().zip(rows) {
                    o.insert(e, key_at(columns[0], row));
                }
            }
            Structure::Relation(b) => {
                let Column::Entity(targets) = columns[0] else {
                    return;
                };
                for (&e, row) in entities.iter().zip(rows) {
                    match targets[row] {
                        Some(t) => b.insert(e, t),
                        None => b.remove(e),
                    }
                }
            }
            Structure::Columns | Structure::Function(_) => {}
        }
    }

    /// Files again the rows `rows` of `table`, whose fields were written.
    fn refile(&mut self, table: &Table, rows: Written<'_>) {
        match &mut self.data {
            Structure::Function(f) => f.file_picked(table, rows),
            _ => {
                for run in rows.runs() {
                    self.file_rows(table, run);
                }
            }
        }
    }

    fn unfile(&mut self, entity: Entity) {
        match &mut self.data {
            Structure::Grid(g) => g.remove(entity),
            Structure::Ordered(o) => o.remove(entity),
            Structure::Relation(b) => b.remove(entity),
            Structure::Columns => {}
            Structure::Function(f) => f.remove(entity),
        }
    }

    /// Files every row of `tables` holding the component, then lets the grid pick its
    /// cell size.
    fn fill<'t>(&mut self, tables: impl Iterator<Item = &'t Table>) {
        if let Structure::Function(f) = &mut self.data {
            f.fill(tables.filter(|t| t.contains(self.component)));
            return;
        }
        for table in tables {
            if table.contains(self.component) {
                self.file_rows(table, 0..table.len());
            }
        }
        if let Structure::Grid(g) = &mut self.data {
            g.retune();
        }
    }

    /// A description of every entry, comparable between two indexes holding the same
    /// entities (for consistency checks).
    fn entries(&self) -> Vec<(Entity, String)> {
        let mut all: Vec<(Entity, String)> = match &self.data {
            Structure::Grid(g) => {
                let mut v = Vec::new();
                g.within([0.0; 3], f64::INFINITY, usize::MAX, &mut v);
                v.into_iter().map(|e| (e, format!("{:?}", g.point(e)))).collect()
            }
            Structure::Ordered(o) => o.pairs().map(|(k, e)| (*e, format!("{k:?}"))).collect(),
            Structure::Relation(b) => b
                .iter()
                .flat_map(|(t, es)| es.iter().map(move |e| (*e, t.to_string())))
                .collect(),
            Structure::Columns => Vec::new(),
            Structure::Function(f) => f.entries(),
        };
        all.sort_by_key(|(e, _)| *e);
        all
    }
}

/// A numeric value as the grid's coordinate (and the index join's reach).
pub(crate) fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Real(f) => Some(f64::from(*f)),
        _ => None,
    }
}

fn point(values: &[Value]) -> Option<Point> {
    let mut p = [0.0; 3];
    for (d, v) in values.iter().enumerate().take(3) {
        p[d] = number(v)?;
    }
    Some(p)
}

fn key_at(column: &Column, row: usize) -> Option<Key> {
    Some(match column {
        Column::Int(v) => Key::Int(v[row]),
        Column::Float(v) => Key::float(v[row]),
        Column::Real(v) => Key::float(f64::from(v[row])),
        Column::Bool(v) => Key::Bool(v[row]),
        Column::Text(v) => Key::Text(v[row].as_str().into()),
        Column::Entity(_) => return None,
    })
}

/// What CREATE INDEX asks for: `SPATIAL`, `USING filter`, or neither (an ordered or a
/// relation index, by the field's type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexMethod {
    /// `CREATE INDEX`: an ordered index, or a relation index over an ENTITY field.
    Value,
    /// `CREATE SPATIAL INDEX`: a grid of 2 or 3 numeric fields.
    Spatial,
    /// `CREATE INDEX … USING filter`: membership filters of one field, per table block.
    Filter,
}

/// The kind of index `CREATE [SPATIAL] INDEX … [USING filter]` makes over fields of these
/// types.
pub fn kind_for(method: IndexMethod, types: &[FieldType]) -> IndexKind {
    match (method, types) {
        (IndexMethod::Spatial, _) => IndexKind::Spatial,
        (IndexMethod::Filter, _) => IndexKind::Filter,
        (IndexMethod::Value, [FieldType::Entity]) => IndexKind::Relation,
        (IndexMethod::Value, _) => IndexKind::Ordered,
    }
}

/// Every index of a world: the world's `Indexes` observer. Creating or dropping an index
/// changes it through `World::observe`/`observer_mut`, which give the world a new schema
/// stamp, so plans that chose (or could choose) an index are made again.
#[derive(Clone, Debug, Default)]
pub struct Indexes {
    list: Vec<Index>,
}

/// What a world without indexes has.
static NONE: Indexes = Indexes { list: Vec::new() };

impl Indexes {
    /// The indexes of `world` (none until the first is created).
    pub fn of(world: &World) -> &Indexes {
        world.observer::<Indexes>().unwrap_or(&NONE)
    }

    /// Every index, in the order they were created.
    pub fn iter(&self) -> impl Iterator<Item = &Index> {
        self.list.iter()
    }

    /// The number of indexes.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when there is no index.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// An index by name, ignoring ASCII case as SQL names do.
    pub fn get(&self, name: &str) -> Option<&Index> {
        self.list.iter().find(|i| i.name.eq_ignore_ascii_case(name))
    }

    /// Adds an index already filled; the name and coverage were checked by the caller.
    fn push(&mut self, index: Index) {
        self.list.push(index);
    }

    fn remove(&mut self, name: &str) -> Option<Index> {
        let i = self.list.iter().position(|i| i.name.eq_ignore_ascii_case(name))?;
        Some(self.list.remove(i))
    }

    /// Checks that every index of `world` holds exactly what its tables do: `Err` names
    /// the first that differs. For tests; a difference is a bug.
    pub fn check(world: &World) -> Result<(), String> {
        let indexes = Indexes::of(world);
        for index in &indexes.list {
            let mut fresh = match index.definition() {
                Some(def) => Index::function(index.name.clone(), index.component, def.clone()),
                None => Index::new(
                    index.name.clone(),
                    index.kind,
                    index.component,
                    index.fields.clone(),
                    index.key_type,
                ),
            };
            fresh.fill(world.all_tables());
            if fresh.entries() != index.entries() {
                return Err(format!(
                    "index {} holds {} entries that differ from the tables' {}",
                    index.name,
                    index.len(),
                    fresh.len()
                ));
            }
        }
        Ok(())
    }
}

/// The world's hooks: every write keeps each index exact.
impl Observer for Indexes {
    fn spawned(&mut self, table: &Table, rows: Range<usize>) {
        for index in &mut self.list {
            if table.contains(index.component) {
                index.file_rows(table, rows.clone());
            }
        }
    }

    fn attached(&mut self, table: &Table, rows: Range<usize>, component: ComponentId) {
        for index in self.list.iter_mut().filter(|i| i.component == component) {
            index.file_rows(table, rows.clone());
        }
    }

    fn detached(&mut self, entity: Entity, component: ComponentId) {
        for index in self.list.iter_mut().filter(|i| i.component == component) {
            index.unfile(entity);
        }
    }

    fn despawning(&mut self, table: &Table, row: usize) {
        let Some(&entity) = table.entities().get(row) else {
            return;
        };
        for index in &mut self.list {
            if table.contains(index.component) {
                index.unfile(entity);
            }
        }
    }

    fn written(&mut self, table: &Table, rows: Written<'_>, fields: &[FieldId]) {
        for index in &mut self.list {
            // A function index reading no field (`id % 16`) has nothing to recompute.
            if index.fields.iter().any(|f| fields.contains(f)) && table.contains(index.component) {
                index.refile(table, rows);
            }
        }
    }

    fn component_dropped(&mut self, component: ComponentId) {
        self.list.retain(|i| i.component != component);
    }

    /// A filter index watches nothing: a write drops the column's filters itself.
    fn watches(&self, field: FieldId) -> bool {
        self.list
            .iter()
            .any(|i| i.kind != IndexKind::Filter && i.fields.contains(&field))
    }

    fn clone_box(&self) -> Box<dyn Observer> {
        Box::new(self.clone())
    }
}
