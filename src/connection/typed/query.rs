//! Typed queries on the columnar door: `world.query::<(&mut Position, &Velocity,
//! Option<&Health>)>()`, filtered by `With<T>`, `Without<T>`, `Changed<T>` and
//! `Added<T>`, iterated an entity at a time (`iter`) or a table at a time as typed column
//! slices (`tables`: `PositionColumnsMut { x: &mut [f32], y: &mut [f32] }`).
//!
//! Invariants:
//! - Everything that can be wrong with a query is found when it is made (`World::query`):
//!   an unknown component, one whose fields differ from the Rust type's, a field whose
//!   values the Rust type cannot hold (NULL in an `Entity`), a component named twice
//!   when once to write (also refused at compile time, `Access::check`), a sparse
//!   component beside others. Lending and iterating then cannot fail.
//! - A component written (`&mut T`) is lent as one `&mut` slice per field per table, all
//!   tables at once (`World::lend_tables`), and gone through row by row by each slice's
//!   own iterator as the query's iterator goes, so no two items alias and no `unsafe` is
//!   needed. Its write is settled (exact change marks, the observers told) at the next
//!   lend or when the query is dropped, while the query still holds the world; a query
//!   leaked with `mem::forget` is settled by the world itself (`World::settle_pending`).
//! - An item `Mut<T>` holds the row's value taken out of its cells (one `&mut` per field,
//!   each got from the field's row iterator) and puts it back when dropped (a text is
//!   moved both ways, never copied).

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut, Range};

use super::{Component, FieldSpec, FieldValue};
use crate::error::{Error, Result};
use crate::storage::{Asked, ComponentId, Entity, FieldId, Filter, Lent, StorageKind, TableId, World};

/// What a query lent of one table, taken in order by the parts of the query: per
/// component asked, whether the table holds it, then its fields' columns.
pub struct ColumnSource<'a> {
    entities: &'a [Entity],
    present: std::vec::IntoIter<bool>,
    columns: std::vec::IntoIter<Option<Lent<'a>>>,
}

impl<'a> ColumnSource<'a> {
    /// The next field's column, to read, as `V`'s stored type.
    #[doc(hidden)]
    pub fn read<V: FieldValue>(&mut self) -> Option<&'a [V::Stored]> {
        let column: &'a crate::storage::Column = match self.columns.next()?? {
            Lent::Read(c) => c,
            Lent::Write(c) => c,
        };
        column.as_slice::<V::Stored>()
    }

    /// The next field's column, to write, as `V`'s stored type.
    #[doc(hidden)]
    pub fn write<V: FieldValue>(&mut self) -> Option<&'a mut [V::Stored]> {
        match self.columns.next()?? {
            Lent::Write(c) => c.as_mut_slice::<V::Stored>(),
            Lent::Read(_) => None,
        }
    }

    /// Whether the table holds the next component asked for; when it does not, its
    /// `fields` columns are passed over.
    fn present(&mut self, fields: usize) -> bool {
        let present = self.present.next().unwrap_or(false);
        if !present {
            for _ in 0..fields {
                self.columns.next();
            }
        }
        present
    }
}

/// One component a query asks for (`QueryData::wants`).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Want {
    name: &'static str,
    fields: &'static [FieldSpec],
    sparse: bool,
    write: bool,
    optional: bool,
}

/// The most components one query names.
const MOST: usize = 16;

/// Which components a query names, and which to write: known at compile time, so a
/// query naming one component twice, once to write, does not compile (`check`).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Access {
    names: [&'static str; MOST],
    writes: [bool; MOST],
    len: usize,
}

impl Access {
    /// Names nothing.
    pub const NONE: Access = Access {
        names: [""; MOST],
        writes: [false; MOST],
        len: 0,
    };

    /// Names `name`, to write or not.
    pub const fn one(name: &'static str, write: bool) -> Access {
        let mut a = Access::NONE;
        a.names[0] = name;
        a.writes[0] = write;
        a.len = 1;
        a
    }

    /// Both `self`'s and `other`'s.
    pub const fn join(self, other: Access) -> Access {
        let mut a = self;
        let mut i = 0;
        while i < other.len {
            if a.len == MOST {
                panic!("a typed query names at most 16 components");
            }
            a.names[a.len] = other.names[i];
            a.writes[a.len] = other.writes[i];
            a.len += 1;
            i += 1;
        }
        a
    }

