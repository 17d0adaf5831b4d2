//! Opening a file database: the names resolved (links followed, one journal and one lock
//! for every name of a file), the journal and the snapshot locked and read, a new
//! database's first checkpoint made, the set-up run, the journal run again, and the files
//! kept open.
//!
//! Invariants:
//! - An open that fails removes the files it made (`Made`) and leaves the others as they
//!   were; one stopped by its interrupt or its progress callback changes nothing.

use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::replay::Replay;
use super::{FileDb, Flush, Journal};
use crate::engine::journal::{self, Record};
use crate::engine::save::{Image, image_bytes, read_image};
use crate::engine::{Client, Engine, wait};
use crate::error::{Error, FileError, Result};
use crate::files;
use crate::location::Location;

/// How far opening a file database has come in running its journal (see
/// [`OpenOptions::progress`](crate::OpenOptions::progress)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenProgress {
    /// The journal's bytes of records (its header aside).
    pub journal_bytes: u64,
    /// How many of them have been run again.
    pub replayed_bytes: u64,
    /// The journal's records.
    pub records: u64,
    /// How many of them have been run again.
    pub replayed_records: u64,
    /// Since opening began.
    pub elapsed: Duration,
}

/// The set-up an open runs before the journal. Its client shares the open's interrupt,
/// so it must not outlive the call nor leave the open's thread (`wait::Interrupt::enter`):
/// `Connection`'s open gives the user's closure only a reference to it.
pub(crate) type Setup<'a> = Box<dyn FnOnce(Client) -> Result<()> + 'a>;
/// What hears how far an open has come (and says whether to go on).
pub(crate) type Progress<'a> = dyn FnMut(&OpenProgress) -> bool + 'a;

/// How often `progress` hears of a journal being run.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Opens a file database (`OpenOptions::open`): `setup` gets a client on it before
/// its journal runs. One call from start to end: `interrupt` reaches whatever runs in it.
pub(crate) fn open_files(
    given: &Path,
    setup: Option<Setup<'_>>,
    progress: Option<&mut Progress<'_>>,
    interrupt: &Arc<wait::Interrupt>,
    checkpoint_after: Duration,
) -> Result<Arc<Engine>> {
    // Left when the open returns, or unwinds from a setup that panicked.
    let (_call, turn) = crate::engine::locks::Call::enter(interrupt);
    open_in_turn(given, setup, progress, interrupt, turn, checkpoint_after)
}

