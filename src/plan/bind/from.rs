//! FROM: every component written without `ON` belongs to the first entity of the list
//! (they are read from one archetype row); a `JOIN … ON` opens a new entity; table
//! functions (`series`, `descendants`, `ancestors`) and subqueries are relations of
//! their own.

use std::rc::Rc;

use super::scope::{ColKind, Ctx, Member, NamedColumn, Scope, id_name, no_qualifiers};
use super::{Binder, Result};

use crate::location::Location;
use crate::parse as ast;
use crate::parse::{ExprKind, Ident};
use crate::plan::PlanErrorKind;
use crate::plan::{
    EntityScan, EventScan, JoinKind, MAX_SERIES, OutputColumn, PlanError, QueryPlan, Relation,
    RelationSource, ScanColumn, SetPlan, Traversal, TraversalDirection,
};
use crate::storage::{ComponentDef, FieldId, Value};
use crate::vector::DataType;

impl<'a> Binder<'a> {
    pub(super) fn from(&self, items: &[ast::FromItem]) -> Result<Scope> {
        let mut scope = Scope::default();
        for (i, item) in items.iter().enumerate() {
            self.table_ref(&item.base, JoinKind::Cross, None, None, &mut scope)?;
            for (j, join) in item.joins.iter().enumerate() {
                let kind = if join.left {
                    JoinKind::Left
                } else {
                    JoinKind::Inner
                };
                // Where the join stands, for its ON's errors (`joined_later`).
                let place = JoinPlace {
                    items,
                    item: i,
                    join: j,
                };
                let using = match join.using.is_empty() {
                    true => None,
                    false => Some(using_condition(&join.using, &join.table, &scope)?),
                };
                let on = using.as_ref().or(join.on.as_ref());
                self.table_ref(&join.table, kind, on, Some(place), &mut scope)?;
            }
        }
        Ok(scope)
    }

    pub(super) fn push_relation(
        &self,
        scope: &mut Scope,
        source: RelationSource,
        join: JoinKind,
        label: String,
    ) -> usize {
        let join = if scope.relations.is_empty() {
            // Most selects read one relation, of about 500 bytes: room for one, not the
            // four a first push makes (a large allocation, which costs glibc more).
            scope.relations.reserve_exact(1);
            JoinKind::Cross
        } else {
            join
        };
        scope.relations.push(Relation {
            source,
            join,
            on: None,
            filter: None,
            label,
        });
        let r = scope.relations.len() - 1;
        if join == JoinKind::Left {
            scope.nullable.push(r);
        }
        r
    }

    /// A relation's label, which only EXPLAIN prints: written only for a plan to explain.
    pub(super) fn label(&self, text: impl FnOnce() -> String) -> String {
        if self.explaining { text() } else { String::new() }
    }

    pub(super) fn new_entity_relation(&self, scope: &mut Scope, join: JoinKind, label: String) -> usize {
        let scan = EntityScan {
            required: Default::default(),
            optional: Default::default(),
            excluded: Default::default(),
            sparse: Vec::new(),
            reads_sparse: false,
            only: None,
            ids: None,
            index: None,
            index_notes: Vec::new(),
            skips: Vec::new(),
            changes: None,
            columns: Default::default(),
        };
        let r = self.push_relation(scope, RelationSource::Entities(scan), join, label);
        scope.columns.push(NamedColumn {
            relation: r,
            qualifiers: no_qualifiers(),
            name: id_name(),
            kind: ColKind::Scan(ScanColumn::Id),
            ty: DataType::Entity,
            qualified: false,
            in_star: true,
        });
        r
    }

