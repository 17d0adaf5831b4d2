//! The bind/plan layer: ecsql's syntax tree in, a plan the executor can run out.
//!
//! `plan` is the way in: binding (`bind/`) resolves every name against the catalog
//! (components, fields, aliases, parameters), checks types (`types.rs`) and makes casts
//! explicit (`expr.rs`); then the access pass (`access.rs`, a visitor of `visit.rs`)
//! chooses how each scan reads its rows (id lookups, indexes, k-nearest). The plan says which
//! component sets each scan needs and excludes (`has()`/`NOT has()` in WHERE are folded
//! in here), which relations are joined how, and what is computed above the scan. Which
//! archetype tables match is decided by the executor against the live catalog, through the
//! statement's table cache, before any row is read. Nothing here reads rows.

mod access;
mod bind;
mod cache;
mod error;
mod expr;
mod footprint;
mod function_access;
mod index_join;
mod join;
mod lift;
mod normal;
mod params;
mod probe;
mod types;
mod upkeep;
mod value_set;
mod visit;
mod window;

pub use crate::vector::{CmpOp, DataType, cast_value};
pub use access::{IndexLookup, ProbePlan, ProbeValue, SkipCondition, SkipTest, like_prefix};
#[cfg(feature = "server")]
pub(crate) use bind::bare_names;
pub use bind::{bind, bind_described};
pub use cache::{PlanSlot, Planned, Tracking, planned};
pub use error::{PlanError, PlanErrorKind};
pub use expr::{ArithOp, BoundExpr, BoundKind, Correlated, Ran};
pub use footprint::{FieldSet, Footprint, Moves, Part, Tables, Touch};
pub use join::{JoinCondition, JoinPlan, SpatialJoin, id_equality};
pub use lift::{Lifted, NotLifted, lift};
pub use params::{ParamCast, ParamValues};
pub use upkeep::{Upkeep, contributions, with_entity_column};
pub use value_set::ValueSet;
pub use visit::select_exprs;
pub use window::{FrameEdge, FramePlan, FrameUnits, WindowCall, WindowFunc, WindowPlan, WindowSort};

/// Plans one statement: binds it against the catalog of `world`, then chooses each scan's
/// access path. Also says whether the plan may run again with other parameter values of
/// the same types, and which casts those must pass (see `bind::bind_reusable`).
pub fn plan(
    statement: &crate::parse::Statement,
    world: &World,
    params: &ParamValues,
) -> Result<(Box<Plan>, Option<Vec<ParamCast>>), PlanError> {
    let (mut plan, reuse) = bind::bind_reusable(statement, world, params)?;
    // A plan that matched a function index through a parameter's value holds for it alone.
    let reuse = match access::choose_access(world, &mut plan, bind::explains(statement)) {
        true => None,
        false => reuse,
    };
    Ok((plan, reuse))
}

/// `plan`, for EXPLAIN to print although `statement` is not an EXPLAIN (`EXPLAIN TICK`
/// prints the plans of the systems' statements): with the texts of its parts.
pub fn plan_to_explain(statement: &crate::parse::Statement, world: &World) -> Result<Plan, PlanError> {
    let (mut plan, _) = bind::bind_with(statement, world, &ParamValues::default(), true)?;
    access::choose_access(world, &mut plan, true);
    Ok(*plan)
}

use crate::storage::{
    ComponentId, Entity, EventId, FieldDef, FieldId, FieldType, StorageKind, TableId, World,
};

/// The most rows a series (`range`, `generate_series`) may have: it is held whole while
/// the statement runs.
pub const MAX_SERIES: i64 = 1 << 31;

/// One result column.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputColumn {
    /// The column's name: its alias, or the expression as written.
    pub name: String,
    /// The type of the column's values.
    pub ty: DataType,
}

impl OutputColumn {
    /// `id`, entities' ids: what SPAWN answers, and the ids a write finds.
    pub(crate) fn id() -> OutputColumn {
        OutputColumn {
            name: "id".into(),
            ty: DataType::Entity,
        }
    }
}

#[derive(Debug)]
pub struct QueryPlan {
    pub body: SetPlan,
    pub order_by: Vec<SortKey>,
    pub limit: Option<usize>,
    pub offset: usize,
    /// The visible columns; the body may produce more (sort keys) after them.
    pub columns: std::sync::Arc<[OutputColumn]>,
    /// Filled by the executor on the plan's first run, for the later ones: when the query
    /// is a point read (one entity by its id, its fields as they are), what each run reads
    /// (`exec/query.rs`, `point_query`).
    pub point: std::sync::OnceLock<Option<Box<PointRead>>>,
}

