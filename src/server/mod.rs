//! `ecsql serve`: a database reached over the PostgreSQL wire protocol, so that psql,
//! libpq and every driver that speaks it can attach to a running world (`pgwire` does the
//! protocol, tokio the sockets).
//!
//! Invariants:
//! - Each client connection is one `Connection` of the database: its transaction, its
//!   prepared statements and its settings are its own, and a connection that goes away
//!   mid-transaction has it rolled back (dropping a `Connection` does).
//! - Each client has a thread of its own, which reads and writes its socket and runs its
//!   statements (`client.rs`): a long statement holds up its own client only, and a
//!   message costs no hand-off between threads. The server's runtime accepts, and tells
//!   the clients over the limit why they are refused.
//! - Only loopback is listened on unless the caller says otherwise (`Options::listen`),
//!   and then only with a password (`Options::password`) or `Options::trust`; nothing a
//!   client sends runs before it has logged in, and one that has not within a minute is
//!   let go (`auth.rs`, `client.rs`).
//! - No more than `Options::max_connections` clients at once: one past it is refused
//!   with SQLSTATE 53300, as PostgreSQL refuses it.
//! - A client reaches the database only, never a file of the server's outside
//!   `Options::files`: a query with SAVE, LOAD or a COPY to or from another file is
//!   refused whole (SQLSTATE 42501) before any of it runs (`files.rs`).
//! - Each client statement runs at most `Options::statement_timeout` and holds at most
//!   `Options::memory_limit`; a client may lower its timeout, not raise it.
//! - With `Options::tick_rate`, one thread of the server's ticks the world (`ticker.rs`);
//!   stopping the server stops it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use thiserror::Error;
use tokio::net::TcpListener;

use crate::Database;

mod auth;
mod cancel;
mod client;
mod copy;
mod copy_handler;
mod extended;
mod files;
mod http;
mod kept;
mod live;
mod ticker;
mod types;

pub use auth::TlsFiles;
pub use ticker::Dt;

/// Where and how a server listens.
#[derive(Clone, Debug)]
pub struct Options {
    /// The address to listen on: `127.0.0.1:5433` unless told.
    pub listen: SocketAddr,
    /// Allow an address other than loopback without a password: anyone who reaches the
    /// port may read and write.
    pub trust: bool,
    /// The password every client must give (checked by SCRAM-SHA-256; any user name).
    /// Without one, only loopback is listened on unless `trust`.
    pub password: Option<String>,
    /// TLS: the server's certificate and key. With it, every client must use TLS.
    pub tls: Option<TlsFiles>,
    /// The one directory clients' SAVE, LOAD and COPY may name files in (relative to
    /// it); `None`, unless told: no file of the server's is reachable from a client.
    pub files: Option<std::path::PathBuf>,
    /// The most clients connected at once.
    pub max_connections: usize,
    /// How long a client's transaction that holds the database (it has written, or was
    /// begun SERIALIZABLE) may stay open with nothing sent before it is rolled back
    /// (while it holds it, every other connection waits).
    pub idle_in_transaction: std::time::Duration,
    /// How long one of a client's statements may run before it is stopped (30 s unless
    /// told; `None` for no limit). A client may lower its own (`PRAGMA
    /// statement_timeout`), never raise it: no client holds the database longer.
    pub statement_timeout: Option<std::time::Duration>,
    /// The most working memory one of a client's statements may hold, in bytes, when
    /// lower than the database's own limit (`PRAGMA memory_limit`, which clients may not
    /// change); `None` for the database's.
    pub memory_limit: Option<usize>,
    /// Tick the world this many times a second (`None`, unless told: only the clients'
    /// own TICKs move it). Each tick is whole to every client.
    pub tick_rate: Option<f64>,
    /// How long each of those ticks is said to be (`delta_time()`): 1/`tick_rate`
    /// unless told, or the real time since the previous tick began.
    pub dt: Dt,
    /// Also serve HTTP here (`None`, unless told): the JSON API and the explorer page,
    /// under the same rules as the PostgreSQL side (loopback unless a password or
    /// `trust`; the password, TLS and files as there). See docs/explorer.md.
    pub http: Option<SocketAddr>,
}