    #[recursive::recursive]
    pub(super) fn table_ref(
        &self,
        t: &ast::TableRef,
        join: JoinKind,
        on: Option<&ast::Expr>,
        place: Option<JoinPlace<'_>>,
        scope: &mut Scope,
    ) -> Result<()> {
        let relation = match t {
            ast::TableRef::Named { name, alias } if self.work_table(name).is_some() => {
                if on.is_none() && join == JoinKind::Left {
                    return Err(PlanError::invalid(name.at, "LEFT JOIN of a WITH query needs ON"));
                }
                let (work, out) = self.work_table(name).unwrap_or_default();
                let source = RelationSource::WorkTable {
                    work,
                    slots: Vec::new(),
                };
                let name = alias.as_ref().unwrap_or(name);
                self.rows_relation(source, &out, Some(name), &[], join, scope)
            }
            ast::TableRef::System { schema, name, alias } => {
                let view = crate::catalog_views::find(Some(&schema.value), &name.value)
                    .ok_or_else(|| unknown_view(schema, name))?;
                self.view_relation(view, alias.as_ref().unwrap_or(name), on, join, scope)?
            }
            ast::TableRef::Named { name, alias } if self.catalog_view(name).is_some() => {
                let view = self.catalog_view(name).ok_or_else(|| unknown_view(name, name))?;
                self.view_relation(view, alias.as_ref().unwrap_or(name), on, join, scope)?
            }
            ast::TableRef::Named { name, alias } if self.event(name).is_some() => {
                if on.is_none() && join == JoinKind::Left {
                    return Err(PlanError::invalid(
                        name.at,
                        "LEFT JOIN of an event needs ON: events join through their fields",
                    ));
                }
                let qualifier = alias.clone().unwrap_or_else(|| name.clone());
                self.event_relation(name, qualifier, join, scope)?
            }
            ast::TableRef::Named { name, alias } => {
                // Without ON, a component joins the first entity; with ON, it is another.
                let r = match (on, scope.first_entity) {
                    (None, Some(r)) => r,
                    _ => {
                        let r = self.new_entity_relation(scope, join, self.label(|| t.to_string()));
                        if on.is_none() {
                            scope.first_entity = Some(r);
                        }
                        r
                    }
                };
                let qualifier = alias.clone().unwrap_or_else(|| name.clone());
                self.check_qualifier(&qualifier, Some(r), scope)?;
                let optional = join == JoinKind::Left && on.is_none();
                self.named_table(name, qualifier, r, optional, scope)?;
                r
            }
            ast::TableRef::Function {
                name,
                args,
                alias,
                columns,
            } if ["descendants", "ancestors"]
                .iter()
                .any(|f| name.value.eq_ignore_ascii_case(f)) =>
            {
                if on.is_none() && join == JoinKind::Left {
                    return Err(PlanError::invalid(
                        name.at,
                        "LEFT JOIN of a table function needs ON",
                    ));
                }
                let fname = name.value.to_ascii_lowercase();
                self.traversal(scope, t, join, &fname, args, alias.as_ref(), columns, name.at)?
            }
            ast::TableRef::Function {
                name, args, alias, ..
            } if crate::catalog_views::table_function(&name.value).is_some() => {
                if !args.is_empty() {
                    return Err(PlanError::invalid(
                        name.at,
                        format!("{}() takes no arguments", name.value),
                    ));
                }
                let view = crate::catalog_views::table_function(&name.value)
                    .ok_or_else(|| unknown_view(name, name))?;
                self.view_relation(view, alias.as_ref().unwrap_or(name), on, join, scope)?
            }
            ast::TableRef::Function {
                name,
                args,
                alias,
                columns,
            } if name.value.eq_ignore_ascii_case("removed") => {
                if on.is_none() && join == JoinKind::Left {
                    return Err(PlanError::invalid(
                        name.at,
                        "LEFT JOIN of a table function needs ON",
                    ));
                }
                self.removed_relation(scope, t, join, args, alias.as_ref(), columns, name.at)?
            }
            ast::TableRef::Function {
                name,
                args,
                alias,
                columns,
            } => match self.function_relation(
                t,
                name,
                args,
                alias.as_ref(),
                columns,
                join,
                on,
                place,
                scope,
            )? {
                Some(r) => r,
                // A scalar function, bound as the subquery of one row it is.
                None => return Ok(()),
            },
            ast::TableRef::Subquery {
                query,
                alias,
                columns,
            } => {
                if on.is_none() && join == JoinKind::Left {
                    return Err(PlanError::invalid(query.at, "LEFT JOIN of a subquery needs ON"));
                }
                let plan = self.query(query)?;
                if !columns.is_empty() && columns.len() != plan.columns.len() {
                    return Err(PlanError::invalid(
                        query.at,
                        format!(
                            "the subquery has {} columns, but {} names were given",
                            plan.columns.len(),
                            columns.len()
                        ),
                    ));
                }
                let out = plan.columns.to_vec();
                let source = RelationSource::Query {
                    plan: Box::new(plan),
                    slots: Vec::new(),
                };
                self.rows_relation(source, &out, alias.as_ref(), columns, join, scope)
            }
            ast::TableRef::Recursive { cte, alias } => {
                if on.is_none() && join == JoinKind::Left {
                    return Err(PlanError::invalid(
                        cte.name.at,
                        "LEFT JOIN of a WITH query needs ON",
                    ));
                }
                let plan = self.recursive(cte)?;
                let out = plan.columns.to_vec();
                let source = RelationSource::Query {
                    plan: Box::new(plan),
                    slots: Vec::new(),
                };
                let name = alias.as_ref().unwrap_or(&cte.name);
                self.rows_relation(source, &out, Some(name), &[], join, scope)
            }
        };
        if let Some(on) = on {
            let b = self
                .expr(on, scope, &mut Ctx::Row("ON"))
                .map_err(|e| match place {
                    Some(place) => joined_later(e, &place.later()),
                    None => e,
                })?;
            let b = self.expect_bool(b, "ON")?;
            scope.relations[relation].on = Some(b);
        }
        Ok(())
    }

