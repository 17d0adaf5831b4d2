//! The settings `PRAGMA` reads and sets, as one table: each row gives a setting's name,
//! type, the values it takes, its default, whose it is (the database's or one
//! connection's), its one-line description, and how to read and set it.
//!
//! Invariants:
//! - Everything about a setting comes from its row: `PRAGMA name [= value]`, the listing a
//!   bare `PRAGMA` returns, the message for a value it does not take ("PRAGMA threads
//!   takes …, not …"), the message for an unknown name (which lists every name), and the
//!   settings list of docs/language.md (a test holds the docs to the table).
//! - A row's `set` parses the text it is given and changes nothing unless the whole value
//!   is one it takes; `get` gives a value of the row's `ty`.
//! - The clock's settings (`tick`, `delta_time`) are the schedule's: setting them is a
//!   write, journaled by a file database and undone by ROLLBACK.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Client, MAX_THREADS, Synchronous, cached, wait};
use crate::error::{Error, Result};
use crate::exec::Outcome;
use crate::location::Location;
use crate::plan::{DataType, PlanError, PlanErrorKind};
use crate::storage::Value;

/// Whose a setting is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scope {
    /// One setting for every connection of the database.
    Database,
    /// Each connection has its own.
    Connection,
}

impl Scope {
    fn name(self) -> &'static str {
        match self {
            Scope::Database => "database",
            Scope::Connection => "connection",
        }
    }
}

/// What `set` did with a value's text.
pub(super) enum Set {
    /// The value was taken: reading the setting gives it.
    Done,
    /// The value was taken, and is this now (a setting of the schedule, read under the
    /// lock that set it).
    Now(Value),
    /// The text is not a value the setting takes: nothing changed.
    NotTaken,
}

/// One setting, as `PRAGMA` reads and sets it.
pub(super) struct Setting {
    /// Its name, lower case.
    pub(super) name: &'static str,
    /// The type of the value `PRAGMA name` returns.
    pub(super) ty: DataType,
    /// The values it takes, as the error for another value says it.
    pub(super) takes: &'static str,
    /// Its value at first.
    pub(super) default: &'static str,
    pub(super) scope: Scope,
    /// What it does, in one line.
    pub(super) doc: &'static str,
    /// Reads it (`at`: where the PRAGMA is, for an error waiting for the lock).
    get: fn(&Client, Location) -> Result<Value>,
    /// Sets it from a value's text (`at`: where the PRAGMA is; `replay`: run again from a
    /// file database's journal, so journaled already).
    set: fn(&Client, &str, Location, bool) -> Result<Set>,
}

