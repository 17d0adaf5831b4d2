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

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::ExtendedQueryHandler;
use pgwire::api::results::{FieldFormat, FieldInfo, Response};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, Type};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;

use super::client::{Client, Described, Ran};
use super::types::{self, protocol, result_formats};
use crate::Value;

/// A statement a client prepared, as its thread described it.
#[derive(Clone, Debug)]
pub(super) struct Prepared(Arc<Described>);

#[async_trait]
impl QueryParser for Client {
    type Statement = Prepared;

    async fn parse_sql<C>(&self, _client: &C, sql: &str, types: &[Option<Type>]) -> PgWireResult<Prepared>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        if sql.chars().all(|c| c == ';' || c.is_whitespace()) {
            return Ok(Prepared(Arc::new(Described {
                text: String::new(),
                params: Vec::new(),
                columns: Vec::new(),
            })));
        }
        let declared: Vec<_> = types
            .iter()
            .map(|t| t.as_ref().and_then(types::declared))
            .collect();
        let described = self.session()?.prepare(sql, &declared);
        described
            .map(|d| Prepared(Arc::new(d)))
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
        match session.execute(&described.text, params, &portal.result_column_format) {
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
