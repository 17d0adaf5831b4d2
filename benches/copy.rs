//! COPY: 1,000,000 rows of a component with four fields (three FLOATs and an
//! INT: `x, y, z, n`) written to a CSV file and read back, beside SQLite doing the same
//! through rusqlite in the same run:
//!
//! - `copy/ecsql_to_csv`: `COPY (SELECT …) TO 'file.csv'` (formatted, written beside the
//!   file, flushed, renamed);
//! - `copy/sqlite_to_csv`: what the sqlite3 shell's `.mode csv` + `.output` does: step a
//!   `SELECT`, format each value, write through a buffer;
//! - `copy/ecsql_from_csv`: `COPY C FROM 'file.csv'` into a fresh database (every value
//!   checked; 1,000,000 entities spawned);
//! - `copy/sqlite_import_csv`: what the sqlite3 shell's `.import` does: read the file,
//!   split each line into fields, bind them as text to a prepared `INSERT` (SQLite's
//!   column affinity converts them) inside one transaction, into a fresh database.
//!
//! - with the `arrow` feature, `copy/ecsql_to_parquet` and `copy/ecsql_from_parquet`: the
//!   same rows to and from a Parquet file (Snappy).
//!
//! The same file is read by both sides. Run: `cargo bench -p ecsql-benches --bench copy` (and
//! `--features arrow` for Parquet); `python3 benches/duckdb_copy.py` measures DuckDB.

mod common;

use std::hint::black_box;
use std::io::Write;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

const N: usize = 1_000_000;
const DDL: &str = "CREATE COMPONENT C (x FLOAT, y FLOAT, z FLOAT, n INT)";

fn copy(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("ecsql-bench-copy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("rows.csv").to_string_lossy().into_owned();
    let out = dir.join("out.csv").to_string_lossy().into_owned();

    let conn = common::ecsql(&format!(
        "{DDL}; SPAWN C(x => i * 0.5, y => i / 3.0, z => -i * 1.25, n => i) FROM range({N}) AS r(i);"
    ));
    conn.execute(
        &format!("COPY (SELECT C.x, C.y, C.z, C.n FROM C) TO '{file}'"),
        (),
    )
    .unwrap();
    let bytes = std::fs::metadata(&file).unwrap().len();
    let sqlite = common::sqlite("CREATE TABLE c (x REAL, y REAL, z REAL, n INTEGER)");
    sqlite_import(&sqlite, &file);

    let mut group = c.benchmark_group("copy");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("ecsql_to_csv", |b| {
        b.iter(|| {
            let n = conn
                .execute(&format!("COPY (SELECT C.x, C.y, C.z, C.n FROM C) TO '{out}'"), ())
                .unwrap();
            assert_eq!(n, N);
        })
    });
    group.bench_function("sqlite_to_csv", |b| {
        b.iter(|| black_box(sqlite_export(&sqlite, &out)))
    });
    group.bench_function("ecsql_from_csv", |b| {
        b.iter_batched(
            || common::ecsql(DDL),
            |fresh| assert_eq!(fresh.execute(&format!("COPY C FROM '{file}'"), ()).unwrap(), N),
            BatchSize::PerIteration,
        )
    });
    group.bench_function("sqlite_import_csv", |b| {
        b.iter_batched(
            || common::sqlite("CREATE TABLE c (x REAL, y REAL, z REAL, n INTEGER)"),
            |fresh| assert_eq!(sqlite_import(&fresh, &file), N),
            BatchSize::PerIteration,
        )
    });
    #[cfg(feature = "arrow")]
    {
        let parquet = dir.join("rows.parquet").to_string_lossy().into_owned();
        conn.execute(
            &format!("COPY (SELECT C.x, C.y, C.z, C.n FROM C) TO '{parquet}'"),
            (),
        )
        .unwrap();
        group.throughput(Throughput::Elements(N as u64));
        group.bench_function("ecsql_to_parquet", |b| {
            b.iter(|| {
                let n = conn
                    .execute(
                        &format!("COPY (SELECT C.x, C.y, C.z, C.n FROM C) TO '{out}.parquet'"),
                        (),
                    )
                    .unwrap();
                assert_eq!(n, N);
            })
        });
        group.bench_function("ecsql_from_parquet", |b| {
            b.iter_batched(
                || common::ecsql(DDL),
                |fresh| assert_eq!(fresh.execute(&format!("COPY C FROM '{parquet}'"), ()).unwrap(), N),
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The sqlite3 shell's `.import FILE c` for a plain CSV (a header line, no quotes): each
/// line's fields bound as text to one prepared INSERT, in one transaction.
fn sqlite_import(db: &rusqlite::Connection, file: &str) -> usize {
    let text = std::fs::read_to_string(file).unwrap();
    let mut insert = db.prepare("INSERT INTO c VALUES (?1, ?2, ?3, ?4)").unwrap();
    common::sqlite_tx(db, || {
        let mut n = 0;
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            insert.execute([f[0], f[1], f[2], f[3]]).unwrap();
            n += 1;
        }
        n
    })
}

/// The sqlite3 shell's `.mode csv` output of `SELECT * FROM c` to a file.
fn sqlite_export(db: &rusqlite::Connection, file: &str) -> usize {
    let mut out = std::io::BufWriter::new(std::fs::File::create(file).unwrap());
    writeln!(out, "x,y,z,n").unwrap();
    let mut select = db.prepare("SELECT x, y, z, n FROM c").unwrap();
    let mut rows = select.query([]).unwrap();
    let mut n = 0;
    while let Some(row) = rows.next().unwrap() {
        let (x, y, z, k): (f64, f64, f64, i64) = (
            row.get(0).unwrap(),
            row.get(1).unwrap(),
            row.get(2).unwrap(),
            row.get(3).unwrap(),
        );
        writeln!(out, "{x:?},{y:?},{z:?},{k}").unwrap();
        n += 1;
    }
    out.flush().unwrap();
    n
}

criterion_group!(benches, copy);
criterion_main!(benches);
