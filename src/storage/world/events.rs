//! Events in the world: event types declared and dropped (each a new schema stamp) and
//! looked up, and their rows emitted and dropped from the front, each change recorded
//! for a rollback.

use crate::storage::column::Column;
use crate::storage::component::FieldDef;
use crate::storage::error::StorageError;
use crate::storage::events::EventQueue;
use crate::storage::ids::EventId;
use crate::storage::undo::Undo;

use super::{Result, SchemaStamp, World};

impl World {
    /// Declares an event type: rows with these fields, each kept `keep` ticks at most.
    pub fn create_event(&mut self, name: &str, fields: Vec<FieldDef>, keep: u64) -> Result<EventId> {
        if self.catalog.by_name(name).is_ok() {
            return Err(StorageError::NameTaken {
                name: name.to_owned(),
                by: "a component",
            });
        }
        let id = self.events.create(name, fields, keep)?;
        self.record(|_| Undo::EventCreated);
        self.schema = SchemaStamp::new();
        Ok(id)
    }

    /// Removes an event type and the rows it kept.
    pub fn drop_event(&mut self, event: EventId) -> Result<()> {
        let queue = self.events.remove(event)?;
        self.record(|_| Undo::EventDropped(Box::new(queue)));
        // Plans kept by prepared statements and systems name event ids: they bind again.
        self.layout_epoch += 1;
        self.schema = SchemaStamp::new();
        Ok(())
    }

    /// The event type `id` names, with its rows.
    pub fn event(&self, id: EventId) -> Result<&EventQueue> {
        self.events.get(id)
    }

    /// The event type called `name` (exactly).
    pub fn event_by_name(&self, name: &str) -> Result<&EventQueue> {
        self.events
            .by_name(name)
            .ok_or_else(|| StorageError::UnknownEvent(name.to_owned()))
    }

    /// Every event type, in declaration order.
    pub fn events(&self) -> impl Iterator<Item = &EventQueue> {
        self.events.iter()
    }

    /// How many event types are declared: `events().count()`, without walking them.
    pub fn event_count(&self) -> usize {
        self.events.len()
    }

    /// Emits `len` rows of `event`, given as one column per field (each of its field's
    /// type), stamped with `tick`. Returns the first row's sequence number.
    pub fn emit(&mut self, event: EventId, columns: Vec<Column>, len: usize, tick: u64) -> Result<u64> {
        let first = self.events.append(event, columns, len, tick)?;
        self.record(|_| Undo::Emitted { event, count: len });
        Ok(first)
    }

    /// Drops the first `count` rows of `event`, counting `unseen` of them as dropped
    /// before every reader had seen them.
    pub(crate) fn drop_events(&mut self, event: EventId, count: usize, unseen: u64) -> Result<()> {
        let rows = self.events.drop_front(event, count, unseen)?;
        self.record(|_| Undo::EventsDropped { event, rows });
        Ok(())
    }
}
