//! ecsql's writes of entities: SPAWN (its AT id, its components and their values, its
//! FROM source), DESPAWN's FROM source, and the RETURNING list after SPAWN and DESPAWN
//! (sqlparser reads INSERT's, UPDATE's and DELETE's).
//!
//! Invariant: telling SPAWN's `AT` from a component named At looks ahead without moving
//! the parser.

use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::Result;
use crate::parse::ast::{FromItem, Source, SpawnArg, SpawnItem, StatementKind, TableRef};
use crate::parse::parser::StatementParser;

impl StatementParser<'_> {
    pub(super) fn parse_spawn(&mut self) -> Result<StatementKind> {
        // `AT` is the keyword unless it is a component named At: `SPAWN At(…)`, `SPAWN At,
        // …`. After `AT (`, the token past the matching `)` decides: a component's list
        // ends at `,`, the statement's end or FROM; anything else continues an id's
        // expression (`SPAWN AT (a OR b) AND c C(…)`).
        let names_component = match self.p.peek_nth_token_ref(1).token {
            Token::Comma | Token::SemiColon | Token::EOF => true,
            Token::LParen => self.at_parens_end_a_component(),
            _ => false,
        };
        let at = if !names_component && self.p.parse_keyword(Keyword::AT) {
            let id = self.p.parse_expr().map_err(|e| self.convert(e))?;
            Some(self.expr(id)?)
        } else {
            None
        };
        let mut items = Vec::new();
        let no_items = matches!(self.p.peek_token_ref().token, Token::SemiColon | Token::EOF)
            || self.p.peek_keyword(Keyword::FROM);
        if at.is_some() && no_items {
            return Ok(StatementKind::Spawn {
                at,
                items,
                source: self.parse_source()?,
            });
        }
        loop {
            let name = self.parse_name()?;
            let mut args = Vec::new();
            if self.p.consume_token(&Token::LParen) && !self.p.consume_token(&Token::RParen) {
                loop {
                    let named = matches!(self.p.peek_token_ref().token, Token::Word(_))
                        && self.p.peek_nth_token_ref(1).token == Token::RArrow;
                    let arg_name = if named {
                        let n = self.parse_name()?;
                        self.p.next_token();
                        Some(n)
                    } else {
                        None
                    };
                    let value = self.p.parse_expr().map_err(|e| self.convert(e))?;
                    args.push(SpawnArg {
                        name: arg_name,
                        value: self.expr(value)?,
                    });
                    if self.p.consume_token(&Token::RParen) {
                        break;
                    }
                    self.expect_token(Token::Comma, ", or )")?;
                }
            }
            items.push(SpawnItem { name, args });
            if !self.p.consume_token(&Token::Comma) {
                break;
            }
        }
        Ok(StatementKind::Spawn {
            at,
            items,
            source: self.parse_source()?,
        })
    }

    /// At `AT (`: whether what follows the `)` that closes that `(` is what follows a
    /// component's values (`,`, the statement's end, FROM). The parser is left where it
    /// was.
    fn at_parens_end_a_component(&mut self) -> bool {
        let mut verdict = false;
        let _ = self.p.maybe_parse(|p| -> std::result::Result<(), ParserError> {
            p.next_token();
            let mut depth = 0usize;
            loop {
                match p.next_token().token {
                    Token::LParen => depth += 1,
                    Token::RParen if depth <= 1 => break,
                    Token::RParen => depth -= 1,
                    Token::EOF => return Err(ParserError::ParserError(String::new())),
                    _ => {}
                }
            }
            verdict = matches!(
                p.peek_token_ref().token,
                Token::Comma | Token::SemiColon | Token::EOF
            ) || p.peek_keyword(Keyword::FROM);
            // Always back to where it was.
            Err(ParserError::ParserError(String::new()))
        });
        verdict
    }

    /// `FROM items [WHERE expr]`, or `FROM SELECT …`; `None` when no FROM follows.
    pub(super) fn parse_source(&mut self) -> Result<Option<Source>> {
        if !self.p.parse_keyword(Keyword::FROM) {
            return Ok(None);
        }
        if self.p.peek_keyword(Keyword::SELECT) {
            let query = self.p.parse_query().map_err(|e| self.convert(e))?;
            let query = self.query(*query)?;
            let base = TableRef::Subquery {
                query: Box::new(query),
                alias: None,
                columns: Vec::new(),
            };
            return Ok(Some(Source {
                from: vec![FromItem {
                    base,
                    joins: Vec::new(),
                }],
                filter: None,
            }));
        }
        let tables = self
            .p
            .parse_comma_separated(Parser::parse_table_and_joins)
            .map_err(|e| self.convert(e))?;
        let from = tables
            .into_iter()
            .map(|t| self.translate_from_item(t))
            .collect::<Result<_>>()?;
        let filter = if self.p.parse_keyword(Keyword::WHERE) {
            let e = self.p.parse_expr().map_err(|e| self.convert(e))?;
            Some(self.expr(e)?)
        } else {
            None
        };
        Ok(Some(Source { from, filter }))
    }

    /// `write`, with the RETURNING list that follows it, if one does (SPAWN and DESPAWN;
    /// sqlparser reads INSERT's, UPDATE's and DELETE's).
    pub(super) fn parse_returning(&mut self, write: StatementKind) -> Result<StatementKind> {
        if !self.p.parse_keyword(Keyword::RETURNING) {
            return Ok(write);
        }
        let items = self.p.parse_projection().map_err(|e| self.convert(e))?;
        self.returning(write, Some(items))
    }
}
