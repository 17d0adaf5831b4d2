//! Components as Rust types: the `Component` and `FieldValue` traits
//! (`#[derive(ecsql::Component)]` with the `derive` feature writes the first), the
//! table view's `ValuesMut`, `Row::component`, and the typed entity operations on
//! `Connection`: `register`, `spawn`, `spawn_batch`, `get`, `insert`, `remove`,
//! `despawn`. `world.rs` has the same on the door's `World`, `query.rs` typed queries.
//!
//! Invariants:
//! - Each operation but `spawn_batch` is one statement of the language (SPAWN, SELECT,
//!   INSERT OR REPLACE, DELETE, DESPAWN), prepared once per connection and kept: atomic,
//!   journaled and seen by live queries, systems' change marks and events exactly as
//!   that statement. `spawn` and `insert` check the Rust type against the catalog first.
//!   `spawn_batch` goes through the door (`World::spawn_batch`): atomic, checkpointed
//!   rather than journaled.
//! - A type's fields map one to one onto the component's, in order, by `FieldValue`:
//!   `i64`/`i32` INT, `f64` FLOAT, `f32` REAL, `bool` BOOL, `String` TEXT, `Entity` and
//!   `Option<Entity>` ENTITY. `register` checks an existing component against the type
//!   and names each difference.

use super::{Connection, Row, ToParam};

mod query;
mod world;

use crate::error::{Error, Result};
use crate::parse::quote_name;
use crate::storage::{Column, ColumnValue, Entity, FieldType, Value};
pub(crate) use query::access_of;

pub use query::{
    Added, Changed, ColumnSource, Mut, Query, QueryData, QueryFilter, QueryIter, QueryTables, Ref, With,
    Without,
};

/// A Rust type a field holds: its ecsql type, its value both ways, and how a column
/// stores it (`Stored`, the type of the slices a typed query lends: `i64` for `i32`,
/// `Option<Entity>` for `Entity`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a type a component's field can have",
    note = "a field is i64 or i32 (INT), f64 (FLOAT), f32 (REAL), bool (BOOL), String (TEXT), Entity or Option<Entity> (ENTITY)"
)]
pub trait FieldValue: super::FromValue + ToParam + Sized {
    /// The field's type.
    const TYPE: FieldType;
    /// The Rust type of the field's column.
    type Stored: ColumnValue;
    /// How a typed query's table view lends the field's column to read: `&[Self]`, or
    /// the stored values (`&[i64]` for `i32`, `&[Option<Entity>]` for `Entity`).
    type View<'a>: Copy + std::fmt::Debug;
    /// How the table view lends the column to write: `&mut [Self]`, or a slice that
    /// takes only values of this type (`ValuesMut`), so nothing it cannot
    /// hold gets in.
    type ViewMut<'a>: std::fmt::Debug;
    /// The column as the table view lends it to read.
    fn view(stored: &[Self::Stored]) -> Self::View<'_>;
    /// The column as the table view lends it to write.
    fn view_mut(stored: &mut [Self::Stored]) -> Self::ViewMut<'_>;
    /// The stored values a view lends.
    fn stored<'a>(view: Self::View<'a>) -> &'a [Self::Stored];
    /// The stored values a view lends to write.
    fn stored_mut<'a>(view: Self::ViewMut<'a>) -> &'a mut [Self::Stored];
    /// The first of `values` this type cannot hold (NULL for `Entity`, a number out of
    /// range for `i32`), if any.
    fn unfit(values: &[Self::Stored]) -> Option<usize> {
        let _ = values;
        None
    }
    /// The value a column holds, which `unfit` accepted.
    fn read(stored: &Self::Stored) -> Self;
    /// The value a column holds, taken out of it for a while (a text is moved, not
    /// copied); `put` gives it back.
    fn take(stored: &mut Self::Stored) -> Self {
        Self::read(stored)
    }
    /// Writes the value into the column's cell (a text is swapped in, not copied).
    fn put(&mut self, stored: &mut Self::Stored);
    /// The value as its column stores it.
    fn into_stored(self) -> Self::Stored;
    /// The value in row `row` of `columns[k]`; `Err(k)` when that column is not of this
    /// type, has no such row, or holds what this type cannot (`unfit`).
    #[doc(hidden)]
    #[inline(always)]
    fn read_cell(
        columns: &[crate::storage::ColumnCell],
        k: usize,
        row: usize,
    ) -> std::result::Result<Self, usize> {
        let value = columns
            .get(k)
            .and_then(|c| c.as_slice::<Self::Stored>())
            .and_then(|values| values.get(row))
            .ok_or(k)?;
        match Self::unfit(std::slice::from_ref(value)) {
            Some(_) => Err(k),
            None => Ok(Self::read(value)),
        }
    }
}

