//! A file database survives its writer being killed (`kill -9`) at random moments, many
//! times over, checkpoints included: with `synchronous = full` every commit the writer
//! was told of is there after reopening, and no transaction is there in part; with
//! `normal` the database reopens at some committed prefix, never damaged. A disk that
//! fills up (a file size limit) fails the statement that could not be journaled, with a
//! message saying so, and loses nothing acknowledged.
//!
//! The writer is this test binary run again as a child (`writer_process`, which does
//! nothing unless `ECSQL_WRITER_DB` names a database).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ecsql::Database;

use crate::common;
use common::Folder;

/// The child: opens the database named by `ECSQL_WRITER_DB` and commits forever: each
/// commit a transaction spawning the next counter and adding it to the total, or, every
/// third, a single statement spawning it, printing `ack N` once commit N has returned;
/// between commits, now and then (unless `ECSQL_WRITER_PLAIN` is set) a `TICK 40` of a
/// system moving one unit a tick between two accounts (`tick T`, the clock after it), a
/// `CHECKPOINT`, or a `SAVE` of the database beside it, so that kills land in those too.
#[test]
fn writer_process() {
    let Ok(path) = std::env::var("ECSQL_WRITER_DB") else {
        return;
    };
    let sync = std::env::var("ECSQL_WRITER_SYNC").unwrap_or_else(|_| "full".into());
    let plain = std::env::var("ECSQL_WRITER_PLAIN").is_ok();
    let slot = format!("{path}.slot");
    let mut out = std::io::stdout().lock();
    // The test harness's own words end without a newline.
    let _ = writeln!(out);
    let db = match Database::open(&path) {
        Ok(db) => db,
        Err(e) => {
            let _ = writeln!(out, "error {e}");
            return;
        }
    };
    let conn = db.connect();
    let mut run = || -> ecsql::Result<()> {
        conn.execute(&format!("PRAGMA synchronous = {sync}"), ())?;
        // Small, so that kills land inside checkpoints too.
        conn.execute("PRAGMA checkpoint_size = 20000", ())?;
        if !conn.component_names()?.iter().any(|c| c == "Counter") {
            conn.execute_batch(
                "CREATE COMPONENT Counter (n INT, note TEXT); CREATE COMPONENT Total (sum INT); SPAWN Total(0);
                 CREATE COMPONENT Account (balance INT, side INT); SPAWN Account(1000, -1); SPAWN Account(1000, 1);
                 CREATE SYSTEM transfer AS UPDATE Account SET balance = Account.balance + Account.side;
                 CREATE COMPONENT Ballast (t TEXT); SPAWN Ballast('ballast ' || i) FROM range(3000) AS r(i);",
            )?;
        }
        let mut n: i64 = conn.query_row("SELECT count(*) FROM Counter", (), |r| r.get(0))?;
        let mut insert = conn.prepare("SPAWN Counter(?1, ?2)")?;
        let mut add = conn.prepare("UPDATE Total SET sum = Total.sum + ?1")?;
        let say = |out: &mut std::io::StdoutLock<'_>, line: String| {
            writeln!(out, "{line}")
                .and_then(|()| out.flush())
                .map_err(|e| ecsql::Error::External(e.to_string()))
        };
        loop {
            if n % 3 == 0 {
                // A commit of one statement (the total counts only the transactions').
                conn.execute("SPAWN Counter(?1, 'alone')", [n])?;
            } else {
                conn.execute("BEGIN", ())?;
                insert.execute((n, format!("in a transaction {}", "x".repeat((n % 50) as usize))))?;
                add.execute([n])?;
                conn.execute("COMMIT", ())?;
            }
            say(&mut out, format!("ack {n}"))?;
            match n % 8 {
                _ if plain => {}
                2 => {
                    conn.execute("TICK 40", ())?;
                    let tick: i64 = conn.query_row("SELECT tick()", (), |r| r.get(0))?;
                    say(&mut out, format!("tick {tick}"))?;
                }
                4 => conn.execute("CHECKPOINT", ()).map(drop)?,
                6 => conn.execute("SAVE TO ?1", [slot.as_str()]).map(drop)?,
                _ => {}
            }
            n += 1;
        }
    };
    if let Err(e) = run() {
        let _ = writeln!(out, "error {e}");
    }
}

