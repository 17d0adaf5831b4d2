//! `SET`, `RESET` and `SHOW`: PostgreSQL's settings as drivers and tools send them on
//! connect (`SET extra_float_digits = 3`, `SHOW search_path`), and ecsql's own settings
//! by the same words (`SET statement_timeout = '5s'` is `PRAGMA statement_timeout =
//! 5000`).
//!
//! Invariants: a PostgreSQL setting a client may change (`catalog_views::types::SETTINGS`)
//! is kept for that client only and changes nothing else (ecsql has no dates to style);
//! one it may not change may be set to its value only (`client_encoding` to UTF8); an
//! unknown name is an error, as in PostgreSQL. The transaction settings are the open
//! transaction's modes (`transaction.rs`) and the defaults of the next BEGIN.
//! `statement_timeout` is ecsql's own: RESET gives back the connection's default (a
//! server's limit for its clients), and SHOW writes it with its unit, as PostgreSQL.

use super::Client;
use super::settings;
use crate::error::Result;
use crate::exec::Outcome;
use crate::location::Location;
use crate::parse::{Isolation, TransactionModes};
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

/// A setting SET inside the open transaction, and what it was before.
#[derive(Debug)]
pub(super) struct Changed {
    key: Key,
    /// Its value before (a PostgreSQL setting not SET: `None`).
    before: Option<String>,
    /// Its last SET was SET LOCAL: COMMIT puts it back too.
    local: bool,
}

/// Which setting: one of PostgreSQL's kept per client, or one of ecsql's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Session(&'static str),
    Own(&'static str),
}

/// The transaction modes a setting's value names: an isolation level alone
/// (`serializable`, `read committed`), or the words of `SET TRANSACTION …`.
fn modes_of(value: &str, at: Location) -> Result<TransactionModes> {
    if let Some(level) = Isolation::named(value) {
        return Ok(TransactionModes {
            isolation: Some(level),
            read_only: None,
        });
    }
    let lower = value.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    TransactionModes::from_words(&words).map_err(|message| invalid(at, message))
}

/// A boolean setting's value as PostgreSQL reads one (`on`, `off`, `true`, `0`, …).
fn boolean(name: &str, value: &str, at: Location) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" | "t" | "y" => Ok(true),
        "off" | "false" | "no" | "0" | "f" | "n" => Ok(false),
        _ => Err(invalid(
            at,
            format!("parameter \"{name}\" requires a Boolean value (on or off), not {value}"),
        )),
    }
}

/// On or off, as PostgreSQL shows a boolean setting.
fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

/// A timeout in milliseconds as PostgreSQL shows one: `0`, `250ms`, `5s`, `2min`, `1h`.
fn duration_text(ms: u64) -> String {
    match ms {
        0 => "0".to_owned(),
        ms if ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms % 60_000 == 0 => format!("{}min", ms / 60_000),
        ms if ms % 1_000 == 0 => format!("{}s", ms / 1_000),
        ms => format!("{ms}ms"),
    }
}

impl Client {
    /// `SET name = value` (`value` None: `RESET name`, `SET name TO DEFAULT`); `local`
    /// (`SET LOCAL`) until the transaction ends, and nothing outside one (PostgreSQL
    /// warns). Inside a transaction, what the setting was is kept for its end.
    pub(super) fn set_variable(
        &self,
        name: &str,
        value: Option<&str>,
        local: bool,
        at: Location,
        replay: bool,
    ) -> Result<Outcome> {
        let in_transaction = self.open_transaction().is_some();
        if local && !in_transaction {
            return Ok(Outcome::default());
        }
        if in_transaction {
            self.keep_before(name, local, at, replay);
        }
        let set = self.set_setting(name, value, at, replay);
        self.read_only_changed();
        set
    }

    /// `default_transaction_read_only` changed, maybe: every write reads it, kept where
    /// reading it takes no lock.
    fn read_only_changed(&self) {
        let read_only = self
            .session_value("default_transaction_read_only")
            .is_some_and(|v| v == "on");
        self.read_only_default
            .store(read_only, std::sync::atomic::Ordering::Relaxed);
    }

