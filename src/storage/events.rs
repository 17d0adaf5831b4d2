//! Events: short-lived rows that are not entities. Each event type is a queue of rows in
//! emission order, one dense `Column` per field as in an archetype table, plus the tick
//! each row was emitted in.
//!
//! Invariants:
//! - Rows have consecutive sequence numbers: row `i` of a queue is event `first + i`, and
//!   the next one emitted is `first + len`. Rows leave only from the front (`drop_front`),
//!   so a reader that remembers the last number it saw knows exactly what it has not.
//! - Emission ticks never decrease along a queue (the schedule's tick number only grows,
//!   and a rollback takes back the rows of the ticks it undoes).
//! - Event names and component names are one namespace (checked by `World`).
//! - Who reads which events, and when rows may go, is decided above (the schedule keeps
//!   the readers' cursors); here rows are appended, read and dropped.

use std::collections::HashMap;

use super::column::Column;
use super::component::{FieldDef, check_fields};
use super::error::StorageError;
use super::ids::EventId;

/// How many ticks an event type keeps a row at most, unless declared otherwise.
pub const DEFAULT_KEEP: u64 = 64;

/// The rows of one event type still kept.
#[derive(Clone, Debug, PartialEq)]
pub struct EventQueue {
    id: EventId,
    name: String,
    fields: Vec<FieldDef>,
    keep: u64,
    /// The sequence number of the first row kept.
    first: u64,
    columns: Vec<Column>,
    /// The tick each row was emitted in.
    ticks: Vec<u64>,
    /// Rows dropped before every system reading the type had seen them.
    dropped_unseen: u64,
}

impl EventQueue {
    /// The event type's id.
    pub fn id(&self) -> EventId {
        self.id
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its fields, in declaration order.
    pub fn fields(&self) -> &[FieldDef] {
        &self.fields
    }

    /// How many ticks a row is kept at most.
    pub fn keep(&self) -> u64 {
        self.keep
    }

    /// How many rows are kept now.
    pub fn len(&self) -> usize {
        self.ticks.len()
    }

    /// True when no row is kept.
    pub fn is_empty(&self) -> bool {
        self.ticks.is_empty()
    }

    /// The sequence number of the first row kept (of the next one emitted, when none is).
    pub fn first_seq(&self) -> u64 {
        self.first
    }

    /// One past the sequence number of the last row emitted.
    pub fn end_seq(&self) -> u64 {
        self.first + self.ticks.len() as u64
    }

    /// The row of sequence number `seq`, clamped to the rows kept (a number already
    /// dropped is the first row; one not yet emitted is the end).
    pub fn row_of(&self, seq: u64) -> usize {
        seq.saturating_sub(self.first).min(self.ticks.len() as u64) as usize
    }

    /// The field columns, each `len()` long.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The tick each row kept was emitted in.
    pub fn ticks(&self) -> &[u64] {
        &self.ticks
    }

    /// How many of the first rows were emitted before tick `tick`.
    pub fn emitted_before(&self, tick: u64) -> usize {
        self.ticks.partition_point(|&t| t < tick)
    }

    /// Rows dropped so far before every system that reads the type had seen them.
    pub fn dropped_unseen(&self) -> u64 {
        self.dropped_unseen
    }
}

/// The rows dropped from a queue's front, kept to put them back.
#[derive(Clone, Debug)]
pub(crate) struct DroppedRows {
    columns: Vec<Column>,
    ticks: Vec<u64>,
    unseen: u64,
}

/// Every event type, by id and by name.
#[derive(Clone, Debug, Default)]
pub(crate) struct Events {
    /// Indexed by `EventId`; `None` once dropped (a dropped type's id is not given again; a
    /// declaration undone by ROLLBACK gives its id back).
    queues: Vec<Option<EventQueue>>,
    by_name: HashMap<String, EventId>,
}

impl Events {
    /// Every id given so far, dropped ones as `None`, in id order.
    pub fn slots(&self) -> &[Option<EventQueue>] {
        &self.queues
    }

    /// Event types rebuilt from a snapshot: by id (`None`: dropped), each with its fields,
    /// keep, first sequence number, rows dropped unseen, the rows' ticks and columns.
    #[allow(clippy::type_complexity)]
    pub fn from_parts(
        parts: Vec<Option<(String, Vec<FieldDef>, u64, u64, u64, Vec<u64>, Vec<Column>)>>,
    ) -> Result<Events, StorageError> {
        let mut events = Events::default();
        for part in parts {
            let Some((name, fields, keep, first, dropped_unseen, ticks, columns)) = part else {
                events.queues.push(None);
                continue;
            };
            let id = events.create(&name, fields, keep)?;
            let len = ticks.len();
            events.append(id, columns, len, 0)?;
            let queue = events.get_mut(id)?;
            if ticks.windows(2).any(|w| w[0] > w[1]) {
                return Err(StorageError::EventShape {
                    event: name,
                    message: "its rows' ticks decrease".into(),
                });
            }
            queue.ticks = ticks;
            queue.first = first;
            queue.dropped_unseen = dropped_unseen;
        }
        Ok(events)
    }

