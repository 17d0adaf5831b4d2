//! ecsql's statements, read on top of sqlparser's `Parser`: a text statement by
//! statement, each dispatched on its first word. SQL's own statements (queries, INSERT,
//! UPDATE, DELETE) are sqlparser's to read and `translate/`'s to turn into ours; ecsql's
//! are read here, a file a family: `schema.rs` (CREATE and DROP of components, tags,
//! events, indexes and phases), `system.rs` (CREATE and ALTER SYSTEM, TICK), `write.rs`
//! (SPAWN, DESPAWN, RETURNING), `copy.rs` (COPY, and the file SAVE and LOAD name),
//! `explain.rs` (EXPLAIN's options); those of a few words (SHOW, DESCRIBE, PRAGMA, SAVE,
//! LOAD, the transactions) in this file. `words.rs` reads the names and words they are
//! made of, `errors.rs` says where and what went wrong.
//!
//! Invariants:
//! - A statement is read up to what ends it (`;` or the end of the text), never past it,
//!   and one that is followed by anything else is an error there.
//! - A statement that sqlparser refused after an `IS` that SQLite reads is read again with
//!   that IS rewritten (`retry_sqlite_is`), each place once, at most `MAX_IS_RETRIES`
//!   times a text.

mod copy;
mod errors;
mod explain;
mod schema;
mod system;
pub(super) mod words;
mod write;

use sqlparser::keywords::Keyword;

use crate::parse::Ident;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use crate::location::Location;
use crate::parse::ast::{Expr, Isolation, Parameters, Statement, StatementKind, TransactionModes};
use crate::parse::error::ParseError;
use crate::parse::parser::StatementParser;
use crate::parse::tokens::{sqlparser_over, tokens, too_deep_spots};
use crate::parse::translate;

type Result<T> = std::result::Result<T, ParseError>;

/// Words that begin a statement, for error messages.
const STATEMENT_WORDS: &str = "CREATE, DROP, ALTER, SHOW, DESCRIBE, SPAWN, DESPAWN, SELECT, WITH, INSERT, \
     UPDATE, DELETE, EXPLAIN, SUBSCRIBE, TICK, BEGIN, COMMIT, ROLLBACK, PRAGMA, SAVE, LOAD, CHECKPOINT or COPY";

/// The most times one text is read again for an `IS` whose operand only sqlparser's refusal
/// showed (`retry_sqlite_is`); `sqlite_is_after_operands` rewrites the common ones first.
const MAX_IS_RETRIES: usize = 64;

impl<'a> StatementParser<'a> {
    pub(super) fn new(sql: &'a str, start: Location) -> Result<StatementParser<'a>> {
        let (tokens, visible) = tokens(sql, start, &[])?;
        let too_deep = too_deep_spots(&visible);
        Ok(StatementParser {
            p: sqlparser_over(tokens),
            tokens: visible,
            last_param: 0,
            named_params: Vec::new(),
            depth: 0,
            statement_at: Location::default(),
            too_deep,
            rows: Vec::new(),
            sql,
            start,
            is_operands: Vec::new(),
            is_operand_found: std::cell::Cell::new(None),
            ctes: Vec::new(),
            cte_references: 0,
            self_references: 0,
            query_nesting: 0,
        })
    }

    /// After sqlparser refused what follows an `IS` at `operand`: the tokens read again
    /// with that IS SQLite's (`sqlite_is`), and the parser back at `index`, where the
    /// statement it refused begins. False when that IS was already rewritten.
    fn retry_sqlite_is(&mut self, operand: Location, index: usize) -> Result<bool> {
        // A text whose VALUES blocks were read aside has given some away: the plain way
        // reads it again whole. Past `MAX_IS_RETRIES` the error stands (each retry reads
        // the text again).
        if self.is_operands.contains(&operand)
            || !self.rows.is_empty()
            || self.is_operands.len() >= MAX_IS_RETRIES
        {
            return Ok(false);
        }
        self.is_operands.push(operand);
        let (tokens, visible) = tokens(self.sql, self.start, &self.is_operands)?;
        self.p = sqlparser_over(tokens);
        while self.p.index() < index {
            self.p.next_token_no_skip();
        }
        self.too_deep = too_deep_spots(&visible);
        self.tokens = visible;
        Ok(true)
    }

    /// `new`, with the VALUES blocks `rows::blank_values` took out of `sql`.
    pub(super) fn with_rows(
        sql: &'a str,
        start: Location,
        rows: Vec<Vec<Vec<Expr>>>,
    ) -> Result<StatementParser<'a>> {
        let mut parser = StatementParser::new(sql, start)?;
        parser.rows = rows.into_iter().map(Some).collect();
        Ok(parser)
    }

