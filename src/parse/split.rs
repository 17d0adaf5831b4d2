//! Where the statements of a script end, found with sqlparser's tokenizer so that a `;`
//! inside a string, a quoted name or a comment does not end a statement. Shells use this to
//! decide when typed input is complete and to run a file statement by statement; parsing
//! the statements themselves is `parse()`'s job. Literal VALUES blocks (`rows.rs`) are
//! taken out before tokenizing, and the offsets mapped back.

use sqlparser::tokenizer::{Token, Tokenizer};

use super::tokens::DIALECT;
use crate::location::Location;

/// What the tokenizer found in a piece of script text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// Byte offsets just past each top-level `;`, in order.
    pub ends: Vec<usize>,
    /// True when the text after the last `;` holds only whitespace and comments.
    pub rest_is_blank: bool,
}

/// Splits `text` at its top-level semicolons. Text the tokenizer rejects (an unterminated
/// string, quoted name or block comment) is cut at the first bad token: the statements
/// before it are still found, and the rest is reported as not blank, so a shell keeps
/// reading or lets the parser report the error with its location.
pub fn split_statements(text: &str) -> Split {
    let mut ends = Vec::new();
    let mut blank = true;
    // Literal VALUES blocks (a dump's) hold no `;` outside their strings: the text
    // without them tokenizes far faster, and its offsets map back.
    if let Some((squeezed, taken)) = super::rows::squeeze(text) {
        let mut split = split_statements(&squeezed);
        for end in &mut split.ends {
            *end += taken
                .iter()
                .filter(|(at, _)| at < end)
                .map(|(_, len)| len)
                .sum::<usize>();
        }
        return split;
    }
    let mut offsets = Offsets::new(text);
    let tokens = match Tokenizer::new(&DIALECT, text).tokenize_with_location() {
        Ok(tokens) => tokens,
        Err(e) => {
            // Only the text before the error tokenizes: split that, and the rest is not blank.
            let cut = floor_char_boundary(text, offsets.at(e.location.line, e.location.column));
            let mut split = if cut < text.len() {
                split_statements(&text[..cut])
            } else {
                Split::default()
            };
            split.rest_is_blank = false;
            return split;
        }
    };
    let mut body = Body::default();
    for t in &tokens {
        match &t.token {
            Token::SemiColon if !body.inside() => {
                ends.push(offsets.at(t.span.end.line, t.span.end.column));
                blank = true;
                body = Body::default();
            }
            Token::Whitespace(_) | Token::EOF => {}
            token => {
                blank = false;
                body.next(token);
            }
        }
    }
    Split {
        ends,
        rest_is_blank: blank,
    }
}

/// Where a statement stands with respect to a system's `AS BEGIN … END` body, whose `;`s
/// do not end it: `CREATE SYSTEM …` at the start, then `AS BEGIN` outside parentheses
/// opens the body and the `END` that closes no `CASE` closes it.
#[derive(Debug, Default)]
struct Body {
    /// Tokens seen in the statement (counted up to 2).
    seen: usize,
    /// The statement began with CREATE SYSTEM.
    system: bool,
    parens: usize,
    /// The last token was the `AS` that ends the system's clauses (the first outside
    /// parentheses: the clauses hold no other).
    after_as: bool,
    /// That `AS` was seen.
    seen_as: bool,
    /// Inside the body: how many CASEs are open.
    open: Option<usize>,
    /// The body was closed.
    closed: bool,
}

impl Body {
    fn inside(&self) -> bool {
        self.open.is_some()
    }

    fn next(&mut self, token: &Token) {
        let word = match token {
            Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
            _ => None,
        };
        let word = word.as_deref();
        self.seen += 1;
        match self.seen {
            1 => {
                self.system = word == Some("CREATE");
                return;
            }
            2 => {
                self.system &= word == Some("SYSTEM");
                return;
            }
            _ => {}
        }
        if !self.system || self.closed {
            return;
        }
        if let Some(cases) = &mut self.open {
            match word {
                Some("CASE") => *cases += 1,
                Some("END") if *cases > 0 => *cases -= 1,
                Some("END") => {
                    self.open = None;
                    self.closed = true;
                }
                _ => {}
            }
            return;
        }
        match token {
            Token::LParen => self.parens += 1,
            Token::RParen => self.parens = self.parens.saturating_sub(1),
            _ => {}
        }
        if self.after_as && word == Some("BEGIN") {
            self.open = Some(0);
        }
        self.after_as = !self.seen_as && self.parens == 0 && word == Some("AS");
        self.seen_as |= self.after_as;
    }
}

/// True when `text` holds no statement: only whitespace, comments and semicolons.
pub fn is_blank(text: &str) -> bool {
    // Text whose first mark cannot start a comment or be a `;` holds a statement: no need
    // to tokenize it (a dump's statement of a thousand rows, read line after line).
    match text.trim_start().chars().next() {
        None => return true,
        Some(c) if !matches!(c, '-' | '/' | '#' | ';') => return false,
        Some(_) => {}
    }
    match Tokenizer::new(&DIALECT, text).tokenize() {
        Ok(tokens) => tokens
            .iter()
            .all(|t| matches!(t, Token::Whitespace(_) | Token::SemiColon | Token::EOF)),
        Err(_) => false,
    }
}

