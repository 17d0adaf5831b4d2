//! What the layers above follow: the schema stamp, new after every change a plan binds
//! against and only then, and the observers, told of every change and of nothing that
//! failed.

use super::*;

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
    let e = world.spawn_values(vec![(f.pos, xy(1.0, 2.0))]).unwrap();
    world.attach(e, f.health, vec![Value::Int(3)]).unwrap();
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
    let a = world.spawn_values(vec![(pos, xy(1.0, 2.0))]).unwrap();
    let b = world
        .spawn_columns(
            1,
            vec![(pos, vec![Column::Real(vec![3.0]), Column::Real(vec![4.0])])],
        )
        .unwrap()[0];
    world.attach(a, health, vec![Value::Int(5)]).unwrap();
    world.set(a, hp, Value::Int(6)).unwrap();
    world.detach(a, health).unwrap();
    // Failures report nothing.
    assert!(world.attach(a, pos, xy(0.0, 0.0)).is_err());
    assert!(world.detach(a, player).is_err());
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