    /// Every statement, to the end of the text.
    pub(super) fn parse_all(&mut self) -> Result<Vec<Statement>> {
        let mut statements = Vec::new();
        loop {
            while self.p.consume_token(&Token::SemiColon) {}
            if self.p.peek_token_ref().token == Token::EOF {
                return Ok(statements);
            }
            let index = self.p.index();
            match self.parse_statement() {
                Ok(statement) => statements.push(statement),
                Err(e) => match self.is_operand_found.take() {
                    Some(at) if self.retry_sqlite_is(at, index)? => {}
                    _ => return Err(e),
                },
            }
        }
    }

    fn parse_statement(&mut self) -> Result<Statement> {
        let statement = self.parse_statement_inner()?;
        match self.p.peek_token_ref().token {
            Token::SemiColon | Token::EOF => Ok(statement),
            _ => {
                let found = self.p.peek_token();
                Err(self.error_at_token(&found, "expected ; or end of statement"))
            }
        }
    }

    /// One statement, up to (not including) what ends it.
    fn parse_statement_inner(&mut self) -> Result<Statement> {
        self.last_param = 0;
        self.named_params.clear();
        self.depth = 0;
        self.ctes.clear();
        self.cte_references = 0;
        self.self_references = 0;
        self.query_nesting = 0;
        self.statement_at = self.here();
        let spot = self.too_deep.binary_search_by_key(&self.statement_at, |s| s.0);
        if let Ok(i) = spot {
            return Err(translate::too_deep(self.too_deep[i].1));
        }
        self.parse_statement_body()
    }

