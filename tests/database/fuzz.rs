//! A grammar-aware differential fuzzer. Each seed makes a random schema and gives two
//! databases the same statements, generated from the grammar with types in mind: queries
//! (joins, aggregates, set operations, subqueries, k-nearest), SPAWN, INSERT, UPDATE,
//! DELETE, DESPAWN, transactions and DDL, with parameters, NULLs, NaNs and edge values, and
//! earlier statements repeated. One database has an index on every field an index can
//! serve; the other has none and prepares every statement afresh, while the indexed one
//! runs a repeated statement through the `Statement` it prepared the first time (plan and
//! table lists cached across later writes). After every statement:
//!
//! - nothing panicked;
//! - both gave the same result: the same rows in the same order, or the same error (an
//!   index never changes a result, not even the order of rows or the ids handed out).
//!   One difference is allowed: where the indexed plan uses an index and succeeds while
//!   the scan fails, a condition that fails on a row the index skipped was never
//!   evaluated there (as in SQLite and PostgreSQL); if that statement wrote, the worlds
//!   part and the seed's run ends;
//! - both worlds are the same, byte for byte (`World::digest`), and each passes its own
//!   integrity check and the check that every index holds exactly what the tables do;
//! - a statement that failed left its world byte-identical to before it, and a ROLLBACK
//!   left it as it was at BEGIN.
//!
//! Both databases are file databases (`PRAGMA synchronous = off`), and between the
//! statements come CHECKPOINTs, SAVEs and LOADs of a save slot of each, systems whose
//! bodies are any statements a system runs (queries, SPAWN, INSERT, UPDATE, DELETE,
//! DESPAWN) made, ticked and dropped, and reopens: both databases closed and opened again
//! from their files, each of which must be the world it was (`.reopen` in a log). On a
//! machine of two cores or more, the indexed database ticks on two threads and lets a
//! statement whose rows span two runs or more split, however few its rows
//! (`tick_threads = 2`, `min_parallel_rows = 1`), so its systems that may run together
//! can; the plain one runs them one after another: their ticks must agree too.
//!
//! A failure is shrunk to the fewest statements that still fail the same way and written
//! to `target/tmp/fuzz-failure-<seed>.sql`; copied into `tests/fuzz/`, it is replayed by
//! every run from then on (`regressions_stay_fixed`). In that format a line is a statement,
//! a line `-- params: a | b` gives the next statement's parameters as literals, and other
//! `--` lines are comments.
//!
//! `ECSQL_SEED=N` replays one seed, `ECSQL_STEPS=N` sets statements per seed, and
//! `ECSQL_FUZZ_SECONDS=N` soaks: seeds from a random start until N seconds have passed.

use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::{Duration, Instant};

use ecsql::{Connection, Database, Indexes, Statement, Value};

use crate::common;

use common::Rng;

/// The draws this file makes, beside `Rng::next`.
trait Draw {
    fn below(&mut self, n: usize) -> usize;
    fn chance(&mut self, percent: u64) -> bool;
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T;
}

impl Draw for Rng {
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

// ---- the schema -----------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Int,
    Float,
    Real,
    Text,
    Bool,
    Entity,
}

impl Ty {
    fn sql(self) -> &'static str {
        match self {
            Ty::Int => "INT",
            Ty::Float => "FLOAT",
            Ty::Real => "REAL",
            Ty::Text => "TEXT",
            Ty::Bool => "BOOL",
            Ty::Entity => "ENTITY",
        }
    }
}

const ALL_TYPES: [Ty; 6] = [Ty::Int, Ty::Float, Ty::Real, Ty::Text, Ty::Bool, Ty::Entity];

/// `text` with each function index's `B-tree, N rows computed` as `B-tree, _ rows computed`.
fn computed_masked(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("B-tree, ") {
        let (head, tail) = rest.split_at(at + "B-tree, ".len());
        out.push_str(head);
        let digits = tail.len() - tail.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && tail[digits..].starts_with(" rows computed") {
            out.push('_');
            rest = &tail[digits..];
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// A component the fuzzer may create: its fields, a default for some, and the indexes the
/// indexed database keeps on it.
struct Template {
    name: &'static str,
    fields: &'static [(&'static str, Ty, Option<&'static str>)],
    indexes: &'static [&'static str],
}

const TEMPLATES: &[Template] = &[
    Template {
        name: "Pos",
        fields: &[("x", Ty::Real, None), ("y", Ty::Real, Some("1.5"))],
        indexes: &[
            "CREATE SPATIAL INDEX IF NOT EXISTS ON Pos (x, y)",
            "CREATE INDEX IF NOT EXISTS ON Pos (x)",
            "CREATE INDEX IF NOT EXISTS ON Pos (y)",
            "CREATE INDEX IF NOT EXISTS ON Pos (floor(x / 2), y + x)",
        ],
    },
    Template {
        name: "Cell",
        fields: &[
            ("x", Ty::Int, None),
            ("y", Ty::Int, None),
            ("z", Ty::Int, Some("-1")),
        ],
        indexes: &[
            "CREATE SPATIAL INDEX IF NOT EXISTS ON Cell (x, y, z)",
            "CREATE INDEX IF NOT EXISTS ON Cell (x)",
            "CREATE INDEX IF NOT EXISTS ON Cell (y)",
            "CREATE INDEX IF NOT EXISTS ON Cell (z)",
        ],
    },
    Template {
        name: "Hp",
        fields: &[("v", Ty::Int, Some("10"))],
        indexes: &[
            "CREATE INDEX IF NOT EXISTS ON Hp (v)",
            "CREATE INDEX IF NOT EXISTS ON Hp USING filter (v)",
            "CREATE INDEX IF NOT EXISTS ON Hp (v) WHERE v < 5",
            "CREATE INDEX IF NOT EXISTS ON Hp (100 / v)",
        ],
    },
    Template {
        name: "Name",
        fields: &[("s", Ty::Text, None)],
        indexes: &[
            "CREATE INDEX IF NOT EXISTS ON Name (s)",
            "CREATE INDEX IF NOT EXISTS ON Name (s) USING filter",
        ],
    },
    Template {
        name: "Link",
        fields: &[("to", Ty::Entity, None)],
        indexes: &[
            "CREATE INDEX IF NOT EXISTS ON Link (to)",
            "CREATE INDEX IF NOT EXISTS ON Link USING filter (to)",
        ],
    },
    Template {
        name: "Stat",
        fields: &[
            ("f", Ty::Float, None),
            ("b", Ty::Bool, Some("TRUE")),
            ("n", Ty::Int, None),
        ],
        indexes: &[
            "CREATE INDEX IF NOT EXISTS ON Stat (f)",
            "CREATE INDEX IF NOT EXISTS ON Stat (b)",
            "CREATE INDEX IF NOT EXISTS ON Stat (n)",
            "CREATE INDEX IF NOT EXISTS ON Stat USING filter (f)",
            "CREATE INDEX IF NOT EXISTS ON Stat USING filter (b)",
            "CREATE INDEX IF NOT EXISTS ON Stat (n % 3, f) WHERE b",
        ],
    },
    Template {
        name: "Red",
        fields: &[],
        indexes: &[],
    },
    Template {
        name: "Blue",
        fields: &[],
        indexes: &[],
    },
];

fn template(name: &str) -> Option<&'static Template> {
    TEMPLATES.iter().find(|t| t.name.eq_ignore_ascii_case(name))
}

fn create_statement(t: &Template) -> String {
    if t.fields.is_empty() {
        return format!("CREATE TAG {}", t.name);
    }
    let fields: Vec<String> = t
        .fields
        .iter()
        .map(|(name, ty, default)| match default {
            Some(d) => format!("{name} {} DEFAULT {d}", ty.sql()),
            None => format!("{name} {}", ty.sql()),
        })
        .collect();
    format!("CREATE COMPONENT {} ({})", t.name, fields.join(", "))
}

// ---- steps and their log ----------------------------------------------------------------

/// One statement and its parameters.
#[derive(Clone, Debug)]
struct Step {
    sql: String,
    params: Vec<Value>,
}

/// A value as a literal that reads back as the same value and type.
fn literal(v: &Value) -> String {
    match v {
        Value::Float(x) if !x.is_finite() => format!("CAST('{x}' AS FLOAT)"),
        Value::Real(x) => format!("CAST(CAST('{x}' AS FLOAT) AS REAL)"),
        Value::Entity(e) => format!("CAST('{}' AS ENTITY)", e.to_bits()),
        v => v.to_string(),
    }
}

fn write_log(steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        if !step.params.is_empty() {
            let params: Vec<String> = step.params.iter().map(literal).collect();
            let _ = writeln!(out, "-- params: {}", params.join(" | "));
        }
        let _ = writeln!(out, "{}", step.sql);
    }
    out
}

