//! `SET`, `RESET` and `SHOW`: PostgreSQL's settings as drivers and tools send them on
//! connect (`SET extra_float_digits = 3`, `SHOW search_path`), and ecsql's own settings
//! by the same words (`SET statement_timeout = '5s'` is `PRAGMA statement_timeout =
//! 5000`).
//!
//! Invariants: a PostgreSQL setting a client may change (`catalog_views::types::SETTINGS`)
//! is kept for that client only and changes nothing else (ecsql has no dates to style);
//! one it may not change may be set to its value only (`client_encoding` to UTF8); an
//! unknown name is an error, as in PostgreSQL. The isolation level asked for is taken:
//! ecsql's transactions are serializable, which every level allows; READ ONLY is refused,
//! as nothing would enforce it.

use super::Client;
use super::settings;
use crate::error::Result;
use crate::exec::Outcome;
use crate::location::Location;
use crate::plan::{PlanError, PlanErrorKind};
use crate::postgres::{SETTINGS, setting_named};
use crate::storage::Value;
use crate::vector::DataType;

fn invalid(at: Location, message: String) -> crate::error::Error {
    PlanError::new(at, PlanErrorKind::Invalid { message }).into()
}

fn unknown(name: &str, at: Location) -> crate::error::Error {
    invalid(
        at,
        format!(
            "unrecognized configuration parameter \"{name}\" (SHOW ALL lists PostgreSQL's settings ecsql answers; a bare PRAGMA lists ecsql's)"
        ),
    )
}

/// A duration as PostgreSQL writes one for a timeout (`5s`, `1min`, `250ms`, `5000`:
/// milliseconds without a unit), in milliseconds.
fn milliseconds(value: &str) -> Option<u64> {
    let v = value.trim();
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (n, unit) = v.split_at(digits);
    let n: u64 = n.parse().ok()?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "ms" => 1,
        "s" => 1_000,
        "min" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// Whether `value` is the fixed setting's own value, in any of the words for it.
fn same(name: &str, value: &str, current: &str) -> bool {
    let norm = |s: &str| s.trim().to_ascii_lowercase().replace(['-', '_'], "");
    let value = norm(value);
    value == norm(current) || (name.eq_ignore_ascii_case("client_encoding") && value == "unicode")
}

/// Checks the modes of `SET TRANSACTION …` (or an isolation level alone): any level is
/// taken (ecsql's transactions are serializable, which every level allows); READ ONLY is
/// refused, as nothing would keep such a transaction from writing.
fn transaction_modes(value: &str, at: Location) -> Result<()> {
    let lower = value.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let mut rest = words.as_slice();
    while !rest.is_empty() {
        rest = match rest {
            ["isolation", "level", "serializable", more @ ..] | ["serializable", more @ ..] => more,
            ["isolation", "level", "repeatable", "read", more @ ..] | ["repeatable", "read", more @ ..] => {
                more
            }
            [
                "isolation",
                "level",
                "read",
                "committed" | "uncommitted",
                more @ ..,
            ]
            | ["read", "committed" | "uncommitted", more @ ..] => more,
            ["read", "write", more @ ..] | ["deferrable", more @ ..] | ["not", "deferrable", more @ ..] => {
                more
            }
            ["read", "only", ..] => {
                return Err(invalid(
                    at,
                    "ecsql has no read-only transactions: nothing would keep one from writing".into(),
                ));
            }
            _ => {
                return Err(invalid(
                    at,
                    format!(
                        "invalid transaction mode {value}: expected ISOLATION LEVEL SERIALIZABLE, REPEATABLE READ, READ COMMITTED or READ UNCOMMITTED, or READ WRITE"
                    ),
                ));
            }
        };
    }
    Ok(())
}

impl Client {
    /// `SET name = value` (`value` None: `RESET name`, `SET name TO DEFAULT`).
    pub(super) fn set_variable(
        &self,
        name: &str,
        value: Option<&str>,
        at: Location,
        replay: bool,
    ) -> Result<Outcome> {
        if name.eq_ignore_ascii_case("all") && value.is_none() {
            self.session.lock().clear();
            return Ok(Outcome::default());
        }
        if let Some(own) = settings::find(name) {
            let Some(v) = value else {
                return Err(invalid(
                    at,
                    format!("RESET {}: set it with PRAGMA {} = value", own.name, own.name),
                ));
            };
            let v = match own.name {
                "statement_timeout" | "busy_timeout" => {
                    milliseconds(v).map_or_else(|| v.to_owned(), |ms| ms.to_string())
                }
                _ => v.to_owned(),
            };
            settings::pragma(self, own.name, Some(&v), at, replay)?;
            return Ok(Outcome::default());
        }
        let Some(setting) = setting_named(name) else {
            return Err(unknown(name, at));
        };
        if setting.name.ends_with("transaction_isolation") {
            if let Some(v) = value {
                transaction_modes(v, at)?;
            }
            return Ok(Outcome::default());
        }
        let mut session = self.session.lock();
        session.retain(|(n, _)| *n != setting.name);
        match value {
            None => {}
            Some(v) if setting.settable => session.push((setting.name, v.to_owned())),
            Some(v) if same(setting.name, v, setting.value) => {}
            Some(v) => {
                return Err(invalid(
                    at,
                    format!(
                        "parameter \"{}\" cannot be changed: ecsql's is {} (not {v})",
                        setting.name, setting.value
                    ),
                ));
            }
        }
        Ok(Outcome::default())
    }

    /// `SHOW name`, `SHOW ALL` (`name` None).
    pub(super) fn show_variable(&self, name: Option<&str>, at: Location, replay: bool) -> Result<Outcome> {
        let session = self.session.lock().clone();
        let value_of = |s: &crate::postgres::Setting| {
            session
                .iter()
                .find(|(n, _)| *n == s.name)
                .map_or_else(|| s.value.to_owned(), |(_, v)| v.clone())
        };
        let Some(name) = name else {
            let rows = SETTINGS
                .iter()
                .map(|s| {
                    vec![
                        Value::Text(s.name.to_owned()),
                        Value::Text(value_of(s)),
                        Value::Text(s.description.to_owned()),
                    ]
                })
                .collect();
            let columns = [
                ("name", DataType::Text),
                ("setting", DataType::Text),
                ("description", DataType::Text),
            ];
            return Ok(Outcome::of_rows(&columns, rows));
        };
        if let Some(own) = settings::find(name) {
            let value = settings::pragma(self, own.name, None, at, replay)?;
            let text = match value {
                Value::Text(t) => t,
                v => v.to_string(),
            };
            return Ok(Outcome::of_rows(
                &[(own.name, DataType::Text)],
                vec![vec![Value::Text(text)]],
            ));
        }
        let Some(setting) = setting_named(name) else {
            return Err(unknown(name, at));
        };
        let column = setting.name.to_ascii_lowercase();
        Ok(Outcome::of_rows(
            &[(column.as_str(), DataType::Text)],
            vec![vec![Value::Text(value_of(setting))]],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_postgresql_writes_them() {
        assert_eq!(milliseconds("5000"), Some(5000));
        assert_eq!(milliseconds("5s"), Some(5000));
        assert_eq!(milliseconds("2 min"), Some(120_000));
        assert_eq!(milliseconds("250ms"), Some(250));
        assert_eq!(milliseconds("soon"), None);
    }
}
