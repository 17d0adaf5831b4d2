//! The shape of a statement's text: the text with its number and `'text'` literals masked,
//! so that texts which differ only in those constants have one shape, and one plan can
//! serve them all with the constants given as parameter values (`plan::lift`, and the
//! connection's kept texts).
//!
//! Invariants:
//! - A shape is made only of one statement's text (a `;` may end it), at most `LONGEST`
//!   bytes, that the direct parser's tokenizer reads whole and that has no parameter of
//!   its own (`?`); of any other text, none.
//! - Masking writes a number as `0` and a text as `'_'`, whatever their lengths: two texts
//!   of one shape have the same tokens, the masked literals' values aside (`0` and `'_'`
//!   stand only where a literal token was, as the tokenizer reads neither elsewhere but
//!   inside a longer token). A place in one text is the same token's place in the other
//!   once moved by the widths of the literals before it on its line (`place_in`).
//! - A text literal holding a newline or a non-ASCII character is not masked (its
//!   characters and lines would not be counted as its bytes): it is part of the shape as
//!   written, so a literal never spans lines.

use super::Literal;
use super::lex::{Kind, Lexer, unquote};
use crate::location::Location;

/// A statement text with its literals masked (`key`), and where each masked one was.
#[derive(Clone, Debug)]
pub struct Shape {
    /// The text, each masked literal replaced by `0` (a number) or `'_'` (a text)
    /// whatever its width.
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
    /// How many characters it has (ASCII: as many as bytes).
    pub fn width(&self) -> u32 {
        self.end - self.start
    }

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
            (false, true) => Literal::negative(token),
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
        key.extend_from_slice(if l.text { b"'_'" } else { b"0" });
        from = end;
    }
    key.extend_from_slice(&sql.as_bytes()[from..]);
    // Only ASCII literals were replaced, by ASCII, at character boundaries.
    let key = String::from_utf8(key).ok()?;
    Some(Shape { key, literals })
}

/// `at`, a place in a text of a shape whose literals are `from`, as the same token's place
/// in the text of that shape whose literals are `to`: moved right by how much wider each
/// literal before it on its line is there.
pub fn place_in(at: Location, from: &[MaskedLiteral], to: &[MaskedLiteral]) -> Location {
    let wider: i64 = from
        .iter()
        .zip(to)
        .filter(|(f, _)| f.at.line == at.line && f.at.column < at.column)
        .map(|(f, t)| i64::from(t.width()) - i64::from(f.width()))
        .sum();
    let column = (i64::from(at.column) + wider).clamp(1, i64::from(u32::MAX));
    Location::new(at.line, column as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(sql: &str) -> Option<String> {
        shape(sql, Location::new(1, 1)).map(|s| s.key)
    }

    #[test]
    fn literals_are_masked_whatever_their_lengths() {
        assert_eq!(
            key("SELECT P.x FROM P WHERE id = 4242 AND P.name = 'it''s'").as_deref(),
            Some("SELECT P.x FROM P WHERE id = 0 AND P.name = '_'")
        );
        assert_eq!(
            key("UPDATE P SET x = -1.5e3").as_deref(),
            Some("UPDATE P SET x = -0")
        );
        // Texts that differ only in constants share a shape, whatever their lengths.
        assert_eq!(key("SPAWN P(x => 1.25)"), key("SPAWN P(x => 9.75)"));
        assert_eq!(key("SPAWN P(x => 1.25)"), key("SPAWN P(x => 15)"));
        assert_eq!(key("SELECT 'a', 7"), key("SELECT '', 70000"));
        assert_ne!(key("SPAWN P(x => 1.25)"), key("SPAWN Q(x => 1.25)"));
        // A literal is a token of its own: what only looks like one is not masked.
        assert_ne!(
            key("SELECT P.x0 FROM P WHERE P.x = 1"),
            key("SELECT P.x FROM P WHERE P.x = 1")
        );
        assert_ne!(key("SELECT 1 + 2"), key("SELECT 12"));
    }

    #[test]
    fn a_place_moves_by_the_widths_of_the_literals_before_it_on_its_line() {
        let (a, b) = (
            "SELECT P.x FROM P WHERE P.x > 1 AND\n 5 + P.y < 'ab' + 7",
            "SELECT P.x FROM P WHERE P.x > 1000 AND\n 55 + P.y < 'abcd' + 7",
        );
        let (sa, sb) = (
            shape(a, Location::new(1, 1)).unwrap(),
            shape(b, Location::new(1, 1)).unwrap(),
        );
        assert_eq!(sa.key, sb.key);
        let place = |at: Location| place_in(at, &sa.literals, &sb.literals);
        // Before any literal, at one, after one on its line; a literal's own place.
        assert_eq!(place(Location::new(1, 8)), Location::new(1, 8));
        assert_eq!(place(Location::new(1, 31)), Location::new(1, 31));
        assert_eq!(place(Location::new(1, 33)), Location::new(1, 36));
        assert_eq!(place(Location::new(2, 2)), Location::new(2, 2));
        // The second line: `5` one wider, `'ab'` two; the first line's literals count not.
        assert_eq!(place(Location::new(2, 4)), Location::new(2, 5));
        assert_eq!(place(Location::new(2, 17)), Location::new(2, 20));
        for (i, (la, lb)) in sa.literals.iter().zip(&sb.literals).enumerate() {
            assert_eq!(place(la.at), lb.at, "literal {i}");
        }
        // And back.
        assert_eq!(
            place_in(Location::new(2, 20), &sb.literals, &sa.literals),
            Location::new(2, 17)
        );
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
        assert_eq!(key("SELECT 10;").as_deref(), Some("SELECT 0;"));
        let long = format!("SELECT 1{}", " ".repeat(LONGEST));
        assert_eq!(key(&long), None);
    }

    #[test]
    fn texts_whose_places_are_not_counted_as_bytes_stay_as_written() {
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
