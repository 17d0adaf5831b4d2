//! Typed queries on the columnar door (`World::query`, the `derive` feature): writes
//! through entity items and table slices leave the world as the same UPDATEs in SQL do
//! (a differential over random rounds); change marks are exact (the SQL reader's
//! `changed()` sees the same rows); a ROLLBACK undoes them; indexes follow them; and
//! every misuse is an error that names it.

use ecsql::{Added, Changed, Component, Database, Entity, With, Without, World};

#[derive(Component, Debug, Clone, PartialEq)]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Component, Debug, Clone, PartialEq)]
struct Velocity {
    x: f32,
    y: f32,
}

#[derive(Component, Debug, Clone, PartialEq)]
#[ecsql(name = "Unit")]
struct Stats {
    #[ecsql(name = "label")]
    name: String,
    hp: i64,
    level: i32,
    speed: f64,
    alive: bool,
    target: Option<Entity>,
}

#[derive(Component, Debug, Clone, PartialEq)]
struct Frozen;

const SCHEMA: &str = "CREATE COMPONENT Position (x REAL, y REAL);
     CREATE COMPONENT Velocity (x REAL, y REAL);
     CREATE COMPONENT Unit (label TEXT, hp INT, level INT, speed FLOAT, alive BOOL, target ENTITY);
     CREATE TAG Frozen;";

/// The whole world, as text: every component's rows by id.
fn world(db: &Database) -> String {
    let conn = db.connect();
    let mut out = String::new();
    for sql in [
        "SELECT id, Position.x, Position.y FROM Position ORDER BY id",
        "SELECT id, Velocity.x, Velocity.y FROM Velocity ORDER BY id",
        "SELECT id, Unit.label, Unit.hp, Unit.level, Unit.speed, Unit.alive, Unit.target FROM Unit ORDER BY id",
        "SELECT id FROM Frozen ORDER BY id",
    ] {
        let mut stmt = conn.prepare(sql).unwrap();
        for row in stmt.query(()).unwrap() {
            out.push_str(&format!("{:?}\n", row.unwrap().values()));
        }
    }
    out
}

fn rng(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    }
}

/// The same random world in both databases: entities of many component sets.
fn populate(dbs: [&Database; 2], next: &mut impl FnMut(u64) -> u64) {
    let mut script = String::from(SCHEMA);
    for i in 0..400 {
        let mut parts = Vec::new();
        if next(4) > 0 {
            parts.push(format!("Position({}, {})", next(100), next(100)));
        }
        if next(2) == 0 {
            parts.push(format!("Velocity({}, {})", next(9), next(9)));
        }
        if next(3) == 0 {
            let target = if next(2) == 0 {
                "NULL".to_owned()
            } else {
                "1".to_owned()
            };
            parts.push(format!(
                "Unit('u{i}', {}, {}, {}, {}, {target})",
                next(500),
                next(50),
                next(80) as f64 / 4.0,
                next(2) == 0
            ));
        }
        if next(5) == 0 {
            parts.push("Frozen".to_owned());
        }
        if parts.is_empty() {
            parts.push("Frozen".to_owned());
        }
        script.push_str(&format!("SPAWN {};\n", parts.join(", ")));
    }
    for db in dbs {
        db.connect().execute_batch(&script).unwrap();
    }
}

