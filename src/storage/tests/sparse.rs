//! Sparse components: attached and detached in bulk (a bad batch refused whole), moving
//! no row and rolled back exactly, far ids indexed and stale ones refused.

use super::*;

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
        .map(|i| world.spawn_values(vec![(pos, xy(i as f32, 0.0))]).unwrap())
        .collect();
    let (a, b) = (ids[0], ids[1]);
    // Appended in bulk; a repeat, a holder or a dead entity refuses the whole batch.
    world
        .insert_batch(score, &[a, b], vec![Column::Int(vec![1, 2])])
        .unwrap();
    assert_eq!(
        (world.value(a, n), world.value(b, n)),
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
    assert_eq!(world.value(far, n), Ok(Value::Int(2)));
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
        .spawn_values(vec![(pos, xy(1.0, 1.0)), (health, vec![Value::Int(5)])])
        .unwrap();
    let b = world
        .spawn_values(vec![(score, vec![Value::Int(7)]), (tag, vec![])])
        .unwrap();
    let tables = world.table_count();
    let (table, row) = world.locate(a).unwrap();

    world.begin().unwrap();
    let before = world.digest();
    world.attach(a, tag, vec![]).unwrap();
    world.attach(a, score, vec![Value::Int(1)]).unwrap();
    assert_eq!(world.locate(a).unwrap(), (table, row), "attaching moved no row");
    assert_eq!(world.table_count(), tables, "and made no table");
    assert_eq!(world.components_of(a).unwrap(), vec![pos, health, tag, score]);
    world.set(a, n, Value::Int(2)).unwrap();
    assert_eq!(world.value(a, n), Ok(Value::Int(2)));
    assert_eq!(
        world.attach(a, tag, vec![]),
        Err(StorageError::AlreadyHasComponent {
            entity: a,
            component: "Selected".into()
        })
    );
    world.detach(b, score).unwrap();
    assert_eq!(world.has(b, score), Ok(false));
    assert_eq!(
        world.value(b, n),
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
    assert_eq!(world.value(b, n), Ok(Value::Int(7)));
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
    let near = world.spawn_values(vec![(tag, vec![])]).unwrap();
    world.despawn(near).unwrap();
    let again = world.spawn_values(vec![]).unwrap();
    assert_eq!(again.slot(), near.slot());
    assert_eq!(
        world.has(again, tag),
        Ok(false),
        "a new generation does not inherit the tag"
    );
    world.attach(again, tag, vec![]).unwrap();
    world.despawn(far).unwrap();
    world.check_integrity().unwrap();
    assert_eq!(world.has(again, tag), Ok(true));
}
