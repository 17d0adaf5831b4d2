//! Reading a snapshot back: the byte readers (`ReadBytes`, `In`, a section's `Body`,
//! which the connection's journal reads with too), the sections read into parts, and the
//! world built of the parts. Upholds the parent's invariants of reading: every length is
//! checked against the bytes left before anything is allocated for it, every section's
//! checksum before its payload is read, and the world built is checked whole before it is
//! returned; an error names the byte offset where reading failed.

use crate::storage::cell::ColumnCell;
use crate::storage::column::Column;
use crate::storage::component::{Components, FieldDef};
use crate::storage::entity::{EntityIndex, IndexParts, Location};
use crate::storage::events::Events;
use crate::storage::ids::{ComponentId, Entity, TableRow};
use crate::storage::value::{FieldType, Value};
use crate::storage::world::World;

use super::{
    ABOVE, CATALOG, CLOCK, END, ENTITIES, EVENTS, MAGIC, MARKS, Result, SPARSE, SnapshotError, TABLES,
    VERSION, type_code,
};

impl World {
    /// The world a snapshot holds. Refused, with the byte offset, when the bytes are not a
    /// snapshot, are cut short, fail a checksum, or do not make a consistent world; never
    /// half-built.
    pub fn from_snapshot(bytes: &[u8]) -> Result<World> {
        Self::from_snapshot_with(bytes).map(|(world, _)| world)
    }

    /// `from_snapshot`, with the bytes of the layers above that `snapshot_with` kept
    /// (empty when there were none).
    pub fn from_snapshot_with(bytes: &[u8]) -> Result<(World, Vec<u8>)> {
        let mut input = In { bytes, pos: 0 };
        if input.take(MAGIC.len(), "the magic").ok() != Some(&MAGIC[..]) {
            return Err(SnapshotError::NotASnapshot);
        }
        let version = input.u32("the version")?;
        if version > VERSION {
            return Err(SnapshotError::NewerVersion { found: version });
        }
        let mut parts = Parts::default();
        let mut seen = Vec::new();
        loop {
            let (kind, mut body) = input.section()?;
            if seen.contains(&kind) {
                return Err(body.invalid("the section comes twice".into()));
            }
            seen.push(kind);
            match kind {
                CATALOG => parts.catalog = Some(read_catalog(&mut body)?),
                ENTITIES => parts.index = Some(read_index(&mut body)?),
                TABLES => parts.tables = Some(read_tables(&mut body)?),
                SPARSE => parts.sparse = Some(read_sparse(&mut body)?),
                EVENTS => parts.events = Some(read_events(&mut body)?),
                CLOCK => parts.tick = Some(body.u64("the write tick")?),
                MARKS => {
                    let n = body.input.bytes.len();
                    let base = body.base;
                    parts.marks = Some((body.take(n, "the change marks")?.to_vec(), base));
                }
                ABOVE => {
                    let n = body.input.bytes.len();
                    parts.above = body.take(n, "the layers above")?.to_vec();
                }
                END => break,
                other => return Err(body.invalid(format!("unknown section kind {other}"))),
            }
            body.done()?;
        }
        if input.pos != bytes.len() {
            return Err(SnapshotError::TrailingBytes {
                at: input.pos as u64,
                count: (bytes.len() - input.pos) as u64,
            });
        }
        let above = std::mem::take(&mut parts.above);
        Ok((build(parts, input.pos as u64)?, above))
    }
}

/// Little-endian numbers, counts, text and values read off bytes, each failing as the
/// reader's `take` and `invalid` do: what the snapshot, the database section above it and
/// a file database's journal all read.
pub(crate) trait ReadBytes {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&[u8]>;
    /// How many bytes are left to read.
    fn left(&self) -> usize;
    /// The bytes say what no reader can take, here.
    fn invalid(&self, message: String) -> SnapshotError;

