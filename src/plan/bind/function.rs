//! Calls: aggregates (count, sum, avg, min, max) and scalar functions, looked up and typed
//! through the function table of `func/`; `has(C)` reads the scan's component test.

use super::scope::{ColKind, Ctx, Scope};
use super::syntax::{AGGREGATES, contains_aggregate, is_aggregate_call};
use super::{Binder, Result};

use crate::func::{self, Convert, Mismatch};
use crate::location::Location;
use crate::parse as ast;
use crate::parse::{ExprKind, Ident};
use crate::plan::types::operand;
use crate::plan::{AggCall, AggFunc, BoundExpr, BoundKind, PlanError, PlanErrorKind, ScanColumn};
use crate::vector::DataType;

impl<'a> Binder<'a> {
    pub(super) fn aggregate(
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
                separator: String::new(),
            });
        }
        let (arg, separator) = aggregate_args(&n, args, at)?;
        if contains_aggregate(arg) {
            return Err(PlanError::invalid(arg.at, "aggregate functions cannot be nested"));
        }
        let b = self.expr(arg, scope, &mut Ctx::Row("an aggregate's argument"))?;
        refuse_outer_aggregate(&b, &n, at)?;
        self.aggregate_of(&n, b, arg.at, separator, distinct, scope)
    }

    /// The aggregate `n` of `b` (its argument, bound; written at `arg_at`), typed, with
    /// string_agg's `separator` bound: what a GROUP BY and a window both compute.
    pub(super) fn aggregate_of(
        &self,
        n: &str,
        b: BoundExpr,
        arg_at: Location,
        separator: Option<&ast::Expr>,
        distinct: bool,
        scope: &mut Scope,
    ) -> Result<AggCall> {
        if n == "string_agg" || n == "group_concat" {
            // The texts joined by a constant separator (`,` unless given); any value is
            // written as text, as `||` writes it.
            let separator = match separator {
                None => ",".to_owned(),
                Some(s) => {
                    let bound = self.expr(s, scope, &mut Ctx::Row("an aggregate's argument"))?;
                    match &bound.kind {
                        BoundKind::Const(crate::storage::Value::Text(t)) => t.clone(),
                        _ => {
                            return Err(PlanError::invalid(
                                s.at,
                                format!("{n}'s separator must be a constant text, such as ', '"),
                            ));
                        }
                    }
                }
            };
            return Ok(AggCall {
                func: AggFunc::StringAgg,
                arg: Some(self.cast(b, DataType::Text)?),
                distinct,
                ty: DataType::Text,
                separator,
            });
        }
        let (func, ty) = match n {
            "count" => (AggFunc::Count, DataType::Int),
            "sum" | "avg" if !(b.ty.is_numeric() || b.ty == DataType::Null) => {
                return Err(PlanError::type_mismatch(
                    arg_at,
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
            "bool_and" | "bool_or" if !matches!(b.ty, DataType::Bool | DataType::Null) => {
                return Err(PlanError::type_mismatch(
                    arg_at,
                    format!("{n} needs a BOOL, found {}", b.ty),
                ));
            }
            "bool_and" => (AggFunc::BoolAnd, DataType::Bool),
            "bool_or" => (AggFunc::BoolOr, DataType::Bool),
            "variance" | "var_samp" | "var_pop" | "stddev" | "stddev_samp" | "stddev_pop"
                if !(b.ty.is_numeric() || b.ty == DataType::Null) =>
            {
                return Err(PlanError::type_mismatch(
                    arg_at,
                    format!("{n} needs a number, found {}", b.ty),
                ));
            }
            "variance" | "var_samp" | "var_pop" | "stddev" | "stddev_samp" | "stddev_pop" => (
                AggFunc::Spread {
                    sample: !n.ends_with("_pop"),
                    root: n.starts_with("stddev"),
                },
                DataType::Float,
            ),
            "min" => (AggFunc::Min, b.ty),
            _ => (AggFunc::Max, b.ty),
        };
        Ok(AggCall {
            func,
            arg: Some(b),
            distinct,
            ty,
            separator: String::new(),
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn function(
        &self,
        name: &Ident,
        args: &[ast::Expr],
        star: bool,
        distinct: bool,
        scope: &mut Scope,
        ctx: &mut Ctx<'_>,
        at: Location,
    ) -> Result<BoundExpr> {
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
        if super::syntax::WINDOW_FUNCTIONS.contains(&n.as_str()) {
            return Err(PlanError::invalid(
                at,
                format!("{n}() is a window function: it needs OVER, as in {n}() OVER (ORDER BY score DESC)"),
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
            return Ok(BoundExpr::slot(slot, DataType::Bool, at));
        }
        if n == "changed" || n == "added" {
            return self.change_test(&n, args, scope, at);
        }
        if n == "removed" {
            return Err(PlanError::invalid(
                at,
                "removed() is a table function, of the ids that lost a component: SELECT id FROM removed(Health) (or … WHERE id IN (SELECT id FROM removed(Health)))",
            ));
        }
        // A lookup's direction follows its argument's type: bound here to learn it.
        let arg_type = match args.first() {
            Some(a)
                if super::catalog::is_lookup(&n)
                    && !matches!(a.kind, ExprKind::Literal(_) | ExprKind::Param(_)) =>
            {
                Some(self.expr(a, scope, ctx)?.ty)
            }
            _ => None,
        };
        if let Some(lookup) = self.object_lookup(&n, args, arg_type, at) {
            return self.expr(&lookup?, scope, ctx);
        }
        let Some(function) = func::lookup(&n) else {
            return Err(PlanError::new(
                at,
                PlanErrorKind::UnknownFunction {
                    name: name.value.to_string(),
                    hint: unknown_hint(&n),
                },
            ));
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
        Ok(BoundExpr::new(
            BoundKind::Call(function, args),
            signature.result,
            at,
        ))
    }
}

/// An aggregate's argument, and string_agg's separator.
pub(super) fn aggregate_args<'e>(
    n: &str,
    args: &'e [ast::Expr],
    at: Location,
) -> Result<(&'e ast::Expr, Option<&'e ast::Expr>)> {
    match (n, args) {
        ("string_agg" | "group_concat", [arg, separator]) => Ok((arg, Some(separator))),
        ("group_concat", [arg]) => Ok((arg, None)),
        ("string_agg", _) => Err(PlanError::invalid(
            at,
            "string_agg takes a value and a separator: string_agg(x, ', ')",
        )),
        (_, [arg]) => Ok((arg, None)),
        _ => Err(PlanError::invalid(at, format!("{n} takes one argument"))),
    }
}

impl Binder<'_> {
    /// `changed(C)`, `changed(C.field)` or `added(C)`: a BOOL per row of the entity in FROM
    /// that C names (an alias of it, or the one relation holding C; else, as for has(),
    /// the first), read from the change marks of its table.
    fn change_test(&self, n: &str, args: &[ast::Expr], scope: &mut Scope, at: Location) -> Result<BoundExpr> {
        let usage = if n == "added" {
            "added() takes a component name: added(Health)"
        } else {
            "changed() takes a component or one of its fields: changed(Position) or changed(Position.x)"
        };
        let [
            ast::Expr {
                kind: ExprKind::Column(parts),
                ..
            },
        ] = args
        else {
            return Err(PlanError::invalid(at, usage));
        };
        let (name, field) = match parts.as_slice() {
            [c] => (c, None),
            [c, f] if n == "changed" => (c, Some(f)),
            [c, _] => {
                return Err(PlanError::invalid(
                    at,
                    format!(
                        "added() takes a component, not a field: added({}) (a component is added whole)",
                        c.value
                    ),
                ));
            }
            _ => return Err(PlanError::invalid(at, usage)),
        };
        // An alias (or the name) a component was given in FROM, else a component's name.
        let named = scope
            .members
            .iter()
            .find(|m| m.qualifier.value.eq_ignore_ascii_case(&name.value))
            .map(|m| (m.component, Some(m.relation)));
        let (component, relation) = match named {
            Some(found) => found,
            None => (self.component(name)?.id(), None),
        };
        let relation = match relation {
            Some(r) => r,
            None => {
                let mut holders: Vec<usize> = scope
                    .members
                    .iter()
                    .filter(|m| m.component == component)
                    .map(|m| m.relation)
                    .collect();
                holders.dedup();
                match holders.as_slice() {
                    [r] => *r,
                    [] => scope
                        .first_entity
                        .ok_or_else(|| PlanError::invalid(at, format!("{n}() needs components in FROM")))?,
                    _ => {
                        return Err(PlanError::invalid(
                            at,
                            format!(
                                "{} is in FROM more than once: name the one {n}() reads by its alias, e.g. {n}(a)",
                                name.value
                            ),
                        ));
                    }
                }
            }
        };
        let def = self
            .world
            .component(component)
            .map_err(|e| PlanError::invalid(at, e.to_string()))?;
        let column = match (n, field) {
            ("added", _) => ScanColumn::Added(component),
            (_, None) => ScanColumn::ChangedAny(component),
            (_, Some(f)) => match def.field(&f.value) {
                Some(id) => ScanColumn::Changed(id),
                None => {
                    return Err(PlanError::new(
                        f.at,
                        PlanErrorKind::UnknownColumn {
                            name: format!("{}.{}", def.name(), f.value),
                            hint: if def.is_tag() {
                                format!(
                                    " ({} is a tag: it has no fields; changed({}) says when it was added)",
                                    def.name(),
                                    def.name()
                                )
                            } else {
                                format!(
                                    " ({} has {})",
                                    def.name(),
                                    def.fields()
                                        .iter()
                                        .map(|f| f.name())
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                )
                            },
                        },
                    ));
                }
            },
        };
        let slot = scope.slot(relation, ColKind::Scan(column), DataType::Bool);
        Ok(BoundExpr::slot(slot, DataType::Bool, at))
    }
}

/// The coordinates of a call written as two points of the same size,
/// `f((x, y), (a, b))`: the first point's, then the second's.
pub(super) fn points(args: &[ast::Expr]) -> Option<Vec<&ast::Expr>> {
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

/// In SQL an aggregate whose argument reads only the columns of an outer query
/// (`(SELECT sum(A.v))` inside a query over A) aggregates that outer query's rows; ecsql
/// does not bind it there, so it is refused rather than answered per row.
fn refuse_outer_aggregate(arg: &BoundExpr, name: &str, at: Location) -> Result<()> {
    let (mut outer, mut local) = (false, false);
    arg.visit(&mut |e| match e.kind {
        BoundKind::Outer(_) => outer = true,
        BoundKind::Slot(_) => local = true,
        _ => {}
    });
    if outer && !local {
        return Err(PlanError::new(
            at,
            PlanErrorKind::Unsupported {
                what: format!(
                    "{name}() of only an outer query's columns inside a subquery (SQL would aggregate the outer query's rows: compute it there)"
                ),
            },
        ));
    }
    Ok(())
}

/// What an unknown function's error adds: the names it may have meant, and where every
/// function is listed.
fn unknown_hint(name: &str) -> String {
    let mut more = vec!["has", "changed", "added"];
    more.extend(AGGREGATES.iter().copied());
    let near = func::near(name, &more);
    if near.is_empty() {
        " (docs/language.md lists the functions)".to_owned()
    } else {
        format!(
            " (did you mean {}? docs/language.md lists the functions)",
            near.join(", ")
        )
    }
}
