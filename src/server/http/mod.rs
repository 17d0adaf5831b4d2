//! The server's HTTP side (`Options::http`): a JSON API over the running world and the
//! explorer page that uses it (hyper does HTTP/1.1; the answers are `api.rs`'s, the live
//! streams `stream.rs`'s, the page `page/`).
//!
//! Invariants:
//! - The PostgreSQL side's rules hold here: loopback only unless a password or `trust`;
//!   with a password, every request carries it (HTTP Basic, any user name; compared as
//!   SHA-256 digests in constant time; a wrong one answered after a pause), and beyond
//!   loopback only over TLS (`Server::start` refuses it otherwise); with TLS, every
//!   connection uses it; a statement reaches the server's files only inside `--files`,
//!   and no database-wide setting.
//! - A page elsewhere in the user's browser cannot use the API: a request its `Origin` or
//!   `Sec-Fetch-Site` says another site sent is refused, whatever its method; without a
//!   password, a request's `Host` must be localhost or an address (a name could be a
//!   stranger's DNS pointing here: a DNS rebinding); a POST must be `application/json`.
//!   The page is served with a policy that runs only its own script.
//! - Bounded: at most `Options::max_connections` connections (one past it is answered
//!   503 and let go) and as many statements running for them; a request body of
//!   `MAX_BODY` bytes within `HEADER_WAIT`, headers within `HEADER_WAIT` (an idle
//!   connection is closed then); pages of at most `api::MAX_PAGE_ROWS` rows,
//!   `stream::MAX_STREAMS` streams; statements under the clients' time and memory limits.
//! - The server's runtime never runs a statement: each runs on a thread that may wait,
//!   and is interrupted if its request goes away first (its client left, the server
//!   stopped).

mod api;
mod json;
mod page;
mod stream;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use self::api::{Answer, Api};
use super::ticker::Clock;
use crate::Database;

/// The most bytes a request's body may have.
const MAX_BODY: usize = 1 << 20;
/// How long a request's headers may take to come.
const HEADER_WAIT: Duration = Duration::from_secs(30);

/// What every request of the HTTP side shares.
pub(super) struct Http {
    pub(super) db: Database,
    api: Api,
    /// SHA-256 of the password every request must carry.
    secret: Option<[u8; 32]>,
    /// The address listened on (a `Host` naming it is this server).
    listen: SocketAddr,
    /// Each statement's time and memory limits.
    limits: (Option<Duration>, Option<usize>),
    clock: Arc<Clock>,
    rate: Option<f64>,
    streams: Arc<AtomicUsize>,
    /// Statements running for requests: at most `Options::max_connections`.
    running: Arc<tokio::sync::Semaphore>,
    stopping: tokio::sync::watch::Receiver<bool>,
}

impl Http {
    pub(super) fn new(
        db: &Database,
        options: &super::Options,
        access: &super::Access,
        listen: SocketAddr,
        clock: &Arc<Clock>,
        stopping: tokio::sync::watch::Receiver<bool>,
    ) -> Http {
        Http {
            db: db.clone(),
            api: Api {
                files: access.files.clone(),
                kept: parking_lot::Mutex::default(),
            },
            secret: options.password.as_deref().map(digest),
            listen,
            limits: (options.statement_timeout, options.memory_limit),
            clock: Arc::clone(clock),
            rate: options.tick_rate,
            streams: Arc::new(AtomicUsize::new(0)),
            running: Arc::new(tokio::sync::Semaphore::new(options.max_connections.max(1))),
            stopping,
        }
    }
}

fn digest(password: &str) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, password.as_bytes());
    let mut out = [0; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// Accepts HTTP connections until told to stop.
pub(super) async fn accept(
    listener: TcpListener,
    http: Arc<Http>,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    max_connections: usize,
) {
    let open = Arc::new(AtomicUsize::new(0));
    let mut stopping = http.stopping.clone();
    loop {
        let socket = tokio::select! {
            () = stopped(&mut stopping) => return,
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        let _ = socket.set_nodelay(true);
        let seat = super::Seat::take(&open);
        let refused = seat.count > max_connections;
        let http = Arc::clone(&http);
        let tls = tls.clone();
        let mut stopping = http.stopping.clone();
        tokio::spawn(async move {
            let _seat = seat;
            let served = async {
                match tls {
                    Some(tls) => {
                        let Ok(Ok(socket)) = tokio::time::timeout(HEADER_WAIT, tls.accept(socket)).await
                        else {
                            return;
                        };
                        serve(TokioIo::new(socket), http, refused).await;
                    }
                    None => serve(TokioIo::new(socket), http, refused).await,
                }
            };
            tokio::select! {
                () = served => {}
                () = stopped(&mut stopping) => {}
            }
        });
    }
}

/// Once the server is stopping.
async fn stopped(stopping: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await;
}

/// Serves one connection's requests.
async fn serve<I>(io: TokioIo<I>, http: Arc<Http>, refused: bool)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request| {
        let http = Arc::clone(&http);
        async move { Ok::<_, Infallible>(handle(http, request, refused).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_WAIT)
        // One refused for the connection limit is told so once, then let go.
        .keep_alive(!refused)
        .serve_connection(io, service)
        .await;
}

type Body = BoxBody<Bytes, Infallible>;

/// `response` with the methods its path takes.
fn allow(mut response: Response<Body>, methods: &'static str) -> Response<Body> {
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(methods));
    response
}

fn answer(a: Answer) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(a.body)).boxed());
    *response.status_mut() = StatusCode::from_u16(a.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    if a.status == 401 {
        headers.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"ecsql\", charset=\"UTF-8\""),
        );
    }
    response
}

