//! Dense typed columns: one `Vec` per field per archetype table, in an enum over the closed
//! set of field types, so no cell is boxed and no `unsafe` is needed to hand out slices.
//! Which columns a table has, and in what order, is `table/`'s business.

use super::ids::Entity;
use super::value::{FieldType, Value};

/// How many texts a column (or an undo record's) holds before it is freed off the thread.
pub(crate) const MANY_TEXTS: usize = 1 << 16;

/// One field's values for every row of a table (or of a batch being spawned).
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// INT values.
    Int(Vec<i64>),
    /// FLOAT values.
    Float(Vec<f64>),
    /// REAL values.
    Real(Vec<f32>),
    /// BOOL values.
    Bool(Vec<bool>),
    /// TEXT values.
    Text(Vec<String>),
    /// ENTITY values; `None` is NULL.
    Entity(Vec<Option<Entity>>),
}

/// Applies the same expression to whichever typed `Vec` a column holds.
macro_rules! each_vec {
    ($column:expr, $v:ident => $body:expr) => {
        match $column {
            Column::Int($v) => $body,
            Column::Float($v) => $body,
            Column::Real($v) => $body,
            Column::Bool($v) => $body,
            Column::Text($v) => $body,
            Column::Entity($v) => $body,
        }
    };
}

/// Applies the same expression to two columns of one type. Columns meet only where the
/// schema made them the same field, so a mismatch is a bug in the storage, not bad input.
macro_rules! each_vec_pair {
    ($a:expr, $b:expr, ($x:ident, $y:ident) => $body:expr) => {
        match ($a, $b) {
            (Column::Int($x), Column::Int($y)) => $body,
            (Column::Float($x), Column::Float($y)) => $body,
            (Column::Real($x), Column::Real($y)) => $body,
            (Column::Bool($x), Column::Bool($y)) => $body,
            (Column::Text($x), Column::Text($y)) => $body,
            (Column::Entity($x), Column::Entity($y)) => $body,
            (a, b) => unreachable!(
                "columns of one field differ in type: {} and {}",
                a.field_type(),
                b.field_type()
            ),
        }
    };
}

impl Column {
    /// An empty column of `ty`.
    pub fn new(ty: FieldType) -> Column {
        Column::with_capacity(ty, 0)
    }

    /// An empty column of `ty` with room for `capacity` values.
    pub fn with_capacity(ty: FieldType, capacity: usize) -> Column {
        match ty {
            FieldType::Int => Column::Int(Vec::with_capacity(capacity)),
            FieldType::Float => Column::Float(Vec::with_capacity(capacity)),
            FieldType::Real => Column::Real(Vec::with_capacity(capacity)),
            FieldType::Bool => Column::Bool(Vec::with_capacity(capacity)),
            FieldType::Text => Column::Text(Vec::with_capacity(capacity)),
            FieldType::Entity => Column::Entity(Vec::with_capacity(capacity)),
        }
    }

    /// The type of the column's values.
    pub fn field_type(&self) -> FieldType {
        match self {
            Column::Int(_) => FieldType::Int,
            Column::Float(_) => FieldType::Float,
            Column::Real(_) => FieldType::Real,
            Column::Bool(_) => FieldType::Bool,
            Column::Text(_) => FieldType::Text,
            Column::Entity(_) => FieldType::Entity,
        }
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        each_vec!(self, v => v.len())
    }

    /// True when the column holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value at `row`, boxed; `None` past the end.
    pub fn get(&self, row: usize) -> Option<Value> {
        Some(match self {
            Column::Int(v) => Value::Int(*v.get(row)?),
            Column::Float(v) => Value::Float(*v.get(row)?),
            Column::Real(v) => Value::Real(*v.get(row)?),
            Column::Bool(v) => Value::Bool(*v.get(row)?),
            Column::Text(v) => Value::Text(v.get(row)?.clone()),
            Column::Entity(v) => Value::from(*v.get(row)?),
        })
    }

    /// The typed slice, if this column holds `T`.
    pub fn as_slice<T: ColumnValue>(&self) -> Option<&[T]> {
        T::slice(self)
    }