macro_rules! field_value {
    ($($t:ty => $ty:ident),* $(,)?) => {
        $(impl FieldValue for $t {
            const TYPE: FieldType = FieldType::$ty;
            type Stored = $t;
            type View<'a> = &'a [$t];
            type ViewMut<'a> = &'a mut [$t];
            #[inline(always)]
            fn view(stored: &[Self::Stored]) -> Self::View<'_> {
                stored
            }
            #[inline(always)]
            fn view_mut(stored: &mut [Self::Stored]) -> Self::ViewMut<'_> {
                stored
            }
            #[inline(always)]
            fn stored<'a>(view: Self::View<'a>) -> &'a [Self::Stored] {
                view
            }
            #[inline(always)]
            fn stored_mut<'a>(view: Self::ViewMut<'a>) -> &'a mut [Self::Stored] {
                view
            }
            #[inline(always)]
            fn read(stored: &$t) -> $t {
                *stored
            }
            #[inline(always)]
            fn put(&mut self, stored: &mut $t) {
                *stored = *self;
            }
            #[inline(always)]
            fn into_stored(self) -> $t {
                self
            }
        })*
    };
}

field_value! {
    i64 => Int,
    f64 => Float,
    f32 => Real,
    bool => Bool,
    Option<Entity> => Entity,
}

impl FieldValue for i32 {
    const TYPE: FieldType = FieldType::Int;
    type Stored = i64;
    type View<'a> = &'a [i64];
    type ViewMut<'a> = ValuesMut<'a, i32>;
    fn view(stored: &[Self::Stored]) -> Self::View<'_> {
        stored
    }
    fn view_mut(stored: &mut [Self::Stored]) -> Self::ViewMut<'_> {
        ValuesMut(stored)
    }
    fn stored<'a>(view: Self::View<'a>) -> &'a [Self::Stored] {
        view
    }
    fn stored_mut<'a>(view: Self::ViewMut<'a>) -> &'a mut [Self::Stored] {
        view.0
    }
    fn unfit(values: &[i64]) -> Option<usize> {
        values.iter().position(|&v| i32::try_from(v).is_err())
    }
    #[inline(always)]
    fn read(stored: &i64) -> i32 {
        // `unfit` refused the values out of range: nothing is cut here.
        *stored as i32
    }
    #[inline(always)]
    fn put(&mut self, stored: &mut i64) {
        *stored = i64::from(*self);
    }
    #[inline(always)]
    fn into_stored(self) -> i64 {
        i64::from(self)
    }
}

impl FieldValue for Entity {
    const TYPE: FieldType = FieldType::Entity;
    type Stored = Option<Entity>;
    type View<'a> = &'a [Option<Entity>];
    type ViewMut<'a> = ValuesMut<'a, Entity>;
    fn view(stored: &[Self::Stored]) -> Self::View<'_> {
        stored
    }
    fn view_mut(stored: &mut [Self::Stored]) -> Self::ViewMut<'_> {
        ValuesMut(stored)
    }
    fn stored<'a>(view: Self::View<'a>) -> &'a [Self::Stored] {
        view
    }
    fn stored_mut<'a>(view: Self::ViewMut<'a>) -> &'a mut [Self::Stored] {
        view.0
    }
    fn unfit(values: &[Option<Entity>]) -> Option<usize> {
        values.iter().position(Option::is_none)
    }
    #[inline(always)]
    fn read(stored: &Option<Entity>) -> Entity {
        // `unfit` refused NULL: the fallback is never taken.
        stored.unwrap_or(Entity::DANGLING)
    }
    #[inline(always)]
    fn put(&mut self, stored: &mut Option<Entity>) {
        *stored = Some(*self);
    }
    #[inline(always)]
    fn into_stored(self) -> Option<Entity> {
        Some(self)
    }
}

