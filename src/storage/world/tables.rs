//! The world read whole: its tables (archetype and sparse), the write tick, the layout
//! epoch and the schema stamp that caches and kept plans compare against, and, for tests
//! and debugging, its digests and the check of the invariants that tie the entity index
//! to the tables.

use crate::storage::column::Column;
use crate::storage::component::ComponentDef;
use crate::storage::ids::{Entity, FieldId, TableId, TableRow};
use crate::storage::table::{Table, TableName};

use super::World;

impl World {
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

    /// Whether any component keeps its values in a table of its own (a sparse
    /// component): in most worlds none does, and no plan has sparse members to sort out.
    pub fn has_sparse(&self) -> bool {
        self.archetypes.sparse_sets().next().is_some()
    }

    /// Drops the membership filters the columns of `field` keep (`ColumnCell::filters`),
    /// when the filter index that asked for them goes.
    pub fn forget_filters(&mut self, field: FieldId) {
        let mut tables: Vec<TableId> = self.archetypes.with_component(field.component()).to_vec();
        tables.extend(
            self.catalog
                .get(field.component())
                .ok()
                .and_then(|d| d.sparse_table()),
        );
        for id in tables {
            let table = match id.is_sparse() {
                true => self.archetypes.sparse_mut(id).map(|s| s.table_mut()),
                false => self.archetypes.get_mut(id),
            };
            if let Some(cell) = table.and_then(|t| t.column_cell_mut(field)) {
                cell.forget_filters();
            }
        }
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
        self.tick.get()
    }

    /// A new write tick for a write beside others (`engine/beside.rs`), taken through
    /// the world it shares.
    pub(crate) fn next_tick_beside(&self) -> u64 {
        self.tick.next_beside()
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
        let _ = writeln!(out, "write tick {}", self.tick.get());
        for t in self.all_tables() {
            // Floats by their bits too: `digest` prints every NaN alike, whatever its sign
            // and payload.
            for (i, column) in t.columns().iter().enumerate() {
                let bits: Box<dyn Iterator<Item = u64>> = match &**column {
                    Column::Real(v) => Box::new(v.iter().map(|x| u64::from(x.to_bits()))),
                    Column::Float(v) => Box::new(v.iter().map(|x| x.to_bits())),
                    _ => continue,
                };
                let hash = bits.fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ b).wrapping_mul(0x100_0000_01b3)
                });
                let _ = writeln!(out, "{} column {i} bits {hash:016x}", t.name());
            }
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
}
