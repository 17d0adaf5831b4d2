//! The write-observer seam: structures kept beside the tables (secondary indexes today;
//! change tracking and a journal next) learn of every change the world makes through
//! `Observer`, without the world knowing what they are.
//!
//! Invariants:
//! - `World` calls its observers after every change that succeeded, never for one that
//!   failed (a failed operation changes nothing), in the order they were added.
//! - Every way rows come, go, move or change value reaches an observer: spawns (`spawned`),
//!   attaches (`attached`), detaches (`detached`), despawns (`despawning`, before the row
//!   goes), field writes through `World::set` and the columnar door (`written`, for the
//!   fields an observer `watches`), and dropped component types (`component_dropped`).
//! - Observers are owned by the world and copied with it, so a transaction's copy restores
//!   them exactly with the tables.

use std::any::Any;
use std::fmt;
use std::ops::Range;

use super::ids::{ComponentId, Entity, FieldId};
use super::table::Table;

/// The rows of a table a write reached: a span of them, or exactly these (ascending).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written<'a> {
    Span(usize, usize),
    Picked(&'a [u32]),
}

impl Written<'_> {
    /// The rows as runs of consecutive rows, in order.
    pub fn runs(self) -> impl Iterator<Item = Range<usize>> {
        let (span, picked) = match self {
            Written::Span(start, end) => (Some(start..end), &[][..]),
            Written::Picked(p) => (None, p),
        };
        let mut i = 0;
        let runs = std::iter::from_fn(move || {
            let first = *picked.get(i)? as usize;
            let mut end = first + 1;
            i += 1;
            while picked.get(i).is_some_and(|&r| r as usize == end) {
                end += 1;
                i += 1;
            }
            Some(first..end)
        });
        span.into_iter().chain(runs)
    }

    /// How many rows.
    pub fn len(self) -> usize {
        match self {
            Written::Span(start, end) => end.saturating_sub(start),
            Written::Picked(p) => p.len(),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

impl From<&Range<usize>> for Written<'_> {
    fn from(r: &Range<usize>) -> Self {
        Written::Span(r.start, r.end)
    }
}

/// A structure that follows every change to a world's rows. Methods receive the tables as
/// they are after the change (before it, for `despawning`), so an observer can read the
/// values it keeps.
pub trait Observer: Any + Send + Sync + fmt::Debug {
    /// Rows `rows` of `table` were just appended by a spawn: their entities are new.
    fn spawned(&mut self, table: &Table, rows: Range<usize>);

    /// The entities at `rows` of `table` were just given `component`, moving there from
    /// the tables of their other components (many at once when a statement attaches to
    /// many).
    fn attached(&mut self, table: &Table, rows: Range<usize>, component: ComponentId);

    /// `entity` just lost `component`; it lives on in the table of its other components.
    fn detached(&mut self, entity: Entity, component: ComponentId);

    /// The entity at `row` of `table` is about to be despawned, with every component the
    /// table holds.
    fn despawning(&mut self, table: &Table, row: usize);

    /// `fields` may have new values in rows `rows` of `table` (only fields this observer
    /// `watches` are reported by the columnar door). A write that picked its rows (an
    /// UPDATE's WHERE) reports exactly those; one that wrote in place over several threads
    /// reports the span it wrote in.
    fn written(&mut self, table: &Table, rows: Written<'_>, fields: &[FieldId]);

    /// A component type was dropped, and with it every entity's values of it. No
    /// `detached` is sent for the entities that held it.
    fn component_dropped(&mut self, component: ComponentId);

    /// Whether writes to `field` matter to this observer: the columnar door records the
    /// rows it lends for writing only when some observer watches the field.
    fn watches(&self, field: FieldId) -> bool;

    /// A copy, for a copy of the world.
    fn clone_box(&self) -> Box<dyn Observer>;
}

/// A world's observers, in the order they were added; at most one of each type.
#[derive(Debug, Default)]
pub(crate) struct Observers {
    list: Vec<Box<dyn Observer>>,
}

impl Clone for Observers {
    fn clone(&self) -> Self {
        Observers {
            list: self.list.iter().map(|o| o.clone_box()).collect(),
        }
    }
}

impl Observers {
    /// Adds `observer`, replacing one of the same type.
    pub(crate) fn add(&mut self, observer: Box<dyn Observer>) {
        let any: &dyn Any = &*observer;
        let ty = any.type_id();
        match self.list.iter().position(|o| {
            let any: &dyn Any = &**o;
            any.type_id() == ty
        }) {
            Some(i) => self.list[i] = observer,
            None => self.list.push(observer),
        }
    }

    pub(crate) fn get<O: Observer>(&self) -> Option<&O> {
        self.list.iter().find_map(|o| {
            let any: &dyn Any = &**o;
            any.downcast_ref()
        })
    }

    pub(crate) fn get_mut<O: Observer>(&mut self) -> Option<&mut O> {
        self.list.iter_mut().find_map(|o| {
            let any: &mut dyn Any = &mut **o;
            any.downcast_mut()
        })
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub(crate) fn spawned(&mut self, table: &Table, rows: Range<usize>) {
        for o in &mut self.list {
            o.spawned(table, rows.clone());
        }
    }

    pub(crate) fn attached(&mut self, table: &Table, rows: Range<usize>, component: ComponentId) {
        for o in &mut self.list {
            o.attached(table, rows.clone(), component);
        }
    }

    pub(crate) fn detached(&mut self, entity: Entity, component: ComponentId) {
        for o in &mut self.list {
            o.detached(entity, component);
        }
    }

    pub(crate) fn despawning(&mut self, table: &Table, row: usize) {
        for o in &mut self.list {
            o.despawning(table, row);
        }
    }

    pub(crate) fn written(&mut self, table: &Table, rows: Written<'_>, fields: &[FieldId]) {
        for o in &mut self.list {
            o.written(table, rows, fields);
        }
    }

    pub(crate) fn component_dropped(&mut self, component: ComponentId) {
        for o in &mut self.list {
            o.component_dropped(component);
        }
    }

    pub(crate) fn watches(&self, field: FieldId) -> bool {
        self.list.iter().any(|o| o.watches(field))
    }
}
