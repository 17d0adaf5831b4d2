//! Writing a snapshot: `Out`, little-endian bytes (which the connection also writes the
//! layers above and its journal with), and `World::snapshot`, which writes every section
//! of the format the parent describes, each sealed by its length and checksum.

use crate::storage::column::Column;
use crate::storage::component::FieldDef;
use crate::storage::ids::{ComponentId, Entity, FieldId};
use crate::storage::value::{FieldType, Value};
use crate::storage::world::World;

use super::{ABOVE, CATALOG, CLOCK, END, ENTITIES, EVENTS, MAGIC, MARKS, SPARSE, TABLES, VERSION, type_code};

/// Bytes being written, little-endian (also what the connection writes of the layers
/// above into a snapshot).
pub(crate) struct Out {
    bytes: Vec<u8>,
}

impl Out {
    pub(crate) fn new() -> Out {
        Out { bytes: Vec::new() }
    }
    /// Writes after what `bytes` holds (a buffer kept for the next write).
    pub(crate) fn after(bytes: Vec<u8>) -> Out {
        Out { bytes }
    }
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
    pub(crate) fn u8(&mut self, v: u8) {
        self.bytes.push(v);
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }
    pub(crate) fn str(&mut self, s: &str) {
        self.len(s.len());
        self.bytes.extend_from_slice(s.as_bytes());
    }

    /// Writes a section of `kind` whose payload `body` writes.
    fn section(&mut self, kind: u8, body: impl FnOnce(&mut Out)) {
        let start = self.bytes.len();
        self.u8(kind);
        self.u64(0);
        body(self);
        let len = (self.bytes.len() - start - 9) as u64;
        self.bytes[start + 1..start + 9].copy_from_slice(&len.to_le_bytes());
        let crc = crc32fast::hash(&self.bytes[start..]);
        self.u32(crc);
    }

    fn field_type(&mut self, ty: FieldType) {
        self.u8(type_code(ty));
    }

    pub(crate) fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.u8(0),
            Value::Int(x) => {
                self.u8(1);
                self.u64(*x as u64);
            }
            Value::Float(x) => {
                self.u8(2);
                self.u64(x.to_bits());
            }
            Value::Real(x) => {
                self.u8(3);
                self.u32(x.to_bits());
            }
            Value::Bool(x) => {
                self.u8(4);
                self.u8(u8::from(*x));
            }
            Value::Text(s) => {
                self.u8(5);
                self.str(s);
            }
            Value::Entity(e) => {
                self.u8(6);
                self.u64(e.to_bits());
            }
        }
    }

    fn fields(&mut self, fields: &[FieldDef]) {
        self.len(fields.len());
        for f in fields {
            self.str(f.name());
            self.field_type(f.ty());
            self.value(f.default_value());
        }
    }

    fn entities(&mut self, entities: &[Entity]) {
        self.len(entities.len());
        self.bytes.reserve(entities.len() * 8);
        for e in entities {
            self.u64(e.to_bits());
        }
    }

    /// A column: its type and length, then its values back to back.
    fn column(&mut self, column: &Column) {
        self.field_type(column.field_type());
        self.len(column.len());
        match column {
            Column::Int(v) => {
                self.bytes.reserve(v.len() * 8);
                v.iter()
                    .for_each(|x| self.bytes.extend_from_slice(&x.to_le_bytes()));
            }
            Column::Float(v) => {
                self.bytes.reserve(v.len() * 8);
                v.iter()
                    .for_each(|x| self.bytes.extend_from_slice(&x.to_bits().to_le_bytes()));
            }
            Column::Real(v) => {
                self.bytes.reserve(v.len() * 4);
                v.iter()
                    .for_each(|x| self.bytes.extend_from_slice(&x.to_bits().to_le_bytes()));
            }
            Column::Bool(v) => self.bytes.extend(v.iter().map(|&b| u8::from(b))),
            Column::Text(v) => v.iter().for_each(|s| self.str(s)),
            Column::Entity(v) => {
                self.bytes.reserve(v.len() * 8);
                v.iter().for_each(|e| {
                    self.bytes
                        .extend_from_slice(&e.map_or(0, Entity::to_bits).to_le_bytes())
                });
            }
        }
    }
}

