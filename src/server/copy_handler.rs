//! A client's COPY data as it arrives (pgwire's CopyHandler): held (`copy::Buffer`) up to
//! half the client's memory limit until the client ends it, then written whole or not at
//! all (`copy.rs`).
//!
//! Invariants:
//! - Past the limit the data is dropped as it arrives, and the COPY fails (53200) when the
//!   client ends it, writing nothing.
//! - A COPY the client abandons (CopyFail) writes nothing, and fails an open block.
//! - A COPY begun by an Execute ends with the state that lets pgwire answer the Sync after
//!   it (pgwire leaves that to the handler).

use std::fmt::Debug;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::copy::CopyHandler;
use pgwire::api::results::Tag;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};

use super::client::Client;

/// The 53200 error of COPY data past the client's memory limit.
fn too_much(limit: usize) -> Box<ErrorInfo> {
    Box::new(ErrorInfo::new(
        "ERROR".to_owned(),
        "53200".to_owned(),
        format!(
            "out of memory: the COPY's data passed {limit} bytes, half what a client's statement may hold (the data and the columns made of it take about twice its size); nothing was written (send it in parts)"
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
        buffer.lock().push(&copy_data.data, limit);
        if let Ok(session) = self.session() {
            session.copy_data_came();
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
        let taken = buffer.lock().take();
        let session = self.session()?;
        let written = match taken {
            Some(data) => session.copy_in(&data),
            None => {
                session.copy_fail();
                Err(too_much(limit))
            }
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
        let _ = self.copy_buffer().0.lock().take();
        match self.session() {
            Ok(session) => session.copy_fail(),
            Err(e) => return e,
        }
        PgWireError::UserError(Box::new(ErrorInfo::new(
            "ERROR".to_owned(),
            "57014".to_owned(),
            format!("COPY from stdin failed: {}; nothing was written", fail.message),
        )))
    }
}
