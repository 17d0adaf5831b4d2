//! Components attached to and detached from live entities, one or many at once: an
//! archetype component moves each entity's row to the table of its new component set (a
//! whole table's columns move whole), a sparse one adds or takes a row of its own table.
//! Everything is checked before anything moves, and the entity index follows every row.

use crate::storage::column::Column;
use crate::storage::entity::Location;
use crate::storage::error::StorageError;
use crate::storage::ids::{ComponentId, Entity, TableId, TableRow};
use crate::storage::table::Table;
use crate::storage::undo::Undo;
use crate::storage::value::Value;

use super::{Result, Rows, World};

impl World {
    /// Attaches `component` with a full row of `values` to a live entity that does not
    /// have it yet, moving the entity to the table of its new component set.
    pub fn attach(&mut self, entity: Entity, component: ComponentId, values: Vec<Value>) -> Result<()> {
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
            self.observers
                .attached(table, row.index()..row.index() + 1, component);
        }
        Ok(())
    }

    /// Detaches `component` from a live entity that has it; the entity lives on in the
    /// table of its remaining components.
    pub fn detach(&mut self, entity: Entity, component: ComponentId) -> Result<()> {
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
            let tick = self.tick.get();
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
        let mut seen = crate::storage::ids::LiveSet::default();
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
            self.observers
                .attached(t, first..first + entities.len(), component);
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
        let mut seen = crate::storage::ids::LiveSet::default();
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
                self.observers
                    .attached(table, first..first + list.len(), component);
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
}

/// Whether `entities` are every entity of the sparse `set`, each once.
fn each_row_once(set: &crate::storage::sparse::SparseSet, entities: &[Entity]) -> bool {
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
