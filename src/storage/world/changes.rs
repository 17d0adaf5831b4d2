//! What follows the world's changes: change tracking (marks in the tables), removal logs
//! (for `removed()`) and the ticks they are stamped with, and the observers told of every
//! change. Tracking, once on, stays on and is not part of a transaction; adding or
//! changing an observer is, and gives the world a new schema stamp.

use crate::storage::ids::{ComponentId, Entity};
use crate::storage::observe::Observer;
use crate::storage::removals::RemovalLog;
use crate::storage::undo::Undo;

use super::{Result, SchemaStamp, World};

impl World {
    // ---- change tracking ----------------------------------------------------------------

    /// Starts tracking `component`'s changes: from now on every table holding it keeps
    /// change marks (`Table::changed_marks`, `Table::added_marks`), and writes to its
    /// fields compare each new value with the old one to mark only real changes. The rows
    /// present now are marked with a new tick, as added and changed: a reader that ran
    /// before cannot have seen them as tracked (a component dropped and declared again
    /// under its name is new to it). Returns false when it already was tracked. Tracking
    /// stays on; it is not part of a transaction.
    pub fn track_changes(&mut self, component: ComponentId) -> Result<bool> {
        self.catalog.get(component)?;
        if !self.catalog.track(component) {
            return Ok(false);
        }
        let tick = self.next_tick();
        let mut tables = self.archetypes.with_component(component).to_vec();
        tables.extend(self.catalog.get(component)?.sparse_table());
        for id in tables {
            if let Some(table) = self.archetypes.get_mut(id) {
                table.track(component, tick);
            }
        }
        Ok(true)
    }

    /// Starts logging which entities lose `component` (detached, or despawned holding
    /// it), for `removed()`. Returns false when it already was. Like change tracking, it
    /// stays on and is not part of a transaction.
    pub fn track_removals(&mut self, component: ComponentId) -> Result<bool> {
        self.catalog.get(component)?;
        if self.removal_log(component).is_some() {
            return Ok(false);
        }
        self.removals.push((component, RemovalLog::default()));
        Ok(true)
    }

    /// `component`'s removal log; `None` while its removals are not tracked.
    pub fn removal_log(&self, component: ComponentId) -> Option<&RemovalLog> {
        self.removals
            .iter()
            .find(|(c, _)| *c == component)
            .map(|(_, log)| log)
    }

    /// Every removal log, with its component.
    pub fn removal_logs(&self) -> impl Iterator<Item = (ComponentId, &RemovalLog)> {
        self.removals.iter().map(|(c, log)| (*c, log))
    }

    pub(super) fn removal_log_mut(&mut self, component: ComponentId) -> Option<&mut RemovalLog> {
        self.removals
            .iter_mut()
            .find(|(c, _)| *c == component)
            .map(|(_, log)| log)
    }

    /// Drops the first `count` entries of `component`'s removal log.
    pub(crate) fn drop_removals(&mut self, component: ComponentId, count: usize) {
        if let Some(log) = self.removal_log_mut(component) {
            let front = log.drop_front(count);
            self.record(|_| Undo::RemovalsDropped { component, front });
        }
    }

    /// Moves the write tick up to `tick` (a journal's record says a write began there; the
    /// writes between, undone or failed, are not in the journal).
    pub(crate) fn tick_up_to(&mut self, tick: u64) {
        let now = self.tick.get().max(tick);
        self.tick.set(now);
    }

    /// Moves the write tick past `tick` (a loaded world, past the one it replaces, so
    /// that what readers of the old one saw cannot hide what it holds).
    pub(crate) fn tick_past(&mut self, tick: u64) {
        let now = self.tick.get().max(tick).saturating_add(1);
        self.tick.set(now);
    }

    /// The schedule tick that removals logged from now on are stamped with.
    pub fn set_log_tick(&mut self, tick: u64) {
        self.log_tick = tick;
    }

    /// Logs that `entity` lost those of `components` whose removals are tracked, at write
    /// tick `write`.
    pub(super) fn log_removals(&mut self, entity: Entity, components: &[ComponentId], write: u64) {
        let tick = self.log_tick;
        for (c, log) in &mut self.removals {
            if components.contains(c) {
                log.push(entity, write, tick);
                if let Some(undo) = &mut self.undo_log {
                    undo.push(Undo::Logged { component: *c });
                }
            }
        }
    }

    // ---- observers --------------------------------------------------------------------

    /// Adds a structure that follows every change to the rows from now on (replacing one
    /// of the same type). It learns nothing of the rows already held: fill it from
    /// `tables()` before adding it.
    pub fn observe<O: Observer>(&mut self, observer: O) {
        self.record(|w| Undo::Observers(w.observers.clone()));
        self.observers.add(Box::new(observer));
        self.schema = SchemaStamp::new();
    }

    /// Whether an observer (an index…) follows writes to `field`.
    pub(crate) fn watched(&self, field: crate::storage::FieldId) -> bool {
        self.observers.watches(field)
    }

    /// The observer of type `O`, if one was added.
    pub fn observer<O: Observer>(&self) -> Option<&O> {
        self.observers.get()
    }

    /// The observer of type `O`, to take what it logged: its definitions stay as they
    /// are, so no plan goes stale and nothing is saved for ROLLBACK (the caller takes
    /// the log outside transactions only).
    pub(crate) fn observer_log<O: Observer>(&mut self) -> Option<&mut O> {
        self.observers.get_mut()
    }

    /// The observer of type `O`, to change it (for instance its definitions); the rows it
    /// follows stay the world's to change.
    ///
    /// Inside a transaction this first saves every observer whole, so that ROLLBACK can
    /// put them back: it is meant for changes to definitions, not for every write.
    pub fn observer_mut<O: Observer>(&mut self) -> Option<&mut O> {
        self.observers.get::<O>()?;
        self.record(|w| Undo::Observers(w.observers.clone()));
        self.schema = SchemaStamp::new();
        self.observers.get_mut()
    }
}
