//! Systems and ticks: CREATE SYSTEM with its clauses and its body, a Rust system's
//! clauses given alone (`system_clauses`), ALTER SYSTEM, and TICK.
//!
//! Invariants: each clause is given at most once; a system's body holds only statements
//! that may run in a system (`runs_in_system`), each placed where it stands in the text.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

use super::Result;
use crate::parse::ast::{Ident, Statement, StatementKind, SystemSpec};
use crate::parse::error::ParseError;
use crate::parse::parser::StatementParser;
use crate::parse::tokens::location;

impl StatementParser<'_> {
    /// After `CREATE SYSTEM`: the name, its clauses in any order (each once), `AS`, and
    /// one statement or `BEGIN statement; … END`.
    pub(super) fn parse_create_system(&mut self) -> Result<StatementKind> {
        let mut spec = SystemSpec::named(self.parse_new_name()?);
        self.parse_system_clauses(&mut spec, true)?;
        let begins_block = matches!(&self.p.peek_token_ref().token,
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("BEGIN"));
        if !begins_block {
            spec.body.push(self.parse_system_statement()?);
            return Ok(StatementKind::CreateSystem(Box::new(spec)));
        }
        self.p.next_token();
        spec.block = true;
        loop {
            while self.p.consume_token(&Token::SemiColon) {}
            if self.parse_word("END") {
                break;
            }
            if self.p.peek_token_ref().token == Token::EOF {
                return Err(self.expected("END to close the system's BEGIN"));
            }
            spec.body.push(self.parse_system_statement()?);
            if !matches!(self.p.peek_token_ref().token, Token::SemiColon) {
                return Err(self
                    .expected("; to end the statement (each statement between BEGIN and END ends with ;)"));
            }
        }
        if spec.body.is_empty() {
            return Err(ParseError::new(
                spec.name.at,
                format!(
                    "system {} has no statements between BEGIN and END",
                    spec.name.value
                ),
            ));
        }
        Ok(StatementKind::CreateSystem(Box::new(spec)))
    }

    /// The clauses of CREATE SYSTEM, in any order, each at most once, up to `AS` (or, for
    /// a Rust system's clauses given alone, to the end).
    pub(in crate::parse) fn parse_system_clauses(
        &mut self,
        spec: &mut SystemSpec,
        until_as: bool,
    ) -> Result<()> {
        loop {
            let token = self.p.peek_token();
            let twice = |_: &Self, clause: &str| {
                ParseError::new(location(&token), format!("{clause} is given twice; give it once"))
            };
            if self.p.parse_keyword(Keyword::IN) {
                if spec.phase.is_some() {
                    return Err(twice(self, "IN PHASE"));
                }
                if !self.parse_word("PHASE") {
                    return Err(self.expected("PHASE after IN"));
                }
                spec.phase = Some(self.parse_name()?);
            } else if self.parse_word("BEFORE") {
                if !spec.before.is_empty() {
                    return Err(twice(self, "BEFORE"));
                }
                spec.before = self.parse_names()?;
            } else if self.parse_word("AFTER") {
                if !spec.after.is_empty() {
                    return Err(twice(self, "AFTER"));
                }
                spec.after = self.parse_names()?;
            } else if self.parse_word("EVERY") {
                if spec.every.is_some() {
                    return Err(twice(self, "EVERY"));
                }
                spec.every = Some(self.parse_count("EVERY")?);
                if !self.parse_word("TICKS") && !self.parse_word("TICK") {
                    return Err(self.expected("TICKS after EVERY n"));
                }
            } else if self.p.parse_keyword(Keyword::WHEN) {
                if spec.when.is_some() {
                    return Err(twice(self, "WHEN"));
                }
                if self.p.peek_token_ref().token != Token::LParen {
                    return Err(self.expected("( and the condition after WHEN"));
                }
                let e = self.p.parse_expr().map_err(|e| self.convert(e))?;
                spec.when = Some(self.expr(e)?);
            } else if (until_as && self.p.parse_keyword(Keyword::AS))
                || (!until_as && self.p.peek_token_ref().token == Token::EOF)
            {
                return Ok(());
            } else if until_as {
                return Err(
                    self.expected("IN PHASE, BEFORE, AFTER, EVERY, WHEN or AS and the system's statements")
                );
            } else {
                return Err(self.expected("IN PHASE, BEFORE, AFTER, EVERY or WHEN"));
            }
        }
    }

    /// One statement of a system's body: a query or a write of rows.
    fn parse_system_statement(&mut self) -> Result<Statement> {
        let outer = self.statement_at;
        let statement = self.parse_statement_inner()?;
        self.statement_at = outer;
        if !statement.kind.runs_in_system() {
            return Err(ParseError::new(
                statement.at,
                format!(
                    "{} cannot run in a system: a system runs SELECT, INSERT, UPDATE, DELETE, SPAWN and DESPAWN",
                    statement.kind.verb()
                ),
            ));
        }
        Ok(statement)
    }

    /// `name, …`.
    fn parse_names(&mut self) -> Result<Vec<Ident>> {
        let mut names = vec![self.parse_name()?];
        while self.p.consume_token(&Token::Comma) {
            names.push(self.parse_name()?);
        }
        Ok(names)
    }

    /// `ALTER SYSTEM name ENABLE | DISABLE`.
    pub(super) fn parse_alter(&mut self) -> Result<StatementKind> {
        if !self.parse_word("SYSTEM") {
            return Err(self.expected("SYSTEM after ALTER (ALTER SYSTEM name ENABLE | DISABLE)"));
        }
        let name = self.parse_name()?;
        let enable = if self.parse_word("ENABLE") {
            true
        } else if self.parse_word("DISABLE") {
            false
        } else {
            return Err(self.expected("ENABLE or DISABLE"));
        };
        Ok(StatementKind::AlterSystem { name, enable })
    }

    /// After `TICK`: `[n] [WITH dt = expr]`.
    pub(super) fn parse_tick(&mut self) -> Result<StatementKind> {
        let count = if matches!(self.p.peek_token_ref().token, Token::SemiColon | Token::EOF)
            || self.p.peek_keyword(Keyword::WITH)
        {
            None
        } else {
            let e = self.p.parse_expr().map_err(|e| self.convert(e))?;
            Some(self.expr(e)?)
        };
        let dt = if self.p.parse_keyword(Keyword::WITH) {
            if !self.parse_word("dt") {
                return Err(self.expected("dt = seconds after TICK … WITH"));
            }
            self.expect_token(Token::Eq, "= after dt")?;
            let e = self.p.parse_expr().map_err(|e| self.convert(e))?;
            Some(self.expr(e)?)
        } else {
            None
        };
        Ok(StatementKind::Tick { count, dt })
    }
}
