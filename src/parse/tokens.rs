//! A text's tokens as sqlparser's `Parser` reads them: tokenized in `DIALECT` (the
//! splitter's too), each placed in the larger text the script begins in, SQLite's
//! `a IS b` written as `a IS NOT DISTINCT FROM b`, and the statements that nest past
//! `MAX_DEPTH` found before sqlparser builds their tree.
//!
//! Invariants:
//! - A token's span is its place in the larger text, in errors too; the visible tokens
//!   (whitespace left out) are the same tokens at the same places.
//! - The words written in for an `IS` take that IS's place, so an error about them points
//!   at the IS as written.

use sqlparser::dialect::GenericDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use super::error::ParseError;
use super::translate;
use crate::location::Location;

pub(super) static DIALECT: GenericDialect = GenericDialect {};

type Result<T> = std::result::Result<T, ParseError>;

/// `sql`'s tokens, with their places in the larger text that begins at `start`, and the
/// visible ones (no whitespace); the `IS` before each place in `is_operands` SQLite's.
pub(super) fn tokens(
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
            // sqlparser's tokenizer begins its messages with a capital and may end them
            // with a period; ours do neither.
            let mut message = e.message;
            if let Some(first) = message.get_mut(..1) {
                first.make_ascii_lowercase();
            }
            if message.ends_with('.') {
                message.pop();
            }
            ParseError::new(
                Location::new(e.location.line as u32, e.location.column as u32),
                message,
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

pub(super) fn sqlparser_over(tokens: Vec<TokenWithSpan>) -> Parser<'static> {
    // sqlparser grows its own stack; its limit, a few steps per level of ours, is only a
    // backstop behind `too_deep_spots` and translation's count.
    debug_red_zone();
    Parser::new(&DIALECT)
        .with_recursion_limit(4 * translate::MAX_DEPTH)
        .with_tokens_with_locations(tokens)
}

/// sqlparser (and translation) grow the stack (`recursive`) where less than a red zone of
/// it is left, 128 KiB by default. Unoptimized, sqlparser's frames from one such check to
/// the next take more than that (about 135 KiB from a subquery's `parse_query` to its
/// joins; a level of parentheses takes 31 KiB), so a deep text could overflow in a debug
/// build: there, the zone is made 1 MiB (of 8 MiB grown at a time), for the process, as
/// `recursive` keeps it. Optimized frames are a small part of that.
pub(super) fn debug_red_zone() {
    #[cfg(debug_assertions)]
    {
        static ZONE: std::sync::Once = std::sync::Once::new();
        ZONE.call_once(|| {
            recursive::set_minimum_stack_size(1024 * 1024);
            recursive::set_stack_allocation_size(8 * 1024 * 1024);
        });
    }
}

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
pub(super) fn too_deep_spots(tokens: &[TokenWithSpan]) -> Vec<(Location, Location)> {
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

pub(super) fn location(token: &TokenWithSpan) -> Location {
    Location::new(token.span.start.line as u32, token.span.start.column as u32)
}
