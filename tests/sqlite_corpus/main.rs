//! SQLite's own sqllogictest corpus as a peer suite: every record of the pinned files in
//! `manifest.txt` is translated (translate.rs), run through ecsql and compared with the
//! corpus's answer. A failure is excused only by a documented difference
//! (differences.rs); any other fails the suite.
//!
//! The corpus is SQLite's (public domain) and is not kept in this repository: the runner
//! reads it from `$ECSQL_SLT_CORPUS`, or from `../shared/sqllogictest` beside the
//! project, and checks every file's md5 against the manifest. Without it the suite says
//! so and runs nothing.
//!
//! Where ecsql had to refuse some of a file's data (a NULL in an INT column: only ENTITY
//! fields hold NULL), the corpus's answers no longer fit; from then on each query is also
//! run by SQLite over the rows ecsql holds (a mirror fed the statements ecsql accepted),
//! and SQLite's answer is the expected one.
//!
//! `ECSQL_CORPUS_ONLY=text` runs the files whose path contains `text`;
//! `ECSQL_CORPUS_VERBOSE=1` prints every failure, documented ones too;
//! `ECSQL_CORPUS_ALL=1` runs every `*.test` file under the folder, pinned or not (for
//! measuring the whole corpus; the md5 check is then skipped).

#[path = "../common/cells.rs"]
mod cells;
mod differences;
mod records;
mod translate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use cells::Cell;
use differences::{Failure, explain};
use ecsql::{Connection, Database};
use md5::{Digest, Md5};
use records::{Expected, Kind, Record};
use translate::Translator;

const MANIFEST: &str = include_str!("manifest.txt");

fn main() -> ExitCode {
    let root = std::env::var_os("ECSQL_SLT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/sqllogictest"));
    if !root.is_dir() {
        println!(
            "sqlite_corpus: no corpus at {} (set ECSQL_SLT_CORPUS to the folder holding \
             select1.test …); nothing run",
            root.display()
        );
        return ExitCode::SUCCESS;
    }
    let only = std::env::var("ECSQL_CORPUS_ONLY").ok();
    let verbose = std::env::var_os("ECSQL_CORPUS_VERBOSE").is_some();
    let mut total = Report::default();
    let mut broken = Vec::new();
    let files: Vec<(Option<String>, String)> = if std::env::var_os("ECSQL_CORPUS_ALL").is_some() {
        let mut all = Vec::new();
        every_test_file(&root, &root, &mut all);
        all.into_iter().map(|p| (None, p)).collect()
    } else {
        let mut pinned = Vec::new();
        for line in MANIFEST
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        {
            match line.split_whitespace().collect::<Vec<_>>()[..] {
                [md5, path] => pinned.push((Some(md5.to_string()), path.to_string())),
                _ => broken.push(format!("manifest line `{line}` is not `md5 path`")),
            }
        }
        pinned
    };
    for (md5, path) in &files {
        let path = path.as_str();
        if only.as_ref().is_some_and(|o| !path.contains(o.as_str())) {
            continue;
        }
        let text = match std::fs::read(root.join(path)) {
            Ok(bytes) if md5.as_ref().is_none_or(|m| hex_md5(&bytes) == *m) => {
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Ok(_) => {
                let md5 = md5.as_deref().unwrap_or_default();
                broken.push(format!("{path}: differs from the pinned version (md5 {md5})"));
                continue;
            }
            Err(e) => {
                broken.push(format!("{path}: {e}"));
                continue;
            }
        };
        let report = match records::parse(&text) {
            Ok(records) => run_file(path, &records, verbose),
            Err(e) => {
                broken.push(format!("{path}: {e}"));
                continue;
            }
        };
        println!("{path}: {}", report.summary());
        total.add(report);
    }
    println!("\nall files: {}", total.summary());
    for (why, n) in &total.documented {
        println!("  {n:>7}  {why}");
    }
    for problem in &broken {
        println!("corpus problem: {problem}");
    }
    println!(
        "{} passed, {} failed ({} documented differences, {} unexplained), {} skipped",
        total.passed,
        total.documented.values().sum::<usize>() + total.unexplained,
        total.documented.values().sum::<usize>(),
        total.unexplained,
        total.skipped
    );
    if total.unexplained > 0 || !broken.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Every `*.test` under `dir`, as paths relative to `root`, sorted.
fn every_test_file(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            every_test_file(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "test")
            && let Ok(relative) = path.strip_prefix(root)
        {
            out.push(relative.to_string_lossy().into_owned());
        }
    }
}

