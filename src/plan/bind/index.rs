//! CREATE INDEX: over fields, an ordered, relation, spatial or filter index; over
//! expressions of the component's fields, or with a WHERE, a function index, whose
//! expressions are bound here as a one-component query's would be and checked to give
//! the same value for a row every time (no parameter, subquery, `random()` or `tick()`).

use std::sync::Arc;

use super::scope::Ctx;
use super::{Binder, Result};

use crate::index::{Condition, IndexMethod};
use crate::location::Location;
use crate::parse as ast;
use crate::parse::{ExprKind, Ident, IndexUsing};
use crate::plan::normal::{column_name, constant_range, normal_form};
use crate::plan::{
    BoundExpr, BoundKind, FunctionIndexPlan, IndexKeys, Plan, PlanError, PlanErrorKind, RelationSource,
    ScanColumn,
};
use crate::storage::{ComponentDef, FieldId};
use crate::vector::DataType;

impl<'a> Binder<'a> {
    pub(super) fn create_index(
        &self,
        name: Option<&Ident>,
        method: IndexUsing,
        if_not_exists: bool,
        component: &Ident,
        keys: &[ast::Expr],
        predicate: Option<&ast::Expr>,
    ) -> Result<Plan> {
        let def = self.component(component)?;
        let name = name.map(|n| n.value.to_string());
        let fields = keys
            .iter()
            .map(|k| bare_field(def, component, k))
            .collect::<Option<Vec<_>>>();
        // Several fields without SPATIAL or USING filter: a function index over them (a
        // field named twice is refused as for any index).
        let repeated = fields.as_ref().is_some_and(|f| {
            f.iter()
                .enumerate()
                .any(|(i, a)| f[..i].iter().any(|b| b.value.eq_ignore_ascii_case(&a.value)))
        });
        let composite = method == IndexUsing::Value && keys.len() > 1 && !repeated;
        if let (Some(fields), None, false) = (fields, predicate, composite) {
            if let Some(id) = fields.iter().find(|f| {
                f.value.eq_ignore_ascii_case("id") && !def.fields().iter().any(|d| f.matches(d.name()))
            }) {
                return Err(PlanError::invalid(
                    id.at,
                    "id needs no index: an entity is found by its id directly (WHERE id = …, id IN (…))",
                ));
            }
            let mut ids = Vec::with_capacity(fields.len());
            for f in &fields {
                ids.push(FieldId::new(def.id(), self.field_index(def, f)? as u16));
            }
            let names: Vec<&str> = fields.iter().map(|f| f.value.as_str()).collect();
            return Ok(Plan::CreateIndex {
                name,
                method: match method {
                    IndexUsing::Value => IndexMethod::Value,
                    IndexUsing::Spatial => IndexMethod::Spatial,
                    IndexUsing::Filter => IndexMethod::Filter,
                },
                if_not_exists,
                fields: ids,
                label: format!("{} ({})", def.name(), names.join(", ")),
            });
        }
        let at = keys.first().map_or(component.at, |k| k.at);
        match method {
            IndexUsing::Value => {}
            IndexUsing::Spatial => {
                return Err(PlanError::invalid(
                    at,
                    "a spatial index takes 2 or 3 fields, not expressions or WHERE (a function index is CREATE INDEX)",
                ));
            }
            IndexUsing::Filter => {
                return Err(PlanError::invalid(
                    at,
                    "a filter index takes one field, not an expression or WHERE (a function index is CREATE INDEX without USING filter)",
                ));
            }
        }
        let index = self.function_index(def, component, keys, predicate)?;
        let mut label = format!("{} ({})", def.name(), index.exprs.join(", "));
        if let Some(p) = &index.predicate {
            label.push_str(&format!(" WHERE {p}"));
        }
        Ok(Plan::CreateFunctionIndex {
            name,
            if_not_exists,
            index,
            label,
        })
    }

