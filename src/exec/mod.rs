//! The executor: runs a `Plan` against a `World`.
//!
//! Reads go table by table (a point read, one entity by its id, reads its row straight
//! from its table: `query::point_query`): for each archetype table the plan's scans
//! match, a `Batch` of borrowed column slices is built, the filter evaluated into a selection and the outputs
//! computed a vector at a time (`query.rs`). Joins with ON, GROUP BY, ORDER BY and DISTINCT
//! work above the scan on owned vectors. Writes (`write/`) compute everything they will
//! write first and only then touch the world, so a failing statement changes nothing;
//! UPDATE writes its vectors straight into the archetype columns.

mod aggregate;
mod budget;
mod catalog;
mod compound;
mod copy;
mod error;
mod eval;
mod explain;
mod index_join;
mod index_keys;
mod join;
mod like;
mod parallel;
mod profile;
mod query;
mod reader;
mod scan;
mod sort;
mod traverse;
mod window;
mod write;

use std::cell::{Cell, RefCell};

pub use crate::func::Clock;
pub use crate::vector::{ColumnSlice, Vector};
pub use budget::{Budget, DEFAULT_RECURSION_LIMIT, Split, cores};
pub use error::{ExecError, ExecErrorKind};
pub use index_keys::create_function_index;
pub use parallel::{DEFAULT_MIN_ROWS, run as in_parallel};

/// The output rows of `query`'s groups (it aggregates: `Output::Aggregate`), each given
/// as its key values followed by its aggregates' results; `None` for a group HAVING
/// drops. What a subscription kept per group makes of the groups a commit changed.
pub fn group_outputs(
    query: &crate::plan::QueryPlan,
    groups: &[Vec<crate::storage::Value>],
    world: &World,
    run: Run<'_>,
) -> Result<Vec<Option<Vec<crate::storage::Value>>>> {
    let crate::plan::SetPlan::Select(select) = &query.body else {
        return Err(ExecError::internal(
            run.at,
            "a query kept per group is not one select",
        ));
    };
    let crate::plan::Output::Aggregate {
        keys,
        aggs,
        having,
        outputs,
    } = &select.output
    else {
        return Err(ExecError::internal(
            run.at,
            "a query kept per group does not aggregate",
        ));
    };
    let reader = Reader::new(world, run);
    let cx = reader.eval();
    groups
        .iter()
        .map(|g| aggregate::group_output(keys, aggs, having.as_ref(), outputs, g, &cx))
        .collect()
}

/// `query`'s rows on `world`, its relation number `r` (an entity scan) reading only
/// `ids` when given as `(r, ids)` (`query::rows_for`).
pub fn query_rows_for(
    query: &crate::plan::QueryPlan,
    ids: Option<(usize, Vec<crate::storage::Entity>)>,
    world: &World,
    run: Run<'_>,
) -> Result<Chunk> {
    query::rows_for(query, ids, &Reader::new(world, run))
}

use crate::index::{self, IndexError, Indexes};
use crate::location::Location;
use crate::plan::{DataType, EntityScan, OutputColumn, ParamValues, Plan};
use crate::storage::{EventId, FieldId, Filter, TableId, World};
use reader::Reader;

type Result<T> = std::result::Result<T, ExecError>;

/// Rows as typed columns.
#[derive(Clone, Debug, Default)]
pub struct Chunk {
    pub columns: Vec<Vector<'static>>,
    pub len: usize,
}

impl Chunk {
    pub fn row(&self, i: usize) -> Vec<crate::storage::Value> {
        self.columns.iter().map(|c| c.get(i)).collect()
    }
}

/// What a statement produced.
#[derive(Debug, Default)]
pub struct Outcome {
    pub columns: OutputColumns,
    pub rows: Chunk,
    /// Entities spawned, changed or removed; components declared or dropped.
    pub affected: usize,
    /// True when the statement returns rows (queries, SPAWN, SHOW, EXPLAIN).
    pub returns_rows: bool,
}

/// A statement's output columns, shared with its plan. A statement of none (an UPDATE)
/// holds no list at all: an empty `Arc` is one static list whose count every statement
/// would bump and drop again, two atomic operations on one cache line for every system
/// of every tick.
#[derive(Clone, Debug, Default)]
pub struct OutputColumns(Option<std::sync::Arc<[OutputColumn]>>);