/// A query its first run found a point read (`exec/query.rs`, `point_query`): one entity
/// named by its id, its fields and id read as they are, nothing filtered, computed or
/// sorted around them. What each later run needs, taken out of the plan once.
#[derive(Debug)]
pub struct PointRead {
    /// The entity's id: a constant or a parameter (never an outer query's value).
    pub id: IdKey,
    /// The scan's table list, as `EntityScan` says it: its one table if it names one,
    /// else any holding `required` and none of `excluded`.
    pub only: Option<TableId>,
    /// This list and the three below are held in place up to a few entries: a text read
    /// once builds its point read for one run, with one allocation (the box) where the
    /// lists took one each.
    pub required: smallvec::SmallVec<[ComponentId; 4]>,
    pub excluded: smallvec::SmallVec<[ComponentId; 2]>,
    /// The scan column each output reads: `Id` or `Field`.
    pub columns: smallvec::SmallVec<[ScanColumn; 4]>,
    /// The outputs' types (an empty result's vectors').
    pub types: smallvec::SmallVec<[DataType; 8]>,
    /// The table the last read found its entity in (its id + 1, in the high 32 bits; 0
    /// before the first), which the scan reads, and in the low 32 bits the column there
    /// of the output when it is one field (else `u32::MAX`): a table's id, components and
    /// columns stay put while the plan holds (its key names the schema stamp and the
    /// rollbacks), so a read from the same table checks and looks up neither again. One
    /// word, so a read always sees a table and its column together.
    pub last: std::sync::atomic::AtomicU64,
}

#[derive(Debug)]
pub enum SetPlan {
    Select(Box<SelectPlan>),
    /// Rows of constant expressions, each already cast to its column's type.
    Values(Vec<Vec<BoundExpr>>),
    /// UNION, EXCEPT or INTERSECT of two bodies whose columns are already of one type
    /// each (the executor casts each side to `QueryPlan::columns`' types).
    SetOp {
        op: crate::parse::SetOp,
        left: Box<SetPlan>,
        right: Box<SetPlan>,
        all: bool,
    },
    /// WITH RECURSIVE: `anchor`'s rows, then `step`'s run over the rows the round before
    /// added (its `WorkTable` relation of number `work` reads them), until a round adds
    /// none. Without `all`, a row found before is not added again. The columns have the
    /// anchor's types (the binder checked the step's against them).
    Recursive {
        anchor: Box<SetPlan>,
        step: Box<SetPlan>,
        all: bool,
        work: usize,
        /// Where the query is named, which its errors point at.
        at: crate::location::Location,
    },
}

#[derive(Clone, Copy, Debug)]
pub struct SortKey {
    pub column: usize,
    pub desc: bool,
    pub nulls_first: bool,
}

#[derive(Debug)]
pub struct SelectPlan {
    pub relations: Vec<Relation>,
    /// Which conditions join the relations (see `join.rs`).
    pub joins: JoinPlan,
    /// Slots in the batch the expressions read.
    pub width: usize,
    /// What remains of WHERE after folding `has()` into the scans, pushing single-
    /// relation conditions down and giving the joins theirs: applied to the joined rows.
    pub filter: Option<BoundExpr>,
    pub output: Output,
    pub distinct: bool,
    /// Text of the parts, for EXPLAIN.
    pub explain: SelectText,
    /// Window functions, computed over the rows `output` makes (`exec/window/`).
    pub window: Option<Box<WindowPlan>>,
}

#[derive(Debug, Default)]
pub struct SelectText {
    pub filter: Option<String>,
    pub outputs: Vec<String>,
    pub group_by: Vec<String>,
    pub having: Option<String>,
    /// Each AND-ed part of WHERE and of every ON, as written, with where it starts: the
    /// place its bound condition keeps, by which EXPLAIN names a join's conditions.
    pub conditions: Vec<(crate::location::Location, String)>,
}

