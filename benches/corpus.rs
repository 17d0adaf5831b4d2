//! SQLite's sqllogictest corpus, its slowest queries beside SQLite. Every query of the
//! pinned files (tests/sqlite_corpus/manifest.txt; the corpus read from
//! `$ECSQL_SLT_CORPUS` or `../shared/sqllogictest`, as the corpus suite reads it) runs
//! `RUNS` times in turn on ecsql (translated as the suite translates it) and on SQLite,
//! each over the rows its file's statements made, and every run is timed. Printed, for
//! the first run (a text first seen, as the suite runs it) and for the best run: how many
//! queries take ecsql more than 5× and 2× SQLite's time, and the worst; what all queries
//! took on each side, and the longest on ecsql. Then criterion
//! measures, each beside SQLite in the same group:
//!
//! - `slowest_N`: the `PICK` queries ecsql took longest on (best run);
//! - `ratio_N`: the `PICK` with the highest ratio of ecsql's best run to SQLite's, among
//!   those that took ecsql at least 100 µs (below that a ratio is a statement's fixed
//!   cost, which `point_lookup` measures);
//! - `watched_N`: the queries of `WATCHED`, measured whatever their rank (select4's
//!   8-table join).
//!
//! `ECSQL_CORPUS_ONLY=text` looks only at the files whose path contains `text`. Without
//! the corpus the bench says so and measures nothing.
//!
//! Run: `cargo bench -p ecsql-benches --bench corpus`.

#[path = "../tests/common/cells.rs"]
#[allow(dead_code)]
mod cells;
#[path = "../tests/sqlite_corpus/records.rs"]
#[allow(dead_code)]
mod records;
#[path = "../tests/sqlite_corpus/translate.rs"]
#[allow(dead_code)]
mod translate;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ecsql::{Connection, Database};
use records::{Kind, Record};
use translate::Translator;

const MANIFEST: &str = include_str!("../tests/sqlite_corpus/manifest.txt");

/// How many queries of each list criterion measures.
const PICK: usize = 6;

/// Queries measured in every run, by file and line: select4's 8-table join of two
/// tables keyed to each other and six filtered to a few rows each (1,620 rows out).
const WATCHED: &[(&str, usize)] = &[("select4.test", 46368)];

/// How many times the first pass runs each query on each side.
const RUNS: usize = 3;

/// A query of the corpus, where it stands and what it took in the first pass.
#[derive(Clone)]
struct Case {
    file: String,
    /// The index of its record: the records before it make its rows.
    at: usize,
    line: usize,
    /// Each side's first run and best run.
    ecsql: [Duration; 2],
    sqlite: [Duration; 2],
}

/// Which of a case's runs: the first or the best.
const FIRST: usize = 0;
const BEST: usize = 1;

impl Case {
    fn ratio(&self, run: usize) -> f64 {
        self.ecsql[run].as_secs_f64() / self.sqlite[run].as_secs_f64().max(1e-9)
    }
}

fn corpus_root() -> PathBuf {
    std::env::var_os("ECSQL_SLT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/sqllogictest"))
}

/// The pinned files, each as its path and records.
fn pinned(root: &Path) -> Vec<(String, Vec<Record>)> {
    let only = std::env::var("ECSQL_CORPUS_ONLY").ok();
    MANIFEST
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|path| only.as_ref().is_none_or(|o| path.contains(o.as_str())))
        .filter_map(|path| {
            let text = std::fs::read_to_string(root.join(path)).ok()?;
            Some((path.to_string(), records::parse(&text).ok()?))
        })
        .collect()
}

/// A record's statements run on both sides, in order, up to record `upto` (each side
/// keeps what it accepts); calls `query` for each query record on the way, with its
/// index and its two texts.
fn walk(
    records: &[Record],
    upto: usize,
    conn: &Connection,
    sqlite: &rusqlite::Connection,
    mut query: impl FnMut(usize, &str, &str),
) {
    let mut translator = Translator::default();
    for (k, record) in records.iter().enumerate().take(upto) {
        if record.skipped {
            continue;
        }
        let translated = translator.translate(&record.sql);
        match (&record.kind, translated) {
            (Kind::Halt, _) => break,
            (Kind::Statement { .. }, Ok(sql)) => {
                let _ = run_ecsql(conn, &sql);
                let _ = sqlite.execute_batch(&record.sql);
            }
            (Kind::Statement { .. }, Err(_)) => {
                let _ = sqlite.execute_batch(&record.sql);
            }
            (Kind::Query { .. }, Ok(sql)) => query(k, &sql, &record.sql),
            _ => {}
        }
    }
}

/// A query's rows on ecsql, read to the end (as the corpus suite reads them).
fn run_ecsql(conn: &Connection, sql: &str) -> usize {
    let mut cells = 0;
    let _ = conn.run_script(sql, |result| match result {
        Ok(r) => {
            for row in r.rows.into_iter().flatten().flatten() {
                cells += row.values().iter().map(cells::Cell::from_ecsql).count();
            }
            true
        }
        Err(_) => false,
    });
    cells
}

fn run_sqlite(db: &rusqlite::Connection, sql: &str) -> usize {
    cells::sqlite_rows(db, sql).map_or(0, |rows| rows.iter().map(Vec::len).sum())
}

