//! One client of a server: its `Connection`, and the answers to what it sends.
//!
//! Invariants:
//! - Every statement of a simple query runs in order on the client's own `Connection`;
//!   the first that fails ends the query with its error, as PostgreSQL does (what ran
//!   before it in a transaction block is rolled back with the transaction, what
//!   committed stays).
//! - A client over the connection limit is refused at startup, before any statement.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, stream};
use parking_lot::Mutex;
use pgwire::api::auth::{self, DefaultServerParameterProvider, StartupHandler};
use pgwire::api::query::SimpleQueryHandler;
use pgwire::api::results::{DataRowEncoder, QueryResponse, Response, Tag};
use pgwire::api::{ClientInfo, PgWireServerHandlers};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use super::types;
use crate::parse::StatementKind;
use crate::{Connection, Database, StatementResult};

/// The PostgreSQL version drivers are told (`server_version`): the protocol and catalog
/// behaviour ecsql follows.
pub(super) const SERVER_VERSION: &str = "16.0 (ecsql)";

/// What answers one client.
pub(super) struct Handlers {
    client: Arc<Client>,
}

pub(super) struct Client {
    conn: Arc<Mutex<Connection>>,
    /// Past the server's connection limit: refused at startup.
    refused: bool,
}

impl Handlers {
    pub(super) fn new(db: &Database, refused: bool) -> Handlers {
        Handlers {
            client: Arc::new(Client {
                conn: Arc::new(Mutex::new(db.connect())),
                refused,
            }),
        }
    }
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        Arc::clone(&self.client)
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        Arc::clone(&self.client)
    }
}

#[async_trait]
impl StartupHandler for Client {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let PgWireFrontendMessage::Startup(startup) = &message else {
            return Ok(());
        };
        auth::protocol_negotiation(client, startup).await?;
        auth::save_startup_parameters_to_metadata(client, startup);
        if self.refused {
            return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
                "FATAL".to_owned(),
                "53300".to_owned(),
                "too many clients already: the server's limit of connections is reached; try again when one leaves".to_owned(),
            ))));
        }
        let mut parameters = DefaultServerParameterProvider::default();
        parameters.server_version = SERVER_VERSION.to_owned();
        auth::finish_authentication(client, &parameters).await?;
        Ok(())
    }
}

#[async_trait]
impl SimpleQueryHandler for Client {
    async fn do_query<C>(&self, _client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let conn = Arc::clone(&self.conn);
        let text = query.to_owned();
        tokio::task::spawn_blocking(move || run_simple(&conn.lock(), &text))
            .await
            .map_err(|e| PgWireError::ApiError(Box::new(e)))
    }
}

/// Runs the statements of `text` in order, to the first that fails.
fn run_simple(conn: &Connection, text: &str) -> Vec<Response> {
    if let Some(refused) = reaches_files(text) {
        return vec![Response::Error(Box::new(refused))];
    }
    let mut responses = Vec::new();
    let ran = conn.run_script(text, |result| match result {
        Ok(result) => {
            responses.push(response(result));
            true
        }
        Err(e) => {
            responses.push(Response::Error(Box::new(types::error_info(&e, text))));
            false
        }
    });
    if let Err(e) = ran {
        responses.push(Response::Error(Box::new(types::error_info(&e, text))));
    }
    responses
}

/// A statement's result as PostgreSQL answers it: rows, or a command tag.
fn response(result: StatementResult) -> Response {
    if let Some(mut rows) = result.rows {
        let names = rows
            .column_names()
            .iter()
            .map(|s| (*s).to_owned())
            .collect::<Vec<_>>();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let fields = types::fields(&names, &rows.column_types());
        let mut encoder = DataRowEncoder::new(Arc::clone(&fields));
        let mut data = Vec::with_capacity(rows.remaining());
        loop {
            match rows.next() {
                Ok(Some(row)) => data.push(types::data_row(&mut encoder, row.values())),
                Ok(None) => break,
                Err(e) => {
                    return Response::Error(Box::new(types::error_info(&e, &result.statement)));
                }
            }
        }
        return Response::Query(QueryResponse::new(fields, stream::iter(data)));
    }
    let n = result.affected;
    match result.verb {
        "BEGIN" => Response::TransactionStart(Tag::new("BEGIN")),
        "COMMIT" | "END" => Response::TransactionEnd(Tag::new("COMMIT")),
        "ROLLBACK" => Response::TransactionEnd(Tag::new("ROLLBACK")),
        "INSERT" => Response::Execution(Tag::new("INSERT").with_oid(0).with_rows(n)),
        verb @ ("UPDATE" | "DELETE" | "COPY") => Response::Execution(Tag::new(verb).with_rows(n)),
        verb => Response::Execution(Tag::new(verb)),
    }
}

/// Why `text` is refused when one of its statements reads or writes a file of the
/// server's (SAVE, LOAD, COPY to or from a file): a client reaches only the database.
fn reaches_files(text: &str) -> Option<ErrorInfo> {
    // A text that does not parse is refused by its run, with the position of the error.
    let statements = crate::parse::parse(text).ok()?;
    let statement = statements.iter().find(|s| {
        matches!(
            s.kind,
            StatementKind::Save { .. }
                | StatementKind::Load { .. }
                | StatementKind::CopyTo { .. }
                | StatementKind::CopyFrom { .. }
        )
    })?;
    let mut info = ErrorInfo::new(
        "ERROR".to_owned(),
        "42501".to_owned(),
        format!(
            "{} reaches a file of the server's, which a client of ecsql serve may not: run it in the program or shell that holds the database",
            statement.kind.verb()
        ),
    );
    info.position = types::position(text, statement.at).map(|p| p.to_string());
    Some(info)
}
