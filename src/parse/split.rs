//! Where the statements of a script end, found with sqlparser's tokenizer so that a `;`
//! inside a string, a quoted name or a comment does not end a statement. Shells use this to
//! decide when typed input is complete and to run a file statement by statement; parsing
//! the statements themselves is `parse()`'s job.

use sqlparser::tokenizer::{Token, Tokenizer};

use super::DIALECT;

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
    for t in &tokens {
        match &t.token {
            Token::SemiColon => {
                ends.push(offsets.at(t.span.end.line, t.span.end.column));
                blank = true;
            }
            Token::Whitespace(_) | Token::EOF => {}
            _ => blank = false,
        }
    }
    Split {
        ends,
        rest_is_blank: blank,
    }
}

/// True when `text` holds no statement: only whitespace, comments and semicolons.
pub fn is_blank(text: &str) -> bool {
    match Tokenizer::new(&DIALECT, text).tokenize() {
        Ok(tokens) => tokens
            .iter()
            .all(|t| matches!(t, Token::Whitespace(_) | Token::SemiColon | Token::EOF)),
        Err(_) => false,
    }
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
