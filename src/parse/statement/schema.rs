//! CREATE and DROP of what a database declares: components, tags, events, indexes and
//! phases (CREATE SYSTEM is `system.rs`'s), with their field lists and storage options.
//!
//! Invariants: a name being declared is checked where it is declared (`parse_new_name`),
//! not where it is first used; a number of ticks is a whole number from 1 to `i64::MAX`.

use sqlparser::dialect::{Dialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

use super::Result;
use crate::parse::ast::{FieldSpec, Ident, IndexUsing, StatementKind};
use crate::parse::error::ParseError;
use crate::parse::parser::StatementParser;
use crate::parse::tokens::{DIALECT, location};
use crate::parse::translate;

impl StatementParser<'_> {
    pub(super) fn parse_create(&mut self) -> Result<StatementKind> {
        if self.parse_word("COMPONENT") {
            let if_not_exists = self.parse_if_not_exists()?;
            let name = self.parse_new_name()?;
            let fields = self.parse_fields()?;
            let sparse = self.parse_storage()?;
            Ok(StatementKind::CreateComponent {
                name,
                fields,
                sparse,
                if_not_exists,
            })
        } else if self.parse_word("TAG") {
            let if_not_exists = self.parse_if_not_exists()?;
            let name = self.parse_new_name()?;
            let sparse = self.parse_storage()?;
            Ok(StatementKind::CreateTag {
                name,
                sparse,
                if_not_exists,
            })
        } else if self.parse_word("SPATIAL") {
            if !self.parse_word("INDEX") {
                return Err(self.expected("INDEX after CREATE SPATIAL"));
            }
            self.parse_create_index(IndexUsing::Spatial)
        } else if self.parse_word("INDEX") {
            self.parse_create_index(IndexUsing::Value)
        } else if self.parse_word("SYSTEM") {
            self.parse_create_system()
        } else if self.parse_word("PHASE") {
            let name = self.parse_new_name()?;
            let before = if self.parse_word("BEFORE") {
                true
            } else if self.parse_word("AFTER") {
                false
            } else {
                return Err(self.expected("BEFORE or AFTER and the phase it runs next to"));
            };
            Ok(StatementKind::CreatePhase {
                name,
                before,
                anchor: self.parse_name()?,
            })
        } else if self.parse_word("EVENT") {
            self.parse_create_event()
        } else if self.p.peek_keyword(Keyword::TABLE) {
            Err(self
                .expected("COMPONENT, TAG, EVENT or INDEX after CREATE (ecsql has components, not tables)"))
        } else if self.p.peek_keyword(Keyword::VIEW) {
            Err(self.expected(
                "COMPONENT, TAG, EVENT, INDEX, SPATIAL INDEX, SYSTEM or PHASE after CREATE (ecsql has no views: a prepared statement keeps a query to run again)",
            ))
        } else {
            Err(self.expected("COMPONENT, TAG, EVENT, INDEX, SPATIAL INDEX, SYSTEM or PHASE after CREATE"))
        }
    }

    /// `IF NOT EXISTS`, or nothing.
    fn parse_if_not_exists(&mut self) -> Result<bool> {
        if !self.parse_word("IF") {
            return Ok(false);
        }
        if !(self.parse_word("NOT") && self.parse_word("EXISTS")) {
            return Err(self.expected("NOT EXISTS after IF"));
        }
        Ok(true)
    }

    /// `[WITH (storage = sparse | dense)]` after a component or tag: true for sparse.
    fn parse_storage(&mut self) -> Result<bool> {
        if !self.p.parse_keyword(Keyword::WITH) {
            return Ok(false);
        }
        self.expect_token(Token::LParen, "( after WITH")?;
        if !self.parse_word("storage") {
            return Err(self.expected("storage = sparse or storage = dense after WITH ("));
        }
        self.expect_token(Token::Eq, "= after storage")?;
        let sparse = if self.parse_word("sparse") {
            true
        } else if self.parse_word("dense") {
            false
        } else {
            return Err(self.expected("sparse or dense after storage ="));
        };
        self.expect_token(Token::RParen, ")")?;
        Ok(sparse)
    }

    /// After `CREATE EVENT`: `name (field type, …) [WITH (keep = n TICKS)]`.
    fn parse_create_event(&mut self) -> Result<StatementKind> {
        let name = self.parse_new_name()?;
        let fields = self.parse_fields()?;
        let keep = if self.p.parse_keyword(Keyword::WITH) {
            self.expect_token(Token::LParen, "( after WITH")?;
            if self
                .p
                .peek_token()
                .token
                .to_string()
                .eq_ignore_ascii_case("storage")
            {
                return Err(ParseError::new(
                    self.here(),
                    "an event type has no storage option (its rows are a queue of their own, not components); WITH (keep = n TICKS) is the one it takes",
                ));
            }
            if !self.parse_word("keep") {
                return Err(self.expected("keep = n TICKS (how many ticks an event is kept at most)"));
            }
            self.expect_token(Token::Eq, "= after keep")?;
            let n = self.parse_count("keep")?;
            if !self.parse_word("TICKS") && !self.parse_word("TICK") {
                return Err(self.expected("TICKS after the number of ticks to keep events"));
            }
            self.expect_token(Token::RParen, ")")?;
            Some(n)
        } else {
            None
        };
        Ok(StatementKind::CreateEvent { name, fields, keep })
    }

    /// A whole number of at least 1, for `keep` and `EVERY`.
    pub(super) fn parse_count(&mut self, what: &str) -> Result<u64> {
        let token = self.p.next_token();
        match &token.token {
            Token::Number(n, _) => match n.parse::<u64>() {
                Ok(v) if v >= 1 && i64::try_from(v).is_ok() => Ok(v),
                _ => Err(ParseError::new(
                    location(&token),
                    format!(
                        "{what} takes a whole number of ticks from 1 to {}, not {n}",
                        i64::MAX
                    ),
                )),
            },
            _ => Err(self.error_at_token(&token, &format!("expected a number of ticks after {what}"))),
        }
    }

    /// After `CREATE [SPATIAL] INDEX`: `[IF NOT EXISTS] [name] ON component [USING
    /// method] (key, …) [USING method] [WHERE predicate]`: the method (`filter`) before the
    /// keys, as PostgreSQL writes it, or after; each key a field or an expression over the
    /// component's fields.
    fn parse_create_index(&mut self, mut method: IndexUsing) -> Result<StatementKind> {
        let if_not_exists = self
            .p
            .parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
        let name = if self.p.peek_keyword(Keyword::ON) {
            None
        } else {
            Some(self.parse_new_name()?)
        };
        if !self.p.parse_keyword(Keyword::ON) {
            return Err(self.expected("ON and the component to index"));
        }
        let component = self.parse_name()?;
        let before = self.parse_index_method(&mut method)?;
        self.expect_token(Token::LParen, "( and the fields or expressions to index")?;
        let mut keys = Vec::new();
        loop {
            let e = self.p.parse_expr().map_err(|e| self.convert(e))?;
            keys.push(self.expr(e)?);
            if self.p.consume_token(&Token::RParen) {
                break;
            }
            self.expect_token(Token::Comma, ", or )")?;
        }
        if !before {
            self.parse_index_method(&mut method)?;
        }
        let predicate = if self.p.parse_keyword(Keyword::WHERE) {
            let e = self.p.parse_expr().map_err(|e| self.convert(e))?;
            Some(self.expr(e)?)
        } else {
            None
        };
        Ok(StatementKind::CreateIndex {
            name,
            method,
            if_not_exists,
            component,
            keys,
            predicate,
        })
    }

    /// `USING filter`, if next: sets `method` and says whether it was there.
    fn parse_index_method(&mut self, method: &mut IndexUsing) -> Result<bool> {
        if !self.parse_word("USING") {
            return Ok(false);
        }
        let token = self.p.peek_token();
        if !self.parse_word("FILTER") {
            return Err(self.error_at_token(
                &token,
                "expected an index method after USING: filter (an ordered or relation index needs none; a spatial one is CREATE SPATIAL INDEX)",
            ));
        }
        if *method == IndexUsing::Spatial {
            return Err(ParseError::new(
                location(&token),
                "a spatial index takes no USING filter: CREATE SPATIAL INDEX makes a grid of points, CREATE INDEX … USING filter a filter index",
            ));
        }
        *method = IndexUsing::Filter;
        Ok(true)
    }

    /// `(field type [DEFAULT value], …)`, possibly empty.
    fn parse_fields(&mut self) -> Result<Vec<FieldSpec>> {
        let mut fields = Vec::new();
        self.expect_token(Token::LParen, "( and the fields")?;
        if !self.p.consume_token(&Token::RParen) {
            loop {
                fields.push(self.parse_field()?);
                if self.p.consume_token(&Token::RParen) {
                    break;
                }
                self.expect_token(Token::Comma, ", or )")?;
            }
        }
        Ok(fields)
    }

    fn parse_field(&mut self) -> Result<FieldSpec> {
        let name = self.parse_name()?;
        let type_token = self.p.peek_token();
        let ty = match &type_token.token {
            Token::Word(w) => translate::type_name(&w.value),
            _ => None,
        }
        .ok_or_else(|| {
            let found = if type_token.token == Token::EOF {
                "end of input".to_owned()
            } else {
                type_token.token.to_string()
            };
            let at = if type_token.token == Token::EOF {
                self.end_of_input()
            } else {
                location(&type_token)
            };
            ParseError::new(at, format!("{TYPE_EXPECTED}, found {found}"))
        })?;
        self.p.next_token();
        if ty == crate::storage::FieldType::Float {
            let _ = self.parse_word("PRECISION");
        }
        let default = if self.p.parse_keyword(Keyword::DEFAULT) {
            // Above IS and NOT, so that `DEFAULT 0 NOT NULL` stops at the constant and the
            // constraint after it is told apart below.
            let above_is = DIALECT.prec_value(Precedence::Is);
            let e = self.p.parse_subexpr(above_is).map_err(|e| self.convert(e))?;
            Some(self.expr(e)?)
        } else {
            None
        };
        // A table's column constraints, written by habit, have no meaning for a field.
        let next = self.p.peek_token();
        if let Token::Word(w) = &next.token
            && matches!(
                w.keyword,
                Keyword::NOT
                    | Keyword::NULL
                    | Keyword::PRIMARY
                    | Keyword::UNIQUE
                    | Keyword::CHECK
                    | Keyword::REFERENCES
                    | Keyword::CONSTRAINT
                    | Keyword::COLLATE
            )
        {
            return Err(ParseError::new(
                location(&next),
                format!(
                    "a field takes a type and a DEFAULT, not constraints (found {}): a field that is not ENTITY \
                     never holds NULL, and an entity's id is its key",
                    w.value.to_ascii_uppercase()
                ),
            ));
        }
        Ok(FieldSpec { name, ty, default })
    }

    pub(super) fn parse_drop(&mut self) -> Result<StatementKind> {
        for (word, make) in [
            (
                "SYSTEM",
                (|name, if_exists| StatementKind::DropSystem { name, if_exists })
                    as fn(Ident, bool) -> StatementKind,
            ),
            ("PHASE", |name, if_exists| StatementKind::DropPhase {
                name,
                if_exists,
            }),
            ("EVENT", |name, if_exists| StatementKind::DropEvent {
                name,
                if_exists,
            }),
        ] {
            if self.parse_word(word) {
                let if_exists = self.p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
                return Ok(make(self.parse_name()?, if_exists));
            }
        }
        if self.parse_word("INDEX") {
            let if_exists = self.p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
            return Ok(StatementKind::DropIndex {
                name: self.parse_name()?,
                if_exists,
            });
        }
        if !(self.parse_word("COMPONENT") || self.parse_word("TAG")) {
            return Err(self.expected("COMPONENT, TAG, EVENT, INDEX, SYSTEM or PHASE after DROP"));
        }
        let if_exists = self.p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        Ok(StatementKind::DropComponent {
            name: self.parse_name()?,
            if_exists,
        })
    }
}

const TYPE_EXPECTED: &str = "expected a field type (INT, FLOAT, REAL, BOOL, TEXT or ENTITY)";