impl World {
    /// The change marks of the `tracked` components in every table, then the removal
    /// logs.
    fn write_marks(&self, out: &mut Out, tracked: &[ComponentId]) {
        let ticks = |out: &mut Out, marks: Option<&crate::storage::marks::MarkList>| {
            let ticks = marks.map_or(&[][..], |m| m.ticks());
            out.len(ticks.len());
            out.bytes.reserve(ticks.len() * 8);
            ticks.iter().for_each(|&t| out.u64(t));
        };
        out.len(tracked.len());
        tracked.iter().for_each(|c| out.u32(c.0));
        for table in self.all_tables() {
            for &c in table.components().iter().filter(|c| tracked.contains(c)) {
                ticks(out, table.added_marks(c));
                let fields = self.catalog.get(c).map_or(0, |d| d.fields().len());
                for f in 0..fields {
                    ticks(out, table.changed_marks(FieldId::new(c, f as u16)));
                }
            }
        }
        out.len(self.removals.len());
        for (c, log) in &self.removals {
            out.u32(c.0);
            let (entities, writes, ticks) = log.entries();
            out.entities(entities);
            writes.iter().for_each(|&w| out.u64(w));
            ticks.iter().for_each(|&t| out.u64(t));
        }
    }

    /// The world as a snapshot (see the module's documentation for what it keeps): the
    /// world as it is now, uncommitted changes of an open transaction included (SAVE
    /// refuses to run inside one).
    pub fn snapshot(&self) -> Vec<u8> {
        self.snapshot_with(&[])
    }

    /// `snapshot`, with `above`: bytes of the layers above the storage (index definitions,
    /// the schedule), kept in a section of their own and given back by
    /// `from_snapshot_with`.
    pub fn snapshot_with(&self, above: &[u8]) -> Vec<u8> {
        let mut out = Out { bytes: Vec::new() };
        out.bytes.extend_from_slice(MAGIC);
        out.u32(VERSION);
        out.section(CATALOG, |out| {
            let slots = self.catalog.slots();
            out.len(slots.len());
            for def in slots {
                match def {
                    None => out.u8(0),
                    Some(def) => {
                        match def.sparse_table().and_then(|t| t.sparse_index()) {
                            None => out.u8(1),
                            Some(k) => {
                                // Its table's number, so that it is the same read back.
                                out.u8(2);
                                out.u32(k as u32);
                            }
                        }
                        out.str(def.name());
                        out.fields(def.fields());
                    }
                }
            }
        });
        out.section(ENTITIES, |out| {
            let parts = self.entities.parts();
            out.len(parts.generations.len());
            parts.generations.iter().for_each(|&g| out.u32(g));
            out.len(parts.tail.len());
            for &(slot, generation) in &parts.tail {
                out.u32(slot);
                out.u32(generation);
            }
            out.u64(parts.end);
            out.len(parts.free.len());
            parts.free.iter().for_each(|&s| out.u32(s));
        });
        out.section(TABLES, |out| {
            out.len(self.table_count());
            for table in self.tables() {
                out.len(table.components().len());
                table.components().iter().for_each(|c| out.u32(c.0));
                out.entities(table.entities());
                out.len(table.columns().len());
                table.columns().iter().for_each(|c| out.column(c));
            }
        });
        out.section(SPARSE, |out| {
            let sparse: Vec<_> = self.archetypes.sparse_sets().collect();
            out.len(sparse.len());
            for set in sparse {
                let table = set.table();
                out.u32(table.components().first().map_or(u32::MAX, |c| c.0));
                out.entities(table.entities());
                out.len(table.columns().len());
                table.columns().iter().for_each(|c| out.column(c));
            }
        });
        out.section(EVENTS, |out| {
            let slots = self.events.slots();
            out.len(slots.len());
            for queue in slots {
                let Some(queue) = queue else {
                    out.u8(0);
                    continue;
                };
                out.u8(1);
                out.str(queue.name());
                out.fields(queue.fields());
                out.u64(queue.keep());
                out.u64(queue.first_seq());
                out.u64(queue.dropped_unseen());
                let ticks = queue.ticks();
                out.len(ticks.len());
                ticks.iter().for_each(|&t| out.u64(t));
                queue.columns().iter().for_each(|c| out.column(c));
            }
        });
        out.section(CLOCK, |out| out.u64(self.tick.get()));
        let tracked: Vec<ComponentId> = self
            .catalog
            .slots()
            .iter()
            .enumerate()
            .filter(|(_, d)| d.as_ref().is_some_and(|d| d.is_tracked()))
            .map(|(i, _)| ComponentId(i as u32))
            .collect();
        if !tracked.is_empty() || !self.removals.is_empty() {
            out.section(MARKS, |out| self.write_marks(out, &tracked));
        }
        if !above.is_empty() {
            out.section(ABOVE, |out| out.bytes.extend_from_slice(above));
        }
        out.section(END, |_| {});
        out.bytes
    }
}