    /// A table function in FROM (range, generate_series), or a scalar function read as
    /// one row of one column (then bound whole as that subquery: `None`). Apart from
    /// `table_ref`, so that its locals (a whole select written out) do not widen the
    /// frame every relation of every text takes.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn function_relation(
        &self,
        t: &ast::TableRef,
        name: &Ident,
        args: &[ast::Expr],
        alias: Option<&Ident>,
        columns: &[Ident],
        join: JoinKind,
        on: Option<&ast::Expr>,
        place: Option<JoinPlace<'_>>,
        scope: &mut Scope,
    ) -> Result<Option<usize>> {
        if on.is_none() && join == JoinKind::Left {
            return Err(PlanError::invalid(
                name.at,
                "LEFT JOIN of a table function needs ON",
            ));
        }
        let fname = name.value.to_ascii_lowercase();
        // A scalar function in FROM is one row of one column, named by its alias
        // (`FROM string_to_array(s, ',') AS parts`), as in PostgreSQL.
        if !matches!(fname.as_str(), "range" | "generate_series")
            && columns.len() <= 1
            && crate::func::lookup(&fname).is_some()
        {
            let at = name.at;
            let column = columns.first().or(alias).unwrap_or(name).clone();
            let call = ast::Expr::new(
                ExprKind::Function {
                    name: name.clone(),
                    args: args.to_vec(),
                    star: false,
                    distinct: false,
                },
                at,
            );
            let select = ast::Select {
                distinct: false,
                items: smallvec::smallvec![ast::SelectItem::Expr {
                    expr: call,
                    alias: Some(column),
                }],
                from: ast::FromList::new(),
                filter: None,
                group_by: Vec::new(),
                having: None,
                windows: Vec::new(),
                at,
            };
            let query = ast::Query {
                body: ast::SetExpr::Select(Box::new(select)),
                order_by: Vec::new(),
                limit: None,
                offset: None,
                at,
            };
            let subquery = ast::TableRef::Subquery {
                query: Box::new(query),
                alias: Some(alias.unwrap_or(name).clone()),
                columns: Vec::new(),
            };
            return self.table_ref(&subquery, join, on, place, scope).map(|()| None);
        }
        if !matches!(fname.as_str(), "range" | "generate_series") {
            return Err(PlanError::invalid(
                name.at,
                format!(
                    "unknown table function {}: the table functions are range(n), range(a, b), generate_series(a, b), removed(C), descendants(…) and ancestors(…)",
                    name.value
                ),
            ));
        }
        let mut ints = Vec::new();
        for a in args {
            let b = self.expr(
                a,
                &mut Scope::default(),
                &mut Ctx::Row("a table function's arguments"),
            )?;
            self.uses_value(&b);
            self.hint(&b, DataType::Int);
            match b.as_const().cloned().or_else(|| super::fold::constant(&b)) {
                Some(Value::Int(i)) => ints.push(i),
                _ => {
                    return Err(PlanError::type_mismatch(
                        a.at,
                        format!("{fname} takes constant INT arguments"),
                    ));
                }
            }
        }
        let (start, end) = match (fname.as_str(), ints.as_slice()) {
            ("range", [n]) => (0, n.saturating_sub(1)),
            ("range", [a, b]) => (*a, b.saturating_sub(1)),
            ("generate_series", [a, b]) => (*a, *b),
            ("range" | "generate_series", _) => {
                return Err(PlanError::invalid(
                    name.at,
                    format!(
                        "wrong number of arguments to {fname}: range(n), range(a, b) or generate_series(a, b)"
                    ),
                ));
            }
            _ => {
                let hint = " (table functions: range(n), generate_series(a, b), \
                            descendants(root, C.field), ancestors(e, C.field), removed(C))";
                let kind = PlanErrorKind::UnknownFunction {
                    name: name.value.to_string(),
                    hint: hint.into(),
                };
                return Err(PlanError::new(name.at, kind));
            }
        };
        let rows = if end < start {
            0
        } else {
            end.saturating_sub(start).saturating_add(1)
        };
        if rows > MAX_SERIES {
            return Err(PlanError::invalid(
                name.at,
                format!("{fname} of {rows} rows is too long (at most {MAX_SERIES})"),
            ));
        }
        if columns.len() > 1 {
            return Err(PlanError::invalid(
                name.at,
                format!("{fname} has one column, but {} names were given", columns.len()),
            ));
        }
        let col_name = columns
            .first()
            .map_or("value".to_owned(), |c| c.value.to_string());
        let r = self.push_relation(
            scope,
            RelationSource::Series { start, end, slot: 0 },
            join,
            self.label(|| t.to_string()),
        );
        let slot = scope.new_slot(r, DataType::Int);
        if let RelationSource::Series { slot: s, .. } = &mut scope.relations[r].source {
            *s = slot;
        }
        let qualifiers = Rc::new(alias.into_iter().cloned().collect::<smallvec::SmallVec<_>>());
        // Without column names, the alias names the column (as in PostgreSQL:
        // `FROM generate_series(1, 3) AS i … WHERE i > 1`), and `value` still does.
        let named_by_alias = alias.filter(|_| columns.is_empty());
        if let Some(a) = named_by_alias {
            scope.columns.push(NamedColumn {
                relation: r,
                qualifiers: qualifiers.clone(),
                name: a.value.clone().into(),
                kind: ColKind::Fixed(slot),
                ty: DataType::Int,
                qualified: false,
                in_star: true,
            });
        }
        scope.columns.push(NamedColumn {
            relation: r,
            qualifiers,
            name: col_name.into(),
            kind: ColKind::Fixed(slot),
            ty: DataType::Int,
            qualified: false,
            in_star: named_by_alias.is_none(),
        });
        Ok(Some(r))
    }

    /// An event type in FROM: a relation of its rows, one column per field, joined to
    /// the others through its fields (never "the same entity": events have no id).
    fn event_relation(
        &self,
        name: &Ident,
        qualifier: Ident,
        join: JoinKind,
        scope: &mut Scope,
    ) -> Result<usize> {
        let Some(event) = self.event(name) else {
            return Err(PlanError::invalid(
                name.at,
                format!("unknown event {}", name.value),
            ));
        };
        self.check_qualifier(&qualifier, None, scope)?;
        let r = self.push_relation(
            scope,
            RelationSource::Events(EventScan {
                event: event.id(),
                columns: Vec::new(),
            }),
            join,
            self.label(|| qualifier.value.to_string()),
        );
        let mut columns = Vec::new();
        let qualifiers = Rc::new(smallvec::smallvec![qualifier.clone()]);
        for (i, f) in event.fields().iter().enumerate() {
            let ty = DataType::from(f.ty());
            let slot = scope.new_slot(r, ty);
            columns.push((slot, i));
            scope.columns.push(NamedColumn {
                relation: r,
                qualifiers: qualifiers.clone(),
                name: f.shared_name(),
                kind: ColKind::Fixed(slot),
                ty,
                qualified: true,
                in_star: true,
            });
        }
        if let RelationSource::Events(scan) = &mut scope.relations[r].source {
            scan.columns = columns;
        }
        Ok(r)
    }

    /// `removed(C)` in FROM: a relation of one column, `id`, of the ids that lost
    /// component C since the reader's last run.
    #[allow(clippy::too_many_arguments)]
    fn removed_relation(
        &self,
        scope: &mut Scope,
        t: &ast::TableRef,
        join: JoinKind,
        args: &[ast::Expr],
        alias: Option<&Ident>,
        columns: &[Ident],
        at: Location,
    ) -> Result<usize> {
        let name = match args {
            [
                ast::Expr {
                    kind: ast::ExprKind::Column(parts),
                    ..
                },
            ] => match parts.as_slice() {
                [c] => c,
                [c, _] => {
                    return Err(PlanError::invalid(
                        at,
                        format!(
                            "removed() takes a component, not a field: removed({}) (a component is removed whole)",
                            c.value
                        ),
                    ));
                }
                _ => {
                    return Err(PlanError::invalid(
                        at,
                        "removed() takes a component name: removed(Health)",
                    ));
                }
            },
            _ => {
                return Err(PlanError::invalid(
                    at,
                    "removed() takes a component name: removed(Health)",
                ));
            }
        };
        let component = self.component(name)?.id();
        if columns.len() > 1 {
            return Err(PlanError::invalid(
                at,
                format!("removed() has one column, but {} names were given", columns.len()),
            ));
        }
        let r = self.push_relation(
            scope,
            RelationSource::Removed { component, slot: 0 },
            join,
            self.label(|| t.to_string()),
        );
        let slot = scope.new_slot(r, DataType::Entity);
        if let RelationSource::Removed { slot: s, .. } = &mut scope.relations[r].source {
            *s = slot;
        }
        let name = columns.first().map_or("id".to_owned(), |c| c.value.to_string());
        scope.columns.push(NamedColumn {
            relation: r,
            qualifiers: Rc::new(alias.into_iter().cloned().collect()),
            qualified: false,
            name: name.into(),
            kind: ColKind::Fixed(slot),
            ty: DataType::Entity,
            in_star: true,
        });
        Ok(r)
    }

    /// Refuses a qualifier already used in FROM (by another relation than `r`).
    fn check_qualifier(&self, qualifier: &Ident, r: Option<usize>, scope: &Scope) -> Result<()> {
        let taken = scope
            .members
            .iter()
            .any(|m| m.qualifier.value.eq_ignore_ascii_case(&qualifier.value))
            || scope.columns.iter().any(|c| {
                Some(c.relation) != r
                    && c.qualifiers
                        .iter()
                        .any(|q| q.value.eq_ignore_ascii_case(&qualifier.value))
            });
        if taken {
            return Err(PlanError::invalid(
                qualifier.at,
                format!(
                    "{} appears twice in FROM; give each an alias (… AS a, … AS b) and join with ON",
                    qualifier.value
                ),
            ));
        }
        Ok(())
    }

    /// A name in FROM: `entities`, an archetype table `arch_…`, or a component.
    pub(super) fn named_table(
        &self,
        name: &Ident,
        qualifier: Ident,
        r: usize,
        optional: bool,
        scope: &mut Scope,
    ) -> Result<()> {
        if name.matches("entities") && !name.quoted {
            if let Some(c) = scope
                .columns
                .iter_mut()
                .find(|c| c.relation == r && &*c.name == "id")
            {
                Rc::make_mut(&mut c.qualifiers).push(qualifier.clone());
            }
            scope.columns.push(NamedColumn {
                relation: r,
                qualifiers: Rc::new(smallvec::smallvec![qualifier]),
                name: "archetype".into(),
                kind: ColKind::Scan(ScanColumn::Archetype),
                ty: DataType::Text,
                qualified: false,
                in_star: true,
            });
            return Ok(());
        }
        if let Some(table) = self.world.table_by_name(&name.value) {
            let comps = table.components().to_vec();
            let id = table.id();
            if let Some(scan) = scope.scan_mut(r) {
                if scan.only.is_some_and(|o| o != id) {
                    return Err(PlanError::invalid(
                        name.at,
                        "two archetype tables named for one entity",
                    ));
                }
                scan.only = Some(id);
            }
            for c in comps {
                let def = self
                    .world
                    .component(c)
                    .map_err(|e| PlanError::invalid(name.at, e.to_string()))?;
                let q = Ident::new(def.name(), name.at);
                if scope.members.iter().any(|m| m.relation == r && m.component == c) {
                    continue;
                }
                self.add_member(def, q, r, false, scope);
            }
            return Ok(());
        }
        if name.value.starts_with("arch_") && crate::storage::TableName::parse(&name.value).is_some() {
            return Err(PlanError::new(
                name.at,
                PlanErrorKind::UnknownComponent {
                    name: name.value.to_string(),
                    hint: " (no archetype table has this name: SHOW ARCHETYPES lists them)".into(),
                },
            ));
        }
        let def = self.component(name)?;
        if scope
            .members
            .iter()
            .any(|m| m.relation == r && m.component == def.id())
        {
            return Err(PlanError::invalid(
                name.at,
                format!(
                    "{} is named twice for one entity; use JOIN … ON for a second entity",
                    def.name()
                ),
            ));
        }
        self.add_member(def, qualifier, r, optional, scope);
        Ok(())
    }

    pub(super) fn add_member(
        &self,
        def: &ComponentDef,
        qualifier: Ident,
        r: usize,
        optional: bool,
        scope: &mut Scope,
    ) {
        if let Some(scan) = scope.scan_mut(r) {
            if optional {
                scan.optional.push(def.id())
            } else {
                scan.required.push(def.id())
            }
        }
        let qualifiers = Rc::new(smallvec::smallvec![qualifier.clone()]);
        if let Some(c) = scope
            .columns
            .iter_mut()
            .find(|c| c.relation == r && &*c.name == "id")
        {
            if c.qualifiers.is_empty() {
                // The relation's first member: its id shares the members' list.
                c.qualifiers = qualifiers.clone();
            } else {
                Rc::make_mut(&mut c.qualifiers).push(qualifier.clone());
            }
        }
        for (i, f) in def.fields().iter().enumerate() {
            scope.columns.push(NamedColumn {
                relation: r,
                qualifiers: qualifiers.clone(),
                name: f.shared_name(),
                kind: ColKind::Scan(ScanColumn::Field(FieldId::new(def.id(), i as u16))),
                ty: DataType::from(f.ty()),
                qualified: true,
                in_star: true,
            });
        }
        scope.members.push(Member {
            relation: r,
            component: def.id(),
            qualifier,
        });
    }

    /// `descendants(root, C.field)` / `ancestors(e, C.field)` in FROM: a relation of `id`
    /// and `depth`. The start is an expression of no row (a constant, a parameter, a
    /// subquery); the field an ENTITY field.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn traversal(
        &self,
        scope: &mut Scope,
        t: &ast::TableRef,
        join: JoinKind,
        fname: &str,
        args: &[ast::Expr],
        alias: Option<&Ident>,
        columns: &[Ident],
        at: Location,
    ) -> Result<usize> {
        let usage = format!("{fname} takes an entity and an ENTITY field: {fname}(1, ChildOf.parent)");
        let [start, field] = args else {
            return Err(PlanError::invalid(at, usage));
        };
        let ExprKind::Column(parts) = &field.kind else {
            return Err(PlanError::invalid(field.at, usage));
        };
        let [component, field_name] = parts.as_slice() else {
            return Err(PlanError::invalid(field.at, usage));
        };
        let def = self.component(component)?;
        let index = self.field_index(def, field_name)?;
        let Some(spec) = def.fields().get(index) else {
            return Err(PlanError::invalid(field.at, usage));
        };
        if spec.ty() != crate::storage::FieldType::Entity {
            return Err(PlanError::type_mismatch(
                field_name.at,
                format!(
                    "{fname} follows an ENTITY field; {}.{} is {}",
                    def.name(),
                    spec.name(),
                    spec.ty()
                ),
            ));
        }
        let field = FieldId::new(def.id(), index as u16);
        let b = self.expr(
            start,
            &mut Scope::default(),
            &mut Ctx::Row("a table function's arguments"),
        )?;
        let b = self.cast(b, DataType::Entity)?;
        self.uses_value(&b);
        // Bound in a scope of its own, the start names no column of the query: a
        // constant, or an expression (a subquery) evaluated once as the statement runs.
        let (start, start_expr) = match b.as_const() {
            Some(Value::Entity(e)) => (Some(*e), None),
            Some(_) => (None, None),
            None => (None, Some(Box::new(b))),
        };
        if columns.len() > 2 {
            return Err(PlanError::invalid(
                at,
                format!(
                    "{fname} has two columns (id, depth), but {} names were given",
                    columns.len()
                ),
            ));
        }
        let direction = if fname == "descendants" {
            TraversalDirection::Descendants
        } else {
            TraversalDirection::Ancestors
        };
        let r = self.push_relation(
            scope,
            RelationSource::Traversal(Traversal {
                direction,
                start,
                start_expr,
                field,
                id_slot: 0,
                depth_slot: 0,
            }),
            join,
            self.label(|| t.to_string()),
        );
        let id_slot = scope.new_slot(r, DataType::Entity);
        let depth_slot = scope.new_slot(r, DataType::Int);
        if let RelationSource::Traversal(w) = &mut scope.relations[r].source {
            w.id_slot = id_slot;
            w.depth_slot = depth_slot;
        }
        let qualifiers = Rc::new(alias.iter().cloned().cloned().collect::<smallvec::SmallVec<_>>());
        for (i, (default, slot, ty)) in [
            ("id", id_slot, DataType::Entity),
            ("depth", depth_slot, DataType::Int),
        ]
        .into_iter()
        .enumerate()
        {
            let name = columns.get(i).map_or(default.to_owned(), |c| c.value.to_string());
            scope.columns.push(NamedColumn {
                relation: r,
                qualifiers: qualifiers.clone(),
                qualified: false,
                name: name.into(),
                kind: ColKind::Fixed(slot),
                ty,
                in_star: true,
            });
        }
        Ok(r)
    }
}

