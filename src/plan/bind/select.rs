//! SELECT: the select list (with `*` and `C.*` expanded), GROUP BY and HAVING, DISTINCT.

use smallvec::SmallVec;
use std::borrow::Cow;

use super::query::{output_reference_named, sort_key};
use super::scope::{Ctx, Grouping, Scope, column_expr};
use super::syntax::contains_aggregate;
use super::{Binder, Result};

use crate::parse as ast;
use crate::parse::ExprKind;
use crate::plan::{
    BoundExpr, Output, OutputColumn, PlanError, PlanErrorKind, SelectPlan, SelectText, SortKey,
};

/// A select list with its wildcards expanded: each expression (a written one borrowed)
/// and its column's name. Most lists are short, kept inline.
type SelectList<'e> = SmallVec<[(Cow<'e, ast::Expr>, String); 2]>;

impl<'a> Binder<'a> {
    pub(super) fn select(
        &self,
        s: &ast::Select,
        order_by: &[ast::OrderItem],
    ) -> Result<(Box<SelectPlan>, Vec<OutputColumn>, Vec<SortKey>)> {
        self.own_windows(|| self.select_windowed(s, order_by))
    }

    /// `select`, its window functions allowed in its select list and ORDER BY.
    ///
    /// A select (not grouped) that reads a catalog view ecsql never has a row in, other
    /// than through LEFT JOIN, has no rows whatever else it says: where the rest does not
    /// bind for what ecsql does not read (PostgreSQL's tools ask `pg_policy` and
    /// `pg_publication` with `ARRAY(SELECT …)` and the like), it is answered as no rows of
    /// its columns, NULL typed. A name that is not there stays an error.
    fn select_windowed(
        &self,
        s: &ast::Select,
        order_by: &[ast::OrderItem],
    ) -> Result<(Box<SelectPlan>, Vec<OutputColumn>, Vec<SortKey>)> {
        let mut scope = self.from(&s.from)?;
        let grouped = !s.group_by.is_empty()
            || s.having.is_some()
            || s.items
                .iter()
                .any(|i| matches!(i, ast::SelectItem::Expr { expr, .. } if contains_aggregate(expr)));
        let empty = !grouped
            && scope.relations.iter().any(|r| {
                r.join != crate::plan::JoinKind::Left
                    && matches!(&r.source, crate::plan::RelationSource::Catalog { view, .. } if view.is_always_empty())
            });
        if !empty {
            return self.select_scoped(s, order_by, &mut scope);
        }
        // The names of the columns, before the scope goes to the select.
        let mut names = Vec::new();
        for item in &s.items {
            match item {
                ast::SelectItem::Expr { expr, alias } => names.push(
                    alias
                        .as_ref()
                        .map_or_else(|| column_name(expr), |a| a.value.to_string()),
                ),
                ast::SelectItem::Wildcard(_) => {
                    names.extend(scope.columns.iter().filter(|c| c.in_star).map(|c| c.display()))
                }
                ast::SelectItem::QualifiedWildcard(q) => names.extend(
                    scope
                        .columns
                        .iter()
                        .filter(|c| &*c.name != "id" && c.qualifiers.iter().any(|x| q.matches(&x.value)))
                        .map(|c| c.display()),
                ),
            }
        }
        match self.select_scoped(s, order_by, &mut scope) {
            // What ecsql does not read (a function, a form, a type it lacks), not a name
            // that is not there: that stays an error.
            Err(e)
                if matches!(
                    e.kind,
                    PlanErrorKind::UnknownFunction { .. }
                        | PlanErrorKind::TypeMismatch { .. }
                        | PlanErrorKind::Invalid { .. }
                ) =>
            {
                let at = s.at;
                let null = || ast::Expr::new(ExprKind::Literal(ast::Literal::Null), at);
                let nothing = ast::Select {
                    distinct: false,
                    items: names
                        .into_iter()
                        .map(|n| ast::SelectItem::Expr {
                            expr: null(),
                            alias: Some(ast::Ident::new(n, at)),
                        })
                        .collect(),
                    from: ast::FromList::new(),
                    filter: Some(ast::Expr::new(ExprKind::Literal(ast::Literal::Bool(false)), at)),
                    group_by: Vec::new(),
                    having: None,
                    windows: Vec::new(),
                    at,
                };
                self.select_windowed(&nothing, &[])
            }
            bound => bound,
        }
    }

