//! The tokenizer of the direct parser (`direct.rs`): text in, a flat list of tokens out,
//! each a kind, a byte range of the text and the line and column it starts at.
//!
//! It reads only the plain part of the language: ASCII words, `"quoted"` names, numbers,
//! `'texts'`, `?` and `?N` parameters, `--` comments and the operators `+ - * / % || = <>
//! != < <= > >=` and `=>`. Anything else (other quotes and prefixes, `::`, `->`, `/* */`, `$`,
//! `:`, `@`, a number run into a word, any character sqlparser would read as part of a
//! longer operator) is `None`: the text goes to sqlparser whole, so every token this
//! returns is one sqlparser's tokenizer makes of the same characters, at the same place.
//! Nothing is allocated per token; texts and names are unescaped when the parser reads
//! them.

use std::cmp::Ordering;
use std::sync::OnceLock;

use sqlparser::keywords::{ALL_KEYWORDS, ALL_KEYWORDS_INDEX, Keyword};

use crate::location::Location;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// An unquoted word: a name or a keyword.
    Word,
    /// A `"quoted"` name.
    Quoted,
    Number,
    /// A `'text'`.
    Text,
    /// `?` or `?N`.
    Param,
    LParen,
    RParen,
    Comma,
    Dot,
    Semi,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Concat,
    Eq,
    /// `=>`, naming a SPAWN argument.
    Arrow,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    Eof,
    /// A character this tokenizer does not read: the parser gives up when it meets one.
    Bad,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Tok {
    pub kind: Kind,
    /// Byte range in the text.
    pub start: u32,
    pub end: u32,
    pub at: Location,
    /// For an unquoted word, the keyword it is (sqlparser's list), if any.
    pub keyword: Option<Keyword>,
}

impl Tok {
    /// A placeholder for a slot no token was read into yet.
    pub const NONE: Tok = Tok {
        kind: Kind::Eof,
        start: 0,
        end: 0,
        at: Location::new(1, 1),
        keyword: None,
    };
}

/// The tokenizer's place in a text: tokens are read one at a time, as the parser asks for
/// them, so a text it gives up on early is not read to its end.
pub(super) struct Lexer<'a> {
    sql: &'a str,
    i: usize,
    line: u32,
    column: u32,
    /// Set once a character this tokenizer does not read was met: every token after it
    /// is `Bad`.
    stopped: bool,
    /// Whether words are looked up among the keywords (`Tok::keyword`); a shape
    /// (`shape.rs`) needs none.
    keywords: bool,
}

