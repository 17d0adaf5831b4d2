//! The catalog: component types declared, looked up and dropped. A component and an event
//! type never share a name; declaring or dropping one gives the world a new schema stamp,
//! and dropping one detaches it from every entity (renumbering the tables, so the layout
//! epoch moves on too) before its id is retired.

use crate::storage::component::{ComponentDef, FieldDef, StorageKind};
use crate::storage::entity::Location;
use crate::storage::error::StorageError;
use crate::storage::ids::{ComponentId, FieldId, TableRow};
use crate::storage::table::Table;
use crate::storage::undo::Undo;

use super::{Result, SchemaStamp, World};

impl World {
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

    /// The names of `components` (those that exist), sorted, comma-separated.
    pub fn names_of(&self, components: &[ComponentId]) -> String {
        let mut names: Vec<&str> = components
            .iter()
            .filter_map(|c| self.component(*c).ok())
            .map(|c| c.name())
            .collect();
        names.sort_unstable();
        names.join(", ")
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
}
