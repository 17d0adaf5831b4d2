//! Statements printed back as ecsql text (`Display`): each kind, its parts, and a
//! system's declaration, whose block body takes a statement a line.
//!
//! Invariant: what prints here parses back to the same statement (`reads_back`,
//! `system_reads_back`): a form with two spellings prints as the one that reads back
//! alone (ON CONFLICT DO NOTHING as OR IGNORE).

use std::fmt::{self, Display, Formatter, Write};

use super::print::{comma_list, write_alias, write_from};

use super::statement::*;

impl Display for CopyOption {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name.value)?;
        if let Some(v) = &self.value {
            write!(f, " '{}'", v.replace('\'', "''"))?;
        }
        Ok(())
    }
}

/// COPY's options as written after the file, ` (a, b)`, or nothing.
fn write_copy_options(f: &mut Formatter<'_>, options: &[CopyOption]) -> fmt::Result {
    if options.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = options.iter().map(ToString::to_string).collect();
    write!(f, " ({})", list.join(", "))
}

impl Display for FileName {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            FileName::Text(path) => write!(f, "'{}'", path.replace('\'', "''")),
            FileName::Param(p) => write!(f, "{p}"),
            FileName::Stdout => f.write_str("STDOUT"),
            FileName::Stdin => f.write_str("STDIN"),
        }
    }
}

impl Display for Source {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_from(f, &self.from)?;
        if let Some(w) = &self.filter {
            write!(f, " WHERE {w}")?;
        }
        Ok(())
    }
}

impl Display for Assignment {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}", self.field, self.value)
    }
}

impl Display for SpawnItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name)?;
        if !self.args.is_empty() {
            f.write_char('(')?;
            for (i, arg) in self.args.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                if let Some(n) = &arg.name {
                    write!(f, "{n} => ")?;
                }
                write!(f, "{}", arg.value)?;
            }
            f.write_char(')')?;
        }
        Ok(())
    }
}

impl Display for Statement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)
    }
}

