//! `COPY (SUBSCRIBE …) TO STDOUT` over the wire: a live query's batches streamed to the
//! client as the lines of a COPY that lasts until the client cancels it, as Materialize
//! streams one. Each line is a row of a batch: the query's columns, then `tick` and
//! `diff` (docs/language.md, "Live queries"), in PostgreSQL's text format (or CSV).
//!
//! Invariants:
//! - The client's thread holds the subscription, turns each batch into lines and writes
//!   them to its socket: a client that reads slowly holds up its own thread, not the
//!   server, while the batches it has not read wait in the subscription, merged past
//!   `max_pending_batches`.
//! - The stream ends with an error the client reads: when it cancels (57014, as
//!   PostgreSQL ends a cancelled COPY), when the subscription ends (its query stopped
//!   running, its result outgrew the memory limit). A client that goes away ends it too:
//!   the thread sends a ParameterStatus every `HEARTBEAT` of silence, so that a
//!   connection gone quiet is found dead and its subscription dropped; a server that
//!   stops drops the thread's socket.
//! - It is the only statement of its query (its COPY lasts as long as the client wants),
//!   and is refused inside a transaction block (the subscription's first batch would hold
//!   what is not committed, as SUBSCRIBE is refused there).

use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{Sink, SinkExt};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyOutResponse};
use pgwire::messages::startup::ParameterStatus;

use super::types;
use crate::parse::{CopyOption, Query, Statement, StatementKind};
use crate::{Connection, Subscription, Value};

/// How long the thread waits for a batch before it looks for a cancel.
const POLL: Duration = Duration::from_millis(100);
/// How long the socket stays silent before it is written to, to find a client gone.
const HEARTBEAT: Duration = Duration::from_secs(5);

/// A subscription being streamed.
pub(super) struct Feed {
    subscription: Subscription,
    /// The first batch (the whole result at subscribing), read when opening it.
    first: Option<crate::Rows>,
    /// The columns of each line.
    columns: usize,
    csv: bool,
    /// A CSV header is still to be sent, with the first line.
    header: bool,
}

/// Whether `text` may hold a `COPY (SUBSCRIBE …)`: a quick look before a parse.
pub(super) fn may_subscribe(text: &str) -> bool {
    text.len() >= 9
        && text
            .as_bytes()
            .windows(9)
            .any(|w| w.eq_ignore_ascii_case(b"subscribe"))
}

/// The query and options of `statement` when it is a `COPY (SUBSCRIBE …) TO STDOUT`.
pub(super) fn requested(statement: &Statement) -> Option<(&Query, &[CopyOption])> {
    match &statement.kind {
        StatementKind::CopySubscribe { query, options } => Some((query, options)),
        _ => None,
    }
}

fn error(code: &str, message: impl Into<String>) -> Box<ErrorInfo> {
    Box::new(ErrorInfo::new(
        "ERROR".to_owned(),
        code.to_owned(),
        message.into(),
    ))
}

