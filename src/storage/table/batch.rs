//! Many rows at once: removed from a table, or moved to the table one component away, in
//! the order given, as one by one would, column by column (a table's columns move whole
//! when all its rows go); inside a transaction what went is kept typed
//! (`RemovedRows`, `MovedRows`) and put back exactly, rows in their old order. `RowIndex`
//! is told of every entity that moves.

use crate::storage::column::Column;
use crate::storage::ids::{Entity, TableRow};
use crate::storage::marks::MarkList;

use super::{MarkAt, MovedRows, RemovedRows, Restored, RowIndex, Table};

impl Table {
    /// Removes the rows of `entities` (distinct, each in this table), one after another
    /// as `swap_remove` does, column by column; `rows` says where each is and is told of
    /// each entity that moves. A table losing every row is emptied at once. With `keep`
    /// (inside a transaction) returns what went, for `restore_rows`: typed columns, no
    /// value boxed, and when every row goes, the table's own memory.
    pub(crate) fn remove_rows(
        &mut self,
        entities: &[Entity],
        rows: &mut impl RowIndex,
        keep: bool,
        tick: u64,
    ) -> Option<RemovedRows> {
        self.rows_changed_at = tick;
        if entities.len() == self.len() {
            if !keep {
                self.truncate(0, tick);
                return None;
            }
            let marks = self
                .mark_slots()
                .map(|(at, list)| (at, std::mem::take(list)))
                .collect();
            let columns = self
                .columns
                .iter_mut()
                .map(|c| {
                    let empty = Column::new(c.field_type());
                    std::mem::replace(&mut **c, empty)
                })
                .collect();
            return Some(RemovedRows {
                holes: None,
                entities: std::mem::take(&mut self.entities),
                columns,
                marks,
            });
        }
        let mut holes = Vec::with_capacity(entities.len());
        let mut gone = Vec::with_capacity(if keep { entities.len() } else { 0 });
        for &entity in entities {
            let Some(row) = rows.row_of(entity).filter(|r| r.index() < self.entities.len()) else {
                continue;
            };
            self.entities.swap_remove(row.index());
            if let Some(&moved) = self.entities.get(row.index()) {
                rows.moved(moved, row);
            }
            holes.push(row.0);
            if keep {
                gone.push(entity);
            }
        }
        let columns: Vec<Column> = self
            .columns
            .iter_mut()
            .filter_map(|c| c.swap_remove_each(&holes, keep))
            .collect();
        let marks: Vec<(MarkAt, MarkList)> = self
            .mark_slots()
            .filter_map(|(at, list)| Some((at, MarkList::from_ticks(list.swap_remove_each(&holes, keep)?))))
            .collect();
        keep.then_some(RemovedRows {
            holes: Some(holes),
            entities: gone,
            columns,
            marks,
        })
    }

    /// Puts back rows `remove_rows` took, leaving the table as it was before (rows in the
    /// same order); `rows` is told where each entity is then. A mark list begun since
    /// (tracking that started in between) marks the rows put back `tick`.
    pub(crate) fn restore_rows(
        &mut self,
        removed: RemovedRows,
        rows: &mut impl RowIndex,
        tick: u64,
    ) -> Restored {
        self.rows_changed_at = tick;
        let RemovedRows {
            holes,
            entities,
            columns,
            mut marks,
        } = removed;
        let count = entities.len();
        let marks_of = |at: MarkAt| match marks.iter().position(|(a, _)| *a == at) {
            Some(i) => marks.swap_remove(i).1,
            None => MarkList::new(count, tick),
        };
        self.put_back(holes, entities, columns, marks_of, rows)
    }