    /// `select_windowed` over the scope its FROM made.
    fn select_scoped(
        &self,
        s: &ast::Select,
        order_by: &[ast::OrderItem],
        scope: &mut Scope,
    ) -> Result<(Box<SelectPlan>, Vec<OutputColumn>, Vec<SortKey>)> {
        let (filter, filter_text) = self.filter(s.filter.as_ref(), scope)?;
        let aggregate = !s.group_by.is_empty()
            || s.having.is_some()
            || s.items
                .iter()
                .any(|i| matches!(i, ast::SelectItem::Expr { expr, .. } if contains_aggregate(expr)))
            || order_by.iter().any(|o| contains_aggregate(&o.expr));

        // The select list, with wildcards expanded (a written expression borrowed).
        let mut items: SelectList<'_> = SmallVec::with_capacity(s.items.len());
        for item in &s.items {
            match item {
                ast::SelectItem::Expr { expr, alias } => {
                    let name = alias
                        .as_ref()
                        .map_or_else(|| column_name(expr), |a| a.value.to_string());
                    items.push((Cow::Borrowed(expr), name));
                }
                ast::SelectItem::Wildcard(at) => {
                    let cols: Vec<_> = scope.columns.iter().filter(|c| c.in_star).cloned().collect();
                    if cols.is_empty() {
                        return Err(PlanError::invalid(*at, "SELECT * needs a FROM"));
                    }
                    for c in cols {
                        items.push((Cow::Owned(column_expr(&c, *at)), c.display()));
                    }
                }
                ast::SelectItem::QualifiedWildcard(q) => {
                    let cols: Vec<_> = scope
                        .columns
                        .iter()
                        .filter(|c| &*c.name != "id" && c.qualifiers.iter().any(|x| q.matches(&x.value)))
                        .cloned()
                        .collect();
                    if cols.is_empty() {
                        return Err(PlanError::new(
                            q.at,
                            PlanErrorKind::UnknownColumn {
                                name: format!("{}.*", q.value),
                                hint: " (no such table or alias in FROM)".into(),
                            },
                        ));
                    }
                    for c in cols {
                        items.push((Cow::Owned(column_expr(&c, q.at)), c.display()));
                    }
                }
            }
        }

        // The output names, for ORDER BY and GROUP BY to refer to.
        let names: Vec<String> = if order_by.is_empty() && s.group_by.is_empty() {
            Vec::new()
        } else {
            items.iter().map(|(_, n)| n.clone()).collect()
        };
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
            conditions: if self.explaining {
                super::filter::condition_texts(&s.from, s.filter.as_ref())
            } else {
                Vec::new()
            },
            ..Default::default()
        };
        // One per item, so the list never grows.
        let mut columns = Vec::with_capacity(items.len());
        let windowing;
        let output = if aggregate {
            let mut grouping = Grouping::default();
            for g in &s.group_by {
                // GROUP BY may name an output column by alias or position.
                let source = match output_reference_named(g, &names, "GROUP BY")? {
                    Some(i) if !matches!(&g.kind, ExprKind::Column(p) if self.find_column(p, scope).is_ok()) => {
                        items[i].0.clone()
                    }
                    _ => Cow::Borrowed(g),
                };
                let b = self.expr(&source, scope, &mut Ctx::Row("GROUP BY"))?;
                if contains_aggregate(&source) {
                    return Err(PlanError::invalid(
                        g.at,
                        "aggregate functions are not allowed in GROUP BY",
                    ));
                }
                let text = source.to_string();
                if self.explaining {
                    texts.group_by.push(text.clone());
                }
                grouping.texts.push(text);
                grouping.keys.push(b);
            }
            self.open_windows(&s.windows)?;
            let outputs = self.outputs(
                items,
                &hidden_exprs,
                scope,
                &mut Ctx::Grouped(&mut grouping),
                &mut columns,
                &mut texts,
            );
            windowing = self.close_windows();
            let outputs = outputs?;
            let having = match &s.having {
                Some(h) => {
                    if self.explaining {
                        texts.having = Some(h.to_string());
                    }
                    let b = self.expr(h, scope, &mut Ctx::Grouped(&mut grouping))?;
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
            self.open_windows(&s.windows)?;
            let outputs = self.outputs(
                items,
                &hidden_exprs,
                scope,
                &mut Ctx::Row("SELECT"),
                &mut columns,
                &mut texts,
            );
            windowing = self.close_windows();
            Output::Rows(outputs?)
        };
        // Boxed here: the plan goes up through binding as a pointer, not moved whole.
        let mut plan = Box::new(self.finish_select(scope, filter, output, s.distinct, texts));
        if let Some(windowing) = windowing {
            let base = match &plan.output {
                Output::Rows(_) => plan.width,
                Output::Aggregate { keys, aggs, .. } => keys.len() + aggs.len(),
            };
            let output = std::mem::replace(&mut plan.output, Output::Rows(Vec::new()));
            let (output, window) = self.finish_windows(*windowing, output, base);
            plan.output = output;
            plan.window = Some(window);
        }
        Ok((plan, columns, sort))
    }

    /// A select over `scope`'s relations, once bound. How each of its scans reads its rows
    /// is the access pass's choice, after binding (`plan/access.rs`).
    pub(super) fn finish_select(
        &self,
        scope: &mut Scope,
        filter: Option<BoundExpr>,
        output: Output,
        distinct: bool,
        explain: SelectText,
    ) -> SelectPlan {
        SelectPlan {
            width: scope.width(),
            joins: std::mem::take(&mut scope.joins),
            relations: std::mem::take(&mut scope.relations),
            filter,
            output,
            distinct,
            explain,
            window: None,
        }
    }

    /// The select list, then the hidden ORDER BY expressions after it, bound in `ctx`;
    /// the visible ones also named in `columns` and `texts`.
    pub(super) fn outputs(
        &self,
        items: SelectList<'_>,
        hidden: &[ast::Expr],
        scope: &mut Scope,
        ctx: &mut Ctx<'_>,
        columns: &mut Vec<OutputColumn>,
        texts: &mut SelectText,
    ) -> Result<Vec<BoundExpr>> {
        let mut outputs = Vec::with_capacity(items.len() + hidden.len());
        for (e, name) in items {
            let b = self.expr(&e, scope, ctx)?;
            columns.push(OutputColumn { name, ty: b.ty });
            if self.explaining {
                texts.outputs.push(e.to_string());
            }
            outputs.push(b);
        }
        for e in hidden {
            outputs.push(self.expr(e, scope, ctx)?);
        }
        Ok(outputs)
    }
}

/// The name of an output column written as `e` without an alias: `e` as written (a
/// plain column's name without going through `Display`).
pub(super) fn column_name(e: &ast::Expr) -> String {
    match &e.kind {
        // Names printed as they are (no quotes needed): joined by dots.
        ExprKind::Column(parts) if parts.iter().all(ast::Ident::prints_bare) => ast::Ident::dotted(parts),
        _ => e.to_string(),
    }
}
