//! COPY to and from a file, its options, and a file's name as COPY, SAVE and LOAD take it
//! (`'text'` or a parameter).
//!
//! Invariants: `COPY C [(columns)] TO` is read as the query it stands for (`SELECT *` or
//! the columns, from C), so COPY TO always runs a query; COPY FROM names a component,
//! never a query; a file's name is never empty; `STDOUT` follows only TO and `STDIN`
//! only FROM.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

use super::Result;
use crate::parse::ast::{
    self, CopyOption, Expr, ExprKind, FileName, FromItem, Query, Select, SelectItem, SetExpr, StatementKind,
    TableRef,
};
use crate::parse::error::ParseError;
use crate::parse::parser::StatementParser;
use crate::parse::tokens::location;

impl StatementParser<'_> {
    /// `COPY (query) TO 'file' [options]`, `COPY C [(columns)] TO|FROM 'file' [options]`,
    /// after COPY.
    pub(super) fn parse_copy(&mut self) -> Result<StatementKind> {
        let query_at = self.here();
        if self.p.consume_token(&Token::LParen) {
            if self.parse_word("SUBSCRIBE") {
                // Materialize writes `SUBSCRIBE [TO] (query)`; the parentheses are a query's.
                let _ = self.parse_word("TO");
                let query = self.p.parse_query().map_err(|e| self.convert(e))?;
                let query = self.query(*query)?;
                self.expect_token(Token::RParen, ") after COPY's subscription")?;
                if !self.p.parse_keyword(Keyword::TO) || !self.parse_word("STDOUT") {
                    return Err(self.expected(
                        "TO STDOUT after COPY (SUBSCRIBE …): a live query streams to the client that asked for it",
                    ));
                }
                let options = self.parse_copy_options()?;
                return Ok(StatementKind::CopySubscribe {
                    query: Box::new(query),
                    options,
                });
            }
            let query = self.p.parse_query().map_err(|e| self.convert(e))?;
            let query = self.query(*query)?;
            self.expect_token(Token::RParen, ") after COPY's query")?;
            if self.p.parse_keyword(Keyword::FROM) {
                return Err(ParseError::new(
                    query_at,
                    "COPY … FROM reads a file into a component: name the component, not a query (COPY C FROM 'file')",
                ));
            }
            if !self.p.parse_keyword(Keyword::TO) {
                return Err(self.expected("TO 'file' after COPY's query"));
            }
            let path = self.parse_copy_place(true)?;
            let options = self.parse_copy_options()?;
            return Ok(StatementKind::CopyTo {
                query: Box::new(query),
                path,
                options,
            });
        }
        let component = self.parse_name()?;
        let mut columns = Vec::new();
        if self.p.consume_token(&Token::LParen) {
            loop {
                columns.push(self.parse_name()?);
                if !self.p.consume_token(&Token::Comma) {
                    break;
                }
            }
            self.expect_token(Token::RParen, ") after the column names")?;
        }
        let to = if self.p.parse_keyword(Keyword::TO) {
            true
        } else if self.p.parse_keyword(Keyword::FROM) {
            false
        } else {
            return Err(self.expected("TO 'file' or FROM 'file'"));
        };
        let path = self.parse_copy_place(to)?;
        let options = self.parse_copy_options()?;
        if !to {
            return Ok(StatementKind::CopyFrom {
                component,
                columns,
                path,
                options,
            });
        }
        // COPY C TO: the component's rows, id first.
        let at = component.at;
        let items = if columns.is_empty() {
            smallvec::smallvec![SelectItem::Wildcard(at)]
        } else {
            columns
                .into_iter()
                .map(|c| SelectItem::Expr {
                    expr: Expr::new(ExprKind::Column(smallvec::smallvec![component.clone(), c]), at),
                    alias: None,
                })
                .collect()
        };
        let select = Select {
            distinct: false,
            items,
            from: smallvec::smallvec![FromItem {
                base: TableRef::Named {
                    name: component,
                    alias: None,
                },
                joins: Vec::new(),
            }],
            filter: None,
            group_by: Vec::new(),
            having: None,
            windows: Vec::new(),
            at,
        };
        Ok(StatementKind::CopyTo {
            query: Box::new(Query {
                body: SetExpr::Select(Box::new(select)),
                order_by: Vec::new(),
                limit: None,
                offset: None,
                at,
            }),
            path,
            options,
        })
    }

    /// Where COPY writes (`to`) or reads: a file's name, or `STDOUT` (`STDIN`), the client
    /// of a server connection.
    fn parse_copy_place(&mut self, to: bool) -> Result<FileName> {
        let (word, place) = if to {
            ("STDOUT", FileName::Stdout)
        } else {
            ("STDIN", FileName::Stdin)
        };
        if self.parse_word(word) {
            return Ok(place);
        }
        self.parse_file_name()
    }

    /// COPY's options: `[WITH] (name [value], …)`, or PostgreSQL's older words (`[WITH]
    /// CSV HEADER`, `DELIMITER [AS] 'c'`, as psql's `\copy` passes them on), or nothing.
    fn parse_copy_options(&mut self) -> Result<Vec<CopyOption>> {
        let with = self.parse_word("WITH");
        if !self.p.consume_token(&Token::LParen) {
            let older = self.parse_older_copy_options()?;
            if with && older.is_empty() {
                return Err(self.expected("( after WITH"));
            }
            return Ok(older);
        }
        let mut options = Vec::new();
        loop {
            let name = self.parse_name()?;
            let token = self.p.peek_token();
            let value = match &token.token {
                Token::Word(w) => Some(w.value.clone()),
                Token::SingleQuotedString(s) => Some(s.clone()),
                Token::Number(n, _) => Some(n.clone()),
                _ => None,
            };
            if value.is_some() {
                self.p.next_token();
            }
            options.push(CopyOption { name, value });
            if !self.p.consume_token(&Token::Comma) {
                break;
            }
        }
        self.expect_token(Token::RParen, ") after COPY's options")?;
        Ok(options)
    }

    /// PostgreSQL's options of before its version 9.0, which psql's `\copy` passes on as
    /// typed: `CSV`, `HEADER`, `DELIMITER [AS] 'c'`, as the options they stand for.
    fn parse_older_copy_options(&mut self) -> Result<Vec<CopyOption>> {
        let mut options = Vec::new();
        loop {
            let at = self.here();
            let option = |name: &str, value: &str| CopyOption {
                name: ast::Ident::new(name, at),
                value: Some(value.to_owned()),
            };
            if self.parse_word("CSV") {
                options.push(option("format", "csv"));
            } else if self.parse_word("HEADER") {
                options.push(option("header", "true"));
            } else if self.parse_word("DELIMITER") {
                let _ = self.p.parse_keyword(Keyword::AS);
                let token = self.p.next_token();
                let Token::SingleQuotedString(c) = token.token.clone() else {
                    return Err(
                        self.error_at_token(&token, "expected the delimiter in quotes: DELIMITER ';'")
                    );
                };
                options.push(option("delimiter", &c));
            } else {
                return Ok(options);
            }
        }
    }

    /// A file's name: `'text'` or a parameter.
    pub(super) fn parse_file_name(&mut self) -> Result<FileName> {
        let token = self.p.next_token();
        match token.token.clone() {
            Token::SingleQuotedString(path) if path.is_empty() => {
                Err(ParseError::new(location(&token), "the file's name is empty"))
            }
            Token::SingleQuotedString(path) => Ok(ast::FileName::Text(path)),
            Token::Placeholder(p) => Ok(ast::FileName::Param(self.next_param(&p, location(&token))?)),
            // `@name`, which the tokenizer gives as one word.
            Token::Word(w) if w.quote_style.is_none() && w.value.len() > 1 && w.value.starts_with('@') => {
                Ok(ast::FileName::Param(self.next_param(&w.value, location(&token))?))
            }
            // `:name`, which the tokenizer gives as `:` and a word.
            Token::Colon => match self.p.peek_token().token {
                Token::Word(w) if w.quote_style.is_none() => {
                    self.p.next_token();
                    Ok(ast::FileName::Param(
                        self.next_param(&format!(":{}", w.value), location(&token))?,
                    ))
                }
                _ => Err(self.error_at_token(&token, "expected the file's name, as 'text' or a parameter")),
            },
            _ => Err(self.error_at_token(&token, "expected the file's name, as 'text' or a parameter")),
        }
    }
}