/// The text of the query inside `COPY (SUBSCRIBE …)`: from where it begins to the `)`
/// that closes COPY's parenthesis (quotes and names skipped).
fn inner_text<'t>(text: &'t str, query: &Query) -> Option<&'t str> {
    let start = types::offset(text, query.at)?;
    let rest = text.get(start..)?;
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    for (i, c) in rest.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') if depth == 0 => return rest.get(..i),
            (None, ')') => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Opens the subscription `COPY (SUBSCRIBE query) TO STDOUT` (`text`, run with
/// `params`) asks for, its first batch read.
pub(super) fn open(
    conn: &Connection,
    text: &str,
    query: &Query,
    options: &[CopyOption],
    params: Vec<Value>,
) -> Result<Feed, Box<ErrorInfo>> {
    if conn.holds_transaction() {
        return Err(error(
            "25001",
            "COPY (SUBSCRIBE …) cannot run in a transaction that holds the database (it has written, or was begun SERIALIZABLE): its first batch would hold what is not committed; end the block first (or connect in autocommit)",
        ));
    }
    let mut csv = false;
    let mut header = false;
    for option in options {
        let value = option.value.as_deref().unwrap_or("true").to_ascii_lowercase();
        match option.name.value.to_ascii_lowercase().as_str() {
            "format" if value == "text" => csv = false,
            "format" if value == "csv" => csv = true,
            "header" => header = matches!(value.as_str(), "true" | "on" | "1"),
            _ => {
                return Err(error(
                    "0A000",
                    format!(
                        "COPY (SUBSCRIBE …) takes FORMAT text or csv and HEADER, not {}",
                        option.name.value
                    ),
                ));
            }
        }
    }
    if header && !csv {
        return Err(error("0A000", "HEADER is an option of FORMAT csv"));
    }
    let inner =
        inner_text(text, query).ok_or_else(|| error("42601", "COPY (SUBSCRIBE …) is missing its )"))?;
    let subscription = conn
        .subscribe_at(inner, query.at, params)
        .map_err(|e| Box::new(types::error_info(&e, text)))?;
    let first = subscription
        .try_next()
        .map_err(|e| Box::new(types::error_info(&e, text)))?;
    let columns = first.as_ref().map_or(0, |rows| rows.column_names().len());
    Ok(Feed {
        subscription,
        first,
        columns,
        csv,
        header,
    })
}

impl Feed {
    /// A batch's rows as lines.
    fn lines(&mut self, rows: &crate::Rows) -> Vec<Bytes> {
        let (chunk, from) = rows.unread();
        let mut header = std::mem::take(&mut self.header).then(|| {
            let mut line = String::new();
            let names = crate::plan::bare_names(&rows.column_names());
            crate::transfer::csv::write_header(&mut line, &names, ',');
            if !line.ends_with('\n') {
                line.push('\n');
            }
            line
        });
        let mut lines = Vec::with_capacity(chunk.len.saturating_sub(from));
        for row in from..chunk.len {
            let mut line = header.take().unwrap_or_default();
            if self.csv {
                crate::transfer::csv::write_row(&mut line, &chunk.columns, row, ',');
            } else {
                crate::transfer::text::write_row(&mut line, &chunk.columns, row, '\t');
            }
            line.push('\n');
            lines.push(Bytes::from(line));
        }
        lines
    }
}

/// Writes `feed` to the client as one COPY: each batch's lines as it comes, until a
/// cancel (`stop`), the subscription's end, or the socket's; then the error that ends
/// it, for the caller to send (an ErrorResponse ends a COPY out). Runs on the client's
/// thread, which waits for each batch a `POLL` at a time.
pub(super) async fn write<C>(
    client: &mut C,
    mut feed: Feed,
    stop: &AtomicBool,
) -> PgWireResult<Box<ErrorInfo>>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let columns = i16::try_from(feed.columns).unwrap_or(i16::MAX);
    let formats = vec![0; feed.columns.min(i16::MAX as usize)];
    client
        .send(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
            0, columns, formats,
        )))
        .await?;
    let mut last = Instant::now();
    let mut batch = feed.first.take();
    loop {
        if let Some(b) = batch.take() {
            for line in feed.lines(&b) {
                client
                    .feed(PgWireBackendMessage::CopyData(CopyData::new(line)))
                    .await?;
            }
            client.flush().await?;
            last = Instant::now();
        }
        if stop.swap(false, Ordering::SeqCst) {
            return Ok(error("57014", "canceling statement due to user request"));
        }
        match feed.subscription.next(POLL) {
            Ok(next) => batch = next,
            Err(e) => return Ok(Box::new(types::error_info(&e, ""))),
        }
        // The thread's other work (the server stopping) gets its turn between polls.
        tokio::task::yield_now().await;
        // Silence: a word to the client, which fails once it is gone.
        if batch.is_none() && last.elapsed() >= HEARTBEAT {
            let status = ParameterStatus::new(
                "server_version".to_owned(),
                crate::postgres::SERVER_VERSION.to_owned(),
            );
            client.send(PgWireBackendMessage::ParameterStatus(status)).await?;
            last = Instant::now();
        }
    }
}
