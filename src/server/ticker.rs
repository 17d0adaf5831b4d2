//! The server's clock: a world ticked `rate` times a second on a thread of its own, while
//! clients read and write it.
//!
//! Invariants:
//! - A TICK is one statement, whole: a client's statement runs before it or after it,
//!   never inside, so every client sees whole ticks (the engine's isolation; nothing is
//!   added here).
//! - Ticks are due at a steady cadence from the start (tick k at start + k/rate). A tick
//!   that comes late (a slow tick, a client's transaction holding the world) is run at
//!   once; ticks missed meanwhile are not run in a burst after it: the cadence starts
//!   again from then.
//! - Each tick's dt is 1/rate (`Dt::Fixed`), or the time since the previous tick began
//!   (`Dt::Real`), so that a late tick moves the world by the time that passed.
//! - A tick that fails (a system's error, a busy world, the clients' statement limit:
//!   clients write the systems it runs) changes nothing and is counted; the clock goes
//!   on. Stopping the server stops the clock within one period, interrupting a tick
//!   running.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::Database;

/// How long each tick is said to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Dt {
    /// 1/rate seconds, every tick: the same world for the same ticks, however late.
    #[default]
    Fixed,
    /// The real time since the previous tick began.
    Real,
}

/// What the clock has done, for the server's owner.
#[derive(Debug, Default)]
pub(super) struct Clock {
    pub(super) ran: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) last_error: Mutex<Option<String>>,
    stop: AtomicBool,
    /// Stops the tick running, when the clock is stopped.
    interrupt: Mutex<Option<crate::InterruptHandle>>,
}

/// Starts ticking `db` `rate` times a second, each tick within the clients' limits
/// (`limits`: time and memory), since clients write the systems it runs; the thread ends
/// once `clock` is stopped (a tick running then is interrupted).
pub(super) fn start(
    db: &Database,
    rate: f64,
    dt: Dt,
    limits: (Option<Duration>, Option<usize>),
    clock: &Arc<Clock>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let conn = db.connect();
    conn.limit_statements(limits.0, limits.1);
    *clock.interrupt.lock() = Some(conn.get_interrupt_handle());
    let clock = Arc::clone(clock);
    let period = Duration::from_secs_f64(1.0 / rate);
    std::thread::Builder::new()
        .name("ecsql-ticker".to_owned())
        .spawn(move || {
            let mut due = Instant::now() + period;
            let mut last = Instant::now();
            while !clock.stop.load(Ordering::Acquire) {
                let now = Instant::now();
                if now < due {
                    std::thread::sleep((due - now).min(Duration::from_millis(50)));
                    continue;
                }
                let began = Instant::now();
                let seconds = match dt {
                    Dt::Fixed => period.as_secs_f64(),
                    Dt::Real => began.duration_since(last).as_secs_f64(),
                };
                last = began;
                match conn.tick_with_dt(1, seconds) {
                    Ok(_) => {
                        clock.ran.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        clock.failed.fetch_add(1, Ordering::Relaxed);
                        *clock.last_error.lock() = Some(e.to_string());
                    }
                }
                due += period;
                // Late by more than a period: start the cadence again rather than run
                // the missed ticks in a burst.
                if Instant::now() > due + period {
                    due = Instant::now() + period;
                }
            }
        })
}

impl Clock {
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        if let Some(interrupt) = &*self.interrupt.lock() {
            interrupt.interrupt();
        }
    }
}