#[derive(Debug)]
pub enum Output {
    /// One output row per input row.
    Rows(Vec<BoundExpr>),
    /// One output row per group. `outputs` and `having` read a batch of the key values
    /// followed by the aggregate results.
    Aggregate {
        keys: Vec<BoundExpr>,
        aggs: Vec<AggCall>,
        having: Option<BoundExpr>,
        outputs: Vec<BoundExpr>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggFunc {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    /// `bool_and`: whether every value is true.
    BoolAnd,
    /// `bool_or`: whether some value is true.
    BoolOr,
    /// `var_samp`/`variance`, `var_pop`, `stddev_samp`/`stddev`, `stddev_pop`.
    Spread {
        sample: bool,
        root: bool,
    },
    /// `string_agg(x, separator)`, `group_concat(x [, separator])`: the texts joined.
    StringAgg,
}

#[derive(Debug)]
pub struct AggCall {
    pub func: AggFunc,
    pub arg: Option<BoundExpr>,
    pub distinct: bool,
    pub ty: DataType,
    /// `StringAgg`'s separator (a constant); empty for the others.
    pub separator: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    /// The first relation, or a comma/CROSS JOIN.
    Cross,
    Inner,
    Left,
}

#[derive(Debug)]
pub struct Relation {
    pub source: RelationSource,
    pub join: JoinKind,
    pub on: Option<BoundExpr>,
    /// Conditions of WHERE that read only this relation, applied while scanning it.
    pub filter: Option<BoundExpr>,
    /// For EXPLAIN: how the relation was written (empty in a plan not bound for EXPLAIN).
    pub label: String,
}

/// Most relations are entity scans, kept inline: a box would cost every scan an
/// allocation, and a plan holds a few relations at most.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum RelationSource {
    Entities(EntityScan),
    /// `range` / `generate_series`: integers `start..=end`, at most `MAX_SERIES` of them
    /// (the binder refuses longer ones).
    Series {
        start: i64,
        end: i64,
        slot: usize,
    },
    /// `descendants(root, C.field)` / `ancestors(e, C.field)`: the entities reached by
    /// following an ENTITY field transitively, with their depth (1: a child or the
    /// parent).
    Traversal(Traversal),
    /// A subquery in FROM; its columns land in `slots`.
    Query {
        plan: Box<QueryPlan>,
        slots: Vec<usize>,
    },
    /// The rows of an event type: those the reader has not seen (a system, a prepared
    /// statement), or all it keeps (any other statement).
    Events(EventScan),
    /// In the recursive part of WITH RECURSIVE, the query itself: the rows the round
    /// before added (`SetPlan::Recursive`, whose `work` this is); its columns land in
    /// `slots`.
    WorkTable {
        work: usize,
        slots: Vec<usize>,
    },
    /// A view of PostgreSQL's catalog (`pg_catalog.pg_class`): its rows, made from the
    /// world's catalog when the plan was bound (a plan is bound again when the schema
    /// changes); its columns land in `slots`.
    Catalog {
        view: &'static crate::catalog_views::View,
        rows: std::sync::Arc<crate::catalog_views::ViewRows>,
        slots: Vec<usize>,
    },
    /// `removed(C)`: the ids that lost `component` since the reader's last run (every one
    /// still logged, for a statement that is no reader or a reader's first run), one row
    /// per loss, oldest first.
    Removed {
        component: ComponentId,
        slot: usize,
    },
}

/// A read of an event type's rows.
#[derive(Clone, Debug, PartialEq)]
pub struct EventScan {
    pub event: EventId,
    /// For each field read: its slot and the field's position.
    pub columns: Vec<(usize, usize)>,
}

#[derive(Debug)]
pub struct Traversal {
    pub direction: TraversalDirection,
    /// Where the traversal starts; NULL reaches nothing.
    pub start: Option<Entity>,
    /// Where it starts when that is known only as the statement runs: an expression of no
    /// row (a subquery, a function), evaluated once; it overrides `start`.
    pub start_expr: Option<Box<BoundExpr>>,
    /// The relation: an ENTITY field pointing from a child to its parent.
    pub field: FieldId,
    pub id_slot: usize,
    pub depth_slot: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraversalDirection {
    /// Entities whose field points at the start, then at those, …
    Descendants,
    /// The start's field's target, then its target's, …
    Ancestors,
}

/// A scan's components: a few at most, kept inline (no allocation for up to four).
pub type ComponentList = smallvec::SmallVec<[ComponentId; 4]>;

// A scan holds three of these: no larger than a `Vec` (smallvec's `union` feature).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<ComponentList>() <= 24);

/// The ids a scan looks up: most lookups name one, kept inline.
pub type IdList = smallvec::SmallVec<[IdKey; 1]>;

/// A scan of every archetype table holding `required` and none of `excluded`: the rows
/// are entities, and all the dense components named for one entity are read from one
/// table. Sparse components are not in those lists but in `sparse`: each row's entity is
/// looked up in their tables.
#[derive(Clone, Debug, PartialEq)]
pub struct EntityScan {
    pub required: ComponentList,
    pub optional: ComponentList,
    pub excluded: ComponentList,
    /// The sparse components the scan requires, excludes or reads optionally (moved out
    /// of the lists above once binding is done, `access::split_sparse`).
    pub sparse: Vec<SparseMember>,
    /// Whether some column reads a sparse component (a field, `has()`, `changed()`…),
    /// which each batch then looks up by entity; decided with `sparse`.
    pub reads_sparse: bool,
    /// An archetype table named directly (`FROM arch_…`).
    pub only: Option<TableId>,
    /// From `id = e` or `id IN (e, …)` in WHERE: only these entities are read, each found
    /// through the entity index instead of a walk over the tables (WHERE still checks
    /// them).
    pub ids: Option<IdList>,
    /// An index search giving the candidate entities, when no `ids` are given and an
    /// index serves a condition (WHERE still checks every candidate).
    pub index: Option<Box<IndexLookup>>,
    /// For EXPLAIN: why indexes on the scanned components were not used. Written only
    /// in a plan for EXPLAIN (`access::choose_access`); empty in every other.
    pub index_notes: Vec<String>,
    /// Conditions every row must pass that compare a field with a constant or a
    /// parameter: a walk skips the tables, and the blocks of rows, whose zone maps say
    /// no value of the field passes (WHERE still checks every row read).
    pub skips: Vec<SkipCondition>,
    /// A `changed()` or `added()` that WHERE requires of every row: the walk skips the
    /// tables, and the blocks of rows, whose change marks say nothing changed since the
    /// reader's last run (WHERE still checks every row read).
    pub changes: Option<ScanColumn>,
    /// What each slot the scan fills reads.
    pub columns: ScanColumns,
}

/// A scan's slots and what each reads: held in place up to four (a point read's, a small
/// UPDATE's), so that a text planned once makes no list for them.
pub type ScanColumns = smallvec::SmallVec<[(usize, ScanColumn); 4]>;

/// A sparse component in a scan: its table, and whether each row's entity must have it
/// (`Some(true)`), must not (`Some(false)`) or may (`None`: its fields are NULL where it
/// lacks it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparseMember {
    pub component: ComponentId,
    pub table: TableId,
    pub must: Option<bool>,
}

/// One id a scan looks up: a constant, or a parameter read when the statement runs.
#[derive(Clone, Debug, PartialEq)]
pub enum IdKey {
    Entity(Entity),
    Param(crate::parse::Param),
    /// A correlated subquery's outer value (`BoundKind::Outer`), read as it runs.
    Outer(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanColumn {
    Id,
    Field(FieldId),
    /// `has(C)`: a constant per table.
    Has(ComponentId),
    /// `changed(C.field)`: the field got a different value since the reader's last run.
    Changed(FieldId),
    /// `changed(C)`: some field of C did (for a tag: it was added).
    ChangedAny(ComponentId),
    /// `added(C)`: C was attached, or the entity spawned with it, since then.
    Added(ComponentId),
    /// The table's hash name (the `entities` pseudo-table's second column).
    Archetype,
}

impl ScanColumn {
    /// The component the column reads (a field of it, whether the entity has it, its
    /// changes); `None` for the id and the archetype.
    pub fn component(self) -> Option<ComponentId> {
        match self {
            ScanColumn::Field(f) | ScanColumn::Changed(f) => Some(f.component()),
            ScanColumn::Has(c) | ScanColumn::ChangedAny(c) | ScanColumn::Added(c) => Some(c),
            ScanColumn::Id | ScanColumn::Archetype => None,
        }
    }

    /// The component whose changes `changed()` / `added()` asks about; `None` for the
    /// other columns.
    pub fn asks_changes_of(self) -> Option<ComponentId> {
        match self {
            ScanColumn::Changed(f) => Some(f.component()),
            ScanColumn::ChangedAny(c) | ScanColumn::Added(c) => Some(c),
            _ => None,
        }
    }
}

/// A function index's expressions bound over its component: what the executor evaluates
/// for each row the index files (`exec/index_keys.rs`).
#[derive(Debug)]
pub struct IndexKeys {
    pub component: ComponentId,
    pub exprs: Vec<BoundExpr>,
    /// A partial index's predicate (BOOL).
    pub predicate: Option<BoundExpr>,
    /// What each slot reads (a field of the component, or the id).
    pub columns: Vec<(usize, ScanColumn)>,
    /// The number of slots.
    pub width: usize,
}

/// A function index as CREATE INDEX defines it: its expressions, for the executor, and
/// what the index layer keeps of them (`index::Definition` but the evaluation).
#[derive(Debug)]
pub struct FunctionIndexPlan {
    pub keys: std::sync::Arc<IndexKeys>,
    pub exprs: Vec<String>,
    pub predicate: Option<String>,
    pub shapes: Vec<String>,
    pub types: Vec<crate::storage::FieldType>,
    pub conditions: Vec<crate::index::Condition>,
    pub reads: Vec<FieldId>,
}

#[derive(Debug)]
pub enum Plan {
    CreateComponent {
        name: String,
        fields: Vec<FieldDef>,
        storage: StorageKind,
        /// Does nothing when a component of that name exists.
        if_not_exists: bool,
    },
    DropComponent {
        component: Option<ComponentId>,
        name: String,
    },
    ShowComponents,
    ShowArchetypes,
    ShowIndexes,
    CreateIndex {
        name: Option<String>,
        method: crate::index::IndexMethod,
        if_not_exists: bool,
        fields: Vec<FieldId>,
        /// `Component (field, …)`, for EXPLAIN.
        label: String,
    },
    /// `CREATE INDEX ON C (expr, …) [WHERE predicate]`.
    CreateFunctionIndex {
        name: Option<String>,
        if_not_exists: bool,
        index: FunctionIndexPlan,
        /// `Component (expr, …) [WHERE …]`, for EXPLAIN.
        label: String,
    },
    DropIndex {
        name: String,
        if_exists: bool,
    },
    Describe(ComponentId),
    DescribeEvent(EventId),
    Query(QueryPlan),
    Spawn(SpawnPlan),
    Insert(InsertPlan),
    /// Detach `component` from the entities `ids` selects.
    Delete {
        component: ComponentId,
        ids: QueryPlan,
    },
    Despawn {
        ids: QueryPlan,
    },
    Update(Box<UpdatePlan>),
    /// A write (SPAWN, INSERT, UPDATE, DELETE, DESPAWN) that returns `query`'s rows for
    /// the entities it wrote: read after the write, or before it for DELETE and DESPAWN.
    /// `query` has one relation, an entity scan, read for those entities only.
    Returning {
        write: Box<Plan>,
        query: Box<QueryPlan>,
    },
    CreateEvent {
        name: String,
        fields: Vec<FieldDef>,
        keep: u64,
    },
    DropEvent {
        event: Option<EventId>,
    },
    /// `INSERT INTO Event …`: rows appended to an event type's queue.
    Emit(EmitPlan),
    /// `COPY (query) TO 'file'`: the query's rows written to a file.
    CopyTo(CopyToPlan),
    /// `COPY C FROM 'file'`: a file's rows as components `C`.
    CopyFrom(CopyFromPlan),
    Explain(Box<Plan>),
    /// `SUBSCRIBE query` (a `Plan::Query`): explained, never run as a statement (a
    /// subscription is opened by `Connection::subscribe`).
    Subscribe(Box<Plan>),
    /// EXPLAIN ANALYZE: the plan run, then printed with what each part did (`timing`:
    /// with times). A write's changes are undone after, unless `keep`.
    ExplainAnalyze {
        plan: Box<Plan>,
        timing: bool,
        keep: bool,
    },
    Begin,
    Commit,
    Rollback,
    /// `PRAGMA name [= value]` (a bare `PRAGMA`: no name), run by the connection (its
    /// settings are not the world's).
    Pragma {
        name: Option<String>,
        value: Option<String>,
    },
}

/// One entity per row of `rows`, whose columns are every field of every component in
/// order (`components` says how many columns each takes).
#[derive(Debug)]
pub struct SpawnPlan {
    /// Up to two components, each's field types (up to 16), and the places of up to 4
    /// values are held in place: a text spawning one entity within those bounds (`SPAWN
    /// Position(x => 1, y => 2, z => 3)`), planned for one run, makes no list for any of
    /// them; past them, a list is made.
    pub components: smallvec::SmallVec<[(ComponentId, smallvec::SmallVec<[FieldType; 16]>); 2]>,
    /// One column per field of each component, then the id column of `SPAWN AT`.
    pub rows: QueryPlan,
    /// Where each column's value is written (a field's default: the statement), so that
    /// a value its field cannot hold is pointed at.
    pub value_at: smallvec::SmallVec<[crate::location::Location; 4]>,
    pub id_column: Option<usize>,
}

#[derive(Debug)]
pub struct InsertPlan {
    pub component: ComponentId,
    pub fields: Vec<FieldType>,
    /// The rows: when `id_column` is set, that column names the entity.
    pub rows: QueryPlan,
    pub id_column: Option<usize>,
    /// For each field, the row column that gives it, or `None` for its default.
    pub field_columns: Vec<Option<usize>>,
    /// Where each row column is named: its place in the column list, or, without one,
    /// the component's name.
    pub column_at: Vec<crate::location::Location>,
    pub on_conflict: ConflictPlan,
}

#[derive(Debug)]
pub struct CopyToPlan {
    pub query: QueryPlan,
    /// The file's name; `STDOUT` when `client`.
    pub file: String,
    /// `TO STDOUT`: the rows go to the statement's caller (a server's client) as lines
    /// of the format, not to a file.
    pub client: bool,
    pub format: crate::transfer::Format,
    /// The file's column names: each result column's name, without its qualifier
    /// (`x` for `Position.x`) unless two would then be the same.
    pub names: Vec<String>,
}

#[derive(Debug)]
pub struct CopyFromPlan {
    pub component: ComponentId,
    /// The file's name; `STDIN` when `client`.
    pub file: String,
    /// `FROM STDIN`: the rows are what the statement's caller (a server's client) sent
    /// with it, not a file.
    pub client: bool,
    pub format: crate::transfer::Format,
    /// The columns the statement names, in the file's order; `None`: the file's header
    /// names them (or, without one, the component's fields in order).
    pub columns: Option<Vec<CopyTarget>>,
}

/// What a file's column fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyTarget {
    /// The entity: an existing one the row's component is attached to.
    Id,
    /// The component's field at this position.
    Field(usize),
}

#[derive(Debug)]
pub struct EmitPlan {
    pub event: EventId,
    pub fields: Vec<FieldType>,
    pub rows: QueryPlan,
    /// For each field, the row column that gives it, or `None` for its default.
    pub field_columns: Vec<Option<usize>>,
    /// Where each row column is named: its place in the column list, or, without one,
    /// where the rows begin.
    pub column_at: Vec<crate::location::Location>,
}

#[derive(Debug)]
pub enum ConflictPlan {
    Fail,
    DoNothing,
    Replace,
    /// Expressions over a batch of the current fields then the proposed (`excluded`) ones.
    DoUpdate(Vec<(usize, BoundExpr)>),
}

#[derive(Debug)]
pub struct UpdatePlan {
    pub target: ComponentId,
    pub select: SelectPlan,
    /// The slot holding the target entity's id, when the UPDATE joins other entities.
    pub id_slot: Option<usize>,
    pub assignments: Vec<Assignment>,
    /// Neither the WHERE nor any new value can fail on any row, nor be NULL where the
    /// field may not: the executor may write each morsel as soon as it is computed.
    pub cannot_fail: bool,
    /// RETURNING follows: the executor notes each entity written, so the writes take the
    /// way that names them (never `cannot_fail`'s direct ones).
    pub returning: bool,
    /// Filled by the executor on the plan's first run, for the later ones: whether every
    /// assignment is a compound one, `f = f op e` (`exec/compound.rs`), and then each
    /// one's operator and whether `e` is its right operand.
    pub compound: std::sync::OnceLock<CompoundShape>,
    /// Filled by the executor on the plan's first run that asks, for the later ones:
    /// whether the WHERE and every new value read the same on any thread, in any batch,
    /// any number of times (no `random()`, no subquery; `exec/parallel.rs`'s `pure`).
    pub pure: std::sync::OnceLock<bool>,
    /// Filled by the executor on the plan's first run, for the later ones: what a run
    /// decides from the plan alone (`UpdateRoute`).
    pub route: std::sync::OnceLock<UpdateRoute>,
    /// Set by the executor at each run of an UPDATE of one entity scan: how many rows its
    /// scan read (`usize::MAX` before the first). A short one is not tried beside others
    /// (`exec::short_for_beside`).
    pub scanned: std::sync::atomic::AtomicUsize,
}

/// Each assignment's compound form, when every one of an UPDATE's is `f = f op e`
/// (`UpdatePlan::compound`).
pub type CompoundShape = Option<Box<[CompoundPart]>>;

/// One assignment `f = f op e` of a compound UPDATE, as found on the plan's first run
/// (`exec/compound.rs`): each run reads it rather than looking through `e` again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompoundPart {
    pub op: ArithOp,
    /// Whether `e` is the right operand (`f op e`; else `e op f`, for `+` and `*`).
    pub right: bool,
    pub form: CompoundForm,
}

/// How a compound assignment's `e` is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompoundForm {
    /// The same for every row (`2`, `?1`, `delta_time()`): one value for the statement.
    Same,
    /// A field the scan reads (`vx`): its column, as it lies.
    Field(FieldId),
    /// A field times a value the same for every row (`vx * delta_time()`), both of `e`'s
    /// type: the field's column and the value. `scale_right`: the value is the right
    /// operand of the product.
    Scaled { field: FieldId, scale_right: bool },
    /// Anything else: computed over a batch of rows.
    Rows,
}

