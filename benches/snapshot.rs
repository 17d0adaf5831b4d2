//! SAVE and LOAD: 1,000,000 entities with Position and Velocity (six REALs,
//! 24 MB of values) written as a snapshot and read back.
//!
//! - `snapshot/world_snapshot` and `snapshot/world_from_snapshot`: `World::snapshot` and
//!   `World::from_snapshot` in memory, the encoding alone (MB/s of the snapshot's bytes);
//! - `snapshot/sql_save` and `snapshot/sql_load`: `SAVE TO` and `LOAD FROM` a file in the
//!   system's temporary folder (with the file written, flushed and renamed; read and
//!   checked), as a user runs them.
//!
//! Run: `cargo bench -p ecsql-benches --bench snapshot`.

mod common;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ecsql::World;

const N: usize = 1_000_000;

fn snapshot(c: &mut Criterion) {
    let mut group = c.benchmark_group("snapshot");
    group.sample_size(10);
    let conn = common::ecsql(&format!(
        "CREATE COMPONENT Position (x REAL, y REAL, z REAL); CREATE COMPONENT Velocity (x REAL, y REAL, z REAL);
         SPAWN Position(x => i, y => i, z => i), Velocity(1, 2, 3) FROM range({N}) AS r(i);"
    ));
    let bytes = conn.with_world(|w| w.snapshot()).unwrap();
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("world_snapshot", |b| {
        b.iter(|| conn.with_world(|w| black_box(w.snapshot().len())).unwrap())
    });
    group.bench_function("world_from_snapshot", |b| {
        b.iter(|| black_box(World::from_snapshot(&bytes).unwrap().len()))
    });
    let file = std::env::temp_dir().join(format!("ecsql-bench-{}.ecsql", std::process::id()));
    let file = file.to_string_lossy().into_owned();
    group.bench_function("sql_save", |b| {
        b.iter(|| conn.execute(&format!("SAVE TO '{file}'"), ()).unwrap())
    });
    // Written here too, so that `sql_load` run alone (a filter) has its file.
    conn.execute(&format!("SAVE TO '{file}'"), ()).unwrap();
    group.bench_function("sql_load", |b| {
        b.iter(|| assert_eq!(conn.execute(&format!("LOAD FROM '{file}'"), ()).unwrap(), N))
    });
    let _ = std::fs::remove_file(&file);
    group.finish();
}

criterion_group!(benches, snapshot);
criterion_main!(benches);