    /// Puts back rows taken out one after another by swap-removes (`holes`; `None`: every
    /// row at once, the table empty now), given their entities, their values per column
    /// and their marks per mark list the table keeps: the table as it was before, `rows`
    /// told where each entity is.
    fn put_back(
        &mut self,
        holes: Option<Vec<u32>>,
        entities: Vec<Entity>,
        columns: Vec<Column>,
        mut marks_of: impl FnMut(MarkAt) -> MarkList,
        rows: &mut impl RowIndex,
    ) -> Restored {
        let Some(holes) = holes else {
            // Every row went at once: the table is empty again (what came after was undone
            // first), and takes its columns back whole.
            for (dst, mut src) in self.columns.iter_mut().zip(columns) {
                if dst.is_empty() {
                    **dst = src;
                } else {
                    dst.append(&mut src);
                }
            }
            let slots: Vec<MarkAt> = self.mark_slots().map(|(at, _)| at).collect();
            for at in slots {
                let mut list = marks_of(at);
                if let Some(dst) = self.mark_list_mut(at) {
                    if dst.ticks().is_empty() {
                        *dst = list;
                    } else {
                        dst.append(&mut list);
                    }
                }
            }
            let first = self.entities.len();
            if first == 0 {
                self.entities = entities;
            } else {
                self.entities.extend_from_slice(&entities);
            }
            for (row, &entity) in self.entities.iter().enumerate().skip(first) {
                rows.moved(entity, TableRow(row as u32));
            }
            return Restored::Rows(first..self.entities.len());
        };
        for (&hole, &entity) in holes.iter().zip(&entities).rev() {
            self.entities.push(entity);
            let last = self.entities.len() - 1;
            if (hole as usize) < last {
                self.entities.swap(hole as usize, last);
                rows.moved(self.entities[last], TableRow(last as u32));
            }
            rows.moved(entity, TableRow(hole.min(last as u32)));
        }
        for (column, values) in self.columns.iter_mut().zip(columns) {
            column.restore_each(&holes, values);
        }
        let slots: Vec<MarkAt> = self.mark_slots().map(|(at, _)| at).collect();
        for at in slots {
            let list = marks_of(at);
            if let Some(dst) = self.mark_list_mut(at) {
                dst.restore_each(&holes, list.ticks().to_vec());
            }
        }
        Restored::Entities(entities)
    }

