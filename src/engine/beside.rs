//! Writes beside each other: an UPDATE that `update` would write in place whole
//! (`exec::write_beside`) holds the fields it reads and writes instead of the whole
//! database, writes its columns in place under the read lock, beside other such writes
//! of other fields, and takes the write lock only to stamp and journal what it wrote. Two
//! connections updating different components then run at the same time instead of
//! queueing on the database's one write lock.
//!
//! Four ways to hold the database:
//! - whole, to write (`Client::write_state`): the write lock; it waits until no write
//!   beside others holds fields, counted as waiting once it found some held;
//! - whole, to read (`Client::read_state`, `Client::upgradable_state`): counted here
//!   before the read lock is taken, and only while no write beside others holds fields
//!   (counted as waiting meanwhile);
//! - fields, to write (`Client::write_beside`): taken here only while nobody reads the
//!   whole database or waits to read or write it, and no other holder of fields reads or
//!   writes a field this one writes, or writes one it reads (`FieldSet::meets`); then the
//!   read lock, to write in place and stamp (a file database: the write lock, to stamp
//!   and journal);
//! - fields, to read (`Client::hold_reads`): a read whose kept plan names what it reads
//!   (`FieldSet::of_read`), while no write beside others holds one of them; then the read
//!   lock, beside writes of other fields;
//! - a point read's short way (`FieldLocks::quick_read`, `Client::point_read`): under the
//!   read lock, counted in `quick_readers` while `beside_writers` is zero. The two counts
//!   are a Dekker pair: each side raises its own, then reads the other's, all SeqCst, so
//!   at least one of a point read and a write beside others starting together sees the
//!   other: the read steps back to the ordinary way, the write waits (without the mutex)
//!   until no point read is counted, which takes a row's read, never a wait. A client
//!   alone on its engine (`Client::alone`) reads its point without the lock or the count:
//!   no other thread can hold fields then.
//!
//! Invariants:
//! - While a write beside others writes a column, nothing else reads or writes it, or
//!   what is known of it (its zone maps and filters): a whole reader or writer is not
//!   inside (counted or locked out), every other holder of fields holds fields that do
//!   not meet its own, and it looks at no column of its tables but those it reads and
//!   writes. That is `ColumnCell`'s invariant, which makes `lend_beside` sound.
//! - Writes beside each other touch disjoint fields, and nothing else runs between one's
//!   computing and its stamping that reads or writes its fields, so the order they are
//!   journaled in (the order they stamp) replays to the world they left.
//! - Nothing waits for fields while holding the database's lock: a write that cannot have
//!   its fields at once runs as any write does.
//! - A write beside others is never undone and never stopped: it is one that cannot fail
//!   (but before it writes) and is short (`exec::write_beside`), outside any transaction,
//!   and no transaction begins while fields are held (`BEGIN` holds the whole database to
//!   write; one begun before gives the write back to the ordinary path).
//! - A file database is never checkpointed while fields are held: another write beside
//!   may hold what it wrote, not journaled yet. A write that would need a checkpoint
//!   first runs as any write; one whose journal broke under it gives the database up.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::{Condvar, Mutex};

use super::Client;
use super::run::{AbandonOnPanic, Step, WRITE_PANICKED};
use crate::error::{BoxResult, Error};
use crate::exec::{Outcome, Run};
use crate::plan::FieldSet;

/// Who holds the database other than by its lock: whole readers (counted) and writes
/// beside others (their fields), and what the writes beside others did.
#[derive(Debug, Default)]
pub(super) struct FieldLocks {
    held: Mutex<Held>,
    freed: Condvar,
    /// Point reads under the read lock now (`quick_read`), counted without the mutex.
    quick_readers: AtomicUsize,
    /// Writes beside others holding fields now (`held.sets.len()`, raised before a write
    /// looks at `quick_readers` and lowered when it gives its fields back; a whole
    /// writer's look may find it a moment ahead of the list).
    beside_writers: AtomicUsize,
}

#[derive(Debug, Default)]
struct Held {
    /// Statements reading the whole database (under the read lock, or about to be).
    whole_readers: usize,
    /// Statements waiting to read or write the whole database: while any waits, no
    /// fields are held anew, so that a stream of UPDATEs cannot keep them out.
    whole_waiting: usize,
    /// One entry per write beside others holding fields.
    sets: Vec<(u64, Arc<FieldSet>)>,
    /// One entry per read holding the fields it reads (beside writes of others).
    readers: Vec<(u64, Arc<FieldSet>)>,
    next: u64,
    counts: Concurrency,
}

