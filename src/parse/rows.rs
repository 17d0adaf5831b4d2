//! VALUES blocks of literal rows (what `.dump` writes, a thousand rows a statement), read
//! without sqlparser: tokenizing and parsing them cell by cell was most of what `.read`
//! of a dump cost. A block is read here when every cell is a plain literal (NULL, TRUE,
//! FALSE, a decimal number, a '…' text without backslashes); anything else leaves it to
//! sqlparser.
//!
//! Invariants:
//! - The rows read here are the rows sqlparser and translation would give: the same
//!   literals (numbers through `Literal::number`, `-5` folded as translation folds it)
//!   at the same locations.
//! - The text handed on to sqlparser keeps every line and column outside the blocks (a
//!   block becomes a marker row, its own newlines and the spaces of its last line), so
//!   every other location is where it was. Errors are sqlparser's, about the text as
//!   written: the caller parses it again without the reader when the marked text fails.
//! - `squeeze` takes the blocks out for a splitter, with what maps its offsets back.

use super::ast::{Expr, ExprKind, Ident, Literal};
use crate::location::Location;

/// Blocks shorter than this are left to sqlparser: not worth a marker.
const MIN_ROWS: usize = 8;

/// The name a marker row holds (a quoted name no one types: it starts with NUL), then the
/// block's number.
pub(super) const MARKER: &str = "\0";

/// A script with its literal VALUES blocks taken out.
pub(super) struct Blanked {
    /// The text for sqlparser.
    pub text: String,
    /// Each block's rows, by number.
    pub blocks: Vec<Vec<Vec<Expr>>>,
}

/// Takes the literal VALUES blocks out of `sql` (which begins at `start` in its file),
/// each replaced by the marker row `("\0ecsql rows K")` padded to keep lines and columns.
/// `None` when there is none.
pub(super) fn blank_values(sql: &str, start: Location) -> Option<Blanked> {
    let mut out: Option<Blanked> = None;
    let mut copied = 0;
    for (open, block) in blocks(sql, start) {
        let blanked = out.get_or_insert_with(|| Blanked {
            text: String::with_capacity(sql.len()),
            blocks: Vec::new(),
        });
        let marker = format!("(\"{MARKER}{}\")", blanked.blocks.len());
        let span = &sql[open..block.end];
        // The marker on the first line, the block's newlines, and on its last line as
        // many spaces as it had characters there (so what follows keeps its column). A
        // block on one line must have room for the marker.
        let newlines = span.bytes().filter(|&b| b == b'\n').count();
        let last = span.rsplit('\n').next().unwrap_or("").chars().count();
        if newlines == 0 && marker.chars().count() > last {
            continue;
        }
        blanked.text.push_str(&sql[copied..open]);
        blanked.text.push_str(&marker);
        if newlines == 0 {
            blanked
                .text
                .extend(std::iter::repeat_n(' ', last - marker.chars().count()));
        } else {
            blanked.text.extend(std::iter::repeat_n('\n', newlines));
            blanked.text.extend(std::iter::repeat_n(' ', last));
        }
        copied = block.end;
        blanked.blocks.push(block.rows);
    }
    let mut blanked = out?;
    blanked.text.push_str(&sql[copied..]);
    Some(blanked)
}

/// `sql` without its literal VALUES blocks' rows, for a splitter (rows hold no `;`
/// outside their strings), with where each block was taken out and how many bytes it
/// held: `(offset in the squeezed text, length)`. `None` when there is none, or when the
/// text holds what this reader's skipping of strings and comments may read otherwise
/// than sqlparser (block comments, which nest; `$` quoting; backslashes; backticks): a
/// splitter has no parse to check its blocks against.
pub(super) fn squeeze(sql: &str) -> Option<(String, Vec<(usize, usize)>)> {
    if sql.contains("/*") || sql.contains(['$', '\\', '`']) {
        return None;
    }
    let found = blocks(sql, Location::new(1, 1));
    if found.is_empty() {
        return None;
    }
    let mut text = String::with_capacity(sql.len() / 8);
    let mut taken = Vec::with_capacity(found.len());
    let mut copied = 0;
    for (open, block) in found {
        text.push_str(&sql[copied..open]);
        taken.push((text.len(), block.end - open));
        copied = block.end;
    }
    text.push_str(&sql[copied..]);
    Some((text, taken))
}

/// A block read: its rows, and the byte just past its last row.
struct Block {
    rows: Vec<Vec<Expr>>,
    end: usize,
}

