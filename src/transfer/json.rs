//! JSON records: written one object per line (newline-delimited JSON, as DuckDB and
//! most tools read it); read as that, or as one array of objects. A member's value is a
//! string, a number (kept as written, converted by the column), true, false or null;
//! nested objects and arrays are refused. Strings borrow from the file unless they hold
//! an escape.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::{DataError, Given};
use crate::vector::{Data, Vector};

/// A member's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar<'a> {
    Str(Cow<'a, str>),
    Number(&'a str),
    Bool(bool),
    Null,
}

impl Scalar<'_> {
    pub fn given(&self) -> Given<'_> {
        match self {
            Scalar::Str(s) => Given::Text(s),
            Scalar::Number(n) => Given::Number(n),
            Scalar::Bool(b) => Given::Bool(*b),
            Scalar::Null => Given::Null,
        }
    }
}

/// Where the reader stands among the file's objects.
#[derive(Clone, Copy, PartialEq)]
enum State {
    /// Nothing read yet.
    Start,
    /// Objects one after another (newline-delimited).
    Lines,
    /// Inside a top-level array: after `[` or after an object.
    Array {
        first: bool,
    },
    Done,
}

/// Reads the objects of a whole file's text.
pub struct Reader<'a> {
    text: &'a str,
    pos: usize,
    line: u64,
    state: State,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Result<Reader<'a>, DataError> {
        let text = super::text_of(bytes)?;
        Ok(Reader {
            text,
            pos: 0,
            line: 1,
            state: State::Start,
        })
    }

    fn error(&self, message: impl Into<String>) -> DataError {
        DataError::new(self.line, None, message)
    }

    fn skip_space(&mut self) {
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.pos) {
            match b {
                b'\n' => self.line += 1,
                b' ' | b'\t' | b'\r' => {}
                _ => break,
            }
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn found(&self) -> String {
        match self.text[self.pos..].chars().next() {
            Some(c) => format!("'{c}'"),
            None => "the end of the file".into(),
        }
    }

    /// The next object's members into `members` (emptied first), and the line it starts
    /// on; `None` after the last.
    pub fn object(
        &mut self,
        members: &mut Vec<(Cow<'a, str>, Scalar<'a>)>,
    ) -> Result<Option<u64>, DataError> {
        members.clear();
        self.skip_space();
        match self.state {
            State::Done => return Ok(None),
            State::Start => {
                if self.peek() == Some(b'[') {
                    self.pos += 1;
                    self.state = State::Array { first: true };
                } else {
                    self.state = State::Lines;
                }
                return self.object(members);
            }
            State::Lines => {
                if self.peek().is_none() {
                    self.state = State::Done;
                    return Ok(None);
                }
            }
            State::Array { first } => {
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    self.skip_space();
                    if self.peek().is_some() {
                        return Err(self.error(format!(
                            "expected the end of the file after the array, found {}",
                            self.found()
                        )));
                    }
                    self.state = State::Done;
                    return Ok(None);
                }
                if !first {
                    if self.peek() != Some(b',') {
                        return Err(
                            self.error(format!("expected , or ] after an object, found {}", self.found()))
                        );
                    }
                    self.pos += 1;
                    self.skip_space();
                }
                self.state = State::Array { first: false };
            }
        }
        let line = self.line;
        if self.peek() != Some(b'{') {
            return Err(self.error(format!("expected an object {{…}}, found {}", self.found())));
        }
        self.pos += 1;
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Some(line));
        }
        loop {
            self.skip_space();
            if self.peek() != Some(b'"') {
                return Err(self.error(format!(
                    "expected a member's name in double quotes, found {}",
                    self.found()
                )));
            }
            let key = self.string()?;
            self.skip_space();
            if self.peek() != Some(b':') {
                return Err(self.error(format!("expected : after \"{key}\", found {}", self.found())));
            }
            self.pos += 1;
            self.skip_space();
            let value = self.scalar(&key)?;
            members.push((key, value));
            self.skip_space();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Some(line));
                }
                _ => return Err(self.error(format!("expected , or }} in an object, found {}", self.found()))),
            }
        }
    }

    fn scalar(&mut self, key: &str) -> Result<Scalar<'a>, DataError> {
        let rest = &self.text[self.pos..];
        for (word, value) in [
            ("true", Scalar::Bool(true)),
            ("false", Scalar::Bool(false)),
            ("null", Scalar::Null),
        ] {
            if rest.starts_with(word) {
                self.pos += word.len();
                return Ok(value);
            }
        }
        match self.peek() {
            Some(b'"') => Ok(Scalar::Str(self.string()?)),
            Some(b'-' | b'0'..=b'9') => {
                let len = rest
                    .bytes()
                    .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .unwrap_or(rest.len());
                let number = &rest[..len];
                if !is_json_number(number) {
                    return Err(self.error(format!("\"{key}\": {number} is not a JSON number")));
                }
                self.pos += len;
                Ok(Scalar::Number(number))
            }
            Some(b'{' | b'[') => Err(self.error(format!(
                "\"{key}\": a nested object or array is not a field's value"
            ))),
            _ => Err(self.error(format!("\"{key}\": expected a value, found {}", self.found()))),
        }
    }

    /// A string, starting at its opening quote.
    fn string(&mut self) -> Result<Cow<'a, str>, DataError> {
        let bytes = self.text.as_bytes();
        let start = self.pos + 1;
        let mut i = start;
        let mut owned: Option<String> = None;
        let mut piece = start;
        loop {
            let Some(&b) = bytes.get(i) else {
                return Err(self.error("a string that starts here never ends (a closing \" is missing)"));
            };
            match b {
                b'"' => {
                    self.pos = i + 1;
                    return Ok(match owned {
                        Some(mut s) => {
                            s.push_str(&self.text[piece..i]);
                            Cow::Owned(s)
                        }
                        None => Cow::Borrowed(&self.text[start..i]),
                    });
                }
                b'\\' => {
                    let s = owned.get_or_insert_with(String::new);
                    s.push_str(&self.text[piece..i]);
                    let (c, len) = self.escape(i)?;
                    s.push(c);
                    i += len;
                    piece = i;
                }
                b'\n' | b'\r' => return Err(self.error("a line break inside a string (write it as \\n)")),
                _ => i += 1,
            }
        }
    }

    /// The character of the escape at `i` (a backslash) and its length in bytes.
    fn escape(&self, i: usize) -> Result<(char, usize), DataError> {
        let bytes = self.text.as_bytes();
        let simple = match bytes.get(i + 1) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let unit = |at: usize| -> Option<u32> {
                    let hex = self.text.get(at..at + 4)?;
                    // from_str_radix alone would take a sign: `\u+041`.
                    hex.bytes()
                        .all(|b| b.is_ascii_hexdigit())
                        .then(|| u32::from_str_radix(hex, 16).ok())
                        .flatten()
                };
                let bad = || self.error("a \\u escape needs four hex digits naming a character");
                let first = unit(i + 2).ok_or_else(bad)?;
                if (0xD800..0xDC00).contains(&first) {
                    // A surrogate pair: \uD83D\uDE00.
                    if self.text.get(i + 6..i + 8) != Some("\\u") {
                        return Err(bad());
                    }
                    let second = unit(i + 8)
                        .filter(|s| (0xDC00..0xE000).contains(s))
                        .ok_or_else(bad)?;
                    let c = char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
                        .ok_or_else(bad)?;
                    return Ok((c, 12));
                }
                return Ok((char::from_u32(first).ok_or_else(bad)?, 6));
            }
            _ => {
                return Err(
                    self.error("an unknown escape in a string (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)")
                );
            }
        };
        Ok((simple, 2))
    }
}

