//! Rust systems that declare their access: what a closure reads and writes
//! (`SystemAccess`, by component and field names), and the view of the world it gets
//! (`SystemView`), which lends exactly that.
//!
//! Invariants:
//! - A view lends a field's values to read only when the declaration reads or writes it,
//!   and to write only when it writes it; anything else is `StorageError::Undeclared`,
//!   never a value. It shows only the tables that hold a component the declaration
//!   names (their entities and lengths included), so what it reads of the world is what
//!   its footprint says. It lends no way to make, end or move entities, nor to change
//!   the catalog: a system that does those is registered without a declaration, and runs
//!   alone. (A typed query's `Changed`/`Added`, given the world through `world_mut`,
//!   turns the component's change marks on, as a SQL reader's `changed()` does: marks
//!   are no part of the catalog a reader sees, and they stay on.)
//! - In a group of systems that run at the same time (`together.rs`) it runs in its
//!   turn on the tick's thread, never beside another system: what it gains is that the
//!   UPDATEs around it still compute together.
//! - The declaration is read against the world each time it is used (a tick, the
//!   schedule's conflict table), so a component made or dropped later is seen; one that
//!   names no component or field fails the system's run with that error, and the schedule
//!   runs such a system alone. Only a field its component (already made) lacks is
//!   refused when the system is registered (`misnamed`; not in a file database's set-up,
//!   whose journal may make it).
//! - The schedule judges a declared system by its declaration, as it judges a SQL system
//!   by its plan (`conflicts.rs`): its reads and writes reach every table holding their
//!   component.

use std::ops::Range;

use crate::plan::{Footprint, Part, Tables, Touch};
use crate::storage::{
    Column, ColumnMut, ColumnValue, ComponentDef, ComponentId, Entity, FieldId, Filter, StorageError,
    TableId, TableMut, TableRef, World,
};

type Result<T> = std::result::Result<T, StorageError>;

/// What a Rust system reads and writes, given when it is registered
/// (`Connection::create_system_with_access`): components (`"Velocity"`, every field) and
/// fields (`"Position.x"`), by name. A field written may be read too.
///
/// ```
/// # use ecsql::SystemAccess;
/// let access = SystemAccess::new().reads("Velocity").writes("Position.x").writes("Position.y");
/// # let _ = access;
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SystemAccess {
    reads: Vec<String>,
    writes: Vec<String>,
}

impl SystemAccess {
    /// A declaration of nothing: the system may read and write no field.
    pub fn new() -> SystemAccess {
        SystemAccess::default()
    }

    /// The system reads `part`: a component's name (all its fields) or `Component.field`.
    pub fn reads(mut self, part: &str) -> SystemAccess {
        self.reads.push(part.to_owned());
        self
    }

    /// The system writes (and may read) `part`: a component's name (all its fields) or
    /// `Component.field`.
    pub fn writes(mut self, part: &str) -> SystemAccess {
        self.writes.push(part.to_owned());
        self
    }

    /// What it declares, as EXPLAIN TICK says it: `the fields it declared (reads
    /// Velocity; writes Position.x)`.
    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.reads.is_empty() {
            parts.push(format!("reads {}", self.reads.join(", ")));
        }
        if !self.writes.is_empty() {
            parts.push(format!("writes {}", self.writes.join(", ")));
        }
        match parts.is_empty() {
            true => "no field (it declared none)".to_owned(),
            false => format!("the fields it declared ({})", parts.join("; ")),
        }
    }

    /// The first entry that names a field its component, which `world` has, does not
    /// have: surely a typo, refused when the system is registered. (A component the world
    /// does not have yet may be made before the system runs.)
    pub(crate) fn misnamed(&self, world: &World) -> Option<String> {
        let entries = self
            .reads
            .iter()
            .map(|n| ("reads", n))
            .chain(self.writes.iter().map(|n| ("writes", n)));
        for (how, name) in entries {
            if let Some((component, field)) = name.split_once('.')
                && let Ok(c) = world.component_by_name(component)
                && let Err(e) = world.field(c.id(), field)
            {
                return Some(format!("its SystemAccess .{how}(\"{name}\"): {e}"));
            }
        }
        None
    }

    /// The declaration against `world`'s catalog; the error names the entry that names
    /// no component or field of it (`SystemAccess .reads("Velocty"): unknown component
    /// Velocty`).
    pub(crate) fn resolve(&self, world: &World) -> std::result::Result<Declared, String> {
        let part = |how: &str, name: &str| -> std::result::Result<Part, String> {
            let found = match name.split_once('.') {
                Some((component, field)) => world
                    .component_by_name(component)
                    .and_then(|c| world.field(c.id(), field))
                    .map(Part::Field),
                None => world.component_by_name(name).map(|c| Part::Whole(c.id())),
            };
            found.map_err(|e| format!("its SystemAccess .{how}(\"{name}\"): {e}"))
        };
        Ok(Declared {
            reads: self
                .reads
                .iter()
                .map(|n| part("reads", n))
                .collect::<std::result::Result<_, _>>()?,
            writes: self
                .writes
                .iter()
                .map(|n| part("writes", n))
                .collect::<std::result::Result<_, _>>()?,
        })
    }
}

