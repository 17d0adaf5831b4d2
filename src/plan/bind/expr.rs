//! Expressions: names to slots, operators typed by `vector`'s type rules, every implicit
//! conversion made an explicit cast (constants folded), subqueries planned.

use std::fmt::Display;

use super::scope::{ColKind, Ctx, Frame, Scope};
use super::syntax::{contains_aggregate, contains_subquery, contains_window, is_aggregate_call, node_count};
use super::{Binder, Result};

use crate::location::Location;
use crate::parse as ast;
use crate::parse::{BinaryOp, ExprKind, Ident, Literal, UnaryOp};
use crate::plan::types::{comparison_type, numeric_common};
use crate::plan::visit::{PlanVisitor, visit_query};
use crate::plan::{
    ArithOp, BoundExpr, BoundKind, Correlated, ParamCast, PlanError, PlanErrorKind, QueryPlan, ScanColumn,
};
use crate::storage::{ComponentId, Value};
use crate::vector::{CmpOp, DataType, cast_value, compares_unconverted, comparison_unify, unify_types};

impl<'a> Binder<'a> {
    #[recursive::recursive]
    pub(super) fn expr(&self, e: &ast::Expr, scope: &mut Scope, ctx: &mut Ctx<'_>) -> Result<BoundExpr> {
        let at = e.at;
        if let Ctx::Grouped(_) = ctx
            && let Some(b) = self.grouped_expr(e, scope, ctx)?
        {
            return Ok(b);
        }
        let boxed = |b: BoundExpr| Box::new(b);
        Ok(match &e.kind {
            ExprKind::Literal(l) => BoundExpr::constant(
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
                BoundExpr::new(
                    BoundKind::Param {
                        param: p.clone(),
                        value,
                    },
                    ty,
                    at,
                )
            }
            ExprKind::Column(parts) => match self.find_column(parts, scope) {
                Ok(c) => {
                    let slot = scope.slot(c.relation, c.kind, c.ty);
                    let value = BoundExpr::slot(slot, c.ty, at);
                    match optional_member_id(parts, c.relation, c.kind, scope) {
                        // `C.id` of a LEFT JOINed component on the same entity: the id where
                        // the entity has C, NULL where it has not (as `c.id` of a LEFT JOIN
                        // with ON is).
                        Some(component) => {
                            let has = scope.slot(
                                c.relation,
                                ColKind::Scan(ScanColumn::Has(component)),
                                DataType::Bool,
                            );
                            BoundExpr::new(
                                BoundKind::Case {
                                    branches: vec![(BoundExpr::slot(has, DataType::Bool, at), value)],
                                    otherwise: None,
                                },
                                c.ty,
                                at,
                            )
                        }
                        None => value,
                    }
                }
                Err(
                    err @ (PlanError {
                        kind: PlanErrorKind::UnknownColumn { .. },
                        ..
                    }
                    | PlanError {
                        kind: PlanErrorKind::UnknownField { .. },
                        ..
                    }),
                ) => match self.outer_column(parts, scope, at) {
                    Some(outer) => outer,
                    None => return Err(err),
                },
                Err(err) => return Err(err),
            },
            ExprKind::Unary(op, x) => {
                let b = self.expr(x, scope, ctx)?;
                match op {
                    UnaryOp::Plus if b.ty.is_numeric() || b.ty == DataType::Null => b,
                    UnaryOp::Neg if b.ty.is_numeric() || b.ty == DataType::Null => {
                        let ty = b.ty;
                        BoundExpr::new(BoundKind::Neg(boxed(b)), ty, at)
                    }
                    UnaryOp::Not => {
                        let b = self.expect_bool(b, "NOT")?;
                        BoundExpr::new(BoundKind::Not(boxed(b)), DataType::Bool, at)
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
            ExprKind::Binary(lr, op) => {
                let [left, right] = &**lr;
                let l = self.expr(left, scope, ctx)?;
                let r = self.expr(right, scope, ctx)?;
                let (l, r) = if op.is_comparison() {
                    let (lt, rt) = (l.ty, r.ty);
                    (
                        number_literal(left, l, right, rt),
                        number_literal(right, r, left, lt),
                    )
                } else {
                    (l, r)
                };
                self.binary(l, *op, r, at)?
            }
            _ => return self.expr_rest(e, scope, ctx),
        })
    }

    /// `expr` under GROUP BY, where `e` is a key, an aggregate or a column that must be
    /// one: its slot, or its error; `None` for the rest, which `expr` binds. Apart from
    /// `expr`, as `expr_rest` is.
    #[inline(never)]
    fn grouped_expr(&self, e: &ast::Expr, scope: &mut Scope, ctx: &mut Ctx<'_>) -> Result<Option<BoundExpr>> {
        let at = e.at;
        if let Ctx::Grouped(g) = ctx {
            // Without keys (aggregates over the whole input) nothing is a key: no
            // subexpression is printed or bound twice to be compared with one.
            if !g.texts.is_empty()
                && let Some(k) = g.key_named(&e.to_string())
            {
                return Ok(Some(BoundExpr::slot(k, g.keys[k].ty, at)));
            }
            // The same key written otherwise (`cor0.col0` for `col0`, `t.*` expanded):
            // bound per row, it computes what a key does.
            if !g.keys.is_empty()
                && !matches!(e.kind, ExprKind::Literal(_) | ExprKind::Param(_))
                && !contains_aggregate(e)
                && !contains_window(e)
                && !contains_subquery(e)
                && node_count(e) <= KEY_MATCH_NODES
                && let Ok(b) = self.expr(e, scope, &mut Ctx::Row("GROUP BY"))
                && let Some(k) = g.key_like(&b)
            {
                return Ok(Some(BoundExpr::slot(k, g.keys[k].ty, at)));
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
                    return Ok(Some(BoundExpr::slot(slot, ty, at)));
                }
                // has(), changed() and added() read a row, as a column does: above GROUP
                // BY only as a key.
                if ["has", "changed", "added"]
                    .iter()
                    .any(|f| name.value.eq_ignore_ascii_case(f))
                {
                    return Err(PlanError::invalid(
                        at,
                        format!("{e} must appear in GROUP BY or be inside an aggregate function"),
                    ));
                }
            }
            if let ExprKind::Column(parts) = &e.kind {
                let written = parts
                    .iter()
                    .map(|p| p.value.as_str())
                    .collect::<Vec<_>>()
                    .join(".");
                // Resolve first, so a wrong name is reported as such. A column of a query
                // around this one is one value for all of this query's groups.
                if let Err(err) = self.find_column(parts, scope) {
                    return match err {
                        PlanError {
                            kind: PlanErrorKind::UnknownColumn { .. },
                            ..
                        }
                        | PlanError {
                            kind: PlanErrorKind::UnknownField { .. },
                            ..
                        } => self.outer_column(parts, scope, at).ok_or(err).map(Some),
                        err => Err(err),
                    };
                }
                return Err(PlanError::invalid(
                    at,
                    format!("{written} must appear in GROUP BY or be inside an aggregate function"),
                ));
            }
        }
        Ok(None)
    }

    /// `expr` of the kinds it does not bind itself (all but literals, parameters,
    /// columns and operators). Apart from `expr`, so that their arms' locals do not widen
    /// the frame each level of every expression takes (2.4 KiB with them in it).
    #[inline(never)]
    fn expr_rest(&self, e: &ast::Expr, scope: &mut Scope, ctx: &mut Ctx<'_>) -> Result<BoundExpr> {
        let at = e.at;
        let boxed = |b: BoundExpr| Box::new(b);
        Ok(match &e.kind {
            ExprKind::IsNull { expr, negated } => {
                let b = self.expr(expr, scope, ctx)?;
                BoundExpr::new(
                    BoundKind::IsNull {
                        expr: boxed(b),
                        negated: *negated,
                    },
                    DataType::Bool,
                    at,
                )
            }
            ExprKind::IsDistinct { left, right, negated } => {
                let l = self.expr(left, scope, ctx)?;
                let r = self.expr(right, scope, ctx)?;
                let ty = comparison_type(&l, &r).ok_or_else(|| {
                    PlanError::type_mismatch(at, format!("cannot compare {} with {}", l.ty, r.ty))
                })?;
                let l = self.compare_operand(l, ty)?;
                let r = self.compare_operand(r, ty)?;
                BoundExpr::new(
                    BoundKind::IsDistinct(boxed(l), boxed(r), *negated),
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
                BoundExpr::new(
                    BoundKind::InList {
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
                let (plan, correlated) = self.subquery(query, scope, ctx)?;
                if plan.columns.len() != 1 {
                    return Err(PlanError::invalid(
                        query.at,
                        format!("IN (SELECT …) needs one column, found {}", plan.columns.len()),
                    ));
                }
                let column = BoundExpr::slot(0, plan.columns[0].ty, query.at);
                let ty = comparison_type(&b, &column).ok_or_else(|| {
                    PlanError::type_mismatch(
                        at,
                        format!("cannot compare {} with {}", b.ty, plan.columns[0].ty),
                    )
                })?;
                let b = self.compare_operand(b, ty)?;
                BoundExpr::new(
                    BoundKind::InSubquery {
                        expr: boxed(b),
                        query: Box::new(plan),
                        negated: *negated,
                        ty,
                        values: Default::default(),
                        correlated,
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
                let both = BoundExpr::new(BoundKind::And(boxed(ge), boxed(le)), DataType::Bool, at);
                if *negated {
                    BoundExpr::new(BoundKind::Not(boxed(both)), DataType::Bool, at)
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
                        None => return Ok(BoundExpr::new(BoundKind::Const(Value::Null), DataType::Bool, at)),
                    },
                };
                BoundExpr::new(
                    BoundKind::Like {
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
                BoundExpr::new(BoundKind::Case { branches, otherwise }, ty, at)
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
            ExprKind::Over { call, window } => return self.over(e, call, window, scope, ctx),
            ExprKind::Subquery(q) => {
                let (plan, correlated) = self.subquery(q, scope, ctx)?;
                if plan.columns.len() != 1 {
                    return Err(PlanError::invalid(
                        q.at,
                        format!("a scalar subquery needs one column, found {}", plan.columns.len()),
                    ));
                }
                let ty = plan.columns[0].ty;
                BoundExpr::new(
                    BoundKind::Subquery {
                        query: Box::new(plan),
                        value: Default::default(),
                        correlated,
                    },
                    ty,
                    at,
                )
            }
            ExprKind::Exists { query, negated } => {
                let (plan, correlated) = self.subquery(query, scope, ctx)?;
                BoundExpr::new(
                    BoundKind::Exists {
                        query: Box::new(plan),
                        negated: *negated,
                        value: Default::default(),
                        correlated,
                    },
                    DataType::Bool,
                    at,
                )
            }
            ExprKind::Tuple(_) => {
                return Err(PlanError::new(
                    at,
                    PlanErrorKind::Unsupported {
                        what: "a row value (a, b, …)".into(),
                    },
                ));
            }
            ExprKind::Literal(_)
            | ExprKind::Param(_)
            | ExprKind::Column(_)
            | ExprKind::Unary(..)
            | ExprKind::Binary(..) => return self.expr(e, scope, ctx),
        })
    }

    /// The character of `ESCAPE 'c'`: a constant (or parameter) of one character; `None`
    /// for NULL.
    /// Binds a subquery of an expression. When it reads columns of this query (or of the
    /// queries around it), also what makes it correlated: each column of this query it
    /// reads, bound here (`Correlated::sets`), and every outer value read inside.
    fn subquery(
        &self,
        q: &ast::Query,
        scope: &mut Scope,
        ctx: &mut Ctx<'_>,
    ) -> Result<(QueryPlan, Option<Box<Correlated>>)> {
        self.frames.borrow_mut().push(Frame {
            columns: scope.columns.clone(),
            refs: Vec::new(),
        });
        let plan = self.query(q);
        let refs = self.frames.borrow_mut().pop().map(|f| f.refs).unwrap_or_default();
        let mut plan = plan?;
        let mut sets = Vec::with_capacity(refs.len());
        for r in refs {
            let column = ast::Expr::new(ExprKind::Column(r.parts), r.at);
            sets.push((r.n, self.expr(&column, scope, ctx)?));
        }
        let mut uses = OuterReads::default();
        visit_query(&mut plan, &mut uses);
        // Boxed: most subqueries are not correlated, and the box keeps every
        // expression node small (moved inline, not by a call to memcpy).
        let correlated = (!uses.reads.is_empty()).then(|| {
            Box::new(Correlated {
                sets,
                uses: uses.reads,
                volatile: uses.volatile,
                results: Default::default(),
                kept_bytes: Default::default(),
            })
        });
        Ok((plan, correlated))
    }

    pub(super) fn like_escape(
        &self,
        e: &ast::Expr,
        scope: &mut Scope,
        ctx: &mut Ctx<'_>,
    ) -> Result<Option<char>> {
        let b = self.expr(e, scope, ctx)?;
        self.uses_value(&b);
        self.hint(&b, DataType::Text);
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

    pub(super) fn binary(&self, l: BoundExpr, op: BinaryOp, r: BoundExpr, at: Location) -> Result<BoundExpr> {
        let b = Box::new;
        Ok(match op {
            BinaryOp::And | BinaryOp::Or => {
                let l = self.expect_bool(l, op.symbol())?;
                let r = self.expect_bool(r, op.symbol())?;
                let kind = if op == BinaryOp::And {
                    BoundKind::And(b(l), b(r))
                } else {
                    BoundKind::Or(b(l), b(r))
                };
                BoundExpr::new(kind, DataType::Bool, at)
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
                BoundExpr::new(BoundKind::Concat(b(l), b(r)), DataType::Text, at)
            }
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod => {
                let ty = numeric_common(&l, &r).ok_or_else(|| {
                    // An id is an ENTITY, not a number: say how to make it one.
                    let hint = if l.ty == DataType::Entity || r.ty == DataType::Entity {
                        " (an id is an ENTITY, which takes no arithmetic: CAST(id AS INT) makes it a number)"
                    } else {
                        ""
                    };
                    PlanError::type_mismatch(
                        at,
                        format!("cannot apply {} to {} and {}{hint}", op.symbol(), l.ty, r.ty),
                    )
                })?;
                let l = self.cast_param(l, ty, None)?;
                let r = self.cast_param(r, ty, None)?;
                let aop = match op {
                    BinaryOp::Add => ArithOp::Add,
                    BinaryOp::Sub => ArithOp::Sub,
                    BinaryOp::Mul => ArithOp::Mul,
                    BinaryOp::Div => ArithOp::Div,
                    _ => ArithOp::Mod,
                };
                BoundExpr::new(BoundKind::Arith(aop, b(l), b(r)), ty, at)
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
                BoundExpr::new(BoundKind::Compare(cop, b(l), b(r)), DataType::Bool, at)
            }
        })
    }

    /// `e` as an operand of a comparison of type `to`: cast, except that an INT compared
    /// with an ENTITY stays INT (see `comparison_type`), folded to an id when it is a
    /// positive constant so that lookups by id see one.
    pub(super) fn compare_operand(&self, e: BoundExpr, to: DataType) -> Result<BoundExpr> {
        if !compares_unconverted(e.ty, to) {
            let from = e.ty;
            return self.cast_param(e, to, None).map_err(|err| match err {
                // `Position.x < 1e39`: the constant adapts to the REAL side (so that
                // `Position.x < 0.1` compares in REAL) and does not fit it.
                PlanError {
                    kind: PlanErrorKind::TypeMismatch { message },
                    at,
                } if from == DataType::Float && to == DataType::Real => PlanError::new(
                    at,
                    PlanErrorKind::TypeMismatch {
                        message: format!(
                            "{message} (a value the same for every row meets a REAL value in REAL; \
                             to compare in FLOAT, write CAST(… AS FLOAT) around the REAL side)"
                        ),
                    },
                ),
                other => other,
            });
        }
        match e.kind {
            BoundKind::Const(Value::Int(i)) if i > 0 => self.cast(e, to),
            _ => Ok(e),
        }
    }

    /// `cast_for`, except that a parameter is cast when the plan runs, so that the plan
    /// serves its other values too (`cast_for` folds it, and the plan serves that value
    /// only). The cast must take this value, or binding fails as it does for a constant;
    /// the plan keeps the cast (`ParamCast`) and is bound again for a value it refuses,
    /// so a refused value fails as a constant would, whether or not a row is read.
    pub(super) fn cast_param(
        &self,
        e: BoundExpr,
        to: DataType,
        field: Option<&dyn Display>,
    ) -> Result<BoundExpr> {
        let BoundKind::Param { param, value } = &e.kind else {
            return self.cast_for(e, to, field);
        };
        self.hint(&e, to);
        if e.ty == to || to == DataType::Null {
            return Ok(e);
        }
        let cast = ParamCast::new(param.clone(), to, field);
        cast.apply(value).map_err(|m| PlanError::type_mismatch(e.at, m))?;
        self.param_casts.borrow_mut().push(cast);
        let at = e.at;
        Ok(BoundExpr::new(
            BoundKind::Cast(Box::new(e), field.map(|f| f.to_string().into_boxed_str())),
            to,
            at,
        ))
    }

    /// `e` as type `to`: folded for constants, a `Cast` node otherwise.
    pub(super) fn cast(&self, e: BoundExpr, to: DataType) -> Result<BoundExpr> {
        self.cast_for(e, to, None)
    }

    /// `cast`, for a value assigned to `field` (`Component.field`), which a value that
    /// does not fit names in its error, now (a constant) or when it runs; written out
    /// only for an error or a cast left for the run.
    pub(super) fn cast_for(
        &self,
        e: BoundExpr,
        to: DataType,
        field: Option<&dyn Display>,
    ) -> Result<BoundExpr> {
        self.hint(&e, to);
        if e.ty == to || to == DataType::Null {
            return Ok(e);
        }
        if let Some(v) = e.as_const() {
            self.uses_value(&e);
            let at = e.at;
            let value = match field {
                Some(field) => crate::vector::store_value(v, to, field),
                None => cast_value(v, to),
            }
            .map_err(|m| PlanError::type_mismatch(at, m))?;
            return Ok(BoundExpr::new(BoundKind::Const(value), to, at));
        }
        let at = e.at;
        Ok(BoundExpr::new(
            BoundKind::Cast(Box::new(e), field.map(|f| f.to_string().into_boxed_str())),
            to,
            at,
        ))
    }
}

/// Folds `e` into the common type so far, for CASE branches, VALUES columns and the like.
pub(super) fn unify(so_far: DataType, e: &BoundExpr, what: &str) -> Result<DataType> {
    unify_types(so_far, e.ty)
        .ok_or_else(|| PlanError::type_mismatch(e.at, format!("{what} mix {so_far} and {}", e.ty)))
}

/// Expressions with more nodes than this are not compared with GROUP BY keys as a whole
/// (their parts still are), which bounds the binder's work on deep expressions.
pub(super) const KEY_MATCH_NODES: usize = 64;

/// The outer values a plan reads (`BoundKind::Outer`), each once, in the order met, and
/// whether it calls a volatile function (`random()`).
#[derive(Default)]
struct OuterReads {
    reads: Vec<usize>,
    volatile: bool,
}

impl PlanVisitor for OuterReads {
    fn expr(&mut self, e: &mut BoundExpr) {
        match &e.kind {
            BoundKind::Outer(n) if !self.reads.contains(n) => self.reads.push(*n),
            BoundKind::Call(f, _) if f.properties().volatile => self.volatile = true,
            _ => {}
        }
    }
}

/// A quoted number compared with a numeric column (`oid = '16384'`, as PostgreSQL's
/// tools write it) is that number, as PostgreSQL reads a literal of no type and SQLite a
/// text compared with a column of numbers: `this` as the column's type when it is a text
/// literal that reads as one and `other` is a column of INT, FLOAT or REAL; otherwise as
/// it is (a text that does not read as a number stays a text, and the comparison's
/// error says so).
fn number_literal(this: &ast::Expr, bound: BoundExpr, other: &ast::Expr, other_ty: DataType) -> BoundExpr {
    let (ExprKind::Literal(ast::Literal::Text(text)), ExprKind::Column(_)) = (&this.kind, &other.kind) else {
        return bound;
    };
    let value = match other_ty {
        DataType::Int => text.trim().parse::<i64>().ok().map(Value::Int),
        DataType::Float => text.trim().parse::<f64>().ok().map(Value::Float),
        DataType::Real => text.trim().parse::<f32>().ok().map(Value::Real),
        _ => None,
    };
    match value {
        Some(v) => BoundExpr::constant(v, bound.at),
        None => bound,
    }
}

/// The component whose `C.id` `parts` names, when `C` is LEFT JOINed on the entity of
/// relation `relation` without ON (an optional member of its scan) and the column found
/// is that entity's id.
fn optional_member_id(parts: &[Ident], relation: usize, kind: ColKind, scope: &Scope) -> Option<ComponentId> {
    let [qualifier, name] = parts else {
        return None;
    };
    if !name.matches("id") || kind != ColKind::Scan(ScanColumn::Id) {
        return None;
    }
    let member = scope
        .members
        .iter()
        .find(|m| m.relation == relation && qualifier.matches(&m.qualifier.value))?;
    scope
        .scan(relation)?
        .optional
        .contains(&member.component)
        .then_some(member.component)
}