/// Answers one request.
async fn handle(http: Arc<Http>, request: Request<Incoming>, refused: bool) -> Response<Body> {
    if refused {
        return answer(Answer::error(
            503,
            "too many connections: the server takes no more HTTP connections than its connection limit (--max-connections)",
        ));
    }
    if let Some(refusal) = http.admit(&request).await {
        return answer(refusal);
    }
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or("").to_owned();
    let method = request.method().clone();
    match (&method, path.as_str()) {
        (&Method::GET, "/" | "/index.html") => page::asset("index.html"),
        (&Method::GET, "/explorer.js") => page::asset("explorer.js"),
        (&Method::GET, "/explorer.css") => page::asset("explorer.css"),
        (&Method::GET, "/explorer-worker.js") => page::asset("explorer-worker.js"),
        (&Method::POST, "/api/query") => answer(post_query(&http, request).await),
        (&Method::GET, "/api/catalog") => answer(blocking(&http, api::catalog).await),
        (&Method::GET, "/api/systems") => answer(blocking(&http, api::systems).await),
        (&Method::GET, "/api/clock") => {
            let ticks = super::Ticks {
                ran: http.clock.ran.load(Ordering::Relaxed),
                failed: http.clock.failed.load(Ordering::Relaxed),
                last_error: http.clock.last_error.lock().clone(),
            };
            let rate = http.rate;
            answer(blocking(&http, move |conn| api::clock(conn, rate, &ticks)).await)
        }
        (&Method::GET, "/api/subscribe") => subscribe(&http, &query).await,
        (&Method::GET, p) if p.starts_with("/api/entity/") => {
            let id = &p["/api/entity/".len()..];
            match id.parse::<u64>() {
                Ok(id) => answer(blocking(&http, move |conn| api::entity(conn, id)).await),
                Err(_) => answer(Answer::error(
                    400,
                    &format!("/api/entity/{id}: expected an entity's id, a whole number"),
                )),
            }
        }
        (&Method::GET, p) if p.starts_with("/api/result/") => {
            let id = &p["/api/result/".len()..];
            let Ok(id) = id.parse::<u64>() else {
                return answer(Answer::error(
                    400,
                    &format!("/api/result/{id}: expected a result's number, as its `next` gives it"),
                ));
            };
            let args = Args::parse(&query);
            let (offset, page) = match (args.number("offset", 0), args.page_size()) {
                (Ok(offset), Ok(page)) => (offset, page),
                (Err(e), _) | (_, Err(e)) => return answer(Answer::error(400, &e)),
            };
            let http2 = Arc::clone(&http);
            answer(blocking(&http, move |_| http2.api.page(id, offset, page)).await)
        }
        (
            _,
            "/"
            | "/index.html"
            | "/explorer.js"
            | "/explorer.css"
            | "/explorer-worker.js"
            | "/api/catalog"
            | "/api/systems"
            | "/api/clock"
            | "/api/subscribe",
        ) => allow(
            answer(Answer::error(405, &format!("{path} takes GET, not {method}"))),
            "GET",
        ),
        (_, p) if p.starts_with("/api/entity/") || p.starts_with("/api/result/") => allow(
            answer(Answer::error(405, &format!("{path} takes GET, not {method}"))),
            "GET",
        ),
        (_, "/api/query") => allow(
            answer(Answer::error(405, &format!("{path} takes POST, not {method}"))),
            "POST",
        ),
        _ => answer(Answer::error(
            404,
            &format!(
                "no {path} here: the API has POST /api/query, GET /api/result/ID, /api/catalog, /api/entity/ID, /api/systems, /api/clock and /api/subscribe?sql=…; the explorer is at /"
            ),
        )),
    }
}

