//! The views of `pg_catalog`: their columns as PostgreSQL 15 has them, and their rows
//! made from the world's catalog.
//!
//! Oids: a component's table is `16384 + 4 × its id`, an event's `… + 1`, the index at
//! place i of the world's list `16384 + 4 × i + 2`, an attribute default `… + 3` of its
//! table's plus the field's place × 2^20; the views are `12000 + their place`.

use super::{Rows, Schema, VIEWS};
use crate::index::{IndexKind, Indexes};
use crate::postgres::{self as types, DATABASE, OWNER, OWNER_NAME, PG_CATALOG, PUBLIC, TYPES};
use crate::storage::{FieldDef, FieldType, Value, World};

pub const NAMESPACE: &str = "oid oid, nspname name, nspowner oid, nspacl aclitem[]";
pub const CLASS: &str = "oid oid, relname name, relnamespace oid, reltype oid, reloftype oid, relowner oid, relam oid, relfilenode oid, reltablespace oid, relpages integer, reltuples real, relallvisible integer, reltoastrelid oid, relhasindex boolean, relisshared boolean, relpersistence \"char\", relkind \"char\", relnatts smallint, relchecks smallint, relhasrules boolean, relhastriggers boolean, relhassubclass boolean, relrowsecurity boolean, relforcerowsecurity boolean, relispopulated boolean, relreplident \"char\", relispartition boolean, relrewrite oid, relfrozenxid xid, relminmxid xid, relacl aclitem[], reloptions text[], relpartbound pg_node_tree";
pub const ATTRIBUTE: &str = "attrelid oid, attname name, atttypid oid, attstattarget integer, attlen smallint, attnum smallint, attndims integer, attcacheoff integer, atttypmod integer, attbyval boolean, attalign \"char\", attstorage \"char\", attcompression \"char\", attnotnull boolean, atthasdef boolean, atthasmissing boolean, attidentity \"char\", attgenerated \"char\", attisdropped boolean, attislocal boolean, attinhcount integer, attcollation oid, attacl aclitem[], attoptions text[], attfdwoptions text[], attmissingval anyarray";
pub const TYPE: &str = "oid oid, typname name, typnamespace oid, typowner oid, typlen smallint, typbyval boolean, typtype \"char\", typcategory \"char\", typispreferred boolean, typisdefined boolean, typdelim \"char\", typrelid oid, typsubscript regproc, typelem oid, typarray oid, typinput regproc, typoutput regproc, typreceive regproc, typsend regproc, typmodin regproc, typmodout regproc, typanalyze regproc, typalign \"char\", typstorage \"char\", typnotnull boolean, typbasetype oid, typtypmod integer, typndims integer, typcollation oid, typdefaultbin pg_node_tree, typdefault text, typacl aclitem[]";
pub const DATABASE_COLUMNS: &str = "oid oid, datname name, datdba oid, encoding integer, datlocprovider \"char\", datistemplate boolean, datallowconn boolean, datconnlimit integer, datfrozenxid xid, datminmxid xid, dattablespace oid, datcollate text, datctype text, daticulocale text, datcollversion text, datacl aclitem[]";
pub const AM: &str = "oid oid, amname name, amhandler regproc, amtype \"char\"";
pub const ATTRDEF: &str = "oid oid, adrelid oid, adnum smallint, adbin pg_node_tree";
pub const INDEX: &str = "indexrelid oid, indrelid oid, indnatts smallint, indnkeyatts smallint, indisunique boolean, indnullsnotdistinct boolean, indisprimary boolean, indisexclusion boolean, indimmediate boolean, indisclustered boolean, indisvalid boolean, indcheckxmin boolean, indisready boolean, indislive boolean, indisreplident boolean, indkey int2vector, indcollation oidvector, indclass oidvector, indoption int2vector, indexprs pg_node_tree, indpred pg_node_tree";
pub const INDEXES: &str = "schemaname name, tablename name, indexname name, tablespace name, indexdef text";
pub const TABLES: &str = "schemaname name, tablename name, tableowner name, tablespace name, hasindexes boolean, hasrules boolean, hastriggers boolean, rowsecurity boolean";
pub const ROLES: &str = "rolname name, rolsuper boolean, rolinherit boolean, rolcreaterole boolean, rolcreatedb boolean, rolcanlogin boolean, rolreplication boolean, rolconnlimit integer, rolpassword text, rolvaliduntil timestamp with time zone, rolbypassrls boolean, rolconfig text[], oid oid";
pub const USER: &str = "usename name, usesysid oid, usecreatedb boolean, usesuper boolean, userepl boolean, usebypassrls boolean, passwd text, valuntil timestamp with time zone, useconfig text[]";
pub const SETTINGS: &str = "name text, setting text, unit text, category text, short_desc text, extra_desc text, context text, vartype text, source text, min_val text, max_val text, enumvals text[], boot_val text, reset_val text, sourcefile text, sourceline integer, pending_restart boolean";
pub const COLLATION: &str = "oid oid, collname name, collnamespace oid, collowner oid, collprovider \"char\", collisdeterministic boolean, collencoding integer, collcollate text, collctype text, colliculocale text, collversion text";
pub const TABLESPACE: &str = "oid oid, spcname name, spcowner oid, spcacl aclitem[], spcoptions text[]";
pub const PROC: &str = "oid oid, proname name, pronamespace oid, proowner oid, prolang oid, procost real, prorows real, provariadic oid, prosupport regproc, prokind \"char\", prosecdef boolean, proleakproof boolean, proisstrict boolean, proretset boolean, provolatile \"char\", proparallel \"char\", pronargs smallint, pronargdefaults smallint, prorettype oid, proargtypes oidvector, proallargtypes oid[], proargmodes \"char\"[], proargnames text[], proargdefaults pg_node_tree, protrftypes oid[], prosrc text, probin text, prosqlbody pg_node_tree, proconfig text[], proacl aclitem[]";
pub const DESCRIPTION: &str = "objoid oid, classoid oid, objsubid integer, description text";
pub const SHDESCRIPTION: &str = "objoid oid, classoid oid, description text";
pub const CONSTRAINT: &str = "oid oid, conname name, connamespace oid, contype \"char\", condeferrable boolean, condeferred boolean, convalidated boolean, conrelid oid, contypid oid, conindid oid, conparentid oid, confrelid oid, confupdtype \"char\", confdeltype \"char\", confmatchtype \"char\", conislocal boolean, coninhcount integer, connoinherit boolean, conkey smallint[], confkey smallint[], conpfeqop oid[], conppeqop oid[], conffeqop oid[], confdelsetcols smallint[], conexclop oid[], conbin pg_node_tree";
pub const TRIGGER: &str = "oid oid, tgrelid oid, tgparentid oid, tgname name, tgfoid oid, tgtype smallint, tgenabled \"char\", tgisinternal boolean, tgconstrrelid oid, tgconstrindid oid, tgconstraint oid, tgdeferrable boolean, tginitdeferred boolean, tgnargs smallint, tgattr int2vector, tgargs bytea, tgqual pg_node_tree, tgoldtable name, tgnewtable name";
pub const POLICY: &str = "oid oid, polname name, polrelid oid, polcmd \"char\", polpermissive boolean, polroles oid[], polqual pg_node_tree, polwithcheck pg_node_tree";
pub const INHERITS: &str = "inhrelid oid, inhparent oid, inhseqno integer, inhdetachpending boolean";
pub const STATISTIC_EXT: &str = "oid oid, stxrelid oid, stxname name, stxnamespace oid, stxowner oid, stxstattarget integer, stxkeys int2vector, stxkind \"char\"[], stxexprs pg_node_tree";
pub const PUBLICATION: &str = "oid oid, pubname name, pubowner oid, puballtables boolean, pubinsert boolean, pubupdate boolean, pubdelete boolean, pubtruncate boolean, pubviaroot boolean";
pub const PUBLICATION_NAMESPACE: &str = "oid oid, pnpubid oid, pnnspid oid";
pub const PUBLICATION_REL: &str =
    "oid oid, prpubid oid, prrelid oid, prqual pg_node_tree, prattrs int2vector";
