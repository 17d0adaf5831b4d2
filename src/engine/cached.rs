//! What a client keeps of the statements it was given as text, so that the same text
//! again skips the parser and the planner: `execute`, `query_row` and one-statement
//! scripts (a shell's line, a `.read` file's statement) go through `TextCache`.
//!
//! Invariants:
//! - A kept text is keyed by the text alone when its statement is
//!   place-independent (`StatementKind::is_place_independent`: the queries and writes of rows): it is parsed as
//!   beginning at line 1, column 1, and a run of it from another place of a script has
//!   its errors moved there (`Error::move_to`), so that the statements of a file share
//!   it wherever they stand. Any other statement is kept for the place it starts at too
//!   (its text is kept past the run, or its errors are places in another text). Either
//!   parses to the same statement whatever the world holds: nothing about the parse
//!   expires.
//! - Its plan and table lists are a `PlanSlot` and a `TableCache`, which check the catalog
//!   before each run and bind again when it moved; a run that finds them in use (a
//!   statement run from inside a run of the same text) binds its own.
//! - A text that misses (`PRAGMA parameterize`, on by default) is looked up by its shape
//!   too (`parse::shape`: its literals masked as `0` or `'_'` whatever their widths,
//!   taken as beginning at line 1, column 1 wherever the text starts): texts of one
//!   shape share the statement with its constants lifted into parameters
//!   (`plan::lift`), and its plan, each run with its own text's values. A shape is kept
//!   from its second text on (from its first with `always`), with at most `VARIANTS`
//!   statements (one for each set of values of the literals that stay), and remembered
//!   when its statement has nothing to lift; past `KEPT_TEXTS` statements the kept
//!   shapes start over (the statements kept before are freed a few at each lookup after,
//!   never all by the text that made it start over). A text the shared plans
//!   cannot serve (another value where a literal stays, another kind of value)
//!   runs as written; so does a text seen before while texts are still kept as
//!   themselves, which runs faster than its shape from then on. The lifted statement's
//!   error, when it fails to plan, is never given: the text runs as written instead.
//! - A kept text is a one-off run each time: it reads no changes or events as a reader and
//!   moves no cursor.

use std::cell::RefCell;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use crate::exec::TableCache;
use crate::location::Location;
use crate::parse;
use crate::plan::{Lifted, NotLifted, ParamValues, PlanSlot};

/// How many texts a connection keeps parsed and planned.
pub(super) const KEPT_TEXTS: usize = 128;

/// Texts longer than this are never kept: a dump's literal rows, run once.
const LONGEST_KEPT: usize = parse::LONGEST_SHAPED;

/// The most statements kept for one shape, each for other values of the literals that
/// stay in it.
const VARIANTS: usize = 8;

/// A text's statement, and what its runs keep for the next.
#[derive(Debug)]
pub(super) struct KeptText {
    pub(super) statement: parse::Statement,
    /// Where the statement was parsed as starting, when it serves its text only there;
    /// `None`: parsed as starting at line 1, column 1, it serves its text anywhere.
    place: Option<Location>,
    pub(super) slots: Mutex<Slots>,
}

