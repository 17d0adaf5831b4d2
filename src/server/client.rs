//! One client of a server: its session (its `Connection` and what it is in the middle
//! of), and the answers to what it sends, given by the protocol's handlers on the
//! client's own thread (`mod.rs` `serve`), which also reads and writes its socket.
//!
//! Invariants:
//! - A client's statements run on its own thread, one at a time, in the order sent: the
//!   engine knows a transaction's holder by its thread, so another client's statement
//!   waits for it (its busy timeout) as another thread's would, never failing at once
//!   for sharing a thread with it. The thread ends, and the `Connection` is dropped
//!   (rolling back an open transaction), when the client goes away.
//! - A transaction in which a statement failed is failed, as PostgreSQL's is: every
//!   statement but COMMIT and ROLLBACK is refused (25P02) and COMMIT rolls it back, so
//!   a client never commits part of what it believed aborted.
//! - A client's BEGIN is READ COMMITTED unless it says otherwise, as PostgreSQL's: its
//!   transaction holds the database (every other connection waits) from its first write.
//! - A transaction holding the database left idle longer than `idle_in_transaction` is
//!   rolled back, and the client's next statements are
//!   refused (25P03) until it ends the transaction block. A COPY FROM STDIN receiving its
//!   data is not idle.
//! - A client over the connection limit is refused at startup and has no `Connection`:
//!   nothing it sends runs. Nor does anything of a client that has not logged in (a
//!   password's SCRAM exchange finished, TLS started where it is required): every
//!   message is refused until then.
//! - A client reaches the database only: a query with SAVE, LOAD, a COPY to or from a
//!   file (outside the files directory, when the server has one), or a PRAGMA setting one
//!   of the database's own settings is refused whole.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::{Sink, stream};
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{self, DefaultServerParameterProvider, StartupHandler};
use pgwire::api::cancel::CancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::Format;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{QueryResponse, Response, Tag};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, PgWireServerHandlers};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::startup::SecretKey;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use super::cancel::{Canceller, Cancels, Registered};
use super::copy;
use super::files::Files;
use super::{Options, types};
use crate::parse::{FileName, StatementKind};
use crate::{Connection, DataType, Database, StatementResult, Value};

use crate::postgres::SERVER_VERSION;

/// What answers one client.
pub(super) struct Handlers {
    client: Arc<Client>,
    cancels: Arc<Cancels>,
}

/// What a client is told of a statement it prepares.
#[derive(Debug)]
pub(super) struct Described {
    /// The statement as the client wrote it; empty for an empty query.
    pub(super) text: String,
    /// The types its parameters are used as, by position (`None` where any type goes,
    /// which reads as text).
    pub(super) params: Vec<Option<DataType>>,
    /// Its result's columns (none for a statement that returns no rows).
    pub(super) columns: Vec<(String, DataType)>,
}

impl Described {
    /// The PostgreSQL type of parameter `i` as described.
    pub(super) fn param_type(&self, i: usize) -> pgwire::api::Type {
        self.params
            .get(i)
            .copied()
            .flatten()
            .map_or(pgwire::api::Type::TEXT, types::pg_type)
    }
}

/// What a statement came to: its answer, or a live query's stream (`COPY (SUBSCRIBE
/// …)`), which the handler writes to the socket until it ends.
pub(super) enum Ran<T> {
    Done(T),
    Stream(super::live::Feed),
}

/// One client, as the protocol's handlers see it: the way to its thread.
#[derive(Clone)]
pub(super) struct Client {
    /// Its session (its `Connection` and what it is in the middle of) and its entry among
    /// those a cancel request may stop; `None` for a client over the connection limit.
    session: Option<(Arc<Session>, Arc<Registered>)>,
    /// The data of a COPY FROM STDIN received so far, and the most it may hold.
    copy: Arc<(parking_lot::Mutex<copy::Buffer>, usize)>,
    /// How it logs in.
    login: Login,
    /// Whether it has: until then nothing it sends reaches its thread (a failed login
    /// leaves pgwire reading the socket).
    authenticated: Arc<std::sync::atomic::AtomicBool>,
    /// The prepared statements and portals it keeps by name, bounded.
    pub(super) kept: Arc<parking_lot::Mutex<super::kept::Kept>>,
}

impl Handlers {
    /// Whether the client has logged in (shared with its handlers).
    pub(super) fn authenticated(&self) -> Arc<std::sync::atomic::AtomicBool> {
        Arc::clone(&self.client.authenticated)
    }

    /// The session whose idle transactions the client's thread rolls back.
    pub(super) fn idle_watch(&self) -> Option<Arc<Session>> {
        self.client.session.as_ref().map(|(s, _)| Arc::clone(s))
    }

