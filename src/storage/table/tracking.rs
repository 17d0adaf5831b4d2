//! A table's change marks: for each tracked component, when each row got it and when each
//! of its fields last changed, one mark per row in every list (every row operation of
//! `rows.rs` and `batch.rs` keeps them in step); tracking begun marks the rows present
//! then; a row's marks are taken and put back for a rollback.

use crate::storage::column::Column;
use crate::storage::ids::{ComponentId, FieldId};
use crate::storage::marks::MarkList;

use super::{MarkAt, Table};

impl Table {
    /// Starts keeping change marks for `component`'s rows (if the table holds it and does
    /// not already): every row present is marked `tick`, as if added and changed then.
    pub(crate) fn track(&mut self, component: ComponentId, tick: u64) {
        let Ok(i) = self.components.binary_search(&component) else {
            return;
        };
        if self.added[i].is_some() {
            return;
        }
        let len = self.len();
        self.added[i] = Some(MarkList::new(len, tick));
        for column in self.component_range(i) {
            self.changed[column] = Some(MarkList::new(len, tick));
            self.marked = true;
        }
    }

    /// The marks of `component` (when each row got it, then when each of its fields last
    /// changed, in field order), as a snapshot kept them: refused unless there is one
    /// list per field plus one, each with one mark per row.
    pub(crate) fn restore_marks(
        &mut self,
        component: ComponentId,
        mut lists: Vec<MarkList>,
    ) -> Result<(), String> {
        let Ok(i) = self.components.binary_search(&component) else {
            return Err(format!(
                "table {} does not hold component id {}",
                self.name, component.0
            ));
        };
        let range = self.component_range(i);
        if lists.len() != range.len() + 1 || lists.iter().any(|m| m.ticks().len() != self.len()) {
            return Err(format!(
                "table {} has {} rows and component id {} {} fields: its marks do not fit",
                self.name,
                self.len(),
                component.0,
                range.len()
            ));
        }
        let changed = lists.split_off(1);
        self.added[i] = lists.pop();
        for (column, marks) in range.zip(changed) {
            self.changed[column] = Some(marks);
            self.marked = true;
        }
        Ok(())
    }

    /// When each row's value of `field` last changed, if its component is tracked.
    pub fn changed_marks(&self, field: FieldId) -> Option<&MarkList> {
        self.changed.get(self.column_index(field)?)?.as_ref()
    }

    /// When each row got `component`, if it is tracked.
    pub fn added_marks(&self, component: ComponentId) -> Option<&MarkList> {
        let i = self.components.binary_search(&component).ok()?;
        self.added[i].as_ref()
    }

    /// The marks of one column (by its index in `columns()`), if tracked.
    #[inline]
    pub(crate) fn column_marks(&self, column: usize) -> Option<&MarkList> {
        if !self.marked {
            return None;
        }
        self.changed.get(column)?.as_ref()
    }

    /// Columns `indexes` (distinct, in range) and their change marks, mutably.
    #[allow(clippy::type_complexity)]
    pub(crate) fn columns_and_marks_mut<const N: usize>(
        &mut self,
        indexes: [usize; N],
    ) -> Option<([&mut Column; N], [&mut Option<MarkList>; N])> {
        let columns = self.columns.get_disjoint_mut(indexes).ok()?.map(|c| &mut **c);
        let marks = self.changed.get_disjoint_mut(indexes).ok()?;
        Some((columns, marks))
    }

    /// The marks of one column, mutably (for the writers in `query.rs`).
    pub(crate) fn column_marks_mut(&mut self, column: usize) -> Option<&mut MarkList> {
        self.changed.get_mut(column)?.as_mut()
    }

    /// Every mark list, each with the row operation applied.
    pub(super) fn each_marks(&mut self, mut f: impl FnMut(&mut MarkList)) {
        self.changed
            .iter_mut()
            .chain(&mut self.added)
            .flatten()
            .for_each(&mut f);
    }

    /// Every mark of `row` of the tracked components `keep` says yes to, component by
    /// component (its added mark, then its fields'): what undoing a despawn or a detach
    /// puts back with `set_row_marks`.
    pub(crate) fn row_marks(&self, row: usize, keep: impl Fn(ComponentId) -> bool) -> Vec<u64> {
        let mut marks = Vec::new();
        for (i, &component) in self.components.iter().enumerate() {
            if !keep(component) {
                continue;
            }
            if let Some(added) = &self.added[i] {
                marks.extend(added.get(row));
                for column in self.component_range(i) {
                    marks.extend(self.changed[column].as_ref().and_then(|m| m.get(row)));
                }
            }
        }
        marks
    }

    /// Puts back marks `row_marks` took (with the same `keep`); a list of another length
    /// (tracking began in between) is left as it is.
    pub(crate) fn set_row_marks(&mut self, row: usize, marks: &[u64], keep: impl Fn(ComponentId) -> bool) {
        let mut lists: Vec<&mut MarkList> = Vec::new();
        let (components, added, changed) = (&self.components, &mut self.added, &mut self.changed);
        let mut changed_iter = changed.iter_mut().enumerate();
        for (i, (&component, added)) in components.iter().zip(added.iter_mut()).enumerate() {
            let range = self.column_start[i]..self.column_start[i + 1];
            let fields: Vec<&mut MarkList> = changed_iter
                .by_ref()
                .take(range.len())
                .filter_map(|(_, m)| m.as_mut())
                .collect();
            if keep(component)
                && let Some(a) = added.as_mut()
            {
                lists.push(a);
                lists.extend(fields);
            }
        }
        if lists.len() == marks.len() {
            for (list, &tick) in lists.into_iter().zip(marks) {
                list.set(row, tick);
            }
        }
    }

    /// How many mark lists the table keeps (each a `u64` a row).
    pub(crate) fn mark_lists(&self) -> usize {
        self.changed.iter().chain(&self.added).flatten().count()
    }

    /// Every mark list the table keeps, with where it is.
    pub(super) fn mark_slots(&mut self) -> impl Iterator<Item = (MarkAt, &mut MarkList)> {
        let changed = self
            .changed
            .iter_mut()
            .enumerate()
            .filter_map(|(i, m)| Some((MarkAt::Changed(i), m.as_mut()?)));
        let added = self
            .added
            .iter_mut()
            .enumerate()
            .filter_map(|(i, m)| Some((MarkAt::Added(i), m.as_mut()?)));
        changed.chain(added)
    }

    pub(super) fn mark_list_mut(&mut self, at: MarkAt) -> Option<&mut MarkList> {
        match at {
            MarkAt::Changed(i) => self.changed.get_mut(i)?.as_mut(),
            MarkAt::Added(i) => self.added.get_mut(i)?.as_mut(),
        }
    }
}
