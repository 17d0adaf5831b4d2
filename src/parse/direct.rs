//! The direct parser: the statements programs send most (queries, UPDATE, DELETE, INSERT,
//! SPAWN, DESPAWN), read from `lex.rs`'s tokens straight into `ast/`'s tree, without
//! sqlparser's tokenizer, tree and translation (which took about nine times as long for a
//! point read: docs/performance.md, "The parser, and the gap for texts planned as written").
//!
//! Its contract: for any text, it either returns `None` or returns exactly the statements
//! the sqlparser path (`StatementParser`) makes of that text, locations and parameters
//! included. It returns `None` for everything it does not read (another statement kind, a
//! construct it does not know, a keyword it is not sure of) and for every error, so the
//! sqlparser path words every syntax error and decides every unusual case; there is no
//! second grammar to drift apart. `tests.rs` holds it to that over every statement of the
//! test suite and over random token strings.
//!
//! It mirrors sqlparser's precedences (`OR` 5, `AND` 10, `NOT` 15, `IS` 17, `LIKE` 19,
//! comparisons, `IN` and `BETWEEN` 20, `+ -` 30, `* / % ||` 40, unary `+ -` binding their
//! operand at 40), and the places translation gives nodes: each expression is placed at
//! its first token, parentheses and unary operators not counted, a subquery at its first
//! SELECT. Trees are at most `MAX_NESTING` levels deep here (a level per parenthesis,
//! operator, call and subquery), so it recurses a bounded depth on the caller's stack and
//! makes no tree the binder cannot take; deeper texts go to the sqlparser path, which
//! grows its stack and counts `MAX_DEPTH`. Texts past `MAX_TEXT` go there too (a dump's
//! blocks of rows, which `rows.rs` reads more frugally); tokens are read as the parser
//! asks for them, so a text given up early costs only the tokens read.

use sqlparser::keywords::{
    Keyword, RESERVED_FOR_COLUMN_ALIAS, RESERVED_FOR_IDENTIFIER, RESERVED_FOR_TABLE_ALIAS,
};

use super::ast::*;
use super::lex::{self, Kind, Lexer, Tok};
use super::translate::type_name;
use crate::location::Location;

/// The deepest nesting of expressions and subqueries read here.
const MAX_NESTING: usize = 64;

/// How many tokens ahead of the current one the parser looks (`kind_at(2)`), plus it.
const LOOKAHEAD: usize = 3;

/// The longest text read here, in bytes.
const MAX_TEXT: usize = 1 << 16;

/// The statements of `sql` (which begins at `start` of a larger text), when every one is
/// of the kinds this parser reads.
pub(super) fn parse(sql: &str, start: Location) -> Option<Vec<Statement>> {
    // Long texts (a dump's blocks of rows) are read more frugally by `rows.rs`, and are
    // not what this parser is for.
    if sql.len() > MAX_TEXT {
        return None;
    }
    let mut p = Direct {
        sql,
        lexer: Lexer::new(sql, start),
        toks: Vec::with_capacity(32),
        pos: 0,
        last_param: 0,
        named_params: Vec::new(),
        depth: 0,
    };
    p.fill();
    // Most texts are one statement; a statement is a few hundred bytes, and room for four
    // would be a large allocation (which costs glibc a pass over its small free lists).
    let mut statements = Vec::with_capacity(1);
    loop {
        while p.eat(Kind::Semi) {}
        if p.kind() == Kind::Eof {
            return Some(statements);
        }
        statements.push(p.statement()?);
        if !matches!(p.kind(), Kind::Semi | Kind::Eof) {
            return None;
        }
    }
}

/// Whether the parse goes on; `None` hands the text to the sqlparser path.
type Step<T> = Option<T>;

struct Direct<'a> {
    sql: &'a str,
    lexer: Lexer<'a>,
    /// The tokens read so far: always `LOOKAHEAD` past `pos`, or to the last (an `Eof` or
    /// a `Bad`).
    toks: Vec<Tok>,
    pos: usize,
    /// As `StatementParser`'s: the highest `?N` so far, and the named parameters.
    last_param: usize,
    named_params: Vec<String>,
    depth: usize,
}

/// Keywords sqlparser reads as the start of their own expression (or that a word in that
/// place might be taken for); a text with one of them where an expression starts is left
/// to it.
const OWN_EXPRESSIONS: &[Keyword] = &[
    Keyword::CURRENT_CATALOG,
    Keyword::CURRENT_USER,
    Keyword::SESSION_USER,
    Keyword::USER,
    Keyword::CURRENT_TIMESTAMP,
    Keyword::CURRENT_TIME,
    Keyword::CURRENT_DATE,
    Keyword::LOCALTIME,
    Keyword::LOCALTIMESTAMP,
    Keyword::CONVERT,
    Keyword::TRY_CONVERT,
    Keyword::TRY_CAST,
    Keyword::SAFE_CAST,
    Keyword::EXTRACT,
    Keyword::CEIL,
    Keyword::FLOOR,
    Keyword::SUBSTR,
    Keyword::SUBSTRING,
    Keyword::OVERLAY,
    Keyword::TRIM,
    Keyword::INTERVAL,
    Keyword::ARRAY,
    Keyword::MATCH,
    Keyword::STRUCT,
    Keyword::PRIOR,
    Keyword::MAP,
    Keyword::LAMBDA,
    Keyword::ANY,
    Keyword::ALL,
    Keyword::SOME,
    Keyword::DISTINCT,
];

