//! Questions about the syntax tree that several clauses ask before binding: a walk over
//! an expression's nodes, whether it calls an aggregate or runs a subquery, how big it is.

use crate::parse as ast;
use crate::parse::{ExprKind, Ident};

/// The aggregate functions, by name.
pub(super) const AGGREGATES: [&str; 15] = [
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "bool_and",
    "bool_or",
    "variance",
    "var_samp",
    "var_pop",
    "stddev",
    "stddev_samp",
    "stddev_pop",
    "string_agg",
    "group_concat",
];

/// The window functions, by name (every aggregate is one too).
pub(super) const WINDOW_FUNCTIONS: [&str; 11] = [
    "row_number",
    "rank",
    "dense_rank",
    "percent_rank",
    "cume_dist",
    "ntile",
    "lag",
    "lead",
    "first_value",
    "last_value",
    "nth_value",
];

/// Whether a call of `name` is an aggregate: `count`, `sum`, `avg`, or `min`/`max` of one
/// argument (of more, they are the scalar least/greatest).
pub(super) fn is_aggregate_call(name: &Ident, args: &[ast::Expr], star: bool) -> bool {
    let n = name.value.to_ascii_lowercase();
    AGGREGATES.contains(&n.as_str())
        && (star
            || args.len() == 1
            || n == "count"
            || (n == "string_agg" || n == "group_concat") && args.len() == 2)
        && !((n == "min" || n == "max") && args.len() > 1)
}

/// True when `e` calls an aggregate outside any subquery.
pub(super) fn contains_aggregate(e: &ast::Expr) -> bool {
    let mut found = false;
    visit_ast(e, &mut |x| {
        if let ExprKind::Function { name, args, star, .. } = &x.kind
            && is_aggregate_call(name, args, *star)
        {
            found = true;
        }
    });
    found
}

/// True when `e` runs a subquery (which binding would plan) outside nested ones.
pub(super) fn contains_subquery(e: &ast::Expr) -> bool {
    let mut found = false;
    visit_ast(e, &mut |x| {
        found |= matches!(
            x.kind,
            ExprKind::Subquery(_) | ExprKind::Exists { .. } | ExprKind::InSubquery { .. }
        );
    });
    found
}

/// The number of nodes of `e`, subqueries not entered.
pub(super) fn node_count(e: &ast::Expr) -> usize {
    let mut n = 0;
    visit_ast(e, &mut |_| n += 1);
    n
}

/// Calls `f` on `e` and every node below it, not entering subqueries.
pub(super) fn visit_ast(e: &ast::Expr, f: &mut impl FnMut(&ast::Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Literal(_)
        | ExprKind::Param(_)
        | ExprKind::Column(_)
        | ExprKind::Subquery(_)
        | ExprKind::Exists { .. } => {}
        ExprKind::Unary(_, x) | ExprKind::IsNull { expr: x, .. } | ExprKind::Cast { expr: x, .. } => {
            visit_ast(x, f)
        }
        ExprKind::InSubquery { expr, .. } => visit_ast(expr, f),
        ExprKind::Binary(ab, _) => {
            visit_ast(&ab[0], f);
            visit_ast(&ab[1], f);
        }
        ExprKind::IsDistinct {
            left: a, right: b, ..
        } => {
            visit_ast(a, f);
            visit_ast(b, f);
        }
        ExprKind::Like {
            expr,
            pattern,
            escape,
            ..
        } => {
            visit_ast(expr, f);
            visit_ast(pattern, f);
            if let Some(e) = escape {
                visit_ast(e, f);
            }
        }
        ExprKind::InList { expr, list, .. } => {
            visit_ast(expr, f);
            list.iter().for_each(|x| visit_ast(x, f));
        }
        ExprKind::Between { expr, low, high, .. } => {
            visit_ast(expr, f);
            visit_ast(low, f);
            visit_ast(high, f);
        }
        ExprKind::Case {
            operand,
            branches,
            otherwise,
        } => {
            if let Some(o) = operand {
                visit_ast(o, f);
            }
            for (w, t) in branches {
                visit_ast(w, f);
                visit_ast(t, f);
            }
            if let Some(o) = otherwise {
                visit_ast(o, f);
            }
        }
        ExprKind::Function { args, .. } | ExprKind::Tuple(args) => args.iter().for_each(|x| visit_ast(x, f)),
        // The call itself is computed over a window, not a group: not visited, so that
        // `sum(x) OVER ()` is no aggregate of the select; what it reads is.
        ExprKind::Over { call, window } => {
            if let ExprKind::Function { args, .. } = &call.kind {
                args.iter().for_each(|x| visit_ast(x, f));
            }
            window_exprs(window, &mut |x| visit_ast(x, f));
        }
    }
}

/// Calls `f` on each expression a window is written with: PARTITION BY, ORDER BY, the
/// frame's offsets.
pub(super) fn window_exprs(w: &ast::Window, f: &mut impl FnMut(&ast::Expr)) {
    w.partition_by.iter().for_each(&mut *f);
    w.order_by.iter().for_each(|o| f(&o.expr));
    if let Some(frame) = &w.frame {
        for bound in [&frame.start, &frame.end] {
            if let ast::FrameBound::Preceding(e) | ast::FrameBound::Following(e) = bound {
                f(e);
            }
        }
    }
}

/// True when `e` has a window function (`… OVER …`) outside any subquery.
pub(super) fn contains_window(e: &ast::Expr) -> bool {
    let mut found = false;
    visit_ast(e, &mut |x| found |= matches!(x.kind, ExprKind::Over { .. }));
    found
}
