//! Memory of live queries: the heap bytes a subscription keeps, in the world of
//! `benches/live.rs` (1,000,000 entities with Health, Team and Member; 1,000 Squads), for
//! each way a subscription is kept. Bytes are counted by a global allocator that tracks
//! live heap bytes: each figure is what the process holds after the subscription is
//! opened and one commit has passed (its first batch read, the change log watching its
//! components), less what it held before. Not a criterion bench: it measures bytes, once,
//! and prints them.
//!
//! Run: `cargo bench -p ecsql-benches --bench live_memory`.

use ecsql::{Connection, Database, Subscription, Value};

#[path = "common/counting.rs"]
mod counting;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

const N: i64 = 1_000_000;

fn world() -> (Database, Connection) {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(&format!(
        "CREATE COMPONENT Health (hp INT); CREATE COMPONENT Team (n INT); CREATE TAG Hot;
         CREATE COMPONENT Squad (name TEXT); CREATE COMPONENT Member (squad ENTITY);
         SPAWN Squad('squad ' || i) FROM range(1000) AS r(i);
         SPAWN Health(i % 1000), Team(i % 1000), Member(1 + i % 1000) FROM range({N}) AS r(i);
         INSERT INTO Hot (id) SELECT id FROM Health WHERE CAST(id AS INT) % 1000 = 0;"
    ))
    .expect("the world spawns");
    (db, conn)
}

/// One commit (the Hot entities' hp written), then every waiting batch read.
fn commit(conn: &Connection, subs: &[Subscription]) {
    conn.execute("UPDATE Health SET hp = (Health.hp + 7) % 1000 FROM Hot", ())
        .expect("the UPDATE runs");
    for sub in subs {
        while sub.try_next().expect("the subscription runs").is_some() {}
    }
}

/// Heap bytes `open`'s subscriptions keep after a commit, and the rows they hold.
fn kept(conn: &Connection, open: impl FnOnce() -> Vec<Subscription>) -> (usize, Vec<Subscription>) {
    commit(conn, &[]);
    let before = counting::live();
    let subs = open();
    commit(conn, &subs);
    let after = counting::live();
    (after.saturating_sub(before), subs)
}

fn main() {
    let (_db, conn) = world();
    let cases: [(&str, &str, usize); 5] = [
        (
            "per entity: a filter",
            "SELECT id, Health.hp FROM Health WHERE Health.hp < 10",
            10_000,
        ),
        (
            "per joined row: a two-way join",
            "SELECT Health.id, Health.hp, s.name FROM Health, Member JOIN Squad AS s ON s.id = Member.squad WHERE Health.hp < 10",
            10_000,
        ),
        (
            "per group: 10 groups",
            "SELECT Team.n % 10 AS k, count(*) AS n, sum(Health.hp) AS total, min(Health.hp) AS low FROM Health, Team GROUP BY k",
            1_000_000,
        ),
        (
            "run again: the filter",
            "SELECT id, Health.hp FROM Health WHERE Health.hp < 10 LIMIT 1000000000",
            10_000,
        ),
        (
            "run again: 10 groups",
            "SELECT Team.n % 10 AS k, count(*) AS n, sum(Health.hp) AS total, min(Health.hp) AS low FROM Health, Team GROUP BY k LIMIT 1000000000",
            10,
        ),
    ];
    println!("live_memory: heap bytes a subscription keeps, {N} entities");
    for (name, sql, rows) in cases {
        let (bytes, subs) = kept(&conn, || vec![conn.subscribe(sql, ()).expect("subscribes")]);
        println!(
            "  {name:<32} {:>12} B  {:>8.1} B per row kept ({rows} rows or contributions)",
            bytes,
            bytes as f64 / rows as f64
        );
        drop(subs);
        commit(&conn, &[]);
    }
    let (bytes, subs) = kept(&conn, || {
        (0..1000)
            .map(|k| {
                conn.subscribe(
                    "SELECT id, Health.hp FROM Health, Team WHERE Team.n = ?1",
                    [Value::Int(k)],
                )
                .expect("subscribes")
            })
            .collect()
    });
    println!(
        "  {:<32} {:>12} B  {:>8.1} B per subscription (1,000 rows each)",
        "1,000 differing by a constant",
        bytes,
        bytes as f64 / subs.len() as f64
    );
}