pub const EXTENSION: &str = "oid oid, extname name, extowner oid, extnamespace oid, extrelocatable boolean, extversion text, extconfig oid[], extcondition text[]";
pub const VIEWS_COLUMNS: &str = "schemaname name, viewname name, viewowner name, definition text";
pub const SEQUENCE: &str = "seqrelid oid, seqtypid oid, seqstart bigint, seqincrement bigint, seqmax bigint, seqmin bigint, seqcache bigint, seqcycle boolean";
pub const ENUM: &str = "oid oid, enumtypid oid, enumsortorder real, enumlabel name";
pub const RANGE: &str = "rngtypid oid, rngsubtype oid, rngmultitypid oid, rngcollation oid, rngsubopc oid, rngcanonical regproc, rngsubdiff regproc";
pub const REWRITE: &str = "oid oid, rulename name, ev_class oid, ev_type \"char\", ev_enabled \"char\", is_instead boolean, ev_qual pg_node_tree, ev_action pg_node_tree";
pub const EVENT_TRIGGER: &str =
    "oid oid, evtname name, evtevent name, evtowner oid, evtfoid oid, evtenabled \"char\", evttags text[]";
pub const FOREIGN_TABLE: &str = "ftrelid oid, ftserver oid, ftoptions text[]";

pub const KEYWORDS: &str = "word text, catcode \"char\", barelabel boolean, catdesc text, baredesc text";