fn read_log(text: &str) -> Vec<Step> {
    let scratch = Database::open_in_memory().connect();
    let mut steps = Vec::new();
    let mut params = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(list) = line.strip_prefix("-- params:") {
            let sql = format!("SELECT {}", list.replace(" | ", ", "));
            let row = scratch
                .query_row(&sql, (), |r| Ok(r.values().to_vec()))
                .unwrap_or_else(|e| panic!("bad params line {line:?}: {e}"));
            params = row;
        } else if !line.starts_with("--") {
            steps.push(Step {
                sql: line.to_owned(),
                params: std::mem::take(&mut params),
            });
        }
    }
    steps
}

// ---- the checker --------------------------------------------------------------------------

/// What the generator learns after each statement.
#[derive(Default)]
struct Feedback {
    /// The unindexed database's rows, when the statement succeeded.
    rows: Vec<Vec<Value>>,
    components: Vec<String>,
    live: usize,
    in_transaction: bool,
}

/// A check that did not hold: which, at which step, and the steps run up to it.
struct Failure {
    kind: String,
    detail: String,
    steps: Vec<Step>,
}

type Outcome = Result<Vec<Vec<Value>>, String>;

fn run_on(statement: &mut Statement<'_>, params: &[Value]) -> Outcome {
    let rows = statement.query(params.to_vec()).map_err(|e| e.to_string())?;
    rows.map(|r| r.map(|r| r.values().to_vec()).map_err(|e| e.to_string()))
        .collect()
}

fn fresh(conn: &Connection, step: &Step) -> Outcome {
    let mut statement = conn.prepare(&step.sql).map_err(|e| e.to_string())?;
    run_on(&mut statement, &step.params)
}

fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_owned(),
        (_, Some(s)) => s.clone(),
        _ => "a panic".to_owned(),
    }
}

fn digest(conn: &Connection) -> Result<String, String> {
    conn.with_world(|w| w.digest()).map_err(|e| e.to_string())
}

fn checks(conn: &Connection) -> Result<(), String> {
    conn.with_world(|w| w.check_integrity().and_then(|_| Indexes::check(w)))
        .map_err(|e| e.to_string())?
}

/// The first line where two digests differ, for a readable failure.
fn first_difference(before: &str, after: &str) -> String {
    let (b, a): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    for i in 0..b.len().max(a.len()) {
        if b.get(i) != a.get(i) {
            return format!(
                "line {i}:\n  expected {}\n  found    {}",
                b.get(i).unwrap_or(&"(none)"),
                a.get(i).unwrap_or(&"(none)")
            );
        }
    }
    "no line differs".to_owned()
}

/// Whether the indexed database's plan for `step` has an index serve a condition.
fn index_serves(indexed: &Connection, step: &Step) -> bool {
    let explain = Step {
        sql: format!("EXPLAIN {}", step.sql),
        params: step.params.clone(),
    };
    fresh(indexed, &explain).is_ok_and(|rows| format!("{rows:?}").contains(" serves "))
}

/// Keeps the indexed database's indexes on every component it has (after DDL or a
/// ROLLBACK that brought a component back).
fn index_everything(conn: &Connection) -> Result<(), String> {
    for name in conn.component_names().map_err(|e| e.to_string())? {
        for sql in template(&name).map_or(&[][..], |t| t.indexes) {
            conn.execute(sql, ()).map_err(|e| format!("{sql}: {e}"))?;
        }
    }
    Ok(())
}

/// Prepared statements the indexed database keeps, by text, for repeated statements.
const CACHED_STATEMENTS: usize = 256;

/// Runs the steps `next` gives on the two databases, checking everything after each.
/// The two databases' files: each run its own folder, with a database and a save slot.
struct Files {
    folder: std::path::PathBuf,
}