    /// A count of items of at least `each` bytes: refused when the bytes left could not
    /// hold that many, so that a damaged count never makes a huge allocation.
    fn count(&mut self, each: usize, what: &'static str) -> Result<usize> {
        let n = self.u64(what)?;
        if n.saturating_mul(each.max(1) as u64) > self.left() as u64 {
            return Err(self.invalid(format!("it ends inside {what}")));
        }
        Ok(n as usize)
    }
    fn str(&mut self, what: &'static str) -> Result<String> {
        let mut text = String::new();
        self.str_into(what, &mut text)?;
        Ok(text)
    }
    /// `str` written over `text`, in the memory it has.
    fn str_into(&mut self, what: &'static str, text: &mut String) -> Result<()> {
        let n = self.count(1, what)?;
        let read = std::str::from_utf8(self.take(n, what)?).ok();
        let Some(read) = read else {
            return Err(self.invalid(format!("{what} is not UTF-8 text")));
        };
        text.clear();
        text.push_str(read);
        Ok(())
    }
    fn entity(&mut self, what: &'static str) -> Result<Option<Entity>> {
        let bits = self.u64(what)?;
        if bits == 0 {
            return Ok(None);
        }
        Entity::from_bits(bits)
            .map(Some)
            .ok_or_else(|| self.invalid(format!("{bits} is not an entity id")))
    }
    fn value(&mut self) -> Result<Value> {
        Ok(match self.u8("a value's type")? {
            0 => Value::Null,
            1 => Value::Int(self.u64("an INT")? as i64),
            2 => Value::Float(f64::from_bits(self.u64("a FLOAT")?)),
            3 => Value::Real(f32::from_bits(self.u32("a REAL")?)),
            4 => Value::Bool(self.u8("a BOOL")? != 0),
            5 => Value::Text(self.str("a TEXT")?),
            6 => match self.entity("an ENTITY")? {
                Some(e) => Value::Entity(e),
                None => Value::Null,
            },
            other => return Err(self.invalid(format!("unknown value type {other}"))),
        })
    }

    fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }
    fn u32(&mut self, what: &'static str) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64> {
        Ok(u64::from_le_bytes(le8(self.take(8, what)?)))
    }
}

/// Bytes being read, and how far: `pos` is the offset of the next byte in `bytes`.
pub(crate) struct In<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// A section's payload, with its offset in the snapshot for error messages.
struct Body<'a> {
    input: In<'a>,
    base: u64,
    name: &'static str,
}

impl<'a> In<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> In<'a> {
        In { bytes, pos: 0 }
    }

    /// How many bytes were read.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// How many bytes are left to read.
    pub(crate) fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// Whether every byte was read.
    pub(crate) fn is_done(&self) -> bool {
        self.pos == self.bytes.len()
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        match self.bytes.get(self.pos..self.pos.saturating_add(n)) {
            Some(b) if self.pos.checked_add(n).is_some() => {
                self.pos += n;
                Ok(b)
            }
            _ => Err(SnapshotError::Truncated {
                at: self.bytes.len() as u64,
                what,
            }),
        }
    }

    /// The next section: its kind and payload, its checksum verified.
    fn section(&mut self) -> Result<(u8, Body<'a>)> {
        let start = self.pos;
        let kind = self.u8("a section's kind")?;
        let len = self.u64("a section's length")?;
        let len = usize::try_from(len).map_err(|_| SnapshotError::Truncated {
            at: self.bytes.len() as u64,
            what: "a section",
        })?;
        let payload_at = self.pos;
        let payload = self.take(len, section_name(kind))?;
        let crc = self.u32("a section's checksum")?;
        if crc32fast::hash(&self.bytes[start..payload_at + len]) != crc {
            return Err(SnapshotError::Checksum {
                section: section_name(kind),
                start: start as u64,
                end: self.pos as u64,
            });
        }
        Ok((
            kind,
            Body {
                input: In {
                    bytes: payload,
                    pos: 0,
                },
                base: payload_at as u64,
                name: section_name(kind),
            },
        ))
    }
}

fn section_name(kind: u8) -> &'static str {
    match kind {
        CATALOG => "catalog",
        ENTITIES => "entity index",
        TABLES => "tables",
        SPARSE => "sparse components",
        EVENTS => "events",
        CLOCK => "clock",
        ABOVE => "database",
        MARKS => "change marks",
        END => "end",
        _ => "unknown",
    }
}

impl ReadBytes for In<'_> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&[u8]> {
        In::take(self, n, what)
    }
    fn left(&self) -> usize {
        In::left(self)
    }
    fn invalid(&self, message: String) -> SnapshotError {
        SnapshotError::Invalid {
            at: self.pos as u64,
            message,
        }
    }
}

