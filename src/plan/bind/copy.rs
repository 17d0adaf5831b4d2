//! COPY: the file it names, its format and options, and what its columns are. `COPY …
//! TO` binds its query as any other; `COPY C FROM` names the component and, when the
//! statement lists them, the columns (the file's header names them otherwise, which only
//! the run can read).

use super::from::result_names;
use super::{Binder, Result};

use crate::location::Location;
use crate::parse::{self as ast, CopyOption, FileName, Ident};
use crate::plan::{CopyFromPlan, CopyTarget, CopyToPlan, Plan, PlanError};
use crate::storage::Value;
use crate::transfer::Format;

impl Binder<'_> {
    pub(super) fn copy_to(
        &self,
        query: &ast::Query,
        path: &FileName,
        options: &[CopyOption],
    ) -> Result<Plan> {
        let file = self.file_name(path, query.at)?;
        let client = *path == FileName::Stdout;
        let format = copy_format(&file, client, options)?;
        let at = query.at;
        let query = self.query(query)?;
        let names = result_names(&query.columns);
        // A file's columns are found by name when it is read back.
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return Err(PlanError::invalid(
                    at,
                    format!("two columns are named {name}: give one another name with AS"),
                ));
            }
        }
        Ok(Plan::CopyTo(CopyToPlan {
            query,
            file,
            client,
            format,
            names,
        }))
    }

    pub(super) fn copy_from(
        &self,
        component: &Ident,
        columns: &[Ident],
        path: &FileName,
        options: &[CopyOption],
    ) -> Result<Plan> {
        let def = self.component(component)?;
        let file = self.file_name(path, component.at)?;
        let client = *path == FileName::Stdin;
        let format = copy_format(&file, client, options)?;
        let targets = if columns.is_empty() {
            None
        } else {
            let mut targets = Vec::with_capacity(columns.len());
            for c in columns {
                let target = if c.matches("id") {
                    CopyTarget::Id
                } else {
                    CopyTarget::Field(self.field_index(def, c)?)
                };
                if targets.contains(&target) {
                    return Err(PlanError::invalid(c.at, format!("{} is named twice", c.value)));
                }
                targets.push(target);
            }
            Some(targets)
        };
        Ok(Plan::CopyFrom(CopyFromPlan {
            component: def.id(),
            file,
            client,
            format,
            columns: targets,
        }))
    }

    /// The file a statement names: its text, or its parameter's TEXT value (`STDOUT` or
    /// `STDIN` for the client's side).
    fn file_name(&self, path: &FileName, at: Location) -> Result<String> {
        match path {
            FileName::Text(text) => Ok(text.clone()),
            FileName::Stdout => Ok("STDOUT".to_owned()),
            FileName::Stdin => Ok("STDIN".to_owned()),
            FileName::Param(p) => {
                self.single_use.set(true);
                match self.param(p, at)? {
                    Value::Text(text) if !text.is_empty() => Ok(text),
                    other => Err(PlanError::invalid(
                        at,
                        format!("{p} names the file: a non-empty TEXT, not {other}"),
                    )),
                }
            }
        }
    }
}

/// The options only CSV has (with DELIMITER's other names).
const CSV_OPTIONS: [&str; 4] = ["header", "delimiter", "sep", "delim"];

/// The format COPY's options ask for: FORMAT (csv, json, text, parquet or arrow; by
/// default the file's extension decides, and for STDIN or STDOUT (`client`) PostgreSQL's
/// text format), HEADER (CSV; true when absent, false for `client`, as PostgreSQL's),
/// DELIMITER (CSV and text; one ASCII character).
fn copy_format(file: &str, client: bool, options: &[CopyOption]) -> Result<Format> {
    let mut format = if client {
        Format::Text { delimiter: '\t' }
    } else {
        Format::of_file(file)
    };
    let mut header = None;
    let mut delimiter = None;
    let value = |o: &CopyOption, what: &str| -> Result<String> {
        o.value.clone().ok_or_else(|| {
            PlanError::invalid(o.name.at, format!("{} needs {what}", o.name.value.to_uppercase()))
        })
    };
    for o in options {
        match o.name.value.to_ascii_lowercase().as_str() {
            "format" => {
                let v = value(o, "a format: csv or json")?;
                format = match v.to_ascii_lowercase().as_str() {
                    "csv" => Format::Csv {
                        delimiter: ',',
                        header: !client,
                    },
                    "text" => Format::Text { delimiter: '\t' },
                    "json" | "ndjson" | "jsonl" => Format::Json,
                    "parquet" => Format::Parquet,
                    "arrow" | "ipc" | "feather" => Format::Arrow,
                    other => {
                        return Err(PlanError::invalid(
                            o.name.at,
                            format!(
                                "unknown format {other} (COPY reads and writes csv, json, text, parquet and arrow)"
                            ),
                        ));
                    }
                };
            }
            "header" => {
                header = Some(match o.value.as_deref().map(str::to_ascii_lowercase).as_deref() {
                    None | Some("true" | "on" | "1") => true,
                    Some("false" | "off" | "0") => false,
                    Some(other) => {
                        return Err(PlanError::invalid(
                            o.name.at,
                            format!("HEADER is true or false, not {other}"),
                        ));
                    }
                });
            }
            "delimiter" | "sep" | "delim" => {
                let v = value(o, "one character in quotes: DELIMITER ';'")?;
                // `'\t'` (a backslash and t) is a tab, as the shells write it.
                let v = if v == "\\t" { "\t".to_owned() } else { v };
                let mut chars = v.chars();
                // Not a character numbers, ids and booleans are written with: they would
                // then need quotes that other tools do not expect.
                let usable = |c: char| {
                    c.is_ascii()
                        && !c.is_ascii_alphanumeric()
                        && !matches!(c, '"' | '\n' | '\r' | '.' | '+' | '-' | '\\')
                };
                match (chars.next(), chars.next()) {
                    (Some(c), None) if usable(c) => delimiter = Some(c),
                    _ => {
                        return Err(PlanError::invalid(
                            o.name.at,
                            format!(
                                "DELIMITER is one ASCII character that is not a letter, a digit, '.', '+', '-', a quote, a backslash or a line break ('\\t' for a tab), not '{v}'"
                            ),
                        ));
                    }
                }
            }
            other => {
                return Err(PlanError::invalid(
                    o.name.at,
                    format!("unknown COPY option {other} (the options: FORMAT, HEADER, DELIMITER)"),
                ));
            }
        }
    }
    match &mut format {
        Format::Csv {
            delimiter: d,
            header: h,
        } => {
            if let Some(c) = delimiter {
                *d = c;
            }
            if let Some(on) = header {
                *h = on;
            }
        }
        Format::Text { delimiter: d } if header.is_none() => {
            if let Some(c) = delimiter {
                *d = c;
            }
        }
        other => {
            if let Some(o) = options
                .iter()
                .find(|o| CSV_OPTIONS.contains(&o.name.value.to_ascii_lowercase().as_str()))
            {
                return Err(PlanError::invalid(
                    o.name.at,
                    format!(
                        "{} is a CSV option; this COPY is {}",
                        o.name.value.to_uppercase(),
                        other.name().to_uppercase()
                    ),
                ));
            }
        }
    }
    Ok(format)
}
