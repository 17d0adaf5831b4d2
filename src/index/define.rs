//! Index definitions: CREATE INDEX checks what it is asked for against the catalog, builds
//! the index from every row holding the component and adds it to the world's `Indexes`
//! observer (adding that observer with the first index); DROP INDEX removes one. A failed
//! definition changes nothing.

use super::{Definition, Index, IndexError, IndexKind, IndexMethod, Indexes, kind_for};
use crate::storage::{ComponentId, FieldId, FieldType, World};

type Result<T> = std::result::Result<T, IndexError>;

/// Builds an index over `fields` of one component from every row holding it: spatial over
/// 2 or 3 numeric fields, otherwise over one field (a filter index when `method` asks, a
/// relation index for an ENTITY, else ordered). Without a name it is called
/// `Component_field…_idx` (`…_filter` for a filter index). Returns the name.
pub fn create_index(
    world: &mut World,
    name: Option<&str>,
    method: IndexMethod,
    fields: &[FieldId],
) -> Result<String> {
    let spatial = method == IndexMethod::Spatial;
    let Some(first) = fields.first() else {
        return Err(IndexError::ValueFieldCount(0));
    };
    let def = world.component(first.component())?;
    if fields.iter().any(|f| f.component() != first.component()) {
        return Err(IndexError::MixedComponents(def.name().to_owned()));
    }
    let mut types = Vec::with_capacity(fields.len());
    for (i, &f) in fields.iter().enumerate() {
        let field = def.field_def(f)?;
        if fields[..i].contains(&f) {
            return Err(IndexError::RepeatedField {
                component: def.name().to_owned(),
                field: field.name().to_owned(),
            });
        }
        if spatial && !matches!(field.ty(), FieldType::Int | FieldType::Real | FieldType::Float) {
            return Err(IndexError::NotACoordinate {
                component: def.name().to_owned(),
                field: field.name().to_owned(),
                ty: field.ty(),
            });
        }
        types.push(field.ty());
    }
    if spatial && !(2..=3).contains(&fields.len()) {
        return Err(IndexError::SpatialFieldCount(fields.len()));
    }
    if method == IndexMethod::Filter && fields.len() != 1 {
        return Err(IndexError::FilterFieldCount(fields.len()));
    }
    if !spatial && fields.len() != 1 {
        return Err(IndexError::ValueFieldCount(fields.len()));
    }
    let kind = kind_for(method, &types);
    let field_names: Vec<&str> = fields
        .iter()
        .filter_map(|&f| def.field_def(f).ok().map(|d| d.name()))
        .collect();
    let indexes = Indexes::of(world);
    if let Some(same) = indexes.iter().find(|i| i.kind() == kind && i.fields() == fields) {
        return Err(IndexError::Duplicate {
            component: def.name().to_owned(),
            fields: field_names.join(", "),
            kind: kind.name(),
            name: same.name().to_owned(),
        });
    }
    let name = match name {
        Some("") => return Err(IndexError::EmptyName),
        Some(n) => n.to_owned(),
        None => format!(
            "{}_{}_{}",
            def.name(),
            field_names.join("_"),
            if kind == IndexKind::Filter {
                "filter"
            } else {
                "idx"
            }
        ),
    };
    if indexes.get(&name).is_some() {
        return Err(IndexError::Exists(name));
    }
    install(world, Index::new(name, kind, def.id(), fields.to_vec(), types[0]))
}

/// Fills `index` from every row holding its component and adds it to the world's
/// `Indexes` (adding that observer with the first index). Returns its name.
fn install(world: &mut World, mut index: Index) -> Result<String> {
    let name = index.name().to_owned();
    index.fill(world.all_tables());
    if world.observer::<Indexes>().is_none() {
        world.observe(Indexes::default());
    }
    match world.observer_mut::<Indexes>() {
        Some(indexes) => indexes.push(index),
        None => return Err(IndexError::Unknown(name)),
    }
    Ok(name)
}

/// Removes an index; the data it covered stays. A filter index's filters go with it (no
/// other filter index covers its field: `create_index` refuses a second).
pub fn drop_index(world: &mut World, name: &str) -> Result<()> {
    if Indexes::of(world).get(name).is_none() {
        return Err(IndexError::Unknown(name.to_owned()));
    }
    let Some(gone) = world.observer_mut::<Indexes>().and_then(|i| i.remove(name)) else {
        return Err(IndexError::Unknown(name.to_owned()));
    };
    if gone.kind() == IndexKind::Filter
        && let Some(&field) = gone.fields().first()
    {
        world.forget_filters(field);
    }
    Ok(())
}

/// Builds a function index over `component` from every row holding it: the values of
/// `def`'s expressions per entity (only where its predicate is TRUE, for a partial one).
/// Without a name it is called `Component_expr_idx` after its expressions' fields. Returns
/// the name.
pub fn create_function_index(
    world: &mut World,
    name: Option<&str>,
    component: ComponentId,
    def: Definition,
) -> Result<String> {
    let comp = world.component(component)?;
    let indexes = Indexes::of(world);
    let written = |d: &Definition| {
        (
            d.shapes.clone(),
            d.conditions.iter().map(|c| c.shape.clone()).collect::<Vec<_>>(),
        )
    };
    if let Some(same) = indexes
        .iter()
        .find(|i| i.component() == component && i.definition().map(written) == Some(written(&def)))
    {
        let mut fields = def.exprs.join(", ");
        if let Some(p) = &def.predicate {
            fields = format!("{fields}) WHERE ({p}");
        }
        return Err(IndexError::Duplicate {
            component: comp.name().to_owned(),
            fields,
            kind: IndexKind::Function.name(),
            name: same.name().to_owned(),
        });
    }
    let name = match name {
        Some("") => return Err(IndexError::EmptyName),
        Some(n) => n.to_owned(),
        None => {
            let mut base = comp.name().to_owned();
            for f in &def.reads {
                if let Ok(field) = comp.field_def(*f) {
                    base.push('_');
                    base.push_str(field.name());
                }
            }
            let mut name = format!("{base}_fn_idx");
            let mut n = 2;
            while indexes.get(&name).is_some() {
                name = format!("{base}_fn_idx{n}");
                n += 1;
            }
            name
        }
    };
    if indexes.get(&name).is_some() {
        return Err(IndexError::Exists(name));
    }
    install(world, Index::function(name, component, def))
}
