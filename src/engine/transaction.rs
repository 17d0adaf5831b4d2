//! BEGIN, COMMIT and ROLLBACK as a client runs them (the API's `Transaction` guard is
//! `connection::transaction`'s).
//!
//! Invariants:
//! - While a transaction is open, its connection is the only one that runs statements;
//!   the others wait (up to their busy timeout).
//! - ROLLBACK puts back the world, the schedule and the prepared statements' event
//!   cursors as they were at BEGIN; a file database's COMMIT journals the transaction
//!   first, and a COMMIT whose journal fails rolls back and fails.

use std::sync::atomic::Ordering;

use super::{Client, wait};
use crate::error::Result;
use crate::exec::{ExecError, Outcome};
use crate::location::Location;

impl Client {
    /// COMMIT, or ROLLBACK (`undone`). A file database's COMMIT journals the transaction
    /// first: when that fails, the transaction is rolled back and COMMIT fails.
    pub(super) fn end(&self, undone: bool, at: Location) -> Result<Outcome> {
        if self.is_autocommit() {
            return Err(ExecError::transaction(at, "no transaction is open (BEGIN starts one)").into());
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

    pub(super) fn begin(&self, at: Location) -> Result<Outcome> {
        // A transaction in the set-up would outlive it (its client goes when it ends).
        self.refuse_in_setup("BEGIN", at)?;
        let mut state = self.write_state(at)?;
        if !self.is_autocommit() {
            return Err(ExecError::transaction(
                at,
                "a transaction is already open (COMMIT or ROLLBACK it first)",
            )
            .into());
        }
        self.checkpoint_if_behind(&mut state)?;
        if let Err(e) = state.world.begin() {
            let message = format!("{e} (one was begun through with_world_mut)");
            return Err(ExecError::transaction(at, message).into());
        }
        state.in_begin = true;
        state.schedule_image = None;
        self.tx_serial.fetch_add(1, Ordering::Relaxed);
        let mut holder = self.engine.tx_lock.lock();
        *holder = wait::TxHolder {
            thread: Some(std::thread::current().id()),
            since: Some(std::time::Instant::now()),
        };
        self.engine.tx_owner.store(self.id, Ordering::SeqCst);
        Ok(Outcome::default())
    }
}
