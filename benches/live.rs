//! Live queries: what one commit costs with a subscription open, kept per entity beside
//! the same query kept by running it again, and beside SQLite running it again.
//!
//! 1,000,000 entities with Health (hp = i % 1000), Team (n = i % 1000) and Member
//! (squad: one of 1,000 other entities with Squad (name)); 1,000 of them (every
//! 1,000th) are tagged Hot. Each measured commit is one UPDATE of the Hot
//! entities' hp (`UPDATE Health SET hp = (Health.hp + 7) % 1000 FROM Hot`, prepared: it
//! reads only their archetype table), then every batch it made is read (`try_next`).
//! The cost of keeping a subscription is a variant's time less `update_alone`'s.
//!
//! - `live_filter/update_alone`: the UPDATE with no subscription open;
//! - `per_entity`: with `SELECT id, Health.hp FROM Health WHERE Health.hp < 10` open
//!   (10,000 rows), kept per entity (EXPLAIN SUBSCRIBE says so): the commit reads again
//!   the 1,000 entities written;
//! - `rerun`: with the same query written `… LIMIT 1000000000`, which is kept by running
//!   it again at each commit and comparing results;
//! - `per_group`: with `SELECT Team.n % 10 AS k, count(*), sum(Health.hp), min(Health.hp)
//!   FROM Health, Team GROUP BY k` open (10 groups of 100,000), kept per group: the
//!   commit reads again the 1,000 entities written and folds again the groups they are
//!   in; `group_rerun`: the same with `LIMIT 1000000000`, run again and compared;
//! - `per_joined_row`: with `SELECT Health.id, Health.hp, s.name FROM Health, Member
//!   JOIN Squad AS s ON s.id = Member.squad WHERE Health.hp < 10` open (10,000 rows), a
//!   two-way join kept per joined row: the commit joins the 1,000 entities written to
//!   their squads through the entity index; `join_rerun`: the same with `LIMIT
//!   1000000000`;
//! - `sqlite_rerun`: SQLite's UPDATEs of the same 1,000 rows (by id, in a transaction),
//!   then the query run again
//!   (what keeping it without ecsql costs: the whole query at every commit);
//!   `sqlite_join_rerun`: the same UPDATEs, then the join run again (`health` joined to
//!   `squad` by its primary key).
//!
//! - `live_many/per_entity_1000`: 1,000 subscriptions `… WHERE Team.n = <k>` (k = 0 …
//!   999), each kept per entity, and the same UPDATE: each reads again the entities
//!   written.
//!
//! Run: `cargo bench -p ecsql-benches --bench live`.

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use ecsql::{Connection, Subscription};

const N: i64 = 1_000_000;
const CHANGED: i64 = 1_000;
const QUERY: &str = "SELECT id, Health.hp FROM Health WHERE Health.hp < 10";
const JOIN: &str = "SELECT Health.id, Health.hp, s.name FROM Health, Member JOIN Squad AS s ON s.id = Member.squad WHERE Health.hp < 10";
const GROUPS: &str = "SELECT Team.n % 10 AS k, count(*) AS n, sum(Health.hp) AS total, min(Health.hp) AS low FROM Health, Team GROUP BY k";

fn world() -> Connection {
    let conn = common::ecsql(
        "CREATE COMPONENT Health (hp INT); CREATE COMPONENT Team (n INT); CREATE TAG Hot;
         CREATE COMPONENT Squad (name TEXT); CREATE COMPONENT Member (squad ENTITY);
         SPAWN Squad('squad ' || i) FROM range(1000) AS r(i);",
    );
    conn.execute(
        &format!("SPAWN Health(i % 1000), Team(i % 1000), Member(1 + i % 1000) FROM range({N}) AS r(i)"),
        (),
    )
    .expect("the world spawns");
    conn.execute(
        &format!(
            "INSERT INTO Hot (id) SELECT id FROM Health WHERE CAST(id AS INT) % {} = 0",
            N / CHANGED
        ),
        (),
    )
    .expect("1,000 entities are Hot");
    conn
}

/// One commit: the hp of the 1,000 entities tagged Hot written by one UPDATE (which
/// reads only their table), then every batch waiting read.
fn commit(conn: &Connection, subs: &[Subscription]) -> usize {
    let mut update = conn
        .prepare_cached("UPDATE Health SET hp = (Health.hp + 7) % 1000 FROM Hot")
        .expect("the UPDATE prepares");
    update.execute(()).expect("the UPDATE runs");
    let mut rows = 0;
    for sub in subs {
        while let Some(batch) = sub.try_next().expect("the subscription runs") {
            rows += batch.count();
        }
    }
    rows
}