impl ReadBytes for Body<'_> {
    /// A read that runs out of the section's bytes: its length lied, the file is not cut.
    fn take(&mut self, n: usize, what: &'static str) -> Result<&[u8]> {
        let at = self.at();
        self.input.take(n, what).map_err(|_| SnapshotError::Invalid {
            at,
            message: format!("{} section: it ends inside {what}", self.name),
        })
    }
    fn left(&self) -> usize {
        self.input.left()
    }
    fn invalid(&self, message: String) -> SnapshotError {
        SnapshotError::Invalid {
            at: self.at(),
            message: format!("{} section: {message}", self.name),
        }
    }
}

impl Body<'_> {
    fn at(&self) -> u64 {
        self.base + self.input.pos as u64
    }
    fn done(&self) -> Result<()> {
        if self.input.pos != self.input.bytes.len() {
            return Err(self.invalid("bytes are left over at its end".into()));
        }
        Ok(())
    }

    fn field_type(&mut self) -> Result<FieldType> {
        let code = self.u8("a type")?;
        FieldType::ALL
            .into_iter()
            .find(|&t| type_code(t) == code)
            .ok_or_else(|| self.invalid(format!("unknown type code {code}")))
    }

    fn fields(&mut self) -> Result<Vec<FieldDef>> {
        let n = self.count(10, "a list of fields")?;
        let mut fields = Vec::with_capacity(n);
        for _ in 0..n {
            let name = self.str("a field's name")?;
            let ty = self.field_type()?;
            let default = self.value()?;
            fields.push(FieldDef::new(name, ty).with_default(default));
        }
        Ok(fields)
    }

    fn entities(&mut self) -> Result<Vec<Entity>> {
        let n = self.count(8, "a list of entities")?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            match self.entity("an entity id")? {
                Some(e) => out.push(e),
                None => return Err(self.invalid("a table holds the NULL entity".into())),
            }
        }
        Ok(out)
    }

    fn column(&mut self) -> Result<Column> {
        let ty = self.field_type()?;
        let each = match ty {
            FieldType::Int | FieldType::Float | FieldType::Entity => 8,
            FieldType::Real => 4,
            FieldType::Bool => 1,
            FieldType::Text => 8,
        };
        let n = self.count(each, "a column")?;
        Ok(match ty {
            FieldType::Int => {
                let b = self.take(n * 8, "a column")?;
                Column::Int(b.chunks_exact(8).map(|c| i64::from_le_bytes(le8(c))).collect())
            }
            FieldType::Float => {
                let b = self.take(n * 8, "a column")?;
                Column::Float(
                    b.chunks_exact(8)
                        .map(|c| f64::from_bits(u64::from_le_bytes(le8(c))))
                        .collect(),
                )
            }
            FieldType::Real => {
                let b = self.take(n * 4, "a column")?;
                Column::Real(
                    b.chunks_exact(4)
                        .map(|c| f32::from_bits(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                        .collect(),
                )
            }
            FieldType::Bool => Column::Bool(self.take(n, "a column")?.iter().map(|&b| b != 0).collect()),
            FieldType::Text => {
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    v.push(self.str("a TEXT value")?);
                }
                Column::Text(v)
            }
            FieldType::Entity => {
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    v.push(self.entity("an ENTITY value")?);
                }
                Column::Entity(v)
            }
        })
    }
}

fn le8(c: &[u8]) -> [u8; 8] {
    let mut a = [0u8; 8];
    a.copy_from_slice(c);
    a
}

/// What the sections said, before a world is built of it.
#[derive(Default)]
struct Parts {
    catalog: Option<Vec<Option<DefParts>>>,
    index: Option<IndexParts>,
    tables: Option<Vec<TableParts>>,
    sparse: Option<Vec<SparseParts>>,
    events: Option<Vec<Option<EventParts>>>,
    tick: Option<u64>,
    above: Vec<u8>,
    /// The change marks section's payload and its offset, read once the tables are built.
    marks: Option<(Vec<u8>, u64)>,
}

