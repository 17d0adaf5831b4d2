//! SQLite's SQL, as the corpus writes it, into ecsql. A table is a component and a row an
//! entity holding only that component, so:
//!
//! - `CREATE TABLE t(a INTEGER, b VARCHAR(30), …)` → `CREATE COMPONENT t (a INT, b TEXT, …)`
//!   by SQLite's affinity rules; constraints are dropped (ecsql has no keys).
//! - `CREATE [UNIQUE] INDEX i ON t(a, b)` → `CREATE INDEX i ON t (a)`: an index never
//!   changes a result, and ecsql's ordered index has one field.
//! - `INSERT INTO t VALUES (…)` names t's columns (ecsql spawns one entity per row).
//! - In every SELECT, however deep, tables after a comma, `CROSS JOIN` or a `JOIN` without
//!   `ON` join with `ON TRUE`: in ecsql those forms mean the same entity.
//! - `*` and `t.*` become the table's columns (ecsql's `*` adds `id`), and a join in
//!   parentheses is unwrapped into the join list.
//! - A nested sign is parenthesized: sqlparser prints `- - x` as `--x`, a comment.
//! - `DROP TABLE` → `DROP COMPONENT`.
//!
//! What cannot be said in ecsql comes back as `Untranslated` with the reason.

use std::collections::HashMap;
use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, Ident, Join, JoinConstraint, JoinOperator, ObjectType, Query, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, Statement, TableFactor, TableWithJoins, Value, VisitMut,
    VisitorMut,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

/// A statement ecsql has no way to say; the reason names the missing feature.
pub struct Untranslated(pub &'static str);

#[derive(Default)]
pub struct Translator {
    /// Each table's columns (by lower-case name), for an INSERT without a column list and
    /// for `*`.
    columns: HashMap<String, Vec<String>>,
    /// Views the corpus created (lower-case): ecsql has none, so a query naming one fails
    /// for that reason.
    pub views: Vec<String>,
    /// Whether any table has a TEXT column (else no type error can be about text).
    pub text_columns: bool,
    /// The ecsql index on each (table, column), and the names of SQLite indexes that had
    /// to share one (their CREATE and DROP do nothing).
    indexed: HashMap<(String, String), String>,
    shared_indexes: Vec<String>,
}

impl Translator {
    pub fn translate(&mut self, sql: &str) -> Result<String, Untranslated> {
        let statements = Parser::new(&SQLiteDialect {})
            .with_recursion_limit(1000)
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_statements())
            .map_err(|_| Untranslated("SQLite syntax the translator cannot parse"))?;
        let mut out = Vec::new();
        for statement in statements {
            out.push(self.statement(statement)?);
        }
        Ok(out.join(";\n"))
    }

    fn statement(&mut self, mut statement: Statement) -> Result<String, Untranslated> {
        match &mut statement {
            Statement::CreateTable(t) => {
                let name = t.name.to_string();
                let mut fields = Vec::new();
                for c in &t.columns {
                    fields.push(format!("{} {}", c.name, affinity(&c.data_type.to_string())));
                }
                self.text_columns |= fields.iter().any(|f| f.ends_with(" TEXT"));
                let names = t.columns.iter().map(|c| c.name.to_string()).collect();
                self.columns.insert(name.to_lowercase(), names);
                Ok(format!("CREATE COMPONENT {name} ({})", fields.join(", ")))
            }
            Statement::CreateIndex(i) => {
                let table = i.table_name.to_string();
                let first = i
                    .columns
                    .first()
                    .ok_or(Untranslated("an index without columns"))?;
                let column = first.column.expr.to_string();
                let name = i.name.as_ref().map(|n| n.to_string()).unwrap_or_default();
                let key = (table.to_lowercase(), column.to_lowercase());
                if self.indexed.contains_key(&key) {
                    self.shared_indexes.push(name.to_lowercase());
                    return Ok(String::new());
                }
                self.indexed.insert(key, name.to_lowercase());
                Ok(format!("CREATE INDEX {name} ON {table} ({column})"))
            }
            Statement::Drop {
                object_type,
                if_exists,
                names,
                ..
            } => {
                let what = match object_type {
                    ObjectType::Table => "COMPONENT",
                    ObjectType::Index => "INDEX",
                    ObjectType::View => return Err(Untranslated("views")),
                    _ => return Err(Untranslated("DROP of other objects")),
                };
                let exists = if *if_exists { "IF EXISTS " } else { "" };
                let mut names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
                if *object_type == ObjectType::Index {
                    names.retain(|n| !self.shared_indexes.contains(&n.to_lowercase()));
                    self.indexed
                        .retain(|_, index| !names.iter().any(|n| n.eq_ignore_ascii_case(index)));
                    if names.is_empty() {
                        return Ok(String::new());
                    }
                }
                Ok(format!("DROP {what} {exists}{}", names.join(", ")))
            }
            Statement::Insert(insert) => {
                if insert.or.is_some() || insert.replace_into {
                    return Err(Untranslated("INSERT OR REPLACE and REPLACE (no keys in ecsql)"));
                }
                if insert.columns.is_empty() {
                    let table = insert.table.to_string().to_lowercase();
                    let columns = self
                        .columns
                        .get(&table)
                        .ok_or(Untranslated("INSERT into an unknown table"))?;
                    insert.columns = columns.iter().map(|c| Ident::new(c).into()).collect();
                }
                self.rewrite(&mut statement)?;
                Ok(statement.to_string())
            }
            Statement::Query(_) | Statement::Update(_) | Statement::Delete(_) => {
                self.rewrite(&mut statement)?;
                Ok(statement.to_string())
            }
            Statement::CreateView(v) => {
                self.views.push(v.name.to_string().to_lowercase());
                Err(Untranslated("views"))
            }
            Statement::CreateTrigger(_) | Statement::DropTrigger(_) => Err(Untranslated("triggers")),
            _ => Err(Untranslated("a statement ecsql does not have")),
        }
    }
}