/// What every run of an UPDATE decides from its plan alone (`exec/write/update`), kept
/// in a few bytes: a run reads these rather than the parts of the plan and its scan they
/// come from, which lie in as many places in memory (a tick of many systems finds each
/// system's plan out of cache, and pays for each place it reads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateRoute {
    /// It reads one entity scan and joins nothing.
    pub single: bool,
    /// Its writes cannot fail, and its one scan reads archetype fields and ids only,
    /// none optional: where it reads archetype tables, it may read them as batches
    /// directly.
    pub plain: bool,
    /// Its one scan walks whole tables (no id list, index, skipped blocks or sparse
    /// member), unless a reader's `changed()` narrows it.
    pub whole: bool,
    /// Its one scan skips what has not changed since a reader's last run.
    pub changes: bool,
    /// It has a WHERE.
    pub filter: bool,
    /// Every assignment is compound (`CompoundShape`), and every `e` the same for every
    /// row.
    pub all_same: bool,
    /// Its one scan names one entity by its id (a constant or a parameter), with nothing
    /// else to check of it: a run finds that entity's row and writes it alone.
    pub point: bool,
    /// The batch slots its WHERE and new values read, a bit each (`u64::MAX`: every slot,
    /// when one they read is the 65th or later): the scan's other columns (the id an id
    /// lookup answered) are not read into its batches.
    pub slots: u64,
}

