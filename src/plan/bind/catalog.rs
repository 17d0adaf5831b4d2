//! PostgreSQL's object identifier types as lookups in the catalog views:
//! `x::regclass` (the call `regclass(x)`) is, for an oid, the table's name, and for a
//! name, its oid; `regtype`, `regnamespace`, `regproc` and `regrole` the same over their
//! views.

use super::{Binder, Result};
use crate::location::Location;
use crate::parse as ast;
use crate::parse::{ExprKind, Literal};
use crate::plan::PlanError;
use crate::storage::Value;

/// The view, its oid column and its name column for each lookup.
const LOOKUPS: &[(&str, &str, &str, &str)] = &[
    ("regclass", "pg_class", "oid", "relname"),
    ("regtype", "pg_type", "oid", "typname"),
    ("regnamespace", "pg_namespace", "oid", "nspname"),
    ("regproc", "pg_proc", "oid", "proname"),
    ("regprocedure", "pg_proc", "oid", "proname"),
    ("regrole", "pg_roles", "oid", "rolname"),
];

impl Binder<'_> {
    /// The expression a lookup call `name(arg)` stands for, if `name` is one: for an oid
    /// its object's name, for a text (a name, or an oid's digits) its oid; NULL where
    /// there is none. It is the CASE over the view's rows as they are now (a plan is bound
    /// again when the schema changes): the argument is read in the caller's scope only.
    pub(super) fn object_lookup(
        &self,
        name: &str,
        args: &[ast::Expr],
        at: Location,
    ) -> Option<Result<ast::Expr>> {
        let &(_, view, oid, label) = LOOKUPS.iter().find(|l| l.0 == name)?;
        let [arg] = args else {
            return Some(Err(PlanError::invalid(
                at,
                format!("{name} takes one argument: an oid or a name"),
            )));
        };
        let view = crate::catalog_views::find(None, view)?;
        let rows = view.rows(self.world);
        let column = |c: &str| {
            let i = view.columns().iter().position(|x| x.name == c)?;
            rows.columns.get(i)
        };
        let (oids, names) = (column(oid)?, column(label)?);
        let lit = |kind| ast::Expr::new(ExprKind::Literal(kind), at);
        let pairs = (0..rows.len).filter_map(|i| match (oids.get(i), names.get(i)) {
            (Value::Int(o), Value::Text(n)) => Some((o, n)),
            _ => None,
        });
        let (operand, branches): (ast::Expr, Vec<(ast::Expr, ast::Expr)>) = match &arg.kind {
            // A name, which may be written with its schema, as PostgreSQL's tools do.
            ExprKind::Literal(Literal::Text(t)) if !t.chars().all(|c| c.is_ascii_digit()) => {
                let bare = t
                    .rsplit_once('.')
                    .map_or(t.as_str(), |(_, n)| n)
                    .trim_matches('"');
                let operand = lit(Literal::Text(bare.to_owned()));
                (
                    operand,
                    pairs
                        .map(|(o, n)| (lit(Literal::Text(n)), lit(Literal::Int(o))))
                        .collect(),
                )
            }
            ExprKind::Literal(Literal::Text(t)) => {
                let operand = lit(Literal::Int(t.parse::<i64>().unwrap_or(0)));
                (
                    operand,
                    pairs
                        .map(|(o, n)| (lit(Literal::Int(o)), lit(Literal::Text(n))))
                        .collect(),
                )
            }
            _ => (
                arg.clone(),
                pairs
                    .map(|(o, n)| (lit(Literal::Int(o)), lit(Literal::Text(n))))
                    .collect(),
            ),
        };
        if branches.is_empty() {
            return Some(Ok(lit(Literal::Null)));
        }
        Some(Ok(ast::Expr::new(
            ExprKind::Case {
                operand: Some(Box::new(operand)),
                branches,
                otherwise: None,
            },
            at,
        )))
    }
}
