//! `GET /api/subscribe`: a live query's batches as Server-Sent Events, each batch one
//! event, as `Connection::subscribe` gives them.
//!
//! Invariants:
//! - The first event (`columns`) names the columns; each `batch` event is one batch
//!   whole, in the order the commits made them: adding up every batch's rows (each row's
//!   `diff`) gives the query's result at the last commit sent. A reader too slow for the
//!   commits gets fewer, merged batches (the subscription's own merging), never a row
//!   lost: the channel to the client holds `QUEUED` event and the subscription's own
//!   queue waits behind it.
//! - A subscription that ends with an error sends it as an `error` event, then the
//!   stream ends.
//! - Each stream has a thread of its own, at most `MAX_STREAMS` at once; the thread ends
//!   within `POLL` of its client going away or the server stopping.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc;

use super::api::Answer;
use super::json::{push_key, push_named_types, push_rows};
use crate::{Connection, Rows};

/// The most streams open at once.
pub(super) const MAX_STREAMS: usize = 64;
/// How often a stream's thread looks whether its client or the server has gone.
const POLL: Duration = Duration::from_millis(250);
/// How long a stream stays quiet before a comment line tells proxies it is alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Events waiting to be written to a client: one being written and one ready; past
/// them, the subscription merges what waits (a batch can be megabytes).
const QUEUED: usize = 1;

/// A stream's place among those open: given back when its thread ends.
pub(super) struct StreamSeat(Arc<AtomicUsize>);

impl StreamSeat {
    pub(super) fn take(open: &Arc<AtomicUsize>) -> Option<StreamSeat> {
        let before = open.fetch_add(1, Ordering::AcqRel);
        let seat = StreamSeat(Arc::clone(open));
        (before < MAX_STREAMS).then_some(seat)
    }
}

impl Drop for StreamSeat {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Subscribes `conn` to `sql` with `params`; the events of its batches, from a thread of
/// their own. The subscription's error when it cannot start.
pub(super) fn open(
    conn: Connection,
    sql: &str,
    params: crate::ParamValues,
    seat: StreamSeat,
    stopping: tokio::sync::watch::Receiver<bool>,
) -> Result<mpsc::Receiver<Bytes>, Answer> {
    let subscription = conn
        .subscribe(sql, params)
        .map_err(|e| Answer::statement_error(&e, sql))?;
    let (tx, rx) = mpsc::channel(QUEUED);
    let spawned = std::thread::Builder::new()
        .name("ecsql-http-stream".to_owned())
        .spawn(move || {
            let _seat = seat;
            let _conn = conn;
            let mut columns_sent = false;
            let mut quiet_since = Instant::now();
            loop {
                if tx.is_closed() || *stopping.borrow() {
                    return;
                }
                let event = match subscription.next(POLL) {
                    Ok(Some(batch)) => {
                        let mut event = String::new();
                        if !columns_sent {
                            columns_sent = true;
                            event.push_str(&columns_event(&batch));
                        }
                        event.push_str(&batch_event(&batch));
                        event
                    }
                    Ok(None) if quiet_since.elapsed() >= KEEP_ALIVE => ": alive\n\n".to_owned(),
                    Ok(None) => continue,
                    Err(e) => {
                        let answer = Answer::statement_error(&e, "");
                        let _ =
                            tx.blocking_send(Bytes::from(format!("event: error\ndata: {}\n\n", answer.body)));
                        return;
                    }
                };
                quiet_since = Instant::now();
                if tx.blocking_send(Bytes::from(event)).is_err() {
                    return;
                }
            }
        });
    match spawned {
        Ok(_) => Ok(rx),
        Err(e) => Err(Answer::error(
            503,
            &format!("cannot start the stream's thread: {e}"),
        )),
    }
}

/// `event: columns`: the batches' columns, the query's then `tick` and `diff`.
fn columns_event(batch: &Rows) -> String {
    let mut data = String::from("{\"columns\":");
    push_named_types(
        &mut data,
        batch.column_names().into_iter().zip(batch.column_types()),
    );
    data.push('}');
    format!("event: columns\ndata: {data}\n\n")
}

/// `event: batch`: a batch's rows.
fn batch_event(batch: &Rows) -> String {
    let (chunk, first) = batch.unread();
    let mut event = String::with_capacity(32 + (chunk.len - first) * 24);
    event.push_str("event: batch\ndata: {");
    push_key(&mut event, "rows");
    // JSON strings escape every line break, so the data is one line.
    push_rows(&mut event, chunk, first, chunk.len);
    event.push_str("}\n\n");
    event
}