/// Every setting, in the order a bare `PRAGMA` lists them.
pub(super) static SETTINGS: &[Setting] = &[
    Setting {
        name: "busy_timeout",
        ty: DataType::Int,
        takes: "a whole number of milliseconds",
        default: "5000",
        scope: Scope::Connection,
        doc: "How long a statement waits for another connection's transaction or write before it fails with \"database is busy\" (ms).",
        get: |c, _| Ok(int(c.busy_timeout().as_millis())),
        set: |c, v, _, _| {
            Ok(match v.parse::<u64>() {
                Ok(ms) => {
                    c.set_busy_timeout(Duration::from_millis(ms));
                    Set::Done
                }
                Err(_) => Set::NotTaken,
            })
        },
    },
    Setting {
        name: "statement_timeout",
        ty: DataType::Int,
        takes: "a whole number of milliseconds (0: none; a server's client: the server's limit)",
        default: "0 (none); a server's clients: the server's limit",
        scope: Scope::Connection,
        doc: "How long one call (a statement, or a script's statements together) may run before it is stopped, changing nothing (ms); a server's clients may lower it, not raise it.",
        get: |c, _| Ok(int(c.statement_timeout().map_or(0, |t| t.as_millis()))),
        set: |c, v, at, _| {
            let Ok(ms) = v.parse::<u64>() else {
                return Ok(Set::NotTaken);
            };
            let timeout = (ms > 0).then(|| Duration::from_millis(ms));
            c.set_statement_timeout(timeout)
                .map_err(|message| PlanError::new(at, PlanErrorKind::Invalid { message }))?;
            Ok(Set::Done)
        },
    },
    Setting {
        name: "memory_limit",
        ty: DataType::Int,
        takes: "a size: a number of bytes or a text such as '512MB' or '2GiB'",
        default: "80% of the machine's memory (8 GiB where the system does not say)",
        scope: Scope::Database,
        doc: "The most working memory one statement may hold (bytes); a statement that would hold more fails with \"out of memory\" and changes nothing.",
        get: |c, _| Ok(int(c.memory_limit())),
        set: |c, v, _, _| {
            Ok(match wait::parse_size(v) {
                Some(bytes) => {
                    c.set_memory_limit(bytes);
                    Set::Done
                }
                None => Set::NotTaken,
            })
        },
    },
    Setting {
        name: "threads",
        ty: DataType::Int,
        takes: "a whole number of threads from 1 to 256",
        default: "the machine's cores",
        scope: Scope::Database,
        doc: "How many threads one statement may run on.",
        get: |c, _| Ok(int(c.threads())),
        set: |c, v, _, _| {
            Ok(match v.parse::<usize>() {
                Ok(n) if (1..=MAX_THREADS).contains(&n) => {
                    c.set_threads(n);
                    Set::Done
                }
                _ => Set::NotTaken,
            })
        },
    },
    Setting {
        name: "min_parallel_rows",
        ty: DataType::Int,
        takes: "a whole number of rows, at least 1",
        default: "262144",
        scope: Scope::Database,
        doc: "The fewest rows each thread of a split statement takes; a tick's systems run at the same time only when their tables hold this many rows together.",
        get: |c, _| Ok(int(c.min_parallel_rows())),
        set: |c, v, _, _| {
            Ok(match v.parse::<usize>() {
                Ok(n) if n >= 1 => {
                    c.set_min_parallel_rows(n);
                    Set::Done
                }
                _ => Set::NotTaken,
            })
        },
    },
    Setting {
        name: "recursion_limit",
        ty: DataType::Int,
        takes: "a whole number of rounds, at least 1",
        default: "100000",
        scope: Scope::Database,
        doc: "The most rounds a recursive WITH query may run before it fails.",
        get: |c, _| Ok(int(c.engine.recursion_limit.load(Ordering::Relaxed))),
        set: |c, v, _, _| {
            Ok(match v.parse::<usize>() {
                Ok(n) if n >= 1 => {
                    c.engine.recursion_limit.store(n, Ordering::Relaxed);
                    Set::Done
                }
                _ => Set::NotTaken,
            })
        },
    },
    Setting {
        name: "max_pending_batches",
        ty: DataType::Int,
        takes: "a whole number of batches, at least 1",
        default: "1024",
        scope: Scope::Database,
        doc: "The most batches a subscription keeps waiting for its reader; one more merges those waiting into one (each row's diffs summed).",
        get: |c, _| Ok(int(c.engine.live.max_pending())),
        set: |c, v, _, _| {
            Ok(match v.parse::<usize>() {
                Ok(n) if n >= 1 => {
                    c.engine.live.set_max_pending(n);
                    Set::Done
                }
                _ => Set::NotTaken,
            })
        },
    },
    Setting {
        name: "parameterize",
        ty: DataType::Text,
        takes: "off, on or always (or 0, 1, 2; false, true)",
        default: "on",
        scope: Scope::Connection,
        doc: "Whether texts that differ only in their constants share one plan: from their second text (on), their first (always), or never (off).",
        get: |c, _| Ok(Value::Text(c.texts.lock().parameterize.name().into())),
        set: |c, v, _, _| {
            let Some(mode) = cached::Parameterize::parse(v) else {
                return Ok(Set::NotTaken);
            };
            let mut texts = c.texts.lock();
            if mode != texts.parameterize {
                texts.clear();
                texts.parameterize = mode;
            }
            Ok(Set::Done)
        },
    },
    Setting {
        name: "synchronous",
        ty: DataType::Int,
        takes: "off, normal or full (or 0, 1, 2)",
        default: "2 (full)",
        scope: Scope::Database,
        doc: "When a file database flushes its journal to the disk: at each commit (full), at checkpoints and each second (normal), or never (off).",
        get: |c, _| Ok(Value::Int(c.synchronous() as i64)),
        set: |c, v, _, _| {
            Ok(match Synchronous::parse(v) {
                Some(s) => {
                    c.set_synchronous(s);
                    Set::Done
                }
                None => Set::NotTaken,
            })
        },
    },
    Setting {
        name: "checkpoint_size",
        ty: DataType::Int,
        takes: "a size: a number of bytes or a text such as '64MB'",
        default: "67108864 (64 MiB)",
        scope: Scope::Database,
        doc: "How large a file database's journal grows before a commit checkpoints it (bytes).",
        get: |c, _| Ok(int(c.checkpoint_size())),
        set: |c, v, _, _| {
            Ok(match wait::parse_size(v) {
                Some(bytes) => {
                    c.set_checkpoint_size(bytes as u64);
                    Set::Done
                }
                None => Set::NotTaken,
            })
        },
    },
    Setting {
        name: "tick_threads",
        ty: DataType::Int,
        takes: "a whole number of threads from 1 to 256",
        default: "the machine's cores",
        scope: Scope::Database,
        doc: "How many threads the systems of a tick may run on at the same time (1: one after another); the result is the same either way.",
        get: |c, _| Ok(int(c.tick_threads())),
        set: |c, v, _, _| {
            Ok(match v.parse::<usize>() {
                Ok(n) if (1..=MAX_THREADS).contains(&n) => {
                    c.set_tick_threads(n);
                    Set::Done
                }
                _ => Set::NotTaken,
            })
        },
    },
    Setting {
        name: "tick",
        ty: DataType::Int,
        takes: "a whole number of ticks from 0 to 9223372036854775807",
        default: "0",
        scope: Scope::Database,
        doc: "The clock's tick, as tick() gives it; setting it moves the clock (not back while events are kept).",
        get: |c, at| Ok(int(c.clock_at(at)?.tick)),
        set: |c, v, at, replay| match v.parse::<i64>().ok().and_then(|t| u64::try_from(t).ok()) {
            Some(tick) => c
                .set_clock(Clocked::Tick(tick), v, at, replay)
                .map(|clock| Set::Now(int(clock.tick))),
            None => Ok(Set::NotTaken),
        },
    },
    Setting {
        name: "delta_time",
        ty: DataType::Float,
        takes: "a length of time in seconds (0 or more)",
        default: "0.016666666666666666 (1/60 s)",
        scope: Scope::Database,
        doc: "The length of a tick in seconds, as delta_time() gives it.",
        get: |c, at| Ok(Value::Float(c.clock_at(at)?.dt)),
        set: |c, v, at, replay| match v.parse::<f64>().ok().filter(|dt| dt.is_finite() && *dt >= 0.0) {
            Some(dt) => c
                .set_clock(Clocked::Dt(dt), v, at, replay)
                .map(|clock| Set::Now(Value::Float(clock.dt))),
            None => Ok(Set::NotTaken),
        },
    },
];

