//! FROM: tables and their joins, table functions, subqueries, and references to WITH
//! queries.
//!
//! Invariants: only JOIN, LEFT JOIN and CROSS JOIN (every pair, ON TRUE) are taken; a
//! subquery in FROM is a level of depth, as one in an expression is; one statement makes
//! at most `MAX_CTE_REFERENCES` references to WITH queries, counted as they are copied.

use sqlparser::ast as sql;

use super::{MAX_CTE_REFERENCES, MAX_DEPTH, Result, ident, too_deep};
use crate::parse::ast::*;
use crate::parse::error::ParseError;
use crate::parse::parser::{CteBody, StatementParser};
use crate::parse::start::{Node, on_deep_stack};

impl StatementParser<'_> {
    pub(in crate::parse) fn translate_from_item(&mut self, t: sql::TableWithJoins) -> Result<FromItem> {
        let base = self.table_ref(t.relation)?;
        let mut joins = Vec::new();
        for join in t.joins {
            let at = self.start_of(Node::Table(&join.relation));
            let (left, constraint, cross) = match join.join_operator {
                sql::JoinOperator::Join(c) | sql::JoinOperator::Inner(c) => (false, c, false),
                sql::JoinOperator::Left(c) | sql::JoinOperator::LeftOuter(c) => (true, c, false),
                sql::JoinOperator::CrossJoin(sql::JoinConstraint::None) => {
                    (false, sql::JoinConstraint::None, true)
                }
                _ => {
                    return Err(self.unsupported(
                        at,
                        "this join (ecsql has JOIN, LEFT JOIN and CROSS JOIN; no RIGHT, FULL, SEMI, ANTI or other joins)",
                    ));
                }
            };
            let (on, using) = match constraint {
                sql::JoinConstraint::On(e) => (Some(e), Vec::new()),
                sql::JoinConstraint::None => (None, Vec::new()),
                sql::JoinConstraint::Using(names) => (None, names),
                _ => return Err(self.unsupported(at, "NATURAL JOIN")),
            };
            // The table before its ON, as they are written: a `?` in each is numbered in
            // the order of the text.
            let table = self.table_ref(join.relation)?;
            let on = match on {
                Some(e) => Some(self.expr(e)?),
                // An explicit CROSS JOIN is every pair of rows, as in SQL: other entities,
                // joined ON TRUE (a JOIN without ON is the same entity).
                None if cross => Some(Expr::new(ExprKind::Literal(Literal::Bool(true)), at)),
                None => None,
            };
            if using.len() > MAX_USING {
                return Err(ParseError::new(
                    at,
                    format!("JOIN … USING names {} columns: at most {MAX_USING}", using.len()),
                ));
            }
            let using = using
                .into_iter()
                .map(|name| {
                    self.object_name(name)?
                        .pop()
                        .ok_or_else(|| ParseError::new(at, "expected a column name in USING"))
                })
                .collect::<Result<Vec<_>>>()?;
            joins.push(Join {
                left,
                table,
                on,
                using,
            });
        }
        Ok(FromItem { base, joins })
    }

    #[recursive::recursive]
    pub(super) fn table_ref(&mut self, t: sql::TableFactor) -> Result<TableRef> {
        let at = self.start_of(Node::Table(&t));
        match t {
            sql::TableFactor::Table {
                name,
                alias,
                args,
                with_hints,
                version,
                with_ordinality,
                partitions,
                sample,
                index_hints,
                json_path,
            } => {
                if !with_hints.is_empty()
                    || version.is_some()
                    || with_ordinality
                    || !partitions.is_empty()
                    || sample.is_some()
                    || !index_hints.is_empty()
                    || json_path.is_some()
                {
                    return Err(self.unsupported(at, "this table clause"));
                }
                // `public.C` is the component C; `pg_catalog.v` and
                // `information_schema.v` are views of the catalog.
                let mut name = name;
                let mut system = None;
                if args.is_some()
                    && name.0.len() == 2
                    && let sql::ObjectNamePart::Identifier(schema) = &name.0[0]
                    && schema.value.eq_ignore_ascii_case("pg_catalog")
                {
                    name.0.remove(0);
                }
                if name.0.len() == 2
                    && args.is_none()
                    && let sql::ObjectNamePart::Identifier(schema) = &name.0[0]
                {
                    let lower = schema.value.to_ascii_lowercase();
                    if schema.quote_style.is_none() || schema.value == lower {
                        match lower.as_str() {
                            "public" => {
                                name.0.remove(0);
                            }
                            "pg_catalog" | "information_schema" => {
                                system = Some(ident(schema.clone()));
                                name.0.remove(0);
                            }
                            _ => {}
                        }
                    }
                }
                let name = self.single_name(name)?;
                let (alias, columns) = self.alias(alias);
                if let Some(mut schema) = system {
                    if !columns.is_empty() {
                        return Err(ParseError::new(
                            at,
                            "column aliases are allowed only on table functions and subqueries",
                        ));
                    }
                    schema.value = schema.value.to_ascii_lowercase().into();
                    return Ok(TableRef::System { schema, name, alias });
                }
                if args.is_none()
                    && let Some(cte) = self.cte(&name)
                {
                    let weight = cte.weight;
                    cte.read.set(true);
                    let reference = match &cte.body {
                        CteBody::Query(query) => TableRef::Subquery {
                            query: Box::new(query.clone()),
                            alias: Some(alias.unwrap_or(name)),
                            columns: if columns.is_empty() {
                                cte.columns.clone()
                            } else {
                                columns
                            },
                        },
                        CteBody::Recursive(recursive) if columns.is_empty() => TableRef::Recursive {
                            cte: Box::new(recursive.clone()),
                            alias,
                        },
                        CteBody::Reading(nesting) if *nesting != self.query_nesting => {
                            return Err(ParseError::new(
                                at,
                                format!(
                                    "the recursive part of {} reads it in a subquery: it may read it only in its own FROM",
                                    name.value
                                ),
                            ));
                        }
                        CteBody::Reading(_) if columns.is_empty() => {
                            self.self_references += 1;
                            return Ok(TableRef::Named { name, alias });
                        }
                        CteBody::Recursive(_) | CteBody::Reading(_) => {
                            return Err(ParseError::new(
                                at,
                                "a recursive WITH query takes its column names in WITH, not where it is read",
                            ));
                        }
                    };
                    self.cte_references = self.cte_references.saturating_add(weight);
                    if self.cte_references > MAX_CTE_REFERENCES {
                        return Err(ParseError::new(
                            at,
                            format!(
                                "too many references to common table expressions: more than {MAX_CTE_REFERENCES} in one statement"
                            ),
                        ));
                    }
                    return Ok(reference);
                }
                match args {
                    None => {
                        if !columns.is_empty() {
                            return Err(ParseError::new(
                                at,
                                "column aliases are allowed only on table functions and subqueries",
                            ));
                        }
                        Ok(TableRef::Named { name, alias })
                    }
                    Some(a) => {
                        let mut exprs = Vec::new();
                        for arg in a.args {
                            match arg {
                                sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) => {
                                    exprs.push(self.expr(e)?)
                                }
                                other => return Err(self.unsupported(at, format!("the argument {other}"))),
                            }
                        }
                        Ok(TableRef::Function {
                            name,
                            args: exprs,
                            alias,
                            columns,
                        })
                    }
                }
            }
            sql::TableFactor::Derived {
                lateral,
                subquery,
                alias,
                sample,
            } => {
                if lateral || sample.is_some() {
                    return Err(self.unsupported(at, "LATERAL / TABLESAMPLE"));
                }
                // A subquery in FROM is a level, as one in an expression is.
                let parent = self.depth;
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    on_deep_stack(move || drop(subquery));
                    return Err(too_deep(at));
                }
                let query = self.query(*subquery);
                self.depth = parent;
                let query = Box::new(query?);
                let (alias, columns) = self.alias(alias);
                // `(WITH RECURSIVE r … SELECT * FROM r) AS a`, as a reference to a
                // recursive WITH query prints, reads back as that reference.
                if columns.is_empty()
                    && let Some(cte) = recursive_whole(&query)
                {
                    return Ok(TableRef::Recursive { cte, alias });
                }
                Ok(TableRef::Subquery {
                    query,
                    alias,
                    columns,
                })
            }
            other => Err(self.unsupported(at, format!("the table {other}"))),
        }
    }

    fn alias(&self, alias: Option<sql::TableAlias>) -> (Option<Ident>, Vec<Ident>) {
        match alias {
            None => (None, Vec::new()),
            Some(a) => (
                Some(ident(a.name)),
                a.columns.into_iter().map(|c| ident(c.name)).collect(),
            ),
        }
    }
}

/// The recursive WITH query `query` is all of, when it is `SELECT * FROM r` of one,
/// unaliased, and nothing more.
fn recursive_whole(query: &Query) -> Option<Box<RecursiveCte>> {
    if !query.order_by.is_empty() || query.limit.is_some() || query.offset.is_some() {
        return None;
    }
    let SetExpr::Select(s) = &query.body else {
        return None;
    };
    match (s.items.as_slice(), s.from.as_slice()) {
        (
            [SelectItem::Wildcard(_)],
            [
                FromItem {
                    base: TableRef::Recursive { cte, alias: None },
                    joins,
                },
            ],
        ) if !s.distinct
            && s.filter.is_none()
            && s.group_by.is_empty()
            && s.having.is_none()
            && joins.is_empty() =>
        {
            Some(cte.clone())
        }
        _ => None,
    }
}

/// The most columns one `JOIN … USING` may name (each is a level of its condition).
const MAX_USING: usize = 100;