impl<'a> Lexer<'a> {
    /// A tokenizer of `sql`, which begins at `start` of a larger text. Lines and columns
    /// wrap past `u32::MAX` as sqlparser's (counted in `u64`, then cut to `u32`) do.
    pub(super) fn new(sql: &'a str, start: Location) -> Lexer<'a> {
        Lexer {
            sql,
            i: 0,
            line: start.line.max(1),
            column: start.column.max(1),
            stopped: sql.len() >= u32::MAX as usize,
            keywords: true,
        }
    }

    /// `new`, without looking words up among the keywords: every word's `keyword` is
    /// `None`.
    pub(super) fn without_keywords(sql: &'a str, start: Location) -> Lexer<'a> {
        Lexer {
            keywords: false,
            ..Lexer::new(sql, start)
        }
    }

    /// The next token: `Eof` at the end, `Bad` from the first character not read here on.
    pub(super) fn next_token(&mut self) -> Tok {
        let token = if self.stopped { None } else { self.scan() };
        token.unwrap_or_else(|| {
            self.stopped = true;
            Tok {
                kind: Kind::Bad,
                start: self.i as u32,
                end: self.i as u32,
                at: Location::new(self.line, self.column),
                keyword: None,
            }
        })
    }

    fn scan(&mut self) -> Option<Tok> {
        let sql = self.sql;
        let bytes = sql.as_bytes();
        let (mut i, mut line, mut column) = (self.i, self.line, self.column);
        loop {
            let Some(&b) = bytes.get(i) else {
                (self.i, self.line, self.column) = (i, line, column);
                return Some(Tok {
                    kind: Kind::Eof,
                    start: i as u32,
                    end: i as u32,
                    at: Location::new(line, column),
                    keyword: None,
                });
            };
            let at = Location::new(line, column);
            let begin = i;
            let kind = match b {
                b' ' | b'\t' | b'\r' => {
                    i += 1;
                    column = column.wrapping_add(1);
                    continue;
                }
                b'\n' => {
                    i += 1;
                    line = line.wrapping_add(1);
                    column = 1;
                    continue;
                }
                b'-' if bytes.get(i + 1) == Some(&b'-') => {
                    // A comment to the end of the line (its newline is read as whitespace).
                    while i < bytes.len() && bytes[i] != b'\n' {
                        if bytes[i] & 0xC0 != 0x80 {
                            column = column.wrapping_add(1);
                        }
                        i += 1;
                    }
                    continue;
                }
                b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                    i += 1;
                    while i < bytes.len() && WORD[usize::from(bytes[i])] {
                        i += 1;
                    }
                    // A word run into a quote is a prefixed literal (N'…', X'…', E'…', …); one
                    // run into `$`, `#`, `@` or a non-ASCII letter is a longer word there.
                    if matches!(bytes.get(i), Some(b'\'' | b'"' | b'$' | b'#' | b'@' | 0x80..)) {
                        return None;
                    }
                    Kind::Word
                }
                b'0'..=b'9' => {
                    i = number_end(bytes, i)?;
                    Kind::Number
                }
                b'\'' | b'"' => {
                    i = quoted_end(bytes, i, b)?;
                    if b == b'"' && i == begin + 2 {
                        return None;
                    }
                    if b == b'\'' { Kind::Text } else { Kind::Quoted }
                }
                b'?' => {
                    i += 1;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                    if bytes.get(i).is_some_and(u8::is_ascii_alphabetic) {
                        return None;
                    }
                    Kind::Param
                }
                b'(' => single(&mut i, Kind::LParen),
                b')' => single(&mut i, Kind::RParen),
                b',' => single(&mut i, Kind::Comma),
                b';' => single(&mut i, Kind::Semi),
                b'.' => {
                    // `.5` is a number, and `._` (after a word) a period before a name that
                    // begins with `_`: both are left to sqlparser.
                    if matches!(bytes.get(i + 1), Some(b'0'..=b'9' | b'_')) {
                        return None;
                    }
                    single(&mut i, Kind::Dot)
                }
                b'+' => single(&mut i, Kind::Plus),
                b'*' => single(&mut i, Kind::Star),
                b'%' => single(&mut i, Kind::Percent),
                // Each operator is read unless the characters after it make a longer one in
                // sqlparser's tokenizer (`->`, `/*`, `//`, `||/`, `==`, `<=>`, `<<`, `<@`, `>>`);
                // those are left to it.
                b'-' => operator(bytes, &mut i, 1, b">", Kind::Minus)?,
                b'/' => operator(bytes, &mut i, 1, b"*/", Kind::Slash)?,
                b'|' if bytes.get(i + 1) == Some(&b'|') => operator(bytes, &mut i, 2, b"/", Kind::Concat)?,
                b'=' if bytes.get(i + 1) == Some(&b'>') => {
                    i += 2;
                    Kind::Arrow
                }
                b'=' => operator(bytes, &mut i, 1, b"=", Kind::Eq)?,
                b'!' if bytes.get(i + 1) == Some(&b'=') => operator(bytes, &mut i, 2, b"", Kind::NotEq)?,
                b'<' => match bytes.get(i + 1) {
                    Some(b'=') => operator(bytes, &mut i, 2, b">", Kind::LtEq)?,
                    Some(b'>') => operator(bytes, &mut i, 2, b"", Kind::NotEq)?,
                    _ => operator(bytes, &mut i, 1, b"<@", Kind::Lt)?,
                },
                b'>' => match bytes.get(i + 1) {
                    Some(b'=') => operator(bytes, &mut i, 2, b"", Kind::GtEq)?,
                    _ => operator(bytes, &mut i, 1, b">", Kind::Gt)?,
                },
                _ => return None,
            };
            // Columns count characters: every byte that does not continue a UTF-8 sequence.
            // Only texts and quoted names hold those, and newlines; every other token is
            // ASCII on one line.
            if matches!(kind, Kind::Text | Kind::Quoted) {
                for &c in &bytes[begin..i] {
                    if c == b'\n' {
                        line = line.wrapping_add(1);
                        column = 1;
                    } else if c & 0xC0 != 0x80 {
                        column = column.wrapping_add(1);
                    }
                }
            } else {
                column = column.wrapping_add((i - begin) as u32);
            }
            let keyword = if kind == Kind::Word && self.keywords {
                keyword(&sql[begin..i])
            } else {
                None
            };
            (self.i, self.line, self.column) = (i, line, column);
            return Some(Tok {
                kind,
                start: begin as u32,
                end: i as u32,
                at,
                keyword,
            });
        }
    }
}

fn single(i: &mut usize, kind: Kind) -> Kind {
    *i += 1;
    kind
}

/// An operator of `len` bytes at `i`, unless the next character is one of `longer`,
/// which would make it a longer one.
fn operator(bytes: &[u8], i: &mut usize, len: usize, longer: &[u8], kind: Kind) -> Option<Kind> {
    if bytes.get(*i + len).is_some_and(|c| longer.contains(c)) {
        return None;
    }
    *i += len;
    Some(kind)
}

/// The end of the number at `i`: digits, an optional `.` and digits, an optional exponent
/// (`e`, a sign, digits). A number run into a letter, a `_`, a `.` or a quote (`1L`,
/// `0x1F`, `1.2.3`) is not read here.
fn number_end(bytes: &[u8], mut i: usize) -> Option<usize> {
    let digits = |i: &mut usize| {
        while *i < bytes.len() && bytes[*i].is_ascii_digit() {
            *i += 1;
        }
    };
    digits(&mut i);
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        digits(&mut i);
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(bytes.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if bytes.get(j).is_some_and(u8::is_ascii_digit) {
            i = j;
            digits(&mut i);
        }
    }
    match bytes.get(i) {
        Some(c) if c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'\'' | b'"' | 0x80..) => None,
        _ => Some(i),
    }
}