impl Files {
    fn new() -> Files {
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let folder = std::env::temp_dir().join(format!("ecsql-fuzz-{}-{run}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).expect("a folder for the fuzzer's databases");
        Files { folder }
    }

    /// Opens (again) the database named `name`, journaling without flushes (the
    /// fuzzer runs many statements; what is checked is what a reopen reads back). The
    /// indexed one ticks on two threads and lets statements split however few their rows
    /// (so systems that may run together can), the plain one runs each tick's systems
    /// one after another.
    fn open(&self, name: &str) -> Result<Database, String> {
        let db = Database::open(self.folder.join(format!("{name}.ecsql"))).map_err(|e| e.to_string())?;
        let settings = match name {
            "indexed" => "PRAGMA synchronous = off; PRAGMA tick_threads = 2; PRAGMA min_parallel_rows = 1;",
            _ => "PRAGMA synchronous = off; PRAGMA tick_threads = 1;",
        };
        db.connect().execute_batch(settings).map_err(|e| e.to_string())?;
        Ok(db)
    }

    /// An outcome of the database `name` as the other's would read: its slot's name as
    /// `:slot`.
    fn as_either(&self, name: &str, outcome: Outcome) -> Outcome {
        let slot = format!("'{}'", self.folder.join(format!("{name}.slot")).display());
        outcome.map_err(|e| e.replace(&slot[1..slot.len() - 1], ":slot"))
    }

    /// `sql` for the database `name`: its save slot where `:slot` stands.
    fn for_database(&self, name: &str, sql: &str) -> String {
        let slot = self.folder.join(format!("{name}.slot"));
        sql.replace(":slot", &format!("'{}'", slot.display()))
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

/// The step that closes both databases and opens them again from their files.
const REOPEN: &str = ".reopen";

fn run_steps(next: &mut dyn FnMut(&Feedback) -> Option<Step>) -> Result<(), Failure> {
    let files = Files::new();
    let mut steps: Vec<Step> = Vec::new();
    let mut feedback = Feedback::default();
    loop {
        let opened = files.open("plain").and_then(|a| Ok((a, files.open("indexed")?)));
        let (plain_db, indexed_db) = opened.map_err(|e| Failure {
            kind: "reopen".into(),
            detail: e,
            steps: steps.clone(),
        })?;
        let (plain, indexed) = (plain_db.connect(), indexed_db.connect());
        match run_open(&files, &plain, &indexed, &mut steps, &mut feedback, next)? {
            Reopen::No => return Ok(()),
            Reopen::Yes {
                plain_digest,
                indexed_digest,
            } => {
                drop((plain, indexed, plain_db, indexed_db));
                // Opened again, each database is what it was.
                let (a, b) = (files.open("plain"), files.open("indexed"));
                for (name, db, was) in [("plain", a, plain_digest), ("indexed", b, indexed_digest)] {
                    let fail = |detail: String| Failure {
                        kind: "reopened otherwise".into(),
                        detail: format!("the {name} database: {detail}"),
                        steps: steps.clone(),
                    };
                    let db = db.map_err(fail)?;
                    let now = digest(&db.connect()).map_err(fail)?;
                    if now != was {
                        return Err(fail(first_difference(&was, &now)));
                    }
                }
            }
        }
    }
}

/// Whether `run_open` stopped for a reopen, and the worlds' digests then.
enum Reopen {
    No,
    Yes {
        plain_digest: String,
        indexed_digest: String,
    },
}

/// Runs steps on the two open databases until they end or a reopen comes.
fn run_open(
    files: &Files,
    plain: &Connection,
    indexed: &Connection,
    steps: &mut Vec<Step>,
    feedback: &mut Feedback,
    next: &mut dyn FnMut(&Feedback) -> Option<Step>,
) -> Result<Reopen, Failure> {
    let mut cache: Vec<(String, Statement<'_>)> = Vec::new();
    let mut before = digest(plain).unwrap_or_default();
    let mut at_begin: Option<(String, String)> = None;
    while let Some(step) = next(feedback) {
        steps.push(step.clone());
        let steps: &[Step] = steps;
        let fail = |kind: &str, detail: String, steps: &[Step]| Failure {
            kind: kind.to_owned(),
            detail,
            steps: steps.to_vec(),
        };
        if step.sql == REOPEN {
            // Closed inside a transaction, a connection rolls it back: the files hold the
            // world as it was at BEGIN.
            for conn in [plain, indexed] {
                if !conn.is_autocommit() {
                    conn.execute("ROLLBACK", ())
                        .map_err(|e| fail("ROLLBACK", e.to_string(), steps))?;
                }
            }
            return Ok(Reopen::Yes {
                plain_digest: digest(plain).map_err(|e| fail("digest", e, steps))?,
                indexed_digest: digest(indexed).map_err(|e| fail("digest", e, steps))?,
            });
        }
        let on_plain = Step {
            sql: files.for_database("plain", &step.sql),
            params: step.params.clone(),
        };
        let a = catch_unwind(AssertUnwindSafe(|| fresh(plain, &on_plain)));
        let b = catch_unwind(AssertUnwindSafe(|| {
            let sql = files.for_database("indexed", &step.sql);
            match cache.iter().position(|(kept, _)| *kept == sql) {
                Some(i) => {
                    let entry = cache.remove(i);
                    let mut statement = entry.1;
                    let out = run_on(&mut statement, &step.params);
                    cache.push((entry.0, statement));
                    out
                }
                None => {
                    let mut statement = indexed.prepare(&sql).map_err(|e| e.to_string())?;
                    let out = run_on(&mut statement, &step.params);
                    if cache.len() == CACHED_STATEMENTS {
                        cache.remove(0);
                    }
                    cache.push((sql, statement));
                    out
                }
            }
        }));
        let (a, b) = match (a, b) {
            (Ok(a), Ok(b)) => (files.as_either("plain", a), files.as_either("indexed", b)),
            (Err(p), _) | (_, Err(p)) => return Err(fail("panic", panic_text(p), steps)),
        };
        let upper = step.sql.trim_start().to_uppercase();
        // A plan names the indexes it uses: only whether it could be made must agree.
        let explain = upper.starts_with("EXPLAIN");
        // Compared as text, where NaN equals NaN and -0.0 differs from 0.0.
        let same = format!("{a:?}") == format!("{b:?}");
        let evaluation_error = a.as_ref().is_err_and(|e| {
            ["out of range", "division by zero", "negative substring"]
                .iter()
                .any(|kind| e.contains(kind))
        });
        if evaluation_error && b.is_ok() && !explain && index_serves(indexed, &step) {
            // A condition that fails (an overflow, a division by zero) on a row the index
            // skipped is never evaluated there: the indexed statement succeeds where the
            // scan fails, as in SQLite and PostgreSQL. Not a bug, but the worlds part here
            // if it wrote: the run ends.
            if digest(indexed).ok() != Some(before.clone()) {
                eprintln!(
                    "the worlds parted (an index skipped a failing row): run ends after {} steps",
                    steps.len()
                );
                return Ok(Reopen::No);
            }
        } else if (explain && a.is_ok() != b.is_ok()) || (!explain && !same) {
            let detail =
                format!("without indexes: {a:?}\nwith indexes, prepared before, on two threads: {b:?}");
            return Err(fail("results differ", detail, steps));
        }
        // A new component gets its indexes; a ROLLBACK must bring back those it dropped
        // by itself (compared below), so it is not helped.
        if a.is_ok() && upper.starts_with("CREATE") {
            index_everything(indexed).map_err(|e| fail("indexing", e, steps))?;
        }
        let indexes = fresh(
            indexed,
            &Step {
                sql: "SHOW INDEXES".into(),
                params: Vec::new(),
            },
        )
        // A function index counts the rows it computed, a ROLLBACK's restored rows too:
        // that count is work done, not what the index holds.
        .map(|rows| computed_masked(&format!("{rows:?}")))
        .map_err(|e| fail("SHOW INDEXES", e, steps))?;
        let now = digest(plain).map_err(|e| fail("digest", e, steps))?;
        let other = digest(indexed).map_err(|e| fail("digest", e, steps))?;
        if now != other {
            return Err(fail("worlds differ", first_difference(&now, &other), steps));
        }
        for conn in [plain, indexed] {
            checks(conn).map_err(|e| fail("integrity", e, steps))?;
        }
        match &a {
            // A TICK of several ticks keeps those before the one that failed.
            Err(e) if now != before && !upper.starts_with("TICK") => {
                let detail = format!("{e}\n{}", first_difference(&before, &now));
                return Err(fail("a failed statement changed the world", detail, steps));
            }
            Ok(_) if upper.starts_with("BEGIN") => at_begin = Some((now.clone(), indexes)),
            Ok(_) if upper.starts_with("COMMIT") => at_begin = None,
            Ok(_) if upper.starts_with("ROLLBACK") => {
                if let Some((begun, begun_indexes)) = at_begin.take() {
                    if begun != now {
                        return Err(fail(
                            "ROLLBACK did not restore",
                            first_difference(&begun, &now),
                            steps,
                        ));
                    }
                    if begun_indexes != indexes {
                        let detail = format!("at BEGIN: {begun_indexes}\nafter ROLLBACK: {indexes}");
                        return Err(fail("ROLLBACK did not restore the indexes", detail, steps));
                    }
                }
            }
            _ => {}
        }
        before = now;
        if std::env::var_os("ECSQL_FUZZ_TRACE").is_some() {
            let what = match &a {
                Ok(rows) => format!("ok {} rows", rows.len()),
                Err(e) => format!("ERR {e}"),
            };
            // Whether the indexed database's plan uses an index, to see what is covered.
            let index = match index_serves(indexed, &step) {
                true => " (an index serves it)",
                false => "",
            };
            eprintln!("{}\n    -> {what}{index}", step.sql);
        }
        *feedback = Feedback {
            rows: a.unwrap_or_default(),
            components: plain.component_names().unwrap_or_default(),
            live: plain.with_world(|w| w.len()).unwrap_or(0),
            in_transaction: !plain.is_autocommit(),
        };
    }
    Ok(Reopen::No)
}

fn replay(steps: &[Step]) -> Result<(), Failure> {
    let mut iter = steps.iter().cloned();
    run_steps(&mut |_| iter.next())
}

/// The fewest steps (removing runs of them, then single ones) that fail the same way.
fn shrink(failure: Failure, budget: Duration) -> Failure {
    let start = Instant::now();
    let mut best = failure;
    let mut chunk = best.steps.len() / 2;
    while chunk >= 1 && start.elapsed() < budget {
        let mut i = 0;
        let mut removed_any = false;
        while i < best.steps.len() && start.elapsed() < budget {
            let mut trial = best.steps.clone();
            trial.drain(i..(i + chunk).min(trial.len()));
            match replay(&trial) {
                Err(f)
                    if f.kind == best.kind
                        && f.steps.last().map(|s| &s.sql) == best.steps.last().map(|s| &s.sql) =>
                {
                    best = f;
                    removed_any = true;
                }
                _ => i += chunk,
            }
        }
        if !removed_any {
            chunk /= 2;
        }
    }
    best
}

fn report(seed: Option<u64>, failure: Failure) -> ! {
    let log = write_log(&failure.steps);
    let name = match seed {
        Some(seed) => format!("fuzz-failure-{seed}.sql"),
        None => "fuzz-failure-replay.sql".to_owned(),
    };
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::write(
        &path,
        format!(
            "-- {}: {}\n{log}",
            failure.kind,
            failure.detail.replace('\n', "\n-- ")
        ),
    );
    panic!(
        "{} (seed {}) after {} statements, written to {}:\n{}\n\n{log}",
        failure.kind,
        seed.map_or("replayed".to_owned(), |s| s.to_string()),
        failure.steps.len(),
        path.display(),
        failure.detail
    );
}

// ---- the generator ----------------------------------------------------------------------

/// A component in a query's FROM: how its fields are written and whether they may be NULL.
#[derive(Clone)]
struct InScope {
    qualifier: String,
    template: &'static Template,
}

#[derive(Clone, Default)]
struct Scope {
    components: Vec<InScope>,
    /// How the entity's id is written, when the FROM has one entity (`id`, `a.id`).
    ids: Vec<String>,
    /// An INT column from a series (`r.i`).
    ints: Vec<String>,
    /// Aggregates may be used (a SELECT list or HAVING over groups).
    aggregates: bool,
}

impl Scope {
    /// The scope of `FROM C`: one entity, its id as `id`, its fields as `C.field`.
    fn entity(template: &'static Template) -> Scope {
        Scope {
            components: vec![InScope {
                qualifier: template.name.into(),
                template,
            }],
            ids: vec!["id".into()],
            ..Default::default()
        }
    }

    fn columns(&self, ty: Ty) -> Vec<String> {
        let mut out: Vec<String> = self
            .components
            .iter()
            .flat_map(|c| {
                c.template
                    .fields
                    .iter()
                    .filter(move |f| f.1 == ty)
                    .map(move |f| format!("{}.{}", c.qualifier, f.0))
            })
            .collect();
        match ty {
            Ty::Entity => out.extend(self.ids.iter().cloned()),
            Ty::Int => out.extend(self.ints.iter().cloned()),
            _ => {}
        }
        out
    }
}

struct Gen {
    rng: Rng,
    /// Ids seen in results, newest last.
    ids: Vec<u64>,
    /// Statements already run, to repeat.
    history: Vec<Step>,
    alive: Vec<&'static Template>,
    live: usize,
    in_transaction: bool,
    params: Vec<Value>,
    /// The systems made (some may have been dropped since, or failed to be made).
    systems: Vec<String>,
    /// A SAVE has run (a LOAD has a file to read).
    saved: bool,
    /// Parameters are written as literals (a system's statements take none).
    no_params: bool,
}

const TEXTS: &[&str] = &["", "a", "ab", "abc", "B", "it''s", "é", "%", "a_b", "zz", "A%"];
const LIKE_PATTERNS: &[&str] = &["a%", "ab%", "%b", "_", "a_b", "%", "A%", "z%", "", "it%"];

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen {
            rng: Rng(seed),
            ids: Vec::new(),
            history: Vec::new(),
            alive: Vec::new(),
            live: 0,
            in_transaction: false,
            params: Vec::new(),
            systems: Vec::new(),
            saved: false,
            no_params: false,
        }
    }

    fn learn(&mut self, feedback: &Feedback) {
        for row in &feedback.rows {
            for v in row {
                if let Value::Entity(e) = v {
                    self.ids.push(e.to_bits());
                }
            }
        }
        if self.ids.len() > 400 {
            self.ids.drain(..self.ids.len() - 300);
        }
        self.alive = feedback.components.iter().filter_map(|n| template(n)).collect();
        self.live = feedback.live;
        self.in_transaction = feedback.in_transaction;
    }

    /// The first steps: a random schema.
    fn schema(&mut self) -> Vec<Step> {
        TEMPLATES
            .iter()
            .filter(|_| self.rng.chance(85))
            .map(|t| Step {
                sql: create_statement(t),
                params: Vec::new(),
            })
            .collect()
    }

    fn next(&mut self) -> Step {
        self.params.clear();
        if !self.alive.is_empty() && self.rng.chance(8) {
            return Step {
                sql: self.around(),
                params: Vec::new(),
            };
        }
        if !self.history.is_empty() && self.rng.chance(15) {
            let step = self.rng.pick(&self.history).clone();
            return step;
        }
        let roll = self.rng.below(100);
        let sql = match roll {
            _ if self.alive.is_empty() => self.ddl(),
            0..=34 => self.query(0),
            35..=49 => self.spawn(),
            50..=57 => self.insert(),
            58..=71 => self.update(),
            72..=75 => self.delete(),
            76..=81 => self.despawn(),
            82..=89 => self.transaction(),
            90..=91 => self.ddl(),
            92..=94 => format!("EXPLAIN {}", self.query(0)),
            _ => self.query(1),
        };
        let step = Step {
            sql,
            params: std::mem::take(&mut self.params),
        };
        if self.history.len() < 200 {
            self.history.push(step.clone());
        } else {
            let i = self.rng.below(200);
            self.history[i] = step.clone();
        }
        step
    }

    fn component(&mut self) -> &'static Template {
        let i = self.rng.below(self.alive.len());
        self.alive[i]
    }

    fn with_fields(&mut self) -> Option<&'static Template> {
        let with: Vec<&'static Template> = self
            .alive
            .iter()
            .copied()
            .filter(|t| !t.fields.is_empty())
            .collect();
        (!with.is_empty()).then(|| *self.rng.pick(&with))
    }

    // ---- values and expressions ----

    fn id_literal(&mut self) -> String {
        match self.rng.below(10) {
            0 => format!("{}", 1 + self.rng.below(40)),
            1 => "CAST('18446744069414584321' AS ENTITY)".to_owned(),
            _ if !self.ids.is_empty() => {
                let bits = *self.rng.pick(&self.ids);
                match i64::try_from(bits) {
                    Ok(i) => i.to_string(),
                    Err(_) => format!("CAST('{bits}' AS ENTITY)"),
                }
            }
            _ => format!("{}", 1 + self.rng.below(20)),
        }
    }

    fn value(&mut self, ty: Ty) -> Value {
        match ty {
            Ty::Int => Value::Int(
                *self
                    .rng
                    .pick(&[0, 1, 2, 3, -1, 7, 10, 25, -40, i64::MAX, i64::MIN]),
            ),
            Ty::Float => Value::Float(*self.rng.pick(&[
                0.0,
                0.5,
                -1.5,
                2.25,
                10.0,
                -0.0,
                f64::NAN,
                f64::INFINITY,
                1e300,
            ])),
            Ty::Real => Value::Real(*self.rng.pick(&[0.0, 0.5, -2.0, 3.5, 19.5, f32::NAN])),
            Ty::Text => Value::Text(self.rng.pick(TEXTS).replace("''", "'")),
            Ty::Bool => Value::Bool(self.rng.chance(50)),
            Ty::Entity => match self.ids.is_empty() {
                true => Value::Null,
                false => {
                    let bits = *self.rng.pick(&self.ids);
                    ecsql::Entity::from_bits(bits).map_or(Value::Null, Value::Entity)
                }
            },
        }
    }

    fn param(&mut self, ty: Ty) -> String {
        let v = self.value(ty);
        if self.no_params {
            return literal(&v);
        }
        self.params.push(v);
        format!("?{}", self.params.len())
    }

    fn constant(&mut self, ty: Ty) -> String {
        if self.rng.chance(4) {
            return "NULL".to_owned();
        }
        if self.rng.chance(10) {
            return self.param(ty);
        }
        match ty {
            Ty::Int => match self.rng.below(12) {
                0 => "9223372036854775807".to_owned(),
                1 => "-9223372036854775807".to_owned(),
                n => format!("{}", n as i64 * 7 - 30 + self.rng.below(5) as i64),
            },
            Ty::Float => match self.rng.below(12) {
                0 => "CAST('NaN' AS FLOAT)".to_owned(),
                1 => "CAST('-inf' AS FLOAT)".to_owned(),
                2 => "-0.0".to_owned(),
                3 => "1e308".to_owned(),
                _ => format!("{:.2}", self.rng.below(160) as f64 / 4.0 - 20.0),
            },
            Ty::Real => match self.rng.below(30) {
                0 | 1 => "CAST('NaN' AS REAL)".to_owned(),
                2 => "CAST(1e39 AS REAL)".to_owned(),
                _ => format!("CAST({:.1} AS REAL)", self.rng.below(80) as f64 / 2.0 - 10.0),
            },
            Ty::Text => format!("'{}'", self.rng.pick(TEXTS)),
            Ty::Bool => self.rng.pick(&["TRUE", "FALSE"]).to_string(),
            Ty::Entity => self.id_literal(),
        }
    }

    fn leaf(&mut self, ty: Ty, scope: &Scope) -> String {
        let columns = scope.columns(ty);
        if !columns.is_empty() && self.rng.chance(60) {
            return self.rng.pick(&columns).clone();
        }
        self.constant(ty)
    }

    fn expr(&mut self, ty: Ty, scope: &Scope, depth: u32) -> String {
        if depth >= 3 || self.rng.chance(35) {
            return self.leaf(ty, scope);
        }
        let d = depth + 1;
        if scope.aggregates
            && self.rng.chance(30)
            && let Some(a) = self.aggregate(ty, scope)
        {
            return a;
        }
        match ty {
            Ty::Int => match self.rng.below(11) {
                0..=2 => {
                    let op = self.rng.pick(&["+", "-", "*", "/", "%"]);
                    format!(
                        "({} {op} {})",
                        self.expr(Ty::Int, scope, d),
                        self.expr(Ty::Int, scope, d)
                    )
                }
                3 => format!("abs({})", self.expr(Ty::Int, scope, d)),
                4 => format!("length({})", self.expr(Ty::Text, scope, d)),
                5 => self.case(Ty::Int, scope, d),
                6 => format!(
                    "coalesce({}, {})",
                    self.expr(Ty::Int, scope, d),
                    self.expr(Ty::Int, scope, d)
                ),
                7 => format!("CAST({} AS INT)", self.expr(Ty::Float, scope, d)),
                8 => format!("(SELECT count(*) FROM {})", self.component().name),
                9 => format!(
                    "least({}, {})",
                    self.expr(Ty::Int, scope, d),
                    self.expr(Ty::Int, scope, d)
                ),
                _ => format!("-({})", self.expr(Ty::Int, scope, d)),
            },
            Ty::Float => match self.rng.below(9) {
                0..=2 => {
                    let op = self.rng.pick(&["+", "-", "*", "/"]);
                    let other = *self.rng.pick(&[Ty::Float, Ty::Int]);
                    format!(
                        "({} {op} {})",
                        self.expr(Ty::Float, scope, d),
                        self.expr(other, scope, d)
                    )
                }
                3 => format!("sqrt(abs({}))", self.expr(Ty::Float, scope, d)),
                4 => format!("round({}, 1)", self.expr(Ty::Float, scope, d)),
                5 => format!("CAST({} AS FLOAT)", self.expr(Ty::Int, scope, d)),
                6 => self
                    .distance(scope)
                    .unwrap_or_else(|| self.leaf(Ty::Float, scope)),
                7 => format!("floor({})", self.expr(Ty::Float, scope, d)),
                _ => self.case(Ty::Float, scope, d),
            },
            Ty::Real => match self.rng.below(4) {
                0 | 1 => {
                    let op = self.rng.pick(&["+", "-", "*"]);
                    format!(
                        "({} {op} {})",
                        self.expr(Ty::Real, scope, d),
                        self.expr(Ty::Real, scope, d)
                    )
                }
                2 => format!("CAST({} AS REAL)", self.expr(Ty::Float, scope, d)),
                _ => format!("({} * 0.5)", self.expr(Ty::Real, scope, d)),
            },
            Ty::Text => match self.rng.below(7) {
                0 | 1 => format!(
                    "({} || {})",
                    self.expr(Ty::Text, scope, d),
                    self.expr(Ty::Text, scope, d)
                ),
                2 => format!("upper({})", self.expr(Ty::Text, scope, d)),
                3 => format!(
                    "substr({}, {}, {})",
                    self.expr(Ty::Text, scope, d),
                    self.expr(Ty::Int, scope, d),
                    self.expr(Ty::Int, scope, d)
                ),
                4 => format!("CAST({} AS TEXT)", self.expr(Ty::Int, scope, d)),
                5 => format!(
                    "coalesce({}, {})",
                    self.expr(Ty::Text, scope, d),
                    self.expr(Ty::Text, scope, d)
                ),
                _ => self.case(Ty::Text, scope, d),
            },
            Ty::Bool => self.predicate(scope, d),
            Ty::Entity => match self.rng.below(3) {
                0 => self.case(Ty::Entity, scope, d),
                1 => format!(
                    "coalesce({}, {})",
                    self.expr(Ty::Entity, scope, d),
                    self.expr(Ty::Entity, scope, d)
                ),
                _ => self.leaf(Ty::Entity, scope),
            },
        }
    }

    fn case(&mut self, ty: Ty, scope: &Scope, d: u32) -> String {
        let when = self.predicate(scope, d);
        let then = self.expr(ty, scope, d);
        match self.rng.chance(70) {
            true => format!(
                "CASE WHEN {when} THEN {then} ELSE {} END",
                self.expr(ty, scope, d)
            ),
            false => format!("CASE WHEN {when} THEN {then} END"),
        }
    }

    fn aggregate(&mut self, ty: Ty, scope: &Scope) -> Option<String> {
        let inner = Scope {
            aggregates: false,
            ..scope.clone()
        };
        let distinct = if self.rng.chance(15) { "DISTINCT " } else { "" };
        Some(match ty {
            Ty::Int => match self.rng.below(4) {
                0 => "count(*)".to_owned(),
                1 => {
                    let ty = *self.rng.pick(&ALL_TYPES);
                    format!("count({distinct}{})", self.expr(ty, &inner, 2))
                }
                2 => format!("sum({distinct}{})", self.expr(Ty::Int, &inner, 2)),
                _ => format!(
                    "{}({})",
                    self.rng.pick(&["min", "max"]),
                    self.expr(Ty::Int, &inner, 2)
                ),
            },
            Ty::Float => match self.rng.below(3) {
                0 => {
                    let ty = *self.rng.pick(&[Ty::Int, Ty::Float]);
                    format!("avg({})", self.expr(ty, &inner, 2))
                }
                1 => format!("sum({distinct}{})", self.expr(Ty::Float, &inner, 2)),
                _ => format!(
                    "{}({})",
                    self.rng.pick(&["min", "max"]),
                    self.expr(Ty::Float, &inner, 2)
                ),
            },
            Ty::Text | Ty::Entity | Ty::Real | Ty::Bool => {
                format!("{}({})", self.rng.pick(&["min", "max"]), self.expr(ty, &inner, 2))
            }
        })
    }

    /// `distance(…) ` of a point component in scope to a constant point.
    fn distance(&mut self, scope: &Scope) -> Option<String> {
        let points: Vec<&InScope> = scope
            .components
            .iter()
            .filter(|c| c.template.name == "Pos" || c.template.name == "Cell")
            .collect();
        if points.is_empty() {
            return None;
        }
        let c = *self.rng.pick(&points);
        let fields: Vec<String> = c
            .template
            .fields
            .iter()
            .map(|f| format!("{}.{}", c.qualifier, f.0))
            .collect();
        let center: Vec<String> = (0..fields.len())
            .map(|_| format!("{}", self.rng.below(30) as i64 - 10))
            .collect();
        Some(format!(
            "distance(({}), ({}))",
            fields.join(", "),
            center.join(", ")
        ))
    }

    /// A condition, often one an index can serve.
    fn predicate(&mut self, scope: &Scope, d: u32) -> String {
        if d >= 3 {
            let ty = *self.rng.pick(&ALL_TYPES);
            return format!("{} IS NOT NULL", self.leaf(ty, scope));
        }
        let d = d + 1;
        match self.rng.below(21) {
            0..=3 => {
                let ty = *self.rng.pick(&ALL_TYPES);
                let op = self.rng.pick(&["=", "<>", "<", "<=", ">", ">="]);
                let (l, r) = (self.leaf(ty, scope), self.expr(ty, scope, d));
                format!("{l} {op} {r}")
            }
            4 => format!("({} AND {})", self.predicate(scope, d), self.predicate(scope, d)),
            5 => format!("({} OR {})", self.predicate(scope, d), self.predicate(scope, d)),
            6 => format!("NOT {}", self.predicate(scope, d)),
            7 => {
                let ty = *self.rng.pick(&ALL_TYPES);
                let not = if self.rng.chance(30) { "NOT " } else { "" };
                format!("{} IS {not}NULL", self.expr(ty, scope, d))
            }
            8 => {
                let ty = *self.rng.pick(&[Ty::Int, Ty::Float, Ty::Real, Ty::Text]);
                let (x, lo, hi) = (self.leaf(ty, scope), self.constant(ty), self.constant(ty));
                format!("{x} BETWEEN {lo} AND {hi}")
            }
            9 => {
                let ty = *self.rng.pick(&ALL_TYPES);
                let x = self.leaf(ty, scope);
                let list: Vec<String> = (0..1 + self.rng.below(3)).map(|_| self.constant(ty)).collect();
                format!("{x} IN ({})", list.join(", "))
            }
            10 => {
                let x = self.leaf(Ty::Text, scope);
                let not = if self.rng.chance(20) { "NOT " } else { "" };
                format!("{x} {not}LIKE '{}'", self.rng.pick(LIKE_PATTERNS))
            }
            11 => match self.distance(scope) {
                Some(dist) => format!("{dist} {} {}", self.rng.pick(&["<", "<="]), self.rng.below(12)),
                None => self.leaf(Ty::Bool, scope),
            },
            12 if !scope.ids.is_empty() => {
                let not = if self.rng.chance(30) { "NOT " } else { "" };
                format!("{not}has({})", self.component().name)
            }
            13 => {
                let (sub, types) = self.simple_select(d + 1, Some(1), None);
                let x = self.leaf(types[0], scope);
                format!("{x} IN ({sub})")
            }
            14 => format!("EXISTS ({})", self.simple_select(d + 1, None, None).0),
            15..=19 => self.indexable(scope),
            _ => self.leaf(Ty::Bool, scope),
        }
    }

    /// A condition of the shapes an index serves: a field against constants or
    /// parameters (=, IN, a range, a prefix), or a box around a point component.
    fn indexable(&mut self, scope: &Scope) -> String {
        let fields: Vec<(String, Ty)> = scope
            .components
            .iter()
            .flat_map(|c| {
                c.template
                    .fields
                    .iter()
                    .map(move |f| (format!("{}.{}", c.qualifier, f.0), f.1))
            })
            .collect();
        if fields.is_empty() {
            return self.leaf(Ty::Bool, scope);
        }
        let (field, ty) = self.rng.pick(&fields).clone();
        let point = scope
            .components
            .iter()
            .find(|c| c.template.name == "Pos" || c.template.name == "Cell")
            .cloned();
        match self.rng.below(6) {
            0 | 1 => format!("{field} = {}", self.constant(ty)),
            2 => {
                let op = self.rng.pick(&["<", "<=", ">", ">="]);
                format!("{field} {op} {}", self.constant(ty))
            }
            3 => {
                let list: Vec<String> = (0..1 + self.rng.below(3)).map(|_| self.constant(ty)).collect();
                format!("{field} IN ({})", list.join(", "))
            }
            4 if ty == Ty::Text => format!("{field} LIKE '{}'", self.rng.pick(LIKE_PATTERNS)),
            _ => match point {
                Some(c) => {
                    let sides: Vec<String> = c
                        .template
                        .fields
                        .iter()
                        .map(|f| {
                            let lo = self.rng.below(30) as i64 - 12;
                            format!(
                                "{}.{} BETWEEN {lo} AND {}",
                                c.qualifier,
                                f.0,
                                lo + self.rng.below(8) as i64
                            )
                        })
                        .collect();
                    format!("({})", sides.join(" AND "))
                }
                None => format!("{field} BETWEEN {} AND {}", self.constant(ty), self.constant(ty)),
            },
        }
    }

    // ---- queries ----

    /// A FROM clause and the scope it makes.
    fn from(&mut self) -> (String, Scope) {
        let mut scope = Scope::default();
        match self.rng.below(20) {
            0 => {
                scope.ids.push("id".to_owned());
                ("entities".to_owned(), scope)
            }
            1 | 2 => {
                scope.ints.push("r.i".to_owned());
                let (a, b) = (self.rng.below(6) as i64 - 2, self.rng.below(30));
                let series = match self.rng.chance(50) {
                    true => format!("range({b})"),
                    false => format!("range({a}, {b})"),
                };
                (format!("{series} AS r(i)"), scope)
            }
            3..=5 => {
                let (l, r) = (self.component(), self.component());
                scope.ids = vec!["a.id".to_owned(), "b.id".to_owned()];
                scope.components = vec![
                    InScope {
                        qualifier: "a".into(),
                        template: l,
                    },
                    InScope {
                        qualifier: "b".into(),
                        template: r,
                    },
                ];
                let on = match self.rng.below(4) {
                    0 => "a.id = b.id".to_owned(),
                    1 if r.name == "Link" => "b.to = a.id".to_owned(),
                    _ => self.predicate(&scope, 2),
                };
                (format!("{} AS a JOIN {} AS b ON {on}", l.name, r.name), scope)
            }
            6 if self.alive.iter().any(|t| t.name == "Link") => {
                scope.ids.push("d.id".to_owned());
                scope.ints.push("d.depth".to_owned());
                let way = self.rng.pick(&["descendants", "ancestors"]);
                (format!("{way}({}, Link.to) AS d", self.id_literal()), scope)
            }
            _ => {
                scope.ids.push("id".to_owned());
                let mut names = Vec::new();
                let first = self.component();
                names.push(first.name.to_owned());
                scope.components.push(InScope {
                    qualifier: first.name.into(),
                    template: first,
                });
                if self.rng.chance(35) {
                    let second = self.component();
                    if second.name != first.name {
                        let join = if self.rng.chance(50) { " LEFT JOIN " } else { ", " };
                        names.push(format!("{join}{}", second.name));
                        scope.components.push(InScope {
                            qualifier: second.name.into(),
                            template: second,
                        });
                    }
                }
                let text = names.concat();
                (text, scope)
            }
        }
    }

    /// A SELECT of one FROM with WHERE, maybe grouped; gives its text and column types.
    /// `width` asks for that many columns.
    fn simple_select(&mut self, depth: u32, width: Option<usize>, want: Option<&[Ty]>) -> (String, Vec<Ty>) {
        let (from, scope) = self.from();
        let n = want.map_or_else(|| width.unwrap_or(1 + self.rng.below(3)), <[Ty]>::len);
        // A group key is a column (a constant would be read as a position).
        let keys: Vec<(Ty, String)> = ALL_TYPES
            .iter()
            .flat_map(|&ty| scope.columns(ty).into_iter().map(move |c| (ty, c)))
            .collect();
        let grouped = want.is_none() && !keys.is_empty() && depth < 2 && self.rng.chance(25);
        let mut columns = Vec::new();
        let mut types = Vec::new();
        let mut tail = String::new();
        if grouped {
            let (key_ty, key) = self.rng.pick(&keys).clone();
            let agg_scope = Scope {
                aggregates: true,
                ..scope.clone()
            };
            columns.push(key.clone());
            types.push(key_ty);
            while columns.len() < n {
                let ty = *self.rng.pick(&[Ty::Int, Ty::Float, Ty::Text]);
                columns.push(
                    self.aggregate(ty, &agg_scope)
                        .unwrap_or_else(|| "count(*)".into()),
                );
                types.push(ty);
            }
            let _ = write!(tail, " GROUP BY {key}");
            if self.rng.chance(30) {
                let _ = write!(tail, " HAVING count(*) > {}", self.rng.below(3));
            }
        } else {
            for i in 0..n {
                let ty = match want {
                    Some(types) => types[i],
                    None => *self.rng.pick(&ALL_TYPES),
                };
                columns.push(self.expr(ty, &scope, depth.max(1)));
                types.push(ty);
            }
        }
        let distinct = if !grouped && self.rng.chance(15) {
            "DISTINCT "
        } else {
            ""
        };
        let filter = match self.rng.chance(65) {
            true => format!(" WHERE {}", self.predicate(&scope, depth.max(1))),
            false => String::new(),
        };
        let select: Vec<String> = columns
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} AS c{i}"))
            .collect();
        (
            format!("SELECT {distinct}{} FROM {from}{filter}{tail}", select.join(", ")),
            types,
        )
    }