/// The words ecsql's language reserves: SQL's, and its own statements'.
const RESERVED: &[&str] = &[
    "all",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "between",
    "by",
    "case",
    "cast",
    "collate",
    "cross",
    "default",
    "desc",
    "distinct",
    "else",
    "end",
    "except",
    "exists",
    "false",
    "from",
    "group",
    "having",
    "in",
    "intersect",
    "is",
    "join",
    "left",
    "like",
    "limit",
    "not",
    "null",
    "offset",
    "on",
    "or",
    "order",
    "over",
    "select",
    "then",
    "true",
    "union",
    "using",
    "values",
    "when",
    "where",
    "window",
    "with",
    "spawn",
    "despawn",
    "tick",
    "pragma",
    "subscribe",
    "component",
    "tag",
    "system",
];

pub(super) fn keywords(_: &World, rows: &mut Rows) {
    for word in RESERVED {
        rows.push(&[
            ("word", text(*word)),
            ("catcode", text("R")),
            ("barelabel", Value::Bool(false)),
            ("catdesc", text("reserved")),
            ("baredesc", text("requires AS")),
        ]);
    }
}

/// The first oid of ecsql's own objects, as PostgreSQL's first user oid.
const FIRST: i64 = 16_384;
/// The access methods: a table's, and an index's by its kind.
const HEAP: i64 = 2;
const BTREE: i64 = 403;
const HASH: i64 = 405;
const GIST: i64 = 783;
const BRIN: i64 = 3580;

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

/// One table of the schema `public`: a component or an event.
pub(super) struct Table<'a> {
    pub oid: i64,
    pub name: &'a str,
    pub fields: &'a [FieldDef],
    pub indexed: bool,
}

/// Every component and every event, as tables.
pub(super) fn tables_of(world: &World) -> Vec<Table<'_>> {
    let indexes = Indexes::of(world);
    let mut out: Vec<Table<'_>> = world
        .components()
        .map(|c| Table {
            oid: FIRST + 4 * i64::from(c.id().to_raw()),
            name: c.name(),
            fields: c.fields(),
            indexed: indexes.iter().any(|i| i.component() == c.id()),
        })
        .collect();
    out.extend(world.events().map(|e| Table {
        oid: FIRST + 4 * i64::from(e.id().to_raw()) + 1,
        name: e.name(),
        fields: e.fields(),
        indexed: false,
    }));
    out
}

/// PostgreSQL's type for a field of ecsql's type: an ENTITY is its id's bits, `int8`.
pub(super) fn field_type(ty: FieldType) -> &'static types::PgType {
    let oid = match ty {
        FieldType::Int | FieldType::Entity => 20,
        FieldType::Float => 701,
        FieldType::Real => 700,
        FieldType::Bool => 16,
        FieldType::Text => 25,
    };
    types::by_oid(oid).unwrap_or(&TYPES[0])
}