/// What a result's columns are called outside it (in the query around a subquery, in a
/// file COPY writes, by a PostgreSQL client): each its name, except that a column written
/// with its qualifier (`B.w`) is called by its own name (`w`), as in SQL, unless two
/// would then be the same (`A.k` and `B.k` keep their qualifiers).
pub(super) fn result_names(columns: &[crate::plan::OutputColumn]) -> Vec<String> {
    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    bare_names(&names)
}

/// Result headings as a file's header or a PostgreSQL client names the columns: a
/// field's heading without its component (`hp` for `Unit.hp`) unless another column has
/// the same bare name; any other heading (an alias, an expression) as it is.
pub(crate) fn bare_names(headings: &[&str]) -> Vec<String> {
    let bare: Vec<String> = headings.iter().map(|h| column_name(h)).collect();
    headings
        .iter()
        .zip(&bare)
        .map(|(h, b)| {
            if bare.iter().filter(|x| *x == b).count() > 1 {
                (*h).to_owned()
            } else {
                b.clone()
            }
        })
        .collect()
}

/// A heading's bare name: a field without its component (`Unit.hp`: `hp`); any other
/// heading (an alias, an expression) as it is.
fn column_name(name: &str) -> String {
    let word = |s: &str| {
        s.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    match name.split_once('.') {
        Some((q, n)) if word(q) && word(n) => n.to_owned(),
        _ => name.to_owned(),
    }
}

/// Where a join stands in FROM: the `join`th join of its `item`th item.
#[derive(Clone, Copy)]
pub(super) struct JoinPlace<'x> {
    items: &'x [ast::FromItem],
    item: usize,
    join: usize,
}