    /// An ORDER BY every column (so that LIMIT keeps the same rows whatever the plan).
    fn order_all(&mut self, width: usize) -> String {
        let keys: Vec<String> = (1..=width)
            .map(|i| {
                let dir = self
                    .rng
                    .pick(&["", " DESC", " ASC NULLS FIRST", " DESC NULLS LAST"]);
                format!("{i}{dir}")
            })
            .collect();
        format!(" ORDER BY {}", keys.join(", "))
    }

    fn query(&mut self, depth: u32) -> String {
        if self.rng.chance(8)
            && let Some(k) = self.nearest()
        {
            return k;
        }
        let (mut sql, types) = self.simple_select(depth, None, None);
        if self.rng.chance(12) {
            let op = self
                .rng
                .pick(&["UNION", "UNION ALL", "EXCEPT", "INTERSECT", "EXCEPT ALL"]);
            // Mostly the same column types, at times only as many columns.
            let want = self.rng.chance(85).then_some(&types[..]);
            let (other, _) = self.simple_select(depth + 1, Some(types.len()), want);
            sql = format!("{sql} {op} {other}");
        }
        if self.rng.chance(40) {
            sql.push_str(&self.order_all(types.len()));
            if self.rng.chance(60) {
                let _ = write!(sql, " LIMIT {}", self.rng.below(8));
                if self.rng.chance(30) {
                    let _ = write!(sql, " OFFSET {}", self.rng.below(4));
                }
            }
        }
        sql
    }