/// A column's type by PostgreSQL's name for it (`text` where this list lacks it).
fn named_type(pg_type: &str) -> &'static types::PgType {
    let name = match pg_type {
        "\"char\"" => "char",
        "\"char\"[]" => "_char",
        other => other,
    };
    let name = name
        .strip_prefix("information_schema.")
        .map_or(name, |n| match n {
            "cardinal_number" => "int4",
            _ => "varchar",
        });
    match name.strip_suffix("[]") {
        Some(element) => types::by_name(element)
            .and_then(|e| types::by_oid(e.array))
            .unwrap_or(&TYPES[4]),
        None => types::by_name(name).unwrap_or(&TYPES[4]),
    }
}

/// A field's default as PostgreSQL's `pg_get_expr` writes it, if it has one.
pub(super) fn default_text(f: &FieldDef) -> Option<String> {
    match f.default_value() {
        Value::Null => None,
        Value::Text(_) => Some(format!("{}::text", f.default_value())),
        Value::Bool(b) => Some(b.to_string()),
        v => Some(v.to_string()),
    }
}

pub(super) fn namespaces(_: &World, rows: &mut Rows) {
    for (oid, name) in [
        (PG_CATALOG, "pg_catalog"),
        (PUBLIC, "public"),
        (types::INFORMATION_SCHEMA, "information_schema"),
    ] {
        rows.push(&[
            ("oid", Value::Int(oid)),
            ("nspname", text(name)),
            ("nspowner", Value::Int(OWNER)),
        ]);
    }
}

pub(super) fn classes(world: &World, rows: &mut Rows) {
    for view in &VIEWS {
        let kind = match view.schema {
            Schema::PgCatalog => "r",
            Schema::InformationSchema => "v",
        };
        rows.push(&[
            ("oid", Value::Int(view.oid())),
            ("relname", text(view.name)),
            ("relnamespace", Value::Int(view.schema.oid())),
            ("relowner", Value::Int(OWNER)),
            ("relam", Value::Int(if kind == "r" { HEAP } else { 0 })),
            ("reltuples", Value::Real(-1.0)),
            ("relpersistence", text("p")),
            ("relkind", text(kind)),
            ("relnatts", Value::Int(view.columns().len() as i64)),
            ("relispopulated", Value::Bool(true)),
            ("relreplident", text("n")),
        ]);
    }
    for table in tables_of(world) {
        rows.push(&[
            ("oid", Value::Int(table.oid)),
            ("relname", text(table.name)),
            ("relnamespace", Value::Int(PUBLIC)),
            ("relowner", Value::Int(OWNER)),
            ("relam", Value::Int(HEAP)),
            ("relfilenode", Value::Int(table.oid)),
            ("reltuples", Value::Real(-1.0)),
            ("relhasindex", Value::Bool(table.indexed)),
            ("relpersistence", text("p")),
            ("relkind", text("r")),
            ("relnatts", Value::Int(table.fields.len() as i64 + 1)),
            ("relispopulated", Value::Bool(true)),
            ("relreplident", text("d")),
        ]);
    }
    for (i, index) in Indexes::of(world).iter().enumerate() {
        let am = match index.kind() {
            IndexKind::Spatial => GIST,
            IndexKind::Relation => HASH,
            IndexKind::Filter => BRIN,
            IndexKind::Ordered | IndexKind::Function => BTREE,
        };
        let keys = index.definition().map_or(index.fields().len(), |d| d.exprs.len());
        rows.push(&[
            ("oid", Value::Int(index_oid(i))),
            ("relname", text(index.name())),
            ("relnamespace", Value::Int(PUBLIC)),
            ("relowner", Value::Int(OWNER)),
            ("relam", Value::Int(am)),
            ("relfilenode", Value::Int(index_oid(i))),
            ("reltuples", Value::Real(-1.0)),
            ("relpersistence", text("p")),
            ("relkind", text("i")),
            ("relnatts", Value::Int(keys as i64)),
            ("relispopulated", Value::Bool(true)),
            ("relreplident", text("n")),
        ]);
    }
}