/// What the writes beside others did since the database was opened
/// (`Database::concurrency`): counters, for a program or a test to see the overlap
/// happen, not a measure of time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Concurrency {
    /// UPDATEs that wrote in place holding only their fields.
    pub beside: u64,
    /// Those that began while another one held its fields.
    pub overlapped: u64,
    /// The most of them holding fields at one moment.
    pub most_at_once: u64,
    /// Reads of fields that held only the fields they read, and began while such an
    /// UPDATE held others: they ran beside it.
    pub reads_beside: u64,
}

/// A whole reader, counted until dropped (after its read lock is given back).
pub(super) struct WholeRead<'l>(&'l FieldLocks);

impl Drop for WholeRead<'_> {
    fn drop(&mut self) {
        let mut held = self.0.held.lock();
        held.whole_readers -= 1;
        let last = held.whole_readers == 0;
        drop(held);
        if last {
            self.0.freed.notify_all();
        }
    }
}

/// The fields a read holds (`Client::hold_reads`); given back when dropped.
pub(super) struct HeldReads<'l>(#[allow(dead_code)] HeldFields<'l>);

/// A statement waiting to write the whole database (`FieldLocks::waiting_to_write`).
pub(super) struct WaitingToWrite<'l>(&'l FieldLocks);

impl Drop for WaitingToWrite<'_> {
    fn drop(&mut self) {
        self.0.held.lock().whole_waiting -= 1;
    }
}

/// Fields held by one write beside others, or by a read; given back when dropped.
struct HeldFields<'l> {
    locks: &'l FieldLocks,
    key: u64,
    /// How many writes held fields beside these when they were taken.
    others: u64,
    /// A write's fields (counted in `beside_writers`), not a read's.
    writes: bool,
}

/// A point read counted in `FieldLocks::quick_readers` until dropped.
pub(super) struct QuickRead<'l>(&'l FieldLocks);

impl Drop for QuickRead<'_> {
    fn drop(&mut self) {
        self.0.quick_readers.fetch_sub(1, Ordering::SeqCst);
    }
}

impl HeldFields<'_> {
    /// Counts the write that holds these as one that wrote beside others.
    fn went_beside(&self) {
        let mut held = self.locks.held.lock();
        let counts = &mut held.counts;
        counts.beside += 1;
        counts.overlapped += u64::from(self.others > 0);
        counts.most_at_once = counts.most_at_once.max(self.others + 1);
    }
}

impl Drop for HeldFields<'_> {
    fn drop(&mut self) {
        let mut held = self.locks.held.lock();
        if self.writes {
            held.sets.retain(|(k, _)| *k != self.key);
            self.locks.beside_writers.fetch_sub(1, Ordering::SeqCst);
        } else {
            held.readers.retain(|(k, _)| *k != self.key);
        }
        drop(held);
        self.locks.freed.notify_all();
    }
}

impl FieldLocks {
    /// What the writes beside others did so far.
    pub(super) fn counts(&self) -> Concurrency {
        self.held.lock().counts
    }

    /// Counts a whole reader when no write beside others holds fields, waiting until
    /// none does for `wait` at most; `None` past it.
    pub(super) fn whole_read(&self, wait: std::time::Duration) -> Option<WholeRead<'_>> {
        let mut held = self.held.lock();
        if !held.sets.is_empty() {
            let deadline = std::time::Instant::now() + wait;
            held.whole_waiting += 1;
            while !held.sets.is_empty() {
                if self.freed.wait_until(&mut held, deadline).timed_out() && !held.sets.is_empty() {
                    held.whole_waiting -= 1;
                    return None;
                }
            }
            held.whole_waiting -= 1;
        }
        held.whole_readers += 1;
        Some(WholeRead(self))
    }

    /// Whether a write beside others holds fields now (a whole writer holding the write
    /// lock then gives it back and waits: `Client::acquire`).
    pub(super) fn any_fields_held(&self) -> bool {
        // Without the mutex: the count is raised before a write's fields are kept and
        // lowered after they are given back, so it is never 0 while any are held.
        self.beside_writers.load(Ordering::SeqCst) != 0
    }

    /// Waits until no write beside others holds fields, for `wait` at most.
    pub(super) fn wait_fields_freed(&self, wait: std::time::Duration) {
        let mut held = self.held.lock();
        if !held.sets.is_empty() {
            self.freed.wait_for(&mut held, wait);
        }
    }

    /// Counts a statement waiting to write the whole database until dropped: meanwhile
    /// no fields are held anew (`try_hold`).
    pub(super) fn waiting_to_write(&self) -> WaitingToWrite<'_> {
        self.held.lock().whole_waiting += 1;
        WaitingToWrite(self)
    }

    /// Holds `fields` for a write beside others, at once, or `None`: when a whole reader
    /// is counted or waiting, or another holder's fields meet these.
    fn try_hold(&self, fields: Arc<FieldSet>) -> Option<HeldFields<'_>> {
        let mut held = self.held.lock();
        let meet = |list: &[(u64, Arc<FieldSet>)]| list.iter().any(|(_, other)| other.meets(&fields));
        if held.whole_readers > 0 || held.whole_waiting > 0 || meet(&held.sets) || meet(&held.readers) {
            return None;
        }
        self.beside_writers.fetch_add(1, Ordering::SeqCst);
        let key = held.next;
        held.next += 1;
        let others = held.sets.len() as u64;
        held.sets.push((key, fields));
        drop(held);
        let fields = HeldFields {
            locks: self,
            key,
            others,
            writes: true,
        };
        // A point read counted now either saw no write and reads its one row (it never
        // waits), or sees this one and steps back at once: this write waits for them,
        // without the mutex, before it reads or writes any column.
        let mut spins = 0u32;
        while self.quick_readers.load(Ordering::SeqCst) > 0 {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        Some(fields)
    }

    /// Counts a point read that reads under the read lock (which the caller holds) past
    /// the field sets, while no write beside others holds fields; `None` when one does
    /// (the read then takes the ordinary way).
    #[inline]
    pub(super) fn quick_read(&self) -> Option<QuickRead<'_>> {
        self.quick_readers.fetch_add(1, Ordering::SeqCst);
        let quick = QuickRead(self);
        (self.beside_writers.load(Ordering::SeqCst) == 0).then_some(quick)
    }
}