/// A value of the clock a PRAGMA sets.
#[derive(Clone, Copy, Debug)]
pub(super) enum Clocked {
    Tick(u64),
    Dt(f64),
}

impl Clocked {
    pub(super) fn name(self) -> &'static str {
        match self {
            Clocked::Tick(_) => "tick",
            Clocked::Dt(_) => "delta_time",
        }
    }

    /// The statement that sets it, as a read-only transaction's refusal names it.
    pub(super) fn verb(self) -> &'static str {
        match self {
            Clocked::Tick(_) => "PRAGMA tick",
            Clocked::Dt(_) => "PRAGMA delta_time",
        }
    }
}

/// A count as an INT value (the largest INT past it).
fn int(n: impl TryInto<i64>) -> Value {
    Value::Int(n.try_into().unwrap_or(i64::MAX))
}

/// Whether `name` is a setting of the whole database (not of one connection): what a
/// server's client may not set.
#[cfg(feature = "server")]
pub(crate) fn is_database_wide(name: &str) -> bool {
    find(name).is_some_and(|s| matches!(s.scope, Scope::Database))
}

/// Whether `name` is one of ecsql's settings each connection has its own of.
#[cfg(feature = "server")]
pub(crate) fn is_connections_own(name: &str) -> bool {
    find(name).is_some_and(|s| matches!(s.scope, Scope::Connection))
}

/// The setting named `name` (any case).
pub(super) fn find(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name.eq_ignore_ascii_case(name))
}

/// `PRAGMA name [= value]`: sets the setting when given a value, and returns it.
pub(super) fn pragma(
    conn: &Client,
    name: &str,
    value: Option<&str>,
    at: Location,
    replay: bool,
) -> Result<Value> {
    let invalid =
        |message: String| -> Error { PlanError::new(at, PlanErrorKind::Invalid { message }).into() };
    let Some(setting) = find(name) else {
        let names: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
        let name = name.to_ascii_lowercase();
        // SQLite's pragmas that read the schema have statements of their own here.
        let instead = match name.as_str() {
            "table_info" | "table_xinfo" => "; a component's fields: DESCRIBE name",
            "table_list" => "; the components: SHOW COMPONENTS",
            "index_list" | "index_info" | "index_xinfo" => "; the indexes: SHOW INDEXES",
            _ => "",
        };
        return Err(invalid(format!(
            "unknown pragma {name}: ecsql has {} (a bare PRAGMA lists them with their values){instead}",
            names.join(", ")
        )));
    };
    if let Some(v) = value {
        match (setting.set)(conn, v, at, replay)? {
            Set::Done => {}
            Set::Now(value) => return Ok(value),
            Set::NotTaken => {
                return Err(invalid(format!(
                    "PRAGMA {} takes {}, not {v}",
                    setting.name, setting.takes
                )));
            }
        }
    }
    (setting.get)(conn, at)
}