    /// Fails (at compile time, where it is a constant) when a component is named twice
    /// and once to write: the two would alias.
    pub const fn check(self) {
        let mut i = 0;
        while i < self.len {
            let mut j = 0;
            while j < i {
                if (self.writes[i] || self.writes[j]) && same(self.names[i], self.names[j]) {
                    panic!(
                        "a typed query names one component twice, once as &mut T: the two would alias (name it once, as &mut T)"
                    );
                }
                j += 1;
            }
            i += 1;
        }
    }
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// What a typed query asks of each entity: `&T` (reads `T`), `&mut T` (writes it),
/// `Option<&T>` / `Option<&mut T>` (the entities without `T` too), `Entity` (the id), or
/// a tuple of them (up to eight). `T` is a `Component`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not what a typed query can ask for",
    note = "a query asks for &T, &mut T, Option<&T>, Option<&mut T> (T a Component) or Entity, or a tuple of them"
)]
pub trait QueryData {
    /// The components named, and which to write.
    #[doc(hidden)]
    const ACCESS: Access;
    /// Its `next` ends with the table's rows in every table: it reads a column (a tag
    /// has none, an `Option` may be absent), or the entity ids.
    #[doc(hidden)]
    const BOUNDED: bool;
    /// What it gives of one entity (`Mut<T>` for `&mut T`, `Ref<T>` for `&T`).
    type Item<'a>;
    /// What it gives of one table: typed column slices (`T::ColumnsMut` for `&mut T`,
    /// `T::Columns` for `&T`, `&[Entity]` for `Entity`).
    type Columns<'a>;
    /// Where it stands in one table's rows, an entity at a time.
    #[doc(hidden)]
    type Iter<'a>;
    /// Its components, in order.
    #[doc(hidden)]
    fn wants(out: &mut Vec<Want>);
    /// Takes its columns of one table.
    #[doc(hidden)]
    fn fetch<'a>(from: &mut ColumnSource<'a>) -> Option<Self::Columns<'a>>;
    /// Starts going through a table's rows.
    #[doc(hidden)]
    fn start(columns: Self::Columns<'_>) -> Self::Iter<'_>;
    /// The item of the row after the last one given (every row in turn, from the
    /// first: for a table whose rows are all visited); `None` past the last.
    #[doc(hidden)]
    fn next<'a>(iter: &mut Self::Iter<'a>) -> Option<Self::Item<'a>>;
    /// The item of row `row` (rows asked in increasing order, each once); `None` past
    /// the table's last row.
    #[doc(hidden)]
    fn item<'a>(iter: &mut Self::Iter<'a>, row: usize) -> Option<Self::Item<'a>>;
}

/// A row's component, read: derefs to `T`.
#[derive(Clone, Debug, PartialEq)]
pub struct Ref<'a, T> {
    value: T,
    _row: PhantomData<&'a ()>,
}

impl<T> Deref for Ref<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> Ref<'_, T> {
    /// The value itself.
    pub fn into_inner(self) -> T {
        self.value
    }
}

/// A row's component, to write: derefs to `T` (mutably); what it holds when dropped is
/// written to the row. Only values that differ from the row's count as changed.
///
/// ```
/// # #[cfg(feature = "derive")] {
/// use ecsql::{Component, Mut, World};
///
/// #[derive(Component, Debug, PartialEq)]
/// struct Name { text: String }
///
/// let mut world = World::new();
/// world.register::<Name>()?;
/// let e = world.spawn((Name { text: "ada".into() },))?;
/// for mut name in world.query::<&mut Name>()?.iter() {
///     let name: &mut Mut<Name> = &mut name;
///     name.text.push_str(" lovelace"); // the text was moved out of its column, not copied
/// }
/// assert_eq!(world.get::<Name>(e)?, Some(Name { text: "ada lovelace".into() }));
/// # }
/// # Ok::<(), ecsql::Error>(())
/// ```
pub struct Mut<'a, T: Component> {
    value: T,
    cells: T::Cells<'a>,
}

impl<T: Component> Deref for Mut<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: Component> DerefMut for Mut<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T: Component> Drop for Mut<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        self.value.put(&mut self.cells);
    }
}

impl<T: Component + std::fmt::Debug> std::fmt::Debug for Mut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value.fmt(f)
    }
}

fn want<T: Component>(write: bool, optional: bool) -> Want {
    Want {
        name: T::NAME,
        fields: T::FIELDS,
        sparse: T::SPARSE,
        write,
        optional,
    }
}

/// A component's rows as a query goes through them, and the table row they start at.
#[doc(hidden)]
pub struct Reading<'a, T: Component> {
    rows: T::Rows<'a>,
    at: usize,
}

impl<'a, T: Component> Reading<'a, T> {
    #[inline(always)]
    fn next(&mut self) -> Option<Ref<'a, T>> {
        Some(Ref {
            value: T::next_value(&mut self.rows, 0)?,
            _row: PhantomData,
        })
    }

    #[inline(always)]
    fn value(&mut self, row: usize) -> Option<Ref<'a, T>> {
        let skip = row.checked_sub(self.at)?;
        self.at = row + 1;
        Some(Ref {
            value: T::next_value(&mut self.rows, skip)?,
            _row: PhantomData,
        })
    }
}

