//! WITH queries: put in scope for what follows them (each reference to one is its query
//! in place), and WITH RECURSIVE's first part and recursive part.
//!
//! Invariants: a WITH query that nothing reads is refused; a recursive one reads itself
//! once, in its recursive part's own FROM; names match as SQL matches them (quoted ones
//! exactly, others without regard to ASCII case).

use sqlparser::ast as sql;

use super::{Result, ident, span_at};
use crate::location::Location;
use crate::parse::ast::*;
use crate::parse::error::ParseError;
use crate::parse::parser::{Cte, CteBody, StatementParser};

impl StatementParser<'_> {
    /// A WITH clause's CTEs, put in scope (each sees those before it) until the caller
    /// truncates `ctes` again.
    pub(in crate::parse) fn with(&mut self, with: sql::With) -> Result<()> {
        let at = self.location_or_statement(span_at(with.with_token.0.span));
        let first = self.ctes.len();
        for cte in with.cte_tables {
            let name = ident(cte.alias.name);
            if cte.from.is_some() || cte.materialized.is_some() {
                return Err(self.unsupported(name.at, "this WITH clause"));
            }
            if self.ctes[first..].iter().any(|c| same_name(&c.name, &name)) {
                return Err(ParseError::new(
                    name.at,
                    format!("WITH names {} twice", name.value),
                ));
            }
            let columns: Vec<Ident> = cte.alias.columns.into_iter().map(|c| ident(c.name)).collect();
            let before = self.cte_references;
            let body = match with.recursive {
                true => self.recursive_cte(&name, &columns, *cte.query, at)?,
                false => CteBody::Query(self.query(*cte.query)?),
            };
            let weight = 1 + (self.cte_references - before);
            self.ctes.push(Cte {
                name,
                columns,
                body,
                weight,
                read: std::cell::Cell::new(false),
            });
        }
        Ok(())
    }

    /// A query of WITH RECURSIVE: `anchor UNION [ALL] step` where only `step` reads
    /// `name`, once; or a query that does not read it at all (an ordinary one).
    fn recursive_cte(
        &mut self,
        name: &Ident,
        columns: &[Ident],
        q: sql::Query,
        at: Location,
    ) -> Result<CteBody> {
        let union = matches!(
            &*q.body,
            sql::SetExpr::SetOperation {
                op: sql::SetOperator::Union,
                set_quantifier: sql::SetQuantifier::All
                    | sql::SetQuantifier::Distinct
                    | sql::SetQuantifier::None,
                ..
            }
        ) && q.order_by.is_none()
            && q.limit_clause.is_none()
            && q.with.is_none();
        let outer_self = self.self_references;
        self.self_references = 0;
        self.ctes.push(Cte {
            name: name.clone(),
            columns: columns.to_vec(),
            body: CteBody::Reading(self.query_nesting),
            weight: 1,
            read: std::cell::Cell::new(true),
        });
        let read = self.recursive_parts(name, columns, q, union, at);
        self.ctes.pop();
        self.self_references = outer_self;
        read
    }

    fn recursive_parts(
        &mut self,
        name: &Ident,
        columns: &[Ident],
        q: sql::Query,
        union: bool,
        at: Location,
    ) -> Result<CteBody> {
        let reads_itself = |name: &Ident| {
            ParseError::new(
                name.at,
                format!(
                    "{} reads itself, so it must be `first part UNION [ALL] recursive part`, the first part \
                     not reading it, and no ORDER BY or LIMIT of its own (order and limit the query that reads it)",
                    name.value
                ),
            )
        };
        if !union {
            // Read as one query, a level down: a reference to itself there is counted (and
            // refused below), not taken for one in a subquery.
            if let Some(reading) = self.ctes.last_mut() {
                reading.body = CteBody::Reading(self.query_nesting + 1);
            }
            let query = self.query(q)?;
            return match self.self_references {
                0 => Ok(CteBody::Query(query)),
                _ => Err(reads_itself(name)),
            };
        }
        let sql::SetExpr::SetOperation {
            set_quantifier,
            left,
            right,
            ..
        } = *q.body
        else {
            return Err(ParseError::new(at, "expected UNION in the recursive query"));
        };
        let all = matches!(set_quantifier, sql::SetQuantifier::All);
        let anchor = self.set_expr(*left)?;
        if self.self_references > 0 {
            return Err(reads_itself(name));
        }
        let step = self.set_expr(*right)?;
        match self.self_references {
            // It does not read itself: an ordinary query.
            0 => Ok(CteBody::Query(Query {
                body: SetExpr::SetOp {
                    op: SetOp::Union,
                    all,
                    left: Box::new(anchor),
                    right: Box::new(step),
                },
                order_by: Vec::new(),
                limit: None,
                offset: None,
                at: name.at,
            })),
            1 => Ok(CteBody::Recursive(RecursiveCte {
                name: name.clone(),
                columns: columns.to_vec(),
                anchor,
                step,
                all,
            })),
            _ => Err(ParseError::new(
                name.at,
                format!(
                    "the recursive part of {} may read {} only once",
                    name.value, name.value
                ),
            )),
        }
    }

    /// Refuses a WITH query (of those from `first` on) that nothing read: it is planned
    /// where it is read, so one never read would go unchecked (and a statement printed
    /// back, its WITH queries in place, would lose it).
    pub(in crate::parse) fn all_read(&self, first: usize) -> Result<()> {
        match self.ctes[first..].iter().find(|c| !c.read.get()) {
            Some(c) => Err(ParseError::new(
                c.name.at,
                format!(
                    "WITH query {} is not read by the statement: remove it, or read it in a FROM",
                    c.name.value
                ),
            )),
            None => Ok(()),
        }
    }

    /// The CTE `name` names, if one in scope does: the innermost.
    pub(super) fn cte(&self, name: &Ident) -> Option<&Cte> {
        self.ctes.iter().rev().find(|c| same_name(&c.name, name))
    }
}

/// Whether two names are one: quoted ones exactly, others without regard to ASCII case.
fn same_name(a: &Ident, b: &Ident) -> bool {
    if a.quoted || b.quoted {
        a.value == b.value
    } else {
        a.value.eq_ignore_ascii_case(&b.value)
    }
}
