//! Printing result sets in the shell's output modes: aligned `table`, `box` and `column`,
//! `markdown`, `line` (one `name = value` per line), `list` (values joined by a separator),
//! RFC 4180 `csv` and `json`. Only rendering lives
//! here; which statement printed what, and where the text goes, is the session's business.

use std::fmt::Write;

use ecsql::{DataType, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Table,
    Box,
    Column,
    Csv,
    Json,
    Line,
    List,
    Markdown,
}

impl Mode {
    pub const NAMES: &'static str = "table, box, column, csv, json, line, list or markdown";

    pub fn parse(name: &str) -> Option<Mode> {
        Some(match name.to_ascii_lowercase().as_str() {
            "table" => Mode::Table,
            "box" => Mode::Box,
            "column" => Mode::Column,
            "csv" => Mode::Csv,
            "json" => Mode::Json,
            "line" => Mode::Line,
            "list" => Mode::List,
            "markdown" => Mode::Markdown,
            _ => return None,
        })
    }

    /// Modes for people: they get row counts and messages; csv, json and list stay
    /// parseable.
    pub fn is_for_people(self) -> bool {
        !matches!(self, Mode::Csv | Mode::Json | Mode::List)
    }
}

/// A result set ready to print: column names and types, and the rows to show.
pub struct ResultSet<'a> {
    pub names: &'a [String],
    pub types: &'a [DataType],
    pub rows: &'a [Vec<Value>],
}

/// How the results are printed.
#[derive(Clone, Debug)]
pub struct Style {
    pub mode: Mode,
    pub headers: bool,
    /// How NULL shows in the modes for people (`.nullvalue`).
    pub null: String,
    /// Between the values of a row in `list` mode (`.separator`).
    pub separator: String,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            mode: Mode::Table,
            headers: true,
            null: "NULL".to_owned(),
            separator: "|".to_owned(),
        }
    }
}

/// Renders a result set in `style`. `hidden` rows were cut by `.maxrows`: the people's
/// modes say so under the table.
pub fn render(set: &ResultSet<'_>, style: &Style, hidden: usize) -> String {
    let mut out = String::new();
    match style.mode {
        Mode::Table => grid(&mut out, set, style, &ASCII),
        Mode::Box => grid(&mut out, set, style, &BOX),
        Mode::Column => columns(&mut out, set, style),
        Mode::Markdown => markdown(&mut out, set, style),
        Mode::Line => line(&mut out, set, &style.null),
        Mode::List => list(&mut out, set, style),
        Mode::Csv => csv(&mut out, set, style.headers),
        Mode::Json => json(&mut out, set),
    }
    if style.mode.is_for_people() {
        let shown = set.rows.len();
        let total = shown + hidden;
        let noun = if total == 1 { "row" } else { "rows" };
        if hidden > 0 {
            let _ = writeln!(out, "({total} {noun}, first {shown} shown; .maxrows 0 shows all)");
        } else {
            let _ = writeln!(out, "({total} {noun})");
        }
    }
    out
}

/// A value as people read it: text bare, NULL spelled out.
pub fn cell(value: &Value) -> String {
    cell_or(value, "NULL")
}

