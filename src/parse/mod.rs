//! The parse layer: text in, ecsql's syntax tree (`ast.rs`) out.
//!
//! `sqlparser` does the tokenizing and parses expressions, SELECT, INSERT, UPDATE and
//! DELETE; the ECS statements (CREATE COMPONENT, SPAWN, DESPAWN, SHOW, …) are parsed here on
//! top of its `Parser`, from outside. This folder is the only place that sees sqlparser's
//! types: `translate.rs` turns its tree into ours, so everything after parsing depends only
//! on `ast.rs`. Names are not resolved here; that is the binder's job.
//!
//! Queries, UPDATE, DELETE, INSERT, SPAWN and DESPAWN in their common forms are first tried
//! by `direct.rs`, a parser of our own over `lex.rs`'s tokens, several times quicker; it
//! gives up on anything unusual and on every error, and the text then takes the sqlparser
//! way, so the two always make the same tree of a text (`tests.rs` checks it).

pub mod ast;
mod direct;
mod error;
mod lex;
mod rows;
mod shape;
mod split;
mod start;
mod translate;

use sqlparser::dialect::GenericDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::location::Location;

pub use ast::*;
pub use error::ParseError;
pub use shape::{LONGEST as LONGEST_SHAPED, MaskedLiteral, Shape, shape};
pub use split::{Split, is_blank, skip_space, split_statements};

static DIALECT: GenericDialect = GenericDialect {};

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
    let mut statements = parse(sql)?;
    match statements.len() {
        1 => Ok(statements.remove(0)),
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

/// Words that begin a statement, for error messages.
const STATEMENT_WORDS: &str = "CREATE, DROP, ALTER, SHOW, DESCRIBE, SPAWN, DESPAWN, SELECT, WITH, INSERT, \
     UPDATE, DELETE, EXPLAIN, TICK, BEGIN, COMMIT, ROLLBACK, PRAGMA, SAVE, LOAD, CHECKPOINT or COPY";

pub(crate) struct StatementParser<'a> {
    p: Parser<'a>,
    /// The tokens without whitespace, to place errors sqlparser reports without a location.
    tokens: Vec<TokenWithSpan>,
    /// The highest `?N` seen in the current statement: a bare `?` takes the next number.
    last_param: usize,
    /// The names of the named parameters seen in the current statement.
    named_params: Vec<String>,
    /// How deep the expression being translated lies (see `translate::MAX_DEPTH`).
    depth: usize,
    /// Where the current statement began: the fallback location for nodes without a span.
    statement_at: Location,
    /// For each statement nested past `MAX_DEPTH`, where it begins and where it passes.
    too_deep: Vec<(Location, Location)>,
    /// The literal VALUES blocks read aside (`rows.rs`), by marker number, until their
    /// markers are met.
    rows: Vec<Option<Vec<Vec<Expr>>>>,
    /// The text and where it begins, to read its tokens again (`retry_sqlite_is`).
    sql: &'a str,
    start: Location,
    /// Where an `IS` or `IS NOT` takes an operand, SQLite's way (`sqlite_is`): the places
    /// found so far, each rewritten in the tokens.
    is_operands: Vec<Location>,
    /// Set by `convert` when sqlparser refused what follows an IS that `sqlite_is` reads.
    is_operand_found: std::cell::Cell<Option<Location>>,
    /// The common table expressions in scope, innermost last (`translate::Cte`).
    ctes: Vec<translate::Cte>,
    /// The references to them the current statement made (`MAX_CTE_REFERENCES`).
    cte_references: usize,
    /// The references a recursive WITH query being read makes to itself.
    self_references: usize,
    /// How many queries deep translation is (a recursive query may read itself only at
    /// its own depth: `CteBody::Reading`).
    query_nesting: usize,
}

