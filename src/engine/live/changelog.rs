//! The change log of the subscriptions kept per entity (`entity.rs`): an observer of the
//! world that notes, for each component it watches, the entities whose rows of it came
//! (a spawn, an attach), went (a detach, a despawn) or were written since it was last
//! taken.
//!
//! Invariants:
//! - Every change the world makes to a watched component's rows reaches it (the
//!   observer seam promises as much, `storage/observe.rs`); what it notes may be more
//!   than what changed (a span written in place, a write undone by a failed statement),
//!   never less. Reading an entity again that did not change gives its row as kept, so
//!   more costs time only.
//! - It is taken (emptied) at each commit, outside transactions. A ROLLBACK's undoing
//!   notes what it puts back, like any change.
//! - Each take counts (`taken`): a log that is not the one last taken from (a world put
//!   back from an older copy of it) says so, and so does one that noted more than
//!   `MAX_NOTED` entities (it stops noting and is emptied): its reader then reads whole
//!   what it keeps, as when there was no log.
//! - A component dropped is noted as such: the queries reading it stop binding.

use std::ops::Range;

use hashbrown::HashMap;

use crate::storage::{ComponentId, Entity, FieldId, Observer, Table, Written};

/// The most entities noted between two takes (repeats counted): past it, reading
/// everything again costs less than the notes.
const MAX_NOTED: usize = 1 << 22;

#[derive(Clone, Debug, Default)]
pub(crate) struct ChangeLog {
    /// The components watched, sorted.
    watched: Vec<ComponentId>,
    /// Per watched component, the entities noted since the last take (repeats kept).
    touched: HashMap<ComponentId, Vec<Entity>>,
    /// How many entities are noted.
    noted: usize,
    /// More than `MAX_NOTED` were: nothing more is noted until the next take.
    overflowed: bool,
    /// How many takes there were.
    taken: u64,
}

impl ChangeLog {
    /// Watches exactly `components` from now on (sorted, no repeats).
    pub(crate) fn watch(&mut self, components: Vec<ComponentId>) {
        self.touched.retain(|c, _| components.binary_search(c).is_ok());
        self.watched = components;
    }

    pub(crate) fn watches_exactly(&self, components: &[ComponentId]) -> bool {
        self.watched == components
    }

    /// Whether it watches each of `components` and holds nothing since its last take:
    /// then, between commits, what it will hold at the next is every change to them.
    pub(crate) fn follows(&self, components: &[ComponentId]) -> bool {
        self.touched.is_empty() && !self.overflowed && components.iter().all(|c| self.watching(*c))
    }

    /// How many takes there were.
    pub(crate) fn taken(&self) -> u64 {
        self.taken
    }

    /// What was noted since the last take, per component (`None` when too much was);
    /// the log is empty after.
    pub(crate) fn take(&mut self) -> Option<HashMap<ComponentId, Vec<Entity>>> {
        self.taken += 1;
        self.noted = 0;
        let touched = std::mem::take(&mut self.touched);
        (!std::mem::take(&mut self.overflowed)).then_some(touched)
    }

    /// Notes `entities` for `component`, unless too many are.
    fn note(&mut self, component: ComponentId, entities: &[Entity]) {
        if self.overflowed {
            return;
        }
        self.noted += entities.len();
        if self.noted > MAX_NOTED {
            self.overflowed = true;
            self.touched.clear();
            return;
        }
        self.touched
            .entry(component)
            .or_default()
            .extend_from_slice(entities);
    }

    fn watching(&self, component: ComponentId) -> bool {
        self.watched.binary_search(&component).is_ok()
    }

    fn note_rows(&mut self, component: ComponentId, table: &Table, rows: Range<usize>) {
        if let Some(entities) = table.entities().get(rows) {
            self.note(component, entities);
        }
    }
}

impl Observer for ChangeLog {
    fn spawned(&mut self, table: &Table, rows: Range<usize>) {
        for i in 0..self.watched.len() {
            let c = self.watched[i];
            if table.contains(c) {
                self.note_rows(c, table, rows.clone());
            }
        }
    }

    fn attached(&mut self, table: &Table, rows: Range<usize>, component: ComponentId) {
        if self.watching(component) {
            self.note_rows(component, table, rows);
        }
    }

    fn detached(&mut self, entity: Entity, component: ComponentId) {
        if self.watching(component) {
            self.note(component, &[entity]);
        }
    }

    fn despawning(&mut self, table: &Table, row: usize) {
        for i in 0..self.watched.len() {
            let c = self.watched[i];
            if table.contains(c) {
                self.note_rows(c, table, row..row + 1);
            }
        }
    }

    fn written(&mut self, table: &Table, rows: Written<'_>, fields: &[FieldId]) {
        let mut components: Vec<ComponentId> = fields
            .iter()
            .map(|f| f.component())
            .filter(|&c| self.watching(c) && table.contains(c))
            .collect();
        components.sort_unstable();
        components.dedup();
        for c in components {
            for run in rows.runs() {
                self.note_rows(c, table, run);
            }
        }
    }

    /// The queries reading it stop binding, and end: nothing to note.
    fn component_dropped(&mut self, component: ComponentId) {
        self.touched.remove(&component);
    }

    fn watches(&self, field: FieldId) -> bool {
        self.watching(field.component())
    }

    fn clone_box(&self) -> Box<dyn Observer> {
        Box::new(self.clone())
    }
}
