//! Typed entity operations on the columnar door's `World`: `register`, `spawn`,
//! `spawn_batch`, `get`, `insert`, `remove` (with `despawn`, the world's own), as hecs and
//! bevy users write them.
//!
//! Invariants:
//! - Each is atomic: one operation of the world, or (`insert` over a component the
//!   entity has) its fields' writes in one transaction, its own or the one open. None is
//!   journaled (the door never is: a file database's `with_world_mut` ends with a
//!   checkpoint).
//! - `spawn_batch` moves its values as columns: each field's values are pushed to one
//!   typed `Vec` as the iterator runs, and the world takes the columns whole
//!   (`spawn_columns`); no value is boxed.
//! - A component is named by its Rust type's `NAME`; a field the Rust type cannot hold
//!   (NULL in an `Entity`) is an error naming it, never a made-up value.

use super::{Bundle, Component, FieldSpec};
use crate::error::{Error, Result};
use crate::storage::{ComponentId, Entity, FieldDef, FieldId, FieldType, StorageKind, Value, World};

impl World {
    /// Creates the component `C` describes, or checks that the one of its name has the
    /// same fields (names and types, in order) and storage, naming each difference: its id.
    /// A field's `default` is a literal here (a number, `'text'`, TRUE, FALSE, NULL);
    /// `Connection::register` takes any constant expression.
    ///
    /// ```
    /// # #[cfg(feature = "derive")] {
    /// use ecsql::{Component, World};
    ///
    /// #[derive(Component, Debug, PartialEq)]
    /// struct Position { x: f32, y: f32 }
    /// #[derive(Component, Debug, PartialEq)]
    /// struct Health { #[ecsql(default = "100")] hp: i64 }
    ///
    /// let mut world = World::new();
    /// world.register::<Position>()?;
    /// world.register::<Health>()?;
    /// let e = world.spawn((Position { x: 1.0, y: 2.0 },))?;
    /// assert_eq!(world.get::<Position>(e)?, Some(Position { x: 1.0, y: 2.0 }));
    /// assert_eq!(world.get::<Health>(e)?, None);
    /// world.insert(e, Health { hp: 7 })?;
    /// world.insert(e, Position { x: 3.0, y: 4.0 })?; // replaces the one it has
    /// assert_eq!(world.remove::<Health>(e)?, Some(Health { hp: 7 }));
    /// let ids = world.spawn_batch((0..1000).map(|i| Position { x: i as f32, y: 0.0 }))?;
    /// assert_eq!(ids.len(), 1000);
    /// world.despawn(e)?;
    /// assert_eq!(world.get::<Position>(e)?, None);
    /// # }
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn register<C: Component>(&mut self) -> Result<ComponentId> {
        if let Ok(def) = self.component_by_name(C::NAME) {
            let sparse = def.storage() == StorageKind::Sparse;
            if let Some(message) = super::differences(C::NAME, C::FIELDS, C::SPARSE, def.fields(), sparse) {
                return Err(misuse(message));
            }
            return Ok(def.id());
        }
        let mut fields = Vec::with_capacity(C::FIELDS.len());
        for spec in C::FIELDS {
            let mut def = FieldDef::new(spec.name, spec.ty);
            if let Some(text) = spec.default {
                def = def.with_default(literal(C::NAME, spec, text)?);
            }
            fields.push(def);
        }
        let kind = if C::SPARSE {
            StorageKind::Sparse
        } else {
            StorageKind::Dense
        };
        Ok(self.create_component_with(C::NAME, fields, kind)?)
    }

    /// Spawns one entity with the components of `bundle` (a component, or a tuple of up
    /// to eight), each registered: its id.
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Result<Entity> {
        let ids = self.bundle_ids::<B>()?;
        let mut values = Vec::new();
        bundle.values(&mut values);
        let mut values = values.into_iter();
        let components = ids
            .into_iter()
            .map(|(id, fields)| (id, values.by_ref().take(fields).collect()))
            .collect();
        Ok(self.spawn_values(components)?)
    }

    /// Spawns an entity for each bundle of `bundles`, all of one shape, as one batch:
    /// their ids, in order. The values go to typed columns as the iterator runs and the
    /// world takes them whole, as `SPAWN … FROM range` does.
    pub fn spawn_batch<B: Bundle, I: IntoIterator<Item = B>>(&mut self, bundles: I) -> Result<Vec<Entity>> {
        let ids = self.bundle_ids::<B>()?;
        let bundles = bundles.into_iter();
        let mut batch = B::Batch::default();
        B::reserve(&mut batch, bundles.size_hint().0);
        let mut len = 0;
        for bundle in bundles {
            bundle.push(&mut batch);
            len += 1;
        }
        let mut columns = Vec::with_capacity(ids.iter().map(|(_, fields)| fields).sum());
        B::finish(batch, &mut columns);
        let mut columns = columns.into_iter();
        let components = ids
            .into_iter()
            .map(|(id, fields)| (id, columns.by_ref().take(fields).collect()))
            .collect();
        Ok(self.spawn_columns(len, components)?)
    }