impl<'a> StatementParser<'a> {
    fn new(sql: &'a str, start: Location) -> Result<StatementParser<'a>> {
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
    fn with_rows(sql: &'a str, start: Location, rows: Vec<Vec<Vec<Expr>>>) -> Result<StatementParser<'a>> {
        let mut parser = StatementParser::new(sql, start)?;
        parser.rows = rows.into_iter().map(Some).collect();
        Ok(parser)
    }

    /// Every statement, to the end of the text.
    fn parse_all(&mut self) -> Result<Vec<Statement>> {
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

    /// The statement EXPLAIN ANALYZE runs: not another EXPLAIN.
    fn explained(&mut self) -> Result<Statement> {
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
    fn explain_options(&mut self) -> Result<Option<(bool, bool)>> {
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
                } else if self.parse_word("EVENTS") {
                    StatementKind::ShowEvents
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
            "ALTER" => {
                self.p.next_token();
                self.parse_alter()?
            }
            "TICK" => {
                self.p.next_token();
                self.parse_tick()?
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
                let _ = self.parse_word("TRANSACTION") || self.parse_word("WORK");
                StatementKind::Begin
            }
            "COMMIT" | "END" => {
                self.p.next_token();
                let _ = self.parse_word("TRANSACTION") || self.parse_word("WORK");
                StatementKind::Commit
            }
            "ROLLBACK" => {
                self.p.next_token();
                let _ = self.parse_word("TRANSACTION") || self.parse_word("WORK");
                StatementKind::Rollback
            }
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

    fn parse_create(&mut self) -> Result<StatementKind> {
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
            self.parse_create_index(true)
        } else if self.parse_word("INDEX") {
            self.parse_create_index(false)
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
    fn parse_count(&mut self, what: &str) -> Result<u64> {
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

    /// After `CREATE SYSTEM`: the name, its clauses in any order (each once), `AS`, and
    /// one statement or `BEGIN statement; … END`.
    fn parse_create_system(&mut self) -> Result<StatementKind> {
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
    fn parse_system_clauses(&mut self, spec: &mut SystemSpec, until_as: bool) -> Result<()> {
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
    fn parse_alter(&mut self) -> Result<StatementKind> {
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
    fn parse_tick(&mut self) -> Result<StatementKind> {
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

    /// After `CREATE [SPATIAL] INDEX`: `[IF NOT EXISTS] [name] ON component (field, …)`.
    fn parse_create_index(&mut self, spatial: bool) -> Result<StatementKind> {
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
        self.expect_token(Token::LParen, "( and the fields to index")?;
        let mut fields = vec![self.parse_name()?];
        while !self.p.consume_token(&Token::RParen) {
            self.expect_token(Token::Comma, ", or )")?;
            fields.push(self.parse_name()?);
        }
        Ok(StatementKind::CreateIndex {
            name,
            spatial,
            if_not_exists,
            component,
            fields,
        })
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
            let e = self.p.parse_expr().map_err(|e| self.convert(e))?;
            Some(self.expr(e)?)
        } else {
            None
        };
        Ok(FieldSpec { name, ty, default })
    }

    fn parse_drop(&mut self) -> Result<StatementKind> {
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

    fn parse_spawn(&mut self) -> Result<StatementKind> {
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
    fn parse_source(&mut self) -> Result<Option<Source>> {
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

    /// `COPY (query) TO 'file' [options]`, `COPY C [(columns)] TO|FROM 'file' [options]`,
    /// after COPY.
    fn parse_copy(&mut self) -> Result<StatementKind> {
        let query_at = self.here();
        if self.p.consume_token(&Token::LParen) {
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
            let path = self.parse_file_name()?;
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
        let path = self.parse_file_name()?;
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
            vec![SelectItem::Wildcard(at)]
        } else {
            columns
                .into_iter()
                .map(|c| SelectItem::Expr {
                    expr: Expr::new(ExprKind::Column(vec![component.clone(), c]), at),
                    alias: None,
                })
                .collect()
        };
        let select = Select {
            distinct: false,
            items,
            from: vec![FromItem {
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

    /// COPY's options: `[WITH] (name [value], …)`, or nothing.
    fn parse_copy_options(&mut self) -> Result<Vec<CopyOption>> {
        let with = self.parse_word("WITH");
        if !self.p.consume_token(&Token::LParen) {
            if with {
                return Err(self.expected("( after WITH"));
            }
            return Ok(Vec::new());
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

    /// A file's name: `'text'` or a parameter.
    fn parse_file_name(&mut self) -> Result<FileName> {
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

    // ---- small helpers ------------------------------------------------------------------

    /// Consumes the next token when it is the unquoted word `word` (any case).
    fn parse_word(&mut self, word: &str) -> bool {
        match &self.p.peek_token_ref().token {
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word) => {
                self.p.next_token();
                true
            }
            _ => false,
        }
    }

    fn parse_name(&mut self) -> Result<Ident> {
        let token = self.p.peek_token();
        match &token.token {
            Token::Word(w) => {
                self.p.next_token();
                Ok(Ident {
                    value: w.value.clone(),
                    quoted: w.quote_style.is_some(),
                    at: location(&token),
                })
            }
            _ => Err(self.error_at_token(&token, "expected a name")),
        }
    }

    /// A name being declared: an unquoted keyword that would break queries is refused here,
    /// at the declaration, rather than at its first use.
    fn parse_new_name(&mut self) -> Result<Ident> {
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

    fn expect_token(&mut self, token: Token, expected: &str) -> Result<()> {
        if self.p.consume_token(&token) {
            Ok(())
        } else {
            Err(self.expected(expected))
        }
    }

    /// An error at the next token saying what was expected there.
    fn expected(&self, expected: &str) -> ParseError {
        let found = self.p.peek_token();
        self.error_at_token(&found, &format!("expected {expected}"))
    }

    fn error_at_token(&self, token: &TokenWithSpan, message: &str) -> ParseError {
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

    fn here(&self) -> Location {
        let token = self.p.peek_token();
        if token.token == Token::EOF {
            self.end_of_input()
        } else {
            location(&token)
        }
    }

    /// Just past the last token: where "found end of input" points.
    fn end_of_input(&self) -> Location {
        match self.tokens.iter().rev().find(|t| t.token != Token::EOF) {
            Some(t) => Location::new(t.span.end.line as u32, t.span.end.column as u32),
            None => Location::new(1, 1),
        }
    }

    /// Turns a sqlparser error into ours: its location comes out of the message text, or,
    /// at end of input where it gives none, from the last token.
    fn convert(&self, error: ParserError) -> ParseError {
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

    /// `write`, with the RETURNING list that follows it, if one does (SPAWN and DESPAWN;
    /// sqlparser reads INSERT's, UPDATE's and DELETE's).
    fn parse_returning(&mut self, write: StatementKind) -> Result<StatementKind> {
        if !self.p.parse_keyword(Keyword::RETURNING) {
            return Ok(write);
        }
        let items = self.p.parse_projection().map_err(|e| self.convert(e))?;
        self.returning(write, Some(items))
    }

    /// The index in `tokens` of the token that begins at `at`.
    fn token_at(&self, at: Location) -> Option<usize> {
        self.tokens
            .iter()
            .position(|t| t.span.start.line as u32 == at.line && t.span.start.column as u32 == at.column)
    }

    fn location_or_statement(&self, at: Location) -> Location {
        if at.is_known() { at } else { self.statement_at }
    }
}

/// `sql`'s tokens, with their places in the larger text that begins at `start`, and the
/// visible ones (no whitespace); the `IS` before each place in `is_operands` SQLite's.
fn tokens(
    sql: &str,
    start: Location,
    is_operands: &[Location],
) -> Result<(Vec<TokenWithSpan>, Vec<TokenWithSpan>)> {
    let shift = |l: &mut sqlparser::tokenizer::Location| {
        if l.line == 1 {
            l.column += u64::from(start.column.max(1)) - 1;
        }
        l.line += u64::from(start.line.max(1)) - 1;
    };
    let mut tokens = Tokenizer::new(&DIALECT, sql)
        .tokenize_with_location()
        .map_err(|mut e| {
            shift(&mut e.location);
            ParseError::new(
                Location::new(e.location.line as u32, e.location.column as u32),
                e.message,
            )
        })?;
    if start != Location::new(1, 1) {
        for t in &mut tokens {
            shift(&mut t.span.start);
            shift(&mut t.span.end);
        }
    }
    let mut tokens = sqlite_is_after_operands(tokens);
    for &at in is_operands {
        sqlite_is(&mut tokens, at);
    }
    let visible = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .cloned()
        .collect();
    Ok((tokens, visible))
}

fn sqlparser_over(tokens: Vec<TokenWithSpan>) -> Parser<'static> {
    // sqlparser grows its own stack; its limit, a few steps per level of ours, is only a
    // backstop behind `too_deep_spots` and translation's count.
    Parser::new(&DIALECT)
        .with_recursion_limit(4 * translate::MAX_DEPTH)
        .with_tokens_with_locations(tokens)
}

/// The most times one text is read again for an `IS` whose operand only sqlparser's refusal
/// showed (`retry_sqlite_is`); `sqlite_is_after_operands` rewrites the common ones first.
const MAX_IS_RETRIES: usize = 64;

/// `sqlite_is` in one pass, for each `IS [NOT] b` that plainly follows an operand (a number,
/// a text, a `)`, a parameter, a name that is no keyword, or a quoted one) and whose `b`
/// is not NULL, TRUE, FALSE, UNKNOWN or DISTINCT: so that a script of many costs one pass.
/// An IS after a keyword that may be a name is left to `retry_sqlite_is`.
fn sqlite_is_after_operands(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let word = |t: &TokenWithSpan, k: Keyword| matches!(&t.token, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    if !tokens.iter().any(|t| word(t, Keyword::IS)) {
        return tokens;
    }
    let visible = |t: &TokenWithSpan| !matches!(t.token, Token::Whitespace(_) | Token::EOF);
    // ecsql's own statement words are no keywords to sqlparser, and an operand follows them.
    let statement_word = |w: &str| {
        ["SPAWN", "DESPAWN", "TICK"]
            .iter()
            .any(|s| s.eq_ignore_ascii_case(w))
    };
    let operand_end = |t: &TokenWithSpan| match &t.token {
        Token::Word(w) => {
            w.quote_style.is_some() || (w.keyword == Keyword::NoKeyword && !statement_word(&w.value))
        }
        Token::Number(..) | Token::SingleQuotedString(_) | Token::RParen | Token::Placeholder(_) => true,
        _ => false,
    };
    let kept = [
        Keyword::NULL,
        Keyword::TRUE,
        Keyword::FALSE,
        Keyword::UNKNOWN,
        Keyword::DISTINCT,
    ];
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len() + 8);
    let mut last: Option<usize> = None;
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        let after_operand = last.is_some_and(|l| operand_end(&tokens[l]));
        if word(t, Keyword::IS) && after_operand {
            let next = |from: usize| (from..tokens.len()).find(|&j| visible(&tokens[j]));
            if let Some(j) = next(i + 1) {
                let negated = word(&tokens[j], Keyword::NOT);
                let operand = if negated { next(j + 1) } else { Some(j) };
                if let Some(k) = operand
                    && !kept.iter().any(|&kw| word(&tokens[k], kw))
                {
                    let made = |text: &str| TokenWithSpan {
                        token: Token::make_keyword(text),
                        span: t.span,
                    };
                    let space = || TokenWithSpan {
                        token: Token::Whitespace(sqlparser::tokenizer::Whitespace::Space),
                        span: t.span,
                    };
                    out.extend([t.clone(), space()]);
                    if !negated {
                        out.extend([made("NOT"), space()]);
                    }
                    out.extend([made("DISTINCT"), space(), made("FROM"), space()]);
                    last = Some(k);
                    out.extend(tokens[k..=k].iter().cloned());
                    i = k + 1;
                    continue;
                }
            }
        }
        if visible(t) {
            last = Some(i);
        }
        out.push(t.clone());
        i += 1;
    }
    out
}

/// SQLite's `a IS b` and `a IS NOT b`, for any two values, written in `tokens` as
/// PostgreSQL's `a IS NOT DISTINCT FROM b` and `a IS DISTINCT FROM b`, which sqlparser
/// reads. `operand` is where sqlparser found something other than NULL, TRUE, FALSE,
/// UNKNOWN or DISTINCT after an `IS [NOT]` it read as an operator: that is `b`, and
/// anything there that is not an expression gets "expected an expression".
fn sqlite_is(tokens: &mut Vec<TokenWithSpan>, operand: Location) {
    let place = |t: &TokenWithSpan| Location::new(t.span.start.line as u32, t.span.start.column as u32);
    let visible = |t: &TokenWithSpan| !matches!(t.token, Token::Whitespace(_) | Token::EOF);
    let word = |t: &TokenWithSpan, k: Keyword| matches!(&t.token, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    // Where `b` begins (the end, when it is missing), and the visible tokens before it.
    let at = tokens
        .iter()
        .position(|t| visible(t) && place(t) >= operand)
        .unwrap_or(tokens.len());
    let before: Vec<usize> = (0..at).rev().filter(|&i| visible(&tokens[i])).take(2).collect();
    let (is, not) = match before.as_slice() {
        [n, i, ..] if word(&tokens[*n], Keyword::NOT) && word(&tokens[*i], Keyword::IS) => (*i, Some(*n)),
        [i, ..] if word(&tokens[*i], Keyword::IS) => (*i, None),
        _ => return,
    };
    let span = tokens[is].span;
    let made = |text: &str| TokenWithSpan {
        token: Token::make_keyword(text),
        span,
    };
    let space = || TokenWithSpan {
        token: Token::Whitespace(sqlparser::tokenizer::Whitespace::Space),
        span,
    };
    let mut words = Vec::new();
    if not.is_none() {
        words.extend([made("NOT"), space()]);
    }
    words.extend([made("DISTINCT"), space(), made("FROM"), space()]);
    tokens.splice(at..at, words);
    // `IS NOT b` is `IS DISTINCT FROM b`: its NOT goes.
    if let Some(n) = not {
        tokens[n] = space();
    }
}

/// Where each statement of `tokens` (whitespace left out) nests past `MAX_DEPTH`, as
/// (where the statement begins, the token that passes), found without parsing: open
/// parentheses, open CASEs and a run of prefix operators (`NOT NOT`, `- -`) each nest at
/// least one level, so a statement found here is too deep for translation too. It is
/// refused before sqlparser builds a tree that deep, and before sqlparser's own recursion
/// limit is met in a place where it takes the error for a name (`NOT` and `CASE` are
/// names to it when what follows does not parse).
fn too_deep_spots(tokens: &[TokenWithSpan]) -> Vec<(Location, Location)> {
    let mut spots = Vec::new();
    let (mut parens, mut cases, mut run) = (0usize, 0usize, 0usize);
    let mut start = None;
    let mut found = false;
    for t in tokens {
        let at = location(t);
        match &t.token {
            Token::SemiColon | Token::EOF => {
                (parens, cases, run, start, found) = (0, 0, 0, None, false);
                continue;
            }
            Token::LParen => (parens, run) = (parens + 1, 0),
            Token::RParen => (parens, run) = (parens.saturating_sub(1), 0),
            Token::Word(w) if w.keyword == Keyword::CASE => (cases, run) = (cases + 1, 0),
            Token::Word(w) if w.keyword == Keyword::END => (cases, run) = (cases.saturating_sub(1), 0),
            Token::Word(w) if w.keyword == Keyword::NOT => run += 1,
            Token::Minus | Token::Plus | Token::Tilde => run += 1,
            _ => run = 0,
        }
        let start = *start.get_or_insert(at);
        if !found && parens + cases + run > translate::MAX_DEPTH {
            spots.push((start, at));
            found = true;
        }
    }
    spots
}

const TYPE_EXPECTED: &str = "expected a field type (INT, FLOAT, REAL, BOOL, TEXT or ENTITY)";

fn location(token: &TokenWithSpan) -> Location {
    Location::new(token.span.start.line as u32, token.span.start.column as u32)
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

#[cfg(test)]
mod printed;
#[cfg(test)]
mod tests;
