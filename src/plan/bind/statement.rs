//! Statements that are not queries or writes of rows: CREATE/DROP COMPONENT, SHOW,
//! DESCRIBE, EXPLAIN, the index DDL, transactions; and the dispatch of every statement
//! to its binder.

use super::scope::{Ctx, Scope};
use super::{Binder, Result};

use crate::parse as ast;
use crate::parse::{Ident, StatementKind};
use crate::plan::{OutputColumn, Plan, PlanError, PlanErrorKind, QueryPlan, SetPlan};
use crate::storage::{DEFAULT_KEEP, FieldDef, FieldType, StorageKind, Value};
use crate::vector::{DataType, assignable};

impl<'a> Binder<'a> {
    /// `s`'s plan. A query, an UPDATE and a SPAWN, which a program writes out as new text
    /// most often, are bound here; every other kind past a call (`other_statement`), so
    /// that their many arms' locals do not widen this frame, which every text's binding
    /// goes through (a wide frame spreads the stack over more cache lines).
    pub(super) fn statement(&self, s: &ast::Statement) -> Result<Plan> {
        Ok(match &s.kind {
            StatementKind::Select(q) => Plan::Query(self.query(q)?),
            StatementKind::Spawn { at, items, source } => {
                Plan::Spawn(self.spawn(at.as_ref(), items, source.as_ref(), s.at)?)
            }
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
            _ => return self.other_statement(s),
        })
    }