/// Starts a writer on `db` (under `shell`, a prefix for `sh -c`, when given: then it only
/// commits).
fn writer(db: &Path, sync: &str, shell: Option<&str>) -> std::process::Child {
    let exe = std::env::current_exe().unwrap();
    let args = [
        "durability::writer_process",
        "--exact",
        "--nocapture",
        "--test-threads",
        "1",
    ];
    let mut command = match shell {
        None => {
            let mut c = Command::new(&exe);
            c.args(args);
            c
        }
        Some(prefix) => {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!("{prefix}; exec \"$0\" \"$@\""))
                .arg(&exe)
                .args(args);
            c
        }
    };
    if shell.is_some() {
        // Under a file size limit: commits only, so that the limit meets the journal.
        command.env("ECSQL_WRITER_PLAIN", "1");
    }
    command
        .env("ECSQL_WRITER_DB", db)
        .env("ECSQL_WRITER_SYNC", sync)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The counters the database holds, and whether the total is the sum of those the
/// transactions spawned and the accounts hold what they began with between them.
fn contents(db: &Path) -> (Vec<i64>, bool) {
    check(&Database::open(db).unwrap().connect())
}

/// `contents` of an open database; its clock, when it has the accounts.
fn check(conn: &ecsql::Connection) -> (Vec<i64>, bool) {
    if !conn.component_names().unwrap().iter().any(|c| c == "Counter") {
        return (Vec::new(), true);
    }
    let mut s = conn.prepare("SELECT Counter.n FROM Counter ORDER BY 1").unwrap();
    let counters: Vec<i64> = s.query(()).unwrap().map(|r| r.unwrap().get(0).unwrap()).collect();
    let total: i64 = conn.query_row("SELECT sum FROM Total", (), |r| r.get(0)).unwrap();
    let sum: i64 = counters.iter().filter(|&&n| n % 3 != 0).sum();
    let accounts_whole = !conn.component_names().unwrap().iter().any(|c| c == "Account") || {
        let held: i64 = conn
            .query_row("SELECT sum(balance) FROM Account", (), |r| r.get(0))
            .unwrap();
        let gained: i64 = conn
            .query_row("SELECT balance - 1000 FROM Account WHERE side = 1", (), |r| {
                r.get(0)
            })
            .unwrap();
        let tick: i64 = conn.query_row("SELECT tick()", (), |r| r.get(0)).unwrap();
        held == 2000 && gained == tick
    };
    (counters, total == sum && accounts_whole)
}

/// The clock of the database at `db`.
fn clock(db: &Path) -> i64 {
    Database::open(db)
        .unwrap()
        .connect()
        .query_row("SELECT tick()", (), |r| r.get(0))
        .unwrap()
}

/// A small deterministic random sequence.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

/// How many times each crash test kills its writer: `ECSQL_CRASH_ROUNDS`, or `rounds`.
fn rounds_or(rounds: usize) -> usize {
    std::env::var("ECSQL_CRASH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(rounds)
}

fn kill_many_times(sync: &str, rounds: usize, seed: u64) {
    let folder = Folder::new(sync);
    let db = folder.0.join("crash.ecsql");
    let slot = folder.0.join("crash.ecsql.slot");
    let mut rng = Lcg(seed);
    let mut acked_total = 0;
    let mut acked_tick = 0;
    for round in 0..rounds {
        let mut child = writer(&db, sync, None);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // Kill after a random number of acknowledgements, then a random moment more.
        let wanted = 1 + rng.next(60) as i64;
        let mut last_ack = None;
        let mut last_tick = None;
        let read = |line: &str, last_ack: &mut Option<i64>, last_tick: &mut Option<i64>| {
            if let Some(n) = line.strip_prefix("ack ") {
                *last_ack = Some(n.parse().unwrap());
            } else if let Some(t) = line.strip_prefix("tick ") {
                *last_tick = Some(t.parse().unwrap());
            } else if line.starts_with("error") {
                panic!("round {round}: the writer failed: {line}");
            }
        };
        let started = Instant::now();
        while let Some(Ok(line)) = lines.next() {
            read(&line, &mut last_ack, &mut last_tick);
            if last_ack.is_some_and(|n| n >= acked_total + wanted) {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "round {round}: the writer hangs"
            );
        }
        std::thread::sleep(Duration::from_micros(rng.next(3000)));
        child.kill().unwrap();
        child.wait().unwrap();
        // Whatever it printed after we stopped reading was acknowledged too.
        for line in lines.map_while(Result::ok) {
            read(&line, &mut last_ack, &mut last_tick);
        }
        let (counters, consistent) = contents(&db);
        let expected: Vec<i64> = (0..counters.len() as i64).collect();
        assert_eq!(counters, expected, "round {round}: not a prefix of the commits");
        assert!(
            consistent,
            "round {round}: a transaction or a tick is there in part"
        );
        if sync == "full" {
            if let Some(n) = last_ack {
                assert!(
                    counters.len() as i64 > n,
                    "round {round}: commit {n} was acknowledged but is gone ({} counters)",
                    counters.len()
                );
            }
            let tick = clock(&db);
            assert!(
                tick >= last_tick.unwrap_or(acked_tick),
                "round {round}: the clock is at {tick}, but tick {last_tick:?} was acknowledged"
            );
            acked_tick = tick;
        }
        // A SAVE killed halfway leaves the slot as it was or whole, never in part.
        if slot.exists() {
            let saved = Database::open_in_memory().connect();
            saved
                .execute("LOAD FROM ?1", [slot.display().to_string()])
                .unwrap();
            let (counters, consistent) = check(&saved);
            assert_eq!(
                counters,
                (0..counters.len() as i64).collect::<Vec<_>>(),
                "round {round}: the slot"
            );
            assert!(consistent, "round {round}: the slot holds a transaction in part");
        }
        // Opening removed what killed checkpoints left (the next SAVE removes the slot's).
        let leftovers: Vec<String> = std::fs::read_dir(&folder.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".crash.ecsql.ecsql-"))
            .collect();
        assert!(
            leftovers.is_empty(),
            "round {round}: left beside the database: {leftovers:?}"
        );
        acked_total = counters.len() as i64;
    }
    assert!(
        acked_total > rounds as i64,
        "the writers got little done: {acked_total}"
    );
}

