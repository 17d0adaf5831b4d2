//! The binder: resolves names against the catalog and the FROM list, checks types, makes
//! casts explicit and turns each statement into a `Plan`.
//!
//! FROM semantics: every component written without `ON` (after a comma, or in a `JOIN`/
//! `LEFT JOIN` without `ON`) belongs to the first entity of the FROM list — they are read
//! from one archetype row. A `JOIN … ON` opens a new entity (an ordinary join). Table
//! functions and subqueries are relations of their own.

use std::cell::Cell;

use hashbrown::HashMap;

use super::error::PlanError;
use super::expr::{ArithOp, BExpr, BKind};
use super::types::{comparison_type, numeric_common, operand};
use super::*;
use crate::func::{self, Convert, Mismatch};
use crate::index::Indexes;
use crate::parse::{self as ast, BinaryOp, ExprKind, Ident, Literal, Location, StatementKind, UnaryOp};
use crate::storage::{ComponentDef, Value, World};
use crate::vector::{
    CmpOp, DataType, assignable, cast_value, compares_unconverted, comparison_unify, unify_types,
};

type Result<T, E = PlanError> = std::result::Result<T, E>;

/// Values for a statement's parameters: `?N` takes `positional[N-1]`, `:name`/`$name` the
/// named value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParamValues {
    pub positional: Vec<Value>,
    pub named: Vec<(String, Value)>,
    /// Missing parameters read as NULL instead of failing (to learn a result's columns
    /// before any values are given).
    pub lenient: bool,
}

impl ParamValues {
    /// The value given for `p`: NULL when missing and `lenient`, `None` when missing.
    pub fn get(&self, p: &ast::Param) -> Option<&Value> {
        match p {
            ast::Param::Position(n) => n.checked_sub(1).and_then(|i| self.positional.get(i)),
            ast::Param::Named { name, .. } => self.named.iter().find(|(k, _)| k == name).map(|(_, v)| v),
        }
        .or(if self.lenient { Some(&Value::Null) } else { None })
    }
}

/// Binds one statement against the catalog of `world`.
pub fn bind(statement: &ast::Statement, world: &World, params: &ParamValues) -> Result<Plan> {
    bind_reusable(statement, world, params).map(|(plan, _)| plan)
}

/// `bind`, and whether the plan may run again with other parameter values of the same
/// types: true unless binding used a parameter's value itself (folded it into a cast, a
/// LIMIT, a series bound, a DEFAULT) or planned a subquery, whose result a plan keeps for
/// the run.
pub fn bind_reusable(
    statement: &ast::Statement,
    world: &World,
    params: &ParamValues,
) -> Result<(Plan, bool)> {
    let binder = Binder {
        world,
        params,
        single_use: Cell::new(false),
    };
    let plan = binder.statement(statement)?;
    Ok((plan, !binder.single_use.get()))
}

struct Binder<'a> {
    world: &'a World,
    params: &'a ParamValues,
    /// Set when the plan is good for this run only: it depends on a parameter's value (not
    /// just its type), or holds a subquery's result.
    single_use: Cell<bool>,
}

// ---- scopes -----------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ColKind {
    Scan(ScanColumn),
    Fixed(usize),
}

/// A name a query may use: `qualifier.name` or `name`.
#[derive(Clone, Debug)]
struct NamedColumn {
    relation: usize,
    qualifiers: Vec<Ident>,
    name: String,
    kind: ColKind,
    ty: DataType,
    /// What the column is called in results and messages.
    display: String,
    in_star: bool,
}

/// A component named for an entity in FROM.
#[derive(Clone, Debug)]
struct Member {
    relation: usize,
    component: crate::storage::ComponentId,
    qualifier: Ident,
}

#[derive(Default)]
struct Scope {
    relations: Vec<Relation>,
    columns: Vec<NamedColumn>,
    members: Vec<Member>,
    slots: HashMap<(usize, ColKind), usize>,
    slot_types: Vec<(usize, DataType)>,
    /// The relation components without ON join.
    first_entity: Option<usize>,
    /// Relations on the nullable side of a LEFT JOIN.
    nullable: Vec<usize>,
    /// The join conditions, once WHERE is bound.
    joins: JoinPlan,
}

impl Scope {
    fn width(&self) -> usize {
        self.slot_types.len()
    }

    fn new_slot(&mut self, relation: usize, ty: DataType) -> usize {
        self.slot_types.push((relation, ty));
        self.slot_types.len() - 1
    }

    /// The slot for a column, allocated on first use so scans read only what is used.
    fn slot(&mut self, relation: usize, kind: ColKind, ty: DataType) -> usize {
        if let Some(&s) = self.slots.get(&(relation, kind)) {
            return s;
        }
        let slot = match kind {
            ColKind::Fixed(s) => s,
            ColKind::Scan(key) => {
                let s = self.new_slot(relation, ty);
                if let RelationSource::Entities(scan) = &mut self.relations[relation].source {
                    scan.columns.push((s, key));
                }
                s
            }
        };
        self.slots.insert((relation, kind), slot);
        slot
    }

    fn scan_mut(&mut self, relation: usize) -> Option<&mut EntityScan> {
        match &mut self.relations[relation].source {
            RelationSource::Entities(scan) => Some(scan),
            _ => None,
        }
    }

    fn relation_of_slot(&self, slot: usize) -> usize {
        self.slot_types[slot].0
    }
}

/// What may be read above GROUP BY: the group keys (as written, and bound: an expression
/// that computes the same as a key reads the key, however its columns are qualified) and
/// the aggregates found so far.
#[derive(Default)]
struct Grouping {
    texts: Vec<String>,
    keys: Vec<BExpr>,
    aggs: Vec<AggCall>,
}

impl Grouping {
    fn key_named(&self, text: &str) -> Option<usize> {
        self.texts.iter().position(|t| t == text)
    }

    fn key_like(&self, e: &BExpr) -> Option<usize> {
        self.keys.iter().position(|k| k.same_as(e))
    }
}

/// Expressions with more nodes than this are not compared with GROUP BY keys as a whole
/// (their parts still are), which bounds the binder's work on deep expressions.
const KEY_MATCH_NODES: usize = 64;

/// True when `e` runs a subquery (which binding would plan) outside nested ones.
fn contains_subquery(e: &ast::Expr) -> bool {
    let mut found = false;
    walk_ast(e, &mut |x| {
        found |= matches!(
            x.kind,
            ExprKind::Subquery(_) | ExprKind::Exists { .. } | ExprKind::InSubquery { .. }
        );
    });
    found
}

fn node_count(e: &ast::Expr) -> usize {
    let mut n = 0;
    walk_ast(e, &mut |_| n += 1);
    n
}