/// A component's rows to write as a query goes through them, and the table row they
/// start at.
#[doc(hidden)]
pub struct Writing<'a, T: Component> {
    rows: T::RowsMut<'a>,
    at: usize,
}

impl<'a, T: Component> Writing<'a, T> {
    #[inline(always)]
    fn next(&mut self) -> Option<Mut<'a, T>> {
        let mut cells = T::next_cells(&mut self.rows, 0)?;
        Some(Mut {
            value: T::take(&mut cells),
            cells,
        })
    }

    #[inline(always)]
    fn value(&mut self, row: usize) -> Option<Mut<'a, T>> {
        let skip = row.checked_sub(self.at)?;
        self.at = row + 1;
        let mut cells = T::next_cells(&mut self.rows, skip)?;
        Some(Mut {
            value: T::take(&mut cells),
            cells,
        })
    }
}

impl<T: Component> QueryData for &T {
    const ACCESS: Access = Access::one(T::NAME, false);
    const BOUNDED: bool = !T::FIELDS.is_empty();
    type Item<'a> = Ref<'a, T>;
    type Columns<'a> = T::Columns<'a>;
    type Iter<'a> = Reading<'a, T>;
    fn wants(out: &mut Vec<Want>) {
        out.push(want::<T>(false, false));
    }
    fn fetch<'a>(from: &mut ColumnSource<'a>) -> Option<Self::Columns<'a>> {
        from.present(T::FIELDS.len()).then_some(())?;
        T::columns(from)
    }
    fn start(columns: Self::Columns<'_>) -> Self::Iter<'_> {
        Reading {
            rows: T::rows(columns),
            at: 0,
        }
    }
    #[inline(always)]
    fn next<'a>(iter: &mut Self::Iter<'a>) -> Option<Self::Item<'a>> {
        iter.next()
    }
    #[inline(always)]
    fn item<'a>(iter: &mut Self::Iter<'a>, row: usize) -> Option<Self::Item<'a>> {
        iter.value(row)
    }
}

impl<T: Component> QueryData for &mut T {
    const ACCESS: Access = Access::one(T::NAME, true);
    const BOUNDED: bool = !T::FIELDS.is_empty();
    type Item<'a> = Mut<'a, T>;
    type Columns<'a> = T::ColumnsMut<'a>;
    type Iter<'a> = Writing<'a, T>;
    fn wants(out: &mut Vec<Want>) {
        out.push(want::<T>(true, false));
    }
    fn fetch<'a>(from: &mut ColumnSource<'a>) -> Option<Self::Columns<'a>> {
        from.present(T::FIELDS.len()).then_some(())?;
        T::columns_mut(from)
    }
    fn start(columns: Self::Columns<'_>) -> Self::Iter<'_> {
        Writing {
            rows: T::rows_mut(columns),
            at: 0,
        }
    }
    #[inline(always)]
    fn next<'a>(iter: &mut Self::Iter<'a>) -> Option<Self::Item<'a>> {
        iter.next()
    }
    #[inline(always)]
    fn item<'a>(iter: &mut Self::Iter<'a>, row: usize) -> Option<Self::Item<'a>> {
        iter.value(row)
    }
}

impl<T: Component> QueryData for Option<&T> {
    const ACCESS: Access = Access::one(T::NAME, false);
    const BOUNDED: bool = false;
    type Item<'a> = Option<Ref<'a, T>>;
    type Columns<'a> = Option<T::Columns<'a>>;
    type Iter<'a> = Option<Reading<'a, T>>;
    fn wants(out: &mut Vec<Want>) {
        out.push(want::<T>(false, true));
    }
    fn fetch<'a>(from: &mut ColumnSource<'a>) -> Option<Self::Columns<'a>> {
        if !from.present(T::FIELDS.len()) {
            return Some(None);
        }
        T::columns(from).map(Some)
    }
    fn start(columns: Self::Columns<'_>) -> Self::Iter<'_> {
        columns.map(<&T as QueryData>::start)
    }
    #[inline(always)]
    fn next<'a>(iter: &mut Self::Iter<'a>) -> Option<Self::Item<'a>> {
        match iter {
            Some(reading) => reading.next().map(Some),
            None => Some(None),
        }
    }
    #[inline(always)]
    fn item<'a>(iter: &mut Self::Iter<'a>, row: usize) -> Option<Self::Item<'a>> {
        match iter {
            Some(reading) => reading.value(row).map(Some),
            None => Some(None),
        }
    }
}

