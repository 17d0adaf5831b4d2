//! The component catalog: component types declared at run time, their typed fields and
//! defaults, keyed by the ids of `ids.rs`. Which entities hold a
//! component is the tables' business (`table/`, `archetypes.rs`), not the catalog's.

use std::sync::Arc;

use hashbrown::HashMap;

use super::error::StorageError;
use super::hash::stable_hash;
use super::ids::{ComponentId, FieldId, TableId};
use super::value::{FieldType, Value};

/// A field as declared: `x REAL DEFAULT 1.5`.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldDef {
    /// Shared: the binder names a column by it for every statement that reads the field.
    name: Arc<str>,
    ty: FieldType,
    default: Value,
}

impl FieldDef {
    /// A field whose default is its type's zero (NULL for `ENTITY`).
    pub fn new(name: impl Into<String>, ty: FieldType) -> Self {
        FieldDef {
            name: Arc::from(name.into()),
            ty,
            default: ty.zero(),
        }
    }

    /// The same field with another default; checked against the type when the component is
    /// created.
    pub fn with_default(mut self, default: Value) -> Self {
        self.default = default;
        self
    }

    /// The field's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The field's name, shared without a copy.
    pub(crate) fn shared_name(&self) -> Arc<str> {
        Arc::clone(&self.name)
    }

    /// The field's type.
    pub fn ty(&self) -> FieldType {
        self.ty
    }

    /// The value the field takes when a SPAWN or INSERT does not give one.
    pub fn default_value(&self) -> &Value {
        &self.default
    }
}

/// A declared component type. Zero fields make it a tag.
#[derive(Clone, Debug)]
pub struct ComponentDef {
    id: ComponentId,
    name: String,
    fields: Vec<FieldDef>,
    /// Stable hash of the name; archetype names are XORs of these.
    hash: u64,
    /// Whether its tables keep change marks (`marks.rs`): set once a reader asks for
    /// `changed()`/`added()` of it, and kept.
    tracked: bool,
    /// For a sparse component, its table (`sparse.rs`); `None` for one kept in the
    /// archetype tables.
    sparse: Option<TableId>,
}

/// Where a component's values are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageKind {
    /// In the archetype tables, beside the entity's other components (the default):
    /// fastest to read together, but attaching or detaching moves the entity's row.
    Dense,
    /// In a table of its own with an index by entity: attaching and detaching move
    /// nothing and make no table; reading it beside other components costs a lookup.
    Sparse,
}

impl ComponentDef {
    /// The component's id.
    pub fn id(&self) -> ComponentId {
        self.id
    }

    /// The component's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The component's fields, in declaration order.
    pub fn fields(&self) -> &[FieldDef] {
        &self.fields
    }

    /// True for a component without fields (a tag).
    pub fn is_tag(&self) -> bool {
        self.fields.is_empty()
    }

    /// True once its changes are tracked: its tables keep change marks.
    pub fn is_tracked(&self) -> bool {
        self.tracked
    }

    /// Where its values are kept.
    pub fn storage(&self) -> StorageKind {
        match self.sparse {
            Some(_) => StorageKind::Sparse,
            None => StorageKind::Dense,
        }
    }

    /// A sparse component's table; `None` for a dense one.
    pub fn sparse_table(&self) -> Option<TableId> {
        self.sparse
    }

    /// The field's id, if this component has a field of that name.
    pub fn field(&self, name: &str) -> Option<FieldId> {
        let index = self.fields.iter().position(|f| *f.name == *name)?;
        Some(FieldId::new(self.id, index as u16))
    }

    /// Every field's default, in declaration order: a full row of this component.
    pub fn defaults(&self) -> Vec<Value> {
        self.fields.iter().map(|f| f.default.clone()).collect()
    }

    pub(crate) fn hash(&self) -> u64 {
        self.hash
    }