/// A declaration read against a world's catalog.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Declared {
    reads: Vec<Part>,
    writes: Vec<Part>,
}

impl Declared {
    fn covers(parts: &[Part], field: FieldId) -> bool {
        parts.iter().any(|&p| p.overlaps(Part::Field(field)))
    }

    /// Whether the declaration names `component` or one of its fields.
    fn holds(&self, component: ComponentId) -> bool {
        self.reads
            .iter()
            .chain(&self.writes)
            .any(|p| p.component() == component)
    }

    fn may_read(&self, field: FieldId) -> bool {
        Self::covers(&self.reads, field) || Self::covers(&self.writes, field)
    }

    fn may_write(&self, field: FieldId) -> bool {
        Self::covers(&self.writes, field)
    }

    /// What the schedule compares with other systems: each part read or written, in every
    /// table holding its component.
    pub(crate) fn footprint(&self) -> Footprint {
        let touch = |&part: &Part| Touch {
            part,
            tables: Tables {
                required: smallvec::smallvec![part.component()],
                ..Tables::default()
            },
        };
        let mut footprint = Footprint {
            reads: self.reads.iter().map(touch).collect(),
            writes: self.writes.iter().map(touch).collect(),
            ..Footprint::default()
        };
        let mut components: Vec<ComponentId> = self
            .reads
            .iter()
            .chain(&self.writes)
            .map(|p| p.component())
            .collect();
        components.sort();
        components.dedup();
        footprint.scans = components
            .into_iter()
            .map(|c| Tables {
                required: smallvec::smallvec![c],
                ..Tables::default()
            })
            .collect();
        footprint
    }
}

/// A Rust system that declared its access: it gets the view that lends it, and the
/// tick's clock, and returns an error to fail the tick.
pub type ViewSystem = Box<
    dyn FnMut(
            &mut SystemView<'_>,
            crate::exec::Clock,
        ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>>
        + Send,
>;

/// The world as a Rust system that declared its access sees it: the catalog, the tables,
/// and the values of the fields it declared, to read and (those it writes) to write.
/// Reaching any other field is `StorageError::Undeclared`.
pub struct SystemView<'w> {
    world: &'w mut World,
    system: &'w str,
    declared: &'w Declared,
}

impl<'w> SystemView<'w> {
    pub(crate) fn new(world: &'w mut World, system: &'w str, declared: &'w Declared) -> SystemView<'w> {
        SystemView {
            world,
            system,
            declared,
        }
    }

    /// The world itself, for a typed query made from the same declaration as the view
    /// (`Connection::create_query_system`): it lends only what was declared (and may turn
    /// on the change marks of a component its filter reads).
    pub(crate) fn world_mut(&mut self) -> &mut World {
        self.world
    }

    /// A component by name.
    pub fn component_by_name(&self, name: &str) -> Result<&ComponentDef> {
        self.world.component_by_name(name)
    }

    /// A field of `component` by name.
    pub fn field(&self, component: ComponentId, name: &str) -> Result<FieldId> {
        self.world.field(component, name)
    }

    /// The tables that hold every component `filter` asks for and none it excludes; the
    /// filter must ask for a component the system declared (the tables of others are not
    /// its to look at: `StorageError::UndeclaredTables`).
    pub fn matching_tables(&self, filter: &Filter) -> Result<Vec<TableId>> {
        if !filter.required().iter().any(|&c| self.declared.holds(c)) {
            return Err(StorageError::UndeclaredTables {
                system: self.system.to_owned(),
            });
        }
        self.world.matching_tables(filter)
    }

    /// A table, to read the fields the system declared; `None` when there is no such
    /// table, or it holds no component the system declared.
    pub fn table(&self, id: TableId) -> Option<ViewTable<'_>> {
        let table = self.world.table(id)?;
        if !table.components().iter().any(|&c| self.declared.holds(c)) {
            return None;
        }
        Some(ViewTable {
            table,
            system: self.system,
            declared: self.declared,
        })
    }

