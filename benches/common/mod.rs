//! What every comparison bench shares: the sizes, the anchors' set-up (an ecsql database,
//! an in-memory SQLite through rusqlite), a seeded number source so every side gets the
//! same data, and the criterion settings that keep a full run within minutes on 2 cores.
//!
//! Each bench file `mod`s this in, so not every file uses every helper.
#![allow(dead_code)]

use std::time::Duration;

use criterion::{BenchmarkGroup, measurement::WallTime};
use ecsql::{Connection, Database};

pub const SIZES: [usize; 2] = [10_000, 1_000_000];

/// An ecsql database with `ddl` run, and a connection on it.
pub fn ecsql(ddl: &str) -> Connection {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(ddl).expect("the bench's DDL is valid");
    conn
}

/// Every id `sql` returns, in order.
pub fn ids(conn: &Connection, sql: &str) -> Vec<ecsql::Entity> {
    let mut statement = conn.prepare(sql).expect("the bench's query is valid");
    let rows = statement.query(()).expect("the query runs");
    rows.column::<Option<ecsql::Entity>>(0)
        .expect("an id column")
        .iter()
        .flatten()
        .copied()
        .collect()
}

/// An in-memory SQLite with `ddl` run. Journal off and synchronous off: nothing is on disk
/// anyway, and the anchor should be SQLite at its fastest.
pub fn sqlite(ddl: &str) -> rusqlite::Connection {
    let db = rusqlite::Connection::open_in_memory().expect("in-memory SQLite opens");
    db.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")
        .expect("pragmas apply");
    db.execute_batch(ddl).expect("the bench's DDL is valid");
    db
}

/// Runs `f` inside one SQLite transaction (the anchor's "one transaction per batch").
/// BEGIN and COMMIT as statements, so `f` may use statements prepared outside.
pub fn sqlite_tx<T>(db: &rusqlite::Connection, f: impl FnOnce() -> T) -> T {
    db.execute_batch("BEGIN").expect("BEGIN");
    let out = f();
    db.execute_batch("COMMIT").expect("COMMIT");
    out
}

/// A small, seeded generator (SplitMix64), so every side of a comparison holds the same data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Fewer, longer samples for the million-entity cases, so a full run stays short.
pub fn size_group(group: &mut BenchmarkGroup<'_, WallTime>, n: usize) {
    if n >= 1_000_000 {
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(8));
    } else {
        group.sample_size(50);
        group.measurement_time(Duration::from_secs(3));
    }
    group.warm_up_time(Duration::from_secs(1));
}
pub mod duck;
pub mod transforms;
