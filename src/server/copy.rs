//! COPY over the wire, on the client's thread: `COPY … TO STDOUT` sends a query's rows as
//! the lines of a format (PostgreSQL's text format unless told: csv, json), and `COPY C
//! FROM STDIN` takes the rows the client sends after it (psql's `\copy`, a driver's
//! `copy_in`), which `copy_handler.rs` holds as they arrive.
//!
//! Invariants:
//! - COPY FROM STDIN is checked (its component, its columns, its options) before the
//!   client is asked for data, so a wrong statement is the client's error at once; it
//!   must be the last statement of its query.
//! - What the client sends is held until it says it is done, and no more than half the
//!   client's memory limit of it (the text and the columns made of it take about twice
//!   its size): past that the data is dropped as it arrives and the COPY fails (53200)
//!   when the client ends it. Nothing is written before the end, and a COPY that fails
//!   or that the client abandons (CopyFail) writes nothing.
//! - Each row of COPY TO STDOUT is one CopyData message, as PostgreSQL sends them, after
//!   a CopyOutResponse with the query's number of columns; a CSV header goes with the
//!   first row (pgwire's COPY tag counts the messages).

use bytes::Bytes;
use futures::stream;
use pgwire::api::results::{CopyResponse, Response};
use pgwire::error::ErrorInfo;
use pgwire::messages::copy::CopyData;

use super::types;
use crate::parse::{FileName, Statement, StatementKind};
use crate::vector::Data;
use crate::{Connection, StatementResult};

/// A COPY FROM STDIN waiting for its data.
pub(super) struct Pending {
    statement: Statement,
    text: String,
}

/// What a client has sent of a COPY's data so far.
#[derive(Default)]
pub(super) struct Buffer {
    data: Vec<u8>,
    /// More than the limit came: the data was dropped.
    overflowed: bool,
}

impl Buffer {
    /// Adds `piece`, unless the data would pass `limit` bytes: then all of it is dropped,
    /// and so is what comes after.
    pub(super) fn push(&mut self, piece: &[u8], limit: usize) {
        if self.overflowed || self.data.len() + piece.len() > limit {
            self.overflowed = true;
            self.data = Vec::new();
        } else {
            self.data.extend_from_slice(piece);
        }
    }

    /// The data sent, or `None` when it passed the limit; the buffer is left empty.
    pub(super) fn take(&mut self) -> Option<Vec<u8>> {
        let Buffer { data, overflowed } = std::mem::take(self);
        (!overflowed).then_some(data)
    }
}

/// Whether `statement` is a COPY FROM STDIN.
pub(super) fn is_copy_in(statement: &Statement) -> bool {
    matches!(
        &statement.kind,
        StatementKind::CopyFrom {
            path: FileName::Stdin,
            ..
        }
    )
}

/// Checks COPY FROM STDIN `statement` (written as `text`) against the catalog, and asks
/// the client for its data.
pub(super) fn begin(
    conn: &Connection,
    text: &str,
    statement: &Statement,
) -> Result<(Pending, Response), Box<ErrorInfo>> {
    let error = |e: crate::Error| Box::new(types::error_info(&e, text));
    // Refused before the client sends its data, not after.
    conn.refuse_read_only("COPY", statement.at).map_err(error)?;
    conn.prepare(text).and_then(|s| s.describe()).map_err(error)?;
    let columns = match &statement.kind {
        StatementKind::CopyFrom { columns, .. } => columns.len(),
        _ => 0,
    };
    let pending = Pending {
        statement: statement.clone(),
        text: text.to_owned(),
    };
    Ok((
        pending,
        Response::CopyIn(CopyResponse::new(0, columns, stream::empty())),
    ))
}

/// Runs the COPY FROM STDIN `pending` with the client's `data`: how many rows it wrote.
pub(super) fn finish(conn: &Connection, pending: &Pending, data: &[u8]) -> Result<usize, Box<ErrorInfo>> {
    let csv = match &pending.statement.kind {
        StatementKind::CopyFrom { options, .. } => options.iter().any(|o| {
            o.name.matches("format") && o.value.as_ref().is_some_and(|v| v.eq_ignore_ascii_case("csv"))
        }),
        _ => false,
    };
    conn.run_with_input(&pending.statement, &pending.text, before_end_marker(data, csv))
        .map(|result| result.affected)
        .map_err(|e| Box::new(types::error_info(&e, &pending.text)))
}

