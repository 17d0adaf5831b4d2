//! Statements given as text (`execute`, `query_row`, a script's statement, a journal's
//! replayed statement): found among the connection's kept texts (`cached`), or parsed
//! and kept, then run with the plan and table lists kept beside them.
//!
//! Invariants:
//! - A kept statement in use (a statement run from inside a run of the same text) is not
//!   shared: the inner run plans with its own slot.
//! - A statement parsed as beginning at line 1, column 1 and run from another place has
//!   every error moved there (`Error::move_to`), a wait for the lock's included.
//! - A shape's statement that fails to plan runs again as its text writes it, so the
//!   error a user sees is the text's own; any other error of a run for a text of the
//!   shape is moved to the places of that text, whose literals may be of other widths.

use std::cell::RefCell;
use std::sync::Arc;

use parking_lot::Mutex;

use super::run::RunContext;
use super::{Client, cached, journal};
use crate::error::{Error, Result};
use crate::exec::{Chunk, Outcome};
use crate::location::Location;
use crate::parse;
use crate::plan::ParamValues;

/// What hears each statement of a script as it runs: the statement, its text as written
/// when the script is that one statement, its outcome; false stops the script.
pub(crate) type Each<'e> = dyn FnMut(&parse::Statement, Option<&str>, Result<Outcome>) -> bool + 'e;

impl Client {
    /// Runs every statement of a script (`sql`, beginning at `start` in its file, each
    /// statement given `params`) and hands each result to `each` with its statement and,
    /// when the script is that one statement, its text as written; stops when `each`
    /// returns false. A syntax error anywhere stops the script before it runs.
    pub(crate) fn run_script(
        &self,
        sql: &str,
        start: Location,
        params: &ParamValues,
        each: &mut Each<'_>,
    ) -> Result<()> {
        let _call = self.enter();
        // One statement's text is the script itself; printing a statement back (a dump's
        // thousand rows of values) cost a seventh of reading one.
        let alone = sql.trim().trim_end_matches(';').trim_end();
        // A statement is the same text however far it stands from the last one's end.
        let (sql, start) = parse::skip_space(sql, start);
        let shape = match self.kept_text(sql, start, params) {
            Ok(text) => {
                let ran = self.run_text(&text, params, sql, start, alone);
                each(text.statement(), Some(alone), ran);
                return Ok(());
            }
            Err(shape) => shape,
        };
        let mut statements = parse::parse_at(sql, start)?;
        if statements.len() == 1
            && let Some(statement) = statements.pop()
        {
            let text = self.keep_text(sql, start, Box::new(statement), shape);
            let ran = self.run_text(&text, params, sql, start, alone);
            each(text.statement(), Some(alone), ran);
            return Ok(());
        }
        for statement in statements {
            let ran = self
                .run(&statement, params, RunContext::default())
                .map_err(Error::from);
            if !each(&statement, None, ran) {
                break;
            }
        }
        Ok(())
    }

    /// Runs every statement of a script, in order, stopping at the first error.
    pub(crate) fn execute_batch(&self, sql: &str) -> Result<()> {
        let _call = self.enter();
        for statement in parse::parse(sql)? {
            self.run(&statement, &ParamValues::default(), RunContext::default())?;
        }
        Ok(())
    }

    /// `sql`, one statement given as text, run with `values` (its text kept, or its
    /// shape's statement, as `text` finds them): `check` looks the statement over before
    /// it runs, and `then` makes the caller's answer of its outcome. A point read writes
    /// its row into `spare`'s memory (the caller's last result), when given.
    pub(crate) fn run_one<T>(
        &self,
        sql: &str,
        values: &ParamValues,
        spare: Option<&RefCell<Option<Chunk>>>,
        check: impl FnOnce(&parse::Statement) -> Result<()>,
        then: impl FnOnce(&parse::Statement, Outcome) -> Result<T>,
    ) -> Result<T> {
        let text = self.text(sql, values)?;
        check(text.statement())?;
        let _call = self.enter();
        let outcome = match self.point_read_text(&text, values, spare) {
            Some(read) => read,
            None => {
                let base = RunContext {
                    spare,
                    ..RunContext::default()
                };
                let written = sql.trim();
                self.run_text_with(&text, values, sql, Location::new(1, 1), written, base)?
            }
        };
        then(text.statement(), outcome)
    }

    /// A kept text's (or its shape's) kept point read, answered past the statement
    /// machinery as a prepared one is (`Client::point_read`), its row in `spare`'s
    /// memory (or new memory); `None` where that does not answer (the caller then runs
    /// the text).
    fn point_read_text(
        &self,
        text: &cached::Text,
        values: &ParamValues,
        spare: Option<&RefCell<Option<Chunk>>>,
    ) -> Option<Outcome> {
        let (slots, params) = match text {
            cached::Text::Kept(kept) => (&kept.slots, values),
            // Run as the shape's statement with the text's values (`run_text_with`).
            cached::Text::Lifted(kept, lifted, _) => (&kept.slots, lifted),
            cached::Text::Once(_) => return None,
        };
        let slots = slots.try_lock()?;
        let rows = spare.and_then(|s| s.try_borrow_mut().ok()?.take());
        let (mut rows, mut columns) = (rows.unwrap_or_default(), None);
        let read = self.point_read_slot(&slots.plan, params, &mut rows, &mut columns);
        match columns.filter(|_| read) {
            Some(columns) => Some(Outcome::rows(columns, rows)),
            None => {
                // Not answered here: the memory goes on to the run that answers.
                if let Some(mut spare) = spare.and_then(|s| s.try_borrow_mut().ok()) {
                    *spare = Some(rows);
                }
                None
            }
        }
    }