/// The end (past the closing quote) of the quoted text or name at `i`, whose quotes are
/// `quote`; a doubled quote inside is one quote. `None` when it is not closed.
fn quoted_end(bytes: &[u8], mut i: usize, quote: u8) -> Option<usize> {
    i += 1;
    loop {
        match bytes.get(i)? {
            &c if c == quote => {
                if bytes.get(i + 1) == Some(&quote) {
                    i += 2;
                } else {
                    return Some(i + 1);
                }
            }
            _ => i += 1,
        }
    }
}

/// The value of a quoted token: its text between the quotes, with doubled quotes single.
pub(super) fn unquote(token: &str) -> String {
    let quote = &token[..1];
    let inner = &token[1..token.len() - 1];
    if inner.contains(quote) {
        inner.replace(&format!("{quote}{quote}"), quote)
    } else {
        inner.to_owned()
    }
}

/// sqlparser's keyword for the ASCII word `word` (any case), if it is one.
///
/// Every word of a statement is looked up, so this is one probe of an open-addressed
/// table built on first use, keyed by the word's upper-case bytes packed into a `u128`
/// (a binary search among a letter's keywords took ~35 ns a word, an eighth of parsing a
/// short SELECT). The few keywords longer than 16 bytes are searched for as before.
fn keyword(word: &str) -> Option<Keyword> {
    const BITS: u32 = 12;
    // Open addressing needs empty slots: fewer keywords than half the slots.
    const _: () = assert!(ALL_KEYWORDS.len() < 1 << (BITS - 1));
    /// The slots (each a keyword's index in ALL_KEYWORDS + 1; 0 when empty), and each
    /// keyword's packed bytes by its index: 8 KiB and 18 KiB, so a probe stays in cache.
    struct Table {
        slots: Vec<u16>,
        packed: Vec<u128>,
    }
    static TABLE: OnceLock<Table> = OnceLock::new();
    let slot = |key: u128| {
        let mixed = (key as u64 ^ (key >> 64) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (mixed >> (64 - BITS)) as usize
    };
    let word = word.as_bytes();
    let Some(key) = packed(word) else {
        return long_keyword(word);
    };
    let table = TABLE.get_or_init(|| {
        let packed: Vec<u128> = ALL_KEYWORDS
            .iter()
            .map(|k| packed(k.as_bytes()).unwrap_or(0))
            .collect();
        let mut slots = vec![0u16; 1 << BITS];
        for (i, &key) in packed.iter().enumerate() {
            if key != 0 {
                let mut s = slot(key);
                while slots[s] != 0 {
                    s = (s + 1) & ((1 << BITS) - 1);
                }
                slots[s] = i as u16 + 1;
            }
        }
        Table { slots, packed }
    });
    let mut s = slot(key);
    loop {
        let i = usize::from(*table.slots.get(s)?).checked_sub(1)?;
        if table.packed.get(i) == Some(&key) {
            return ALL_KEYWORDS_INDEX.get(i).copied();
        }
        s = (s + 1) & ((1 << BITS) - 1);
    }
}

/// The bytes a word goes on with after its first: ASCII letters, digits and `_`.
static WORD: [bool; 256] = {
    let mut word = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        word[b] = c.is_ascii_alphanumeric() || c == b'_';
        b += 1;
    }
    word
};