#[test]
fn typed_query_writes_leave_the_world_the_same_updates_in_sql_do() {
    let (typed, sql) = (Database::open_in_memory(), Database::open_in_memory());
    let mut next = rng(0x9e37_79b9_7f4a_7c15);
    populate([&typed, &sql], &mut next);
    assert_eq!(world(&typed), world(&sql));
    let (t, s) = (typed.connect(), sql.connect());
    let mut kinds = [0; 6];
    for round in 0..60 {
        let kind = next(6) as usize;
        kinds[kind] += 1;
        let k = next(5) as f32 + 1.0;
        match kind {
            0 => {
                // An entity at a time, a filter excluding a tag.
                t.with_world_mut(|w| {
                    let mut q = w
                        .query_filtered::<(&mut Position, &Velocity), Without<Frozen>>()
                        .unwrap();
                    for (mut p, v) in q.iter() {
                        p.x += v.x * k;
                        p.y -= v.y;
                    }
                })
                .unwrap();
                s.execute(
                    "UPDATE Position SET x = Position.x + Velocity.x * ?1, y = Position.y - Velocity.y FROM Velocity WHERE NOT has(Frozen)",
                    (k,),
                )
                .unwrap();
            }
            1 => {
                // A table at a time, with an optional component.
                t.with_world_mut(|w| {
                    let mut q = w.query::<(&mut Stats, Option<&Position>)>().unwrap();
                    for (u, p) in q.tables() {
                        let bonus = i64::from(p.is_some());
                        for hp in u.hp.iter_mut() {
                            *hp = (*hp * 3 + bonus) % 997;
                        }
                    }
                })
                .unwrap();
                s.execute_batch(
                    "UPDATE Unit SET hp = (Unit.hp * 3 + CASE WHEN has(Position) THEN 1 ELSE 0 END) % 997",
                )
                .unwrap();
            }
            2 => {
                // Text moved out and back, an i32 and a bool.
                t.with_world_mut(|w| {
                    for mut u in w.query::<&mut Stats>().unwrap().iter() {
                        if u.alive {
                            u.name.push('x');
                            u.level += 1;
                        }
                        u.alive = !u.alive;
                    }
                })
                .unwrap();
                s.execute_batch(
                    "UPDATE Unit SET label = CASE WHEN Unit.alive THEN Unit.label || 'x' ELSE Unit.label END,
                                     level = CASE WHEN Unit.alive THEN Unit.level + 1 ELSE Unit.level END,
                                     alive = NOT Unit.alive",
                )
                .unwrap();
            }
            3 => {
                // The entity's id, a With filter, an optional write.
                t.with_world_mut(|w| {
                    let mut q = w
                        .query_filtered::<(Entity, Option<&mut Position>, &Stats), With<Velocity>>()
                        .unwrap();
                    for (e, p, u) in q.iter() {
                        if let Some(mut p) = p {
                            p.y = p.x + u.speed as f32;
                        }
                        let _ = e;
                    }
                })
                .unwrap();
                s.execute_batch(
                    "UPDATE Position SET y = Position.x + Unit.speed FROM Unit WHERE has(Velocity)",
                )
                .unwrap();
            }
            4 => {
                // Several tables' slices, reads beside writes.
                t.with_world_mut(|w| {
                    let mut q = w.query::<(&Position, &mut Velocity)>().unwrap();
                    for (p, v) in q.tables() {
                        for i in 0..v.x.len() {
                            v.x[i] = (p.x[i] + v.y[i]) % 17.0;
                        }
                    }
                })
                .unwrap();
                s.execute_batch("UPDATE Velocity SET x = (Position.x + Velocity.y) % 17 FROM Position")
                    .unwrap();
            }
            _ => {
                // Structural change between rounds, so the tables' set moves.
                let script = format!(
                    "SPAWN Position({round}, 1), Velocity(1, 1); DELETE FROM Frozen WHERE id IN (SELECT id FROM Frozen ORDER BY id LIMIT 1);"
                );
                t.execute_batch(&script).unwrap();
                s.execute_batch(&script).unwrap();
            }
        }
        assert_eq!(world(&typed), world(&sql), "after round {round} (kind {kind})");
    }
    assert!(kinds.iter().all(|&n| n > 3), "every kind ran: {kinds:?}");
}