/// SQLite's column affinity, from the declared type's text.
fn affinity(declared: &str) -> &'static str {
    let t = declared.to_uppercase();
    if t.contains("INT") {
        "INT"
    } else if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") {
        "TEXT"
    } else {
        "FLOAT"
    }
}

impl Translator {
    fn rewrite(&self, statement: &mut Statement) -> Result<(), Untranslated> {
        let mut rewrite = Rewrite {
            columns: &self.columns,
            untranslated: None,
        };
        let _ = statement.visit(&mut rewrite);
        match rewrite.untranslated {
            Some(reason) => Err(Untranslated(reason)),
            None => Ok(()),
        }
    }
}

/// The visitor that rewrites joins, `*` and nested signs.
struct Rewrite<'t> {
    columns: &'t HashMap<String, Vec<String>>,
    untranslated: Option<&'static str>,
}

impl VisitorMut for Rewrite<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        self.set_expr(&mut query.body);
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::UnaryOp { expr: inner, .. } = expr
            && matches!(**inner, Expr::UnaryOp { .. })
        {
            let operand = std::mem::replace(&mut **inner, Expr::Value(Value::Null.into()));
            **inner = Expr::Nested(Box::new(operand));
        }
        ControlFlow::Continue(())
    }
}

/// A parenthesized join as a flat list: `(a CROSS JOIN b)` → `a` with `b` joined.
fn unnest(from: TableWithJoins) -> Vec<TableWithJoins> {
    match from.relation {
        TableFactor::NestedJoin {
            table_with_joins,
            alias: None,
        } => {
            let mut inner = unnest(*table_with_joins);
            inner
                .last_mut()
                .expect("unnest returns at least one")
                .joins
                .extend(from.joins);
            inner
        }
        relation => vec![TableWithJoins {
            relation,
            joins: from.joins,
        }],
    }
}

impl Rewrite<'_> {
    fn set_expr(&mut self, body: &mut SetExpr) {
        match body {
            SetExpr::Select(select) => {
                let mut from = std::mem::take(&mut select.from).into_iter().flat_map(unnest);
                let Some(mut first) = from.next() else { return };
                for more in from {
                    first.joins.push(Join {
                        relation: more.relation,
                        global: false,
                        join_operator: JoinOperator::Join(JoinConstraint::None),
                    });
                    first.joins.extend(more.joins);
                }
                for join in &mut first.joins {
                    self.join(join);
                }
                select.from = vec![first];
                self.expand_stars(&mut select.projection, &select.from[0]);
            }
            SetExpr::SetOperation { left, right, .. } => {
                self.set_expr(left);
                self.set_expr(right);
            }
            _ => {}
        }
    }

    /// `*` and `t.*` as `q.col, …` for each table in FROM, when every one is a known table.
    fn expand_stars(&self, items: &mut Vec<SelectItem>, from: &TableWithJoins) {
        let factors = std::iter::once(&from.relation).chain(from.joins.iter().map(|j| &j.relation));
        let mut tables = Vec::new();
        for factor in factors {
            let TableFactor::Table { name, alias, .. } = factor else {
                return;
            };
            let Some(columns) = self.columns.get(&name.to_string().to_lowercase()) else {
                return;
            };
            let qualifier = alias
                .as_ref()
                .map_or_else(|| name.to_string(), |a| a.name.to_string());
            tables.push((qualifier, columns));
        }
        let column = |q: &str, c: &str| {
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(vec![Ident::new(q), Ident::new(c)]))
        };
        let mut out = Vec::new();
        for item in items.drain(..) {
            match &item {
                SelectItem::Wildcard(_) => {
                    for (q, columns) in &tables {
                        out.extend(columns.iter().map(|c| column(q, c)));
                    }
                }
                SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(n), _) => {
                    let wanted = n.to_string();
                    match tables.iter().find(|(q, _)| q.eq_ignore_ascii_case(&wanted)) {
                        Some((q, columns)) => out.extend(columns.iter().map(|c| column(q, c))),
                        None => out.push(item),
                    }
                }
                _ => out.push(item),
            }
        }
        *items = out;
    }

    fn join(&mut self, join: &mut Join) {
        let on_true = || JoinConstraint::On(Expr::Value(Value::Boolean(true).into()));
        match &mut join.join_operator {
            JoinOperator::Join(c) | JoinOperator::Inner(c) | JoinOperator::CrossJoin(c) => {
                if matches!(c, JoinConstraint::None) {
                    *c = on_true();
                }
                if !matches!(c, JoinConstraint::On(_)) {
                    self.untranslated = Some("NATURAL joins and USING");
                }
                let c = std::mem::replace(c, JoinConstraint::None);
                join.join_operator = JoinOperator::Join(c);
            }
            JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => {
                if !matches!(c, JoinConstraint::On(_)) {
                    self.untranslated = Some("NATURAL joins and USING");
                }
            }
            _ => self.untranslated = Some("RIGHT, FULL and other joins"),
        }
    }
}