    fn parse_statement_body(&mut self) -> Result<Statement> {
        let at = self.here();
        let token = self.p.peek_token();
        let word = match &token.token {
            Token::Word(w) if w.quote_style.is_none() => w.value.to_ascii_uppercase(),
            Token::LParen => String::from("("),
            _ => {
                return Err(self.error_at_token(&token, &format!("expected a statement ({STATEMENT_WORDS})")));
            }
        };
        let kind = match word.as_str() {
            "CREATE" => {
                self.p.next_token();
                self.parse_create()?
            }
            "DROP" => {
                self.p.next_token();
                self.parse_drop()?
            }
            "SHOW" => {
                self.p.next_token();
                if self.parse_word("COMPONENTS") || self.parse_word("TAGS") {
                    StatementKind::ShowComponents
                } else if self.parse_word("ARCHETYPES") {
                    StatementKind::ShowArchetypes
                } else if self.parse_word("INDEXES") || self.parse_word("INDICES") {
                    StatementKind::ShowIndexes
                } else if self.parse_word("SYSTEMS") {
                    StatementKind::ShowSystems
                } else if self.parse_word("SYSTEM") {
                    if !self.parse_word("RUNS") {
                        return Err(self.expected(
                            "RUNS after SHOW SYSTEM (SHOW SYSTEM RUNS: each system's recent runs)",
                        ));
                    }
                    StatementKind::ShowSystemRuns
                } else if self.parse_word("EVENTS") {
                    StatementKind::ShowEvents
                } else if self.parse_word("ALL") {
                    StatementKind::ShowVariable { name: None }
                } else if let Some(name) = self.parse_setting_words()? {
                    StatementKind::ShowVariable { name: Some(name) }
                } else if !self.p.peek_keyword(Keyword::TABLES)
                    && let Token::Word(_) = &self.p.peek_token_ref().token
                {
                    let name = self.parse_setting_name()?;
                    StatementKind::ShowVariable { name: Some(name) }
                } else if self.p.peek_keyword(Keyword::TABLES) {
                    return Err(self.expected(
                        "COMPONENTS, ARCHETYPES, INDEXES, SYSTEMS or EVENTS after SHOW (ecsql's tables are components: SHOW COMPONENTS; the shell's .tables lists them)",
                    ));
                } else {
                    return Err(
                        self.expected("COMPONENTS, ARCHETYPES, INDEXES, SYSTEMS or EVENTS after SHOW")
                    );
                }
            }
            "DESCRIBE" | "DESC" => {
                self.p.next_token();
                StatementKind::Describe {
                    name: self.parse_name()?,
                }
            }
            "SPAWN" => {
                self.p.next_token();
                let spawn = self.parse_spawn()?;
                self.parse_returning(spawn)?
            }
            "DESPAWN" => {
                self.p.next_token();
                let despawn = if self.p.peek_keyword(Keyword::FROM) {
                    match self.parse_source()? {
                        Some(source) => StatementKind::DespawnFrom { source },
                        None => return Err(self.expected("FROM")),
                    }
                } else {
                    let ids = self
                        .p
                        .parse_comma_separated(Parser::parse_expr)
                        .map_err(|e| self.convert(e))?;
                    StatementKind::Despawn {
                        ids: ids.into_iter().map(|e| self.expr(e)).collect::<Result<_>>()?,
                    }
                };
                self.parse_returning(despawn)?
            }
            "EXPLAIN" => {
                self.p.next_token();
                if self.parse_word("TICK") {
                    StatementKind::ExplainTick
                } else if self.p.parse_keyword(Keyword::ANALYZE) {
                    StatementKind::ExplainAnalyze {
                        statement: Box::new(self.explained()?),
                        timing: true,
                        keep: false,
                    }
                } else if self.p.peek_token().token == Token::LParen
                    && matches!(&self.p.peek_nth_token(1).token, Token::Word(w)
                        if !matches!(w.keyword, Keyword::SELECT | Keyword::WITH | Keyword::VALUES))
                {
                    // `EXPLAIN (ANALYZE, …)`; `EXPLAIN (SELECT …)` explains a query.
                    match self.explain_options()? {
                        Some((timing, keep)) => StatementKind::ExplainAnalyze {
                            statement: Box::new(self.explained()?),
                            timing,
                            keep,
                        },
                        // `(ANALYZE false)`: EXPLAIN, as in PostgreSQL.
                        None => StatementKind::Explain(Box::new(self.parse_statement_body()?)),
                    }
                } else {
                    // SQLite's `EXPLAIN QUERY PLAN` is EXPLAIN.
                    let _ = self.p.parse_keywords(&[Keyword::QUERY, Keyword::PLAN]);
                    StatementKind::Explain(Box::new(self.parse_statement_body()?))
                }
            }
            "SUBSCRIBE" => {
                self.p.next_token();
                // Materialize writes `SUBSCRIBE [TO] (query)`; the parentheses are a query's.
                let _ = self.parse_word("TO");
                let query = self.parse_statement_body()?;
                if !matches!(query.kind, StatementKind::Select(_)) {
                    return Err(ParseError::new(
                        query.at,
                        format!(
                            "expected a query (SELECT, WITH or VALUES) after SUBSCRIBE, found {}",
                            query.kind.verb()
                        ),
                    ));
                }
                StatementKind::Subscribe(Box::new(query))
            }
            "ALTER" => {
                self.p.next_token();
                self.parse_alter()?
            }
            "TICK" => {
                self.p.next_token();
                self.parse_tick()?
            }
            "SET" => {
                self.p.next_token();
                self.parse_set()?
            }
            "RESET" => {
                self.p.next_token();
                let name = if self.parse_word("ALL") {
                    Ident::new("all", at)
                } else {
                    self.parse_setting_name()?
                };
                StatementKind::SetVariable {
                    name,
                    value: None,
                    local: false,
                }
            }
            "PRAGMA" => {
                self.p.next_token();
                self.parse_pragma()?
            }
            "SAVE" | "LOAD" => {
                self.p.next_token();
                let save = word == "SAVE";
                let joined = if save {
                    self.parse_word("TO")
                } else {
                    self.parse_word("FROM")
                };
                if !joined {
                    return Err(self.expected(if save {
                        "TO 'file' after SAVE"
                    } else {
                        "FROM 'file' after LOAD"
                    }));
                }
                let path = self.parse_file_name()?;
                if save {
                    StatementKind::Save { path }
                } else {
                    StatementKind::Load { path }
                }
            }
            "CHECKPOINT" => {
                self.p.next_token();
                StatementKind::Checkpoint
            }
            "COPY" => {
                self.p.next_token();
                self.parse_copy()?
            }
            "BEGIN" | "START" => {
                self.p.next_token();
                if word == "START" && !self.parse_word("TRANSACTION") {
                    return Err(self.expected("TRANSACTION after START"));
                }
                // SQLite's words: DEFERRED holds the database from the first write (READ
                // COMMITTED), IMMEDIATE and EXCLUSIVE from BEGIN (SERIALIZABLE).
                let sqlite = if word != "BEGIN" {
                    None
                } else if self.parse_word("DEFERRED") {
                    Some(Isolation::ReadCommitted)
                } else if self.parse_word("IMMEDIATE") || self.parse_word("EXCLUSIVE") {
                    Some(Isolation::Serializable)
                } else {
                    None
                };
                let _ = self.parse_word("TRANSACTION") || self.parse_word("WORK");
                let mut modes = self.parse_transaction_modes()?;
                if sqlite.is_some() {
                    if modes.isolation.is_some() {
                        return Err(ParseError::new(
                            at,
                            "conflicting transaction modes: DEFERRED, IMMEDIATE or EXCLUSIVE, or an ISOLATION LEVEL, not both",
                        ));
                    }
                    modes.isolation = sqlite;
                }
                StatementKind::Begin(modes)
            }
            "COMMIT" | "END" => {
                self.p.next_token();
                let _ = self.parse_word("TRANSACTION") || self.parse_word("WORK");
                StatementKind::Commit
            }
            "ROLLBACK" => {
                self.p.next_token();
                let _ = self.parse_word("TRANSACTION") || self.parse_word("WORK");
                if self.parse_word("TO") {
                    return Err(no_savepoints(at, "ROLLBACK TO"));
                }
                StatementKind::Rollback
            }
            "SAVEPOINT" | "RELEASE" => return Err(no_savepoints(at, &word)),
            "SELECT" | "(" | "VALUES" => {
                let query = self.p.parse_query().map_err(|e| self.convert(e))?;
                StatementKind::Select(self.query(*query)?)
            }
            "WITH" => {
                // `WITH … SELECT` is sqlparser's to read whole; before any other
                // statement, the CTEs are read here and are in scope for it.
                self.p.next_token();
                let recursive = self.p.parse_keyword(Keyword::RECURSIVE);
                let ctes = self
                    .p
                    .parse_comma_separated(Parser::parse_cte)
                    .map_err(|e| self.convert(e))?;
                let with = sqlparser::ast::With {
                    with_token: sqlparser::ast::helpers::attached_token::AttachedToken(token.clone()),
                    recursive,
                    cte_tables: ctes,
                };
                let next = self.p.peek_token();
                let takes_query = match &next.token {
                    Token::Word(w) if w.quote_style.is_none() => matches!(
                        w.value.to_ascii_uppercase().as_str(),
                        "SELECT"
                            | "VALUES"
                            | "INSERT"
                            | "REPLACE"
                            | "UPDATE"
                            | "DELETE"
                            | "SPAWN"
                            | "DESPAWN"
                            | "COPY"
                    ),
                    Token::LParen => true,
                    _ => false,
                };
                if !takes_query {
                    return Err(self.error_at_token(
                        &next,
                        "expected SELECT, INSERT, UPDATE, DELETE, SPAWN, DESPAWN or COPY after WITH's queries",
                    ));
                }
                let outer = self.ctes.len();
                self.with(with)?;
                let body = self
                    .parse_statement_body()
                    .and_then(|body| self.all_read(outer).map(|()| body));
                self.ctes.truncate(outer);
                return body;
            }
            "INSERT" | "REPLACE" | "UPDATE" | "DELETE" => {
                let statement = self.p.parse_statement().map_err(|e| self.convert(e))?;
                self.dml(statement)?
            }
            _ => {
                return Err(self.error_at_token(&token, &format!("expected a statement ({STATEMENT_WORDS})")));
            }
        };
        let params = Parameters {
            positional: self.last_param,
            named: self.named_params.clone(),
        };
        Ok(Statement { kind, at, params })
    }

