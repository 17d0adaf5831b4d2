//! Queries: set operations (UNION, EXCEPT, INTERSECT), VALUES, ORDER BY (by output name,
//! position or expression), LIMIT and OFFSET.

use super::expr::unify;
use super::scope::{Ctx, Scope};
use super::{Binder, Result};

use crate::location::Location;
use crate::parse as ast;
use crate::parse::{ExprKind, Literal};
use crate::plan::{
    BoundExpr, JoinKind, JoinPlan, Output, OutputColumn, PlanError, QueryPlan, RelationSource, SelectPlan,
    SelectText, SetPlan, SortKey,
};
use crate::storage::Value;
use crate::vector::{DataType, unify_types};

impl<'a> Binder<'a> {
    pub(super) fn query(&self, q: &ast::Query) -> Result<QueryPlan> {
        let (limit, offset) = (
            self.count(q.limit.as_ref(), "LIMIT")?,
            self.count(q.offset.as_ref(), "OFFSET")?.unwrap_or(0),
        );
        match &q.body {
            ast::SetExpr::Select(s) => {
                let (plan, columns, order_by) = self.select(s, &q.order_by)?;
                Ok(QueryPlan {
                    body: SetPlan::Select(plan),
                    order_by,
                    limit,
                    offset,
                    columns: columns.into(),
                    point: std::sync::OnceLock::new(),
                })
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
                    columns: columns.into(),
                    point: std::sync::OnceLock::new(),
                })
            }
        }
    }

    pub(super) fn count(&self, e: Option<&ast::Expr>, what: &str) -> Result<Option<usize>> {
        let Some(e) = e else { return Ok(None) };
        let b = self.expr(
            e,
            &mut Scope::default(),
            &mut Ctx::Row(if what == "LIMIT" { "LIMIT" } else { "OFFSET" }),
        )?;
        self.uses_value(&b);
        self.hint(&b, DataType::Int);
        match b.as_const() {
            Some(Value::Int(n)) if *n >= 0 => Ok(Some(*n as usize)),
            Some(Value::Null) if what == "LIMIT" => Ok(None),
            _ => Err(PlanError::type_mismatch(
                e.at,
                format!("{what} takes a constant INT of 0 or more"),
            )),
        }
    }

    #[recursive::recursive]
    pub(super) fn set_expr(&self, body: &ast::SetExpr) -> Result<(SetPlan, Vec<OutputColumn>)> {
        match body {
            ast::SetExpr::Select(s) => {
                let (plan, columns, _) = self.select(s, &[])?;
                Ok((SetPlan::Select(plan), columns))
            }
            ast::SetExpr::Query(q) => {
                let plan = self.query(q)?;
                let columns = plan.columns.clone();
                if plan.order_by.is_empty() && plan.limit.is_none() && plan.offset == 0 {
                    return Ok((plan.body, columns.to_vec()));
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
                    self.label(|| "(subquery)".into()),
                );
                let slots: Vec<usize> = columns.iter().map(|c| scope.new_slot(r, c.ty)).collect();
                let outputs = slots
                    .iter()
                    .zip(columns.iter())
                    .map(|(&s, c)| BoundExpr::slot(s, c.ty, Location::default()))
                    .collect();
                if let RelationSource::Query { slots: s, .. } = &mut scope.relations[r].source {
                    *s = slots;
                }
                let plan = SelectPlan {
                    width: scope.width(),
                    joins: JoinPlan::default(),
                    relations: std::mem::take(&mut scope.relations),
                    filter: None,
                    output: Output::Rows(outputs),
                    distinct: false,
                    explain: SelectText::default(),
                    window: None,
                };
                Ok((SetPlan::Select(Box::new(plan)), columns.to_vec()))
            }
            ast::SetExpr::Values(rows) => {
                let mut bound: Vec<Vec<BoundExpr>> = Vec::new();
                let width = rows.first().map_or(0, Vec::len);
                // No names are in scope in a row of VALUES: one empty scope serves
                // every cell (binding a cell against it leaves it empty).
                let mut scope = Scope::default();
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
                        out.push(self.expr(e, &mut scope, &mut Ctx::Row("VALUES"))?);
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
                        column_at(right, 0),
                        format!("{name} sides have {} and {} columns", lc.len(), rc.len()),
                    ));
                }
                let mut columns = Vec::new();
                for (i, (a, b)) in lc.iter().zip(&rc).enumerate() {
                    let ty = unify_types(a.ty, b.ty).ok_or_else(|| {
                        PlanError::type_mismatch(
                            column_at(right, i),
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
}

/// Where the `i`th column of a set operation's side is written: its select item (or its
/// first row's value), else where its SELECT starts. Walks down left sides without
/// recursion, so a long chain costs no stack.
fn column_at(mut side: &ast::SetExpr, i: usize) -> Location {
    loop {
        match side {
            ast::SetExpr::Select(s) => {
                let all_plain = s
                    .items
                    .iter()
                    .all(|item| matches!(item, ast::SelectItem::Expr { .. }));
                return match s.items.get(i) {
                    Some(ast::SelectItem::Expr { expr, .. }) if all_plain => expr.at,
                    _ => s.at,
                };
            }
            ast::SetExpr::Values(rows) => {
                return rows
                    .first()
                    .and_then(|r| r.get(i))
                    .map_or(Location::default(), |e| e.at);
            }
            ast::SetExpr::SetOp { left, .. } => side = left,
            ast::SetExpr::Query(q) => side = &q.body,
        }
    }
}

pub(super) fn single(plan: Box<SelectPlan>, columns: impl Into<std::sync::Arc<[OutputColumn]>>) -> QueryPlan {
    QueryPlan {
        body: SetPlan::Select(plan),
        order_by: Vec::new(),
        limit: None,
        offset: 0,
        columns: columns.into(),
        point: std::sync::OnceLock::new(),
    }
}

pub(super) fn sort_key(o: &ast::OrderItem, column: usize) -> SortKey {
    // PostgreSQL's default: NULLs sort as if larger than any value.
    SortKey {
        column,
        desc: o.desc,
        nulls_first: o.nulls_first.unwrap_or(o.desc),
    }
}

/// `ORDER BY 2` or `ORDER BY name` referring to an output column.
pub(super) fn output_reference(
    e: &ast::Expr,
    columns: &[OutputColumn],
    clause: &str,
) -> Result<Option<usize>> {
    let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    output_reference_named(e, &names, clause)
}

/// The output column `e` names: a position (1-based; one outside the select list is an
/// error, as in SQLite and PostgreSQL) or a unique output name.
pub(super) fn output_reference_named(e: &ast::Expr, names: &[String], clause: &str) -> Result<Option<usize>> {
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
            let written = ast::Ident::dotted(parts);
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