/// `cell`, NULL shown as `null`.
fn cell_or(value: &Value, null: &str) -> String {
    match value {
        Value::Null => null.to_owned(),
        Value::Text(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

fn is_number(ty: DataType) -> bool {
    matches!(
        ty,
        DataType::Int | DataType::Float | DataType::Real | DataType::Entity
    )
}

/// `v` padded with spaces to `w` characters, on the left when `right` (a number), as
/// `{v:>w$}` would pad it; written out because `format!` takes no width past 65,535.
fn pad(out: &mut String, v: &str, w: usize, right: bool) {
    let fill = w.saturating_sub(v.chars().count());
    if right {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(v);
    } else {
        out.push_str(v);
        out.extend(std::iter::repeat_n(' ', fill));
    }
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// Cells for display: tabs and line breaks would break the grid, so they show escaped.
fn grid_cell(value: &Value, null: &str) -> String {
    let text = cell_or(value, null);
    if text.contains(['\n', '\r', '\t']) {
        text.replace('\\', "\\\\")
            .replace('\n', "\\n")
            .replace('\r', "\\r")
            .replace('\t', "\\t")
    } else {
        text
    }
}

/// The characters of a grid: left, join and right for each rule, the rule's line, and the
/// bar between cells.
struct Frame {
    top: [&'static str; 3],
    middle: [&'static str; 3],
    bottom: [&'static str; 3],
    rule: &'static str,
    bar: &'static str,
}

const ASCII: Frame = Frame {
    top: ["+", "+", "+"],
    middle: ["+", "+", "+"],
    bottom: ["+", "+", "+"],
    rule: "-",
    bar: "|",
};

const BOX: Frame = Frame {
    top: ["┌", "┬", "┐"],
    middle: ["├", "┼", "┤"],
    bottom: ["└", "┴", "┘"],
    rule: "─",
    bar: "│",
};

fn grid(out: &mut String, set: &ResultSet<'_>, style: &Style, frame: &Frame) {
    let headers = style.headers;
    let cells: Vec<Vec<String>> = set
        .rows
        .iter()
        .map(|r| r.iter().map(|v| grid_cell(v, &style.null)).collect())
        .collect();
    let widths = column_widths(set, &cells, headers);
    let rule = |out: &mut String, [left, join, right]: [&str; 3]| {
        out.push_str(left);
        for (i, w) in widths.iter().enumerate() {
            if i > 0 {
                out.push_str(join);
            }
            out.push_str(&frame.rule.repeat(w + 2));
        }
        out.push_str(right);
        out.push('\n');
    };
    let row = |out: &mut String, values: &[String], numeric: &dyn Fn(usize) -> bool| {
        out.push_str(frame.bar);
        for (i, (v, w)) in values.iter().zip(&widths).enumerate() {
            out.push(' ');
            pad(out, v, *w, numeric(i));
            out.push(' ');
            out.push_str(frame.bar);
        }
        out.push('\n');
    };
    rule(out, frame.top);
    if headers {
        row(out, set.names, &|_| false);
        if !cells.is_empty() {
            rule(out, frame.middle);
        }
    }
    for values in &cells {
        row(out, values, &|i| is_number(set.types[i]));
    }
    rule(out, frame.bottom);
}

fn column_widths(set: &ResultSet<'_>, cells: &[Vec<String>], headers: bool) -> Vec<usize> {
    (0..set.names.len())
        .map(|i| {
            let head = if headers { width(&set.names[i]) } else { 0 };
            cells.iter().map(|r| width(&r[i])).fold(head, usize::max).max(1)
        })
        .collect()
}

/// sqlite3's `column`: aligned columns under a header and a rule of dashes, two spaces
/// apart, without a frame.
fn columns(out: &mut String, set: &ResultSet<'_>, style: &Style) {
    let cells: Vec<Vec<String>> = set
        .rows
        .iter()
        .map(|r| r.iter().map(|v| grid_cell(v, &style.null)).collect())
        .collect();
    let widths = column_widths(set, &cells, style.headers);
    let row = |out: &mut String, values: &[String], numeric: &dyn Fn(usize) -> bool| {
        let mut line = String::new();
        for (i, (v, w)) in values.iter().zip(&widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            pad(&mut line, v, *w, numeric(i));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    };
    if style.headers {
        row(out, set.names, &|_| false);
        let rules: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        row(out, &rules, &|_| false);
    }
    for values in &cells {
        row(out, values, &|i| is_number(set.types[i]));
    }
}

/// sqlite3's `list`: each row's values joined by the separator, the names first.
fn list(out: &mut String, set: &ResultSet<'_>, style: &Style) {
    if style.headers {
        out.push_str(&set.names.join(&style.separator));
        out.push('\n');
    }
    for row in set.rows {
        let values: Vec<String> = row.iter().map(|v| cell_or(v, &style.null)).collect();
        out.push_str(&values.join(&style.separator));
        out.push('\n');
    }
}

fn markdown(out: &mut String, set: &ResultSet<'_>, style: &Style) {
    let headers = style.headers;
    let escape = |v: &Value| grid_cell(v, &style.null).replace('|', "\\|");
    let cells: Vec<Vec<String>> = set.rows.iter().map(|r| r.iter().map(escape).collect()).collect();
    let names: Vec<String> = set.names.iter().map(|n| n.replace('|', "\\|")).collect();
    // Markdown needs a header row to be a table at all, so `.headers off` leaves it blank.
    let shown_names: Vec<String> = if headers {
        names
    } else {
        vec![String::new(); names.len()]
    };
    let widths: Vec<usize> = (0..set.names.len())
        .map(|i| {
            cells
                .iter()
                .map(|r| width(&r[i]))
                .fold(width(&shown_names[i]), usize::max)
                .max(3)
        })
        .collect();
    out.push('|');
    for (n, w) in shown_names.iter().zip(&widths) {
        out.push(' ');
        pad(out, n, *w, false);
        out.push_str(" |");
    }
    out.push_str("\n|");
    for (i, w) in widths.iter().enumerate() {
        if is_number(set.types[i]) {
            let _ = write!(out, "{}:|", "-".repeat(w + 1));
        } else {
            let _ = write!(out, "{}|", "-".repeat(w + 2));
        }
    }
    out.push('\n');
    for row in &cells {
        out.push('|');
        for (i, (v, w)) in row.iter().zip(&widths).enumerate() {
            out.push(' ');
            pad(out, v, *w, is_number(set.types[i]));
            out.push_str(" |");
        }
        out.push('\n');
    }
}

fn line(out: &mut String, set: &ResultSet<'_>, null: &str) {
    let w = set.names.iter().map(|n| width(n)).max().unwrap_or(0);
    for (i, row) in set.rows.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for (name, value) in set.names.iter().zip(row) {
            pad(out, name, w, true);
            let _ = writeln!(out, " = {}", cell_or(value, null));
        }
    }
}

/// RFC 4180: CRLF line ends; a field is quoted when it holds a comma, quote, CR or LF (or
/// is empty text, so that an empty string differs from NULL, which is an empty field).
fn csv(out: &mut String, set: &ResultSet<'_>, headers: bool) {
    fn field(out: &mut String, text: &str, force_quotes: bool) {
        if force_quotes || text.contains([',', '"', '\r', '\n']) {
            out.push('"');
            out.push_str(&text.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(text);
        }
    }
    let record = |out: &mut String, fields: &mut dyn Iterator<Item = (String, bool)>| {
        for (i, (text, quote)) in fields.enumerate() {
            if i > 0 {
                out.push(',');
            }
            field(out, &text, quote);
        }
        out.push_str("\r\n");
    };
    if headers {
        record(out, &mut set.names.iter().map(|n| (n.clone(), false)));
    }
    for row in set.rows {
        record(
            out,
            &mut row.iter().map(|v| match v {
                Value::Null => (String::new(), false),
                Value::Text(s) => (s.clone(), s.is_empty()),
                other => (cell(other), false),
            }),
        );
    }
}

/// One JSON array of objects per result set, one object per line. Non-finite floats have
/// no JSON spelling and are written as null.
fn json(out: &mut String, set: &ResultSet<'_>) {
    out.push('[');
    for (i, row) in set.rows.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push('{');
        for (j, (name, value)) in set.names.iter().zip(row).enumerate() {
            if j > 0 {
                out.push(',');
            }
            ecsql::script::push_json_string(out, name);
            out.push(':');
            match value {
                Value::Null => out.push_str("null"),
                Value::Text(s) => ecsql::script::push_json_string(out, s),
                // NaN and the infinities are not JSON numbers: written as their text
                // (`"inf"`, `"NaN"`), as COPY … (FORMAT json) writes them, apart from NULL.
                Value::Float(x) if !x.is_finite() => ecsql::script::push_json_string(out, &cell(value)),
                Value::Real(x) if !x.is_finite() => ecsql::script::push_json_string(out, &cell(value)),
                other => out.push_str(&cell(other)),
            }
        }
        out.push('}');
    }
    out.push_str("]\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render_one(mode: Mode, rows: &[Vec<Value>]) -> String {
        let names = ["id".to_owned(), "name".to_owned()];
        let types = [DataType::Entity, DataType::Text];
        let set = ResultSet {
            names: &names,
            types: &types,
            rows,
        };
        render(
            &set,
            &Style {
                mode,
                ..Style::default()
            },
            0,
        )
    }

    fn rows() -> Vec<Vec<Value>> {
        vec![
            vec![Value::Int(1), Value::Text("a, \"b\"".into())],
            vec![Value::Int(22), Value::Null],
            vec![Value::Int(3), Value::Text(String::new())],
        ]
    }

    #[test]
    fn table_aligns_numbers_right_and_shows_null() {
        let expected = "\
+----+--------+
| id | name   |
+----+--------+
|  1 | a, \"b\" |
| 22 | NULL   |
|  3 |        |
+----+--------+
(3 rows)
";
        assert_eq!(render_one(Mode::Table, &rows()), expected);
    }

    #[test]
    fn an_empty_result_closes_the_header() {
        assert_eq!(
            render_one(Mode::Box, &[]),
            "┌────┬──────┐\n│ id │ name │\n└────┴──────┘\n(0 rows)\n"
        );
    }

    #[test]
    fn csv_quotes_what_rfc_4180_requires_and_tells_null_from_empty() {
        assert_eq!(
            render_one(Mode::Csv, &rows()),
            "id,name\r\n1,\"a, \"\"b\"\"\"\r\n22,\r\n3,\"\"\r\n"
        );
    }

    #[test]
    fn json_is_one_array_of_objects() {
        assert_eq!(
            render_one(Mode::Json, &rows()),
            "[{\"id\":1,\"name\":\"a, \\\"b\\\"\"},\n{\"id\":22,\"name\":null},\n{\"id\":3,\"name\":\"\"}]\n"
        );
    }

    #[test]
    fn markdown_and_line_modes() {
        let one = &rows()[..1];
        assert_eq!(
            render_one(Mode::Markdown, one),
            "| id  | name   |\n|----:|--------|\n|   1 | a, \"b\" |\n(1 row)\n"
        );
        assert_eq!(
            render_one(Mode::Line, one),
            "  id = 1\nname = a, \"b\"\n(1 row)\n"
        );
    }
}
