//! The files ecsql writes (SAVE, COPY TO, `.dump`, `.once`, `.output`, a file database's
//! checkpoints) and what keeps them from breaking a database that is open.
//!
//! Invariants:
//! - A file database holds an exclusive lock on its snapshot and on its journal for as long
//!   as it is open (`Database::open`); a checkpoint locks its new snapshot before renaming
//!   it into place. One database, one lock, whatever name reaches its files (a link, a
//!   second hard link, a path through another folder).
//! - No other write of ecsql's reaches a live database's file, in this process or another:
//!   before it writes, it takes a shared lock on the file it would replace or write into,
//!   and holds it until done. A lock that cannot be had on an ecsql file (or an empty one:
//!   a journal being made) refuses the write (`LiveDatabase`), naming the database when
//!   this process has it open. A file is judged by what it is, never by its name.
//! - A file is replaced whole or not at all (`write_file`): written to a temporary file of
//!   its own beside it (created new, locked while it is written), flushed, renamed over it,
//!   the folder flushed. A temporary file found unlocked is a killed writer's leftover:
//!   opening the database it belongs to, or the next write of the same file, removes it
//!   (`remove_leftovers`).

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

/// Which of a file database's files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Snapshot,
    Journal,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Snapshot => "snapshot",
            Role::Journal => "journal",
        }
    }
}

/// A file's identity: its device and inode (what every name of it shares).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Identity {
    device: u64,
    inode: u64,
}

impl Identity {
    /// The identity of an open file (none where the system does not give one).
    pub(crate) fn of(file: &File) -> Option<Identity> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let meta = file.metadata().ok()?;
            Some(Identity {
                device: meta.dev(),
                inode: meta.ino(),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = file;
            None
        }
    }
}

/// How many names (hard links) the open file has; 1 where the system does not say.
pub(crate) fn names(file: &File) -> u64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        file.metadata().map_or(1, |m| m.nlink())
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        1
    }
}

/// The files of the databases this process has open, for the messages of refused writes:
/// each with the token its registration was given.
static OPEN: Mutex<Vec<(u64, Identity, Role, PathBuf)>> = Mutex::new(Vec::new());

/// A file's registration (`register`), to end it with (`unregister`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Registered(u64);

/// Records that `file` is the `role` file of the database at `database` (open here).
pub(crate) fn register(file: &File, role: Role, database: &Path) -> Option<Registered> {
    static TOKENS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = Identity::of(file)?;
    let token = TOKENS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    OPEN.lock().push((token, id, role, database.to_path_buf()));
    Some(Registered(token))
}

/// A registration ends: its database was closed (or its snapshot replaced).
pub(crate) fn unregister(registered: Option<Registered>) {
    if let Some(Registered(token)) = registered {
        OPEN.lock().retain(|(t, ..)| *t != token);
    }
}

/// The identity a registration recorded.
pub(crate) fn registered_identity(registered: Option<Registered>) -> Option<Identity> {
    let Registered(token) = registered?;
    OPEN.lock()
        .iter()
        .find(|(t, ..)| *t == token)
        .map(|(_, id, ..)| *id)
}

/// A write refused because its file is a live database's.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct LiveDatabase(String);

/// Why `file`, which could not be locked, may not be written: it is a database's (or
/// `None`: another program's lock on a file of its own, none of ecsql's business).
fn refusal(file: &mut File) -> Option<LiveDatabase> {
    if let Some(id) = Identity::of(file)
        && let Some((_, _, role, db)) = OPEN.lock().iter().find(|(_, i, _, _)| *i == id)
    {
        return Some(LiveDatabase(format!(
            "it is the {} of the database {}, which is open in this process: only that database writes it (CHECKPOINT writes its snapshot); writing it would break the database, so choose another file",
            role.name(),
            db.display()
        )));
    }
    let mut head = [0u8; 8];
    let n = std::io::Read::read(file, &mut head).unwrap_or(0);
    let ours = n == 0 || head == *crate::storage::SNAPSHOT_MAGIC || head == *b"ECSQLJNL";
    ours.then(|| {
        LiveDatabase(
            "it is a file of a database another process has open (its snapshot or its journal): only that database writes it, and writing it would break the database, so choose another file (or close the database first)"
                .into(),
        )
    })
}