impl Display for StatementKind {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            StatementKind::CreateComponent {
                name,
                fields,
                sparse,
                if_not_exists,
            } => {
                let ine = if *if_not_exists { "IF NOT EXISTS " } else { "" };
                write!(f, "CREATE COMPONENT {ine}{name} (")?;
                write_fields(f, fields)?;
                f.write_char(')')?;
                if *sparse {
                    f.write_str(" WITH (storage = sparse)")?;
                }
                Ok(())
            }
            StatementKind::CreateTag {
                name,
                sparse,
                if_not_exists,
            } => {
                let ine = if *if_not_exists { "IF NOT EXISTS " } else { "" };
                write!(f, "CREATE TAG {ine}{name}")?;
                if *sparse {
                    f.write_str(" WITH (storage = sparse)")?;
                }
                Ok(())
            }
            StatementKind::DropComponent { name, if_exists } => {
                write!(
                    f,
                    "DROP COMPONENT {}{name}",
                    if *if_exists { "IF EXISTS " } else { "" }
                )
            }
            StatementKind::ShowComponents => f.write_str("SHOW COMPONENTS"),
            StatementKind::ShowArchetypes => f.write_str("SHOW ARCHETYPES"),
            StatementKind::ShowIndexes => f.write_str("SHOW INDEXES"),
            StatementKind::CreateIndex {
                name,
                method,
                if_not_exists,
                component,
                keys,
                predicate,
            } => {
                f.write_str(if *method == IndexUsing::Spatial {
                    "CREATE SPATIAL INDEX "
                } else {
                    "CREATE INDEX "
                })?;
                if *if_not_exists {
                    f.write_str("IF NOT EXISTS ")?;
                }
                if let Some(n) = name {
                    write!(f, "{n} ")?;
                }
                let using = if *method == IndexUsing::Filter {
                    "USING filter "
                } else {
                    ""
                };
                write!(f, "ON {component} {using}(")?;
                comma_list(f, keys)?;
                f.write_char(')')?;
                match predicate {
                    Some(p) => write!(f, " WHERE {p}"),
                    None => Ok(()),
                }
            }
            StatementKind::DropIndex { name, if_exists } => {
                write!(
                    f,
                    "DROP INDEX {}{name}",
                    if *if_exists { "IF EXISTS " } else { "" }
                )
            }
            StatementKind::Describe { name } => write!(f, "DESCRIBE {name}"),
            StatementKind::Spawn { at, items, source } => {
                f.write_str("SPAWN ")?;
                if let Some(id) = at {
                    write!(f, "AT {id}")?;
                    if !items.is_empty() {
                        f.write_str(" ")?;
                    }
                }
                comma_list(f, items)?;
                if let Some(s) = source {
                    write!(f, "{s}")?;
                }
                Ok(())
            }
            StatementKind::Insert {
                component,
                columns,
                source,
                on_conflict,
            } => {
                f.write_str("INSERT ")?;
                // DO NOTHING as OR IGNORE (the same tree): an ON CONFLICT after the
                // source could be read as its last join's ON.
                match on_conflict {
                    OnConflict::Replace => f.write_str("OR REPLACE ")?,
                    OnConflict::DoNothing => f.write_str("OR IGNORE ")?,
                    OnConflict::Fail | OnConflict::DoUpdate(_) => {}
                }
                write!(f, "INTO {component}")?;
                if !columns.is_empty() {
                    f.write_str(" (")?;
                    comma_list(f, columns)?;
                    f.write_char(')')?;
                }
                write!(f, " {source}")?;
                match on_conflict {
                    OnConflict::DoUpdate(sets) => {
                        f.write_str(" ON CONFLICT DO UPDATE SET ")?;
                        comma_list(f, sets)
                    }
                    OnConflict::Fail | OnConflict::Replace | OnConflict::DoNothing => Ok(()),
                }
            }
            StatementKind::Delete { component, filter } => {
                write!(f, "DELETE FROM {component}")?;
                if let Some(w) = filter {
                    write!(f, " WHERE {w}")?;
                }
                Ok(())
            }
            StatementKind::Despawn { ids } => {
                f.write_str("DESPAWN ")?;
                comma_list(f, ids)
            }
            StatementKind::DespawnFrom { source } => write!(f, "DESPAWN{source}"),
            StatementKind::Select(q) => write!(f, "{q}"),
            StatementKind::Update {
                target,
                alias,
                assignments,
                from,
                filter,
            } => {
                write!(f, "UPDATE {target}")?;
                write_alias(f, alias, &[])?;
                f.write_str(" SET ")?;
                comma_list(f, assignments)?;
                write_from(f, from)?;
                if let Some(w) = filter {
                    write!(f, " WHERE {w}")?;
                }
                Ok(())
            }
            StatementKind::Explain(s) => write!(f, "EXPLAIN {s}"),
            StatementKind::Subscribe(s) => write!(f, "SUBSCRIBE {s}"),
            StatementKind::ExplainAnalyze {
                statement,
                timing,
                keep,
            } => {
                let mut options = String::from("ANALYZE");
                if !timing {
                    options.push_str(", TIMING false");
                }
                if *keep {
                    options.push_str(", KEEP");
                }
                match options.as_str() {
                    "ANALYZE" => write!(f, "EXPLAIN ANALYZE {statement}"),
                    options => write!(f, "EXPLAIN ({options}) {statement}"),
                }
            }
            StatementKind::Returning { write, items } => {
                write!(f, "{write} RETURNING ")?;
                comma_list(f, items)
            }
            StatementKind::Begin(modes) => {
                f.write_str("BEGIN")?;
                let mut sep = " ";
                if let Some(level) = modes.isolation {
                    write!(f, " ISOLATION LEVEL {}", level.name().to_ascii_uppercase())?;
                    sep = ", ";
                }
                match modes.read_only {
                    Some(true) => write!(f, "{sep}READ ONLY"),
                    Some(false) => write!(f, "{sep}READ WRITE"),
                    None => Ok(()),
                }
            }
            StatementKind::SetVariable {
                name, value: None, ..
            } => write!(f, "RESET {name}"),
            StatementKind::SetVariable {
                name,
                value: Some(v),
                local,
            } => {
                let local = if *local { "LOCAL " } else { "" };
                write!(f, "SET {local}{name} = '{}'", v.replace('\'', "''"))
            }
            StatementKind::ShowVariable { name: None } => f.write_str("SHOW ALL"),
            StatementKind::ShowVariable { name: Some(name) } => write!(f, "SHOW {name}"),
            StatementKind::Pragma { name: None, .. } => write!(f, "PRAGMA"),
            StatementKind::Pragma {
                name: Some(name),
                value: None,
            } => write!(f, "PRAGMA {name}"),
            StatementKind::Pragma {
                name: Some(name),
                value: Some(v),
            } => {
                write!(f, "PRAGMA {name} = '{}'", v.replace('\'', "''"))
            }
            StatementKind::Commit => f.write_str("COMMIT"),
            StatementKind::Rollback => f.write_str("ROLLBACK"),
            StatementKind::CreateSystem(spec) => write!(f, "{spec}"),
            StatementKind::DropSystem { name, if_exists } => {
                write!(
                    f,
                    "DROP SYSTEM {}{name}",
                    if *if_exists { "IF EXISTS " } else { "" }
                )
            }
            StatementKind::AlterSystem { name, enable } => {
                write!(
                    f,
                    "ALTER SYSTEM {name} {}",
                    if *enable { "ENABLE" } else { "DISABLE" }
                )
            }
            StatementKind::CreatePhase { name, before, anchor } => {
                write!(
                    f,
                    "CREATE PHASE {name} {} {anchor}",
                    if *before { "BEFORE" } else { "AFTER" }
                )
            }
            StatementKind::DropPhase { name, if_exists } => {
                write!(
                    f,
                    "DROP PHASE {}{name}",
                    if *if_exists { "IF EXISTS " } else { "" }
                )
            }
            StatementKind::ShowSystems => f.write_str("SHOW SYSTEMS"),
            StatementKind::ShowSystemRuns => f.write_str("SHOW SYSTEM RUNS"),
            StatementKind::Save { path } => write!(f, "SAVE TO {path}"),
            StatementKind::Load { path } => write!(f, "LOAD FROM {path}"),
            StatementKind::Checkpoint => f.write_str("CHECKPOINT"),
            StatementKind::CopyTo { query, path, options } => {
                write!(f, "COPY ({query}) TO {path}")?;
                write_copy_options(f, options)
            }
            StatementKind::CopySubscribe { query, options } => {
                write!(f, "COPY (SUBSCRIBE {query}) TO STDOUT")?;
                write_copy_options(f, options)
            }
            StatementKind::CopyFrom {
                component,
                columns,
                path,
                options,
            } => {
                write!(f, "COPY {component}")?;
                if !columns.is_empty() {
                    let names: Vec<String> = columns.iter().map(ToString::to_string).collect();
                    write!(f, " ({})", names.join(", "))?;
                }
                write!(f, " FROM {path}")?;
                write_copy_options(f, options)
            }
            StatementKind::Tick { count, dt } => {
                f.write_str("TICK")?;
                if let Some(n) = count {
                    write!(f, " {n}")?;
                }
                if let Some(dt) = dt {
                    write!(f, " WITH dt = {dt}")?;
                }
                Ok(())
            }
            StatementKind::ExplainTick => f.write_str("EXPLAIN TICK"),
            StatementKind::CreateEvent { name, fields, keep } => {
                write!(f, "CREATE EVENT {name} (")?;
                write_fields(f, fields)?;
                f.write_char(')')?;
                if let Some(n) = keep {
                    write!(f, " WITH (keep = {n} TICKS)")?;
                }
                Ok(())
            }
            StatementKind::DropEvent { name, if_exists } => {
                write!(
                    f,
                    "DROP EVENT {}{name}",
                    if *if_exists { "IF EXISTS " } else { "" }
                )
            }
            StatementKind::ShowEvents => f.write_str("SHOW EVENTS"),
        }
    }
}

