//! The views of `information_schema`, SQL's standard catalog: schemata, tables and
//! columns (with their types as SQL names them), as PostgreSQL 15 has them.

use super::pg::{default_text, field_type, tables_of};
use super::{Rows, Schema, VIEWS};
use crate::postgres::{DATABASE_NAME, OWNER_NAME};
use crate::storage::{FieldType, Value, World};

pub const SCHEMATA: &str = "catalog_name information_schema.sql_identifier, schema_name information_schema.sql_identifier, schema_owner information_schema.sql_identifier, default_character_set_catalog information_schema.sql_identifier, default_character_set_schema information_schema.sql_identifier, default_character_set_name information_schema.sql_identifier, sql_path information_schema.character_data";
pub const TABLES: &str = "table_catalog information_schema.sql_identifier, table_schema information_schema.sql_identifier, table_name information_schema.sql_identifier, table_type information_schema.character_data, self_referencing_column_name information_schema.sql_identifier, reference_generation information_schema.character_data, user_defined_type_catalog information_schema.sql_identifier, user_defined_type_schema information_schema.sql_identifier, user_defined_type_name information_schema.sql_identifier, is_insertable_into information_schema.yes_or_no, is_typed information_schema.yes_or_no, commit_action information_schema.character_data";
pub const COLUMNS: &str = "table_catalog information_schema.sql_identifier, table_schema information_schema.sql_identifier, table_name information_schema.sql_identifier, column_name information_schema.sql_identifier, ordinal_position information_schema.cardinal_number, column_default information_schema.character_data, is_nullable information_schema.yes_or_no, data_type information_schema.character_data, character_maximum_length information_schema.cardinal_number, character_octet_length information_schema.cardinal_number, numeric_precision information_schema.cardinal_number, numeric_precision_radix information_schema.cardinal_number, numeric_scale information_schema.cardinal_number, datetime_precision information_schema.cardinal_number, interval_type information_schema.character_data, interval_precision information_schema.cardinal_number, character_set_catalog information_schema.sql_identifier, character_set_schema information_schema.sql_identifier, character_set_name information_schema.sql_identifier, collation_catalog information_schema.sql_identifier, collation_schema information_schema.sql_identifier, collation_name information_schema.sql_identifier, domain_catalog information_schema.sql_identifier, domain_schema information_schema.sql_identifier, domain_name information_schema.sql_identifier, udt_catalog information_schema.sql_identifier, udt_schema information_schema.sql_identifier, udt_name information_schema.sql_identifier, scope_catalog information_schema.sql_identifier, scope_schema information_schema.sql_identifier, scope_name information_schema.sql_identifier, maximum_cardinality information_schema.cardinal_number, dtd_identifier information_schema.sql_identifier, is_self_referencing information_schema.yes_or_no, is_identity information_schema.yes_or_no, identity_generation information_schema.character_data, identity_start information_schema.character_data, identity_increment information_schema.character_data, identity_maximum information_schema.character_data, identity_minimum information_schema.character_data, identity_cycle information_schema.yes_or_no, is_generated information_schema.character_data, generation_expression information_schema.character_data, is_updatable information_schema.yes_or_no";
pub const VIEWS_COLUMNS: &str = "table_catalog information_schema.sql_identifier, table_schema information_schema.sql_identifier, table_name information_schema.sql_identifier, view_definition information_schema.character_data, check_option information_schema.character_data, is_updatable information_schema.yes_or_no, is_insertable_into information_schema.yes_or_no, is_trigger_updatable information_schema.yes_or_no, is_trigger_deletable information_schema.yes_or_no, is_trigger_insertable_into information_schema.yes_or_no";
pub const TABLE_CONSTRAINTS: &str = "constraint_catalog information_schema.sql_identifier, constraint_schema information_schema.sql_identifier, constraint_name information_schema.sql_identifier, table_catalog information_schema.sql_identifier, table_schema information_schema.sql_identifier, table_name information_schema.sql_identifier, constraint_type information_schema.character_data, is_deferrable information_schema.yes_or_no, initially_deferred information_schema.yes_or_no, enforced information_schema.yes_or_no, nulls_distinct information_schema.yes_or_no";
pub const KEY_COLUMN_USAGE: &str = "constraint_catalog information_schema.sql_identifier, constraint_schema information_schema.sql_identifier, constraint_name information_schema.sql_identifier, table_catalog information_schema.sql_identifier, table_schema information_schema.sql_identifier, table_name information_schema.sql_identifier, column_name information_schema.sql_identifier, ordinal_position information_schema.cardinal_number, position_in_unique_constraint information_schema.cardinal_number";

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