    /// `statement` of every kind it does not bind itself.
    #[inline(never)]
    fn other_statement(&self, s: &ast::Statement) -> Result<Plan> {
        Ok(match &s.kind {
            StatementKind::CreateComponent {
                name,
                fields,
                sparse,
                if_not_exists,
            } => self.create_component(name, fields, *sparse, *if_not_exists)?,
            StatementKind::CreateTag {
                name,
                sparse,
                if_not_exists,
            } => self.create_component(name, &[], *sparse, *if_not_exists)?,
            StatementKind::DropComponent { name, if_exists } => {
                let component = match self.component(name) {
                    Ok(def) => Some(def.id()),
                    Err(_) if *if_exists => None,
                    Err(e) => return Err(e),
                };
                Plan::DropComponent {
                    component,
                    name: name.value.to_string(),
                }
            }
            StatementKind::ShowComponents => Plan::ShowComponents,
            StatementKind::ShowArchetypes => Plan::ShowArchetypes,
            StatementKind::ShowIndexes => Plan::ShowIndexes,
            StatementKind::CreateIndex {
                name,
                method,
                if_not_exists,
                component,
                keys,
                predicate,
            } => self.create_index(
                name.as_ref(),
                *method,
                *if_not_exists,
                component,
                keys,
                predicate.as_ref(),
            )?,
            StatementKind::DropIndex { name, if_exists } => Plan::DropIndex {
                name: name.value.to_string(),
                if_exists: *if_exists,
            },
            StatementKind::Describe { name } => match self.event(name) {
                Some(event) => Plan::DescribeEvent(event.id()),
                None => Plan::Describe(self.component(name)?.id()),
            },
            StatementKind::Select(_) | StatementKind::Spawn { .. } | StatementKind::Update { .. } => {
                return self.statement(s);
            }
            StatementKind::Insert {
                component,
                columns,
                source,
                on_conflict,
            } => match self.event(component) {
                Some(event) => Plan::Emit(self.emit(event, columns, source, on_conflict)?),
                None => Plan::Insert(self.insert(component, columns, source, on_conflict, s.at)?),
            },
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
                let mut scope = Scope::default();
                for e in ids {
                    let b = self.expr(e, &mut scope, &mut Ctx::Row("DESPAWN"))?;
                    rows.push(vec![self.assign_cast(b, DataType::Entity, &"an entity id")?]);
                }
                let columns = vec![OutputColumn::id()];
                Plan::Despawn {
                    ids: QueryPlan {
                        body: SetPlan::Values(rows),
                        order_by: Vec::new(),
                        limit: None,
                        offset: 0,
                        columns: columns.into(),
                        point: std::sync::OnceLock::new(),
                    },
                }
            }
            StatementKind::DespawnFrom { source } => Plan::Despawn {
                ids: self.id_query(&source.from, source.filter.as_ref(), s.at)?,
            },
            StatementKind::Explain(inner) => Plan::Explain(Box::new(self.statement(inner)?)),
            StatementKind::Subscribe(query) => Plan::Subscribe(Box::new(self.statement(query)?)),
            StatementKind::ExplainAnalyze { statement, .. } if !statement.kind.runs_in_system() => {
                return Err(PlanError::invalid(
                    statement.at,
                    format!(
                        "EXPLAIN ANALYZE runs queries and writes of rows (SELECT, INSERT, UPDATE, DELETE, SPAWN, DESPAWN), not {}",
                        statement.kind.verb()
                    ),
                ));
            }
            StatementKind::ExplainAnalyze {
                statement,
                timing,
                keep,
            } => Plan::ExplainAnalyze {
                plan: Box::new(self.statement(statement)?),
                timing: *timing,
                keep: *keep,
            },
            StatementKind::Returning { write, items } => {
                let inner = ast::Statement {
                    kind: (**write).clone(),
                    at: s.at,
                    params: s.params.clone(),
                };
                let mut write_plan = self.statement(&inner)?;
                if let Plan::Update(u) = &mut write_plan {
                    u.returning = true;
                    u.decide_direct();
                }
                Plan::Returning {
                    query: Box::new(self.returning(write, items, s.at)?),
                    write: Box::new(write_plan),
                }
            }
            StatementKind::Begin(_) => Plan::Begin,
            StatementKind::Commit => Plan::Commit,
            StatementKind::Rollback => Plan::Rollback,
            StatementKind::Pragma { name, value } => Plan::Pragma {
                name: name.as_ref().map(|n| n.value.to_ascii_lowercase()),
                value: value.clone(),
            },
            StatementKind::CreateEvent { name, fields, keep } => {
                self.check_new_name(name)?;
                Plan::CreateEvent {
                    name: name.value.to_string(),
                    fields: self.field_defs(fields)?,
                    keep: keep.unwrap_or(DEFAULT_KEEP),
                }
            }
            StatementKind::DropEvent { name, if_exists } => match self.event(name) {
                Some(queue) => Plan::DropEvent {
                    event: Some(queue.id()),
                },
                None if *if_exists => Plan::DropEvent { event: None },
                None => return Err(self.unknown_event(name)),
            },
            StatementKind::CopyTo { query, path, options } => self.copy_to(query, path, options)?,
            StatementKind::CopyFrom {
                component,
                columns,
                path,
                options,
            } => self.copy_from(component, columns, path, options)?,
            // Listed, not `_`: a statement kind added later must say where it is run.
            StatementKind::CreateSystem(_)
            | StatementKind::DropSystem { .. }
            | StatementKind::AlterSystem { .. }
            | StatementKind::CreatePhase { .. }
            | StatementKind::DropPhase { .. }
            | StatementKind::ShowSystems
            | StatementKind::ShowSystemRuns
            | StatementKind::Tick { .. }
            | StatementKind::ExplainTick
            | StatementKind::ShowEvents
            | StatementKind::Save { .. }
            | StatementKind::Load { .. }
            | StatementKind::Checkpoint
            | StatementKind::SetVariable { .. }
            | StatementKind::ShowVariable { .. }
            | StatementKind::CopySubscribe { .. } => {
                return Err(PlanError::invalid(
                    s.at,
                    format!("{} is run by the connection, not planned", s.kind.verb()),
                ));
            }
        })
    }

    fn unknown_event(&self, name: &Ident) -> PlanError {
        let known: Vec<&str> = self.world.events().map(|e| e.name()).collect();
        let hint = if known.is_empty() {
            " (no events are declared: CREATE EVENT first)".to_owned()
        } else {
            format!(" (declared: {})", known.join(", "))
        };
        PlanError::invalid(name.at, format!("unknown event {}{hint}", name.value))
    }

    /// A name about to be declared must not be a component's or an event's already.
    fn check_new_name(&self, name: &Ident) -> Result<()> {
        if self.world.component_by_name(&name.value).is_ok() {
            return Err(PlanError::new(
                name.at,
                PlanErrorKind::ComponentExists {
                    name: name.value.to_string(),
                },
            ));
        }
        if self.world.event_by_name(&name.value).is_ok() {
            return Err(PlanError::invalid(
                name.at,
                format!(
                    "event {} already exists (components and events share names)",
                    name.value
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn create_component(
        &self,
        name: &Ident,
        fields: &[ast::FieldSpec],
        sparse: bool,
        if_not_exists: bool,
    ) -> Result<Plan> {
        // IF NOT EXISTS: a component of that name is left as it is, whatever its fields (as
        // SQL's CREATE TABLE IF NOT EXISTS leaves a table).
        let exists = if_not_exists && self.world.component_by_name(&name.value).is_ok();
        if !exists {
            self.check_new_name(name)?;
        }
        Ok(Plan::CreateComponent {
            name: name.value.to_string(),
            fields: self.field_defs(fields)?,
            storage: if sparse {
                StorageKind::Sparse
            } else {
                StorageKind::Dense
            },
            if_not_exists,
        })
    }

    /// The fields of a component or event being declared, their defaults checked.
    fn field_defs(&self, fields: &[ast::FieldSpec]) -> Result<Vec<FieldDef>> {
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
            let mut def = FieldDef::new(f.name.value.as_str(), f.ty);
            if let Some(d) = &f.default {
                let b = self.expr(d, &mut Scope::default(), &mut Ctx::Row("DEFAULT"))?;
                let to = DataType::from(f.ty);
                self.uses_value(&b);
                self.hint(&b, to);
                let Some(value) = b.as_const().cloned() else {
                    return Err(PlanError::invalid(d.at, "a DEFAULT must be a constant"));
                };
                let value = if assignable(b.ty, to) {
                    // Stored as every value is (a float into INT must be whole).
                    crate::vector::store_value(&value, to, &format!("the DEFAULT of {}", f.name.value))
                        .map_err(|m| PlanError::type_mismatch(d.at, m))?
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
        Ok(defs)
    }
}
