//! The parse layer: text in, ecsql's syntax tree (`ast/`) out.
//!
//! `sqlparser` does the tokenizing and parses expressions, SELECT, INSERT, UPDATE and
//! DELETE; the ECS statements (CREATE COMPONENT, SPAWN, DESPAWN, SHOW, …) are parsed here on
//! top of its `Parser`, from outside. This folder is the only place that sees sqlparser's
//! types: `translate/` turns its tree into ours, so everything after parsing depends only
//! on `ast/`. Names are not resolved here; that is the binder's job.
//!
//! Queries, UPDATE, DELETE, INSERT, SPAWN and DESPAWN in their common forms are first tried
//! by `direct.rs`, a parser of our own over `lex.rs`'s tokens, several times quicker; it
//! gives up on anything unusual and on every error, and the text then takes the sqlparser
//! way, so the two always make the same tree of a text (`tests.rs` checks it).
//!
//! The sqlparser way: `tokens.rs` makes a text's tokens, `parser.rs` holds the
//! `StatementParser` that reads them, `statement/` reads ecsql's statements with it and
//! `translate/` turns what sqlparser read into our tree. This file holds the entry
//! points: parsing a script, one statement, a system's clauses, and the check that a tree
//! printed back reads back as itself.

pub mod ast;
mod direct;
mod error;
mod lex;
mod parser;
mod rows;
mod shape;
mod split;
mod start;
mod statement;
mod tokens;
mod translate;

use crate::location::Location;
use parser::StatementParser;

pub use ast::*;
pub use error::ParseError;
pub use shape::{LONGEST as LONGEST_SHAPED, MaskedLiteral, Shape, place_in, shape};
pub use split::{Split, is_blank, skip_space, split_statements};
pub use statement::words::quote_name;

type Result<T> = std::result::Result<T, ParseError>;

/// Parses a script of `;`-separated statements.
pub fn parse(sql: &str) -> Result<Vec<Statement>> {
    parse_at(sql, Location::new(1, 1))
}

/// Parses a script that begins at `start` in a larger text (a file a shell runs piece by
/// piece), so that every location, in errors too, is a place in that larger text.
pub fn parse_at(sql: &str, start: Location) -> Result<Vec<Statement>> {
    // The common statements are read directly; the rest, and every error, go the way
    // below (`direct.rs` says why the two agree).
    if let Some(statements) = direct::parse(sql, start) {
        return Ok(statements);
    }
    parse_with_sqlparser(sql, start)
}

/// `parse_at` through sqlparser alone.
fn parse_with_sqlparser(sql: &str, start: Location) -> Result<Vec<Statement>> {
    // sqlparser builds a chain of binary operators (`1 + 1 + …`) without recursion however
    // long it is, but measuring its span and dropping it recurse once per operator. Those
    // run on a stack grown to fit the text's operators, so no input overflows the
    // caller's (a 2 MiB thread's included); translation refuses trees past MAX_DEPTH.
    let need = stack_for(sql);
    stacker::maybe_grow(need, need, || parse_unbounded(sql, start))
}

/// The stack parsing `sql` may take: a level per operator and per word at most.
fn stack_for(sql: &str) -> usize {
    let operators = sql.bytes().filter(|b| b"+-*/%|=<>!".contains(b)).count();
    let words = sql.split_ascii_whitespace().count();
    STACK_RED_ZONE + (operators + words) * STACK_PER_LEVEL
}

/// Room kept on the stack for parsing beyond what deep chains take.
const STACK_RED_ZONE: usize = 256 * 1024;
/// Stack one level of a chain may take in sqlparser's span and drop: measured at about
/// 0.9 KiB in a release build and 5.8 KiB in a debug one.
const STACK_PER_LEVEL: usize = if cfg!(debug_assertions) {
    8 * 1024
} else {
    2 * 1024
};

fn parse_unbounded(sql: &str, start: Location) -> Result<Vec<Statement>> {
    // Literal VALUES blocks (a dump's) are read aside, and their rows put back where
    // their markers are. A marker not found there (the block was inside a construct the
    // reader does not know, a string sqlparser reads otherwise) sends the text through
    // sqlparser whole.
    // An error there is sqlparser's to give, about the text as written.
    if let Some(blanked) = rows::blank_values(sql, start)
        && let Ok(mut parser) = StatementParser::with_rows(&blanked.text, start, blanked.blocks)
        && let Ok(statements) = parser.parse_all()
        && parser.rows.iter().all(Option::is_none)
    {
        return Ok(statements);
    }
    StatementParser::new(sql, start)?.parse_all()
}