fn yes(b: bool) -> Value {
    text(if b { "YES" } else { "NO" })
}

pub(super) fn schemata(_: &World, rows: &mut Rows) {
    for name in ["pg_catalog", "public", "information_schema"] {
        rows.push(&[
            ("catalog_name", text(DATABASE_NAME)),
            ("schema_name", text(name)),
            ("schema_owner", text(OWNER_NAME)),
        ]);
    }
}

pub(super) fn tables(world: &World, rows: &mut Rows) {
    for view in &VIEWS {
        let (kind, schema) = match view.schema {
            Schema::PgCatalog => ("BASE TABLE", "pg_catalog"),
            Schema::InformationSchema => ("VIEW", "information_schema"),
        };
        rows.push(&[
            ("table_catalog", text(DATABASE_NAME)),
            ("table_schema", text(schema)),
            ("table_name", text(view.name)),
            ("table_type", text(kind)),
            ("is_insertable_into", yes(false)),
            ("is_typed", yes(false)),
        ]);
    }
    for table in tables_of(world) {
        rows.push(&[
            ("table_catalog", text(DATABASE_NAME)),
            ("table_schema", text("public")),
            ("table_name", text(table.name)),
            ("table_type", text("BASE TABLE")),
            ("is_insertable_into", yes(true)),
            ("is_typed", yes(false)),
        ]);
    }
}

/// One column's row.
fn column(rows: &mut Rows, table: &str, position: i64, name: &str, ty: FieldType, default: Option<String>) {
    let pg = field_type(ty);
    let (precision, radix) = match ty {
        FieldType::Int | FieldType::Entity => (Value::Int(64), Value::Int(2)),
        FieldType::Float => (Value::Int(53), Value::Int(2)),
        FieldType::Real => (Value::Int(24), Value::Int(2)),
        FieldType::Bool | FieldType::Text => (Value::Null, Value::Null),
    };
    rows.push(&[
        ("table_catalog", text(DATABASE_NAME)),
        ("table_schema", text("public")),
        ("table_name", text(table)),
        ("column_name", text(name)),
        ("ordinal_position", Value::Int(position)),
        ("column_default", default.map_or(Value::Null, text)),
        ("is_nullable", yes(ty == FieldType::Entity && position > 1)),
        ("data_type", text(pg.sql_name)),
        ("numeric_precision", precision),
        ("numeric_precision_radix", radix),
        (
            "numeric_scale",
            if matches!(ty, FieldType::Int | FieldType::Entity) {
                Value::Int(0)
            } else {
                Value::Null
            },
        ),
        (
            "character_octet_length",
            if ty == FieldType::Text {
                Value::Int(1_073_741_824)
            } else {
                Value::Null
            },
        ),
        ("udt_catalog", text(DATABASE_NAME)),
        ("udt_schema", text("pg_catalog")),
        ("udt_name", text(pg.name)),
        ("dtd_identifier", text(position.to_string())),
        ("is_self_referencing", yes(false)),
        ("is_identity", yes(false)),
        ("is_generated", text("NEVER")),
        ("is_updatable", yes(position > 1)),
    ]);
}

pub(super) fn columns(world: &World, rows: &mut Rows) {
    for table in tables_of(world) {
        column(rows, table.name, 1, "id", FieldType::Entity, None);
        for (i, f) in table.fields.iter().enumerate() {
            column(rows, table.name, i as i64 + 2, f.name(), f.ty(), default_text(f));
        }
    }
}