/// A shared lock on the regular file at `path`, held while it is written or replaced:
/// refused when the file is a live database's. `None` when there is no such file.
fn guard(path: &Path) -> io::Result<Option<File>> {
    // The name may be given to another file between the open and the lock (a
    // checkpoint renames its new snapshot over the old, then lets the old one's lock
    // go): the lock counts only if the name still reaches the locked file.
    for _ in 0..RETRIES {
        let Ok(meta) = std::fs::metadata(path) else {
            return Ok(None);
        };
        if !meta.is_file() {
            return Ok(None);
        }
        let mut file = File::open(path)?;
        match file.try_lock_shared() {
            Ok(()) if still_names(path, &file) => return Ok(Some(file)),
            Ok(()) => continue,
            Err(std::fs::TryLockError::WouldBlock) => {
                return match refusal(&mut file) {
                    Some(refused) => Err(io::Error::other(refused)),
                    None => Ok(None),
                };
            }
            Err(std::fs::TryLockError::Error(e)) if e.kind() == io::ErrorKind::Unsupported => {
                return Ok(None);
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
    Err(io::Error::other(
        "the file kept being replaced while it was looked at (by a database's checkpoints?): try again",
    ))
}

/// How often a lock is taken again when the name moved to another file meanwhile.
const RETRIES: usize = 64;

/// Whether `path` names `file` now (the same identity; true where there is none).
pub(crate) fn still_names(path: &Path, file: &File) -> bool {
    match (
        File::open(path).ok().and_then(|f| Identity::of(&f)),
        Identity::of(file),
    ) {
        (Some(now), Some(locked)) => now == locked,
        (None, Some(_)) => false,
        (_, None) => true,
    }
}

/// Opens `path` to write from its start, as `File::create` does, unless it is a live
/// database's file; the file stays share-locked while the handle lives (`.once`,
/// `.output`).
pub fn create_output(path: &Path) -> io::Result<File> {
    for _ in 0..RETRIES {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        if !file.metadata()?.is_file() {
            return Ok(file);
        }
        match file.try_lock_shared() {
            // Locked, and still the file the name reaches (see `guard`).
            Ok(()) if !still_names(path, &file) => continue,
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut reader = File::open(path)?;
                if let Some(refused) = refusal(&mut reader) {
                    return Err(io::Error::other(refused));
                }
            }
            Err(std::fs::TryLockError::Error(e)) if e.kind() == io::ErrorKind::Unsupported => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        file.set_len(0)?;
        return Ok(file);
    }
    Err(io::Error::other(
        "the file kept being replaced while it was opened (by a database's checkpoints?): try again",
    ))
}

/// Writes a file through `fill` so that `path` holds either what it held or all that
/// `fill` wrote, never a part: into a temporary file of its own beside it (created new, so
/// nothing already there is written through), flushed to disk, given the permissions of
/// the file it replaces, renamed over it, and the folder flushed (Unix). A link is
/// followed: the file it names is replaced. What is not a regular file (a pipe, a
/// terminal, `/dev/stdout`) is written to as it is. A failure removes the temporary file.
/// Refused, writing nothing, when the file is a live database's.
pub fn write_file(path: &Path, fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) -> io::Result<()> {
    let target = match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => {
            let mut out = BufWriter::new(OpenOptions::new().write(true).open(path)?);
            fill(&mut out)?;
            return out.flush();
        }
        Ok(meta) => Some(meta),
        Err(_) => None,
    };
    let held = guard(path)?;
    // What a killed write of this file left beside it goes first (beside the file a link
    // leads to, where the temporary files are made).
    match std::fs::canonicalize(path) {
        Ok(real) => remove_leftovers(&real),
        Err(_) => remove_leftovers(path),
    };
    // The locks let go of by hand, not by closing their files: a process forked
    // meanwhile holds copies of the descriptors until its exec, and with them the locks
    // (the old file's too, still under its name when the write failed).
    let written = replace(path, target.as_ref(), fill)
        .map(|file| {
            let _ = file.unlock();
        })
        .map_err(|e| {
            if let Some(file) = &e.renamed {
                let _ = file.unlock();
            }
            e.error
        });
    if let Some(old) = held {
        let _ = old.unlock();
    }
    written
}

/// A replacement that failed: why, and whether the new file had taken the name already
/// (only flushing the folder failed), or the old file is as it was.
#[derive(Debug)]
pub(crate) struct ReplaceError {
    pub error: io::Error,
    /// The new file, locked, when it had taken the name already.
    pub renamed: Option<File>,
}

impl std::fmt::Display for ReplaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

/// A file database's new snapshot: `write_file` without the guard (its own database's
/// file), the new file kept open and locked exclusively from before it takes the name,
/// so the name never reaches an unlocked file.
pub(crate) fn replace_locked(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> Result<File, ReplaceError> {
    let target = std::fs::metadata(path).ok();
    replace(path, target.as_ref(), fill)
}

/// The temporary file's name beside `path` for write number `call` of this process.
fn temporary_name(name: &std::ffi::OsStr, call: u64) -> String {
    format!(
        ".{}.ecsql-{}-{call}.tmp",
        name.to_string_lossy(),
        std::process::id()
    )
}

/// Replaces `path` (whose metadata is `target`, when it exists) through a temporary file;
/// gives the new file, locked exclusively.
fn replace(
    path: &Path,
    target: Option<&std::fs::Metadata>,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> Result<File, ReplaceError> {
    let before = |error: io::Error| ReplaceError { error, renamed: None };
    let path = match std::fs::symlink_metadata(path) {
        Ok(link) if link.file_type().is_symlink() => std::fs::canonicalize(path).map_err(before)?,
        _ => path.to_path_buf(),
    };
    let name = path
        .file_name()
        .ok_or_else(|| before(io::Error::new(io::ErrorKind::InvalidInput, "it names no file")))?;
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // A name of its own per call (two threads may write one file at once).
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temporary = folder.join(temporary_name(name, call));
    let written = (|| -> io::Result<File> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        // Locked while it is written: one found unlocked is a killed writer's.
        match file.try_lock() {
            Ok(()) | Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) if e.kind() == io::ErrorKind::Unsupported => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        let mut out = BufWriter::new(file);
        fill(&mut out)?;
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        if let Some(meta) = target {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()?;
        std::fs::rename(&temporary, &path)?;
        Ok(file)
    })();
    let file = match written {
        Ok(file) => file,
        Err(error) => {
            let _ = std::fs::remove_file(&temporary);
            return Err(before(error));
        }
    };
    #[cfg(unix)]
    if let Err(error) = File::open(&folder).and_then(|f| f.sync_all()) {
        return Err(ReplaceError {
            error,
            renamed: Some(file),
        });
    }
    Ok(file)
}

/// Removes the temporary files of writes to `path` that a killed process left beside it
/// (a checkpoint's, a SAVE's, a COPY's): those whose lock is free. Gives how many.
pub(crate) fn remove_leftovers(path: &Path) -> usize {
    let (Some(name), folder) = (path.file_name(), path.parent()) else {
        return 0;
    };
    let folder = match folder {
        Some(f) if !f.as_os_str().is_empty() => f,
        _ => Path::new("."),
    };
    let prefix = format!(".{}.ecsql-", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(folder) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        let Some(rest) = file_name.strip_prefix(&prefix) else {
            continue;
        };
        // `PID-CALL.tmp`, as `temporary_name` writes it.
        let ours = rest.strip_suffix(".tmp").is_some_and(|r| {
            r.split_once('-').is_some_and(|(pid, call)| {
                !pid.is_empty()
                    && !call.is_empty()
                    && pid.bytes().all(|b| b.is_ascii_digit())
                    && call.bytes().all(|b| b.is_ascii_digit())
            })
        });
        if !ours || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        // A process still running may have just made it and not yet locked it.
        let pid = rest.split('-').next().unwrap_or_default();
        if process_alive(pid) {
            continue;
        }
        let Ok(file) = OpenOptions::new().read(true).write(true).open(entry.path()) else {
            continue;
        };
        if file.try_lock().is_ok() && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether the process `pid` (as a temporary file's name gives it) is running (never
/// known where the system does not say: then only the lock tells).
fn process_alive(pid: &str) -> bool {
    cfg!(target_os = "linux") && Path::new("/proc").join(pid).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let f = std::env::temp_dir().join(format!("ecsql-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&f);
        std::fs::create_dir_all(&f).expect("made");
        f
    }

    #[test]
    fn a_locked_ecsql_file_is_refused_by_any_name_and_another_program_s_lock_is_not() {
        let f = folder("guard");
        let db = f.join("game.ecsql");
        std::fs::write(&db, b"ECSQLJNL and more").unwrap();
        let held = File::open(&db).unwrap();
        held.lock().unwrap();
        let link = f.join("link");
        std::os::unix::fs::symlink(&db, &link).unwrap();
        let hard = f.join("hard");
        std::fs::hard_link(&db, &hard).unwrap();
        for name in [&db, &link, &hard] {
            let e = write_file(name, |out| out.write_all(b"x")).unwrap_err();
            assert!(e.to_string().contains("another process has open"), "{e}");
            assert!(create_output(name).is_err());
        }
        assert_eq!(std::fs::read(&db).unwrap(), b"ECSQLJNL and more");
        // Another program's lock on a file of its own is not ecsql's to honour.
        let other = f.join("other.txt");
        std::fs::write(&other, b"hello").unwrap();
        let theirs = File::open(&other).unwrap();
        theirs.lock().unwrap();
        write_file(&other, |out| out.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read(&other).unwrap(), b"new");
        drop(held);
        write_file(&link, |out| out.write_all(b"free")).unwrap();
        assert_eq!(std::fs::read(&db).unwrap(), b"free");
        let _ = std::fs::remove_dir_all(&f);
    }

    /// A write that fails leaves the old file under its name: unlocked by hand, not only
    /// closed, so that a process started meanwhile (which holds copies of the descriptors
    /// until its exec) does not keep it locked against a database's open.
    #[test]
    fn a_failed_write_leaves_the_old_file_unlocked_while_processes_start() {
        use std::os::unix::process::CommandExt;
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let f = folder("failed_write");
        let path = f.join("out.ecsql");
        std::fs::write(&path, b"old").unwrap();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let started = std::sync::Arc::new(AtomicUsize::new(0));
        let starter = std::thread::spawn({
            let (stop, started) = (stop.clone(), started.clone());
            move || {
                while !stop.load(Ordering::Relaxed) {
                    let mut child = std::process::Command::new("true");
                    // Safety: the child only sleeps between its fork and its exec.
                    unsafe {
                        child.pre_exec(|| {
                            std::thread::sleep(std::time::Duration::from_millis(5));
                            Ok(())
                        });
                    }
                    // (A system out of processes for a moment only starts fewer.)
                    if child.status().is_ok() {
                        started.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
        struct Stop(std::sync::Arc<AtomicBool>);
        impl Drop for Stop {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let stopping = Stop(stop);
        let bytes = vec![7u8; 4 << 20];
        // At least 20 rounds, and on until some processes were started meanwhile.
        for round in 0..2000 {
            if round >= 20 && started.load(Ordering::Relaxed) >= 3 {
                break;
            }
            let failed = write_file(&path, |out| {
                out.write_all(&bytes)?;
                Err(io::Error::other("the fill failed"))
            });
            assert!(failed.is_err());
            let file = File::open(&path).unwrap();
            assert!(
                file.try_lock().is_ok(),
                "round {round}: the old file is still locked"
            );
            file.unlock().unwrap();
        }
        drop(stopping);
        starter.join().unwrap();
        assert!(
            started.load(Ordering::Relaxed) > 0,
            "no process was started meanwhile"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        let _ = std::fs::remove_dir_all(&f);
    }

    #[test]
    fn leftovers_are_removed_only_when_their_writer_is_gone() {
        let f = folder("leftovers");
        let db = f.join("w.ecsql");
        let dead = f.join(".w.ecsql.ecsql-123-4.tmp");
        let alive = f.join(".w.ecsql.ecsql-123-5.tmp");
        let stranger = f.join(".w.ecsql.ecsql-notes.tmp");
        for p in [&dead, &alive, &stranger] {
            std::fs::write(p, b"x").unwrap();
        }
        let writing = OpenOptions::new().read(true).write(true).open(&alive).unwrap();
        writing.lock().unwrap();
        assert_eq!(remove_leftovers(&db), 1);
        assert!(!dead.exists() && alive.exists() && stranger.exists());
        let _ = std::fs::remove_dir_all(&f);
    }
}