/// Whether `s` is a number as JSON writes them: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn is_json_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Appends `s` as a JSON string, quotes included.
pub fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Writes `columns` (each `len` rows) as one JSON object per line, members named by
/// `names`; `flush` takes the text every so often.
pub fn write(
    names: &[String],
    columns: &[Vector<'_>],
    len: usize,
    mut flush: impl FnMut(&str) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let keys: Vec<String> = names
        .iter()
        .map(|n| {
            let mut k = String::new();
            push_string(&mut k, n);
            k.push(':');
            k
        })
        .collect();
    let mut out = String::with_capacity(super::FLUSH_BYTES);
    let mut cell = String::new();
    for row in 0..len {
        out.push('{');
        for (i, column) in columns.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&keys[i]);
            match &column.data {
                Data::Text(texts) if column.is_valid(row) => push_string(&mut out, &texts[row]),
                // NaN and the infinities are not JSON numbers: written as the text a FLOAT
                // column reads back.
                Data::Float(x) if column.is_valid(row) && !x[row].is_finite() => {
                    cell.clear();
                    super::write_value(&mut cell, column, row);
                    push_string(&mut out, &cell);
                }
                Data::Real(x) if column.is_valid(row) && !x[row].is_finite() => {
                    cell.clear();
                    super::write_value(&mut cell, column, row);
                    push_string(&mut out, &cell);
                }
                _ => {
                    if !super::write_value(&mut out, column, row) {
                        out.push_str("null");
                    }
                }
            }
        }
        out.push_str("}\n");
        super::flush_full(&mut out, &mut flush)?;
    }
    flush(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each object's line and its members.
    type Objects = Vec<(u64, Vec<(String, Scalar<'static>)>)>;

    fn objects(text: &str) -> Result<Objects, DataError> {
        let mut reader = Reader::new(text.as_bytes())?;
        let mut members = Vec::new();
        let mut out = Vec::new();
        while let Some(line) = reader.object(&mut members)? {
            let owned = members
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        Scalar::Str(s) => Scalar::Str(Cow::Owned(s.to_string())),
                        Scalar::Number(n) => Scalar::Str(Cow::Owned(format!("#{n}"))),
                        Scalar::Bool(b) => Scalar::Bool(*b),
                        Scalar::Null => Scalar::Null,
                    };
                    (k.to_string(), v)
                })
                .collect();
            out.push((line, owned));
        }
        Ok(out)
    }

    #[test]
    fn lines_and_arrays_read_alike() {
        let text = |s: &str| Scalar::Str(Cow::Owned(s.to_string()));
        let want = vec![
            (
                1,
                vec![
                    ("a".to_string(), text("#1.5e3")),
                    ("b".to_string(), text("x\"\n\u{e9}\u{1f600}")),
                ],
            ),
            (
                2,
                vec![
                    ("a".to_string(), Scalar::Null),
                    ("c".to_string(), Scalar::Bool(true)),
                ],
            ),
        ];
        let lines = "{\"a\": 1.5e3, \"b\": \"x\\\"\\n\\u00e9\\ud83d\\ude00\"}\n{\"a\":null,\"c\":true}\n";
        assert_eq!(objects(lines).expect("lines"), want);
        let array = "[{\"a\": 1.5e3, \"b\": \"x\\\"\\n\\u00e9\\ud83d\\ude00\"},\n {\"a\":null,\"c\":true}]";
        assert_eq!(objects(array).expect("array"), want);
    }

    #[test]
    fn malformed_files_name_their_line() {
        for (text, line) in [
            ("{\"a\": 1}\n{\"a\": [1]}", 2),
            ("{\"a\": 01}", 1),
            ("[{\"a\": 1}\n{\"a\": 2}]", 2),
            ("{\"a\": \"open}", 1),
            ("{\"a\": 1,}\n", 1),
            ("[{\"a\": 1}] x", 1),
            ("{\"a\": tru}", 1),
        ] {
            let err = objects(text).expect_err(text);
            assert_eq!(err.line, line, "{text}: {err}");
        }
    }

    #[test]
    fn numbers_as_json_writes_them() {
        for ok in ["0", "-0", "1.5", "-0.0", "1e300", "2E-5", "10"] {
            assert!(is_json_number(ok), "{ok}");
        }
        for bad in ["01", "1.", ".5", "1e", "--1", "NaN", "inf", "+1", ""] {
            assert!(!is_json_number(bad), "{bad}");
        }
    }
}
