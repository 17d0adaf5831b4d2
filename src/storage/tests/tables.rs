//! Archetype tables: moves between them keep every other value and follow cached edges,
//! names are stable hashes of the set with collisions probed, dropping a component
//! detaches it everywhere and renumbers the tables, and the columnar door hands out typed
//! slices of the matching tables.

use super::*;

#[test]
fn moving_between_tables_keeps_every_other_value() {
    let f = fixture();
    let mut world = f.world;
    let target = world.spawn_values(vec![]).unwrap();
    let e = world
        .spawn_values(vec![
            (f.pos, xy(1.5, -2.5)),
            (f.name, vec![Value::from("ziggy")]),
            (f.parent, vec![Value::Entity(target)]),
        ])
        .unwrap();
    let other = world
        .spawn_values(vec![
            (f.pos, xy(7.0, 7.0)),
            (f.name, vec![Value::from("other")]),
            (f.parent, vec![Value::Null]),
        ])
        .unwrap();
    let before = snapshot(&world).0[&e.to_bits()].clone();

    world.attach(e, f.health, vec![Value::Int(42)]).unwrap();
    world.attach(e, f.player, vec![]).unwrap();
    let mut expected = before.clone();
    expected.insert("Health".into(), vec![Value::Int(42)]);
    expected.insert("Player".into(), vec![]);
    assert_eq!(snapshot(&world).0[&e.to_bits()], expected);

    world.detach(e, f.health).unwrap();
    world.detach(e, f.player).unwrap();
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
    let a = world.spawn_values(vec![(pos, xy(0.0, 0.0))]).unwrap();
    let b = world.spawn_values(vec![(pos, xy(0.0, 0.0))]).unwrap();
    world.attach(a, health, vec![Value::Int(1)]).unwrap();
    let tables = world.table_count();
    world.attach(b, health, vec![Value::Int(2)]).unwrap();
    assert_eq!(world.table_count(), tables);
    assert_eq!(world.locate(a).unwrap().0, world.locate(b).unwrap().0);
    // Adding in another order reaches the same set's table.
    let c = world.spawn_values(vec![(health, vec![Value::Int(3)])]).unwrap();
    world.attach(c, pos, xy(0.0, 0.0)).unwrap();
    assert_eq!(world.locate(c).unwrap().0, world.locate(a).unwrap().0);
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

    let ab = world
        .spawn_values(vec![(b, vec![Value::Int(7)]), (a, vec![])])
        .unwrap();
    let only_c = world.spawn_values(vec![(c, vec![Value::from("c")])]).unwrap();
    let abc = world
        .spawn_values(vec![(a, vec![]), (b, vec![Value::Int(8)])])
        .unwrap();
    world.attach(abc, c, vec![Value::from("abc")]).unwrap();
    let empty = world.spawn_values(vec![]).unwrap();

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
    assert_eq!(world.value(ab, bv), Ok(Value::Int(7)));
    assert_eq!(world.value(only_c, cv), Ok(Value::from("c")));
    assert_eq!(world.value(abc, cv), Ok(Value::from("abc")));
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
        .spawn_values(vec![(health, vec![Value::Int(1)]), (pos, xy(0.0, 0.0))])
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
        .spawn_values(vec![(f.pos, xy(1.0, 0.0)), (f.health, vec![Value::Int(5)])])
        .unwrap();
    let b = world.spawn_values(vec![(f.health, vec![Value::Int(6)])]).unwrap();
    let c = world
        .spawn_values(vec![(f.name, vec![Value::from("c")])])
        .unwrap();
    let d = world.spawn_values(vec![(f.pos, xy(4.0, 0.0))]).unwrap();
    let epoch = world.layout_epoch();

    assert_eq!(world.drop_component(f.health), Ok(2));
    assert_ne!(world.layout_epoch(), epoch);
    assert_eq!(world.components_of(a), Ok(vec![f.pos]));
    assert_eq!(world.components_of(b), Ok(vec![]));
    assert_eq!(world.value(a, x), Ok(Value::Real(1.0)));
    assert_eq!(world.value(d, x), Ok(Value::Real(4.0)));
    assert_eq!(world.get_component(c, f.name), Ok(vec![Value::from("c")]));
    assert_eq!(
        world.value(a, hp),
        Err(StorageError::UnknownComponentId(f.health))
    );
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
    world.attach(a, again, vec![]).unwrap();
    assert_eq!(
        world.attach(b, f.health, vec![]),
        Err(StorageError::UnknownComponentId(f.health))
    );
}

#[test]
fn the_columnar_door_hands_out_typed_slices_of_matching_tables() {
    let f = fixture();
    let mut world = f.world;
    let (x, y) = (world.field(f.pos, "x").unwrap(), world.field(f.pos, "y").unwrap());
    let hp = world.field(f.health, "hp").unwrap();
    world
        .spawn_columns(
            3,
            vec![(
                f.pos,
                vec![Column::from(vec![1f32, 2., 3.]), Column::from(vec![0f32; 3])],
            )],
        )
        .unwrap();
    let healthy = world
        .spawn_columns(
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
        .spawn_values(vec![(f.pos, xy(5.0, 0.0)), (f.player, vec![])])
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
    assert_eq!(world.value(healthy[1], y), Ok(Value::Real(40.0)));

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
