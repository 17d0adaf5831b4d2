//! What a client of the server keeps by name between its messages: its prepared
//! statements' texts and its portals' parameters, by size.
//!
//! Invariant: a client keeps at most `MAX_KEPT` prepared statements and as many portals,
//! and `MAX_KEPT_BYTES` of their texts and parameters together; a Parse or Bind of a new
//! one past that is refused (54000) until the client closes some, so a stranger's
//! messages cannot grow the server without end.

use pgwire::error::{ErrorInfo, PgWireError};

/// The most prepared statements, and the most portals, a client keeps by name.
const MAX_KEPT: usize = 10_000;

/// The most bytes of statement texts and portal parameters a client keeps.
const MAX_KEPT_BYTES: usize = 256 << 20;

/// What a client keeps by name between its messages: its prepared statements' texts and
/// its portals' parameters, by size.
#[derive(Default)]
pub(super) struct Kept {
    statements: std::collections::HashMap<String, usize>,
    portals: std::collections::HashMap<String, usize>,
    bytes: usize,
}

impl Kept {
    fn names(&mut self, portal: bool) -> &mut std::collections::HashMap<String, usize> {
        if portal {
            &mut self.portals
        } else {
            &mut self.statements
        }
    }

    /// Whether `name` (a statement, or a portal) of `bytes` fits; why not.
    pub(super) fn room(&mut self, portal: bool, name: &str, bytes: usize) -> Result<(), PgWireError> {
        let names = self.names(portal);
        let old = names.get(name).copied();
        let what = if portal { "portals" } else { "prepared statements" };
        if old.is_none() && names.len() >= MAX_KEPT {
            return Err(limit(format!(
                "a client keeps at most {MAX_KEPT} {what} by name: close some (Close, DEALLOCATE) first"
            )));
        }
        if self.bytes - old.unwrap_or(0) + bytes > MAX_KEPT_BYTES {
            return Err(limit(format!(
                "a client keeps at most {} MiB of prepared statements' texts and portals' parameters: close some first",
                MAX_KEPT_BYTES >> 20
            )));
        }
        Ok(())
    }

    pub(super) fn keep(&mut self, portal: bool, name: &str, bytes: usize) {
        let old = self.names(portal).insert(name.to_owned(), bytes);
        self.bytes = self.bytes - old.unwrap_or(0) + bytes;
    }

    /// Whether a prepared statement of that name is kept.
    pub(super) fn has_statement(&self, name: &str) -> bool {
        self.statements.contains_key(name)
    }

    /// The names of the prepared statements kept.
    pub(super) fn statement_names(&self) -> Vec<String> {
        self.statements.keys().cloned().collect()
    }

    pub(super) fn forget(&mut self, portal: bool, name: &str) {
        if let Some(old) = self.names(portal).remove(name) {
            self.bytes -= old;
        }
    }
}

/// The 54000 error of a client past what it may keep.
fn limit(message: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".to_owned(),
        "54000".to_owned(),
        message,
    )))
}
