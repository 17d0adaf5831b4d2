//! `ecsql serve`: a database reached over the PostgreSQL wire protocol, so that psql,
//! libpq and every driver that speaks it can attach to a running world (`pgwire` does the
//! protocol, tokio the sockets).
//!
//! Invariants:
//! - Each client connection is one `Connection` of the database: its transaction, its
//!   prepared statements and its settings are its own, and a connection that goes away
//!   mid-transaction has it rolled back (dropping a `Connection` does).
//! - Statements run on tokio's blocking threads, never on the threads that read and write
//!   sockets: a long statement holds up its own client only.
//! - Only loopback is listened on unless the caller says otherwise (`Options::listen`),
//!   and then only with `Options::trust` (no password is asked for yet).
//! - No more than `Options::max_connections` clients at once: one past it is refused
//!   with SQLSTATE 53300, as PostgreSQL refuses it.
//! - A client reaches the database only, never a file of the server's: a query with
//!   SAVE, LOAD or a COPY to or from a file is refused whole (SQLSTATE 42501) before any
//!   of it runs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use thiserror::Error;
use tokio::net::TcpListener;

use crate::Database;

mod session;
mod types;

/// Where and how a server listens.
#[derive(Clone, Debug)]
pub struct Options {
    /// The address to listen on: `127.0.0.1:5433` unless told.
    pub listen: SocketAddr,
    /// Allow an address other than loopback without a password: anyone who reaches the
    /// port may read and write.
    pub trust: bool,
    /// The most clients connected at once.
    pub max_connections: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 5433)),
            trust: false,
            max_connections: 64,
        }
    }
}

/// Why a server could not start.
#[derive(Debug, Error)]
pub enum ServerError {
    /// An address other than loopback, without `Options::trust`.
    #[error(
        "refusing to listen on {0}, which is not a loopback address, without a password: pass --trust (anyone who reaches the port may read and write) or listen on 127.0.0.1"
    )]
    NotLoopback(SocketAddr),
    /// The address cannot be listened on (in use, not this machine's, not allowed).
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The threads that serve clients could not be started.
    #[error("cannot start the server's threads: {0}")]
    Runtime(#[source] std::io::Error),
}

/// A server over `db`, listening (`start`) until dropped or `stop`ped.
pub struct Server {
    addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).finish()
    }
}

impl Server {
    /// Starts serving `db` as `options` say, on threads of its own; the program goes on
    /// using `db` meanwhile.
    pub fn start(db: &Database, options: Options) -> Result<Server, ServerError> {
        if !options.listen.ip().is_loopback() && !options.trust {
            return Err(ServerError::NotLoopback(options.listen));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ecsql-serve")
            .enable_all()
            .build()
            .map_err(ServerError::Runtime)?;
        let listener = runtime
            .block_on(TcpListener::bind(options.listen))
            .map_err(|source| ServerError::Listen {
                addr: options.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| ServerError::Listen {
            addr: options.listen,
            source,
        })?;
        let (stop, stopped) = tokio::sync::oneshot::channel();
        runtime.spawn(accept(listener, db.clone(), options, stopped));
        Ok(Server {
            addr,
            runtime: Some(runtime),
            stop: Some(stop),
        })
    }

    /// The address it listens on (the port chosen when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops listening and drops every client (their open transactions roll back).
    pub fn stop(mut self) {
        self.shut_down();
    }

    /// Serves until the process ends.
    pub fn wait(mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.block_on(std::future::pending::<()>());
        }
    }

    fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// Accepts clients until told to stop.
async fn accept(
    listener: TcpListener,
    db: Database,
    options: Options,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let clients = Arc::new(AtomicUsize::new(0));
    loop {
        let socket = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                // A client that went away before it was accepted: the next one.
                Err(_) => continue,
            },
        };
        let _ = socket.set_nodelay(true);
        let count = clients.fetch_add(1, Ordering::AcqRel) + 1;
        let handlers = session::Handlers::new(&db, count > options.max_connections);
        let clients = Arc::clone(&clients);
        tokio::spawn(async move {
            // A client's errors are its own: the server goes on.
            let _ = pgwire::tokio::process_socket(socket, None, handlers).await;
            clients.fetch_sub(1, Ordering::AcqRel);
        });
    }
}