impl OutputColumns {
    /// The list, shared (an empty one for none).
    pub fn into_arc(self) -> std::sync::Arc<[OutputColumn]> {
        self.0.unwrap_or_default()
    }
}

impl std::ops::Deref for OutputColumns {
    type Target = [OutputColumn];

    fn deref(&self) -> &[OutputColumn] {
        self.0.as_deref().unwrap_or(&[])
    }
}

impl From<std::sync::Arc<[OutputColumn]>> for OutputColumns {
    fn from(columns: std::sync::Arc<[OutputColumn]>) -> OutputColumns {
        OutputColumns(Some(columns))
    }
}

impl From<Vec<OutputColumn>> for OutputColumns {
    fn from(columns: Vec<OutputColumn>) -> OutputColumns {
        OutputColumns(Some(columns.into()))
    }
}

impl Outcome {
    /// A query's result: these columns, these rows.
    pub fn rows(columns: std::sync::Arc<[OutputColumn]>, rows: Chunk) -> Outcome {
        Outcome {
            columns: OutputColumns(Some(columns)),
            rows,
            affected: 0,
            returns_rows: true,
        }
    }

    /// A result of these named, typed columns and these rows, for statements that answer
    /// from the catalog (SHOW, DESCRIBE, PRAGMA, EXPLAIN TICK) rather than from a query.
    pub fn of_rows(names: &[(&str, DataType)], rows: Vec<Vec<crate::storage::Value>>) -> Outcome {
        let columns: Vec<OutputColumn> = names
            .iter()
            .map(|(n, ty)| OutputColumn {
                name: (*n).to_owned(),
                ty: *ty,
            })
            .collect();
        let mut vectors: Vec<Vector<'static>> = columns.iter().map(|c| Vector::empty(c.ty)).collect();
        for row in &rows {
            for (v, value) in vectors.iter_mut().zip(row) {
                v.push_value(value);
            }
        }
        Outcome {
            columns: columns.into(),
            rows: Chunk {
                columns: vectors,
                len: rows.len(),
            },
            affected: 0,
            returns_rows: true,
        }
    }
}

/// The archetype tables each scan of a prepared statement matched, kept between runs: a
/// run after new tables appeared checks only those, a run after tables were renumbered
/// (a component dropped, a rollback) starts over.
#[derive(Debug, Default)]
pub struct TableCache {
    entries: Vec<CacheEntry>,
    /// The one table of a scan narrowed to a single table, lent as a list.
    single: Option<TableId>,
}

#[derive(Debug)]
struct CacheEntry {
    required: crate::plan::ComponentList,
    excluded: crate::plan::ComponentList,
    only: Option<TableId>,
    tables: Vec<TableId>,
    seen: usize,
    epoch: (u64, u64),
    restores: u64,
    /// Per field asked about (`TableCache::columns`): its column in each of `tables`, in
    /// order, as far as it has been looked up. Cleared with `tables`: the positions hold
    /// exactly as long as the list does.
    columns: Vec<(FieldId, Vec<u32>)>,
}

impl TableCache {
    /// The tables `scan` reads, in table order (lent from the cache, so a run that finds
    /// no new table copies nothing; mutable only so that a `RefCell` can lend it).
    pub fn tables(&mut self, world: &World, scan: &EntityScan, restores: u64) -> &mut [TableId] {
        if scan.only.is_some() {
            self.entry(world, scan, restores);
            return match &mut self.single {
                Some(t) => std::slice::from_mut(t),
                None => &mut [],
            };
        }
        match self.entry(world, scan, restores) {
            Some(entry) => &mut entry.tables,
            None => &mut [],
        }
    }