    /// The handlers of a client of `db`; `refused` past the connection limit.
    pub(super) fn new(
        db: &Database,
        refused: bool,
        options: &Options,
        cancels: &Arc<Cancels>,
        access: &super::Access,
    ) -> Handlers {
        let idle_in_transaction = options.idle_in_transaction;
        let files = access.files.clone();
        let mut copy_limit = 0;
        let session = (!refused).then(|| {
            let conn = db.connect();
            conn.limit_statements(options.statement_timeout, options.memory_limit);
            // PostgreSQL's default: a transaction holds the database from its first write
            // only, so a driver's implicit BEGIN before its reads keeps no one waiting.
            conn.set_base_isolation(crate::parse::Isolation::ReadCommitted);
            // Statements prepared over the wire stay prepared, with their plans, while
            // the client uses them.
            conn.set_prepared_statement_cache_capacity(PREPARED_KEPT);
            copy_limit = options
                .memory_limit
                .map_or(conn.memory_limit(), |m| m.min(conn.memory_limit()));
            let registered = cancels.register(conn.get_interrupt_handle());
            let session = Session {
                files,
                idle_in_transaction,
                stop: Arc::clone(&registered.stop),
                refused: std::sync::OnceLock::new(),
                state: parking_lot::Mutex::new(State {
                    conn,
                    block: Block::Good,
                    pending: None,
                    last: Instant::now(),
                }),
            };
            (Arc::new(session), Arc::new(registered))
        });
        let sasl = match (&access.secret, &session) {
            (Some(secret), Some((_, registered))) => Some(Arc::new(
                SASLAuthStartupHandler::new(Arc::new(parameters()))
                    .with_scram(super::auth::scram(secret, access.cert.as_deref()))
                    .with_pid_secret_key_generator(Arc::new(super::auth::KeyOf(
                        registered.pid,
                        registered.secret,
                    ))),
            )),
            _ => None,
        };
        Handlers {
            client: Arc::new(Client {
                session,
                copy: Arc::new((parking_lot::Mutex::default(), copy_limit)),
                login: Login {
                    sasl,
                    tls_required: access.tls.is_some(),
                },
                authenticated: Arc::default(),
                kept: Arc::default(),
            }),
            cancels: Arc::clone(cancels),
        }
    }
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        Arc::clone(&self.client)
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        Arc::clone(&self.client)
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        Arc::clone(&self.client)
    }

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        Arc::clone(&self.client)
    }

    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        Arc::new(Canceller(Arc::clone(&self.cancels)))
    }
}

impl Client {
    /// The data of a COPY FROM STDIN received so far, and the most it may hold.
    pub(super) fn copy_buffer(&self) -> (&parking_lot::Mutex<copy::Buffer>, usize) {
        (&self.copy.0, self.copy.1)
    }

    /// The client's session; refused past the connection limit and before the client has
    /// logged in.
    pub(super) fn session(&self) -> PgWireResult<&Session> {
        let Some((session, _)) = &self.session else {
            return Err(PgWireError::UserError(Box::new(too_many())));
        };
        if !self.authenticated.load(std::sync::atomic::Ordering::Acquire) {
            return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                "FATAL".to_owned(),
                "28000".to_owned(),
                "the client has not logged in: nothing it sends runs".to_owned(),
            ))));
        }
        if let Some(refused) = session.refused.get() {
            return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                refused.severity.clone(),
                refused.code.clone(),
                refused.message.clone(),
            ))));
        }
        Ok(session)
    }
}

/// The 53300 error of a client over the connection limit.
fn too_many() -> ErrorInfo {
    ErrorInfo::new(
        "FATAL".to_owned(),
        "53300".to_owned(),
        "too many clients already: the server's limit of connections is reached; try again when one leaves"
            .to_owned(),
    )
}

#[async_trait]
impl StartupHandler for Client {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let PgWireFrontendMessage::Startup(_) = &message {
            if self.login.tls_required && !client.is_secure() {
                return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                    "FATAL".to_owned(),
                    "28000".to_owned(),
                    "this server takes TLS connections only: connect with sslmode=require".to_owned(),
                ))));
            }
            if self.session.is_none() {
                return Err(PgWireError::UserError(Box::new(too_many())));
            }
        }
        let Some((session, registered)) = &self.session else {
            return Err(PgWireError::UserError(Box::new(too_many())));
        };
        if let Some(sasl) = &self.login.sasl {
            sasl.on_startup(client, message).await?;
            // Logged in once pgwire's SCRAM handler has finished (and said so).
            if matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
                // pgwire has told the client it is ready: a setting refused now is the
                // answer to everything it sends.
                if let Err(refused) = session.startup(client.metadata()) {
                    let _ = session.refused.set(refused);
                }
                self.authenticated
                    .store(true, std::sync::atomic::Ordering::Release);
            }
            return Ok(());
        }
        let PgWireFrontendMessage::Startup(startup) = &message else {
            return Ok(());
        };
        auth::protocol_negotiation(client, startup).await?;
        auth::save_startup_parameters_to_metadata(client, startup);
        session
            .startup(client.metadata())
            .map_err(PgWireError::UserError)?;
        client.set_pid_and_secret_key(registered.pid, SecretKey::I32(registered.secret));
        auth::finish_authentication(client, &parameters()).await?;
        self.authenticated
            .store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }
}