impl FieldLocks {
    /// Holds `fields` for a read (its reads only), at once, or `None`: when a write
    /// beside others holds a field it reads.
    fn try_hold_reads(&self, fields: Arc<FieldSet>) -> Option<HeldFields<'_>> {
        let mut held = self.held.lock();
        if held.sets.iter().any(|(_, other)| other.meets(&fields)) {
            return None;
        }
        let key = held.next;
        held.next += 1;
        held.counts.reads_beside += u64::from(!held.sets.is_empty() && !fields.reads.is_empty());
        held.readers.push((key, fields));
        Some(HeldFields {
            locks: self,
            key,
            others: 0,
            writes: false,
        })
    }
}

impl Client {
    /// Holds the fields `step`, a read, reads, when its kept plan names them
    /// (`FieldSet::of_read`) and no write beside others holds one of them: it then reads
    /// under the read lock beside such writes of other fields. `None` when it reads the
    /// whole database instead (`Client::read_state`).
    pub(super) fn hold_reads(&self, step: &Step<'_>) -> Option<(HeldReads<'_>, Arc<FieldSet>)> {
        let slot = step.with.plans?;
        let fields = slot.borrow().staged()?.clone();
        if !fields.writes.is_empty() {
            return None;
        }
        let held = self.engine.fields.try_hold_reads(Arc::clone(&fields))?;
        Some((HeldReads(held), fields))
    }

    /// The fields a write holds to run beside others, when it may: a kept plan that
    /// names them (`PlanSlot::staged`), outside a transaction, not replayed.
    fn fields_for_beside(&self, step: &Step<'_>) -> Option<Arc<FieldSet>> {
        let slot = step.with.plans?;
        if step.with.replay || !self.is_autocommit() || !self.owner_allows() {
            return None;
        }
        beside_fields(&slot.borrow()).cloned()
    }

