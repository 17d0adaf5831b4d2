//! CSV as RFC 4180 writes it: fields separated by one ASCII delimiter, records by `\n`
//! or `\r\n`; a field in double quotes may hold delimiters, line breaks and doubled
//! quotes. An unquoted empty field is NULL (an empty TEXT when the column is TEXT), `""`
//! the empty text. Blank lines are skipped, except in a file of one column, where a blank
//! line is that column's NULL. The reader borrows each field from the file unless it
//! holds a doubled quote.

use std::borrow::Cow;

use super::{DataError, Given};
use crate::vector::{Data, Vector};

/// One field of a record.
#[derive(Debug, PartialEq)]
pub struct Field<'a> {
    pub text: Cow<'a, str>,
    pub quoted: bool,
}

impl Field<'_> {
    /// The value as a column reads it: an unquoted empty field is NULL.
    pub fn given(&self) -> Given<'_> {
        if self.text.is_empty() && !self.quoted {
            Given::Null
        } else {
            Given::Text(&self.text)
        }
    }
}

/// What gives a file's records one at a time: the CSV reader, and the text format's.
pub trait Records<'a> {
    /// The next record's fields into `fields` (emptied first), and the line it starts on;
    /// `None` after the last.
    fn record(&mut self, fields: &mut Vec<Field<'a>>) -> Result<Option<u64>, DataError>;

    /// Whether a blank line is a record of one empty field (in a file of one column).
    fn blank_lines_are_records(&mut self, yes: bool);
}

impl<'a> Records<'a> for Reader<'a> {
    fn record(&mut self, fields: &mut Vec<Field<'a>>) -> Result<Option<u64>, DataError> {
        Reader::record(self, fields)
    }

    fn blank_lines_are_records(&mut self, yes: bool) {
        Reader::blank_lines_are_records(self, yes);
    }
}

/// Reads records one at a time from a whole file's text.
pub struct Reader<'a> {
    text: &'a str,
    pos: usize,
    line: u64,
    delimiter: u8,
    blank_is_record: bool,
}

