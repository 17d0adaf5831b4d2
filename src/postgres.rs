//! What PostgreSQL's clients know a server by, as ecsql answers: its built-in types as
//! its catalog lists them (`pg_type`: those ecsql's values are sent as, and those its
//! catalog views' columns have), its settings (`SHOW`, `current_setting`), its one role
//! and database, and how it writes a name.
//!
//! Invariants: every oid here is PostgreSQL's own for that type (they are fixed since
//! PostgreSQL 8), so that a client's tables of types agree with ours; the type list holds
//! each type once, and each array type after its element. A leaf: it depends on nothing
//! of ecsql's, so the function floor and the catalog views both read it.

/// One type, as `pg_type` and `format_type` give it.
pub struct PgType {
    pub oid: i64,
    /// `typname`.
    pub name: &'static str,
    /// What `format_type` writes (`bigint` for `int8`).
    pub sql_name: &'static str,
    /// `typlen`: bytes, or -1 for a varying length.
    pub len: i64,
    /// `typcategory`: B boolean, N numeric, S string, A array, U user, D date, Z internal.
    pub category: &'static str,
    /// The element type's oid for an array, else 0.
    pub element: i64,
    /// The array type's oid, else 0.
    pub array: i64,
    /// The stem of the input, output, receive and send functions' names (`int8` for
    /// `int8in`, `int8out`, …); an array's are `array_in`, ….
    pub io: &'static str,
    /// `typalign`: c char, s short, i int, d double.
    pub align: &'static str,
}

#[allow(clippy::too_many_arguments)] // one per column of the table below
const fn scalar(
    oid: i64,
    name: &'static str,
    sql_name: &'static str,
    len: i64,
    category: &'static str,
    array: i64,
    io: &'static str,
    align: &'static str,
) -> PgType {
    PgType {
        oid,
        name,
        sql_name,
        len,
        category,
        element: 0,
        array,
        io,
        align,
    }
}

const fn array(
    oid: i64,
    name: &'static str,
    sql_name: &'static str,
    element: i64,
    align: &'static str,
) -> PgType {
    PgType {
        oid,
        name,
        sql_name,
        len: -1,
        category: "A",
        element,
        array: 0,
        io: "array",
        align,
    }
}

/// The types: those ecsql sends first (bool, int8, float4, float8, text), then those its
/// catalog views use.
pub const TYPES: &[PgType] = &[
    scalar(16, "bool", "boolean", 1, "B", 1000, "bool", "c"),
    scalar(20, "int8", "bigint", 8, "N", 1016, "int8", "d"),
    scalar(700, "float4", "real", 4, "N", 1021, "float4", "i"),
    scalar(701, "float8", "double precision", 8, "N", 1022, "float8", "d"),
    scalar(25, "text", "text", -1, "S", 1009, "text", "i"),
    scalar(17, "bytea", "bytea", -1, "U", 1001, "bytea", "i"),
    scalar(18, "char", "\"char\"", 1, "Z", 1002, "char", "c"),
    scalar(19, "name", "name", 64, "S", 1003, "name", "c"),
    scalar(21, "int2", "smallint", 2, "N", 1005, "int2", "s"),
    scalar(22, "int2vector", "int2vector", -1, "A", 1006, "int2vector", "i"),
    scalar(23, "int4", "integer", 4, "N", 1007, "int4", "i"),
    scalar(24, "regproc", "regproc", 4, "N", 1008, "regproc", "i"),
    scalar(26, "oid", "oid", 4, "N", 1028, "oid", "i"),
    scalar(28, "xid", "xid", 4, "U", 1011, "xid", "i"),
    scalar(30, "oidvector", "oidvector", -1, "A", 1013, "oidvector", "i"),
    scalar(
        194,
        "pg_node_tree",
        "pg_node_tree",
        -1,
        "Z",
        0,
        "pg_node_tree",
        "i",
    ),
    scalar(1033, "aclitem", "aclitem", 16, "U", 1034, "aclitem", "d"),
    scalar(1042, "bpchar", "character", -1, "S", 1014, "bpchar", "i"),
    scalar(
        1043,
        "varchar",
        "character varying",
        -1,
        "S",
        1015,
        "varchar",
        "i",
    ),
    scalar(
        1184,
        "timestamptz",
        "timestamp with time zone",
        8,
        "D",
        1185,
        "timestamptz",
        "d",
    ),
    scalar(1700, "numeric", "numeric", -1, "N", 1231, "numeric", "i"),
    scalar(2205, "regclass", "regclass", 4, "N", 2210, "regclass", "i"),
    scalar(2206, "regtype", "regtype", 4, "N", 2211, "regtype", "i"),
    scalar(2277, "anyarray", "anyarray", -1, "P", 0, "anyarray", "d"),
    scalar(
        4089,
        "regnamespace",
        "regnamespace",
        4,
        "N",
        4090,
        "regnamespace",
        "i",
    ),
    array(1000, "_bool", "boolean[]", 16, "i"),
    array(1016, "_int8", "bigint[]", 20, "d"),
    array(1021, "_float4", "real[]", 700, "i"),
    array(1022, "_float8", "double precision[]", 701, "d"),
    array(1009, "_text", "text[]", 25, "i"),
    array(1002, "_char", "\"char\"[]", 18, "i"),
    array(1003, "_name", "name[]", 19, "i"),
    array(1005, "_int2", "smallint[]", 21, "i"),
    array(1007, "_int4", "integer[]", 23, "i"),
    array(1028, "_oid", "oid[]", 26, "i"),
    array(1034, "_aclitem", "aclitem[]", 1033, "d"),
    array(1015, "_varchar", "character varying[]", 1043, "i"),
];