    /// The k nearest points, with a condition besides at times.
    fn nearest(&mut self) -> Option<String> {
        let t = *self.alive.iter().find(|t| t.name == "Pos" || t.name == "Cell")?;
        let scope = Scope::entity(t);
        let dist = self.distance(&scope)?;
        let filter = match self.rng.chance(40) {
            true => format!(" WHERE {}", self.predicate(&scope, 2)),
            false => String::new(),
        };
        Some(format!(
            "SELECT id, {dist} AS d FROM {}{filter} ORDER BY {dist} LIMIT {}",
            t.name,
            1 + self.rng.below(6)
        ))
    }

    // ---- writes ----

    /// A SPAWN item: a component with arguments by position or name.
    fn item(&mut self, t: &'static Template, scope: &Scope) -> String {
        if t.fields.is_empty() {
            return t.name.to_owned();
        }
        let named = self.rng.chance(50);
        let mut args = Vec::new();
        for (name, ty, _) in t.fields {
            if named && self.rng.chance(25) {
                continue;
            }
            let v = self.expr(*ty, scope, 2);
            args.push(if named { format!("{name} => {v}") } else { v });
        }
        format!("{}({})", t.name, args.join(", "))
    }

    fn items(&mut self, scope: &Scope) -> String {
        let mut chosen: Vec<&'static Template> = Vec::new();
        for _ in 0..1 + self.rng.below(3) {
            let t = self.component();
            if !chosen.iter().any(|c| c.name == t.name) {
                chosen.push(t);
            }
        }
        let items: Vec<String> = chosen.into_iter().map(|t| self.item(t, scope)).collect();
        items.join(", ")
    }

