//! Entities and their ids: generations and stale ids refused, the row swapped into a
//! despawned one's hole relocated, a failed operation changing nothing (not even the
//! tick), errors that name what failed, batches of tags only or of nothing, foreign and
//! out-of-range ids refused without a panic, and the set of live ids.

use super::*;

#[test]
fn despawned_ids_are_refused_before_and_after_their_slot_is_reused() {
    let Fixture {
        mut world,
        pos,
        health,
        ..
    } = fixture();
    let x = world.field(pos, "x").unwrap();
    let a = world.spawn_values(vec![(pos, xy(1.0, 1.0))]).unwrap();
    let b = world.spawn_values(vec![(pos, xy(2.0, 2.0))]).unwrap();
    assert_eq!((a.to_string(), b.to_string()), ("1".into(), "2".into()));
    world.despawn(a).unwrap();

    let stale = Err(StorageError::DespawnedEntity(a));
    assert_eq!(world.value(a, x), stale);
    assert_eq!(world.despawn(a), Err(StorageError::DespawnedEntity(a)));

    let c = world.spawn_values(vec![(pos, xy(3.0, 3.0))]).unwrap();
    assert_eq!(
        (c.slot(), c.generation()),
        (a.slot(), 1),
        "the slot is reused, one generation on"
    );
    assert_eq!(
        world.value(a, x),
        stale,
        "the old id must not reach the new entity"
    );
    assert_eq!(
        world.set(a, x, Value::Real(9.0)),
        Err(StorageError::DespawnedEntity(a))
    );
    assert_eq!(
        world.attach(a, health, vec![Value::Int(1)]),
        Err(StorageError::DespawnedEntity(a))
    );
    assert_eq!(world.detach(a, pos), Err(StorageError::DespawnedEntity(a)));
    assert_eq!(world.has(a, pos), Err(StorageError::DespawnedEntity(a)));
    assert_eq!(world.value(c, x), Ok(Value::Real(3.0)));
    assert!(!world.contains(a) && world.contains(c));

    let never = Entity::from_bits(77).unwrap();
    assert_eq!(world.value(never, x), Err(StorageError::NoSuchEntity(never)));
    assert_eq!(world.len(), 2);
}

#[test]
fn swap_remove_relocates_the_row_moved_into_the_hole() {
    let Fixture { mut world, pos, .. } = fixture();
    let x = world.field(pos, "x").unwrap();
    let ids: Vec<Entity> = (0..4)
        .map(|i| world.spawn_values(vec![(pos, xy(i as f32, 0.0))]).unwrap())
        .collect();
    world.despawn(ids[1]).unwrap(); // the last row (ids[3]) moves into row 1
    let (table, row) = world.locate(ids[3]).unwrap();
    assert_eq!(row.index(), 1);
    assert_eq!(world.table(table).unwrap().entities()[1], ids[3]);
    assert_eq!(world.value(ids[3], x), Ok(Value::Real(3.0)));
    world.despawn(ids[3]).unwrap(); // despawning the moved one uses its new row
    world.despawn(ids[2]).unwrap(); // and the last row needs no move
    assert_eq!(world.value(ids[0], x), Ok(Value::Real(0.0)));
    world.check_integrity().unwrap();
}