/// The type with this oid.
pub fn by_oid(oid: i64) -> Option<&'static PgType> {
    TYPES.iter().find(|t| t.oid == oid)
}

/// The type with this name (`int8`) or SQL name (`bigint`).
pub fn by_name(name: &str) -> Option<&'static PgType> {
    TYPES
        .iter()
        .find(|t| t.name.eq_ignore_ascii_case(name) || t.sql_name.eq_ignore_ascii_case(name))
}

/// The oid of `pg_catalog`, where every built-in object is.
pub const PG_CATALOG: i64 = 11;
/// The oid of `public`, where every component and event is.
pub const PUBLIC: i64 = 2200;
/// The oid of `information_schema`.
pub const INFORMATION_SCHEMA: i64 = 13_000;
/// The oid of the one role, which owns everything.
pub const OWNER: i64 = 10;
/// The role's name.
pub const OWNER_NAME: &str = "ecsql";
/// The oid of the one database.
pub const DATABASE: i64 = 5;
/// The PostgreSQL version drivers are told (`server_version`): the catalog views are
/// PostgreSQL 15's, so a client asks what they hold.
pub const SERVER_VERSION: &str = "15.0 (ecsql)";

/// The one database's name.
pub const DATABASE_NAME: &str = "ecsql";

/// One of PostgreSQL's settings as ecsql answers `SHOW`, `current_setting` and
/// `pg_settings` for it.
pub struct Setting {
    pub name: &'static str,
    /// Its value (the one a client cannot change, or the default of one it can).
    pub value: &'static str,
    pub category: &'static str,
    pub description: &'static str,
    /// A client may `SET` it (to any value: ecsql keeps it for the client and changes
    /// nothing else by it); the others may be set only to their value.
    pub settable: bool,
}

const fn setting(
    name: &'static str,
    value: &'static str,
    category: &'static str,
    description: &'static str,
    settable: bool,
) -> Setting {
    Setting {
        name,
        value,
        category,
        description,
        settable,
    }
}

