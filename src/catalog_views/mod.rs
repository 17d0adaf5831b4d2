//! PostgreSQL's catalog, as views over ecsql's: `pg_catalog.pg_class`,
//! `information_schema.columns` and the others that psql, drivers and GUI tools read to
//! learn what a database holds. Components and events are the tables of the schema
//! `public`, their fields the columns (after `id`), indexes the indexes.
//!
//! Invariants: every view has PostgreSQL's columns, in its order and under its names
//! (`pg.rs` and `information.rs` copy them from PostgreSQL 15), with ecsql's type for
//! each: the integers (`oid`, `int2`, `int4`, `xid`) INT, `real` REAL, `boolean` BOOL,
//! everything else TEXT, an array as PostgreSQL writes one (`{a,b}`). A view's rows are
//! made from the world's catalog alone (never from the rows of its tables), so a plan
//! that holds them is good until the schema changes, which rebinds it. Oids are fixed for
//! the built-in objects and stable for ecsql's while the schema does not change.

mod information;
mod pg;

use std::sync::OnceLock;

use crate::storage::{Value, World};
use crate::vector::{DataType, Vector};

/// A view's schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schema {
    PgCatalog,
    InformationSchema,
}

impl Schema {
    pub fn name(self) -> &'static str {
        match self {
            Schema::PgCatalog => "pg_catalog",
            Schema::InformationSchema => "information_schema",
        }
    }

    pub fn oid(self) -> i64 {
        match self {
            Schema::PgCatalog => crate::postgres::PG_CATALOG,
            Schema::InformationSchema => crate::postgres::INFORMATION_SCHEMA,
        }
    }
}

/// One column of a view.
#[derive(Debug)]
pub struct ViewColumn {
    pub name: &'static str,
    /// Its type as PostgreSQL names it (`oid`, `name`, `"char"`, `text[]`).
    pub pg_type: &'static str,
    pub ty: DataType,
}

/// One view.
pub struct View {
    pub schema: Schema,
    pub name: &'static str,
    /// Its columns as PostgreSQL lists them: `name type, name type, …`.
    spec: &'static str,
    /// Its rows.
    fill: fn(&World, &mut Rows),
    /// It never has a row: ecsql has none of what it lists (`pg_policy`).
    empty: bool,
    columns: OnceLock<Vec<ViewColumn>>,
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.schema.name(), self.name)
    }
}

impl View {
    const fn new(
        schema: Schema,
        name: &'static str,
        spec: &'static str,
        fill: fn(&World, &mut Rows),
    ) -> View {
        View {
            schema,
            name,
            spec,
            fill,
            empty: false,
            columns: OnceLock::new(),
        }
    }

    /// A view of what ecsql has none of: no row, ever.
    const fn empty(schema: Schema, name: &'static str, spec: &'static str) -> View {
        View {
            schema,
            name,
            spec,
            fill: none,
            empty: true,
            columns: OnceLock::new(),
        }
    }

    /// Whether it never has a row.
    pub fn is_always_empty(&self) -> bool {
        self.empty
    }

    pub fn columns(&self) -> &[ViewColumn] {
        self.columns.get_or_init(|| {
            self.spec
                .split(", ")
                .filter_map(|c| {
                    let (name, pg_type) = c.split_once(' ')?;
                    Some(ViewColumn {
                        name,
                        pg_type,
                        ty: data_type(pg_type),
                    })
                })
                .collect()
        })
    }

    /// The view's rows over `world`'s catalog, a column each.
    pub fn rows(&'static self, world: &World) -> ViewRows {
        let mut rows = Rows {
            columns: self.columns(),
            values: self.columns().iter().map(|_| Vec::new()).collect(),
        };
        (self.fill)(world, &mut rows);
        let len = rows.values.first().map_or(0, Vec::len);
        let columns = rows
            .values
            .iter()
            .zip(self.columns())
            .map(|(values, c)| Vector::from_values(c.ty, values))
            .collect();
        ViewRows { columns, len }
    }

    /// The oid the view has in `pg_class`.
    pub fn oid(&self) -> i64 {
        let at = VIEWS.iter().position(|v| std::ptr::eq(v, self)).unwrap_or(0);
        VIEW_OIDS + at as i64
    }
}

/// The oids of the views themselves, in the order of `VIEWS`.
const VIEW_OIDS: i64 = 12_000;

/// A view's rows: a vector per column.
#[derive(Debug)]
pub struct ViewRows {
    pub columns: Vec<Vector<'static>>,
    pub len: usize,
}

/// What a view's `fill` writes its rows into.
pub struct Rows {
    columns: &'static [ViewColumn],
    values: Vec<Vec<Value>>,
}

impl Rows {
    /// Adds a row: the columns named get these values, every other its type's empty
    /// value (`nothing`).
    fn push(&mut self, named: &[(&str, Value)]) {
        for (i, c) in self.columns.iter().enumerate() {
            let v = named
                .iter()
                .find(|(n, _)| *n == c.name)
                .map_or_else(|| nothing(c.pg_type), |(_, v)| v.clone());
            self.values[i].push(v);
        }
    }
}

/// What a column holds where an object has nothing to say: false, 0, an empty `"char"`
/// (as PostgreSQL's `attidentity`), `-` for a function, NULL for a text or an array.
fn nothing(pg_type: &str) -> Value {
    match pg_type {
        "boolean" => Value::Bool(false),
        "\"char\"" => Value::Text(String::new()),
        "regproc" => Value::Text("-".into()),
        _ => match data_type(pg_type) {
            DataType::Int => Value::Int(0),
            DataType::Real => Value::Real(0.0),
            _ => Value::Null,
        },
    }
}

