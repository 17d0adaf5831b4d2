//! SHOW COMPONENTS, SHOW ARCHETYPES, SHOW INDEXES and DESCRIBE: the catalog as result
//! sets.

use super::Outcome;
use super::error::ExecError;
use crate::index::{Index, IndexKind, Indexes};
use crate::location::Location;
use crate::plan::DataType;
use crate::storage::{ComponentId, EventId, FieldDef, StorageKind, Value, World};

/// One row per component: name, kind, fields with types, and how many entities hold it.
pub fn show_components(world: &World) -> Outcome {
    let mut rows: Vec<Vec<Value>> = world
        .components()
        .map(|c| {
            let fields = c
                .fields()
                .iter()
                .map(|f| format!("{} {}", f.name(), f.ty()))
                .collect::<Vec<_>>()
                .join(", ");
            let entities: usize = world
                .all_tables()
                .filter(|t| t.contains(c.id()))
                .map(|t| t.len())
                .sum();
            let kind = match (c.is_tag(), c.storage()) {
                (true, StorageKind::Dense) => "tag",
                (false, StorageKind::Dense) => "component",
                (true, StorageKind::Sparse) => "sparse tag",
                (false, StorageKind::Sparse) => "sparse component",
            };
            vec![
                Value::Text(c.name().to_owned()),
                Value::Text(kind.to_owned()),
                Value::Text(fields),
                Value::Int(entities as i64),
            ]
        })
        .collect();
    rows.sort_by(|a, b| a[0].to_string().cmp(&b[0].to_string()));
    Outcome::of_rows(
        &[
            ("name", DataType::Text),
            ("kind", DataType::Text),
            ("fields", DataType::Text),
            ("entities", DataType::Int),
        ],
        rows,
    )
}

/// One row per archetype table: hash name, component set and row count. The void table
/// (entities with no components) is listed only while it holds rows.
pub fn show_archetypes(world: &World) -> Outcome {
    let mut rows: Vec<Vec<Value>> = world
        .tables()
        .filter(|t| !t.components().is_empty() || !t.is_empty())
        .map(|t| {
            vec![
                Value::Text(t.name().to_string()),
                Value::Text(world.names_of(t.components())),
                Value::Int(t.len() as i64),
            ]
        })
        .collect();
    rows.sort_by(|a, b| a[1].to_string().cmp(&b[1].to_string()));
    Outcome::of_rows(
        &[
            ("name", DataType::Text),
            ("components", DataType::Text),
            ("rows", DataType::Int),
        ],
        rows,
    )
}

/// One row per index: name, kind, component, fields, entries held and the structure.
pub fn show_indexes(world: &World) -> Outcome {
    let rows = Indexes::of(world)
        .iter()
        .map(|i| {
            let component = world.component(i.component()).ok();
            let fields: Vec<&str> = i
                .fields()
                .iter()
                .filter_map(|f| component?.fields().get(f.index()).map(|d| d.name()))
                .collect();
            let (entries, detail) = match i.kind() {
                IndexKind::Filter => filter_detail(world, i),
                _ => (i.len(), i.detail()),
            };
            // A function index's expressions, and its WHERE when partial.
            let fields = match i.definition() {
                Some(def) => {
                    let mut text = def.exprs.join(", ");
                    if let Some(p) = &def.predicate {
                        text.push_str(" WHERE ");
                        text.push_str(p);
                    }
                    text
                }
                None => fields.join(", "),
            };
            vec![
                Value::Text(i.name().to_owned()),
                Value::Text(i.kind().name().to_owned()),
                Value::Text(component.map_or(String::new(), |c| c.name().to_owned())),
                Value::Text(fields),
                Value::Int(entries as i64),
                Value::Text(detail),
            ]
        })
        .collect();
    Outcome::of_rows(
        &[
            ("name", DataType::Text),
            ("kind", DataType::Text),
            ("component", DataType::Text),
            ("fields", DataType::Text),
            ("entries", DataType::Int),
            ("structure", DataType::Text),
        ],
        rows,
    )
}

/// A filter index's rows (those of the tables holding its component) and what its
/// filters are now: in how many of those tables they are made (the rest are made when a
/// scan next asks), their memory, and how long making them took.
fn filter_detail(world: &World, index: &Index) -> (usize, String) {
    let (mut rows, mut tables, mut built, mut bytes, mut took) = (0, 0, 0, 0, std::time::Duration::ZERO);
    let Some(&field) = index.fields().first() else {
        return (0, index.detail());
    };
    for t in world.all_tables().filter(|t| t.contains(index.component())) {
        rows += t.len();
        tables += 1;
        let made = t
            .column_index(field)
            .and_then(|c| t.columns().get(c))
            .and_then(|c| c.made_filters());
        if let Some(f) = made {
            built += 1;
            bytes += f.bytes();
            took += f.built_in();
        }
    }
    let bits = if rows == 0 {
        0.0
    } else {
        (bytes * 8) as f64 / rows as f64
    };
    (
        rows,
        format!(
            "{}: made for {built} of {tables} tables, {bytes} bytes ({bits:.2} bits a row), {:.3} ms to make; made again when read after a write",
            index.detail(),
            took.as_secs_f64() * 1e3
        ),
    )
}

pub fn describe(world: &World, component: ComponentId, at: Location) -> Result<Outcome, ExecError> {
    let def = world
        .component(component)
        .map_err(|e| ExecError::storage(at, e))?;
    Ok(describe_fields(def.fields()))
}

/// `DESCRIBE Event`: its fields, as a component's.
pub fn describe_event(world: &World, event: EventId, at: Location) -> Result<Outcome, ExecError> {
    let queue = world.event(event).map_err(|e| ExecError::storage(at, e))?;
    Ok(describe_fields(queue.fields()))
}

fn describe_fields(fields: &[FieldDef]) -> Outcome {
    let rows = fields
        .iter()
        .map(|f| {
            vec![
                Value::Text(f.name().to_owned()),
                Value::Text(f.ty().to_string()),
                Value::Text(f.default_value().to_string()),
            ]
        })
        .collect();
    Outcome::of_rows(
        &[
            ("field", DataType::Text),
            ("type", DataType::Text),
            ("default", DataType::Text),
        ],
        rows,
    )
}