#[test]
fn changes_through_a_typed_query_are_marked_exactly() {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(&format!(
        "{SCHEMA} SPAWN Position(x => i, y => 0), Velocity(i % 3, 0) FROM range(100) AS r(i);"
    ))
    .unwrap();
    let mut reader = conn
        .prepare("SELECT id FROM Position WHERE changed(Position) ORDER BY id")
        .unwrap();
    let first: Vec<Entity> = reader
        .query_map((), |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(first.len(), 100, "a reader's first run sees every row");
    let seen = conn.with_world(|w| w.tick()).unwrap();
    // Every row is lent to write; only those with a velocity get a different value, and
    // half of those put back what they had.
    let moved: Vec<Entity> = conn
        .with_world_mut(|w| {
            let mut moved = Vec::new();
            let mut q = w.query::<(Entity, &mut Position, &Velocity)>().unwrap();
            for (e, mut p, v) in q.iter() {
                p.x += v.x;
                p.y = -0.0; // the same value as 0.0 in the one order: no change
                if v.x != 0.0 {
                    moved.push(e);
                }
            }
            moved
        })
        .unwrap();
    assert_eq!(moved.len(), 66);
    let marked: Vec<Entity> = reader
        .query_map((), |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(marked, moved, "the SQL reader sees exactly the rows that changed");
    let typed: Vec<Entity> = conn
        .with_world_mut(|w| {
            let mut q = w
                .query_filtered::<Entity, Changed<Position>>()
                .unwrap()
                .since(seen);
            q.iter().collect()
        })
        .unwrap();
    assert_eq!(typed, moved, "Changed<Position> reads the same marks");
    let after = conn.with_world(|w| w.tick()).unwrap();
    let spawned: Entity = conn.query_row("SPAWN Position(1, 1)", (), |r| r.get(0)).unwrap();
    let added: Vec<Entity> = conn
        .with_world_mut(|w| {
            let mut q = w
                .query_filtered::<Entity, (Added<Position>, Without<Velocity>)>()
                .unwrap()
                .since(after);
            assert_eq!(q.count(), 1);
            q.iter().collect()
        })
        .unwrap();
    assert_eq!(added, vec![spawned]);
}

#[test]
fn a_rollback_undoes_a_typed_query_and_indexes_follow_it() {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(&format!(
        "{SCHEMA} SPAWN Position(x => i, y => 0) FROM range(1000) AS r(i); CREATE INDEX pos_x ON Position (x);"
    ))
    .unwrap();
    let before = world(&db);
    conn.execute_batch("BEGIN").unwrap();
    conn.with_world_mut(|w| {
        for p in w.query::<(&mut Position,)>().unwrap().tables() {
            p.0.x.iter_mut().for_each(|x| *x += 5000.0);
        }
    })
    .unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, (), |r| r.get(0)).unwrap() };
    assert_eq!(
        count("SELECT count(*) FROM Position WHERE Position.x >= 5000"),
        1000
    );
    assert_eq!(
        count("SELECT count(*) FROM Position WHERE Position.x = 5007"),
        1,
        "the index was told"
    );
    assert_eq!(
        count("SELECT count(*) FROM Position WHERE Position.x = 7"),
        0,
        "…of the old value too"
    );
    conn.execute_batch("ROLLBACK").unwrap();
    assert_eq!(world(&db), before);
    assert_eq!(count("SELECT count(*) FROM Position WHERE Position.x = 7"), 1);
    assert_eq!(count("SELECT count(*) FROM Position WHERE Position.x = 5007"), 0);
}

#[test]
fn typed_world_operations_match_the_connection_s() {
    let mut w = World::new();
    w.register::<Position>().unwrap();
    w.register::<Stats>().unwrap();
    w.register::<Frozen>().unwrap();
    let stats = |hp| Stats {
        name: format!("n{hp}"),
        hp,
        level: -3,
        speed: 0.5,
        alive: true,
        target: None,
    };
    let a = w.spawn((Position { x: 1.0, y: 2.0 }, stats(5))).unwrap();
    let ids = w
        .spawn_batch((0..1000).map(|i| (Position { x: i as f32, y: 0.0 }, stats(i), Frozen)))
        .unwrap();
    assert_eq!(ids.len(), 1000);
    assert_eq!(w.get::<Stats>(ids[999]).unwrap(), Some(stats(999)));
    assert_eq!(w.get::<Frozen>(ids[3]).unwrap(), Some(Frozen));
    assert_eq!(w.get::<Frozen>(a).unwrap(), None);
    w.insert(a, Frozen).unwrap();
    w.insert(a, stats(6)).unwrap();
    assert_eq!(w.get::<Stats>(a).unwrap(), Some(stats(6)));
    assert_eq!(w.remove::<Stats>(a).unwrap(), Some(stats(6)));
    assert_eq!(w.remove::<Stats>(a).unwrap(), None);
    let count = w.query_filtered::<&Position, With<Frozen>>().unwrap().count();
    assert_eq!(count, 1001);
    w.despawn(a).unwrap();
    assert_eq!(w.get::<Position>(a).unwrap(), None);
}