    /// `execute`'s do), with the seed, write tick and cursors it ran with.
    pub(super) fn run_replayed(&self, entry: &journal::Entry, text: &cached::Text) -> Result<Outcome> {
        let reader = entry.reader.clone().map(|c| Arc::new(Mutex::new(c)));
        let base = RunContext {
            reader: reader.as_ref(),
            seed: Some(entry.seed),
            replay: true,
            ..RunContext::default()
        };
        let sql = entry.text.as_str();
        self.run_text_with(text, &entry.params, sql, Location::new(1, 1), sql, base)
    }

    /// `sql`, one statement, from the connection's kept texts when it was given lately
    /// (or its shape was, when `params` gives no values).
    pub(super) fn text(&self, sql: &str, params: &ParamValues) -> Result<cached::Text> {
        let start = Location::new(1, 1);
        let shape = match self.kept_text(sql, start, params) {
            Ok(text) => return Ok(text),
            Err(shape) => shape,
        };
        let statement = parse::parse_one_boxed(sql)?;
        Ok(self.keep_text(sql, start, statement, shape))
    }

    /// The text kept for `sql` (starting at `start`), or the statement kept for its
    /// shape with `sql`'s values; else `sql`'s shape, when its constants may be lifted
    /// (`params` gives no values, and `PRAGMA parameterize` is not off).
    pub(super) fn kept_text(
        &self,
        sql: &str,
        start: Location,
        params: &ParamValues,
    ) -> Result<cached::Text, Option<parse::Shape>> {
        let gives_none = params.positional.is_empty() && params.named.is_empty();
        self.texts.lock().find(sql, start, gives_none)
    }

    /// `statement`, parsed from `sql` (of shape `shape`), kept for its shape with its
    /// constants lifted, or for its text, as the connection keeps them.
    pub(super) fn keep_text(
        &self,
        sql: &str,
        start: Location,
        statement: Box<parse::Statement>,
        shape: Option<parse::Shape>,
    ) -> cached::Text {
        self.texts.lock().keep(sql, start, statement, shape)
    }

    /// Runs a statement given as text (`sql`, starting at `start`; `written`: the text
    /// the journal keeps when it runs as written), with the plan and table lists its
    /// text (or its shape) keeps, unless a run of the same text is under way (a
    /// statement run from inside it): then with its own. A shape's statement that fails
    /// to plan runs as `sql` writes it instead, so that the error is the text's own.
    pub(super) fn run_text(
        &self,
        text: &cached::Text,
        params: &ParamValues,
        sql: &str,
        start: Location,
        written: &str,
    ) -> Result<Outcome> {
        self.run_text_with(text, params, sql, start, written, RunContext::default())
    }

    /// `run_text`, with what `base` brings (a replayed statement's seed and cursors).
    pub(super) fn run_text_with(
        &self,
        text: &cached::Text,
        params: &ParamValues,
        sql: &str,
        start: Location,
        written: &str,
        base: RunContext<'_>,
    ) -> Result<Outcome> {
        let with = RunContext {
            text: Some(written),
            ..base
        };
        match text {
            cached::Text::Lifted(kept, values, literals) => {
                // Journaled as the shape's statement with this text's values.
                let as_shape = RunContext {
                    text: Some(&kept.text),
                    ..with
                };
                let ran = self
                    .run_kept(&kept.lifted.statement, &kept.slots, values, as_shape, None)
                    .map_err(|mut e| {
                        // From the places of the text the statement was parsed from to
                        // this one's, whose literals may be of other widths.
                        e.relocate(|at| parse::place_in(at, &kept.literals, literals).moved_to(start));
                        e
                    });
                let Err(Error::Plan(_)) = ran else {
                    return ran;
                };
                // Planned before anything ran: nothing was done. As written, the text
                // gives its own error, or plans where its shape's statement did not.
                let mut statements = parse::parse_at(sql, start)?;
                let (Some(statement), true) = (statements.pop(), statements.is_empty()) else {
                    return ran;
                };
                let again = self.run(&statement, params, with).map_err(Error::from);
                if again.is_ok() {
                    kept.refuse();
                }
                again
            }
            cached::Text::Once(statement) => self.run(statement, params, with).map_err(Error::from),
            cached::Text::Kept(kept) => {
                let moved = text.at_origin().then_some(start);
                self.run_kept(&kept.statement, &kept.slots, params, with, moved)
            }
        }
    }

    /// Runs a kept statement with the plan and table lists kept beside it, or with its own
    /// when a run of it is under way (a statement run from inside it). `moved`: where the
    /// statement's text begins, when it was parsed as beginning at line 1, column 1 (its
    /// error is moved there).
    pub(super) fn run_kept(
        &self,
        statement: &parse::Statement,
        slots: &Mutex<cached::Slots>,
        params: &ParamValues,
        with: RunContext<'_>,
        moved: Option<Location>,
    ) -> Result<Outcome> {
        let placed = |mut e: Box<Error>| {
            if let Some(start) = moved {
                e.move_to(start);
            }
            Error::from(e)
        };
        let Some(slots) = slots.try_lock() else {
            return self.run(statement, params, with).map_err(placed);
        };
        let ran = self.run(
            statement,
            params,
            RunContext {
                cache: Some(&slots.tables),
                plans: Some(&slots.plan),
                ..with
            },
        );
        // A subquery's result is not kept waiting for the next run of the text.
        slots.plan.borrow_mut().forget_results();
        ran.map_err(placed)
    }
}