/// `text` from its first character that is not a space, a tab or a line's end, and
/// where that character is when `text` begins at `start` of a larger text (lines and
/// columns counted as the tokenizers count them: a `\r` is a column). Parsed there, the
/// rest is the same statement as `text` parsed at `start`, with the same places.
pub fn skip_space(text: &str, start: Location) -> (&str, Location) {
    let mut at = Location::new(start.line.max(1), start.column.max(1));
    for (i, b) in text.bytes().enumerate() {
        match b {
            b' ' | b'\t' | b'\r' => at.column = at.column.saturating_add(1),
            b'\n' => at = Location::new(at.line.saturating_add(1), 1),
            _ => return (&text[i..], at),
        }
    }
    ("", at)
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Turns the tokenizer's 1-based line and character column into byte offsets, walking
/// forward only (token locations come in order).
struct Offsets<'a> {
    text: &'a str,
    line: u64,
    column: u64,
    byte: usize,
}

impl<'a> Offsets<'a> {
    fn new(text: &'a str) -> Self {
        Offsets {
            text,
            line: 1,
            column: 1,
            byte: 0,
        }
    }

    /// The byte offset of a location, or the text's length past its end.
    fn at(&mut self, line: u64, column: u64) -> usize {
        if (line, column) < (self.line, self.column) {
            *self = Offsets::new(self.text);
        }
        for c in self.text[self.byte..].chars() {
            if (self.line, self.column) >= (line, column) {
                break;
            }
            self.byte += c.len_utf8();
            if c == '\n' {
                self.line += 1;
                self.column = 1;
            } else {
                self.column += 1;
            }
        }
        self.byte
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_after_space_parses_to_the_same_places_from_its_first_word() {
        for text in [
            "SELECT nope FROM P",
            "\n\n  SELECT P.x\n FROM P WHERE P.x > nope",
            " \t\r\n\t UPDATE P SET x = 'é' || nope",
            "\r\n\r\n   SPAWN P(x => 1, y => nope)",
            " \r\t SELECT P.x FROM P WHERE P.x > nope",
        ] {
            for start in [Location::new(1, 1), Location::new(3, 9), Location::new(40, 1)] {
                let (rest, at) = skip_space(text, start);
                assert!(!rest.starts_with(char::is_whitespace), "{text:?}");
                let whole = crate::parse::parse_at(text, start).unwrap();
                assert_eq!(
                    crate::parse::parse_at(rest, at).unwrap(),
                    whole,
                    "{text:?} at {start}"
                );
            }
        }
        assert_eq!(skip_space(" \n ", Location::new(2, 2)), ("", Location::new(3, 2)));
    }

    fn pieces(text: &str) -> Vec<&str> {
        let mut start = 0;
        split_statements(text)
            .ends
            .into_iter()
            .map(|end| {
                let piece = &text[start..end];
                start = end;
                piece
            })
            .collect()
    }

    #[test]
    fn splits_at_top_level_semicolons_only() {
        let text = "SELECT 'a;b';\nSELECT \"x;\" -- c;\n FROM T; /* ; */ SELECT 1";
        assert_eq!(pieces(text), ["SELECT 'a;b';", "\nSELECT \"x;\" -- c;\n FROM T;"]);
        assert!(!split_statements(text).rest_is_blank);
        assert!(split_statements("SELECT 1; -- done\n").rest_is_blank);
    }

    #[test]
    fn multibyte_text_keeps_byte_offsets_right() {
        assert_eq!(pieces("SELECT 'é☃';SELECT 2;"), ["SELECT 'é☃';", "SELECT 2;"]);
    }

    #[test]
    fn a_system_body_is_one_statement_with_its_semicolons() {
        let text = "CREATE SYSTEM s WHEN (CAST(1 AS BOOL)) AS BEGIN\n  UPDATE C SET x = CASE WHEN C.x > 0 THEN 1 ELSE 2 END;\n  DESPAWN FROM C WHERE C.x = 1;\nEND;\nSELECT 1;";
        let pieces = pieces(text);
        assert_eq!(pieces.len(), 2, "{pieces:?}");
        assert!(pieces[0].ends_with("END;"), "{pieces:?}");
        assert_eq!(pieces[1], "\nSELECT 1;");
        // One statement after AS, no BEGIN: its `;` ends it.
        assert_eq!(self::pieces("CREATE SYSTEM t AS SELECT 1; SELECT 2;").len(), 2);
        // Unfinished: the body is still open.
        let open = split_statements("CREATE SYSTEM u AS BEGIN SELECT 1;");
        assert!(open.ends.is_empty() && !open.rest_is_blank);
        // BEGIN alone is a transaction, as before.
        assert_eq!(self::pieces("BEGIN; SELECT 1; END;").len(), 3);
        // Only the AS that ends the clauses opens a body: not an alias named begin.
        assert_eq!(
            self::pieces("CREATE SYSTEM s AS SELECT 1 AS begin; SELECT 2;").len(),
            2
        );
    }

    #[test]
    fn an_unterminated_string_leaves_the_statements_before_it() {
        let split = split_statements("SELECT 1; SELECT 'abc;");
        assert_eq!(split.ends, [9]);
        assert!(!split.rest_is_blank);
        assert!(!split_statements("/* open; ").rest_is_blank);
    }

    #[test]
    fn blank_means_comments_whitespace_and_semicolons() {
        assert!(is_blank("  -- x;\n /* y */ ;; \n"));
        assert!(!is_blank("-- x\nSELECT 1"));
        assert!(!is_blank("; SELECT 1;"));
    }
}