/// A size as `PRAGMA memory_limit` takes it (`512MB`, `2GiB`, a number of bytes), for
/// `Options::memory_limit`.
pub fn parse_size(text: &str) -> Option<usize> {
    crate::engine::parse_size(text)
}

impl Default for Options {
    fn default() -> Self {
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 5433)),
            trust: false,
            password: None,
            tls: None,
            files: None,
            max_connections: 64,
            idle_in_transaction: std::time::Duration::from_secs(60),
            statement_timeout: Some(std::time::Duration::from_secs(30)),
            memory_limit: None,
            tick_rate: None,
            dt: Dt::Fixed,
            http: None,
        }
    }
}

/// Why a server could not start.
#[derive(Debug, Error)]
pub enum ServerError {
    /// An address other than loopback, without `Options::trust`.
    #[error(
        "refusing to listen on {0}, which is not a loopback address, without a password: give one (--password-file), or pass --trust (anyone who reaches the port may read and write), or listen on 127.0.0.1"
    )]
    NotLoopback(SocketAddr),
    /// An HTTP side beyond loopback with a password but no TLS: its password would cross
    /// the network in clear.
    #[error(
        "refusing to serve HTTP on {0}, beyond loopback, with a password but no TLS: HTTP sends the password itself with every request; give the server a certificate (--tls-cert, --tls-key), or serve HTTP on 127.0.0.1"
    )]
    PasswordInClear(SocketAddr),
    /// A TLS certificate or key that cannot be read or used.
    #[error("cannot use {path} for TLS: {why}")]
    Tls {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        why: String,
    },
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
    /// A files directory that cannot be used.
    #[error("cannot use {path} as the clients' files directory: {why}")]
    Files {
        /// The directory.
        path: std::path::PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A tick rate that is no number of ticks a second.
    #[error("a tick rate of {0} ticks a second: expected a number above 0, at most 10000")]
    TickRate(f64),
}

/// A server over `db`, listening (`start`) until dropped or `stop`ped.
pub struct Server {
    addr: SocketAddr,
    /// Where the HTTP side listens, when it does.
    http_addr: Option<SocketAddr>,
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// Tells every client's thread to let its client go.
    stop_clients: tokio::sync::watch::Sender<bool>,
    /// Every client's interrupt, to stop what they run when the server stops.
    cancels: Arc<cancel::Cancels>,
    clock: Arc<ticker::Clock>,
    ticker: Option<std::thread::JoinHandle<()>>,
    /// How many clients are connected (their seats).
    clients: Arc<AtomicUsize>,
}

