//! The database's lock and the transaction's owner: how a connection takes the read or
//! write lock, waits for another connection's transaction, and gives up.
//!
//! Invariants:
//! - A lock is taken only when no other connection holds a transaction.
//! - A lock to read or write the whole database is held only while no write beside
//!   others holds fields (`beside.rs`): a whole reader is counted before it takes the
//!   read lock, and a writer that finds fields held gives the write lock back and waits.
//! - A wait never outlasts the busy timeout, stops at an interrupt, and never waits for
//!   this thread itself (a transaction open on another connection of the same thread, a
//!   statement inside `with_world`): those fail at once with `Busy` or `Misuse`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use parking_lot::{RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard};

use super::beside::WholeRead;
use super::live::Writing;
use super::{Client, State, wait};
use crate::error::{BoxResult, Error, Result};
use crate::location::Location;

impl Client {
    /// Enters an API call for the interrupt handle; leaves it when dropped.
    pub(crate) fn enter(&self) -> Call<'_> {
        let (call, turn) = Call::enter(&self.interrupt);
        if call.took
            && let Some(after) = self.interrupt.timeout()
        {
            super::timeout::arm(&self.interrupt, turn, after);
        }
        call
    }

    /// This database, as the thread-local record of held locks names it.
    pub(super) fn key(&self) -> usize {
        Arc::as_ptr(&self.engine) as usize
    }

    /// Whether this client is the only handle on its engine (no other client, no
    /// `Database`, no weak handle): then no other thread can be inside the engine, nor
    /// come in, while this client's thread is in a call of its own (a client is used
    /// from one thread at a time). Two loads, no read-modify-write: what lets a point
    /// read of a connection alone on its database skip the lock
    /// (`Client::point_read_slot`).
    #[inline]
    pub(super) fn alone(&self) -> bool {
        let alone = Arc::strong_count(&self.engine) == 1 && Arc::weak_count(&self.engine) == 0;
        // What a handle dropped before did (its guards given back included) happened
        // before what follows: its count's release pairs with this acquire.
        std::sync::atomic::fence(Ordering::Acquire);
        alone
    }

    #[inline]
    pub(super) fn owner_allows(&self) -> bool {
        let owner = self.engine.tx_owner.load(Ordering::SeqCst);
        owner == 0 || owner == self.id
    }

    /// The read lock, to read the whole database, once no other connection holds a
    /// transaction and no write beside others holds fields (`beside.rs`).
    pub(super) fn read_state(&self, at: Location) -> BoxResult<Whole<'_, RwLockReadGuard<'_, State>>> {
        let whole = self.whole_read(at)?;
        let lock = &self.engine.state;
        let guard = self.acquire(at, || lock.try_read(), |wait| lock.try_read_for(wait))?;
        Ok(Whole { guard, _whole: whole })
    }

    /// The write lock, once no other connection holds a transaction and no write beside
    /// others holds fields (`beside.rs`). When it is given back after a commit, the
    /// subscriptions get their batches first (`Writing`).
    pub(super) fn write_state(&self, at: Location) -> BoxResult<Writing<'_>> {
        let lock = &self.engine.state;
        let mut deadline = None;
        let mut waiting = None;
        loop {
            let guard = self.acquire(at, || lock.try_write(), |wait| lock.try_write_for(wait))?;
            if !self.engine.fields.any_fields_held() {
                return Ok(Writing::new(guard, self));
            }
            drop(guard);
            // From the first time it finds fields held until it has the lock, no UPDATE
            // takes fields anew: a stream of them cannot keep this write out.
            waiting.get_or_insert_with(|| self.engine.fields.waiting_to_write());
            let deadline = *deadline.get_or_insert_with(|| std::time::Instant::now() + self.busy_timeout());
            self.engine.fields.wait_fields_freed(self.slice(deadline));
            self.still_waiting(deadline, at)?;
        }
    }

    /// The upgradable read lock (readers go on beside it; no writer, and no other
    /// upgradable reader), to read the whole database, once no other connection holds a
    /// transaction and no write beside others holds fields.
    pub(super) fn upgradable_state(
        &self,
        at: Location,
    ) -> BoxResult<Whole<'_, RwLockUpgradableReadGuard<'_, State>>> {
        let whole = self.whole_read(at)?;
        let lock = &self.engine.state;
        let guard = self.acquire(
            at,
            || lock.try_upgradable_read(),
            |wait| lock.try_upgradable_read_for(wait),
        )?;
        Ok(Whole { guard, _whole: whole })
    }

    /// The write lock from the upgradable one, once the readers beside it are done: fails
    /// past the busy timeout or once interrupted, as taking the write lock does.
    pub(super) fn upgrade<'s>(
        &self,
        state: Whole<'s, RwLockUpgradableReadGuard<'s, State>>,
        at: Location,
    ) -> BoxResult<Whole<'s, RwLockWriteGuard<'s, State>>> {
        let Whole {
            guard: mut state,
            _whole: whole,
        } = state;
        let deadline = std::time::Instant::now() + self.busy_timeout();
        loop {
            match RwLockUpgradableReadGuard::try_upgrade_for(state, self.slice(deadline)) {
                Ok(write) => {
                    return Ok(Whole {
                        guard: write,
                        _whole: whole,
                    });
                }
                Err(still) => state = still,
            }
            self.still_waiting(deadline, at)?;
        }
    }

    /// Counts this call as reading the whole database, once no write beside others holds
    /// fields: fails past the busy timeout or once interrupted.
    fn whole_read(&self, at: Location) -> Result<WholeRead<'_>> {
        let fields = &self.engine.fields;
        let mut deadline = None;
        loop {
            let wait = match deadline {
                None => std::time::Duration::ZERO,
                Some(deadline) => self.slice(deadline),
            };
            if let Some(whole) = fields.whole_read(wait) {
                return Ok(whole);
            }
            let deadline = *deadline.get_or_insert_with(|| std::time::Instant::now() + self.busy_timeout());
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
            return Err(self.interrupt.stopped(turn, at).into());
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
                return Err(self.interrupt.stopped(turn, at).into());
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
        self.open.store(0, Ordering::SeqCst);
        self.engine.tx_done.notify_all();
    }
}

