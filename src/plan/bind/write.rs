//! The writing statements: SPAWN, INSERT (with ON CONFLICT), UPDATE, and the id queries
//! that DELETE and DESPAWN read. Each value is converted to its field's type here, so the
//! executor writes typed columns (or, for one spawned entity, typed values).

use std::fmt;

use smallvec::{SmallVec, smallvec};

use super::field_list;
use super::query::single;
use super::scope::{ColKind, Ctx, NamedColumn, Scope};
use super::{Binder, Result};

use crate::location::Location;
use crate::parse as ast;
use crate::parse::Ident;
use crate::plan::{
    Assignment, BoundExpr, ConflictPlan, EmitPlan, InsertPlan, Output, OutputColumn, PlanError, QueryPlan,
    ScanColumn, SelectText, SpawnPlan, UpdatePlan,
};
use crate::storage::{EventQueue, FieldDef, FieldId, FieldType};
use crate::vector::{DataType, assignable};

/// `component.field`, as errors and column names write a field.
fn qualified(component: &str, field: &str) -> String {
    Ident::dotted_str([component, field].into_iter())
}

/// `component.field` written out only when it is used: by an error, or a cast left for
/// the run (most values of a SPAWN are converted without naming their field).
#[derive(Clone, Copy)]
struct FieldName<'n>(&'n str, &'n str);

impl fmt::Display for FieldName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// The columns an INSERT names: those listed, or every field in order.
fn listed_columns(fields: &[FieldDef], columns: &[Ident], at: Location) -> Vec<Ident> {
    if columns.is_empty() {
        fields.iter().map(|f| Ident::new(f.name(), at)).collect()
    } else {
        columns.to_vec()
    }
}

impl<'a> Binder<'a> {
    /// A query of the first entity's ids over `from` filtered by `filter`.
    pub(super) fn id_query(
        &self,
        from: &[ast::FromItem],
        filter: Option<&ast::Expr>,
        at: Location,
    ) -> Result<QueryPlan> {
        let mut scope = self.from(from)?;
        let Some(entity) = scope.first_entity else {
            return Err(PlanError::invalid(
                at,
                "expected components to select entities from",
            ));
        };
        let conditions = match self.explaining {
            true => super::filter::condition_texts(from, filter),
            false => Vec::new(),
        };
        let (filter, text) = self.filter(filter, &mut scope)?;
        let id = scope.slot(entity, ColKind::Scan(ScanColumn::Id), DataType::Entity);
        let output = Output::Rows(vec![BoundExpr::slot(id, DataType::Entity, at)]);
        let explain = SelectText {
            filter: text,
            outputs: if self.explaining {
                vec!["id".into()]
            } else {
                Vec::new()
            },
            conditions,
            ..Default::default()
        };
        let plan = Box::new(self.finish_select(&mut scope, filter, output, false, explain));
        Ok(single(plan, vec![OutputColumn::id()]))
    }

