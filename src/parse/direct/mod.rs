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
//! SELECT.
//!
//! Depth: every expression read here carries its height as translation counts levels
//! (`translate::MAX_DEPTH`: a level per parenthesis, operator, call, CASE and subquery, the
//! leftmost operand of `a + b + c` two levels below the top), computed bottom-up as the
//! tree is built, so a chain whose left operand is a deep parenthesis is counted as deep as
//! it is. A statement whose tree is higher than `MAX_HEIGHT` (half translation's bound) goes
//! to the sqlparser path, so every tree made here is one the binder takes. Expressions and
//! queries recurse on a stack grown as they need (`recursive`; an expression checks it
//! every `LEVELS_PER_CHECK` levels), and the recursion stops past `MAX_FRAMES` calls, so
//! no text can overflow the caller's stack nor keep the parser long before its height is
//! known. Texts past `MAX_TEXT` go to the sqlparser path too
//! (a dump's blocks of rows, which `rows.rs` reads more frugally); tokens are read as the
//! parser asks for them, so a text given up early costs only the tokens read.
//!
//! This file holds the entry, the token window and the helpers every part uses;
//! `statement.rs` reads the writes, `query.rs` the queries, `expr.rs` the expressions.

mod expr;
mod query;
mod statement;

use sqlparser::keywords::{
    Keyword, RESERVED_FOR_COLUMN_ALIAS, RESERVED_FOR_IDENTIFIER, RESERVED_FOR_TABLE_ALIAS,
};

use super::ast::*;
use super::lex::{self, Kind, Lexer, Tok};
use super::translate::type_name;
use crate::location::Location;

/// The highest tree read here, in translation's levels: half its bound, so a tree read
/// here is well within what the sqlparser path and the binder take. SQLite's generated
/// queries nest their ANDs and ORs a few hundred levels deep (a chain of 150 is 150).
const MAX_HEIGHT: usize = super::translate::MAX_DEPTH / 2;

/// The most recursive calls under way: an expression's call is a level of its tree, a
/// query's is not (its expressions are a level below the subquery's node), so a tree within
/// `MAX_HEIGHT` needs `MAX_HEIGHT` calls plus one or two per query it nests; one that
/// needs more (queries nested with no expression between them, hundreds deep) goes to
/// sqlparser. Within translation's bound, so sqlparser's path reads whatever this does.
pub(super) const MAX_FRAMES: usize = 2 * MAX_HEIGHT;
const _: () = assert!(MAX_FRAMES <= super::translate::MAX_DEPTH);

/// How many levels of expressions are read between two checks of the stack (a query
/// checks at each): measured at under 1.9 KiB a level optimized and 9.4 KiB unoptimized, so
/// the levels between two checks take under 16 KiB of `recursive`'s 128 KiB red zone, and
/// under 80 KiB of the 1 MiB a debug build keeps (`tokens::debug_red_zone`).
const LEVELS_PER_CHECK: usize = 8;

/// The most SELECTs one chain of UNION, EXCEPT and INTERSECT read here may join.
const MAX_TERMS: usize = 64;

/// How many tokens ahead of the current one the parser looks (`kind_at(2)`), plus it.
const LOOKAHEAD: usize = 3;

/// Tokens kept (`Direct::toks`): the lookahead, the current one and the one before,
/// rounded up to a power of two; no text needs more, so the parser allocates none.
const RING: usize = 8;
const _: () = assert!(LOOKAHEAD + 2 <= RING);

/// The longest text read here, in bytes.
const MAX_TEXT: usize = 1 << 16;