/// The result of COPY … TO STDOUT (its lines, `affected` rows of them) as the client
/// reads it: one CopyData a row (a CSV header goes with the first), after a
/// CopyOutResponse that says how many columns the rows have (a driver splits them by it).
pub(super) fn copy_out(conn: &Connection, result: StatementResult) -> Response {
    let columns = copied_columns(conn, &result.statement);
    let mut lines: Vec<Bytes> = Vec::with_capacity(result.affected + 1);
    // The lines are one TEXT column, read as it is held.
    if let Some(result) = &result.rows {
        let (chunk, from) = result.unread();
        if let Some(Data::Text(texts)) = chunk.columns.first().map(|c| &c.data) {
            for text in texts.iter().skip(from) {
                let mut bytes = Vec::with_capacity(text.len() + 1);
                bytes.extend_from_slice(text.as_bytes());
                bytes.push(b'\n');
                lines.push(Bytes::from(bytes));
            }
        }
    }
    // A header line goes with the first row: pgwire's COPY tag counts the messages.
    if lines.len() > result.affected && lines.len() >= 2 {
        let header = lines.remove(0);
        let mut first = header.to_vec();
        first.extend_from_slice(&lines[0]);
        lines[0] = Bytes::from(first);
    }
    let data = lines.into_iter().map(|data| Ok(CopyData::new(data)));
    Response::CopyOut(CopyResponse::new(0, columns, stream::iter(data)))
}

/// How many columns the rows of COPY … TO STDOUT `statement` have: its query's (a JSON
/// line is one column). The query is described again, which plans it and runs nothing.
fn copied_columns(conn: &Connection, statement: &str) -> usize {
    let Ok(parsed) = crate::parse::parse(statement) else {
        return 0;
    };
    let Some(StatementKind::CopyTo { query, options, .. }) = parsed.first().map(|s| &s.kind) else {
        return 0;
    };
    let json = options.iter().any(|o| {
        o.name.matches("format") && o.value.as_ref().is_some_and(|v| v.eq_ignore_ascii_case("json"))
    });
    if json {
        return 1;
    }
    let select = Statement {
        kind: StatementKind::Select((**query).clone()),
        at: crate::location::Location::default(),
        params: crate::parse::Parameters::default(),
    };
    conn.prepare(&select.to_string())
        .and_then(|s| s.describe())
        .map_or(0, |(_, columns)| columns.len())
}

/// `data` up to a line `\.` alone, the end of the data in every format (psql sends one
/// after data written inline in a script), as PostgreSQL reads it; in `csv`, a line
/// inside a quoted value is data.
fn before_end_marker(data: &[u8], csv: bool) -> &[u8] {
    let mut quoted = false;
    let mut start = 0;
    while start < data.len() {
        let end = data[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(data.len(), |i| start + i);
        let line = &data[start..end];
        let bare = line.strip_suffix(b"\r").unwrap_or(line);
        if !quoted && bare == b"\\." {
            return &data[..start];
        }
        if csv {
            // A doubled quote inside a quoted value toggles twice.
            quoted ^= line.iter().filter(|&&b| b == b'"').count() % 2 == 1;
        }
        start = end + 1;
    }
    data
}

#[cfg(test)]
mod tests {
    use super::before_end_marker;

    #[test]
    fn the_data_ends_at_a_line_of_backslash_dot() {
        for csv in [false, true] {
            assert_eq!(before_end_marker(b"a,b\n\\.\n", csv), b"a,b\n");
            assert_eq!(before_end_marker(b"\\.\n", csv), b"");
            assert_eq!(before_end_marker(b"a\r\n\\.\r\nignored\n", csv), b"a\r\n");
            assert_eq!(before_end_marker(b"a\n\\.", csv), b"a\n");
            // Not alone on its line: data.
            assert_eq!(before_end_marker(b"x\\.\n\"\\.\"\n", csv), b"x\\.\n\"\\.\"\n");
        }
        // Inside a quoted CSV value, a line of it is data.
        let quoted = b"7,\"a\n\\.\nb\"\n8,\"c\"\"\"\n\\.\nafter\n";
        assert_eq!(before_end_marker(quoted, true), &quoted[..quoted.len() - 9]);
        assert_eq!(before_end_marker(quoted, false), b"7,\"a\n");
    }
}
