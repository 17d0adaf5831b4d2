//! Statement timeouts: a connection's call stopped once it has run longer than the
//! connection's `statement_timeout`, through the connection's interrupt, by one watchdog
//! thread for the whole process.
//!
//! Invariants:
//! - The executor's loops pay nothing for it: a call on a connection with a timeout arms
//!   the connection's deadline (a few atomic operations); the watchdog is woken only
//!   when that deadline comes before the one it sleeps until (rarely: a new call's comes
//!   after those armed before it). It fires the interrupt of a call still running at its
//!   deadline, and of no other call (the interrupt's turn rule).
//! - No deadline is missed for a wake not sent: the watchdog says it sleeps until the end
//!   of time before it looks at the deadlines, and what it sleeps until once it has.
//! - A call is never stopped before its deadline, and is stopped within the watchdog's
//!   wake-up after it (the operating system's timer slack, under a millisecond).
//! - The watchdog holds connections weakly: a dropped connection is forgotten, and with
//!   no deadline armed the thread sleeps until one is.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::wait::Interrupt;

/// The watchdog: the connections that have a timeout, and how to wake it.
struct Watchdog {
    watched: Mutex<Vec<Weak<Interrupt>>>,
    wake: Condvar,
    /// The deadline it sleeps until (`u64::MAX`: none, or looking at them now).
    sleeps_until: AtomicU64,
}

/// The instant deadlines are counted from, in nanoseconds.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn nanos_since_epoch() -> u64 {
    u64::try_from(epoch().elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The watchdog, its thread started on first use; `None` when no thread can be started
/// (then timeouts do nothing, as without a timeout).
fn watchdog() -> Option<&'static Watchdog> {
    static WATCHDOG: OnceLock<Option<&'static Watchdog>> = OnceLock::new();
    *WATCHDOG.get_or_init(|| {
        let dog: &'static Watchdog = Box::leak(Box::new(Watchdog {
            watched: Mutex::new(Vec::new()),
            wake: Condvar::new(),
            sleeps_until: AtomicU64::new(u64::MAX),
        }));
        std::thread::Builder::new()
            .name("ecsql-timeouts".to_owned())
            .spawn(move || watch(dog))
            .ok()
            .map(|_| dog)
    })
}

/// Arms `interrupt`'s deadline for call `turn`, `after` from now.
pub(super) fn arm(interrupt: &Arc<Interrupt>, turn: u64, after: Duration) {
    let Some(dog) = watchdog() else { return };
    let after = u64::try_from(after.as_nanos()).unwrap_or(u64::MAX);
    let deadline = nanos_since_epoch().saturating_add(after);
    interrupt.deadline.store(deadline, Ordering::SeqCst);
    interrupt.armed.store(turn, Ordering::SeqCst);
    let new = !interrupt.watched.load(Ordering::SeqCst);
    // The watchdog wakes at its own deadline anyway and sees this one then, unless this
    // one comes first (or it does not know the connection yet).
    if !new && deadline >= dog.sleeps_until.load(Ordering::SeqCst) {
        return;
    }
    let mut watched = dog.watched.lock();
    if !interrupt.watched.swap(true, Ordering::SeqCst) {
        watched.push(Arc::downgrade(interrupt));
    }
    dog.wake.notify_one();
}

/// The watchdog's thread: fires each armed call's interrupt at its deadline.
fn watch(dog: &'static Watchdog) {
    let mut watched = dog.watched.lock();
    loop {
        dog.sleeps_until.store(u64::MAX, Ordering::SeqCst);
        watched.retain(|w| w.strong_count() > 0);
        let now = nanos_since_epoch();
        let mut next: Option<u64> = None;
        for interrupt in watched.iter().filter_map(Weak::upgrade) {
            let turn = interrupt.armed.load(Ordering::SeqCst);
            if turn == 0 || interrupt.running_turn() != turn {
                continue;
            }
            let deadline = interrupt.deadline.load(Ordering::SeqCst);
            if deadline <= now {
                interrupt.time_out(turn);
            } else {
                next = Some(next.map_or(deadline, |n| n.min(deadline)));
            }
        }
        dog.sleeps_until.store(next.unwrap_or(u64::MAX), Ordering::SeqCst);
        match next {
            None => dog.wake.wait(&mut watched),
            Some(deadline) => {
                let _ = dog
                    .wake
                    .wait_for(&mut watched, Duration::from_nanos(deadline - now));
            }
        }
    }
}