/// What the server tells a client of itself at startup.
fn parameters() -> DefaultServerParameterProvider {
    let mut parameters = DefaultServerParameterProvider::default();
    parameters.server_version = SERVER_VERSION.to_owned();
    parameters
}

/// How one client logs in: by SCRAM (when the server has a password), over TLS only
/// (when it has TLS).
#[derive(Clone, Default)]
pub(super) struct Login {
    sasl: Option<Arc<SASLAuthStartupHandler<DefaultServerParameterProvider>>>,
    tls_required: bool,
}

#[async_trait]
impl SimpleQueryHandler for Client {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = match self.session() {
            Ok(session) => session,
            Err(e) => return Ok(vec![Response::Error(Box::new(e.into()))]),
        };
        if let Some(forgot) = self.forget(client, session, query) {
            return Ok(vec![forgot]);
        }
        match session.simple(query) {
            Ran::Done(responses) => Ok(responses),
            Ran::Stream(feed) => Ok(vec![Response::Error(
                super::live::write(client, feed, &session.stop).await?,
            )]),
        }
    }
}

impl Client {
    /// `DEALLOCATE [PREPARE] {name | ALL}` and `DISCARD ALL`, as drivers send them to
    /// forget what they prepared (psycopg after a ROLLBACK, connection pools when a
    /// connection is given back): the client's named prepared statements dropped, and for
    /// DISCARD ALL its settings reset (outside a transaction block only, as in
    /// PostgreSQL); `None` for any other query.
    fn forget<C>(&self, client: &mut C, session: &Session, query: &str) -> Option<Response>
    where
        C: ClientPortalStore,
        C::PortalStore: PortalStore,
    {
        let text = query.trim().trim_end_matches(';').trim_end();
        // Any other query is passed on after a look at its first word only.
        let starts = |word: &str| {
            text.get(..word.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(word))
        };
        if !starts("deallocate") && !starts("discard") {
            return None;
        }
        let words: Vec<&str> = text.split_whitespace().collect();
        let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
        let lower: Vec<&str> = lower.iter().map(String::as_str).collect();
        let (name, tag) = match lower.as_slice() {
            ["deallocate", "prepare", "all"] | ["deallocate", "all"] => (None, "DEALLOCATE ALL"),
            ["deallocate", "prepare", _] | ["deallocate", _] => {
                (Some(words[words.len() - 1].trim_matches('"')), "DEALLOCATE")
            }
            ["discard", "all"] => {
                let state = session.state.lock();
                if !state.conn.is_autocommit() {
                    return Some(Response::Error(Box::new(ErrorInfo::new(
                        "ERROR".to_owned(),
                        "25001".to_owned(),
                        "DISCARD ALL cannot run inside a transaction block".to_owned(),
                    ))));
                }
                if let Err(e) = state.conn.execute("RESET ALL", ()) {
                    return Some(Response::Error(Box::new(types::error_info(&e, text))));
                }
                (None, "DISCARD ALL")
            }
            _ => return None,
        };
        let store = client.portal_store();
        let mut kept = self.kept.lock();
        match name {
            Some(name) => {
                if !kept.has_statement(name) {
                    return Some(Response::Error(Box::new(ErrorInfo::new(
                        "ERROR".to_owned(),
                        "26000".to_owned(),
                        format!("prepared statement \"{name}\" does not exist"),
                    ))));
                }
                store.rm_statement(name);
                kept.forget(false, name);
            }
            None => {
                for name in kept.statement_names() {
                    if name != pgwire::api::DEFAULT_NAME {
                        store.rm_statement(&name);
                        kept.forget(false, &name);
                    }
                }
            }
        }
        Some(Response::Execution(Tag::new(tag)))
    }
}

/// What a client's transaction block is, as PostgreSQL tells it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    /// None open, or one whose statements all ran.
    Good,
    /// A statement failed in it: only COMMIT and ROLLBACK are taken.
    Failed,
    /// Rolled back for being idle too long.
    TimedOut,
}

/// A client's session: its `Connection`, on the client's own thread (the engine knows a
/// transaction's holder by its thread), and what it is in the middle of.
pub(super) struct Session {
    files: Option<Arc<Files>>,
    idle_in_transaction: Duration,
    /// Set by a cancel request: what a live query's stream looks at between batches.
    pub(super) stop: Arc<std::sync::atomic::AtomicBool>,
    /// A setting given at startup that was refused after the client was told it was
    /// ready (a password's login): the answer to everything it sends.
    refused: std::sync::OnceLock<Box<ErrorInfo>>,
    state: parking_lot::Mutex<State>,
}

