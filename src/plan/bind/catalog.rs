//! PostgreSQL's object identifier types as lookups in the catalog views:
//! `x::regclass` (the call `regclass(x)`) is, for an oid, the table's name, and for a
//! name, its oid; `regtype`, `regnamespace`, `regproc` and `regrole` the same over their
//! views.

use super::{Binder, Result};
use crate::location::Location;
use crate::parse as ast;
use crate::parse::{ExprKind, Literal};
use crate::plan::{PlanError, PlanErrorKind};
use crate::storage::Value;
use crate::vector::DataType;

/// Where a lookup's pairs of oid and name come from.
enum Pairs {
    /// A view: its name, its oid column and its name column.
    View(&'static str, &'static str, &'static str),
    /// The indexes' definitions.
    IndexDefinitions,
}

/// The lookups, by the name of their call.
const LOOKUPS: &[(&str, Pairs)] = &[
    ("regclass", Pairs::View("pg_class", "oid", "relname")),
    ("regtype", Pairs::View("pg_type", "oid", "typname")),
    ("regnamespace", Pairs::View("pg_namespace", "oid", "nspname")),
    ("regproc", Pairs::View("pg_proc", "oid", "proname")),
    ("regprocedure", Pairs::View("pg_proc", "oid", "proname")),
    ("regrole", Pairs::View("pg_roles", "oid", "rolname")),
    ("pg_get_indexdef", Pairs::IndexDefinitions),
];

/// Whether `name` is a lookup call.
pub(super) fn is_lookup(name: &str) -> bool {
    LOOKUPS.iter().any(|l| l.0 == name)
}

/// The most branches the catalog lookups of one statement may make (each lookup is one
/// branch per object it may name): a statement of many casts over a large catalog is
/// refused rather than built.
const MAX_BRANCHES: usize = 100_000;

impl Binder<'_> {
    /// The expression a lookup call `name(arg)` stands for, if `name` is one: for an oid
    /// its object's name; for a text (a name, in any case unless double-quoted, with its
    /// schema or not; or an oid's digits) its oid, a literal name that names nothing an
    /// error. It is the CASE over the view's rows as they are now (a plan is bound again
    /// when the schema changes): the argument is read in the caller's scope only. A
    /// parameter is a name.
    pub(super) fn object_lookup(
        &self,
        name: &str,
        args: &[ast::Expr],
        arg_type: Option<DataType>,
        at: Location,
    ) -> Option<Result<ast::Expr>> {
        let (_, source) = LOOKUPS.iter().find(|l| l.0 == name)?;
        // `pg_get_indexdef(oid [, column, pretty])`: the whole definition (column 0).
        let most = if matches!(source, Pairs::IndexDefinitions) {
            3
        } else {
            1
        };
        if args.is_empty() || args.len() > most {
            return Some(Err(PlanError::invalid(
                at,
                match source {
                    Pairs::IndexDefinitions => {
                        format!("{name} takes an index's oid (then a column number and whether to be pretty)")
                    }
                    Pairs::View(..) => format!("{name} takes one argument: an oid or a name"),
                },
            )));
        }
        let arg = &args[0];
        // A function's "oid" is its name here (`pg_type.typinput` holds `array_in`): a
        // name stays one, without its schema.
        if name.starts_with("regproc")
            && let ExprKind::Literal(Literal::Text(t)) = &arg.kind
        {
            let bare = t.rsplit_once('.').map_or(t.as_str(), |(_, n)| n);
            return Some(Ok(ast::Expr::new(
                ExprKind::Literal(Literal::Text(bare.to_owned())),
                at,
            )));
        }
        let pairs: Vec<(i64, String)> = match source {
            Pairs::IndexDefinitions => crate::catalog_views::index_definitions(self.world),
            &Pairs::View(view, oid, label) => {
                let view = crate::catalog_views::find(None, view)?;
                let rows = view.rows(self.world);
                let column = |c: &str| {
                    let i = view.columns().iter().position(|x| x.name == c)?;
                    rows.columns.get(i)
                };
                let (oids, names) = (column(oid)?, column(label)?);
                (0..rows.len)
                    .filter_map(|i| match (oids.get(i), names.get(i)) {
                        (Value::Int(o), Value::Text(n)) => Some((o, n)),
                        _ => None,
                    })
                    .collect()
            }
        };
        let made = self.lookup_branches.get().saturating_add(pairs.len());
        if made > MAX_BRANCHES {
            return Some(Err(PlanError::invalid(
                at,
                format!(
                    "this statement's casts to {name} and the like would compare with more than {MAX_BRANCHES} objects in all: use fewer of them, or join the catalog views instead"
                ),
            )));
        }
        self.lookup_branches.set(made);
        let lit = |kind| ast::Expr::new(ExprKind::Literal(kind), at);
        let call = |f: &str, a: ast::Expr| {
            ast::Expr::new(
                ExprKind::Function {
                    name: ast::Ident::new(f, at),
                    args: vec![a],
                    star: false,
                    distinct: false,
                },
                at,
            )
        };
        let names_to_oids = |pairs: Vec<(i64, String)>, fold: &dyn Fn(&str) -> String| {
            pairs
                .into_iter()
                .map(|(o, n)| (lit(Literal::Text(fold(&n))), lit(Literal::Int(o))))
                .collect::<Vec<_>>()
        };
        let lower = |n: &str| n.to_lowercase();
        let (operand, branches) = match &arg.kind {
            // A name written in the text.
            ExprKind::Literal(Literal::Text(t)) if !t.chars().all(|c| c.is_ascii_digit()) => {
                let bare = t.rsplit_once('.').map_or(t.as_str(), |(_, n)| n);
                let quoted = bare.starts_with('"');
                let wanted = if quoted {
                    bare.trim_matches('"').to_owned()
                } else {
                    bare.to_lowercase()
                };
                let found = pairs.iter().find(|(_, n)| {
                    if quoted {
                        *n == wanted
                    } else {
                        n.to_lowercase() == wanted
                    }
                });
                let Some((oid, _)) = found else {
                    let kind = match name {
                        "regclass" => PlanErrorKind::UnknownComponent {
                            name: t.clone(),
                            hint: "; no component, event, index or catalog view has that name".into(),
                        },
                        _ => PlanErrorKind::Invalid {
                            message: format!("{} \"{t}\" does not exist", &name[3..]),
                        },
                    };
                    return Some(Err(PlanError::new(arg.at, kind)));
                };
                return Some(Ok(lit(Literal::Int(*oid))));
            }
            // An oid's digits.
            ExprKind::Literal(Literal::Text(t)) => {
                let operand = lit(Literal::Int(t.parse::<i64>().unwrap_or(0)));
                (
                    operand,
                    pairs
                        .into_iter()
                        .map(|(o, n)| (lit(Literal::Int(o)), lit(Literal::Text(n))))
                        .collect(),
                )
            }
            // A name given as a parameter or read from a text column: in any case.
            ExprKind::Param(_) => (call("lower", arg.clone()), names_to_oids(pairs, &lower)),
            _ if arg_type == Some(DataType::Text) => {
                (call("lower", arg.clone()), names_to_oids(pairs, &lower))
            }
            _ => (
                arg.clone(),
                pairs
                    .into_iter()
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
