//! Where an error points and what it says: sqlparser's errors made ours (the location
//! taken out of the message), "expected …, found …" at a token, the end of input, and the
//! advice to quote a keyword meant as a name.
//!
//! Invariants: every error carries a place in the larger text; "found end of input"
//! points just past the last token; a node sqlparser placed nowhere takes the place of its
//! statement's start.

use sqlparser::keywords::Keyword;
use sqlparser::parser::ParserError;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::location::Location;
use crate::parse::error::ParseError;
use crate::parse::parser::StatementParser;
use crate::parse::tokens::location;
use crate::parse::translate;

impl StatementParser<'_> {
    /// An error at the next token saying what was expected there.
    pub(super) fn expected(&self, expected: &str) -> ParseError {
        let found = self.p.peek_token();
        self.error_at_token(&found, &format!("expected {expected}"))
    }

    pub(super) fn error_at_token(&self, token: &TokenWithSpan, message: &str) -> ParseError {
        let at = if token.token == Token::EOF {
            self.end_of_input()
        } else {
            location(token)
        };
        let found = if token.token == Token::EOF {
            "end of input".to_owned()
        } else {
            token.token.to_string()
        };
        // The advice to quote a keyword is for where a name could stand.
        let hint = if message.contains("name") {
            keyword_hint(&token.token)
        } else {
            String::new()
        };
        ParseError::new(at, format!("{message}, found {found}{hint}"))
    }

    pub(super) fn here(&self) -> Location {
        let token = self.p.peek_token();
        if token.token == Token::EOF {
            self.end_of_input()
        } else {
            location(&token)
        }
    }

    /// Just past the last token: where "found end of input" points.
    pub(super) fn end_of_input(&self) -> Location {
        match self.tokens.iter().rev().find(|t| t.token != Token::EOF) {
            Some(t) => Location::new(t.span.end.line as u32, t.span.end.column as u32),
            None => Location::new(1, 1),
        }
    }

    /// Turns a sqlparser error into ours: its location comes out of the message text, or,
    /// at end of input where it gives none, from the last token.
    pub(super) fn convert(&self, error: ParserError) -> ParseError {
        let text = match error {
            ParserError::ParserError(s) | ParserError::TokenizerError(s) => s,
            ParserError::RecursionLimitExceeded => return translate::too_deep(self.here()),
        };
        let (message, at) = match text.rfind(" at Line: ") {
            Some(i) => {
                let loc = &text[i + " at Line: ".len()..];
                let mut parts = loc.split(", Column: ");
                let line = parts.next().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
                let column = parts.next().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
                (text[..i].to_owned(), Location::new(line, column))
            }
            None => (text, self.end_of_input()),
        };
        // After `sqlite_is`, what follows IS can only fail to read this way as `IS [NOT]
        // DISTINCT` without FROM: say that, at what was found instead.
        if message.starts_with("Expected: [NOT] NULL | TRUE | FALSE | DISTINCT")
            && let Some(i) = self.token_at(at)
            && matches!(&self.tokens[i].token, Token::Word(w) if w.keyword == Keyword::DISTINCT)
        {
            let (what, at) = match self.tokens.get(i + 1).filter(|t| t.token != Token::EOF) {
                Some(t) => (
                    t.token.to_string(),
                    Location::new(t.span.start.line as u32, t.span.start.column as u32),
                ),
                None => (String::from("end of input"), self.end_of_input()),
            };
            return ParseError::new(at, format!("expected FROM after IS [NOT] DISTINCT, found {what}"));
        }
        if message.starts_with("Expected: [NOT] NULL | TRUE | FALSE | DISTINCT") {
            self.is_operand_found.set(Some(at));
        }
        let hint = self.hint_near(at);
        let message = message
            .replace("Expected: ", "expected ")
            .replace(", found: EOF", ", found end of input")
            .replace(", found: ", ", found ");
        ParseError::new(at, format!("{message}{hint}"))
    }

    /// A keyword hint for the token at `at`, or for the word just before it when what was
    /// found there is punctuation a name would be followed by (`Where.x`, `has(Limit)`).
    fn hint_near(&self, at: Location) -> String {
        let Some(i) = self.token_at(at) else {
            return String::new();
        };
        let here = keyword_hint(&self.tokens[i].token);
        if !here.is_empty() || i == 0 {
            return here;
        }
        match self.tokens[i].token {
            Token::Period | Token::RParen | Token::Comma => keyword_hint(&self.tokens[i - 1].token),
            _ => String::new(),
        }
    }

    /// The index in `tokens` of the token that begins at `at`.
    fn token_at(&self, at: Location) -> Option<usize> {
        self.tokens
            .iter()
            .position(|t| t.span.start.line as u32 == at.line && t.span.start.column as u32 == at.column)
    }

    pub(in crate::parse) fn location_or_statement(&self, at: Location) -> Location {
        if at.is_known() { at } else { self.statement_at }
    }
}

/// When an unquoted keyword stands where a name was wanted, say how to write the name.
fn keyword_hint(token: &Token) -> String {
    match token {
        Token::Word(w) if w.quote_style.is_none() && w.keyword == Keyword::EXCLUDE => {
            " (a window frame's EXCLUDE is not supported: filter the row out of the frame's aggregate another way, such as sum(…) OVER (…) - x)"
                .to_owned()
        }
        Token::Word(w) if w.quote_style.is_none() && w.keyword != Keyword::NoKeyword => format!(
            " ({} is an SQL keyword: if it is meant as a name, quote it: \"{}\")",
            w.value, w.value
        ),
        _ => String::new(),
    }
}