    /// Moves the rows of `entities` (distinct, each in `src`) to the end of `dst`, whose
    /// components differ from `src`'s by one, as `move_row` would one after another: each
    /// swap-removed from `src` and appended to `dst` in the order given, column by
    /// column. `rows` says where each is in `src` and is told of each entity that moves
    /// within it; the caller locates the moved ones in `dst`, from the returned first row
    /// on, in order. When `entities` are `src`'s rows in their order, its columns move
    /// whole. `dst`'s columns `src` lacks take `added` (checked, in `dst`'s column order,
    /// a row per entity in order) and are marked `tick`. With `keep` (inside a
    /// transaction) returns what `unmove_rows` puts back with: the rows' places, and the
    /// values and marks `dst` has no column for (a detached component's), typed.
    pub(crate) fn move_rows(
        src: &mut Table,
        dst: &mut Table,
        entities: &[Entity],
        rows: &mut impl RowIndex,
        added: Vec<Column>,
        keep: bool,
        tick: u64,
    ) -> Option<(usize, Option<MovedRows>)> {
        let first = dst.len();
        let count = entities.len();
        let whole = count == src.len() && entities == src.entities.as_slice();
        // What cannot be moved as asked is not moved at all (the caller checked it).
        if !whole
            && entities
                .iter()
                .any(|&e| rows.row_of(e).is_none_or(|r| r.index() >= src.len()))
        {
            debug_assert!(false, "an entity to move is not in its table");
            return None;
        }
        let holes = match whole {
            true => None,
            false => {
                let mut holes = Vec::with_capacity(count);
                for &entity in entities {
                    let Some(row) = rows.row_of(entity) else {
                        continue;
                    };
                    src.entities.swap_remove(row.index());
                    if let Some(&moved) = src.entities.get(row.index()) {
                        rows.moved(moved, row);
                    }
                    holes.push(row.0);
                }
                Some(holes)
            }
        };
        // Takes the rows (all, or the holes) out of one column or mark list.
        fn take(column: &mut Column, holes: Option<&[u32]>) -> Column {
            match holes {
                Some(holes) => column
                    .swap_remove_each(holes, true)
                    .unwrap_or_else(|| Column::new(column.field_type())),
                None => std::mem::replace(column, Column::new(column.field_type())),
            }
        }
        fn take_marks(list: &mut MarkList, holes: Option<&[u32]>) -> MarkList {
            match holes {
                Some(holes) => MarkList::from_ticks(list.swap_remove_each(holes, true).unwrap_or_default()),
                None => std::mem::take(list),
            }
        }
        fn drop_marks(list: &mut MarkList, holes: Option<&[u32]>) {
            match holes {
                Some(holes) => drop(list.swap_remove_each(holes, false)),
                None => list.clear(),
            }
        }
        // A mark that moves to a table that keeps none is dropped; one the destination
        // keeps and the source did not is `tick`.
        fn put_marks(src: Option<MarkList>, dst: &mut Option<MarkList>, count: usize, tick: u64) {
            match (src, dst) {
                (Some(mut s), Some(d)) => d.append(&mut s),
                (None, Some(d)) => d.push_n(count, tick),
                _ => {}
            }
        }
        let holes_ref = holes.as_deref();
        let (mut dropped, mut dropped_marks) = (Vec::new(), Vec::new());
        for (i, &component) in src.components.iter().enumerate() {
            let range = src.component_range(i);
            match dst.components.binary_search(&component) {
                Ok(j) => {
                    for (s, d) in range.zip(dst.component_range(j)) {
                        let mut values = take(&mut src.columns[s], holes_ref);
                        dst.columns[d].append(&mut values);
                        let marks = src.changed[s].as_mut().map(|l| take_marks(l, holes_ref));
                        put_marks(marks, &mut dst.changed[d], count, tick);
                    }
                    let marks = src.added[i].as_mut().map(|l| take_marks(l, holes_ref));
                    put_marks(marks, &mut dst.added[j], count, tick);
                }
                Err(_) => {
                    for s in range {
                        match (keep, holes_ref) {
                            (true, _) => dropped.push(take(&mut src.columns[s], holes_ref)),
                            (false, Some(holes)) => drop(src.columns[s].swap_remove_each(holes, false)),
                            (false, None) => {
                                // Many texts are freed off this thread (`garbage.rs`).
                                let gone = take(&mut src.columns[s], None);
                                if gone.holds_many_texts() {
                                    crate::garbage::drop_later(gone);
                                }
                            }
                        }
                        if let Some(list) = src.changed[s].as_mut() {
                            match keep {
                                true => dropped_marks.push((MarkAt::Changed(s), take_marks(list, holes_ref))),
                                false => drop_marks(list, holes_ref),
                            }
                        }
                    }
                    if let Some(list) = src.added[i].as_mut() {
                        match keep {
                            true => dropped_marks.push((MarkAt::Added(i), take_marks(list, holes_ref))),
                            false => drop_marks(list, holes_ref),
                        }
                    }
                }
            }
        }
        let mut added = added.into_iter();
        for (j, &component) in dst.components.iter().enumerate() {
            if src.contains(component) {
                continue;
            }
            for d in dst.component_range(j) {
                if let Some(mut column) = added.next() {
                    debug_assert_eq!(column.len(), count, "an added column of another length");
                    dst.columns[d].append(&mut column);
                }
                put_marks(None, &mut dst.changed[d], count, tick);
            }
            put_marks(None, &mut dst.added[j], count, tick);
        }
        match whole {
            true => dst.entities.append(&mut src.entities),
            false => dst.entities.extend_from_slice(entities),
        }
        src.rows_changed_at = tick;
        dst.rows_changed_at = tick;
        let moved = keep.then_some(MovedRows {
            holes,
            count,
            dropped,
            dropped_marks,
        });
        Some((first, moved))
    }

