//! sqlparser's tree → ecsql's tree. Whatever sqlparser accepts that ecsql does not support
//! stops here with a located error, so later layers see only what they handle.
//!
//! One impl block of `StatementParser` a file, by what it translates: `expr.rs`
//! (expressions), `function.rs` (calls and their windows), `query.rs` (queries, set
//! operations, SELECT, ORDER BY, LIMIT), `with.rs` (WITH and WITH RECURSIVE), `from.rs`
//! (FROM and its joins), `write.rs` (INSERT, UPDATE, DELETE, RETURNING). This file holds
//! what they share: the limits on what one statement may hold, names and their places,
//! parameters, and the field types a type name stands for.

mod expr;
mod from;
mod function;
mod query;
mod with;
mod write;

use sqlparser::ast::{self as sql, Spanned};

use super::ast::*;
use super::error::ParseError;
use super::parser::StatementParser;
use super::start::{Node, start};
use crate::location::Location;
use crate::storage::FieldType;

type Result<T> = std::result::Result<T, ParseError>;

fn span_at(span: sqlparser::tokenizer::Span) -> Location {
    Location::new(span.start.line as u32, span.start.column as u32)
}

fn ident(i: sql::Ident) -> Ident {
    let at = span_at(i.span);
    Ident {
        value: i.value.into(),
        quoted: i.quote_style.is_some(),
        at,
    }
}

/// The deepest expression tree a statement may hold: every parenthesis, operator, call,
/// CASE and subquery (in FROM too) is a level (`a + b + c` is two), as SQLite counts,
/// whose limit this is; the value at the bottom (a literal, a name) is not. Deeper
/// trees are refused while translating, so the binder and the executor never see one.
pub const MAX_DEPTH: usize = 1000;

/// The most SELECTs (and VALUES) one chain of UNION, EXCEPT and INTERSECT may join, as
/// SQLite's SQLITE_MAX_COMPOUND_SELECT.
pub const MAX_COMPOUND: usize = 500;

/// The most references to common table expressions one statement may make, counting
/// those inside other CTEs' bodies as often as they are copied: each reference is the
/// CTE's query in place, and a chain of CTEs each reading the one before twice would
/// otherwise double the statement per link.
pub const MAX_CTE_REFERENCES: usize = 1000;

pub(super) fn too_deep(at: Location) -> ParseError {
    ParseError::new(
        at,
        format!(
            "expression too deep: more than {MAX_DEPTH} levels of parentheses, operators, \
             calls, CASEs and subqueries; split it into parts, or write a chain of ORs of one \
             column as IN (…)"
        ),
    )
}

impl StatementParser<'_> {
    /// Where `node` begins, or the statement's start if sqlparser recorded no place.
    fn start_of(&self, node: Node<'_>) -> Location {
        self.location_or_statement(span_at(start(node)))
    }

    fn unsupported(&self, at: Location, what: impl std::fmt::Display) -> ParseError {
        ParseError::new(self.location_or_statement(at), format!("{what} is not supported"))
    }

    fn object_name(&self, name: sql::ObjectName) -> Result<Vec<Ident>> {
        let at = span_at(name.span());
        name.0
            .into_iter()
            .map(|part| match part {
                sql::ObjectNamePart::Identifier(i) => Ok(ident(i)),
                other => Err(self.unsupported(at, format!("the name part {other}"))),
            })
            .collect()
    }

    /// A function's name: one part, or two whose first is `pg_catalog` (where PostgreSQL
    /// keeps every built-in function, as its tools write them).
    fn routine_name(&self, name: sql::ObjectName) -> Result<Ident> {
        let mut name = name;
        if name.0.len() == 2
            && let sql::ObjectNamePart::Identifier(schema) = &name.0[0]
            && schema.value.eq_ignore_ascii_case("pg_catalog")
        {
            name.0.remove(0);
        }
        self.single_name(name)
    }

    /// A one-part name (a component, a field, a function).
    fn single_name(&self, name: sql::ObjectName) -> Result<Ident> {
        let at = span_at(name.span());
        let mut parts = self.object_name(name)?;
        if parts.len() != 1 {
            let text = parts.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(".");
            return Err(ParseError::new(
                self.location_or_statement(at),
                format!("expected a plain name, found {text}"),
            ));
        }
        Ok(parts.remove(0))
    }

    pub(super) fn next_param(&mut self, text: &str, at: Location) -> Result<Param> {
        let rest = &text[1..];
        let sigil = text.chars().next().unwrap_or('?');
        if rest.is_empty() && sigil == '?' {
            self.last_param += 1;
            return Ok(Param::Position(self.last_param));
        }
        if let Ok(n) = rest.parse::<usize>() {
            if n == 0 {
                return Err(ParseError::new(at, "parameter numbers start at 1"));
            }
            self.last_param = self.last_param.max(n);
            return Ok(Param::Position(n));
        }
        if rest.is_empty() {
            return Err(ParseError::new(
                at,
                format!("expected a parameter name after {sigil}"),
            ));
        }
        if !self.named_params.iter().any(|n| n == rest) {
            self.named_params.push(rest.to_owned());
        }
        Ok(Param::Named {
            name: rest.to_owned(),
            sigil,
        })
    }
}

/// The field type a type name in CAST stands for. PostgreSQL's names of the same kinds of
/// value are taken too, as its tools write them (`pg_catalog.text`, `oid`, `name`,
/// `"char"`, `int2[]`): the integers are INT, the texts TEXT, and an array is its text
/// (`{a,b}`), as PostgreSQL writes one.
pub(super) fn type_name(name: &str) -> Option<FieldType> {
    let name = name.trim();
    let lower = name.to_ascii_lowercase();
    let name = lower.strip_prefix("pg_catalog.").unwrap_or(&lower);
    if let Some(element) = name.strip_suffix("[]") {
        return type_name(element).map(|_| FieldType::Text);
    }
    // A length or a precision in parentheses changes nothing ecsql keeps.
    let name = name.split_once('(').map_or(name, |(n, _)| n.trim_end());
    match name.to_ascii_uppercase().as_str() {
        "INT" | "INTEGER" | "BIGINT" | "INT8" | "INT4" | "INT2" | "SMALLINT" | "OID" | "XID" => {
            Some(FieldType::Int)
        }
        "FLOAT" | "DOUBLE" | "DOUBLE PRECISION" | "FLOAT8" => Some(FieldType::Float),
        "REAL" | "FLOAT4" => Some(FieldType::Real),
        "BOOL" | "BOOLEAN" => Some(FieldType::Bool),
        "TEXT" | "VARCHAR" | "STRING" | "NAME" | "INT2VECTOR" | "OIDVECTOR" | "\"CHAR\"" | "CHAR"
        | "BPCHAR" | "CHARACTER VARYING" | "CHARACTER" => Some(FieldType::Text),
        "ENTITY" => Some(FieldType::Entity),
        _ => None,
    }
}