    fn spawn(&mut self) -> String {
        if self.live > 500 {
            return self.despawn();
        }
        match self.rng.below(10) {
            0..=3 => {
                let scope = Scope {
                    ints: vec!["r.i".into()],
                    ..Default::default()
                };
                let items = self.items(&scope);
                format!("SPAWN {items} FROM range({}) AS r(i)", self.rng.below(40))
            }
            4 => format!("SPAWN AT {} {}", self.id_literal(), self.items(&Scope::default())),
            5 => {
                let t = self.component();
                let scope = Scope::entity(t);
                let items = self.items(&scope);
                let filter = self.predicate(&scope, 1);
                format!("SPAWN {items} FROM {} WHERE {filter}", t.name)
            }
            _ => format!("SPAWN {}", self.items(&Scope::default())),
        }
    }

    fn insert(&mut self) -> String {
        let Some(t) = self.with_fields() else {
            return self.spawn();
        };
        let fields: Vec<&str> = t.fields.iter().map(|f| f.0).collect();
        let or = self.rng.pick(&["", "OR REPLACE ", "OR IGNORE "]).to_string();
        if self.rng.chance(60) {
            let rows: Vec<String> = (0..1 + self.rng.below(3))
                .map(|_| {
                    let mut values = vec![self.id_literal()];
                    values.extend(t.fields.iter().map(|f| self.constant(f.1)));
                    format!("({})", values.join(", "))
                })
                .collect();
            return format!(
                "INSERT {or}INTO {} (id, {}) VALUES {}",
                t.name,
                fields.join(", "),
                rows.join(", ")
            );
        }
        let source = self.component();
        let scope = Scope::entity(source);
        let values: Vec<String> = t.fields.iter().map(|f| self.expr(f.1, &scope, 2)).collect();
        let filter = self.predicate(&scope, 1);
        let conflict = match (or.is_empty(), self.rng.below(3)) {
            (true, 0) => " ON CONFLICT DO NOTHING".to_owned(),
            (true, 1) => {
                let (name, ty, _) = self.rng.pick(t.fields);
                let own = Scope {
                    components: vec![InScope {
                        qualifier: t.name.into(),
                        template: t,
                    }],
                    ..Default::default()
                };
                format!(" ON CONFLICT DO UPDATE SET {name} = {}", self.expr(*ty, &own, 2))
            }
            _ => String::new(),
        };
        format!(
            "INSERT {or}INTO {} (id, {}) SELECT id, {} FROM {} WHERE {filter}{conflict}",
            t.name,
            fields.join(", "),
            values.join(", "),
            source.name
        )
    }