#[test]
#[cfg(unix)]
fn killed_writers_lose_nothing_acknowledged_with_synchronous_full() {
    kill_many_times("full", rounds_or(25), 7);
}

#[test]
#[cfg(unix)]
fn killed_writers_leave_a_committed_prefix_with_synchronous_normal() {
    kill_many_times("normal", rounds_or(25), 11);
}

#[test]
#[cfg(unix)]
fn a_full_disk_fails_the_statement_and_loses_nothing_acknowledged() {
    let folder = Folder::new("full-disk");
    let db = folder.0.join("full.ecsql");
    // Writes past 200 blocks of 512 bytes fail (EFBIG) instead of killing the writer.
    let mut child = writer(&db, "full", Some("trap '' XFSZ; ulimit -f 200"));
    let lines: Vec<String> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .collect();
    child.wait().unwrap();
    let last = lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("ack "))
        .map(|n| n.parse::<i64>().unwrap());
    let error = lines
        .iter()
        .find(|l| l.starts_with("error"))
        .unwrap_or_else(|| panic!("the writer should have failed: {lines:?}"));
    assert!(
        error.contains("File too large") && (error.contains("journal") || error.contains("snapshot")),
        "{error}"
    );
    let (counters, consistent) = contents(&db);
    let last = last.expect("some commits went through before the disk filled");
    assert!(
        counters.len() as i64 > last,
        "commit {last} was acknowledged but is gone"
    );
    assert_eq!(counters, (0..counters.len() as i64).collect::<Vec<_>>());
    assert!(consistent);
}

#[test]
#[cfg(unix)]
fn another_process_is_refused_while_a_writer_has_the_file_open() {
    let folder = Folder::new("lock");
    let db = folder.0.join("locked.ecsql");
    let mut child = writer(&db, "off", None);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Wait until it is writing.
    while let Some(Ok(line)) = lines.next() {
        if line.starts_with("ack ") {
            break;
        }
    }
    let refused = Database::open(&db);
    child.kill().unwrap();
    child.wait().unwrap();
    match refused {
        Err(ecsql::Error::File(ecsql::FileError::Locked { .. })) => {}
        other => panic!("a second process opened the file: {other:?}"),
    }
    // Once the writer is gone, the file opens.
    Database::open(&db).unwrap();
}