    /// The settings PostgreSQL names with several words: `TRANSACTION ISOLATION LEVEL`,
    /// `TIME ZONE`, `SESSION AUTHORIZATION`; `None` (nothing read) for another.
    fn parse_setting_words(&mut self) -> Result<Option<Ident>> {
        let at = self.here();
        let name = if self.parse_word("TRANSACTION") {
            if !(self.parse_word("ISOLATION") && self.parse_word("LEVEL")) {
                return Err(self.expected("ISOLATION LEVEL after SHOW TRANSACTION"));
            }
            "transaction_isolation"
        } else if self.parse_word("TIME") {
            if !self.parse_word("ZONE") {
                return Err(self.expected("ZONE after SHOW TIME"));
            }
            "TimeZone"
        } else if self.parse_word("SESSION") {
            if !self.parse_word("AUTHORIZATION") {
                return Err(self.expected("AUTHORIZATION after SHOW SESSION"));
            }
            "session_authorization"
        } else {
            return Ok(None);
        };
        Ok(Some(Ident::new(name, at)))
    }

    /// A setting's name: a word, or words joined by dots (`ecsql.x`), as written.
    fn parse_setting_name(&mut self) -> Result<Ident> {
        let mut name = self.parse_name()?;
        while self.p.consume_token(&Token::Period) {
            let part = self.parse_name()?;
            name.value = format!("{}.{}", name.value, part.value).into();
        }
        Ok(name)
    }

