//! PostgreSQL's functions that its clients call on connect and in their catalog queries
//! (psql's `\d`, drivers, GUI tools): `version()`, `current_setting`, `format_type`,
//! `pg_get_userbyid`, … with ecsql's answers (one database, one role, no comments, no
//! privileges withheld). Arrays are in `arrays.rs`, regular expressions in `regex.rs`.
//!
//! Invariants: every function here is a plain function of its arguments (the catalog's
//! oids of built-in objects are fixed; ecsql's own objects are looked up through the
//! catalog views, not here); a NULL argument makes a NULL result except where PostgreSQL
//! says otherwise; one that can be an error says so (`failing`).

use super::rows::row_wise;
use super::{Call, Mismatch, Nulls, Properties, ScalarFunction, Signature, arity};
use crate::postgres as types;
use crate::storage::Value;
use crate::vector::{DataType, Datum, KernelError, Operand};

/// The argument types a function takes: `T` TEXT, `I` INT, `B` BOOL, `*` any (as it is).
struct Args(&'static str);

/// A function of the values of its arguments, computed a row at a time (these answer
/// catalog queries: a few rows each).
pub(super) struct Pg {
    names: &'static [&'static str],
    args: Args,
    /// How many of `args` may be left out.
    optional: usize,
    result: DataType,
    nulls: Nulls,
    /// Some values make `f` an error.
    can_fail: bool,
    f: fn(&[Value]) -> Result<Value, String>,
}

impl ScalarFunction for Pg {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }
    fn signature(&self, name: &str, args: &[Operand]) -> Result<Signature, Mismatch> {
        let kinds = self.args.0.as_bytes();
        arity(name, args, kinds.len() - self.optional, kinds.len())?;
        let mut types = Vec::with_capacity(args.len());
        for (i, (a, k)) in args.iter().zip(kinds).enumerate() {
            let want = match k {
                b'T' => DataType::Text,
                b'I' => DataType::Int,
                b'B' => DataType::Bool,
                _ => a.ty,
            };
            let fits =
                a.ty == want || a.ty == DataType::Null || (want == DataType::Int && a.ty == DataType::Entity);
            if !fits {
                return Err(Mismatch::Type {
                    arg: Some(i),
                    message: format!("{name} needs {want} as argument {}, found {}", i + 1, a.ty),
                });
            }
            types.push(want);
        }
        Ok(Signature::converting(types, self.result))
    }
    fn properties(&self) -> Properties {
        Properties {
            can_fail: self.can_fail,
            nulls: self.nulls,
            ..Properties::TOTAL
        }
    }
    fn invoke(&self, args: Vec<Datum<'_>>, call: &Call<'_>) -> Result<Datum<'static>, KernelError> {
        let f = self.f;
        let strict = self.nulls == Nulls::FromArguments;
        row_wise(
            &args,
            call.ty,
            call.len,
            |row| {
                if strict && row.contains(&Value::Null) {
                    return Ok(Value::Null);
                }
                f(row)
            },
            call.at,
            false,
        )
    }
}

/// A function that cannot fail.
pub(super) const fn pg(
    names: &'static [&'static str],
    args: &'static str,
    optional: usize,
    result: DataType,
    nulls: Nulls,
    f: fn(&[Value]) -> Result<Value, String>,
) -> Pg {
    Pg {
        names,
        args: Args(args),
        optional,
        result,
        nulls,
        can_fail: false,
        f,
    }
}

/// A function some values of whose arguments are an error.
pub(super) const fn failing(
    names: &'static [&'static str],
    args: &'static str,
    optional: usize,
    result: DataType,
    nulls: Nulls,
    f: fn(&[Value]) -> Result<Value, String>,
) -> Pg {
    Pg {
        can_fail: true,
        ..pg(names, args, optional, result, nulls, f)
    }
}

pub(super) fn text(s: impl Into<String>) -> Result<Value, String> {
    Ok(Value::Text(s.into()))
}

pub(super) fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::Entity(e) => e.to_bits() as i64,
        _ => 0,
    }
}

pub(super) fn str_of(v: &Value) -> &str {
    match v {
        Value::Text(s) => s,
        _ => "",
    }
}

/// `version()`.
pub const VERSION: Pg = pg(&["version"], "", 0, DataType::Text, Nulls::Never, |_| {
    text(format!(
        "PostgreSQL 15.0 (ecsql {}) on {}, an entity database speaking PostgreSQL's protocol",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    ))
});

/// `current_setting(name [, missing_ok])`: the server's value of one of PostgreSQL's
/// settings (`SHOW` gives the client's own).
pub const CURRENT_SETTING: Pg = failing(
    &["current_setting"],
    "TB",
    1,
    DataType::Text,
    Nulls::Sometimes,
    |row| {
        let name = str_of(&row[0]);
        match types::setting_named(name) {
            Some(s) => text(s.value),
            None if row.get(1) == Some(&Value::Bool(true)) => Ok(Value::Null),
            None if row[0] == Value::Null => Ok(Value::Null),
            None => Err(format!("unrecognized configuration parameter \"{name}\"")),
        }
    },
);

