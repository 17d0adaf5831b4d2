//! `.schema` and `.dump`: the database written back as statements. Until ecsql persists to
//! disk, a dump is how a session's work is kept: `.read` of it rebuilds the same
//! components, the same entities under the same ids (generations included) and the same
//! values. Everything is read through ordinary statements on the `Connection`.

use std::fmt::Write as _;

use ecsql::script::quote_name;
use ecsql::{Connection, StorageKind, Value};

/// Rows per SPAWN statement in a dump: big enough to load fast, small enough to read.
const ROWS_PER_SPAWN: usize = 1000;

fn text_rows(conn: &Connection, sql: &str) -> Result<Vec<Vec<Value>>, String> {
    let mut statement = conn.prepare(sql).map_err(|e| e.to_string())?;
    let rows = statement.query(()).map_err(|e| e.to_string())?;
    rows.map(|r| r.map(|r| r.values().to_vec()).map_err(|e| e.to_string()))
        .collect()
}

fn text(value: &Value) -> String {
    match value {
        Value::Text(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A field as DESCRIBE gives it: name, type, default.
struct Field {
    name: String,
    ty: String,
    default: String,
}

/// A component as declared: its name, fields, and whether it is sparse.
struct Decl {
    name: String,
    fields: Vec<Field>,
    sparse: bool,
}

/// Every component in the order they were made, with its fields.
fn catalog(conn: &Connection) -> Result<Vec<Decl>, String> {
    let names = conn.component_names().map_err(|e| e.to_string())?;
    names
        .into_iter()
        .map(|name| {
            let fields = describe(conn, &name)?;
            let sparse = conn
                .with_world(|w| {
                    w.component_by_name(&name)
                        .map(|d| d.storage() == StorageKind::Sparse)
                })
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            Ok(Decl { name, fields, sparse })
        })
        .collect()
}

/// The fields of a component or event type, as DESCRIBE gives them.
fn describe(conn: &Connection, name: &str) -> Result<Vec<Field>, String> {
    Ok(text_rows(conn, &format!("DESCRIBE {}", quote_name(name)))?
        .iter()
        .map(|f| Field {
            name: text(&f[0]),
            ty: text(&f[1]),
            default: text(&f[2]),
        })
        .collect())
}

/// Every event type in the order they were made, with its fields and how many ticks it
/// keeps rows.
fn event_catalog(conn: &Connection) -> Result<Vec<(String, Vec<Field>, i64)>, String> {
    text_rows(conn, "SHOW EVENTS")?
        .into_iter()
        .map(|row| {
            let name = text(&row[0]);
            let keep = match row.get(3) {
                Some(Value::Int(k)) => *k,
                _ => 64,
            };
            let fields = describe(conn, &name)?;
            Ok((name, fields, keep))
        })
        .collect()
}

/// The CREATE statements of every component and event type in the order they were made,
/// the indexes, then the phases and systems; or of the component or event named.
pub fn schema(conn: &Connection, only: Option<&str>) -> Result<String, String> {
    let keep = |name: &str| only.is_none_or(|o| o.eq_ignore_ascii_case(name));
    let components: Vec<_> = catalog(conn)?.into_iter().filter(|d| keep(&d.name)).collect();
    let events: Vec<_> = event_catalog(conn)?
        .into_iter()
        .filter(|(name, ..)| keep(name))
        .collect();
    match only {
        Some(name) if components.is_empty() && events.is_empty() => Err(format!(
            "no component or event named {name} (SHOW COMPONENTS and SHOW EVENTS list them)"
        )),
        Some(_) => {
            Ok(create_statements(&components) + &event_statements(&events) + &index_statements(conn, only)?)
        }
        None => Ok(create_statements(&components)
            + &event_statements(&events)
            + &index_statements(conn, None)?
            + &schedule_statements(conn)?),
    }
}

fn event_statements(events: &[(String, Vec<Field>, i64)]) -> String {
    let mut out = String::new();
    for (name, fields, keep) in events {
        let fields: Vec<String> = fields.iter().map(field_spec).collect();
        let keep = if *keep == 64 {
            String::new()
        } else {
            format!(" WITH (keep = {keep} TICKS)")
        };
        let _ = writeln!(
            out,
            "CREATE EVENT {} ({}){keep};",
            quote_name(name),
            fields.join(", ")
        );
    }
    out
}

/// The phases made, the SQL systems (in creation order, the disabled ones disabled) and,
/// when it moved, the clock.
fn schedule_statements(conn: &Connection) -> Result<String, String> {
    let mut out = String::new();
    for line in conn.schedule_sql().map_err(|e| e.to_string())? {
        let _ = writeln!(out, "{line}");
    }
    let clock = conn.clock().map_err(|e| e.to_string())?;
    if clock.tick != 0 {
        let _ = writeln!(out, "PRAGMA tick = {};", clock.tick);
    }
    if clock.dt != ecsql::Clock::default().dt {
        let _ = writeln!(out, "PRAGMA delta_time = {:?};", clock.dt);
    }
    Ok(out)
}

/// The CREATE INDEX statements of every index (or those on the component named).
fn index_statements(conn: &Connection, only: Option<&str>) -> Result<String, String> {
    let mut out = String::new();
    for row in text_rows(conn, "SHOW INDEXES")? {
        let (name, kind, component, fields) = (text(&row[0]), text(&row[1]), text(&row[2]), text(&row[3]));
        if only.is_some_and(|o| !o.eq_ignore_ascii_case(&component)) {
            continue;
        }
        if kind == "function" {
            // The expressions, then ` WHERE predicate` when partial, as SQL.
            let (keys, predicate) = match outside_quotes(&fields, " WHERE ") {
                Some(at) => (&fields[..at], format!(" WHERE {}", &fields[at + 7..])),
                None => (fields.as_str(), String::new()),
            };
            let _ = writeln!(
                out,
                "CREATE INDEX {} ON {} ({keys}){predicate};",
                quote_name(&name),
                quote_name(&component)
            );
            continue;
        }
        let fields: Vec<String> = fields.split(", ").map(quote_name).collect();
        let spatial = if kind == "spatial" { "SPATIAL " } else { "" };
        let using = if kind == "filter" { "USING filter " } else { "" };
        let _ = writeln!(
            out,
            "CREATE {spatial}INDEX {} ON {} {using}({});",
            quote_name(&name),
            quote_name(&component),
            fields.join(", ")
        );
    }
    Ok(out)
}

/// Where `needle` first occurs in `sql` outside quotes ('text' and "names").
fn outside_quotes(sql: &str, needle: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in sql.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, _) if sql[i..].starts_with(needle) => return Some(i),
            _ => {}
        }
    }
    None
}