    /// What follows SET: `[SESSION | LOCAL] name {= | TO} value [, value …]` (the value a
    /// word, a number or a quoted text; `DEFAULT` resets), `TIME ZONE value`,
    /// `[SESSION CHARACTERISTICS AS] TRANSACTION …` (the isolation level, kept as
    /// `transaction_isolation`'s value).
    fn parse_set(&mut self) -> Result<StatementKind> {
        let at = self.p.peek_token().span.start;
        let at = Location::new(at.line as u32, at.column as u32);
        let local = !self.parse_word("SESSION") && self.parse_word("LOCAL");
        if self.parse_word("CHARACTERISTICS") {
            if !(self.parse_word("AS") && self.parse_word("TRANSACTION")) {
                return Err(self.expected("AS TRANSACTION after SET SESSION CHARACTERISTICS"));
            }
            return self.parse_transaction_mode(Ident::new("default_transaction_isolation", at));
        }
        if self.parse_word("TRANSACTION") {
            return self.parse_transaction_mode(Ident::new("transaction_isolation", at));
        }
        let name = if self.parse_word("TIME") {
            if !self.parse_word("ZONE") {
                return Err(self.expected("ZONE after SET TIME"));
            }
            Ident::new("TimeZone", at)
        } else {
            let name = self.parse_setting_name()?;
            if !self.p.consume_token(&Token::Eq) && !self.parse_word("TO") {
                return Err(self.expected("= or TO after the setting's name"));
            }
            name
        };
        let mut values = Vec::new();
        loop {
            let token = self.p.next_token();
            let negative = matches!(token.token, Token::Minus);
            let token = if negative { self.p.next_token() } else { token };
            let text = match &token.token {
                Token::Number(n, _) => n.clone(),
                Token::SingleQuotedString(s) if !negative => s.clone(),
                Token::Word(w)
                    if !negative && w.quote_style.is_none() && w.value.eq_ignore_ascii_case("DEFAULT") =>
                {
                    return Ok(StatementKind::SetVariable {
                        name,
                        value: None,
                        local,
                    });
                }
                Token::Word(w) if !negative => w.value.clone(),
                _ => {
                    return Err(self.error_at_token(
                        &token,
                        "expected the setting's value: a word, a number or a 'text'",
                    ));
                }
            };
            values.push(if negative { format!("-{text}") } else { text });
            if !self.p.consume_token(&Token::Comma) {
                break;
            }
        }
        Ok(StatementKind::SetVariable {
            name,
            value: Some(values.join(", ")),
            local,
        })
    }

