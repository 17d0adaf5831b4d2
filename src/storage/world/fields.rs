//! An entity's components and fields: which components it has (sparse ones too), its
//! values read, one field written (checked against its type first, recorded for a
//! rollback, then told to the observers).

use std::cell::Cell;

use crate::storage::Written;
use crate::storage::component::ComponentDef;
use crate::storage::entity::Location;
use crate::storage::error::StorageError;
use crate::storage::ids::{ComponentId, Entity, FieldId, TableId, TableRow};
use crate::storage::undo::{CellRows, Undo};
use crate::storage::value::Value;

use super::{Result, World};

impl World {
    /// Whether a live entity has `component`.
    pub fn has(&self, entity: Entity, component: ComponentId) -> Result<bool> {
        let at = self.entities.locate(entity)?;
        let def = self.catalog.get(component)?;
        Ok(self.cell_table(entity, at, def).is_some())
    }

    /// `has` for many entities of one `component`, which is looked up once: a test to call
    /// per entity (an INSERT's check of each row). It fails as `has` does for a dead id.
    /// An archetype table's answer is kept for the next entity in the same table (a
    /// scan's rows come table by table): most entities cost their location alone.
    pub fn has_test(&self, component: ComponentId) -> Result<impl Fn(Entity) -> Result<bool> + '_> {
        let def = self.catalog.get(component)?;
        let sparse = def.sparse_table().map(|t| self.archetypes.sparse(t));
        let last: Cell<Option<(TableId, bool)>> = Cell::new(None);
        Ok(move |entity: Entity| {
            let at = self.entities.locate(entity)?;
            Ok(match sparse {
                Some(set) => set.is_some_and(|set| set.row_of(entity).is_some()),
                None => match last.get() {
                    Some((table, holds)) if table == at.table => holds,
                    _ => {
                        let holds = self.table_of(at).contains(component);
                        last.set(Some((at.table, holds)));
                        holds
                    }
                },
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
    pub(super) fn cell_table(&self, entity: Entity, at: Location, def: &ComponentDef) -> Option<Location> {
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

    /// Where a live `entity`'s `component` values are: the table and the row (`None`
    /// when it does not have it).
    pub(crate) fn cells_of(
        &self,
        entity: Entity,
        component: ComponentId,
    ) -> Result<Option<(crate::storage::ids::TableId, usize)>> {
        let at = self.entities.locate(entity)?;
        let def = self.catalog.get(component)?;
        Ok(self
            .cell_table(entity, at, def)
            .map(|at| (at.table, at.row.index())))
    }

    /// One field of a live entity.
    pub fn value(&self, entity: Entity, field: FieldId) -> Result<Value> {
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
            self.observers
                .written(table, Written::Span(row, row + 1), &[field]);
        }
        Ok(())
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
}
