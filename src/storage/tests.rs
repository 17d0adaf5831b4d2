//! Unit tests of `World`'s contracts that are easy to get wrong: generations, stale ids,
//! swap-remove bookkeeping, moves between tables, atomic failure, hash collisions, dropping
//! components and the columnar door. The randomized differential test against a naive
//! model is in `tests/database/differential.rs`.

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

#[test]
fn despawned_ids_are_refused_before_and_after_their_slot_is_reused() {
    let Fixture {
        mut world,
        pos,
        health,
        ..
    } = fixture();
    let x = world.field(pos, "x").unwrap();
    let a = world.spawn(vec![(pos, xy(1.0, 1.0))]).unwrap();
    let b = world.spawn(vec![(pos, xy(2.0, 2.0))]).unwrap();
    assert_eq!((a.to_string(), b.to_string()), ("1".into(), "2".into()));
    world.despawn(a).unwrap();

    let stale = Err(StorageError::DespawnedEntity(a));
    assert_eq!(world.get(a, x), stale);
    assert_eq!(world.despawn(a), Err(StorageError::DespawnedEntity(a)));

    let c = world.spawn(vec![(pos, xy(3.0, 3.0))]).unwrap();
    assert_eq!(
        (c.slot(), c.generation()),
        (a.slot(), 1),
        "the slot is reused, one generation on"
    );
    assert_eq!(world.get(a, x), stale, "the old id must not reach the new entity");
    assert_eq!(
        world.set(a, x, Value::Real(9.0)),
        Err(StorageError::DespawnedEntity(a))
    );
    assert_eq!(
        world.insert(a, health, vec![Value::Int(1)]),
        Err(StorageError::DespawnedEntity(a))
    );
    assert_eq!(world.remove(a, pos), Err(StorageError::DespawnedEntity(a)));
    assert_eq!(world.has(a, pos), Err(StorageError::DespawnedEntity(a)));
    assert_eq!(world.get(c, x), Ok(Value::Real(3.0)));
    assert!(!world.contains(a) && world.contains(c));

    let never = Entity::from_bits(77).unwrap();
    assert_eq!(world.get(never, x), Err(StorageError::NoSuchEntity(never)));
    assert_eq!(world.len(), 2);
}

#[test]
fn swap_remove_relocates_the_row_moved_into_the_hole() {
    let Fixture { mut world, pos, .. } = fixture();
    let x = world.field(pos, "x").unwrap();
    let ids: Vec<Entity> = (0..4)
        .map(|i| world.spawn(vec![(pos, xy(i as f32, 0.0))]).unwrap())
        .collect();
    world.despawn(ids[1]).unwrap(); // the last row (ids[3]) moves into row 1
    let (table, row) = world.locate(ids[3]).unwrap();
    assert_eq!(row.index(), 1);
    assert_eq!(world.table(table).unwrap().entities()[1], ids[3]);
    assert_eq!(world.get(ids[3], x), Ok(Value::Real(3.0)));
    world.despawn(ids[3]).unwrap(); // despawning the moved one uses its new row
    world.despawn(ids[2]).unwrap(); // and the last row needs no move
    assert_eq!(world.get(ids[0], x), Ok(Value::Real(0.0)));
    world.check_integrity().unwrap();
}

#[test]
fn moving_between_tables_keeps_every_other_value() {
    let f = fixture();
    let mut world = f.world;
    let target = world.spawn(vec![]).unwrap();
    let e = world
        .spawn(vec![
            (f.pos, xy(1.5, -2.5)),
            (f.name, vec![Value::from("ziggy")]),
            (f.parent, vec![Value::Entity(target)]),
        ])
        .unwrap();
    let other = world
        .spawn(vec![
            (f.pos, xy(7.0, 7.0)),
            (f.name, vec![Value::from("other")]),
            (f.parent, vec![Value::Null]),
        ])
        .unwrap();
    let before = snapshot(&world).0[&e.to_bits()].clone();

    world.insert(e, f.health, vec![Value::Int(42)]).unwrap();
    world.insert(e, f.player, vec![]).unwrap();
    let mut expected = before.clone();
    expected.insert("Health".into(), vec![Value::Int(42)]);
    expected.insert("Player".into(), vec![]);
    assert_eq!(snapshot(&world).0[&e.to_bits()], expected);

    world.remove(e, f.health).unwrap();
    world.remove(e, f.player).unwrap();
    assert_eq!(snapshot(&world).0[&e.to_bits()], before);
    // The entity that shared the first table was swapped around and is intact too.
    assert_eq!(world.get_component(other, f.name), Ok(vec![Value::from("other")]));
    assert_eq!(world.get_component(e, f.parent), Ok(vec![Value::Entity(target)]));
}

#[test]
fn a_repeated_move_follows_the_cached_edge_to_the_same_table() {
    let Fixture {
        mut world,
        pos,
        health,
        ..
    } = fixture();
    let a = world.spawn(vec![(pos, xy(0.0, 0.0))]).unwrap();
    let b = world.spawn(vec![(pos, xy(0.0, 0.0))]).unwrap();
    world.insert(a, health, vec![Value::Int(1)]).unwrap();
    let tables = world.table_count();
    world.insert(b, health, vec![Value::Int(2)]).unwrap();
    assert_eq!(world.table_count(), tables);
    assert_eq!(world.locate(a).unwrap().0, world.locate(b).unwrap().0);
    // Adding in another order reaches the same set's table.
    let c = world.spawn(vec![(health, vec![Value::Int(3)])]).unwrap();
    world.insert(c, pos, xy(0.0, 0.0)).unwrap();
    assert_eq!(world.locate(c).unwrap().0, world.locate(a).unwrap().0);
}