/// A shape's statement with its constants lifted, and what its runs keep for the next.
#[derive(Debug)]
pub(super) struct KeptShape {
    pub(super) lifted: Lifted,
    /// The lifted statement printed back (`?1` … `?n` where the constants were): what a
    /// file database's journal keeps for a text run as this shape, with the text's
    /// values as its parameters, so that opening runs it as a prepared statement.
    pub(super) text: String,
    pub(super) slots: Mutex<Slots>,
    /// The literals of the text it was parsed from (as beginning at line 1, column 1):
    /// another text of the shape, whose literals may be wider or narrower, has an error
    /// of its run moved to its own places (`parse::place_in`).
    pub(super) literals: Vec<parse::MaskedLiteral>,
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

/// Where a text parsed as beginning at line 1, column 1 is parsed from.
const ORIGIN: Location = Location { line: 1, column: 1 };

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

/// Texts by what they say (and, for a statement that is not place-independent, where they start).
/// A text is kept from its second time on,
/// at most `KEPT_TEXTS` of them. Texts seen once (a value written into each) only leave
/// their hash, and a full cache takes no more until it starts over (when `8 × KEPT_TEXTS`
/// texts were seen): a statement kept and dropped long after, cold, cost more than
/// parsing it again.
#[derive(Debug, Default)]
pub(super) struct TextCache {
    entries: hashbrown::HashMap<String, Vec<Arc<KeptText>>>,
    kept: usize,
    seen: hashbrown::HashSet<u64>,
    /// Shapes by their key, one statement for each set of values of the literals that
    /// stay (`plan::Lifted`); `None` for a shape whose statement has no constant to lift
    /// (or is not place-independent).
    shapes: hashbrown::HashMap<String, Vec<Option<Arc<KeptShape>>>>,
    shapes_kept: usize,
    shapes_seen: hashbrown::HashSet<u64>,
    pub(super) parameterize: Parameterize,
    /// The statements of texts and shapes kept before the cache started over, each with
    /// its plan: `FREED_PER_LOOKUP` are freed at each lookup after it. Freeing 128 plans
    /// takes hundreds of microseconds, which the text that made the cache start over
    /// would pay alone; on another thread, its frees slowed the connection's thread more
    /// than freeing them here (the corpus's first run took 1.05× SQLite's time that way,
    /// 1.03× this way). A start-over adds at most `KEPT_TEXTS` and comes at least
    /// `KEPT_TEXTS` lookups after the one before, which free twice that: the list never
    /// holds more than two start-overs' statements.
    retired: Vec<Retired>,
}

/// How many statements of a start-over (`TextCache::retired`) each lookup frees.
const FREED_PER_LOOKUP: usize = 2;

/// A statement of a cache that started over, to be dropped.
#[derive(Debug)]
#[allow(dead_code)] // Held to be dropped, never read.
pub(super) enum Retired {
    Text(Arc<KeptText>),
    Shape(Arc<KeptShape>),
}

impl TextCache {
    /// Forgets every text and shape; the setting stays.
    pub(super) fn clear(&mut self) {
        *self = TextCache {
            parameterize: self.parameterize,
            ..TextCache::default()
        };
    }

    /// The text kept for `sql` (starting at `at`), or the statement kept for its shape
    /// with `sql`'s values (only when `lift`: the text is given no parameter values);
    /// else `sql`'s shape, when its constants may be lifted, for `keep`. A text given
    /// again is kept as itself (`put`), which runs faster than its shape, while there is
    /// room for it.
    pub(super) fn find(&mut self, sql: &str, at: Location, lift: bool) -> Result<Text, Option<parse::Shape>> {
        if !self.retired.is_empty() {
            let left = self.retired.len().saturating_sub(FREED_PER_LOOKUP);
            self.retired.truncate(left);
        }
        if let Some(kept) = self.get(sql, at) {
            return Ok(Text::Kept(kept));
        }
        let keeps_it = self.kept < KEPT_TEXTS && self.seen_before(sql);
        if !lift || self.parameterize == Parameterize::Off || keeps_it {
            return Err(None);
        }
        let shape = parse::shape(sql, ORIGIN).ok_or(None)?;
        match self.lifted(&shape, sql) {
            Some((kept, values)) => Ok(Text::Lifted(kept, values, shape.literals)),
            None => Err(Some(shape)),
        }
    }

    /// `statement`, parsed from `sql` as starting at `at` (of shape `shape`, from
    /// `find`), kept for its shape with its constants lifted, or for its text, or for
    /// this run only. A statement kept to serve its text anywhere is parsed again as
    /// starting at line 1, column 1, when it was not.
    pub(super) fn keep(
        &mut self,
        sql: &str,
        at: Location,
        statement: Box<parse::Statement>,
        shape: Option<parse::Shape>,
    ) -> Text {
        if let Some(shape) = shape
            && let Some((kept, values)) = self.note_shape(&shape, sql, at, &statement)
        {
            return Text::Lifted(kept, values, shape.literals);
        }
        self.put(sql, at, statement)
    }