/// A run's time.
fn timed(run: impl FnOnce() -> usize) -> Duration {
    let start = Instant::now();
    black_box(run());
    start.elapsed()
}

/// The first pass: every query `RUNS` times on each side, in turn.
fn first_pass(files: &[(String, Vec<Record>)]) -> Vec<Case> {
    let mut cases = Vec::new();
    for (file, records) in files {
        let conn = Database::open_in_memory().connect();
        let sqlite = rusqlite::Connection::open_in_memory().unwrap();
        walk(records, records.len(), &conn, &sqlite, |at, ours, theirs| {
            let mut ecsql = [Duration::MAX; 2];
            let mut sqlite_took = [Duration::MAX; 2];
            for run in 0..RUNS {
                let e = timed(|| run_ecsql(&conn, ours));
                let s = timed(|| run_sqlite(&sqlite, theirs));
                if run == 0 {
                    (ecsql[FIRST], sqlite_took[FIRST]) = (e, s);
                }
                ecsql[BEST] = ecsql[BEST].min(e);
                sqlite_took[BEST] = sqlite_took[BEST].min(s);
            }
            cases.push(Case {
                file: file.clone(),
                at,
                line: records[at].line,
                ecsql,
                sqlite: sqlite_took,
            });
        });
    }
    cases
}

/// Prints how many of the cases that took ecsql 100 µs or more on `run` are over 5× and 2×
/// SQLite's time, and the worst few; returns those worst.
fn report(cases: &[Case], run: usize, name: &str) -> Vec<Case> {
    let mut slow: Vec<Case> = cases
        .iter()
        .filter(|k| k.ecsql[run] >= Duration::from_micros(100))
        .cloned()
        .collect();
    let over = |limit: f64| slow.iter().filter(|k| k.ratio(run) > limit).count();
    println!(
        "corpus, {name} run: all queries took ecsql {:.2?}, SQLite {:.2?}; the longest took ecsql {:.2?}",
        cases.iter().map(|k| k.ecsql[run]).sum::<Duration>(),
        cases.iter().map(|k| k.sqlite[run]).sum::<Duration>(),
        cases.iter().map(|k| k.ecsql[run]).max().unwrap_or_default(),
    );
    println!(
        "corpus, {name} run: {} of {} queries took ecsql 100 µs or more, of which {} over 5× SQLite's time, {} over 2×",
        slow.len(),
        cases.len(),
        over(5.0),
        over(2.0)
    );
    slow.sort_by(|a, b| b.ratio(run).total_cmp(&a.ratio(run)));
    slow.truncate(PICK);
    for case in &slow {
        println!(
            "corpus, {name} run: {} line {}: ecsql {:?}, SQLite {:?} ({:.2}×); other run ecsql {:?}, SQLite {:?}",
            case.file,
            case.line,
            case.ecsql[run],
            case.sqlite[run],
            case.ratio(run),
            case.ecsql[1 - run],
            case.sqlite[1 - run],
        );
    }
    slow
}

fn corpus(c: &mut Criterion) {
    let root = corpus_root();
    let files = pinned(&root);
    if files.is_empty() {
        println!(
            "corpus: no corpus at {} (set ECSQL_SLT_CORPUS to the folder holding select1.test …); nothing measured",
            root.display()
        );
        return;
    }
    let cases = first_pass(&files);
    println!("corpus: {} queries in {} files", cases.len(), files.len());
    report(&cases, FIRST, "first");
    let ratios = report(&cases, BEST, "best");
    let mut slowest = cases.clone();
    slowest.sort_by(|a, b| b.ecsql[BEST].cmp(&a.ecsql[BEST]));
    slowest.truncate(PICK);
    let watched: Vec<Case> = WATCHED
        .iter()
        .filter_map(|&(file, line)| {
            cases
                .iter()
                .find(|k| k.file.ends_with(file) && k.line == line)
                .cloned()
        })
        .collect();
    let mut group = c.benchmark_group("corpus");
    group.sample_size(10);
    for (list, picked) in [("slowest", &slowest), ("ratio", &ratios), ("watched", &watched)] {
        for (n, case) in picked.iter().enumerate() {
            println!(
                "corpus: {list}_{n}: {} line {}: ecsql {:?}, SQLite {:?} ({:.2}×), best of the first pass",
                case.file,
                case.line,
                case.ecsql[BEST],
                case.sqlite[BEST],
                case.ratio(BEST)
            );
            let records = &files.iter().find(|(f, _)| *f == case.file).unwrap().1;
            let conn = Database::open_in_memory().connect();
            let sqlite = rusqlite::Connection::open_in_memory().unwrap();
            let mut texts = None;
            walk(records, case.at + 1, &conn, &sqlite, |at, ours, theirs| {
                if at == case.at {
                    texts = Some((ours.to_string(), theirs.to_string()));
                }
            });
            let Some((ours, theirs)) = texts else {
                continue;
            };
            group.bench_function(format!("{list}_{n}/ecsql"), |b| {
                b.iter(|| black_box(run_ecsql(&conn, &ours)))
            });
            group.bench_function(format!("{list}_{n}/sqlite"), |b| {
                b.iter(|| black_box(run_sqlite(&sqlite, &theirs)))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, corpus);
criterion_main!(benches);