impl FieldValue for String {
    const TYPE: FieldType = FieldType::Text;
    type Stored = String;
    type View<'a> = &'a [String];
    type ViewMut<'a> = &'a mut [String];
    fn view(stored: &[Self::Stored]) -> Self::View<'_> {
        stored
    }
    fn view_mut(stored: &mut [Self::Stored]) -> Self::ViewMut<'_> {
        stored
    }
    fn stored<'a>(view: Self::View<'a>) -> &'a [Self::Stored] {
        view
    }
    fn stored_mut<'a>(view: Self::ViewMut<'a>) -> &'a mut [Self::Stored] {
        view
    }
    fn read(stored: &String) -> String {
        stored.clone()
    }
    #[inline(always)]
    fn take(stored: &mut String) -> String {
        std::mem::take(stored)
    }
    #[inline(always)]
    fn put(&mut self, stored: &mut String) {
        std::mem::swap(self, stored);
    }
    #[inline(always)]
    fn into_stored(self) -> String {
        self
    }
}

/// A column as a typed query's table view lends it to write, for a field whose Rust type
/// `V` holds less than its column can (`i32` in an INT column, `Entity` in an ENTITY
/// one): values go in only as `V`, so nothing `V` cannot hold gets in.
pub struct ValuesMut<'a, V: FieldValue>(&'a mut [V::Stored]);

impl<V: FieldValue> ValuesMut<'_, V> {
    /// The number of rows.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// True for a table of no rows.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Row `row`'s value (`None` past the last row).
    pub fn get(&self, row: usize) -> Option<V> {
        self.0.get(row).map(V::read)
    }
    /// Writes row `row`'s value; false (nothing written) past the last row.
    pub fn set(&mut self, row: usize, mut value: V) -> bool {
        match self.0.get_mut(row) {
            Some(cell) => {
                value.put(cell);
                true
            }
            None => false,
        }
    }
    /// The values as they are stored.
    pub fn as_stored(&self) -> &[V::Stored] {
        self.0
    }
}

impl<V: FieldValue> std::fmt::Debug for ValuesMut<'_, V>
where
    V::Stored: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

/// A field of a component as a Rust type declares it (`FieldSpec::new::<f32>("x", None)`).
#[derive(Clone, Copy, Debug)]
pub struct FieldSpec {
    /// The field's name.
    pub name: &'static str,
    /// Its type.
    pub ty: FieldType,
    /// Its default, as the SQL text of `DEFAULT …` (`None`: the type's zero).
    pub default: Option<&'static str>,
    /// The first row of a column of the field that the Rust type cannot hold (NULL for
    /// `Entity`, a number out of range for `i32`), if any: `FieldValue::unfit`.
    pub unfit: fn(&Column, std::ops::Range<usize>) -> Option<usize>,
}

impl FieldSpec {
    /// The field `name` of Rust type `V`, with `default` (SQL text) or the type's zero.
    pub const fn new<V: FieldValue>(name: &'static str, default: Option<&'static str>) -> FieldSpec {
        FieldSpec {
            name,
            ty: V::TYPE,
            default,
            unfit: unfit_in::<V>,
        }
    }
}

impl PartialEq for FieldSpec {
    fn eq(&self, other: &FieldSpec) -> bool {
        (self.name, self.ty, self.default) == (other.name, other.ty, other.default)
    }
}

impl Eq for FieldSpec {}

