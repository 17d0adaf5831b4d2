//! Components as Rust types (`#[derive(Component)]`, the `derive` feature): `register`
//! creates a component or names how the existing one differs; `spawn`, `get`, `insert`,
//! `remove` and `despawn` leave the world exactly as the same operations written in SQL
//! (a differential over random operations); a failing one changes nothing.

use ecsql::{Component, Database, Entity};

#[derive(Component, Debug, Clone, PartialEq)]
struct Position {
    x: f32,
    y: f32,
}

#[derive(Component, Debug, Clone, PartialEq)]
#[ecsql(name = "Unit")]
struct Stats {
    #[ecsql(name = "label")]
    name: String,
    hp: i64,
    speed: f64,
    alive: bool,
    target: Option<Entity>,
}

#[derive(Component, Debug, Clone, PartialEq)]
#[ecsql(sparse)]
struct Frozen;

/// The whole world, as text: every component's rows by id.
fn world(db: &Database) -> String {
    let conn = db.connect();
    let mut out = String::new();
    for sql in [
        "SELECT id, Position.x, Position.y FROM Position ORDER BY id",
        "SELECT id, Unit.label, Unit.hp, Unit.speed, Unit.alive, Unit.target FROM Unit ORDER BY id",
        "SELECT id FROM Frozen ORDER BY id",
        "SELECT count(*) FROM entities",
    ] {
        let mut stmt = conn.prepare(sql).unwrap();
        for row in stmt.query(()).unwrap() {
            out.push_str(&format!("{:?}\n", row.unwrap().values()));
        }
    }
    out
}

#[test]
fn typed_operations_leave_the_world_the_same_operations_in_sql_do() {
    let typed = Database::open_in_memory();
    let sql = Database::open_in_memory();
    let (t, s) = (typed.connect(), sql.connect());
    t.register::<Position>().unwrap();
    t.register::<Stats>().unwrap();
    t.register::<Frozen>().unwrap();
    s.execute_batch(
        "CREATE COMPONENT Position (x REAL, y REAL);
         CREATE COMPONENT Unit (label TEXT, hp INT, speed FLOAT, alive BOOL, target ENTITY);
         CREATE TAG Frozen WITH (storage = sparse);",
    )
    .unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut ids: Vec<Entity> = Vec::new();
    for step in 0..600 {
        let pick = |k: u64, ids: &[Entity]| ids.get(k as usize % ids.len().max(1)).copied();
        let stats = |k: u64, ids: &[Entity]| Stats {
            name: format!("u{k}"),
            hp: k as i64 - 50,
            speed: k as f64 / 8.0,
            alive: k.is_multiple_of(2),
            target: if k.is_multiple_of(3) { None } else { pick(k, ids) },
        };
        match next(7) {
            0 | 1 => {
                let (p, u) = (
                    Position {
                        x: next(100) as f32,
                        y: step as f32,
                    },
                    stats(next(100), &ids),
                );
                let e = t.spawn((p.clone(), u.clone())).unwrap();
                let f = s
                    .query_row(
                        "SPAWN Position(?1, ?2), Unit(?3, ?4, ?5, ?6, ?7)",
                        (p.x, p.y, u.name, u.hp, u.speed, u.alive, u.target),
                        |r| r.get::<_, Entity>(0),
                    )
                    .unwrap();
                assert_eq!(e, f, "the same ids");
                ids.push(e);
            }
            2 => {
                let Some(e) = pick(next(1000), &ids) else { continue };
                let p = Position {
                    x: -(next(50) as f32),
                    y: 0.5,
                };
                let a = t.insert(e, p.clone());
                let b = s.execute(
                    "INSERT OR REPLACE INTO Position (id, x, y) VALUES (?1, ?2, ?3)",
                    (e, p.x, p.y),
                );
                assert_eq!(a.is_ok(), b.is_ok(), "{a:?} {b:?}");
            }
            3 => {
                let Some(e) = pick(next(1000), &ids) else { continue };
                let a = t.remove::<Stats>(e).unwrap();
                let before: Option<i64> = s
                    .query_row("SELECT Unit.hp FROM Unit WHERE id = ?1", (e,), |r| r.get(0))
                    .ok();
                s.execute("DELETE FROM Unit WHERE id = ?1", (e,)).unwrap();
                assert_eq!(a.map(|u| u.hp), before);
            }
            4 => {
                let Some(e) = pick(next(1000), &ids) else { continue };
                let a = t.insert(e, Frozen);
                let b = s.execute("INSERT OR REPLACE INTO Frozen (id) VALUES (?1)", (e,));
                assert_eq!(a.is_ok(), b.is_ok());
            }
            5 => {
                let Some(e) = pick(next(1000), &ids) else { continue };
                let a = t.despawn(e);
                let b = s.execute("DESPAWN ?1", (e,));
                assert_eq!(a.is_ok(), b.as_ref().is_ok_and(|n| *n == 1), "{a:?} {b:?}");
                ids.retain(|x| *x != e);
            }
            _ => {
                let Some(e) = pick(next(1000), &ids) else { continue };
                let got = t.get::<Stats>(e).unwrap();
                let want: Option<(String, i64, f64, bool, Option<Entity>)> = s
                    .query_row(
                        "SELECT Unit.label, Unit.hp, Unit.speed, Unit.alive, Unit.target FROM Unit WHERE id = ?1",
                        (e,),
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
                    )
                    .ok();
                assert_eq!(got.map(|u| (u.name, u.hp, u.speed, u.alive, u.target)), want);
            }
        }
    }
    assert!(ids.len() > 50, "the run spawned {} entities", ids.len());
    assert_eq!(world(&typed), world(&sql));
}

