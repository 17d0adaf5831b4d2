//! The extended query protocol (Parse, Bind, Describe, Execute): statements prepared
//! once per client and run with parameters, as drivers send them (tokio-postgres'
//! `query`, JDBC, psycopg, node `pg`).
//!
//! Invariants:
//! - A statement is parsed, checked against the files rule and described (the types its
//!   parameters are used as, its result's columns) when the client prepares it, on the
//!   client's thread; an error there is the Parse's, as in PostgreSQL, and nothing runs.
//! - A parameter is read as the type the client named for it, else as the type it was
//!   described as; the text and binary formats of every type ecsql has are read, and a
//!   value that does not read as its type is the client's error (22P02), never a panic.
//! - Format codes and parameter counts a client sends are checked against the statement
//!   before anything runs (08P01): a stranger's malformed Bind is answered, not trusted.
//! - Every error of Parse, Bind or Execute is an error of the message (pgwire then skips
//!   what the client sent until Sync, as PostgreSQL does) and fails an open transaction
//!   block, as any failed statement does.
//! - A client keeps a bounded number of prepared statements and portals by name
//!   (`kept.rs`): past it a Parse or Bind of a new one is refused (54000).

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::ExtendedQueryHandler;
use pgwire::api::results::{FieldFormat, FieldInfo, Response};
use pgwire::api::stmt::QueryParser;
use pgwire::api::stmt::StoredStatement;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, DEFAULT_NAME, Type};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Parse, ParseComplete, TARGET_TYPE_BYTE_PORTAL,
    TARGET_TYPE_BYTE_STATEMENT,
};

use super::client::{Client, Described, Ran};
use super::types::{self, protocol, result_formats};
use crate::{DataType, Value};

/// A statement a client prepared, as its thread described it.
#[derive(Clone, Debug)]
pub(super) struct Prepared(Arc<Described>);

#[async_trait]
impl QueryParser for Client {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        // An empty statement (pgwire answers it with EmptyQueryResponse).
        if crate::parse::is_blank(sql) {
            return Ok(None);
        }
        let declared: Vec<_> = types
            .iter()
            .map(|t| t.as_ref().and_then(types::declared))
            .collect();
        let described = self.session()?.prepare(sql, &declared);
        described
            .map(|d| Some(Prepared(Arc::new(d))))
            .map_err(PgWireError::UserError)
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok((0..stmt.0.params.len()).map(|i| stmt.0.param_type(i)).collect())
    }

    fn get_result_schema(&self, stmt: &Prepared, format: Option<&Format>) -> PgWireResult<Vec<FieldInfo>> {
        let columns = &stmt.0.columns;
        let formats = match format {
            Some(format) => result_formats(format, columns.len()).map_err(PgWireError::UserError)?,
            None => vec![FieldFormat::Text; columns.len()],
        };
        Ok(columns
            .iter()
            .zip(formats)
            .map(|((name, ty), format)| FieldInfo::new(name.clone(), None, None, types::pg_type(*ty), format))
            .collect())
    }
}

#[async_trait]
impl ExtendedQueryHandler for Client {
    type Statement = Prepared;
    type QueryParser = Client;

    fn query_parser(&self) -> Arc<Client> {
        Arc::new(self.clone())
    }

    /// Parse, as pgwire does it, within what a client may keep.
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.clone().unwrap_or_else(|| DEFAULT_NAME.to_owned());
        let bytes = message.query.len();
        self.kept.lock().room(false, &name, bytes)?;
        match StoredStatement::parse(client, &message, self.query_parser()).await? {
            Some(statement) => client.portal_store().put_statement(Arc::new(statement)),
            None => client.portal_store().put_empty_statement(&name),
        }
        self.kept.lock().keep(false, &name, bytes);
        client
            .send(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
            .await?;
        Ok(())
    }