/// `V::unfit` of rows `rows` of a column holding `V`'s stored type (a column of another
/// type, or rows it has not: the first row).
fn unfit_in<V: FieldValue>(column: &Column, rows: std::ops::Range<usize>) -> Option<usize> {
    let first = rows.start;
    match column.as_slice::<V::Stored>().and_then(|values| values.get(rows)) {
        Some(values) => V::unfit(values).map(|k| first + k),
        None => Some(first),
    }
}

/// A component as a Rust type: its name, fields and storage, and its values. Written by
/// `#[derive(ecsql::Component)]` (the `derive` feature: `ecsql = { version = "…",
/// features = ["derive"] }`); by hand, keep `FIELDS`, `values` and `from_row` in the same
/// order. A struct of named fields is a component (`#[ecsql(name = "…")]` renames it,
/// `#[ecsql(sparse)]` keeps it sparse; on a field, `#[ecsql(name = "…")]` and
/// `#[ecsql(default = "SQL")]`), a unit struct a tag.
///
/// ```
/// # #[cfg(feature = "derive")] {
/// use ecsql::{Component, Database};
///
/// #[derive(Component, Debug, PartialEq)]
/// struct Position { x: f32, y: f32 }
///
/// #[derive(Component, Debug, PartialEq)]
/// #[ecsql(name = "Hp")]
/// struct Health { #[ecsql(default = "100")] hp: i64 }
///
/// #[derive(Component)]
/// struct Frozen;
///
/// let conn = Database::open_in_memory().connect();
/// conn.register::<Position>()?;
/// conn.register::<Health>()?;
/// conn.register::<Frozen>()?;
/// let e = conn.spawn((Position { x: 1.0, y: 2.0 }, Health { hp: 30 }))?;
/// assert_eq!(conn.get::<Position>(e)?, Some(Position { x: 1.0, y: 2.0 }));
/// conn.insert(e, Frozen)?;
/// conn.insert(e, Health { hp: 5 })?; // replaces the one it has
/// let hp: i64 = conn.query_row("SELECT Hp.hp FROM Hp, Frozen WHERE id = ?1", (e,), |r| r.get(0))?;
/// assert_eq!(hp, 5);
/// assert_eq!(conn.remove::<Health>(e)?, Some(Health { hp: 5 }));
/// assert_eq!(conn.get::<Health>(e)?, None);
/// conn.despawn(e)?;
/// assert_eq!(conn.get::<Position>(e)?, None);
/// # }
/// # Ok::<(), ecsql::Error>(())
/// ```
pub trait Component: Sized {
    /// Its name in the catalog.
    const NAME: &'static str;
    /// Its fields, in order (none: a tag).
    const FIELDS: &'static [FieldSpec];
    /// Kept `WITH (storage = sparse)`.
    const SPARSE: bool = false;
    /// Its fields' values, in order.
    fn values(&self) -> Vec<Value>;
    /// Reads it from `row`'s columns `first..first + FIELDS.len()`.
    fn from_row(row: &Row, first: usize) -> Result<Self>;