    /// The field at `index`, or the error naming this component and the bad index.
    pub(crate) fn field_def(&self, field: FieldId) -> Result<&FieldDef, StorageError> {
        self.fields
            .get(field.index())
            .ok_or_else(|| StorageError::FieldIndexOutOfRange {
                component: self.name.clone(),
                index: field.index(),
                count: self.fields.len(),
            })
    }

    /// Checks a full row of values against the declared fields.
    pub(crate) fn check_values(&self, values: &[Value]) -> Result<(), StorageError> {
        if values.len() != self.fields.len() {
            return Err(StorageError::FieldCount {
                component: self.name.clone(),
                expected: self.fields.len(),
                found: values.len(),
            });
        }
        self.fields
            .iter()
            .zip(values)
            .try_for_each(|(field, value)| self.check_value(field, value))
    }

    pub(crate) fn check_value(&self, field: &FieldDef, value: &Value) -> Result<(), StorageError> {
        if field.ty.accepts(value) {
            Ok(())
        } else {
            Err(StorageError::TypeMismatch {
                component: self.name.clone(),
                field: field.name.to_string(),
                expected: field.ty,
                found: value.describe(),
            })
        }
    }
}

/// The most fields one component may declare; field positions are stored as `u16`.
pub const MAX_FIELDS: usize = u16::MAX as usize;

/// Checks the fields declared by a component or event type called `owner`: at most
/// `MAX_FIELDS`, each named, no name twice, each default of its field's type.
pub(crate) fn check_fields(owner: &str, fields: &[FieldDef]) -> Result<(), StorageError> {
    if fields.len() > MAX_FIELDS {
        return Err(StorageError::TooManyFields {
            component: owner.to_owned(),
            count: fields.len(),
        });
    }
    for (i, field) in fields.iter().enumerate() {
        if field.name.is_empty() {
            return Err(StorageError::EmptyName { what: "field" });
        }
        if fields[..i].iter().any(|f| f.name == field.name) {
            return Err(StorageError::DuplicateField {
                component: owner.to_owned(),
                field: field.name.to_string(),
            });
        }
        if !field.ty.accepts(&field.default) {
            return Err(StorageError::TypeMismatch {
                component: owner.to_owned(),
                field: field.name.to_string(),
                expected: field.ty,
                found: field.default.describe(),
            });
        }
    }
    Ok(())
}

/// All declared components, by id and by name.
#[derive(Clone, Debug, Default)]
pub(crate) struct Components {
    /// Indexed by `ComponentId`; `None` once dropped (ids are not reused).
    defs: Vec<Option<ComponentDef>>,
    by_name: HashMap<String, ComponentId>,
}

impl Components {
    /// A catalog of `defs` by id (`None`: a dropped id), as a snapshot kept it: each
    /// `(name, fields, sparse)`; sparse components get their tables later (`set_sparse`).
    pub fn from_defs(defs: Vec<Option<(String, Vec<FieldDef>)>>) -> Result<Components, StorageError> {
        let mut catalog = Components::default();
        for def in defs {
            match def {
                Some((name, fields)) => {
                    catalog.create(&name, fields)?;
                }
                None => {
                    u32::try_from(catalog.defs.len()).map_err(|_| StorageError::OutOfComponentIds)?;
                    catalog.defs.push(None);
                }
            }
        }
        Ok(catalog)
    }

    /// Every id given so far, dropped ones as `None`, in id order.
    pub fn slots(&self) -> &[Option<ComponentDef>] {
        &self.defs
    }

    pub fn create(&mut self, name: &str, fields: Vec<FieldDef>) -> Result<ComponentId, StorageError> {
        let hash = stable_hash(name.as_bytes());
        self.create_with_hash(name, fields, hash)
    }