    pub fn create(&mut self, name: &str, fields: Vec<FieldDef>, keep: u64) -> Result<EventId, StorageError> {
        if name.is_empty() {
            return Err(StorageError::EmptyName { what: "event" });
        }
        if self.by_name.contains_key(name) {
            return Err(StorageError::NameTaken {
                name: name.to_owned(),
                by: "an event",
            });
        }
        if keep == 0 {
            return Err(StorageError::KeepZero(name.to_owned()));
        }
        check_fields(name, &fields)?;
        let id = EventId(u32::try_from(self.queues.len()).map_err(|_| StorageError::OutOfEventIds)?);
        let columns = fields.iter().map(|f| Column::new(f.ty())).collect();
        self.by_name.insert(name.to_owned(), id);
        self.queues.push(Some(EventQueue {
            id,
            name: name.to_owned(),
            fields,
            keep,
            first: 0,
            columns,
            ticks: Vec::new(),
            dropped_unseen: 0,
        }));
        Ok(id)
    }

    pub fn get(&self, id: EventId) -> Result<&EventQueue, StorageError> {
        self.queues
            .get(id.index())
            .and_then(Option::as_ref)
            .ok_or(StorageError::UnknownEventId(id))
    }

    fn get_mut(&mut self, id: EventId) -> Result<&mut EventQueue, StorageError> {
        self.queues
            .get_mut(id.index())
            .and_then(Option::as_mut)
            .ok_or(StorageError::UnknownEventId(id))
    }

    pub fn by_name(&self, name: &str) -> Option<&EventQueue> {
        self.by_name.get(name).and_then(|&id| self.get(id).ok())
    }

    /// How many event types are declared (each has its name in `by_name`), without
    /// walking them.
    pub fn len(&self) -> usize {
        debug_assert_eq!(self.by_name.len(), self.iter().count());
        self.by_name.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &EventQueue> {
        self.queues.iter().flatten()
    }

    /// Takes event type `id` out of the catalog, rows and all.
    pub fn remove(&mut self, id: EventId) -> Result<EventQueue, StorageError> {
        let queue = self
            .queues
            .get_mut(id.index())
            .and_then(Option::take)
            .ok_or(StorageError::UnknownEventId(id))?;
        self.by_name.remove(&queue.name);
        Ok(queue)
    }

    /// Puts back a queue taken out by `remove`.
    pub fn restore(&mut self, queue: EventQueue) {
        let i = queue.id.index();
        self.by_name.insert(queue.name.clone(), queue.id);
        if let Some(slot) = self.queues.get_mut(i) {
            *slot = Some(queue);
        }
    }

    /// Forgets the event type declared last (undoing its declaration).
    pub fn remove_last(&mut self) {
        if let Some(Some(queue)) = self.queues.pop() {
            self.by_name.remove(&queue.name);
        }
    }

    /// Appends `len` rows given as one column per field, checked first: the right number
    /// of columns, each of its field's type and `len` long. Returns the first new row's
    /// sequence number.
    pub fn append(
        &mut self,
        id: EventId,
        columns: Vec<Column>,
        len: usize,
        tick: u64,
    ) -> Result<u64, StorageError> {
        let queue = self.get_mut(id)?;
        if columns.len() != queue.fields.len() {
            return Err(StorageError::EventShape {
                event: queue.name.clone(),
                message: format!(
                    "{} columns given for {} fields",
                    columns.len(),
                    queue.fields.len()
                ),
            });
        }
        for (column, field) in columns.iter().zip(&queue.fields) {
            if column.field_type() != field.ty() || column.len() != len {
                return Err(StorageError::EventShape {
                    event: queue.name.clone(),
                    message: format!(
                        "field {} takes {len} {} values; {} {} values were given",
                        field.name(),
                        field.ty(),
                        column.len(),
                        column.field_type()
                    ),
                });
            }
        }
        let start = queue.end_seq();
        for (dst, mut src) in queue.columns.iter_mut().zip(columns) {
            dst.append(&mut src);
        }
        // Stamps never decrease along the queue, whatever tick the caller gives.
        let tick = queue.ticks.last().map_or(tick, |&last| last.max(tick));
        queue.ticks.resize(queue.ticks.len() + len, tick);
        Ok(start)
    }

    /// Removes the last `count` rows (the undo of `append`).
    pub fn truncate_back(&mut self, id: EventId, count: usize) {
        if let Ok(queue) = self.get_mut(id) {
            let keep = queue.ticks.len().saturating_sub(count);
            queue.ticks.truncate(keep);
            for c in &mut queue.columns {
                c.truncate(keep);
            }
        }
    }

    /// Drops the first `count` rows, `unseen` of which some reader had not seen.
    pub fn drop_front(
        &mut self,
        id: EventId,
        count: usize,
        unseen: u64,
    ) -> Result<DroppedRows, StorageError> {
        let queue = self.get_mut(id)?;
        let count = count.min(queue.ticks.len());
        let rest = queue.ticks.split_off(count);
        let ticks = std::mem::replace(&mut queue.ticks, rest);
        let columns = queue.columns.iter_mut().map(|c| c.take_front(count)).collect();
        queue.first += count as u64;
        queue.dropped_unseen += unseen;
        Ok(DroppedRows {
            columns,
            ticks,
            unseen,
        })
    }

    /// Puts rows dropped by `drop_front` back in front.
    pub fn undrop(&mut self, id: EventId, rows: DroppedRows) {
        if let Ok(queue) = self.get_mut(id) {
            let count = rows.ticks.len();
            for (c, front) in queue.columns.iter_mut().zip(rows.columns) {
                c.prepend(front);
            }
            let mut ticks = rows.ticks;
            ticks.append(&mut queue.ticks);
            queue.ticks = ticks;
            queue.first = queue.first.saturating_sub(count as u64);
            queue.dropped_unseen = queue.dropped_unseen.saturating_sub(rows.unseen);
        }
    }
}