/// A session's state while one of the client's messages is answered: the idle clock
/// restarts when it is done.
struct Touched<'a>(parking_lot::MutexGuard<'a, State>);

impl std::ops::Deref for Touched<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.0
    }
}

impl std::ops::DerefMut for Touched<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.0
    }
}

impl Drop for Touched<'_> {
    fn drop(&mut self) {
        self.0.last = Instant::now();
    }
}

/// What a session is in the middle of, and its connection: used under this state's
/// lock, so one message's statements at a time, on the client's thread.
struct State {
    conn: Connection,
    block: Block,
    /// A COPY FROM STDIN waiting for its data.
    pending: Option<copy::Pending>,
    /// When the client last sent something.
    last: Instant,
}

impl Session {
    /// Runs the statements of a simple query.
    pub(super) fn simple(&self, text: &str) -> Ran<Vec<Response>> {
        let mut state = self.touch();
        let State {
            conn, block, pending, ..
        } = &mut *state;
        match subscription(conn, text, &[], block) {
            Some(Ok(feed)) => self.stream(feed),
            Some(Err(e)) => Ran::Done(vec![Response::Error(e)]),
            None => Ran::Done(run_simple(conn, text, block, pending, self.files.as_deref())),
        }
    }

    /// Prepares and describes one statement (extended query's Parse), its parameters of
    /// the types the client `declared` (`None` where it left them to the server).
    pub(super) fn prepare(
        &self,
        text: &str,
        declared: &[Option<DataType>],
    ) -> Result<Described, Box<ErrorInfo>> {
        let mut state = self.touch();
        let State { conn, block, .. } = &mut *state;
        let prepared = prepare(conn, text, self.files.as_deref(), declared);
        if prepared.is_err() {
            fail(conn, block);
        }
        prepared
    }

    /// A statement failed before it ran (its Bind did not fit): the open transaction
    /// block, if any, is failed.
    pub(super) fn failed(&self) {
        let mut state = self.touch();
        let State { conn, block, .. } = &mut *state;
        fail(conn, block);
    }

    /// Runs a prepared statement with its parameters' values, its result's columns in
    /// `formats` (extended query's Execute).
    /// Its rows must be of the types the statement was `described` with (what the client
    /// was told): else it is an error, never values of another type.
    pub(super) fn execute(
        &self,
        text: &str,
        params: Vec<Value>,
        formats: &Format,
        described: &[DataType],
    ) -> Ran<Response> {
        let mut state = self.touch();
        let State {
            conn, block, pending, ..
        } = &mut *state;
        match subscription(conn, text, &params, block) {
            Some(Ok(feed)) => self.stream(feed),
            Some(Err(e)) => Ran::Done(Response::Error(e)),
            None => {
                let run = Run {
                    text,
                    formats,
                    described,
                };
                Ran::Done(execute(conn, run, params, block, pending))
            }
        }
    }

    /// Runs the COPY FROM STDIN waiting with the data the client sent: the rows written.
    pub(super) fn copy_in(&self, data: &[u8]) -> Result<usize, Box<ErrorInfo>> {
        let mut state = self.touch();
        let State {
            conn, block, pending, ..
        } = &mut *state;
        let written = match pending.take() {
            Some(copy) => copy::finish(conn, &copy, data),
            None if *block == Block::TimedOut => Err(Box::new(ErrorInfo::new(
                "ERROR".to_owned(),
                "25P03".to_owned(),
                "the transaction was rolled back for being idle too long, and its COPY with it; end the block (ROLLBACK) and begin again".to_owned(),
            ))),
            None => Err(Box::new(ErrorInfo::new(
                "ERROR".to_owned(),
                "08P01".to_owned(),
                "COPY data came with no COPY … FROM STDIN waiting for it".to_owned(),
            ))),
        };
        if written.is_err() {
            fail(conn, block);
        }
        written
    }

    /// Drops the COPY FROM STDIN waiting: the client abandoned it, or sent too much.
    pub(super) fn copy_fail(&self) {
        let mut state = self.touch();
        let State {
            conn, block, pending, ..
        } = &mut *state;
        if pending.take().is_some() {
            fail(conn, block);
        }
    }

    /// A stream begins (a cancel since its message came ends it).
    fn stream<T>(&self, feed: super::live::Feed) -> Ran<T> {
        Ran::Stream(feed)
    }

