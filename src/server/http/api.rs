//! The JSON API's answers, each computed on a thread that may wait (never the server's
//! runtime), with a `Connection` of the request's own under the clients' limits.
//!
//! Invariants:
//! - One request runs one statement, committed on its own: no transaction outlives a
//!   request. An answer that reads several things (the catalog, the systems, an entity)
//!   reads them inside one transaction that holds the database, so it is one whole tick:
//!   the server's clock and every client wait for it, and it holds the database no longer
//!   than its reads take.
//! - A statement reaches the server's files only as the PostgreSQL side allows it
//!   (`--files`), and settings only the connection's own (the same checks, the same
//!   refusals).
//! - A result larger than a page is kept for its next pages (`Kept`): at most
//!   `KEPT_RESULTS` results and `KEPT_BYTES` of values, each forgotten `KEPT_FOR` after
//!   its last page was read, the least recently read first when full.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::json::{push_cell, push_int, push_key, push_named_types, push_objects, push_rows, push_value};
use crate::parse::{FileName, StatementKind};
use crate::server::files::Files;
use crate::transfer::json::push_string;
use crate::{Connection, Error, Rows, Value};

/// An answer: its HTTP status and its JSON body.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) body: String,
}

impl Answer {
    fn ok(body: String) -> Answer {
        Answer { status: 200, body }
    }

    /// An error answer: `{"error": {"message": …}}`.
    pub(super) fn error(status: u16, message: &str) -> Answer {
        let mut body = String::from("{\"error\":{\"message\":");
        push_string(&mut body, message);
        body.push_str("}}");
        Answer { status, body }
    }

    /// A statement's error, with its SQLSTATE and where in `text` it is: `position` (the
    /// character, from 1, as PostgreSQL's), `line` and `column`.
    pub(super) fn statement_error(e: &Error, text: &str) -> Answer {
        let info = crate::server::types::error_info(e, text);
        let mut body = String::from("{\"error\":{\"message\":");
        push_string(&mut body, &info.message);
        body.push_str(",\"sqlstate\":");
        push_string(&mut body, &info.code);
        if let Some(at) = e.location() {
            if let Some(p) = crate::server::types::position(text, at) {
                body.push_str(",\"position\":");
                push_int(&mut body, p as i64);
            }
            body.push_str(",\"line\":");
            push_int(&mut body, i64::from(at.line));
            body.push_str(",\"column\":");
            push_int(&mut body, i64::from(at.column));
        }
        body.push_str("}}");
        let status = if info.code == "57014" || info.code.starts_with("53") {
            503
        } else {
            400
        };
        Answer { status, body }
    }

    fn refused(code: &str, message: &str) -> Answer {
        let mut body = String::from("{\"error\":{\"message\":");
        push_string(&mut body, message);
        body.push_str(",\"sqlstate\":");
        push_string(&mut body, code);
        body.push_str("}}");
        Answer { status: 400, body }
    }
}

/// What a request's statements may reach, and the results kept for their next pages.
pub(super) struct Api {
    pub(super) files: Option<Arc<Files>>,
    pub(super) kept: Mutex<Kept>,
}

/// The rows a page has unless the request says: 1,000.
pub(super) const PAGE_ROWS: usize = 1000;
/// The most rows a request may ask a page to have.
pub(super) const MAX_PAGE_ROWS: usize = 100_000;
/// The most results kept for their next pages, and the most bytes of values they hold.
const KEPT_RESULTS: usize = 64;
const KEPT_BYTES: usize = 256 << 20;
/// How long a kept result waits for its next page to be read.
const KEPT_FOR: Duration = Duration::from_secs(300);

/// Results kept for their next pages.
#[derive(Default)]
pub(super) struct Kept {
    next_id: u64,
    results: HashMap<u64, KeptResult>,
    bytes: usize,
}

struct KeptResult {
    rows: Arc<Rows>,
    verb: &'static str,
    bytes: usize,
    used: Instant,
}