impl<T: Component> QueryData for Option<&mut T> {
    const ACCESS: Access = Access::one(T::NAME, true);
    const BOUNDED: bool = false;
    type Item<'a> = Option<Mut<'a, T>>;
    type Columns<'a> = Option<T::ColumnsMut<'a>>;
    type Iter<'a> = Option<Writing<'a, T>>;
    fn wants(out: &mut Vec<Want>) {
        out.push(want::<T>(true, true));
    }
    fn fetch<'a>(from: &mut ColumnSource<'a>) -> Option<Self::Columns<'a>> {
        if !from.present(T::FIELDS.len()) {
            return Some(None);
        }
        T::columns_mut(from).map(Some)
    }
    fn start(columns: Self::Columns<'_>) -> Self::Iter<'_> {
        columns.map(<&mut T as QueryData>::start)
    }
    #[inline(always)]
    fn next<'a>(iter: &mut Self::Iter<'a>) -> Option<Self::Item<'a>> {
        match iter {
            Some(writing) => writing.next().map(Some),
            None => Some(None),
        }
    }
    #[inline(always)]
    fn item<'a>(iter: &mut Self::Iter<'a>, row: usize) -> Option<Self::Item<'a>> {
        match iter {
            Some(writing) => writing.value(row).map(Some),
            None => Some(None),
        }
    }
}

impl QueryData for Entity {
    const ACCESS: Access = Access::NONE;
    const BOUNDED: bool = true;
    type Item<'a> = Entity;
    type Columns<'a> = &'a [Entity];
    /// The entities to go through in turn, and all of them (for a picked row).
    type Iter<'a> = (std::slice::Iter<'a, Entity>, &'a [Entity]);
    fn wants(_: &mut Vec<Want>) {}
    fn fetch<'a>(from: &mut ColumnSource<'a>) -> Option<Self::Columns<'a>> {
        Some(from.entities)
    }
    fn start(columns: Self::Columns<'_>) -> Self::Iter<'_> {
        (columns.iter(), columns)
    }
    #[inline(always)]
    fn next<'a>(iter: &mut Self::Iter<'a>) -> Option<Self::Item<'a>> {
        iter.0.next().copied()
    }
    #[inline(always)]
    fn item<'a>(iter: &mut Self::Iter<'a>, row: usize) -> Option<Self::Item<'a>> {
        iter.1.get(row).copied()
    }
}

macro_rules! query_tuple {
    ($($name:ident $i:tt),+) => {
        impl<$($name: QueryData),+> QueryData for ($($name,)+) {
            const ACCESS: Access = Access::NONE$(.join($name::ACCESS))+;
            const BOUNDED: bool = false $(|| $name::BOUNDED)+;
            type Item<'a> = ($($name::Item<'a>,)+);
            type Columns<'a> = ($($name::Columns<'a>,)+);
            type Iter<'a> = ($($name::Iter<'a>,)+);
            fn wants(out: &mut Vec<Want>) {
                $($name::wants(out);)+
            }
            fn fetch<'a>(from: &mut ColumnSource<'a>) -> Option<Self::Columns<'a>> {
                Some(($($name::fetch(from)?,)+))
            }
            fn start(columns: Self::Columns<'_>) -> Self::Iter<'_> {
                ($($name::start(columns.$i),)+)
            }
            #[inline(always)]
            fn next<'a>(iter: &mut Self::Iter<'a>) -> Option<Self::Item<'a>> {
                Some(($($name::next(&mut iter.$i)?,)+))
            }
            #[inline(always)]
            fn item<'a>(iter: &mut Self::Iter<'a>, row: usize) -> Option<Self::Item<'a>> {
                Some(($($name::item(&mut iter.$i, row)?,)+))
            }
        }
    };
}

