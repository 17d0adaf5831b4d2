//! PostgreSQL's text format for COPY (its default, and psql's `\copy`'s): one line a row,
//! fields separated by one ASCII delimiter (a tab unless told), `\N` for NULL, and
//! backslash escapes for what a field cannot hold as itself (`\\`, `\t`, `\n`, `\r`,
//! the delimiter). Read: `\b \f \n \r \t \v`, `\` and one to three octal digits, `\x` and
//! one or two hex digits, and `\` before any other character for that character; a line
//! `\.` ends the data. A field is never quoted: an empty one is the empty text.

use std::borrow::Cow;

use super::DataError;
use super::csv::Field;
use crate::vector::{Data, Vector};

/// Reads rows one at a time from a whole text.
pub struct Reader<'a> {
    text: &'a str,
    pos: usize,
    line: u64,
    delimiter: u8,
}

impl<'a> Reader<'a> {
    /// A reader of `bytes` (UTF-8), fields separated by `delimiter` (one ASCII character).
    pub fn new(bytes: &'a [u8], delimiter: u8) -> Result<Reader<'a>, DataError> {
        Ok(Reader {
            text: super::text_of(bytes)?,
            pos: 0,
            line: 1,
            delimiter,
        })
    }

    /// The next row's fields into `fields` (emptied first) and its line; `None` after the
    /// last. A NULL is an unquoted empty field, as the CSV reader gives one; every other
    /// field is quoted, so that an empty one is the empty text.
    pub fn record(&mut self, fields: &mut Vec<Field<'a>>) -> Result<Option<u64>, DataError> {
        fields.clear();
        if self.pos >= self.text.len() {
            return Ok(None);
        }
        let rest = &self.text[self.pos..];
        let end = rest.find('\n').unwrap_or(rest.len());
        let line = rest[..end].strip_suffix('\r').unwrap_or(&rest[..end]);
        self.pos += (end + 1).min(rest.len());
        let number = self.line;
        self.line += 1;
        if line == "\\." {
            self.pos = self.text.len();
            return Ok(None);
        }
        for (i, raw) in fields_of(line, self.delimiter as char).enumerate() {
            if raw == "\\N" {
                fields.push(Field {
                    text: Cow::Borrowed(""),
                    quoted: false,
                });
                continue;
            }
            let text = if raw.contains('\\') {
                Cow::Owned(unescape(raw).map_err(|m| DataError::new(number, Some((i + 1).to_string()), m))?)
            } else {
                Cow::Borrowed(raw)
            };
            fields.push(Field { text, quoted: true });
        }
        Ok(Some(number))
    }
}

/// The fields of `line`, split at each delimiter that no backslash escapes.
fn fields_of(line: &str, delimiter: char) -> impl Iterator<Item = &str> {
    let mut rest = Some(line);
    std::iter::from_fn(move || {
        let text = rest?;
        let mut escaped = false;
        for (at, c) in text.char_indices() {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == delimiter {
                rest = Some(&text[at + c.len_utf8()..]);
                return Some(&text[..at]);
            }
        }
        rest = None;
        Some(text)
    })
}

/// A field's text with its backslash escapes read.
fn unescape(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(next) = chars.next() else {
            return Err("a backslash ends the field: write \\\\ for a backslash".to_owned());
        };
        let code = |digits: &str, radix: u32| -> Result<char, String> {
            u32::from_str_radix(digits, radix)
                .ok()
                .and_then(char::from_u32)
                .filter(|c| *c != '\0')
                .ok_or_else(|| format!("\\{digits} is no character a text may hold"))
        };
        match next {
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '0'..='7' => {
                let mut digits = next.to_string();
                while digits.len() < 3
                    && let Some(d) = chars.next_if(|d| matches!(d, '0'..='7'))
                {
                    digits.push(d);
                }
                out.push(code(&digits, 8)?);
            }
            'x' if chars.peek().is_some_and(char::is_ascii_hexdigit) => {
                let mut digits = String::new();
                while digits.len() < 2
                    && let Some(d) = chars.next_if(char::is_ascii_hexdigit)
                {
                    digits.push(d);
                }
                out.push(code(&digits, 16)?);
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// Appends row `row` of `columns` as one line of the text format (without its line end).
pub fn write_row(out: &mut String, columns: &[Vector<'_>], row: usize, delimiter: char) {
    for (i, column) in columns.iter().enumerate() {
        if i > 0 {
            out.push(delimiter);
        }
        match &column.data {
            Data::Text(texts) if column.is_valid(row) => {
                for c in texts[row].chars() {
                    match c {
                        '\\' => out.push_str("\\\\"),
                        '\n' => out.push_str("\\n"),
                        '\r' => out.push_str("\\r"),
                        '\t' => out.push_str("\\t"),
                        c if c == delimiter => {
                            out.push('\\');
                            out.push(c);
                        }
                        c => out.push(c),
                    }
                }
            }
            // Numbers, booleans and ids need no escapes.
            _ => {
                if !super::write_value(out, column, row) {
                    out.push_str("\\N");
                }
            }
        }
    }
}

impl<'a> super::csv::Records<'a> for Reader<'a> {
    fn record(&mut self, fields: &mut Vec<Field<'a>>) -> Result<Option<u64>, DataError> {
        Reader::record(self, fields)
    }

    /// Every line is a row already (an empty one: one empty field).
    fn blank_lines_are_records(&mut self, _yes: bool) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str) -> Result<Vec<Vec<Option<String>>>, DataError> {
        let mut reader = Reader::new(text.as_bytes(), b'\t')?;
        let mut fields = Vec::new();
        let mut rows = Vec::new();
        while reader.record(&mut fields)?.is_some() {
            rows.push(
                fields
                    .iter()
                    .map(|f| (f.quoted || !f.text.is_empty()).then(|| f.text.to_string()))
                    .collect(),
            );
        }
        Ok(rows)
    }

    #[test]
    fn rows_read_with_nulls_escapes_and_an_end_marker() {
        let s = |t: &str| Some(t.to_owned());
        assert_eq!(
            rows("1\ta\\tb\t\\N\n2\t\t\\\\x\\101\\x41\n\\.\n3\tafter\n").unwrap(),
            [vec![s("1"), s("a\tb"), None], vec![s("2"), s(""), s("\\xAA")]]
        );
        assert_eq!(rows("1\r\n2").unwrap(), [vec![s("1")], vec![s("2")]]);
        let e = rows("1\n2\tbad\\").unwrap_err();
        assert_eq!((e.line, e.column.as_deref()), (2, Some("2")));
        assert!(rows("\\0").is_err(), "a NUL is no text's character");
        // An escaped delimiter is the field's own.
        let mut reader = Reader::new(b"a\\,b,c\n", b',').unwrap();
        let mut fields = Vec::new();
        reader.record(&mut fields).unwrap();
        let texts: Vec<&str> = fields.iter().map(|f| f.text.as_ref()).collect();
        assert_eq!(texts, ["a,b", "c"]);
    }

    #[test]
    fn a_written_row_reads_back_as_itself() {
        use crate::storage::Value;
        let mut text = Vector::empty(crate::vector::DataType::Text);
        let mut int = Vector::empty(crate::vector::DataType::Int);
        for (t, i) in [("tab\there\\ and\nline", Value::Int(7)), ("", Value::Null)] {
            text.push_value(&Value::Text(t.to_owned()));
            int.push_value(&i);
        }
        let mut out = String::new();
        for row in 0..2 {
            write_row(&mut out, &[text.clone(), int.clone()], row, '\t');
            out.push('\n');
        }
        assert_eq!(out, "tab\\there\\\\ and\\nline\t7\n\t\\N\n");
        let s = |t: &str| Some(t.to_owned());
        assert_eq!(
            rows(&out).unwrap(),
            [vec![s("tab\there\\ and\nline"), s("7")], vec![s(""), None]]
        );
    }
}