impl Kept {
    fn keep(&mut self, rows: Arc<Rows>, verb: &'static str) -> Option<u64> {
        let (chunk, _) = rows.unread();
        let bytes: usize = chunk.columns.iter().map(crate::vector::Vector::bytes).sum();
        if bytes > KEPT_BYTES {
            return None;
        }
        let now = Instant::now();
        self.results.retain(|_, r| now.duration_since(r.used) < KEPT_FOR);
        self.bytes = self.results.values().map(|r| r.bytes).sum();
        while self.results.len() >= KEPT_RESULTS || self.bytes + bytes > KEPT_BYTES {
            let Some((&oldest, _)) = self.results.iter().min_by_key(|(_, r)| r.used) else {
                break;
            };
            if let Some(r) = self.results.remove(&oldest) {
                self.bytes -= r.bytes;
            }
        }
        self.next_id += 1;
        self.bytes += bytes;
        self.results.insert(
            self.next_id,
            KeptResult {
                rows,
                verb,
                bytes,
                used: now,
            },
        );
        Some(self.next_id)
    }

    fn get(&mut self, id: u64) -> Option<(Arc<Rows>, &'static str)> {
        let now = Instant::now();
        let r = self.results.get_mut(&id)?;
        if now.duration_since(r.used) >= KEPT_FOR {
            let bytes = r.bytes;
            self.results.remove(&id);
            self.bytes -= bytes;
            return None;
        }
        r.used = now;
        Some((Arc::clone(&r.rows), r.verb))
    }
}

impl Api {
    /// `POST /api/query`: runs `sql` with `params` and answers its first page.
    pub(super) fn query(
        &self,
        conn: &Connection,
        sql: &str,
        params: crate::ParamValues,
        page: usize,
    ) -> Answer {
        let mut statement = match conn.prepare(sql) {
            Ok(statement) => statement,
            Err(e) => return Answer::statement_error(&e, sql),
        };
        if let Some(refused) = self.refused(statement.parsed(), sql) {
            return refused;
        }
        let placed = self
            .files
            .as_deref()
            .and_then(|f| f.place(statement.parsed()))
            .and_then(Result::ok)
            .map(|placed| placed.to_string());
        let ran = match &placed {
            Some(text) => conn.prepare(text).and_then(|mut s| s.run_any(params)),
            None => statement.run_any(params),
        };
        let result = match ran {
            Ok(result) => result,
            Err(e) => return Answer::statement_error(&e, sql),
        };
        let Some(rows) = result.rows else {
            let mut body = String::from("{\"verb\":");
            push_string(&mut body, result.verb);
            body.push_str(",\"affected\":");
            push_int(&mut body, i64::try_from(result.affected).unwrap_or(i64::MAX));
            body.push_str(",\"columns\":[],\"rows\":[],\"row_count\":0,\"offset\":0,\"next\":null}");
            return Answer::ok(body);
        };
        let rows = Arc::new(rows);
        let total = rows.remaining();
        let id = if total > page {
            self.kept.lock().keep(Arc::clone(&rows), result.verb)
        } else {
            None
        };
        if total > page && id.is_none() {
            return Answer::refused(
                "54000",
                &format!(
                    "the result holds {total} rows, more than a page of {page}, and too many bytes to keep for the pages after it: ask for fewer rows (LIMIT) or a larger page (page_size, at most {MAX_PAGE_ROWS})"
                ),
            );
        }
        Answer::ok(page_of(&rows, result.verb, result.affected, id, 0, page))
    }

    /// `GET /api/result/{id}?offset=…&page_size=…`: a kept result's page.
    pub(super) fn page(&self, id: u64, offset: usize, page: usize) -> Answer {
        let Some((rows, verb)) = self.kept.lock().get(id) else {
            return Answer::error(
                404,
                &format!(
                    "no result {id}: a result is kept for {} s after its last page was read, and while no more than {KEPT_RESULTS} others are newer; run the statement again",
                    KEPT_FOR.as_secs()
                ),
            );
        };
        Answer::ok(page_of(&rows, verb, 0, Some(id), offset, page))
    }