fn hex_md5(bytes: &[u8]) -> String {
    Md5::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Default)]
struct Report {
    passed: usize,
    skipped: usize,
    documented: BTreeMap<&'static str, usize>,
    unexplained: usize,
    queries: usize,
    slowest: Duration,
    over_a_second: usize,
}

impl Report {
    fn summary(&self) -> String {
        format!(
            "{} passed, {} documented, {} unexplained, {} skipped; slowest query {:.3} s, {} over 1 s",
            self.passed,
            self.documented.values().sum::<usize>(),
            self.unexplained,
            self.skipped,
            self.slowest.as_secs_f64(),
            self.over_a_second
        )
    }

    fn add(&mut self, other: Report) {
        self.passed += other.passed;
        self.skipped += other.skipped;
        for (why, n) in other.documented {
            *self.documented.entry(why).or_default() += n;
        }
        self.unexplained += other.unexplained;
        self.queries += other.queries;
        self.slowest = self.slowest.max(other.slowest);
        self.over_a_second += other.over_a_second;
    }
}

/// What ecsql said to one statement or query.
enum Outcome {
    Ok(Vec<Vec<Cell>>),
    Err(String),
}

fn run_ecsql(conn: &Connection, sql: &str) -> Outcome {
    let mut rows = Vec::new();
    let mut failure = None;
    let parsed = conn.run_script(sql, |result| {
        match result {
            Ok(r) => {
                rows.clear();
                for row in r.rows.into_iter().flatten() {
                    match row {
                        Ok(row) => rows.push(row.values().iter().map(Cell::from_ecsql).collect()),
                        Err(e) => failure = Some(e.to_string()),
                    }
                }
            }
            Err(e) => failure = Some(e.to_string()),
        }
        failure.is_none()
    });
    match (parsed, failure) {
        (Err(e), _) => Outcome::Err(e.to_string()),
        (_, Some(e)) => Outcome::Err(e),
        _ => Outcome::Ok(rows),
    }
}

