//! The small pieces statements are read from: a bare word, a name, a name being
//! declared, a token expected; and how a name must be written to read back
//! (`quote_name`).
//!
//! Invariant: a name being declared unquoted works unquoted everywhere a name goes (probed
//! by parsing the shapes of query that use one), and is no table's (`arch_…`, `entities`).

use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use super::Result;
use crate::parse::ast::Ident;
use crate::parse::error::ParseError;
use crate::parse::parser::StatementParser;
use crate::parse::tokens::{DIALECT, location};

impl StatementParser<'_> {
    // ---- small helpers ------------------------------------------------------------------

    /// Consumes the next token when it is the unquoted word `word` (any case).
    pub(super) fn parse_word(&mut self, word: &str) -> bool {
        match &self.p.peek_token_ref().token {
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word) => {
                self.p.next_token();
                true
            }
            _ => false,
        }
    }

    pub(super) fn parse_name(&mut self) -> Result<Ident> {
        let token = self.p.peek_token();
        match &token.token {
            Token::Word(w) => {
                self.p.next_token();
                Ok(Ident {
                    value: w.value.as_str().into(),
                    quoted: w.quote_style.is_some(),
                    at: location(&token),
                })
            }
            _ => Err(self.error_at_token(&token, "expected a name")),
        }
    }

    /// A name being declared: an unquoted keyword that would break queries is refused here,
    /// at the declaration, rather than at its first use.
    pub(super) fn parse_new_name(&mut self) -> Result<Ident> {
        let name = self.parse_name()?;
        if !name.quoted && !usable_unquoted(&name.value) {
            return Err(ParseError::new(
                name.at,
                format!(
                    "{} is an SQL keyword and cannot be a name unquoted; quote it (\"{}\") here and wherever it is used",
                    name.value, name.value
                ),
            ));
        }
        if name.value.starts_with("arch_") || name.value.eq_ignore_ascii_case("entities") {
            return Err(ParseError::new(
                name.at,
                format!(
                    "{} is reserved: names starting with arch_ and 'entities' name tables",
                    name.value
                ),
            ));
        }
        Ok(name)
    }

    pub(super) fn expect_token(&mut self, token: Token, expected: &str) -> Result<()> {
        if self.p.consume_token(&token) {
            Ok(())
        } else {
            Err(self.expected(expected))
        }
    }
}

/// A component or field name as it must be written in a statement: bare when that works
/// everywhere a name goes, else double-quoted (for dumps and generated scripts).
pub fn quote_name(name: &str) -> String {
    if usable_unquoted(name) {
        name.to_owned()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// True when `name`, written unquoted, works in every place a component name goes:
/// probed by parsing the shapes of query that use one.
fn usable_unquoted(name: &str) -> bool {
    if !name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return false;
    }
    let probes = [
        format!("SELECT has({name}), {name}.f FROM x WHERE has({name}) AND NOT has({name})"),
        format!(
            "SELECT * FROM {name} AS q JOIN {name} ON 1 = 1 LEFT JOIN {name} WHERE 1 = 1 ORDER BY {name}.f"
        ),
        format!("SELECT f FROM {name}, {name} WHERE f = 1"),
        format!("INSERT INTO {name} (id) VALUES (1)"),
        format!("DELETE FROM {name} WHERE 1 = 1"),
        format!("UPDATE {name} SET f = 1 FROM {name} WHERE f = 1"),
    ];
    probes.iter().all(|sql| {
        let Ok(statement) = Parser::new(&DIALECT)
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_statement())
        else {
            return false;
        };
        // Parsing may succeed by reading the name as an alias; the probe's own printing
        // comes back unchanged only when the name stood where it was written.
        statement.to_string() == *sql
    })
}