    /// `tables`' entry for `scan`, brought up to date; `None` for a scan narrowed to one
    /// table, which is then `single` when it is one `scan` reads. Inlined into its two
    /// callers: every run of a system's statement asks it once.
    #[inline]
    fn entry(&mut self, world: &World, scan: &EntityScan, restores: u64) -> Option<&mut CacheEntry> {
        if let Some(only) = scan.only {
            let ok = world.table(only).is_some_and(|t| scan::scan_holds(scan, &t));
            self.single = ok.then_some(only);
            return None;
        }
        // A layout epoch or schema stamp that moved (tables renumbered, or another world
        // put in this one's place) starts the list over.
        let epoch = (world.layout_epoch(), world.schema_stamp());
        let count = world.table_count();
        let entry =
            match self.entries.iter_mut().position(|e| {
                e.required == scan.required && e.excluded == scan.excluded && e.only == scan.only
            }) {
                Some(i) => &mut self.entries[i],
                None => {
                    self.entries.push(CacheEntry {
                        required: scan.required.clone(),
                        excluded: scan.excluded.clone(),
                        only: scan.only,
                        tables: Vec::new(),
                        seen: 0,
                        epoch,
                        restores,
                        columns: Vec::new(),
                    });
                    let last = self.entries.len() - 1;
                    &mut self.entries[last]
                }
            };
        if entry.epoch != epoch || entry.restores != restores || entry.seen > count {
            entry.tables.clear();
            entry.columns.clear();
            entry.seen = 0;
            entry.epoch = epoch;
            entry.restores = restores;
        }
        if entry.seen < count {
            let mut filter = Filter::new();
            for c in &scan.required {
                filter = filter.with(*c);
            }
            for c in &scan.excluded {
                filter = filter.without(*c);
            }
            for table in world.tables().skip(entry.seen) {
                if filter.matches(table) {
                    entry.tables.push(table.id());
                }
            }
            entry.seen = count;
        }
        Some(entry)
    }

    /// The tables `scan` reads (`tables`) and, for each, the position of `field`'s column
    /// in it, kept with the list (and dropped with it: a ROLLBACK, a dropped component or a
    /// LOAD, whatever may give a table id to another table, starts both over): a run that
    /// finds no new table looks none up again. None for a scan narrowed to one table, or
    /// when a table lacks the field.
    pub fn columns(
        &mut self,
        world: &World,
        scan: &EntityScan,
        restores: u64,
        field: FieldId,
    ) -> Columns<'_> {
        if scan.only.is_some() {
            return (self.tables(world, scan, restores), None);
        }
        let Some(entry) = self.entry(world, scan, restores) else {
            return (&[], None);
        };
        let k = match entry.columns.iter().position(|(f, _)| *f == field) {
            Some(k) => k,
            None => {
                entry.columns.push((field, Vec::new()));
                entry.columns.len() - 1
            }
        };
        let known = &mut entry.columns[k].1;
        if known.len() > entry.tables.len() {
            known.clear();
        }
        for &table in &entry.tables[known.len()..] {
            let column = world.table(table).and_then(|t| t.column_index(field));
            match column.and_then(|c| u32::try_from(c).ok()) {
                Some(c) => known.push(c),
                None => return (&entry.tables, None),
            }
        }
        (&entry.tables, Some(known))
    }

    /// How many full catalog scans and extensions it has done, for tests.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

/// The tables a scan reads, and where one field's column is in each
/// (`TableCache::columns`).
pub type Columns<'c> = (&'c [TableId], Option<&'c [u32]>);

/// What a statement's run carries besides the world: its table cache, the database's
/// restore count (part of the cache's key), where the statement starts and its parameter
/// values.
#[derive(Clone, Copy, Debug)]
pub struct Run<'c> {
    pub cache: &'c RefCell<TableCache>,
    pub restores: u64,
    pub at: Location,
    pub params: &'c ParamValues,
    /// What the statement may still spend: stopped by an interrupt, bounded in memory.
    pub budget: &'c Budget<'c>,
    /// The tick it runs in, for `tick()`, `delta_time()` and the events it emits.
    pub clock: Clock,
    /// For a reader (a system, a prepared statement): where its cursors stand, so that it
    /// reads only the event rows it has not seen. `None`: every row kept is read.
    pub events: Option<&'c EventReads>,
    /// The seed of `random()`'s sequence; a fresh one when `None`.
    pub seed: Option<u64>,
    /// The caller's last result (a prepared statement's, or `query_row`'s last text's),
    /// whose memory this result may be written into (a point read's is).
    pub spare: Option<&'c RefCell<Option<Chunk>>>,
    /// Where EXPLAIN ANALYZE keeps what each part of the plan did; `None` for every other
    /// run.
    pub profile: Option<&'c profile::Profile>,
    /// What the statement's caller sent with it: the rows of `COPY … FROM STDIN` (a
    /// server's client); `None` for every other run.
    pub input: Option<&'c [u8]>,
}

impl Run<'_> {
    /// The write tick after which rows count as changed for the reader running
    /// (`Reader::changes_since`).
    pub fn changes_since(&self) -> Option<u64> {
        self.events.and_then(|reads| reads.from.changes_since())
    }
}

