//! A file database's costs, beside SQLite in WAL mode in the same run:
//!
//! - `commit/{off,normal,full}`: one committed one-row UPDATE (a prepared statement, a
//!   random one of 10,000 entities) with `PRAGMA synchronous` at each setting: ecsql
//!   journals it (and flushes as the setting says); SQLite (`journal_mode = WAL`, the same
//!   `synchronous`) writes its WAL frame;
//! - `recovery/journal_100mb`: `Database::open` of a database whose journal holds about
//!   100 MB of such commits (about a million records), which it runs again (MB/s of
//!   journal);
//! - `recovery/texts_100mb`: the same, each commit a new text (`… WHERE id = 4711`, as a
//!   program that formats its SQL writes it), journaled as the statement its texts share
//!   with the text's values as parameters;
//! - `recovery/ticks_100mb`: a journal of about 100 MB of ticks (`TICK n`, a record per
//!   tick), each moving 100 entities;
//! - `recovery/spawns_100mb`: one-entity SPAWNs, each a new text (`SPAWN Health(hp =>
//!   4711)`);
//! - `recovery/despawns_100mb`: one-entity DESPAWNs, each a new text (`DESPAWN 4711`), of
//!   entities the journal's first record spawned;
//! - `recovery/transactions_100mb`: transactions of ten prepared one-row UPDATEs, a record
//!   of ten statements each.
//!
//! Every open replays the whole journal: the bench opens with
//! `checkpoint_after_replay(Duration::MAX)`, so the first open does not checkpoint it away.
//!
//! Files go to the system's temporary folder; `commit/full` measures that disk's flush.
//!
//! Run: `cargo bench -p ecsql-benches --bench durability`.

mod common;

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ecsql::Database;

const ENTITIES: i64 = 10_000;

fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ecsql-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn commit(c: &mut Criterion) {
    let mut group = c.benchmark_group("commit");
    for sync in ["off", "normal", "full"] {
        let dir = folder(&format!("commit-{sync}"));
        {
            let db = Database::open(dir.join("bench.ecsql")).unwrap();
            let conn = db.connect();
            conn.execute(&format!("PRAGMA synchronous = {sync}"), ()).unwrap();
            conn.execute_batch(&format!(
                "CREATE COMPONENT Health (hp INT); SPAWN Health(100) FROM range({ENTITIES}) AS r(i);"
            ))
            .unwrap();
            let mut update = conn
                .prepare("UPDATE Health SET hp = hp + 1 WHERE id = ?1")
                .unwrap();
            let mut next = common::Rng::new(7);
            group.bench_function(format!("ecsql_{sync}"), |b| {
                b.iter(|| {
                    let id = 1 + next.below(ENTITIES as u64) as i64;
                    black_box(update.execute([id]).unwrap())
                })
            });
        }
        {
            let sqlite = rusqlite::Connection::open(dir.join("bench.sqlite")).unwrap();
            sqlite
                .execute_batch(&format!(
                    "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync};
                     CREATE TABLE health (id INTEGER PRIMARY KEY, hp INTEGER);
                     WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < {ENTITIES})
                     INSERT INTO health SELECT i, 100 FROM r;"
                ))
                .unwrap();
            let mut update = sqlite
                .prepare("UPDATE health SET hp = hp + 1 WHERE id = ?1")
                .unwrap();
            let mut next = common::Rng::new(7);
            group.bench_function(format!("sqlite_wal_{sync}"), |b| {
                b.iter(|| {
                    let id = 1 + next.below(ENTITIES as u64) as i64;
                    black_box(update.execute([id]).unwrap())
                })
            });
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    group.finish();
}

/// A file database in `dir` whose journal `fill` grows past 100 MB (checkpoints put off),
/// closed; gives its path and its journal's length.
fn journal_of(
    dir: &std::path::Path,
    setup: &str,
    mut fill: impl FnMut(&ecsql::Connection),
) -> (PathBuf, u64) {
    let path = dir.join("recover.ecsql");
    let journal = dir.join("recover.ecsql-journal");
    {
        let db = Database::open(&path).unwrap();
        let conn = db.connect();
        conn.execute_batch(&format!(
            "PRAGMA synchronous = off; PRAGMA checkpoint_size = '1GiB'; {setup}"
        ))
        .unwrap();
        while std::fs::metadata(&journal).unwrap().len() < 100_000_000 {
            fill(&conn);
        }
    }
    let len = std::fs::metadata(&journal).unwrap().len();
    (path, len)
}

fn recovery(c: &mut Criterion) {
    let mut group = c.benchmark_group("recovery");
    group.sample_size(10);
    let health =
        format!("CREATE COMPONENT Health (hp INT); SPAWN Health(100) FROM range({ENTITIES}) AS r(i);");
    let mut next = common::Rng::new(7);
    type Fill<'a> = Box<dyn FnMut(&ecsql::Connection) + 'a>;
    // Despawns need an entity for each record: about 90 bytes a record, so 1.3 million
    // cover 100 MB.
    let despawned = 1_300_000;
    let mut gone = 0u64;
    let cases: [(&str, String, Fill); 6] = [
        (
            "journal_100mb",
            health.clone(),
            Box::new(|conn| {
                let mut update = conn
                    .prepare("UPDATE Health SET hp = hp + 1 WHERE id = ?1")
                    .unwrap();
                for _ in 0..10_000 {
                    update.execute([1 + next.below(ENTITIES as u64) as i64]).unwrap();
                }
            }),
        ),
        (
            "texts_100mb",
            health.clone(),
            Box::new(|conn| {
                let mut next = common::Rng::new(11);
                for _ in 0..10_000 {
                    let id = 1 + next.below(ENTITIES as u64);
                    conn.execute(&format!("UPDATE Health SET hp = hp + 1 WHERE id = {id}"), ())
                        .unwrap();
                }
            }),
        ),
        (
            "ticks_100mb",
            "CREATE COMPONENT P (x REAL, v REAL); SPAWN P(x => i, v => 1) FROM range(100) AS r(i);
             CREATE SYSTEM move AS UPDATE P SET x = P.x + P.v * delta_time();"
                .into(),
            Box::new(|conn| {
                conn.execute("TICK 10000", ()).unwrap();
            }),
        ),
        (
            "spawns_100mb",
            "CREATE COMPONENT Health (hp INT);".into(),
            Box::new(|conn| {
                let mut next = common::Rng::new(13);
                for _ in 0..10_000 {
                    let hp = next.below(1000);
                    conn.execute(&format!("SPAWN Health(hp => {hp})"), ()).unwrap();
                }
            }),
        ),
        (
            "despawns_100mb",
            format!("CREATE COMPONENT Health (hp INT); SPAWN Health(100) FROM range({despawned}) AS r(i);"),
            Box::new(|conn| {
                for _ in 0..10_000 {
                    gone += 1;
                    assert!(gone <= despawned, "more despawns than entities");
                    conn.execute(&format!("DESPAWN {gone}"), ()).unwrap();
                }
            }),
        ),
        (
            "transactions_100mb",
            health,
            Box::new(|conn| {
                let mut next = common::Rng::new(17);
                let mut update = conn
                    .prepare("UPDATE Health SET hp = hp + 1 WHERE id = ?1")
                    .unwrap();
                for _ in 0..1_000 {
                    conn.execute("BEGIN", ()).unwrap();
                    for _ in 0..10 {
                        update.execute([1 + next.below(ENTITIES as u64) as i64]).unwrap();
                    }
                    conn.execute("COMMIT", ()).unwrap();
                }
            }),
        ),
    ];
    for (name, setup, fill) in cases {
        let dir = folder(&format!("recovery-{name}"));
        let (path, journal) = journal_of(&dir, &setup, fill);
        group.throughput(Throughput::Bytes(journal));
        let open = || {
            Database::options()
                .checkpoint_after_replay(Duration::MAX)
                .open(&path)
                .unwrap()
        };
        group.bench_function(name, |b| b.iter(|| black_box(open())));
        let _ = std::fs::remove_dir_all(&dir);
    }
    group.finish();
}

criterion_group!(benches, commit, recovery);
criterion_main!(benches);