pub(super) fn index_oid(place: usize) -> i64 {
    FIRST + 4 * place as i64 + 2
}

/// The oid of the table of component `id`.
pub(super) fn component_oid(world: &World, id: crate::storage::ComponentId) -> i64 {
    let _ = world;
    FIRST + 4 * i64::from(id.to_raw())
}

/// One attribute row.
fn attribute(
    rows: &mut Rows,
    relation: i64,
    num: i64,
    name: &str,
    ty: &types::PgType,
    not_null: bool,
    has_default: bool,
) {
    rows.push(&[
        ("attrelid", Value::Int(relation)),
        ("attname", text(name)),
        ("atttypid", Value::Int(ty.oid)),
        ("attstattarget", Value::Int(-1)),
        ("attlen", Value::Int(ty.len)),
        ("attnum", Value::Int(num)),
        ("attcacheoff", Value::Int(-1)),
        ("atttypmod", Value::Int(-1)),
        ("attbyval", Value::Bool(ty.len > 0 && ty.len <= 8)),
        ("attalign", text(ty.align)),
        ("attstorage", text(if ty.len > 0 { "p" } else { "x" })),
        ("attnotnull", Value::Bool(not_null)),
        ("atthasdef", Value::Bool(has_default)),
        ("attislocal", Value::Bool(true)),
        (
            "attcollation",
            Value::Int(if ty.category == "S" { 100 } else { 0 }),
        ),
    ]);
}

pub(super) fn attributes(world: &World, rows: &mut Rows) {
    for view in &VIEWS {
        for (i, c) in view.columns().iter().enumerate() {
            attribute(
                rows,
                view.oid(),
                i as i64 + 1,
                c.name,
                named_type(c.pg_type),
                false,
                false,
            );
        }
    }
    for table in tables_of(world) {
        attribute(
            rows,
            table.oid,
            1,
            "id",
            field_type(FieldType::Entity),
            true,
            false,
        );
        for (i, f) in table.fields.iter().enumerate() {
            let not_null = f.ty() != FieldType::Entity;
            let has_default = default_text(f).is_some();
            attribute(
                rows,
                table.oid,
                i as i64 + 2,
                f.name(),
                field_type(f.ty()),
                not_null,
                has_default,
            );
        }
    }
}

pub(super) fn defaults(world: &World, rows: &mut Rows) {
    for table in tables_of(world) {
        for (i, f) in table.fields.iter().enumerate() {
            if let Some(d) = default_text(f) {
                rows.push(&[
                    ("oid", Value::Int(table.oid + 3 + ((i as i64 + 2) << 20))),
                    ("adrelid", Value::Int(table.oid)),
                    ("adnum", Value::Int(i as i64 + 2)),
                    ("adbin", text(d)),
                ]);
            }
        }
    }
}

pub(super) fn types(_: &World, rows: &mut Rows) {
    for t in TYPES {
        let (input, output, receive, send) = (
            format!("{}in", t.io),
            format!("{}out", t.io),
            format!("{}recv", t.io),
            format!("{}send", t.io),
        );
        let (input, output) = if t.io == "array" {
            ("array_in".to_owned(), "array_out".to_owned())
        } else {
            (input, output)
        };
        let (receive, send) = if t.io == "array" {
            ("array_recv".to_owned(), "array_send".to_owned())
        } else {
            (receive, send)
        };
        rows.push(&[
            ("oid", Value::Int(t.oid)),
            ("typname", text(t.name)),
            ("typnamespace", Value::Int(PG_CATALOG)),
            ("typowner", Value::Int(OWNER)),
            ("typlen", Value::Int(t.len)),
            ("typbyval", Value::Bool(t.len > 0 && t.len <= 8)),
            ("typtype", text(if t.category == "P" { "p" } else { "b" })),
            ("typcategory", text(t.category)),
            ("typisdefined", Value::Bool(true)),
            ("typdelim", text(",")),
            ("typelem", Value::Int(t.element)),
            ("typarray", Value::Int(t.array)),
            ("typinput", text(input)),
            ("typoutput", text(output)),
            ("typreceive", text(receive)),
            ("typsend", text(send)),
            ("typalign", text(t.align)),
            ("typstorage", text(if t.len > 0 { "p" } else { "x" })),
            ("typtypmod", Value::Int(-1)),
            (
                "typcollation",
                Value::Int(if t.category == "S" { 100 } else { 0 }),
            ),
        ]);
    }
}