fn create_statements(components: &[Decl]) -> String {
    let mut out = String::new();
    for decl in components {
        let quoted = quote_name(&decl.name);
        let with = if decl.sparse {
            " WITH (storage = sparse)"
        } else {
            ""
        };
        if decl.fields.is_empty() {
            let _ = writeln!(out, "CREATE TAG {quoted}{with};");
            continue;
        }
        let fields: Vec<String> = decl.fields.iter().map(field_spec).collect();
        let _ = writeln!(out, "CREATE COMPONENT {quoted} ({}){with};", fields.join(", "));
    }
    out
}

/// `name TYPE [DEFAULT value]`, the default only when it is not the type's zero.
fn field_spec(f: &Field) -> String {
    let mut spec = format!("{} {}", quote_name(&f.name), f.ty);
    if f.default != zero_default(&f.ty) {
        let _ = write!(spec, " DEFAULT {}", default_literal(f));
    }
    spec
}

/// The default a field of type `ty` has when none is declared, as DESCRIBE prints it.
fn zero_default(ty: &str) -> &'static str {
    match ty {
        "INT" => "0",
        "FLOAT" | "REAL" => "0.0",
        "BOOL" => "FALSE",
        "TEXT" => "''",
        _ => "NULL",
    }
}

/// A value as an SQL literal that reads back as the same value: an infinity or NaN as a
/// cast of its text, an id past INT's range (a slot reused many times) as a cast of its
/// digits, since those would read back as a FLOAT.
fn literal(value: &Value) -> String {
    match value {
        Value::Float(x) if !x.is_finite() => format!("CAST('{x}' AS FLOAT)"),
        Value::Real(x) if !x.is_finite() => format!("CAST('{x}' AS REAL)"),
        Value::Entity(e) if i64::try_from(e.to_bits()).is_err() => {
            format!("CAST('{}' AS ENTITY)", e.to_bits())
        }
        other => other.to_string(),
    }
}

