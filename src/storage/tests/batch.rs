//! Batches against the same changes one entity at a time, in random worlds: attaches,
//! detaches and despawns do what moving one by one does, inside a transaction what they do
//! outside one, and ROLLBACK puts back exactly the world BEGIN found.

use super::*;

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
            world.spawn_values(parts).unwrap();
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
                single.attach(e, health, vec![Value::Int(v)]).unwrap();
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
                single.detach(e, health).unwrap();
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
                let a = world.spawn_values(vec![(pos, xy(0.5, 0.5))]).unwrap();
                let b = single.spawn_values(vec![(pos, xy(0.5, 0.5))]).unwrap();
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
            world.spawn_values(parts).unwrap();
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