    /// Binds a function index's expressions and predicate over `def`'s fields.
    fn function_index(
        &self,
        def: &ComponentDef,
        component: &Ident,
        keys: &[ast::Expr],
        predicate: Option<&ast::Expr>,
    ) -> Result<FunctionIndexPlan> {
        let from = ast::FromItem {
            base: ast::TableRef::Named {
                name: component.clone(),
                alias: None,
            },
            joins: Vec::new(),
        };
        let mut scope = self.from(std::slice::from_ref(&from))?;
        let mut exprs = Vec::with_capacity(keys.len());
        // A parameter is refused whether or not a value was given for it.
        let no_parameter = |text: &ast::Expr, e: PlanError| match e.kind {
            PlanErrorKind::MissingParameter { .. } => PlanError::invalid(
                e.at,
                format!(
                    "an index keeps a value per row, so {text} cannot be in it: a parameter's value is the statement's, not the row's"
                ),
            ),
            _ => e,
        };
        for k in keys {
            let e = self
                .expr(k, &mut scope, &mut Ctx::Row("an index's expressions"))
                .map_err(|e| no_parameter(k, e))?;
            if e.ty == DataType::Null {
                return Err(PlanError::invalid(
                    k.at,
                    format!("{k} is NULL for every row: an index's expression needs a type (CAST it)"),
                ));
            }
            exprs.push(e);
        }
        let written = predicate;
        let predicate = match written {
            Some(p) => {
                let e = self
                    .expr(p, &mut scope, &mut Ctx::Row("an index's WHERE"))
                    .map_err(|e| no_parameter(p, e))?;
                Some(self.expect_bool(e, "an index's WHERE")?)
            }
            None => None,
        };
        let width = scope.width();
        let columns = match scope.relations.first().map(|r| &r.source) {
            Some(RelationSource::Entities(scan)) => scan.columns.to_vec(),
            _ => Vec::new(),
        };
        let column = |s: usize| -> Option<ScanColumn> {
            columns.iter().find_map(|&(slot, c)| (slot == s).then_some(c))
        };
        for (e, text) in exprs.iter().zip(keys).chain(predicate.iter().zip(written)) {
            if let Some((at, why)) = not_indexable(e, &column) {
                return Err(PlanError::invalid(
                    at,
                    format!("an index keeps a value per row, so {text} cannot be in it: {why}"),
                ));
            }
        }
        let names = |s: usize| column(s).map(column_name);
        let shapes = exprs
            .iter()
            .map(|e| normal_form(e, &names, None))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| PlanError::invalid(keys[0].at, "an index's expression has no normal form"))?;
        if let Some(i) = (1..shapes.len()).find(|&i| shapes[..i].contains(&shapes[i])) {
            return Err(PlanError::invalid(
                keys[i].at,
                format!("{} is listed twice: an index's expressions must differ", keys[i]),
            ));
        }
        let mut conditions = Vec::new();
        if let Some(p) = &predicate {
            let mut atoms = crate::plan::probe::Atoms::new();
            crate::plan::probe::atoms(p, &mut atoms);
            for a in atoms {
                let Some(shape) = normal_form(a, &names, None) else {
                    return Err(PlanError::invalid(
                        a.at,
                        "this condition of an index's WHERE has no normal form",
                    ));
                };
                // A range stands for a comparison only: an IN list allows the values listed,
                // not every value between them.
                let range = match a.kind {
                    BoundKind::Compare(..) => constant_range(a, &names, None),
                    _ => None,
                };
                conditions.push(Condition { shape, range });
            }
        }
        let mut reads = Vec::new();
        for &(_, c) in &columns {
            if let ScanColumn::Field(f) = c
                && !reads.contains(&f)
            {
                reads.push(f);
            }
        }
        let types = exprs
            .iter()
            .zip(keys)
            .map(|(e, k)| {
                e.ty.field_type().ok_or_else(|| {
                    PlanError::invalid(k.at, format!("an index cannot keep values of type {}", e.ty))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(FunctionIndexPlan {
            exprs: keys.iter().map(ToString::to_string).collect(),
            predicate: written.map(ToString::to_string),
            shapes,
            types,
            conditions,
            reads,
            keys: Arc::new(IndexKeys {
                component: def.id(),
                exprs,
                predicate,
                columns,
                width,
            }),
        })
    }
}

/// `k` when it is a bare name, `hp` or `Health.hp`: a field (the caller says which are
/// not).
fn bare_field(def: &ComponentDef, component: &Ident, k: &ast::Expr) -> Option<Ident> {
    let ExprKind::Column(parts) = &k.kind else {
        return None;
    };
    match parts.as_slice() {
        [n] => Some(n.clone()),
        [q, n] if q.matches(&component.value) || q.matches(def.name()) => Some(n.clone()),
        _ => None,
    }
}

/// Why `e` cannot be kept in an index, and where: the first part whose value is not the
/// row's alone.
fn not_indexable(e: &BoundExpr, column: &dyn Fn(usize) -> Option<ScanColumn>) -> Option<(Location, String)> {
    let here = |why: &str| Some((e.at, why.to_owned()));
    match &e.kind {
        BoundKind::Param { .. } => return here("a parameter's value is the statement's, not the row's"),
        BoundKind::Outer(_) => return here("it reads another query's row"),
        BoundKind::Subquery { .. } | BoundKind::Exists { .. } | BoundKind::InSubquery { .. } => {
            return here("a subquery reads other rows, which change without this row changing");
        }
        BoundKind::Call(f, _) if f.properties().volatile => {
            return Some((e.at, format!("{}() gives a new value each call", f.name())));
        }
        BoundKind::Call(f, _) if f.properties().clock => {
            return Some((e.at, format!("{}() changes from tick to tick", f.name())));
        }
        BoundKind::Slot(s) => match column(*s) {
            Some(ScanColumn::Field(_) | ScanColumn::Id) => {}
            _ => {
                return here(
                    "it asks about changes or other components, which change without this row's fields",
                );
            }
        },
        _ => {}
    }
    let mut found = None;
    e.visit_children(&mut |c: &BoundExpr| {
        if found.is_none() {
            found = not_indexable(c, column);
        }
    });
    found
}