    pub(super) fn spawn(
        &self,
        id: Option<&ast::Expr>,
        items: &[ast::SpawnItem],
        source: Option<&ast::Source>,
        at: Location,
    ) -> Result<SpawnPlan> {
        let mut scope = match source {
            Some(s) => self.from(&s.from)?,
            None => Scope::bare(),
        };
        // As many values as are written, at least (defaults fill the rest).
        let written = items.iter().map(|i| i.args.len()).sum::<usize>() + usize::from(id.is_some());
        let mut components = SmallVec::with_capacity(items.len());
        let mut exprs = Vec::with_capacity(written);
        // Each column's type; the columns (unnamed: the run names a value's field only in
        // its error, `spawn.rs`) are made from them at the end, in one allocation.
        let mut types: SmallVec<[DataType; 16]> = SmallVec::with_capacity(written);
        let mut texts = Vec::new();
        for item in items {
            let def = self.component(&item.name)?;
            if components.iter().any(|(c, _)| *c == def.id()) {
                return Err(PlanError::invalid(
                    item.name.at,
                    format!("{} is listed twice", def.name()),
                ));
            }
            let fields = def.fields();
            let mut given: SmallVec<[Option<&ast::Expr>; 8]> = smallvec![None; fields.len()];
            let mut position = 0;
            for arg in &item.args {
                let index = match &arg.name {
                    Some(n) => self.field_index(def, n)?,
                    None => {
                        position += 1;
                        position - 1
                    }
                };
                if index >= fields.len() {
                    return Err(PlanError::invalid(
                        arg.value.at,
                        format!(
                            "{} has {} field(s) ({}), but more values were given",
                            def.name(),
                            fields.len(),
                            field_list(def)
                        ),
                    ));
                }
                if given[index].is_some() {
                    return Err(PlanError::invalid(
                        arg.value.at,
                        format!("{}.{} is given twice", def.name(), fields[index].name()),
                    ));
                }
                given[index] = Some(&arg.value);
            }
            // Pushed one by one: `collect` into a `SmallVec` costs more than the pushes.
            let mut field_types = SmallVec::<[FieldType; 16]>::new();
            for (field, value) in fields.iter().zip(given) {
                field_types.push(field.ty());
                let to = DataType::from(field.ty());
                let bound = match value {
                    Some(e) => {
                        let b = self.expr(e, &mut scope, &mut Ctx::Row("SPAWN"))?;
                        if self.explaining {
                            texts.push(e.to_string());
                        }
                        self.assign_cast(b, to, &FieldName(def.name(), field.name()))?
                    }
                    None => {
                        if self.explaining {
                            texts.push(field.default_value().to_string());
                        }
                        BoundExpr::constant(field.default_value().clone(), at)
                    }
                };
                exprs.push(bound);
                types.push(to);
            }
            components.push((def.id(), field_types));
        }
        // The chosen id, if any, is the last column of the rows.
        let id_column = match id {
            Some(e) => {
                let b = self.expr(e, &mut scope, &mut Ctx::Row("SPAWN"))?;
                if self.explaining {
                    texts.push(e.to_string());
                }
                exprs.push(self.assign_cast(b, DataType::Entity, &"the id of SPAWN AT")?);
                Some(types.len())
            }
            None => None,
        };
        let values = types.iter().map(|&ty| OutputColumn {
            name: String::new(),
            ty,
        });
        let columns: std::sync::Arc<[OutputColumn]> =
            values.chain(id_column.map(|_| OutputColumn::id())).collect();
        let (filter, filter_text) = match source {
            Some(s) => self.filter(s.filter.as_ref(), &mut scope)?,
            None => (None, None),
        };
        let explain = SelectText {
            filter: filter_text,
            outputs: texts,
            ..Default::default()
        };
        let value_at = exprs.iter().map(|e| e.at).collect();
        let plan = Box::new(self.finish_select(&mut scope, filter, Output::Rows(exprs), false, explain));
        Ok(SpawnPlan {
            components,
            rows: single(plan, columns),
            value_at,
            id_column,
        })
    }

