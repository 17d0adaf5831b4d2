//! Unit tests of `World`'s contracts that are easy to get wrong: generations, stale ids,
//! swap-remove bookkeeping, moves between tables, atomic failure, hash collisions, dropping
//! components and the columnar door. The randomized differential test against a naive
//! model is in `tests/database/differential.rs`.
//!
//! The tests are grouped by what they hold the world to: `entities.rs` (ids, generations,
//! rows and atomic failure), `tables.rs` (moves between tables, table names, dropping a
//! component, the columnar door), `observe.rs` (observers and the schema stamp),
//! `sparse.rs` (sparse components) and `batch.rs` (batches against one by one, inside a
//! transaction and out). This file holds the fixture and the helpers they share.

mod batch;
mod entities;
mod observe;
mod sparse;
mod tables;

use std::collections::BTreeMap;

use super::*;

/// A world with Position (x, y REAL), Health (hp INT DEFAULT 100), Name (TEXT), Parent
/// (ENTITY) and the tag Player.
struct Fixture {
    world: World,
    pos: ComponentId,
    health: ComponentId,
    name: ComponentId,
    parent: ComponentId,
    player: ComponentId,
}

fn fixture() -> Fixture {
    let mut world = World::new();
    let pos = world
        .create_component(
            "Position",
            vec![
                FieldDef::new("x", FieldType::Real),
                FieldDef::new("y", FieldType::Real),
            ],
        )
        .unwrap();
    let health = world
        .create_component(
            "Health",
            vec![FieldDef::new("hp", FieldType::Int).with_default(Value::Int(100))],
        )
        .unwrap();
    let name = world
        .create_component("Name", vec![FieldDef::new("value", FieldType::Text)])
        .unwrap();
    let parent = world
        .create_component("Parent", vec![FieldDef::new("of", FieldType::Entity)])
        .unwrap();
    let player = world.create_component("Player", vec![]).unwrap();
    Fixture {
        world,
        pos,
        health,
        name,
        parent,
        player,
    }
}

fn xy(x: f32, y: f32) -> Vec<Value> {
    vec![Value::Real(x), Value::Real(y)]
}

/// Everything a user can observe: every entity's components and values, and every table's
/// name, component set and row count.
type Snapshot = (
    BTreeMap<u64, BTreeMap<String, Vec<Value>>>,
    Vec<(String, Vec<String>, usize)>,
);

fn snapshot(world: &World) -> Snapshot {
    world.check_integrity().unwrap();
    let mut entities = BTreeMap::new();
    let mut tables = Vec::new();
    let names = |components: &[ComponentId]| -> Vec<String> {
        components
            .iter()
            .map(|&c| world.component(c).unwrap().name().to_owned())
            .collect()
    };
    for table in world.tables() {
        tables.push((table.name().to_string(), names(table.components()), table.len()));
        for &e in table.entities() {
            let mut held = BTreeMap::new();
            for c in world.components_of(e).unwrap() {
                let def = world.component(c).unwrap();
                held.insert(def.name().to_owned(), world.get_component(e, c).unwrap());
            }
            entities.insert(e.to_bits(), held);
        }
    }
    (entities, tables)
}

/// Records what the world reports, as text; watches only `Position.x`.
#[derive(Clone, Debug, Default)]
struct Log {
    watched: Option<FieldId>,
    lines: Vec<String>,
}

impl Observer for Log {
    fn spawned(&mut self, table: &Table, rows: std::ops::Range<usize>) {
        self.lines
            .push(format!("spawned {}", ids(&table.entities()[rows])));
    }
    fn attached(&mut self, table: &Table, rows: std::ops::Range<usize>, component: ComponentId) {
        for row in rows {
            self.lines
                .push(format!("attached {component} to {}", table.entities()[row]));
        }
    }
    fn detached(&mut self, entity: Entity, component: ComponentId) {
        self.lines.push(format!("detached {component} from {entity}"));
    }
    fn despawning(&mut self, table: &Table, row: usize) {
        self.lines.push(format!(
            "despawning {} with {}",
            table.entities()[row],
            ids(table.components())
        ));
    }
    fn written(&mut self, table: &Table, rows: Written<'_>, fields: &[FieldId]) {
        let entities: Vec<Entity> = rows.runs().flat_map(|r| table.entities()[r].to_vec()).collect();
        self.lines
            .push(format!("written {fields:?} of {}", ids(&entities)));
    }
    fn component_dropped(&mut self, component: ComponentId) {
        self.lines.push(format!("dropped {component}"));
    }
    fn watches(&self, field: FieldId) -> bool {
        self.watched == Some(field)
    }
    fn clone_box(&self) -> Box<dyn Observer> {
        Box::new(self.clone())
    }
}

fn ids<T: std::fmt::Display>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(T::to_string).collect();
    format!("[{}]", items.join(", "))
}

fn log(world: &World) -> Vec<String> {
    world
        .observer::<Log>()
        .map(|l| l.lines.clone())
        .unwrap_or_default()
}