#[test]
fn a_failed_operation_changes_nothing() {
    let f = fixture();
    let mut world = f.world;
    let hp = world.field(f.health, "hp").unwrap();
    let x = world.field(f.pos, "x").unwrap();
    let e = world.spawn(vec![(f.pos, xy(1.0, 2.0))]).unwrap();
    let gone = world.spawn(vec![]).unwrap();
    world.despawn(gone).unwrap();
    let before = snapshot(&world);
    let tick = world.tick();

    let failures: Vec<(&str, Result<(), StorageError>)> = vec![
        // The second component's value is wrong after the first was fine.
        (
            "spawn",
            world
                .spawn(vec![
                    (f.health, vec![Value::Int(1)]),
                    (f.pos, vec![Value::Real(1.0), Value::Int(2)]),
                ])
                .map(drop),
        ),
        (
            "spawn repeated",
            world
                .spawn(vec![
                    (f.player, vec![]),
                    (f.name, vec![Value::from("a")]),
                    (f.player, vec![]),
                ])
                .map(drop),
        ),
        (
            "spawn_batch length",
            world
                .spawn_batch(
                    3,
                    vec![
                        (f.health, vec![Column::from(vec![1i64, 2, 3])]),
                        (
                            f.pos,
                            vec![Column::from(vec![0f32; 3]), Column::from(vec![0f32; 2])],
                        ),
                    ],
                )
                .map(drop),
        ),
        (
            "spawn_batch type",
            world
                .spawn_batch(1, vec![(f.health, vec![Column::from(vec![1.0f64])])])
                .map(drop),
        ),
        ("insert present", world.insert(e, f.pos, xy(0.0, 0.0))),
        (
            "insert type",
            world.insert(e, f.health, vec![Value::from("many")]),
        ),
        ("insert count", world.insert(e, f.health, vec![])),
        ("insert stale", world.insert(gone, f.health, vec![Value::Int(1)])),
        ("remove absent", world.remove(e, f.health)),
        ("set type", world.set(e, x, Value::Float(1.0))),
        ("set absent", world.set(e, hp, Value::Int(1))),
        ("despawn stale", world.despawn(gone)),
    ];
    for (what, result) in failures {
        assert!(result.is_err(), "{what} should fail");
        assert_eq!(snapshot(&world), before, "{what} changed the world");
    }
    assert_eq!(world.tick(), tick, "a failed operation must not count as a write");
}