#[test]
fn typed_query_misuse_is_an_error_that_names_it() {
    #[derive(Component)]
    #[ecsql(name = "Position")]
    struct Flat {
        x: f64,
        y: f32,
    }
    #[derive(Component)]
    #[ecsql(name = "Unit")]
    struct Aimed {
        label: String,
        hp: i64,
        level: i64,
        speed: f64,
        alive: bool,
        target: Entity,
    }
    #[derive(Component)]
    #[ecsql(sparse)]
    struct Heat {
        t: i64,
    }
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(&format!(
        "{SCHEMA} SPAWN Position(1, 2); SPAWN Unit('a', 1, 2, 3, TRUE, NULL); SPAWN Unit('b', 1, 99999999999, 3, TRUE, 1);"
    ))
    .unwrap();
    conn.register::<Heat>().unwrap();
    let error = |f: &dyn Fn(&mut World) -> ecsql::Result<usize>| -> String {
        conn.with_world_mut(|w| f(w).map(|_| ()).unwrap_err().to_string())
            .unwrap()
    };
    let e = error(&|w| w.query::<&Flat>().map(|q| q.count()));
    assert!(e.contains("x is REAL, where the type has FLOAT"), "{e}");
    // Naming one component twice, once as &mut, does not compile (tests/ui).
    let e = error(&|w| w.query::<&Aimed>().map(|q| q.count()));
    assert!(
        e.contains("Unit.target of entity") && e.contains("holds NULL"),
        "{e}"
    );
    let e = error(&|w| w.query::<&Stats>().map(|q| q.count()));
    assert!(
        e.contains("Unit.level of entity") && e.contains("99999999999"),
        "{e}"
    );
    let e = error(&|w| w.query::<(&Position, &Heat)>().map(|q| q.count()));
    assert!(e.contains("sparse component Heat beside others"), "{e}");
    conn.with_world_mut(|w| {
        assert!(w.query::<&Velocity>().is_ok());
        assert!(w.query::<&Heat>().is_ok(), "a sparse component alone");
    })
    .unwrap();
    // A component read from a row: its fields selected together, in order.
    let p: Position = conn
        .query_row("SELECT id, Position.x AS x, Position.y FROM Position", (), |r| {
            r.component()
        })
        .unwrap();
    assert_eq!(p, Position { x: 1.0, y: 2.0 });
    let e = conn
        .query_row("SELECT Position.y, Position.x FROM Position", (), |r| {
            r.component::<Position>()
        })
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("selected together and in order (Position.x, Position.y)"),
        "{e}"
    );
    // A sparse component alone is one table.
    let n = conn
        .with_world_mut(|w| {
            let e = w.spawn((Position { x: 0.0, y: 0.0 },)).unwrap();
            w.insert(e, Heat { t: 4 }).unwrap();
            let mut q = w.query::<&mut Heat>().unwrap();
            for mut h in q.iter() {
                h.t += 1;
            }
            drop(q);
            w.get::<Heat>(e).unwrap().map(|h| h.t)
        })
        .unwrap();
    assert_eq!(n, Some(5));
}

#[test]
fn a_query_system_declares_its_access_and_sees_changes_since_its_last_run() {
    use std::sync::{Arc, Mutex};
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(&format!(
        "{SCHEMA} SPAWN Position(x => i, y => 0), Velocity(1, 0) FROM range(10) AS r(i);
         CREATE SYSTEM mover AS UPDATE Position SET x = Position.x + 1 WHERE Position.x < tick() + 3;"
    ))
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    conn.create_query_system(
        "watch",
        "AFTER mover",
        move |mut q: ecsql::Query<(Entity, &mut Velocity), Changed<Position>>, clock| {
            let mut n = 0;
            for (_, mut v) in q.iter() {
                v.y += 1.0;
                n += 1;
            }
            log.lock().unwrap().push((clock.tick, n));
            Ok(())
        },
    )
    .unwrap();
    // Written after `watch` ran: its next run sees it.
    conn.execute_batch(
        "CREATE SYSTEM late AFTER watch AS UPDATE Position SET y = Position.y + 1 WHERE Position.x >= 9",
    )
    .unwrap();
    let failed = std::sync::atomic::AtomicBool::new(false);
    conn.create_system("fails", "AFTER late", move |_, clock| {
        if clock.tick == 3 && !failed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            Err("tick 3 fails, once".into())
        } else {
            Ok(())
        }
    })
    .unwrap();
    // Its access is what its query says.
    let mut show = conn.prepare("SHOW SYSTEMS").unwrap();
    let rows: Vec<String> = show
        .query_map((), |r| Ok(format!("{:?}", r.values())))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let watch = rows.iter().find(|r| r.contains("\"watch\"")).unwrap();
    assert!(
        watch.contains("Position") && watch.contains("Velocity"),
        "{watch}"
    );
    // moved per tick: x < tick + 3 → tick 1: x in 0..4 (4 rows), tick 2: 5 rows…
    assert_eq!(conn.tick(2).unwrap(), 2);
    assert!(conn.tick(1).is_err(), "tick 3 is undone");
    assert_eq!(conn.tick(1).unwrap(), 1, "tick 3 again");
    let seen = seen.lock().unwrap().clone();
    // First run: every row; then the rows `mover` changed that tick and the one `late`
    // changed the tick before; the undone run of tick 3 is seen again as it was (its
    // reader's tick was put back: `late`'s change of tick 2 is seen again).
    assert_eq!(seen, vec![(1, 10), (2, 6), (3, 7), (3, 7)]);
    let y: Vec<f32> = conn
        .prepare("SELECT Velocity.y FROM Velocity ORDER BY id")
        .unwrap()
        .query_map((), |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(y, vec![3.0, 3.0, 3.0, 3.0, 3.0, 2.0, 1.0, 1.0, 1.0, 3.0]);
}