    fn update(&mut self) -> String {
        let Some(t) = self.with_fields() else {
            return self.spawn();
        };
        let mut scope = Scope::entity(t);
        let mut from = String::new();
        if self.rng.chance(25) {
            let other = self.component();
            if other.name != t.name {
                from = format!(" FROM {}", other.name);
                scope.components.push(InScope {
                    qualifier: other.name.into(),
                    template: other,
                });
            }
        }
        let mut sets = Vec::new();
        for (name, ty, _) in t.fields {
            if sets.is_empty() || self.rng.chance(40) {
                sets.push(format!("{name} = {}", self.expr(*ty, &scope, 1)));
            }
        }
        let filter = match self.rng.chance(75) {
            true => format!(" WHERE {}", self.predicate(&scope, 1)),
            false => String::new(),
        };
        format!("UPDATE {} SET {}{from}{filter}", t.name, sets.join(", "))
    }

    fn delete(&mut self) -> String {
        let t = self.component();
        let scope = Scope::entity(t);
        format!("DELETE FROM {} WHERE {}", t.name, self.predicate(&scope, 1))
    }

    fn despawn(&mut self) -> String {
        if self.rng.chance(50) {
            let ids: Vec<String> = (0..1 + self.rng.below(4)).map(|_| self.id_literal()).collect();
            return format!("DESPAWN {}", ids.join(", "));
        }
        let t = self.component();
        let scope = Scope::entity(t);
        format!("DESPAWN FROM {} WHERE {}", t.name, self.predicate(&scope, 1))
    }