    /// A table, to read the fields the system declared and write those it declared it
    /// writes; `None` when there is no such table, or it holds no component the system
    /// declared.
    pub fn table_mut(&mut self, id: TableId) -> Option<ViewTableMut<'_>> {
        let holds = self
            .world
            .table(id)?
            .components()
            .iter()
            .any(|&c| self.declared.holds(c));
        if !holds {
            return None;
        }
        Some(ViewTableMut {
            table: self.world.table_mut(id)?,
            system: self.system,
            declared: self.declared,
        })
    }
}

/// The error for a field the declaration does not name.
fn undeclared(world_names: (String, String), system: &str, write: bool) -> StorageError {
    let (component, field) = world_names;
    StorageError::Undeclared {
        system: system.to_owned(),
        component,
        field,
        how: if write { "writes" } else { "reads" },
    }
}

/// A table of a `SystemView`, to read.
pub struct ViewTable<'v> {
    table: TableRef<'v>,
    system: &'v str,
    declared: &'v Declared,
}

impl<'v> ViewTable<'v> {
    /// How many entities the table holds.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the table holds no entity.
    pub fn is_empty(&self) -> bool {
        self.table.len() == 0
    }

    /// The table's entities, one per row.
    pub fn entities(&self) -> &'v [Entity] {
        self.table.get().entities()
    }

    /// `field`'s values, one per row, when the system declared it reads or writes it.
    pub fn slice<T: ColumnValue>(&self, field: FieldId) -> Result<&'v [T]> {
        if !self.declared.may_read(field) {
            return Err(undeclared(self.table.field_names(field), self.system, false));
        }
        self.table.slice(field)
    }
}

/// A table of a `SystemView`, to read and write.
pub struct ViewTableMut<'v> {
    table: TableMut<'v>,
    system: &'v str,
    declared: &'v Declared,
}

impl ViewTableMut<'_> {
    /// How many entities the table holds.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the table holds no entity.
    pub fn is_empty(&self) -> bool {
        self.table.len() == 0
    }

    /// The table's entities, one per row.
    pub fn entities(&self) -> &[Entity] {
        self.table.entities()
    }

    fn check(&self, field: FieldId, write: bool) -> Result<()> {
        let allowed = match write {
            true => self.declared.may_write(field),
            false => self.declared.may_read(field),
        };
        match allowed {
            true => Ok(()),
            false => Err(undeclared(self.table.field_names(field), self.system, write)),
        }
    }

    /// `field`'s values, one per row, when the system declared it reads or writes it.
    pub fn slice<T: ColumnValue>(&self, field: FieldId) -> Result<&[T]> {
        self.check(field, false)?;
        self.table.slice(field)
    }

    /// `field`'s values to write, when the system declared it writes it
    /// (`TableMut::slice_mut`).
    pub fn slice_mut<T: ColumnValue>(&mut self, field: FieldId) -> Result<&mut [T]> {
        self.check(field, true)?;
        self.table.slice_mut(field)
    }

    /// `field`'s values in rows `rows` to write, when the system declared it writes it
    /// (`TableMut::rows_mut`).
    pub fn rows_mut<T: ColumnValue>(&mut self, field: FieldId, rows: Range<usize>) -> Result<&mut [T]> {
        self.check(field, true)?;
        self.table.rows_mut(field, rows)
    }

    /// Writes `values` over the rows from `first` on, when the system declared it writes
    /// `field` (`TableMut::write`).
    pub fn write(&mut self, field: FieldId, first: usize, values: Column) -> Result<()> {
        self.check(field, true)?;
        self.table.write(field, first, values)
    }

    /// Several columns at once, the shape of a system (`x += vx`): each must be declared;
    /// one the system declared it writes is lent to write (`ColumnMut::into_mut`), and
    /// marked changed as `TableMut::columns` marks it; one it only reads is lent to read
    /// (`ColumnMut::into_ref`; `into_mut` refuses it), and marked nothing.
    pub fn columns<const N: usize>(&mut self, fields: [FieldId; N]) -> Result<[ColumnMut<'_>; N]> {
        let mut read_only = [None; N];
        for (slot, &field) in read_only.iter_mut().zip(&fields) {
            self.check(field, false)?;
            if !self.declared.may_write(field) {
                *slot = Some(self.system);
            }
        }
        self.table.columns_for(fields, read_only)
    }
}