/// A lock of the state held to read the whole database: counted as a whole reader
/// (`beside.rs`) until dropped, after the lock is given back.
pub(super) struct Whole<'e, G> {
    // Dropped first: the lock is given back before the count is.
    guard: G,
    _whole: WholeRead<'e>,
}

impl<'e> Whole<'e, RwLockUpgradableReadGuard<'e, State>> {
    /// The read lock this upgradable one becomes, still counted.
    pub(super) fn downgrade(self) -> Whole<'e, RwLockReadGuard<'e, State>> {
        Whole {
            guard: RwLockUpgradableReadGuard::downgrade(self.guard),
            _whole: self._whole,
        }
    }
}

impl<G: std::ops::Deref<Target = State>> std::ops::Deref for Whole<'_, G> {
    type Target = State;

    fn deref(&self) -> &State {
        &self.guard
    }
}

impl<G: std::ops::DerefMut<Target = State>> std::ops::DerefMut for Whole<'_, G> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.guard
    }
}

/// An API call in progress, for the interrupt handle: leaves its turn when dropped.
pub(crate) struct Call<'c> {
    interrupt: &'c wait::Interrupt,
    took: bool,
}

impl<'c> Call<'c> {
    /// Enters a call on `interrupt` (`Interrupt::enter`, whose caller's thread is the one
    /// writing it): the call and its turn.
    pub(super) fn enter(interrupt: &'c wait::Interrupt) -> (Call<'c>, u64) {
        let (turn, took) = interrupt.enter();
        (Call { interrupt, took }, turn)
    }
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        if self.took {
            self.interrupt.leave();
        }
    }
}
