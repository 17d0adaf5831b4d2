//! What a running statement may still spend: it stops when its connection's interrupt
//! handle fires, and it may hold no more working memory than the database's limit.
//!
//! Invariants:
//! - Every loop whose length grows with the data (morsels of a scan, chunks of join pairs,
//!   series values, traversal levels, groups, sorts, set operations) calls `check` at
//!   least once per morsel or chunk, so an interrupt is seen within a morsel's work (a
//!   staged UPDATE of arithmetic that cannot fail: once per batch of up to 32 morsels,
//!   tens of µs).
//! - Every structure that grows with the data (materialized relations and join sides,
//!   result rows, groups, sort keys, series) is `charge`d before or as it grows, with
//!   an estimate of its bytes; a charge past the limit fails the statement with an error
//!   instead of asking the allocator. Data streamed a morsel at a time is not charged.
//! - A failed check leaves the world as any failed statement does: reads change nothing,
//!   and writes compute everything before they write, so they stop before the first write.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use super::error::{ExecError, ExecErrorKind};
use crate::location::Location;

type Result<T> = std::result::Result<T, ExecError>;

/// A statement's budget of time (an interrupt) and memory.
#[derive(Debug)]
pub struct Budget<'c> {
    /// The interrupt target of the statement's connection, and this statement's turn:
    /// the statement is interrupted when the two are equal.
    interrupt: Option<(&'c AtomicU64, u64)>,
    /// Where the connection marks the turn its statement timeout stopped, and the
    /// timeout: an interrupt of that turn is a timeout's.
    timeout: Option<(&'c AtomicU64, Duration)>,
    limit: usize,
    /// For a stretch's budget (`part`), how many stretches share the statement's: its
    /// error speaks of the statement's limit, and of what they hold together.
    shares: usize,
    /// Charged so far: atomic, as the threads of a statement run in parallel charge it.
    used: AtomicUsize,
    /// How the statement may split its rows among threads (`PRAGMA threads`,
    /// `PRAGMA min_parallel_rows`).
    split: Split,
    /// The most rounds a recursive WITH query may run (`PRAGMA recursion_limit`).
    recursion_limit: usize,
}

/// The most rounds a recursive WITH query runs unless `PRAGMA recursion_limit` says
/// otherwise: past it, an error says so (a query that never stops adding rows, like
/// `UNION ALL SELECT n + 1 FROM r`, is stopped there, or by an interrupt).
pub const DEFAULT_RECURSION_LIMIT: usize = 100_000;

/// How a statement may split its rows among threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    /// At most this many parts (`PRAGMA threads`).
    pub threads: usize,
    /// At least this many rows a part (`PRAGMA min_parallel_rows`).
    pub min_rows: usize,
}

/// The machine's cores: no more parts of a statement than that run at once, and more
/// would wait for the pool while the statement's own thread waits for them.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

impl Split {
    /// Every statement on the thread that runs it.
    pub const ONE: Split = Split {
        threads: 1,
        min_rows: usize::MAX,
    };
}