    /// The rows of an INSERT into a component or an event type called `owner`: `source`,
    /// one column per name `listed`, each of a type its field (`field_columns` says which
    /// column gives which field; a column that gives none is the id) can store.
    fn insert_rows(
        &self,
        owner: &str,
        fields: &[FieldDef],
        listed: &[Ident],
        field_columns: &[Option<usize>],
        source: &ast::Query,
    ) -> Result<QueryPlan> {
        let target = |i: usize| match field_columns.iter().position(|&fc| fc == Some(i)) {
            Some(f) => DataType::from(fields[f].ty()),
            None => DataType::Entity,
        };
        // A parameter given alone for a column is used as its field's type (what a client
        // that prepares the statement is told, as PostgreSQL tells it).
        let alone = |items: &mut dyn Iterator<Item = Option<&ast::Expr>>| {
            for (i, e) in items.enumerate() {
                if let Some(ast::ExprKind::Param(p)) = e.map(|e| &e.kind) {
                    self.hint_param(p, target(i));
                }
            }
        };
        match &source.body {
            ast::SetExpr::Values(rows) => rows.iter().for_each(|row| alone(&mut row.iter().map(Some))),
            // A wildcard's columns are not counted: nothing after one is hinted.
            ast::SetExpr::Select(select) => alone(&mut select.items.iter().map_while(|item| match item {
                ast::SelectItem::Expr { expr, .. } => Some(Some(expr)),
                _ => None,
            })),
            _ => {}
        }
        let rows = self.query(source)?;
        if rows.columns.len() != listed.len() {
            return Err(PlanError::invalid(
                source.at,
                format!(
                    "INSERT lists {} column(s) but the rows have {}",
                    listed.len(),
                    rows.columns.len()
                ),
            ));
        }
        for (i, c) in listed.iter().enumerate() {
            let field = field_columns.iter().position(|&fc| fc == Some(i));
            let to = field.map_or(DataType::Entity, |f| DataType::from(fields[f].ty()));
            let from = rows.columns[i].ty;
            if !assignable(from, to) {
                let what = field.map_or_else(|| "id".to_owned(), |f| qualified(owner, fields[f].name()));
                return Err(PlanError::type_mismatch(
                    c.at,
                    format!("{what} is {to}, but the rows give {from}"),
                ));
            }
        }
        Ok(rows)
    }

    /// `INSERT INTO Event [(fields)] VALUES … | SELECT …`: rows for an event type's queue.
    pub(super) fn emit(
        &self,
        event: &EventQueue,
        columns: &[Ident],
        source: &ast::Query,
        on_conflict: &ast::OnConflict,
    ) -> Result<EmitPlan> {
        if !matches!(on_conflict, ast::OnConflict::Fail) {
            return Err(PlanError::invalid(
                source.at,
                format!(
                    "{} is an event: its rows have no id to conflict on (INSERT INTO {} without OR REPLACE / ON CONFLICT)",
                    event.name(),
                    event.name()
                ),
            ));
        }
        let fields = event.fields();
        let mut field_columns = vec![None; fields.len()];
        let listed = listed_columns(fields, columns, source.at);
        for (i, c) in listed.iter().enumerate() {
            if c.matches("id") {
                return Err(PlanError::invalid(
                    c.at,
                    format!(
                        "{} is an event: its rows are not entities and have no id",
                        event.name()
                    ),
                ));
            }
            let f = self.event_field(event, c)?;
            if field_columns[f].replace(i).is_some() {
                return Err(PlanError::invalid(c.at, format!("{} is listed twice", c.value)));
            }
        }
        let rows = self.insert_rows(event.name(), fields, &listed, &field_columns, source)?;
        Ok(EmitPlan {
            event: event.id(),
            fields: fields.iter().map(|f| f.ty()).collect(),
            rows,
            field_columns,
            column_at: listed.iter().map(|c| c.at).collect(),
        })
    }

