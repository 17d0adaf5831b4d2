//! Waiting without hanging: interrupts, the busy timeout, and the two waits that could
//! never end (a connection waiting for a transaction held on its own thread, a statement
//! run from inside `with_world`), which are refused at once.
//!
//! Invariants:
//! - An interrupt reaches only what is running when it fires: the statements of the call
//!   in progress (one `execute`, or every statement of an `execute_batch`), never a later
//!   call. Each outermost call takes a new turn number; `interrupt()` marks the running
//!   turn, and the executor's `Budget` compares it between morsels.
//! - Every wait for the database has a deadline (the busy timeout) and looks at the
//!   interrupt at least every `POLL`.
//! - A thread that holds the database's lock inside `with_world`/`with_world_mut` is
//!   recorded here, and any further use of that database from that thread is an error.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// How often a waiting statement looks at its interrupt.
pub(super) const POLL: Duration = Duration::from_millis(20);

/// The connection holding a transaction: its thread and when it began.
#[derive(Debug, Default)]
pub(super) struct TxHolder {
    pub thread: Option<ThreadId>,
    pub since: Option<Instant>,
}

/// A connection's interrupt state.
#[derive(Debug, Default)]
pub(crate) struct Interrupt {
    /// The last turn handed out.
    turns: AtomicU64,
    /// The turn of the call running now, or 0.
    running: AtomicU64,
    /// The turn that was interrupted.
    pub target: AtomicU64,
    /// The turn that was interrupted for running past the statement timeout.
    pub timed_out: AtomicU64,
    /// The statement timeout in milliseconds; 0 for none.
    pub timeout_ms: AtomicU64,
    /// The longest statement timeout the connection may set, in milliseconds; 0 for no
    /// bound (a server's clients have one).
    pub timeout_cap_ms: AtomicU64,
    /// The turn whose deadline the watchdog keeps (`timeout.rs`), or 0.
    pub armed: AtomicU64,
    /// That turn's deadline, in nanoseconds from the watchdog's epoch.
    pub deadline: AtomicU64,
    /// Whether the watchdog knows this connection.
    pub watched: AtomicBool,
}

impl Interrupt {
    /// Enters a call: the outermost one takes a new turn; a nested one (a query inside
    /// `query_row`) shares it. Returns the turn and whether this call took it.
    ///
    /// `turns` and `running` are written by one thread at a time: the thread using the
    /// client this state belongs to, which is `Send` but not `Sync` (a client moved to
    /// another thread is moved with what orders its stores before the new thread's
    /// loads). An open's state belongs to the open and to the clients it makes, which
    /// run on its thread inside its turn (so they never take or leave one). The handle
    /// and the watchdog only read `running`. So a turn is taken and given back with
    /// plain stores, not read-modify-writes: two locked instructions fewer on every
    /// call. Callers: `locks::Call`, which gives the turn back when dropped.
    pub(super) fn enter(&self) -> (u64, bool) {
        let running = self.running.load(Ordering::Relaxed);
        if running != 0 {
            return (running, false);
        }
        let turn = self.turns.load(Ordering::Relaxed) + 1;
        self.turns.store(turn, Ordering::Relaxed);
        // Release, not a full fence: the handle only needs to see the turn before it
        // marks it (a store of the target for a turn already over stops nothing).
        self.running.store(turn, Ordering::Release);
        (turn, true)
    }

    /// Leaves the call that took the running turn (`enter` said it took it; only this
    /// thread writes `running`). A handle that read the turn before it was given back
    /// marks a turn that is over, which stops nothing. Release, as `enter`'s store.
    pub(super) fn leave(&self) {
        self.running.store(0, Ordering::Release);
    }

    /// The turn of the call running now, or 0.
    pub fn running_turn(&self) -> u64 {
        self.running.load(Ordering::SeqCst)
    }

    /// The error of call `turn`, stopped: by its timeout, or by an interrupt.
    pub fn stopped(&self, turn: u64, at: crate::location::Location) -> crate::exec::ExecError {
        use crate::exec::{ExecError, ExecErrorKind};
        match self.timeout() {
            Some(after) if self.timed_out.load(Ordering::SeqCst) == turn => {
                ExecError::new(at, ExecErrorKind::TimedOut { after })
            }
            _ => ExecError::new(at, ExecErrorKind::Interrupted),
        }
    }