    /// What SET `name` is about to change, as it is now, kept for the transaction's end
    /// (the first change of each is the one kept); `local` says how it ends at COMMIT.
    fn keep_before(&self, name: &str, local: bool, at: Location, replay: bool) {
        let keys: Vec<Key> = if name.eq_ignore_ascii_case("all") {
            let mut keys: Vec<Key> = self.session.lock().iter().map(|(n, _)| Key::Session(n)).collect();
            keys.extend([Key::Own("statement_timeout"), Key::Own("busy_timeout")]);
            keys
        } else if let Some(own) = settings::find(name) {
            vec![Key::Own(own.name)]
        } else {
            match setting_named(name).map(|s| s.name) {
                // The transaction's own modes end with it.
                None | Some("transaction_isolation" | "transaction_read_only") => Vec::new(),
                Some("default_transaction_isolation") => vec![
                    Key::Session("default_transaction_isolation"),
                    Key::Session("default_transaction_read_only"),
                ],
                Some(name) => vec![Key::Session(name)],
            }
        };
        let mut kept = self.tx_settings.lock();
        for key in keys {
            if let Some(changed) = kept.iter_mut().find(|c| c.key == key) {
                changed.local = local;
                continue;
            }
            let before = match key {
                Key::Session(n) => self.session_value(n),
                Key::Own(n) => match settings::pragma(self, n, None, at, replay) {
                    Ok(Value::Text(t)) => Some(t),
                    Ok(v) => Some(v.to_string()),
                    Err(_) => None,
                },
            };
            kept.push(Changed { key, before, local });
        }
    }

    /// The transaction ended: on ROLLBACK (`undone`) every setting SET in it is as it
    /// was before; on COMMIT those SET LOCAL.
    pub(super) fn end_settings(&self, undone: bool) {
        let kept = std::mem::take(&mut *self.tx_settings.lock());
        for changed in kept.into_iter().filter(|c| undone || c.local) {
            match (changed.key, changed.before) {
                (Key::Session(name), before) => {
                    let mut session = self.session.lock();
                    session.retain(|(n, _)| *n != name);
                    if let Some(v) = before {
                        session.push((name, v));
                    }
                }
                (Key::Own(name), Some(before)) => {
                    let _ = settings::pragma(self, name, Some(&before), Location::default(), false);
                }
                (Key::Own(_), None) => {}
            }
        }
        self.read_only_changed();
    }