/// Where an expression stands, which decides whether aggregates may appear.
enum Ctx<'g> {
    /// Per row; `what` names the clause for the error when an aggregate appears.
    Row(&'static str),
    /// Above GROUP BY: group keys and aggregates are what may be read.
    Grouped(&'g mut Grouping),
}

const AGGREGATES: [&str; 5] = ["count", "sum", "avg", "min", "max"];

fn is_aggregate_call(name: &Ident, args: &[ast::Expr], star: bool) -> bool {
    let n = name.value.to_ascii_lowercase();
    AGGREGATES.contains(&n.as_str())
        && (star || args.len() == 1 || n == "count")
        && !((n == "min" || n == "max") && args.len() > 1)
}

/// True when `e` calls an aggregate outside any subquery.
fn contains_aggregate(e: &ast::Expr) -> bool {
    let mut found = false;
    walk_ast(e, &mut |x| {
        if let ExprKind::Function { name, args, star, .. } = &x.kind {
            if is_aggregate_call(name, args, *star) {
                found = true;
            }
        }
    });
    found
}

fn walk_ast(e: &ast::Expr, f: &mut impl FnMut(&ast::Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Literal(_)
        | ExprKind::Param(_)
        | ExprKind::Column(_)
        | ExprKind::Subquery(_)
        | ExprKind::Exists { .. } => {}
        ExprKind::Unary(_, x) | ExprKind::IsNull { expr: x, .. } | ExprKind::Cast { expr: x, .. } => {
            walk_ast(x, f)
        }
        ExprKind::InSubquery { expr, .. } => walk_ast(expr, f),
        ExprKind::Binary(a, _, b) => {
            walk_ast(a, f);
            walk_ast(b, f);
        }
        ExprKind::Like {
            expr,
            pattern,
            escape,
            ..
        } => {
            walk_ast(expr, f);
            walk_ast(pattern, f);
            if let Some(e) = escape {
                walk_ast(e, f);
            }
        }
        ExprKind::InList { expr, list, .. } => {
            walk_ast(expr, f);
            list.iter().for_each(|x| walk_ast(x, f));
        }
        ExprKind::Between { expr, low, high, .. } => {
            walk_ast(expr, f);
            walk_ast(low, f);
            walk_ast(high, f);
        }
        ExprKind::Case {
            operand,
            branches,
            otherwise,
        } => {
            if let Some(o) = operand {
                walk_ast(o, f);
            }
            for (w, t) in branches {
                walk_ast(w, f);
                walk_ast(t, f);
            }
            if let Some(o) = otherwise {
                walk_ast(o, f);
            }
        }
        ExprKind::Function { args, .. } | ExprKind::Tuple(args) => args.iter().for_each(|x| walk_ast(x, f)),
    }
}

/// `has(C)` → `Some((C, false))`, `NOT has(C)` → `Some((C, true))`.
fn as_has(e: &ast::Expr) -> Option<(&Ident, bool)> {
    match &e.kind {
        ExprKind::Function {
            name,
            args,
            star: false,
            distinct: false,
        } if name.value.eq_ignore_ascii_case("has") => match args.as_slice() {
            [
                ast::Expr {
                    kind: ExprKind::Column(parts),
                    ..
                },
            ] if parts.len() == 1 => Some((&parts[0], false)),
            _ => None,
        },
        ExprKind::Unary(UnaryOp::Not, inner) => as_has(inner).map(|(c, neg)| (c, !neg)),
        _ => None,
    }
}

fn conjuncts(e: &ast::Expr) -> Vec<&ast::Expr> {
    match &e.kind {
        ExprKind::Binary(a, BinaryOp::And, b) => {
            let mut v = conjuncts(a);
            v.extend(conjuncts(b));
            v
        }
        _ => vec![e],
    }
}

/// `slot = e`, `e = slot` or `slot IN (e, …)` with constant or parameter entity ids: the
/// slot and the ids. NULLs match nothing and are left out.
fn id_lookup(e: &BExpr) -> Option<(usize, Vec<IdKey>)> {
    let (slot, values): (usize, Vec<&BExpr>) = match &e.kind {
        BKind::Compare(CmpOp::Eq, l, r) => match (&l.kind, &r.kind) {
            (BKind::Slot(s), _) => (*s, vec![&**r]),
            (_, BKind::Slot(s)) => (*s, vec![&**l]),
            _ => return None,
        },
        BKind::InList {
            expr,
            list,
            negated: false,
        } => match expr.kind {
            BKind::Slot(s) => (s, list.iter().collect()),
            _ => return None,
        },
        _ => return None,
    };
    let mut ids = Vec::with_capacity(values.len());
    for v in values {
        match &v.kind {
            BKind::Const(Value::Entity(e)) => ids.push(IdKey::Entity(*e)),
            // An integer parameter compared with ids names the id of its value.
            BKind::Param {
                param,
                value: Value::Entity(_) | Value::Int(_),
            } => ids.push(IdKey::Param(param.clone())),
            // A non-positive integer names no id, and NULL matches nothing.
            BKind::Const(Value::Null | Value::Int(_))
            | BKind::Param {
                value: Value::Null, ..
            } => {}
            _ => return None,
        }
    }
    Some((slot, ids))
}

fn and_all(mut exprs: Vec<BExpr>) -> Option<BExpr> {
    let first = if exprs.is_empty() {
        return None;
    } else {
        exprs.remove(0)
    };
    Some(exprs.into_iter().fold(first, |acc, e| {
        let at = acc.at;
        BExpr::new(BKind::And(Box::new(acc), Box::new(e)), DataType::Bool, at)
    }))
}

fn column_name(e: &ast::Expr) -> String {
    e.to_string()
}

impl<'a> Binder<'a> {
    // ---- catalog lookups ----------------------------------------------------------------

    fn component(&self, name: &Ident) -> Result<&'a ComponentDef> {
        let world = self.world;
        if let Ok(def) = world.component_by_name(&name.value) {
            return Ok(def);
        }
        if !name.quoted {
            let mut found = world
                .components()
                .filter(|c| c.name().eq_ignore_ascii_case(&name.value));
            if let (Some(def), None) = (found.next(), found.next()) {
                return Ok(def);
            }
        }
        let known: Vec<&str> = world.components().map(|c| c.name()).collect();
        let hint = if known.is_empty() {
            " (no components are declared yet: CREATE COMPONENT first)".to_owned()
        } else {
            format!(" (declared: {})", known.join(", "))
        };
        Err(PlanError::UnknownComponent {
            name: name.value.clone(),
            at: name.at,
            hint,
        })
    }

    /// `descendants(root, C.field)` / `ancestors(e, C.field)` in FROM: a relation of `id`
    /// and `depth`. The start is a constant or parameter; the field an ENTITY field.
    #[allow(clippy::too_many_arguments)]
    fn walk(
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
        let start = match b.as_const() {
            Some(Value::Entity(e)) => Some(*e),
            Some(Value::Null) => None,
            _ => {
                return Err(PlanError::type_mismatch(
                    start.at,
                    format!("{fname} starts from a constant entity id or a parameter"),
                ));
            }
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
            WalkDirection::Descendants
        } else {
            WalkDirection::Ancestors
        };
        let r = self.push_relation(
            scope,
            RelationSource::Walk(Walk {
                direction,
                start,
                field,
                id_slot: 0,
                depth_slot: 0,
            }),
            join,
            t.to_string(),
        );
        let id_slot = scope.new_slot(r, DataType::Entity);
        let depth_slot = scope.new_slot(r, DataType::Int);
        if let RelationSource::Walk(w) = &mut scope.relations[r].source {
            w.id_slot = id_slot;
            w.depth_slot = depth_slot;
        }
        let qualifiers = alias.iter().cloned().cloned().collect::<Vec<_>>();
        for (i, (default, slot, ty)) in [
            ("id", id_slot, DataType::Entity),
            ("depth", depth_slot, DataType::Int),
        ]
        .into_iter()
        .enumerate()
        {
            let name = columns.get(i).map_or(default.to_owned(), |c| c.value.clone());
            scope.columns.push(NamedColumn {
                relation: r,
                qualifiers: qualifiers.clone(),
                display: name.clone(),
                name,
                kind: ColKind::Fixed(slot),
                ty,
                in_star: true,
            });
        }
        Ok(r)
    }

    /// `distance((a, b[, c]), (d, e[, f]))`: two points of 2 or 3 numeric coordinates.
    fn field_index(&self, def: &ComponentDef, name: &Ident) -> Result<usize> {
        let fields = def.fields();
        fields
            .iter()
            .position(|f| f.name() == name.value)
            .or_else(|| {
                if name.quoted {
                    None
                } else {
                    fields
                        .iter()
                        .position(|f| f.name().eq_ignore_ascii_case(&name.value))
                }
            })
            .ok_or_else(|| PlanError::UnknownField {
                component: def.name().to_owned(),
                field: name.value.clone(),
                fields: field_list(def),
                at: name.at,
            })
    }

    /// Notes that the plan depends on `e`'s value when `e` is a parameter.
    fn uses_value(&self, e: &BExpr) {
        if matches!(e.kind, BKind::Param { .. }) {
            self.single_use.set(true);
        }
    }

    fn param(&self, p: &ast::Param, at: Location) -> Result<Value> {
        self.params
            .get(p)
            .cloned()
            .ok_or_else(|| PlanError::MissingParameter {
                name: p.to_string(),
                at,
            })
    }

    // ---- statements ---------------------------------------------------------------------

    fn statement(&self, s: &ast::Statement) -> Result<Plan> {
        Ok(match &s.kind {
            StatementKind::CreateComponent { name, fields } => self.create_component(name, fields)?,
            StatementKind::CreateTag { name } => self.create_component(name, &[])?,
            StatementKind::DropComponent { name, if_exists } => {
                let component = match self.component(name) {
                    Ok(def) => Some(def.id()),
                    Err(_) if *if_exists => None,
                    Err(e) => return Err(e),
                };
                Plan::DropComponent {
                    component,
                    name: name.value.clone(),
                }
            }
            StatementKind::ShowComponents => Plan::ShowComponents,
            StatementKind::ShowArchetypes => Plan::ShowArchetypes,
            StatementKind::ShowIndexes => Plan::ShowIndexes,
            StatementKind::CreateIndex {
                name,
                spatial,
                if_not_exists,
                component,
                fields,
            } => {
                let def = self.component(component)?;
                let mut ids = Vec::with_capacity(fields.len());
                for f in fields {
                    ids.push(FieldId::new(def.id(), self.field_index(def, f)? as u16));
                }
                let names: Vec<&str> = fields.iter().map(|f| f.value.as_str()).collect();
                Plan::CreateIndex {
                    name: name.as_ref().map(|n| n.value.clone()),
                    spatial: *spatial,
                    if_not_exists: *if_not_exists,
                    fields: ids,
                    label: format!("{} ({})", def.name(), names.join(", ")),
                }
            }
            StatementKind::DropIndex { name, if_exists } => Plan::DropIndex {
                name: name.value.clone(),
                if_exists: *if_exists,
            },
            StatementKind::Describe { name } => Plan::Describe(self.component(name)?.id()),
            StatementKind::Select(q) => Plan::Query(self.query(q)?),
            StatementKind::Spawn { at, items, source } => {
                Plan::Spawn(self.spawn(at.as_ref(), items, source.as_ref(), s.at)?)
            }
            StatementKind::Insert {
                component,
                columns,
                source,
                on_conflict,
            } => Plan::Insert(self.insert(component, columns, source, on_conflict, s.at)?),
            StatementKind::Delete { component, filter } => {
                let def = self.component(component)?;
                let from = [ast::FromItem {
                    base: ast::TableRef::Named {
                        name: component.clone(),
                        alias: None,
                    },
                    joins: Vec::new(),
                }];
                let ids = self.id_query(&from, filter.as_ref(), s.at)?;
                Plan::Delete {
                    component: def.id(),
                    ids,
                }
            }
            StatementKind::Despawn { ids } => {
                let mut rows = Vec::new();
                for e in ids {
                    let b = self.expr(e, &mut Scope::default(), &mut Ctx::Row("DESPAWN"))?;
                    rows.push(vec![self.assign_cast(b, DataType::Entity, "an entity id")?]);
                }
                let columns = vec![OutputColumn {
                    name: "id".into(),
                    ty: DataType::Entity,
                }];
                Plan::Despawn {
                    ids: QueryPlan {
                        body: SetPlan::Values(rows),
                        order_by: Vec::new(),
                        limit: None,
                        offset: 0,
                        columns,
                    },
                }
            }
            StatementKind::DespawnFrom { source } => Plan::Despawn {
                ids: self.id_query(&source.from, source.filter.as_ref(), s.at)?,
            },
            StatementKind::Update {
                target,
                alias,
                assignments,
                from,
                filter,
            } => Plan::Update(Box::new(self.update(
                target,
                alias.as_ref(),
                assignments,
                from,
                filter.as_ref(),
                s.at,
            )?)),
            StatementKind::Explain(inner) => Plan::Explain(Box::new(self.statement(inner)?)),
            StatementKind::Begin => Plan::Begin,
            StatementKind::Commit => Plan::Commit,
            StatementKind::Rollback => Plan::Rollback,
        })
    }

    fn create_component(&self, name: &Ident, fields: &[ast::FieldSpec]) -> Result<Plan> {
        if self.world.component_by_name(&name.value).is_ok() {
            return Err(PlanError::ComponentExists {
                name: name.value.clone(),
                at: name.at,
            });
        }
        let mut defs: Vec<FieldDef> = Vec::new();
        for f in fields {
            if f.name.value.eq_ignore_ascii_case("id") {
                return Err(PlanError::invalid(
                    f.name.at,
                    "a field cannot be called id: id is the entity",
                ));
            }
            if defs.iter().any(|d| d.name().eq_ignore_ascii_case(&f.name.value)) {
                return Err(PlanError::invalid(
                    f.name.at,
                    format!("field {} is declared twice", f.name.value),
                ));
            }
            let mut def = FieldDef::new(&f.name.value, f.ty);
            if let Some(d) = &f.default {
                let b = self.expr(d, &mut Scope::default(), &mut Ctx::Row("DEFAULT"))?;
                let to = DataType::from(f.ty);
                self.uses_value(&b);
                let Some(value) = b.as_const().cloned() else {
                    return Err(PlanError::invalid(d.at, "a DEFAULT must be a constant"));
                };
                let value = if assignable(b.ty, to) {
                    cast_value(&value, to).map_err(|m| PlanError::type_mismatch(d.at, m))?
                } else {
                    return Err(PlanError::type_mismatch(
                        d.at,
                        format!(
                            "DEFAULT for {} {} cannot be {}",
                            f.name.value,
                            to,
                            value.describe()
                        ),
                    ));
                };
                if value == Value::Null && f.ty != FieldType::Entity {
                    return Err(PlanError::type_mismatch(
                        d.at,
                        format!("DEFAULT for {} {} cannot be NULL", f.name.value, to),
                    ));
                }
                def = def.with_default(value);
            }
            defs.push(def);
        }
        Ok(Plan::CreateComponent {
            name: name.value.clone(),
            fields: defs,
        })
    }

    /// A query of the first entity's ids over `from` filtered by `filter`.
    fn id_query(
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
        let (filter, text) = self.filter(filter, &mut scope)?;
        let id = scope.slot(entity, ColKind::Scan(ScanColumn::Id), DataType::Entity);
        let plan = SelectPlan {
            width: scope.width(),
            joins: std::mem::take(&mut scope.joins),
            relations: scope.relations,
            filter,
            output: Output::Rows(vec![BExpr::slot(id, DataType::Entity, at)]),
            distinct: false,
            explain: SelectText {
                filter: text,
                outputs: vec!["id".into()],
                ..Default::default()
            },
        };
        Ok(single(
            plan,
            vec![OutputColumn {
                name: "id".into(),
                ty: DataType::Entity,
            }],
        ))
    }

    fn spawn(
        &self,
        id: Option<&ast::Expr>,
        items: &[ast::SpawnItem],
        source: Option<&ast::Source>,
        at: Location,
    ) -> Result<SpawnPlan> {
        let mut scope = match source {
            Some(s) => self.from(&s.from)?,
            None => Scope::default(),
        };
        let mut components = Vec::new();
        let mut exprs = Vec::new();
        let mut columns = Vec::new();
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
            let mut given: Vec<Option<&ast::Expr>> = vec![None; fields.len()];
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
            for (field, value) in fields.iter().zip(given) {
                let to = DataType::from(field.ty());
                let bound = match value {
                    Some(e) => {
                        let b = self.expr(e, &mut scope, &mut Ctx::Row("SPAWN"))?;
                        texts.push(e.to_string());
                        self.assign_cast(b, to, &format!("{}.{}", def.name(), field.name()))?
                    }
                    None => {
                        texts.push(field.default_value().to_string());
                        BExpr::constant(field.default_value().clone(), at)
                    }
                };
                exprs.push(bound);
                columns.push(OutputColumn {
                    name: format!("{}.{}", def.name(), field.name()),
                    ty: to,
                });
            }
            components.push((def.id(), fields.iter().map(|f| f.ty()).collect()));
        }
        // The chosen id, if any, is the last column of the rows.
        let id_column = match id {
            Some(e) => {
                let b = self.expr(e, &mut scope, &mut Ctx::Row("SPAWN"))?;
                texts.push(e.to_string());
                exprs.push(self.assign_cast(b, DataType::Entity, "the id of SPAWN AT")?);
                columns.push(OutputColumn {
                    name: "id".into(),
                    ty: DataType::Entity,
                });
                Some(columns.len() - 1)
            }
            None => None,
        };
        let (filter, filter_text) = match source {
            Some(s) => self.filter(s.filter.as_ref(), &mut scope)?,
            None => (None, None),
        };
        let plan = SelectPlan {
            width: scope.width(),
            joins: std::mem::take(&mut scope.joins),
            relations: scope.relations,
            filter,
            output: Output::Rows(exprs),
            distinct: false,
            explain: SelectText {
                filter: filter_text,
                outputs: texts,
                ..Default::default()
            },
        };
        Ok(SpawnPlan {
            components,
            rows: single(plan, columns),
            id_column,
        })
    }

    fn insert(
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
        let listed: Vec<Ident> = if columns.is_empty() {
            fields
                .iter()
                .map(|f| Ident::new(f.name(), component.at))
                .collect()
        } else {
            columns.to_vec()
        };
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
            let (to, what) = match field_columns.iter().position(|&fc| fc == Some(i)) {
                Some(f) => (
                    DataType::from(fields[f].ty()),
                    format!("{}.{}", def.name(), fields[f].name()),
                ),
                None => (DataType::Entity, "id".to_owned()),
            };
            let from = rows.columns[i].ty;
            if !assignable(from, to) {
                return Err(PlanError::type_mismatch(
                    c.at,
                    format!("{what} is {to}, but the rows give {from}"),
                ));
            }
        }
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
                        let display = format!("{}.{}", qualifier.value, f.name());
                        scope.columns.push(NamedColumn {
                            relation: 0,
                            qualifiers: vec![qualifier],
                            name: f.name().to_owned(),
                            kind: ColKind::Fixed(slot),
                            ty,
                            display,
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
                        self.assign_cast(b, to, &format!("{}.{}", def.name(), fields[f].name()))?,
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
            on_conflict,
        })
    }

    fn update(
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
            let name = format!("{}.{}", def.name(), field.name());
            let value = self.assign_cast(value, DataType::from(field.ty()), &name)?;
            texts.push(format!("{} = {}", field.name(), a.value));
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
        let select = SelectPlan {
            width: scope.width(),
            joins: std::mem::take(&mut scope.joins),
            relations: scope.relations,
            filter,
            output: Output::Rows(Vec::new()),
            distinct: false,
            explain: SelectText {
                filter: filter_text,
                outputs: texts,
                ..Default::default()
            },
        };
        let _ = at;
        Ok(UpdatePlan {
            target: def.id(),
            select,
            id_slot,
            assignments: bound,
        })
    }

    /// Casts `e` for storing into something of type `to`, or says why it cannot be.
    fn assign_cast(&self, e: BExpr, to: DataType, what: &str) -> Result<BExpr> {
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
        self.cast(e, to)
    }

    /// `e` as an operand of a comparison of type `to`: cast, except that an INT compared
    /// with an ENTITY stays INT (see `comparison_type`), folded to an id when it is a
    /// positive constant so that lookups by id see one.
    fn compare_operand(&self, e: BExpr, to: DataType) -> Result<BExpr> {
        if !compares_unconverted(e.ty, to) {
            return self.cast(e, to);
        }
        match e.kind {
            BKind::Const(Value::Int(i)) if i > 0 => self.cast(e, to),
            _ => Ok(e),
        }
    }

    /// `e` as type `to`: folded for constants, a `Cast` node otherwise.
    fn cast(&self, e: BExpr, to: DataType) -> Result<BExpr> {
        if e.ty == to || to == DataType::Null {
            return Ok(e);
        }
        if let Some(v) = e.as_const() {
            self.uses_value(&e);
            let at = e.at;
            let value = cast_value(v, to).map_err(|m| PlanError::type_mismatch(at, m))?;
            return Ok(BExpr::new(BKind::Const(value), to, at));
        }
        let at = e.at;
        Ok(BExpr::new(BKind::Cast(Box::new(e)), to, at))
    }

    // ---- FROM ---------------------------------------------------------------------------

    fn from(&self, items: &[ast::FromItem]) -> Result<Scope> {
        let mut scope = Scope::default();
        for item in items {
            self.table_ref(&item.base, JoinKind::Cross, None, &mut scope)?;
            for join in &item.joins {
                let kind = if join.left {
                    JoinKind::Left
                } else {
                    JoinKind::Inner
                };
                self.table_ref(&join.table, kind, join.on.as_ref(), &mut scope)?;
            }
        }
        Ok(scope)
    }

    fn push_relation(
        &self,
        scope: &mut Scope,
        source: RelationSource,
        join: JoinKind,
        label: String,
    ) -> usize {
        let join = if scope.relations.is_empty() {
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

    fn new_entity_relation(&self, scope: &mut Scope, join: JoinKind, label: String) -> usize {
        let scan = EntityScan {
            required: Vec::new(),
            optional: Vec::new(),
            excluded: Vec::new(),
            only: None,
            ids: None,
            index: None,
            index_notes: Vec::new(),
            columns: Vec::new(),
        };
        let r = self.push_relation(scope, RelationSource::Entities(scan), join, label);
        scope.columns.push(NamedColumn {
            relation: r,
            qualifiers: Vec::new(),
            name: "id".into(),
            kind: ColKind::Scan(ScanColumn::Id),
            ty: DataType::Entity,
            display: "id".into(),
            in_star: true,
        });
        r
    }

    fn table_ref(
        &self,
        t: &ast::TableRef,
        join: JoinKind,
        on: Option<&ast::Expr>,
        scope: &mut Scope,
    ) -> Result<()> {
        let relation = match t {
            ast::TableRef::Named { name, alias } => {
                // Without ON, a component joins the first entity; with ON, it is another.
                let r = match (on, scope.first_entity) {
                    (None, Some(r)) => r,
                    _ => {
                        let r = self.new_entity_relation(scope, join, t.to_string());
                        if on.is_none() {
                            scope.first_entity = Some(r);
                        }
                        r
                    }
                };
                let qualifier = alias.clone().unwrap_or_else(|| name.clone());
                if scope
                    .members
                    .iter()
                    .any(|m| m.qualifier.value.eq_ignore_ascii_case(&qualifier.value))
                    || scope.columns.iter().any(|c| {
                        c.relation != r
                            && c.qualifiers
                                .iter()
                                .any(|q| q.value.eq_ignore_ascii_case(&qualifier.value))
                    })
                {
                    return Err(PlanError::invalid(
                        qualifier.at,
                        format!(
                            "{} appears twice in FROM; give each an alias (… AS a, … AS b) and join with ON",
                            qualifier.value
                        ),
                    ));
                }
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
                self.walk(scope, t, join, &fname, args, alias.as_ref(), columns, name.at)?
            }
            ast::TableRef::Function {
                name,
                args,
                alias,
                columns,
            } => {
                if on.is_none() && join == JoinKind::Left {
                    return Err(PlanError::invalid(
                        name.at,
                        "LEFT JOIN of a table function needs ON",
                    ));
                }
                let fname = name.value.to_ascii_lowercase();
                let mut ints = Vec::new();
                for a in args {
                    let b = self.expr(
                        a,
                        &mut Scope::default(),
                        &mut Ctx::Row("a table function's arguments"),
                    )?;
                    self.uses_value(&b);
                    match b.as_const() {
                        Some(Value::Int(i)) => ints.push(*i),
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
                        return Err(PlanError::UnknownFunction {
                            name: name.value.clone(),
                            at: name.at,
                            hint: " (table functions: range(n), generate_series(a, b), descendants(root, C.field), ancestors(e, C.field))".into(),
                        });
                    }
                };
                if columns.len() > 1 {
                    return Err(PlanError::invalid(
                        name.at,
                        format!("{fname} has one column, but {} names were given", columns.len()),
                    ));
                }
                let col_name = columns.first().map_or("value".to_owned(), |c| c.value.clone());
                let r = self.push_relation(
                    scope,
                    RelationSource::Series { start, end, slot: 0 },
                    join,
                    t.to_string(),
                );
                let slot = scope.new_slot(r, DataType::Int);
                if let RelationSource::Series { slot: s, .. } = &mut scope.relations[r].source {
                    *s = slot;
                }
                let qualifiers = alias.iter().cloned().collect::<Vec<_>>();
                let display = col_name.clone();
                scope.columns.push(NamedColumn {
                    relation: r,
                    qualifiers,
                    name: col_name,
                    kind: ColKind::Fixed(slot),
                    ty: DataType::Int,
                    display,
                    in_star: true,
                });
                r
            }
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
                let out = plan.columns.clone();
                let r = self.push_relation(
                    scope,
                    RelationSource::Query {
                        plan: Box::new(plan),
                        slots: Vec::new(),
                    },
                    join,
                    "(subquery)".into(),
                );
                let mut slots = Vec::new();
                for (i, c) in out.iter().enumerate() {
                    let slot = scope.new_slot(r, c.ty);
                    slots.push(slot);
                    let name = columns.get(i).map_or(c.name.clone(), |n| n.value.clone());
                    scope.columns.push(NamedColumn {
                        relation: r,
                        qualifiers: alias.iter().cloned().collect(),
                        display: name.clone(),
                        name,
                        kind: ColKind::Fixed(slot),
                        ty: c.ty,
                        in_star: true,
                    });
                }
                if let RelationSource::Query { slots: s, .. } = &mut scope.relations[r].source {
                    *s = slots;
                }
                r
            }
        };
        if let Some(on) = on {
            let b = self.expr(on, scope, &mut Ctx::Row("ON"))?;
            let b = self.expect_bool(b, "ON")?;
            scope.relations[relation].on = Some(b);
        }
        Ok(())
    }

    /// A name in FROM: `entities`, an archetype table `arch_…`, or a component.
    fn named_table(
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
                .find(|c| c.relation == r && c.name == "id")
            {
                c.qualifiers.push(qualifier.clone());
            }
            scope.columns.push(NamedColumn {
                relation: r,
                qualifiers: vec![qualifier],
                name: "archetype".into(),
                kind: ColKind::Scan(ScanColumn::Archetype),
                ty: DataType::Text,
                display: "archetype".into(),
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
            return Err(PlanError::UnknownComponent {
                name: name.value.clone(),
                at: name.at,
                hint: " (no archetype table has this name: SHOW ARCHETYPES lists them)".into(),
            });
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

    fn add_member(&self, def: &ComponentDef, qualifier: Ident, r: usize, optional: bool, scope: &mut Scope) {
        if let Some(scan) = scope.scan_mut(r) {
            if optional {
                scan.optional.push(def.id())
            } else {
                scan.required.push(def.id())
            }
        }
        if let Some(c) = scope
            .columns
            .iter_mut()
            .find(|c| c.relation == r && c.name == "id")
        {
            c.qualifiers.push(qualifier.clone());
        }
        for (i, f) in def.fields().iter().enumerate() {
            scope.columns.push(NamedColumn {
                relation: r,
                qualifiers: vec![qualifier.clone()],
                name: f.name().to_owned(),
                kind: ColKind::Scan(ScanColumn::Field(FieldId::new(def.id(), i as u16))),
                ty: DataType::from(f.ty()),
                display: format!("{}.{}", qualifier.value, f.name()),
                in_star: true,
            });
        }
        scope.members.push(Member {
            relation: r,
            component: def.id(),
            qualifier,
        });
    }

    /// WHERE: `has()`/`NOT has()` conjuncts fold into the first entity's scan; conditions on
    /// one relation of a join move into that relation's scan; the rest stays.
    fn filter(
        &self,
        filter: Option<&ast::Expr>,
        scope: &mut Scope,
    ) -> Result<(Option<BExpr>, Option<String>)> {
        let Some(filter) = filter else {
            let mut residual = Vec::new();
            self.plan_joins(scope, &mut residual);
            return Ok((and_all(residual), None));
        };
        if contains_aggregate(filter) {
            return Err(PlanError::invalid(
                filter.at,
                "aggregate functions are not allowed in WHERE (use HAVING)",
            ));
        }
        let mut rest = Vec::new();
        let mut texts = Vec::new();
        for c in conjuncts(filter) {
            if let (Some((component, negated)), Some(r)) = (as_has(c), scope.first_entity) {
                let id = self.component(component)?.id();
                if let Some(scan) = scope.scan_mut(r) {
                    let list = if negated {
                        &mut scan.excluded
                    } else {
                        &mut scan.required
                    };
                    if !list.contains(&id) {
                        list.push(id);
                    }
                    continue;
                }
            }
            texts.push(c.to_string());
            let b = self.expr(c, scope, &mut Ctx::Row("WHERE"))?;
            if let Some((slot, ids)) = id_lookup(&b) {
                let r = scope.relation_of_slot(slot);
                if !scope.nullable.contains(&r) {
                    if let Some(scan) = scope.scan_mut(r) {
                        if scan.ids.is_none() && scan.columns.contains(&(slot, ScanColumn::Id)) {
                            scan.ids = Some(ids);
                        }
                    }
                }
            }
            rest.push(self.expect_bool(b, "WHERE")?);
        }
        let text = if texts.is_empty() {
            None
        } else {
            Some(texts.join(" AND "))
        };
        self.choose_indexes(&rest, scope);
        if scope.relations.len() <= 1 {
            return Ok((and_all(rest), text));
        }
        let mut residual = Vec::new();
        let mut pushed: Vec<Vec<BExpr>> = (0..scope.relations.len()).map(|_| Vec::new()).collect();
        for e in rest {
            let mut rels = Vec::new();
            e.visit_slots(&mut |s| {
                let r = scope.relation_of_slot(s);
                if !rels.contains(&r) {
                    rels.push(r);
                }
            });
            match rels.as_slice() {
                // A condition that may refuse a row waits until the join has removed the
                // rows the other conditions remove (see BExpr::may_refuse_rows).
                [r] if !scope.nullable.contains(r) && !e.may_refuse_rows() => pushed[*r].push(e),
                _ => residual.push(e),
            }
        }
        for (r, exprs) in pushed.into_iter().enumerate() {
            scope.relations[r].filter = and_all(exprs);
        }
        self.plan_joins(scope, &mut residual);
        Ok((and_all(residual), text))
    }

    /// Hands the join conditions among `residual` (and the inner joins' ON) to the
    /// scope's join plan.
    fn plan_joins(&self, scope: &mut Scope, residual: &mut Vec<BExpr>) {
        if scope.relations.len() > 1 {
            let slot_types = &scope.slot_types;
            scope.joins = super::join::plan_joins(&mut scope.relations, residual, |s| slot_types[s].0);
        }
    }

    /// Gives each entity scan not on the nullable side of a LEFT JOIN the index that
    /// best serves the conjuncts reading only it.
    fn choose_indexes(&self, conjuncts: &[BExpr], scope: &mut Scope) {
        if Indexes::of(self.world).is_empty() {
            return;
        }
        for r in 0..scope.relations.len() {
            if scope.nullable.contains(&r) {
                continue;
            }
            let own: Vec<&BExpr> = conjuncts
                .iter()
                .filter(|e| {
                    let mut only = true;
                    e.visit_slots(&mut |s| only &= scope.relation_of_slot(s) == r);
                    only
                })
                .collect();
            if let Some(scan) = scope.scan_mut(r) {
                super::access::choose_index(self.world, scan, &own);
            }
        }
    }

    fn expect_bool(&self, e: BExpr, clause: &str) -> Result<BExpr> {
        match e.ty {
            DataType::Bool => Ok(e),
            DataType::Null => self.cast(e, DataType::Bool),
            other => Err(PlanError::type_mismatch(
                e.at,
                format!("{clause} needs a BOOL condition, found {other}"),
            )),
        }
    }

    // ---- queries ------------------------------------------------------------------------

    fn query(&self, q: &ast::Query) -> Result<QueryPlan> {
        let (limit, offset) = (
            self.count(q.limit.as_ref(), "LIMIT")?,
            self.count(q.offset.as_ref(), "OFFSET")?.unwrap_or(0),
        );
        match &q.body {
            ast::SetExpr::Select(s) => {
                let (plan, columns, order_by) = self.select(s, &q.order_by)?;
                let mut plan = QueryPlan {
                    body: SetPlan::Select(Box::new(plan)),
                    order_by,
                    limit,
                    offset,
                    columns,
                };
                if !Indexes::of(self.world).is_empty() {
                    super::access::choose_nearest(self.world, &mut plan);
                }
                Ok(plan)
            }
            body => {
                let (body, columns) = self.set_expr(body)?;
                let order_by = q
                    .order_by
                    .iter()
                    .map(|o| {
                        let column = output_reference(&o.expr, &columns, "ORDER BY")?.ok_or_else(|| {
                            PlanError::invalid(o.expr.at, "ORDER BY of a UNION, EXCEPT, INTERSECT or VALUES must name an output column or give its position")
                        })?;
                        Ok(sort_key(o, column))
                    })
                    .collect::<Result<_>>()?;
                Ok(QueryPlan {
                    body,
                    order_by,
                    limit,
                    offset,
                    columns,
                })
            }
        }
    }

    fn count(&self, e: Option<&ast::Expr>, what: &str) -> Result<Option<usize>> {
        let Some(e) = e else { return Ok(None) };
        let b = self.expr(
            e,
            &mut Scope::default(),
            &mut Ctx::Row(if what == "LIMIT" { "LIMIT" } else { "OFFSET" }),
        )?;
        self.uses_value(&b);
        match b.as_const() {
            Some(Value::Int(n)) if *n >= 0 => Ok(Some(*n as usize)),
            Some(Value::Null) if what == "LIMIT" => Ok(None),
            _ => Err(PlanError::type_mismatch(
                e.at,
                format!("{what} takes a constant INT of 0 or more"),
            )),
        }
    }

    fn set_expr(&self, body: &ast::SetExpr) -> Result<(SetPlan, Vec<OutputColumn>)> {
        match body {
            ast::SetExpr::Select(s) => {
                let (plan, columns, _) = self.select(s, &[])?;
                Ok((SetPlan::Select(Box::new(plan)), columns))
            }
            ast::SetExpr::Query(q) => {
                let plan = self.query(q)?;
                let columns = plan.columns.clone();
                if plan.order_by.is_empty() && plan.limit.is_none() && plan.offset == 0 {
                    return Ok((plan.body, columns));
                }
                // A parenthesized query with its own ORDER BY/LIMIT becomes a relation.
                let mut scope = Scope::default();
                let r = self.push_relation(
                    &mut scope,
                    RelationSource::Query {
                        plan: Box::new(plan),
                        slots: Vec::new(),
                    },
                    JoinKind::Cross,
                    "(subquery)".into(),
                );
                let slots: Vec<usize> = columns.iter().map(|c| scope.new_slot(r, c.ty)).collect();
                let outputs = slots
                    .iter()
                    .zip(&columns)
                    .map(|(&s, c)| BExpr::slot(s, c.ty, Location::default()))
                    .collect();
                if let RelationSource::Query { slots: s, .. } = &mut scope.relations[r].source {
                    *s = slots;
                }
                let plan = SelectPlan {
                    width: scope.width(),
                    joins: JoinPlan::default(),
                    relations: scope.relations,
                    filter: None,
                    output: Output::Rows(outputs),
                    distinct: false,
                    explain: SelectText::default(),
                };
                Ok((SetPlan::Select(Box::new(plan)), columns))
            }
            ast::SetExpr::Values(rows) => {
                let mut bound: Vec<Vec<BExpr>> = Vec::new();
                let width = rows.first().map_or(0, Vec::len);
                for row in rows {
                    if row.len() != width {
                        let at = row.first().map_or(Location::default(), |e| e.at);
                        return Err(PlanError::invalid(
                            at,
                            format!("VALUES rows differ in length: {} and {}", width, row.len()),
                        ));
                    }
                    let mut out = Vec::new();
                    for e in row {
                        out.push(self.expr(e, &mut Scope::default(), &mut Ctx::Row("VALUES"))?);
                    }
                    bound.push(out);
                }
                let mut columns = Vec::new();
                for i in 0..width {
                    let mut ty = DataType::Null;
                    for row in &bound {
                        ty = unify(ty, &row[i], "VALUES column")?;
                    }
                    columns.push(OutputColumn {
                        name: format!("column{}", i + 1),
                        ty,
                    });
                }
                let mut rows_out = Vec::new();
                for row in bound {
                    let mut out = Vec::new();
                    for (e, c) in row.into_iter().zip(&columns) {
                        out.push(self.cast(e, c.ty)?);
                    }
                    rows_out.push(out);
                }
                Ok((SetPlan::Values(rows_out), columns))
            }
            ast::SetExpr::SetOp { op, left, right, all } => {
                let (l, lc) = self.set_expr(left)?;
                let (r, rc) = self.set_expr(right)?;
                let name = op.name();
                if lc.len() != rc.len() {
                    return Err(PlanError::invalid(
                        Location::default(),
                        format!("{name} sides have {} and {} columns", lc.len(), rc.len()),
                    ));
                }
                let mut columns = Vec::new();
                for (a, b) in lc.iter().zip(&rc) {
                    let ty = unify_types(a.ty, b.ty).ok_or_else(|| {
                        PlanError::type_mismatch(
                            Location::default(),
                            format!(
                                "{name} column {} is {} on one side and {} on the other",
                                a.name, a.ty, b.ty
                            ),
                        )
                    })?;
                    columns.push(OutputColumn {
                        name: a.name.clone(),
                        ty,
                    });
                }
                Ok((
                    SetPlan::SetOp {
                        op: *op,
                        left: Box::new(l),
                        right: Box::new(r),
                        all: *all,
                    },
                    columns,
                ))
            }
        }
    }

    fn select(
        &self,
        s: &ast::Select,
        order_by: &[ast::OrderItem],
    ) -> Result<(SelectPlan, Vec<OutputColumn>, Vec<SortKey>)> {
        let mut scope = self.from(&s.from)?;
        let (filter, filter_text) = self.filter(s.filter.as_ref(), &mut scope)?;
        let aggregate = !s.group_by.is_empty()
            || s.having.is_some()
            || s.items
                .iter()
                .any(|i| matches!(i, ast::SelectItem::Expr { expr, .. } if contains_aggregate(expr)))
            || order_by.iter().any(|o| contains_aggregate(&o.expr));

        // The select list, with wildcards expanded.
        let mut items: Vec<(ast::Expr, String)> = Vec::new();
        for item in &s.items {
            match item {
                ast::SelectItem::Expr { expr, alias } => {
                    let name = alias
                        .as_ref()
                        .map_or_else(|| column_name(expr), |a| a.value.clone());
                    items.push((expr.clone(), name));
                }
                ast::SelectItem::Wildcard(at) => {
                    let cols: Vec<_> = scope.columns.iter().filter(|c| c.in_star).cloned().collect();
                    if cols.is_empty() {
                        return Err(PlanError::invalid(*at, "SELECT * needs a FROM"));
                    }
                    for c in cols {
                        items.push((column_expr(&c, *at), c.display.clone()));
                    }
                }
                ast::SelectItem::QualifiedWildcard(q) => {
                    let cols: Vec<_> = scope
                        .columns
                        .iter()
                        .filter(|c| c.name != "id" && c.qualifiers.iter().any(|x| q.matches(&x.value)))
                        .cloned()
                        .collect();
                    if cols.is_empty() {
                        return Err(PlanError::UnknownColumn {
                            name: format!("{}.*", q.value),
                            at: q.at,
                            hint: " (no such table or alias in FROM)".into(),
                        });
                    }
                    for c in cols {
                        items.push((column_expr(&c, q.at), c.display.clone()));
                    }
                }
            }
        }

        let names: Vec<String> = items.iter().map(|(_, n)| n.clone()).collect();
        let mut sort = Vec::new();
        let mut hidden_exprs = Vec::new();
        for o in order_by {
            match output_reference_named(&o.expr, &names, "ORDER BY")? {
                Some(column) => sort.push(sort_key(o, column)),
                None => {
                    if s.distinct {
                        return Err(PlanError::invalid(
                            o.expr.at,
                            "with SELECT DISTINCT, ORDER BY must name a selected column",
                        ));
                    }
                    sort.push(sort_key(o, items.len() + hidden_exprs.len()));
                    hidden_exprs.push(o.expr.clone());
                }
            }
        }

        let mut texts = SelectText {
            filter: filter_text,
            ..Default::default()
        };
        let mut columns = Vec::new();
        let output = if aggregate {
            let mut grouping = Grouping::default();
            for g in &s.group_by {
                // GROUP BY may name an output column by alias or position.
                let source = match output_reference_named(g, &names, "GROUP BY")? {
                    Some(i) if !matches!(&g.kind, ExprKind::Column(p) if self.find_column(p, &scope).is_ok()) => {
                        items[i].0.clone()
                    }
                    _ => g.clone(),
                };
                let b = self.expr(&source, &mut scope, &mut Ctx::Row("GROUP BY"))?;
                if contains_aggregate(&source) {
                    return Err(PlanError::invalid(
                        g.at,
                        "aggregate functions are not allowed in GROUP BY",
                    ));
                }
                grouping.texts.push(source.to_string());
                texts.group_by.push(source.to_string());
                grouping.keys.push(b);
            }
            let outputs = self.outputs(
                &items,
                &hidden_exprs,
                &mut scope,
                &mut Ctx::Grouped(&mut grouping),
                &mut columns,
                &mut texts,
            )?;
            let having = match &s.having {
                Some(h) => {
                    texts.having = Some(h.to_string());
                    let b = self.expr(h, &mut scope, &mut Ctx::Grouped(&mut grouping))?;
                    Some(self.expect_bool(b, "HAVING")?)
                }
                None => None,
            };
            Output::Aggregate {
                keys: grouping.keys,
                aggs: grouping.aggs,
                having,
                outputs,
            }
        } else {
            let outputs = self.outputs(
                &items,
                &hidden_exprs,
                &mut scope,
                &mut Ctx::Row("SELECT"),
                &mut columns,
                &mut texts,
            )?;
            Output::Rows(outputs)
        };
        let plan = SelectPlan {
            width: scope.width(),
            joins: std::mem::take(&mut scope.joins),
            relations: scope.relations,
            filter,
            output,
            distinct: s.distinct,
            explain: texts,
        };
        Ok((plan, columns, sort))
    }

    /// The select list, then the hidden ORDER BY expressions after it, bound in `ctx`;
    /// the visible ones also named in `columns` and `texts`.
    fn outputs(
        &self,
        items: &[(ast::Expr, String)],
        hidden: &[ast::Expr],
        scope: &mut Scope,
        ctx: &mut Ctx<'_>,
        columns: &mut Vec<OutputColumn>,
        texts: &mut SelectText,
    ) -> Result<Vec<BExpr>> {
        let mut outputs = Vec::with_capacity(items.len() + hidden.len());
        for (e, name) in items {
            let b = self.expr(e, scope, ctx)?;
            columns.push(OutputColumn {
                name: name.clone(),
                ty: b.ty,
            });
            texts.outputs.push(e.to_string());
            outputs.push(b);
        }
        for e in hidden {
            outputs.push(self.expr(e, scope, ctx)?);
        }
        Ok(outputs)
    }

    // ---- expressions --------------------------------------------------------------------

    fn find_column(&self, parts: &[Ident], scope: &Scope) -> Result<NamedColumn> {
        let (qualifier, name) = match parts {
            [n] => (None, n),
            [q, n] => (Some(q), n),
            _ => return Err(PlanError::invalid(parts[0].at, "expected name or qualifier.name")),
        };
        let matches: Vec<&NamedColumn> = scope
            .columns
            .iter()
            .filter(|c| {
                name.matches(&c.name)
                    && qualifier.is_none_or(|q| c.qualifiers.iter().any(|x| q.matches(&x.value)))
            })
            .collect();
        match matches.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(self.unknown_column(qualifier, name, scope)),
            many => {
                let first = many[0];
                if many
                    .iter()
                    .all(|c| c.relation == first.relation && c.kind == first.kind)
                {
                    return Ok(first.clone());
                }
                let candidates = many
                    .iter()
                    .map(|c| match c.qualifiers.first() {
                        Some(q) if c.name == "id" => format!("{}.id", q.value),
                        _ => c.display.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                let written = parts
                    .iter()
                    .map(|p| p.value.as_str())
                    .collect::<Vec<_>>()
                    .join(".");
                Err(PlanError::Ambiguous {
                    name: written,
                    candidates,
                    at: parts[0].at,
                })
            }
        }
    }

    fn unknown_column(&self, qualifier: Option<&Ident>, name: &Ident, scope: &Scope) -> PlanError {
        if let Some(q) = qualifier {
            if let Some(m) = scope.members.iter().find(|m| q.matches(&m.qualifier.value)) {
                if let Ok(def) = self.world.component(m.component) {
                    return PlanError::UnknownField {
                        component: def.name().to_owned(),
                        field: name.value.clone(),
                        fields: field_list(def),
                        at: name.at,
                    };
                }
            }
            if scope
                .columns
                .iter()
                .any(|c| c.qualifiers.iter().any(|x| q.matches(&x.value)))
            {
                return PlanError::UnknownColumn {
                    name: format!("{}.{}", q.value, name.value),
                    at: name.at,
                    hint: String::new(),
                };
            }
            let hint = if self.component(q).is_ok() {
                format!(
                    " (component {} is not in FROM: add it, e.g. FROM …, {} or LEFT JOIN {})",
                    q.value, q.value, q.value
                )
            } else {
                format!(" (no component, table or alias named {} in FROM)", q.value)
            };
            return PlanError::UnknownColumn {
                name: format!("{}.{}", q.value, name.value),
                at: q.at,
                hint,
            };
        }
        let hint = if self.component(name).is_ok() {
            format!(
                " ({} is a component: name one of its fields, e.g. {}.field)",
                name.value, name.value
            )
        } else if scope.columns.is_empty() {
            " (there is no FROM to take it from)".to_owned()
        } else {
            String::new()
        };
        PlanError::UnknownColumn {
            name: name.value.clone(),
            at: name.at,
            hint,
        }
    }

    fn expr(&self, e: &ast::Expr, scope: &mut Scope, ctx: &mut Ctx<'_>) -> Result<BExpr> {
        let at = e.at;
        if let Ctx::Grouped(g) = ctx {
            if let Some(k) = g.key_named(&e.to_string()) {
                return Ok(BExpr::slot(k, g.keys[k].ty, at));
            }
            // The same key written otherwise (`cor0.col0` for `col0`, `t.*` expanded):
            // bound per row, it computes what a key does.
            if !matches!(e.kind, ExprKind::Literal(_) | ExprKind::Param(_))
                && !contains_aggregate(e)
                && !contains_subquery(e)
                && node_count(e) <= KEY_MATCH_NODES
            {
                if let Ok(b) = self.expr(e, scope, &mut Ctx::Row("GROUP BY")) {
                    if let Some(k) = g.key_like(&b) {
                        return Ok(BExpr::slot(k, g.keys[k].ty, at));
                    }
                }
            }
            if let ExprKind::Function {
                name,
                args,
                star,
                distinct,
            } = &e.kind
            {
                if is_aggregate_call(name, args, *star) {
                    let call = self.aggregate(name, args, *star, *distinct, scope, at)?;
                    let ty = call.ty;
                    g.aggs.push(call);
                    let slot = g.keys.len() + g.aggs.len() - 1;
                    return Ok(BExpr::slot(slot, ty, at));
                }
            }
            if let ExprKind::Column(parts) = &e.kind {
                let written = parts
                    .iter()
                    .map(|p| p.value.as_str())
                    .collect::<Vec<_>>()
                    .join(".");
                // Resolve first, so a wrong name is reported as such.
                self.find_column(parts, scope)?;
                return Err(PlanError::invalid(
                    at,
                    format!("{written} must appear in GROUP BY or be inside an aggregate function"),
                ));
            }
        }
        let boxed = |b: BExpr| Box::new(b);
        Ok(match &e.kind {
            ExprKind::Literal(l) => BExpr::constant(
                match l {
                    Literal::Null => Value::Null,
                    Literal::Bool(b) => Value::Bool(*b),
                    Literal::Int(i) => Value::Int(*i),
                    Literal::Float(x) => Value::Float(*x),
                    Literal::Text(s) => Value::Text(s.clone()),
                },
                at,
            ),
            ExprKind::Param(p) => {
                let value = self.param(p, at)?;
                let ty = DataType::of(&value);
                BExpr::new(
                    BKind::Param {
                        param: p.clone(),
                        value,
                    },
                    ty,
                    at,
                )
            }
            ExprKind::Column(parts) => {
                let c = self.find_column(parts, scope)?;
                let slot = scope.slot(c.relation, c.kind, c.ty);
                BExpr::slot(slot, c.ty, at)
            }
            ExprKind::Unary(op, x) => {
                let b = self.expr(x, scope, ctx)?;
                match op {
                    UnaryOp::Plus if b.ty.is_numeric() || b.ty == DataType::Null => b,
                    UnaryOp::Neg if b.ty.is_numeric() || b.ty == DataType::Null => {
                        let ty = b.ty;
                        BExpr::new(BKind::Neg(boxed(b)), ty, at)
                    }
                    UnaryOp::Not => {
                        let b = self.expect_bool(b, "NOT")?;
                        BExpr::new(BKind::Not(boxed(b)), DataType::Bool, at)
                    }
                    _ => {
                        return Err(PlanError::type_mismatch(
                            at,
                            format!(
                                "cannot apply {} to {}",
                                if *op == UnaryOp::Neg { "-" } else { "+" },
                                b.ty
                            ),
                        ));
                    }
                }
            }
            ExprKind::Binary(l, op, r) => {
                let l = self.expr(l, scope, ctx)?;
                let r = self.expr(r, scope, ctx)?;
                self.binary(l, *op, r, at)?
            }
            ExprKind::IsNull { expr, negated } => {
                let b = self.expr(expr, scope, ctx)?;
                BExpr::new(
                    BKind::IsNull {
                        expr: boxed(b),
                        negated: *negated,
                    },
                    DataType::Bool,
                    at,
                )
            }
            ExprKind::InList { expr, list, negated } => {
                let b = self.expr(expr, scope, ctx)?;
                let mut items = Vec::new();
                // The type of each `b = item`, folded: a REAL column stays REAL against
                // float constants, as in `=`.
                let mut ty = None;
                for x in list {
                    let bx = self.expr(x, scope, ctx)?;
                    let pair = comparison_type(&b, &bx).ok_or_else(|| {
                        PlanError::type_mismatch(at, format!("cannot compare {} with {}", b.ty, bx.ty))
                    })?;
                    ty = Some(match ty {
                        None => pair,
                        Some(t) => comparison_unify(t, pair).ok_or_else(|| {
                            PlanError::type_mismatch(at, format!("IN list items mix {t} and {}", bx.ty))
                        })?,
                    });
                    items.push(bx);
                }
                let ty = ty.unwrap_or(b.ty);
                let b = self.compare_operand(b, ty)?;
                let items = items
                    .into_iter()
                    .map(|x| self.compare_operand(x, ty))
                    .collect::<Result<_>>()?;
                BExpr::new(
                    BKind::InList {
                        expr: boxed(b),
                        list: items,
                        negated: *negated,
                    },
                    DataType::Bool,
                    at,
                )
            }
            ExprKind::InSubquery { expr, query, negated } => {
                let b = self.expr(expr, scope, ctx)?;
                let plan = self.query(query)?;
                if plan.columns.len() != 1 {
                    return Err(PlanError::invalid(
                        query.at,
                        format!("IN (SELECT …) needs one column, found {}", plan.columns.len()),
                    ));
                }
                let column = BExpr::slot(0, plan.columns[0].ty, query.at);
                let ty = comparison_type(&b, &column).ok_or_else(|| {
                    PlanError::type_mismatch(
                        at,
                        format!("cannot compare {} with {}", b.ty, plan.columns[0].ty),
                    )
                })?;
                let b = self.compare_operand(b, ty)?;
                self.single_use.set(true);
                BExpr::new(
                    BKind::InSubquery {
                        expr: boxed(b),
                        query: Box::new(plan),
                        negated: *negated,
                        ty,
                        values: Default::default(),
                    },
                    DataType::Bool,
                    at,
                )
            }
            ExprKind::Between {
                expr,
                low,
                high,
                negated,
            } => {
                let b = self.expr(expr, scope, ctx)?;
                let b2 = self.expr(expr, scope, ctx)?;
                let lo = self.expr(low, scope, ctx)?;
                let hi = self.expr(high, scope, ctx)?;
                let ge = self.binary(b, BinaryOp::GtEq, lo, at)?;
                let le = self.binary(b2, BinaryOp::LtEq, hi, at)?;
                let both = BExpr::new(BKind::And(boxed(ge), boxed(le)), DataType::Bool, at);
                if *negated {
                    BExpr::new(BKind::Not(boxed(both)), DataType::Bool, at)
                } else {
                    both
                }
            }
            ExprKind::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
                escape,
            } => {
                let b = self.expr(expr, scope, ctx)?;
                let p = self.expr(pattern, scope, ctx)?;
                for x in [&b, &p] {
                    if !matches!(x.ty, DataType::Text | DataType::Null) {
                        return Err(PlanError::type_mismatch(
                            x.at,
                            format!("LIKE needs TEXT, found {}", x.ty),
                        ));
                    }
                }
                let escape = match escape {
                    None => None,
                    Some(e) => match self.like_escape(e, scope, ctx)? {
                        Some(c) => Some(c),
                        // ESCAPE NULL: the result is NULL.
                        None => return Ok(BExpr::new(BKind::Const(Value::Null), DataType::Bool, at)),
                    },
                };
                BExpr::new(
                    BKind::Like {
                        expr: boxed(b),
                        pattern: boxed(p),
                        negated: *negated,
                        case_insensitive: *case_insensitive,
                        escape,
                    },
                    DataType::Bool,
                    at,
                )
            }
            ExprKind::Case {
                operand,
                branches,
                otherwise,
            } => {
                let mut conds = Vec::new();
                let mut values = Vec::new();
                for (w, t) in branches {
                    let cond = match operand {
                        Some(o) => {
                            let ob = self.expr(o, scope, ctx)?;
                            let wb = self.expr(w, scope, ctx)?;
                            self.binary(ob, BinaryOp::Eq, wb, w.at)?
                        }
                        None => {
                            let wb = self.expr(w, scope, ctx)?;
                            self.expect_bool(wb, "CASE WHEN")?
                        }
                    };
                    conds.push(cond);
                    values.push(self.expr(t, scope, ctx)?);
                }
                let otherwise = match otherwise {
                    Some(o) => Some(self.expr(o, scope, ctx)?),
                    None => None,
                };
                let mut ty = DataType::Null;
                for v in values.iter().chain(otherwise.iter()) {
                    ty = unify(ty, v, "CASE branches")?;
                }
                let branches = conds
                    .into_iter()
                    .zip(values)
                    .map(|(c, v)| Ok((c, self.cast(v, ty)?)))
                    .collect::<Result<_>>()?;
                let otherwise = match otherwise {
                    Some(o) => Some(boxed(self.cast(o, ty)?)),
                    None => None,
                };
                BExpr::new(BKind::Case { branches, otherwise }, ty, at)
            }
            ExprKind::Cast { expr, ty } => {
                let b = self.expr(expr, scope, ctx)?;
                let to = DataType::from(*ty);
                let ok = b.ty == DataType::Null
                    || b.ty == to
                    || b.ty == DataType::Text
                    || to == DataType::Text
                    || (b.ty.is_numeric() && to.is_numeric())
                    || matches!(
                        (b.ty, to),
                        (DataType::Int, DataType::Bool | DataType::Entity)
                            | (DataType::Bool | DataType::Entity, DataType::Int)
                    );
                if !ok {
                    return Err(PlanError::type_mismatch(
                        at,
                        format!("cannot cast {} to {}", b.ty, to),
                    ));
                }
                self.cast(b, to)?
            }
            ExprKind::Function {
                name,
                args,
                star,
                distinct,
            } => self.function(name, args, *star, *distinct, scope, ctx, at)?,
            ExprKind::Subquery(q) => {
                let plan = self.query(q)?;
                if plan.columns.len() != 1 {
                    return Err(PlanError::invalid(
                        q.at,
                        format!("a scalar subquery needs one column, found {}", plan.columns.len()),
                    ));
                }
                let ty = plan.columns[0].ty;
                self.single_use.set(true);
                BExpr::new(
                    BKind::Subquery {
                        query: Box::new(plan),
                        value: Default::default(),
                    },
                    ty,
                    at,
                )
            }
            ExprKind::Exists { query, negated } => {
                let plan = self.query(query)?;
                self.single_use.set(true);
                BExpr::new(
                    BKind::Exists {
                        query: Box::new(plan),
                        negated: *negated,
                        value: Default::default(),
                    },
                    DataType::Bool,
                    at,
                )
            }
            ExprKind::Tuple(_) => {
                return Err(PlanError::Unsupported {
                    what: "a row value (a, b, …)".into(),
                    at,
                });
            }
        })
    }

    /// The character of `ESCAPE 'c'`: a constant (or parameter) of one character; `None`
    /// for NULL.
    fn like_escape(&self, e: &ast::Expr, scope: &mut Scope, ctx: &mut Ctx<'_>) -> Result<Option<char>> {
        let b = self.expr(e, scope, ctx)?;
        self.uses_value(&b);
        let one = |s: &str| {
            let mut chars = s.chars();
            chars.next().filter(|_| chars.next().is_none())
        };
        match b.as_const() {
            Some(Value::Null) => Ok(None),
            Some(Value::Text(s)) if one(s).is_some() => Ok(one(s)),
            _ => Err(PlanError::type_mismatch(
                e.at,
                "ESCAPE takes one character as a constant TEXT, e.g. ESCAPE '\\'",
            )),
        }
    }

    fn binary(&self, l: BExpr, op: BinaryOp, r: BExpr, at: Location) -> Result<BExpr> {
        let b = Box::new;
        Ok(match op {
            BinaryOp::And | BinaryOp::Or => {
                let l = self.expect_bool(l, op.symbol())?;
                let r = self.expect_bool(r, op.symbol())?;
                let kind = if op == BinaryOp::And {
                    BKind::And(b(l), b(r))
                } else {
                    BKind::Or(b(l), b(r))
                };
                BExpr::new(kind, DataType::Bool, at)
            }
            BinaryOp::Concat => {
                if l.ty != DataType::Text
                    && r.ty != DataType::Text
                    && !(l.ty == DataType::Null || r.ty == DataType::Null)
                {
                    return Err(PlanError::type_mismatch(
                        at,
                        format!("|| joins TEXT, found {} and {}", l.ty, r.ty),
                    ));
                }
                let l = self.cast(l, DataType::Text)?;
                let r = self.cast(r, DataType::Text)?;
                BExpr::new(BKind::Concat(b(l), b(r)), DataType::Text, at)
            }
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod => {
                let ty = numeric_common(&l, &r).ok_or_else(|| {
                    PlanError::type_mismatch(
                        at,
                        format!("cannot apply {} to {} and {}", op.symbol(), l.ty, r.ty),
                    )
                })?;
                let l = self.cast(l, ty)?;
                let r = self.cast(r, ty)?;
                let aop = match op {
                    BinaryOp::Add => ArithOp::Add,
                    BinaryOp::Sub => ArithOp::Sub,
                    BinaryOp::Mul => ArithOp::Mul,
                    BinaryOp::Div => ArithOp::Div,
                    _ => ArithOp::Mod,
                };
                BExpr::new(BKind::Arith(aop, b(l), b(r)), ty, at)
            }
            _ => {
                let ty = comparison_type(&l, &r).ok_or_else(|| {
                    PlanError::type_mismatch(at, format!("cannot compare {} with {}", l.ty, r.ty))
                })?;
                let l = self.compare_operand(l, ty)?;
                let r = self.compare_operand(r, ty)?;
                let cop = match op {
                    BinaryOp::Eq => CmpOp::Eq,
                    BinaryOp::NotEq => CmpOp::NotEq,
                    BinaryOp::Lt => CmpOp::Lt,
                    BinaryOp::LtEq => CmpOp::LtEq,
                    BinaryOp::Gt => CmpOp::Gt,
                    _ => CmpOp::GtEq,
                };
                BExpr::new(BKind::Compare(cop, b(l), b(r)), DataType::Bool, at)
            }
        })
    }

    fn aggregate(
        &self,
        name: &Ident,
        args: &[ast::Expr],
        star: bool,
        distinct: bool,
        scope: &mut Scope,
        at: Location,
    ) -> Result<AggCall> {
        let n = name.value.to_ascii_lowercase();
        if star {
            if n != "count" || distinct {
                return Err(PlanError::invalid(
                    at,
                    format!("{n}(*) is not a function; count(*) is"),
                ));
            }
            return Ok(AggCall {
                func: AggFunc::CountStar,
                arg: None,
                distinct: false,
                ty: DataType::Int,
            });
        }
        let [arg] = args else {
            return Err(PlanError::invalid(at, format!("{n} takes one argument")));
        };
        if contains_aggregate(arg) {
            return Err(PlanError::invalid(arg.at, "aggregate functions cannot be nested"));
        }
        let b = self.expr(arg, scope, &mut Ctx::Row("an aggregate's argument"))?;
        let (func, ty) = match n.as_str() {
            "count" => (AggFunc::Count, DataType::Int),
            "sum" | "avg" if !(b.ty.is_numeric() || b.ty == DataType::Null) => {
                return Err(PlanError::type_mismatch(
                    arg.at,
                    format!("{n} needs a number, found {}", b.ty),
                ));
            }
            "sum" => (
                AggFunc::Sum,
                if b.ty == DataType::Int {
                    DataType::Int
                } else {
                    DataType::Float
                },
            ),
            "avg" => (AggFunc::Avg, DataType::Float),
            "min" => (AggFunc::Min, b.ty),
            _ => (AggFunc::Max, b.ty),
        };
        Ok(AggCall {
            func,
            arg: Some(b),
            distinct,
            ty,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn function(
        &self,
        name: &Ident,
        args: &[ast::Expr],
        star: bool,
        distinct: bool,
        scope: &mut Scope,
        ctx: &mut Ctx<'_>,
        at: Location,
    ) -> Result<BExpr> {
        let n = name.value.to_ascii_lowercase();
        if is_aggregate_call(name, args, star) {
            let clause = match ctx {
                Ctx::Row(c) => *c,
                Ctx::Grouped(_) => "here",
            };
            return Err(PlanError::invalid(
                at,
                format!("aggregate function {n} is not allowed in {clause}"),
            ));
        }
        if star || distinct {
            return Err(PlanError::invalid(
                at,
                format!("{n}() does not take * or DISTINCT"),
            ));
        }
        if n == "has" {
            let [
                ast::Expr {
                    kind: ExprKind::Column(parts),
                    ..
                },
            ] = args
            else {
                return Err(PlanError::invalid(
                    at,
                    "has() takes a component name: has(Velocity)",
                ));
            };
            let [component] = parts.as_slice() else {
                return Err(PlanError::invalid(
                    at,
                    "has() takes a component name: has(Velocity)",
                ));
            };
            let id = self.component(component)?.id();
            let Some(r) = scope.first_entity else {
                return Err(PlanError::invalid(at, "has() needs components in FROM"));
            };
            let slot = scope.slot(r, ColKind::Scan(ScanColumn::Has(id)), DataType::Bool);
            return Ok(BExpr::slot(slot, DataType::Bool, at));
        }
        let Some(function) = func::lookup(&n) else {
            return Err(PlanError::UnknownFunction {
                name: name.value.clone(),
                at,
                hint: format!(
                    " (functions: {}, has; aggregates: {})",
                    func::list(),
                    AGGREGATES.join(", ")
                ),
            });
        };
        let bound = if function.properties().points {
            match points(args) {
                Some(coordinates) => coordinates
                    .into_iter()
                    .map(|c| self.expr(c, scope, ctx))
                    .collect::<Result<Vec<_>>>()?,
                // Not two points: the function's own arity message says how it reads.
                None => Vec::new(),
            }
        } else {
            args.iter()
                .map(|a| self.expr(a, scope, ctx))
                .collect::<Result<Vec<_>>>()?
        };
        let operands: Vec<_> = bound.iter().map(operand).collect();
        let signature = function.signature(&n, &operands).map_err(|m| match m {
            Mismatch::Arity(message) => PlanError::invalid(at, message),
            Mismatch::Type { arg, message } => {
                PlanError::type_mismatch(arg.and_then(|i| bound.get(i)).map_or(at, |b| b.at), message)
            }
        })?;
        let args = bound
            .into_iter()
            .zip(signature.args)
            .map(|(b, convert)| match convert {
                Convert::To(ty) => self.cast(b, ty),
                Convert::Operand(ty) => self.compare_operand(b, ty),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(BExpr::new(BKind::Call(function, args), signature.result, at))
    }
}

/// The coordinates of a call written as two points of the same size,
/// `f((x, y), (a, b))`: the first point's, then the second's.
fn points(args: &[ast::Expr]) -> Option<Vec<&ast::Expr>> {
    let [
        ast::Expr {
            kind: ExprKind::Tuple(p),
            ..
        },
        ast::Expr {
            kind: ExprKind::Tuple(q),
            ..
        },
    ] = args
    else {
        return None;
    };
    (p.len() == q.len()).then(|| p.iter().chain(q).collect())
}

fn single(plan: SelectPlan, columns: Vec<OutputColumn>) -> QueryPlan {
    QueryPlan {
        body: SetPlan::Select(Box::new(plan)),
        order_by: Vec::new(),
        limit: None,
        offset: 0,
        columns,
    }
}

fn field_list(def: &ComponentDef) -> String {
    if def.fields().is_empty() {
        return "none: it is a tag".into();
    }
    def.fields()
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// An AST expression that names `c` unambiguously.
fn column_expr(c: &NamedColumn, at: Location) -> ast::Expr {
    let mut parts = Vec::new();
    if let Some(q) = c.qualifiers.first() {
        parts.push(Ident {
            value: q.value.clone(),
            quoted: true,
            at,
        });
    }
    parts.push(Ident {
        value: c.name.clone(),
        quoted: true,
        at,
    });
    ast::Expr::new(ExprKind::Column(parts), at)
}

fn sort_key(o: &ast::OrderItem, column: usize) -> SortKey {
    // PostgreSQL's default: NULLs sort as if larger than any value.
    SortKey {
        column,
        desc: o.desc,
        nulls_first: o.nulls_first.unwrap_or(o.desc),
    }
}

/// `ORDER BY 2` or `ORDER BY name` referring to an output column.
fn output_reference(e: &ast::Expr, columns: &[OutputColumn], clause: &str) -> Result<Option<usize>> {
    let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    output_reference_named(e, &names, clause)
}

/// The output column `e` names: a position (1-based; one outside the select list is an
/// error, as in SQLite and PostgreSQL) or a unique output name.
fn output_reference_named(e: &ast::Expr, names: &[String], clause: &str) -> Result<Option<usize>> {
    Ok(match &e.kind {
        ExprKind::Literal(Literal::Int(k)) if *k >= 1 && (*k as usize) <= names.len() => {
            Some(*k as usize - 1)
        }
        ExprKind::Literal(Literal::Int(k)) => {
            return Err(PlanError::invalid(
                e.at,
                format!(
                    "{clause} position {k} is not in the select list (it has {} column{})",
                    names.len(),
                    if names.len() == 1 { "" } else { "s" }
                ),
            ));
        }
        ExprKind::Column(parts) => {
            let written = parts
                .iter()
                .map(|p| p.value.as_str())
                .collect::<Vec<_>>()
                .join(".");
            let mut found = names
                .iter()
                .enumerate()
                .filter(|(_, n)| n.eq_ignore_ascii_case(&written));
            match (found.next(), found.next()) {
                (Some((i, _)), None) => Some(i),
                _ => None,
            }
        }
        _ => None,
    })
}

/// Folds `e` into the common type so far, for CASE branches, VALUES columns and the like.
fn unify(so_far: DataType, e: &BExpr, what: &str) -> Result<DataType> {
    unify_types(so_far, e.ty)
        .ok_or_else(|| PlanError::type_mismatch(e.at, format!("{what} mix {so_far} and {}", e.ty)))
}