/// A field's default (as DESCRIBE prints it) as a literal that reads back as the same.
fn default_literal(field: &Field) -> String {
    match (field.ty.as_str(), field.default.as_str()) {
        ("FLOAT" | "REAL", d @ ("NaN" | "inf" | "-inf")) => format!("CAST('{d}' AS {})", field.ty),
        _ => field.default.clone(),
    }
}

/// Statements that leave the despawned ids of the database despawned: each spawned under
/// its id (by slot, so that the entity index grows in order) and, after the live entities,
/// despawned again in the order `World::despawned_ids` gives, so that the slots'
/// generations, the retired slots and the order in which slots are handed out again are
/// as they were, and an old id never names a new entity.
fn despawned_statements(conn: &Connection) -> Result<(String, String), String> {
    let ids = conn
        .with_world(|w| w.despawned_ids())
        .map_err(|e| e.to_string())?;
    if ids.is_empty() {
        return Ok((String::new(), String::new()));
    }
    let noun = if ids.len() == 1 { "id" } else { "ids" };
    let mut revive = format!(
        "-- despawned: {} {noun}, issued here and despawned at the end\n",
        ids.len()
    );
    let mut by_slot = ids.clone();
    by_slot.sort_by_key(|e| e.slot());
    for batch in by_slot.chunks(ROWS_PER_SPAWN) {
        // One column type for the batch: INT, or ENTITY when an id is past INT's range.
        let wide = batch.iter().any(|&e| i64::try_from(e.to_bits()).is_err());
        let id = |e: &ecsql::Entity| match wide {
            true => format!("CAST('{}' AS ENTITY)", e.to_bits()),
            false => e.to_bits().to_string(),
        };
        let values: Vec<String> = batch.iter().map(|e| format!("  ({})", id(e))).collect();
        let _ = writeln!(
            revive,
            "SPAWN AT t.c0 FROM (VALUES\n{}\n) AS t(c0);",
            values.join(",\n")
        );
    }
    let mut despawn = format!(
        "-- the {} despawned {noun} again, in the order that rebuilds the free list\n",
        ids.len()
    );
    for batch in ids.chunks(ROWS_PER_SPAWN) {
        let listed: Vec<String> = batch.iter().map(|&e| literal(&Value::Entity(e))).collect();
        let _ = writeln!(despawn, "DESPAWN {};", listed.join(", "));
    }
    Ok((revive, despawn))
}

/// `(VALUES (…), …) AS t(c0, …);` of `rows`, each value a literal that reads back as
/// itself. A column is of one type: INT while every id in it fits one, else each of its
/// ids is written as an ENTITY (an id past INT's range does not convert to INT).
fn values_block(out: &mut String, rows: &[Vec<Value>], aliases: &[String]) {
    let wide: Vec<bool> = (0..aliases.len())
        .map(|c| {
            rows.iter()
                .any(|row| matches!(row.get(c), Some(v @ Value::Entity(_)) if literal(v).starts_with("CAST")))
        })
        .collect();
    let _ = writeln!(out, "(VALUES");
    for (i, row) in rows.iter().enumerate() {
        let values: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, v)| match v {
                Value::Entity(e) if wide.get(c) == Some(&true) => {
                    format!("CAST('{}' AS ENTITY)", e.to_bits())
                }
                v => literal(v),
            })
            .collect();
        let end = if i + 1 == rows.len() { "" } else { "," };
        let _ = writeln!(out, "  ({}){end}", values.join(", "));
    }
    let _ = writeln!(out, ") AS t({});", aliases.join(", "));
}