    /// The statements a request may not run, and why.
    fn refused(&self, statement: &crate::parse::Statement, text: &str) -> Option<Answer> {
        let why = match &statement.kind {
            StatementKind::Begin(_) | StatementKind::Commit | StatementKind::Rollback => Some(
                "each request over HTTP is one statement, committed on its own: a transaction needs a connection that stays (the PostgreSQL side), or one statement that does all of it",
            ),
            StatementKind::Subscribe(_) | StatementKind::CopySubscribe { .. } => {
                Some("a live query over HTTP is a stream of events: GET /api/subscribe?sql=…")
            }
            StatementKind::CopyTo {
                path: FileName::Stdout,
                ..
            }
            | StatementKind::CopyFrom {
                path: FileName::Stdin,
                ..
            } => Some(
                "COPY to STDOUT or from STDIN needs the PostgreSQL side's COPY; over HTTP, a query's rows come in pages",
            ),
            _ => None,
        };
        if let Some(why) = why {
            return Some(Answer::refused("0A000", why));
        }
        crate::server::client::refused(std::slice::from_ref(statement), text, self.files.as_deref())
            .map(|info| Answer::refused(&info.code, &info.message))
    }
}

/// A page of `rows`: rows `offset..offset + page`, with the columns, the whole count and
/// where the next page is.
fn page_of(rows: &Rows, verb: &str, affected: usize, id: Option<u64>, offset: usize, page: usize) -> String {
    let (chunk, first) = rows.unread();
    let total = chunk.len - first;
    let from = first + offset.min(total);
    let to = (from + page).min(chunk.len);
    let mut body = String::with_capacity(64 + (to - from) * 16);
    body.push_str("{\"verb\":");
    push_string(&mut body, verb);
    body.push_str(",\"affected\":");
    push_int(&mut body, i64::try_from(affected).unwrap_or(i64::MAX));
    body.push_str(",\"columns\":");
    push_named_types(
        &mut body,
        rows.column_names().into_iter().zip(rows.column_types()),
    );
    body.push_str(",\"rows\":");
    push_rows(&mut body, chunk, from, to);
    body.push_str(",\"row_count\":");
    push_int(&mut body, total as i64);
    body.push_str(",\"offset\":");
    push_int(&mut body, (from - first) as i64);
    body.push_str(",\"next\":");
    match id {
        Some(id) if to < chunk.len => {
            push_string(
                &mut body,
                &format!("/api/result/{id}?offset={}&page_size={page}", to - first),
            );
        }
        _ => body.push_str("null"),
    }
    body.push('}');
    body
}

/// Runs `f` inside a read-only transaction that holds the database from its start, so
/// that what it reads is one whole tick.
fn frame(conn: &Connection, f: impl FnOnce(&Connection) -> Result<String, Answer>) -> Answer {
    const BEGIN: &str = "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY";
    if let Err(e) = conn.execute(BEGIN, ()) {
        return Answer::statement_error(&e, BEGIN);
    }
    let answer = f(conn);
    // A commit of nothing written (a rollback would make every plan's table cache
    // start again).
    let _ = conn.execute("COMMIT", ());
    match answer {
        Ok(body) => Answer::ok(body),
        Err(answer) => answer,
    }
}

/// Runs `sql` (one of the API's own statements): its rows.
fn rows_of(conn: &Connection, sql: &str) -> Result<Rows, Answer> {
    let mut statement = conn.prepare(sql).map_err(|e| Answer::statement_error(&e, sql))?;
    statement.query(()).map_err(|e| Answer::statement_error(&e, sql))
}

/// Appends `"key":[{…}, …]`: the rows of `sql` as objects.
fn push_show(body: &mut String, conn: &Connection, key: &str, sql: &str) -> Result<(), Answer> {
    let rows = rows_of(conn, sql)?;
    let names = rows.column_names();
    let (chunk, first) = rows.unread();
    push_key(body, key);
    push_objects(body, &names, chunk, first, chunk.len);
    Ok(())
}

