//! What a connection keeps of the statements it was given as text, so that the same text
//! again skips the parser and the planner: `execute`, `query_row` and one-statement
//! scripts (a shell's line, a `.read` file's statement) through `TextCache`, and
//! `prepare_cached` through `StatementCache`.
//!
//! Invariants:
//! - A kept text is keyed by the text and the place it starts at (the locations in its
//!   errors are places in the text it came from), and parses to the same statement
//!   whatever the world holds: nothing about the parse expires.
//! - Its plan and table lists are a `PlanSlot` and a `TableCache`, which check the catalog
//!   before each run and bind again when it moved; a run that finds them in use (a
//!   statement run from inside a run of the same text) binds its own.
//! - A kept text is a one-off run each time: it reads no changes or events as a reader and
//!   moves no cursor. A statement from `prepare_cached` is the same reader from one use to
//!   the next, as if it had been kept by the caller.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;

use super::Prepared;
use crate::exec::TableCache;
use crate::location::Location;
use crate::parse;
use crate::plan::PlanSlot;

/// How many texts a connection keeps parsed and planned.
pub(super) const KEPT_TEXTS: usize = 128;

/// Texts longer than this are never kept: a dump's literal rows, run once.
const LONGEST_KEPT: usize = 16 * 1024;

/// How many statements `prepare_cached` keeps by default, as rusqlite.
pub(super) const DEFAULT_PREPARED_CAPACITY: usize = 16;

/// A text's statement, and what its runs keep for the next.
#[derive(Debug)]
pub(super) struct KeptText {
    pub(super) statement: parse::Statement,
    pub(super) slots: Mutex<Slots>,
}

/// The plan and the scans' table lists of a kept text.
#[derive(Debug, Default)]
pub(super) struct Slots {
    pub(super) tables: RefCell<TableCache>,
    pub(super) plan: RefCell<PlanSlot>,
}

/// Texts by what they say and where they start. A text is kept from its second time on,
/// at most `KEPT_TEXTS` of them. Texts seen once (a value written into each) only leave
/// their hash, and a full cache takes no more until it starts over (when `8 × KEPT_TEXTS`
/// texts were seen): a statement kept and dropped long after, cold, cost more than
/// parsing it again.
#[derive(Debug, Default)]
pub(super) struct TextCache {
    entries: hashbrown::HashMap<String, Vec<(Location, Arc<KeptText>)>>,
    kept: usize,
    seen: hashbrown::HashSet<u64>,
}

impl TextCache {
    pub(super) fn get(&self, sql: &str, at: Location) -> Option<Arc<KeptText>> {
        let places = self.entries.get(sql)?;
        places.iter().find(|(l, _)| *l == at).map(|(_, k)| Arc::clone(k))
    }

    /// Notes that `sql`, starting at `at`, parsed to `statement`; keeps it when this is
    /// its second time.
    pub(super) fn put(&mut self, sql: &str, at: Location, statement: parse::Statement) -> Text {
        use std::hash::BuildHasher;
        if sql.len() > LONGEST_KEPT {
            return Text::Once(Box::new(statement));
        }
        let hash = self.seen.hasher().hash_one((sql, at));
        if self.seen.insert(hash) {
            if self.seen.len() > 8 * KEPT_TEXTS {
                self.seen.clear();
                self.entries.clear();
                self.kept = 0;
            }
            return Text::Once(Box::new(statement));
        }
        if self.kept >= KEPT_TEXTS {
            return Text::Once(Box::new(statement));
        }
        let kept = Arc::new(KeptText {
            statement,
            slots: Mutex::default(),
        });
        self.entries
            .entry_ref(sql)
            .or_default()
            .push((at, Arc::clone(&kept)));
        self.kept += 1;
        Text::Kept(kept)
    }
}

/// A statement given as text: kept by the connection, or parsed for this run only.
#[derive(Debug)]
pub(super) enum Text {
    Kept(Arc<KeptText>),
    Once(Box<parse::Statement>),
}

impl Text {
    pub(super) fn statement(&self) -> &parse::Statement {
        match self {
            Text::Kept(k) => &k.statement,
            Text::Once(s) => s,
        }
    }
}

/// `prepare_cached`'s statements, put back when their `CachedStatement` is dropped: the
/// most lately used first, at most `capacity`.
#[derive(Debug)]
pub(super) struct StatementCache {
    parked: VecDeque<(String, Prepared)>,
    capacity: usize,
}

impl Default for StatementCache {
    fn default() -> StatementCache {
        StatementCache {
            parked: VecDeque::new(),
            capacity: DEFAULT_PREPARED_CAPACITY,
        }
    }
}

impl StatementCache {
    /// Takes out the statement kept for `sql`, if any.
    pub(super) fn take(&mut self, sql: &str) -> Option<Prepared> {
        let at = self.parked.iter().position(|(text, _)| text == sql)?;
        self.parked.remove(at).map(|(_, p)| p)
    }

    /// Keeps `prepared` for its text, first (in place of another of the same text, taken
    /// out twice); the least lately used goes past capacity.
    pub(super) fn park(&mut self, sql: String, prepared: Prepared) {
        if self.capacity == 0 {
            return;
        }
        self.parked.retain(|(text, _)| *text != sql);
        self.parked.push_front((sql, prepared));
        self.parked.truncate(self.capacity);
    }

    pub(super) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.parked.truncate(capacity);
    }

    pub(super) fn clear(&mut self) {
        self.parked.clear();
    }
}
