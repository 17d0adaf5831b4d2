//! `ecsql serve` through a real client, tokio-postgres, beside a real PostgreSQL server on
//! the same machine in the same run (Debian's `postgresql`: this bench starts one in a
//! temporary directory, and says so and goes on without it when it is not installed).
//! Both hold the same 100,000 rows, `(id, hp INT, name TEXT, x FLOAT)`:
//!
//! - `serve_point`: a prepared point read by id and its round trip, one client.
//! - `serve_1000_rows`: a prepared query of 1,000 of the rows (`hp < 1000`, a full scan
//!   on both sides: no index on `hp`) and their transfer in binary.
//! - `serve_throughput`: point reads from 1, 8 and 64 clients at once, each its own
//!   connection; the time is per read, all clients together (1/throughput).
//! - `serve_tick`: a TICK of one system over 10,000 entities, alone and with 64 clients
//!   reading all the while: criterion's spread of the two is the tick's jitter.
//!
//! Run: `cargo bench -p ecsql-benches --bench server`.

use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ecsql::Database;
use ecsql::server::{Options, Server};
use tokio_postgres::{Client, NoTls, Statement};

const ROWS: i64 = 100_000;

/// A PostgreSQL server started for the bench in a temporary directory, stopped when dropped.
struct Postgres {
    dir: std::path::PathBuf,
    port: u16,
    bin: std::path::PathBuf,
    as_postgres: bool,
}