    /// Sets what the client gave at startup as SET sets it: a parameter named as a
    /// setting a client may change (node-postgres' `statement_timeout`, psql's
    /// `application_name`), and each `-c name=value` of `options` (PGOPTIONS); others
    /// (the user, the database, the settings ecsql keeps fixed) are taken and change
    /// nothing. A value refused is the client's FATAL error.
    pub(super) fn startup(
        &self,
        given: &std::collections::HashMap<String, String>,
    ) -> Result<(), Box<ErrorInfo>> {
        // `options` first, in the order given; then the parameters named as settings
        // (which win, as in PostgreSQL), in an order of their own (the startup message's
        // is not kept).
        let mut settings = given
            .get("options")
            .map(|o| startup_options(o))
            .unwrap_or_default();
        let mut direct: Vec<(String, String)> = given
            .iter()
            .filter(|(k, _)| k.as_str() != "options")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        direct.sort();
        settings.extend(direct);
        for (name, value) in settings {
            let plain = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            let settable = crate::postgres::setting_named(&name)
                .is_some_and(|s| s.settable && s.name != "client_encoding")
                || crate::engine::is_connections_own(&name);
            if !plain || !settable {
                continue;
            }
            let sql = format!("SET {name} = '{}'", value.replace('\'', "''"));
            if let Err(e) = self.state.lock().conn.execute(&sql, ()) {
                let info = types::error_info(&e, &sql);
                // The place is in the SET made here, not in anything the client wrote.
                let place = e.location().map(|at| format!(" at {at}")).unwrap_or_default();
                let message = info.message.replacen(&place, "", 1);
                return Err(Box::new(ErrorInfo::new(
                    "FATAL".to_owned(),
                    info.code,
                    format!("the startup parameter {name} = {value}: {message}"),
                )));
            }
        }
        Ok(())
    }

    /// The state, for a message of the client's: a cancel sent before it does not reach
    /// it, and the time it takes is not idle time (the clock restarts when it is done).
    fn touch(&self) -> Touched<'_> {
        self.stop.store(false, std::sync::atomic::Ordering::SeqCst);
        Touched(self.state.lock())
    }

    /// COPY data came: the COPY waiting for it is not idle.
    pub(super) fn copy_data_came(&self) {
        self.state.lock().last = Instant::now();
    }

    /// Rolls back the client's transaction while it stays idle past the limit (every
    /// other connection waits while one is open); its statements are then refused
    /// (25P03) until it ends the block. A COPY FROM STDIN is idle when no data came for
    /// as long: it is dropped with the transaction. Runs on the client's thread, between
    /// its messages, until the session ends.
    pub(super) async fn roll_back_when_idle(self: Arc<Self>) {
        loop {
            let due = self.state.lock().last + self.idle_in_transaction;
            tokio::time::sleep_until(due.into()).await;
            let mut state = self.state.lock();
            if state.last + self.idle_in_transaction > Instant::now() {
                continue;
            }
            if state.conn.holds_transaction() {
                state.pending = None;
                let _ = state.conn.execute("ROLLBACK", ());
                state.block = Block::TimedOut;
            }
            state.last = Instant::now();
        }
    }
}

/// The `-c name=value` (or `-cname=value`, `--name=value`) settings of a startup's
/// `options`, in order, as PostgreSQL reads them (words apart by spaces, `\ ` a space in
/// one and `\\` a backslash; a dash in a name is `_`).
fn startup_options(options: &str) -> Vec<(String, String)> {
    let mut split = Vec::new();
    let mut word = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    split.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        split.push(word);
    }
    let mut settings = Vec::new();
    let mut words = split.iter().map(String::as_str);
    while let Some(word) = words.next() {
        let pair = if word == "-c" {
            words.next()
        } else {
            word.strip_prefix("--").or_else(|| word.strip_prefix("-c"))
        };
        if let Some((name, value)) = pair.and_then(|p| p.split_once('=')) {
            settings.push((name.replace('-', "_"), value.to_owned()));
        }
    }
    settings
}

/// The live query `text` asks to stream, opened (`COPY (SUBSCRIBE …) TO STDOUT` alone in
/// its query, run with `params`), or why it cannot be; `None` for any other text.
fn subscription(
    conn: &Connection,
    text: &str,
    params: &[Value],
    block: &mut Block,
) -> Option<Result<super::live::Feed, Box<ErrorInfo>>> {
    if !super::live::may_subscribe(text) {
        return None;
    }
    let statements = crate::parse::parse(text).ok()?;
    let at = statements
        .iter()
        .position(|s| super::live::requested(s).is_some())?;
    let opened = if statements.len() > 1 {
        Err(Box::new(ErrorInfo::new(
            "ERROR".to_owned(),
            "0A000".to_owned(),
            "COPY (SUBSCRIBE …) TO STDOUT must be the only statement of its query: it streams until the client cancels it".to_owned(),
        )))
    } else if let Some(Response::Error(e)) = before(conn, block, &statements[at].kind) {
        Err(e)
    } else {
        let (query, options) = super::live::requested(&statements[at])?;
        super::live::open(conn, text, query, options, params.to_vec())
    };
    if opened.is_err() {
        fail(conn, block);
    }
    Some(opened)
}