pub(super) fn databases(_: &World, rows: &mut Rows) {
    rows.push(&[
        ("oid", Value::Int(DATABASE)),
        ("datname", text(types::DATABASE_NAME)),
        ("datdba", Value::Int(OWNER)),
        ("encoding", Value::Int(6)),
        ("datlocprovider", text("c")),
        ("datallowconn", Value::Bool(true)),
        ("datconnlimit", Value::Int(-1)),
        ("dattablespace", Value::Int(1663)),
        ("datcollate", text("C")),
        ("datctype", text("C")),
    ]);
}

pub(super) fn access_methods(_: &World, rows: &mut Rows) {
    for (oid, name, handler, kind) in [
        (HEAP, "heap", "heap_tableam_handler", "t"),
        (BTREE, "btree", "bthandler", "i"),
        (HASH, "hash", "hashhandler", "i"),
        (GIST, "gist", "gisthandler", "i"),
        (BRIN, "brin", "brinhandler", "i"),
    ] {
        rows.push(&[
            ("oid", Value::Int(oid)),
            ("amname", text(name)),
            ("amhandler", text(handler)),
            ("amtype", text(kind)),
        ]);
    }
}

/// An index's definition as PostgreSQL's `pg_get_indexdef` writes one: the statement,
/// with the schema and the access method (`CREATE INDEX unit_hp ON public."Unit" USING
/// btree (hp)`), which psql shows from `USING` on.
pub(super) fn index_definition(world: &World, index: &crate::index::Index) -> String {
    let component = world.component(index.component()).map_or("", |c| c.name());
    let quote = crate::postgres::quote_ident;
    let method = match index.kind() {
        IndexKind::Spatial => "gist",
        IndexKind::Relation => "hash",
        IndexKind::Filter => "brin",
        IndexKind::Ordered | IndexKind::Function => "btree",
    };
    let (keys, predicate) = match index.definition() {
        Some(def) => (
            def.exprs.join(", "),
            def.predicate.as_ref().map(|p| format!(" WHERE {p}")),
        ),
        None => {
            let fields: Vec<String> = world
                .component(index.component())
                .map(|c| {
                    index
                        .fields()
                        .iter()
                        .filter_map(|f| c.fields().get(f.index()).map(|d| quote(d.name())))
                        .collect()
                })
                .unwrap_or_default();
            (fields.join(", "), None)
        }
    };
    format!(
        "CREATE INDEX {} ON public.{} USING {method} ({keys}){}",
        quote(index.name()),
        quote(component),
        predicate.unwrap_or_default()
    )
}

/// Each index's oid and definition, for `pg_get_indexdef`.
pub fn index_definitions(world: &World) -> Vec<(i64, String)> {
    Indexes::of(world)
        .iter()
        .enumerate()
        .map(|(i, index)| (index_oid(i), index_definition(world, index)))
        .collect()
}