    /// Stops call `turn` for running past the statement timeout.
    pub fn time_out(&self, turn: u64) {
        self.timed_out.store(turn, Ordering::SeqCst);
        self.target.store(turn, Ordering::SeqCst);
    }

    /// The statement timeout; `None` for none.
    pub fn timeout(&self) -> Option<Duration> {
        match self.timeout_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    pub fn is_interrupted(&self, turn: u64) -> bool {
        self.target.load(Ordering::Relaxed) == turn
    }
}

/// Stops the statements a connection is running, from any thread (the shape of
/// rusqlite's `InterruptHandle`). What is running fails with [`crate::ExecErrorKind::Interrupted`]
/// and changes nothing, unless the interrupt reaches it in a write it cannot cut (a whole
/// table's move, a file database's commit: docs/language.md lists them), which finishes;
/// if nothing is running, `interrupt` does nothing.
#[derive(Clone, Debug)]
pub struct InterruptHandle {
    pub(super) state: Arc<Interrupt>,
}

impl InterruptHandle {
    /// A handle on `state` (an open's interrupt, made before its client).
    pub(crate) fn of(state: &Arc<Interrupt>) -> InterruptHandle {
        InterruptHandle {
            state: Arc::clone(state),
        }
    }

    /// Interrupts the call the connection is running now, if any: its current statement
    /// stops at its next morsel, and a script stops there too.
    pub fn interrupt(&self) {
        let running = self.state.running.load(Ordering::SeqCst);
        if running != 0 {
            self.state.target.store(running, Ordering::SeqCst);
        }
    }
}

thread_local! {
    /// The databases (by the address of their shared state) whose lock this thread holds
    /// inside `with_world`/`with_world_mut`.
    static HELD: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// How many `Holding`s there are, on every thread: while none, no thread holds a lock
/// and `held` need not look at its own record. (A thread that holds one counted it
/// itself, so it sees a count above zero.)
static HOLDINGS: AtomicUsize = AtomicUsize::new(0);

/// Whether this thread holds the lock of the database at `key`.
#[inline]
pub(super) fn held(key: usize) -> bool {
    HOLDINGS.load(Ordering::Relaxed) != 0 && HELD.with(|h| h.borrow().contains(&key))
}

/// Marks the lock of the database at `key` as held by this thread until dropped.
pub(super) struct Holding(usize);

impl Holding {
    pub fn new(key: usize) -> Holding {
        HOLDINGS.fetch_add(1, Ordering::Relaxed);
        HELD.with(|h| h.borrow_mut().push(key));
        Holding(key)
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        HOLDINGS.fetch_sub(1, Ordering::Relaxed);
        HELD.with(|h| {
            let mut held = h.borrow_mut();
            if let Some(i) = held.iter().rposition(|&k| k == self.0) {
                held.remove(i);
            }
        });
    }
}

/// A size as `PRAGMA memory_limit` takes it: a number of bytes, or a number (maybe with a
/// fraction) and a unit, `KB`/`MB`/`GB`/`TB` (powers of 1000) or `KiB`/`MiB`/`GiB`/`TiB`
/// (powers of 1024), in any case, with or without a space.
pub(crate) fn parse_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" | "bytes" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = number * scale;
    (bytes.is_finite() && bytes >= 0.0 && bytes < usize::MAX as f64).then_some(bytes as usize)
}

/// 80% of the machine's memory (from /proc/meminfo), or 8 GiB where that cannot be read.
pub(super) fn default_memory_limit() -> usize {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|info| {
        let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        usize::try_from(kib.checked_mul(1024)?).ok()
    });
    match total {
        Some(bytes) => bytes / 5 * 4,
        None => 8 << 30,
    }
}

/// The machine's cores (as the system reports them), at most `MAX_THREADS`; one where
/// that cannot be read.
pub(super) fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(super::MAX_THREADS)
}