impl Http {
    /// Why a request may not be answered: no password or the wrong one; without a
    /// password, a `Host` that is a name other than localhost (a DNS rebinding); a
    /// request a page of another origin sent (its `Origin` or `Sec-Fetch-Site` says so);
    /// a POST that is not JSON.
    async fn admit(&self, request: &Request<Incoming>) -> Option<Answer> {
        let headers = request.headers();
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        match &self.secret {
            Some(secret) => {
                let given = headers
                    .get(header::AUTHORIZATION)
                    .and_then(|h| h.to_str().ok())
                    .and_then(|h| h.split_once(' '))
                    .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
                    .and_then(|(_, b)| base64::engine::general_purpose::STANDARD.decode(b.trim()).ok())
                    .and_then(|b| String::from_utf8(b).ok());
                let matches = given
                    .as_deref()
                    .and_then(|up| up.split_once(':'))
                    .is_some_and(|(_, password)| same(&digest(password), secret));
                if !matches {
                    // A wrong guess costs its guesser a moment: no quick run through a list.
                    if given.is_some() {
                        tokio::time::sleep(WRONG_PASSWORD_PAUSE).await;
                    }
                    return Some(Answer::error(
                        401,
                        "this server asks for its password: HTTP Basic authentication, any user name",
                    ));
                }
            }
            None if !names_this_server(host) => {
                return Some(Answer::error(
                    403,
                    &format!(
                        "the request's Host ({host}) is a name this server does not answer to without a password: reach it as localhost or by its address ({}), or give the server a password",
                        self.listen
                    ),
                ));
            }
            None => {}
        }
        let cross_site = headers
            .get("sec-fetch-site")
            .and_then(|h| h.to_str().ok())
            .is_some_and(|site| {
                !site.eq_ignore_ascii_case("same-origin") && !site.eq_ignore_ascii_case("none")
            });
        let foreign_origin = headers
            .get(header::ORIGIN)
            .and_then(|h| h.to_str().ok())
            .filter(|origin| {
                !origin
                    .strip_prefix("http://")
                    .or_else(|| origin.strip_prefix("https://"))
                    .is_some_and(|o| o.eq_ignore_ascii_case(host))
            });
        if cross_site || foreign_origin.is_some() {
            return Some(Answer::error(
                403,
                &format!(
                    "a request from a page of another site ({}) is not answered: only this server's own page may use it",
                    foreign_origin.unwrap_or("its Sec-Fetch-Site says so")
                ),
            ));
        }
        if request.method() == Method::POST {
            let json = headers
                .get(header::CONTENT_TYPE)
                .and_then(|h| h.to_str().ok())
                .is_some_and(|t| {
                    t.split(';')
                        .next()
                        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
                });
            if !json {
                return Some(Answer::error(
                    415,
                    "a POST's body is JSON: send it with Content-Type: application/json",
                ));
            }
        }
        None
    }

    /// A connection of the request's own, under the clients' limits.
    fn connect(&self) -> crate::Connection {
        let conn = self.db.connect();
        conn.limit_statements(self.limits.0, self.limits.1);
        conn
    }
}

/// True when `host` (a Host header) may name this server without a password: `localhost`
/// or an address written out (a name other than localhost could be one a stranger's DNS
/// points here: a DNS rebinding).
fn names_this_server(host: &str) -> bool {
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !name.ends_with(':') => name,
        _ => host,
    };
    let name = name
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .unwrap_or(name);
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok()
}

/// How long an answer to a wrong password waits.
const WRONG_PASSWORD_PAUSE: Duration = Duration::from_millis(300);

/// Equal digests, compared in the same time whatever differs.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Runs `f` with a connection of the request's own on a thread that may wait.
///
/// At most `Options::max_connections` run at once (the others wait their turn); one whose
/// request goes away (its client closed the connection, the server stopped) is
/// interrupted, so no statement outlives its request.
async fn blocking(http: &Arc<Http>, f: impl FnOnce(&crate::Connection) -> Answer + Send + 'static) -> Answer {
    let Ok(permit) = Arc::clone(&http.running).acquire_owned().await else {
        return Answer::error(503, "the server is stopping");
    };
    let conn = http.connect();
    let _interrupt = InterruptOnDrop(conn.get_interrupt_handle());
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        f(&conn)
    })
    .await
    .unwrap_or_else(|_| Answer::error(500, "the request's thread failed"))
}

/// Interrupts a request's statement when the request is dropped before its answer (a
/// statement that has ended is not touched: an interrupt reaches only a running one).
struct InterruptOnDrop(crate::InterruptHandle);

