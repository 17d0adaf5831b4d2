//! Components as Rust types: the `Component` trait (`#[derive(ecsql::Component)]` with
//! the `derive` feature writes it), and the typed entity operations on `Connection`:
//! `register`, `spawn`, `get`, `insert`, `remove`, `despawn`.
//!
//! Invariants:
//! - Each operation is one statement of the language (SPAWN, SELECT, INSERT OR REPLACE,
//!   DELETE, DESPAWN), prepared once per connection and kept: atomic, journaled and seen
//!   by live queries, systems' change marks and events exactly as that statement.
//! - A type's fields map one to one onto the component's, in order, by `FieldValue`:
//!   `i64`/`i32` INT, `f64` FLOAT, `f32` REAL, `bool` BOOL, `String` TEXT, `Entity` and
//!   `Option<Entity>` ENTITY. `register` checks an existing component against the type
//!   and names each difference.

use super::{Connection, Row, ToParam};
use crate::error::{Error, Result};
use crate::parse::quote_name;
use crate::storage::{Entity, FieldType, Value};

/// A Rust type a field holds: its ecsql type, and its value both ways.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a type a component's field can have",
    note = "a field is i64 or i32 (INT), f64 (FLOAT), f32 (REAL), bool (BOOL), String (TEXT), Entity or Option<Entity> (ENTITY)"
)]
pub trait FieldValue: super::FromValue + ToParam {
    /// The field's type.
    const TYPE: FieldType;
}

macro_rules! field_value {
    ($($t:ty => $ty:ident),* $(,)?) => {
        $(impl FieldValue for $t {
            const TYPE: FieldType = FieldType::$ty;
        })*
    };
}

field_value! {
    i64 => Int,
    i32 => Int,
    f64 => Float,
    f32 => Real,
    bool => Bool,
    String => Text,
    Entity => Entity,
    Option<Entity> => Entity,
}

/// A field of a component as a Rust type declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    /// The field's name.
    pub name: &'static str,
    /// Its type.
    pub ty: FieldType,
    /// Its default, as the SQL text of `DEFAULT …` (`None`: the type's zero).
    pub default: Option<&'static str>,
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
}

/// Components spawned together: a `Component`, or a tuple of up to eight.
pub trait Bundle {
    /// The `SPAWN` list: `A(?1, ?2), B(?3)`, numbering from `first`.
    fn spawn_list(first: usize) -> String;
    /// The values, in that order.
    fn values(&self, into: &mut Vec<Value>);
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
        let mut differences = Vec::new();
        for (i, spec) in C::FIELDS.iter().enumerate() {
            match fields.get(i) {
                None => differences.push(format!(
                    "it has no field {} (a {} in the type)",
                    spec.name, spec.ty
                )),
                Some((name, ty)) if name != spec.name => differences.push(format!(
                    "its field {} is {name}, where the type has {}",
                    i + 1,
                    spec.name
                )),
                Some((name, ty)) if *ty != spec.ty => {
                    differences.push(format!("{name} is {ty}, where the type has {}", spec.ty));
                }
                Some(_) => {}
            }
        }
        for (name, ty) in fields.iter().skip(C::FIELDS.len()) {
            differences.push(format!("it has a field {name} ({ty}) the type has not"));
        }
        if sparse != C::SPARSE {
            differences.push(format!(
                "it is kept {}, where the type says {}",
                if sparse { "sparse" } else { "dense" },
                if C::SPARSE { "sparse" } else { "dense" }
            ));
        }
        if differences.is_empty() {
            return Ok(());
        }
        Err(Error::Misuse {
            message: format!(
                "component {} differs from the Rust type: {} (drop it, or change the type to match)",
                C::NAME,
                differences.join("; ")
            ),
            at: crate::location::Location::default(),
        })
    }

    /// Spawns one entity with the components of `bundle` (one component, or a tuple of
    /// them), atomically, as one SPAWN: its id.
    pub fn spawn<B: Bundle>(&self, bundle: B) -> Result<Entity> {
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