impl JoinPlace<'_> {
    /// The relations FROM joins after this join, for an error of its ON.
    fn later(self) -> Vec<Later> {
        later_relations(self.items, self.item, self.join)
    }
}

/// A relation FROM joins after some join: the name its columns are qualified by, and
/// whether it has an ON of its own (`joined_later`'s advice).
struct Later {
    name: Ident,
    has_on: bool,
}

/// The relations FROM joins after the `j`th join of its `i`th item, each with its name
/// (its alias; a component's own name without one) and whether it has an ON.
fn later_relations(items: &[ast::FromItem], i: usize, j: usize) -> Vec<Later> {
    let name_of = |t: &ast::TableRef| match t {
        ast::TableRef::Named { name, alias } | ast::TableRef::System { name, alias, .. } => {
            Some(alias.as_ref().unwrap_or(name).clone())
        }
        // Functions and subqueries are named by their alias only.
        ast::TableRef::Function { alias, .. } | ast::TableRef::Subquery { alias, .. } => alias.clone(),
        ast::TableRef::Recursive { cte, alias } => Some(alias.as_ref().unwrap_or(&cte.name).clone()),
    };
    let joins = |item: &'_ ast::FromItem, from: usize| -> Vec<Later> {
        item.joins[from..]
            .iter()
            .filter_map(|join| {
                name_of(&join.table).map(|name| Later {
                    name,
                    has_on: join.on.is_some(),
                })
            })
            .collect()
    };
    let mut later = joins(&items[i], j + 1);
    for item in &items[i + 1..] {
        later.extend(name_of(&item.base).map(|name| Later { name, has_on: false }));
        later.extend(joins(item, 0));
    }
    later
}

