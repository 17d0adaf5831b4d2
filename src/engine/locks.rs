//! The database's lock and the transaction's owner: how a connection takes the read or
//! write lock, waits for another connection's transaction, and gives up.
//!
//! Invariants:
//! - A lock is taken only when no other connection holds a transaction.
//! - A wait never outlasts the busy timeout, stops at an interrupt, and never waits for
//!   this thread itself (a transaction open on another connection of the same thread, a
//!   statement inside `with_world`): those fail at once with `Busy` or `Misuse`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Client, State, wait};
use crate::error::{BoxResult, Error, Result};
use crate::exec::{ExecError, ExecErrorKind};
use crate::location::Location;

impl Client {
    /// Enters an API call for the interrupt handle; leaves it when dropped.
    pub(crate) fn enter(&self) -> Call<'_> {
        let (turn, took) = self.interrupt.enter();
        Call {
            interrupt: &self.interrupt,
            turn,
            took,
        }
    }

    /// This database, as the thread-local record of held locks names it.
    pub(super) fn key(&self) -> usize {
        Arc::as_ptr(&self.engine) as usize
    }

    pub(super) fn owner_allows(&self) -> bool {
        let owner = self.engine.tx_owner.load(Ordering::SeqCst);
        owner == 0 || owner == self.id
    }

    /// The read lock, once no other connection holds a transaction.
    pub(super) fn read_state(&self, at: Location) -> BoxResult<parking_lot::RwLockReadGuard<'_, State>> {
        let lock = &self.engine.state;
        self.acquire(at, || lock.try_read(), |wait| lock.try_read_for(wait))
    }

    /// The write lock, once no other connection holds a transaction.
    pub(super) fn write_state(&self, at: Location) -> BoxResult<parking_lot::RwLockWriteGuard<'_, State>> {
        let lock = &self.engine.state;
        self.acquire(at, || lock.try_write(), |wait| lock.try_write_for(wait))
    }

    /// The upgradable read lock (readers go on beside it; no writer, and no other
    /// upgradable reader), once no other connection holds a transaction.
    pub(super) fn upgradable_state(
        &self,
        at: Location,
    ) -> BoxResult<parking_lot::RwLockUpgradableReadGuard<'_, State>> {
        let lock = &self.engine.state;
        self.acquire(
            at,
            || lock.try_upgradable_read(),
            |wait| lock.try_upgradable_read_for(wait),
        )
    }

    /// The write lock from the upgradable one, once the readers beside it are done: fails
    /// past the busy timeout or once interrupted, as taking the write lock does.
    pub(super) fn upgrade<'s>(
        &self,
        mut state: parking_lot::RwLockUpgradableReadGuard<'s, State>,
        at: Location,
    ) -> BoxResult<parking_lot::RwLockWriteGuard<'s, State>> {
        let deadline = std::time::Instant::now() + self.busy_timeout();
        loop {
            match parking_lot::RwLockUpgradableReadGuard::try_upgrade_for(state, self.slice(deadline)) {
                Ok(write) => return Ok(write),
                Err(still) => state = still,
            }
            self.still_waiting(deadline, at)?;
        }
    }

    /// A guard of the state's lock (`try_now` takes it without waiting, `try_for` waits up
    /// to a while), once no other connection holds a transaction: fails rather than wait
    /// for this thread itself, past the busy timeout, or once interrupted.
    pub(super) fn acquire<G>(
        &self,
        at: Location,
        try_now: impl Fn() -> Option<G>,
        try_for: impl Fn(Duration) -> Option<G>,
    ) -> BoxResult<G> {
        if let Some(file) = self.file() {
            file.refuse_if_abandoned()?;
        }
        if wait::held(self.key()) {
            return Err(Box::new(Error::Misuse {
                message: "the statement cannot take the database's lock: it runs inside \
                          with_world/with_world_mut on the same thread, which holds the lock, so \
                          it would wait for itself forever (finish the closure first, or use \
                          the World it was given)"
                    .into(),
                at,
            }));
        }
        // The usual case costs one try, without reading the clock.
        if let Some(guard) = try_now().filter(|_| self.owner_allows()) {
            return Ok(guard);
        }
        let deadline = std::time::Instant::now() + self.busy_timeout();
        loop {
            match try_for(self.slice(deadline)) {
                Some(guard) if self.owner_allows() => return Ok(guard),
                Some(guard) => {
                    drop(guard);
                    self.wait_for_transaction(deadline, at)?;
                }
                None => self.still_waiting(deadline, at)?,
            }
        }
    }

    /// How long the next try may block: until the deadline, at most `POLL`.
    pub(super) fn slice(&self, deadline: std::time::Instant) -> Duration {
        deadline
            .saturating_duration_since(std::time::Instant::now())
            .min(wait::POLL)
    }

    /// After a try that timed out: fails once interrupted or past the deadline.
    pub(super) fn still_waiting(&self, deadline: std::time::Instant, at: Location) -> Result<()> {
        let turn = self.interrupt.running_turn();
        if turn != 0 && self.interrupt.is_interrupted(turn) {
            return Err(ExecError::new(at, ExecErrorKind::Interrupted).into());
        }
        if std::time::Instant::now() >= deadline {
            let message = format!(
                "database is busy: another connection's statement held it for the whole busy \
                 timeout ({} ms; Connection::set_busy_timeout or PRAGMA busy_timeout waits \
                 longer)",
                self.busy_timeout().as_millis()
            );
            return Err(Error::Busy { message, at });
        }
        Ok(())
    }

    /// Waits until no other connection holds a transaction, until the deadline at most.
    pub(super) fn wait_for_transaction(&self, deadline: std::time::Instant, at: Location) -> Result<()> {
        let mut holder = self.engine.tx_lock.lock();
        while !self.owner_allows() {
            if holder.thread == Some(std::thread::current().id()) {
                let message = format!(
                    "database is locked: connection {} on this same thread holds an open \
                     transaction, so waiting for it would never end (COMMIT or ROLLBACK it, or \
                     run the statement on that connection)",
                    self.engine.tx_owner.load(Ordering::SeqCst)
                );
                return Err(Error::Busy { message, at });
            }
            let turn = self.interrupt.running_turn();
            if turn != 0 && self.interrupt.is_interrupted(turn) {
                return Err(ExecError::new(at, ExecErrorKind::Interrupted).into());
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                let held = holder.since.map_or(0.0, |s| s.elapsed().as_secs_f64());
                let message = format!(
                    "database is busy: connection {} has held a transaction for {held:.1} s, longer \
                     than the busy timeout ({} ms; Connection::set_busy_timeout or PRAGMA \
                     busy_timeout waits longer)",
                    self.engine.tx_owner.load(Ordering::SeqCst),
                    self.busy_timeout().as_millis()
                );
                return Err(Error::Busy { message, at });
            }
            self.engine
                .tx_done
                .wait_for(&mut holder, (deadline - now).min(wait::POLL));
        }
        Ok(())
    }

    pub(super) fn end_transaction(&self) {
        let mut holder = self.engine.tx_lock.lock();
        *holder = wait::TxHolder::default();
        self.engine.tx_owner.store(0, Ordering::SeqCst);
        self.engine.tx_done.notify_all();
    }
}

/// An API call in progress, for the interrupt handle: leaves its turn when dropped.
pub(crate) struct Call<'c> {
    interrupt: &'c wait::Interrupt,
    turn: u64,
    took: bool,
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        if self.took {
            self.interrupt.leave(self.turn);
        }
    }
}