    /// Runs `step` as a write beside others when it is one (`exec::write_beside`) and its
    /// fields can be held at once; `None` when not, having written nothing: then it runs
    /// as any write.
    pub(super) fn write_beside(&self, step: &Step<'_>) -> Option<BoxResult<Outcome>> {
        let fields = self.fields_for_beside(step)?;
        let held = self.engine.fields.try_hold(Arc::clone(&fields))?;
        // With a subscription open every commit passes the write lock (`live.rs`).
        // Asked once the fields are held: a subscriber counts itself a whole reader
        // before it subscribes, so none can start between this and the write.
        if self.engine.live.any() {
            return None;
        }
        let (statement, params, with) = (step.statement, step.params, step.with);
        let at = statement.at;
        let lock = &self.engine.state;
        let state = self.read_lock_beside(at)?;
        // A file database whose journal lacks what the world holds (or cannot be
        // trusted) checkpoints before its next write: one that runs as any write.
        if let Some(file) = self.file()
            && (state.unjournaled || file.is_broken())
        {
            return None;
        }
        let mut slot = with.plans.map(RefCell::borrow_mut);
        // Bound again if the catalog moved since the fields were read off the kept plan,
        // which must still name the same ones.
        if let Err(e) = state.planned(slot.as_deref_mut(), statement, params) {
            return Some(Err(e));
        }
        if slot.as_ref().and_then(|s| s.staged()) != Some(&fields) {
            return None;
        }
        // The kept plan, at once.
        let plan = match state.planned(slot.as_deref_mut(), statement, params) {
            Ok(plan) => plan,
            Err(e) => return Some(Err(e)),
        };
        let seed = with.seed.unwrap_or_else(crate::exec::fresh_seed);
        let run = Run {
            seed: Some(seed),
            ..self.run_of(step, state.restores, state.schedule.clock(), None)
        };
        let abandon = AbandonOnPanic(self.file(), WRITE_PANICKED);
        // SAFETY: `held` holds the fields the plan writes alone until it is dropped,
        // after the stamp (this module's invariants).
        let wrote = unsafe { crate::exec::write_beside(&plan, &state.world, run) };
        drop(plan);
        drop(slot);
        // An UPDATE written in place fails only before it writes (its values cannot fail
        // but for a reason the same for every row, found in its first batch; an
        // interrupt or the memory limit stops it before its first batch).
        let wrote = match wrote {
            Ok(Some(wrote)) => wrote,
            Ok(None) => return None,
            Err(e) => return Some(Err(Box::new(Error::from(e)))),
        };
        held.went_beside();
        let Some(file) = self.file() else {
            // Nothing to journal: stamped under the read lock, beside the others.
            // SAFETY: `held` still holds the fields written.
            let ran = unsafe { crate::exec::stamp_beside_shared(wrote, &state.world, at) };
            drop((state, held, abandon));
            return Some(ran.map_err(|e| Box::new(Error::from(e))));
        };
        drop(state);
        // No transaction began while the fields are held, and every other holder of the
        // lock finishes: the write lock is had without the waits `acquire` bounds.
        let mut guard = lock.write();
        let state = &mut *guard;
        // Other writes beside this one may hold what they wrote in place, not journaled
        // yet: no checkpoint may be taken now (`journal_ahead` takes one when the
        // journal broke meanwhile), so the database is given up instead.
        if file.is_broken() {
            file.abandon("its journal broke while UPDATEs were written in place beside each other");
            return Some(
                file.refuse_if_abandoned()
                    .map(|()| Outcome::default())
                    .map_err(Box::new),
            );
        }
        let tick = state.world.tick();
        let ahead = self.journal_ahead(state, false, || step.entry(seed, tick, None));
        let ahead = match ahead {
            Ok(ahead) => ahead,
            Err(e) => {
                // Written but not journaled: the file database is given up, as for a
                // write whose record failed.
                file.abandon("a write's journal record failed after it was written in place");
                return Some(Err(Box::new(e)));
            }
        };
        let ran = crate::exec::stamp_beside(wrote, &mut state.world, at);
        let written = self.journal_settle(state, ahead, ran.is_ok());
        drop(held);
        drop((abandon, guard));
        Some(ran.map_err(|e| Box::new(Error::from(e))).and_then(|outcome| {
            self.make_durable(written, at)?;
            Ok(outcome)
        }))
    }

    /// The read lock for a write beside others, or `None` when it should run as any
    /// write instead: another connection's transaction holds the database (begun before
    /// the fields were held: waiting for it while holding them would keep its statements
    /// waiting too), or this thread holds the lock already (any write says why not).
    /// Fails past the busy timeout or once interrupted.
    fn read_lock_beside(
        &self,
        at: crate::location::Location,
    ) -> Option<parking_lot::RwLockReadGuard<'_, super::State>> {
        if super::wait::held(self.key()) || !self.owner_allows() {
            return None;
        }
        let lock = &self.engine.state;
        let deadline = std::time::Instant::now() + self.busy_timeout();
        loop {
            if let Some(guard) = lock.try_read_for(self.slice(deadline)) {
                return self.owner_allows().then_some(guard);
            }
            self.still_waiting(deadline, at).ok()?;
        }
    }
}

/// The fields a prepared write's kept plan names for writing beside others
/// (`PlanSlot::staged`), unless its last run found it too short to be worth it
/// (`exec::short_for_beside`): what sends it beside others rather than under the write
/// lock (`Client::write_beside`, and `Client::kept_write`, which leaves such a write to it).
pub(super) fn beside_fields(slot: &crate::plan::PlanSlot) -> Option<&Arc<FieldSet>> {
    if slot.last_plan().is_some_and(crate::exec::short_for_beside) {
        return None;
    }
    slot.staged()
}