    pub(super) fn insert(
        &self,
        component: &Ident,
        columns: &[Ident],
        source: &ast::Query,
        on_conflict: &ast::OnConflict,
        at: Location,
    ) -> Result<InsertPlan> {
        let def = self.component(component)?;
        let fields = def.fields();
        let mut id_column = None;
        let mut field_columns = vec![None; fields.len()];
        let listed = listed_columns(fields, columns, component.at);
        for (i, c) in listed.iter().enumerate() {
            if c.matches("id") {
                if id_column.replace(i).is_some() {
                    return Err(PlanError::invalid(c.at, "id is listed twice"));
                }
                continue;
            }
            let f = self.field_index(def, c)?;
            if field_columns[f].replace(i).is_some() {
                return Err(PlanError::invalid(c.at, format!("{} is listed twice", c.value)));
            }
        }
        let rows = self.insert_rows(def.name(), fields, &listed, &field_columns, source)?;
        let on_conflict = match on_conflict {
            ast::OnConflict::Fail => ConflictPlan::Fail,
            ast::OnConflict::DoNothing => ConflictPlan::DoNothing,
            ast::OnConflict::Replace => ConflictPlan::Replace,
            ast::OnConflict::DoUpdate(sets) => {
                if id_column.is_none() {
                    return Err(PlanError::invalid(
                        at,
                        "ON CONFLICT needs the id column: without it INSERT spawns new entities",
                    ));
                }
                // Slots: the current fields, then the proposed ones (`excluded.f`).
                let mut scope = Scope::default();
                let n = fields.len();
                for (i, f) in fields.iter().enumerate() {
                    let ty = DataType::from(f.ty());
                    for (slot, qualifier) in [(i, component.clone()), (n + i, Ident::new("excluded", at))] {
                        scope.columns.push(NamedColumn {
                            relation: 0,
                            qualifiers: std::rc::Rc::new(smallvec::smallvec![qualifier]),
                            name: f.shared_name(),
                            kind: ColKind::Fixed(slot),
                            ty,
                            qualified: true,
                            in_star: false,
                        });
                    }
                }
                scope.slot_types = (0..2 * n)
                    .map(|i| (0, DataType::from(fields[i % n].ty())))
                    .collect();
                let mut out = Vec::new();
                for set in sets {
                    let f = self.field_index(def, &set.field)?;
                    let b = self.expr(&set.value, &mut scope, &mut Ctx::Row("ON CONFLICT"))?;
                    let to = DataType::from(fields[f].ty());
                    out.push((
                        f,
                        self.assign_cast(b, to, &FieldName(def.name(), fields[f].name()))?,
                    ));
                }
                ConflictPlan::DoUpdate(out)
            }
        };
        if id_column.is_none() && !matches!(on_conflict, ConflictPlan::Fail) {
            return Err(PlanError::invalid(
                at,
                "OR REPLACE / ON CONFLICT need the id column",
            ));
        }
        Ok(InsertPlan {
            component: def.id(),
            fields: fields.iter().map(|f| f.ty()).collect(),
            rows,
            id_column,
            field_columns,
            column_at: listed.iter().map(|c| c.at).collect(),
            on_conflict,
        })
    }

    pub(super) fn update(
        &self,
        target: &Ident,
        alias: Option<&Ident>,
        assignments: &[ast::Assignment],
        from: &[ast::FromItem],
        filter: Option<&ast::Expr>,
        at: Location,
    ) -> Result<UpdatePlan> {
        let def = self.component(target)?;
        let mut items = vec![ast::FromItem {
            base: ast::TableRef::Named {
                name: target.clone(),
                alias: alias.cloned(),
            },
            joins: Vec::new(),
        }];
        items.extend(from.iter().cloned());
        let mut scope = self.from(&items)?;
        let entity = scope.first_entity.unwrap_or(0);
        let mut bound = Vec::new();
        let mut texts = Vec::new();
        for a in assignments {
            let index = self.field_index(def, &a.field)?;
            if bound.iter().any(|b: &Assignment| b.field.index() == index) {
                return Err(PlanError::invalid(
                    a.field.at,
                    format!("{} is assigned twice", a.field.value),
                ));
            }
            let field = &def.fields()[index];
            let value = self.expr(&a.value, &mut scope, &mut Ctx::Row("UPDATE … SET"))?;
            let name = qualified(def.name(), field.name());
            let value = self.assign_cast(value, DataType::from(field.ty()), &name)?;
            if self.explaining {
                texts.push(format!("{} = {}", field.name(), a.value));
            }
            bound.push(Assignment {
                field: FieldId::new(def.id(), index as u16),
                ty: field.ty(),
                value,
                name,
            });
        }
        let (filter, filter_text) = self.filter(filter, &mut scope)?;
        // Only a join needs the target's id (to write by entity); a plain scan writes rows
        // in place and should not copy ids it never reads.
        let id_slot = (scope.relations.len() > 1)
            .then(|| scope.slot(entity, ColKind::Scan(ScanColumn::Id), DataType::Entity));
        let explain = SelectText {
            filter: filter_text,
            outputs: texts,
            ..Default::default()
        };
        let select = self.finish_select(&mut scope, filter, Output::Rows(Vec::new()), false, explain);
        let _ = at;
        let mut plan = UpdatePlan {
            target: def.id(),
            select,
            id_slot,
            assignments: bound,
            cannot_fail: false,
            returning: false,
            compound: std::sync::OnceLock::new(),
            pure: std::sync::OnceLock::new(),
            route: std::sync::OnceLock::new(),
            scanned: std::sync::atomic::AtomicUsize::new(usize::MAX),
        };
        plan.decide_direct();
        Ok(plan)
    }

