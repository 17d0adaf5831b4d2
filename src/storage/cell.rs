//! A table's column as the table keeps it (`ColumnCell`): the column, which a write
//! beside others may write through a shared reference, and what is known of its values
//! (zone maps, membership filters), made when first asked for and dropped whenever the
//! column is lent to write. A flag beside the column is set before anything is made and
//! cleared only when nothing is known, so a write that finds it clear drops nothing.

use super::column::Column;
use super::filters::Filters;
use super::zones::Zones;

/// A table's column (`Table::columns`), which an UPDATE holding its field alone
/// (`Database::concurrency`) may write through a shared reference to its world:
/// everything else reads it as a `Column` (`Deref`) and writes it through `&mut`
/// (`DerefMut`), as any value. Beside the column, what is known of its values: its zone
/// maps (`zones.rs`) and, for a field a filter index covers, its membership filters
/// (`filters.rs`), each made when first asked for and dropped whenever the column is lent
/// to write, so a reader never sees them describe other values than the column's.
///
/// Invariant (the engine's field locks keep it): while a write beside others writes a
/// column (`lend_beside`), it holds the column's field alone, and nothing else reads or
/// writes that column, or what is known of it: every other user of the world either
/// holds the fields it reads, none of them this one, or waits until the write is done.
///
/// `repr(C)`, in this order: the flag next to the column, in what would otherwise be
/// padding (the cell is no larger for it).
#[repr(C)]
pub struct ColumnCell {
    column: std::cell::UnsafeCell<Column>,
    /// Whether anything may be known: set before anything is made, cleared only with
    /// both `Known`s dropped. A write looks here, just after the column, rather than at
    /// each `Known`, which lie further off in other cache lines (an UPDATE over many
    /// small tables writes a column per table).
    maybe_known: std::sync::atomic::AtomicBool,
    filters: Known<Filters>,
    zones: Known<Option<Zones>>,
}

// SAFETY: a `ColumnCell` is read through `&` from many threads as a `Column` is (which
// is `Sync`), and what is known of it as a `OnceLock` is; both are written through `&`
// only by `lend_beside`, whose caller holds the column's field alone (the type's
// invariant), so no read or write meets that one.
unsafe impl Sync for ColumnCell {}

/// Something made from a column's values when first asked for, kept until the column is
/// lent to write (`ColumnCell`'s invariant says who may touch it when).
struct Known<T>(std::cell::UnsafeCell<std::sync::OnceLock<T>>);

impl<T> Known<T> {
    fn new() -> Known<T> {
        Known(std::cell::UnsafeCell::new(std::sync::OnceLock::new()))
    }

    /// What is known, made by `make` if nothing is.
    fn get_or_make(&self, make: impl FnOnce() -> T) -> &T {
        // SAFETY: it is written through a shared reference only by `lend_beside`, and
        // while that lends the column nothing reads it (`ColumnCell`'s invariant).
        let known = unsafe { &*self.0.get() };
        known.get_or_init(make)
    }

    /// What is known, if it was made.
    fn get(&self) -> Option<&T> {
        // SAFETY: as `get_or_make`'s.
        let known = unsafe { &*self.0.get() };
        known.get()
    }

    /// Drops what is known. Asked first, without taking: the cell is written to far
    /// more often than anything is known of it (once per table of every UPDATE).
    #[inline]
    fn forget(&mut self) {
        let known = self.0.get_mut();
        if known.get().is_some() {
            known.take();
        }
    }

    /// # Safety
    /// As `ColumnCell::lend_beside`: nothing else reads or writes it meanwhile.
    unsafe fn forget_beside(&self) {
        // SAFETY: the caller's promise.
        unsafe { (*self.0.get()).take() };
    }
}

impl ColumnCell {
    pub(crate) fn new(column: Column) -> ColumnCell {
        ColumnCell {
            column: std::cell::UnsafeCell::new(column),
            maybe_known: std::sync::atomic::AtomicBool::new(false),
            filters: Known::new(),
            zones: Known::new(),
        }
    }

    /// The column, to write through a shared reference to its table. Drops what is known
    /// of its values.
    ///
    /// # Safety
    /// The caller holds this column's field alone for as long as the reference lives
    /// (`engine/beside.rs`'s field locks): no other reference to this column or what is
    /// known of it (shared or not) exists or is made meanwhile, and the column's length
    /// is not changed.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn lend_beside(&self) -> &mut Column {
        // SAFETY: the caller's promise: these are the only references to the column and
        // what is known of it.
        unsafe {
            self.zones.forget_beside();
            self.filters.forget_beside();
            self.maybe_known
                .store(false, std::sync::atomic::Ordering::Relaxed);
            &mut *self.column.get()
        }
    }

    /// Notes that something is about to be known (before it is made, so that a write,
    /// which comes after every reader through the locks, never misses it).
    fn knowing(&self) {
        if !self.maybe_known.load(std::sync::atomic::Ordering::Relaxed) {
            self.maybe_known.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The column's zone maps, made now if the column changed since they were last made;
    /// `None` for a BOOL or TEXT column.
    pub(crate) fn zones(&self) -> Option<&Zones> {
        self.knowing();
        self.zones.get_or_make(|| Zones::of(self)).as_ref()
    }

    /// The column's membership filters, made now if the column changed since they were
    /// last made. Only a field a filter index covers is asked.
    pub(crate) fn filters(&self) -> &Filters {
        self.knowing();
        self.filters.get_or_make(|| Filters::of(self))
    }

    /// The membership filters, if they were made and the column has not changed since.
    pub(crate) fn made_filters(&self) -> Option<&Filters> {
        self.filters.get()
    }

    /// Drops the membership filters (their index was dropped).
    pub(crate) fn forget_filters(&mut self) {
        self.filters.forget();
    }
}

impl std::ops::Deref for ColumnCell {
    type Target = Column;

    #[inline]
    fn deref(&self) -> &Column {
        // SAFETY: no one writes the column through a shared reference but a write
        // beside others, and while it does, nothing reads it (the type's invariant).
        unsafe { &*self.column.get() }
    }
}

impl std::ops::DerefMut for ColumnCell {
    /// The column to write: what is known of it goes, to be made again from its new
    /// values.
    #[inline]
    fn deref_mut(&mut self) -> &mut Column {
        let known = self.maybe_known.get_mut();
        if *known {
            self.zones.forget();
            self.filters.forget();
            *known = false;
        }
        self.column.get_mut()
    }
}

impl Clone for ColumnCell {
    fn clone(&self) -> ColumnCell {
        ColumnCell::new(Column::clone(self))
    }
}

impl std::fmt::Debug for ColumnCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Column::fmt(self, f)
    }
}

impl PartialEq for ColumnCell {
    fn eq(&self, other: &ColumnCell) -> bool {
        **self == **other
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_flag_makes_a_cell_no_larger() {
        let parts = std::mem::size_of::<super::Column>()
            + std::mem::size_of::<super::Known<super::Filters>>()
            + std::mem::size_of::<super::Known<Option<super::Zones>>>();
        let align = std::mem::align_of::<super::ColumnCell>();
        assert_eq!(
            std::mem::size_of::<super::ColumnCell>(),
            parts.next_multiple_of(align)
        );
    }
}
