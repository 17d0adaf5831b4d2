//! BEGIN, COMMIT and ROLLBACK, and `Transaction`, rusqlite's guard over them.
//!
//! Invariants:
//! - While a transaction is open, its connection is the only one that runs statements;
//!   the others wait (up to their busy timeout).
//! - ROLLBACK puts back the world, the schedule and the prepared statements' event
//!   cursors as they were at BEGIN; a file database's COMMIT journals the transaction
//!   first, and a COMMIT whose journal fails rolls back and fails.

use std::sync::atomic::Ordering;

use super::{Connection, wait};
use crate::error::Result;
use crate::exec::{ExecError, Outcome};
use crate::location::Location;

impl Connection {
    /// Begins a transaction, as rusqlite's `transaction()`: `commit` keeps it, `rollback`
    /// (or dropping the guard, as an early `?` return does) undoes it.
    ///
    /// ```
    /// # use ecsql::Database;
    /// let conn = Database::open_in_memory().connect();
    /// conn.execute("CREATE COMPONENT Gold (n INT)", ())?;
    /// {
    ///     let tx = conn.transaction()?;
    ///     tx.execute("SPAWN Gold(10)", ())?;
    ///     tx.commit()?;
    /// }
    /// {
    ///     let tx = conn.transaction()?;
    ///     tx.execute("SPAWN Gold(99)", ())?;
    ///     // Dropped without commit: undone.
    /// }
    /// assert_eq!(conn.query_row("SELECT sum(n) FROM Gold", (), |r| r.get::<_, i64>(0))?, 10);
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn transaction(&self) -> Result<Transaction<'_>> {
        self.execute("BEGIN", ())?;
        Ok(Transaction {
            conn: self,
            open: true,
            serial: self.tx_serial.load(Ordering::Relaxed),
        })
    }

    /// COMMIT, or ROLLBACK (`undone`). A file database's COMMIT journals the transaction
    /// first: when that fails, the transaction is rolled back and COMMIT fails.
    pub(super) fn end(&self, undone: bool, at: Location) -> Result<Outcome> {
        if self.is_autocommit() {
            return Err(ExecError::Transaction {
                message: "no transaction is open (BEGIN starts one)".into(),
                at,
            }
            .into());
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
        self.end_transaction();
        let written = match journaled {
            Ok(written) => written,
            Err(e) => {
                return Err(ExecError::Transaction {
                    message: format!("the transaction was rolled back: {e}"),
                    at,
                }
                .into());
            }
        };
        if let Err(e) = ended {
            let message = format!("{e} (the world's transaction was ended through with_world_mut)");
            return Err(ExecError::Transaction { message, at }.into());
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

    pub(super) fn begin(&self, at: Location) -> Result<Outcome> {
        let mut state = self.write_state(at)?;
        if !self.is_autocommit() {
            return Err(ExecError::Transaction {
                message: "a transaction is already open (COMMIT or ROLLBACK it first)".into(),
                at,
            }
            .into());
        }
        self.checkpoint_if_behind(&mut state)?;
        if let Err(e) = state.world.begin() {
            let message = format!("{e} (one was begun through with_world_mut)");
            return Err(ExecError::Transaction { message, at }.into());
        }
        state.in_begin = true;
        state.schedule_image = None;
        self.tx_serial.fetch_add(1, Ordering::Relaxed);
        let mut holder = self.shared.tx_lock.lock();
        *holder = wait::TxHolder {
            thread: Some(std::thread::current().id()),
            since: Some(std::time::Instant::now()),
        };
        self.shared.tx_owner.store(self.id, Ordering::SeqCst);
        Ok(Outcome::default())
    }
}

/// An open transaction (`Connection::transaction`): its statements run through it (it
/// derefs to the `Connection`); `commit` keeps them, `rollback` or a drop undoes them.
#[derive(Debug)]
pub struct Transaction<'c> {
    conn: &'c Connection,
    open: bool,
    /// Which of the connection's transactions it is (a COMMIT run through it by hand,
    /// then a BEGIN, makes another that is not the guard's to roll back).
    serial: u64,
}

impl Transaction<'_> {
    /// Keeps the transaction's changes (COMMIT). When COMMIT fails, the guard, dropped,
    /// rolls back what is still open.
    pub fn commit(mut self) -> Result<()> {
        self.conn.execute("COMMIT", ())?;
        self.open = false;
        Ok(())
    }

    /// Undoes the transaction's changes (ROLLBACK).
    pub fn rollback(mut self) -> Result<()> {
        self.conn.execute("ROLLBACK", ())?;
        self.open = false;
        Ok(())
    }
}

impl std::ops::Deref for Transaction<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Transaction<'_> {
    /// A transaction neither committed nor rolled back is rolled back.
    fn drop(&mut self) {
        let own = self.conn.tx_serial.load(Ordering::Relaxed) == self.serial;
        if self.open && own && !self.conn.is_autocommit() {
            let _ = self.conn.execute("ROLLBACK", ());
        }
    }
}