/// An ON condition's error for `X.field` where `X` names no relation joined so far but
/// one FROM joins after that ON (`later`): said so, with where the condition can go.
fn joined_later(e: PlanError, later: &[Later]) -> PlanError {
    let PlanError {
        kind: PlanErrorKind::UnknownColumn { name, hint },
        at,
    } = e
    else {
        return e;
    };
    // Only an error about the qualifier (`scope.rs`), not about a column of a known one.
    let about_qualifier =
        hint.starts_with(" (no component, table or alias named ") || hint.starts_with(" (component ");
    let found = name
        .split_once('.')
        .filter(|_| about_qualifier)
        .and_then(|(q, _)| later.iter().find(|l| l.name.matches(q)).map(|l| (q, l)));
    let hint = match found {
        Some((q, l)) => {
            let instead = if l.has_on {
                format!("to WHERE or to the ON of {q}")
            } else {
                "to WHERE".to_owned()
            };
            format!(
                " ({q} is joined after this ON, which sees only what is joined before it: move the condition {instead})"
            )
        }
        None => hint,
    };
    PlanError::new(at, PlanErrorKind::UnknownColumn { name, hint })
}

impl Binder<'_> {
    /// A relation of rows computed apart (a subquery, a WITH query, a recursive one's last
    /// round): `source`, whose columns `out` land in slots of their own, named `columns`
    /// where given (else as `out` names them) under `qualifier`.
    fn rows_relation(
        &self,
        source: RelationSource,
        out: &[OutputColumn],
        qualifier: Option<&Ident>,
        columns: &[Ident],
        join: JoinKind,
        scope: &mut Scope,
    ) -> usize {
        let label = self.label(|| qualifier.map_or_else(String::new, |a| a.value.to_string()));
        let r = self.push_relation(scope, source, join, label);
        let mut slots = Vec::new();
        let names = result_names(out);
        let qualifiers = Rc::new(qualifier.into_iter().cloned().collect::<smallvec::SmallVec<_>>());
        for (i, c) in out.iter().enumerate() {
            let slot = scope.new_slot(r, c.ty);
            slots.push(slot);
            let name = columns
                .get(i)
                .map_or_else(|| names[i].clone(), |n| n.value.to_string());
            scope.columns.push(NamedColumn {
                relation: r,
                qualifiers: qualifiers.clone(),
                qualified: false,
                name: name.into(),
                kind: ColKind::Fixed(slot),
                ty: c.ty,
                in_star: true,
            });
        }
        if let RelationSource::Query { slots: s, .. }
        | RelationSource::WorkTable { slots: s, .. }
        | RelationSource::Catalog { slots: s, .. } = &mut scope.relations[r].source
        {
            *s = slots;
        }
        r
    }

    /// The view of `pg_catalog` that `name`, written without a schema, names: none where
    /// a component or an event has that name.
    fn catalog_view(&self, name: &Ident) -> Option<&'static crate::catalog_views::View> {
        if !name.value.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("pg_"))
            || self.world.component_by_name(&name.value).is_ok()
            || self.world.event_by_name(&name.value).is_ok()
        {
            return None;
        }
        crate::catalog_views::find(None, &name.value)
    }

    /// A relation reading a catalog view's rows, made from the world's catalog now.
    fn view_relation(
        &self,
        view: &'static crate::catalog_views::View,
        qualifier: &Ident,
        on: Option<&ast::Expr>,
        join: JoinKind,
        scope: &mut Scope,
    ) -> Result<usize> {
        if on.is_none() && join == JoinKind::Left {
            return Err(PlanError::invalid(
                qualifier.at,
                "LEFT JOIN of a catalog view needs ON",
            ));
        }
        let out: Vec<OutputColumn> = view
            .columns()
            .iter()
            .map(|c| OutputColumn {
                name: c.name.to_owned(),
                ty: c.ty,
            })
            .collect();
        let source = RelationSource::Catalog {
            view,
            rows: std::sync::Arc::new(view.rows(self.world)),
            slots: Vec::new(),
        };
        Ok(self.rows_relation(source, &out, Some(qualifier), &[], join, scope))
    }

    /// The recursive WITH query `name` names, when its recursive part is being bound:
    /// its number and columns.
    fn work_table(&self, name: &Ident) -> Option<(usize, Vec<OutputColumn>)> {
        let same = |a: &Ident| match a.quoted || name.quoted {
            true => a.value == name.value,
            false => a.value.eq_ignore_ascii_case(&name.value),
        };
        self.work_tables
            .borrow()
            .iter()
            .rev()
            .find(|w| same(&w.name))
            .map(|w| (w.work, w.columns.clone()))
    }

    /// A recursive WITH query as a query: its first part bound, then its recursive part
    /// with the query's name reading the first part's columns; the recursive part's
    /// columns must have the first part's types (or be NULL).
    fn recursive(&self, cte: &ast::RecursiveCte) -> Result<QueryPlan> {
        let (anchor, first) = self.set_expr(&cte.anchor)?;
        if !cte.columns.is_empty() && cte.columns.len() != first.len() {
            return Err(PlanError::invalid(
                cte.name.at,
                format!(
                    "{} has {} columns, but {} names were given",
                    cte.name.value,
                    first.len(),
                    cte.columns.len()
                ),
            ));
        }
        let columns: Vec<OutputColumn> = first
            .iter()
            .enumerate()
            .map(|(i, c)| OutputColumn {
                name: cte
                    .columns
                    .get(i)
                    .map_or_else(|| c.name.clone(), |n| n.value.to_string()),
                ty: c.ty,
            })
            .collect();
        let work = self.next_work.get();
        self.next_work.set(work + 1);
        self.work_tables.borrow_mut().push(super::WorkTable {
            name: cte.name.clone(),
            work,
            columns: columns.clone(),
        });
        let step = self.set_expr(&cte.step);
        self.work_tables.borrow_mut().pop();
        let (step, then) = step?;
        if let SetPlan::Select(s) = &step
            && (matches!(s.output, crate::plan::Output::Aggregate { .. }) || s.window.is_some())
        {
            return Err(PlanError::invalid(
                cte.name.at,
                format!(
                    "the recursive part of {} may not aggregate nor call window functions (it runs once per round, over that round's rows), as in PostgreSQL and SQLite",
                    cte.name.value
                ),
            ));
        }
        if then.len() != columns.len() {
            return Err(PlanError::invalid(
                cte.name.at,
                format!(
                    "the recursive part of {} has {} columns, the first part {}",
                    cte.name.value,
                    then.len(),
                    columns.len()
                ),
            ));
        }
        // A recursive part's column widens into the first part's type as a UNION's would
        // (INT into FLOAT, an id into INT); the rounds keep the first part's types.
        for (k, (c, t)) in columns.iter().zip(&then).enumerate() {
            if crate::vector::unify_types(c.ty, t.ty) != Some(c.ty) {
                return Err(PlanError::type_mismatch(
                    cte.name.at,
                    format!(
                        "column {} of {} is {} in the first part but {} in the recursive part: CAST the first part's (the rounds keep its types)",
                        k + 1,
                        cte.name.value,
                        c.ty,
                        t.ty
                    ),
                ));
            }
        }
        Ok(QueryPlan {
            body: SetPlan::Recursive {
                anchor: Box::new(anchor),
                step: Box::new(step),
                all: cte.all,
                work,
                at: cte.name.at,
            },
            order_by: Vec::new(),
            limit: None,
            offset: 0,
            columns: columns.into(),
            point: std::sync::OnceLock::new(),
        })
    }
}