/// What a server's clock (`Options::tick_rate`) has done so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ticks {
    /// Ticks run.
    pub ran: u64,
    /// Ticks that failed and changed nothing (a system's error, a busy world).
    pub failed: u64,
    /// The last failure's error.
    pub last_error: Option<String>,
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
        for addr in std::iter::once(options.listen).chain(options.http) {
            if !addr.ip().is_loopback() && !options.trust && options.password.is_none() {
                return Err(ServerError::NotLoopback(addr));
            }
        }
        // HTTP's Basic authentication sends the password itself with every request: beyond
        // loopback, only inside TLS.
        if let Some(http) = options.http
            && !http.ip().is_loopback()
            && options.password.is_some()
            && options.tls.is_none()
        {
            return Err(ServerError::PasswordInClear(http));
        }
        let (tls, cert) = match &options.tls {
            Some(files) => {
                let (acceptor, cert) = auth::tls(files)?;
                (Some(acceptor), Some(cert))
            }
            None => (None, None),
        };
        let files = match &options.files {
            Some(dir) => Some(Arc::new(files::Files::open(dir).map_err(|why| {
                ServerError::Files {
                    path: dir.clone(),
                    why,
                }
            })?)),
            None => None,
        };
        let access = Arc::new(Access {
            secret: options
                .password
                .as_deref()
                .map(|p| Arc::new(auth::Secret::new(p))),
            cert,
            tls,
            files,
        });
        if let Some(rate) = options.tick_rate
            && !(rate > 0.0 && rate <= 10_000.0)
        {
            return Err(ServerError::TickRate(rate));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ecsql-serve")
            .enable_all()
            .build()
            .map_err(ServerError::Runtime)?;
        // Bound without the runtime's `block_on`, so that a program may start a server
        // from inside its own tokio runtime.
        let listen = |source| ServerError::Listen {
            addr: options.listen,
            source,
        };
        let std_listener = std::net::TcpListener::bind(options.listen).map_err(listen)?;
        std_listener.set_nonblocking(true).map_err(listen)?;
        let listener = {
            let _entered = runtime.enter();
            TcpListener::from_std(std_listener).map_err(listen)?
        };
        let addr = listener.local_addr().map_err(listen)?;
        let http_listener = match options.http {
            Some(http) => {
                let listen = |source| ServerError::Listen { addr: http, source };
                let std_listener = std::net::TcpListener::bind(http).map_err(listen)?;
                std_listener.set_nonblocking(true).map_err(listen)?;
                let _entered = runtime.enter();
                let listener = TcpListener::from_std(std_listener).map_err(listen)?;
                let at = listener.local_addr().map_err(listen)?;
                Some((listener, at))
            }
            None => None,
        };
        let clock = Arc::new(ticker::Clock::default());
        let ticker = match options.tick_rate {
            Some(rate) => Some(
                ticker::start(
                    db,
                    rate,
                    options.dt,
                    (options.statement_timeout, options.memory_limit),
                    &clock,
                )
                .map_err(ServerError::Runtime)?,
            ),
            None => None,
        };
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let (stop_clients, stopping) = tokio::sync::watch::channel(false);
        let cancels = Arc::new(cancel::Cancels::default());
        let clients = Arc::new(AtomicUsize::new(0));
        let http_addr = http_listener.as_ref().map(|(_, at)| *at);
        if let Some((listener, at)) = http_listener {
            let served = Arc::new(http::Http::new(
                db,
                &options,
                &access,
                at,
                &clock,
                stop_clients.subscribe(),
            ));
            runtime.spawn(http::accept(
                listener,
                served,
                access.tls.clone(),
                options.max_connections,
            ));
        }
        runtime.spawn(accept(
            listener,
            (db.clone(), Arc::clone(&clients)),
            options,
            access,
            Arc::clone(&cancels),
            (stopped, stopping),
        ));
        Ok(Server {
            addr,
            http_addr,
            runtime: Some(runtime),
            stop: Some(stop),
            stop_clients,
            cancels,
            clock,
            ticker,
            clients,
        })
    }

    /// The address it listens on (the port chosen when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address the HTTP side listens on, when it does (`Options::http`; the port
    /// chosen when asked for port 0).
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http_addr
    }

    /// What the server's clock has done so far (nothing without `Options::tick_rate`).
    pub fn ticks(&self) -> Ticks {
        Ticks {
            ran: self.clock.ran.load(Ordering::Relaxed),
            failed: self.clock.failed.load(Ordering::Relaxed),
            last_error: self.clock.last_error.lock().clone(),
        }
    }

    /// Stops listening and ticking, and drops every client (their open transactions
    /// roll back): when it returns, no client holds the database (a client's thread that
    /// has not let go within `STOP_WAIT` is left to end on its own).
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
        self.clock.stop();
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = self.stop_clients.send(true);
        self.cancels.stop_all();
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        // Each client's thread drops its connection (rolling back its transaction) and
        // then its seat; what they run was stopped above, so this is short.
        let deadline = std::time::Instant::now() + STOP_WAIT;
        while self.clients.load(Ordering::Acquire) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

