//! BEGIN, COMMIT and ROLLBACK as a client runs them (the API's `Transaction` guard is
//! `connection::transaction`'s).
//!
//! Invariants:
//! - While a transaction holds the database, its connection is the only one that runs
//!   statements; the others wait (up to their busy timeout). One begun SERIALIZABLE or
//!   REPEATABLE READ (in-process, the default) holds it from BEGIN; one begun READ
//!   COMMITTED or READ UNCOMMITTED (a server's clients' default) from its first write:
//!   until then each of its statements reads what was committed before it began, beside
//!   the others, and ending it changes nothing but the prepared statements' cursors.
//! - A transaction begun READ ONLY runs no write (`StatementKind::writes`): each fails
//!   before it holds anything.
//! - ROLLBACK puts back the world, the schedule and the prepared statements' event
//!   cursors as they were at BEGIN; a file database's COMMIT journals the transaction
//!   first, and a COMMIT whose journal fails rolls back and fails.

use std::sync::atomic::Ordering;

use super::{Client, wait};
use crate::error::Result;
use crate::exec::{ExecError, ExecErrorKind, Outcome};
use crate::location::Location;
use crate::parse::{Isolation, TransactionModes};

/// A transaction a client has open: what its BEGIN asked, the connection's defaults
/// filled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Open {
    pub(crate) isolation: Isolation,
    pub(crate) read_only: bool,
    /// A statement other than SET, SHOW and PRAGMA has run in it: its isolation level
    /// (and READ WRITE) may no longer be set.
    pub(crate) queried: bool,
}

/// `Client::open`'s bit for `Open::queried`.
const QUERIED: u8 = 16;

impl Open {
    /// As `Client::open` keeps it (never 0).
    fn encode(self) -> u8 {
        1 | (self.isolation as u8) << 1 | u8::from(self.read_only) << 3 | u8::from(self.queried) << 4
    }

    fn decode(bits: u8) -> Option<Open> {
        if bits & 1 == 0 {
            return None;
        }
        Some(Open {
            isolation: isolation_of(bits >> 1 & 3),
            read_only: bits & 8 != 0,
            queried: bits & QUERIED != 0,
        })
    }

    /// Whether it holds the database from BEGIN (else from its first write).
    fn holds_at_begin(self) -> bool {
        self.isolation > Isolation::ReadCommitted
    }
}

/// The isolation level `Isolation as u8` gave.
pub(super) fn isolation_of(n: u8) -> Isolation {
    match n {
        0 => Isolation::ReadUncommitted,
        1 => Isolation::ReadCommitted,
        2 => Isolation::RepeatableRead,
        _ => Isolation::Serializable,
    }
}

impl Client {
    /// The transaction this client has open, if any.
    pub(crate) fn open_transaction(&self) -> Option<Open> {
        Open::decode(self.open.load(Ordering::SeqCst))
    }

    /// Sets the isolation level of a BEGIN that names none, below what the client SETs
    /// (`default_transaction_isolation`): a server's clients take READ COMMITTED, as
    /// PostgreSQL's do.
    #[cfg(feature = "server")]
    pub(crate) fn set_base_isolation(&self, level: Isolation) {
        self.base_isolation.store(level as u8, Ordering::Relaxed);
    }

    /// A write is about to run: refused in a READ ONLY transaction (and outside one under
    /// `default_transaction_read_only = on`); a READ COMMITTED one begins holding the
    /// database here.
    pub(super) fn before_write(&self, verb: &'static str, at: Location) -> Result<()> {
        self.refuse_read_only(verb, at)?;
        if self.open_transaction().is_some() && !self.holds_transaction() {
            self.hold(at)?;
        }
        Ok(())
    }

    /// Refuses a write where this client may not write: in a READ ONLY transaction, or
    /// outside one under `default_transaction_read_only = on` (a statement alone is a
    /// transaction of its own, as in PostgreSQL).
    pub(crate) fn refuse_read_only(&self, verb: &'static str, at: Location) -> Result<()> {
        let read_only = match self.open_transaction() {
            Some(open) => open.read_only,
            None => self.read_only_default.load(Ordering::Relaxed),
        };
        if read_only {
            return Err(ExecError::new(at, ExecErrorKind::ReadOnlyTransaction { verb }).into());
        }
        Ok(())
    }

    /// A statement runs in the open transaction (if any): from now on its isolation
    /// level is set.
    pub(super) fn mark_queried(&self) {
        if self.open.load(Ordering::Relaxed) != 0 {
            self.open.fetch_or(QUERIED, Ordering::SeqCst);
        }
    }