    fn set_setting(&self, name: &str, value: Option<&str>, at: Location, replay: bool) -> Result<Outcome> {
        if name.eq_ignore_ascii_case("all") && value.is_none() {
            self.session.lock().clear();
            self.reset_timeouts();
            return Ok(Outcome::default());
        }
        if let Some(own) = settings::find(name) {
            let Some(v) = value else {
                return match own.name {
                    "statement_timeout" | "busy_timeout" => {
                        self.reset_timeouts_named(own.name);
                        Ok(Outcome::default())
                    }
                    _ => Err(invalid(
                        at,
                        format!("RESET {}: set it with PRAGMA {} = value", own.name, own.name),
                    )),
                };
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
        match (setting.name, value) {
            ("transaction_isolation" | "transaction_read_only", None) => return Ok(Outcome::default()),
            ("transaction_isolation", Some(v)) => {
                self.set_transaction(modes_of(v, at)?, at)?;
                return Ok(Outcome::default());
            }
            ("transaction_read_only", Some(v)) => {
                let modes = TransactionModes {
                    isolation: None,
                    read_only: Some(boolean(setting.name, v, at)?),
                };
                self.set_transaction(modes, at)?;
                return Ok(Outcome::default());
            }
            ("default_transaction_isolation", Some(v)) => {
                // Also what SET SESSION CHARACTERISTICS AS TRANSACTION … names.
                let modes = modes_of(v, at)?;
                let mut session = self.session.lock();
                if let Some(level) = modes.isolation {
                    session.retain(|(n, _)| *n != "default_transaction_isolation");
                    session.push(("default_transaction_isolation", level.name().to_owned()));
                }
                if let Some(read_only) = modes.read_only {
                    session.retain(|(n, _)| *n != "default_transaction_read_only");
                    session.push(("default_transaction_read_only", on_off(read_only).to_owned()));
                }
                return Ok(Outcome::default());
            }
            ("default_transaction_read_only", Some(v)) => {
                let read_only = boolean(setting.name, v, at)?;
                let mut session = self.session.lock();
                session.retain(|(n, _)| *n != setting.name);
                session.push((setting.name, on_off(read_only).to_owned()));
                return Ok(Outcome::default());
            }
            _ => {}
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

    /// The isolation level of a BEGIN that names none.
    pub(super) fn default_isolation(&self) -> Isolation {
        self.session_value("default_transaction_isolation")
            .and_then(|v| Isolation::named(&v))
            .unwrap_or_else(|| {
                super::transaction::isolation_of(
                    self.base_isolation.load(std::sync::atomic::Ordering::Relaxed),
                )
            })
    }

    /// Whether a BEGIN that says neither READ ONLY nor READ WRITE begins a read-only
    /// transaction.
    pub(super) fn default_read_only(&self) -> bool {
        self.read_only_default.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn session_value(&self, name: &str) -> Option<String> {
        let session = self.session.lock();
        session.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone())
    }

    /// RESET ALL: the timeouts go back to the connection's defaults.
    fn reset_timeouts(&self) {
        self.reset_timeouts_named("statement_timeout");
        self.reset_timeouts_named("busy_timeout");
    }

    /// RESET of `statement_timeout` (none, or the server's limit) or `busy_timeout`.
    fn reset_timeouts_named(&self, name: &str) {
        if name == "statement_timeout" {
            // None is always taken: under a server's limit, it is the limit.
            let _ = self.set_statement_timeout(None);
        } else {
            self.set_busy_timeout(super::DEFAULT_BUSY_TIMEOUT);
        }
    }

    /// A PostgreSQL setting's value for this client: what it SET, its transaction's, or
    /// the default.
    fn value_of(&self, setting: &crate::postgres::Setting) -> String {
        let open = self.open_transaction();
        match setting.name {
            "default_transaction_isolation" => self.default_isolation().name().to_owned(),
            "transaction_isolation" => open
                .map_or_else(|| self.default_isolation(), |o| o.isolation)
                .name()
                .to_owned(),
            "default_transaction_read_only" => on_off(self.default_read_only()).to_owned(),
            "transaction_read_only" => {
                on_off(open.map_or_else(|| self.default_read_only(), |o| o.read_only)).to_owned()
            }
            name => self
                .session_value(name)
                .unwrap_or_else(|| setting.value.to_owned()),
        }
    }

    /// `statement_timeout` as PostgreSQL shows it.
    fn statement_timeout_text(&self) -> String {
        let ms = self.statement_timeout().map_or(0, |t| t.as_millis());
        duration_text(u64::try_from(ms).unwrap_or(u64::MAX))
    }

    /// `SHOW name`, `SHOW ALL` (`name` None).
    pub(super) fn show_variable(&self, name: Option<&str>, at: Location, replay: bool) -> Result<Outcome> {
        let Some(name) = name else {
            let mut rows: Vec<Vec<Value>> = SETTINGS
                .iter()
                .map(|s| {
                    vec![
                        Value::Text(s.name.to_owned()),
                        Value::Text(self.value_of(s)),
                        Value::Text(s.description.to_owned()),
                    ]
                })
                .collect();
            rows.push(vec![
                Value::Text("statement_timeout".to_owned()),
                Value::Text(self.statement_timeout_text()),
                Value::Text(
                    "How long one statement may run before it is stopped (0: no limit but the server's)."
                        .to_owned(),
                ),
            ]);
            rows.sort_by(|a, b| a[0].to_string().cmp(&b[0].to_string()));
            let columns = [
                ("name", DataType::Text),
                ("setting", DataType::Text),
                ("description", DataType::Text),
            ];
            return Ok(Outcome::of_rows(&columns, rows));
        };
        if name.eq_ignore_ascii_case("statement_timeout") {
            return Ok(Outcome::of_rows(
                &[("statement_timeout", DataType::Text)],
                vec![vec![Value::Text(self.statement_timeout_text())]],
            ));
        }
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
            vec![vec![Value::Text(self.value_of(setting))]],
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
