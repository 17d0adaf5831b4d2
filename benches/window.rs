//! Window functions over 1,000,000 entities, beside SQLite (bundled) and DuckDB in one
//! criterion run, the same rows and the same query text in all three:
//! - `leaderboard`: every entity ranked by its points (`rank() OVER (ORDER BY points
//!   DESC)`, 100,000 distinct values, so ties), the top 100 places kept by an outer WHERE
//!   (the ranks of all rows are computed either way);
//! - `sliding_sum`: per team (100 of them), the sum of each entity's points and the nine
//!   before it by id (`ROWS BETWEEN 9 PRECEDING AND CURRENT ROW`), counted where it
//!   passes 600,000.
//!
//! DuckDB is measured through its Python package (`pip install duckdb`), driven by
//! `benches/duckdb_driver.py` over a pipe; the time is DuckDB's own, call to last row
//! fetched, on every core (`duckdb_*`) and on one (`duckdb_1thread_*`), beside ecsql's one
//! thread for the window stage. Without python3 or the package the bench says so and
//! measures ecsql and SQLite alone.
//!
//! `python3 benches/report.py` prints the ratios; docs/performance.md records them.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use ecsql::{Connection, Database};

const ENTITIES: i64 = 1_000_000;

const LEADERBOARD: &str = "SELECT t.e, t.points, t.place FROM (SELECT id AS e, Score.points AS points, rank() OVER (ORDER BY Score.points DESC) AS place FROM Score) AS t WHERE t.place <= 100";

const SLIDING_SUM: &str = "SELECT count(*) FROM (SELECT sum(Score.points) OVER (PARTITION BY Score.team ORDER BY id ROWS BETWEEN 9 PRECEDING AND CURRENT ROW) AS s FROM Score) AS t WHERE t.s > 600000";

/// Entity i's points and team, the same in every engine.
const POINTS: &str = "(i * 7919) % 1000003 % 100000";
const TEAM: &str = "i % 100";

fn ecsql_world() -> Connection {
    let conn = Database::open_in_memory().connect();
    conn.execute_batch(&format!(
        "CREATE COMPONENT Score (points INT, team INT);
         SPAWN Score({POINTS}, {TEAM}) FROM range(1, {end}) AS r(i);",
        end = ENTITIES + 1
    ))
    .expect("the entities are spawned");
    conn
}

fn sqlite_world() -> rusqlite::Connection {
    let lite = rusqlite::Connection::open_in_memory().expect("SQLite opens");
    lite.execute_batch(&format!(
        "CREATE TABLE Score (id INTEGER PRIMARY KEY, points INTEGER, team INTEGER);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {ENTITIES})
         INSERT INTO Score SELECT i, {POINTS}, {TEAM} FROM n;"
    ))
    .expect("SQLite's rows are inserted");
    lite
}

/// DuckDB behind `benches/duckdb_driver.py`.
struct Duck {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Duck {
    /// The driver with the same rows loaded, or why there is none.
    fn start() -> Result<Duck, String> {
        let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/duckdb_driver.py");
        let mut child = Command::new("python3")
            .arg(driver)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("python3 does not start: {e}"))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("python3's pipes are missing".into());
        };
        let mut duck = Duck {
            child,
            input,
            output: BufReader::new(output),
        };
        let hello = duck.line()?;
        if !hello.starts_with("ready") {
            return Err(hello);
        }
        eprintln!("window bench: {}", &hello["ready ".len()..]);
        duck.ask(&format!(
            "sql CREATE TABLE Score AS SELECT i AS id, {POINTS} AS points, {TEAM} AS team FROM range(1, {end}) t(i)",
            end = ENTITIES + 1
        ))?;
        Ok(duck)
    }

    fn line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        self.output
            .read_line(&mut line)
            .map_err(|e| format!("the driver's answer is unreadable: {e}"))?;
        if line.is_empty() {
            return Err("the driver ended".into());
        }
        Ok(line.trim_end().to_owned())
    }

    fn ask(&mut self, command: &str) -> Result<String, String> {
        writeln!(self.input, "{command}").map_err(|e| format!("the driver does not listen: {e}"))?;
        let answer = self.line()?;
        match answer.strip_prefix("error ") {
            Some(e) => Err(format!("DuckDB: {e}")),
            None => Ok(answer),
        }
    }

    /// Runs `sql`: its rows and DuckDB's time.
    fn time(&mut self, sql: &str) -> (u64, Duration) {
        let answer = self.ask(&format!("time {sql}")).expect("DuckDB runs the query");
        let mut parts = answer.split(' ').skip(1).map(|p| p.parse::<u64>().unwrap_or(0));
        let (rows, nanos) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        (rows, Duration::from_nanos(nanos))
    }
}

impl Drop for Duck {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ecsql_rows(conn: &Connection, sql: &str) -> Vec<Vec<ecsql::Value>> {
    let mut stmt = conn.prepare(sql).expect("the query plans");
    stmt.query(())
        .expect("the query runs")
        .map(|r| r.expect("a row").values().to_vec())
        .collect()
}

fn sqlite_count(lite: &rusqlite::Connection, sql: &str) -> (usize, i64) {
    let mut stmt = lite.prepare(sql).expect("SQLite plans it");
    let mut rows = stmt.query([]).expect("SQLite runs it");
    let (mut n, mut first) = (0, 0);
    while let Some(row) = rows.next().expect("a row") {
        if n == 0 {
            first = row.get(0).unwrap_or(0);
        }
        n += 1;
    }
    (n, first)
}

fn bench(c: &mut Criterion) {
    let conn = ecsql_world();
    let lite = sqlite_world();
    let mut duck = match Duck::start() {
        Ok(d) => Some(d),
        Err(why) => {
            eprintln!("window bench: DuckDB is not measured: {why}");
            None
        }
    };
    // The three agree before anything is timed.
    let leaders = ecsql_rows(&conn, LEADERBOARD).len();
    let over = match ecsql_rows(&conn, SLIDING_SUM).first().and_then(|r| r.first()) {
        Some(ecsql::Value::Int(n)) => *n,
        other => panic!("the sliding sum counted {other:?}"),
    };
    assert_eq!(sqlite_count(&lite, LEADERBOARD).0, leaders);
    assert_eq!(sqlite_count(&lite, SLIDING_SUM).1, over);
    if let Some(d) = &mut duck {
        assert_eq!(d.time(LEADERBOARD).0 as usize, leaders);
    }
    eprintln!("window bench: the top 100 places hold {leaders} entities; {over} sliding sums pass 600,000");

    let mut g = c.benchmark_group("window");
    g.sample_size(10);
    for (name, sql) in [("leaderboard", LEADERBOARD), ("sliding_sum", SLIDING_SUM)] {
        g.bench_function(format!("ecsql_{name}"), |b| {
            b.iter(|| ecsql_rows(&conn, sql).len())
        });
        g.bench_function(format!("sqlite_{name}"), |b| b.iter(|| sqlite_count(&lite, sql)));
        if let Some(d) = &mut duck {
            for (label, threads) in [("", 0), ("1thread_", 1)] {
                let set = if threads == 0 {
                    "sql RESET threads".to_owned()
                } else {
                    format!("threads {threads}")
                };
                d.ask(&set).expect("DuckDB takes the setting");
                g.bench_function(format!("duckdb_{label}{name}"), |b| {
                    b.iter_custom(|iters| (0..iters).map(|_| d.time(sql).1).sum())
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