    /// The shared statement of `sql`'s shape, with the values `sql` gives its
    /// parameters, when one is kept and serves `sql`; the text is noted as seen, so that
    /// given again it is kept as itself (`put`), which runs faster than its shape.
    fn lifted(&mut self, shape: &parse::Shape, sql: &str) -> Option<(Arc<KeptShape>, ParamValues)> {
        let found = self.shapes.get(&shape.key)?.iter().find_map(|kept| {
            let kept = kept.as_ref().filter(|k| !k.refused.load(Ordering::Relaxed))?;
            let values = kept.lifted.values(sql, shape)?;
            Some((Arc::clone(kept), lifted_values(values)))
        })?;
        let hash = self.text_hash(sql);
        self.sight(hash);
        Some(found)
    }

    /// Notes that `sql`, of shape `shape`, parsed to `statement` as starting at `at`;
    /// keeps the statement (parsed as starting at line 1, column 1) with its constants
    /// lifted when this is its shape's second text (with `Parameterize::Always`, its
    /// first), and returns it with `sql`'s values. At most `VARIANTS` statements are kept
    /// for one shape, and at most `KEPT_TEXTS` in all: the next one starts the kept
    /// shapes over.
    fn note_shape(
        &mut self,
        shape: &parse::Shape,
        sql: &str,
        at: Location,
        statement: &parse::Statement,
    ) -> Option<(Arc<KeptShape>, ParamValues)> {
        if self.parameterize == Parameterize::Off {
            return None;
        }
        // Nothing to lift in this shape, its texts run as written (`KeptShape::refuse`),
        // or it has all the statements it may keep (each for other values where its
        // literals stay: `lifted` found none that serves `sql`).
        if let Some(variants) = self.shapes.get(&shape.key) {
            let closed = variants
                .iter()
                .any(|kept| kept.as_ref().is_none_or(|k| k.refused.load(Ordering::Relaxed)));
            if closed || variants.len() >= VARIANTS {
                return None;
            }
        }
        let hash = self.shapes_seen.hasher().hash_one(&shape.key);
        if self.parameterize == Parameterize::On && self.shapes_seen.insert(hash) {
            if self.shapes_seen.len() > 8 * KEPT_TEXTS {
                self.shapes_seen.clear();
                self.retire_shapes();
            }
            return None;
        }
        // The same text parses the same way anywhere: parsed again from line 1,
        // column 1, it is one statement.
        let again;
        let lifted = if !statement.kind.is_place_independent() {
            Err(NotLifted::Shape)
        } else if at == ORIGIN {
            crate::plan::lift(statement, sql, shape)
        } else {
            again = parse::parse_one(sql).ok()?;
            crate::plan::lift(&again, sql, shape)
        };
        let kept = match lifted {
            Ok(lifted) => {
                let values = lifted.values(sql, shape)?;
                let kept = Arc::new(KeptShape {
                    text: lifted.statement.to_string(),
                    lifted,
                    slots: Mutex::default(),
                    literals: shape.literals.clone(),
                    refused: AtomicBool::new(false),
                });
                Some((kept, values))
            }
            Err(NotLifted::Text) => return None,
            Err(NotLifted::Shape) => None,
        };
        if self.shapes_kept >= KEPT_TEXTS {
            self.retire_shapes();
        }
        self.shapes
            .entry_ref(&shape.key)
            .or_default()
            .push(kept.as_ref().map(|(k, _)| Arc::clone(k)));
        self.shapes_kept += 1;
        let (kept, values) = kept?;
        let hash = self.text_hash(sql);
        self.sight(hash);
        Some((kept, lifted_values(values)))
    }

    /// Puts `statements` with those to be freed over the next lookups (`retired`).
    fn hand_over(&mut self, statements: impl Iterator<Item = Retired>) {
        self.retired.extend(statements);
    }