/// Appends `"tick":n` (the clock's tick, as `tick()` reads it).
fn push_tick(body: &mut String, conn: &Connection) -> Result<(), Answer> {
    let tick: i64 = conn
        .query_row("PRAGMA tick", (), |r| r.get(0))
        .map_err(|e| Answer::statement_error(&e, "PRAGMA tick"))?;
    push_key(body, "tick");
    push_int(body, tick);
    Ok(())
}

/// `GET /api/catalog`: components (with their fields' names and types, kind and
/// entities), events (with their fields), systems, the phases that hold them, and
/// indexes, as of one tick.
pub(super) fn catalog(conn: &Connection) -> Answer {
    frame(conn, |conn| {
        let mut body = String::from("{");
        push_tick(&mut body, conn)?;
        body.push(',');
        // Each component's fields from the world; its kind and entity count as SHOW
        // COMPONENTS gives them.
        let shown = rows_of(conn, "SHOW COMPONENTS")?;
        let (chunk, first) = shown.unread();
        let fields = conn
            .with_world(|world| {
                let mut by_name: HashMap<String, String> = HashMap::new();
                for c in world.components() {
                    let mut out = String::new();
                    push_named_types(&mut out, c.fields().iter().map(|f| (f.name(), f.ty())));
                    by_name.insert(c.name().to_owned(), out);
                }
                let mut events = String::from("[");
                for (i, e) in world.events().enumerate() {
                    if i > 0 {
                        events.push(',');
                    }
                    events.push_str("{\"name\":");
                    push_string(&mut events, e.name());
                    events.push_str(",\"rows\":");
                    push_int(&mut events, e.len() as i64);
                    events.push_str(",\"fields\":");
                    push_named_types(&mut events, e.fields().iter().map(|f| (f.name(), f.ty())));
                    events.push('}');
                }
                events.push(']');
                (by_name, events)
            })
            .map_err(|e| Answer::statement_error(&e, ""))?;
        let (fields, events) = fields;
        body.push_str("\"components\":[");
        for row in first..chunk.len {
            if row > first {
                body.push(',');
            }
            let name = chunk.columns[0].get(row);
            let Value::Text(name) = name else { continue };
            body.push_str("{\"name\":");
            push_string(&mut body, &name);
            body.push_str(",\"kind\":");
            push_cell(&mut body, &chunk.columns[1], row);
            body.push_str(",\"entities\":");
            push_cell(&mut body, &chunk.columns[3], row);
            body.push_str(",\"fields\":");
            body.push_str(fields.get(&name).map_or("[]", String::as_str));
            body.push('}');
        }
        body.push_str("],\"events\":");
        body.push_str(&events);
        body.push(',');
        push_show(&mut body, conn, "systems", "SHOW SYSTEMS")?;
        // The phases that hold systems, in run order.
        let systems = rows_of(conn, "SHOW SYSTEMS")?;
        let mut phases: Vec<String> = Vec::new();
        for row in systems {
            let phase: String = row
                .and_then(|r| r.get(1))
                .map_err(|e| Answer::statement_error(&e, ""))?;
            if phases.last() != Some(&phase) {
                phases.push(phase);
            }
        }
        body.push_str(",\"phases\":[");
        for (i, p) in phases.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            push_string(&mut body, p);
        }
        body.push_str("],");
        push_show(&mut body, conn, "indexes", "SHOW INDEXES")?;
        body.push('}');
        Ok(body)
    })
}