fn run_file(path: &str, records: &[Record], verbose: bool) -> Report {
    let db = Database::open_in_memory();
    let conn = db.connect();
    let mirror = rusqlite::Connection::open_in_memory().expect("an in-memory SQLite database opens");
    let mut translator = Translator::default();
    // Set once ecsql's data may differ from SQLite's: the mirror answers from then on.
    let mut diverged = false;
    let mut report = Report::default();
    for record in records {
        if record.skipped {
            report.skipped += 1;
            continue;
        }
        if matches!(record.kind, Kind::Halt) {
            break;
        }
        let translated = translator.translate(&record.sql);
        let expects_error = matches!(
            record.kind,
            Kind::Statement { ok: false } | Kind::QueryError { .. }
        );
        if expects_error && translated.is_err() {
            // Expected to fail and not sayable in ecsql: nothing to compare.
            report.skipped += 1;
            continue;
        }
        let verdict = match &record.kind {
            Kind::Halt => break,
            Kind::Statement { ok } => {
                let failure = match translated {
                    Err(why) if *ok => Some(Failure::Untranslated(why.0)),
                    Err(_) => None,
                    Ok(sql) => match (run_ecsql(&conn, &sql), ok) {
                        (Outcome::Ok(_), true) => {
                            let _ = mirror.execute_batch(&record.sql);
                            None
                        }
                        (Outcome::Err(_), false) => None,
                        (Outcome::Ok(_), false) => {
                            let _ = mirror.execute_batch(&record.sql);
                            Some(Failure::Accepted(String::new()))
                        }
                        (Outcome::Err(e), true) => Some(Failure::Error(e)),
                    },
                };
                diverged |= failure.is_some();
                failure.map(|f| (f, String::new()))
            }
            Kind::QueryError { message } => match translated {
                Err(_) => None,
                Ok(sql) => match run_ecsql(&conn, &sql) {
                    Outcome::Err(_) => None,
                    Outcome::Ok(_) => Some((Failure::Accepted(message.clone()), shorten(&sql))),
                },
            },
            Kind::Query {
                types,
                sort,
                expected,
            } => {
                report.queries += 1;
                match translated {
                    Err(why) => Some((Failure::Untranslated(why.0), String::new())),
                    Ok(sql) => {
                        let start = Instant::now();
                        let outcome = run_ecsql(&conn, &sql);
                        let took = start.elapsed();
                        report.slowest = report.slowest.max(took);
                        report.over_a_second += usize::from(took > Duration::from_secs(1));
                        match outcome {
                            Outcome::Err(e) => Some((Failure::Error(e), shorten(&sql))),
                            Outcome::Ok(rows) => {
                                let got = records::values(&rows, types, *sort);
                                let oracle = if diverged {
                                    cells::sqlite_rows(&mirror, &record.sql).ok()
                                } else {
                                    None
                                };
                                let ok = match &oracle {
                                    Some(o) => records::values(o, types, *sort) == got,
                                    None => records::matches(expected, &got),
                                };
                                let width_ok = rows.first().is_none_or(|r| r.len() == types.len());
                                if ok && width_ok {
                                    None
                                } else {
                                    let want = match (&oracle, expected) {
                                        (Some(o), _) => {
                                            format!("SQLite: {:?}", records::values(o, types, *sort))
                                        }
                                        (None, Expected::Values(v)) => format!("{v:?}"),
                                        (None, Expected::Hash { count, md5 }) => {
                                            format!("{count} values hashing to {md5}")
                                        }
                                    };
                                    let shown: Vec<_> = got.iter().take(40).collect();
                                    Some((
                                        Failure::Differs,
                                        format!("{}\n    expected {want}\n    got {shown:?}", shorten(&sql)),
                                    ))
                                }
                            }
                        }
                    }
                }
            }
        };
        let Some((failure, detail)) = verdict else {
            report.passed += 1;
            continue;
        };
        let names_view = |m: &str| {
            let name = m
                .split("unknown component ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next());
            name.is_some_and(|n| translator.views.contains(&n.to_lowercase()))
        };
        let why = match &failure {
            Failure::Error(m) if names_view(m) => Some("views"),
            _ => explain(&record.sql, &failure, translator.text_columns),
        };
        let message = match &failure {
            Failure::Untranslated(r) => format!("untranslated: {r}"),
            Failure::Error(e) => format!("ecsql error: {e}"),
            Failure::Accepted(m) => format!("ecsql ran what the record expects to fail ({m})"),
            Failure::Differs => "results differ".into(),
        };
        match why {
            Some(why) => *report.documented.entry(why).or_default() += 1,
            None => report.unexplained += 1,
        }
        if verbose || why.is_none() {
            println!(
                "{path}:{}: {message}{}\n    {}\n    {detail}",
                record.line,
                why.map(|w| format!(" [documented: {w}]")).unwrap_or_default(),
                shorten(&record.sql).replace('\n', "\n    ")
            );
        }
    }
    report
}

/// At most 400 characters of a statement, for the report.
fn shorten(sql: &str) -> String {
    match sql.char_indices().nth(400) {
        Some((i, _)) => format!("{} …", &sql[..i]),
        None => sql.to_string(),
    }
}