/// ecsql's type for a column of PostgreSQL's type `pg_type`.
fn data_type(pg_type: &str) -> DataType {
    match pg_type {
        "oid" | "xid" | "smallint" | "integer" | "bigint" | "information_schema.cardinal_number" => {
            DataType::Int
        }
        "real" => DataType::Real,
        "boolean" => DataType::Bool,
        _ => DataType::Text,
    }
}

/// Every view.
static VIEWS: [View; 40] = [
    View::new(Schema::PgCatalog, "pg_namespace", pg::NAMESPACE, pg::namespaces),
    View::new(Schema::PgCatalog, "pg_class", pg::CLASS, pg::classes),
    View::new(Schema::PgCatalog, "pg_attribute", pg::ATTRIBUTE, pg::attributes),
    View::new(Schema::PgCatalog, "pg_type", pg::TYPE, pg::types),
    View::new(
        Schema::PgCatalog,
        "pg_database",
        pg::DATABASE_COLUMNS,
        pg::databases,
    ),
    View::new(Schema::PgCatalog, "pg_am", pg::AM, pg::access_methods),
    View::new(Schema::PgCatalog, "pg_attrdef", pg::ATTRDEF, pg::defaults),
    View::new(Schema::PgCatalog, "pg_index", pg::INDEX, pg::indexes),
    View::new(Schema::PgCatalog, "pg_indexes", pg::INDEXES, pg::index_list),
    View::new(Schema::PgCatalog, "pg_tables", pg::TABLES, pg::tables),
    View::new(Schema::PgCatalog, "pg_roles", pg::ROLES, pg::roles),
    View::new(Schema::PgCatalog, "pg_user", pg::USER, pg::users),
    View::new(Schema::PgCatalog, "pg_settings", pg::SETTINGS, pg::settings),
    View::new(Schema::PgCatalog, "pg_collation", pg::COLLATION, pg::collations),
    View::new(
        Schema::PgCatalog,
        "pg_tablespace",
        pg::TABLESPACE,
        pg::tablespaces,
    ),
    View::empty(Schema::PgCatalog, "pg_proc", pg::PROC),
    View::empty(Schema::PgCatalog, "pg_description", pg::DESCRIPTION),
    View::empty(Schema::PgCatalog, "pg_shdescription", pg::SHDESCRIPTION),
    View::empty(Schema::PgCatalog, "pg_constraint", pg::CONSTRAINT),
    View::empty(Schema::PgCatalog, "pg_trigger", pg::TRIGGER),
    View::empty(Schema::PgCatalog, "pg_policy", pg::POLICY),
    View::empty(Schema::PgCatalog, "pg_inherits", pg::INHERITS),
    View::empty(Schema::PgCatalog, "pg_statistic_ext", pg::STATISTIC_EXT),
    View::empty(Schema::PgCatalog, "pg_publication", pg::PUBLICATION),
    View::empty(
        Schema::PgCatalog,
        "pg_publication_namespace",
        pg::PUBLICATION_NAMESPACE,
    ),
    View::empty(Schema::PgCatalog, "pg_publication_rel", pg::PUBLICATION_REL),
    View::empty(Schema::PgCatalog, "pg_extension", pg::EXTENSION),
    View::empty(Schema::PgCatalog, "pg_views", pg::VIEWS_COLUMNS),
    View::empty(Schema::PgCatalog, "pg_sequence", pg::SEQUENCE),
    View::empty(Schema::PgCatalog, "pg_enum", pg::ENUM),
    View::empty(Schema::PgCatalog, "pg_range", pg::RANGE),
    View::empty(Schema::PgCatalog, "pg_rewrite", pg::REWRITE),
    View::empty(Schema::PgCatalog, "pg_event_trigger", pg::EVENT_TRIGGER),
    View::empty(Schema::PgCatalog, "pg_foreign_table", pg::FOREIGN_TABLE),
    View::new(
        Schema::InformationSchema,
        "schemata",
        information::SCHEMATA,
        information::schemata,
    ),
    View::new(
        Schema::InformationSchema,
        "tables",
        information::TABLES,
        information::tables,
    ),
    View::new(
        Schema::InformationSchema,
        "columns",
        information::COLUMNS,
        information::columns,
    ),
    View::empty(Schema::InformationSchema, "views", information::VIEWS_COLUMNS),
    View::empty(
        Schema::InformationSchema,
        "table_constraints",
        information::TABLE_CONSTRAINTS,
    ),
    View::empty(
        Schema::InformationSchema,
        "key_column_usage",
        information::KEY_COLUMN_USAGE,
    ),
];

/// `pg_get_keywords()`, a function of `pg_catalog` that gives a table: the words ecsql's
/// language reserves.
static KEYWORDS: View = View::new(Schema::PgCatalog, "pg_get_keywords", pg::KEYWORDS, pg::keywords);

/// The table function of `pg_catalog` called `name`, if there is one.
pub fn table_function(name: &str) -> Option<&'static View> {
    name.eq_ignore_ascii_case(KEYWORDS.name).then_some(&KEYWORDS)
}

/// The catalogs ecsql has none of: no row.
fn none(_: &World, _: &mut Rows) {}

/// The view `name` of `schema` (any case); without a schema, one of `pg_catalog`'s.
pub fn find(schema: Option<&str>, name: &str) -> Option<&'static View> {
    let schema = match schema {
        None => Schema::PgCatalog,
        Some(s) if s.eq_ignore_ascii_case("pg_catalog") => Schema::PgCatalog,
        Some(s) if s.eq_ignore_ascii_case("information_schema") => Schema::InformationSchema,
        Some(_) => return None,
    };
    VIEWS
        .iter()
        .find(|v| v.schema == schema && v.name.eq_ignore_ascii_case(name))
}

pub use pg::index_definitions;

/// Every view.
pub fn all() -> &'static [View] {
    &VIEWS
}