/// What a reader (a system, a prepared statement) has seen: of each event type, one past
/// the sequence number of the last row it saw (0 for a type it never read); of changes,
/// the world's write tick when its last run ended (`None` before its first run, which
/// sees every row present as added and changed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventCursors {
    seen: Vec<(EventId, u64)>,
    changes: Option<u64>,
    /// Which world the cursors stand in: a LOAD replaces the world, and a reader's
    /// cursors from before mean nothing in the new one.
    world: u64,
}

impl EventCursors {
    /// Cursors standing at `seen` in each event type (a snapshot's), before any change.
    pub fn from_seen(seen: Vec<(EventId, u64)>) -> EventCursors {
        EventCursors {
            seen,
            ..EventCursors::default()
        }
    }

    /// Makes these the cursors of world `world` (`Connection`'s count of LOADs): cursors
    /// of another world start over, as a reader's first run.
    pub fn enter_world(&mut self, world: u64) {
        if self.world != world {
            *self = EventCursors {
                world,
                ..EventCursors::default()
            };
        }
    }

    /// The write tick after which rows count as changed (added) for this reader.
    pub fn changes_since(&self) -> Option<u64> {
        self.changes
    }

    /// The reader's run ended at write tick `tick`: later changes are the next run's.
    pub fn saw_changes_until(&mut self, tick: u64) {
        self.changes = Some(tick);
    }

    /// Where the reader stands in `event`'s rows.
    pub fn get(&self, event: EventId) -> u64 {
        self.seen.iter().find(|(e, _)| *e == event).map_or(0, |&(_, s)| s)
    }

    /// Moves the cursor of `event` forward to `to` (never back).
    pub fn advance(&mut self, event: EventId, to: u64) {
        match self.seen.iter_mut().find(|(e, _)| *e == event) {
            Some((_, s)) => *s = (*s).max(to),
            None => self.seen.push((event, to)),
        }
    }

    /// Moves every cursor forward to where `other`'s stand.
    pub fn advance_all(&mut self, other: &EventCursors) {
        for &(e, s) in &other.seen {
            self.advance(e, s);
        }
    }

    /// The event types read, with their cursors.
    pub fn iter(&self) -> impl Iterator<Item = (EventId, u64)> + '_ {
        self.seen.iter().copied()
    }
}

/// The event rows one run reads: past the reader's cursors `from`; how far it read goes
/// to `reached`, for the reader to keep once the run succeeded.
#[derive(Debug, Default)]
pub struct EventReads {
    pub from: EventCursors,
    pub reached: RefCell<EventCursors>,
}

/// A point read's row (`PointRead`, what a kept plan's first run found it) written over
/// `rows`'s memory. `false` when the general path must answer (`rows` then perhaps
/// changed).
#[inline]
pub fn point_into(
    point: &crate::plan::PointRead,
    world: &World,
    params: &ParamValues,
    rows: &mut Chunk,
) -> bool {
    query::read_point(point, world, params, rows)
}

/// Runs a plan that reads only.
pub fn run_read(plan: &Plan, world: &World, run: Run<'_>) -> Result<Outcome> {
    let at = run.at;
    match plan {
        Plan::Query(q) => {
            // A point read is run straight from its plan, without a reader, into the last
            // result's memory; EXPLAIN ANALYZE (a profile) runs it through the plan, which
            // it measures.
            let mut spare = match run.profile {
                None => run
                    .spare
                    .and_then(|s| s.try_borrow_mut().ok()?.take())
                    .unwrap_or_default(),
                Some(_) => Chunk::default(),
            };
            let rows = match run.profile.is_none() && query::point_query(q, world, run.params, &mut spare) {
                true => spare,
                false => query::run_query(q, &Reader::new(world, run))?,
            };
            Ok(Outcome::rows(q.columns.clone(), rows))
        }
        Plan::ShowComponents => Ok(catalog::show_components(world)),
        Plan::ShowArchetypes => Ok(catalog::show_archetypes(world)),
        Plan::ShowIndexes => Ok(catalog::show_indexes(world)),
        Plan::Describe(c) => catalog::describe(world, *c, at),
        Plan::DescribeEvent(e) => catalog::describe_event(world, *e, at),
        Plan::Explain(inner) => Ok(explain::explain(inner, &Reader::new(world, run))),
        Plan::ExplainAnalyze {
            plan: inner, timing, ..
        } => {
            let profile = profile::Profile::new(*timing);
            let run = Run {
                profile: Some(&profile),
                ..run
            };
            let start = std::time::Instant::now();
            let ran = run_read(inner, world, run)?;
            let took = start.elapsed();
            profile.finish();
            Ok(explain::explain_analyzed(
                inner,
                &Reader::new(world, run),
                &ran,
                took,
                false,
            ))
        }
        Plan::CopyTo(c) => copy::copy_to(c, &Reader::new(world, run)),
        _ => Err(ExecError::internal(
            at,
            "a writing statement reached the read path",
        )),
    }
}