    /// The typed mutable slice, if this column holds `T`. A slice cannot change the column's
    /// length, so tables stay rectangular whatever a caller does with it.
    pub fn as_mut_slice<T: ColumnValue>(&mut self) -> Option<&mut [T]> {
        T::slice_mut(self)
    }

    /// Appends `value`; hands it back if its type is not this column's. For building batch
    /// columns; the columns of a table are never handed out mutably, only their slices.
    pub fn push(&mut self, value: Value) -> Result<(), Value> {
        match (self, value) {
            (Column::Int(v), Value::Int(x)) => v.push(x),
            (Column::Float(v), Value::Float(x)) => v.push(x),
            (Column::Real(v), Value::Real(x)) => v.push(x),
            (Column::Bool(v), Value::Bool(x)) => v.push(x),
            (Column::Text(v), Value::Text(x)) => v.push(x),
            (Column::Entity(v), Value::Entity(x)) => v.push(Some(x)),
            (Column::Entity(v), Value::Null) => v.push(None),
            (_, value) => return Err(value),
        }
        Ok(())
    }

    /// Overwrites `row`; hands the value back if its type is not this column's or the row
    /// does not exist.
    pub(crate) fn set(&mut self, row: usize, value: Value) -> Result<(), Value> {
        fn put<T>(v: &mut [T], row: usize, x: T) -> bool {
            v.get_mut(row).map(|slot| *slot = x).is_some()
        }
        let done = match (&mut *self, &value) {
            (Column::Int(v), Value::Int(x)) => put(v, row, *x),
            (Column::Float(v), Value::Float(x)) => put(v, row, *x),
            (Column::Real(v), Value::Real(x)) => put(v, row, *x),
            (Column::Bool(v), Value::Bool(x)) => put(v, row, *x),
            (Column::Text(v), Value::Text(x)) => put(v, row, x.clone()),
            (Column::Entity(v), Value::Entity(x)) => put(v, row, Some(*x)),
            (Column::Entity(v), Value::Null) => put(v, row, None),
            _ => false,
        };
        if done { Ok(()) } else { Err(value) }
    }

    /// Removes `row` by moving the last row into its place.
    pub(crate) fn swap_remove(&mut self, row: usize) {
        each_vec!(self, v => {
            v.swap_remove(row);
        })
    }

    /// Removes the rows `holes` one after another as `swap_remove` does (each counted in
    /// the column as the removals before it left it); with `keep`, returns the removed
    /// values in that order. A hole out of range (a bug in the caller) removes nothing.
    pub(crate) fn swap_remove_each(&mut self, holes: &[u32], keep: bool) -> Option<Column> {
        fn take<T>(v: &mut Vec<T>, holes: &[u32], keep: bool) -> Option<Vec<T>> {
            let mut out = keep.then(|| Vec::with_capacity(holes.len()));
            for &hole in holes {
                if (hole as usize) < v.len() {
                    let value = v.swap_remove(hole as usize);
                    if let Some(out) = &mut out {
                        out.push(value);
                    }
                }
            }
            out
        }
        each_vec!(self, v => take(v, holes, keep).map(Column::from))
    }

    /// Puts back what `swap_remove_each(holes, true)` removed (`removed`, of the same
    /// field), newest first: each value goes back to its hole and the value there to the
    /// end, so that the column is as it was.
    pub(crate) fn restore_each(&mut self, holes: &[u32], removed: Column) {
        fn put<T>(v: &mut Vec<T>, holes: &[u32], mut removed: Vec<T>) {
            for &hole in holes.iter().rev() {
                let Some(value) = removed.pop() else {
                    return;
                };
                v.push(value);
                let last = v.len() - 1;
                if (hole as usize) < last {
                    v.swap(hole as usize, last);
                }
            }
        }
        let mut removed = removed;
        each_vec_pair!(self, &mut removed, (v, r) => put(v, holes, std::mem::take(r)))
    }

    /// The bytes one value takes in the column (a text's own bytes not counted).
    pub(crate) fn value_size(&self) -> usize {
        fn size<T>(_: &[T]) -> usize {
            std::mem::size_of::<T>()
        }
        each_vec!(self, v => size(v))
    }