impl<'a> Reader<'a> {
    /// A reader of `bytes` (UTF-8, an initial byte order mark skipped), fields separated by
    /// `delimiter` (one ASCII character). With `blank_is_record` (a file of one column), a
    /// blank line is a record of one empty field.
    pub fn new(bytes: &'a [u8], delimiter: u8, blank_is_record: bool) -> Result<Reader<'a>, DataError> {
        let text = super::text_of(bytes)?;
        Ok(Reader {
            text,
            pos: 0,
            line: 1,
            delimiter,
            blank_is_record,
        })
    }

    /// Whether a blank line is a record of one empty field (in a file of one column) or
    /// skipped.
    pub fn blank_lines_are_records(&mut self, yes: bool) {
        self.blank_is_record = yes;
    }

    /// The next record's fields into `fields` (emptied first), and the line it starts on;
    /// `None` after the last.
    pub fn record(&mut self, fields: &mut Vec<Field<'a>>) -> Result<Option<u64>, DataError> {
        fields.clear();
        let bytes = self.text.as_bytes();
        // Blank lines between records are skipped, unless a blank line is a record.
        while !self.blank_is_record {
            match bytes.get(self.pos) {
                None => return Ok(None),
                Some(b'\n') => {
                    self.pos += 1;
                    self.line += 1;
                }
                Some(b'\r') if bytes.get(self.pos + 1) == Some(&b'\n') => {
                    self.pos += 2;
                    self.line += 1;
                }
                Some(_) => break,
            }
        }
        if self.pos >= bytes.len() {
            return Ok(None);
        }
        let start_line = self.line;
        loop {
            let field = if bytes.get(self.pos) == Some(&b'"') {
                self.quoted(start_line, fields.len() + 1)?
            } else {
                let start = self.pos;
                let end = bytes[start..]
                    .iter()
                    .position(|&b| b == self.delimiter || b == b'\n')
                    .map_or(bytes.len(), |n| start + n);
                self.pos = end;
                let mut text = &self.text[start..end];
                if end < bytes.len() && bytes[end] == b'\n' {
                    text = text.strip_suffix('\r').unwrap_or(text);
                }
                Field {
                    text: Cow::Borrowed(text),
                    quoted: false,
                }
            };
            fields.push(field);
            match bytes.get(self.pos) {
                Some(&b) if b == self.delimiter => self.pos += 1,
                Some(b'\n') => {
                    self.pos += 1;
                    self.line += 1;
                    return Ok(Some(start_line));
                }
                None => return Ok(Some(start_line)),
                Some(_) => {
                    return Err(DataError::new(
                        self.line,
                        Some((fields.len()).to_string()),
                        "a quoted value must be followed by the delimiter or the end of the line",
                    ));
                }
            }
        }
    }

    /// A field in double quotes, starting at the opening quote; leaves `pos` just past the
    /// closing one (`\r` before a line end skipped).
    fn quoted(&mut self, start_line: u64, column: usize) -> Result<Field<'a>, DataError> {
        let bytes = self.text.as_bytes();
        let start = self.pos + 1;
        let mut i = start;
        let mut owned: Option<String> = None;
        let mut piece = start;
        loop {
            let Some(n) = bytes[i..].iter().position(|&b| b == b'"' || b == b'\n') else {
                return Err(DataError::new(
                    start_line,
                    Some(column.to_string()),
                    "a quoted value that starts here never ends (a closing \" is missing)",
                ));
            };
            i += n;
            if bytes[i] == b'\n' {
                self.line += 1;
                i += 1;
                continue;
            }
            // A quote: doubled, it stands for one; alone, it closes the field.
            if bytes.get(i + 1) == Some(&b'"') {
                let text = owned.get_or_insert_with(String::new);
                text.push_str(&self.text[piece..=i]);
                i += 2;
                piece = i;
                continue;
            }
            let text = match owned {
                Some(mut text) => {
                    text.push_str(&self.text[piece..i]);
                    Cow::Owned(text)
                }
                None => Cow::Borrowed(&self.text[start..i]),
            };
            self.pos = i + 1;
            if bytes.get(self.pos) == Some(&b'\r') && bytes.get(self.pos + 1) == Some(&b'\n') {
                self.pos += 1;
            }
            return Ok(Field { text, quoted: true });
        }
    }
}

/// Appends one record of `values` (already formatted; `None` for NULL), quoting what needs
/// it, and a line end.
fn record(out: &mut String, values: impl Iterator<Item = Option<(String, bool)>>, delimiter: char) {
    for (i, value) in values.enumerate() {
        if i > 0 {
            out.push(delimiter);
        }
        if let Some((text, is_text)) = value {
            push_field(out, &text, is_text, delimiter);
        }
    }
    out.push('\n');
}