/// The most columns a result may have, as PostgreSQL's (its rows count them in 16 bits).
const MAX_COLUMNS: usize = 1664;

/// How many prepared statements a client's connection keeps with their plans.
const PREPARED_KEPT: usize = 256;

/// Runs the statements of `text` in order, to the first that fails.
fn run_simple(
    conn: &Connection,
    text: &str,
    block: &mut Block,
    pending: &mut Option<copy::Pending>,
    files: Option<&Files>,
) -> Vec<Response> {
    let statements = match crate::parse::parse(text) {
        Ok(statements) => statements,
        Err(e) => {
            fail(conn, block);
            return vec![Response::Error(Box::new(types::error_info(&e.into(), text)))];
        }
    };
    if statements.is_empty() {
        return vec![Response::EmptyQuery];
    }
    if let Some(refused) = refused(&statements, text, files) {
        fail(conn, block);
        return vec![Response::Error(Box::new(refused))];
    }
    // The rest of the query would run before COPY FROM STDIN's data came: refused whole,
    // before any of it runs.
    if statements.iter().rev().skip(1).any(copy::is_copy_in) {
        fail(conn, block);
        return vec![Response::Error(Box::new(ErrorInfo::new(
            "ERROR".to_owned(),
            "0A000".to_owned(),
            "COPY … FROM STDIN must be the last statement of its query".to_owned(),
        )))];
    }
    let mut responses = Vec::new();
    for statement in &statements {
        if let Some(answer) = before(conn, block, &statement.kind) {
            let stop = matches!(answer, Response::Error(_));
            responses.push(answer);
            if stop {
                return responses;
            }
            continue;
        }
        let placed = files.and_then(|f| f.place(statement)).and_then(Result::ok);
        let printed = placed.as_ref().map(ToString::to_string);
        // A file named in the files directory runs as placed there (printed back).
        let piece = printed
            .as_deref()
            .unwrap_or(&text[statement_range(text, statement, &statements)]);
        if copy::is_copy_in(statement) {
            match copy::begin(conn, piece, statement) {
                Ok((copy, response)) => {
                    *pending = Some(copy);
                    responses.push(response);
                }
                Err(e) => {
                    fail(conn, block);
                    responses.push(Response::Error(e));
                }
            }
            return responses;
        }
        let mut failed = None;
        let ran = conn.run_script_at(piece, statement.at, |result| match result {
            Ok(result) => match response(conn, result, &Format::UnifiedText) {
                Ok(r) => {
                    responses.push(r);
                    true
                }
                Err(e) => {
                    failed = Some(e);
                    false
                }
            },
            Err(e) => {
                failed = Some(Box::new(types::error_info(&e, text)));
                false
            }
        });
        if let Err(e) = ran {
            failed = Some(Box::new(types::error_info(&e, text)));
        }
        if let Some(e) = failed {
            fail(conn, block);
            responses.push(Response::Error(e));
            return responses;
        }
    }
    responses
}

/// The answer a statement of `kind` gets without running, in a block as `block` is: the
/// end of a failed block (COMMIT of one rolls it back, as in PostgreSQL), the refusal of
/// any other statement in it, or COMMIT or ROLLBACK with no transaction open (done, as
/// PostgreSQL answers them); `None` to run it.
fn before(conn: &Connection, block: &mut Block, kind: &StatementKind) -> Option<Response> {
    let ends = matches!(kind, StatementKind::Commit | StatementKind::Rollback);
    if *block != Block::Good {
        if ends {
            if !conn.is_autocommit() {
                let _ = conn.execute("ROLLBACK", ());
            }
            *block = Block::Good;
            return Some(Response::TransactionEnd(Tag::new("ROLLBACK")));
        }
        let (code, message) = match block {
            Block::TimedOut => (
                "25P03",
                "the transaction was rolled back for being idle too long; end the block (ROLLBACK) and begin again",
            ),
            _ => (
                "25P02",
                "current transaction is aborted, commands ignored until end of transaction block",
            ),
        };
        return Some(Response::Error(Box::new(ErrorInfo::new(
            "ERROR".to_owned(),
            code.to_owned(),
            message.to_owned(),
        ))));
    }
    if matches!(kind, StatementKind::Subscribe(_)) {
        fail(conn, block);
        return Some(Response::Error(Box::new(ErrorInfo::new(
            "ERROR".to_owned(),
            "0A000".to_owned(),
            "a client of ecsql serve streams a live query as a COPY: COPY (SUBSCRIBE …) TO STDOUT".to_owned(),
        ))));
    }
    if ends && conn.is_autocommit() {
        // No transaction to end (a failed COMMIT rolled it back already, a BEGIN failed):
        // done, as PostgreSQL answers it.
        let verb = if matches!(kind, StatementKind::Commit) {
            "COMMIT"
        } else {
            "ROLLBACK"
        };
        return Some(Response::TransactionEnd(Tag::new(verb)));
    }
    None
}