/// A bare `PRAGMA`: every setting with its value (as text), type, default, scope and
/// description.
pub(super) fn list(conn: &Client, at: Location) -> Result<Vec<Vec<Value>>> {
    SETTINGS
        .iter()
        .map(|s| {
            Ok(vec![
                Value::Text(s.name.into()),
                Value::Text(text_of((s.get)(conn, at)?)),
                Value::Text(s.ty.to_string()),
                Value::Text(s.default.into()),
                Value::Text(s.scope.name().into()),
                Value::Text(s.doc.into()),
            ])
        })
        .collect()
}

/// A setting's value as the text `PRAGMA name = …` takes back.
fn text_of(value: Value) -> String {
    match value {
        Value::Text(t) => t.to_string(),
        other => other.to_string(),
    }
}

/// The column names of `list`'s rows (every one TEXT).
pub(super) const LIST_COLUMNS: [&str; 6] = ["name", "value", "type", "default", "scope", "description"];

impl Client {
    /// `PRAGMA name [= value]` (`settings::SETTINGS`): sets the setting when given a
    /// value, and returns it as one row; a bare `PRAGMA` lists every setting.
    pub(super) fn pragma(
        &self,
        name: Option<&str>,
        value: Option<&str>,
        at: Location,
        replay: bool,
    ) -> Result<Outcome> {
        let Some(name) = name else {
            let columns = LIST_COLUMNS.map(|c| (c, DataType::Text));
            return Ok(Outcome::of_rows(&columns, list(self, at)?));
        };
        let current = pragma(self, name, value, at, replay)?;
        let name = name.to_ascii_lowercase();
        let ty = DataType::of(&current);
        Ok(Outcome::of_rows(&[(name.as_str(), ty)], vec![vec![current]]))
    }
}

/// The settings list of docs/language.md, as the table gives it.
#[cfg(test)]
fn docs_list() -> String {
    let mut out = String::from(
        "| setting | type | takes | at first | whose | what it does |\n|---|---|---|---|---|---|\n",
    );
    for s in SETTINGS {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            s.name,
            s.ty,
            s.takes,
            s.default,
            s.scope.name(),
            s.doc
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;

    /// docs/language.md's settings table is the one this file gives: run with
    /// `ECSQL_BLESS=1` to write it there after changing a setting.
    #[test]
    fn the_docs_list_the_settings_this_table_has() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/language.md");
        let docs = std::fs::read_to_string(path).unwrap();
        let (begin, end) = (
            "<!-- settings: made from src/engine/settings.rs -->\n",
            "<!-- end of settings -->",
        );
        let start = docs
            .find(begin)
            .expect("docs/language.md marks its settings table")
            + begin.len();
        let stop = start
            + docs[start..]
                .find(end)
                .expect("the settings table's end is marked");
        let want = docs_list();
        if docs[start..stop] != want {
            if std::env::var_os("ECSQL_BLESS").is_some() {
                std::fs::write(path, format!("{}{want}{}", &docs[..start], &docs[stop..])).unwrap();
            } else {
                panic!(
                    "docs/language.md's settings table differs from the settings (ECSQL_BLESS=1 writes it):\n{want}"
                );
            }
        }
    }

    #[test]
    fn every_setting_reads_as_its_type_and_takes_its_default_back() {
        let conn = Client::new(&Engine::new());
        for s in SETTINGS {
            let value = pragma(&conn, s.name, None, Location::default(), false).unwrap();
            assert_eq!(DataType::of(&value), s.ty, "{}", s.name);
            let text = text_of(value.clone());
            assert_eq!(
                pragma(&conn, s.name, Some(&text), Location::default(), false).unwrap(),
                value,
                "{}",
                s.name
            );
            // The default the docs give is what a new database has (but where it is the
            // machine's).
            if !s.default.contains("machine") {
                assert_eq!(
                    s.default.split(' ').next(),
                    Some(text.as_str()),
                    "{}'s default",
                    s.name
                );
            }
        }
        assert!(
            SETTINGS
                .iter()
                .find(|s| s.name == "threads")
                .unwrap()
                .takes
                .ends_with(&format!("to {MAX_THREADS}"))
        );
        assert!(find("tick").unwrap().takes.ends_with(&i64::MAX.to_string()));
    }
}