query_tuple!(A 0);
query_tuple!(A 0, B 1);
query_tuple!(A 0, B 1, C 2);
query_tuple!(A 0, B 1, C 2, D 3);
query_tuple!(A 0, B 1, C 2, D 3, E 4);
query_tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
query_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
query_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// One condition of a query's filter.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum Term {
    With(&'static str),
    Without(&'static str),
    Changed(&'static str, usize),
    Added(&'static str),
}

/// Which entities a typed query visits beyond those holding what it asks for: `With<T>`,
/// `Without<T>`, `Changed<T>`, `Added<T>`, or a tuple of them (all must hold).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a filter of a typed query",
    note = "a filter is With<T>, Without<T>, Changed<T>, Added<T>, or a tuple of them"
)]
pub trait QueryFilter {
    /// Its conditions.
    #[doc(hidden)]
    fn terms(out: &mut Vec<Term>);
}

/// Only entities that have `T` (without reading it).
///
/// ```
/// # #[cfg(feature = "derive")] {
/// use ecsql::{Component, With, Without, World};
///
/// #[derive(Component)]
/// struct Hp { hp: i64 }
/// #[derive(Component)]
/// struct Boss;
/// #[derive(Component)]
/// struct Dead;
///
/// let mut world = World::new();
/// world.register::<Hp>()?;
/// world.register::<Boss>()?;
/// world.register::<Dead>()?;
/// world.spawn((Hp { hp: 10 }, Boss))?;
/// world.spawn((Hp { hp: 10 }, Boss, Dead))?;
/// world.spawn((Hp { hp: 10 },))?;
/// let mut living_bosses = world.query_filtered::<&mut Hp, (With<Boss>, Without<Dead>)>()?;
/// assert_eq!(living_bosses.count(), 1);
/// for mut h in living_bosses.iter() {
///     h.hp *= 10;
/// }
/// # }
/// # Ok::<(), ecsql::Error>(())
/// ```
pub struct With<T>(PhantomData<T>);
/// Only entities that do not have `T` (see `With` for an example).
pub struct Without<T>(PhantomData<T>);
/// Only entities whose `T` got a different value in some field (or was added) after
/// the query's `since` tick: ecsql's exact change marks, as `changed(T)` in SQL. Making
/// the query turns `T`'s marks on (`World::track_changes`) if they were not: the rows
/// then present count as changed, as at a reader's first run.
pub struct Changed<T>(PhantomData<T>);
/// Only entities that got `T` (were spawned with it, or had it attached) after the
/// query's `since` tick, as `added(T)` in SQL.
///
/// ```
/// # #[cfg(feature = "derive")] {
/// use ecsql::{Added, Component, Entity, World};
///
/// #[derive(Component)]
/// struct Player { score: i64 }
///
/// let mut world = World::new();
/// let player = world.register::<Player>()?;
/// world.track_changes(player)?;
/// world.spawn((Player { score: 0 },))?;
/// let seen = world.tick();
/// let late = world.spawn((Player { score: 0 },))?;
/// let mut joined = world.query_filtered::<Entity, Added<Player>>()?.since(seen);
/// assert_eq!(joined.iter().collect::<Vec<_>>(), vec![late]);
/// # }
/// # Ok::<(), ecsql::Error>(())
/// ```
pub struct Added<T>(PhantomData<T>);

impl QueryFilter for () {
    fn terms(_: &mut Vec<Term>) {}
}
impl<T: Component> QueryFilter for With<T> {
    fn terms(out: &mut Vec<Term>) {
        out.push(Term::With(T::NAME));
    }
}
impl<T: Component> QueryFilter for Without<T> {
    fn terms(out: &mut Vec<Term>) {
        out.push(Term::Without(T::NAME));
    }
}
impl<T: Component> QueryFilter for Changed<T> {
    fn terms(out: &mut Vec<Term>) {
        out.push(Term::Changed(T::NAME, T::FIELDS.len()));
    }
}
impl<T: Component> QueryFilter for Added<T> {
    fn terms(out: &mut Vec<Term>) {
        out.push(Term::Added(T::NAME));
    }
}

macro_rules! filter_tuple {
    ($($name:ident),+) => {
        impl<$($name: QueryFilter),+> QueryFilter for ($($name,)+) {
            fn terms(out: &mut Vec<Term>) {
                $($name::terms(out);)+
            }
        }
    };
}

filter_tuple!(A);
filter_tuple!(A, B);
filter_tuple!(A, B, C);
filter_tuple!(A, B, C, D);
filter_tuple!(A, B, C, D, E);
filter_tuple!(A, B, C, D, E, F);
filter_tuple!(A, B, C, D, E, F, G);
filter_tuple!(A, B, C, D, E, F, G, H);

/// A typed query over a world it holds: made by `World::query` (or `query_filtered`),
/// iterated an entity at a time (`iter`) or a table at a time (`tables`).
///
/// ```
/// # #[cfg(feature = "derive")] {
/// use ecsql::{Changed, Component, Entity, With, World};
///
/// #[derive(Component, Debug, PartialEq)]
/// struct Position { x: f32, y: f32 }
/// #[derive(Component)]
/// struct Velocity { x: f32, y: f32 }
/// #[derive(Component)]
/// struct Health { hp: i64 }
///
/// let mut world = World::new();
/// let position = world.register::<Position>()?;
/// world.track_changes(position)?; // marks from here on (`Changed` turns them on too)
/// world.register::<Velocity>()?;
/// world.register::<Health>()?;
/// let a = world.spawn((Position { x: 0.0, y: 0.0 }, Velocity { x: 1.0, y: 2.0 }))?;
/// let b = world.spawn((Position { x: 5.0, y: 5.0 }, Velocity { x: 0.0, y: 0.0 }, Health { hp: 3 }))?;
///
/// // An entity at a time: a `Mut<T>` derefs to `T` and is written back when dropped.
/// let mut query = world.query::<(&mut Position, &Velocity, Option<&Health>)>()?;
/// for (mut pos, vel, health) in query.iter() {
///     pos.x += vel.x;
///     pos.y += vel.y;
///     if let Some(h) = health { pos.x += h.hp as f32; }
/// }
/// drop(query);
/// assert_eq!(world.get::<Position>(a)?, Some(Position { x: 1.0, y: 2.0 }));
/// assert_eq!(world.get::<Position>(b)?, Some(Position { x: 8.0, y: 5.0 }));
///
/// // A table at a time: one slice per field, for loops the compiler vectorizes.
/// let seen = world.tick();
/// let mut query = world.query::<(&mut Position, &Velocity)>()?;
/// for (pos, vel) in query.tables() {
///     for i in 0..pos.x.len() {
///         pos.x[i] += vel.x[i];
///         pos.y[i] += vel.y[i];
///     }
/// }
/// drop(query);
///
/// // Exact change marks: only `a` moved (b's velocity is zero).
/// let mut moved = world.query_filtered::<Entity, Changed<Position>>()?.since(seen);
/// assert_eq!(moved.iter().collect::<Vec<_>>(), vec![a]);
/// # }
/// # Ok::<(), ecsql::Error>(())
/// ```
pub struct Query<'w, Q: QueryData, F: QueryFilter = ()> {
    world: &'w mut World,
    /// The tables visited, ascending.
    tables: Vec<TableId>,
    /// The fields lent of each table.
    asked: Vec<Asked>,
    /// Per table, per component asked: whether the table holds it.
    present: Vec<Vec<bool>>,
    /// Per table, the rows the filter's `Changed`/`Added` select (`None`: every row).
    rows: Vec<Option<Vec<u32>>>,
    /// The filter's `Changed` (the component's fields) and `Added` components.
    changed: Vec<Vec<FieldId>>,
    added: Vec<ComponentId>,
    _types: PhantomData<fn() -> (Q, F)>,
}