    /// Starts the kept shapes over; their statements are freed over the next lookups.
    fn retire_shapes(&mut self) {
        let shapes = std::mem::take(&mut self.shapes);
        let statements = shapes.into_values().flatten().flatten().map(Retired::Shape);
        self.hand_over(statements);
        self.shapes_kept = 0;
    }

    /// The statement kept for `sql` that serves it at `at`.
    fn get(&self, sql: &str, at: Location) -> Option<Arc<KeptText>> {
        let kept = self.entries.get(sql)?;
        kept.iter()
            .find(|k| k.place.is_none_or(|p| p == at))
            .map(Arc::clone)
    }

    /// Whether `sql` was given lately (and is kept from now on).
    fn seen_before(&self, sql: &str) -> bool {
        self.seen.contains(&self.text_hash(sql))
    }

    fn text_hash(&self, sql: &str) -> u64 {
        self.seen.hasher().hash_one(sql)
    }

    /// Notes a text seen; says whether it was seen before. Past `8 × KEPT_TEXTS` texts
    /// seen, the kept texts start over.
    fn sight(&mut self, hash: u64) -> bool {
        if self.seen.insert(hash) {
            if self.seen.len() > 8 * KEPT_TEXTS {
                self.seen.clear();
                let entries = std::mem::take(&mut self.entries);
                let texts = entries.into_values().flatten().map(Retired::Text);
                self.hand_over(texts);
                self.kept = 0;
            }
            return false;
        }
        true
    }