#[test]
fn a_failed_operation_changes_nothing() {
    let f = fixture();
    let mut world = f.world;
    let hp = world.field(f.health, "hp").unwrap();
    let x = world.field(f.pos, "x").unwrap();
    let e = world.spawn_values(vec![(f.pos, xy(1.0, 2.0))]).unwrap();
    let gone = world.spawn_values(vec![]).unwrap();
    world.despawn(gone).unwrap();
    let before = snapshot(&world);
    let tick = world.tick();

    let failures: Vec<(&str, Result<(), StorageError>)> = vec![
        // The second component's value is wrong after the first was fine.
        (
            "spawn",
            world
                .spawn_values(vec![
                    (f.health, vec![Value::Int(1)]),
                    (f.pos, vec![Value::Real(1.0), Value::Int(2)]),
                ])
                .map(drop),
        ),
        (
            "spawn repeated",
            world
                .spawn_values(vec![
                    (f.player, vec![]),
                    (f.name, vec![Value::from("a")]),
                    (f.player, vec![]),
                ])
                .map(drop),
        ),
        (
            "spawn_batch length",
            world
                .spawn_columns(
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
                .spawn_columns(1, vec![(f.health, vec![Column::from(vec![1.0f64])])])
                .map(drop),
        ),
        ("insert present", world.attach(e, f.pos, xy(0.0, 0.0))),
        (
            "insert type",
            world.attach(e, f.health, vec![Value::from("many")]),
        ),
        ("insert count", world.attach(e, f.health, vec![])),
        ("insert stale", world.attach(gone, f.health, vec![Value::Int(1)])),
        ("remove absent", world.detach(e, f.health)),
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
    let e = world.spawn_values(vec![(pos, xy(0.0, 0.0))]).unwrap();
    let err = world.attach(e, health, vec![Value::from("lots")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "type mismatch for Health.hp: expected INT, found TEXT 'lots'"
    );
    let err = world.detach(e, health).unwrap_err();
    assert_eq!(err.to_string(), "entity 1 does not have component Health");
    let err = world.field(pos, "z").unwrap_err();
    assert_eq!(err.to_string(), "component Position has no field z");
}

#[test]
fn a_tag_only_batch_and_an_empty_batch_work() {
    let Fixture {
        mut world, player, ..
    } = fixture();
    let ids = world.spawn_columns(3, vec![(player, vec![])]).unwrap();
    assert_eq!(ids.len(), 3);
    assert!(world.spawn_columns(0, vec![(player, vec![])]).unwrap().is_empty());
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
    let many: Vec<Entity> = (0..50).map(|_| big.spawn_values(vec![]).unwrap()).collect();

    let Fixture { mut world, pos, .. } = fixture();
    let e = world.spawn_values(vec![(pos, xy(0.0, 0.0))]).unwrap();
    // Component #0 exists in both worlds but has 2 fields here: field 4 is out of range.
    assert_eq!(wide, pos);
    let never = many[49];
    let huge = Entity::from_bits(u64::MAX).unwrap();
    let before = snapshot(&world);

    assert!(world.spawn_values(vec![(foreign, vec![])]).is_err());
    assert!(world.spawn_columns(1, vec![(foreign, vec![])]).is_err());
    assert!(world.spawn_columns(usize::MAX, vec![]).is_err());
    assert!(world.attach(e, foreign, vec![]).is_err());
    assert!(world.detach(e, foreign).is_err());
    assert!(world.has(e, foreign).is_err());
    assert!(world.value(e, foreign_field).is_err());
    assert!(world.value(e, wide_field).is_err());
    assert!(world.set(e, wide_field, Value::Int(1)).is_err());
    assert!(world.get_component(e, foreign).is_err());
    assert!(world.drop_component(foreign).is_err());
    assert!(world.field(foreign, "f0").is_err());
    assert!(world.matching_tables(&Filter::new().with(foreign)).is_err());
    assert!(world.matching_tables(&Filter::new().without(foreign)).is_err());
    for bad in [never, huge] {
        assert!(world.value(bad, wide_field).is_err());
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

#[test]
fn a_live_set_keeps_near_and_far_slots() {
    let mut set = LiveSet::default();
    let near = Entity::from_bits(5).unwrap();
    let far = Entity::from_bits(u64::from(u32::MAX)).unwrap();
    let high = Entity::from_bits(1 << 20).unwrap();
    assert!(set.insert(near) && set.insert(far) && set.insert(high));
    assert!(!set.insert(near) && !set.insert(far) && !set.insert(high));
    // A few slots take no bits, however far they reach.
    assert_eq!(set.bits_len(), 0);
    // Past the few, every slot met before is still there, near and far alike, and the
    // bits reach the highest near slot.
    let mut model = std::collections::HashSet::from([5u64, u64::from(u32::MAX), 1 << 20]);
    for k in 0..200u64 {
        let bits = [7 + k % 90, (1 << 22) + k % 50, u64::from(u32::MAX) - k % 40][(k % 3) as usize];
        let e = Entity::from_bits(bits).unwrap();
        assert_eq!(set.insert(e), model.insert(bits), "slot {bits}");
    }
    for bits in [5, u64::from(u32::MAX), 1 << 20] {
        assert!(!set.insert(Entity::from_bits(bits).unwrap()), "slot {bits} lost");
    }
    assert_eq!(set.bits_len(), ((1 << 22) + 49) / 64 + 1);
}
