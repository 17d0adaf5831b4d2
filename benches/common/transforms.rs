//! The ecs_bench_suite world of simple_insert and simple_iter: Transform (a 4x4 matrix),
//! Position, Rotation and Velocity, as ecsql DDL, as SQLite tables and as hecs components.

use super::sqlite_tx;

pub const IDENTITY: [f32; 16] = [1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1.];
pub const UNIT_X: [f32; 3] = [1., 0., 0.];

pub fn ddl() -> String {
    let matrix: Vec<String> = (0..16).map(|i| format!("m{i} REAL")).collect();
    format!(
        "CREATE COMPONENT Transform ({});
         CREATE COMPONENT Position (x REAL, y REAL, z REAL);
         CREATE COMPONENT Rotation (x REAL, y REAL, z REAL);
         CREATE COMPONENT Velocity (x REAL, y REAL, z REAL);",
        matrix.join(", ")
    )
}

pub fn spawn_sql() -> String {
    let list = |v: &[f32]| v.iter().map(f32::to_string).collect::<Vec<_>>().join(", ");
    format!(
        "SPAWN Transform({}), Position({v}), Rotation({v}), Velocity({v}) FROM range(?1)",
        list(&IDENTITY),
        v = list(&UNIT_X)
    )
}

pub struct Transform(pub [f32; 16]);
pub struct Position(pub [f32; 3]);
pub struct Rotation(pub [f32; 3]);
pub struct Velocity(pub [f32; 3]);

pub fn sqlite_ddl() -> String {
    let matrix: Vec<String> = (0..16).map(|i| format!("m{i} REAL")).collect();
    let xyz = "(id INTEGER PRIMARY KEY, x REAL, y REAL, z REAL)";
    format!(
        "CREATE TABLE transform (id INTEGER PRIMARY KEY, {});
         CREATE TABLE position {xyz}; CREATE TABLE rotation {xyz}; CREATE TABLE velocity {xyz};",
        matrix.join(", ")
    )
}

pub fn sqlite_insert(db: &rusqlite::Connection, n: usize) {
    sqlite_tx(db, || {
        let marks = vec!["?"; 16].join(", ");
        let mut transform = db
            .prepare(&format!("INSERT INTO transform VALUES (?, {marks})"))
            .unwrap();
        let mut xyz: Vec<_> = ["position", "rotation", "velocity"]
            .iter()
            .map(|t| {
                db.prepare(&format!("INSERT INTO {t} VALUES (?, ?, ?, ?)"))
                    .unwrap()
            })
            .collect();
        for id in 0..n as i64 {
            let mut row: Vec<&dyn rusqlite::ToSql> = vec![&id];
            row.extend(IDENTITY.iter().map(|v| v as &dyn rusqlite::ToSql));
            transform.execute(&row[..]).unwrap();
            for statement in &mut xyz {
                statement.execute((id, UNIT_X[0], UNIT_X[1], UNIT_X[2])).unwrap();
            }
        }
    });
}