impl World {
    /// A typed query of `Q` (see `Query`): fails when a component is unknown or differs
    /// from its Rust type, when a field holds what its Rust type cannot (NULL in an
    /// `Entity`), or when a sparse component is asked for beside another.
    pub fn query<Q: QueryData>(&mut self) -> Result<Query<'_, Q>> {
        self.query_filtered::<Q, ()>()
    }

    /// `query`, for hecs' habit: the same.
    pub fn query_mut<Q: QueryData>(&mut self) -> Result<Query<'_, Q>> {
        self.query_filtered::<Q, ()>()
    }

    /// A typed query of `Q` over the entities `F` lets through.
    pub fn query_filtered<Q: QueryData, F: QueryFilter>(&mut self) -> Result<Query<'_, Q, F>> {
        const { Q::ACCESS.check() };
        let mut wants = Vec::new();
        Q::wants(&mut wants);
        let mut terms = Vec::new();
        F::terms(&mut terms);
        let mut ids = Vec::with_capacity(wants.len());
        for w in &wants {
            ids.push(self.checked_component(w)?);
        }
        for (i, w) in wants.iter().enumerate() {
            let twice = wants[..i]
                .iter()
                .zip(&ids)
                .any(|(v, &id)| id == ids[i] && (v.write || w.write));
            if twice {
                return Err(misuse(format!(
                    "a typed query names component {} twice, once as &mut: the two would alias (name it once)",
                    w.name
                )));
            }
        }
        let mut filter = Filter::new();
        for (w, &id) in wants.iter().zip(&ids) {
            if !w.optional {
                filter = filter.with(id);
            }
        }
        let (mut changed, mut added) = (Vec::new(), Vec::new());
        for term in &terms {
            match *term {
                Term::With(name) => filter = filter.with(self.typed_component(name)?.id()),
                Term::Without(name) => filter = filter.without(self.typed_component(name)?.id()),
                Term::Changed(name, fields) => {
                    let id = self.typed_component(name)?.id();
                    self.track_changes(id)?;
                    filter = filter.with(id);
                    // A tag has no values: its `Changed` is its `Added`.
                    match fields {
                        0 => added.push(id),
                        n => changed.push((0..n).map(|k| FieldId::new(id, k as u16)).collect()),
                    }
                }
                Term::Added(name) => {
                    let id = self.typed_component(name)?.id();
                    self.track_changes(id)?;
                    filter = filter.with(id);
                    added.push(id);
                }
            }
        }
        if wants.iter().any(|w| w.sparse)
            && (wants.len() > 1 || !terms.is_empty() || wants.iter().any(|w| w.optional))
        {
            let sparse = wants.iter().find(|w| w.sparse).map_or("", |w| w.name);
            return Err(misuse(format!(
                "a typed query asks for sparse component {sparse} beside others: no one table holds both (query it alone, or look up its values with World::get)"
            )));
        }
        let tables: Vec<TableId> = self
            .matching_tables(&filter)?
            .into_iter()
            .filter(|&t| self.table(t).is_some_and(|t| !t.is_empty()))
            .collect();
        let mut asked = Vec::new();
        for (w, &id) in wants.iter().zip(&ids) {
            for k in 0..w.fields.len() {
                asked.push(Asked {
                    field: FieldId::new(id, k as u16),
                    write: w.write,
                });
            }
        }
        let mut present = Vec::with_capacity(tables.len());
        for &t in &tables {
            let Some(table) = self.table(t) else { continue };
            present.push(
                ids.iter()
                    .map(|&c| table.contains(c) || table.id().is_sparse())
                    .collect(),
            );
            for (w, &id) in wants.iter().zip(&ids) {
                for (k, spec) in w.fields.iter().enumerate() {
                    let Some(column) = table.column(FieldId::new(id, k as u16)) else {
                        continue;
                    };
                    if let Some(row) = (spec.unfit)(column, 0..column.len()) {
                        let entity = table.entities().get(row).copied();
                        return Err(misuse(format!(
                            "{}.{} of entity {} holds {}, which the field's Rust type cannot hold ({}: make the field an Option<Entity>, or an i64)",
                            w.name,
                            spec.name,
                            entity.map_or_else(|| "?".to_owned(), |e| e.to_string()),
                            column.get(row).map_or_else(|| "?".to_owned(), |v| v.to_string()),
                            "NULL in an Entity, or a number past i32 in an i32",
                        )));
                    }
                }
            }
        }
        let mut query = Query {
            world: self,
            rows: Vec::new(),
            tables,
            asked,
            present,
            changed,
            added,
            _types: PhantomData,
        };
        query.select(None);
        Ok(query)
    }

    /// The component a query asks for, checked against its Rust type.
    fn checked_component(&self, want: &Want) -> Result<ComponentId> {
        let def = self.typed_component(want.name)?;
        let sparse = def.storage() == StorageKind::Sparse;
        if let Some(differences) =
            super::differences(want.name, want.fields, want.sparse, def.fields(), sparse)
        {
            return Err(misuse(differences));
        }
        Ok(def.id())
    }
}