/// The settings drivers and tools ask for on connect, with ecsql's answers. ecsql's own
/// settings (`statement_timeout`, …) are PRAGMAs, not here.
pub const SETTINGS: &[Setting] = &[
    setting(
        "server_version",
        SERVER_VERSION,
        "Preset Options",
        "The server's version.",
        false,
    ),
    setting(
        "server_version_num",
        "150000",
        "Preset Options",
        "The server's version as an integer.",
        false,
    ),
    setting(
        "server_encoding",
        "UTF8",
        "Preset Options",
        "The database's encoding: texts are UTF-8.",
        false,
    ),
    setting(
        "client_encoding",
        "UTF8",
        "Client Connection Defaults",
        "The client's encoding: only UTF-8.",
        false,
    ),
    setting(
        "DateStyle",
        "ISO, MDY",
        "Client Connection Defaults",
        "How dates are written (ecsql has none).",
        true,
    ),
    setting(
        "IntervalStyle",
        "postgres",
        "Client Connection Defaults",
        "How intervals are written (ecsql has none).",
        true,
    ),
    setting(
        "TimeZone",
        "UTC",
        "Client Connection Defaults",
        "The time zone (ecsql has no times).",
        true,
    ),
    setting(
        "integer_datetimes",
        "on",
        "Preset Options",
        "Times are integers.",
        false,
    ),
    setting(
        "standard_conforming_strings",
        "on",
        "Version and Platform Compatibility",
        "A backslash in a quoted text is itself.",
        false,
    ),
    setting(
        "is_superuser",
        "on",
        "Preset Options",
        "The client may do anything.",
        false,
    ),
    setting(
        "application_name",
        "",
        "Reporting and Logging",
        "The name the client gives itself.",
        true,
    ),
    setting(
        "extra_float_digits",
        "1",
        "Client Connection Defaults",
        "Floats are written in their shortest exact form.",
        true,
    ),
    setting(
        "search_path",
        "\"$user\", public",
        "Client Connection Defaults",
        "Where unqualified names are found: components and events.",
        true,
    ),
    setting(
        "default_transaction_isolation",
        "serializable",
        "Client Connection Defaults",
        "The isolation level of a BEGIN that names none: serializable and repeatable read hold the database from BEGIN; read committed from the transaction's first write (a server's clients: read committed).",
        true,
    ),
    setting(
        "transaction_isolation",
        "serializable",
        "Client Connection Defaults",
        "The open transaction's isolation level (else the default).",
        true,
    ),
    setting(
        "default_transaction_read_only",
        "off",
        "Client Connection Defaults",
        "Whether a BEGIN that says neither READ ONLY nor READ WRITE begins a read-only transaction.",
        true,
    ),
    setting(
        "transaction_read_only",
        "off",
        "Client Connection Defaults",
        "Whether the open transaction is read-only (else the default).",
        true,
    ),
    setting(
        "max_identifier_length",
        "63",
        "Preset Options",
        "The longest name PostgreSQL's clients expect.",
        false,
    ),
    setting(
        "lc_collate",
        "C",
        "Preset Options",
        "Texts compare byte by byte.",
        false,
    ),
    setting(
        "lc_ctype",
        "C",
        "Preset Options",
        "Characters are classified as Unicode's.",
        false,
    ),
    setting(
        "bytea_output",
        "hex",
        "Client Connection Defaults",
        "How bytes are written (ecsql has none).",
        true,
    ),
    setting(
        "lock_timeout",
        "0",
        "Client Connection Defaults",
        "ecsql's busy_timeout is the PRAGMA.",
        true,
    ),
    setting(
        "idle_in_transaction_session_timeout",
        "0",
        "Client Connection Defaults",
        "The server's --idle-in-transaction.",
        true,
    ),
    setting(
        "row_security",
        "on",
        "Client Connection Defaults",
        "No row is hidden.",
        true,
    ),
    setting(
        "session_authorization",
        "ecsql",
        "Preset Options",
        "The role.",
        false,
    ),
    setting(
        "block_size",
        "8192",
        "Preset Options",
        "PostgreSQL's page size, for tools that ask.",
        false,
    ),
];

/// The setting named `name` (any case).
pub fn setting_named(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name.eq_ignore_ascii_case(name))
}

/// `s` as PostgreSQL writes a name (`quote_ident`): as it is when it is a plain
/// lower-case one (letters, digits, `_`, not starting with a digit), else in double
/// quotes with each `"` doubled.
pub fn quote_ident(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        s.to_owned()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}