/// A system's declaration, printed so that it parses back to the same tree: a block
/// body one statement per line.
impl Display for SystemSpec {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "CREATE SYSTEM {}", self.name)?;
        if let Some(p) = &self.phase {
            write!(f, " IN PHASE {p}")?;
        }
        if !self.before.is_empty() {
            f.write_str(" BEFORE ")?;
            comma_list(f, &self.before)?;
        }
        if !self.after.is_empty() {
            f.write_str(" AFTER ")?;
            comma_list(f, &self.after)?;
        }
        if let Some(n) = self.every {
            write!(f, " EVERY {n} TICKS")?;
        }
        if let Some(w) = &self.when {
            write!(f, " WHEN ({w})")?;
        }
        if self.block {
            f.write_str(" AS BEGIN\n")?;
            for s in &self.body {
                writeln!(f, "  {s};")?;
            }
            f.write_str("END")
        } else {
            match self.body.first() {
                Some(s) => write!(f, " AS {s}"),
                None => f.write_str(" AS BEGIN END"),
            }
        }
    }
}

fn write_fields(f: &mut Formatter<'_>, fields: &[FieldSpec]) -> fmt::Result {
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{} {}", field.name, field.ty.name())?;
        if let Some(d) = &field.default {
            f.write_str(" DEFAULT ")?;
            super::print::operand(f, d, super::print::DEFAULT_OPERAND)?;
        }
    }
    Ok(())
}