/// Prepares `text` (one statement) and describes it: the types its parameters are used
/// as and its result's columns.
fn prepare(
    conn: &Connection,
    text: &str,
    files: Option<&Files>,
    declared: &[Option<DataType>],
) -> Result<Described, Box<ErrorInfo>> {
    let error = |e: crate::Error| Box::new(types::error_info(&e, text));
    let mut statement = conn.prepare_cached(text).map_err(error)?;
    if let Some(refused) = refused(std::slice::from_ref(statement.parsed()), text, files) {
        return Err(Box::new(refused));
    }
    // A file named in the files directory: the statement is prepared as placed there.
    let placed = files
        .and_then(|f| f.place(statement.parsed()))
        .and_then(Result::ok);
    let text = match &placed {
        Some(placed) => {
            let printed = placed.to_string();
            statement = conn.prepare_cached(&printed).map_err(error)?;
            printed
        }
        None => text.to_owned(),
    };
    let (params, columns) = statement.describe_declared(declared).map_err(error)?;
    let headings: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    let names = crate::plan::bare_names(&headings);
    Ok(Described {
        text,
        params,
        columns: names.into_iter().zip(columns).map(|(n, c)| (n, c.ty)).collect(),
    })
}

/// Runs the prepared statement `text` with `params`, its rows in `formats`.
/// A prepared statement's run: its text, its result's formats, and the types its result's
/// columns were described as.
struct Run<'a> {
    text: &'a str,
    formats: &'a Format,
    described: &'a [DataType],
}

fn execute(
    conn: &Connection,
    Run {
        text,
        formats,
        described,
    }: Run<'_>,
    params: Vec<Value>,
    block: &mut Block,
    pending: &mut Option<copy::Pending>,
) -> Response {
    let ran = conn.prepare_cached(text).and_then(|mut statement| {
        if let Some(answer) = before(conn, block, &statement.parsed().kind) {
            return Ok(Err(answer));
        }
        if copy::is_copy_in(statement.parsed()) {
            return Ok(Err(match copy::begin(conn, text, statement.parsed()) {
                Ok((copy, response)) => {
                    *pending = Some(copy);
                    response
                }
                Err(e) => {
                    fail(conn, block);
                    Response::Error(e)
                }
            }));
        }
        statement.run_any(params).map(Ok)
    });
    let answer = match ran {
        Ok(Err(answer)) => return answer,
        Ok(Ok(result)) => as_described(&result, described).and_then(|()| response(conn, result, formats)),
        Err(e) => Err(Box::new(types::error_info(&e, text))),
    };
    answer.unwrap_or_else(|e| {
        fail(conn, block);
        Response::Error(e)
    })
}

/// Refuses a result whose columns are not of the types they were `described` as (a
/// parameter's value of another type than it was described with can change them): the
/// client reads each column as it was told.
fn as_described(result: &StatementResult, described: &[DataType]) -> Result<(), Box<ErrorInfo>> {
    let Some(rows) = &result.rows else {
        return Ok(());
    };
    let types = rows.column_types();
    if result.verb == "COPY" || types.len() != described.len() {
        return Ok(());
    }
    let differs = types
        .iter()
        .zip(described)
        .position(|(t, d)| t != d && *t != DataType::Null && *d != DataType::Null);
    match differs {
        None => Ok(()),
        Some(i) => Err(Box::new(ErrorInfo::new(
            "ERROR".to_owned(),
            "42804".to_owned(),
            format!(
                "column {} of the result is {}, but the client was told {}: give the parameters the types they were described with (or cast them, $1::float8)",
                i + 1,
                types[i],
                described[i]
            ),
        ))),
    }
}

/// A statement failed: the open transaction block, if any, is failed. One that holds
/// the database is rolled back at once, so that nobody waits for a block that can only
/// end in ROLLBACK.
fn fail(conn: &Connection, block: &mut Block) {
    if !conn.is_autocommit() {
        *block = Block::Failed;
    }
    if conn.holds_transaction() {
        let _ = conn.execute("ROLLBACK", ());
    }
}

/// The byte range of `statement`'s text in `text`: from where it starts to where the
/// next one does.
fn statement_range(
    text: &str,
    statement: &crate::parse::Statement,
    all: &[crate::parse::Statement],
) -> std::ops::Range<usize> {
    let start = types::offset(text, statement.at).unwrap_or(0);
    let end = all
        .iter()
        .filter_map(|s| types::offset(text, s.at))
        .filter(|&o| o > start)
        .min()
        .unwrap_or(text.len());
    start..end
}