impl UpdatePlan {
    /// True when neither the WHERE clause nor any new value can fail on any row, and every
    /// value already has its field's type and cannot be NULL where the field may not be
    /// (its one scan's required components make their fields never NULL). Decided once,
    /// when the UPDATE is bound.
    fn writes_cannot_fail(&self) -> bool {
        let scan = match self.select.relations.as_slice() {
            [r] if r.on.is_none() && r.filter.is_none() => match &r.source {
                RelationSource::Entities(scan) => scan,
                _ => return false,
            },
            _ => return false,
        };
        let slot_never_null = |slot: usize| {
            scan.columns.iter().any(|&(s, column)| {
                s == slot
                    && match column {
                        ScanColumn::Field(f) => scan.required.contains(&f.component()),
                        ScanColumn::Id
                        | ScanColumn::Has(_)
                        | ScanColumn::Changed(_)
                        | ScanColumn::ChangedAny(_)
                        | ScanColumn::Added(_)
                        | ScanColumn::Archetype => true,
                    }
            })
        };
        self.select
            .filter
            .as_ref()
            .is_none_or(BoundExpr::cannot_fail_after_first_batch)
            && self.assignments.iter().all(|a| {
                a.value.cannot_fail_after_first_batch()
                    && a.value.ty == DataType::from(a.ty)
                    && (a.ty == FieldType::Entity || a.value.never_null(&slot_never_null))
            })
    }

    /// Sets `cannot_fail` from the bound plan.
    pub(crate) fn decide_direct(&mut self) {
        self.cannot_fail = !self.returning && self.writes_cannot_fail();
    }
}

#[derive(Debug)]
pub struct Assignment {
    pub field: FieldId,
    pub ty: FieldType,
    pub value: BoundExpr,
    pub name: String,
}