/// A script that rebuilds the database: the schema, then one SPAWN AT per archetype table
/// (in batches), each entity under its own id, then the indexes.
pub fn dump(conn: &Connection) -> Result<String, String> {
    let mut out = String::from("-- ecsql dump: `.read` this file into an empty database to rebuild it.\n");
    // One transaction: a dump cut short loads nothing (the shell rolls back a file that
    // ends inside a transaction it began).
    out.push_str("BEGIN;\n");
    let components = catalog(conn)?;
    out.push_str(&create_statements(&components));
    out.push_str(&event_statements(&event_catalog(conn)?));
    let (revive, despawn) = despawned_statements(conn)?;
    // The entities without components first, then the despawned ids: the DESPAWNs at the
    // end swap-remove those from the same table, and must not reorder the live ones.
    let mut tables = text_rows(conn, "SHOW ARCHETYPES")?;
    tables.sort_by_key(|t| !text(&t[1]).is_empty());
    let revive_at = tables
        .iter()
        .position(|t| !text(&t[1]).is_empty())
        .unwrap_or(tables.len());
    let count = tables.len();
    for (k, table) in tables.into_iter().enumerate() {
        if k == revive_at {
            out.push_str(&revive);
        }
        let (name, set) = (text(&table[0]), text(&table[1]));
        // Each component of the table with its fields, as `SELECT` columns and SPAWN items.
        let mut columns = vec!["id".to_owned()];
        let mut items = Vec::new();
        for component in set.split(", ").filter(|c| !c.is_empty()) {
            let quoted = quote_name(component);
            let fields = components
                .iter()
                .find(|d| d.name == component)
                .map_or(&[][..], |d| &d.fields[..]);
            let mut args = Vec::new();
            for field in fields {
                let field = quote_name(&field.name);
                args.push(format!("{field} => t.c{}", columns.len()));
                columns.push(format!("{quoted}.{field}"));
            }
            items.push(match args.is_empty() {
                true => quoted,
                false => format!("{quoted}({})", args.join(", ")),
            });
        }
        let rows = text_rows(conn, &format!("SELECT {} FROM {name}", columns.join(", ")))?;
        if rows.is_empty() {
            continue;
        }
        let what = if set.is_empty() { "no components" } else { &set };
        let noun = if rows.len() == 1 { "entity" } else { "entities" };
        let _ = writeln!(out, "-- {what}: {} {noun}", rows.len());
        let aliases: Vec<String> = (0..columns.len()).map(|i| format!("c{i}")).collect();
        let items = if items.is_empty() {
            String::new()
        } else {
            items.join(", ") + " "
        };
        for batch in rows.chunks(ROWS_PER_SPAWN) {
            let _ = write!(out, "SPAWN AT t.c0 {items}FROM ");
            values_block(&mut out, batch, &aliases);
        }
    }
    // Sparse components once every entity is there: attached to them in their own order.
    for decl in components.iter().filter(|d| d.sparse) {
        let quoted = quote_name(&decl.name);
        let mut columns = vec!["id".to_owned()];
        let mut fields = vec!["id".to_owned()];
        for field in &decl.fields {
            let field = quote_name(&field.name);
            columns.push(format!("{quoted}.{field}"));
            fields.push(field);
        }
        let rows = text_rows(conn, &format!("SELECT {} FROM {quoted}", columns.join(", ")))?;
        if rows.is_empty() {
            continue;
        }
        let noun = if rows.len() == 1 { "entity" } else { "entities" };
        let _ = writeln!(out, "-- {} (sparse): {} {noun}", decl.name, rows.len());
        let aliases: Vec<String> = (0..columns.len()).map(|i| format!("c{i}")).collect();
        let picked: Vec<String> = aliases.iter().map(|a| format!("t.{a}")).collect();
        for batch in rows.chunks(ROWS_PER_SPAWN) {
            let _ = write!(
                out,
                "INSERT INTO {quoted} ({}) SELECT {} FROM ",
                fields.join(", "),
                picked.join(", ")
            );
            values_block(&mut out, batch, &aliases);
        }
    }
    if revive_at == count {
        out.push_str(&revive);
    }
    // The despawned ids go after every claim, so that no claim has a free list to search.
    out.push_str(&despawn);
    // Indexes last: one build over all rows is cheaper than keeping them while loading.
    out.push_str(&index_statements(conn, None)?);
    // The schedule after the catalog its systems are bound against.
    out.push_str(&schedule_statements(conn)?);
    out.push_str("COMMIT;\n");
    Ok(out)
}
