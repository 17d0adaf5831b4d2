//! The one directory a server's clients may reach (`--files DIR`): their SAVE, LOAD and
//! COPY name files there, as PostgreSQL keeps file access to the roles it trusts.
//!
//! Invariants:
//! - Without the directory, no client statement names a file of the server's (the
//!   caller refuses them whole).
//! - With it, a file's name is relative, written in the statement (not a parameter,
//!   which could not be checked before the statement runs), has no `..`, and resolves,
//!   through any symbolic link on its way, to a place inside the directory; the
//!   statement is then run with the file's full name. Anything else is refused before
//!   the statement runs.

use std::path::{Component, Path, PathBuf};

use crate::parse::{FileName, Statement, StatementKind};

/// The directory, as the system resolves it.
#[derive(Debug)]
pub(super) struct Files {
    root: PathBuf,
}

impl Files {
    /// The directory `dir`; why it cannot be one.
    pub(super) fn open(dir: &Path) -> Result<Files, String> {
        let root = dir.canonicalize().map_err(|e| e.to_string())?;
        if !root.is_dir() {
            return Err("not a directory".to_owned());
        }
        Ok(Files { root })
    }

    /// `statement` with the file it names placed in the directory, or why it may not
    /// name it; `None` when it names no file.
    pub(super) fn place(&self, statement: &Statement) -> Option<Result<Statement, String>> {
        let path = match &statement.kind {
            StatementKind::Save { path } | StatementKind::Load { path } => path,
            StatementKind::CopyTo { path, .. } | StatementKind::CopyFrom { path, .. } => match path {
                FileName::Stdout | FileName::Stdin => return None,
                path => path,
            },
            _ => return None,
        };
        let full = match self.inside(path) {
            Ok(full) => FileName::Text(full),
            Err(why) => return Some(Err(why)),
        };
        let mut placed = statement.clone();
        if let StatementKind::Save { path }
        | StatementKind::Load { path }
        | StatementKind::CopyTo { path, .. }
        | StatementKind::CopyFrom { path, .. } = &mut placed.kind
        {
            *path = full;
        }
        Some(Ok(placed))
    }

    /// The full name of `path` inside the directory; why it is not one.
    fn inside(&self, path: &FileName) -> Result<String, String> {
        let FileName::Text(name) = path else {
            return Err(
                "name the file in the statement's text: a parameter's file cannot be checked before the statement runs"
                    .to_owned(),
            );
        };
        let relative = Path::new(name);
        if !relative
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(format!(
                "'{name}' is not a name inside the server's files directory: name it relative to that directory, without '..'"
            ));
        }
        let full = self.root.join(relative);
        // A symbolic link that leads nowhere yet would be followed by the write that
        // makes its target, wherever that is.
        if full.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()) && full.canonicalize().is_err() {
            return Err(format!("'{name}' is a symbolic link that leads nowhere"));
        }
        // The deepest part of the name that exists, as the system resolves it (through
        // symbolic links), must be in the directory; what does not exist yet is made there.
        let mut existing = full.as_path();
        let resolved = loop {
            match existing.canonicalize() {
                Ok(resolved) => break resolved,
                Err(_) => match existing.parent() {
                    Some(parent) => existing = parent,
                    None => return Err(format!("'{name}' cannot be resolved")),
                },
            }
        };
        if !resolved.starts_with(&self.root) {
            return Err(format!(
                "'{name}' leads outside the server's files directory (through a symbolic link)"
            ));
        }
        full.into_os_string()
            .into_string()
            .map_err(|_| format!("'{name}' is not UTF-8"))
    }
}