    /// `create` with a chosen hash: tests use it to force archetype hash collisions.
    pub fn create_with_hash(
        &mut self,
        name: &str,
        fields: Vec<FieldDef>,
        hash: u64,
    ) -> Result<ComponentId, StorageError> {
        if name.is_empty() {
            return Err(StorageError::EmptyName { what: "component" });
        }
        if self.by_name.contains_key(name) {
            return Err(StorageError::ComponentExists(name.to_owned()));
        }
        check_fields(name, &fields)?;
        let id = ComponentId(u32::try_from(self.defs.len()).map_err(|_| StorageError::OutOfComponentIds)?);
        let def = ComponentDef {
            id,
            name: name.to_owned(),
            fields,
            hash,
            tracked: false,
            sparse: None,
        };
        self.by_name.insert(def.name.clone(), id);
        self.defs.push(Some(def));
        Ok(id)
    }

    pub fn get(&self, id: ComponentId) -> Result<&ComponentDef, StorageError> {
        match self.defs.get(id.index()).and_then(Option::as_ref) {
            Some(def) => Ok(def),
            None => Err(StorageError::UnknownComponentId(id)),
        }
    }

    pub fn by_name(&self, name: &str) -> Result<&ComponentDef, StorageError> {
        self.by_name
            .get(name)
            .and_then(|&id| self.get(id).ok())
            .ok_or_else(|| StorageError::UnknownComponent(name.to_owned()))
    }

    /// Marks `id`'s changes as tracked; false when it already was (or does not exist).
    pub fn track(&mut self, id: ComponentId) -> bool {
        match self.defs.get_mut(id.index()).and_then(Option::as_mut) {
            Some(def) if !def.tracked => {
                def.tracked = true;
                true
            }
            _ => false,
        }
    }

    /// Makes `id` sparse, kept in table `table`.
    pub fn set_sparse(&mut self, id: ComponentId, table: TableId) {
        if let Some(def) = self.defs.get_mut(id.index()).and_then(Option::as_mut) {
            def.sparse = Some(table);
        }
    }

    /// Forgets the component declared last (undoing its declaration).
    pub fn remove_last(&mut self) -> Option<ComponentDef> {
        let def = self.defs.pop()??;
        self.by_name.remove(&def.name);
        Some(def)
    }

    pub fn remove(&mut self, id: ComponentId) {
        if let Some(def) = self.defs.get_mut(id.index()).and_then(Option::take) {
            self.by_name.remove(&def.name);
        }
    }

    /// Live components in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = &ComponentDef> {
        self.defs.iter().flatten()
    }

    /// How many components are live (each has its name in `by_name`), without walking
    /// them.
    pub fn len(&self) -> usize {
        debug_assert_eq!(self.by_name.len(), self.iter().count());
        self.by_name.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_are_checked() {
        let mut c = Components::default();
        let dup = vec![
            FieldDef::new("x", FieldType::Real),
            FieldDef::new("x", FieldType::Int),
        ];
        assert!(matches!(
            c.create("P", dup),
            Err(StorageError::DuplicateField { .. })
        ));
        let bad_default = vec![FieldDef::new("hp", FieldType::Int).with_default(Value::Real(1.0))];
        let err = c.create("Health", bad_default).unwrap_err();
        assert_eq!(
            err.to_string(),
            "type mismatch for Health.hp: expected INT, found REAL 1.0"
        );
        assert!(matches!(
            c.create("", vec![]),
            Err(StorageError::EmptyName { .. })
        ));
        // Nothing half-declared was left behind by the failures.
        assert_eq!(c.iter().count(), 0);
        let tag = c.create("Player", vec![]).unwrap();
        assert!(c.get(tag).unwrap().is_tag());
        assert!(matches!(
            c.create("Player", vec![]),
            Err(StorageError::ComponentExists(_))
        ));
    }

    #[test]
    fn dropped_ids_are_not_reused() {
        let mut c = Components::default();
        let a = c.create("A", vec![]).unwrap();
        c.remove(a);
        let again = c.create("A", vec![]).unwrap();
        assert_ne!(a, again);
        assert_eq!(c.get(a).unwrap_err(), StorageError::UnknownComponentId(a));
    }
}
