//! Cancel requests: a client's statement stopped from another connection, as psql's
//! Ctrl-C and every driver's `cancel` send it, through the connection's interrupt.
//!
//! Invariants:
//! - Each client is told a process id unique in the server and a secret drawn at random;
//!   a cancel request stops a statement only when it names both, so a stranger who can
//!   reach the port cannot stop another client's work by guessing an id.
//! - A cancel interrupts only what the client is running when it arrives (the interrupt's
//!   rule): with nothing running it does nothing, and never reaches a later statement. A
//!   live query's stream looks at its own flag, cleared when a stream begins.
//! - A client's entry leaves the registry when its connection ends.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use async_trait::async_trait;
use pgwire::api::cancel::CancelHandler;
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::startup::SecretKey;

use crate::InterruptHandle;

/// The server's clients, by the process id each was told, with their secrets.
#[derive(Default)]
pub(super) struct Cancels {
    next: AtomicI32,
    clients: parking_lot::Mutex<HashMap<i32, Entry>>,
    /// Keys drawn at random when the server starts: the secrets hashed from them.
    random: std::collections::hash_map::RandomState,
}

/// What a cancel request must name, and what it stops: a client's secret, its
/// connection's interrupt, and the flag its live query's stream looks at.
struct Entry(i32, InterruptHandle, Arc<AtomicBool>);

/// A client's entry in the registry, taken out when dropped.
pub(super) struct Registered {
    cancels: Arc<Cancels>,
    pub(super) pid: i32,
    pub(super) secret: i32,
    /// Set by a cancel request, for what runs outside the engine's calls: a stream of a
    /// live query (`live.rs`), which looks at it between batches.
    pub(super) stop: Arc<AtomicBool>,
}

impl Cancels {
    /// Registers a client that `interrupt` stops.
    pub(super) fn register(self: &Arc<Self>, interrupt: InterruptHandle) -> Registered {
        let pid = self.next.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let mut hasher = self.random.build_hasher();
        hasher.write_i32(pid);
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        let secret = hasher.finish() as i32;
        let stop = Arc::new(AtomicBool::new(false));
        self.clients
            .lock()
            .insert(pid, Entry(secret, interrupt, Arc::clone(&stop)));
        Registered {
            cancels: Arc::clone(self),
            pid,
            secret,
            stop,
        }
    }
}

impl Cancels {
    /// Stops what every client runs (the server is stopping): statements stop at their
    /// next morsel, streams at their next poll.
    pub(super) fn stop_all(&self) {
        for Entry(_, interrupt, stop) in self.clients.lock().values() {
            interrupt.interrupt();
            stop.store(true, Ordering::SeqCst);
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.cancels.clients.lock().remove(&self.pid);
    }
}

/// What answers a cancel request.
pub(super) struct Canceller(pub(super) Arc<Cancels>);

#[async_trait]
impl CancelHandler for Canceller {
    async fn on_cancel_request(&self, request: CancelRequest) {
        let clients = self.0.clients.lock();
        if let Some(Entry(secret, interrupt, stop)) = clients.get(&request.pid)
            && request.secret_key.eq_value(&SecretKey::I32(*secret))
        {
            interrupt.interrupt();
            stop.store(true, Ordering::SeqCst);
        }
    }
}