/// A component: its name, fields, and for a sparse one its table's number.
type DefParts = (String, Vec<FieldDef>, Option<u32>);
/// An archetype table: its components, entities and columns.
type TableParts = (Vec<ComponentId>, Vec<Entity>, Vec<Column>);
/// A sparse component's table: the component, its entities and columns.
type SparseParts = (ComponentId, Vec<Entity>, Vec<Column>);
/// An event type: name, fields, keep, first row's number, rows dropped unseen, ticks, columns.
type EventParts = (String, Vec<FieldDef>, u64, u64, u64, Vec<u64>, Vec<Column>);

/// The most component or event ids a snapshot may give (each costs its catalog entry in
/// memory, dropped or not, so a small damaged file cannot ask for a huge catalog).
const MAX_IDS: usize = 1 << 20;

fn read_catalog(body: &mut Body<'_>) -> Result<Vec<Option<DefParts>>> {
    let n = body.count(1, "the components")?;
    if n > MAX_IDS {
        return Err(body.invalid(format!(
            "{n} component ids, more than the {MAX_IDS} a snapshot may hold"
        )));
    }
    let mut defs = Vec::with_capacity(n);
    for _ in 0..n {
        match body.u8("a component's storage")? {
            0 => defs.push(None),
            s @ (1 | 2) => {
                let sparse = match s {
                    2 => Some(body.u32("a sparse table's number")?),
                    _ => None,
                };
                let name = body.str("a component's name")?;
                let fields = body.fields()?;
                defs.push(Some((name, fields, sparse)));
            }
            other => return Err(body.invalid(format!("unknown storage code {other}"))),
        }
    }
    Ok(defs)
}

fn read_index(body: &mut Body<'_>) -> Result<IndexParts> {
    let n = body.count(4, "the slots")?;
    let mut generations = Vec::with_capacity(n);
    for _ in 0..n {
        generations.push(body.u32("a generation")?);
    }
    let n = body.count(8, "the far slots")?;
    let mut tail = Vec::with_capacity(n);
    for _ in 0..n {
        tail.push((body.u32("a slot")?, body.u32("a generation")?));
    }
    let end = body.u64("the next slot")?;
    let n = body.count(4, "the free list")?;
    let mut free = Vec::with_capacity(n);
    for _ in 0..n {
        free.push(body.u32("a free slot")?);
    }
    Ok(IndexParts {
        generations,
        tail,
        end,
        free,
    })
}

fn read_columns(body: &mut Body<'_>) -> Result<Vec<Column>> {
    let n = body.count(9, "a table's columns")?;
    let mut columns = Vec::with_capacity(n);
    for _ in 0..n {
        columns.push(body.column()?);
    }
    Ok(columns)
}

fn read_tables(body: &mut Body<'_>) -> Result<Vec<TableParts>> {
    let n = body.count(24, "the tables")?;
    let mut tables = Vec::with_capacity(n);
    for _ in 0..n {
        let k = body.count(4, "a table's components")?;
        let mut components = Vec::with_capacity(k);
        for _ in 0..k {
            components.push(ComponentId(body.u32("a component id")?));
        }
        let entities = body.entities()?;
        let columns = read_columns(body)?;
        tables.push((components, entities, columns));
    }
    Ok(tables)
}

fn read_sparse(body: &mut Body<'_>) -> Result<Vec<SparseParts>> {
    let n = body.count(20, "the sparse components")?;
    let mut sets = Vec::with_capacity(n);
    for _ in 0..n {
        let component = ComponentId(body.u32("a component id")?);
        let entities = body.entities()?;
        let columns = read_columns(body)?;
        sets.push((component, entities, columns));
    }
    Ok(sets)
}

fn read_events(body: &mut Body<'_>) -> Result<Vec<Option<EventParts>>> {
    let n = body.count(1, "the event types")?;
    if n > MAX_IDS {
        return Err(body.invalid(format!(
            "{n} event ids, more than the {MAX_IDS} a snapshot may hold"
        )));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        if body.u8("an event type's presence")? == 0 {
            out.push(None);
            continue;
        }
        let name = body.str("an event type's name")?;
        let fields = body.fields()?;
        let keep = body.u64("keep")?;
        let first = body.u64("the first row's number")?;
        let dropped = body.u64("the rows dropped unseen")?;
        let n = body.count(8, "the rows' ticks")?;
        let mut ticks = Vec::with_capacity(n);
        for _ in 0..n {
            ticks.push(body.u64("a tick")?);
        }
        let mut columns = Vec::with_capacity(fields.len());
        for _ in 0..fields.len() {
            columns.push(body.column()?);
        }
        // Row numbers stay within INT, and no more rows went unseen than went at all.
        let end = first
            .checked_add(ticks.len() as u64)
            .filter(|&e| i64::try_from(e).is_ok());
        if end.is_none() || dropped > first {
            return Err(body.invalid(format!(
                "event type {name} numbers its rows from {first} with {dropped} dropped unseen, which no queue can"
            )));
        }
        out.push(Some((name, fields, keep, first, dropped, ticks, columns)));
    }
    Ok(out)
}