/// A checkpoint that does not fit (a disk too full for a whole snapshot, here a file size
/// limit below the snapshot's size) fails, and the journal goes on keeping every commit:
/// the writer commits on until the journal itself reaches the limit, and nothing it was
/// told of is lost.
#[test]
#[cfg(unix)]
fn a_checkpoint_that_does_not_fit_leaves_the_journal_going() {
    let folder = Folder::new("no-room-for-a-snapshot");
    let db = folder.0.join("big.ecsql");
    {
        let conn = Database::open(&db).unwrap().connect();
        let ballast = "x".repeat(1000);
        conn.execute_batch(&format!(
            "CREATE COMPONENT Counter (n INT, note TEXT); CREATE COMPONENT Total (sum INT); SPAWN Total(0);
             CREATE COMPONENT Ballast (t TEXT); SPAWN Ballast('{ballast}') FROM range(300);
             CHECKPOINT;"
        ))
        .unwrap();
    }
    assert!(std::fs::metadata(&db).unwrap().len() > 300_000);
    // Files may grow to 400 blocks of 512 bytes: the journal up to that, a snapshot never.
    let mut child = writer(&db, "full", Some("trap '' XFSZ; ulimit -f 400"));
    let lines: Vec<String> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .collect();
    child.wait().unwrap();
    let error = lines
        .iter()
        .find(|l| l.starts_with("error"))
        .unwrap_or_else(|| panic!("the writer should have stopped at the limit: {lines:?}"));
    assert!(
        error.contains("cannot write the journal") && error.contains("File too large"),
        "{error}"
    );
    let journal = std::fs::metadata(folder.0.join("big.ecsql-journal"))
        .unwrap()
        .len();
    assert!(
        journal > 150_000,
        "the journal stopped at {journal} bytes, at the failed checkpoint"
    );
    let last = lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("ack "))
        .map(|n| n.parse::<i64>().unwrap())
        .expect("commits went through");
    let (counters, consistent) = contents(&db);
    assert!(
        counters.len() as i64 > last,
        "commit {last} was acknowledged but is gone"
    );
    assert_eq!(counters, (0..counters.len() as i64).collect::<Vec<_>>());
    assert!(consistent);
}

/// The child of `a_killed_tick_of_many_ticks_keeps_the_ticks_done_and_runs_none_again`:
/// opens the database named by `ECSQL_TICKER_DB` and runs a TICK of a billion ticks, each
/// adding one to a counter.
#[test]
fn ticker_process() {
    let Ok(path) = std::env::var("ECSQL_TICKER_DB") else {
        return;
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out);
    let conn = Database::open(&path).unwrap().connect();
    conn.execute_batch(
        "PRAGMA synchronous = normal;
         CREATE COMPONENT Count (n INT); SPAWN Count(0);
         CREATE SYSTEM count AS UPDATE Count SET n = Count.n + 1;",
    )
    .unwrap();
    let _ = writeln!(out, "ticking");
    let _ = out.flush();
    let e = conn.execute("TICK 1000000000", ());
    let _ = writeln!(out, "error {e:?}");
}

/// `TICK n` commits tick by tick: killed after many ticks, the database opens at once with
/// the ticks that were done (every one whole: the counter equals the clock), not by
/// running the whole TICK again, and goes on from there.
#[test]
#[cfg(unix)]
fn a_killed_tick_of_many_ticks_keeps_the_ticks_done_and_runs_none_again() {
    let folder = Folder::new("killed-tick");
    let db = folder.0.join("ticks.ecsql");
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args([
            "durability::ticker_process",
            "--exact",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("ECSQL_TICKER_DB", &db)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while let Some(Ok(line)) = lines.next() {
        if line == "ticking" {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(700));
    child.kill().unwrap();
    child.wait().unwrap();
    // Opening runs the journal's ticks, and nothing more: a thread that has not finished
    // within a minute is running the billion.
    let (sender, receiver) = std::sync::mpsc::channel();
    let path = db.clone();
    std::thread::spawn(move || {
        let conn = Database::open(&path).unwrap().connect();
        let tick: i64 = conn.query_row("SELECT tick()", (), |r| r.get(0)).unwrap();
        let n: i64 = conn.query_row("SELECT n FROM Count", (), |r| r.get(0)).unwrap();
        conn.execute("TICK 3", ()).unwrap();
        let after: i64 = conn.query_row("SELECT n FROM Count", (), |r| r.get(0)).unwrap();
        let _ = sender.send((tick, n, after));
    });
    let (tick, n, after) = receiver
        .recv_timeout(Duration::from_secs(60))
        .expect("opening ran the killed TICK again");
    assert!(tick > 10, "only {tick} ticks were kept of 0.7 s of ticking");
    assert_eq!(n, tick, "a tick is there in part");
    assert_eq!(after, n + 3);
}