#[test]
fn register_checks_an_existing_component_and_names_what_differs() {
    let conn = Database::open_in_memory().connect();
    conn.register::<Position>().unwrap();
    conn.register::<Position>().expect("the same fields again");
    conn.execute_batch("CREATE COMPONENT Unit (label TEXT, hp REAL, extra INT);")
        .unwrap();
    let e = conn.register::<Stats>().unwrap_err().to_string();
    for part in [
        "component Unit differs from the Rust type",
        "hp is REAL, where the type has INT",
        "its field 3 is extra, where the type has speed",
        "it has no field alive (a BOOL in the type)",
    ] {
        assert!(e.contains(part), "{part:?} in {e}");
    }
    conn.execute_batch("CREATE TAG Frozen;").unwrap();
    let e = conn.register::<Frozen>().unwrap_err().to_string();
    assert!(e.contains("it is kept dense, where the type says sparse"), "{e}");
    // Operations on what is no entity.
    let gone = conn.spawn(Position { x: 0.0, y: 0.0 }).unwrap();
    conn.despawn(gone).unwrap();
    let twice = conn.despawn(gone).unwrap_err().to_string();
    assert!(twice.contains("was despawned"), "{twice}");
    assert!(conn.insert(gone, Position { x: 1.0, y: 1.0 }).is_err());
    assert_eq!(conn.get::<Position>(gone).unwrap(), None);
    assert_eq!(conn.remove::<Position>(gone).unwrap(), None);
}

#[derive(ecsql::FromRow, Debug, PartialEq)]
struct Row2 {
    id: Entity,
    hp: i64,
}

#[derive(ecsql::FromRow, Debug, PartialEq)]
struct Pair(String, f64);

/// `#[derive(FromRow)]`: a field reads its column by name, or the one field of its name;
/// two such fields, or none, are errors naming the columns; a tuple struct reads by
/// position.
#[test]
fn from_row_reads_fields_by_name_and_says_which_column_is_wrong() {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(
        "CREATE COMPONENT Unit (label TEXT, hp INT); CREATE COMPONENT Boss (hp INT);
         SPAWN Unit('a', 5), Boss(9); SPAWN Unit('b', 6);",
    )
    .unwrap();
    let rows: Vec<Row2> = conn
        .prepare("SELECT id, Unit.hp FROM Unit ORDER BY id")
        .unwrap()
        .query_as(())
        .unwrap();
    assert_eq!(rows.iter().map(|r| r.hp).collect::<Vec<_>>(), [5, 6]);
    let both = conn
        .prepare("SELECT id, Unit.hp, Boss.hp FROM Unit, Boss")
        .unwrap()
        .query_as::<Row2>(())
        .unwrap_err()
        .to_string();
    assert!(both.contains("both Unit.hp and Boss.hp"), "{both}");
    let none = conn
        .prepare("SELECT id, Unit.label FROM Unit")
        .unwrap()
        .query_as::<Row2>(())
        .unwrap_err()
        .to_string();
    assert!(none.contains("hp (the columns are id, Unit.label)"), "{none}");
    let pairs: Vec<Pair> = conn
        .prepare("SELECT Unit.label, CAST(Unit.hp AS FLOAT) / 2 FROM Unit ORDER BY id")
        .unwrap()
        .query_as(())
        .unwrap();
    assert_eq!(pairs, [Pair("a".into(), 2.5), Pair("b".into(), 3.0)]);
}