/// The world the parts describe, checked whole.
fn build(parts: Parts, end: u64) -> Result<World> {
    let invalid = |message: String| SnapshotError::Invalid { at: end, message };
    let missing = |what: &str| invalid(format!("it has no {what} section"));
    let catalog = parts.catalog.ok_or_else(|| missing("catalog"))?;
    let index = parts.index.ok_or_else(|| missing("entity index"))?;
    let tables = parts.tables.ok_or_else(|| missing("tables"))?;
    let sparse = parts.sparse.ok_or_else(|| missing("sparse components"))?;
    let events = parts.events.ok_or_else(|| missing("events"))?;
    let tick = parts.tick.ok_or_else(|| missing("clock"))?;

    let storage_error = |e: crate::storage::error::StorageError| invalid(e.to_string());
    // Sparse tables in the order of their numbers, each at its number.
    let mut sparse_ids: Vec<(u32, ComponentId)> = catalog
        .iter()
        .enumerate()
        .filter_map(|(i, d)| Some((d.as_ref()?.2?, ComponentId(i as u32))))
        .collect();
    sparse_ids.sort_unstable();
    let defs = catalog
        .into_iter()
        .map(|d| d.map(|(name, fields, _)| (name, fields)))
        .collect();
    let mut world = World::new();
    world.catalog = Components::from_defs(defs).map_err(storage_error)?;
    world.archetypes = crate::storage::archetypes::Archetypes::new(&world.catalog);
    for (k, id) in sparse_ids {
        if k as usize > MAX_IDS || !world.archetypes.skip_sparse_to(k as usize) {
            return Err(invalid(format!("two sparse components have table number {k}")));
        }
        let table = world
            .archetypes
            .create_sparse(id, &world.catalog)
            .ok_or_else(|| invalid("too many sparse components".into()))?;
        world.catalog.set_sparse(id, table);
    }
    world.entities = EntityIndex::from_parts(index).map_err(invalid)?;
    world.events = Events::from_parts(events).map_err(storage_error)?;
    // Components and events share one namespace.
    if let Some(both) = world
        .events
        .iter()
        .find(|e| world.catalog.by_name(e.name()).is_ok())
    {
        return Err(invalid(format!(
            "{} is both a component and an event",
            both.name()
        )));
    }
    world.tick.set(tick);

    for (k, (components, entities, columns)) in tables.into_iter().enumerate() {
        let mut set = components.clone();
        set.sort_unstable();
        set.dedup();
        if set != components
            || components
                .iter()
                .any(|&c| world.catalog.get(c).map_or(true, |d| d.sparse_table().is_some()))
        {
            return Err(invalid(format!(
                "table {k} names its components out of order, twice, or ones the catalog does not hold as archetype components"
            )));
        }
        let table = world.archetypes.find_or_create(&components, &world.catalog);
        if table.id().index() != k {
            return Err(invalid(format!(
                "table {k} holds the same components as table {}",
                table.id().index()
            )));
        }
        check_columns(table.columns(), &columns, entities.len())
            .map_err(|m| invalid(format!("table {k}: {m}")))?;
        let id = table.id();
        let first = table.len();
        table.append_rows(&entities, columns, tick);
        for (row, &e) in entities.iter().enumerate() {
            let location = Location {
                table: id,
                row: TableRow((first + row) as u32),
            };
            world.entities.place(e, location).map_err(invalid)?;
        }
    }
    for (component, entities, columns) in sparse {
        let table = world
            .catalog
            .get(component)
            .ok()
            .and_then(|d| d.sparse_table())
            .ok_or_else(|| {
                invalid(format!(
                    "component id {} has rows as a sparse component but is none",
                    component.0
                ))
            })?;
        let Some(set) = world.archetypes.sparse_mut(table) else {
            return Err(invalid("a sparse component has no table".into()));
        };
        if !set.table().is_empty() {
            return Err(invalid(format!(
                "component id {} has two sparse tables",
                component.0
            )));
        }
        check_columns(set.table().columns(), &columns, entities.len()).map_err(invalid)?;
        set.append(&entities, columns, tick);
    }
    if let Some((bytes, base)) = &parts.marks {
        let mut body = Body {
            input: In { bytes, pos: 0 },
            base: *base,
            name: "change marks",
        };
        read_marks(&mut body, &mut world)?;
        body.done()?;
    }
    if let Some(slot) = world.entities.free_slot_taken() {
        return Err(invalid(format!(
            "slot {slot} is on the free list but holds an entity"
        )));
    }
    world.check_integrity().map_err(invalid)?;
    Ok(world)
}