/// `open_files`, inside the interrupt's `turn`.
fn open_in_turn(
    given: &Path,
    setup: Option<Setup<'_>>,
    mut progress: Option<&mut Progress<'_>>,
    interrupt: &std::sync::Arc<wait::Interrupt>,
    turn: u64,
    checkpoint_after: Duration,
) -> Result<Arc<Engine>> {
    {
        let started = Instant::now();
        let text = given.display().to_string();
        let io_error = |path: &Path, action: &'static str, e: io::Error| {
            Error::File(FileError::Io {
                path: path.display().to_string(),
                action,
                message: e.to_string(),
            })
        };
        // The database is the file the name reaches: through a link, its journal is the
        // one beside that file, so every name of it shares one journal and one lock.
        let path = resolve_links(given).map_err(|message| {
            Error::File(FileError::Invalid {
                path: text.clone(),
                message,
            })
        })?;
        if path.is_dir() {
            return Err(Error::File(FileError::Invalid {
                path: text,
                message: "it is a folder, not a database file".into(),
            }));
        }
        if let Some(folder) = path.parent()
            && !folder.as_os_str().is_empty()
            && !folder.is_dir()
        {
            return Err(Error::File(FileError::Invalid {
                path: text,
                message: format!("its folder {} does not exist", folder.display()),
            }));
        }
        let journal_of = |path: &Path| {
            let mut name = path.as_os_str().to_owned();
            name.push("-journal");
            PathBuf::from(name)
        };
        let journal_path = journal_of(&path);
        // An older ecsql kept a link's journal beside the link: one there holding
        // changes would be passed over, so it is refused, saying where it goes now.
        let beside_link = journal_of(given);
        if path != given
            && beside_link != journal_path
            && fs::metadata(&beside_link).is_ok_and(|m| m.is_file() && m.len() > journal::HEADER)
        {
            return Err(Error::File(FileError::Invalid {
                path: beside_link.display().to_string(),
                message: format!(
                    "this journal, beside the link {text}, holds changes (an older ecsql kept a link's journal beside the link); the database's journal is kept beside the file the link leads to, {}: move it there if none is there, or remove it",
                    journal_path.display()
                ),
            }));
        }
        if journal_path.is_dir() {
            return Err(Error::File(FileError::Invalid {
                path: journal_path.display().to_string(),
                message: "the database's journal is a folder here, not a file".into(),
            }));
        }
        let open_journal = |create_new: bool| {
            fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(create_new)
                .open(&journal_path)
        };
        // A lock counts only while the name still reaches the locked file: another open
        // that failed may have removed the journal it made, or a program put another
        // file there, between the open and the lock.
        let moved = |path: &Path| {
            io_error(
                path,
                "lock",
                io::Error::other("the file kept being replaced while it was opened: try again"),
            )
        };
        let mut tries = 0;
        let (mut journal_file, created) = loop {
            let (file, created) = match open_journal(true) {
                Ok(file) => (file, true),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => (
                    open_journal(false).map_err(|e| io_error(&journal_path, "open", e))?,
                    false,
                ),
                Err(e) => return Err(io_error(&journal_path, "open", e)),
            };
            match file.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(Error::File(FileError::Locked { path: text }));
                }
                Err(fs::TryLockError::Error(e)) => return Err(io_error(&journal_path, "lock", e)),
            }
            if files::still_names(&journal_path, &file) {
                break (file, created);
            }
            let _ = file.unlock();
            tries += 1;
            if tries > 64 {
                return Err(moved(&journal_path));
            }
        };
        // From here the journal is ours: an open that fails leaves no file it made.
        let mut made = Made {
            journal: created.then(|| journal_path.clone()),
            snapshot: None,
            lock: journal_file.try_clone().ok(),
            snapshot_lock: None,
        };
        let mut journal_bytes = Vec::new();
        io::Read::read_to_end(&mut journal_file, &mut journal_bytes)
            .map_err(|e| io_error(&journal_path, "read", e))?;

        let snapshot_error = |message: String| {
            Error::File(FileError::Snapshot {
                path: text.clone(),
                message,
            })
        };
        let mut tries = 0;
        let (image, snapshot) = loop {
            break match File::open(&path) {
                Ok(mut file) => {
                    // Another name of the same file (a hard link) open as a database of its
                    // own holds this lock.
                    match file.try_lock() {
                        Ok(()) => {}
                        Err(fs::TryLockError::WouldBlock) => {
                            return Err(Error::File(FileError::Locked { path: text }));
                        }
                        Err(fs::TryLockError::Error(e)) => return Err(io_error(&path, "lock", e)),
                    }
                    if !files::still_names(&path, &file) {
                        let _ = file.unlock();
                        tries += 1;
                        if tries > 64 {
                            return Err(moved(&path));
                        }
                        continue;
                    }
                    made.snapshot_lock = file.try_clone().ok();
                    let names = files::names(&file);
                    if names > 1 {
                        return Err(Error::File(FileError::Invalid {
                            path: text,
                            message: format!(
                                "the file has {names} names (hard links): a database's journal is kept beside the name it is opened by, so each name would make a database of its own from one file; keep one name (rm the others) or make a copy (cp)"
                            ),
                        }));
                    }
                    let mut bytes = Vec::new();
                    io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| io_error(&path, "read", e))?;
                    if bytes.is_empty() {
                        return Err(snapshot_error(
                        "it is empty (0 bytes), not an ecsql database: remove it to make a new database there".into(),
                    ));
                    }
                    (read_image(&bytes).map_err(snapshot_error)?, file)
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if journal_bytes.len() as u64 > journal::HEADER {
                        return Err(Error::File(FileError::Invalid {
                            path: text,
                            message: format!(
                                "it is missing, yet its journal {} holds changes: put the database file back (or remove the journal to start empty)",
                                journal_path.display()
                            ),
                        }));
                    }
                    // A new database: its first checkpoint, empty.
                    let engine = Engine::new();
                    let bytes = image_bytes(&engine.state.read(), 1);
                    let made_file = files::replace_locked(&path, |out| out.write_all(&bytes));
                    if !matches!(made_file, Err(files::ReplaceError { renamed: None, .. })) {
                        // There now, the open's to remove if it goes no further.
                        made.snapshot = Some(path.clone());
                    }
                    let file = match made_file {
                        Ok(file) => file,
                        Err(e) => {
                            // Removed while still locked (by `made`), then let go of.
                            made.snapshot_lock = e.renamed;
                            return Err(io_error(&path, "create", e.error));
                        }
                    };
                    made.snapshot_lock = file.try_clone().ok();
                    (read_image(&bytes).map_err(snapshot_error)?, file)
                }
                Err(e) => return Err(io_error(&path, "read", e)),
            };
        };
        let Image {
            world,
            schedule,
            checkpoint,
        } = image;
        let db = Engine::new();
        {
            let mut state = db.state.write();
            state.world = world;
            state.world.set_log_tick(schedule.clock().tick);
            state.schedule = schedule;
        }
        let conn = Client::with_interrupt(&db, interrupt);
        db.setting_up.store(true, std::sync::atomic::Ordering::SeqCst);
        let set_up = setup.map_or(Ok(()), |setup| setup(Client::with_interrupt(&db, interrupt)));
        db.setting_up.store(false, std::sync::atomic::Ordering::SeqCst);
        set_up?;
        let read = journal::read(&journal_bytes, checkpoint).map_err(|d| {
            let path = journal_path.display().to_string();
            Error::File(match d.damaged {
                true => FileError::Journal {
                    path,
                    offset: d.offset,
                    message: d.message,
                },
                false => FileError::Invalid {
                    path,
                    message: d.message,
                },
            })
        })?;
        // How long the journal took to replay (`checkpoint_after`); `None`: no record.
        let mut replay_took = None;
        let writer = match read {
            journal::Read::Stale => {
                let w = journal::Writer::start(journal_file, checkpoint)
                    .map_err(|e| io_error(&journal_path, "start the journal of", e))?;
                w.sync().map_err(|e| io_error(&journal_path, "flush", e))?;
                w
            }
            journal::Read::Records {
                records,
                mut valid,
                mut last,
            } => {
                let replay = Replay;
                let replay_began = Instant::now();
                let count = records.len();
                let mut told = Instant::now();
                let total = valid - journal::HEADER;
                let tell = |replayed_bytes: u64, replayed_records: usize| OpenProgress {
                    journal_bytes: total,
                    replayed_bytes,
                    records: count as u64,
                    replayed_records: replayed_records as u64,
                    elapsed: started.elapsed(),
                };
                let stopped = |replayed_bytes: u64| {
                    Error::File(FileError::OpenInterrupted {
                        path: text.clone(),
                        replayed: replayed_bytes,
                        total,
                    })
                };
                // Each record is read over the last one, in its memory.
                let mut record = Record::kept(Vec::new());
                for (k, (offset, payload, before)) in records.into_iter().enumerate() {
                    let done = offset - journal::HEADER;
                    if interrupt.is_interrupted(turn) {
                        return Err(stopped(done));
                    }
                    // The clock is read only when progress is asked for: a record may
                    // take a microsecond.
                    if let Some(progress) = progress.as_deref_mut()
                        && told.elapsed() >= PROGRESS_EVERY
                    {
                        told = Instant::now();
                        if !progress(&tell(done, k)) {
                            return Err(stopped(done));
                        }
                    }
                    // Whole and matching its checksum, yet not a record: written so.
                    record
                        .decode_over(&journal_bytes[payload.clone()])
                        .map_err(|(at, message)| {
                            Error::File(FileError::Journal {
                                path: journal_path.display().to_string(),
                                offset: (payload.start + at) as u64,
                                message,
                            })
                        })?;
                    let replayed = if k + 1 == count && record.ahead {
                        // The last record, written ahead of its statement, may be one
                        // whose statement failed and whose process died before cutting
                        // it off: never acknowledged. It runs again, and is cut off if it
                        // fails again the way a statement fails.
                        replay.run_last(&conn, &record)
                    } else if record.ahead {
                        replay.run(&conn, &record).map(|()| true)
                    } else {
                        replay.run_committed(&conn, &record).map(|()| true)
                    };
                    // A record stopped by an interrupt failed for no fault of its own.
                    if interrupt.is_interrupted(turn) {
                        return Err(stopped(done));
                    }
                    match replayed {
                        Ok(true) => {}
                        Ok(false) => (valid, last) = (offset, before),
                        Err(failed) => {
                            return Err(Error::File(FileError::Replay {
                                path: journal_path.display().to_string(),
                                offset,
                                statement: failed.statement,
                                message: failed.why,
                            }));
                        }
                    }
                }
                if let Some(progress) = progress
                    && !progress(&tell(total, count))
                {
                    return Err(stopped(total));
                }
                // An interrupt up to here (one the last word of progress sent, say) stops
                // it still: nothing is changed before this.
                if interrupt.is_interrupted(turn) {
                    return Err(stopped(total));
                }
                replay_took = Some(replay_began.elapsed());
                journal::Writer::resume(journal_file, valid, last)
                    .map_err(|e| io_error(&journal_path, "cut the torn tail off", e))?
            }
        };
        // Opened: what killed checkpoints and SAVEs left beside the snapshot goes.
        files::remove_leftovers(&path);
        let handle = writer.handle().map_err(|e| io_error(&journal_path, "open", e))?;
        let snapshot_id = files::register(&snapshot, files::Role::Snapshot, &path);
        let journal_id = files::register(&handle, files::Role::Journal, &path);
        let file = FileDb {
            path,
            journal_path,
            journal: Mutex::new(Journal { writer, checkpoint }),
            flush: Mutex::new(Flush {
                handle,
                checkpoint,
                synced: 0,
                at: Instant::now(),
            }),
            snapshot: Mutex::new((snapshot, snapshot_id)),
            journal_id,
            abandoned: std::sync::OnceLock::new(),
            deferred: Mutex::new(None),
        };
        if db.file.set(file).is_err() {
            return Err(Error::Misuse {
                message: "the database's file was set twice".into(),
                at: Location::default(),
            });
        }
        // Its files are a database now, kept whatever follows (and whose closing lets
        // their locks go).
        made.keep();
        // The Rust systems the set-up registered that neither the snapshot nor the journal
        // had: new, made now (and journaled).
        let pending = std::mem::take(&mut db.pending_rust.lock().0);
        for (name, clauses, f) in pending {
            // One the journal left waiting (its making undone) takes it in place.
            let f = db.state.write().schedule.fill_rust_system(&name, f);
            if let Some(f) = f {
                conn.make_rust_system(&name, &clauses, Some(f), false)?;
            }
        }
        // A journal that took long to replay is checkpointed now, so that the next open
        // does not replay it again. One that fails (a full disk) leaves it to the next
        // checkpoint: the journal still holds everything.
        if replay_took.is_some_and(|took| took >= checkpoint_after) {
            let _ = conn.checkpoint_statement(Location::default());
        }
        drop(conn);
        Ok(db)
    }
}