    /// Puts back rows `move_rows` took from `src` to the end of `dst`, leaving both as
    /// they were before (rows in the same order); `rows` is told where each entity is in
    /// `src` then. The marks put back are those the rows had (of a component both tables
    /// hold, as `dst` kept them); a list of `src`'s that had none for them (tracking begun
    /// since) marks them `tick`.
    pub(crate) fn unmove_rows(
        src: &mut Table,
        dst: &mut Table,
        moved: MovedRows,
        rows: &mut impl RowIndex,
        tick: u64,
    ) -> Restored {
        let MovedRows {
            holes,
            count,
            dropped,
            mut dropped_marks,
        } = moved;
        let Some(start) = dst.len().checked_sub(count) else {
            debug_assert!(false, "a table lost rows a move put at its end");
            return Restored::Entities(Vec::new());
        };
        // The tail of `dst` (or what it had no column for), per column of `src`.
        let mut dropped = dropped.into_iter();
        let mut values: Vec<Column> = Vec::with_capacity(src.columns.len());
        let mut marks: Vec<(MarkAt, Vec<u64>)> = Vec::new();
        // Marks only for the lists `src` keeps now (the others' are not asked for).
        let tail_marks = |list: &Option<MarkList>| {
            list.as_ref()
                .and_then(|l| l.ticks().get(start..))
                .map(<[u64]>::to_vec)
        };
        let mut kept = |at: MarkAt| {
            let k = dropped_marks.iter().position(|(a, _)| *a == at)?;
            Some(dropped_marks.swap_remove(k).1.ticks().to_vec())
        };
        for (i, &component) in src.components.iter().enumerate() {
            let range = src.component_range(i);
            let tracked = src.added[i].is_some();
            match dst.components.binary_search(&component) {
                Ok(j) => {
                    for (s, d) in range.zip(dst.component_range(j)) {
                        values.push(dst.columns[d].split_off(start));
                        if src.changed[s].is_some()
                            && let Some(ticks) = tail_marks(&dst.changed[d])
                        {
                            marks.push((MarkAt::Changed(s), ticks));
                        }
                    }
                    if tracked && let Some(ticks) = tail_marks(&dst.added[j]) {
                        marks.push((MarkAt::Added(i), ticks));
                    }
                }
                Err(_) => {
                    for s in range {
                        values.push(
                            dropped
                                .next()
                                .unwrap_or_else(|| Column::new(src.columns[s].field_type())),
                        );
                        if src.changed[s].is_some()
                            && let Some(ticks) = kept(MarkAt::Changed(s))
                        {
                            marks.push((MarkAt::Changed(s), ticks));
                        }
                    }
                    if tracked && let Some(ticks) = kept(MarkAt::Added(i)) {
                        marks.push((MarkAt::Added(i), ticks));
                    }
                }
            }
        }
        // `dst` as it was: its tail goes, with the values it alone had (an attach's).
        for column in &mut dst.columns {
            if column.len() > start {
                if column.holds_text() && column.len() >= start + crate::storage::column::MANY_TEXTS {
                    crate::garbage::drop_later(column.split_off(start));
                } else {
                    column.truncate(start);
                }
            }
        }
        dst.each_marks(|m| m.truncate(start));
        let entities = dst.entities.split_off(start);
        dst.rows_changed_at = tick;
        src.rows_changed_at = tick;
        let marks_of = |at: MarkAt| match marks.iter().position(|(a, _)| *a == at) {
            Some(k) => MarkList::from_ticks(marks.swap_remove(k).1),
            None => MarkList::new(count, tick),
        };
        src.put_back(holes, entities, values, marks_of, rows)
    }
}