/// A field as CSV: quoted when it is empty text (so that it is not read as NULL) or holds
/// the delimiter, a quote, a line break or spaces at its ends.
fn push_field(out: &mut String, text: &str, is_text: bool, delimiter: char) {
    let needs = (is_text && text.is_empty())
        || text.contains([delimiter, '"', '\n', '\r'])
        || text.starts_with(char::is_whitespace)
        || text.ends_with(char::is_whitespace);
    if needs {
        out.push('"');
        out.push_str(&text.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(text);
    }
}

/// Writes `columns` (each `len` rows) as CSV into `out`, with a header line of `names`
/// when `header` is set; `flush` takes the text every so often, so that a big result is
/// never all in memory twice.
pub fn write(
    names: &[String],
    columns: &[Vector<'_>],
    len: usize,
    delimiter: char,
    header: bool,
    mut flush: impl FnMut(&str) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut out = String::with_capacity(super::FLUSH_BYTES);
    if header {
        write_header(&mut out, names, delimiter);
        out.push('\n');
    }
    for row in 0..len {
        write_row(&mut out, columns, row, delimiter);
        out.push('\n');
        super::flush_full(&mut out, &mut flush)?;
    }
    flush(&out)
}

/// Appends the header line of `names` (without its line end).
pub fn write_header(out: &mut String, names: &[String], delimiter: char) {
    record(out, names.iter().map(|n| Some((n.clone(), true))), delimiter);
    out.pop();
}

/// Appends row `row` of `columns` as one record (without its line end).
pub fn write_row(out: &mut String, columns: &[Vector<'_>], row: usize, delimiter: char) {
    for (i, column) in columns.iter().enumerate() {
        if i > 0 {
            out.push(delimiter);
        }
        match &column.data {
            Data::Text(texts) if column.is_valid(row) => push_field(out, &texts[row], true, delimiter),
            // Numbers, booleans and ids never need quotes.
            _ => {
                super::write_value(out, column, row);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each record's line and its fields as (text, quoted).
    type Records = Vec<(u64, Vec<(String, bool)>)>;

    fn records(text: &str) -> Result<Records, DataError> {
        let mut reader = Reader::new(text.as_bytes(), b',', false)?;
        let mut fields = Vec::new();
        let mut out = Vec::new();
        while let Some(line) = reader.record(&mut fields)? {
            out.push((
                line,
                fields.iter().map(|f| (f.text.to_string(), f.quoted)).collect(),
            ));
        }
        Ok(out)
    }

    #[test]
    fn fields_quotes_line_breaks_and_blank_lines() {
        let got =
            records("a,\"b,c\",\"say \"\"hi\"\"\"\r\n\n\"two\nlines\",,\"\"\nlast").expect("well formed");
        let f = |s: &str, q: bool| (s.to_string(), q);
        assert_eq!(
            got,
            vec![
                (1, vec![f("a", false), f("b,c", true), f("say \"hi\"", true)]),
                (3, vec![f("two\nlines", true), f("", false), f("", true)]),
                (5, vec![f("last", false)]),
            ]
        );
    }

    #[test]
    fn malformed_files_name_their_line() {
        let err = records("a,b\n\"open,c\nd").expect_err("never closed");
        assert_eq!((err.line, err.column.as_deref()), (2, Some("1")));
        let err = records("a,\"b\"c\n").expect_err("text after the quote");
        assert_eq!((err.line, err.column.as_deref()), (1, Some("2")));
        let err = Reader::new(b"ok\n\xffbad", b',', false).err().expect("not UTF-8");
        assert_eq!(err.line, 2);
    }

    #[test]
    fn in_a_file_of_one_column_a_blank_line_is_a_null() {
        let mut reader = Reader::new(b"id\n1\n\n3\n", b',', true).expect("UTF-8");
        let mut fields = Vec::new();
        let mut got = Vec::new();
        while let Some(line) = reader.record(&mut fields).expect("well formed") {
            got.push((line, fields[0].text.to_string(), fields.len()));
        }
        let row = |l: u64, s: &str| (l, s.to_string(), 1);
        assert_eq!(got, vec![row(1, "id"), row(2, "1"), row(3, ""), row(4, "3")]);
    }

    #[test]
    fn what_is_written_reads_back() {
        let texts = vec![
            String::new(),
            "plain".into(),
            "a,b".into(),
            "q\"uote".into(),
            "line\nbreak".into(),
            " edge ".into(),
        ];
        let column = Vector::from_data(Data::Text(Cow::Owned(texts.clone())), texts.len());
        let mut text = String::new();
        write(&["t".into()], &[column], texts.len(), ',', true, |s| {
            text.push_str(s);
            Ok(())
        })
        .expect("written");
        let back = records(&text).expect("reads");
        let values: Vec<String> = back.iter().skip(1).map(|(_, f)| f[0].0.clone()).collect();
        assert_eq!(values, texts);
        assert!(back.iter().skip(1).all(|(_, f)| f[0].1 || !f[0].0.is_empty()));
    }
}