/// The change marks and removal logs (`World::write_marks`) put into the world built.
fn read_marks(body: &mut Body<'_>, world: &mut World) -> Result<()> {
    let n = body.count(4, "the tracked components")?;
    let mut tracked = Vec::with_capacity(n);
    for _ in 0..n {
        let c = ComponentId(body.u32("a component id")?);
        if !world.catalog.track(c) {
            return Err(body.invalid(format!(
                "component id {} is not one to track, or comes twice",
                c.0
            )));
        }
        tracked.push(c);
    }
    let write_tick = world.tick.get();
    let ticks = |body: &mut Body<'_>| -> Result<crate::storage::marks::MarkList> {
        let n = body.count(8, "a list of marks")?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let t = body.u64("a mark")?;
            if t > write_tick {
                return Err(body.invalid(format!(
                    "a mark at write tick {t}, after the world's {write_tick}"
                )));
            }
            v.push(t);
        }
        Ok(crate::storage::marks::MarkList::from_ticks(v))
    };
    let ids: Vec<_> = world.all_tables().map(|t| t.id()).collect();
    for id in ids {
        let Some(table) = world.archetypes.get_mut(id) else {
            continue;
        };
        let held: Vec<ComponentId> = table
            .components()
            .iter()
            .copied()
            .filter(|c| tracked.contains(c))
            .collect();
        for c in held {
            let fields = world.catalog.get(c).map_or(0, |d| d.fields().len());
            let mut lists = Vec::with_capacity(fields + 1);
            for _ in 0..=fields {
                lists.push(ticks(body)?);
            }
            let at = body.at();
            table
                .restore_marks(c, lists)
                .map_err(|message| SnapshotError::Invalid { at, message })?;
        }
    }
    let n = body.count(12, "the removal logs")?;
    for _ in 0..n {
        let c = ComponentId(body.u32("a component id")?);
        let entities = body.entities()?;
        let mut stamps = |what: &'static str| -> Result<Vec<u64>> {
            (0..entities.len()).map(|_| body.u64(what)).collect()
        };
        let writes = stamps("a removal's write tick")?;
        let ticks = stamps("a removal's tick")?;
        if world.catalog.get(c).is_err() || world.removals.iter().any(|(k, _)| *k == c) {
            return Err(body.invalid(format!("a removal log of component id {}, which has none", c.0)));
        }
        let log = crate::storage::removals::RemovalLog::from_entries(entities, writes, ticks)
            .ok_or_else(|| body.invalid(format!("component id {}'s removal log runs backwards", c.0)))?;
        world.removals.push((c, log));
    }
    Ok(())
}

/// Whether `columns` fit a table whose (empty) columns are `layout`, each `len` long.
fn check_columns(layout: &[ColumnCell], columns: &[Column], len: usize) -> std::result::Result<(), String> {
    if layout.len() != columns.len() {
        return Err(format!("{} columns for {} fields", columns.len(), layout.len()));
    }
    for (i, (want, got)) in layout.iter().zip(columns).enumerate() {
        if want.field_type() != got.field_type() || got.len() != len {
            return Err(format!(
                "column {i} holds {} {} values where {len} {} values belong",
                got.len(),
                got.field_type(),
                want.field_type()
            ));
        }
    }
    Ok(())
}
