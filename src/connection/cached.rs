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
//! - A text that misses (`PRAGMA parameterize`, on by default) is looked up by its shape
//!   too (`parse::shape`: its literals masked in place): texts of one shape share the
//!   statement with its constants lifted into parameters (`plan::lift`), and its plan,
//!   each run with its own text's values. A shape is kept from its second text on (from
//!   its first with `always`), at most `KEPT_TEXTS` of them, and remembered when its
//!   statement has nothing to lift; a text the shared plan cannot serve (another value
//!   where a literal stays, another kind of value) runs as written.
//! - A kept text is a one-off run each time: it reads no changes or events as a reader and
//!   moves no cursor. A statement from `prepare_cached` is the same reader from one use to
//!   the next, as if it had been kept by the caller.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::Prepared;
use crate::exec::TableCache;
use crate::location::Location;
use crate::parse;
use crate::plan::{Lifted, ParamValues, PlanSlot};

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

/// A shape's statement with its constants lifted, and what its runs keep for the next.
#[derive(Debug)]
pub(super) struct KeptShape {
    pub(super) lifted: Lifted,
    pub(super) slots: Mutex<Slots>,
    /// Set once a text of the shape failed to plan lifted but planned as written: the
    /// shape's texts run as written from then on.
    refused: AtomicBool,
}

impl KeptShape {
    /// Stops lifting the constants of this shape's texts.
    pub(super) fn refuse(&self) {
        self.refused.store(true, Ordering::Relaxed);
    }
}

/// A shape's statement kept for texts starting at a place: `None` when it has no
/// constant to lift.
type ShapePlace = (Location, Option<Arc<KeptShape>>);

/// Whether texts share plans by shape (`PRAGMA parameterize`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Parameterize {
    /// Never: each text is planned as written.
    Off,
    /// From a shape's second text on.
    #[default]
    On,
    /// From a shape's first text on.
    Always,
}

impl Parameterize {
    pub(super) fn parse(value: &str) -> Option<Parameterize> {
        match value.to_ascii_lowercase().as_str() {
            "off" | "0" | "false" => Some(Parameterize::Off),
            "on" | "1" | "true" => Some(Parameterize::On),
            "always" | "2" => Some(Parameterize::Always),
            _ => None,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Parameterize::Off => "off",
            Parameterize::On => "on",
            Parameterize::Always => "always",
        }
    }
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
    /// Shapes by their key and where they start, one statement for each set of values of
    /// the literals that stay (`plan::Lifted`); `None` for a shape whose statement has no
    /// constant to lift.
    shapes: hashbrown::HashMap<String, Vec<ShapePlace>>,
    shapes_kept: usize,
    shapes_seen: hashbrown::HashSet<u64>,
    pub(super) parameterize: Parameterize,
}

impl TextCache {
    /// Forgets every text and shape; the setting stays.
    pub(super) fn clear(&mut self) {
        *self = TextCache {
            parameterize: self.parameterize,
            ..TextCache::default()
        };
    }

    /// The shared statement of `sql`'s shape (`sql` starts at `at`), with the values
    /// `sql` gives its parameters, when one is kept and serves `sql`.
    pub(super) fn lifted(
        &self,
        shape: &parse::Shape,
        sql: &str,
        at: Location,
    ) -> Option<(Arc<KeptShape>, ParamValues)> {
        self.shapes.get(&shape.key)?.iter().find_map(|(l, kept)| {
            let kept = kept
                .as_ref()
                .filter(|k| *l == at && !k.refused.load(Ordering::Relaxed))?;
            let values = kept.lifted.values(sql, shape)?;
            Some((Arc::clone(kept), lifted_values(values)))
        })
    }

    /// Notes that `sql`, of shape `shape`, starting at `at`, parsed to `statement`; keeps
    /// the statement with its constants lifted when this is its shape's second text (with
    /// `Parameterize::Always`, its first), and returns it with `sql`'s values.
    pub(super) fn note_shape(
        &mut self,
        shape: &parse::Shape,
        sql: &str,
        at: Location,
        statement: &parse::Statement,
    ) -> Option<(Arc<KeptShape>, ParamValues)> {
        use std::hash::BuildHasher;
        if sql.len() > LONGEST_KEPT || self.parameterize == Parameterize::Off {
            return None;
        }
        // Nothing to lift in this shape, or its texts run as written (`KeptShape::refuse`).
        // Else `lifted` found no statement of the shape that serves `sql` (each has
        // other values where literals stay), and one is kept for `sql`'s.
        if self.shapes.get(&shape.key).is_some_and(|p| {
            p.iter()
                .any(|(l, kept)| *l == at && kept.as_ref().is_none_or(|k| k.refused.load(Ordering::Relaxed)))
        }) {
            return None;
        }
        let hash = self.shapes_seen.hasher().hash_one((&shape.key, at));
        if self.parameterize == Parameterize::On && self.shapes_seen.insert(hash) {
            if self.shapes_seen.len() > 8 * KEPT_TEXTS {
                self.shapes_seen.clear();
                self.shapes.clear();
                self.shapes_kept = 0;
            }
            return None;
        }
        if self.shapes_kept >= KEPT_TEXTS {
            return None;
        }
        let lifted = crate::plan::lift(statement, sql, shape);
        let values = lifted.as_ref().and_then(|l| l.values(sql, shape));
        let kept = lifted.filter(|_| values.is_some()).map(|lifted| {
            Arc::new(KeptShape {
                lifted,
                slots: Mutex::default(),
                refused: AtomicBool::new(false),
            })
        });
        self.shapes
            .entry_ref(&shape.key)
            .or_default()
            .push((at, kept.clone()));
        self.shapes_kept += 1;
        Some((kept?, lifted_values(values?)))
    }

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

fn lifted_values(positional: Vec<crate::storage::Value>) -> ParamValues {
    ParamValues {
        positional,
        ..ParamValues::default()
    }
}

/// A statement given as text: kept by the connection, parsed for this run only, or its
/// shape's statement with the values of its lifted constants.
#[derive(Debug)]
pub(super) enum Text {
    Kept(Arc<KeptText>),
    Once(Box<parse::Statement>),
    Lifted(Arc<KeptShape>, ParamValues),
}

impl Text {
    /// The statement as the text wrote it (for a lifted one: its kind and where it is;
    /// the constants are parameters).
    pub(super) fn statement(&self) -> &parse::Statement {
        match self {
            Text::Kept(k) => &k.statement,
            Text::Once(s) => s,
            Text::Lifted(k, _) => &k.lifted.statement,
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