/// Fields named as the derive's own locals and parameters, and a constant of a field's
/// name in scope: the generated code names its own things apart.
mod awkward {
    #![allow(non_upper_case_globals)]
    use ecsql::{Component, World};

    const x: f32 = 7.0;

    #[derive(Component, Debug, Clone, PartialEq)]
    struct Awkward {
        x: f32,
        rows: i64,
        skip: i64,
        cells: i64,
        batch: i64,
        n: i64,
        into: i64,
        columns: f32,
        row: bool,
        first: i32,
        from: String,
    }

    #[test]
    fn fields_named_as_generated_locals_work() {
        let a = |k: i64| Awkward {
            x: k as f32,
            rows: k,
            skip: k + 1,
            cells: k + 2,
            batch: k + 3,
            n: k + 4,
            into: k + 5,
            columns: x,
            row: k % 2 == 0,
            first: k as i32,
            from: format!("f{k}"),
        };
        let mut w = World::new();
        w.register::<Awkward>().unwrap();
        let ids = w.spawn_batch((0..10).map(a)).unwrap();
        for mut v in w.query::<&mut Awkward>().unwrap().iter() {
            v.n *= 2;
        }
        let mut want = a(3);
        want.n *= 2;
        assert_eq!(w.get::<Awkward>(ids[3]).unwrap(), Some(want));
        let sum: i64 = w
            .query::<&Awkward>()
            .unwrap()
            .tables()
            .map(|c| c.into.iter().sum::<i64>())
            .sum();
        assert_eq!(sum, (0..10).map(|k| k + 5).sum::<i64>());
    }
}

#[derive(Component, Debug, Clone, PartialEq)]
struct Empty {}

#[derive(Component, Debug, Clone, PartialEq)]
struct Link {
    r#type: i32,
    to: Entity,
}