/// The clauses of a system given alone (`AFTER gravity EVERY 2 TICKS`), as a Rust system
/// is registered with: a spec named `name` with no statements.
pub fn system_clauses(name: &str, clauses: &str) -> Result<SystemSpec> {
    stacker::maybe_grow(stack_for(clauses), stack_for(clauses), || {
        let mut parser = StatementParser::new(clauses, Location::new(1, 1))?;
        parser.statement_at = Location::new(1, 1);
        if let Some((_, at)) = parser.too_deep.first() {
            return Err(translate::too_deep(*at));
        }
        let mut spec = SystemSpec::named(Ident::new(name, Location::new(1, 1)));
        parser.parse_system_clauses(&mut spec, false)?;
        Ok(spec)
    })
}

/// `statement` printed back as text (its `Display`), when that text parses to the same
/// statement (places aside): what is kept to be read again (a system in a snapshot, a
/// statement in a journal) must read back. Else why not, with the text.
#[cfg(test)]
pub fn reads_back(statement: &Statement) -> std::result::Result<String, String> {
    same_when_read(statement.to_string(), &statement.kind, |again| &again.kind)
}

/// `reads_back` for a system's declaration, as a snapshot keeps it.
pub fn system_reads_back(spec: &SystemSpec) -> std::result::Result<String, String> {
    same_when_read(spec.to_string(), spec, |again| match &again.kind {
        StatementKind::CreateSystem(again) => again as &dyn std::fmt::Debug,
        other => other,
    })
}

/// `text` when it parses to a statement whose part `part` picks is `tree`, places aside.
fn same_when_read<T: std::fmt::Debug + ?Sized>(
    text: String,
    tree: &T,
    part: impl FnOnce(&Statement) -> &dyn std::fmt::Debug,
) -> std::result::Result<String, String> {
    // The trees are compared as their Debug texts, a level of recursion per level of
    // the tree: on a stack that fits the text's depth.
    let need = stack_for(&text);
    stacker::maybe_grow(need, need, || match parse_one(&text) {
        Ok(again) if without_places(part(&again)) == without_places(tree) => Ok(text.clone()),
        Ok(again) => Err(format!(
            "it prints as `{text}`, which reads back as another statement (`{again}`)"
        )),
        Err(e) => Err(format!("it prints as `{text}`, which does not parse: {e}")),
    })
}

/// A tree as text, without the places of its nodes.
fn without_places(tree: &(impl std::fmt::Debug + ?Sized)) -> String {
    const PLACE: &str = "Location { line: ";
    let tree = format!("{tree:?}");
    let mut out = String::with_capacity(tree.len());
    let mut rest = tree.as_str();
    while let Some(i) = rest.find(PLACE) {
        out.push_str(&rest[..i]);
        out.push_str("Location");
        rest = &rest[i..];
        rest = rest.find('}').map_or("", |end| &rest[end + 1..]);
    }
    out.push_str(rest);
    out
}

/// Parses exactly one statement (a trailing `;` is allowed).
pub fn parse_one(sql: &str) -> Result<Statement> {
    parse_one_boxed(sql).map(|statement| *statement)
}

/// `parse_one`, the statement boxed where it is made (a statement is a few hundred
/// bytes; a text run once is moved on as a pointer).
pub fn parse_one_boxed(sql: &str) -> Result<Box<Statement>> {
    // The common statement is read directly, without a list; the rest and every error
    // the way `parse` goes (a text the direct parser gave up on is tried by it again
    // there, a small cost beside sqlparser's).
    if let Some(statement) = direct::parse_one(sql, Location::new(1, 1)) {
        return Ok(statement);
    }
    let mut statements = parse(sql)?;
    match statements.len() {
        1 => Ok(Box::new(statements.remove(0))),
        0 => Err(ParseError::new(
            Location::new(1, 1),
            "expected a statement, found end of input",
        )),
        _ => Err(ParseError::new(
            statements[1].at,
            "expected one statement, found more than one",
        )),
    }
}

#[cfg(test)]
mod printed;
#[cfg(test)]
mod tests;