/// The error for a catalog view that is not there.
fn unknown_view(schema: &Ident, name: &Ident) -> PlanError {
    let names: Vec<String> = crate::catalog_views::all()
        .iter()
        .map(|v| format!("{}.{}", v.schema.name(), v.name))
        .collect();
    PlanError::invalid(
        name.at,
        format!(
            "unknown view {}.{} (the catalog's views: {})",
            schema.value,
            name.value,
            names.join(", ")
        ),
    )
}

/// `JOIN table USING (a, b)` as the condition it stands for: each column of the relation
/// furthest left in `scope` that has one of that name (so a chain of USING joins on the
/// first, which LEFT JOIN keeps) equal to the joined table's.
fn using_condition(names: &[Ident], table: &ast::TableRef, scope: &Scope) -> Result<ast::Expr> {
    let right = match table {
        ast::TableRef::Named { name, alias } | ast::TableRef::System { name, alias, .. } => {
            alias.as_ref().unwrap_or(name).clone()
        }
        ast::TableRef::Function { alias: Some(a), .. } | ast::TableRef::Subquery { alias: Some(a), .. } => {
            a.clone()
        }
        ast::TableRef::Recursive { cte, alias } => alias.as_ref().unwrap_or(&cte.name).clone(),
        ast::TableRef::Function { name, .. } => {
            return Err(PlanError::invalid(
                name.at,
                "JOIN … USING needs an alias for the table function",
            ));
        }
        ast::TableRef::Subquery { query, .. } => {
            return Err(PlanError::invalid(
                query.at,
                "JOIN … USING needs an alias for the subquery",
            ));
        }
    };
    let mut condition: Option<ast::Expr> = None;
    for name in names {
        let left = scope
            .columns
            .iter()
            .find(|c| name.matches(&c.name) && !c.qualifiers.is_empty())
            .and_then(|c| c.qualifiers.first().cloned())
            .ok_or_else(|| {
                PlanError::new(
                    name.at,
                    PlanErrorKind::UnknownColumn {
                        name: name.value.to_string(),
                        hint: " (USING names a column of a relation before the join and of the one joined)"
                            .into(),
                    },
                )
            })?;
        let side = |relation: &Ident| {
            ast::Expr::new(
                ExprKind::Column(smallvec::smallvec![relation.clone(), name.clone()]),
                name.at,
            )
        };
        let equal = ast::Expr::new(
            ExprKind::binary(side(&left), ast::BinaryOp::Eq, side(&right)),
            name.at,
        );
        condition = Some(match condition {
            None => equal,
            Some(c) => ast::Expr::new(ExprKind::binary(c, ast::BinaryOp::And, equal), name.at),
        });
    }
    condition.ok_or_else(|| PlanError::invalid(right.at, "USING names no column"))
}