/// Why `statements` (of `text`) are refused, when one reaches beyond the database: a file
/// of the server's (SAVE, LOAD, COPY to or from a file) outside `files` (all of them,
/// without it), or one of the database's own settings (a PRAGMA that sets it).
pub(super) fn refused(
    statements: &[crate::parse::Statement],
    text: &str,
    files: Option<&Files>,
) -> Option<ErrorInfo> {
    let (statement, why) = statements.iter().find_map(|s| match &s.kind {
        StatementKind::CopyTo {
            path: FileName::Stdout,
            ..
        }
        | StatementKind::CopyFrom {
            path: FileName::Stdin,
            ..
        } => None,
        StatementKind::Save { .. }
        | StatementKind::Load { .. }
        | StatementKind::CopyTo { .. }
        | StatementKind::CopyFrom { .. } => match files.and_then(|f| f.place(s)) {
            Some(Ok(_)) => None,
            Some(Err(why)) => Some((s, format!("{} may not name that file: {why}", s.kind.verb()))),
            None => Some((
                s,
                format!(
                    "{} reaches a file of the server's, which a client of ecsql serve may not: run it in the program or shell that holds the database, or start the server with a directory for its clients' files (--files DIR)",
                    s.kind.verb()
                ),
            )),
        },
        StatementKind::Pragma {
            name: Some(name),
            value: Some(_),
        }
        | StatementKind::SetVariable { name, .. }
            if crate::engine::is_database_wide(&name.value) =>
        {
            let verb = match &s.kind {
                StatementKind::SetVariable { value: None, .. } => "RESET",
                StatementKind::SetVariable { .. } => "SET",
                _ => "PRAGMA",
            };
            Some((
                s,
                format!(
                    "{verb} {}: {} is a setting of the whole database, which a client of ecsql serve may not change: set it in the program or in the scripts ecsql serve runs first",
                    name.value, name.value
                ),
            ))
        }
        _ => None,
    })?;
    let mut info = ErrorInfo::new("ERROR".to_owned(), "42501".to_owned(), why);
    info.position = types::position(text, statement.at).map(|p| p.to_string());
    Some(info)
}

/// A statement's result as PostgreSQL answers it: rows (in `formats`), or a command tag;
/// an error for formats that do not fit its columns.
fn response(
    conn: &Connection,
    result: StatementResult,
    formats: &Format,
) -> Result<Response, Box<ErrorInfo>> {
    // Only COPY … TO STDOUT is a COPY with rows: its lines.
    if result.verb == "COPY" && result.rows.is_some() {
        return Ok(copy::copy_out(conn, result));
    }
    if let Some(rows) = result.rows {
        // A column's name as PostgreSQL's clients expect it: `hp` for `Unit.hp`.
        let names = crate::plan::bare_names(&rows.column_names());
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        if names.len() > MAX_COLUMNS {
            return Err(Box::new(ErrorInfo::new(
                "ERROR".to_owned(),
                "54011".to_owned(),
                format!(
                    "a result of {} columns: PostgreSQL's clients take at most {MAX_COLUMNS}",
                    names.len()
                ),
            )));
        }
        let formats = types::result_formats(formats, names.len())?;
        let fields = types::fields(&names, &rows.column_types(), &formats);
        let (chunk, from) = rows.unread();
        let data = types::data_rows(chunk, from, &formats).into_iter().map(Ok);
        let mut query = QueryResponse::new(fields, stream::iter(data));
        // A write with RETURNING is tagged as the write, as in PostgreSQL.
        match result.verb.split(' ').next() {
            Some("INSERT") => query.set_command_tag("INSERT 0"),
            Some(verb @ ("UPDATE" | "DELETE")) => query.set_command_tag(verb),
            _ => {}
        }
        return Ok(Response::Query(query));
    }
    let n = result.affected;
    Ok(match result.verb {
        "BEGIN" => Response::TransactionStart(Tag::new("BEGIN")),
        "COMMIT" | "END" => Response::TransactionEnd(Tag::new("COMMIT")),
        "ROLLBACK" => Response::TransactionEnd(Tag::new("ROLLBACK")),
        "INSERT" => Response::Execution(Tag::new("INSERT").with_oid(0).with_rows(n)),
        verb @ ("UPDATE" | "DELETE" | "COPY") => Response::Execution(Tag::new(verb).with_rows(n)),
        verb => Response::Execution(Tag::new(verb)),
    })
}

#[cfg(test)]
mod tests {
    use super::startup_options;

    #[test]
    fn startup_options_read_as_postgresql_splits_them() {
        let pairs = |o: &str| startup_options(o);
        assert_eq!(
            pairs("-c a=1 --b-c=2 -cd=3 junk -c"),
            [("a", "1"), ("b_c", "2"), ("d", "3")].map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
        assert_eq!(
            pairs("-c default_transaction_isolation=repeatable\\ read -c x=a\\\\b"),
            [
                ("default_transaction_isolation", "repeatable read"),
                ("x", "a\\b")
            ]
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
    }
}
