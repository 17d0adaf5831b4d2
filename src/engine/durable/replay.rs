//! Running a journal's records again on opening: each statement with the seed, write tick
//! and cursors it ran with, a transaction's as one, a tick's Rust systems from the set-up.
//!
//! Invariants:
//! - The last record, when written ahead of its statement, runs as a transaction and is
//!   cut off if it fails as statements fail; any other failure refuses the database.

use crate::engine::Client;
use crate::engine::journal::{Entry, Record, Step};
use crate::engine::systems::{TICK_DT_RECORD, TICK_RECORD};
use crate::error::{Error, Result};
use crate::location::Location;
use crate::parse;
use crate::plan::Tracking;
use crate::schedule::ScheduleError;

/// Whether a journaled statement's text is a TICK.
fn is_tick(text: &str) -> bool {
    text.trim_start()
        .get(..4)
        .is_some_and(|w| w.eq_ignore_ascii_case("TICK"))
}

/// A record that failed when run again: which step, why, and whether it failed the way a
/// statement fails (so that, written ahead and last, it may be cut off as never
/// acknowledged).
#[derive(Debug)]
pub(super) struct Failed {
    pub(super) statement: String,
    pub(super) why: String,
    cut: bool,
}

impl Failed {
    fn new(statement: &str, e: &Error) -> Box<Failed> {
        Box::new(Failed {
            statement: statement.to_owned(),
            why: e.to_string(),
            cut: true,
        })
    }
}

/// Statements run again from the journal, through the replaying connection's kept texts
/// (a prepared statement's record comes back many times, and texts that differ only in
/// constants share one plan).
pub(super) struct Replay;

impl Replay {
    /// Runs the last record again: kept when it runs (true), undone when it fails as a
    /// statement fails (false). A failure that says nothing of the statement (a Rust
    /// system missing or failing: the program may have changed) refuses.
    pub(super) fn run_last(&self, conn: &Client, record: &Record) -> std::result::Result<bool, Box<Failed>> {
        // One statement is atomic by itself: it runs as it first ran (a transaction
        // around it would lay its rows out as a transaction does, and the reopened
        // world would differ in its tables' order). A TICK of several ticks keeps those
        // before a failing one, so it runs inside a transaction, undone whole.
        if let [Step::Statement(entry)] = record.steps.as_slice()
            && !is_tick(&entry.text)
        {
            return match self.run(conn, record) {
                Ok(()) => Ok(true),
                Err(failed) if failed.cut => Ok(false),
                Err(failed) => Err(failed),
            };
        }
        let at = Location::default();
        conn.begin(crate::parse::TransactionModes::HOLDING, at)
            .map_err(|e| Failed::new("BEGIN", &e))?;
        let ran = self.run(conn, record);
        if ran.is_err() {
            // Closures the set-up gave systems this record made go back, for after.
            self.hand_back(conn, record);
        }
        conn.end(ran.is_err(), at)
            .map_err(|e| Failed::new("COMMIT", &e))?;
        match ran {
            Ok(()) => Ok(true),
            Err(failed) if failed.cut => Ok(false),
            Err(failed) => Err(failed),
        }
    }

    /// Runs a record written once its steps ran (a transaction's, a tick's) inside a
    /// transaction, as they ran: a world with an undo log open lays rows out as one
    /// without does not (an attach of many entities moves them one by one), and the
    /// reopened world must be the same to its tables' order.
    pub(super) fn run_committed(
        &self,
        conn: &Client,
        record: &Record,
    ) -> std::result::Result<(), Box<Failed>> {
        // Ticks run each inside a savepoint of their own, an undo log open whether a
        // transaction was or not: a tick's record (a TICK n writes one a tick) runs alone.
        if record
            .steps
            .iter()
            .all(|s| matches!(s, Step::Statement(e) if is_tick(&e.text)))
        {
            return self.run(conn, record);
        }
        let at = Location::default();
        conn.begin(crate::parse::TransactionModes::HOLDING, at)
            .map_err(|e| Failed::new("BEGIN", &e))?;
        let ran = self.run(conn, record);
        conn.end(ran.is_err(), at)
            .map_err(|e| Failed::new("COMMIT", &e))?;
        ran
    }