pub(super) fn indexes(world: &World, rows: &mut Rows) {
    for (i, index) in Indexes::of(world).iter().enumerate() {
        let (keys, exprs) = match index.definition() {
            Some(d) => (vec!["0"; d.exprs.len()].join(" "), Some(d.exprs.join(", "))),
            None => (
                index
                    .fields()
                    .iter()
                    .map(|f| (f.index() + 2).to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
                None,
            ),
        };
        let n = keys.split(' ').count() as i64;
        rows.push(&[
            ("indexrelid", Value::Int(index_oid(i))),
            ("indrelid", Value::Int(component_oid(world, index.component()))),
            ("indnatts", Value::Int(n)),
            ("indnkeyatts", Value::Int(n)),
            ("indimmediate", Value::Bool(true)),
            ("indisvalid", Value::Bool(true)),
            ("indisready", Value::Bool(true)),
            ("indislive", Value::Bool(true)),
            ("indkey", text(keys)),
            ("indexprs", exprs.map_or(Value::Null, text)),
            (
                "indpred",
                index
                    .definition()
                    .and_then(|d| d.predicate.clone())
                    .map_or(Value::Null, text),
            ),
        ]);
    }
}

pub(super) fn index_list(world: &World, rows: &mut Rows) {
    for index in Indexes::of(world).iter() {
        let table = world.component(index.component()).map_or("", |c| c.name());
        rows.push(&[
            ("schemaname", text("public")),
            ("tablename", text(table)),
            ("indexname", text(index.name())),
            ("indexdef", text(index_definition(world, index))),
        ]);
    }
}

pub(super) fn tables(world: &World, rows: &mut Rows) {
    for view in VIEWS.iter().filter(|v| v.schema == Schema::PgCatalog) {
        rows.push(&[
            ("schemaname", text("pg_catalog")),
            ("tablename", text(view.name)),
            ("tableowner", text(OWNER_NAME)),
        ]);
    }
    for table in tables_of(world) {
        rows.push(&[
            ("schemaname", text("public")),
            ("tablename", text(table.name)),
            ("tableowner", text(OWNER_NAME)),
            ("hasindexes", Value::Bool(table.indexed)),
        ]);
    }
}

pub(super) fn roles(_: &World, rows: &mut Rows) {
    rows.push(&[
        ("rolname", text(OWNER_NAME)),
        ("rolsuper", Value::Bool(true)),
        ("rolinherit", Value::Bool(true)),
        ("rolcreaterole", Value::Bool(true)),
        ("rolcreatedb", Value::Bool(true)),
        ("rolcanlogin", Value::Bool(true)),
        ("rolconnlimit", Value::Int(-1)),
        ("rolpassword", text("********")),
        ("oid", Value::Int(OWNER)),
    ]);
}

pub(super) fn users(_: &World, rows: &mut Rows) {
    rows.push(&[
        ("usename", text(OWNER_NAME)),
        ("usesysid", Value::Int(OWNER)),
        ("usecreatedb", Value::Bool(true)),
        ("usesuper", Value::Bool(true)),
        ("passwd", text("********")),
    ]);
}

pub(super) fn settings(_: &World, rows: &mut Rows) {
    for s in types::SETTINGS {
        rows.push(&[
            ("name", text(s.name)),
            ("setting", text(s.value)),
            ("category", text(s.category)),
            ("short_desc", text(s.description)),
            ("context", text("user")),
            ("vartype", text("string")),
            ("source", text("default")),
            ("boot_val", text(s.value)),
            ("reset_val", text(s.value)),
        ]);
    }
}

pub(super) fn collations(_: &World, rows: &mut Rows) {
    for (oid, name, provider, collate) in [
        (100, "default", "d", ""),
        (950, "C", "c", "C"),
        (951, "POSIX", "c", "POSIX"),
    ] {
        rows.push(&[
            ("oid", Value::Int(oid)),
            ("collname", text(name)),
            ("collnamespace", Value::Int(PG_CATALOG)),
            ("collowner", Value::Int(OWNER)),
            ("collprovider", text(provider)),
            ("collisdeterministic", Value::Bool(true)),
            ("collencoding", Value::Int(-1)),
            (
                "collcollate",
                if collate.is_empty() {
                    Value::Null
                } else {
                    text(collate)
                },
            ),
            (
                "collctype",
                if collate.is_empty() {
                    Value::Null
                } else {
                    text(collate)
                },
            ),
        ]);
    }
}

pub(super) fn tablespaces(_: &World, rows: &mut Rows) {
    for (oid, name) in [(1663, "pg_default"), (1664, "pg_global")] {
        rows.push(&[
            ("oid", Value::Int(oid)),
            ("spcname", text(name)),
            ("spcowner", Value::Int(OWNER)),
        ]);
    }
}