    /// Bind, as pgwire does it, within what a client may keep.
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message
            .portal_name
            .clone()
            .unwrap_or_else(|| DEFAULT_NAME.to_owned());
        let bytes = message.parameters.iter().flatten().map(|p| p.len()).sum();
        self.kept.lock().room(true, &name, bytes)?;
        let statement_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        match client.portal_store().get_statement(statement_name) {
            Some(Entry::Value(statement)) => {
                let portal = Portal::try_new(&message, statement)?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Some(Entry::Empty) if message.parameters.is_empty() => {
                client.portal_store().put_empty_portal(&name)
            }
            Some(Entry::Empty) => {
                return Err(PgWireError::UserError(protocol(format!(
                    "bind message supplies {} parameters, but the prepared statement is empty and takes none",
                    message.parameters.len()
                ))));
            }
            None => return Err(PgWireError::StatementNotFound(statement_name.to_owned())),
        }
        self.kept.lock().keep(true, &name, bytes);
        client
            .send(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(())
    }

    /// Close, as pgwire does it; what was closed is no longer kept.
    async fn on_close<C>(&self, client: &mut C, message: Close) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                client.portal_store().rm_statement(name);
                self.kept.lock().forget(false, name);
            }
            TARGET_TYPE_BYTE_PORTAL => {
                client.portal_store().rm_portal(name);
                self.kept.lock().forget(true, name);
            }
            _ => {}
        }
        client
            .send(PgWireBackendMessage::CloseComplete(CloseComplete::new()))
            .await?;
        Ok(())
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let stored = &portal.statement;
        let described = &stored.statement.0;
        if described.text.is_empty() {
            return Ok(Response::EmptyQuery);
        }
        // What does not fit the statement is refused before it runs, and fails the block.
        let checked = params(portal, described, &stored.parameter_types).and_then(|params| {
            result_formats(&portal.result_column_format, described.columns.len()).map(|_| params)
        });
        let params = match checked {
            Ok(params) => params,
            Err(e) => {
                self.session()?.failed();
                return Err(PgWireError::UserError(e));
            }
        };
        let session = self.session()?;
        // An error is the Execute's: pgwire then skips what the client sent until Sync, as
        // PostgreSQL does.
        let types: Vec<DataType> = described.columns.iter().map(|(_, ty)| *ty).collect();
        match session.execute(&described.text, params, &portal.result_column_format, &types) {
            Ran::Done(Response::Error(e)) => Err(PgWireError::UserError(e)),
            Ran::Done(response) => Ok(response),
            Ran::Stream(feed) => Err(PgWireError::UserError(
                super::live::write(client, feed, &session.stop).await?,
            )),
        }
    }
}

/// The values `portal` binds to its statement's parameters, each read as the type the
/// client named for it (`named`), else as described.
fn params(
    portal: &Portal<Prepared>,
    described: &Described,
    named: &[Option<Type>],
) -> Result<Vec<Value>, Box<ErrorInfo>> {
    let given = &portal.parameters;
    let wanted = described.params.len().max(named.len());
    if given.len() != wanted {
        return Err(protocol(format!(
            "bind message supplies {} parameters, but prepared statement requires {wanted}",
            given.len()
        )));
    }
    let binary = |i: usize| match &portal.parameter_format {
        Format::UnifiedText => Ok(false),
        Format::UnifiedBinary => Ok(true),
        Format::Individual(codes) if codes.len() == given.len() => {
            Ok(FieldFormat::from(codes[i]) == FieldFormat::Binary)
        }
        Format::Individual(codes) => Err(protocol(format!(
            "bind message has {} parameter formats but {} parameters",
            codes.len(),
            given.len()
        ))),
    };
    given
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            let ty = named
                .get(i)
                .cloned()
                .flatten()
                .unwrap_or_else(|| described.param_type(i));
            match bytes {
                None => Ok(Value::Null),
                Some(bytes) => types::read_param(bytes, &ty, binary(i)?).map_err(|message| {
                    Box::new(ErrorInfo::new(
                        "ERROR".to_owned(),
                        "22P02".to_owned(),
                        format!("parameter ${}: {message}", i + 1),
                    ))
                }),
            }
        })
        .collect()
}