/// What a system running a query of `Q` filtered by `F` reads and writes: each
/// component `Q` asks for, read or written as asked, and each `F` names, read.
pub(crate) fn access_of<Q: QueryData, F: QueryFilter>() -> crate::schedule::SystemAccess {
    let mut wants = Vec::new();
    Q::wants(&mut wants);
    let mut terms = Vec::new();
    F::terms(&mut terms);
    let mut access = crate::schedule::SystemAccess::new();
    for w in wants {
        access = if w.write {
            access.writes(w.name)
        } else {
            access.reads(w.name)
        };
    }
    for term in terms {
        let (Term::With(name) | Term::Without(name) | Term::Changed(name, _) | Term::Added(name)) = term;
        access = access.reads(name);
    }
    access
}

fn misuse(message: String) -> Error {
    Error::Misuse {
        message,
        at: crate::location::Location::default(),
    }
}

impl<'w, Q: QueryData, F: QueryFilter> Query<'w, Q, F> {
    /// Counts as changed (`Changed<T>`) or added (`Added<T>`) only what was after write
    /// tick `tick` (a `World::tick()` read earlier); without it, every row counts, as at
    /// a reader's first run.
    pub fn since(mut self, tick: u64) -> Self {
        self.select(Some(tick));
        self
    }

    /// Picks each table's rows the filter's marks let through.
    fn select(&mut self, since: Option<u64>) {
        self.rows = self
            .tables
            .iter()
            .map(|&t| {
                let since = since?;
                if self.changed.is_empty() && self.added.is_empty() {
                    return None;
                }
                let table = self.world.table(t)?;
                let len = table.len();
                let mut keep = vec![true; len];
                for fields in &self.changed {
                    let mut any = vec![false; len];
                    for &f in fields {
                        if let Some(marks) = table.changed_marks(f) {
                            any.iter_mut()
                                .zip(marks.ticks())
                                .for_each(|(a, &m)| *a |= m > since);
                        }
                    }
                    keep.iter_mut().zip(&any).for_each(|(k, a)| *k &= a);
                }
                for &c in &self.added {
                    let marks = table.added_marks(c);
                    for (row, k) in keep.iter_mut().enumerate() {
                        *k &= marks.and_then(|m| m.ticks().get(row)).is_some_and(|&m| m > since);
                    }
                }
                Some(
                    keep.iter()
                        .enumerate()
                        .filter(|(_, k)| **k)
                        .map(|(r, _)| r as u32)
                        .collect(),
                )
            })
            .collect();
    }

