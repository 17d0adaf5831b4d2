//! Connections that write different components, in one run:
//!
//! - `two_connections_250k`: 250,000 entities with components A, B (each `x REAL`) and
//!   V (`v REAL`). One connection running `UPDATE A SET x = A.x + V.v * 0.5 FROM V`,
//!   then the same of B, one after the other (`one_connection_both`), beside two
//!   connections on two threads, each running one of the two at the same time
//!   (`two_connections_two_threads`: the threads start together and the iteration ends
//!   when both are done). Each statement runs on one thread either way (250,000 rows are
//!   fewer than two `min_parallel_rows`), so the ratio is what the second connection
//!   gains by not queueing on the first's lock: today none, as writes take turns under
//!   the database's one write lock. hecs: the same two loops on one thread.
//!
//! Run: `cargo bench -p ecsql-benches --bench connections`.

mod common;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

const ROWS: usize = 250_000;

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
                assert_eq!(a.execute(()).unwrap(), ROWS);
                assert_eq!(b.execute(()).unwrap(), ROWS);
            })
        });
    }

    let db = ecsql::Database::open_in_memory();
    db.connect().execute_batch(&ddl).unwrap();
    // The other thread runs B each time both reach the barrier, and meets this one at it
    // again when done; `None` tells it to stop.
    let start = Arc::new(Barrier::new(2));
    let done = Arc::new(Barrier::new(2));
    let go = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let other = {
        let (db, start, done, go) = (db.clone(), start.clone(), done.clone(), go.clone());
        std::thread::spawn(move || {
            let conn = db.connect();
            let mut b = conn.prepare(UPDATE_B).unwrap();
            loop {
                start.wait();
                if !go.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                assert_eq!(b.execute(()).unwrap(), ROWS);
                done.wait();
            }
        })
    };
    let conn = db.connect();
    let mut a = conn.prepare(UPDATE_A).unwrap();
    group.bench_function("ecsql_two_connections_two_threads", |bench| {
        bench.iter(|| {
            start.wait();
            assert_eq!(a.execute(()).unwrap(), ROWS);
            done.wait();
        })
    });
    go.store(false, std::sync::atomic::Ordering::SeqCst);
    start.wait();
    other.join().unwrap();

    let mut world = hecs::World::new();
    world.spawn_batch((0..ROWS).map(|i| (A(i as f32), B(i as f32), V(1.0))));
    group.bench_function("hecs_both_one_thread", |bench| {
        bench.iter(|| {
            for (a, v) in world.query_mut::<(&mut A, &V)>() {
                a.0 += v.0 * 0.5;
            }
            for (b, v) in world.query_mut::<(&mut B, &V)>() {
                b.0 += v.0 * 0.5;
            }
        })
    });
    group.finish();
}

criterion_group!(benches, two_connections);
criterion_main!(benches);