    /// Casts `e` for storing into something of type `to`, or says why it cannot be.
    pub(super) fn assign_cast(
        &self,
        e: BoundExpr,
        to: DataType,
        what: &dyn fmt::Display,
    ) -> Result<BoundExpr> {
        if !assignable(e.ty, to) {
            let found = match e.as_const() {
                Some(v) => v.describe(),
                None => format!("a {} expression", e.ty),
            };
            return Err(PlanError::type_mismatch(
                e.at,
                format!("{what} is {to}, cannot assign {found}"),
            ));
        }
        self.cast_param(e, to, Some(what))
    }
}

impl<'a> Binder<'a> {
    /// The query RETURNING runs over the entities `write` wrote: its items over the
    /// components it wrote (UPDATE's target under its alias, SPAWN's items; for DESPAWN
    /// `entities`) and every other component the items name, each NULL where an entity
    /// lacks it. The executor reads the query's one entity scan for those entities only
    /// (`Reader::with_ids`).
    pub(super) fn returning(
        &self,
        write: &ast::StatementKind,
        items: &[ast::SelectItem],
        at: Location,
    ) -> Result<QueryPlan> {
        use ast::{FromItem, Join, StatementKind, TableRef};
        let named = |name: &Ident, alias: Option<&Ident>| TableRef::Named {
            name: name.clone(),
            alias: alias.cloned(),
        };
        let one = |base: TableRef| FromItem {
            base,
            joins: Vec::new(),
        };
        let mut from: ast::FromList = match write {
            StatementKind::Insert { component, .. } | StatementKind::Delete { component, .. } => {
                if self.event(component).is_some() {
                    return Err(PlanError::invalid(
                        at,
                        format!("RETURNING reads entities; {} is an event", component.value),
                    ));
                }
                smallvec::smallvec![one(named(component, None))]
            }
            StatementKind::Update { target, alias, .. } => {
                smallvec::smallvec![one(named(target, alias.as_ref()))]
            }
            StatementKind::Spawn { items: spawned, .. } if !spawned.is_empty() => {
                spawned.iter().map(|i| one(named(&i.name, None))).collect()
            }
            StatementKind::Spawn { .. }
            | StatementKind::Despawn { .. }
            | StatementKind::DespawnFrom { .. } => {
                smallvec::smallvec![one(named(&Ident::new("entities", at), None))]
            }
            other => {
                return Err(PlanError::invalid(
                    at,
                    format!(
                        "RETURNING follows INSERT, UPDATE, DELETE, SPAWN or DESPAWN, not {}",
                        other.verb()
                    ),
                ));
            }
        };
        // The other components the items name, optional: an entity written may hold any.
        let mut known: Vec<String> = from
            .iter()
            .flat_map(|f| match &f.base {
                TableRef::Named { name, alias } => {
                    vec![
                        Some(name.value.to_ascii_lowercase()),
                        alias.as_ref().map(|a| a.value.to_ascii_lowercase()),
                    ]
                }
                _ => Vec::new(),
            })
            .flatten()
            .collect();
        // What an UPDATE's FROM joins with ON (other entities), and its subqueries and
        // series, are not the entity written: RETURNING cannot read them. (A component
        // listed without ON is the written entity's own, which it reads.)
        let joined: Vec<String> = match write {
            StatementKind::Update { from: others, .. } => others
                .iter()
                .flat_map(|f| {
                    std::iter::once((&f.base, false))
                        .chain(f.joins.iter().map(|j| (&j.table, j.on.is_some())))
                })
                .filter_map(|(t, on)| match t {
                    TableRef::Named { name, alias } if on => Some(alias.as_ref().unwrap_or(name)),
                    TableRef::Named { .. } => None,
                    TableRef::System { name, alias, .. } => Some(alias.as_ref().unwrap_or(name)),
                    TableRef::Function { alias, .. } | TableRef::Subquery { alias, .. } => alias.as_ref(),
                    TableRef::Recursive { cte, alias } => Some(alias.as_ref().unwrap_or(&cte.name)),
                })
                .map(|n| n.value.to_ascii_lowercase())
                .collect(),
            _ => Vec::new(),
        };
        let mut refused: Option<Ident> = None;
        let mut joins = Vec::new();
        let mut add = |q: &Ident| {
            let key = q.value.to_ascii_lowercase();
            if joined.contains(&key) && !known.contains(&key) {
                refused.get_or_insert_with(|| q.clone());
                return;
            }
            if !known.contains(&key) {
                known.push(key);
                joins.push(Join {
                    left: true,
                    table: named(q, None),
                    on: None,
                    using: Vec::new(),
                });
            }
        };
        for item in items {
            match item {
                ast::SelectItem::QualifiedWildcard(q) => add(q),
                ast::SelectItem::Expr { expr, .. } => super::syntax::visit_ast(expr, &mut |e| {
                    if let ast::ExprKind::Column(parts) = &e.kind
                        && parts.len() > 1
                    {
                        add(&parts[0]);
                    }
                }),
                ast::SelectItem::Wildcard(_) => {}
            }
        }
        if let Some(q) = refused {
            return Err(PlanError::invalid(
                q.at,
                format!(
                    "RETURNING reads the entity written and its components; {} is a relation of the UPDATE's FROM, which it cannot read",
                    q.value
                ),
            ));
        }
        if let Some(first) = from.first_mut() {
            first.joins = joins;
        }
        let query = ast::Query {
            body: ast::SetExpr::Select(Box::new(ast::Select {
                distinct: false,
                items: items.iter().cloned().collect(),
                from,
                filter: None,
                group_by: Vec::new(),
                having: None,
                windows: Vec::new(),
                at,
            })),
            order_by: Vec::new(),
            limit: None,
            offset: None,
            at,
        };
        let plan = self.query(&query)?;
        match &plan.body {
            crate::plan::SetPlan::Select(s)
                if s.relations.len() == 1
                    && matches!(s.relations[0].source, crate::plan::RelationSource::Entities(_)) =>
            {
                if s.window.is_some() {
                    return Err(PlanError::invalid(
                        at,
                        "window functions are not allowed in RETURNING (it gives one row per entity written, from that entity alone)",
                    ));
                }
                if matches!(s.output, Output::Aggregate { .. }) {
                    let first = match items.first() {
                        Some(ast::SelectItem::Expr { expr, .. }) => expr.at,
                        _ => at,
                    };
                    return Err(PlanError::invalid(
                        first,
                        "aggregate functions are not allowed in RETURNING (it gives one row per entity written)",
                    ));
                }
                Ok(plan)
            }
            _ => Err(PlanError::invalid(
                at,
                "RETURNING reads the entities the statement wrote, one row each",
            )),
        }
    }
}
