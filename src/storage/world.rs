//! `World`: the storage's public face. Declares components, spawns and despawns entities,
//! attaches and detaches components (moving rows between archetype tables), reads and
//! writes fields. Every operation checks everything it can fail on before it changes
//! anything, so a failed operation leaves the world exactly as it was, and only then tells
//! its observers what changed (`observe.rs`). Inside a transaction every change first
//! records how to take itself back (`undo.rs`), and ROLLBACK applies those records here.
//! The columnar door over matching tables is in `query.rs`.

use std::sync::atomic::{AtomicU64, Ordering};

use super::archetypes::Archetypes;
use super::column::{Column, Values};
use super::component::{ComponentDef, Components, FieldDef, StorageKind};
use super::entity::{EntityIndex, IdsUndo, Location};
use super::error::StorageError;
use super::events::{EventQueue, Events};
use super::ids::{ComponentId, Entity, EventId, FieldId, TableId, TableRow};
use super::observe::{Observer, Observers};
use super::removals::RemovalLog;
use super::table::{Restored, RowIndex, Table, TableName};
use super::undo::{CellRows, Undo, UndoLog};
use super::value::Value;

type Result<T> = std::result::Result<T, StorageError>;

/// A point in a world's changes to come back to (see `World::savepoint`).
#[derive(Debug)]
#[must_use = "a savepoint is released or rolled back to"]
pub struct Savepoint {
    /// The savepoint opened the transaction itself.
    opened: bool,
    /// How many undo records there were.
    mark: usize,
}

/// An in-memory archetype ECS: entities, runtime-declared components and the archetype
/// tables that hold them.
#[derive(Clone, Debug)]
pub struct World {
    pub(crate) catalog: Components,
    pub(super) entities: EntityIndex,
    pub(crate) archetypes: Archetypes,
    /// Advanced by every write; tables stamp what they changed with it.
    pub(super) tick: u64,
    /// Advanced whenever table ids are renumbered (a component type dropped, a
    /// transaction rolled back) or an event type is dropped, so that a cached list of
    /// table ids knows it must be rebuilt rather than extended, and a kept plan that its
    /// ids may be stale.
    pub(super) layout_epoch: u64,
    /// What a plan bound against this world depends on, as one number: a new one (never
    /// handed out before, in this process) whenever a component or event type is
    /// declared or dropped, an observer is added or changed (an index defined), or a
    /// rollback puts anything back; a copy of the world gets its own. While it stays the
    /// same, so do this world's types, indexes and table ids (tables are only added).
    schema: SchemaStamp,
    /// Structures beside the tables (indexes…), told of every change below.
    pub(crate) observers: Observers,
    /// Event types and the rows each still keeps.
    pub(super) events: Events,
    /// The removal logs of the components whose removals are tracked.
    pub(super) removals: Vec<(ComponentId, RemovalLog)>,
    /// The schedule tick removals are logged in (the tick being run, or the last one).
    log_tick: u64,
    /// How to take back every change since BEGIN; `None` outside a transaction.
    pub(super) undo_log: Option<UndoLog<World>>,
    /// Savepoints open (a tick running): a transaction may not begin or end meanwhile.
    pub(super) savepoints: u32,
    /// A closed transaction's emptied record list, kept (up to `SPARE_RECORDS`) for the
    /// next one, so that a tick's savepoint does not allocate its log anew each tick.
    spare_log: Vec<Undo<World>>,
}

/// A world's schema stamp (`World::schema_stamp`): a number not handed out before, in this
/// process. A copy of a world gets a new one, so that a copy put back in its place (by
/// `with_world_mut`), whose table ids may differ from the live world's however alike
/// their schemas, is never taken for it.
#[derive(Debug)]
struct SchemaStamp(u64);

impl SchemaStamp {
    fn new() -> SchemaStamp {
        static STAMPS: AtomicU64 = AtomicU64::new(1);
        SchemaStamp(STAMPS.fetch_add(1, Ordering::Relaxed))
    }
}

impl Clone for SchemaStamp {
    fn clone(&self) -> SchemaStamp {
        SchemaStamp::new()
    }
}

/// The most records a closed transaction's emptied log keeps room for.
const SPARE_RECORDS: usize = 256;

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

impl World {
    /// An empty world: no components, no entities.
    pub fn new() -> World {
        let catalog = Components::default();
        World {
            archetypes: Archetypes::new(&catalog),
            catalog,
            entities: EntityIndex::new(),
            tick: 0,
            layout_epoch: 0,
            schema: SchemaStamp::new(),
            observers: Observers::default(),
            events: Events::default(),
            removals: Vec::new(),
            log_tick: 0,
            undo_log: None,
            savepoints: 0,
            spare_log: Vec::new(),
        }
    }

    // ---- transactions -------------------------------------------------------------------

    /// Opens a transaction: from now on every change records how to take itself back,
    /// until `commit` keeps them all or `rollback` undoes them all. Costs nothing now; fails
    /// if a transaction is already open.
    pub fn begin(&mut self) -> Result<()> {
        self.no_savepoint()?;
        if self.undo_log.is_some() {
            return Err(StorageError::TransactionOpen);
        }
        self.open_log();
        Ok(())
    }

    /// Keeps every change since `begin` and closes the transaction. Costs nothing.
    pub fn commit(&mut self) -> Result<()> {
        self.no_savepoint()?;
        let log = self.undo_log.take().ok_or(StorageError::NoTransaction)?;
        self.keep_spare(log.into_records());
        Ok(())
    }

    /// Opens the undo log, in the spare record list if there is one.
    fn open_log(&mut self) {
        self.undo_log = Some(UndoLog::from_records(std::mem::take(&mut self.spare_log)));
    }

    /// Drops a closed log's records (the old values they held go with them) and keeps
    /// the emptied list for the next transaction, unless it grew large.
    fn keep_spare(&mut self, mut records: Vec<Undo<World>>) {
        if records.capacity() == 0 || records.capacity() > SPARE_RECORDS {
            if records.iter().any(Undo::holds_many_texts) {
                crate::garbage::drop_later(records);
            }
            return;
        }
        // Many texts are freed off this thread (`garbage.rs`), as a truncate does.
        let texts: Vec<Undo<World>> = records.extract_if(.., |r| r.holds_many_texts()).collect();
        if !texts.is_empty() {
            crate::garbage::drop_later(texts);
        }
        records.clear();
        // The spare was taken when this log opened: nothing is dropped here.
        self.spare_log = records;
    }

    /// Refuses to begin or end a transaction inside a savepoint: a tick undoes itself
    /// through the log, which a Rust system must leave as it found it.
    fn no_savepoint(&self) -> Result<()> {
        match self.savepoints {
            0 => Ok(()),
            _ => Err(StorageError::InSavepoint),
        }
    }

    /// Undoes every change since `begin`, newest first, and closes the transaction: the
    /// tables, ids and catalog are as they were at `begin`, the indexes hold what they held.
    /// Costs what the transaction changed.
    pub fn rollback(&mut self) -> Result<()> {
        self.no_savepoint()?;
        let log = self.undo_log.take().ok_or(StorageError::NoTransaction)?;
        self.undo(log.into_records());
        Ok(())
    }

    /// True between `begin` and `commit`/`rollback`.
    pub fn in_transaction(&self) -> bool {
        self.undo_log.is_some()
    }

    /// Marks a point that `rollback_to` can undo back to, inside an open transaction or
    /// not (then a transaction is opened, and `release` or `rollback_to` closes it). A
    /// tick is made atomic this way, whether or not BEGIN came first.
    pub(crate) fn savepoint(&mut self) -> Savepoint {
        self.savepoints += 1;
        match &self.undo_log {
            Some(log) => Savepoint {
                opened: false,
                mark: log.len(),
            },
            None => {
                self.open_log();
                Savepoint {
                    opened: true,
                    mark: 0,
                }
            }
        }
    }

    /// Keeps every change since `savepoint` (in the enclosing transaction, if any).
    pub(crate) fn release(&mut self, savepoint: Savepoint) {
        self.savepoints = self.savepoints.saturating_sub(1);
        if savepoint.opened
            && let Some(log) = self.undo_log.take()
        {
            self.keep_spare(log.into_records());
        }
    }

    /// Undoes every change since `savepoint`, newest first; the enclosing transaction, if
    /// any, stays open with what came before.
    pub(crate) fn rollback_to(&mut self, savepoint: Savepoint) {
        self.savepoints = self.savepoints.saturating_sub(1);
        let Some(log) = &mut self.undo_log else {
            return;
        };
        let records = log.split_off(savepoint.mark);
        if savepoint.opened {
            self.undo_log = None;
        }
        self.undo(records);
    }

    /// Records `undo` when a transaction is open.
    fn record(&mut self, undo: impl FnOnce(&World) -> Undo<World>) {
        if self.undo_log.is_some() {
            let undo = undo(self);
            if let Some(log) = &mut self.undo_log {
                log.push(undo);
            }
        }
    }

    /// Records the whole world (before a schema change too large to take back piece by
    /// piece) when a transaction is open.
    fn record_image(&mut self) {
        if let Some(mut log) = self.undo_log.take() {
            log.push(Undo::World(Box::new(self.clone())));
            self.undo_log = Some(log);
        }
    }

    /// Records a `TableCreated` for each table beyond the first `before`.
    fn record_new_tables(&mut self, before: usize) {
        if let Some(log) = &mut self.undo_log {
            for _ in before..self.archetypes.len() {
                log.push(Undo::TableCreated);
            }
        }
    }