fn live_filter(c: &mut Criterion) {
    let mut group = c.benchmark_group("live_filter");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    group.warm_up_time(Duration::from_secs(1));

    let conn = world();
    group.bench_function("update_alone", |b| b.iter(|| black_box(commit(&conn, &[]))));

    // Each query kept the way EXPLAIN SUBSCRIBE says, then written with LIMIT to be run
    // again at each commit.
    let kept_ways = [
        ("per_entity", QUERY, "per entity"),
        ("per_group", GROUPS, "per group"),
        ("per_joined_row", JOIN, "per joined row"),
        (
            "join_rerun",
            &format!("{JOIN} LIMIT 1000000000"),
            "running the query again",
        ),
        (
            "group_rerun",
            &format!("{GROUPS} LIMIT 1000000000"),
            "running the query again",
        ),
        (
            "rerun",
            &format!("{QUERY} LIMIT 1000000000"),
            "running the query again",
        ),
    ];
    for (name, sql, way) in kept_ways {
        let explained: String = conn
            .query_row(&format!("EXPLAIN SUBSCRIBE {sql}"), (), |r| r.get(0))
            .expect("EXPLAIN SUBSCRIBE");
        assert!(explained.contains(way), "{explained}");
        let subs = [conn.subscribe(sql, ()).expect("subscribes")];
        group.bench_function(name, |b| b.iter(|| black_box(commit(&conn, &subs))));
    }
    drop(conn);

    let db = common::sqlite(
        "CREATE TABLE health (id INTEGER PRIMARY KEY, hp INTEGER NOT NULL, squad INTEGER NOT NULL);
         CREATE TABLE squad (id INTEGER PRIMARY KEY, name TEXT NOT NULL);",
    );
    db.execute(
        &format!(
            "WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < {}) \
             INSERT INTO health (id, hp, squad) SELECT i + 1, i % 1000, 1 + i % 1000 FROM r",
            N - 1
        ),
        (),
    )
    .expect("SQLite's rows");
    db.execute(
        "WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 999) \
         INSERT INTO squad (id, name) SELECT i + 1, 'squad ' || i FROM r",
        (),
    )
    .expect("SQLite's squads");
    let mut update = db
        .prepare(&format!(
            "UPDATE health SET hp = (hp + 7) % 1000 WHERE id = ?1 * {}",
            N / CHANGED
        ))
        .expect("prepares");
    let mut query = db
        .prepare("SELECT id, hp FROM health WHERE hp < 10")
        .expect("prepares");
    group.bench_function("sqlite_rerun", |b| {
        b.iter(|| {
            common::sqlite_tx(&db, || {
                for k in 1..=CHANGED {
                    update.execute((k,)).expect("runs");
                }
            });
            let rows: usize = query
                .query_map((), |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
                .expect("runs")
                .count();
            black_box(rows)
        })
    });
    let mut join = db
        .prepare(
            "SELECT h.id, h.hp, s.name FROM health AS h JOIN squad AS s ON s.id = h.squad WHERE h.hp < 10",
        )
        .expect("prepares");
    group.bench_function("sqlite_join_rerun", |b| {
        b.iter(|| {
            common::sqlite_tx(&db, || {
                for k in 1..=CHANGED {
                    update.execute((k,)).expect("runs");
                }
            });
            let rows: usize = join
                .query_map((), |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?))
                })
                .expect("runs")
                .count();
            black_box(rows)
        })
    });
    group.finish();
}

fn live_many(c: &mut Criterion) {
    let mut group = c.benchmark_group("live_many");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    group.warm_up_time(Duration::from_secs(1));
    let conn = world();
    let subs: Vec<Subscription> = (0..1000)
        .map(|k| {
            conn.subscribe("SELECT id, Health.hp FROM Health, Team WHERE Team.n = ?1", (k,))
                .expect("subscribes")
        })
        .collect();
    // The first commit reads every query whole once (the change log starts watching).
    commit(&conn, &subs);
    group.bench_function("per_entity_1000", |b| b.iter(|| black_box(commit(&conn, &subs))));
    group.finish();
}

criterion_group!(benches, live_filter, live_many);
criterion_main!(benches);