#[test]
fn errors_name_the_component_field_and_types() {
    let Fixture {
        mut world,
        pos,
        health,
        ..
    } = fixture();
    let e = world.spawn(vec![(pos, xy(0.0, 0.0))]).unwrap();
    let err = world.insert(e, health, vec![Value::from("lots")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "type mismatch for Health.hp: expected INT, found TEXT 'lots'"
    );
    let err = world.remove(e, health).unwrap_err();
    assert_eq!(err.to_string(), "entity 1 does not have component Health");
    let err = world.field(pos, "z").unwrap_err();
    assert_eq!(err.to_string(), "component Position has no field z");
}

#[test]
fn table_names_ignore_order_and_hash_collisions_are_detected() {
    let mut world = World::new();
    // Forced hashes: {A, B} and {C} collide (1 ^ 2 == 3); {A, B, C} collides with the void
    // table's 0.
    let a = world.catalog.create_with_hash("A", vec![], 1).unwrap();
    let b = world
        .catalog
        .create_with_hash("B", vec![FieldDef::new("v", FieldType::Int)], 2)
        .unwrap();
    let c = world
        .catalog
        .create_with_hash("C", vec![FieldDef::new("v", FieldType::Text)], 3)
        .unwrap();
    let bv = world.field(b, "v").unwrap();
    let cv = world.field(c, "v").unwrap();

    let ab = world.spawn(vec![(b, vec![Value::Int(7)]), (a, vec![])]).unwrap();
    let only_c = world.spawn(vec![(c, vec![Value::from("c")])]).unwrap();
    let abc = world.spawn(vec![(a, vec![]), (b, vec![Value::Int(8)])]).unwrap();
    world.insert(abc, c, vec![Value::from("abc")]).unwrap();
    let empty = world.spawn(vec![]).unwrap();

    let table_of = |e| world.locate(e).unwrap().0;
    let ids = [table_of(ab), table_of(only_c), table_of(abc), table_of(empty)];
    for (i, id) in ids.iter().enumerate() {
        assert!(!ids[..i].contains(id), "colliding sets must get their own tables");
    }
    let name = |e| world.table(table_of(e)).unwrap().name().to_string();
    assert_eq!(name(empty), "arch_0000000000000000");
    assert_eq!(name(ab), "arch_0000000000000003");
    assert_eq!(
        name(only_c),
        "arch_0000000000000004",
        "the later colliding table is probed"
    );
    assert_eq!(name(abc), "arch_0000000000000001");
    for e in [ab, only_c, abc, empty] {
        assert_eq!(world.table_by_name(&name(e)).unwrap().id(), table_of(e));
    }
    assert_eq!(world.get(ab, bv), Ok(Value::Int(7)));
    assert_eq!(world.get(only_c, cv), Ok(Value::from("c")));
    assert_eq!(world.get(abc, cv), Ok(Value::from("abc")));
    world.check_integrity().unwrap();
}

#[test]
fn table_names_are_stable_hashes_of_the_set() {
    let Fixture {
        mut world,
        pos,
        health,
        ..
    } = fixture();
    let e = world
        .spawn(vec![(health, vec![Value::Int(1)]), (pos, xy(0.0, 0.0))])
        .unwrap();
    let name = world.table(world.locate(e).unwrap().0).unwrap().name();
    let expected = hash::stable_hash(b"Position") ^ hash::stable_hash(b"Health");
    assert_eq!(name, TableName(expected));
}

#[test]
fn dropping_a_component_detaches_it_everywhere_and_renumbers_tables() {
    let f = fixture();
    let mut world = f.world;
    let hp = world.field(f.health, "hp").unwrap();
    let x = world.field(f.pos, "x").unwrap();
    let a = world
        .spawn(vec![(f.pos, xy(1.0, 0.0)), (f.health, vec![Value::Int(5)])])
        .unwrap();
    let b = world.spawn(vec![(f.health, vec![Value::Int(6)])]).unwrap();
    let c = world.spawn(vec![(f.name, vec![Value::from("c")])]).unwrap();
    let d = world.spawn(vec![(f.pos, xy(4.0, 0.0))]).unwrap();
    let epoch = world.layout_epoch();

    assert_eq!(world.drop_component(f.health), Ok(2));
    assert_ne!(world.layout_epoch(), epoch);
    assert_eq!(world.components_of(a), Ok(vec![f.pos]));
    assert_eq!(world.components_of(b), Ok(vec![]));
    assert_eq!(world.get(a, x), Ok(Value::Real(1.0)));
    assert_eq!(world.get(d, x), Ok(Value::Real(4.0)));
    assert_eq!(world.get_component(c, f.name), Ok(vec![Value::from("c")]));
    assert_eq!(world.get(a, hp), Err(StorageError::UnknownComponentId(f.health)));
    assert!(world.tables().all(|t| !t.contains(f.health)));
    assert!(world.component_by_name("Health").is_err());
    assert_eq!(
        world.drop_component(f.health),
        Err(StorageError::UnknownComponentId(f.health))
    );
    world.check_integrity().unwrap();

    // The name is free again, with a new id; the old id stays refused.
    let again = world.create_component("Health", vec![]).unwrap();
    assert_ne!(again, f.health);
    world.insert(a, again, vec![]).unwrap();
    assert_eq!(
        world.insert(b, f.health, vec![]),
        Err(StorageError::UnknownComponentId(f.health))
    );
}

#[test]
fn the_schema_stamp_is_new_after_every_change_a_plan_binds_against_and_only_then() {
    let f = fixture();
    let mut world = f.world;
    let first = world.schema_stamp();
    let mut seen = vec![first];
    let mut changed = |world: &World, what: &str| {
        let stamp = world.schema_stamp();
        assert!(!seen.contains(&stamp), "{what} left the stamp at one seen before");
        seen.push(stamp);
    };
    // Writes to rows are not schema changes.
    let e = world.spawn(vec![(f.pos, xy(1.0, 2.0))]).unwrap();
    world.insert(e, f.health, vec![Value::Int(3)]).unwrap();
    world.despawn(e).unwrap();
    assert_eq!(world.schema_stamp(), first);

    let tag = world.create_component("Tag", vec![]).unwrap();
    changed(&world, "a component declared");
    let event = world.create_event("Hit", vec![], 1).unwrap();
    changed(&world, "an event declared");
    world.observe(Log::default());
    changed(&world, "an observer added");
    world.observer_mut::<Log>().unwrap().watched = None;
    changed(&world, "an observer changed");
    world.drop_event(event).unwrap();
    changed(&world, "an event dropped");
    world.drop_component(tag).unwrap();
    changed(&world, "a component dropped");

    world.begin().unwrap();
    world.create_component("Later", vec![]).unwrap();
    changed(&world, "a component declared in a transaction");
    world.rollback().unwrap();
    changed(&world, "a rollback");
    // A copy has its own stamp (its table ids may come to differ from the original's).
    let mut copy = world.clone();
    changed(&copy, "a copy");
    copy.create_component("Mine", vec![]).unwrap();
    changed(&copy, "a copy's component declared");
    // A sparse component dropped (its own way out of the catalog).
    let sparse = world
        .create_component_with("Rare", vec![], StorageKind::Sparse)
        .unwrap();
    changed(&world, "a sparse component declared");
    world.drop_component(sparse).unwrap();
    changed(&world, "a sparse component dropped");
    assert_ne!(World::new().schema_stamp(), World::new().schema_stamp());
}

#[test]
fn the_columnar_door_hands_out_typed_slices_of_matching_tables() {
    let f = fixture();
    let mut world = f.world;
    let (x, y) = (world.field(f.pos, "x").unwrap(), world.field(f.pos, "y").unwrap());
    let hp = world.field(f.health, "hp").unwrap();
    world
        .spawn_batch(
            3,
            vec![(
                f.pos,
                vec![Column::from(vec![1f32, 2., 3.]), Column::from(vec![0f32; 3])],
            )],
        )
        .unwrap();
    let healthy = world
        .spawn_batch(
            2,
            vec![
                (
                    f.pos,
                    vec![Column::from(vec![10f32, 20.]), Column::from(vec![0f32; 2])],
                ),
                (f.health, vec![Column::from(vec![5i64, 6])]),
            ],
        )
        .unwrap();
    world
        .spawn(vec![(f.pos, xy(5.0, 0.0)), (f.player, vec![])])
        .unwrap();

    let all = world.matching_tables(&Filter::new().with(f.pos)).unwrap();
    assert_eq!(all.len(), 3);
    let not_player = world
        .matching_tables(&Filter::new().with(f.pos).without(f.player))
        .unwrap();
    assert_eq!(not_player.len(), 2);

    let tick = world.tick();
    for &id in &not_player {
        let mut table = world.table_mut(id).unwrap();
        let [xs, ys] = table.columns([x, y]).unwrap();
        let (xs, ys) = (xs.into_ref::<f32>().unwrap(), ys.into_mut::<f32>().unwrap());
        for (y, x) in ys.iter_mut().zip(xs) {
            *y = x * 2.0;
        }
        assert!(
            table.column_changed_at(y).unwrap() > tick,
            "a written column is stamped"
        );
    }
    let mut sum = 0.0;
    for &id in &all {
        sum += world
            .table(id)
            .unwrap()
            .slice::<f32>(y)
            .unwrap()
            .iter()
            .sum::<f32>();
    }
    assert_eq!(sum, 2.0 * (1.0 + 2.0 + 3.0 + 10.0 + 20.0));
    assert_eq!(world.get(healthy[1], y), Ok(Value::Real(40.0)));

    // Misuse is an error that names the column, never a panic.
    let table = world.locate(healthy[0]).unwrap().0;
    let mut t = world.table_mut(table).unwrap();
    assert_eq!(
        t.slice_mut::<f64>(x).unwrap_err().to_string(),
        "column Position.x holds REAL values; it was asked for as FLOAT"
    );
    assert!(matches!(
        t.columns([x, x]),
        Err(StorageError::ColumnRepeated { .. })
    ));
    drop(t);
    let name = world.component(f.name).unwrap().field("value").unwrap();
    let t = world.table(table).unwrap();
    assert!(matches!(
        t.slice::<String>(name),
        Err(StorageError::ColumnNotInTable { .. })
    ));
    assert_eq!(t.slice::<i64>(hp).unwrap(), &[5, 6]);
}

#[test]
fn a_tag_only_batch_and_an_empty_batch_work() {
    let Fixture {
        mut world, player, ..
    } = fixture();
    let ids = world.spawn_batch(3, vec![(player, vec![])]).unwrap();
    assert_eq!(ids.len(), 3);
    assert!(world.spawn_batch(0, vec![(player, vec![])]).unwrap().is_empty());
    assert_eq!(world.len(), 3);
    world.check_integrity().unwrap();
}

#[test]
fn ids_from_another_world_or_out_of_range_are_refused_not_panicked_on() {
    // A bigger world whose ids do not exist in the small one.
    let mut big = World::new();
    for i in 0..10 {
        let fields = (0..5)
            .map(|f| FieldDef::new(format!("f{f}"), FieldType::Int))
            .collect();
        big.create_component(&format!("C{i}"), fields).unwrap();
    }
    let foreign = big.component_by_name("C9").unwrap().id();
    let foreign_field = big.field(foreign, "f4").unwrap();
    let wide = big.component_by_name("C0").unwrap().id();
    let wide_field = big.field(wide, "f4").unwrap();
    let many: Vec<Entity> = (0..50).map(|_| big.spawn(vec![]).unwrap()).collect();

    let Fixture { mut world, pos, .. } = fixture();
    let e = world.spawn(vec![(pos, xy(0.0, 0.0))]).unwrap();
    // Component #0 exists in both worlds but has 2 fields here: field 4 is out of range.
    assert_eq!(wide, pos);
    let never = many[49];
    let huge = Entity::from_bits(u64::MAX).unwrap();
    let before = snapshot(&world);

    assert!(world.spawn(vec![(foreign, vec![])]).is_err());
    assert!(world.spawn_batch(1, vec![(foreign, vec![])]).is_err());
    assert!(world.spawn_batch(usize::MAX, vec![]).is_err());
    assert!(world.insert(e, foreign, vec![]).is_err());
    assert!(world.remove(e, foreign).is_err());
    assert!(world.has(e, foreign).is_err());
    assert!(world.get(e, foreign_field).is_err());
    assert!(world.get(e, wide_field).is_err());
    assert!(world.set(e, wide_field, Value::Int(1)).is_err());
    assert!(world.get_component(e, foreign).is_err());
    assert!(world.drop_component(foreign).is_err());
    assert!(world.field(foreign, "f0").is_err());
    assert!(world.matching_tables(&Filter::new().with(foreign)).is_err());
    assert!(world.matching_tables(&Filter::new().without(foreign)).is_err());
    for bad in [never, huge] {
        assert!(world.get(bad, wide_field).is_err());
        assert!(world.despawn(bad).is_err());
        assert!(world.components_of(bad).is_err());
        assert!(world.locate(bad).is_err());
    }
    assert!(world.table(TableId(u32::MAX)).is_none());
    assert!(world.table_mut(TableId(u32::MAX)).is_none());
    assert!(world.table_by_name("arch_ffffffffffffffff").is_none());
    let table = world.locate(e).unwrap().0;
    let mut t = world.table_mut(table).unwrap();
    assert!(t.slice_mut::<i64>(wide_field).is_err());
    assert!(t.slice_mut::<i64>(foreign_field).is_err());
    assert!(t.column_index(wide_field).is_none());
    assert!(t.column_changed_at(foreign_field).is_none());
    assert!(t.component_columns(foreign).is_none());
    drop(t);
    assert_eq!(snapshot(&world), before);
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
    fn attached(&mut self, table: &Table, row: usize, component: ComponentId) {
        self.lines
            .push(format!("attached {component} to {}", table.entities()[row]));
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
    fn written(&mut self, table: &Table, rows: std::ops::Range<usize>, fields: &[FieldId]) {
        self.lines
            .push(format!("written {fields:?} of {}", ids(&table.entities()[rows])));
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

#[test]
fn an_observer_hears_every_change_and_nothing_that_failed() {
    let Fixture {
        mut world,
        pos,
        health,
        player,
        ..
    } = fixture();
    let x = world.field(pos, "x").unwrap();
    let y = world.field(pos, "y").unwrap();
    let hp = world.field(health, "hp").unwrap();
    world.observe(Log {
        watched: Some(x),
        lines: Vec::new(),
    });
    let a = world.spawn(vec![(pos, xy(1.0, 2.0))]).unwrap();
    let b = world
        .spawn_batch(
            1,
            vec![(pos, vec![Column::Real(vec![3.0]), Column::Real(vec![4.0])])],
        )
        .unwrap()[0];
    world.insert(a, health, vec![Value::Int(5)]).unwrap();
    world.set(a, hp, Value::Int(6)).unwrap();
    world.remove(a, health).unwrap();
    // Failures report nothing.
    assert!(world.insert(a, pos, xy(0.0, 0.0)).is_err());
    assert!(world.remove(a, player).is_err());
    assert!(world.set(a, hp, Value::Int(1)).is_err());
    // The columnar door reports watched fields only, when the borrow ends.
    let (table, row) = world.locate(b).unwrap();
    let row = row.index();
    {
        let mut t = world.table_mut(table).unwrap();
        t.slice_mut::<f32>(y).unwrap()[0] = 9.0;
    }
    {
        let mut t = world.table_mut(table).unwrap();
        t.rows_mut::<f32>(x, row..row + 1).unwrap()[0] = 7.0;
    }
    let before_despawn = world.clone();
    world.despawn(b).unwrap();
    world.drop_component(pos).unwrap();
    let lines = log(&world);
    let expected = [
        format!("spawned [{a}]"),
        format!("spawned [{b}]"),
        format!("attached {health} to {a}"),
        format!("written [{hp:?}] of [{a}]"),
        format!("detached {health} from {a}"),
        format!("written [{x:?}] of [{b}]"),
        format!("despawning {b} with [{pos}]"),
        format!("dropped {pos}"),
    ];
    assert_eq!(lines, expected);
    // A copy of the world carries its observers as they were.
    assert_eq!(log(&before_despawn), expected[..6]);
}

#[test]
fn a_sparse_component_attaches_and_detaches_in_bulk_and_refuses_a_repeat_whole() {
    let Fixture { mut world, pos, .. } = fixture();
    let score = world
        .create_component_with(
            "Score",
            vec![FieldDef::new("n", FieldType::Int)],
            StorageKind::Sparse,
        )
        .unwrap();
    let n = world.field(score, "n").unwrap();
    let ids: Vec<Entity> = (0..4)
        .map(|i| world.spawn(vec![(pos, xy(i as f32, 0.0))]).unwrap())
        .collect();
    let (a, b) = (ids[0], ids[1]);
    // Appended in bulk; a repeat, a holder or a dead entity refuses the whole batch.
    world
        .insert_batch(score, &[a, b], vec![Column::Int(vec![1, 2])])
        .unwrap();
    assert_eq!(
        (world.get(a, n), world.get(b, n)),
        (Ok(Value::Int(1)), Ok(Value::Int(2)))
    );
    let before = world.digest();
    let one = || vec![Column::Int(vec![9, 9])];
    assert!(world.insert_batch(score, &[ids[2], ids[2]], one()).is_err());
    assert!(world.insert_batch(score, &[ids[2], a], one()).is_err());
    world.despawn(ids[3]).unwrap();
    let after_despawn = world.digest();
    assert!(world.insert_batch(score, &[ids[2], ids[3]], one()).is_err());
    assert_eq!(world.digest(), after_despawn);
    assert_ne!(before, after_despawn);
    // As many entities as hold it, but one of them twice: refused, nothing changed.
    assert!(world.remove_batch(score, &[a, a]).is_err());
    assert!(world.remove_batch(score, &[a, ids[2]]).is_err());
    assert_eq!(world.digest(), after_despawn);
    // Every holder: the table is emptied.
    world.remove_batch(score, &[b, a]).unwrap();
    assert_eq!((world.has(a, score), world.has(b, score)), (Ok(false), Ok(false)));
    world.check_integrity().unwrap();
    // A far slot (past what the set's vector may reach) beside near ones, in and out.
    let far = Entity::from_bits(1_000_000_000).unwrap();
    world
        .spawn_batch_at(
            &[far],
            vec![(pos, vec![Column::Real(vec![0.0]), Column::Real(vec![0.0])])],
        )
        .unwrap();
    world
        .insert_batch(score, &[a, far, b], vec![Column::Int(vec![1, 2, 3])])
        .unwrap();
    assert_eq!(world.get(far, n), Ok(Value::Int(2)));
    world.check_integrity().unwrap();
    world.remove_batch(score, &[far, b, a]).unwrap();
    assert_eq!(world.has(far, score), Ok(false));
    world.check_integrity().unwrap();
}

#[test]
fn a_sparse_component_moves_no_row_and_rolls_back_exactly() {
    let Fixture {
        mut world,
        pos,
        health,
        ..
    } = fixture();
    let tag = world
        .create_component_with("Selected", vec![], StorageKind::Sparse)
        .unwrap();
    let score = world
        .create_component_with(
            "Score",
            vec![FieldDef::new("n", FieldType::Int)],
            StorageKind::Sparse,
        )
        .unwrap();
    let n = world.field(score, "n").unwrap();
    let a = world
        .spawn(vec![(pos, xy(1.0, 1.0)), (health, vec![Value::Int(5)])])
        .unwrap();
    let b = world
        .spawn(vec![(score, vec![Value::Int(7)]), (tag, vec![])])
        .unwrap();
    let tables = world.table_count();
    let (table, row) = world.locate(a).unwrap();

    world.begin().unwrap();
    let before = world.digest();
    world.insert(a, tag, vec![]).unwrap();
    world.insert(a, score, vec![Value::Int(1)]).unwrap();
    assert_eq!(world.locate(a).unwrap(), (table, row), "attaching moved no row");
    assert_eq!(world.table_count(), tables, "and made no table");
    assert_eq!(world.components_of(a).unwrap(), vec![pos, health, tag, score]);
    world.set(a, n, Value::Int(2)).unwrap();
    assert_eq!(world.get(a, n), Ok(Value::Int(2)));
    assert_eq!(
        world.insert(a, tag, vec![]),
        Err(StorageError::AlreadyHasComponent {
            entity: a,
            component: "Selected".into()
        })
    );
    world.remove(b, score).unwrap();
    assert_eq!(world.has(b, score), Ok(false));
    assert_eq!(
        world.get(b, n),
        Err(StorageError::MissingComponent {
            entity: b,
            component: "Score".into()
        })
    );
    world.despawn(b).unwrap();
    world.check_integrity().unwrap();
    world.rollback().unwrap();
    assert_eq!(world.digest(), before);
    world.check_integrity().unwrap();
    assert_eq!(world.get(b, n), Ok(Value::Int(7)));
    assert_eq!(world.has(a, tag), Ok(false));

    // The door: a sparse component alone selects its own table; beside others it is refused.
    let own = world.matching_tables(&Filter::new().with(score)).unwrap();
    assert_eq!(own, vec![world.component(score).unwrap().sparse_table().unwrap()]);
    let t = world.table(own[0]).unwrap();
    assert_eq!((t.entities(), t.slice::<i64>(n).unwrap()), (&[b][..], &[7][..]));
    assert_eq!(
        world.matching_tables(&Filter::new().with(pos).without(tag)),
        Err(StorageError::SparseInFilter("Selected".into()))
    );
}

#[test]
fn a_sparse_component_indexes_far_ids_and_refuses_stale_ones() {
    let Fixture { mut world, .. } = fixture();
    let tag = world
        .create_component_with("Selected", vec![], StorageKind::Sparse)
        .unwrap();
    // An id far past the others (SPAWN AT) is indexed without a slot per id below it.
    let far = Entity::new(3_000_000, 1).unwrap();
    world.spawn_batch_at(&[far], vec![(tag, vec![])]).unwrap();
    assert_eq!(world.has(far, tag), Ok(true));
    let near = world.spawn(vec![(tag, vec![])]).unwrap();
    world.despawn(near).unwrap();
    let again = world.spawn(vec![]).unwrap();
    assert_eq!(again.slot(), near.slot());
    assert_eq!(
        world.has(again, tag),
        Ok(false),
        "a new generation does not inherit the tag"
    );
    world.insert(again, tag, vec![]).unwrap();
    world.despawn(far).unwrap();
    world.check_integrity().unwrap();
    assert_eq!(world.has(again, tag), Ok(true));
}

/// `insert_batch` and `remove_batch` against the same changes made one entity at a time:
/// random worlds, random subsets (often whole tables, which move column by column), the
/// same entities, values, components and observer reports (as sets: a whole table's
/// rows arrive in another order), and every failure refused before anything changed.
#[test]
fn batch_moves_do_what_moves_one_by_one_do() {
    let mut seed = 0x5eed_u64;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n.max(1)
    };
    for round in 0..40 {
        let Fixture {
            mut world,
            pos,
            health,
            name,
            player,
            ..
        } = fixture();
        world.observe(Log::default());
        // Entities spread over a few tables.
        for i in 0..(5 + next(40)) {
            let mut parts = vec![(pos, xy(i as f32, 0.0))];
            if next(2) == 0 {
                parts.push((name, vec![Value::Text(format!("n{i}"))]));
            }
            if next(3) == 0 {
                parts.push((player, vec![]));
            }
            world.spawn(parts).unwrap();
        }
        let mut single = world.clone();
        for step in 0..6 {
            let all: Vec<Entity> = world.tables().flat_map(|t| t.entities().to_vec()).collect();
            if all.is_empty() {
                break;
            }
            let holds = |w: &World, e: Entity| w.has(e, health).unwrap();
            // Attach to those without Health: every one, or a random part.
            let without: Vec<Entity> = all.iter().copied().filter(|&e| !holds(&world, e)).collect();
            let chosen: Vec<Entity> = match next(3) {
                0 => without.clone(),
                _ => without.iter().copied().filter(|_| next(2) == 0).collect(),
            };
            let hp: Vec<i64> = chosen.iter().map(|_| next(1000) as i64).collect();
            world
                .insert_batch(health, &chosen, vec![Column::Int(hp.clone())])
                .unwrap();
            for (&e, &v) in chosen.iter().zip(&hp) {
                single.insert(e, health, vec![Value::Int(v)]).unwrap();
            }
            assert_eq!(
                snapshot(&world),
                snapshot(&single),
                "round {round} step {step}: attach"
            );
            // Detach from those with Health: every one, or a random part.
            let with: Vec<Entity> = all.iter().copied().filter(|&e| holds(&world, e)).collect();
            let chosen: Vec<Entity> = match next(3) {
                0 => with.clone(),
                _ => with.iter().copied().filter(|_| next(2) == 0).collect(),
            };
            world.remove_batch(health, &chosen).unwrap();
            for &e in &chosen {
                single.remove(e, health).unwrap();
            }
            assert_eq!(
                snapshot(&world),
                snapshot(&single),
                "round {round} step {step}: detach"
            );
            // Refused whole: a repeat, an entity that already has it, or lacks it.
            let before = snapshot(&world);
            if let (Some(&a), Some(&b)) = (all.first(), all.last()) {
                let has_a = holds(&world, a);
                let twice = vec![Column::Int(vec![1, 2])];
                assert!(world.insert_batch(health, &[a, a], twice).is_err());
                if has_a {
                    assert!(
                        world
                            .insert_batch(health, &[b, a], vec![Column::Int(vec![1, 2])])
                            .is_err()
                            || b == a
                    );
                } else {
                    assert!(world.remove_batch(health, &[b, a]).is_err());
                }
                assert!(
                    world
                        .insert_batch(health, &[a], vec![Column::Real(vec![1.0])])
                        .is_err()
                );
            }
            assert_eq!(
                snapshot(&world),
                before,
                "round {round} step {step}: a refused batch changed the world"
            );
            // Despawn a whole table, or a random part of everything; then spawn again:
            // ids are freed, and so reused, in the same order.
            let tables: Vec<Vec<Entity>> = world.tables().map(|t| t.entities().to_vec()).collect();
            let chosen: Vec<Entity> = match next(3) {
                0 => tables
                    .get(next(tables.len() as u64) as usize)
                    .cloned()
                    .unwrap_or_default(),
                _ => all.iter().copied().filter(|_| next(4) == 0).collect(),
            };
            if let Some(&first) = chosen.first() {
                assert!(world.despawn_batch(&[first, first]).is_err());
                assert_eq!(
                    snapshot(&world),
                    before,
                    "round {round} step {step}: a refused despawn changed the world"
                );
            }
            world.despawn_batch(&chosen).unwrap();
            for &e in &chosen {
                single.despawn_reference(e).unwrap();
            }
            assert_eq!(
                snapshot(&world),
                snapshot(&single),
                "round {round} step {step}: despawn"
            );
            for _ in 0..chosen.len().min(3) {
                let a = world.spawn(vec![(pos, xy(0.5, 0.5))]).unwrap();
                let b = single.spawn(vec![(pos, xy(0.5, 0.5))]).unwrap();
                assert_eq!(a, b, "round {round} step {step}: ids reused in another order");
            }
        }
        let mut heard = log(&world);
        let mut heard_single = log(&single);
        heard.sort();
        heard_single.sort();
        assert_eq!(heard, heard_single, "round {round}: observers heard other things");
    }
}

#[test]
fn a_live_set_keeps_near_and_far_slots() {
    let mut set = LiveSet::default();
    let near = Entity::from_bits(5).unwrap();
    let far = Entity::from_bits(u64::from(u32::MAX)).unwrap();
    assert!(set.insert(near) && set.insert(far));
    assert!(!set.insert(near) && !set.insert(far));
    // A far slot takes no bits: the set stays small.
    assert!(set.bits_len() <= 1);
}

/// Batch moves and despawns inside a transaction leave the world exactly as the same
/// batches outside one (rows, ids, marks, removal logs, ticks: what a journal's replay
/// must rebuild), and ROLLBACK puts back exactly the world BEGIN found; every step keeps
/// the world's own invariants. Random worlds over a few tables, change and removal
/// tracking on, random subsets (often whole tables) in random orders.
#[test]
fn batches_in_a_transaction_do_what_they_do_outside_one_and_roll_back_exactly() {
    let mut seed = 0xfeed_u64;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n.max(1)
    };
    for round in 0..60 {
        let Fixture {
            mut world,
            pos,
            health,
            name,
            player,
            ..
        } = fixture();
        world.observe(Log::default());
        let score = world
            .create_component_with(
                "Score",
                vec![FieldDef::new("n", FieldType::Int)],
                StorageKind::Sparse,
            )
            .unwrap();
        if next(2) == 0 {
            world.track_changes(health).unwrap();
            world.track_changes(pos).unwrap();
        }
        // Some rounds begin tracking a component inside the transaction.
        let track_at = (next(3) == 0).then(|| next(8));
        if next(2) == 0 {
            world.track_removals(health).unwrap();
            world.track_removals(name).unwrap();
        }
        for i in 0..(5 + next(60)) {
            let mut parts = vec![(pos, xy(i as f32, 0.0))];
            if next(2) == 0 {
                parts.push((name, vec![Value::Text(format!("n{i}"))]));
            }
            if next(3) == 0 {
                parts.push((player, vec![]));
            }
            if next(3) == 0 {
                parts.push((health, vec![Value::Int(i as i64)]));
            }
            if next(4) == 0 {
                parts.push((score, vec![Value::Int(i as i64)]));
            }
            world.spawn(parts).unwrap();
        }
        let mut plain = world.clone();
        let begun = world.digest_exact();
        let digest_before = world.digest();
        world.begin().unwrap();
        for step in 0..8 {
            let mut all: Vec<Entity> = world.tables().flat_map(|t| t.entities().to_vec()).collect();
            for i in (1..all.len()).rev() {
                all.swap(i, next(i as u64 + 1) as usize);
            }
            let pick = |all: &[Entity], next: &mut dyn FnMut(u64) -> u64, keep: &dyn Fn(Entity) -> bool| {
                let whole = next(3) == 0;
                all.iter()
                    .copied()
                    .filter(|&e| keep(e))
                    .filter(|_| whole || next(2) == 0)
                    .collect::<Vec<Entity>>()
            };
            if track_at == Some(step) {
                for w in [&mut world, &mut plain] {
                    w.track_changes(name).unwrap();
                    w.track_changes(score).unwrap();
                }
            }
            let what = next(3);
            match what {
                0 => {
                    let target = if next(3) == 0 { score } else { health };
                    let chosen = pick(&all, &mut next, &|e| !world.has(e, target).unwrap());
                    let hp: Vec<i64> = chosen.iter().map(|_| next(1000) as i64).collect();
                    for w in [&mut world, &mut plain] {
                        w.insert_batch(target, &chosen, vec![Column::Int(hp.clone())])
                            .unwrap();
                    }
                }
                1 => {
                    let target = [health, name, score][next(3) as usize];
                    let chosen = pick(&all, &mut next, &|e| world.has(e, target).unwrap());
                    for w in [&mut world, &mut plain] {
                        w.remove_batch(target, &chosen).unwrap();
                    }
                }
                _ => {
                    let chosen = pick(&all, &mut next, &|_| true);
                    for w in [&mut world, &mut plain] {
                        w.despawn_batch(&chosen).unwrap();
                    }
                }
            }
            world.check_integrity().unwrap();
            plain.check_integrity().unwrap();
            assert_eq!(
                world.digest_exact(),
                plain.digest_exact(),
                "round {round} step {step} ({what}): in a transaction and outside one differ"
            );
        }
        world.rollback().unwrap();
        world.check_integrity().unwrap();
        // Every mark list has a mark per row (one begun inside the transaction too).
        for t in world.all_tables() {
            for &c in t.components() {
                let fields = world.component(c).unwrap().fields().len();
                let lists = t
                    .added_marks(c)
                    .into_iter()
                    .chain((0..fields).filter_map(|f| t.changed_marks(FieldId::new(c, f as u16))));
                for list in lists {
                    assert_eq!(
                        list.ticks().len(),
                        t.len(),
                        "round {round}: marks of another length"
                    );
                }
            }
        }
        // The write tick moves on with a rollback (it is a change too), and tracking begun
        // stays on; all else is back.
        let (now, begun) = match track_at {
            Some(_) => (world.digest(), digest_before),
            None => (world.digest_exact(), begun),
        };
        let strip = |d: &str| {
            d.lines()
                .filter(|l| !l.starts_with("write tick"))
                .collect::<Vec<_>>()
                .join("\n")
                .replace("tracked: true", "tracked: false")
        };
        assert_eq!(
            strip(&now),
            strip(&begun),
            "round {round}: ROLLBACK did not put the world back"
        );
    }
}