    // ---- the catalog ------------------------------------------------------------------

    /// Declares a component type; with no fields it is a tag.
    pub fn create_component(&mut self, name: &str, fields: Vec<FieldDef>) -> Result<ComponentId> {
        self.create_component_with(name, fields, StorageKind::Dense)
    }

    /// `create_component`, kept as `storage` says: a sparse component lives in a table of
    /// its own (`StorageKind::Sparse`), so attaching and detaching it moves no row.
    pub fn create_component_with(
        &mut self,
        name: &str,
        fields: Vec<FieldDef>,
        storage: StorageKind,
    ) -> Result<ComponentId> {
        if self.events.by_name(name).is_some() {
            return Err(StorageError::NameTaken {
                name: name.to_owned(),
                by: "an event",
            });
        }
        let id = self.catalog.create(name, fields)?;
        if storage == StorageKind::Sparse {
            match self.archetypes.create_sparse(id, &self.catalog) {
                Some(table) => self.catalog.set_sparse(id, table),
                None => {
                    self.catalog.remove_last();
                    return Err(StorageError::OutOfComponentIds);
                }
            }
        }
        self.record(|_| Undo::ComponentCreated);
        self.schema = SchemaStamp::new();
        Ok(id)
    }

    /// The component `id` names.
    pub fn component(&self, id: ComponentId) -> Result<&ComponentDef> {
        self.catalog.get(id)
    }

    /// The component called `name` (exactly: names are case-sensitive here).
    pub fn component_by_name(&self, name: &str) -> Result<&ComponentDef> {
        self.catalog.by_name(name)
    }

    /// Every declared component, in declaration order.
    pub fn components(&self) -> impl Iterator<Item = &ComponentDef> {
        self.catalog.iter()
    }

    /// How many components are declared: `components().count()`, without walking them.
    pub fn component_count(&self) -> usize {
        self.catalog.len()
    }

    /// The id of `component`'s field called `name`.
    pub fn field(&self, component: ComponentId, name: &str) -> Result<FieldId> {
        let def = self.catalog.get(component)?;
        def.field(name).ok_or_else(|| StorageError::UnknownField {
            component: def.name().to_owned(),
            field: name.to_owned(),
        })
    }

    /// Removes a component type: it is detached from every entity that has it (they live
    /// on in the table of their remaining components), the tables holding it are dropped,
    /// and its id is retired. Returns how many entities lost it.
    pub fn drop_component(&mut self, component: ComponentId) -> Result<usize> {
        let sparse = self.catalog.get(component)?.sparse_table();
        self.record_image();
        let tick = self.next_tick();
        if let Some(table) = sparse {
            let detached = self.archetypes.get(table).map_or(0, Table::len);
            self.archetypes.drop_sparse(table);
            self.catalog.remove(component);
            self.removals.retain(|(c, _)| *c != component);
            self.observers.component_dropped(component);
            self.layout_epoch += 1;
            self.schema = SchemaStamp::new();
            return Ok(detached);
        }
        let mut detached = 0;
        for src in self.archetypes.with_component(component).to_vec() {
            if self.archetypes.get(src).is_none_or(Table::is_empty) {
                continue;
            }
            let dst = self.archetypes.remove_target(src, component, &self.catalog);
            let Some([src_table, dst_table]) = self.archetypes.pair_mut(src, dst) else {
                continue;
            };
            let first = Table::move_all_rows(src_table, dst_table, Vec::new(), tick);
            for (i, &entity) in dst_table.entities()[first.index()..].iter().enumerate() {
                let row = TableRow(first.0 + i as u32);
                self.entities.set_location(entity, Location { table: dst, row });
                detached += 1;
            }
        }
        let renumbered = self.archetypes.remove_tables_with(component);
        for (old, new) in renumbered.into_iter().enumerate() {
            let Some(new) = new.filter(|new| new.index() != old) else {
                continue;
            };
            let Some(table) = self.archetypes.get(new) else {
                continue;
            };
            for (row, &entity) in table.entities().iter().enumerate() {
                let row = TableRow(row as u32);
                self.entities.set_location(entity, Location { table: new, row });
            }
        }
        self.catalog.remove(component);
        self.removals.retain(|(c, _)| *c != component);
        self.observers.component_dropped(component);
        self.layout_epoch += 1;
        self.schema = SchemaStamp::new();
        Ok(detached)
    }

    // ---- events -------------------------------------------------------------------------

    /// Declares an event type: rows with these fields, each kept `keep` ticks at most.
    pub fn create_event(&mut self, name: &str, fields: Vec<FieldDef>, keep: u64) -> Result<EventId> {
        if self.catalog.by_name(name).is_ok() {
            return Err(StorageError::NameTaken {
                name: name.to_owned(),
                by: "a component",
            });
        }
        let id = self.events.create(name, fields, keep)?;
        self.record(|_| Undo::EventCreated);
        self.schema = SchemaStamp::new();
        Ok(id)
    }

    /// Removes an event type and the rows it kept.
    pub fn drop_event(&mut self, event: EventId) -> Result<()> {
        let queue = self.events.remove(event)?;
        self.record(|_| Undo::EventDropped(Box::new(queue)));
        // Plans kept by prepared statements and systems name event ids: they bind again.
        self.layout_epoch += 1;
        self.schema = SchemaStamp::new();
        Ok(())
    }

    /// The event type `id` names, with its rows.
    pub fn event(&self, id: EventId) -> Result<&EventQueue> {
        self.events.get(id)
    }

    /// The event type called `name` (exactly).
    pub fn event_by_name(&self, name: &str) -> Result<&EventQueue> {
        self.events
            .by_name(name)
            .ok_or_else(|| StorageError::UnknownEvent(name.to_owned()))
    }

    /// Every event type, in declaration order.
    pub fn events(&self) -> impl Iterator<Item = &EventQueue> {
        self.events.iter()
    }

    /// How many event types are declared: `events().count()`, without walking them.
    pub fn event_count(&self) -> usize {
        self.events.len()
    }

    /// Emits `len` rows of `event`, given as one column per field (each of its field's
    /// type), stamped with `tick`. Returns the first row's sequence number.
    pub fn emit(&mut self, event: EventId, columns: Vec<Column>, len: usize, tick: u64) -> Result<u64> {
        let first = self.events.append(event, columns, len, tick)?;
        self.record(|_| Undo::Emitted { event, count: len });
        Ok(first)
    }

    /// Drops the first `count` rows of `event`, counting `unseen` of them as dropped
    /// before every reader had seen them.
    pub(crate) fn drop_events(&mut self, event: EventId, count: usize, unseen: u64) -> Result<()> {
        let rows = self.events.drop_front(event, count, unseen)?;
        self.record(|_| Undo::EventsDropped { event, rows });
        Ok(())
    }

    // ---- entities -----------------------------------------------------------------------

    /// How many entities are alive.
    pub fn len(&self) -> usize {
        self.entities.live()
    }

    /// True when no entity is alive.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `entity` is alive (a despawned or never-issued id is not).
    pub fn contains(&self, entity: Entity) -> bool {
        self.entities.contains(entity)
    }

    /// The last id of every slot whose entity was despawned and whose id has not been
    /// issued again, in an order that rebuilds them: in an empty world, `SPAWN AT` each of
    /// these ids and then despawn them in this order, and the world refuses the same old ids
    /// and hands out the same next ids as this one. `.dump` writes them so.
    pub fn despawned_ids(&self) -> Vec<Entity> {
        self.entities.despawned()
    }

    /// The table and row holding `entity`.
    pub fn locate(&self, entity: Entity) -> Result<(TableId, TableRow)> {
        let at = self.entities.locate(entity)?;
        Ok((at.table, at.row))
    }

    /// About how many bytes an undo log (a transaction's, a savepoint's) grows by when
    /// `entities` (live, each once) are despawned: each entity twice (its row's and its
    /// id's records), its row (typed, a text's bytes too), its marks, and a sparse
    /// component's row (typed, with its place and entity).
    pub(crate) fn despawn_undo_bytes(&self, entities: &[Entity]) -> usize {
        const PER_ENTITY: usize = 2 * std::mem::size_of::<Entity>() + std::mem::size_of::<u32>();
        let sparse_row =
            |t: &Table| std::mem::size_of::<u32>() + std::mem::size_of::<Entity>() + row_bytes(t);
        let sparse: Vec<&Table> = self.archetypes.sparse_sets().map(|s| s.table()).collect();
        let mut bytes = 0usize;
        for &entity in entities {
            let Ok(at) = self.entities.locate(entity) else {
                continue;
            };
            let Some(table) = self.archetypes.get(at.table) else {
                continue;
            };
            bytes = bytes.saturating_add(PER_ENTITY + row_bytes(table));
            for column in table.columns() {
                if let Column::Text(v) = column {
                    bytes = bytes.saturating_add(v.get(at.row.index()).map_or(0, |t| t.len()));
                }
            }
            for set in &sparse {
                if self
                    .archetypes
                    .sparse(set.id())
                    .is_some_and(|s| s.row_of(entity).is_some())
                {
                    bytes = bytes.saturating_add(sparse_row(set));
                }
            }
        }
        bytes
    }