    /// Lends every table's columns, settling what an earlier lend owes first.
    fn lend(&mut self) -> Vec<(Q::Columns<'_>, Rows)> {
        let world: &mut World = self.world;
        // The fields were checked, each named once to write, when the query was made,
        // and the world has been held since: lending cannot fail.
        let Ok(lent) = world.lend_tables(&self.tables, &self.asked) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(lent.len());
        for ((table, present), rows) in lent.into_iter().zip(&self.present).zip(&self.rows) {
            let len = table.entities.len();
            let mut source = ColumnSource {
                entities: table.entities,
                present: present.clone().into_iter(),
                columns: table.columns.into_iter(),
            };
            // The columns' types were checked against the Rust types when the query was
            // made: every table fetches.
            let Some(columns) = Q::fetch(&mut source) else {
                continue;
            };
            let rows = match rows {
                Some(picked) => Rows::Picked(picked.clone().into_iter()),
                None => Rows::All(0..len),
            };
            out.push((columns, rows));
        }
        out
    }

    /// The query's items, an entity at a time, table after table.
    pub fn iter(&mut self) -> QueryIter<'_, Q> {
        let tables: Vec<(Q::Iter<'_>, Rows)> = self
            .lend()
            .into_iter()
            .map(|(columns, rows)| (Q::start(columns), rows))
            .collect();
        let left = tables.iter().map(|(_, rows)| rows.len()).sum();
        QueryIter {
            tables: tables.into_iter(),
            current: None,
            left,
        }
    }

    /// `iter`, for bevy's habit: the same.
    pub fn iter_mut(&mut self) -> QueryIter<'_, Q> {
        self.iter()
    }

    /// The query's tables, each as its typed column slices (one slice per field, one
    /// value per row), for loops over whole columns. A filter's `Changed`/`Added` do not
    /// narrow a table's slices: `tables_with_rows` gives the rows they select.
    pub fn tables(&mut self) -> QueryTables<'_, Q> {
        QueryTables {
            tables: self.lend().into_iter(),
        }
    }

    /// `tables`, each with the rows of it the filter selects (`None`: every row).
    pub fn tables_with_rows(&mut self) -> impl Iterator<Item = (Q::Columns<'_>, Option<Vec<u32>>)> {
        self.lend().into_iter().map(|(columns, rows)| {
            let rows = match rows {
                Rows::All(_) => None,
                Rows::Picked(p) => Some(p.collect()),
            };
            (columns, rows)
        })
    }

    /// How many entities `iter` visits.
    pub fn count(&self) -> usize {
        self.rows
            .iter()
            .zip(&self.tables)
            .map(|(rows, &t)| match rows {
                Some(picked) => picked.len(),
                None => self.world.table(t).map_or(0, |t| t.len()),
            })
            .sum()
    }
}

impl<Q: QueryData, F: QueryFilter> Drop for Query<'_, Q, F> {
    fn drop(&mut self) {
        self.world.settle_pending();
    }
}

/// The rows of one table an iterator visits.
#[doc(hidden)]
pub enum Rows {
    All(Range<usize>),
    Picked(std::vec::IntoIter<u32>),
}

impl Rows {
    fn len(&self) -> usize {
        match self {
            Rows::All(r) => r.len(),
            Rows::Picked(p) => p.len(),
        }
    }
}

/// A typed query's items, an entity at a time (`Query::iter`).
pub struct QueryIter<'q, Q: QueryData> {
    tables: std::vec::IntoIter<(Q::Iter<'q>, Rows)>,
    current: Option<(Q::Iter<'q>, Rows)>,
    left: usize,
}

impl<'q, Q: QueryData> Iterator for QueryIter<'q, Q> {
    type Item = Q::Item<'q>;

    #[inline]
    fn next(&mut self) -> Option<Q::Item<'q>> {
        loop {
            if let Some((fetch, rows)) = &mut self.current {
                let item = match rows {
                    // Every row in turn: a part that reads a column ends the table; where
                    // none may (tags, Options), the range does.
                    Rows::All(_) if Q::BOUNDED => Q::next(fetch),
                    Rows::All(range) => range.next().and_then(|_| Q::next(fetch)),
                    Rows::Picked(picked) => picked.next().and_then(|row| Q::item(fetch, row as usize)),
                };
                if let Some(item) = item {
                    self.left = self.left.saturating_sub(1);
                    return Some(item);
                }
            }
            self.current = Some(self.tables.next()?);
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<Q: QueryData> ExactSizeIterator for QueryIter<'_, Q> {}

/// A typed query's tables, each as typed column slices (`Query::tables`).
pub struct QueryTables<'q, Q: QueryData> {
    tables: std::vec::IntoIter<(Q::Columns<'q>, Rows)>,
}

impl<'q, Q: QueryData> Iterator for QueryTables<'q, Q> {
    type Item = Q::Columns<'q>;

    fn next(&mut self) -> Option<Q::Columns<'q>> {
        self.tables.next().map(|(columns, _)| columns)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.tables.size_hint()
    }
}
