//! Where a piece of sqlparser's tree begins in the text, found without recursion.
//!
//! sqlparser's `Spanned::span` unions the spans of a node's whole subtree, recursively:
//! asked of every node while translating, that is quadratic in a tree's depth and recurses
//! as deep as the tree, past any thread's stack for trees sqlparser itself builds within a
//! few hundred KiB (it grows its own stack). A node's start is its first token, which lies
//! in its leftmost part, so it is found here by walking down the left edge in a loop. The
//! few node kinds not walked here (none of which ecsql translates) fall back to
//! `Spanned::span` on a stack grown to fit any tree sqlparser accepts.

use sqlparser::ast::{self as sql, Spanned};
use sqlparser::tokenizer::Span;

/// A node of sqlparser's tree whose start can be asked for.
#[derive(Clone, Copy)]
pub(super) enum Node<'a> {
    Expr(&'a sql::Expr),
    Query(&'a sql::Query),
    SetExpr(&'a sql::SetExpr),
    Table(&'a sql::TableFactor),
}

/// Stack enough for `Spanned::span` over the deepest tree sqlparser builds (its recursion
/// limit, a few frames of at most 1 KiB each per level in a debug build).
const FALLBACK_STACK: usize = 16 << 20;

/// The span of the token `node` begins with (empty if sqlparser recorded none).
pub(super) fn start(mut node: Node<'_>) -> Span {
    use sql::Expr as E;
    loop {
        node = match node {
            Node::Expr(e) => match e {
                E::Identifier(i) => return i.span,
                E::CompoundIdentifier(parts) if !parts.is_empty() => return parts[0].span,
                E::Value(v) => return v.span,
                E::Wildcard(token) => return token.0.span,
                E::Case { case_token, .. } => return case_token.0.span,
                E::Function(f) if !f.name.0.is_empty() => return f.name.0[0].span(),
                E::IsFalse(e)
                | E::IsNotFalse(e)
                | E::IsTrue(e)
                | E::IsNotTrue(e)
                | E::IsNull(e)
                | E::IsNotNull(e)
                | E::IsUnknown(e)
                | E::IsNotUnknown(e)
                | E::IsDistinctFrom(e, _)
                | E::IsNotDistinctFrom(e, _)
                | E::Nested(e)
                | E::InList { expr: e, .. }
                | E::InSubquery { expr: e, .. }
                | E::Between { expr: e, .. }
                | E::BinaryOp { left: e, .. }
                | E::AnyOp { left: e, .. }
                | E::AllOp { left: e, .. }
                | E::Like { expr: e, .. }
                | E::ILike { expr: e, .. }
                | E::SimilarTo { expr: e, .. }
                | E::UnaryOp { expr: e, .. }
                | E::Cast { expr: e, .. }
                | E::Extract { expr: e, .. }
                | E::Substring { expr: e, .. }
                | E::Trim { expr: e, .. }
                | E::Ceil { expr: e, .. }
                | E::Floor { expr: e, .. }
                | E::Position { expr: e, .. }
                | E::Collate { expr: e, .. }
                | E::AtTimeZone { timestamp: e, .. } => Node::Expr(e),
                E::Tuple(items) if !items.is_empty() => Node::Expr(&items[0]),
                E::Interval(i) => Node::Expr(&i.value),
                E::Subquery(q) | E::Exists { subquery: q, .. } => Node::Query(q),
                other => return deep_span(other),
            },
            Node::Query(q) => match &q.with {
                Some(with) => return with.with_token.0.span,
                None => Node::SetExpr(&q.body),
            },
            Node::SetExpr(body) => match body {
                sql::SetExpr::Select(s) => return s.select_token.0.span,
                sql::SetExpr::Query(q) => Node::Query(q),
                sql::SetExpr::SetOperation { left, .. } => Node::SetExpr(left),
                other => return deep_span(other),
            },
            Node::Table(t) => match t {
                sql::TableFactor::Table { name, .. } if !name.0.is_empty() => {
                    return name.0[0].span();
                }
                sql::TableFactor::Derived { subquery, .. } => Node::Query(subquery),
                sql::TableFactor::NestedJoin { table_with_joins, .. } => {
                    Node::Table(&table_with_joins.relation)
                }
                other => return deep_span(other),
            },
        };
    }
}

/// `Spanned::span`, on a stack that fits the deepest tree sqlparser builds.
fn deep_span(node: &impl Spanned) -> Span {
    on_deep_stack(|| node.span())
}

/// Runs `f`, which walks (or drops) a tree as deep as sqlparser builds, on a stack that
/// fits it.
pub(super) fn on_deep_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(FALLBACK_STACK, FALLBACK_STACK, f)
}