    /// The closures of the Rust systems `record` made, back to the set-up's pending ones.
    fn hand_back(&self, conn: &Client, record: &Record) {
        for step in &record.steps {
            if let Step::RustSystem { name, .. } = step
                && let Some((clauses, f)) = conn.engine.state.write().schedule.take_rust_closure(name)
            {
                conn.engine.pending_rust.lock().0.push((name.clone(), clauses, f));
            }
        }
    }

    /// Runs one record again; the error names the statement.
    pub(super) fn run(&self, conn: &Client, record: &Record) -> std::result::Result<(), Box<Failed>> {
        for step in &record.steps {
            match step {
                Step::Track(tracking, tick) => {
                    let what = match tracking {
                        Tracking::Changes(_) => "(change tracking turned on)",
                        Tracking::Removals(_) => "(removal logging turned on)",
                    };
                    let mut state = conn.engine.state.write();
                    state.world.tick_up_to(*tick);
                    if !tracking.is_on(&state.world) {
                        tracking
                            .start(&mut state.world)
                            .map_err(|e| Failed::new(what, &e.into()))?;
                    }
                }
                Step::Statement(entry) => {
                    // (Most statements ran no Rust system: nothing to look for.)
                    let have = match entry.rust_systems.is_empty() {
                        true => Vec::new(),
                        false => conn.engine.state.read().schedule.rust_systems(),
                    };
                    if let Some(missing) = entry
                        .rust_systems
                        .iter()
                        .find(|s| !have.iter().any(|h| h.eq_ignore_ascii_case(s)))
                    {
                        return Err(Box::new(Failed {
                            statement: entry.text.clone(),
                            why: format!(
                                "the tick ran the Rust system {missing}, which is not registered: open the database with Database::open_with and register it there"
                            ),
                            cut: false,
                        }));
                    }
                    self.entry(conn, entry).map_err(|e| {
                        let mut failed = Failed::new(&entry.text, &e);
                        // A Rust system that fails now may have run then: the program
                        // changed, and cutting would lose an acknowledged tick.
                        failed.cut = !matches!(&e, Error::Schedule(ScheduleError::System { place, .. }) if place.is_empty());
                        failed
                    })?
                }
                Step::RustSystem { name, clauses, tick } => {
                    conn.engine.state.write().world.tick_up_to(*tick);
                    // Its closure, if the set-up registered it.
                    let f = {
                        let mut pending = conn.engine.pending_rust.lock();
                        let i = pending
                            .0
                            .iter()
                            .position(|(n, _, _)| n.eq_ignore_ascii_case(name));
                        i.map(|i| pending.0.remove(i).2)
                    };
                    conn.make_rust_system(name, clauses, f, true)
                        .map_err(|e| Failed::new(&format!("(the Rust system {name} registered)"), &e))?;
                }
            }
        }
        Ok(())
    }

    fn entry(&self, conn: &Client, entry: &Entry) -> Result<()> {
        // A tick's record (most of a game's journal) runs as a tick, its text not looked
        // up: it always reads the same, its count and dt its parameters.
        if entry.reader.is_none() && entry.params.named.is_empty() {
            match (entry.text.as_str(), entry.params.positional.as_slice()) {
                (TICK_RECORD, [count]) => return conn.replay_tick(count, None, entry.tick),
                (TICK_DT_RECORD, [count, dt]) => {
                    return conn.replay_tick(count, Some(dt), entry.tick);
                }
                _ => {}
            }
        }
        let text = conn.text(&entry.text, &entry.params)?;
        // A Rust system dropped here hands its closure back to the set-up's pending ones:
        // the set-up registers it, so it is made again after the journal, as it would be
        // had a checkpoint come between.
        let dropped = match &text.statement().kind {
            parse::StatementKind::DropSystem { name, .. } => conn
                .engine
                .state
                .write()
                .schedule
                .take_rust_closure(&name.value)
                .map(|(clauses, f)| (name.value.to_string(), clauses, f)),
            _ => None,
        };
        conn.engine.state.write().world.tick_up_to(entry.tick);
        let ran = conn.run_replayed(entry, &text);
        if let Some((name, clauses, f)) = dropped {
            match &ran {
                Ok(_) => conn.engine.pending_rust.lock().0.push((name, clauses, f)),
                Err(_) => drop(conn.engine.state.write().schedule.fill_rust_system(&name, f)),
            }
        }
        ran.map(drop)
    }
}