/// The statements of `sql` (which begins at `start` of a larger text), when every one is
/// of the kinds this parser reads.
pub(super) fn parse(sql: &str, start: Location) -> Option<Vec<Statement>> {
    if !Direct::reads(sql) {
        return None;
    }
    let mut p = Direct::new(sql, start);
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

/// The one statement of `sql` (`;`s before and after it aside), when it is of the kinds
/// this parser reads: `parse` without the list. `None` for no statement or more than
/// one, whose errors `parse` gives.
pub(super) fn parse_one(sql: &str, start: Location) -> Option<Box<Statement>> {
    if !Direct::reads(sql) {
        return None;
    }
    let mut p = Direct::new(sql, start);
    p.fill();
    while p.eat(Kind::Semi) {}
    let statement = p.boxed_statement()?;
    while p.eat(Kind::Semi) {}
    (p.kind() == Kind::Eof).then_some(statement)
}

impl<'a> Direct<'a> {
    /// Whether `sql` is short enough to be read here: long texts (a dump's blocks of
    /// rows) are read more frugally by `rows.rs`, and are not what this parser is for.
    fn reads(sql: &str) -> bool {
        sql.len() <= MAX_TEXT
    }

    /// A parser at the start of `sql` (which `reads`), no token read yet (`fill` reads
    /// the first). Built where its caller keeps it (inlined, returned as it is made, its
    /// tokens read there): the token ring is a few hundred bytes, and each move of it a
    /// copy.
    #[inline(always)]
    fn new(sql: &'a str, start: Location) -> Direct<'a> {
        super::tokens::debug_red_zone();
        Direct {
            sql,
            lexer: Lexer::new(sql, start),
            toks: [Tok::NONE; RING],
            read: 0,
            pos: 0,
            last_param: 0,
            named_params: Vec::new(),
            depth: 0,
            height: 0,
            widest: 0,
        }
    }
}

/// Whether the parse goes on; `None` hands the text to the sqlparser path.
type Step<T> = Option<T>;

struct Direct<'a> {
    sql: &'a str,
    lexer: Lexer<'a>,
    /// The last tokens read, token `n` at `n % RING`: always `LOOKAHEAD` past `pos`, or
    /// to the last (an `Eof` or a `Bad`), and the one before `pos` (`previous`).
    toks: [Tok; RING],
    /// How many tokens have been read.
    read: usize,
    pos: usize,
    /// As `StatementParser`'s: the highest `?N` so far, and the named parameters.
    last_param: usize,
    named_params: Vec<String>,
    /// The recursive calls under way (`nest`), bounded by `MAX_FRAMES`.
    depth: usize,
    /// The height of the expression (or the highest of the query's expressions) last
    /// read, in translation's levels: a value at the bottom is 1.
    height: usize,
    /// The highest of the expressions read by `expr` since the enclosing list or query
    /// began (`children`).
    widest: usize,
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
        &self.toks[(self.pos + i).min(self.read - 1) % RING]
    }

    /// The token before `pos`, when `pos` is `at + 1` (it is still in the ring).
    fn previous(&self, at: usize) -> Option<&Tok> {
        (self.pos == at + 1).then(|| &self.toks[at % RING])
    }

    /// Reads tokens until `LOOKAHEAD` are ahead of `pos`, or the last one is read.
    fn fill(&mut self) {
        while self.read <= self.pos + LOOKAHEAD
            && (self.read == 0 || !matches!(self.toks[(self.read - 1) % RING].kind, Kind::Eof | Kind::Bad))
        {
            self.toks[self.read % RING] = self.lexer.next_token();
            self.read += 1;
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
        self.pos = (self.pos + 1).min(self.read - 1);
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
                value: lex::unquote(self.text(t)).into(),
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

    /// One recursive call deeper; `None` past `MAX_FRAMES`.
    fn nest(&mut self) -> Step<()> {
        self.depth += 1;
        (self.depth <= MAX_FRAMES).then_some(())
    }

    /// Reads what `read` reads (expressions, through `expr`) and returns it with the
    /// highest of their heights (0 for none), the enclosing list's `widest` kept aside.
    fn children<T>(&mut self, read: impl FnOnce(&mut Self) -> Step<T>) -> Step<(T, usize)> {
        let outer = std::mem::take(&mut self.widest);
        let read = read(self)?;
        Some((read, std::mem::replace(&mut self.widest, outer)))
    }

    /// Sets the height of the node just made, above children as high as `below`, and
    /// gives up past `MAX_HEIGHT`.
    fn above(&mut self, below: usize) -> Step<()> {
        self.height = below + 1;
        (self.height <= MAX_HEIGHT).then_some(())
    }

    // ---- statements ---------------------------------------------------------------------

    // ---- queries ------------------------------------------------------------------------

    // ---- expressions --------------------------------------------------------------------
}