/// What a writing statement computed against a world it has not written yet
/// (`stage_write`), to write later (`write_staged`).
pub use write::StagedUpdate as Staged;

/// Computes what `plan` would write to `world`, without writing: for an UPDATE of one
/// entity scan; `None` for any other statement, which must run as `run_write` runs it.
/// Written by `write_staged` onto a world whose rows the plan reads have not changed, it
/// writes what `run_write` would have.
pub fn stage_write(plan: &Plan, world: &World, run: Run<'_>) -> Result<Option<Staged>> {
    match plan {
        Plan::Update(p) => write::stage_whole_update(p, world, run),
        _ => Ok(None),
    }
}

/// An UPDATE's writes made in place beside other statements, to stamp (`stamp_beside`).
pub use write::{Beside, short_for_beside};

/// Writes `plan` into `world`'s columns in place through the world shared with other
/// statements, when it is an UPDATE that can be written so (`write::update_beside`);
/// `None`, with nothing written, for any other statement.
///
/// # Safety
/// The caller holds the fields `plan` writes alone until `stamp_beside` (no reference to
/// their columns exists or is made meanwhile, but this function's own).
pub unsafe fn write_beside(plan: &Plan, world: &World, run: Run<'_>) -> Result<Option<Beside>> {
    match plan {
        // SAFETY: the caller's promise.
        Plan::Update(p) => unsafe { write::update_beside(p, world, run) },
        _ => Ok(None),
    }
}

/// Stamps what `write_beside` wrote, under the write lock.
pub fn stamp_beside(beside: Beside, world: &mut World, at: crate::location::Location) -> Result<Outcome> {
    write::stamp_beside(beside, world, at)
}

/// Stamps what `write_beside` wrote, through the world shared with other statements.
///
/// # Safety
/// The caller still holds the fields `write_beside` wrote alone.
pub unsafe fn stamp_beside_shared(
    beside: Beside,
    world: &World,
    at: crate::location::Location,
) -> Result<Outcome> {
    // SAFETY: the caller's promise.
    unsafe { write::stamp_beside_shared(beside, world, at) }
}

/// Writes what `stage_write` computed.
pub fn write_staged(staged: Staged, world: &mut World, at: crate::location::Location) -> Result<Outcome> {
    write::write_staged_update(staged, world, at)
}

/// Runs any plan but the transaction statements.
///
/// An UPDATE, the write most often run (every system of a tick runs one), goes straight
/// to `update` from the caller's frame: its outcome, as large as the error it may be, is
/// handed back through one frame fewer.
#[inline]
pub fn run_write(plan: &Plan, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    match plan {
        Plan::Update(p) => write::update(p, world, run, None),
        plan => run_other_write(plan, world, run),
    }
}