    /// About how many bytes an undo log (a transaction's, a savepoint's) grows by when
    /// `component` is attached to (`attach`) or detached from `entities` (live, each once,
    /// each lacking or holding it): an archetype row's place in its table, and for a
    /// detach the values it loses (typed; a text's bytes too, as a despawn's, though they
    /// move with it) and their marks; a sparse component's attach is one record. (A whole
    /// table, whose columns move whole, keeps no more than its places: see
    /// `is_whole_table`.)
    pub(crate) fn move_undo_bytes(&self, component: ComponentId, entities: &[Entity], attach: bool) -> usize {
        const HOLE: usize = std::mem::size_of::<u32>();
        let Ok(def) = self.catalog.get(component) else {
            return 0;
        };
        let sparse = def.sparse_table().and_then(|t| self.archetypes.sparse(t));
        let marks = match def.is_tracked() {
            true => (def.fields().len() + 1) * std::mem::size_of::<u64>(),
            false => 0,
        };
        let text_bytes = |columns: &[Column], row: usize| -> usize {
            columns
                .iter()
                .map(|c| match c {
                    Column::Text(v) => v.get(row).map_or(0, |t| t.len()),
                    _ => 0,
                })
                .sum()
        };
        match (attach, sparse) {
            (true, Some(_)) => 0,
            (true, None) => entities.len().saturating_mul(HOLE),
            (false, Some(set)) => {
                // A row's place, its entity and its values, typed.
                let record = HOLE + std::mem::size_of::<Entity>() + row_bytes(set.table());
                entities.iter().fold(0usize, |bytes, &e| {
                    let texts = set
                        .row_of(e)
                        .map_or(0, |row| text_bytes(set.table().columns(), row));
                    bytes.saturating_add(record + texts)
                })
            }
            (false, None) => {
                // The values' sizes are the fields' types'; only texts are looked up.
                let values: usize = def
                    .fields()
                    .iter()
                    .map(|f| Column::new(f.ty()).value_size())
                    .sum();
                let fixed = entities.len().saturating_mul(HOLE + values + marks);
                if !def
                    .fields()
                    .iter()
                    .any(|f| f.ty() == super::value::FieldType::Text)
                {
                    return fixed;
                }
                entities.iter().fold(fixed, |bytes, &e| {
                    let Ok(at) = self.entities.locate(e) else {
                        return bytes;
                    };
                    let texts = self
                        .archetypes
                        .get(at.table)
                        .and_then(|t| t.component_columns(component))
                        .map_or(0, |columns| text_bytes(columns, at.row.index()));
                    bytes.saturating_add(texts)
                })
            }
        }
    }

    /// Spawns one entity holding the given components, each with a full row of field values
    /// in declaration order (see `ComponentDef::defaults`). No components: an entity in the
    /// void table.
    pub fn spawn(&mut self, components: Vec<(ComponentId, Vec<Value>)>) -> Result<Entity> {
        let mut components = components;
        for (id, values) in &components {
            self.catalog.get(*id)?.check_values(values)?;
        }
        self.check_repeats(&mut components)?;
        let sparse = self.take_sparse(&mut components);
        let before = (self.archetypes.len(), self.entities.mark());
        let (table, entities, tick) = self.spawn_target(&mut components, 1)?;
        let row = TableRow(table.len() as u32);
        let entity = entities.alloc(Location {
            table: table.id(),
            row,
        });
        table.push_row(entity, components.into_iter().map(|(_, v)| v).collect(), tick);
        let table = table.id();
        self.record_spawn(before, table, &[entity], None);
        self.report_spawned(table, row.index()..row.index() + 1);
        for (table, values) in sparse {
            self.sparse_push(table, entity, values, tick);
        }
        Ok(entity)
    }

    /// Spawns `len` entities at once, column-wise: for each component, one column per field
    /// (in declaration order) holding `len` values. Returns the new ids in row order.
    pub fn spawn_batch(
        &mut self,
        len: usize,
        components: Vec<(ComponentId, Vec<Column>)>,
    ) -> Result<Vec<Entity>> {
        let mut components = components;
        self.check_batch(len, &components)?;
        self.check_repeats(&mut components)?;
        let sparse = self.take_sparse(&mut components);
        let before = (self.archetypes.len(), self.entities.mark());
        let (table, entity_index, tick) = self.spawn_target(&mut components, len)?;
        let first = table.len();
        let entities = entity_index.alloc_many(len, table.id(), first as u32);
        let columns = components.into_iter().flat_map(|(_, columns)| columns).collect();
        table.append_rows(&entities, columns, tick);
        let table = table.id();
        self.record_spawn(before, table, &entities, None);
        self.report_spawned(table, first..first + len);
        for (table, columns) in sparse {
            self.sparse_append(table, &entities, columns, tick);
        }
        Ok(entities)
    }

    /// `spawn_batch` under ids chosen by the caller (`SPAWN AT`, a dump read back). Fails,
    /// changing nothing, if an id is alive, was despawned, or repeats.
    pub fn spawn_batch_at(
        &mut self,
        ids: &[Entity],
        components: Vec<(ComponentId, Vec<Column>)>,
    ) -> Result<()> {
        let mut components = components;
        self.check_batch(ids.len(), &components)?;
        self.entities.check_claims(ids)?;
        self.check_repeats(&mut components)?;
        let sparse = self.take_sparse(&mut components);
        let before = (self.archetypes.len(), self.entities.mark());
        let claim = self.undo_log.is_some().then(|| self.entities.claim_undo(ids));
        let (table, entity_index, tick) = self.spawn_target(&mut components, 0)?;
        let first = table.len();
        entity_index.claim_many(ids, table.id(), first as u32);
        let columns = components.into_iter().flat_map(|(_, columns)| columns).collect();
        table.append_rows(ids, columns, tick);
        let table = table.id();
        self.record_spawn(before, table, ids, claim);
        self.report_spawned(table, first..first + ids.len());
        for (table, columns) in sparse {
            self.sparse_append(table, ids, columns, tick);
        }
        Ok(())
    }