    /// `SET TRANSACTION …` inside a transaction: before its first query, another level
    /// (a stronger one than READ COMMITTED holds the database at once) or READ WRITE;
    /// READ ONLY at any time, refusing its writes from then on. Outside one it does
    /// nothing, as in PostgreSQL (which warns).
    pub(super) fn set_transaction(&self, modes: TransactionModes, at: Location) -> Result<()> {
        let Some(mut open) = self.open_transaction() else {
            return Ok(());
        };
        if open.queried && modes.isolation.is_some_and(|level| level != open.isolation) {
            return Err(ExecError::transaction(
                at,
                "SET TRANSACTION ISOLATION LEVEL must be called before any query: end the transaction and BEGIN ISOLATION LEVEL … for another",
            )
            .into());
        }
        if modes.read_only == Some(false) && open.read_only {
            let message = if open.queried {
                "transaction read-write mode must be set before any query: end the transaction and BEGIN READ WRITE to write"
            } else {
                "this transaction is READ ONLY: end it and BEGIN READ WRITE to write"
            };
            return Err(ExecError::transaction(at, message).into());
        }
        if let Some(level) = modes.isolation {
            open.isolation = level;
        }
        open.read_only |= modes.read_only == Some(true);
        if open.holds_at_begin() && !self.holds_transaction() {
            self.hold(at)?;
        }
        self.open.store(open.encode(), Ordering::SeqCst);
        Ok(())
    }

    /// COMMIT, or ROLLBACK (`undone`). A file database's COMMIT journals the transaction
    /// first: when that fails, the transaction is rolled back and COMMIT fails. A
    /// transaction that never held the database ends here (its prepared statements'
    /// cursors go back on ROLLBACK).
    pub(super) fn end(&self, undone: bool, at: Location) -> Result<Outcome> {
        if self.is_autocommit() {
            return Err(ExecError::transaction(at, "no transaction is open (BEGIN starts one)").into());
        }
        if !self.holds_transaction() {
            self.open.store(0, Ordering::SeqCst);
            self.end_readers_transaction(undone);
            self.end_settings(undone);
            return Ok(Outcome::default());
        }
        let mut state = self.write_state(at)?;
        let journaled = self.journal_end(&mut state, undone);
        let undone = undone || journaled.is_err();
        let ended = if undone {
            state.restores += 1;
            state.world.rollback()
        } else {
            state.world.commit()
        };
        if ended.is_err() {
            // The world's transaction was ended through with_world_mut: what it kept is
            // not what the journal says.
            self.unjournaled(&mut state);
        }
        state.end_schedule_transaction(undone);
        let unjournaled = state.unjournaled;
        drop(state);
        self.end_readers_transaction(undone);
        self.end_settings(undone);
        self.end_transaction();
        let written = match journaled {
            Ok(written) => written,
            Err(e) => {
                return Err(
                    ExecError::transaction(at, format!("the transaction was rolled back: {e}")).into(),
                );
            }
        };
        if let Err(e) = ended {
            let message = format!("{e} (the world's transaction was ended through with_world_mut)");
            return Err(ExecError::transaction(at, message).into());
        }
        self.make_durable(written, at)?;
        if unjournaled {
            self.keep_unjournaled(at)?;
        }
        Ok(Outcome::default())
    }

    /// The transaction ended: on ROLLBACK the prepared statements' cursors go back.
    pub(super) fn end_readers_transaction(&self, undone: bool) {
        let readers = std::mem::take(&mut *self.tx_readers.lock());
        if undone {
            for (weak, before) in readers {
                if let Some(cursors) = weak.upgrade() {
                    *cursors.lock() = before;
                }
            }
        }
    }

    /// BEGIN with `modes` (the connection's defaults where it names none).
    pub(super) fn begin(&self, modes: TransactionModes, at: Location) -> Result<Outcome> {
        // A transaction in the set-up would outlive it (its client goes when it ends).
        self.refuse_in_setup("BEGIN", at)?;
        if !self.is_autocommit() {
            return Err(already_open(at));
        }
        let open = Open {
            isolation: modes.isolation.unwrap_or_else(|| self.default_isolation()),
            read_only: modes
                .read_only
                .unwrap_or_else(|| self.read_only_default.load(Ordering::Relaxed)),
            queried: false,
        };
        if open.holds_at_begin() {
            self.hold(at)?;
        }
        self.tx_serial.fetch_add(1, Ordering::Relaxed);
        self.open.store(open.encode(), Ordering::SeqCst);
        Ok(Outcome::default())
    }

    /// The transaction begins holding the database: every other connection waits until
    /// it ends.
    fn hold(&self, at: Location) -> Result<()> {
        let mut state = self.write_state(at)?;
        if self.holds_transaction() {
            return Err(already_open(at));
        }
        self.checkpoint_if_behind(&mut state)?;
        if let Err(e) = state.world.begin() {
            let message = format!("{e} (one was begun through with_world_mut)");
            return Err(ExecError::transaction(at, message).into());
        }
        state.in_begin = true;
        state.schedule_image = None;
        let mut holder = self.engine.tx_lock.lock();
        *holder = wait::TxHolder {
            thread: Some(std::thread::current().id()),
            since: Some(std::time::Instant::now()),
        };
        self.engine.tx_owner.store(self.id, Ordering::SeqCst);
        Ok(())
    }
}

fn already_open(at: Location) -> crate::error::Error {
    ExecError::transaction(at, "a transaction is already open (COMMIT or ROLLBACK it first)").into()
}