/// The longest `Server::stop` waits for its clients' threads to let go.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Drop for Server {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// Accepts clients until told to stop.
async fn accept(
    listener: TcpListener,
    (db, clients): (Database, Arc<AtomicUsize>),
    options: Options,
    access: Arc<Access>,
    cancels: Arc<cancel::Cancels>,
    (mut stopped, stopping): (
        tokio::sync::oneshot::Receiver<()>,
        tokio::sync::watch::Receiver<bool>,
    ),
) {
    loop {
        let socket = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                // A client that went away before it was accepted, or no descriptor left:
                // a moment's pause (not a spin), then the next one.
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        let _ = socket.set_nodelay(true);
        // A client whose machine went away without a word is found by the kernel's
        // probes (after KEEPALIVE quiet, then every KEEPALIVE_INTERVAL, a few times), and
        // its seat, thread and transaction let go.
        let probes = socket2::TcpKeepalive::new()
            .with_time(KEEPALIVE)
            .with_interval(KEEPALIVE_INTERVAL);
        let _ = socket2::SockRef::from(&socket).set_tcp_keepalive(&probes);
        let seat = Seat::take(&clients);
        let tls = access.tls.clone();
        // A client over the limit is told why here, on the server's runtime: it gets no
        // thread of its own.
        if seat.count > options.max_connections {
            let handlers = client::Handlers::new(&db, true, &options, &cancels, &access);
            tokio::spawn(async move {
                let _seat = seat;
                let served = pgwire::tokio::process_socket(socket, tls, handlers);
                let _ = tokio::time::timeout(REFUSED_WINDOW, served).await;
            });
            continue;
        }
        let Ok(socket) = socket.into_std() else {
            continue;
        };
        let handlers = client::Handlers::new(&db, false, &options, &cancels, &access);
        let stopping = stopping.clone();
        let runtime = tokio::runtime::Handle::current();
        let started = std::thread::Builder::new()
            .name("ecsql-client".to_owned())
            .spawn(move || serve(socket, tls, handlers, seat, stopping, runtime));
        if started.is_err() {
            // No thread for it (the system's limit): it is let go, its seat given back.
            continue;
        }
    }
}

/// One client, on a thread of its own that reads its socket and runs its statements, on
/// a runtime of its own: a message costs no hand-off between threads, and the engine
/// knows the client's transaction by its thread.
fn serve(
    socket: std::net::TcpStream,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    handlers: client::Handlers,
    seat: Seat,
    mut stopping: tokio::sync::watch::Receiver<bool>,
    shared: tokio::runtime::Handle,
) {
    let _seat = seat;
    let served = async move {
        let Ok(socket) = tokio::net::TcpStream::from_std(socket) else {
            return;
        };
        let authenticated = handlers.authenticated();
        let idle = handlers.idle_watch();
        let served = pgwire::tokio::process_socket(socket, tls, handlers);
        tokio::pin!(served);
        let rollbacks = async move {
            match idle {
                Some(session) => session.roll_back_when_idle().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(rollbacks);
        // A client's errors are its own: the server goes on. One that has not logged in
        // within the login window (PostgreSQL's authentication_timeout) is let go then.
        let logged_in = async {
            if tokio::time::timeout(LOGIN_WINDOW, &mut served).await.is_err()
                && authenticated.load(Ordering::Acquire)
            {
                let _ = (&mut served).await;
            }
        };
        tokio::select! {
            () = logged_in => {}
            () = &mut rollbacks => {}
            _ = stopping.wait_for(|stop| *stop) => {}
        }
    };
    // A runtime of its own where the system gives one (its socket read on this thread);
    // else the server's, driven from here.
    match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime.block_on(served),
        Err(_) => shared.block_on(served),
    }
}

/// How long a client's connection is quiet before the kernel probes whether its machine
/// is still there, and how often it probes then.
const KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(60);
const KEEPALIVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a client refused for the connection limit is kept to be told why.
const REFUSED_WINDOW: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a client may take to log in before it is let go, as PostgreSQL's
/// `authentication_timeout`.
const LOGIN_WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

/// What a client must show to get in: the password's SCRAM secret, and TLS (with the
/// certificate's PEM, which SCRAM's channel binding signs); and the files it may reach.
pub(super) struct Access {
    secret: Option<Arc<auth::Secret>>,
    cert: Option<Vec<u8>>,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    /// The directory clients' files may be in.
    files: Option<Arc<files::Files>>,
}

/// A client's place among those connected: given back when dropped, however its task
/// ends.
struct Seat {
    clients: Arc<AtomicUsize>,
    /// How many were connected with it.
    count: usize,
}

impl Seat {
    fn take(clients: &Arc<AtomicUsize>) -> Seat {
        Seat {
            clients: Arc::clone(clients),
            count: clients.fetch_add(1, Ordering::AcqRel) + 1,
        }
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.clients.fetch_sub(1, Ordering::AcqRel);
    }
}