/// Every literal VALUES block of `sql`: the byte of its first row's `(`, and the block.
fn blocks(sql: &str, start: Location) -> Vec<(usize, Block)> {
    let bytes = sql.as_bytes();
    let mut found = Vec::new();
    // One reader for the whole text: its locations only move forward.
    let mut reader = Reader::new(sql, start);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            // Quoted text and names, and comments, are skipped whole.
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < bytes.len() && bytes[i] != q {
                    i += 1;
                }
                i += 1;
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'(' => {
                let mut j = skip_space(bytes, i + 1);
                let word_end = j + 6;
                if bytes.len() >= word_end
                    && bytes[j..word_end].eq_ignore_ascii_case(b"VALUES")
                    && !bytes
                        .get(word_end)
                        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
                {
                    j = skip_space(bytes, word_end);
                    if let Some(block) = reader.read_block(j)
                        && block.rows.len() >= MIN_ROWS
                    {
                        i = block.end;
                        found.push((j, block));
                        continue;
                    }
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    found
}

fn skip_space(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Reads literal rows, knowing each byte's line and column.
struct Reader<'a> {
    sql: &'a str,
    start: Location,
    /// Line and column of byte `at` (columns count characters).
    line: u32,
    column: u32,
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(sql: &'a str, start: Location) -> Reader<'a> {
        Reader {
            sql,
            start,
            line: 1,
            column: 1,
            at: 0,
        }
    }

    /// The location of byte `to`, in the file: counted on from the last one asked (from
    /// the start again for one before it, after a block that was not all literals).
    fn location(&mut self, to: usize) -> Location {
        if to < self.at {
            (self.line, self.column, self.at) = (1, 1, 0);
        }
        for c in self.sql[self.at..to].chars() {
            if c == '\n' {
                self.line += 1;
                self.column = 1;
            } else {
                self.column += 1;
            }
        }
        self.at = to;
        if self.line == 1 {
            Location::new(self.start.line.max(1), self.column + self.start.column.max(1) - 1)
        } else {
            Location::new(self.line + self.start.line.max(1) - 1, self.column)
        }
    }

    /// Rows from byte `i` (a row's `(`) up to the `)` that closes the block; `None` when
    /// anything there is not a plain literal row.
    fn read_block(&mut self, mut i: usize) -> Option<Block> {
        let bytes = self.sql.as_bytes();
        let mut rows = Vec::new();
        let mut width = None;
        loop {
            if bytes.get(i) != Some(&b'(') {
                return None;
            }
            let mut row = Vec::with_capacity(width.unwrap_or(4));
            i = skip_space(bytes, i + 1);
            loop {
                let (expr, next) = self.literal(i)?;
                row.push(expr);
                i = skip_space(bytes, next);
                match bytes.get(i)? {
                    b',' => i = skip_space(bytes, i + 1),
                    b')' => break,
                    _ => return None,
                }
            }
            // Rows of another width are sqlparser's to refuse.
            if *width.get_or_insert(row.len()) != row.len() {
                return None;
            }
            rows.push(row);
            let end = i + 1;
            i = skip_space(bytes, end);
            match bytes.get(i)? {
                b',' => i = skip_space(bytes, i + 1),
                b')' => return Some(Block { rows, end }),
                _ => return None,
            }
        }
    }

    /// One literal at byte `i`, and the byte past it.
    fn literal(&mut self, i: usize) -> Option<(Expr, usize)> {
        let bytes = self.sql.as_bytes();
        let word_end = |from: usize| {
            let mut j = from;
            while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                j += 1;
            }
            j
        };
        let (literal, end) = match bytes.get(i)? {
            b'\'' => {
                let mut j = i + 1;
                let mut text = String::new();
                let mut from = j;
                loop {
                    match bytes.get(j)? {
                        b'\'' if bytes.get(j + 1) == Some(&b'\'') => {
                            text.push_str(&self.sql[from..=j]);
                            j += 2;
                            from = j;
                        }
                        b'\'' => break,
                        b'\\' => return None,
                        _ => j += 1,
                    }
                }
                text.push_str(&self.sql[from..j]);
                (Literal::Text(text), j + 1)
            }
            b'-' | b'0'..=b'9' => {
                let mut j = i + usize::from(bytes[i] == b'-');
                let digits = |j: &mut usize| {
                    let from = *j;
                    while *j < bytes.len() && bytes[*j].is_ascii_digit() {
                        *j += 1;
                    }
                    *j > from
                };
                if !digits(&mut j) {
                    return None;
                }
                if bytes.get(j) == Some(&b'.') {
                    j += 1;
                    if !digits(&mut j) {
                        return None;
                    }
                }
                // A number run into a name (`1a`, an exponent) is left to sqlparser.
                if word_end(j) != j || bytes.get(j) == Some(&b'.') {
                    return None;
                }
                // A negative number is placed at its digits, as sqlparser places `-5`.
                let at = self.location(i + usize::from(bytes[i] == b'-'));
                return Some((
                    Expr::new(ExprKind::Literal(Literal::number(&self.sql[i..j])?), at),
                    j,
                ));
            }
            _ => {
                let j = word_end(i);
                let literal = match &self.sql[i..j] {
                    w if w.eq_ignore_ascii_case("NULL") => Literal::Null,
                    w if w.eq_ignore_ascii_case("TRUE") => Literal::Bool(true),
                    w if w.eq_ignore_ascii_case("FALSE") => Literal::Bool(false),
                    _ => return None,
                };
                (literal, j)
            }
        };
        let at = self.location(i);
        Some((Expr::new(ExprKind::Literal(literal), at), end))
    }
}

/// The block number a marker row names, if `row` is one.
pub(super) fn marker(row: &[Expr]) -> Option<usize> {
    match row {
        [
            Expr {
                kind: ExprKind::Column(name),
                ..
            },
        ] => match name.as_slice() {
            [
                Ident {
                    value, quoted: true, ..
                },
            ] => value.strip_prefix(MARKER)?.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}