impl Drop for InterruptOnDrop {
    fn drop(&mut self) {
        self.0.interrupt();
    }
}

/// `POST /api/query` with `{"sql": "…", "params": […] or {…}, "page_size": n}`.
async fn post_query(http: &Arc<Http>, request: Request<Incoming>) -> Answer {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Answer::error(413, &format!("a request's body is at most {MAX_BODY} bytes"));
    }
    let collected =
        tokio::time::timeout(HEADER_WAIT, Limited::new(request.into_body(), MAX_BODY).collect()).await;
    let body = match collected {
        Ok(Ok(body)) => body.to_bytes(),
        Err(_) => {
            return Answer::error(
                408,
                &format!(
                    "the request's body did not come within {} s",
                    HEADER_WAIT.as_secs()
                ),
            );
        }
        Ok(Err(_)) => {
            return Answer::error(
                413,
                &format!("a request's body is at most {MAX_BODY} bytes (or it was cut short)"),
            );
        }
    };
    let request: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return Answer::error(400, &format!("the body is not JSON: {e}")),
    };
    let Some(sql) = request.get("sql").and_then(serde_json::Value::as_str) else {
        return Answer::error(
            400,
            "the body names no statement: {\"sql\": \"SELECT …\", \"params\": [ … ], \"page_size\": 1000}",
        );
    };
    let params = match json::params(request.get("params")) {
        Ok(params) => params,
        Err(e) => return Answer::error(400, &e),
    };
    let page = match request.get("page_size") {
        None | Some(serde_json::Value::Null) => api::PAGE_ROWS,
        Some(v) => match v.as_u64().and_then(|n| usize::try_from(n).ok()) {
            Some(n) if (1..=api::MAX_PAGE_ROWS).contains(&n) => n,
            _ => {
                return Answer::error(
                    400,
                    &format!(
                        "page_size: expected a whole number from 1 to {}",
                        api::MAX_PAGE_ROWS
                    ),
                );
            }
        },
    };
    let sql = sql.to_owned();
    let http2 = Arc::clone(http);
    blocking(http, move |conn| http2.api.query(conn, &sql, params, page)).await
}

/// `GET /api/subscribe?sql=…&params=[…]`: a live query's batches as Server-Sent Events.
async fn subscribe(http: &Arc<Http>, query: &str) -> Response<Body> {
    let args = Args::parse(query);
    let Some(sql) = args.get("sql") else {
        return answer(Answer::error(
            400,
            "/api/subscribe?sql=…: name the query to subscribe to",
        ));
    };
    let params = match args.get("params") {
        None => crate::ParamValues::default(),
        Some(text) => match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(v) => match json::params(Some(&v)) {
                Ok(params) => params,
                Err(e) => return answer(Answer::error(400, &e)),
            },
            Err(e) => return answer(Answer::error(400, &format!("params: not JSON: {e}"))),
        },
    };
    let Some(seat) = stream::StreamSeat::take(&http.streams) else {
        return answer(Answer::error(
            503,
            &format!(
                "{} live queries are streaming already, the most at once",
                stream::MAX_STREAMS
            ),
        ));
    };
    let conn_http = Arc::clone(http);
    let stopping = http.stopping.clone();
    let opened =
        tokio::task::spawn_blocking(move || stream::open(conn_http.connect(), &sql, params, seat, stopping))
            .await
            .unwrap_or_else(|_| Err(Answer::error(500, "the stream's thread failed")));
    let rx = match opened {
        Ok(rx) => rx,
        Err(a) => return answer(a),
    };
    let events = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(events)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A request's query string, decoded (`+` as a space, `%XX` as its byte).
struct Args(Vec<(String, String)>);

impl Args {
    fn parse(query: &str) -> Args {
        let decode = |s: &str| {
            let spaced = s.replace('+', " ");
            percent_encoding::percent_decode_str(&spaced)
                .decode_utf8_lossy()
                .into_owned()
        };
        Args(
            query
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| match p.split_once('=') {
                    Some((k, v)) => (decode(k), decode(v)),
                    None => (decode(p), String::new()),
                })
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<String> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    fn number(&self, name: &str, default: usize) -> Result<usize, String> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("{name}={v}: expected a whole number")),
        }
    }

    fn page_size(&self) -> Result<usize, String> {
        let n = self.number("page_size", api::PAGE_ROWS)?;
        if (1..=api::MAX_PAGE_ROWS).contains(&n) {
            Ok(n)
        } else {
            Err(format!(
                "page_size={n}: expected a whole number from 1 to {}",
                api::MAX_PAGE_ROWS
            ))
        }
    }
}
