//! Connections that write different components, in one run:
//!
//! - `two_connections_250k`: 250,000 entities with components A, B (each `x REAL`) and
//!   V (`v REAL`), all in one table. An iteration runs `UPDATE A SET x = A.x + V.v * 0.5
//!   FROM V` and the same of B, each 20 times: one connection running them one after the
//!   other (`one_connection_both`); two connections on two threads, each running one of
//!   the two (`two_connections_two_threads`: the threads start together and the iteration
//!   ends when both are done); and, as the floor of what two cores give, the same two
//!   threads on two databases (`two_databases_two_threads`). Each statement runs on one
//!   thread either way (250,000 rows are fewer than two `min_parallel_rows`), so the
//!   ratio of the second to the first is what the second connection gains by not
//!   queueing on the first's lock: each UPDATE holds only the fields it reads and writes
//!   (`Database::concurrency`), so the two write at the same time. hecs: the same two
//!   loops, 20 times, on one thread.
//!
//! Run: `cargo bench -p ecsql-benches --bench connections`.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

const ROWS: usize = 250_000;
/// Each iteration runs each UPDATE this many times.
const PER_MEETING: usize = 20;

struct A(f32);
struct B(f32);
struct V(f32);

const UPDATE_A: &str = "UPDATE A SET x = A.x + V.v * 0.5 FROM V";
const UPDATE_B: &str = "UPDATE B SET x = B.x + V.v * 0.5 FROM V";

fn two_connections(c: &mut Criterion) {
    let mut group = c.benchmark_group("two_connections_250k");
    group.sample_size(50);
    group.measurement_time(Duration::from_secs(4));
    group.warm_up_time(Duration::from_secs(1));
    let ddl = format!(
        "CREATE COMPONENT A (x REAL); CREATE COMPONENT B (x REAL); CREATE COMPONENT V (v REAL);
         SPAWN A(i), B(i), V(1) FROM range({ROWS}) AS r(i);"
    );

    {
        let conn = common::ecsql(&ddl);
        let (mut a, mut b) = (conn.prepare(UPDATE_A).unwrap(), conn.prepare(UPDATE_B).unwrap());
        group.bench_function("ecsql_one_connection_both", |bench| {
            bench.iter(|| {
                for _ in 0..PER_MEETING {
                    assert_eq!(a.execute(()).unwrap(), ROWS);
                    assert_eq!(b.execute(()).unwrap(), ROWS);
                }
            })
        });
    }

    // Two threads, each running its statement `PER_MEETING` times between the barriers
    // where they meet (so a barrier's wake-up, tens of µs here, is spread thin): on one
    // database, then, as the floor of what two cores give, on two databases.
    let one = ecsql::Database::open_in_memory();
    one.connect().execute_batch(&ddl).unwrap();
    let two = ecsql::Database::open_in_memory();
    two.connect().execute_batch(&ddl).unwrap();
    for (name, other_db) in [
        ("ecsql_two_connections_two_threads", &one),
        ("ecsql_two_databases_two_threads", &two),
    ] {
        let start = Arc::new(Barrier::new(2));
        let done = Arc::new(Barrier::new(2));
        // Cleared to stop the other thread at its next meeting at `start`.
        let go = Arc::new(AtomicBool::new(true));
        // Set by the other thread when its statement failed, before it meets this one at
        // `done`: the measured thread then fails, instead of waiting for it forever.
        let failed = Arc::new(AtomicBool::new(false));
        let other = {
            let (db, start, done, go, failed) = (
                other_db.clone(),
                start.clone(),
                done.clone(),
                go.clone(),
                failed.clone(),
            );
            std::thread::spawn(move || {
                let conn = db.connect();
                let mut b = conn.prepare(UPDATE_B).unwrap();
                loop {
                    start.wait();
                    if !go.load(Ordering::SeqCst) {
                        return;
                    }
                    for _ in 0..PER_MEETING {
                        if b.execute(()).ok() != Some(ROWS) {
                            failed.store(true, Ordering::SeqCst);
                        }
                    }
                    done.wait();
                }
            })
        };
        let conn = one.connect();
        let mut a = conn.prepare(UPDATE_A).unwrap();
        group.bench_function(name, |bench| {
            bench.iter(|| {
                start.wait();
                for _ in 0..PER_MEETING {
                    assert_eq!(a.execute(()).unwrap(), ROWS);
                }
                done.wait();
                assert!(!failed.load(Ordering::SeqCst), "the other thread's UPDATE failed");
            })
        });
        go.store(false, Ordering::SeqCst);
        start.wait();
        other.join().unwrap();
    }

    let mut world = hecs::World::new();
    world.spawn_batch((0..ROWS).map(|i| (A(i as f32), B(i as f32), V(1.0))));
    group.bench_function("hecs_both_one_thread", |bench| {
        bench.iter(|| {
            for _ in 0..PER_MEETING {
                for (a, v) in world.query_mut::<(&mut A, &V)>() {
                    a.0 += v.0 * 0.5;
                }
                for (b, v) in world.query_mut::<(&mut B, &V)>() {
                    b.0 += v.0 * 0.5;
                }
            }
        })
    });
    group.finish();
}

criterion_group!(benches, two_connections);
criterion_main!(benches);
