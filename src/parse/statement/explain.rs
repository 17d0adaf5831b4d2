//! EXPLAIN's own grammar: the statement EXPLAIN ANALYZE runs, and the option list
//! PostgreSQL writes (ANALYZE, TIMING) with ecsql's KEEP.
//!
//! Invariants: EXPLAIN ANALYZE explains a statement, never another EXPLAIN; TIMING and
//! KEEP are taken only with ANALYZE on.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

use super::Result;
use crate::parse::ast::Statement;
use crate::parse::parser::StatementParser;

impl StatementParser<'_> {
    /// The statement EXPLAIN ANALYZE runs: not another EXPLAIN.
    pub(super) fn explained(&mut self) -> Result<Statement> {
        let found = self.p.peek_token();
        if matches!(&found.token, Token::Word(w) if w.keyword == Keyword::EXPLAIN) {
            return Err(self.error_at_token(
                &found,
                "EXPLAIN ANALYZE explains a statement, not another EXPLAIN",
            ));
        }
        if matches!(&found.token, Token::Word(w) if w.value.eq_ignore_ascii_case("VERBOSE")) {
            return Err(self.error_at_token(
                &found,
                "EXPLAIN's VERBOSE is not supported: EXPLAIN ANALYZE prints every part it ran",
            ));
        }
        self.parse_statement_body()
    }

    /// `(ANALYZE [true|false] [, TIMING [true|false]] [, KEEP [true|false]])`, PostgreSQL's
    /// option list (a value also `on`/`off` or `1`/`0`) and ecsql's KEEP: whether times
    /// are shown and whether a write is kept, or `None` for ANALYZE off (a plain EXPLAIN).
    pub(super) fn explain_options(&mut self) -> Result<Option<(bool, bool)>> {
        self.p.expect_token(&Token::LParen).map_err(|e| self.convert(e))?;
        let (mut analyze, mut timing, mut keep) = (None, true, false);
        // TIMING or KEEP given (the first), which need ANALYZE on.
        let mut others = None;
        loop {
            let found = self.p.next_token();
            let option = match &found.token {
                Token::Word(w) => w.value.to_ascii_uppercase(),
                _ => String::new(),
            };
            let value = match self.p.peek_token().token {
                Token::Word(w) if w.keyword == Keyword::TRUE || w.keyword == Keyword::ON => {
                    self.p.next_token();
                    true
                }
                Token::Word(w) if w.keyword == Keyword::FALSE || w.keyword == Keyword::OFF => {
                    self.p.next_token();
                    false
                }
                Token::Number(n, _) if n == "0" || n == "1" => {
                    self.p.next_token();
                    n == "1"
                }
                _ => true,
            };
            match option.as_str() {
                "ANALYZE" => analyze = Some(value),
                "TIMING" => (timing, others) = (value, others.or_else(|| Some(found.clone()))),
                "KEEP" => (keep, others) = (value, others.or_else(|| Some(found.clone()))),
                _ => {
                    return Err(self.error_at_token(
                        &found,
                        "EXPLAIN's options are ANALYZE, TIMING and KEEP: EXPLAIN (ANALYZE, TIMING false) SELECT …",
                    ));
                }
            }
            if self.p.consume_token(&Token::RParen) {
                break;
            }
            self.p.expect_token(&Token::Comma).map_err(|e| self.convert(e))?;
        }
        match analyze {
            Some(true) => Ok(Some((timing, keep))),
            Some(false) => match others {
                // PostgreSQL: "option TIMING requires ANALYZE".
                Some(option) => Err(self.error_at_token(&option, "TIMING and KEEP need ANALYZE on")),
                None => Ok(None),
            },
            None => {
                let found = self.p.peek_token();
                Err(self.error_at_token(
                    &found,
                    "EXPLAIN (…) takes ANALYZE: write EXPLAIN (ANALYZE, TIMING false) …, or EXPLAIN without options",
                ))
            }
        }
    }
}