impl<'c> Budget<'c> {
    /// A budget that is never interrupted and may use at most `limit` bytes.
    pub fn new(limit: usize) -> Budget<'c> {
        Budget {
            interrupt: None,
            timeout: None,
            limit,
            shares: 1,
            used: AtomicUsize::new(0),
            split: Split::ONE,
            recursion_limit: DEFAULT_RECURSION_LIMIT,
        }
    }

    /// Also lets a recursive WITH query run at most `rounds` rounds.
    pub fn with_recursion_limit(mut self, rounds: usize) -> Budget<'c> {
        self.recursion_limit = rounds;
        self
    }

    /// The most rounds a recursive WITH query may run.
    pub fn recursion_limit(&self) -> usize {
        self.recursion_limit
    }

    /// Also may split its rows as `split` says.
    pub fn with_split(mut self, split: Split) -> Budget<'c> {
        self.split = split;
        self
    }

    /// The most working memory the statement may hold, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// How the statement may split its rows among threads.
    pub fn split(&self) -> Split {
        self.split
    }

    /// A new budget with the same limit and interrupt, nothing used yet: for each
    /// statement a TICK runs.
    pub fn fresh(&self) -> Budget<'c> {
        Budget {
            interrupt: self.interrupt,
            timeout: self.timeout,
            limit: self.limit,
            shares: self.shares,
            used: AtomicUsize::new(0),
            split: self.split,
            recursion_limit: self.recursion_limit,
        }
    }

    /// A budget for one stretch of a statement split among threads: its share of what
    /// this one has left (the stretches run at once, so together they hold no more than
    /// that), its interrupt, nothing used. The statement charges what the stretches kept,
    /// merged, once they are done (`parallel.rs`).
    pub fn part(&self) -> Budget<'c> {
        // No more stretches than the machine has cores, nor than `threads`, run at once.
        let shares = self.split.threads.min(cores()).max(1);
        Budget {
            interrupt: self.interrupt,
            timeout: self.timeout,
            limit: self.limit.saturating_sub(self.used()) / shares,
            shares,
            used: AtomicUsize::new(0),
            split: Split::ONE,
            recursion_limit: self.recursion_limit,
        }
    }

    /// Also stops once `target` holds `turn`.
    pub fn interruptible(mut self, target: &'c AtomicU64, turn: u64) -> Budget<'c> {
        self.interrupt = Some((target, turn));
        self
    }

    /// Also says, when the turn it stops at is the one `timed_out` holds, that the
    /// statement ran past its timeout `after`.
    pub fn timing_out(mut self, timed_out: &'c AtomicU64, after: Duration) -> Budget<'c> {
        self.timeout = Some((timed_out, after));
        self
    }

    /// Fails if the statement was interrupted (or ran past its timeout).
    #[inline]
    pub fn check(&self, at: Location) -> Result<()> {
        match self.interrupt {
            Some((target, turn)) if target.load(Ordering::Relaxed) == turn => Err(self.stopped(turn, at)),
            _ => Ok(()),
        }
    }

    /// The error of a statement stopped at its turn `turn`.
    #[cold]
    fn stopped(&self, turn: u64, at: Location) -> ExecError {
        match self.timeout {
            Some((timed_out, after)) if timed_out.load(Ordering::Relaxed) == turn => {
                ExecError::new(at, ExecErrorKind::TimedOut { after })
            }
            _ => ExecError::new(at, ExecErrorKind::Interrupted),
        }
    }

    /// Counts `bytes` more of working memory; fails, before they are allocated where the
    /// caller can, once the statement would hold more than the limit. Also checks for an
    /// interrupt.
    /// What is charged so far: a mark to give back to (`release_to`).
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Gives back what was charged since `mark` (a run whose rows are dropped when it
    /// returns, as a correlated subquery's).
    pub fn release_to(&self, mark: usize) {
        self.used.fetch_min(mark, Ordering::Relaxed);
    }

    /// Gives back `bytes` charged earlier (results no longer kept).
    pub fn release(&self, bytes: usize) {
        // Never below zero, whatever the threads' interleaving.
        let _ = self.used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
            Some(u.saturating_sub(bytes))
        });
    }

    pub fn charge(&self, bytes: usize, at: Location) -> Result<()> {
        self.check(at)?;
        let mut now = self.used.load(Ordering::Relaxed);
        loop {
            let used = now.saturating_add(bytes);
            if used > self.limit {
                return Err(ExecError::new(
                    at,
                    ExecErrorKind::MemoryLimit {
                        needed: used.saturating_mul(self.shares),
                        limit: self.limit.saturating_mul(self.shares),
                    },
                ));
            }
            match self
                .used
                .compare_exchange_weak(now, used, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(current) => now = current,
            }
        }
    }
}
