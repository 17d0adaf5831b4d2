//! `StatementParser`: sqlparser's `Parser` over a text's tokens, and what reading and
//! translating the text's statements keeps on the way: the parameters seen, the depth
//! reached, where the statement began, the VALUES blocks read aside and the WITH queries
//! in scope (`Cte`). Its methods are impl blocks elsewhere: `statement/` reads ecsql's
//! statements on top of sqlparser's, `translate/` turns sqlparser's tree into ours.
//!
//! Invariants:
//! - What describes one statement (its parameters, depth, WITH queries, start) is reset
//!   where each statement begins (`parse_statement_inner`); what describes the text (its
//!   tokens, the too-deep spots, the VALUES blocks, the rewritten IS places) is kept for
//!   the whole text.
//! - Nothing here imports the modules that fill it in; they import it.

use sqlparser::parser::Parser;
use sqlparser::tokenizer::TokenWithSpan;

use super::ast::{Expr, Ident, Query, RecursiveCte};
use crate::location::Location;

pub(crate) struct StatementParser<'a> {
    pub(super) p: Parser<'a>,
    /// The tokens without whitespace, to place errors sqlparser reports without a location.
    pub(super) tokens: Vec<TokenWithSpan>,
    /// The highest `?N` seen in the current statement: a bare `?` takes the next number.
    pub(super) last_param: usize,
    /// The names of the named parameters seen in the current statement.
    pub(super) named_params: Vec<String>,
    /// How deep the expression being translated lies (see `translate::MAX_DEPTH`).
    pub(super) depth: usize,
    /// Where the current statement began: the fallback location for nodes without a span.
    pub(super) statement_at: Location,
    /// For each statement nested past `MAX_DEPTH`, where it begins and where it passes.
    pub(super) too_deep: Vec<(Location, Location)>,
    /// The literal VALUES blocks read aside (`rows.rs`), by marker number, until their
    /// markers are met.
    pub(super) rows: Vec<Option<Vec<Vec<Expr>>>>,
    /// The text and where it begins, to read its tokens again (`retry_sqlite_is`).
    pub(super) sql: &'a str,
    pub(super) start: Location,
    /// Where an `IS` or `IS NOT` takes an operand, SQLite's way (`sqlite_is`): the places
    /// found so far, each rewritten in the tokens.
    pub(super) is_operands: Vec<Location>,
    /// Set by `convert` when sqlparser refused what follows an IS that `sqlite_is` reads.
    pub(super) is_operand_found: std::cell::Cell<Option<Location>>,
    /// The common table expressions in scope, innermost last (`Cte`).
    pub(super) ctes: Vec<Cte>,
    /// The references to them the current statement made (`MAX_CTE_REFERENCES`).
    pub(super) cte_references: usize,
    /// The references a recursive WITH query being read makes to itself.
    pub(super) self_references: usize,
    /// How many queries deep translation is (a recursive query may read itself only at
    /// its own depth: `CteBody::Reading`).
    pub(super) query_nesting: usize,
}

/// A common table expression in scope (`WITH name [(columns)] AS (query)`): each reference
/// to `name` in FROM is `query` there, as a subquery named `name`.
#[derive(Debug)]
pub(super) struct Cte {
    pub(super) name: Ident,
    pub(super) columns: Vec<Ident>,
    pub(super) body: CteBody,
    /// How many queries a reference puts in place: this one and every CTE reference in
    /// it, each weighed so (`MAX_CTE_REFERENCES` counts these).
    pub(super) weight: usize,
    /// Whether a FROM has read it.
    pub(super) read: std::cell::Cell<bool>,
}

#[derive(Debug)]
pub(super) enum CteBody {
    Query(Query),
    Recursive(RecursiveCte),
    /// A query of WITH RECURSIVE being read, at this depth of nested queries: a reference
    /// to it there is its own (left a name, for the binder), counted in
    /// `self_references`; one inside a subquery is refused.
    Reading(usize),
}