    /// Swap-removes `row` from `self` and pushes it onto `dst`, which holds the same field.
    pub(crate) fn move_row_to(&mut self, row: usize, dst: &mut Column) {
        each_vec_pair!(self, dst, (src, dst) => dst.push(src.swap_remove(row)))
    }

    /// Moves every row of `src` onto the end of `self`, which holds the same field.
    pub(crate) fn append(&mut self, src: &mut Column) {
        // Into an empty column (a new table's), `src`'s memory is taken as it is when it
        // has little room to spare (which the table would keep): no copy, and no fresh
        // pages written twice.
        each_vec_pair!(self, src, (dst, src) => if dst.is_empty()
            && dst.capacity() < src.len()
            && src.capacity() - src.len() <= src.len() / 8
        {
            std::mem::swap(dst, src);
        } else {
            dst.append(src);
        })
    }

    /// Takes the first `n` rows out (moving no value when they are all of them).
    pub(crate) fn take_front(&mut self, n: usize) -> Column {
        each_vec!(self, v => {
            let n = n.min(v.len());
            let rest = v.split_off(n);
            Column::from(std::mem::replace(v, rest))
        })
    }

    /// Whether its values are texts (each freed on its own when dropped).
    pub(crate) fn holds_text(&self) -> bool {
        matches!(self, Column::Text(_))
    }

    /// Whether it holds texts enough (`MANY_TEXTS`) to be freed off the thread
    /// (`garbage.rs`).
    pub(crate) fn holds_many_texts(&self) -> bool {
        self.holds_text() && self.len() >= MANY_TEXTS
    }

    /// Takes the rows from `at` on out (moving them, not copying).
    pub(crate) fn split_off(&mut self, at: usize) -> Column {
        each_vec!(self, v => {
            let at = at.min(v.len());
            Column::from(v.split_off(at))
        })
    }

    /// Puts `front` back before the first row (the undo of `take_front`).
    pub(crate) fn prepend(&mut self, mut front: Column) {
        each_vec_pair!(&mut front, &mut *self, (head, v) => {
            head.append(v);
            std::mem::swap(head, v);
        })
    }

    pub(crate) fn clear(&mut self) {
        each_vec!(self, v => v.clear())
    }

    /// Keeps the first `len` values.
    pub(crate) fn truncate(&mut self, len: usize) {
        each_vec!(self, v => v.truncate(len))
    }

    /// Makes room for `additional` more rows.
    pub(crate) fn reserve(&mut self, additional: usize) {
        each_vec!(self, v => v.reserve(additional))
    }

    /// How many rows it has room for.
    pub(crate) fn capacity(&self) -> usize {
        each_vec!(self, v => v.capacity())
    }

    /// Exchanges the values of rows `a` and `b` (both in range).
    pub(crate) fn swap(&mut self, a: usize, b: usize) {
        each_vec!(self, v => v.swap(a, b))
    }

    /// A copy of the values in `rows` (in range), as a column of the same type.
    pub(crate) fn copy_range(&self, rows: std::ops::Range<usize>) -> Column {
        match self {
            Column::Int(v) => Column::Int(v[rows].to_vec()),
            Column::Float(v) => Column::Float(v[rows].to_vec()),
            Column::Real(v) => Column::Real(v[rows].to_vec()),
            Column::Bool(v) => Column::Bool(v[rows].to_vec()),
            Column::Text(v) => Column::Text(v[rows].to_vec()),
            Column::Entity(v) => Column::Entity(v[rows].to_vec()),
        }
    }

    /// A copy of the values at `rows` (each in range), in that order.
    pub(crate) fn copy_rows(&self, rows: &[u32]) -> Column {
        fn pick<T: Clone>(v: &[T], rows: &[u32]) -> Vec<T> {
            rows.iter().map(|&r| v[r as usize].clone()).collect()
        }
        match self {
            Column::Int(v) => Column::Int(pick(v, rows)),
            Column::Float(v) => Column::Float(pick(v, rows)),
            Column::Real(v) => Column::Real(pick(v, rows)),
            Column::Bool(v) => Column::Bool(pick(v, rows)),
            Column::Text(v) => Column::Text(pick(v, rows)),
            Column::Entity(v) => Column::Entity(pick(v, rows)),
        }
    }

