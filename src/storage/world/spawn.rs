//! Entities spawned and despawned, one or many at once, and which are alive and where.
//! Each checks all it can fail on (values, repeats, ids) before it changes anything, and
//! records how to take itself back inside a transaction; the observers hear of spawned
//! rows once they are in, of despawned ones before they go.

use smallvec::SmallVec;

use crate::storage::column::Column;
use crate::storage::component::ComponentDef;
use crate::storage::entity::{EntityIndex, IdsUndo, Location};
use crate::storage::error::StorageError;
use crate::storage::ids::{ComponentId, Entity, TableId, TableRow};
use crate::storage::table::Table;
use crate::storage::undo::Undo;
use crate::storage::value::Value;

use super::{Result, Rows, World};

/// One entity's components, each with its row of field values, for `World::spawn_row`:
/// up to two components, and a component's row of up to four values, held in place.
pub(crate) type SpawnRow = SmallVec<[(ComponentId, SmallVec<[Value; 4]>); 2]>;

impl World {
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

    /// The table and row holding `entity`, when it is alive: `locate` without an error
    /// built and dropped where its absence is an answer (a point read's).
    #[inline]
    pub fn find(&self, entity: Entity) -> Option<(TableId, TableRow)> {
        let at = self.entities.location(entity)?;
        Some((at.table, at.row))
    }

    /// Spawns one entity holding the given components, each with a full row of field values
    /// in declaration order (see `ComponentDef::defaults`). No components: an entity in the
    /// void table.
    pub fn spawn_values(&mut self, components: Vec<(ComponentId, Vec<Value>)>) -> Result<Entity> {
        let mut row: SpawnRow = components
            .into_iter()
            .map(|(id, values)| (id, SmallVec::from_vec(values)))
            .collect();
        self.spawn_row(&mut row)
    }

    /// `spawn_values`, its list of components and each one's row of values held in place
    /// when short (a `SpawnRow`): a SPAWN of one entity of up to two components makes no
    /// list for them. The row is lent, not moved, and its values are drained from it one
    /// by one: a `SpawnRow` is some hundreds of bytes, which a move copies whole.
    pub(crate) fn spawn_row(&mut self, components: &mut SpawnRow) -> Result<Entity> {
        for (id, values) in components.iter() {
            self.catalog.get(*id)?.check_values(values)?;
        }
        self.check_repeats(components)?;
        // Sparse components are rare: the list is taken apart only when it holds one.
        let sparse = if components.iter().any(|(c, _)| self.sparse_table_of(*c).is_some()) {
            let mut all = std::mem::take(components).into_vec();
            let sparse = self.take_sparse(&mut all);
            *components = SmallVec::from_vec(all);
            sparse
        } else {
            Vec::new()
        };
        let before = (self.archetypes.len(), self.entities.mark());
        let (table, entities, tick) = self.spawn_target(components, 1)?;
        let row = TableRow(table.len() as u32);
        let entity = entities.alloc(Location {
            table: table.id(),
            row,
        });
        table.push_row(entity, components.iter_mut().flat_map(|(_, v)| v.drain(..)), tick);
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
    pub fn spawn_columns(
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
        let columns = all_columns(components);
        table.append_rows(&entities, columns, tick);
        let table = table.id();
        self.record_spawn(before, table, &entities, None);
        self.report_spawned(table, first..first + len);
        for (table, columns) in sparse {
            self.sparse_append(table, &entities, columns, tick);
        }
        Ok(entities)
    }

    /// `spawn_columns` under ids chosen by the caller (`SPAWN AT`, a dump read back). Fails,
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
        let columns = all_columns(components);
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
    pub(super) fn check_batch(&self, len: usize, components: &[(ComponentId, Vec<Column>)]) -> Result<()> {
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
        let mut seen = crate::storage::ids::LiveSet::default();
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

    /// What `spawn_row` and `spawn_columns` share once their values are checked and their
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
        let ids: smallvec::SmallVec<[ComponentId; 8]> = components.iter().map(|(id, _)| *id).collect();
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
    /// table; with none among them, nothing is allocated.
    fn take_sparse<T>(&self, components: &mut Vec<(ComponentId, T)>) -> Vec<(TableId, T)> {
        components
            .extract_if(.., |(c, _)| self.sparse_table_of(*c).is_some())
            .filter_map(|(c, values)| Some((self.sparse_table_of(c)?, values)))
            .collect()
    }

    /// The table of `component` when it is sparse (and exists).
    fn sparse_table_of(&self, component: ComponentId) -> Option<TableId> {
        self.catalog
            .get(component)
            .ok()
            .and_then(ComponentDef::sparse_table)
    }

    /// Records how to take back a spawn of `ids` into `table`, which found the world
    /// with `before` = (tables, entity slots); `claim` is the undo of ids claimed by
    /// `SPAWN AT`, taken before the claim.
    fn record_spawn(
        &mut self,
        before: (usize, (usize, u64)),
        table: TableId,
        ids: &[Entity],
        claim: Option<crate::storage::entity::IdsUndo>,
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

    /// Tells the observers of rows just spawned into `table`.
    pub(super) fn report_spawned(&mut self, table: TableId, rows: std::ops::Range<usize>) {
        if let Some(table) = self.archetypes.get(table) {
            self.observers.spawned(table, rows);
        }
    }
}

/// The columns of `components` one after another, in their order: a lone component's
/// list as it is (a SPAWN of one component paid a new list and its copy for it).
fn all_columns(mut components: Vec<(ComponentId, Vec<Column>)>) -> Vec<Column> {
    if components.len() == 1
        && let Some((_, columns)) = components.pop()
    {
        return columns;
    }
    components.into_iter().flat_map(|(_, columns)| columns).collect()
}