    /// What happens around the statements: a checkpoint, a save and a load, a reopen of
    /// both databases from their files, and systems (their bodies any statement a system
    /// runs) made, ticked and dropped.
    fn around(&mut self) -> String {
        match self.rng.below(100) {
            0..=19 => "CHECKPOINT".to_owned(),
            20..=34 => {
                self.saved = true;
                "SAVE TO :slot".to_owned()
            }
            35..=44 if self.saved => "LOAD FROM :slot".to_owned(),
            35..=49 if !self.in_transaction => REOPEN.to_owned(),
            50..=71 => self.system(),
            72..=93 => format!("TICK {}", 1 + self.rng.below(3)),
            _ => match self.systems.is_empty() {
                true => "SHOW SYSTEMS".to_owned(),
                false => {
                    let name = self.rng.pick(&self.systems).clone();
                    format!("DROP SYSTEM IF EXISTS {name}")
                }
            },
        }
    }

    /// `CREATE SYSTEM` of one to three statements of any kind a system runs, or of one
    /// UPDATE (a SPAWN when no component has a field).
    fn system(&mut self) -> String {
        let name = format!("s{}", self.systems.len());
        self.systems.push(name.clone());
        self.no_params = true;
        // One in three is one UPDATE, the kind of system that may run beside others.
        let count = match self.rng.below(3) {
            0 => 0,
            _ => 1 + self.rng.below(3),
        };
        let mut statements: Vec<String> = (0..count)
            .map(|_| match self.rng.below(6) {
                0 => self.query(0),
                1 => self.spawn(),
                2 => self.insert(),
                3 => self.update(),
                4 => self.delete(),
                _ => self.despawn(),
            })
            .collect();
        if statements.is_empty() {
            statements.push(self.update());
        }
        self.no_params = false;
        let every = match self.rng.below(4) {
            0 => format!(" EVERY {} TICKS", 2 + self.rng.below(2)),
            _ => String::new(),
        };
        format!(
            "CREATE SYSTEM {name}{every} AS BEGIN {}; END",
            statements.join("; ")
        )
    }

    fn transaction(&mut self) -> String {
        match (self.in_transaction, self.rng.below(10)) {
            (false, 0) => "COMMIT".to_owned(),
            (false, _) => "BEGIN".to_owned(),
            (true, 0) => "BEGIN".to_owned(),
            (true, 1..=5) => "ROLLBACK".to_owned(),
            (true, _) => "COMMIT".to_owned(),
        }
    }

    fn ddl(&mut self) -> String {
        let dead: Vec<&'static Template> = TEMPLATES
            .iter()
            .filter(|t| !self.alive.iter().any(|a| a.name == t.name))
            .collect();
        if !dead.is_empty() && (self.alive.len() < 3 || self.rng.chance(50)) {
            let i = self.rng.below(dead.len());
            return create_statement(dead[i]);
        }
        format!("DROP COMPONENT {}", self.component().name)
    }
}

// ---- the tests ----------------------------------------------------------------------------

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Generates and checks `steps` statements from `seed`; a failure is shrunk and reported.
fn fuzz(seed: u64, steps: usize) {
    let mut generator = Gen::new(seed);
    let mut pending = generator.schema();
    pending.reverse();
    let mut made = 0;
    let outcome = run_steps(&mut |feedback| {
        generator.learn(feedback);
        if let Some(step) = pending.pop() {
            return Some(step);
        }
        made += 1;
        (made <= steps).then(|| generator.next())
    });
    if let Err(failure) = outcome {
        report(Some(seed), shrink(failure, Duration::from_secs(60)));
    }
}

#[test]
fn generated_statements_agree_with_and_without_indexes() {
    let steps = env_u64("ECSQL_STEPS").unwrap_or(500) as usize;
    if let Some(seed) = env_u64("ECSQL_SEED") {
        return fuzz(seed, steps);
    }
    if let Some(seconds) = env_u64("ECSQL_FUZZ_SECONDS") {
        let start = Instant::now();
        let first = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        let mut seed = first;
        while start.elapsed() < Duration::from_secs(seconds) {
            fuzz(seed, steps);
            seed = seed.wrapping_add(1);
        }
        eprintln!(
            "soaked {} seeds from {first} in {seconds} s",
            seed.wrapping_sub(first)
        );
        return;
    }
    for seed in 1..=12 {
        fuzz(seed, steps);
    }
}

/// Every failure the fuzzer found, kept in `tests/fuzz/`, passes every check.
#[test]
fn regressions_stay_fixed() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz");
    let mut files: Vec<_> = std::fs::read_dir(&folder)
        .expect("tests/fuzz holds the regression cases")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no regression cases in {}", folder.display());
    for file in files {
        let steps = read_log(&std::fs::read_to_string(&file).unwrap());
        if let Err(failure) = replay(&steps) {
            panic!("{}: {}\n{}", file.display(), failure.kind, failure.detail);
        }
    }
}

/// The log format reads back what it wrote, parameters included.
#[test]
fn the_log_reads_back() {
    let steps = vec![
        Step {
            sql: "SELECT ?1, ?2, ?3, ?4".into(),
            params: vec![
                Value::Float(f64::NAN),
                Value::Text("it's".into()),
                Value::Real(-0.5),
                Value::Entity(ecsql::Entity::from_bits(u64::MAX).unwrap()),
            ],
        },
        Step {
            sql: "SELECT 1".into(),
            params: vec![],
        },
    ];
    let back = read_log(&write_log(&steps));
    assert_eq!(format!("{back:?}"), format!("{steps:?}"));
}
