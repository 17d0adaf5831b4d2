//! COPY over the wire: `COPY … TO STDOUT` sends a query's rows as the lines of a format
//! (PostgreSQL's text format unless told: csv, json), and `COPY C FROM STDIN` takes the
//! rows the client sends after it (psql's `\copy`, a driver's `copy_in`).
//!
//! Invariants:
//! - COPY FROM STDIN is checked (its component, its columns, its options) before the
//!   client is asked for data, so a wrong statement is the client's error at once; it
//!   must be the last statement of its query.
//! - What the client sends is held until it says it is done, and no more than the
//!   client's memory limit of it: past that the data is dropped as it arrives and the
//!   COPY fails (53200) when the client ends it. Nothing is written before the end, and
//!   a COPY that fails or that the client abandons (CopyFail) writes nothing.
//! - Each line of COPY TO STDOUT is one CopyData message, as PostgreSQL sends them; a CSV
//!   header goes with the first row.

use std::fmt::Debug;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{Sink, SinkExt, stream};
use pgwire::api::copy::CopyHandler;
use pgwire::api::results::{CopyResponse, Response, Tag};
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};

use super::client::{Client, Job};
use super::types;
use crate::parse::{FileName, Statement, StatementKind};
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
    conn.run_with_input(&pending.statement, &pending.text, data)
        .map(|result| result.affected)
        .map_err(|e| Box::new(types::error_info(&e, &pending.text)))
}

/// The result of COPY … TO STDOUT (its lines, `affected` rows of them) as the client
/// reads it: one CopyData a line, the header (when there is one) with the first row.
pub(super) fn copy_out(result: StatementResult) -> Response {
    let rows = result.affected;
    let mut lines: Vec<Bytes> = Vec::with_capacity(rows);
    if let Some(result) = result.rows {
        for row in result {
            let line = row
                .ok()
                .and_then(|r| r.get::<_, String>(0).ok())
                .unwrap_or_default();
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            lines.push(Bytes::from(bytes));
        }
    }
    // A header line: sent with the first row, so that the messages are the rows.
    if lines.len() > rows && lines.len() >= 2 {
        let header = lines.remove(0);
        let mut first = header.to_vec();
        first.extend_from_slice(&lines[0]);
        lines[0] = Bytes::from(first);
    }
    let data = lines.into_iter().map(|data| Ok(CopyData::new(data)));
    Response::CopyOut(CopyResponse::new(0, 0, stream::iter(data)))
}

/// The 53200 error of COPY data past the client's memory limit.
fn too_much(limit: usize) -> Box<ErrorInfo> {
    Box::new(ErrorInfo::new(
        "ERROR".to_owned(),
        "53200".to_owned(),
        format!(
            "out of memory: the COPY's data passed the {limit} bytes a client's statement may hold; nothing was written (send it in parts)"
        ),
    ))
}

#[async_trait]
impl CopyHandler for Client {
    async fn on_copy_data<C>(&self, _client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let (buffer, limit) = self.copy_buffer();
        let mut buffer = buffer.lock();
        if buffer.overflowed || buffer.data.len() + copy_data.data.len() > limit {
            buffer.overflowed = true;
            buffer.data = Vec::new();
        } else {
            buffer.data.extend_from_slice(&copy_data.data);
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let (buffer, limit) = self.copy_buffer();
        let Buffer { data, overflowed } = std::mem::take(&mut *buffer.lock());
        let written = if overflowed {
            self.ask(|answer| Job::CopyFail { answer }).await?;
            Err(too_much(limit))
        } else {
            self.ask(|answer| Job::CopyIn { data, answer }).await?
        };
        let rows = written.map_err(PgWireError::UserError)?;
        client
            .send(PgWireBackendMessage::CommandComplete(
                Tag::new("COPY").with_rows(rows).into(),
            ))
            .await?;
        // Begun by an Execute, the copy ends here, and the Sync that follows is answered
        // (pgwire leaves the state to the handler; a simple query's it ends itself).
        if matches!(client.state(), PgWireConnectionState::CopyInProgress(true)) {
            client.set_state(PgWireConnectionState::ReadyForQuery);
        }
        Ok(())
    }

    async fn on_copy_fail<C>(&self, _client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        *self.copy_buffer().0.lock() = Buffer::default();
        if let Err(e) = self.ask(|answer| Job::CopyFail { answer }).await {
            return e;
        }
        PgWireError::UserError(Box::new(ErrorInfo::new(
            "ERROR".to_owned(),
            "57014".to_owned(),
            format!("COPY from stdin failed: {}; nothing was written", fail.message),
        )))
    }
}