/// `run_write` of any plan but an UPDATE.
fn run_other_write(plan: &Plan, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let at = run.at;
    match plan {
        Plan::CreateComponent {
            name,
            fields,
            storage,
            if_not_exists,
        } => {
            if *if_not_exists && world.component_by_name(name).is_ok() {
                return Ok(Outcome::default());
            }
            world
                .create_component_with(name, fields.clone(), *storage)
                .map_err(|e| ExecError::storage(at, e))?;
            Ok(Outcome {
                affected: 0,
                ..Default::default()
            })
        }
        Plan::DropComponent { component, .. } => {
            let affected = match component {
                Some(c) => world.drop_component(*c).map_err(|e| ExecError::storage(at, e))?,
                None => 0,
            };
            Ok(Outcome {
                affected,
                ..Default::default()
            })
        }
        Plan::CreateIndex {
            name,
            method,
            if_not_exists,
            fields,
            ..
        } => {
            match index::create_index(world, name.as_deref(), *method, fields) {
                Ok(_) => {}
                Err(IndexError::Exists(_) | IndexError::Duplicate { .. }) if *if_not_exists => {}
                Err(source) => return Err(ExecError::new(at, ExecErrorKind::Index { source })),
            }
            Ok(Outcome::default())
        }
        Plan::CreateFunctionIndex {
            name,
            if_not_exists,
            index,
            ..
        } => {
            match index_keys::create_function_index(world, name.as_deref(), index) {
                Ok(_) => {}
                Err(IndexError::Exists(_) | IndexError::Duplicate { .. }) if *if_not_exists => {}
                Err(source) => return Err(ExecError::new(at, ExecErrorKind::Index { source })),
            }
            Ok(Outcome::default())
        }
        Plan::DropIndex { name, if_exists } => {
            if !(*if_exists && Indexes::of(world).get(name).is_none()) {
                index::drop_index(world, name)
                    .map_err(|source| ExecError::new(at, ExecErrorKind::Index { source }))?;
            }
            Ok(Outcome::default())
        }
        Plan::Spawn(p) => write::spawn(p, world, run),
        Plan::Insert(p) => write::insert(p, world, run, None),
        Plan::Delete { component, ids } => write::delete(*component, ids, world, run),
        Plan::Despawn { ids } => write::despawn(ids, world, run),
        Plan::Update(p) => write::update(p, world, run, None),
        Plan::Returning { write, query } => write::returning(write, query, world, run),
        Plan::Emit(p) => write::emit(p, world, run),
        Plan::CopyFrom(p) => copy::copy_from(p, world, run),
        Plan::CreateEvent { name, fields, keep } => {
            world
                .create_event(name, fields.clone(), *keep)
                .map_err(|e| ExecError::storage(at, e))?;
            Ok(Outcome::default())
        }
        Plan::DropEvent { event } => {
            if let Some(event) = event {
                world.drop_event(*event).map_err(|e| ExecError::storage(at, e))?;
            }
            Ok(Outcome::default())
        }
        Plan::Begin | Plan::Commit | Plan::Rollback | Plan::Pragma { .. } => Err(ExecError::internal(
            at,
            "transaction statements and pragmas are handled by the connection",
        )),
        Plan::ExplainAnalyze {
            plan: inner,
            timing,
            keep,
        } => {
            // The write runs in a savepoint undone after (unless KEEP): EXPLAIN ANALYZE
            // changes nothing.
            let profile = profile::Profile::new(*timing);
            let run = Run {
                profile: Some(&profile),
                ..run
            };
            let savepoint = world.savepoint();
            let start = std::time::Instant::now();
            let ran = run_write(inner, world, run);
            let took = start.elapsed();
            profile.finish();
            if *keep && ran.is_ok() {
                world.release(savepoint);
            } else {
                world.rollback_to(savepoint);
            }
            let ran = ran?;
            Ok(explain::explain_analyzed(
                inner,
                &Reader::new(world, run),
                &ran,
                took,
                !keep,
            ))
        }
        read => run_read(read, world, run),
    }
}

/// Turns on the change tracking `tracks` asks for (a reader's plan: `Planned::tracks`)
/// that the world does not keep yet, telling `started` of each with the world's write
/// tick before it (where a file database journals it). Every way a statement runs (a
/// connection's, a system's) turns tracking on here, before the run that reads it.
pub fn start_tracking(
    tracks: &[crate::plan::Tracking],
    world: &mut World,
    at: Location,
    mut started: impl FnMut(crate::plan::Tracking, u64),
) -> Result<()> {
    for &asked in tracks {
        if !asked.is_on(world) {
            let tick = world.tick();
            asked.start(world).map_err(|e| ExecError::storage(at, e))?;
            started(asked, tick);
        }
    }
    Ok(())
}

/// A fresh seed per statement for random(), unless the run brings one.
fn seed(run: &Run<'_>) -> u64 {
    run.seed.unwrap_or_else(fresh_seed)
}

/// A seed for `random()` no other statement had: each thread counts from a random start
/// of its own (std's `RandomState`, once), and each count is mixed (splitmix64, a
/// bijection, so no two counts of a thread give one seed). Every statement takes one, so
/// it costs a few instructions rather than a keyed hash.
pub fn fresh_seed() -> u64 {
    thread_local! {
        static NEXT: Cell<u64> = Cell::new({
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u8(0);
            h.finish()
        });
    }
    let count = NEXT.with(|n| {
        let count = n.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        n.set(count);
        count
    });
    let mut z = count;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