    /// Its columns in one table, to read: one slice per field (`PositionColumns { x:
    /// &[f32], y: &[f32] }` for `Position`), what a typed query's table view lends.
    type Columns<'a>: Copy;
    /// Its columns in one table, to write (`PositionColumnsMut { x: &mut [f32], … }`).
    type ColumnsMut<'a>;
    /// Takes its columns, field by field in order, from what a query lent.
    fn columns<'a>(from: &mut ColumnSource<'a>) -> Option<Self::Columns<'a>>;
    /// As `columns`, to write.
    fn columns_mut<'a>(from: &mut ColumnSource<'a>) -> Option<Self::ColumnsMut<'a>>;
    /// Its value in row `row` of a table's columns of it (`Table::component_columns`),
    /// checked against its fields' Rust types: `Err(k)` names the field that does not fit.
    #[doc(hidden)]
    fn read_row(columns: &[crate::storage::ColumnCell], row: usize) -> std::result::Result<Self, usize>;
    /// Its columns' rows, to read one after another (an iterator per field).
    #[doc(hidden)]
    type Rows<'a>;
    /// Its columns' rows, to write one after another (an iterator per field).
    #[doc(hidden)]
    type RowsMut<'a>;
    /// One row's cells, to write (a `&mut` per field).
    #[doc(hidden)]
    type Cells<'a>;
    /// `columns`' rows, from the first.
    #[doc(hidden)]
    fn rows(columns: Self::Columns<'_>) -> Self::Rows<'_>;
    /// The value of the row after the next `skip` rows; `None` past the last.
    #[doc(hidden)]
    fn next_value(rows: &mut Self::Rows<'_>, skip: usize) -> Option<Self>;
    /// `columns`' rows, from the first, to write.
    #[doc(hidden)]
    fn rows_mut(columns: Self::ColumnsMut<'_>) -> Self::RowsMut<'_>;
    /// The cells of the row after the next `skip` rows; `None` past the last.
    #[doc(hidden)]
    fn next_cells<'a>(rows: &mut Self::RowsMut<'a>, skip: usize) -> Option<Self::Cells<'a>>;
    /// The value in `cells`, taken out of them (a text is moved); `put` gives it back.
    #[doc(hidden)]
    fn take(cells: &mut Self::Cells<'_>) -> Self;
    /// Writes the value into `cells`.
    #[doc(hidden)]
    fn put(&mut self, cells: &mut Self::Cells<'_>);
    /// Its fields' values as a batch is gathered: one `Vec` of each field's stored type.
    #[doc(hidden)]
    type Batch: Default;
    /// Makes room for `n` more values in each of the batch's `Vec`s.
    #[doc(hidden)]
    fn reserve(batch: &mut Self::Batch, n: usize);
    /// Appends its fields' values to the batch.
    #[doc(hidden)]
    fn push(self, batch: &mut Self::Batch);
    /// The batch's columns, one per field in order, appended to `into`.
    #[doc(hidden)]
    fn finish(batch: Self::Batch, into: &mut Vec<Column>);
}

/// Components spawned together: a `Component`, or a tuple of up to eight.
pub trait Bundle {
    /// The `SPAWN` list: `A(?1, ?2), B(?3)`, numbering from `first`.
    fn spawn_list(first: usize) -> String;
    /// The values, in that order.
    fn values(&self, into: &mut Vec<Value>);
    /// The components, in that order: each one's name, fields and storage.
    fn components(into: &mut Vec<(&'static str, &'static [FieldSpec], bool)>);
    /// The components' values as a batch is gathered (`Component::Batch`, each).
    #[doc(hidden)]
    type Batch: Default;
    /// Makes room for `n` more bundles in the batch.
    #[doc(hidden)]
    fn reserve(batch: &mut Self::Batch, n: usize);
    /// Appends the values to the batch.
    #[doc(hidden)]
    fn push(self, batch: &mut Self::Batch);
    /// The batch's columns, one per field of each component in order, appended to `into`.
    #[doc(hidden)]
    fn finish(batch: Self::Batch, into: &mut Vec<Column>);
}

/// `A(?n, …)` for a component of `fields` fields, numbering from `first`.
fn call<C: Component>(first: usize) -> String {
    let params: Vec<String> = (0..C::FIELDS.len()).map(|i| format!("?{}", first + i)).collect();
    format!("{}({})", quote_name(C::NAME), params.join(", "))
}

impl<C: Component> Bundle for C {
    fn spawn_list(first: usize) -> String {
        call::<C>(first)
    }
    fn values(&self, into: &mut Vec<Value>) {
        into.extend(Component::values(self));
    }
    fn components(into: &mut Vec<(&'static str, &'static [FieldSpec], bool)>) {
        into.push((C::NAME, C::FIELDS, C::SPARSE));
    }
    type Batch = C::Batch;
    fn reserve(batch: &mut C::Batch, n: usize) {
        C::reserve(batch, n);
    }
    #[inline(always)]
    fn push(self, batch: &mut C::Batch) {
        Component::push(self, batch);
    }
    fn finish(batch: C::Batch, into: &mut Vec<Column>) {
        C::finish(batch, into);
    }
}

macro_rules! bundle {
    ($($name:ident $i:tt),+) => {
        impl<$($name: Component),+> Bundle for ($($name,)+) {
            fn spawn_list(first: usize) -> String {
                let mut at = first;
                let mut list = String::new();
                $(
                    if !list.is_empty() {
                        list.push_str(", ");
                    }
                    list.push_str(&call::<$name>(at));
                    at += $name::FIELDS.len();
                )+
                let _ = at;
                list
            }
            fn values(&self, into: &mut Vec<Value>) {
                $(into.extend(Component::values(&self.$i));)+
            }
            fn components(into: &mut Vec<(&'static str, &'static [FieldSpec], bool)>) {
                $(into.push(($name::NAME, $name::FIELDS, $name::SPARSE));)+
            }
            type Batch = ($($name::Batch,)+);
            fn reserve(batch: &mut Self::Batch, n: usize) {
                $($name::reserve(&mut batch.$i, n);)+
            }
            #[inline(always)]
            fn push(self, batch: &mut Self::Batch) {
                $(Component::push(self.$i, &mut batch.$i);)+
            }
            fn finish(batch: Self::Batch, into: &mut Vec<Column>) {
                $($name::finish(batch.$i, into);)+
            }
        }
    };
}

bundle!(A 0);
bundle!(A 0, B 1);
bundle!(A 0, B 1, C 2);
bundle!(A 0, B 1, C 2, D 3);
bundle!(A 0, B 1, C 2, D 3, E 4);
bundle!(A 0, B 1, C 2, D 3, E 4, F 5);
bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

impl Connection {
    /// Creates the component `C` describes, or checks that the one of its name has the
    /// same fields (names and types, in order) and storage, naming each difference.
    pub fn register<C: Component>(&self) -> Result<()> {
        let existing = self.with_world(|world| {
            world.component_by_name(C::NAME).ok().map(|def| {
                let fields: Vec<(String, FieldType)> = def
                    .fields()
                    .iter()
                    .map(|f| (f.name().to_owned(), f.ty()))
                    .collect();
                (fields, def.storage() == crate::storage::StorageKind::Sparse)
            })
        })?;
        let Some((fields, sparse)) = existing else {
            return self.execute_batch(&create_statement::<C>());
        };
        match differences_of(C::NAME, C::FIELDS, C::SPARSE, &fields, sparse) {
            None => Ok(()),
            Some(message) => Err(Error::Misuse {
                message,
                at: crate::location::Location::default(),
            }),
        }
    }

    /// Spawns an entity for each bundle of `bundles`, all of one shape, as one batch of
    /// typed columns (`World::spawn_batch` on the database's world): their ids, in
    /// order. All are spawned or, on an error, none. Like the columnar door it goes
    /// through, it is not journaled as a statement: on a file database it ends with a
    /// checkpoint (the whole database written), so use it for large batches there.
    ///
    /// ```
    /// # #[cfg(feature = "derive")] {
    /// use ecsql::{Component, Database};
    ///
    /// #[derive(Component)]
    /// struct Position { x: f32, y: f32 }
    ///
    /// let conn = Database::open_in_memory().connect();
    /// conn.register::<Position>()?;
    /// let ids = conn.spawn_batch((0..10_000).map(|i| Position { x: i as f32, y: 0.0 }))?;
    /// assert_eq!(ids.len(), 10_000);
    /// let n: i64 = conn.query_row("SELECT count(*) FROM Position WHERE Position.x >= 5000", (), |r| r.get(0))?;
    /// assert_eq!(n, 5_000);
    /// # }
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn spawn_batch<B: Bundle, I: IntoIterator<Item = B>>(&self, bundles: I) -> Result<Vec<Entity>> {
        self.with_world_mut(|world| world.spawn_batch(bundles))?
    }

    /// Spawns one entity with the components of `bundle` (one component, or a tuple of
    /// them), atomically, as one SPAWN: its id.
    pub fn spawn<B: Bundle>(&self, bundle: B) -> Result<Entity> {
        self.with_world(|w| w.bundle_ids::<B>().map(drop))??;
        let mut values = Vec::new();
        bundle.values(&mut values);
        let sql = format!("SPAWN {}", B::spawn_list(1));
        let mut statement = self.prepare_cached(&sql)?;
        statement.query_row(values, |r| r.get(0))
    }

    /// Entity `e`'s `C`; `Ok(None)` when it has none (or is no entity).
    pub fn get<C: Component>(&self, e: Entity) -> Result<Option<C>> {
        let name = quote_name(C::NAME);
        let columns = columns::<C>();
        let sql = format!("SELECT {} FROM {name} WHERE id = ?1", columns.join(", "));
        let mut statement = self.prepare_cached(&sql)?;
        let mut rows = statement.query((e,))?;
        match rows.next()? {
            Some(row) => C::from_row(&row, 0).map(Some),
            None => Ok(None),
        }
    }

    /// Attaches `component` to entity `e`, replacing the `C` it has, as one INSERT OR
    /// REPLACE.
    pub fn insert<C: Component>(&self, e: Entity, component: C) -> Result<()> {
        self.with_world(|w| w.bundle_ids::<C>().map(drop))??;
        let name = quote_name(C::NAME);
        let mut columns = vec!["id".to_owned()];
        columns.extend(C::FIELDS.iter().map(|f| quote_name(f.name)));
        let params: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
        let sql = format!(
            "INSERT OR REPLACE INTO {name} ({}) VALUES ({})",
            columns.join(", "),
            params.join(", ")
        );
        let mut values = vec![Value::Entity(e)];
        values.extend(component.values());
        self.prepare_cached(&sql)?.execute(values)?;
        Ok(())
    }

    /// Detaches `C` from entity `e`: the `C` it had, if it had one (one DELETE …
    /// RETURNING).
    pub fn remove<C: Component>(&self, e: Entity) -> Result<Option<C>> {
        let sql = format!(
            "DELETE FROM {} WHERE id = ?1 RETURNING {}",
            quote_name(C::NAME),
            columns::<C>().join(", ")
        );
        let mut statement = self.prepare_cached(&sql)?;
        let mut rows = statement.query((e,))?;
        match rows.next()? {
            Some(row) => C::from_row(&row, 0).map(Some),
            None => Ok(None),
        }
    }

    /// Despawns entity `e`; an error (the DESPAWN's) when it is no entity.
    pub fn despawn(&self, e: Entity) -> Result<()> {
        self.prepare_cached("DESPAWN ?1")?.execute((e,))?;
        Ok(())
    }
}

/// How component `name` as it is (`fields`, `sparse`) differs from a Rust type that
/// declares `specs` and `sparse_spec`, each difference named; `None` when it does not.
fn differences_of(
    name: &str,
    specs: &[FieldSpec],
    sparse_spec: bool,
    fields: &[(String, FieldType)],
    sparse: bool,
) -> Option<String> {
    let mut differences = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        match fields.get(i) {
            None => differences.push(format!(
                "it has no field {} (a {} in the type)",
                spec.name, spec.ty
            )),
            Some((field, _)) if field != spec.name => differences.push(format!(
                "its field {} is {field}, where the type has {}",
                i + 1,
                spec.name
            )),
            Some((field, ty)) if *ty != spec.ty => {
                differences.push(format!("{field} is {ty}, where the type has {}", spec.ty));
            }
            Some(_) => {}
        }
    }
    for (field, ty) in fields.iter().skip(specs.len()) {
        differences.push(format!("it has a field {field} ({ty}) the type has not"));
    }
    if sparse != sparse_spec {
        differences.push(format!(
            "it is kept {}, where the type says {}",
            if sparse { "sparse" } else { "dense" },
            if sparse_spec { "sparse" } else { "dense" }
        ));
    }
    (!differences.is_empty()).then(|| {
        format!(
            "component {name} differs from the Rust type: {} (DROP COMPONENT {name}, or change the type to match)",
            differences.join("; ")
        )
    })
}

/// `differences_of` for a component of the catalog.
fn differences(
    name: &str,
    specs: &[FieldSpec],
    sparse_spec: bool,
    fields: &[crate::storage::FieldDef],
    sparse: bool,
) -> Option<String> {
    let fields: Vec<(String, FieldType)> = fields.iter().map(|f| (f.name().to_owned(), f.ty())).collect();
    differences_of(name, specs, sparse_spec, &fields, sparse)
}

/// `C`'s fields as columns of a statement over it (`C.x`, …; `id` for a tag).
fn columns<C: Component>() -> Vec<String> {
    if C::FIELDS.is_empty() {
        return vec!["id".to_owned()];
    }
    let name = quote_name(C::NAME);
    C::FIELDS
        .iter()
        .map(|f| format!("{name}.{}", quote_name(f.name)))
        .collect()
}

/// `CREATE COMPONENT` (or `CREATE TAG`) of `C`.
fn create_statement<C: Component>() -> String {
    let storage = if C::SPARSE { " WITH (storage = sparse)" } else { "" };
    if C::FIELDS.is_empty() {
        return format!("CREATE TAG {}{storage}", quote_name(C::NAME));
    }
    let fields: Vec<String> = C::FIELDS
        .iter()
        .map(|f| match f.default {
            Some(d) => format!("{} {} DEFAULT {d}", quote_name(f.name), f.ty),
            None => format!("{} {}", quote_name(f.name), f.ty),
        })
        .collect();
    format!(
        "CREATE COMPONENT {} ({}){storage}",
        quote_name(C::NAME),
        fields.join(", ")
    )
}

impl Row {
    /// The component `C` whose fields the row's columns hold, selected together and in
    /// order (`SELECT Position.x, Position.y …`): found by the first field's column, named
    /// `C.field` (or `field`, when only one column has a field of that name).
    ///
    /// ```
    /// # #[cfg(feature = "derive")] {
    /// use ecsql::{Component, Database};
    ///
    /// #[derive(Component, Debug, PartialEq)]
    /// struct Position { x: f32, y: f32 }
    ///
    /// let conn = Database::open_in_memory().connect();
    /// conn.register::<Position>()?;
    /// conn.execute_batch("CREATE COMPONENT Health (hp INT); SPAWN Position(1, 2), Health(9);")?;
    /// let (p, hp) = conn.query_row("SELECT id, Position.x, Position.y, Health.hp FROM Position, Health", (), |r| {
    ///     Ok((r.component::<Position>()?, r.get::<_, i64>("Health.hp")?))
    /// })?;
    /// assert_eq!((p, hp), (Position { x: 1.0, y: 2.0 }, 9));
    /// # }
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn component<C: Component>(&self) -> Result<C> {
        let names = self.column_names();
        let position = |field: &str| -> Result<usize> {
            let qualified = format!("{}.{field}", C::NAME);
            match names.iter().position(|n| n.eq_ignore_ascii_case(&qualified)) {
                Some(i) => Ok(i),
                None => self.field_position(field),
            }
        };
        let Some(first) = C::FIELDS.first() else {
            return C::from_row(self, 0);
        };
        let at = position(first.name)?;
        for (k, spec) in C::FIELDS.iter().enumerate().skip(1) {
            let found = position(spec.name)?;
            if found != at + k {
                return Err(Error::InvalidColumn(format!(
                    "{}.{}: the fields of {} are read from columns selected together and in order ({}), and {} is column {} where {} was expected",
                    C::NAME,
                    spec.name,
                    C::NAME,
                    C::FIELDS
                        .iter()
                        .map(|f| format!("{}.{}", C::NAME, f.name))
                        .collect::<Vec<_>>()
                        .join(", "),
                    spec.name,
                    found + 1,
                    at + k + 1
                )));
            }
        }
        C::from_row(self, at)
    }
}