    /// Appends rows `rows` (in range) of `src`; false, appending nothing, when `src` holds
    /// another type.
    pub(crate) fn extend_from(&mut self, src: &Column, rows: std::ops::Range<usize>) -> bool {
        match (self, src) {
            (Column::Int(d), Column::Int(s)) => d.extend_from_slice(&s[rows]),
            (Column::Float(d), Column::Float(s)) => d.extend_from_slice(&s[rows]),
            (Column::Real(d), Column::Real(s)) => d.extend_from_slice(&s[rows]),
            (Column::Bool(d), Column::Bool(s)) => d.extend_from_slice(&s[rows]),
            (Column::Text(d), Column::Text(s)) => d.extend_from_slice(&s[rows]),
            (Column::Entity(d), Column::Entity(s)) => d.extend_from_slice(&s[rows]),
            _ => return false,
        }
        true
    }

    /// Writes `values` (of the same field) over the rows from `first` on.
    pub(crate) fn write_range(&mut self, first: usize, values: Values<'_>) {
        // Plain values are copied as one block; text moves string by string when the
        // values are a column of their own, and is cloned from another's rows.
        fn copy<T: Copy>(dst: &mut [T], first: usize, src: &[T]) {
            let end = dst.len().min(first.saturating_add(src.len()));
            if let Some(dst) = dst.get_mut(first..end) {
                dst.copy_from_slice(&src[..dst.len()]);
            }
        }
        let values = match values {
            Values::Own(Column::Text(s)) => {
                if let Column::Text(d) = self {
                    for (slot, value) in d.iter_mut().skip(first).zip(s) {
                        *slot = value;
                    }
                }
                return;
            }
            values => values,
        };
        let (src, rows) = values.parts();
        match (self, src) {
            (Column::Int(d), Column::Int(s)) => copy(d, first, &s[rows]),
            (Column::Float(d), Column::Float(s)) => copy(d, first, &s[rows]),
            (Column::Real(d), Column::Real(s)) => copy(d, first, &s[rows]),
            (Column::Bool(d), Column::Bool(s)) => copy(d, first, &s[rows]),
            (Column::Entity(d), Column::Entity(s)) => copy(d, first, &s[rows]),
            (Column::Text(d), Column::Text(s)) => {
                for (slot, value) in d.iter_mut().skip(first).zip(&s[rows]) {
                    slot.clone_from(value);
                }
            }
            // Writers check the type first (`TableMut::write_values`).
            _ => {}
        }
    }

    /// Writes `values` (of the same field) over `rows`, one value per row.
    pub(crate) fn write_rows(&mut self, rows: &[u32], values: Values<'_>) {
        fn put<T: Clone>(dst: &mut [T], rows: &[u32], src: impl Iterator<Item = T>) {
            for (&row, value) in rows.iter().zip(src) {
                if let Some(slot) = dst.get_mut(row as usize) {
                    *slot = value;
                }
            }
        }
        match values {
            Values::Own(values) => {
                each_vec_pair!(self, values, (dst, src) => put(dst, rows, src.into_iter()))
            }
            Values::Part(values, part) => {
                each_vec_pair!(self, values, (dst, src) => put(dst, rows, src[part].iter().cloned()))
            }
        }
    }
}

/// Values to write over some rows of a column of the same field: a column of their own,
/// moved in, or rows of another, copied (what a pack of small tables writes each table's
/// share from).
#[derive(Debug)]
pub(crate) enum Values<'a> {
    /// A column of their own.
    Own(Column),
    /// Rows (in range) of another column.
    Part(&'a Column, std::ops::Range<usize>),
}

impl Values<'_> {
    /// How many values.
    pub(crate) fn len(&self) -> usize {
        match self {
            Values::Own(c) => c.len(),
            Values::Part(_, rows) => rows.len(),
        }
    }

    /// Their type.
    pub(crate) fn field_type(&self) -> FieldType {
        match self {
            Values::Own(c) => c.field_type(),
            Values::Part(c, _) => c.field_type(),
        }
    }

    /// The column they are in and their rows of it.
    fn parts(&self) -> (&Column, std::ops::Range<usize>) {
        match self {
            Values::Own(c) => (c, 0..c.len()),
            Values::Part(c, rows) => (c, rows.clone()),
        }
    }
}