    /// Entity `e`'s `C`; `Ok(None)` when it has none, or is no entity.
    pub fn get<C: Component>(&self, e: Entity) -> Result<Option<C>> {
        let id = self.typed_component(C::NAME)?.id();
        if !self.contains(e) {
            return Ok(None);
        }
        let Some((table, row)) = self.cells_of(e, id)? else {
            return Ok(None);
        };
        let Some(columns) = self.table(table).and_then(|t| t.get().component_columns(id)) else {
            return Ok(None);
        };
        match C::read_row(columns, row) {
            Ok(value) => Ok(Some(value)),
            Err(k) => {
                let (Some(spec), Some(column)) = (C::FIELDS.get(k), columns.get(k)) else {
                    return Err(misuse(format!(
                        "component {} differs from the Rust type (World::register says how)",
                        C::NAME
                    )));
                };
                if spec.ty != column.field_type() {
                    return Err(misuse(format!(
                        "{}.{} is {}, where the Rust type has {} (World::register says what differs)",
                        C::NAME,
                        spec.name,
                        column.field_type(),
                        spec.ty
                    )));
                }
                Err(unfit(C::NAME, spec, e, column.get(row)))
            }
        }
    }

    /// Attaches `component` to entity `e`, or replaces the `C` it has (only the values
    /// that differ count as changed).
    pub fn insert<C: Component>(&mut self, e: Entity, component: C) -> Result<()> {
        let [(id, _)] = self.bundle_ids::<C>()?[..] else {
            return Err(misuse(format!("component {} is one component", C::NAME)));
        };
        let values = component.values();
        if self.has(e, id)? {
            self.begin_or_join(|world| {
                for (k, value) in values.into_iter().enumerate() {
                    world.set(e, FieldId::new(id, k as u16), value)?;
                }
                Ok(())
            })
        } else {
            Ok(self.attach(e, id, values)?)
        }
    }

    /// Detaches `C` from entity `e`: the `C` it had, if it had one.
    pub fn remove<C: Component>(&mut self, e: Entity) -> Result<Option<C>> {
        let old = self.get::<C>(e)?;
        if old.is_some() {
            let id = self.typed_component(C::NAME)?.id();
            self.detach(e, id)?;
        }
        Ok(old)
    }

    /// The component named `name`, which a Rust type stands for; an unknown one is an
    /// error that says to register it.
    pub(super) fn typed_component(&self, name: &str) -> Result<&crate::storage::ComponentDef> {
        self.component_by_name(name).map_err(|_| {
            misuse(format!(
                "component {name} is not in this world: register it first (World::register or Connection::register, with its Rust type)"
            ))
        })
    }

    /// The ids of a bundle's components, each with its number of fields, checked against
    /// the Rust types.
    pub(super) fn bundle_ids<B: Bundle>(&self) -> Result<Vec<(ComponentId, usize)>> {
        let mut specs = Vec::new();
        B::components(&mut specs);
        let mut ids = Vec::with_capacity(specs.len());
        for (name, fields, sparse) in specs {
            let def = self.typed_component(name)?;
            let kept_sparse = def.storage() == StorageKind::Sparse;
            if def.fields().len() != fields.len()
                || kept_sparse != sparse
                || def.fields().iter().zip(fields).any(|(d, f)| d.ty() != f.ty)
            {
                let message = super::differences(name, fields, sparse, def.fields(), kept_sparse)
                    .unwrap_or_else(|| format!("component {name} differs from the Rust type"));
                return Err(misuse(message));
            }
            ids.push((def.id(), fields.len()));
        }
        Ok(ids)
    }

    /// Runs `f` as one operation: inside an open transaction, as part of it; otherwise
    /// in a transaction of its own, undone whole when `f` fails.
    fn begin_or_join(&mut self, f: impl FnOnce(&mut World) -> Result<()>) -> Result<()> {
        if self.in_transaction() {
            return f(self);
        }
        self.begin()?;
        match f(self) {
            Ok(()) => Ok(self.commit()?),
            Err(e) => {
                self.rollback()?;
                Err(e)
            }
        }
    }
}

fn misuse(message: String) -> Error {
    Error::Misuse {
        message,
        at: crate::location::Location::default(),
    }
}

/// The error for a value a field's Rust type cannot hold.
pub(super) fn unfit(component: &str, spec: &FieldSpec, e: Entity, value: Option<Value>) -> Error {
    misuse(format!(
        "{component}.{} of entity {e} holds {}, which the field's Rust type cannot hold (NULL in an Entity, or a number past i32 in an i32: make the field an Option<Entity>, or an i64)",
        spec.name,
        value.map_or_else(|| "?".to_owned(), |v| v.to_string()),
    ))
}

/// A field's default, a literal of its type.
fn literal(component: &str, spec: &FieldSpec, text: &str) -> Result<Value> {
    let t = text.trim();
    let value = match spec.ty {
        _ if t.eq_ignore_ascii_case("null") => Some(Value::Null),
        FieldType::Int => t.parse().ok().map(Value::Int),
        FieldType::Float => t.parse().ok().map(Value::Float),
        FieldType::Real => t.parse().ok().map(Value::Real),
        FieldType::Bool if t.eq_ignore_ascii_case("true") => Some(Value::Bool(true)),
        FieldType::Bool if t.eq_ignore_ascii_case("false") => Some(Value::Bool(false)),
        FieldType::Text if t.len() >= 2 && t.starts_with('\'') && t.ends_with('\'') => {
            Some(Value::Text(t[1..t.len() - 1].replace("''", "'")))
        }
        _ => None,
    };
    value.ok_or_else(|| {
        misuse(format!(
            "the default of {component}.{} is `{text}`, which World::register does not read as a {} literal (a number, 'text', TRUE, FALSE or NULL; Connection::register takes any constant)",
            spec.name, spec.ty
        ))
    })
}