#[test]
fn tags_options_and_odd_fields_iterate_each_row_once() {
    let mut w = World::new();
    w.register::<Position>().unwrap();
    w.register::<Frozen>().unwrap();
    w.register::<Empty>().unwrap();
    w.register::<Link>().unwrap();
    let a = w.spawn((Position { x: 1.0, y: 1.0 }, Frozen)).unwrap();
    let b = w.spawn((Position { x: 2.0, y: 2.0 }, Empty {})).unwrap();
    let c = w.spawn((Empty {},)).unwrap();
    // A tag alone, an Option alone, an optional tag before a component: each entity once.
    // (`take` bounds a query that would not end, so the test fails rather than hangs.)
    assert_eq!(w.query::<&Frozen>().unwrap().iter().take(100).count(), 1);
    assert_eq!(w.query::<&Empty>().unwrap().iter().take(100).count(), 2);
    let all: Vec<(Entity, bool)> = w
        .query::<(Entity, Option<&Position>)>()
        .unwrap()
        .iter()
        .take(100)
        .map(|(e, p)| (e, p.is_some()))
        .collect();
    assert_eq!(all.len(), 3, "{all:?}");
    assert!(all.contains(&(c, false)));
    let mut q = w.query::<(Option<&Frozen>, &Position)>().unwrap();
    assert_eq!(q.count(), 2);
    let seen: Vec<(bool, f32)> = q.iter().take(100).map(|(f, p)| (f.is_some(), p.x)).collect();
    assert_eq!(seen.len(), 2);
    assert!(seen.contains(&(true, 1.0)) && seen.contains(&(false, 2.0)));
    drop(q);
    assert_eq!(w.get::<Empty>(b).unwrap(), Some(Empty {}));
    assert_eq!(w.get::<Empty>(a).unwrap(), None);
    // A raw identifier is the field's name without `r#`.
    let l = w.spawn((Link { r#type: 3, to: a },)).unwrap();
    assert_eq!(w.component_by_name("Link").unwrap().fields()[0].name(), "type");
    // The table view lends an i32 and an Entity field as slices that take only those.
    let mut q = w.query::<&mut Link>().unwrap();
    for links in q.tables() {
        let (mut types, mut to) = (links.r#type, links.to);
        assert_eq!((types.get(0), to.get(0)), (Some(3), Some(a)));
        assert!(types.set(0, -7) && to.set(0, b));
        assert!(!types.set(1, 0), "past the last row nothing is written");
        assert_eq!(types.as_stored(), &[-7i64]);
    }
    drop(q);
    assert_eq!(w.get::<Link>(l).unwrap(), Some(Link { r#type: -7, to: b }));
}

#[test]
fn a_leaked_query_is_settled_before_anyone_reads_the_world() {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(&format!(
        "{SCHEMA} SPAWN Position(x => i, y => 0) FROM range(100) AS r(i); CREATE INDEX pos_x ON Position (x);"
    ))
    .unwrap();
    let mut reader = conn
        .prepare("SELECT count(*) FROM Position WHERE changed(Position)")
        .unwrap();
    assert_eq!(reader.query_row((), |r| r.get::<_, i64>(0)).unwrap(), 100);
    conn.with_world_mut(|w| {
        let mut q = w.query::<&mut Position>().unwrap();
        for mut p in q.iter() {
            p.x += 1000.0;
        }
        std::mem::forget(q);
    })
    .unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, (), |r| r.get(0)).unwrap() };
    assert_eq!(
        count("SELECT count(*) FROM Position WHERE Position.x = 1005"),
        1,
        "the index was told"
    );
    assert_eq!(
        count("SELECT count(*) FROM Position WHERE Position.x >= 1000"),
        100
    );
    assert_eq!(
        reader.query_row((), |r| r.get::<_, i64>(0)).unwrap(),
        100,
        "every row was marked"
    );
}

#[test]
fn typed_operations_refuse_a_type_that_differs_and_name_registering() {
    #[derive(Component)]
    #[ecsql(name = "Position")]
    struct Wide {
        x: f64,
        y: f64,
    }
    #[derive(Component)]
    struct Ghost {
        boo: bool,
    }
    let conn = Database::open_in_memory().connect();
    conn.register::<Position>().unwrap();
    let e = conn.spawn(Wide { x: 1.0, y: 2.0 }).unwrap_err().to_string();
    assert!(e.contains("x is REAL, where the type has FLOAT"), "{e}");
    let p = conn.spawn((Position { x: 0.0, y: 0.0 },)).unwrap();
    let e = conn.insert(p, Wide { x: 1.0, y: 2.0 }).unwrap_err().to_string();
    assert!(e.contains("DROP COMPONENT Position"), "{e}");
    let e = conn
        .with_world_mut(|w| w.spawn((Ghost { boo: true },)).unwrap_err().to_string())
        .unwrap();
    assert!(
        e.contains("component Ghost is not in this world: register it first"),
        "{e}"
    );
}

#[test]
fn a_batch_spawned_on_a_file_database_is_there_when_it_opens_again() {
    let folder = crate::common::Folder::new("typed_batch");
    let path = folder.file("game.ecsql");
    {
        let conn = Database::open(&path).unwrap().connect();
        conn.register::<Position>().unwrap();
        conn.register::<Velocity>().unwrap();
        let ids = conn
            .spawn_batch((0..1000).map(|i| (Position { x: i as f32, y: 0.0 }, Velocity { x: 1.0, y: 1.0 })))
            .unwrap();
        assert_eq!(ids.len(), 1000);
        conn.execute("UPDATE Position SET y = 5 WHERE Position.x < 10", ())
            .unwrap();
    }
    let conn = Database::open(&path).unwrap().connect();
    let count = |sql: &str| -> i64 { conn.query_row(sql, (), |r| r.get(0)).unwrap() };
    assert_eq!(count("SELECT count(*) FROM Position, Velocity"), 1000);
    assert_eq!(count("SELECT count(*) FROM Position WHERE Position.y = 5"), 10);
}
