//! `COPY (SUBSCRIBE …) TO STDOUT` over the wire: a live query's batches streamed to the
//! client as the lines of a COPY that lasts until the client cancels it, as Materialize
//! streams one. Each line is a row of a batch: the query's columns, then `tick` and
//! `diff` (docs/language.md, "Live queries"), in PostgreSQL's text format (or CSV).
//!
//! Invariants:
//! - The client's thread holds the subscription and turns each batch into lines; the
//!   socket's task writes them. Between the two runs a channel of `CHANNEL` lines: a
//!   client that reads slowly holds up its thread, not the server, while the batches it
//!   has not read wait in the subscription, merged past `max_pending_batches`.
//! - The stream ends with an error the client reads: when it cancels (57014, as
//!   PostgreSQL ends a cancelled COPY), when the subscription ends (its query stopped
//!   running, its result outgrew the memory limit), or when the server stops. A client
//!   that goes away ends it too: the socket's task sends a ParameterStatus every
//!   `HEARTBEAT` of silence, so that a connection gone quiet is found dead and its
//!   subscription dropped.
//! - It is the only statement of its query (its COPY lasts as long as the client wants),
//!   and is refused inside a transaction block (the subscription's first batch would hold
//!   what is not committed, as SUBSCRIBE is refused there).

use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::{Sink, SinkExt};
use pgwire::api::results::Tag;
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyOutResponse};
use pgwire::messages::startup::ParameterStatus;

use super::types;
use crate::parse::{CopyOption, Query, Statement, StatementKind};
use crate::{Connection, Subscription, Value};

/// How many lines wait between the client's thread and its socket.
const CHANNEL: usize = 1024;
/// How long the thread waits for a batch before it looks for a cancel.
const POLL: Duration = Duration::from_millis(100);
/// How long the socket stays silent before it is written to, to find a client gone.
const HEARTBEAT: Duration = Duration::from_secs(5);

/// What the thread hands the socket.
pub(super) enum Streamed {
    Line(Bytes),
    /// The stream ends with this error.
    Failed(Box<ErrorInfo>),
}

/// A subscription's stream, as the socket's task reads it.
pub(super) struct Stream {
    receiver: tokio::sync::mpsc::Receiver<Streamed>,
    /// The columns of each line.
    columns: usize,
}

/// A subscription's stream, as the client's thread feeds it.
pub(super) struct Feed {
    subscription: Subscription,
    /// The first batch (the whole result at subscribing), read when opening it.
    first: Option<crate::Rows>,
    sender: tokio::sync::mpsc::Sender<Streamed>,
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
/// `params`) asks for: the socket's end of its stream, and the thread's.
pub(super) fn open(
    conn: &Connection,
    text: &str,
    query: &Query,
    options: &[CopyOption],
    params: Vec<Value>,
) -> Result<(Stream, Feed), Box<ErrorInfo>> {
    if !conn.is_autocommit() {
        return Err(error(
            "25001",
            "COPY (SUBSCRIBE …) cannot run inside a transaction block: its first batch would hold what is not committed; end the block first",
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
    let (sender, receiver) = tokio::sync::mpsc::channel(CHANNEL);
    Ok((
        Stream { receiver, columns },
        Feed {
            subscription,
            first,
            sender,
            csv,
            header,
        },
    ))
}

impl Feed {
    /// Sends each batch as it comes, until the client cancels (`stop`), goes away, or the
    /// subscription ends. Runs on the client's thread.
    pub(super) fn run(mut self, stop: &AtomicBool) {
        if let Some(first) = self.first.take()
            && !self.send(&first)
        {
            return;
        }
        loop {
            if stop.swap(false, Ordering::SeqCst) {
                let _ = self.sender.blocking_send(Streamed::Failed(error(
                    "57014",
                    "canceling statement due to user request",
                )));
                return;
            }
            match self.subscription.next(POLL) {
                Ok(Some(rows)) => {
                    if !self.send(&rows) {
                        return;
                    }
                }
                Ok(None) if self.sender.is_closed() => return,
                Ok(None) => {}
                Err(e) => {
                    let _ = self
                        .sender
                        .blocking_send(Streamed::Failed(Box::new(types::error_info(&e, ""))));
                    return;
                }
            }
        }
    }

    /// Sends a batch's rows as lines; false when the socket's end is gone.
    fn send(&mut self, rows: &crate::Rows) -> bool {
        let (chunk, from) = rows.unread();
        let mut header = std::mem::take(&mut self.header).then(|| {
            let mut line = String::new();
            let names: Vec<String> = rows.column_names().into_iter().map(str::to_owned).collect();
            crate::transfer::csv::write_header(&mut line, &names, ',');
            if !line.ends_with('\n') {
                line.push('\n');
            }
            line
        });
        for row in from..chunk.len {
            let mut line = header.take().unwrap_or_default();
            if self.csv {
                crate::transfer::csv::write_row(&mut line, &chunk.columns, row, ',');
            } else {
                crate::transfer::text::write_row(&mut line, &chunk.columns, row, '\t');
            }
            line.push('\n');
            if self
                .sender
                .blocking_send(Streamed::Line(Bytes::from(line)))
                .is_err()
            {
                return false;
            }
        }
        true
    }
}

/// Writes `stream` to the client as one COPY, to its end: lines as they come, then
/// CopyDone, with the tag of its end; or the error that ends it, for the caller to send
/// (an ErrorResponse ends a COPY out). Runs on the socket's task.
pub(super) async fn write<C>(client: &mut C, mut stream: Stream) -> PgWireResult<Result<Tag, Box<ErrorInfo>>>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let columns = i16::try_from(stream.columns).unwrap_or(i16::MAX);
    let formats = vec![0; stream.columns.min(i16::MAX as usize)];
    client
        .send(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
            0, columns, formats,
        )))
        .await?;
    let mut rows = 0;
    loop {
        match tokio::time::timeout(HEARTBEAT, stream.receiver.recv()).await {
            Ok(Some(Streamed::Line(line))) => {
                rows += 1;
                client
                    .send(PgWireBackendMessage::CopyData(CopyData::new(line)))
                    .await?;
            }
            Ok(Some(Streamed::Failed(e))) => return Ok(Err(e)),
            Ok(None) => {
                client
                    .send(PgWireBackendMessage::CopyDone(CopyDone::new()))
                    .await?;
                return Ok(Ok(Tag::new("COPY").with_rows(rows)));
            }
            // Silence: a word to the client, which fails once it is gone.
            Err(_) => {
                let status = ParameterStatus::new(
                    "server_version".to_owned(),
                    super::client::SERVER_VERSION.to_owned(),
                );
                client.send(PgWireBackendMessage::ParameterStatus(status)).await?;
            }
        }
    }
}