/// `word`'s bytes upper-cased and packed into a `u128`, when it has 1 to 16 of them, all
/// of a word (`WORD`).
///
/// Upper-cased sixteen at a time: among a word's bytes (and the zeros after them) only the
/// lower-case letters (`0x61..=0x7A`) have both bits `0x40` and `0x20` set, and clearing
/// `0x20` there upper-cases them.
fn packed(word: &[u8]) -> Option<u128> {
    if word.is_empty() || word.len() > 16 {
        return None;
    }
    let mut bytes = [0u8; 16];
    bytes[..word.len()].copy_from_slice(word);
    let key = u128::from_le_bytes(bytes);
    let lower = key & (key >> 1) & u128::from_le_bytes([0x20; 16]);
    Some(key ^ lower)
}

/// `keyword` for a word longer than 16 bytes: a binary search among the keywords with
/// its first letter.
fn long_keyword(word: &[u8]) -> Option<Keyword> {
    // Where the keywords beginning with each letter start in the sorted list (and, last,
    // where the list ends).
    static STARTS: OnceLock<[usize; 27]> = OnceLock::new();
    let starts = STARTS.get_or_init(|| {
        std::array::from_fn(|l| ALL_KEYWORDS.partition_point(|k| k.as_bytes()[0] < b'A' + l as u8))
    });
    let letter = usize::from(word.first()?.to_ascii_uppercase().checked_sub(b'A')?);
    let (from, to) = (*starts.get(letter)?, *starts.get(letter + 1)?);
    let i = ALL_KEYWORDS[from..to]
        .binary_search_by(|k| {
            let k = k.as_bytes();
            for (a, b) in k.iter().zip(word) {
                match a.cmp(&b.to_ascii_uppercase()) {
                    Ordering::Equal => {}
                    other => return other,
                }
            }
            k.len().cmp(&word.len())
        })
        .ok()?;
    ALL_KEYWORDS_INDEX.get(from + i).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keyword of `word` by reading the whole list.
    fn naive(word: &str) -> Option<Keyword> {
        let i = ALL_KEYWORDS.iter().position(|k| k.eq_ignore_ascii_case(word))?;
        Some(ALL_KEYWORDS_INDEX[i])
    }

    #[test]
    fn every_keyword_is_found_in_any_case_and_no_other_word_is() {
        for k in ALL_KEYWORDS {
            let lower = k.to_ascii_lowercase();
            let mixed: String = k
                .chars()
                .enumerate()
                .map(|(i, c)| if i % 2 == 0 { c.to_ascii_lowercase() } else { c })
                .collect();
            for w in [k.to_string(), lower, mixed] {
                assert_eq!(keyword(&w), naive(&w), "{w}");
                assert!(keyword(&w).is_some(), "{w}");
            }
            // The same word one letter longer or shorter, or with one letter changed.
            for w in [format!("{k}X"), format!("{k}_"), k[..k.len() - 1].to_string()] {
                assert_eq!(keyword(&w), naive(&w), "{w}");
            }
        }
        for w in ["Position", "x", "id", "_", "A1", "SELECTX", "ABCDEFGHIJKLMNOPQ"] {
            assert_eq!(keyword(w), naive(w), "{w}");
        }
    }
}
