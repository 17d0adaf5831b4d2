//! Queries: set operations, SELECT and its clauses, select lists, ORDER BY, LIMIT and
//! OFFSET, and a VALUES block read aside (`rows.rs`) put back where its marker is.
//!
//! Invariants: a compound SELECT joins at most `MAX_COMPOUND` terms, counted before
//! anything measures its span; LIMIT's and OFFSET's parameters are numbered in the order
//! they are written; the WITH queries a query brings are in scope for it alone.

use sqlparser::ast as sql;

use super::{MAX_COMPOUND, Result, ident, span_at};
use crate::location::Location;
use crate::parse::ast::*;
use crate::parse::error::ParseError;
use crate::parse::parser::StatementParser;
use crate::parse::start::Node;

/// How many terms the chain of set operations down `body`'s left side joins, and the first.
fn compound_terms(body: &sql::SetExpr) -> (usize, &sql::SetExpr) {
    let mut terms = 1;
    let mut first = body;
    while let sql::SetExpr::SetOperation { left, .. } = first {
        terms += 1;
        first = left;
    }
    (terms, first)
}

impl StatementParser<'_> {
    pub(super) fn order_item(&mut self, item: sql::OrderByExpr, at: Location) -> Result<OrderItem> {
        let desc = matches!(item.options.sort, Some(sql::OrderBySort::Desc));
        if matches!(item.options.sort, Some(sql::OrderBySort::Using(_))) {
            return Err(self.unsupported(at, "ORDER BY … USING"));
        }
        Ok(OrderItem {
            expr: self.expr(item.expr)?,
            desc,
            nulls_first: item.options.nulls_first,
        })
    }

    pub(in crate::parse) fn query(&mut self, mut q: sql::Query) -> Result<Query> {
        // Counted before anything measures the query's span, which walks every term.
        let (terms, first) = compound_terms(&q.body);
        if terms > MAX_COMPOUND {
            let at = self.start_of(Node::SetExpr(first));
            return Err(ParseError::new(
                at,
                format!(
                    "too many terms in a compound SELECT: {terms}, at most {MAX_COMPOUND}; \
                     split it into several statements"
                ),
            ));
        }
        let at = self.start_of(Node::Query(&q));
        let outer = self.ctes.len();
        self.query_nesting += 1;
        let query = match q.with.take() {
            Some(with) => self
                .with(with)
                .and_then(|()| self.query_body(q, at))
                .and_then(|query| self.all_read(outer).map(|()| without_parentheses(query))),
            None => self.query_body(q, at),
        };
        self.query_nesting -= 1;
        self.ctes.truncate(outer);
        query
    }

    fn query_body(&mut self, q: sql::Query, at: Location) -> Result<Query> {
        if q.fetch.is_some() || !q.locks.is_empty() || q.for_clause.is_some() {
            return Err(self.unsupported(at, "FETCH / FOR / locking clauses"));
        }
        let body = self.set_expr(*q.body)?;
        let mut order_by = Vec::new();
        if let Some(ob) = q.order_by {
            match ob.kind {
                sql::OrderByKind::Expressions(items) => {
                    for item in items {
                        order_by.push(self.order_item(item, at)?);
                    }
                }
                sql::OrderByKind::All(_) => return Err(self.unsupported(at, "ORDER BY ALL")),
            }
        }
        let (mut limit, mut offset) = (None, None);
        match q.limit_clause {
            None => {}
            Some(sql::LimitClause::LimitOffset {
                limit: l,
                offset: o,
                limit_by,
            }) => {
                if !limit_by.is_empty() {
                    return Err(self.unsupported(at, "LIMIT … BY"));
                }
                // In the order they are written (`OFFSET ? LIMIT ?` numbers OFFSET's first).
                let offset_first = match (&l, &o) {
                    (Some(l), Some(o)) => self.start_of(Node::Expr(&o.value)) < self.start_of(Node::Expr(l)),
                    _ => false,
                };
                if offset_first && let Some(o) = o {
                    offset = Some(self.expr(o.value)?);
                    limit = l.map(|l| self.expr(l)).transpose()?;
                } else {
                    limit = l.map(|l| self.expr(l)).transpose()?;
                    offset = o.map(|o| self.expr(o.value)).transpose()?;
                }
            }
            Some(sql::LimitClause::OffsetCommaLimit { offset: o, limit: l }) => {
                offset = Some(self.expr(o)?);
                limit = Some(self.expr(l)?);
            }
        }
        Ok(Query {
            body,
            order_by,
            limit,
            offset,
            at,
        })
    }

    #[recursive::recursive]
    pub(super) fn set_expr(&mut self, body: sql::SetExpr) -> Result<SetExpr> {
        let at = self.start_of(Node::SetExpr(&body));
        match body {
            sql::SetExpr::Select(s) => Ok(SetExpr::Select(Box::new(self.select(*s)?))),
            sql::SetExpr::Query(q) => Ok(SetExpr::Query(Box::new(self.query(*q)?))),
            sql::SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => {
                let op = match op {
                    sql::SetOperator::Union => SetOp::Union,
                    sql::SetOperator::Except => SetOp::Except,
                    sql::SetOperator::Intersect => SetOp::Intersect,
                    other => return Err(self.unsupported(at, other)),
                };
                let all = match set_quantifier {
                    sql::SetQuantifier::All => true,
                    sql::SetQuantifier::None | sql::SetQuantifier::Distinct => false,
                    other => return Err(self.unsupported(at, format!("{} {other}", op.name()))),
                };
                let left = Box::new(self.set_expr(*left)?);
                let right = Box::new(self.set_expr(*right)?);
                Ok(SetExpr::SetOp { op, left, right, all })
            }
            sql::SetExpr::Values(v) => {
                let rows: Vec<Vec<Expr>> = v
                    .rows
                    .into_iter()
                    .map(|row| {
                        row.content
                            .into_iter()
                            .map(|e| self.expr(e))
                            .collect::<Result<Vec<_>>>()
                    })
                    .collect::<Result<_>>()?;
                // A block read aside: its marker row stands for its rows.
                if let [row] = rows.as_slice()
                    && let Some(k) = crate::parse::rows::marker(row)
                    && let Some(block) = self.rows.get_mut(k).and_then(Option::take)
                {
                    return Ok(SetExpr::Values(block));
                }
                Ok(SetExpr::Values(rows))
            }
            other => Err(self.unsupported(at, other)),
        }
    }

    fn select(&mut self, s: sql::Select) -> Result<Select> {
        let at = self.location_or_statement(span_at(s.select_token.0.span));
        if s.top.is_some()
            || s.into.is_some()
            || !s.lateral_views.is_empty()
            || s.prewhere.is_some()
            || !s.cluster_by.is_empty()
            || !s.distribute_by.is_empty()
            || !s.sort_by.is_empty()
            || s.qualify.is_some()
            || !s.connect_by.is_empty()
            || s.exclude.is_some()
        {
            return Err(self.unsupported(at, "this SELECT clause"));
        }
        let distinct = match s.distinct {
            None | Some(sql::Distinct::All) => false,
            Some(sql::Distinct::Distinct) => true,
            Some(sql::Distinct::On(_)) => return Err(self.unsupported(at, "DISTINCT ON")),
        };
        let items = self.select_items(s.projection, at)?;
        let from = s
            .from
            .into_iter()
            .map(|t| self.translate_from_item(t))
            .collect::<Result<_>>()?;
        let filter = match s.selection {
            Some(e) => Some(self.expr(e)?),
            None => None,
        };
        let group_by = match s.group_by {
            sql::GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => {
                exprs.into_iter().map(|e| self.expr(e)).collect::<Result<_>>()?
            }
            _ => return Err(self.unsupported(at, "GROUP BY ALL / ROLLUP / CUBE")),
        };
        let having = match s.having {
            Some(e) => Some(self.expr(e)?),
            None => None,
        };
        let mut windows = Vec::new();
        for sql::NamedWindowDefinition(name, definition) in s.named_window {
            let window = match definition {
                sql::NamedWindowExpr::WindowSpec(spec) => self.window(spec, at)?,
                sql::NamedWindowExpr::NamedWindow(base) => Window {
                    base: Some(ident(base)),
                    bare: false,
                    partition_by: Vec::new(),
                    order_by: Vec::new(),
                    frame: None,
                    at,
                },
            };
            windows.push((ident(name), window));
        }
        Ok(Select {
            distinct,
            items,
            from,
            filter,
            group_by,
            having,
            windows,
            at,
        })
    }

    /// A select list (or RETURNING's) into ecsql's items.
    /// (`at`: where the select list is, which a `*` takes.)
    pub(super) fn select_items(
        &mut self,
        projection: Vec<sql::SelectItem>,
        at: Location,
    ) -> Result<SelectItems> {
        let mut items = SelectItems::with_capacity(projection.len());
        for item in projection {
            items.push(match item {
                sql::SelectItem::UnnamedExpr(e) => SelectItem::Expr {
                    expr: self.expr(e)?,
                    alias: None,
                },
                sql::SelectItem::ExprWithAlias { expr, alias } => SelectItem::Expr {
                    expr: self.expr(expr)?,
                    alias: Some(ident(alias)),
                },
                sql::SelectItem::Wildcard(_) => SelectItem::Wildcard(at),
                sql::SelectItem::QualifiedWildcard(
                    sql::SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) => SelectItem::QualifiedWildcard(self.single_name(n)?),
                other => return Err(self.unsupported(at, format!("the select item {other}"))),
            });
        }
        Ok(items)
    }
}

/// `WITH a AS (…) (SELECT …) LIMIT n`: once its WITH is read into place, a query whose
/// body is a plain query in parentheses is that body (it prints without them; sqlparser
/// cannot read `((SELECT …) LIMIT n)`).
fn without_parentheses(mut query: Query) -> Query {
    if let SetExpr::Query(inner) = &mut query.body
        && inner.order_by.is_empty()
        && inner.limit.is_none()
        && inner.offset.is_none()
    {
        let body = std::mem::replace(&mut inner.body, SetExpr::Values(Vec::new()));
        query.body = body;
    }
    query
}