    /// Checks a column-wise batch against the catalog: every field given, of its type,
    /// with `len` values.
    fn check_batch(&self, len: usize, components: &[(ComponentId, Vec<Column>)]) -> Result<()> {
        for (id, columns) in components {
            let def = self.catalog.get(*id)?;
            if columns.len() != def.fields().len() {
                return Err(StorageError::FieldCount {
                    component: def.name().to_owned(),
                    expected: def.fields().len(),
                    found: columns.len(),
                });
            }
            for (field, column) in def.fields().iter().zip(columns) {
                if column.field_type() != field.ty() {
                    return Err(StorageError::TypeMismatch {
                        component: def.name().to_owned(),
                        field: field.name().to_owned(),
                        expected: field.ty(),
                        found: format!("a column of {}", column.field_type()),
                    });
                }
                if column.len() != len {
                    return Err(StorageError::BatchLength {
                        component: def.name().to_owned(),
                        field: field.name().to_owned(),
                        expected: len,
                        found: column.len(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Removes an entity and everything it holds. Its id is refused from now on; its slot
    /// is reused with the next generation.
    pub fn despawn(&mut self, entity: Entity) -> Result<()> {
        self.despawn_batch(&[entity])
    }

    /// Despawns each of `entities` (live, distinct): a repeat is refused as the despawned
    /// entity it would be by then. Everything is checked first: on an error nothing
    /// changed. The result is that of despawning them one by one in the order given (rows
    /// swap-removed, ids freed and so reused in that order), done a table at a time,
    /// column by column; inside a transaction what goes is kept as typed columns to undo
    /// it with (a table whose every entity goes keeps its own memory, moved, not copied).
    pub fn despawn_batch(&mut self, entities: &[Entity]) -> Result<()> {
        // A few entities are compared with each other: a set of bits as long as the
        // highest slot would cost more than the despawn (`World::despawn` is one).
        let mut seen = super::ids::LiveSet::default();
        let few = entities.len() <= 16;
        let (mut first, mut several) = (None, false);
        for (i, &entity) in entities.iter().enumerate() {
            let at = self.entities.locate(entity)?;
            let repeated = match few {
                true => entities[..i].contains(&entity),
                false => !seen.insert(entity),
            };
            if repeated {
                return Err(StorageError::DespawnedEntity(entity));
            }
            several |= *first.get_or_insert(at.table) != at.table;
        }
        // Each table's entities in the order given (most often they are all of one, and
        // its list is `entities`).
        let groups: Vec<(TableId, Vec<Entity>)> = if several {
            let mut groups: hashbrown::HashMap<TableId, Vec<Entity>> = hashbrown::HashMap::new();
            for &entity in entities {
                let at = self.entities.locate(entity)?;
                groups.entry(at.table).or_default().push(entity);
            }
            let mut groups: Vec<_> = groups.into_iter().collect();
            groups.sort_unstable_by_key(|(table, _)| *table);
            groups
        } else {
            Vec::new()
        };
        let tick = self.next_tick();
        // Sparse components' rows, set by set, each set's holders in the order given.
        let sparse: Vec<(TableId, Option<ComponentId>)> = self
            .archetypes
            .sparse_sets()
            .map(|s| (s.table().id(), s.table().components().first().copied()))
            .collect();
        for (set, component) in sparse {
            let (Some(rows), Some(component)) = (self.archetypes.sparse(set), component) else {
                continue;
            };
            let holders: Vec<Entity> = entities
                .iter()
                .copied()
                .filter(|&e| rows.row_of(e).is_some())
                .collect();
            if !holders.is_empty() {
                self.sparse_remove_rows(set, component, &holders, tick);
            }
        }
        // Entity by entity in the order given, before any row goes: removal logs and
        // observers, which read each row where it is.
        if !self.removals.is_empty() || !self.observers.is_empty() {
            for &entity in entities {
                let Ok(at) = self.entities.locate(entity) else {
                    continue;
                };
                if !self.removals.is_empty() {
                    let held: Vec<ComponentId> = self.table_of(at).components().to_vec();
                    self.log_removals(entity, &held, tick);
                }
                if let Some(table) = self.archetypes.get(at.table) {
                    self.observers.despawning(table, at.row.index());
                }
            }
        }
        let keep = self.undo_log.is_some();
        let lists = groups.iter().map(|(t, list)| (*t, list.as_slice()));
        let lists: Vec<(TableId, &[Entity])> = match first {
            Some(table) if !several => vec![(table, entities)],
            _ => lists.collect(),
        };
        for (table, list) in lists {
            let Some(t) = self.archetypes.get_mut(table) else {
                continue;
            };
            let mut rows = Rows {
                index: &mut self.entities,
                table,
            };
            if let Some(removed) = t.remove_rows(list, &mut rows, keep, tick) {
                self.record(|_| Undo::RowsRemoved { table, removed });
            }
        }
        self.record(|_| {
            Undo::Ids(IdsUndo::FreedMany {
                entities: entities.to_vec(),
            })
        });
        for &entity in entities {
            self.entities.free(entity);
        }
        Ok(())
    }

    /// Despawns one entity the plain way, row by row (outside a transaction): what
    /// `despawn_batch` must equal, for the tests.
    #[cfg(test)]
    pub(crate) fn despawn_reference(&mut self, entity: Entity) -> Result<()> {
        let at = self.entities.locate(entity)?;
        let tick = self.next_tick();
        let sparse: Vec<TableId> = self.archetypes.sparse_sets().map(|s| s.table().id()).collect();
        for table in sparse {
            self.sparse_remove(table, entity, tick);
        }
        if !self.removals.is_empty() {
            let held: Vec<ComponentId> = self.table_of(at).components().to_vec();
            self.log_removals(entity, &held, tick);
        }
        if let Some(table) = self.archetypes.get_mut(at.table) {
            self.observers.despawning(table, at.row.index());
            if let Some(moved) = table.swap_remove(at.row, tick) {
                self.entities.set_location(moved, at);
            }
        }
        self.entities.free(entity);
        Ok(())
    }

    /// Attaches `component` with a full row of `values` to a live entity that does not
    /// have it yet, moving the entity to the table of its new component set.
    pub fn insert(&mut self, entity: Entity, component: ComponentId, values: Vec<Value>) -> Result<()> {
        let at = self.entities.locate(entity)?;
        let def = self.catalog.get(component)?;
        def.check_values(&values)?;
        if let Some(table) = def.sparse_table() {
            if self
                .archetypes
                .sparse(table)
                .is_some_and(|s| s.row_of(entity).is_some())
            {
                return Err(StorageError::AlreadyHasComponent {
                    entity,
                    component: def.name().to_owned(),
                });
            }
            let tick = self.next_tick();
            self.sparse_push(table, entity, values, tick);
            return Ok(());
        }
        if self.table_of(at).contains(component) {
            return Err(StorageError::AlreadyHasComponent {
                entity,
                component: def.name().to_owned(),
            });
        }
        let tables_before = self.archetypes.len();
        let dst = self.archetypes.add_target(at.table, component, &self.catalog);
        self.record_new_tables(tables_before);
        self.record(|_| Undo::Moved {
            entity,
            from: at,
            to: dst,
            component,
            dropped: Vec::new(),
            dropped_marks: Vec::new(),
        });
        let row = self.move_entity(entity, at, dst, values);
        if let (Some(row), Some(table)) = (row, self.archetypes.get(dst)) {
            self.observers.attached(table, row.index(), component);
        }
        Ok(())
    }

    /// Detaches `component` from a live entity that has it; the entity lives on in the
    /// table of its remaining components.
    pub fn remove(&mut self, entity: Entity, component: ComponentId) -> Result<()> {
        let at = self.entities.locate(entity)?;
        let def = self.catalog.get(component)?;
        if let Some(table) = def.sparse_table() {
            if self.sparse_row(table, entity).is_none() {
                return Err(StorageError::MissingComponent {
                    entity,
                    component: def.name().to_owned(),
                });
            }
            let tick = self.next_tick();
            self.sparse_remove(table, entity, tick);
            return Ok(());
        }
        if !self.table_of(at).contains(component) {
            return Err(StorageError::MissingComponent {
                entity,
                component: def.name().to_owned(),
            });
        }
        let tables_before = self.archetypes.len();
        let dst = self.archetypes.remove_target(at.table, component, &self.catalog);
        self.record_new_tables(tables_before);
        self.record(|w| Undo::Moved {
            entity,
            from: at,
            to: dst,
            component,
            dropped: w.table_of(at).row_values(at.row.index(), |c| c == component),
            dropped_marks: w.table_of(at).row_marks(at.row.index(), |c| c == component),
        });
        self.move_entity(entity, at, dst, Vec::new());
        if !self.removals.is_empty() {
            let tick = self.tick;
            self.log_removals(entity, &[component], tick);
        }
        self.observers.detached(entity, component);
        Ok(())
    }

    /// Attaches `component` to each of `entities` (live, distinct, none holding it yet),
    /// `columns` giving its fields (one column per field, in declaration order, row `i` for
    /// `entities[i]`). Everything is checked first: on an error nothing changed. A sparse
    /// component's rows are appended to its table column by column (inside a transaction,
    /// one by one). An archetype table's entities move table by table (in table order),
    /// column by column, as one by one: those of a table whose every entity gains the
    /// component in its row order, each column moved whole, the others in the order
    /// given; inside a transaction what it takes to undo is kept typed.
    pub fn insert_batch(
        &mut self,
        component: ComponentId,
        entities: &[Entity],
        columns: Vec<Column>,
    ) -> Result<()> {
        let mut batch = vec![(component, columns)];
        self.check_batch(entities.len(), &batch)?;
        let mut columns = batch.pop().map(|(_, c)| c).unwrap_or_default();
        let def = self.catalog.get(component)?;
        let sparse = def.sparse_table().is_some();
        if !sparse && let Some(src) = self.whole_table(entities) {
            if self.archetypes.get(src).is_some_and(|t| t.contains(component)) {
                return Err(StorageError::AlreadyHasComponent {
                    entity: entities[0],
                    component: def.name().to_owned(),
                });
            }
            self.move_group(src, component, entities, columns, true);
            return Ok(());
        }
        let mut by_table: hashbrown::HashMap<TableId, Vec<(TableRow, u32)>> = hashbrown::HashMap::new();
        let mut seen = super::ids::LiveSet::default();
        for (i, &entity) in entities.iter().enumerate() {
            let at = self.entities.locate(entity)?;
            if !seen.insert(entity) || self.cell_table(entity, at, def).is_some() {
                return Err(StorageError::AlreadyHasComponent {
                    entity,
                    component: def.name().to_owned(),
                });
            }
            if !sparse {
                by_table.entry(at.table).or_default().push((at.row, i as u32));
            }
        }
        if let Some(table) = def.sparse_table() {
            self.sparse_attach(table, component, entities, columns);
            return Ok(());
        }
        let mut tables: Vec<(TableId, Vec<(TableRow, u32)>)> = by_table.into_iter().collect();
        tables.sort_unstable_by_key(|(t, _)| *t);
        for (src, mut rows) in tables {
            // A table whose every entity gains the component moves in its row order
            // (its columns whole); the others' entities in the order given.
            if self.archetypes.get(src).is_some_and(|t| t.len() == rows.len()) {
                rows.sort_unstable();
            }
            let order: Vec<u32> = rows.iter().map(|&(_, i)| i).collect();
            let list: Vec<Entity> = order.iter().map(|&i| entities[i as usize]).collect();
            let identity =
                order.len() == entities.len() && order.iter().enumerate().all(|(k, &i)| i as usize == k);
            let added = if identity {
                std::mem::take(&mut columns)
            } else {
                columns.iter().map(|c| c.copy_rows(&order)).collect()
            };
            self.move_group(src, component, &list, added, true);
        }
        Ok(())
    }

    /// `insert_batch` for `entities` the caller has just checked, under the same borrow of
    /// the world, to be live, distinct and without `component` (an INSERT's rows): a sparse
    /// component's rows, outside a transaction, are appended without checking each entity
    /// again (the columns are checked as ever); anything else is `insert_batch`.
    pub(crate) fn insert_checked_batch(
        &mut self,
        component: ComponentId,
        entities: &[Entity],
        columns: Vec<Column>,
    ) -> Result<()> {
        match self.catalog.get(component)?.sparse_table() {
            Some(table) => {
                let mut batch = vec![(component, columns)];
                self.check_batch(entities.len(), &batch)?;
                let columns = batch.pop().map(|(_, c)| c).unwrap_or_default();
                self.sparse_attach(table, component, entities, columns);
                Ok(())
            }
            _ => self.insert_batch(component, entities, columns),
        }
    }

    /// Appends the checked rows of `entities` (none holding it) to the sparse `component`'s
    /// `table`, column by column, reporting each as attached (inside a transaction, one
    /// record takes them off the end again).
    fn sparse_attach(
        &mut self,
        table: TableId,
        component: ComponentId,
        entities: &[Entity],
        columns: Vec<Column>,
    ) {
        let tick = self.next_tick();
        let Some(set) = self.archetypes.sparse_mut(table) else {
            return;
        };
        let first = set.table().len();
        set.append(entities, columns, tick);
        self.record(|_| Undo::Appended {
            table,
            count: entities.len(),
        });
        if let Some(t) = self.archetypes.get(table) {
            for row in first..first + entities.len() {
                self.observers.attached(t, row, component);
            }
        }
    }

    /// Detaches `component` from each of `entities` (live, distinct, each holding it).
    /// Everything is checked first: on an error nothing changed. A sparse component
    /// taken from every entity that has it empties its table at once (inside a
    /// transaction, one by one). Archetype tables' entities move as in `insert_batch`.
    pub fn remove_batch(&mut self, component: ComponentId, entities: &[Entity]) -> Result<()> {
        let def = self.catalog.get(component)?;
        let sparse = def.sparse_table().is_some();
        // Every holder of a sparse component, each once (each holder is live): its table
        // is emptied at once. Anything else is checked entity by entity below.
        if let Some(table) = def.sparse_table()
            && self
                .archetypes
                .sparse(table)
                .is_some_and(|set| each_row_once(set, entities))
        {
            let tick = self.next_tick();
            self.sparse_remove_rows(table, component, entities, tick);
            return Ok(());
        }
        if !sparse && let Some(src) = self.whole_table(entities) {
            if !self.archetypes.get(src).is_some_and(|t| t.contains(component)) {
                return Err(StorageError::MissingComponent {
                    entity: entities[0],
                    component: def.name().to_owned(),
                });
            }
            self.move_group(src, component, entities, Vec::new(), false);
            return Ok(());
        }
        let mut groups: hashbrown::HashMap<TableId, Vec<(TableRow, Entity)>> = hashbrown::HashMap::new();
        let mut seen = super::ids::LiveSet::default();
        for &entity in entities {
            let at = self.entities.locate(entity)?;
            if !seen.insert(entity) || self.cell_table(entity, at, def).is_none() {
                return Err(StorageError::MissingComponent {
                    entity,
                    component: def.name().to_owned(),
                });
            }
            if !sparse {
                groups.entry(at.table).or_default().push((at.row, entity));
            }
        }
        if let Some(table) = def.sparse_table() {
            let tick = self.next_tick();
            self.sparse_remove_rows(table, component, entities, tick);
            return Ok(());
        }
        let mut tables: Vec<(TableId, Vec<(TableRow, Entity)>)> = groups.into_iter().collect();
        tables.sort_unstable_by_key(|(t, _)| *t);
        for (src, mut rows) in tables {
            // As in `insert_batch`: a whole table in its row order, the others as given.
            if self.archetypes.get(src).is_some_and(|t| t.len() == rows.len()) {
                rows.sort_unstable();
            }
            let list: Vec<Entity> = rows.into_iter().map(|(_, e)| e).collect();
            self.move_group(src, component, &list, Vec::new(), false);
        }
        Ok(())
    }

    /// Whether `entities` (live, distinct, all in one table) are all of their archetype
    /// table's rows: a batch moves such a table's columns whole, and keeps no more than
    /// their places to undo it with.
    pub(crate) fn is_whole_table(&self, entities: &[Entity]) -> bool {
        let Some(at) = entities.first().and_then(|&e| self.entities.locate(e).ok()) else {
            return false;
        };
        self.archetypes
            .get(at.table)
            .is_some_and(|t| t.len() == entities.len())
    }

    /// The archetype table whose entities are `entities`, all of them in their row order
    /// (so each is live and there once): a batch that moves it whole needs no check of
    /// each entity (hashing 4M of them takes ~60 ms).
    fn whole_table(&self, entities: &[Entity]) -> Option<TableId> {
        let at = self.entities.locate(*entities.first()?).ok()?;
        let table = self.archetypes.get(at.table)?;
        (at.row.index() == 0 && table.entities() == entities).then_some(at.table)
    }

    /// Moves `list` (live, distinct, all in table `src`; `src`'s rows in their order when
    /// they are all of them) to the table `src` becomes with `component` attached
    /// (`added` its checked columns, a row per entity) or detached, as one by one in that
    /// order, column by column; inside a transaction what it takes to undo is kept typed.
    fn move_group(
        &mut self,
        src: TableId,
        component: ComponentId,
        list: &[Entity],
        added: Vec<Column>,
        attach: bool,
    ) {
        let tables_before = self.archetypes.len();
        let dst = match attach {
            true => self.archetypes.add_target(src, component, &self.catalog),
            false => self.archetypes.remove_target(src, component, &self.catalog),
        };
        self.record_new_tables(tables_before);
        let tick = self.next_tick();
        let keep = self.undo_log.is_some();
        let Some([s, d]) = self.archetypes.pair_mut(src, dst) else {
            return;
        };
        let mut rows = Rows {
            index: &mut self.entities,
            table: src,
        };
        let Some((first, moved)) = Table::move_rows(s, d, list, &mut rows, added, keep, tick) else {
            return;
        };
        for (k, &entity) in list.iter().enumerate() {
            let row = TableRow((first + k) as u32);
            self.entities.set_location(entity, Location { table: dst, row });
        }
        if let Some(moved) = moved {
            self.record(|_| Undo::RowsMoved {
                from: src,
                to: dst,
                component,
                moved,
            });
        }
        if attach {
            if let Some(table) = self.archetypes.get(dst) {
                for row in first..first + list.len() {
                    self.observers.attached(table, row, component);
                }
            }
        } else {
            for &entity in list {
                if !self.removals.is_empty() {
                    self.log_removals(entity, &[component], tick);
                }
                self.observers.detached(entity, component);
            }
        }
    }

    /// Whether a live entity has `component`.
    pub fn has(&self, entity: Entity, component: ComponentId) -> Result<bool> {
        let at = self.entities.locate(entity)?;
        let def = self.catalog.get(component)?;
        Ok(self.cell_table(entity, at, def).is_some())
    }

    /// `has` for many entities of one `component`, which is looked up once: a test to call
    /// per entity (an INSERT's check of each row). It fails as `has` does for a dead id.
    pub fn has_test(&self, component: ComponentId) -> Result<impl Fn(Entity) -> Result<bool> + '_> {
        let def = self.catalog.get(component)?;
        let sparse = def.sparse_table().map(|t| self.archetypes.sparse(t));
        Ok(move |entity: Entity| {
            let at = self.entities.locate(entity)?;
            Ok(match sparse {
                Some(set) => set.is_some_and(|set| set.row_of(entity).is_some()),
                None => self.table_of(at).contains(component),
            })
        })
    }

    /// The components a live entity has (sparse ones too), sorted by id.
    pub fn components_of(&self, entity: Entity) -> Result<Vec<ComponentId>> {
        let at = self.entities.locate(entity)?;
        let mut held = self.table_of(at).components().to_vec();
        for set in self.archetypes.sparse_sets() {
            if set.row_of(entity).is_some() {
                held.extend_from_slice(set.table().components());
            }
        }
        held.sort_unstable();
        Ok(held)
    }

    /// Where `entity` (at `at`) keeps `def`'s values: its archetype location, or its row
    /// in the component's sparse table; `None` when it does not have the component.
    fn cell_table(&self, entity: Entity, at: Location, def: &ComponentDef) -> Option<Location> {
        match def.sparse_table() {
            Some(table) => {
                let row = self.archetypes.sparse(table)?.row_of(entity)?;
                Some(Location {
                    table,
                    row: TableRow(row as u32),
                })
            }
            None => self.table_of(at).contains(def.id()).then_some(at),
        }
    }

    /// One field of a live entity.
    pub fn get(&self, entity: Entity, field: FieldId) -> Result<Value> {
        let (at, column) = self.find_cell(entity, field)?;
        let value = self.table_of(at).columns()[column].get(at.row.index());
        Ok(value.unwrap_or(Value::Null))
    }

    /// All fields of one component of a live entity, in declaration order.
    pub fn get_component(&self, entity: Entity, component: ComponentId) -> Result<Vec<Value>> {
        let at = self.entities.locate(entity)?;
        let def = self.catalog.get(component)?;
        let missing = || StorageError::MissingComponent {
            entity,
            component: def.name().to_owned(),
        };
        let at = self.cell_table(entity, at, def).ok_or_else(missing)?;
        let columns = self
            .table_of(at)
            .component_columns(component)
            .ok_or_else(missing)?;
        Ok(columns
            .iter()
            .map(|c| c.get(at.row.index()).unwrap_or(Value::Null))
            .collect())
    }

    /// Writes one field of a live entity; the value must have the field's type.
    pub fn set(&mut self, entity: Entity, field: FieldId, value: Value) -> Result<()> {
        let (at, column) = self.find_cell(entity, field)?;
        let def = self.catalog.get(field.component())?;
        def.check_value(def.field_def(field)?, &value)?;
        self.record(|w| Undo::Cells {
            table: at.table,
            column,
            rows: CellRows::From(at.row.index()),
            old: w.table_of(at).columns()[column].copy_range(at.row.index()..at.row.index() + 1),
            marks: w
                .table_of(at)
                .column_marks(column)
                .map(|m| m.copy_range(at.row.index(), 1)),
        });
        let tick = self.next_tick();
        if let Some(table) = self.archetypes.get_mut(at.table) {
            table.set(at.row, column, value, tick);
            let row = at.row.index();
            self.observers.written(table, row..row + 1, &[field]);
        }
        Ok(())
    }

    // ---- change tracking ----------------------------------------------------------------

    /// Starts tracking `component`'s changes: from now on every table holding it keeps
    /// change marks (`Table::changed_marks`, `Table::added_marks`), and writes to its
    /// fields compare each new value with the old one to mark only real changes. The rows
    /// present now are marked with a new tick, as added and changed: a reader that ran
    /// before cannot have seen them as tracked (a component dropped and declared again
    /// under its name is new to it). Returns false when it already was tracked. Tracking
    /// stays on; it is not part of a transaction.
    pub fn track_changes(&mut self, component: ComponentId) -> Result<bool> {
        self.catalog.get(component)?;
        if !self.catalog.track(component) {
            return Ok(false);
        }
        let tick = self.next_tick();
        let mut tables = self.archetypes.with_component(component).to_vec();
        tables.extend(self.catalog.get(component)?.sparse_table());
        for id in tables {
            if let Some(table) = self.archetypes.get_mut(id) {
                table.track(component, tick);
            }
        }
        Ok(true)
    }

    /// Starts logging which entities lose `component` (detached, or despawned holding
    /// it), for `removed()`. Returns false when it already was. Like change tracking, it
    /// stays on and is not part of a transaction.
    pub fn track_removals(&mut self, component: ComponentId) -> Result<bool> {
        self.catalog.get(component)?;
        if self.removal_log(component).is_some() {
            return Ok(false);
        }
        self.removals.push((component, RemovalLog::default()));
        Ok(true)
    }

    /// `component`'s removal log; `None` while its removals are not tracked.
    pub fn removal_log(&self, component: ComponentId) -> Option<&RemovalLog> {
        self.removals
            .iter()
            .find(|(c, _)| *c == component)
            .map(|(_, log)| log)
    }

    /// Every removal log, with its component.
    pub fn removal_logs(&self) -> impl Iterator<Item = (ComponentId, &RemovalLog)> {
        self.removals.iter().map(|(c, log)| (*c, log))
    }

    fn removal_log_mut(&mut self, component: ComponentId) -> Option<&mut RemovalLog> {
        self.removals
            .iter_mut()
            .find(|(c, _)| *c == component)
            .map(|(_, log)| log)
    }

    /// Drops the first `count` entries of `component`'s removal log.
    pub(crate) fn drop_removals(&mut self, component: ComponentId, count: usize) {
        if let Some(log) = self.removal_log_mut(component) {
            let front = log.drop_front(count);
            self.record(|_| Undo::RemovalsDropped { component, front });
        }
    }

    /// Moves the write tick past `tick` (a loaded world, past the one it replaces, so
    /// that what readers of the old one saw cannot hide what it holds).
    /// Moves the write tick up to `tick` (a journal's record says a write began there; the
    /// writes between, undone or failed, are not in the journal).
    pub(crate) fn tick_up_to(&mut self, tick: u64) {
        self.tick = self.tick.max(tick);
    }

    pub(crate) fn tick_past(&mut self, tick: u64) {
        self.tick = self.tick.max(tick).saturating_add(1);
    }

    /// The schedule tick that removals logged from now on are stamped with.
    pub fn set_log_tick(&mut self, tick: u64) {
        self.log_tick = tick;
    }

    /// Logs that `entity` lost those of `components` whose removals are tracked, at write
    /// tick `write`.
    fn log_removals(&mut self, entity: Entity, components: &[ComponentId], write: u64) {
        let tick = self.log_tick;
        for (c, log) in &mut self.removals {
            if components.contains(c) {
                log.push(entity, write, tick);
                if let Some(undo) = &mut self.undo_log {
                    undo.push(Undo::Logged { component: *c });
                }
            }
        }
    }

    // ---- observers --------------------------------------------------------------------

    /// Adds a structure that follows every change to the rows from now on (replacing one
    /// of the same type). It learns nothing of the rows already held: fill it from
    /// `tables()` before adding it.
    pub fn observe<O: Observer>(&mut self, observer: O) {
        self.record(|w| Undo::Observers(w.observers.clone()));
        self.observers.add(Box::new(observer));
        self.schema = SchemaStamp::new();
    }

    /// The observer of type `O`, if one was added.
    pub fn observer<O: Observer>(&self) -> Option<&O> {
        self.observers.get()
    }

    /// The observer of type `O`, to change it (for instance its definitions); the rows it
    /// follows stay the world's to change.
    ///
    /// Inside a transaction this first saves every observer whole, so that ROLLBACK can
    /// put them back: it is meant for changes to definitions, not for every write.
    pub fn observer_mut<O: Observer>(&mut self) -> Option<&mut O> {
        self.observers.get::<O>()?;
        self.record(|w| Undo::Observers(w.observers.clone()));
        self.schema = SchemaStamp::new();
        self.observers.get_mut()
    }

    // ---- tables -----------------------------------------------------------------------

    /// Every archetype table, in id order, the void table first.
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.archetypes.iter()
    }

    /// Every table that holds values: the archetype tables, then the sparse components'
    /// tables (`TableId::is_sparse`), each holding one sparse component for the entities
    /// that have it.
    pub fn all_tables(&self) -> impl Iterator<Item = &Table> {
        self.archetypes
            .iter()
            .chain(self.archetypes.sparse_sets().map(|s| s.table()))
    }

    /// The row of `entity` in the sparse component table `table`; `None` when it does not
    /// have that component (or `table` is no sparse component's).
    pub fn sparse_row(&self, table: TableId, entity: Entity) -> Option<usize> {
        self.archetypes.sparse(table)?.row_of(entity)
    }

    /// The number of tables, the empty ones included.
    pub fn table_count(&self) -> usize {
        self.archetypes.len()
    }

    /// A table by its name, `arch_` and 16 hex digits.
    pub fn table_by_name(&self, name: &str) -> Option<&Table> {
        let id = self.archetypes.by_name(TableName::parse(name)?)?;
        self.archetypes.get(id)
    }

    /// The current write tick: every write advances it and stamps what it changed. A
    /// reader that remembers it sees as changed (added) the rows marked after it.
    pub fn tick(&self) -> u64 {
        self.tick
    }

    /// Changes whenever table ids are renumbered (a component type was dropped, a
    /// transaction rolled back) or an event type was dropped. Until it changes, table ids only grow: a cached list of matching tables stays valid and needs
    /// only extending with tables numbered at or after `table_count()` when it was built.
    pub fn layout_epoch(&self) -> u64 {
        self.layout_epoch
    }

    /// The schema's stamp: while it stays the same, so do the component and event types,
    /// the observers (indexes) and the table ids (new tables only add ids), so a plan or a
    /// table list made against the world still holds. A copy of the world has its own.
    pub fn schema_stamp(&self) -> u64 {
        self.schema.0
    }

    /// Everything the world holds, as text, for tests that check a rollback restored it
    /// exactly: the catalog, the entity index (generations and free list included) and
    /// every table's ids and columns in row order. Not the indexes (see their own check)
    /// nor caches and write ticks.
    #[doc(hidden)]
    pub fn digest(&self) -> String {
        use std::fmt::Write;
        let components: Vec<&ComponentDef> = self.components().collect();
        let mut out = format!("{components:?}\n{:?}\n", self.entities);
        for e in self.events() {
            let _ = writeln!(out, "{e:?}");
        }
        for t in self.all_tables() {
            let _ = writeln!(
                out,
                "{:?} {} {:?} {:?} {:?}",
                t.id(),
                t.name(),
                t.components(),
                t.entities(),
                t.columns()
            );
        }
        out
    }

    /// `digest`, and what a reader compares against: the write tick, every tracked
    /// component's marks in every table, the removal logs. For tests that check a file
    /// database reopens as exactly the world it was.
    #[doc(hidden)]
    pub fn digest_exact(&self) -> String {
        use std::fmt::Write;
        let mut out = self.digest();
        let _ = writeln!(out, "write tick {}", self.tick);
        for t in self.all_tables() {
            for &c in t.components() {
                if let Some(added) = t.added_marks(c) {
                    let _ = writeln!(out, "{} added {:?}: {:?}", t.name(), c, added.ticks());
                    let fields = self.catalog.get(c).map_or(0, |d| d.fields().len());
                    for f in 0..fields {
                        let field = FieldId::new(c, f as u16);
                        let ticks = t.changed_marks(field).map(|m| m.ticks().to_vec());
                        let _ = writeln!(out, "{} changed {field:?}: {ticks:?}", t.name());
                    }
                }
            }
        }
        let _ = writeln!(out, "{:?}", self.removals);
        out
    }

    /// Checks the invariants that tie the entity index to the tables: every column as long
    /// as its table, every row's entity located at exactly that row, the live count equal
    /// to the rows, table names unique. Meant for tests and debugging; a failure is a bug.
    pub fn check_integrity(&self) -> std::result::Result<(), String> {
        let mut rows = 0;
        let mut names = std::collections::HashSet::new();
        for table in self.tables() {
            if !names.insert(table.name()) {
                return Err(format!("two tables are named {}", table.name()));
            }
            for (i, column) in table.columns().iter().enumerate() {
                if column.len() != table.len() {
                    return Err(format!(
                        "{}: column {i} has {} rows, the table {}",
                        table.name(),
                        column.len(),
                        table.len()
                    ));
                }
            }
            for (row, &entity) in table.entities().iter().enumerate() {
                let expected = (table.id(), TableRow(row as u32));
                match self.locate(entity) {
                    Ok(found) if found == expected => {}
                    other => {
                        return Err(format!(
                            "{entity:?} is in {} row {row} but the index says {other:?}",
                            table.name()
                        ));
                    }
                }
            }
            rows += table.len();
        }
        if rows != self.len() {
            return Err(format!(
                "{} rows in tables but {} live entities",
                rows,
                self.len()
            ));
        }
        for set in self.archetypes.sparse_sets() {
            set.check()?;
            if let Some(dead) = set.table().entities().iter().find(|e| !self.contains(**e)) {
                return Err(format!("sparse set holds {dead}, which is not alive"));
            }
        }
        Ok(())
    }

    // ---- internals ----------------------------------------------------------------------

    pub(crate) fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    fn table_of(&self, at: Location) -> &Table {
        match self.archetypes.get(at.table) {
            Some(table) => table,
            None => unreachable!("the entity index points only at existing tables"),
        }
    }

    /// What `spawn` and `spawn_batch` share once their values are checked and their
    /// (archetype) components sorted without repeats: refuses a spawn past the last free
    /// id, then (nothing can fail after this) advances the tick and finds or creates the
    /// table.
    fn spawn_target<T>(
        &mut self,
        components: &mut [(ComponentId, T)],
        count: usize,
    ) -> Result<(&mut Table, &mut EntityIndex, u64)> {
        self.entities.reserve(count)?;
        let tick = self.next_tick();
        let ids: Vec<ComponentId> = components.iter().map(|(id, _)| *id).collect();
        let table = self.archetypes.find_or_create(&ids, &self.catalog);
        Ok((table, &mut self.entities, tick))
    }

    /// Sorts `components` by id and refuses one given twice.
    fn check_repeats<T>(&self, components: &mut [(ComponentId, T)]) -> Result<()> {
        components.sort_by_key(|(id, _)| *id);
        if let Some(pair) = components.windows(2).find(|pair| pair[0].0 == pair[1].0) {
            let name = self.catalog.get(pair[0].0)?.name().to_owned();
            return Err(StorageError::RepeatedComponent(name));
        }
        Ok(())
    }

    /// Takes the sparse components out of `components` (checked, existing), each with its
    /// table.
    fn take_sparse<T>(&self, components: &mut Vec<(ComponentId, T)>) -> Vec<(TableId, T)> {
        let sparse = |c: ComponentId| self.catalog.get(c).ok().and_then(ComponentDef::sparse_table);
        if components.iter().all(|(c, _)| sparse(*c).is_none()) {
            return Vec::new();
        }
        components
            .extract_if(.., |(c, _)| sparse(*c).is_some())
            .filter_map(|(c, values)| Some((sparse(c)?, values)))
            .collect()
    }

    /// Gives a live `entity` that lacks it the sparse component of `table`, with its
    /// checked row of values.
    fn sparse_push(&mut self, table: TableId, entity: Entity, values: Vec<Value>, tick: u64) {
        let Some(set) = self.archetypes.sparse_mut(table) else {
            return;
        };
        let row = set.push(entity, values, tick);
        self.record(|_| Undo::Appended { table, count: 1 });
        if let Some(t) = self.archetypes.get(table)
            && let Some(&c) = t.components().first()
        {
            self.observers.attached(t, row.index(), c);
        }
    }

    /// `sparse_push` of many new entities at once, column-wise.
    fn sparse_append(&mut self, table: TableId, entities: &[Entity], columns: Vec<Column>, tick: u64) {
        let Some(set) = self.archetypes.sparse_mut(table) else {
            return;
        };
        let first = set.table().len();
        set.append(entities, columns, tick);
        self.record(|_| Undo::Appended {
            table,
            count: entities.len(),
        });
        self.report_spawned(table, first..first + entities.len());
    }

    /// Takes the sparse component of `table` from `entity`, which has it.
    /// Takes the rows of `entities` (live, distinct, each holding it) from the sparse
    /// `component`'s `table` at one tick, column by column (inside a transaction, kept
    /// typed to undo), and reports each as detached.
    fn sparse_remove_rows(&mut self, table: TableId, component: ComponentId, entities: &[Entity], tick: u64) {
        let keep = self.undo_log.is_some();
        let Some(set) = self.archetypes.sparse_mut(table) else {
            return;
        };
        if let Some(removed) = set.remove_rows(entities, keep, tick) {
            self.record(|_| Undo::SparseRowsRemoved { table, removed });
        }
        for &entity in entities {
            if !self.removals.is_empty() {
                self.log_removals(entity, &[component], tick);
            }
            self.observers.detached(entity, component);
        }
    }

    fn sparse_remove(&mut self, table: TableId, entity: Entity, tick: u64) {
        let Some(row) = self.archetypes.sparse(table).and_then(|s| s.row_of(entity)) else {
            return;
        };
        self.record(|w| {
            let t = w.table_of(Location {
                table,
                row: TableRow(row as u32),
            });
            Undo::Removed {
                table,
                row: TableRow(row as u32),
                entity,
                values: t.row_values(row, |_| true),
                marks: t.row_marks(row, |_| true),
            }
        });
        let component = self
            .archetypes
            .get(table)
            .and_then(|t| t.components().first().copied());
        if let Some(set) = self.archetypes.sparse_mut(table) {
            set.swap_remove(TableRow(row as u32), tick);
        }
        if let Some(c) = component {
            if !self.removals.is_empty() {
                self.log_removals(entity, &[c], tick);
            }
            self.observers.detached(entity, c);
        }
    }

    /// The location of a live entity and the column of `field` in its table.
    fn find_cell(&self, entity: Entity, field: FieldId) -> Result<(Location, usize)> {
        let at = self.entities.locate(entity)?;
        let def = self.catalog.get(field.component())?;
        def.field_def(field)?;
        let missing = || StorageError::MissingComponent {
            entity,
            component: def.name().to_owned(),
        };
        let at = self.cell_table(entity, at, def).ok_or_else(missing)?;
        let column = self.table_of(at).column_index(field).ok_or_else(missing)?;
        Ok((at, column))
    }

    /// Moves a live entity's row from its table to `dst`, filling `dst`'s extra columns
    /// with `added`, and fixes the locations of both the entity and the row swapped in.
    fn move_entity(
        &mut self,
        entity: Entity,
        at: Location,
        dst: TableId,
        added: Vec<Value>,
    ) -> Option<TableRow> {
        let tick = self.next_tick();
        let [src_table, dst_table] = self.archetypes.pair_mut(at.table, dst)?;
        let (row, swapped) = Table::move_row(src_table, at.row, dst_table, added, tick);
        self.entities.set_location(entity, Location { table: dst, row });
        if let Some(swapped) = swapped {
            self.entities.set_location(swapped, at);
        }
        Some(row)
    }

    /// Records how to take back a spawn of `ids` into `table`, which found the world
    /// with `before` = (tables, entity slots); `claim` is the undo of ids claimed by
    /// `SPAWN AT`, taken before the claim.
    fn record_spawn(
        &mut self,
        before: (usize, (usize, u64)),
        table: TableId,
        ids: &[Entity],
        claim: Option<super::entity::IdsUndo>,
    ) {
        if self.undo_log.is_none() {
            return;
        }
        self.record_new_tables(before.0);
        let ids_undo = claim.unwrap_or_else(|| EntityIndex::issued_undo(ids, before.1));
        self.record(|_| Undo::Ids(ids_undo));
        self.record(|_| Undo::Appended {
            table,
            count: ids.len(),
        });
    }

    // ---- rollback -----------------------------------------------------------------

    /// Takes back `records` (newest last), newest first.
    pub(crate) fn undo(&mut self, records: Vec<Undo<World>>) {
        let tick = self.next_tick();
        for record in records.into_iter().rev() {
            self.undo_one(record, tick);
        }
        // Tables created and dropped again may have their ids reused: cached lists of
        // table ids must be rebuilt, not extended.
        self.layout_epoch += 1;
        self.schema = SchemaStamp::new();
    }

    fn undo_one(&mut self, record: Undo<World>, tick: u64) {
        match record {
            Undo::Ids(ids) => self.entities.undo(ids),
            Undo::Appended { table, count } => {
                let Some(t) = self.archetypes.get(table) else {
                    return;
                };
                let keep = t.len().saturating_sub(count);
                for row in (keep..t.len()).rev() {
                    self.observers.despawning(t, row);
                }
                if let Some(set) = self.archetypes.sparse_mut(table) {
                    set.truncate(keep, tick);
                } else if let Some(t) = self.archetypes.get_mut(table) {
                    t.truncate(keep, tick);
                }
            }
            Undo::RowsMoved {
                from,
                to,
                component,
                moved,
            } => {
                // An attach's entities leave the component (told first, as they go); a
                // detach's get it back (told once their rows are back).
                let attached = self.archetypes.get(to).is_some_and(|t| t.contains(component));
                if attached && let Some(t) = self.archetypes.get(to) {
                    let tail = t.entities().len().saturating_sub(moved.count());
                    for &entity in &t.entities()[tail..] {
                        self.observers.detached(entity, component);
                    }
                }
                let Some([dst, src]) = self.archetypes.pair_mut(to, from) else {
                    return;
                };
                let mut rows = Rows {
                    index: &mut self.entities,
                    table: from,
                };
                let restored = Table::unmove_rows(src, dst, moved, &mut rows, tick);
                if attached {
                    return;
                }
                let Some(t) = self.archetypes.get(from) else {
                    return;
                };
                let rows: Vec<usize> = match restored {
                    Restored::Rows(rows) => rows.collect(),
                    Restored::Entities(entities) => entities
                        .iter()
                        .filter_map(|&e| self.entities.locate(e).ok())
                        .map(|at| at.row.index())
                        .collect(),
                };
                for row in rows {
                    self.observers.attached(t, row, component);
                }
            }
            Undo::RowsRemoved { table, removed } => {
                let Some(t) = self.archetypes.get_mut(table) else {
                    return;
                };
                let mut rows = Rows {
                    index: &mut self.entities,
                    table,
                };
                let restored = t.restore_rows(removed, &mut rows, tick);
                let Some(t) = self.archetypes.get(table) else {
                    return;
                };
                match restored {
                    Restored::Rows(rows) => self.observers.spawned(t, rows),
                    Restored::Entities(entities) if !self.observers.is_empty() => {
                        let mut rows: Vec<usize> = entities
                            .iter()
                            .filter_map(|&e| self.entities.locate(e).ok())
                            .map(|at| at.row.index())
                            .collect();
                        rows.sort_unstable();
                        for run in rows.chunk_by(|a, b| a + 1 == *b) {
                            self.observers.spawned(t, run[0]..run[run.len() - 1] + 1);
                        }
                    }
                    Restored::Entities(_) => {}
                }
            }
            Undo::SparseRowsRemoved { table, removed } => {
                let Some(set) = self.archetypes.sparse_mut(table) else {
                    return;
                };
                let restored = set.restore_rows(removed, tick);
                let Some(set) = self.archetypes.sparse(table) else {
                    return;
                };
                let rows: Vec<usize> = match restored {
                    Restored::Rows(rows) => rows.collect(),
                    Restored::Entities(entities) => {
                        let mut rows: Vec<usize> = entities.iter().filter_map(|&e| set.row_of(e)).collect();
                        rows.sort_unstable();
                        rows
                    }
                };
                if !self.observers.is_empty() {
                    for run in rows.chunk_by(|a, b| a + 1 == *b) {
                        self.observers
                            .spawned(set.table(), run[0]..run[run.len() - 1] + 1);
                    }
                }
            }
            Undo::Removed {
                table,
                row,
                entity,
                values,
                marks,
            } => {
                if let Some(set) = self.archetypes.sparse_mut(table) {
                    set.restore_row(row, entity, values, tick);
                } else if let Some(t) = self.archetypes.get_mut(table)
                    && let Some(moved) = t.restore_row(row, entity, values, tick)
                {
                    let last = TableRow((t.len() - 1) as u32);
                    self.entities.set_location(moved, Location { table, row: last });
                }
                let Some(t) = self.archetypes.get_mut(table) else {
                    return;
                };
                t.set_row_marks(row.index(), &marks, |_| true);
                self.observers.spawned(t, row.index()..row.index() + 1);
            }
            Undo::Moved {
                entity,
                from,
                to,
                component,
                dropped,
                dropped_marks,
            } => {
                let attached = self.archetypes.get(to).is_some_and(|t| t.contains(component));
                if attached {
                    self.observers.detached(entity, component);
                }
                let Some([dst, src]) = self.archetypes.pair_mut(to, from.table) else {
                    return;
                };
                let Some(last) = dst.len().checked_sub(1) else {
                    return;
                };
                let (_, swapped) =
                    super::table::Table::move_row(dst, TableRow(last as u32), src, dropped, tick);
                debug_assert!(swapped.is_none(), "the moved row was the last of its table");
                if let Some(back) = src.move_last_to(from.row) {
                    let end = TableRow((src.len() - 1) as u32);
                    self.entities.set_location(
                        back,
                        Location {
                            table: from.table,
                            row: end,
                        },
                    );
                }
                self.entities.set_location(entity, from);
                src.set_row_marks(from.row.index(), &dropped_marks, |c| c == component);
                if !attached {
                    self.observers.attached(src, from.row.index(), component);
                }
            }
            Undo::Cells {
                table,
                column,
                rows,
                old,
                marks,
            } => {
                let Some(t) = self.archetypes.get_mut(table) else {
                    return;
                };
                let len = old.len();
                let Some(c) = t.column_mut(column, tick) else {
                    return;
                };
                let span = match &rows {
                    CellRows::From(first) => {
                        c.write_range(*first, Values::Own(old));
                        *first..*first + len
                    }
                    CellRows::Picked(rows) => {
                        let span = match (rows.iter().min(), rows.iter().max()) {
                            (Some(&lo), Some(&hi)) => lo as usize..hi as usize + 1,
                            _ => 0..0,
                        };
                        c.write_rows(rows, Values::Own(old));
                        span
                    }
                };
                // A record taken before tracking began has no marks to put back: the
                // rows it restores are marked as changed by the undo.
                if let (None, Some(list)) = (&marks, t.column_marks_mut(column)) {
                    match &rows {
                        CellRows::From(first) => list.set_range(*first..*first + len, tick),
                        CellRows::Picked(rows) => rows.iter().for_each(|&r| list.set(r as usize, tick)),
                    }
                }
                if let (Some(marks), Some(list)) = (marks, t.column_marks_mut(column)) {
                    match &rows {
                        CellRows::From(first) => {
                            for (k, tick) in marks.into_iter().enumerate() {
                                list.set(first + k, tick);
                            }
                        }
                        CellRows::Picked(rows) => {
                            for (&row, tick) in rows.iter().zip(marks) {
                                list.set(row as usize, tick);
                            }
                        }
                    }
                }
                if let Some(field) = t.field_of(column)
                    && self.observers.watches(field)
                {
                    self.observers.written(t, span, &[field]);
                }
            }
            Undo::TableCreated => self.archetypes.remove_last(),
            Undo::ComponentCreated => {
                if self
                    .catalog
                    .remove_last()
                    .is_some_and(|def| def.sparse_table().is_some())
                {
                    self.archetypes.remove_last_sparse();
                }
            }
            Undo::EventCreated => self.events.remove_last(),
            Undo::EventDropped(queue) => self.events.restore(*queue),
            Undo::Emitted { event, count } => self.events.truncate_back(event, count),
            Undo::EventsDropped { event, rows } => self.events.undrop(event, rows),
            Undo::Logged { component } => {
                if let Some(log) = self.removal_log_mut(component) {
                    log.pop();
                }
            }
            Undo::RemovalsDropped { component, front } => {
                if let Some(log) = self.removal_log_mut(component) {
                    log.undrop(front);
                }
            }
            Undo::Observers(observers) => self.observers = observers,
            Undo::World(world) => {
                let (log, tick, epoch) = (self.undo_log.take(), self.tick, self.layout_epoch);
                let savepoints = self.savepoints;
                // Tracking is not part of a transaction: what is tracked now stays so.
                let tracked: Vec<ComponentId> = self
                    .catalog
                    .iter()
                    .filter(|c| c.is_tracked())
                    .map(|c| c.id())
                    .collect();
                let logged: Vec<ComponentId> = self.removals.iter().map(|(c, _)| *c).collect();
                let log_tick = self.log_tick;
                *self = *world;
                self.log_tick = log_tick;
                self.undo_log = log;
                self.savepoints = savepoints;
                self.tick = self.tick.max(tick);
                self.layout_epoch = self.layout_epoch.max(epoch);
                for c in tracked {
                    // A component the image does not have is gone with the rollback.
                    let _ = self.track_changes(c);
                }
                for c in logged {
                    let _ = self.track_removals(c);
                }
            }
        }
    }

    /// Tells the observers of rows just spawned into `table`.
    fn report_spawned(&mut self, table: TableId, rows: std::ops::Range<usize>) {
        if let Some(table) = self.archetypes.get(table) {
            self.observers.spawned(table, rows);
        }
    }
}

/// The entity index as one table's rows see it, for `Table::remove_rows`/`restore_rows`.
struct Rows<'a> {
    index: &'a mut EntityIndex,
    table: TableId,
}

impl RowIndex for Rows<'_> {
    fn row_of(&self, entity: Entity) -> Option<TableRow> {
        let at = self.index.locate(entity).ok()?;
        (at.table == self.table).then_some(at.row)
    }

    fn moved(&mut self, entity: Entity, row: TableRow) {
        self.index.set_location(
            entity,
            Location {
                table: self.table,
                row,
            },
        );
    }
}

/// The bytes a row of `table` takes in typed columns and mark lists (a text's own bytes
/// not counted).
fn row_bytes(table: &Table) -> usize {
    let marks = table.mark_lists() * std::mem::size_of::<u64>();
    table.columns().iter().map(Column::value_size).sum::<usize>() + marks
}

/// Whether `entities` are every entity of the sparse `set`, each once.
fn each_row_once(set: &super::sparse::SparseSet, entities: &[Entity]) -> bool {
    if set.table().len() != entities.len() {
        return false;
    }
    let mut hit = vec![false; entities.len()];
    entities.iter().all(|&e| match set.row_of(e) {
        Some(row) if !hit[row] => {
            hit[row] = true;
            true
        }
        _ => false,
    })
}