/// Some rows of a column, lent for writing in place: what one thread of an UPDATE that
/// runs on several writes (`TableMut::lend_columns`; `split_at` makes the pieces).
#[derive(Debug)]
pub enum ColumnSliceMut<'a> {
    /// INT values.
    Int(&'a mut [i64]),
    /// FLOAT values.
    Float(&'a mut [f64]),
    /// REAL values.
    Real(&'a mut [f32]),
    /// BOOL values.
    Bool(&'a mut [bool]),
    /// TEXT values.
    Text(&'a mut [String]),
    /// ENTITY values; `None` is NULL.
    Entity(&'a mut [Option<Entity>]),
}

impl<'a> ColumnSliceMut<'a> {
    /// Every row of `column`.
    #[inline]
    pub fn of(column: &'a mut Column) -> ColumnSliceMut<'a> {
        match column {
            Column::Int(v) => ColumnSliceMut::Int(v),
            Column::Float(v) => ColumnSliceMut::Float(v),
            Column::Real(v) => ColumnSliceMut::Real(v),
            Column::Bool(v) => ColumnSliceMut::Bool(v),
            Column::Text(v) => ColumnSliceMut::Text(v),
            Column::Entity(v) => ColumnSliceMut::Entity(v),
        }
    }

    /// The rows before `mid` and those from it on (`mid` past the end: all, and none).
    pub fn split_at(self, mid: usize) -> (ColumnSliceMut<'a>, ColumnSliceMut<'a>) {
        macro_rules! split {
            ($variant:ident, $v:ident) => {{
                let (a, b) = $v.split_at_mut(mid.min($v.len()));
                (ColumnSliceMut::$variant(a), ColumnSliceMut::$variant(b))
            }};
        }
        match self {
            ColumnSliceMut::Int(v) => split!(Int, v),
            ColumnSliceMut::Float(v) => split!(Float, v),
            ColumnSliceMut::Real(v) => split!(Real, v),
            ColumnSliceMut::Bool(v) => split!(Bool, v),
            ColumnSliceMut::Text(v) => split!(Text, v),
            ColumnSliceMut::Entity(v) => split!(Entity, v),
        }
    }

    /// Writes `values` over the rows from `first` on, or over `first + picked[i]` when
    /// rows are picked (one value each). False, writing nothing, when `values` is of
    /// another type.
    pub fn write(&mut self, first: usize, picked: Option<&[u32]>, values: Column) -> bool {
        fn put<T: Copy>(dst: &mut [T], first: usize, picked: Option<&[u32]>, src: Vec<T>) {
            match picked {
                None => {
                    let end = dst.len().min(first.saturating_add(src.len()));
                    if let Some(dst) = dst.get_mut(first..end) {
                        dst.copy_from_slice(&src[..dst.len()]);
                    }
                }
                Some(rows) => move_in(dst, first, rows, src),
            }
        }
        // Text moves string by string (no copy of its bytes).
        fn move_in<T>(dst: &mut [T], first: usize, rows: &[u32], src: Vec<T>) {
            for (&row, value) in rows.iter().zip(src) {
                if let Some(slot) = dst.get_mut(first + row as usize) {
                    *slot = value;
                }
            }
        }
        match (self, values) {
            (ColumnSliceMut::Int(d), Column::Int(s)) => put(d, first, picked, s),
            (ColumnSliceMut::Float(d), Column::Float(s)) => put(d, first, picked, s),
            (ColumnSliceMut::Real(d), Column::Real(s)) => put(d, first, picked, s),
            (ColumnSliceMut::Bool(d), Column::Bool(s)) => put(d, first, picked, s),
            (ColumnSliceMut::Entity(d), Column::Entity(s)) => put(d, first, picked, s),
            (ColumnSliceMut::Text(d), Column::Text(s)) => match picked {
                Some(rows) => move_in(d, first, rows, s),
                None => {
                    for (slot, value) in d.iter_mut().skip(first).zip(s) {
                        *slot = value;
                    }
                }
            },
            _ => return false,
        }
        true
    }

    /// The values at the rows `write` would write (`count` rows from `first`, or
    /// `first + picked[i]`), copied: what a transaction keeps to undo the write.
    pub fn read(&self, first: usize, picked: Option<&[u32]>, count: usize) -> Column {
        fn take<T: Clone>(v: &[T], first: usize, picked: Option<&[u32]>, count: usize) -> Vec<T> {
            match picked {
                None => v.iter().skip(first).take(count).cloned().collect(),
                Some(rows) => rows
                    .iter()
                    .filter_map(|&r| v.get(first + r as usize).cloned())
                    .collect(),
            }
        }
        match self {
            ColumnSliceMut::Int(v) => Column::Int(take(v, first, picked, count)),
            ColumnSliceMut::Float(v) => Column::Float(take(v, first, picked, count)),
            ColumnSliceMut::Real(v) => Column::Real(take(v, first, picked, count)),
            ColumnSliceMut::Bool(v) => Column::Bool(take(v, first, picked, count)),
            ColumnSliceMut::Text(v) => Column::Text(take(v, first, picked, count)),
            ColumnSliceMut::Entity(v) => Column::Entity(take(v, first, picked, count)),
        }
    }
}

/// Whether a value written over another leaves it the same in the one order of values
/// (`key.rs`): -0.0 is 0.0 and a NaN is every NaN, as `=` and `same_value` say.
trait Same {
    fn same(&self, other: &Self) -> bool;
}

macro_rules! same_by_eq {
    ($($t:ty),*) => {$(
        impl Same for $t {
            fn same(&self, other: &Self) -> bool {
                self == other
            }
        }
    )*};
}
same_by_eq!(i64, bool, String, Option<Entity>);

impl Same for f64 {
    fn same(&self, other: &Self) -> bool {
        (self == other) | (self.is_nan() & other.is_nan())
    }
}

impl Same for f32 {
    fn same(&self, other: &Self) -> bool {
        (self == other) | (self.is_nan() & other.is_nan())
    }
}

impl Column {
    /// For each `k`, whether `new[k]` differs from this column's value at row `first + k`
    /// (`new` holds the same field; rows past the end are left out): one branch-free
    /// comparison a value.
    pub(crate) fn differs(&self, first: usize, new: &Values<'_>) -> Vec<bool> {
        fn run<T: Same>(old: &[T], first: usize, new: &[T]) -> Vec<bool> {
            let old = old.get(first..).unwrap_or_default();
            old.iter().zip(new).map(|(a, b)| !a.same(b)).collect()
        }
        let (new, rows) = new.parts();
        each_vec_pair!(self, new, (old, new) => run(old, first, &new[rows]))
    }

    /// Calls `changed(rows[k])` for each `k` where `new[k]` differs from this column's value
    /// at row `rows[k]`.
    pub(crate) fn each_change_at(&self, rows: &[u32], new: &Values<'_>, mut changed: impl FnMut(usize)) {
        fn run<T: Same>(old: &[T], rows: &[u32], new: &[T], changed: &mut impl FnMut(usize)) {
            for (&row, b) in rows.iter().zip(new) {
                if old.get(row as usize).is_none_or(|a| !a.same(b)) {
                    changed(row as usize);
                }
            }
        }
        let (new, part) = new.parts();
        each_vec_pair!(self, new, (old, new) => run(old, rows, &new[part], &mut changed))
    }
}

/// A Rust type that a column stores: `i64`, `f64`, `f32`, `bool`, `String` or
/// `Option<Entity>`. Lets the columnar door hand out `&[T]` / `&mut [T]` with the type
/// chosen by the caller and checked once per column, not per cell.
pub trait ColumnValue: Sized + 'static {
    /// The field type whose column holds values of this Rust type.
    const TYPE: FieldType;
    /// The column's values, when it holds this type.
    fn slice(column: &Column) -> Option<&[Self]>;
    /// The column's values, writable, when it holds this type.
    fn slice_mut(column: &mut Column) -> Option<&mut [Self]>;
    /// A column of `values`.
    fn into_column(values: Vec<Self>) -> Column;
}

macro_rules! column_value {
    ($t:ty, $variant:ident) => {
        impl ColumnValue for $t {
            const TYPE: FieldType = FieldType::$variant;
            fn slice(column: &Column) -> Option<&[Self]> {
                match column {
                    Column::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_mut(column: &mut Column) -> Option<&mut [Self]> {
                match column {
                    Column::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn into_column(values: Vec<Self>) -> Column {
                Column::$variant(values)
            }
        }
    };
}

column_value!(i64, Int);
column_value!(f64, Float);
column_value!(f32, Real);
column_value!(bool, Bool);
column_value!(String, Text);
column_value!(Option<Entity>, Entity);

impl<T: ColumnValue> From<Vec<T>> for Column {
    fn from(values: Vec<T>) -> Column {
        T::into_column(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_slices_are_given_only_for_the_stored_type() {
        let mut c = Column::from(vec![1.0f32, 2.0]);
        assert_eq!(c.as_slice::<f32>(), Some(&[1.0f32, 2.0][..]));
        assert!(c.as_slice::<f64>().is_none());
        c.as_mut_slice::<f32>().unwrap()[0] = 5.0;
        assert_eq!(c.get(0), Some(Value::Real(5.0)));
        assert_eq!(c.get(2), None);
    }

    #[test]
    fn spare_columns_are_given_back_emptied_by_type_and_room_within_bounds() {
        let mut spares = SpareColumns::default();
        spares.keep(Column::from(vec![1.0f32; 1000]));
        spares.keep(Column::from(vec![1.0f32; 100]));
        spares.keep(Column::from(vec![2.0f64; 10]));
        // Texts, columns without room and columns of much room are not kept.
        spares.keep(Column::from(vec![String::from("a"); 10]));
        spares.keep(Column::new(FieldType::Int));
        spares.keep(Column::from(vec![0i64; SPARE_COLUMN_BYTES / 8 + 1]));
        assert_eq!(spares.columns.len(), 3);
        // The least room that is enough, emptied.
        let real = spares.take(FieldType::Real, 60);
        assert_eq!(
            (real.len(), real.field_type(), real.capacity()),
            (0, FieldType::Real, 100)
        );
        // Twice the room asked for at most: 1,000 is too much for 400; a new column.
        assert!((400..1000).contains(&spares.take(FieldType::Real, 400).capacity()));
        assert_eq!(spares.take(FieldType::Real, 600).capacity(), 1000);
        // Too little room for 20: a new column is made, the kept one stays.
        assert!(spares.take(FieldType::Float, 20).capacity() >= 20);
        assert_eq!(spares.columns.len(), 1);
        assert_eq!(spares.bytes, 80);
        spares.clear();
        assert_eq!((spares.columns.len(), spares.bytes), (0, 0));
        // Bounded in count and in bytes.
        for _ in 0..SPARE_COLUMNS + 10 {
            spares.keep(Column::from(vec![0i64; 8]));
        }
        assert_eq!(spares.columns.len(), SPARE_COLUMNS);
        let mut spares = SpareColumns::default();
        for _ in 0..SPARE_BYTES / SPARE_COLUMN_BYTES + 5 {
            spares.keep(Column::from(vec![false; SPARE_COLUMN_BYTES]));
        }
        assert_eq!(
            (spares.columns.len(), spares.bytes),
            (SPARE_BYTES / SPARE_COLUMN_BYTES, SPARE_BYTES)
        );
        // A copy of the world's spares keeps none.
        assert_eq!(spares.clone().columns.len(), 0);
    }

    #[test]
    fn writes_of_the_wrong_type_or_row_are_handed_back() {
        let mut c = Column::new(FieldType::Int);
        assert_eq!(c.push(Value::Real(1.0)), Err(Value::Real(1.0)));
        assert_eq!(c.push(Value::Int(1)), Ok(()));
        assert_eq!(c.set(1, Value::Int(2)), Err(Value::Int(2)));
        assert_eq!(c.set(0, Value::Null), Err(Value::Null));
        assert_eq!(c, Column::Int(vec![1]));
    }

    #[test]
    fn move_row_swap_removes_at_the_source() {
        let mut src = Column::from(vec![10i64, 11, 12]);
        let mut dst = Column::new(FieldType::Int);
        src.move_row_to(0, &mut dst);
        assert_eq!(src, Column::Int(vec![12, 11]));
        assert_eq!(dst, Column::Int(vec![10]));
    }
}

/// A write tick that a write beside others (`engine/beside.rs`) may set through a shared
/// reference, under the same invariant as `ColumnCell`'s (it holds the fields whose
/// stamp it sets, or, for the world's tick, takes it atomically); read and set through
/// `&mut` as a `u64` otherwise. Its order comes from the locks around it: `Relaxed`.
#[derive(Debug, Default)]
pub(crate) struct Stamp(std::sync::atomic::AtomicU64);

impl Stamp {
    pub(crate) fn new(tick: u64) -> Stamp {
        Stamp(std::sync::atomic::AtomicU64::new(tick))
    }

    /// The tick.
    pub(crate) fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn set(&mut self, tick: u64) {
        *self.0.get_mut() = tick;
    }

    /// Sets the tick through a shared reference (a write beside others).
    pub(crate) fn set_beside(&self, tick: u64) {
        self.0.store(tick, std::sync::atomic::Ordering::Relaxed);
    }

    /// One past the tick, taken through a shared reference: what it was plus one.
    pub(crate) fn next_beside(&self) -> u64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
    }
}

impl Clone for Stamp {
    fn clone(&self) -> Stamp {
        Stamp::new(self.get())
    }
}

/// Emptied columns kept for reuse: what the last closed transaction's undo records held
/// (the old values of a column replaced whole, as each tick's systems replace theirs),
/// given to the next writer that builds a column anew (`take`), so that a tick of many
/// small systems does not allocate and free a column for each. Bounded in count, in
/// bytes and in each column's room; what one transaction leaves untaken is dropped when
/// the next one closes (`clear`); a copy of a world starts with none.
#[derive(Debug, Default)]
pub(crate) struct SpareColumns {
    columns: Vec<Column>,
    /// The bytes `columns` have room for.
    bytes: usize,
}

/// The most columns `SpareColumns` keeps, the most bytes of room among them, and the most
/// one of them may have.
const SPARE_COLUMNS: usize = 64;
const SPARE_BYTES: usize = 1 << 20;
const SPARE_COLUMN_BYTES: usize = 64 << 10;

impl SpareColumns {
    /// Keeps `column`'s room, if it fits the bounds; a TEXT column is dropped (its
    /// values own memory of their own, which an emptied column would free anyway).
    pub(crate) fn keep(&mut self, mut column: Column) {
        let bytes = column.capacity() * column.value_size();
        if matches!(column, Column::Text(_))
            || bytes == 0
            || bytes > SPARE_COLUMN_BYTES
            || self.columns.len() >= SPARE_COLUMNS
            || self.bytes.saturating_add(bytes) > SPARE_BYTES
        {
            return;
        }
        column.clear();
        self.bytes += bytes;
        self.columns.push(column);
    }

    /// Drops every column kept.
    pub(crate) fn clear(&mut self) {
        self.columns.clear();
        self.bytes = 0;
    }

    /// An empty column of `ty` with room for `len` values: the kept one of the least
    /// room that has enough and not more than twice that (a small table is not given a
    /// large one's room), else a new one.
    pub(crate) fn take(&mut self, ty: FieldType, len: usize) -> Column {
        // A column of just the room asked for (as the column a table's last write
        // replaced has) ends the search.
        let room = len..=len.saturating_mul(2);
        let mut kept: Option<(usize, usize)> = None;
        for (i, c) in self.columns.iter().enumerate().rev() {
            let capacity = c.capacity();
            if c.field_type() != ty || !room.contains(&capacity) {
                continue;
            }
            if kept.is_none_or(|(_, least)| capacity < least) {
                kept = Some((i, capacity));
            }
            if capacity == len {
                break;
            }
        }
        let kept = kept.map(|(i, _)| i);
        match kept {
            Some(i) => {
                let column = self.columns.swap_remove(i);
                self.bytes -= column.capacity() * column.value_size();
                column
            }
            None => Column::with_capacity(ty, len),
        }
    }
}

impl Clone for SpareColumns {
    fn clone(&self) -> SpareColumns {
        SpareColumns::default()
    }
}