/// Keywords that sqlparser reads as an infix operator this parser does not: an
/// expression followed by one is left to it.
const OTHER_INFIX: &[Keyword] = &[
    Keyword::XOR,
    Keyword::OVERLAPS,
    Keyword::OPERATOR,
    Keyword::DIV,
    Keyword::AT,
    Keyword::RLIKE,
    Keyword::REGEXP,
    Keyword::MATCH,
    Keyword::GLOB,
    Keyword::SIMILAR,
    Keyword::MEMBER,
    Keyword::COLLATE,
    Keyword::NOTNULL,
];

fn reserved(k: Keyword) -> bool {
    RESERVED_FOR_COLUMN_ALIAS.contains(&k)
        || RESERVED_FOR_TABLE_ALIAS.contains(&k)
        || RESERVED_FOR_IDENTIFIER.contains(&k)
}

impl Direct<'_> {
    /// Token `i` ahead (`i < LOOKAHEAD`), or the last one if the text ends before it.
    fn tok(&self, i: usize) -> &Tok {
        &self.toks[(self.pos + i).min(self.toks.len() - 1)]
    }

    /// Reads tokens until `LOOKAHEAD` are ahead of `pos`, or the last one is read.
    fn fill(&mut self) {
        while self.toks.len() <= self.pos + LOOKAHEAD
            && !matches!(self.toks.last().map(|t| t.kind), Some(Kind::Eof | Kind::Bad))
        {
            let t = self.lexer.next_token();
            self.toks.push(t);
        }
    }

    fn skip(&mut self, n: usize) {
        for _ in 0..n {
            self.bump();
        }
    }

    fn kind(&self) -> Kind {
        self.tok(0).kind
    }

    fn kind_at(&self, i: usize) -> Kind {
        self.tok(i).kind
    }

    fn text(&self, t: &Tok) -> &str {
        &self.sql[t.start as usize..t.end as usize]
    }

    fn here(&self) -> Location {
        self.tok(0).at
    }

    fn bump(&mut self) -> Tok {
        let t = *self.tok(0);
        self.pos = (self.pos + 1).min(self.toks.len() - 1);
        self.fill();
        t
    }

    /// Moves past the token ahead if `yes`; says whether it did.
    fn eat_if(&mut self, yes: bool) -> bool {
        if yes {
            self.bump();
        }
        yes
    }

    fn eat(&mut self, kind: Kind) -> bool {
        self.eat_if(self.kind() == kind)
    }

    fn expect(&mut self, kind: Kind) -> Step<()> {
        self.eat(kind).then_some(())
    }

    /// Whether token `i` ahead is the keyword `word`, unquoted.
    fn word_at(&self, i: usize, word: Keyword) -> bool {
        self.tok(i).keyword == Some(word)
    }

    /// Whether token `i` ahead is the unquoted word `word` (in capitals), a word of
    /// ecsql's own that is no sqlparser keyword.
    fn word_is_text(&self, i: usize, word: &str) -> bool {
        let t = self.tok(i);
        t.kind == Kind::Word && self.text(t).eq_ignore_ascii_case(word)
    }

    fn is_word(&self, word: Keyword) -> bool {
        self.word_at(0, word)
    }

    /// Whether the token ahead is one of the keywords `words`, unquoted.
    fn is_any_word(&self, words: &[Keyword]) -> bool {
        self.keyword_at(0).is_some_and(|k| words.contains(&k))
    }

    fn eat_word(&mut self, word: Keyword) -> bool {
        self.eat_if(self.is_word(word))
    }

    fn expect_word(&mut self, word: Keyword) -> Step<()> {
        self.eat_word(word).then_some(())
    }

    /// The keyword token `i` ahead is, if it is an unquoted word that is one.
    fn keyword_at(&self, i: usize) -> Option<Keyword> {
        self.tok(i).keyword
    }

    /// The name token `t` is (a word or a quoted name).
    fn ident(&self, t: &Tok) -> Ident {
        match t.kind {
            Kind::Quoted => Ident {
                value: lex::unquote(self.text(t)),
                quoted: true,
                at: t.at,
            },
            _ => Ident::new(self.text(t), t.at),
        }
    }

    /// `item, item, …)`: the items of a list whose `(` was read, and its `)`.
    fn list_to_rparen<T>(&mut self, mut item: impl FnMut(&mut Self) -> Step<T>) -> Step<Vec<T>> {
        let mut items = Vec::new();
        loop {
            items.push(item(self)?);
            if self.eat(Kind::RParen) {
                return Some(items);
            }
            self.expect(Kind::Comma)?;
        }
    }

    /// `AS name`, or a name that is no keyword at all (sqlparser takes some keywords as
    /// aliases too; those texts are left to it).
    fn optional_alias(&mut self) -> Step<Option<Ident>> {
        if self.eat_word(Keyword::AS) {
            // After AS: any word, a keyword too, or a quoted name.
            return self.name_part().map(Some);
        }
        match self.kind() {
            Kind::Quoted => {
                let t = self.bump();
                Some(Some(self.ident(&t)))
            }
            Kind::Word if self.keyword_at(0).is_none() => {
                let t = self.bump();
                Some(Some(self.ident(&t)))
            }
            _ => Some(None),
        }
    }

    fn nest(&mut self) -> Step<()> {
        self.depth += 1;
        (self.depth <= MAX_NESTING).then_some(())
    }

    // ---- statements ---------------------------------------------------------------------

    fn statement(&mut self) -> Step<Statement> {
        self.last_param = 0;
        self.named_params.clear();
        self.depth = 0;
        let at = self.here();
        let kind = if self.is_word(Keyword::SELECT) || self.kind() == Kind::LParen {
            StatementKind::Select(self.query()?)
        } else if self.eat_word(Keyword::UPDATE) {
            self.update()?
        } else if self.eat_word(Keyword::DELETE) {
            self.delete()?
        } else if self.eat_word(Keyword::INSERT) {
            self.insert()?
        } else if self.word_is_text(0, "SPAWN") {
            self.bump();
            self.spawn()?
        } else if self.word_is_text(0, "DESPAWN") {
            self.bump();
            if self.is_word(Keyword::FROM) {
                StatementKind::DespawnFrom {
                    source: self.source()?,
                }
            } else {
                let mut ids = vec![self.expr()?];
                while self.eat(Kind::Comma) {
                    ids.push(self.expr()?);
                }
                StatementKind::Despawn { ids }
            }
        } else {
            return None;
        };
        Some(Statement {
            kind,
            at,
            params: Parameters {
                positional: self.last_param,
                named: std::mem::take(&mut self.named_params),
            },
        })
    }

    /// `UPDATE C [AS a] SET f = e, … [FROM …] [WHERE …]`.
    fn update(&mut self) -> Step<StatementKind> {
        // `UPDATE OR …` and `UPDATE REPLACE …` are conflict clauses to sqlparser.
        if self.is_word(Keyword::OR) || self.is_word(Keyword::REPLACE) {
            return None;
        }
        let (target, alias) = match self.table_ref()? {
            TableRef::Named { name, alias } => (name, alias),
            _ => return None,
        };
        self.expect_word(Keyword::SET)?;
        let mut assignments = Vec::new();
        loop {
            // `SET C.f = …` names the target's own field: the last part is kept.
            let mut field = self.name_part()?;
            if self.eat(Kind::Dot) {
                field = self.name_part()?;
            }
            self.expect(Kind::Eq)?;
            let value = self.expr()?;
            assignments.push(Assignment { field, value });
            if !self.eat(Kind::Comma) {
                break;
            }
        }
        let from = self.optional_from()?;
        let filter = self.where_clause()?;
        Some(StatementKind::Update {
            target,
            alias,
            assignments,
            from,
            filter,
        })
    }

    /// `INSERT [OR REPLACE | OR IGNORE] INTO C [(f, …)] VALUES (…), … | SELECT …`.
    fn insert(&mut self) -> Step<StatementKind> {
        let on_conflict = if self.is_word(Keyword::OR) && self.word_at(1, Keyword::REPLACE) {
            self.skip(2);
            OnConflict::Replace
        } else if self.is_word(Keyword::OR) && self.word_at(1, Keyword::IGNORE) {
            self.skip(2);
            OnConflict::DoNothing
        } else {
            OnConflict::Fail
        };
        self.expect_word(Keyword::INTO)?;
        // `INSERT INTO LOCAL DIRECTORY …` is another statement to sqlparser.
        if self.is_word(Keyword::LOCAL) || self.is_word(Keyword::DIRECTORY) {
            return None;
        }
        let t = self.table_name()?;
        let component = self.ident(&t);
        if self.kind() == Kind::Dot {
            return None;
        }
        let mut columns = Vec::new();
        if self.kind() == Kind::LParen && !self.word_at(1, Keyword::SELECT) && self.kind_at(1) != Kind::LParen
        {
            self.bump();
            columns = self.list_to_rparen(Self::name_part)?;
        }
        let source = if self.is_word(Keyword::VALUES) {
            self.bump();
            // The rows are placed where the first one's parenthesis is, as sqlparser's
            // span of VALUES places them.
            let at = self.here();
            let mut rows = Vec::new();
            loop {
                self.expect(Kind::LParen)?;
                let row = self.list_to_rparen(Self::expr)?;
                rows.push(row);
                if !self.eat(Kind::Comma) {
                    break;
                }
            }
            Query {
                body: SetExpr::Values(rows),
                order_by: Vec::new(),
                limit: None,
                offset: None,
                at,
            }
        } else if self.is_word(Keyword::SELECT) || self.kind() == Kind::LParen {
            self.query()?
        } else {
            return None;
        };
        Some(StatementKind::Insert {
            component,
            columns,
            source,
            on_conflict,
        })
    }

    /// `DELETE FROM C [WHERE …]`.
    fn delete(&mut self) -> Step<StatementKind> {
        self.expect_word(Keyword::FROM)?;
        let component = match self.table_ref()? {
            TableRef::Named { name, alias: None } => name,
            _ => return None,
        };
        let filter = self.where_clause()?;
        Some(StatementKind::Delete { component, filter })
    }

    /// `SPAWN [AT id] C[(args)], … [FROM …]`, as `StatementParser::parse_spawn` reads it.
    fn spawn(&mut self) -> Step<StatementKind> {
        // `AT` is the keyword unless it names a component: `SPAWN At(…)`, `SPAWN At, …`.
        // `AT (` is decided past the matching `)`: the sqlparser way looks that far.
        if self.is_word(Keyword::AT) && self.kind_at(1) == Kind::LParen {
            return None;
        }
        let names_component = matches!(self.kind_at(1), Kind::Comma | Kind::Semi | Kind::Eof);
        let at = if !names_component && self.eat_word(Keyword::AT) {
            Some(self.expr()?)
        } else {
            None
        };
        let mut items = Vec::new();
        let no_items = matches!(self.kind(), Kind::Semi | Kind::Eof) || self.is_word(Keyword::FROM);
        if !(at.is_some() && no_items) {
            loop {
                let name = self.name_part()?;
                let mut args = Vec::new();
                if self.eat(Kind::LParen) && !self.eat(Kind::RParen) {
                    args = self.list_to_rparen(Self::spawn_arg)?;
                }
                items.push(SpawnItem { name, args });
                if !self.eat(Kind::Comma) {
                    break;
                }
            }
        }
        let source = if self.is_word(Keyword::FROM) {
            Some(self.source()?)
        } else {
            None
        };
        Some(StatementKind::Spawn { at, items, source })
    }

    /// One value of a SPAWN's component: `e` or `name => e`.
    fn spawn_arg(&mut self) -> Step<SpawnArg> {
        let name = if matches!(self.kind(), Kind::Word | Kind::Quoted) && self.kind_at(1) == Kind::Arrow {
            let name = self.name_part()?;
            self.bump();
            Some(name)
        } else {
            None
        };
        let value = self.expr()?;
        Some(SpawnArg { name, value })
    }

    /// `FROM items [WHERE e]` or `FROM SELECT …`: the rows a SPAWN or DESPAWN runs over.
    fn source(&mut self) -> Step<Source> {
        self.expect_word(Keyword::FROM)?;
        if self.is_word(Keyword::SELECT) {
            let query = self.query()?;
            let base = TableRef::Subquery {
                query: Box::new(query),
                alias: None,
                columns: Vec::new(),
            };
            return Some(Source {
                from: vec![FromItem {
                    base,
                    joins: Vec::new(),
                }],
                filter: None,
            });
        }
        let from = self.tables()?;
        let filter = self.where_clause()?;
        Some(Source { from, filter })
    }

    fn name_part(&mut self) -> Step<Ident> {
        match self.kind() {
            Kind::Word | Kind::Quoted => {
                let t = self.bump();
                Some(self.ident(&t))
            }
            _ => None,
        }
    }

    fn where_clause(&mut self) -> Step<Option<Expr>> {
        if self.eat_word(Keyword::WHERE) {
            Some(Some(self.expr()?))
        } else {
            Some(None)
        }
    }

    // ---- queries ------------------------------------------------------------------------

    fn query(&mut self) -> Step<Query> {
        self.nest()?;
        let (body, at) = self.set_expr(0, &mut 1)?;
        let mut order_by = Vec::new();
        if self.eat_word(Keyword::ORDER) {
            self.expect_word(Keyword::BY)?;
            if self.is_word(Keyword::ALL) {
                return None;
            }
            loop {
                let expr = self.expr()?;
                let desc = if self.eat_word(Keyword::DESC) {
                    true
                } else {
                    self.eat_word(Keyword::ASC);
                    false
                };
                let nulls_first = if self.eat_word(Keyword::NULLS) {
                    if self.eat_word(Keyword::FIRST) {
                        Some(true)
                    } else {
                        self.expect_word(Keyword::LAST)?;
                        Some(false)
                    }
                } else {
                    None
                };
                order_by.push(OrderItem {
                    expr,
                    desc,
                    nulls_first,
                });
                if !self.eat(Kind::Comma) {
                    break;
                }
            }
        }
        // sqlparser's order: [OFFSET o] [LIMIT l | LIMIT ALL | LIMIT o, l] [OFFSET o].
        let mut offset = if self.eat_word(Keyword::OFFSET) {
            Some(self.offset()?)
        } else {
            None
        };
        let mut limit = None;
        if self.eat_word(Keyword::LIMIT) {
            if !self.eat_word(Keyword::ALL) {
                let first = self.expr()?;
                if offset.is_none() && self.eat(Kind::Comma) {
                    offset = Some(first);
                    limit = Some(self.expr()?);
                } else {
                    limit = Some(first);
                }
            }
            if offset.is_none() && self.eat_word(Keyword::OFFSET) {
                offset = Some(self.offset()?);
            }
        }
        self.depth -= 1;
        Some(Query {
            body,
            order_by,
            limit,
            offset,
            at,
        })
    }

    fn offset(&mut self) -> Step<Expr> {
        let value = self.expr()?;
        if self.is_word(Keyword::ROW) || self.is_word(Keyword::ROWS) {
            return None;
        }
        Some(value)
    }

    /// A query body and the set operations after it that bind tighter than `precedence`
    /// (INTERSECT 20, UNION and EXCEPT 10, left to right), with where it begins.
    fn set_expr(&mut self, precedence: u8, terms: &mut usize) -> Step<(SetExpr, Location)> {
        let (mut body, at) = if self.is_word(Keyword::SELECT) {
            let select = self.select()?;
            let at = select.at;
            (SetExpr::Select(Box::new(select)), at)
        } else if self.eat(Kind::LParen) {
            let query = self.query()?;
            self.expect(Kind::RParen)?;
            let at = query.at;
            (SetExpr::Query(Box::new(query)), at)
        } else {
            return None;
        };
        loop {
            let (op, next) = if self.is_word(Keyword::UNION) {
                (SetOp::Union, 10)
            } else if self.is_word(Keyword::EXCEPT) {
                (SetOp::Except, 10)
            } else if self.is_word(Keyword::INTERSECT) {
                (SetOp::Intersect, 20)
            } else if self.is_word(Keyword::MINUS) {
                return None;
            } else {
                break;
            };
            if precedence >= next {
                break;
            }
            self.bump();
            *terms += 1;
            if *terms > MAX_NESTING || self.is_word(Keyword::BY) || self.word_at(1, Keyword::BY) {
                return None;
            }
            let all = if self.eat_word(Keyword::ALL) {
                true
            } else {
                self.eat_word(Keyword::DISTINCT);
                false
            };
            let (right, _) = self.set_expr(next, terms)?;
            body = SetExpr::SetOp {
                op,
                left: Box::new(body),
                right: Box::new(right),
                all,
            };
        }
        Some((body, at))
    }

    fn select(&mut self) -> Step<Select> {
        let at = self.bump().at;
        if self.is_word(Keyword::AS) || self.is_word(Keyword::TOP) || self.is_word(Keyword::FROM) {
            return None;
        }
        let distinct = if self.eat_word(Keyword::DISTINCT) {
            if self.is_word(Keyword::ON) {
                return None;
            }
            true
        } else {
            self.eat_word(Keyword::ALL);
            false
        };
        if self.is_word(Keyword::TOP) || self.is_word(Keyword::FROM) {
            return None;
        }
        let mut items = Vec::new();
        loop {
            items.push(self.select_item(at)?);
            if !self.eat(Kind::Comma) {
                break;
            }
        }
        let from = self.optional_from()?;
        let filter = self.where_clause()?;
        let mut group_by = Vec::new();
        if self.eat_word(Keyword::GROUP) {
            self.expect_word(Keyword::BY)?;
            loop {
                if self.is_any_word(&[Keyword::ALL, Keyword::GROUPING, Keyword::CUBE, Keyword::ROLLUP])
                    || (self.kind() == Kind::LParen && self.kind_at(1) == Kind::RParen)
                {
                    return None;
                }
                group_by.push(self.expr()?);
                if !self.eat(Kind::Comma) {
                    break;
                }
            }
        }
        let having = if self.eat_word(Keyword::HAVING) {
            Some(self.expr()?)
        } else {
            None
        };
        Some(Select {
            distinct,
            items,
            from,
            filter,
            group_by,
            having,
            windows: Vec::new(),
            at,
        })
    }

    fn select_item(&mut self, select_at: Location) -> Step<SelectItem> {
        // A word reserved there ends the list for sqlparser (a trailing comma).
        if self
            .keyword_at(0)
            .is_some_and(|k| RESERVED_FOR_COLUMN_ALIAS.contains(&k))
        {
            return None;
        }
        let item = if self.eat(Kind::Star) {
            SelectItem::Wildcard(select_at)
        } else if matches!(self.kind(), Kind::Word | Kind::Quoted)
            && self.kind_at(1) == Kind::Dot
            && self.kind_at(2) == Kind::Star
        {
            if self
                .keyword_at(0)
                .is_some_and(|k| reserved(k) || OWN_EXPRESSIONS.contains(&k))
            {
                return None;
            }
            let t = self.bump();
            self.skip(2);
            SelectItem::QualifiedWildcard(self.ident(&t))
        } else {
            let expr = self.expr()?;
            let alias = self.optional_alias()?;
            return Some(SelectItem::Expr { expr, alias });
        };
        // `* EXCEPT (…)`, `* REPLACE (…)` and their kind are sqlparser's.
        if self.is_any_word(&[
            Keyword::EXCEPT,
            Keyword::EXCLUDE,
            Keyword::REPLACE,
            Keyword::RENAME,
            Keyword::ILIKE,
        ]) {
            return None;
        }
        Some(item)
    }

    /// `FROM tables`, or nothing.
    fn optional_from(&mut self) -> Step<Vec<FromItem>> {
        if self.eat_word(Keyword::FROM) {
            self.tables()
        } else {
            Some(Vec::new())
        }
    }

    fn tables(&mut self) -> Step<Vec<FromItem>> {
        let mut items = Vec::new();
        loop {
            items.push(self.table_with_joins()?);
            if !self.eat(Kind::Comma) {
                return Some(items);
            }
        }
    }

    fn table_with_joins(&mut self) -> Step<FromItem> {
        let base = self.table_ref()?;
        let mut joins = Vec::new();
        loop {
            let (left, cross) = if self.eat_word(Keyword::JOIN) {
                (false, false)
            } else if self.is_word(Keyword::INNER) && self.word_at(1, Keyword::JOIN) {
                self.skip(2);
                (false, false)
            } else if self.is_word(Keyword::LEFT) && self.word_at(1, Keyword::JOIN) {
                self.skip(2);
                (true, false)
            } else if self.is_word(Keyword::LEFT)
                && self.word_at(1, Keyword::OUTER)
                && self.word_at(2, Keyword::JOIN)
            {
                self.skip(3);
                (true, false)
            } else if self.is_word(Keyword::CROSS) && self.word_at(1, Keyword::JOIN) {
                self.skip(2);
                (false, true)
            } else {
                return Some(FromItem { base, joins });
            };
            let table = self.table_ref()?;
            let on = if cross {
                let at = match &table {
                    TableRef::Named { name, .. } | TableRef::Function { name, .. } => name.at,
                    TableRef::Subquery { query, .. } => query.at,
                    TableRef::Recursive { cte, .. } => cte.name.at,
                };
                // CROSS JOIN is every pair: other entities, joined ON TRUE.
                if self.is_word(Keyword::ON) {
                    return None;
                }
                Some(Expr::new(ExprKind::Literal(Literal::Bool(true)), at))
            } else if self.eat_word(Keyword::ON) {
                Some(self.expr()?)
            } else {
                None
            };
            joins.push(Join { left, table, on });
        }
    }

    /// A component (a table), a table function or a subquery, with its alias.
    fn table_ref(&mut self) -> Step<TableRef> {
        if self.eat(Kind::LParen) {
            if !self.is_word(Keyword::SELECT) {
                return None;
            }
            self.nest()?;
            let query = self.query()?;
            self.depth -= 1;
            self.expect(Kind::RParen)?;
            let (alias, columns) = self.table_alias()?;
            return Some(TableRef::Subquery {
                query: Box::new(query),
                alias,
                columns,
            });
        }
        let t = self.table_name()?;
        let name = self.ident(&t);
        if self.kind() == Kind::Dot {
            return None;
        }
        if self.eat(Kind::LParen) {
            let args = if self.eat(Kind::RParen) {
                Vec::new()
            } else {
                self.list_to_rparen(Self::argument)?
            };
            let (alias, columns) = self.table_alias()?;
            return Some(TableRef::Function {
                name,
                args,
                alias,
                columns,
            });
        }
        if self.is_word(Keyword::PARTITION) || self.is_word(Keyword::WITH) {
            return None;
        }
        let (alias, columns) = self.table_alias()?;
        if !columns.is_empty() {
            return None;
        }
        Some(TableRef::Named { name, alias })
    }

    /// The name of a component (or table function) in FROM, UPDATE or INSERT: a quoted name,
    /// or a word no keyword sqlparser reads otherwise there.
    fn table_name(&mut self) -> Step<Tok> {
        match self.kind() {
            Kind::Quoted => Some(self.bump()),
            Kind::Word => {
                if self.keyword_at(0).is_some_and(|k| {
                    reserved(k)
                        || [
                            Keyword::TABLE,
                            Keyword::UNNEST,
                            Keyword::VALUES,
                            Keyword::VALUE,
                            Keyword::JSON_TABLE,
                            Keyword::OPENJSON,
                            Keyword::XMLTABLE,
                            Keyword::SEMANTIC_VIEW,
                        ]
                        .contains(&k)
                }) {
                    return None;
                }
                Some(self.bump())
            }
            _ => None,
        }
    }

    /// A table's alias and the names of its columns (`AS r(i)`).
    fn table_alias(&mut self) -> Step<(Option<Ident>, Vec<Ident>)> {
        let alias = self.optional_alias()?;
        let mut columns = Vec::new();
        if alias.is_some() && self.eat(Kind::LParen) {
            columns = self.list_to_rparen(Self::name_part)?;
        }
        Some((alias, columns))
    }

    // ---- expressions --------------------------------------------------------------------

    fn expr(&mut self) -> Step<Expr> {
        self.subexpr(0)
    }

    /// An expression of operators that bind tighter than `precedence`.
    fn subexpr(&mut self, precedence: u8) -> Step<Expr> {
        let outer = self.depth;
        self.nest()?;
        let mut expr = self.prefix()?;
        loop {
            let next = self.next_precedence()?;
            if precedence >= next {
                break;
            }
            // Each operator of a chain (`a + b + c`) puts the tree a level deeper.
            self.nest()?;
            expr = self.infix(expr, next)?;
        }
        self.depth = outer;
        Some(expr)
    }

    /// The precedence of the operator ahead, 0 when none is; `None` for an operator this
    /// parser does not read.
    fn next_precedence(&self) -> Step<u8> {
        Some(match self.kind() {
            Kind::Eq | Kind::NotEq | Kind::Lt | Kind::LtEq | Kind::Gt | Kind::GtEq => 20,
            Kind::Plus | Kind::Minus => 30,
            Kind::Star | Kind::Slash | Kind::Percent | Kind::Concat => 40,
            Kind::Word => match self.keyword_at(0) {
                Some(Keyword::OR) => 5,
                Some(Keyword::AND) => 10,
                Some(Keyword::IS) => 17,
                Some(Keyword::IN | Keyword::BETWEEN) => 20,
                Some(Keyword::LIKE | Keyword::ILIKE) => 19,
                Some(Keyword::NOT) => match self.keyword_at(1) {
                    Some(Keyword::IN | Keyword::BETWEEN) => 20,
                    Some(Keyword::LIKE | Keyword::ILIKE) => 19,
                    Some(k) if OTHER_INFIX.contains(&k) || k == Keyword::NULL => return None,
                    _ => 0,
                },
                Some(k) if OTHER_INFIX.contains(&k) => return None,
                _ => 0,
            },
            _ => 0,
        })
    }

    fn infix(&mut self, left: Expr, precedence: u8) -> Step<Expr> {
        let at = left.at;
        let op = match self.kind() {
            Kind::Eq => Some(BinaryOp::Eq),
            Kind::NotEq => Some(BinaryOp::NotEq),
            Kind::Lt => Some(BinaryOp::Lt),
            Kind::LtEq => Some(BinaryOp::LtEq),
            Kind::Gt => Some(BinaryOp::Gt),
            Kind::GtEq => Some(BinaryOp::GtEq),
            Kind::Plus => Some(BinaryOp::Add),
            Kind::Minus => Some(BinaryOp::Sub),
            Kind::Star => Some(BinaryOp::Mul),
            Kind::Slash => Some(BinaryOp::Div),
            Kind::Percent => Some(BinaryOp::Mod),
            Kind::Concat => Some(BinaryOp::Concat),
            _ if self.is_word(Keyword::AND) => Some(BinaryOp::And),
            _ if self.is_word(Keyword::OR) => Some(BinaryOp::Or),
            _ => None,
        };
        if let Some(op) = op {
            self.bump();
            // `= ANY (…)` and its kind are sqlparser's.
            if self.is_any_word(&[Keyword::ANY, Keyword::ALL, Keyword::SOME]) {
                return None;
            }
            let right = self.subexpr(precedence)?;
            return Some(Expr::new(
                ExprKind::Binary(Box::new(left), op, Box::new(right)),
                at,
            ));
        }
        if self.eat_word(Keyword::IS) {
            let negated = self.eat_word(Keyword::NOT);
            let kind = if self.eat_word(Keyword::NULL) {
                ExprKind::IsNull {
                    expr: Box::new(left),
                    negated,
                }
            } else if self.is_word(Keyword::TRUE) || self.is_word(Keyword::FALSE) {
                // `x IS [NOT] TRUE` is `x IS [NOT] DISTINCT FROM TRUE`, as translation
                // makes it.
                let value = self.eat_word(Keyword::TRUE) || !self.eat_word(Keyword::FALSE);
                let literal = Expr::new(ExprKind::Literal(Literal::Bool(value)), at);
                ExprKind::IsDistinct {
                    left: Box::new(left),
                    right: Box::new(literal),
                    negated: !negated,
                }
            } else if self.eat_word(Keyword::DISTINCT) {
                if !self.eat_word(Keyword::FROM) {
                    return None;
                }
                ExprKind::IsDistinct {
                    left: Box::new(left),
                    right: Box::new(self.subexpr(precedence)?),
                    negated,
                }
            } else {
                return None;
            };
            return Some(Expr::new(kind, at));
        }
        let negated = self.eat_word(Keyword::NOT);
        let expr = Box::new(left);
        let kind = if self.eat_word(Keyword::IN) {
            self.expect(Kind::LParen)?;
            if self.is_word(Keyword::SELECT) {
                let query = Box::new(self.query()?);
                self.expect(Kind::RParen)?;
                ExprKind::InSubquery { expr, query, negated }
            } else if matches!(self.kind(), Kind::LParen | Kind::RParen)
                || self.is_any_word(&[
                    Keyword::WITH,
                    Keyword::VALUE,
                    Keyword::VALUES,
                    Keyword::TABLE,
                    Keyword::INSERT,
                    Keyword::UPDATE,
                    Keyword::DELETE,
                    Keyword::MERGE,
                    Keyword::FROM,
                ])
            {
                // sqlparser tries the inside as a query first: what could begin one is
                // left to it.
                return None;
            } else {
                let list = self.list_to_rparen(Self::expr)?;
                ExprKind::InList { expr, list, negated }
            }
        } else if self.eat_word(Keyword::BETWEEN) {
            let low = Box::new(self.subexpr(20)?);
            self.expect_word(Keyword::AND)?;
            let high = Box::new(self.subexpr(20)?);
            ExprKind::Between {
                expr,
                low,
                high,
                negated,
            }
        } else if self.is_word(Keyword::LIKE) || self.is_word(Keyword::ILIKE) {
            let case_insensitive = self.bump_is_word(Keyword::ILIKE);
            if self.is_word(Keyword::ANY) {
                return None;
            }
            let pattern = Box::new(self.subexpr(19)?);
            let escape = if self.eat_word(Keyword::ESCAPE) {
                Some(Box::new(self.subexpr(19)?))
            } else {
                None
            };
            ExprKind::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
                escape,
            }
        } else {
            return None;
        };
        Some(Expr::new(kind, at))
    }

    /// Consumes the token ahead and says whether it was the word `word`.
    fn bump_is_word(&mut self, word: Keyword) -> bool {
        let is = self.is_word(word);
        self.bump();
        is
    }

    fn prefix(&mut self) -> Step<Expr> {
        let t = self.bump();
        let at = t.at;
        let kind = match t.kind {
            Kind::Number => ExprKind::Literal(Literal::number(self.text(&t))?),
            Kind::Text => ExprKind::Literal(Literal::Text(lex::unquote(self.text(&t)))),
            Kind::Param => ExprKind::Param(self.param(&t)?),
            Kind::LParen => {
                if self.is_word(Keyword::SELECT) {
                    let query = self.query()?;
                    self.expect(Kind::RParen)?;
                    let at = query.at;
                    return Some(Expr::new(ExprKind::Subquery(Box::new(query)), at));
                }
                if self.kind() == Kind::LParen && self.word_at(1, Keyword::SELECT) {
                    // `((SELECT …) …)`: sqlparser tries the inside as a query first.
                    return None;
                }
                let mut items = self.list_to_rparen(Self::expr)?;
                if items.len() == 1 {
                    // Parentheses leave no node: the expression is placed where it starts.
                    return items.pop();
                }
                let at = items[0].at;
                return Some(Expr::new(ExprKind::Tuple(items), at));
            }
            Kind::Minus | Kind::Plus => {
                let operand_at = self.pos;
                let operand = self.subexpr(40)?;
                let at = operand.at;
                let op = if t.kind == Kind::Minus {
                    UnaryOp::Neg
                } else {
                    UnaryOp::Plus
                };
                // `-5` is folded into the literal, so that i64::MIN is writable.
                if op == UnaryOp::Neg
                    && self.pos == operand_at + 1
                    && self.toks[operand_at].kind == Kind::Number
                {
                    let text = format!("-{}", self.text(&self.toks[operand_at]));
                    return Some(Expr::new(ExprKind::Literal(Literal::number(&text)?), at));
                }
                return Some(Expr::new(ExprKind::Unary(op, Box::new(operand)), at));
            }
            Kind::Word => return self.word_prefix(t),
            Kind::Quoted => return self.name_expr(t),
            _ => return None,
        };
        Some(Expr::new(kind, at))
    }

    /// An expression that starts with the unquoted word `t`.
    fn word_prefix(&mut self, t: Tok) -> Step<Expr> {
        let at = t.at;
        let Some(k) = t.keyword else {
            return self.name_expr(t);
        };
        let kind = match k {
            Keyword::TRUE => ExprKind::Literal(Literal::Bool(true)),
            Keyword::FALSE => ExprKind::Literal(Literal::Bool(false)),
            Keyword::NULL => ExprKind::Literal(Literal::Null),
            Keyword::CASE => return self.case(at),
            Keyword::CAST => return self.cast(),
            Keyword::EXISTS => return self.exists(false),
            Keyword::NOT if self.is_word(Keyword::EXISTS) => {
                self.bump();
                return self.exists(true);
            }
            Keyword::NOT => {
                let operand = self.subexpr(15)?;
                let at = operand.at;
                return Some(Expr::new(ExprKind::Unary(UnaryOp::Not, Box::new(operand)), at));
            }
            Keyword::POSITION if self.kind() == Kind::LParen => return None,
            k if OWN_EXPRESSIONS.contains(&k) || reserved(k) => return None,
            _ => return self.name_expr(t),
        };
        Some(Expr::new(kind, at))
    }

    /// A column (`name`, `qualifier.name`) or a call (`name(…)`) whose first name is `t`.
    fn name_expr(&mut self, t: Tok) -> Step<Expr> {
        let first = self.ident(&t);
        let at = first.at;
        let kind = if self.eat(Kind::LParen) {
            self.call(first)?
        } else if self.eat(Kind::Dot) {
            let second = self.name_part()?;
            if matches!(self.kind(), Kind::Dot | Kind::LParen) {
                return None;
            }
            ExprKind::Column(vec![first, second])
        } else {
            ExprKind::Column(vec![first])
        };
        // A value right after a name is sqlparser's: a typed literal (`DATE '…'`, and
        // `DATE "…"`, a double-quoted value there), an introducer (`_utf8 '…'`).
        if matches!(
            self.kind(),
            Kind::Number | Kind::Text | Kind::Quoted | Kind::Param
        ) || self.is_word(Keyword::TRUE)
            || self.is_word(Keyword::FALSE)
            || self.is_word(Keyword::NULL)
        {
            return None;
        }
        Some(Expr::new(kind, at))
    }

    /// The arguments of `name(`, to the closing parenthesis, and what may follow it.
    fn call(&mut self, name: Ident) -> Step<ExprKind> {
        // `xmlparse(…)` has arguments of its own in sqlparser.
        if self.is_word(Keyword::SELECT)
            || self.is_word(Keyword::WITH)
            || (!name.quoted && name.matches("xmlparse"))
        {
            return None;
        }
        let mut args = Vec::new();
        let mut star = false;
        let mut distinct = false;
        if !self.eat(Kind::RParen) {
            if self.eat_word(Keyword::DISTINCT) {
                distinct = true;
            } else {
                self.eat_word(Keyword::ALL);
            }
            loop {
                if self.eat(Kind::Star) {
                    star = true;
                } else {
                    args.push(self.argument()?);
                }
                if self.eat(Kind::RParen) {
                    break;
                }
                self.expect(Kind::Comma)?;
            }
        }
        if self.is_any_word(&[
            Keyword::FILTER,
            Keyword::OVER,
            Keyword::WITHIN,
            Keyword::IGNORE,
            Keyword::RESPECT,
        ]) {
            return None;
        }
        Some(ExprKind::Function {
            name,
            args,
            star,
            distinct,
        })
    }

    /// One argument of a call: an expression, not a named one (`name = value`) nor a
    /// qualified star.
    fn argument(&mut self) -> Step<Expr> {
        if matches!(self.kind(), Kind::Word | Kind::Quoted)
            && (self.kind_at(1) == Kind::Eq
                || self.word_at(1, Keyword::VALUE)
                || (self.kind_at(1) == Kind::Dot && self.kind_at(2) == Kind::Star))
        {
            return None;
        }
        self.expr()
    }

    fn case(&mut self, at: Location) -> Step<Expr> {
        let operand = if self.is_word(Keyword::WHEN) {
            None
        } else {
            Some(Box::new(self.expr()?))
        };
        let mut branches = Vec::new();
        self.expect_word(Keyword::WHEN)?;
        loop {
            let when = self.expr()?;
            self.expect_word(Keyword::THEN)?;
            let then = self.expr()?;
            branches.push((when, then));
            if !self.eat_word(Keyword::WHEN) {
                break;
            }
        }
        let otherwise = if self.eat_word(Keyword::ELSE) {
            Some(Box::new(self.expr()?))
        } else {
            None
        };
        self.expect_word(Keyword::END)?;
        let kind = ExprKind::Case {
            operand,
            branches,
            otherwise,
        };
        Some(Expr::new(kind, at))
    }

    /// `CAST(e AS type)`, placed where `e` is (as translation places it); the type one of
    /// the single words translation knows.
    fn cast(&mut self) -> Step<Expr> {
        self.expect(Kind::LParen)?;
        let expr = self.expr()?;
        self.expect_word(Keyword::AS)?;
        let t = self.bump();
        if t.kind != Kind::Word || self.kind() != Kind::RParen {
            return None;
        }
        let ty = type_name(self.text(&t))?;
        self.bump();
        let at = expr.at;
        Some(Expr::new(
            ExprKind::Cast {
                expr: Box::new(expr),
                ty,
            },
            at,
        ))
    }

    /// `EXISTS (SELECT …)`, placed at its SELECT.
    fn exists(&mut self, negated: bool) -> Step<Expr> {
        self.expect(Kind::LParen)?;
        if !self.is_word(Keyword::SELECT) {
            return None;
        }
        let query = self.query()?;
        self.expect(Kind::RParen)?;
        let at = query.at;
        Some(Expr::new(
            ExprKind::Exists {
                query: Box::new(query),
                negated,
            },
            at,
        ))
    }

    /// `?` (the next position) or `?N`, as `StatementParser::next_param` numbers them.
    fn param(&mut self, t: &Tok) -> Step<Param> {
        let digits = &self.text(t)[1..];
        if digits.is_empty() {
            self.last_param += 1;
            return Some(Param::Position(self.last_param));
        }
        let n: usize = digits.parse().ok()?;
        if n == 0 {
            return None;
        }
        self.last_param = self.last_param.max(n);
        Some(Param::Position(n))
    }
}