    /// `ISOLATION LEVEL …`, `READ WRITE`, `READ ONLY`, `[NOT] DEFERRABLE`, after SET
    /// TRANSACTION: the words, as `name`'s value.
    fn parse_transaction_mode(&mut self, name: Ident) -> Result<StatementKind> {
        let words = self.transaction_words()?;
        if words.is_empty() {
            return Err(self.expected("ISOLATION LEVEL … or READ WRITE after TRANSACTION"));
        }
        Ok(StatementKind::SetVariable {
            name,
            value: Some(words.join(" ")),
            local: false,
        })
    }

    /// The modes after BEGIN (none: the connection's defaults).
    fn parse_transaction_modes(&mut self) -> Result<TransactionModes> {
        let at = self.here();
        let words = self.transaction_words()?;
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        TransactionModes::from_words(&words).map_err(|message| ParseError::new(at, message))
    }

    /// A transaction's mode words, lowercase, to the end of the statement (commas skipped).
    fn transaction_words(&mut self) -> Result<Vec<String>> {
        let mut words = Vec::new();
        while let Token::Word(w) = &self.p.peek_token_ref().token {
            words.push(w.value.to_ascii_lowercase());
            self.p.next_token();
            let _ = self.p.consume_token(&Token::Comma);
        }
        Ok(words)
    }

    /// `PRAGMA name`, `PRAGMA name = value` or `PRAGMA name(value)`: the value a number
    /// (with its sign), a quoted text or a bare word, kept as its text. A bare `PRAGMA`
    /// lists the settings.
    fn parse_pragma(&mut self) -> Result<StatementKind> {
        if matches!(self.p.peek_token_ref().token, Token::SemiColon | Token::EOF) {
            return Ok(StatementKind::Pragma {
                name: None,
                value: None,
            });
        }
        let name = Some(self.parse_name()?);
        let parenthesized = self.p.consume_token(&Token::LParen);
        if !parenthesized && !self.p.consume_token(&Token::Eq) {
            return Ok(StatementKind::Pragma { name, value: None });
        }
        let negative = self.p.consume_token(&Token::Minus);
        let token = self.p.next_token();
        let text = match &token.token {
            Token::Number(n, _) => n.clone(),
            Token::SingleQuotedString(s) if !negative => s.clone(),
            Token::Word(w) if !negative => w.value.clone(),
            _ => {
                return Err(self.error_at_token(
                    &token,
                    "expected the pragma's value: a number, a 'text' or a word",
                ));
            }
        };
        if parenthesized {
            self.expect_token(Token::RParen, ") after the pragma's value")?;
        }
        let value = if negative { format!("-{text}") } else { text };
        Ok(StatementKind::Pragma {
            name,
            value: Some(value),
        })
    }
}

/// The error of a savepoint's statement: ecsql's transactions end whole.
fn no_savepoints(at: Location, verb: &str) -> ParseError {
    ParseError::new(
        at,
        format!(
            "{verb}: ecsql has no savepoints; a transaction is kept whole (COMMIT) or taken back whole (ROLLBACK)"
        ),
    )
}