impl Postgres {
    /// Starts one, or says why it cannot.
    fn start() -> Result<Postgres, String> {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .map_err(|_| "no /usr/lib/postgresql: install Debian's postgresql".to_owned())?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .find(|b| b.join("postgres").exists())
            .ok_or("no postgres binary under /usr/lib/postgresql")?;
        let dir = std::env::temp_dir().join(format!("ecsql-bench-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        // PostgreSQL will not run as root: then it runs as the `postgres` user.
        let as_postgres = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let pg = Postgres {
            dir,
            port,
            bin,
            as_postgres,
        };
        if as_postgres {
            pg.run("chown", &["-R", "postgres", &pg.dir.display().to_string()], false)?;
        }
        let data = pg.dir.join("data").display().to_string();
        pg.run(
            &pg.tool("initdb"),
            &["-D", &data, "-A", "trust", "-U", "postgres"],
            true,
        )?;
        let options = format!("-p {port} -k {} -c listen_addresses=127.0.0.1", pg.dir.display());
        let log = pg.dir.join("log").display().to_string();
        pg.run(
            &pg.tool("pg_ctl"),
            &["-D", &data, "-o", &options, "-l", &log, "-w", "start"],
            true,
        )?;
        Ok(pg)
    }

    fn tool(&self, name: &str) -> String {
        self.bin.join(name).display().to_string()
    }

    /// Runs `program` with `args`, as the `postgres` user when `as_postgres` and `user`.
    fn run(&self, program: &str, args: &[&str], user: bool) -> Result<(), String> {
        let out = if self.as_postgres && user {
            let line = std::iter::once(program)
                .chain(args.iter().copied())
                .map(|a| format!("'{a}'"))
                .collect::<Vec<_>>()
                .join(" ");
            Command::new("su")
                .args(["postgres", "-s", "/bin/sh", "-c", &line])
                .output()
        } else {
            Command::new(program).args(args).output()
        }
        .map_err(|e| format!("{program}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("{program}: {}", String::from_utf8_lossy(&out.stderr)))
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.join("data").display().to_string();
        let _ = self.run(
            &self.tool("pg_ctl"),
            &["-D", &data, "-m", "immediate", "stop"],
            true,
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One side of the comparison: where to connect, and its queries.
struct Side {
    name: &'static str,
    config: String,
    point: &'static str,
    rows: &'static str,
    /// The ids a point read asks for, as the side's parameter.
    ids: Vec<i64>,
}

async fn connect(config: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(config, NoTls).await.expect("connects");
    tokio::spawn(connection);
    client
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// The ecsql side: a database of the rows, served on a free port of loopback.
fn ecsql_side() -> (Database, Server, Side) {
    let db = Database::open_in_memory();
    let conn = db.connect();
    conn.execute_batch(&format!(
        "CREATE COMPONENT Unit (hp INT, name TEXT, x FLOAT);
         SPAWN Unit(i, 'unit ' || i, i * 0.5) FROM range({ROWS}) AS r(i);
         CREATE COMPONENT Pos (x FLOAT, v FLOAT);
         SPAWN Pos(0.0, 1.0) FROM range(10000) AS r(i);
         CREATE SYSTEM walk AS UPDATE Pos SET x = Pos.x + Pos.v * delta_time()"
    ))
    .expect("the bench's world");
    let ids: Vec<i64> = conn
        .prepare("SELECT CAST(id AS INT) FROM Unit")
        .and_then(|mut s| s.query_as::<(i64,)>(()))
        .expect("the ids")
        .into_iter()
        .map(|(id,)| id)
        .collect();
    let server = Server::start(
        &db,
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            max_connections: 200,
            statement_timeout: None,
            ..Options::default()
        },
    )
    .expect("the server starts");
    let side = Side {
        name: "ecsql",
        config: format!(
            "host=127.0.0.1 port={} user=bench dbname=ecsql",
            server.local_addr().port()
        ),
        point: "SELECT Unit.hp, Unit.name FROM Unit WHERE id = $1",
        rows: "SELECT Unit.hp, Unit.name, Unit.x FROM Unit WHERE Unit.hp < 1000",
        ids,
    };
    (db, server, side)
}

/// The PostgreSQL side, when one can be started.
fn postgres_side(rt: &tokio::runtime::Runtime) -> Option<(Postgres, Side)> {
    let pg = match Postgres::start() {
        Ok(pg) => pg,
        Err(why) => {
            eprintln!("NOT RUN against PostgreSQL: {why}");
            return None;
        }
    };
    let config = format!("host=127.0.0.1 port={} user=postgres dbname=postgres", pg.port);
    rt.block_on(async {
        let client = connect(&config).await;
        client
            .batch_execute(&format!(
                "CREATE TABLE unit (id bigint PRIMARY KEY, hp bigint, name text, x double precision);
                 INSERT INTO unit SELECT i, i, 'unit ' || i, i * 0.5 FROM generate_series(0, {}) AS i;",
                ROWS - 1
            ))
            .await
            .expect("PostgreSQL's table");
        client
            .batch_execute("VACUUM ANALYZE unit")
            .await
            .expect("its statistics");
    });
    let side = Side {
        name: "postgresql",
        config,
        point: "SELECT hp, name FROM unit WHERE id = $1",
        rows: "SELECT hp, name, x FROM unit WHERE hp < 1000",
        ids: (0..ROWS).collect(),
    };
    Some((pg, side))
}

/// The `k`th id to read: spread over the table.
fn id(side: &Side, k: usize) -> i64 {
    side.ids[(k * 7919) % side.ids.len()]
}

fn served(c: &mut Criterion) {
    let rt = runtime();
    let (db, _server, ecsql) = ecsql_side();
    let postgres = postgres_side(&rt);
    let mut sides = vec![&ecsql];
    if let Some((_, side)) = &postgres {
        sides.push(side);
    }

    let mut group = c.benchmark_group("serve_point");
    group.measurement_time(Duration::from_secs(4));
    for side in &sides {
        let (client, statement) = rt.block_on(async {
            let client = connect(&side.config).await;
            let statement = client.prepare(side.point).await.expect("prepares");
            (client, statement)
        });
        let mut k = 0;
        group.bench_function(side.name, |b| {
            b.iter(|| {
                k += 1;
                let row = rt
                    .block_on(client.query_one(&statement, &[&id(side, k)]))
                    .expect("one row");
                assert!(row.get::<_, i64>(0) >= 0);
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("serve_1000_rows");
    group.measurement_time(Duration::from_secs(4));
    for side in &sides {
        let (client, statement) = rt.block_on(async {
            let client = connect(&side.config).await;
            let statement = client.prepare(side.rows).await.expect("prepares");
            (client, statement)
        });
        group.bench_function(side.name, |b| {
            b.iter(|| {
                let rows = rt.block_on(client.query(&statement, &[])).expect("the rows");
                assert_eq!(rows.len(), 1000);
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("serve_throughput");
    group.measurement_time(Duration::from_secs(5));
    group.sample_size(20);
    for clients in [1usize, 8, 64] {
        for side in &sides {
            let connected: Vec<(Client, Statement)> = rt.block_on(async {
                let mut all = Vec::new();
                for _ in 0..clients {
                    let client = connect(&side.config).await;
                    let statement = client.prepare(side.point).await.expect("prepares");
                    all.push((client, statement));
                }
                all
            });
            let connected = Arc::new(connected);
            group.bench_function(format!("{}_{clients}_clients", side.name), |b| {
                b.iter_custom(|reads| {
                    // `reads` point reads in all, shared among the clients.
                    let each = (reads as usize).div_ceil(clients);
                    let ids: Arc<Vec<i64>> = Arc::new((0..each * clients).map(|k| id(side, k)).collect());
                    let started = Instant::now();
                    rt.block_on(async {
                        let mut tasks = Vec::new();
                        for c in 0..clients {
                            let (connected, ids) = (Arc::clone(&connected), Arc::clone(&ids));
                            tasks.push(tokio::spawn(async move {
                                let (client, statement) = &connected[c];
                                for k in 0..each {
                                    client
                                        .query_one(statement, &[&ids[c * each + k]])
                                        .await
                                        .expect("one row");
                                }
                            }));
                        }
                        for task in tasks {
                            task.await.expect("a client");
                        }
                    });
                    started.elapsed().mul_f64(reads as f64 / (each * clients) as f64)
                })
            });
        }
    }
    group.finish();

    // The tick: alone, then with 64 clients reading all the while.
    let mut group = c.benchmark_group("serve_tick");
    group.measurement_time(Duration::from_secs(4));
    let conn = db.connect();
    group.bench_function("alone", |b| b.iter(|| conn.tick(1).expect("a tick")));
    let readers: Vec<(Client, Statement)> = rt.block_on(async {
        let mut all = Vec::new();
        for _ in 0..64 {
            let client = connect(&ecsql.config).await;
            let statement = client.prepare(ecsql.point).await.expect("prepares");
            all.push((client, statement));
        }
        all
    });
    let stop = Arc::new(AtomicBool::new(false));
    let reading: Vec<_> = readers
        .into_iter()
        .enumerate()
        .map(|(c, (client, statement))| {
            let stop = Arc::clone(&stop);
            let ids: Vec<i64> = (0..1000).map(|k| id(&ecsql, c * 1000 + k)).collect();
            rt.spawn(async move {
                let mut k = 0;
                while !stop.load(Ordering::Relaxed) {
                    let _ = client.query_one(&statement, &[&ids[k % ids.len()]]).await;
                    k += 1;
                }
            })
        })
        .collect();
    group.bench_function("with_64_clients_reading", |b| {
        b.iter(|| conn.tick(1).expect("a tick"))
    });
    stop.store(true, Ordering::Relaxed);
    rt.block_on(async {
        for task in reading {
            let _ = task.await;
        }
    });
    group.finish();
    drop(postgres);
}

criterion_group!(benches, served);
criterion_main!(benches);
