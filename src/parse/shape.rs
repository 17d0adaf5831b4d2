//! The shape of a statement's text: the text with its number and `'text'` literals masked,
//! so that texts which differ only in those constants have one shape, and one plan can
//! serve them all with the constants given as parameter values (`plan::lift`, and the
//! connection's kept texts).
//!
//! Invariants:
//! - A shape is made only of one statement's text (a `;` may end it), at most `LONGEST`
//!   bytes, that the direct parser's tokenizer reads whole and that has no parameter of
//!   its own (`?`); of any other text, none.
//! - Masking keeps every character's place: a number's characters become `0`s, a text's
//!   characters between its quotes `_`s. Two texts of one shape have the same tokens at
//!   the same lines and columns, the masked literals' values aside, so a location in one
//!   (an error's) is the same place in the other.
//! - A text literal holding a newline or a non-ASCII character is not masked (masking it
//!   would move the columns or lines after it): it is part of the shape as written.

use super::Literal;
use super::lex::{Kind, Lexer, unquote};
use crate::location::Location;

/// A statement text with its literals masked (`key`), and where each masked one was.
#[derive(Clone, Debug)]
pub struct Shape {
    /// The text, each masked literal's characters replaced in place.
    pub key: String,
    /// The masked literals, in the order of the text.
    pub literals: Vec<MaskedLiteral>,
}

/// A literal masked in a shape: where it is, and what kind of token it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaskedLiteral {
    /// Where the literal starts (a `-` before a number is not part of it).
    pub at: Location,
    start: u32,
    end: u32,
    /// A `'text'`, else a number.
    text: bool,
    /// Right after a `-`, which the parser may have folded into it (`-5`) or not (`x - 5`).
    pub after_minus: bool,
}

impl MaskedLiteral {
    /// Its characters in `sql`, a text of its shape.
    pub fn written<'s>(&self, sql: &'s str) -> &'s str {
        sql.get(self.start as usize..self.end as usize).unwrap_or("")
    }

    /// The value this literal has in `sql` (a text of the shape it was found in), read as
    /// the parser reads it; for a number after a `-` that the parser folds into it
    /// (`-5`), `negated`. `None` when `sql` holds no such literal there.
    pub fn value(&self, sql: &str, negated: bool) -> Option<Literal> {
        let token = sql.get(self.start as usize..self.end as usize)?;
        match (self.text, negated) {
            (true, false) => token.starts_with('\'').then(|| Literal::Text(unquote(token))),
            (true, true) => None,
            (false, false) => Literal::number(token),
            (false, true) => Literal::number(&format!("-{token}")),
        }
    }
}

/// The longest text a shape is made of.
pub const LONGEST: usize = 16 * 1024;

/// The shape of `sql`, which begins at `start` of a larger text: `None` when it is longer
/// than `LONGEST`, when the direct parser's tokenizer does not read all of it, when it
/// has a parameter or more than one statement, or when it has no literal to mask.
pub fn shape(sql: &str, start: Location) -> Option<Shape> {
    if sql.len() > LONGEST {
        return None;
    }
    let mut lexer = Lexer::without_keywords(sql, start);
    let mut literals = Vec::new();
    let mut last = Kind::Eof;
    loop {
        let t = lexer.next_token();
        let after = std::mem::replace(&mut last, t.kind);
        match t.kind {
            Kind::Eof => break,
            Kind::Bad | Kind::Param => return None,
            // Another statement after a `;`.
            _ if after == Kind::Semi => return None,
            Kind::Number => {}
            // Masking a text of other characters would move what follows it.
            Kind::Text
                if sql.as_bytes()[t.start as usize..t.end as usize]
                    .iter()
                    .all(|&b| b.is_ascii() && b != b'\n' && b != b'\r') => {}
            _ => continue,
        }
        literals.push(MaskedLiteral {
            at: t.at,
            start: t.start,
            end: t.end,
            text: t.kind == Kind::Text,
            after_minus: after == Kind::Minus,
        });
    }
    if literals.is_empty() {
        return None;
    }
    let mut key = Vec::with_capacity(sql.len());
    let mut from = 0;
    for l in &literals {
        let (start, end) = (l.start as usize, l.end as usize);
        key.extend_from_slice(&sql.as_bytes()[from..start]);
        if l.text {
            key.push(b'\'');
            key.resize(key.len() + (end - start - 2), b'_');
            key.push(b'\'');
        } else {
            key.resize(key.len() + (end - start), b'0');
        }
        from = end;
    }
    key.extend_from_slice(&sql.as_bytes()[from..]);
    // Only ASCII literals were replaced, by ASCII, at character boundaries.
    let key = String::from_utf8(key).ok()?;
    Some(Shape { key, literals })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(sql: &str) -> Option<String> {
        shape(sql, Location::new(1, 1)).map(|s| s.key)
    }

    #[test]
    fn literals_are_masked_in_place() {
        assert_eq!(
            key("SELECT P.x FROM P WHERE id = 4242 AND P.name = 'it''s'").as_deref(),
            Some("SELECT P.x FROM P WHERE id = 0000 AND P.name = '_____'")
        );
        assert_eq!(
            key("UPDATE P SET x = -1.5e3").as_deref(),
            Some("UPDATE P SET x = -00000")
        );
        // Texts that differ only in constants of the same lengths share a shape.
        assert_eq!(key("SPAWN P(x => 1.25)"), key("SPAWN P(x => 9.75)"));
        assert_ne!(key("SPAWN P(x => 1.25)"), key("SPAWN P(x => 1.5)"));
        assert_ne!(key("SPAWN P(x => 1.25)"), key("SPAWN Q(x => 1.25)"));
    }

    #[test]
    fn texts_without_a_shape() {
        // No literal, a parameter, a character the tokenizer leaves to sqlparser.
        assert_eq!(key("SELECT P.x FROM P"), None);
        assert_eq!(key("SELECT P.x FROM P WHERE id = ? AND P.x > 1"), None);
        assert_eq!(key("SELECT P.x FROM P WHERE id = $1"), None);
        assert_eq!(key("SELECT P.x FROM P WHERE P.x > 1 /* c */"), None);
        // Two statements; a text past LONGEST.
        assert_eq!(key("SELECT 1; SELECT 2"), None);
        assert_eq!(key("SELECT 1;").as_deref(), Some("SELECT 0;"));
        let long = format!("SELECT 1{}", " ".repeat(LONGEST));
        assert_eq!(key(&long), None);
    }

    #[test]
    fn texts_that_would_move_places_stay_as_written() {
        assert_eq!(
            key("SELECT 'é' AS a, 'b\nc' AS b, 'd' AS d").as_deref(),
            Some("SELECT 'é' AS a, 'b\nc' AS b, '_' AS d")
        );
    }

    #[test]
    fn values_are_read_as_the_parser_reads_them() {
        let sql = "UPDATE P SET x = -2.5, n = 7, s = 'a''b' WHERE id = 9223372036854775808";
        let s = shape(sql, Location::new(1, 1)).unwrap();
        let values: Vec<_> = s.literals.iter().map(|l| l.value(sql, false)).collect();
        assert_eq!(
            values,
            [
                Some(Literal::Float(2.5)),
                Some(Literal::Int(7)),
                Some(Literal::Text("a'b".into())),
                Some(Literal::Float(9223372036854775808.0)),
            ]
        );
        assert_eq!(s.literals[0].value(sql, true), Some(Literal::Float(-2.5)));
        assert_eq!(s.literals[0].at, Location::new(1, 19));
        assert_eq!(s.literals[2].value(sql, true), None);
    }
}