/// `current_database()`, `current_catalog`.
pub const CURRENT_DATABASE: Pg = pg(
    &["current_database", "current_catalog"],
    "",
    0,
    DataType::Text,
    Nulls::Never,
    |_| text(types::DATABASE_NAME),
);

/// `current_schema()`.
pub const CURRENT_SCHEMA: Pg = pg(&["current_schema"], "", 0, DataType::Text, Nulls::Never, |_| {
    text("public")
});

/// `current_user`, `session_user`, `user`, `current_role`.
pub const CURRENT_USER: Pg = pg(
    &["current_user", "session_user", "current_role", "user"],
    "",
    0,
    DataType::Text,
    Nulls::Never,
    |_| text(types::OWNER_NAME),
);

/// `pg_get_userbyid(oid)`: the role's name (ecsql has one, which owns everything).
pub const PG_GET_USERBYID: Pg = pg(
    &["pg_get_userbyid"],
    "I",
    0,
    DataType::Text,
    Nulls::FromArguments,
    |row| {
        if int(&row[0]) == types::OWNER {
            text(types::OWNER_NAME)
        } else {
            text(format!("unknown (OID={})", int(&row[0])))
        }
    },
);

/// `pg_table_is_visible(oid)`, `pg_type_is_visible(oid)`, `pg_function_is_visible(oid)`:
/// every object is in `public` or `pg_catalog`, both on the search path.
pub const IS_VISIBLE: Pg = pg(
    &[
        "pg_table_is_visible",
        "pg_type_is_visible",
        "pg_function_is_visible",
    ],
    "I",
    0,
    DataType::Bool,
    Nulls::FromArguments,
    |_| Ok(Value::Bool(true)),
);

/// `has_table_privilege(…)`, `has_schema_privilege(…)`, `has_database_privilege(…)`,
/// `has_column_privilege(…)`: a client may do anything.
pub const HAS_PRIVILEGE: Pg = pg(
    &[
        "has_table_privilege",
        "has_schema_privilege",
        "has_database_privilege",
        "has_column_privilege",
        "has_any_column_privilege",
    ],
    "***",
    1,
    DataType::Bool,
    Nulls::Never,
    |_| Ok(Value::Bool(true)),
);

/// `format_type(type oid, typmod)`: the type's SQL name.
pub const FORMAT_TYPE: Pg = pg(
    &["format_type"],
    "II",
    0,
    DataType::Text,
    Nulls::Sometimes,
    |row| {
        if row[0] == Value::Null {
            return Ok(Value::Null);
        }
        match types::by_oid(int(&row[0])) {
            Some(t) => text(t.sql_name),
            None => text("???"),
        }
    },
);

/// `pg_get_expr(expr, relation [, pretty])`: an expression the catalog holds as its text
/// (a default's), as it is.
pub const PG_GET_EXPR: Pg = pg(
    &["pg_get_expr"],
    "TIB",
    1,
    DataType::Text,
    Nulls::Sometimes,
    |row| Ok(row[0].clone()),
);

/// `pg_encoding_to_char(encoding)`.
pub const PG_ENCODING_TO_CHAR: Pg = pg(
    &["pg_encoding_to_char"],
    "I",
    0,
    DataType::Text,
    Nulls::FromArguments,
    |row| text(if int(&row[0]) == 6 { "UTF8" } else { "" }),
);

/// `obj_description(oid [, catalog])`, `col_description(oid, n)`,
/// `shobj_description(oid, catalog)`: ecsql keeps no comments.
pub const DESCRIPTION: Pg = pg(
    &["obj_description", "col_description", "shobj_description"],
    "**",
    1,
    DataType::Text,
    Nulls::Sometimes,
    |_| Ok(Value::Null),
);

/// `pg_get_constraintdef(oid [, pretty])`, `pg_get_statisticsobjdef_columns(oid)`,
/// `pg_get_triggerdef(oid [, pretty])`, `pg_get_viewdef(oid [, pretty])`: ecsql has no
/// constraints, statistics objects, triggers or views, so no oid names one.
pub const NO_DEFINITION: Pg = pg(
    &[
        "pg_get_constraintdef",
        "pg_get_statisticsobjdef_columns",
        "pg_get_triggerdef",
        "pg_get_viewdef",
    ],
    "IB",
    1,
    DataType::Text,
    Nulls::Sometimes,
    |_| Ok(Value::Null),
);

/// `pg_relation_is_publishable(relation)`: ecsql publishes nothing for replication.
pub const PUBLISHABLE: Pg = pg(
    &["pg_relation_is_publishable"],
    "I",
    0,
    DataType::Bool,
    Nulls::FromArguments,
    |_| Ok(Value::Bool(false)),
);

/// `quote_ident(s)`: `s` as a name: double-quoted unless a plain lower-case one.
pub const QUOTE_IDENT: Pg = pg(
    &["quote_ident"],
    "T",
    0,
    DataType::Text,
    Nulls::FromArguments,
    |row| text(types::quote_ident(str_of(&row[0]))),
);

/// `pg_backend_pid()`: the server's process.
pub const BACKEND_PID: Pg = pg(&["pg_backend_pid"], "", 0, DataType::Int, Nulls::Never, |_| {
    Ok(Value::Int(i64::from(std::process::id())))
});
