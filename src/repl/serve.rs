//! `ecsql serve`: the command line of the server (`ecsql::server`): its options, the
//! scripts it runs first, then serving until the process is stopped.

use std::net::SocketAddr;

use ecsql::Database;
use ecsql::server::{Dt, Options, Server, TlsFiles};

use super::session::{Flow, Session, read_script};

const USAGE: &str = "\
usage: ecsql serve [OPTIONS] [FILE...]

Serves one database over the PostgreSQL wire protocol (psql, libpq and the drivers that
speak it attach to it), after running the FILEs in order (the first error stops them,
and the server does not start), until stopped (Ctrl-C or SIGTERM).

options:
  --db PATH               keep the database in the file PATH (created if absent)
  --listen ADDR:PORT      the address to listen on (127.0.0.1:5433 unless told)
  --password-file FILE    every client must give the password on FILE's first line
                          (checked by SCRAM-SHA-256; any user name); with it, an address
                          other than loopback may be listened on
  --trust                 allow an address other than loopback, with no password: anyone
                          who reaches the port may read and write
  --tls-cert FILE         TLS, with this certificate (PEM); every client must use it
  --tls-key FILE          the certificate's private key (PEM)
  --files DIR             clients' SAVE, LOAD and COPY may name files in DIR (relative to
                          it); without it, no file of the server's is reachable
  --max-connections N     the most clients at once (64 unless told)
  --idle-in-transaction S roll back a client's transaction that holds the database and is
                          left idle S seconds (60 unless told): while it holds it, every
                          other connection waits
  --statement-timeout S   stop a client's statement that runs longer than S seconds (30
                          unless told; 0 for no limit); a client may lower it, not raise it
  --memory-limit SIZE     the most working memory one client statement may hold, as
                          512MB or 2GiB (the database's PRAGMA memory_limit unless told)
  --tick-rate HZ          tick the world HZ times a second, each tick whole to every
                          client (no clock unless told: only clients' TICKs move it)
  --dt fixed|real         each of those ticks is 1/HZ seconds long (fixed, unless told),
                          or the real time since the previous tick began (real)
  --http ADDR:PORT        also serve HTTP there: the explorer page (open the address in a
                          browser) and its JSON API, under the same password, TLS and
                          files rules; loopback unless a password or --trust
  -h, --help              this text

The exit code is 1 when a FILE failed or the server could not start, 2 for bad options.
";

/// Runs `ecsql serve ARGS…` and returns the process exit code.
pub fn main(args: Vec<String>) -> i32 {
    let mut options = Options::default();
    let mut db_path = None;
    let mut files = Vec::new();
    let (mut tls_cert, mut tls_key) = (None, None);
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |option: &str| args.next().ok_or_else(|| format!("{option} needs a value"));
        let parsed = match arg.as_str() {
            "-h" | "--help" => {
                super::say(USAGE);
                return 0;
            }
            "--db" => value("--db").map(|path| db_path = Some(path)),
            "--listen" => value("--listen").and_then(|addr| match addr.parse::<SocketAddr>() {
                Ok(addr) => {
                    options.listen = addr;
                    Ok(())
                }
                Err(_) => Err(format!(
                    "--listen {addr}: expected an address and a port, as 127.0.0.1:5433"
                )),
            }),
            "--http" => value("--http").and_then(|addr| match addr.parse::<SocketAddr>() {
                Ok(addr) => {
                    options.http = Some(addr);
                    Ok(())
                }
                Err(_) => Err(format!(
                    "--http {addr}: expected an address and a port, as 127.0.0.1:8080"
                )),
            }),
            "--trust" => {
                options.trust = true;
                Ok(())
            }
            "--password-file" => value("--password-file").and_then(|path| {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("--password-file {path}: cannot read it: {e}"))?;
                match text.lines().next().map(|l| l.trim_end_matches('\r')) {
                    Some(password) if !password.is_empty() => {
                        options.password = Some(password.to_owned());
                        Ok(())
                    }
                    _ => Err(format!(
                        "--password-file {path}: its first line is empty; write the password there"
                    )),
                }
            }),
            "--files" => value("--files").map(|dir| options.files = Some(dir.into())),
            "--tls-cert" => value("--tls-cert").map(|path| tls_cert = Some(path)),
            "--tls-key" => value("--tls-key").map(|path| tls_key = Some(path)),
            "--max-connections" => value("--max-connections").and_then(|n| match n.parse::<usize>() {
                Ok(n) if n > 0 => {
                    options.max_connections = n;
                    Ok(())
                }
                _ => Err(format!(
                    "--max-connections {n}: expected a number of clients, 1 or more"
                )),
            }),
            "--idle-in-transaction" => value("--idle-in-transaction").and_then(|n| match n.parse::<f64>() {
                Ok(s) if s > 0.0 && std::time::Duration::try_from_secs_f64(s).is_ok() => {
                    options.idle_in_transaction = std::time::Duration::from_secs_f64(s);
                    Ok(())
                }
                _ => Err(format!(
                    "--idle-in-transaction {n}: expected a number of seconds, more than 0"
                )),
            }),
            "--statement-timeout" => value("--statement-timeout").and_then(|n| match n.parse::<f64>() {
                Ok(0.0) => {
                    options.statement_timeout = None;
                    Ok(())
                }
                Ok(s) if s > 0.0 && std::time::Duration::try_from_secs_f64(s).is_ok() => {
                    options.statement_timeout = Some(std::time::Duration::from_secs_f64(s));
                    Ok(())
                }
                _ => Err(format!(
                    "--statement-timeout {n}: expected a number of seconds, 0 for no limit"
                )),
            }),
            "--memory-limit" => value("--memory-limit").and_then(|n| match ecsql::server::parse_size(&n) {
                Some(bytes) if bytes > 0 => {
                    options.memory_limit = Some(bytes);
                    Ok(())
                }
                _ => Err(format!("--memory-limit {n}: expected a size, as 512MB or 2GiB")),
            }),
            "--tick-rate" => value("--tick-rate").and_then(|n| match n.parse::<f64>() {
                Ok(hz) if hz > 0.0 && hz <= 10_000.0 => {
                    options.tick_rate = Some(hz);
                    Ok(())
                }
                _ => Err(format!(
                    "--tick-rate {n}: expected a number of ticks a second, above 0 and at most 10000"
                )),
            }),
            "--dt" => value("--dt").and_then(|dt| match dt.as_str() {
                "fixed" => {
                    options.dt = Dt::Fixed;
                    Ok(())
                }
                "real" => {
                    options.dt = Dt::Real;
                    Ok(())
                }
                _ => Err(format!("--dt {dt}: expected fixed or real")),
            }),
            option if option.starts_with('-') => Err(format!("unknown option {option}")),
            file => {
                files.push(file.to_owned());
                Ok(())
            }
        };
        if let Err(message) = parsed {
            super::say_err(&format!(
                "ecsql serve: {message} (ecsql serve --help lists the options)\n"
            ));
            return 2;
        }
    }
    match (tls_cert, tls_key) {
        (Some(cert), Some(key)) => {
            options.tls = Some(TlsFiles {
                cert: cert.into(),
                key: key.into(),
            });
        }
        (None, None) => {}
        _ => {
            super::say_err(
                "ecsql serve: --tls-cert and --tls-key go together: the certificate and its key (ecsql serve --help lists the options)\n",
            );
            return 2;
        }
    }
    // Where it listens is tried first: a server that cannot listen runs no script, and
    // writes nothing to its file.
    // Both at once: the same address twice cannot be listened on.
    let mut tried = Vec::new();
    for addr in std::iter::once(options.listen).chain(options.http) {
        match std::net::TcpListener::bind(addr) {
            Ok(listener) => tried.push(listener),
            Err(e) => {
                super::say_err(&format!("ecsql serve: cannot listen on {addr}: {e}\n"));
                return 1;
            }
        }
    }
    drop(tried);
    let mut db = Database::open_in_memory();
    let mut session = Session::new(&db);
    if let Some(path) = &db_path {
        match session.open_file(path) {
            Ok(file) => {
                session.switch_to(&file, Some(path.clone()));
                db = file;
            }
            Err(e) => {
                super::say_err(&format!("ecsql serve: {e}\n"));
                return 1;
            }
        }
    }
    // A script stops at its first error: the server will not start, and what follows
    // the failing statement is not run (nor kept in a file database).
    session.settings.bail = true;
    for file in &files {
        let flow = match read_script(file) {
            Ok(text) => session.run_file(file, &text),
            Err(message) => {
                super::say_err(&format!("ecsql serve: {message}\n"));
                session.failed()
            }
        };
        if flow != Flow::Continue || session.failures > 0 {
            super::say_err(&format!("ecsql serve: {file} failed; not serving\n"));
            return 1;
        }
    }
    let server_tls = options.tls.is_some();
    let server = match Server::start(&db, options) {
        Ok(server) => server,
        Err(e) => {
            super::say_err(&format!("ecsql serve: {e}\n"));
            return 1;
        }
    };
    super::say(&format!(
        "ecsql serve: listening on {} (psql -h {} -p {})\n",
        server.local_addr(),
        server.local_addr().ip(),
        server.local_addr().port()
    ));
    if let Some(http) = server.http_addr() {
        let scheme = if server_tls { "https" } else { "http" };
        super::say(&format!("ecsql serve: the explorer is at {scheme}://{http}/\n"));
    }
    // Serves until the process is stopped, saying (at most once a second) when ticks of
    // the clock failed.
    let mut told = 0;
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        let ticks = server.ticks();
        if ticks.failed > told {
            super::say_err(&format!(
                "ecsql serve: {} tick(s) failed and changed nothing ({} ran); the last: {}\n",
                ticks.failed - told,
                ticks.ran,
                ticks.last_error.unwrap_or_default()
            ));
            told = ticks.failed;
        }
    }
}