/// The files an open made, removed if it fails (so that a refused open leaves the folder
/// as it was), while the journal's lock is still held; then the locks it took let go of
/// by hand, the snapshot's before the journal's (as a database's close does, and for its
/// reason: a process forked meanwhile holds copies of the locked descriptors until its
/// exec, so closing ours alone would leave the files locked for that while).
struct Made {
    journal: Option<PathBuf>,
    snapshot: Option<PathBuf>,
    lock: Option<File>,
    snapshot_lock: Option<File>,
}

impl Made {
    /// The open succeeded: its files stay, and so does the journal's lock (closing this
    /// handle on the locked file, where unlocking it would let the lock go).
    fn keep(&mut self) {
        self.journal = None;
        self.snapshot = None;
        self.lock = None;
        self.snapshot_lock = None;
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        for path in [self.snapshot.take(), self.journal.take()].into_iter().flatten() {
            let _ = fs::remove_file(path);
        }
        for lock in [self.snapshot_lock.take(), self.lock.take()]
            .into_iter()
            .flatten()
        {
            let _ = lock.unlock();
        }
    }
}

/// `path` with the links its last part names followed (as opening it would), so that a
/// database's files are found beside the file itself.
fn resolve_links(path: &Path) -> std::result::Result<PathBuf, String> {
    let mut path = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = fs::read_link(&path).map_err(|e| format!("cannot read the link: {e}"))?;
                path = match path.parent() {
                    Some(folder) if target.is_relative() => folder.join(target),
                    _ => target,
                };
            }
            // A new database is made where the name (or the link) leads.
            Ok(_) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(path),
            Err(e) => return Err(format!("cannot look at it: {e}")),
        }
    }
    Err("it is a chain of more than 40 links".into())
}