    /// Notes that `sql` parsed to `statement` as starting at `at`; keeps it when this is
    /// its second time: for any place when it is place-independent (parsed again as starting at line
    /// 1, column 1 if it was not), else for `at`, when it is its second time there.
    fn put(&mut self, sql: &str, at: Location, statement: Box<parse::Statement>) -> Text {
        if sql.len() > LONGEST_KEPT {
            return Text::Once(statement);
        }
        // A statement that is not place-independent is kept for its place: seen at each place.
        let place_independent = statement.kind.is_place_independent();
        let hash = match place_independent {
            true => self.text_hash(sql),
            false => self.seen.hasher().hash_one((sql, at)),
        };
        if !self.sight(hash) || self.kept >= KEPT_TEXTS {
            return Text::Once(statement);
        }
        let (statement, place) = if !place_independent {
            (statement, Some(at))
        } else if at == ORIGIN {
            (statement, None)
        } else {
            match parse::parse_one_boxed(sql) {
                Ok(again) => (again, None),
                Err(_) => return Text::Once(statement),
            }
        };
        let kept = Arc::new(KeptText {
            statement: *statement,
            place,
            slots: Mutex::default(),
        });
        self.entries.entry_ref(sql).or_default().push(Arc::clone(&kept));
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
/// shape's statement with the values of its lifted constants and the places of its
/// literals (`KeptShape::literals`).
#[derive(Debug)]
pub(super) enum Text {
    Kept(Arc<KeptText>),
    Once(Box<parse::Statement>),
    Lifted(Arc<KeptShape>, ParamValues, Vec<parse::MaskedLiteral>),
}

impl Text {
    /// Whether the statement was parsed as starting at line 1, column 1, whatever place
    /// its text was given at: its errors are to be moved there (`Error::move_to`).
    pub(super) fn at_origin(&self) -> bool {
        match self {
            Text::Kept(k) => k.place.is_none(),
            Text::Once(_) => false,
            Text::Lifted(..) => true,
        }
    }

    /// The statement as the text wrote it (for a lifted one: its kind and where it is;
    /// the constants are parameters).
    pub(super) fn statement(&self) -> &parse::Statement {
        match self {
            Text::Kept(k) => &k.statement,
            Text::Once(s) => s,
            Text::Lifted(k, ..) => &k.lifted.statement,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How the cache gives `sql`: "text" (kept as itself), "shape" (its shape's
    /// statement) or "once" (parsed for this run), as `Connection` asks it.
    fn given(cache: &mut TextCache, sql: &str) -> &'static str {
        given_at(cache, sql, ORIGIN).0
    }

    /// `given` for `sql` starting at `at` (a script's statement), and the place of the
    /// statement's first word in what the cache gives.
    fn given_at(cache: &mut TextCache, sql: &str, at: Location) -> (&'static str, Location) {
        let text = match cache.find(sql, at, true) {
            Ok(text) => text,
            Err(shape) => {
                let statement = parse::parse_at(sql, at).unwrap().pop().unwrap();
                cache.keep(sql, at, Box::new(statement), shape)
            }
        };
        let first = text.statement().at;
        let way = match text {
            Text::Kept(_) => "text",
            Text::Lifted(..) => "shape",
            Text::Once(_) => "once",
        };
        (way, first)
    }

    #[test]
    fn statements_of_a_script_share_what_is_kept_wherever_they_stand() {
        let mut cache = TextCache::default();
        let (one, two, three) = (Location::new(1, 1), Location::new(7, 3), Location::new(9, 1));
        // A query is place-independent: kept from its second time, wherever that is, parsed as
        // starting at line 1, column 1 (its errors are moved to where it runs).
        let sql = "SELECT count(*) FROM P";
        assert_eq!(given_at(&mut cache, sql, two), ("once", two));
        assert_eq!(given_at(&mut cache, sql, three), ("text", one));
        assert_eq!(given_at(&mut cache, sql, two), ("text", one));
        // So does a shape: its second text, at another place, is lifted.
        let sql = |n: u32| format!("SELECT id FROM P WHERE P.n > {n}");
        assert_eq!(given_at(&mut cache, &sql(1), two), ("once", two));
        assert_eq!(given_at(&mut cache, &sql(2), three), ("shape", one));
        assert_eq!(given_at(&mut cache, &sql(3), one), ("shape", one));
        // A TICK is not place-independent (its errors are the systems'): kept for each place it
        // is given at twice, as parsed there.
        assert_eq!(given_at(&mut cache, "TICK 2", two), ("once", two));
        assert_eq!(given_at(&mut cache, "TICK 2", three), ("once", three));
        assert_eq!(given_at(&mut cache, "TICK 2", three), ("text", three));
        assert_eq!(given_at(&mut cache, "TICK 2", two), ("text", two));
    }

    #[test]
    fn a_statement_kept_per_place_does_not_fill_the_cache_from_a_long_script() {
        // A script of many TICK lines, each at its own place, then a query given again.
        let mut cache = TextCache::default();
        for line in 1..=2 * KEPT_TEXTS as u32 {
            assert_eq!(given_at(&mut cache, "TICK", Location::new(line, 1)).0, "once");
        }
        let sql = "SELECT count(*) FROM P";
        let ways: Vec<_> = (0..3).map(|_| given(&mut cache, sql)).collect();
        assert_eq!(ways, ["once", "text", "text"]);
    }

    #[test]
    fn a_shape_is_shared_from_its_second_text_and_a_repeated_text_is_kept_as_itself() {
        let mut cache = TextCache::default();
        let ways: Vec<_> = ["1", "2", "3", "3", "3", "4"]
            .iter()
            .map(|n| given(&mut cache, &format!("SELECT P.x FROM P WHERE P.n > {n}")))
            .collect();
        // The text's second time keeps it as itself.
        assert_eq!(ways, ["once", "shape", "shape", "text", "text", "shape"]);
    }

    #[test]
    fn a_zero_after_a_minus_is_not_lifted_but_does_not_close_its_shape() {
        let mut cache = TextCache::default();
        let ways: Vec<_> = ["5", "0", "1", "0", "7"]
            .iter()
            .map(|n| given(&mut cache, &format!("SELECT P.x FROM P WHERE P.n > P.m - {n}")))
            .collect();
        // `- 0` cannot be told from `-0` folded: that text runs as written (and is kept
        // as itself its second time); the shape's other texts are lifted.
        assert_eq!(ways, ["once", "once", "shape", "text", "shape"]);
        // A 0 with no `-` before it is lifted like any number.
        let ways: Vec<_> = ["5", "0", "1"]
            .iter()
            .map(|n| given(&mut cache, &format!("SELECT P.x FROM P WHERE P.n > {n}")))
            .collect();
        assert_eq!(ways, ["once", "shape", "shape"]);
    }

    #[test]
    fn kept_shapes_start_over_when_full_and_a_shape_keeps_few_variants() {
        let mut cache = TextCache::default();
        // LIMIT stays in the statement: each value is a statement of its own, at most
        // VARIANTS of them for one shape.
        let ways: Vec<_> = (100..100 + 2 * VARIANTS + 2)
            .map(|k| given(&mut cache, &format!("SELECT id FROM P WHERE P.n > 1 LIMIT {k}")))
            .collect();
        assert_eq!(ways.iter().filter(|w| **w == "shape").count(), VARIANTS);
        // Past KEPT_TEXTS shapes, the next starts the kept ones over: lifting goes on.
        for k in 0..KEPT_TEXTS + 10 {
            for n in ["1", "2"] {
                given(&mut cache, &format!("SELECT id FROM P{k} WHERE P{k}.n > {n}"));
            }
        }
        let last = KEPT_TEXTS + 9;
        assert_eq!(
            given(&mut cache, &format!("SELECT id FROM P{last} WHERE P{last}.n > 3")),
            "shape"
        );
        // A shape seen before the start over is kept again from its next text.
        assert_eq!(given(&mut cache, "SELECT id FROM P3 WHERE P3.n > 3"), "shape");
    }

    /// Keeps `KEPT_TEXTS` texts in `cache`, then gives it texts seen once until it starts
    /// over: the kept statements, to see when they are freed.
    fn fill_and_start_over(cache: &mut TextCache) -> Vec<std::sync::Weak<KeptText>> {
        let kept = (0..KEPT_TEXTS)
            .map(|k| {
                let sql = format!("SELECT id FROM P{k}");
                assert_eq!([given(cache, &sql), given(cache, &sql)], ["once", "text"]);
                match cache.find(&sql, ORIGIN, true) {
                    Ok(Text::Kept(text)) => Arc::downgrade(&text),
                    _ => panic!("{sql} is not kept"),
                }
            })
            .collect();
        let mut n = 0;
        while cache.kept > 0 {
            given(cache, &format!("SELECT id FROM Q{n}"));
            n += 1;
            assert!(n <= 8 * KEPT_TEXTS, "the cache never started over");
        }
        kept
    }

    fn alive(kept: &[std::sync::Weak<KeptText>]) -> usize {
        kept.iter().filter(|k| k.strong_count() > 0).count()
    }

    #[test]
    fn a_cache_that_starts_over_frees_its_statements_over_the_next_lookups() {
        let mut cache = TextCache::default();
        let kept = fill_and_start_over(&mut cache);
        // The text that made it start over freed none of the kept statements.
        assert_eq!(alive(&kept), KEPT_TEXTS);
        // Each lookup after it frees `FREED_PER_LOOKUP`, until none is left.
        for n in 1..=KEPT_TEXTS / FREED_PER_LOOKUP {
            given(&mut cache, &format!("SELECT id FROM R{n}"));
            assert_eq!(
                alive(&kept),
                KEPT_TEXTS - n * FREED_PER_LOOKUP,
                "after {n} lookups"
            );
        }
        assert!(cache.retired.is_empty());
    }

    #[test]
    fn a_text_given_again_goes_by_its_shape_when_no_more_texts_are_kept() {
        let mut cache = TextCache::default();
        let text = |k: usize| format!("SELECT id FROM P WHERE P.n > {k:04}");
        for k in 0..KEPT_TEXTS + 10 {
            given(&mut cache, &text(k));
        }
        // The first KEPT_TEXTS texts given again are kept as themselves; the cache is
        // then full, and the others go by their shape.
        let again: Vec<_> = (0..KEPT_TEXTS + 10)
            .map(|k| given(&mut cache, &text(k)))
            .collect();
        assert!(again[..KEPT_TEXTS].iter().all(|w| *w == "text"), "{again:?}");
        assert!(again[KEPT_TEXTS..].iter().all(|w| *w == "shape"), "{again:?}");
    }
}
