//! What a running statement may still spend: it stops when its connection's interrupt
//! handle fires, and it may hold no more working memory than the database's limit.
//!
//! Invariants:
//! - Every loop whose length grows with the data (morsels of a scan, chunks of join pairs,
//!   series values, traversal levels, groups, sorts, set operations) calls `check` at
//!   least once per morsel or chunk, so an interrupt is seen within a morsel's work.
//! - Every structure that grows with the data (materialized relations and join sides,
//!   result rows, groups, sort keys, series) is `charge`d before or as it grows, with
//!   an estimate of its bytes; a charge past the limit fails the statement with an error
//!   instead of asking the allocator. Data streamed a morsel at a time is not charged.
//! - A failed check leaves the world as any failed statement does: reads change nothing,
//!   and writes compute everything before they write, so they stop before the first write.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::ExecError;
use crate::location::Location;

type Result<T> = std::result::Result<T, ExecError>;

/// A statement's budget of time (an interrupt) and memory.
#[derive(Debug)]
pub struct Budget<'c> {
    /// The interrupt target of the statement's connection, and this statement's turn:
    /// the statement is interrupted when the two are equal.
    interrupt: Option<(&'c AtomicU64, u64)>,
    limit: usize,
    used: Cell<usize>,
}

impl<'c> Budget<'c> {
    /// A budget that is never interrupted and may use at most `limit` bytes.
    pub fn new(limit: usize) -> Budget<'c> {
        Budget {
            interrupt: None,
            limit,
            used: Cell::new(0),
        }
    }

    /// A new budget with the same limit and interrupt, nothing used yet: for each
    /// statement a TICK runs.
    pub fn fresh(&self) -> Budget<'c> {
        Budget {
            interrupt: self.interrupt,
            limit: self.limit,
            used: Cell::new(0),
        }
    }

    /// Also stops once `target` holds `turn`.
    pub fn interruptible(mut self, target: &'c AtomicU64, turn: u64) -> Budget<'c> {
        self.interrupt = Some((target, turn));
        self
    }

    /// Fails if the statement was interrupted.
    #[inline]
    pub fn check(&self, at: Location) -> Result<()> {
        match self.interrupt {
            Some((target, turn)) if target.load(Ordering::Relaxed) == turn => {
                Err(ExecError::Interrupted { at })
            }
            _ => Ok(()),
        }
    }

    /// Counts `bytes` more of working memory; fails, before they are allocated where the
    /// caller can, once the statement would hold more than the limit. Also checks for an
    /// interrupt.
    /// What is charged so far: a mark to give back to (`release_to`).
    pub fn used(&self) -> usize {
        self.used.get()
    }

    /// Gives back what was charged since `mark` (a run whose rows are dropped when it
    /// returns, as a correlated subquery's).
    pub fn release_to(&self, mark: usize) {
        self.used.set(self.used.get().min(mark));
    }

    /// Gives back `bytes` charged earlier (results no longer kept).
    pub fn release(&self, bytes: usize) {
        self.used.set(self.used.get().saturating_sub(bytes));
    }

    pub fn charge(&self, bytes: usize, at: Location) -> Result<()> {
        self.check(at)?;
        let used = self.used.get().saturating_add(bytes);
        if used > self.limit {
            return Err(ExecError::MemoryLimit {
                needed: used,
                limit: self.limit,
                at,
            });
        }
        self.used.set(used);
        Ok(())
    }
}
