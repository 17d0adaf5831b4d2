//! INSERT, UPDATE and DELETE, which sqlparser reads, made ecsql's writes, with their
//! RETURNING lists (SPAWN's and DESPAWN's too).
//!
//! Invariants: a write names one component (UPDATE takes the others after FROM, DELETE
//! none); INSERT's conflict clauses (OR REPLACE, OR IGNORE, REPLACE INTO, ON CONFLICT)
//! come out as one `OnConflict`.

use sqlparser::ast as sql;

use super::Result;
use crate::parse::ast::*;
use crate::parse::error::ParseError;
use crate::parse::parser::StatementParser;

impl StatementParser<'_> {
    /// `write` with its RETURNING list, when it has one.
    pub(in crate::parse) fn returning(
        &mut self,
        write: StatementKind,
        returning: Option<Vec<sql::SelectItem>>,
    ) -> Result<StatementKind> {
        Ok(match returning {
            None => write,
            Some(items) => StatementKind::Returning {
                write: Box::new(write),
                items: self.select_items(items, self.statement_at)?.into_vec(),
            },
        })
    }

    /// INSERT, UPDATE and DELETE, parsed by sqlparser, into ecsql's statements.
    pub(in crate::parse) fn dml(&mut self, statement: sql::Statement) -> Result<StatementKind> {
        let at = self.statement_at;
        match statement {
            sql::Statement::Insert(insert) => {
                let component = match insert.table {
                    sql::TableObject::TableName(n) => self.single_name(n)?,
                    other => return Err(self.unsupported(at, format!("INSERT INTO {other}"))),
                };
                if !insert.assignments.is_empty() || insert.partitioned.is_some() {
                    return Err(self.unsupported(at, "this INSERT clause"));
                }
                let columns = insert
                    .columns
                    .into_iter()
                    .map(|c| self.single_name(c))
                    .collect::<Result<_>>()?;
                let source = match insert.source {
                    Some(q) => self.query(*q)?,
                    None => return Err(ParseError::new(at, "expected VALUES or SELECT after INSERT INTO")),
                };
                let mut on_conflict = match insert.or {
                    None => OnConflict::Fail,
                    Some(sql::SqliteOnConflict::Replace) => OnConflict::Replace,
                    Some(sql::SqliteOnConflict::Ignore) => OnConflict::DoNothing,
                    Some(other) => return Err(self.unsupported(at, format!("INSERT OR {other}"))),
                };
                if insert.replace_into {
                    on_conflict = OnConflict::Replace;
                }
                match insert.on {
                    None => {}
                    Some(sql::OnInsert::OnConflict(c)) => {
                        on_conflict = match c.action {
                            sql::OnConflictAction::DoNothing => OnConflict::DoNothing,
                            sql::OnConflictAction::DoUpdate(u) => {
                                if u.selection.is_some() {
                                    return Err(self.unsupported(at, "ON CONFLICT DO UPDATE … WHERE"));
                                }
                                OnConflict::DoUpdate(self.assignments(u.assignments)?)
                            }
                        }
                    }
                    Some(other) => return Err(self.unsupported(at, other)),
                }
                let write = StatementKind::Insert {
                    component,
                    columns,
                    source,
                    on_conflict,
                };
                self.returning(write, insert.returning)
            }
            sql::Statement::Update(update) => {
                if update.or.is_some() || !update.order_by.is_empty() || update.limit.is_some() {
                    return Err(self.unsupported(at, "this UPDATE clause"));
                }
                if !update.table.joins.is_empty() {
                    return Err(ParseError::new(
                        at,
                        "UPDATE takes one component; list the others after FROM",
                    ));
                }
                let (target, alias) = match self.table_ref(update.table.relation)? {
                    TableRef::Named { name, alias } => (name, alias),
                    _ => return Err(ParseError::new(at, "expected a component name after UPDATE")),
                };
                let assignments = self.assignments(update.assignments)?;
                let from = match update.from {
                    None => Vec::new(),
                    Some(sql::UpdateTableFromKind::AfterSet(t))
                    | Some(sql::UpdateTableFromKind::BeforeSet(t)) => t
                        .into_iter()
                        .map(|t| self.translate_from_item(t))
                        .collect::<Result<_>>()?,
                };
                let filter = match update.selection {
                    Some(e) => Some(self.expr(e)?),
                    None => None,
                };
                let write = StatementKind::Update {
                    target,
                    alias,
                    assignments,
                    from,
                    filter,
                };
                self.returning(write, update.returning)
            }
            sql::Statement::Delete(delete) => {
                if !delete.tables.is_empty()
                    || delete.using.is_some()
                    || !delete.order_by.is_empty()
                    || delete.limit.is_some()
                {
                    return Err(self.unsupported(at, "this DELETE clause"));
                }
                let mut tables = match delete.from {
                    sql::FromTable::WithFromKeyword(t) | sql::FromTable::WithoutKeyword(t) => t,
                };
                if tables.iter().any(|t| !t.joins.is_empty()) {
                    return Err(ParseError::new(
                        at,
                        "DELETE FROM takes exactly one component, without joins (to remove it from \
                         the entities a join finds: DELETE FROM C WHERE id IN (SELECT … JOIN …))",
                    ));
                }
                if tables.len() != 1 {
                    return Err(ParseError::new(at, "DELETE FROM takes exactly one component"));
                }
                let component = match self.table_ref(tables.remove(0).relation)? {
                    TableRef::Named { name, alias: None } => name,
                    _ => {
                        return Err(ParseError::new(
                            at,
                            "expected a component name (without alias) after DELETE FROM",
                        ));
                    }
                };
                let filter = match delete.selection {
                    Some(e) => Some(self.expr(e)?),
                    None => None,
                };
                self.returning(StatementKind::Delete { component, filter }, delete.returning)
            }
            other => Err(self.unsupported(at, format!("the statement {other}"))),
        }
    }

    fn assignments(&mut self, list: Vec<sql::Assignment>) -> Result<Vec<Assignment>> {
        list.into_iter()
            .map(|a| {
                let field = match a.target {
                    sql::AssignmentTarget::ColumnName(n) => {
                        let mut parts = self.object_name(n)?;
                        // `SET Position.x = …` names the target's own field.
                        match parts.pop() {
                            Some(last) => last,
                            None => {
                                return Err(ParseError::new(
                                    self.statement_at,
                                    "expected a field name in SET",
                                ));
                            }
                        }
                    }
                    sql::AssignmentTarget::Tuple(_) => {
                        return Err(self.unsupported(self.statement_at, "SET (a, b) = …"));
                    }
                };
                Ok(Assignment {
                    field,
                    value: self.expr(a.value)?,
                })
            })
            .collect()
    }
}