/// `GET /api/systems`: each system as SHOW SYSTEMS gives it, and its recent runs (`[tick,
/// ms, rows]`, oldest first), as of one tick.
pub(super) fn systems(conn: &Connection) -> Answer {
    frame(conn, |conn| {
        let mut body = String::from("{");
        push_tick(&mut body, conn)?;
        body.push(',');
        push_show(&mut body, conn, "systems", "SHOW SYSTEMS")?;
        body.push_str(",\"runs\":{");
        let runs = rows_of(conn, "SHOW SYSTEM RUNS")?;
        let (chunk, first) = runs.unread();
        let mut current: Option<Value> = None;
        for row in first..chunk.len {
            let name = chunk.columns[0].get(row);
            if current.as_ref() != Some(&name) {
                if current.is_some() {
                    body.push_str("],");
                }
                push_value(&mut body, &name);
                body.push_str(":[");
                current = Some(name);
            } else {
                body.push(',');
            }
            body.push('[');
            for c in 1..4 {
                if c > 1 {
                    body.push(',');
                }
                push_cell(&mut body, &chunk.columns[c], row);
            }
            body.push(']');
        }
        if current.is_some() {
            body.push(']');
        }
        body.push_str("}}");
        Ok(body)
    })
}

/// `GET /api/entity/{id}`: the entity's components, each with its fields' names, types
/// and values, as of one tick.
pub(super) fn entity(conn: &Connection, id: u64) -> Answer {
    frame(conn, |conn| {
        let mut body = String::from("{");
        push_tick(&mut body, conn)?;
        body.push_str(",\"id\":");
        push_int(&mut body, i64::try_from(id).unwrap_or(i64::MAX));
        let found = conn
            .with_world(|world| {
                let entity = crate::Entity::from_bits(id).filter(|e| world.contains(*e))?;
                let mut out = String::from(",\"components\":[");
                let components = world.components_of(entity).ok()?;
                let mut named: Vec<(&str, crate::ComponentId)> = components
                    .iter()
                    .filter_map(|&c| world.component(c).ok().map(|d| (d.name(), c)))
                    .collect();
                named.sort_unstable();
                for (i, (name, c)) in named.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str("{\"name\":");
                    push_string(&mut out, name);
                    out.push_str(",\"fields\":[");
                    let def = world.component(c).ok()?;
                    let values = world.get_component(entity, c).ok()?;
                    for (k, (f, v)) in def.fields().iter().zip(&values).enumerate() {
                        if k > 0 {
                            out.push(',');
                        }
                        out.push_str("{\"name\":");
                        push_string(&mut out, f.name());
                        out.push_str(",\"type\":");
                        push_string(&mut out, &f.ty().to_string());
                        out.push_str(",\"value\":");
                        push_value(&mut out, v);
                        out.push('}');
                    }
                    out.push_str("]}");
                }
                out.push(']');
                Some(out)
            })
            .map_err(|e| Answer::statement_error(&e, ""))?;
        match found {
            Some(components) => {
                body.push_str(&components);
                body.push('}');
                Ok(body)
            }
            None => Err(Answer::error(
                404,
                &format!("no entity {id}: it was despawned, or never spawned"),
            )),
        }
    })
}

/// `GET /api/clock`: the tick, its dt, and what the server's own clock has done.
pub(super) fn clock(conn: &Connection, rate: Option<f64>, ticks: &crate::server::Ticks) -> Answer {
    frame(conn, |conn| {
        let mut body = String::from("{");
        push_tick(&mut body, conn)?;
        let dt: f64 = conn
            .query_row("PRAGMA delta_time", (), |r| r.get(0))
            .map_err(|e| Answer::statement_error(&e, "PRAGMA delta_time"))?;
        body.push_str(",\"delta_time\":");
        push_value(&mut body, &Value::Float(dt));
        body.push_str(",\"tick_rate\":");
        match rate {
            Some(rate) => push_value(&mut body, &Value::Float(rate)),
            None => body.push_str("null"),
        }
        body.push_str(",\"ticks_run\":");
        push_int(&mut body, i64::try_from(ticks.ran).unwrap_or(i64::MAX));
        body.push_str(",\"ticks_failed\":");
        push_int(&mut body, i64::try_from(ticks.failed).unwrap_or(i64::MAX));
        body.push_str(",\"last_error\":");
        match &ticks.last_error {
            Some(e) => push_string(&mut body, e),
            None => body.push_str("null"),
        }
        body.push('}');
        Ok(body)
    })
}
