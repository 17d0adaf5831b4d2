//! A file database: `Database::open(path)` keeps the database in two files, `path` (a
//! snapshot, as SAVE writes it, numbered by its checkpoint) and `path-journal` (every
//! change committed since, `journal.rs`). Opening reads the snapshot, runs the journal's
//! records again in order (each with the seed and cursors it ran with, so the world comes
//! out the same) and goes on appending to it. `CHECKPOINT`, and a journal grown past
//! `PRAGMA checkpoint_size`, write a new snapshot and empty the journal.
//!
//! Invariants:
//! - A change is journaled before it is acknowledged: a write statement's record is
//!   appended before it runs (and cut back off if it fails, so the journal holds only what
//!   committed); a transaction's statements go in one record at COMMIT, before the world's
//!   transaction ends (a failed append rolls it back). Records are appended under the
//!   database's write lock, so their order is the order the changes were made in.
//! - `synchronous`: `full` flushes the journal to the disk before a commit returns (one
//!   flush serves every commit written before it began: group commit); `normal` flushes at
//!   checkpoints, when a commit finds the last flush a second old, and on close; `off`
//!   leaves it to the system (and flushes on close).
//! - Opening runs every record again; the last one, when written ahead of its statement,
//!   runs as a transaction and is cut off if it fails as statements fail (a statement
//!   that failed and whose process died before cutting its record). Any other failure
//!   (a record before the last, a transaction's, a Rust system failing or missing)
//!   refuses the database.
//! - Rust systems: the snapshot and the journal keep where each stands; the program gives
//!   the closures (`open_with`'s set-up), and one given before the journal runs is made
//!   where the journal made it (`Engine::pending_rust`).
//! - A checkpoint writes the snapshot numbered one past the journal's whole (temporary
//!   file, flush, rename), and only then starts the journal over under that number. A crash
//!   between the two leaves a journal whose number is the old one: it is read as stale
//!   (everything in it is in the snapshot) and started over.
//! - What cannot be journaled as statements (the columnar door's writes, a LOAD, a
//!   tracking start whose record failed) sets `State::unjournaled`, and the next moment
//!   outside a transaction writes a checkpoint.
//! - The snapshot and the journal carry an exclusive lock for as long as the database is
//!   open (`files.rs`), and a database is the file its name reaches through links: a
//!   second `open` of it by any name, from this process or another, is refused, and so
//!   is any other write of ecsql's to its files. A snapshot with two names (hard links)
//!   is refused at open. An open that fails removes the files it made.

mod open;
mod replay;

pub use open::OpenProgress;
pub(crate) use open::{Progress, Setup, open_files};

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::journal::{self, Entry, Record, Step};
use super::save::image_bytes;
use super::{Client, State};
use crate::error::{Error, FileError, Result};
use crate::exec::{ExecError, Outcome};
use crate::files;
use crate::location::Location;
use crate::plan::Tracking;

/// `PRAGMA synchronous`: when the journal is flushed to the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synchronous {
    /// Never by ecsql: the operating system writes it when it will. A crash of the
    /// process loses nothing; a crash of the machine may lose recent commits.
    Off = 0,
    /// At checkpoints, when a commit finds the last flush a second old, and when the
    /// database closes: a crash of the machine loses the commits not flushed yet (about
    /// the last second's while commits keep coming).
    Normal = 1,
    /// Before each commit returns: a commit acknowledged is on the disk.
    Full = 2,
}

impl Synchronous {
    pub(super) fn from_u8(v: u8) -> Synchronous {
        match v {
            0 => Synchronous::Off,
            1 => Synchronous::Normal,
            _ => Synchronous::Full,
        }
    }

    /// `off`, `normal`, `full` (or 0, 1, 2, as in SQLite).
    pub(super) fn parse(text: &str) -> Option<Synchronous> {
        match text.trim_matches('\'').to_ascii_lowercase().as_str() {
            "off" | "0" => Some(Synchronous::Off),
            "normal" | "1" => Some(Synchronous::Normal),
            "full" | "2" => Some(Synchronous::Full),
            _ => None,
        }
    }
}

/// The journal grows to this before it is checkpointed on its own, by default.
pub const DEFAULT_CHECKPOINT_SIZE: u64 = 64 << 20;

/// How long `normal` lets written commits wait for a flush.
const NORMAL_FLUSH: Duration = Duration::from_secs(1);

/// An open whose journal took this long to replay checkpoints at once, unless told
/// otherwise (`OpenOptions::checkpoint_after_replay`).
pub(crate) const CHECKPOINT_AFTER_REPLAY: Duration = Duration::from_secs(1);

/// The files of a file database, held open and locked.
#[derive(Debug)]
pub(super) struct FileDb {
    path: PathBuf,
    journal_path: PathBuf,
    journal: Mutex<Journal>,
    flush: Mutex<Flush>,
    /// The snapshot, open and locked (a checkpoint's new one is locked before it takes
    /// the name), with its identity as this process's open files record it.
    snapshot: Mutex<(File, Option<files::Registered>)>,
    /// The journal's registration with this process's open files.
    journal_id: Option<files::Registered>,
    /// Why the database takes no more statements (`FileError::Abandoned`), once memory
    /// holds what the file may never have.
    abandoned: std::sync::OnceLock<String>,
    /// The journal's length when a checkpoint last failed without touching the files: the
    /// next one on its own waits until the journal has grown past it by a quarter of
    /// `checkpoint_size` (1 MiB at least).
    deferred: Mutex<Option<u64>>,
}

#[derive(Debug)]
struct Journal {
    writer: journal::Writer,
    /// The checkpoint the journal follows.
    checkpoint: u64,
}

/// What is on the disk: the journal through `synced` in checkpoint `checkpoint`'s journal.
#[derive(Debug)]
struct Flush {
    handle: File,
    checkpoint: u64,
    synced: u64,
    at: Instant,
}

/// A record written: in which checkpoint's journal, and where it ends.
#[derive(Clone, Copy, Debug)]
pub(super) struct Written {
    checkpoint: u64,
    end: u64,
}

/// A statement's record, written ahead of it (or, inside a transaction, kept for COMMIT).
#[derive(Debug)]
pub(super) enum Ahead {
    /// Nothing to journal: an in-memory database, or a replay.
    None,
    /// Inside BEGIN: the entry goes into the transaction's record if the statement runs.
    InTransaction(Step),
    /// Appended; cut back to `mark` if the statement fails.
    Appended(journal::Mark, Written),
}

impl FileDb {
    fn path_text(&self) -> String {
        self.path.display().to_string()
    }

    fn journal_error(&self, action: &'static str, e: &io::Error) -> Error {
        Error::File(FileError::Io {
            path: self.journal_path.display().to_string(),
            action,
            message: e.to_string(),
        })
    }

    /// Appends `record`.
    pub(super) fn append(&self, record: &Record) -> Result<(journal::Mark, Written)> {
        let mut j = self.journal.lock();
        let mark = j.writer.mark();
        let end = j
            .writer
            .append(record)
            .map_err(|e| self.journal_error("write the journal", &e))?;
        Ok((
            mark,
            Written {
                checkpoint: j.checkpoint,
                end,
            },
        ))
    }

    /// Flushes the journal through `written` (or all of it), unless a flush since did.
    fn flush_to(&self, written: Option<Written>) -> Result<()> {
        let mut f = self.flush.lock();
        // Read under the flush lock: a cut after this sees what this flush will have
        // flushed, and flushes its cut.
        let (checkpoint, end) = {
            let j = self.journal.lock();
            (j.checkpoint, j.writer.len())
        };
        if let Some(w) = written
            && (w.checkpoint != f.checkpoint || f.synced >= w.end)
        {
            // In a checkpoint's snapshot since, or flushed by another commit's flush.
            return Ok(());
        }
        if let Err(e) = f.handle.sync_data() {
            // What the system failed to write may be gone from its cache: nothing after it
            // can be trusted to reach the disk in order. A checkpoint starts over.
            drop(f);
            self.journal.lock().writer.set_broken(format!(
                "a flush of the journal failed ({e}); a checkpoint starts it over"
            ));
            return Err(self.journal_error("flush the journal", &e));
        }
        if checkpoint == f.checkpoint {
            f.synced = f.synced.max(end);
        }
        f.at = Instant::now();
        Ok(())
    }

    /// Cuts the records after `mark` off (a statement written ahead failed). When a flush
    /// since took them to the disk, the cut is flushed too: else a later, shorter record
    /// could be taken for flushed while the disk still held the one cut off.
    fn cut(&self, mark: journal::Mark) {
        let mut j = self.journal.lock();
        j.writer.cut_to(mark);
        let checkpoint = j.checkpoint;
        drop(j);
        let mut f = self.flush.lock();
        if f.checkpoint == checkpoint && f.synced > mark.len() {
            match f.handle.sync_data() {
                Ok(()) => f.synced = mark.len(),
                Err(e) => {
                    drop(f);
                    self.journal
                        .lock()
                        .writer
                        .set_broken(format!("a record cut off could not be flushed ({e})"));
                }
            }
        }
    }

    /// Whether the journal takes no more records until a checkpoint starts it over.
    pub(super) fn is_broken(&self) -> bool {
        self.journal.lock().writer.is_broken()
    }

    /// Writes `state` as the next checkpoint's snapshot and starts the journal over. A
    /// failure may leave the new snapshot in place (its rename done, its folder not
    /// flushed) beside the old journal, which then reads as stale: the journal takes no
    /// more records and the state counts as unjournaled, so the next write checkpoints
    /// again (under the same number) before it runs.
    fn checkpoint(&self, state: &mut State) -> Result<()> {
        self.refuse_if_abandoned()?;
        if state.world.in_transaction() {
            return Err(Error::Busy {
                message: "a checkpoint waits for the open transaction to end: COMMIT or ROLLBACK it".into(),
                at: Location::default(),
            });
        }
        let mut j = self.journal.lock();
        let next = j.checkpoint + 1;
        let bytes = image_bytes(state, next);
        let failed = |j: &mut Journal, state: &mut State, e: Error| {
            j.writer.set_broken(format!(
                "the last checkpoint failed ({e}); the next one starts the journal over"
            ));
            state.unjournaled = true;
            e
        };
        match files::replace_locked(&self.path, |out| out.write_all(&bytes)) {
            Ok(file) => self.took_snapshot(file),
            Err(files::ReplaceError { error, renamed: None }) => {
                // The snapshot and the journal are as they were (a disk too full for a
                // whole snapshot, say): the journal goes on, and a checkpoint is tried
                // again once it has grown further. What the journal cannot hold (a
                // LOAD's, the columnar door's) waits for one in memory.
                *self.deferred.lock() = Some(j.writer.len());
                let then = if state.unjournaled {
                    "the journal is as it was, but the changes it cannot hold (a LOAD's, the columnar door's) are in memory only, and every write waits for a checkpoint that fits"
                } else {
                    "nothing is lost: the journal goes on keeping every commit, and the checkpoint is tried again as it grows"
                };
                return Err(Error::File(FileError::Io {
                    path: self.path_text(),
                    action: "write the checkpoint's snapshot to",
                    message: format!("{error}; {then}"),
                }));
            }
            Err(files::ReplaceError {
                error,
                renamed: Some(file),
            }) => {
                // The new snapshot took the name (only the folder's flush failed): it
                // is locked and known as the database's, and the journal, which no
                // longer follows it, takes no more records until a checkpoint.
                self.took_snapshot(file);
                let e = Error::File(FileError::Io {
                    path: self.path_text(),
                    action: "write the checkpoint's snapshot to",
                    message: error.to_string(),
                });
                return Err(failed(&mut j, state, e));
            }
        }
        if let Err(e) = j.writer.restart(next).and_then(|()| j.writer.sync()) {
            let e = self.journal_error("start the journal over", &e);
            return Err(failed(&mut j, state, e));
        }
        j.checkpoint = next;
        drop(j);
        *self.deferred.lock() = None;
        let mut f = self.flush.lock();
        f.checkpoint = next;
        f.synced = journal::HEADER;
        f.at = Instant::now();
        state.unjournaled = false;
        Ok(())
    }
}

impl Drop for FileDb {
    /// Closing flushes what `normal` and `off` left to the system, then lets the files go.
    /// The locks are released by hand: a child process forked meanwhile (by any thread of
    /// the program, e.g. `std::process::Command`) shares the locked descriptors until it
    /// execs, and closing ours alone would leave the files locked for that while.
    fn drop(&mut self) {
        // Unknown as the database's first; then the locks go in the reverse order of
        // their taking (an open takes the journal's, then the snapshot's), so that
        // another open never finds the journal free and the snapshot held.
        let snapshot = self.snapshot.lock();
        files::unregister(snapshot.1);
        files::unregister(self.journal_id);
        let f = self.flush.lock();
        let _ = f.handle.sync_data();
        let _ = snapshot.0.unlock();
        let _ = f.handle.unlock();
    }
}

impl FileDb {
    /// Whether `path` names this database's snapshot or journal (by the file it reaches,
    /// whatever the name).
    pub(super) fn owns(&self, path: &Path) -> bool {
        let Some(id) = File::open(path).ok().and_then(|f| files::Identity::of(&f)) else {
            return false;
        };
        files::registered_identity(self.snapshot.lock().1) == Some(id)
            || files::registered_identity(self.journal_id) == Some(id)
    }

    /// Takes no more statements, journal records or checkpoints: memory holds what the
    /// file may never have (`why`).
    pub(super) fn abandon(&self, why: &str) {
        // The first reason stays.
        let _ = self.abandoned.set(why.to_owned());
        self.journal
            .lock()
            .writer
            .set_broken(format!("the database was abandoned: {why}"));
    }

    /// The error of a database abandoned, if it was.
    pub(super) fn refuse_if_abandoned(&self) -> Result<()> {
        match self.abandoned.get() {
            None => Ok(()),
            Some(why) => Err(Error::File(FileError::Abandoned {
                path: self.path_text(),
                why: why.clone(),
            })),
        }
    }

    /// A checkpoint's snapshot took the name: its lock and identity replace the old one's.
    fn took_snapshot(&self, file: File) {
        let id = files::register(&file, files::Role::Snapshot, &self.path);
        let mut held = self.snapshot.lock();
        let (old, old_id) = std::mem::replace(&mut *held, (file, id));
        let _ = old.unlock();
        files::unregister(old_id);
    }
}

impl Client {
    #[inline]
    pub(super) fn file(&self) -> Option<&FileDb> {
        self.engine.file.get()
    }

    /// Journals a write about to run (see `Ahead`); `entry` makes its record.
    pub(super) fn journal_ahead(
        &self,
        state: &mut State,
        replay: bool,
        entry: impl FnOnce() -> Entry,
    ) -> Result<Ahead> {
        self.journal_step(state, replay, || Step::Statement(entry()))
    }

    /// `journal_ahead` of any step.
    pub(super) fn journal_step(
        &self,
        state: &mut State,
        replay: bool,
        step: impl FnOnce() -> Step,
    ) -> Result<Ahead> {
        let Some(file) = self.file() else {
            return Ok(Ahead::None);
        };
        if replay {
            return Ok(Ahead::None);
        }
        if (state.unjournaled || file.is_broken()) && !state.world.in_transaction() {
            // The world holds what the journal does not (or the journal cannot be
            // trusted): checkpoint before going on.
            file.checkpoint(state)?;
        }
        if state.in_begin {
            return Ok(Ahead::InTransaction(step()));
        }
        if state.world.in_transaction() {
            // A transaction begun on the world through with_world_mut: what it keeps is
            // known only when it ends, so the next checkpoint keeps it.
            state.unjournaled = true;
            return Ok(Ahead::None);
        }
        let (mark, written) = file.append(&Record::ahead(step()))?;
        Ok(Ahead::Appended(mark, written))
    }

    /// The write journaled ahead ran (`ok`) or failed: keeps its entry for COMMIT, or cuts
    /// its record back off. Gives the record to flush.
    pub(super) fn journal_settle(&self, state: &mut State, ahead: Ahead, ok: bool) -> Option<Written> {
        match ahead {
            Ahead::None => None,
            Ahead::InTransaction(step) => {
                if ok {
                    state.tx_steps.push(step);
                }
                None
            }
            Ahead::Appended(mark, written) => {
                if ok {
                    Some(written)
                } else {
                    if let Some(file) = self.file() {
                        file.cut(mark);
                    }
                    None
                }
            }
        }
    }

    /// A run turned tracking on: journals that (later writes mark rows from then on).
    /// Inside a transaction it goes in the transaction's record, in its place, and stays
    /// there even if the transaction is rolled back.
    pub(super) fn journal_tracking(&self, state: &mut State, replay: bool, tracking: Tracking, tick: u64) {
        let Some(file) = self.file() else {
            return;
        };
        if replay {
            return;
        }
        if state.in_begin {
            state.tx_steps.push(Step::Track(tracking, tick));
        } else if file
            .append(&Record::kept(vec![Step::Track(tracking, tick)]))
            .is_err()
        {
            state.unjournaled = true;
        }
    }

    /// COMMIT (or ROLLBACK, `undone`): the transaction's statements (or only the tracking
    /// it turned on) as one record, before the world's transaction ends. A failed append
    /// is the caller's to roll back.
    pub(super) fn journal_end(&self, state: &mut State, undone: bool) -> Result<Option<Written>> {
        let mut steps = std::mem::take(&mut state.tx_steps);
        if undone {
            steps.retain(|s| matches!(s, Step::Track(..)));
        }
        let Some(file) = self.file() else {
            return Ok(None);
        };
        if state.unjournaled {
            // The transaction holds what no record can (the columnar door's writes): the
            // checkpoint after it keeps it whole, and a record on top of the journal
            // would replay on a world without them.
            return Ok(None);
        }
        if steps.is_empty() {
            return Ok(None);
        }
        let tracks = steps.iter().any(|s| matches!(s, Step::Track(..)));
        match file.append(&Record::kept(steps)) {
            Ok((_, written)) => Ok(Some(written)),
            Err(e) => {
                // Tracking turned on stays on, whatever the transaction became.
                if tracks {
                    state.unjournaled = true;
                }
                Err(e)
            }
        }
    }

    /// After a commit, with no lock held: flushes as `synchronous` says (a failed flush
    /// is the commit's error: it ran, but may not be on the disk), then checkpoints if one
    /// is due and the database is free at once. A checkpoint that cannot run now waits
    /// for the next write, which makes it before it runs.
    pub(super) fn make_durable(&self, written: Option<Written>, _at: Location) -> Result<()> {
        let Some(file) = self.file() else {
            return Ok(());
        };
        match self.synchronous() {
            Synchronous::Full if written.is_some() => file.flush_to(written)?,
            Synchronous::Normal if written.is_some() && file.flush.lock().at.elapsed() >= NORMAL_FLUSH => {
                file.flush_to(None)?
            }
            _ => {}
        }
        if !self.is_autocommit() || !self.owner_allows() {
            return Ok(());
        }
        if (self.checkpoint_due(file) || written.is_none())
            && let Some(mut state) = self.engine.state.try_write()
            // Not while a write beside others holds fields: what it wrote is not
            // journaled yet, so it must not be in a checkpoint.
            && !self.engine.fields.any_fields_held()
            && (state.unjournaled || self.checkpoint_due(file))
            && !state.world.in_transaction()
            && self.owner_allows()
        {
            let _ = file.checkpoint(&mut state);
        }
        Ok(())
    }

    /// Between the ticks of a file database's `TICK n` (under the write lock, outside
    /// any transaction): the journal flushed when the last flush is a second old (`full`
    /// and `normal`), and checkpointed when due, as after a commit.
    pub(super) fn between_ticks(&self, state: &mut State, written: Option<Written>) -> Result<()> {
        let Some(file) = self.file() else {
            return Ok(());
        };
        if written.is_some()
            && self.synchronous() != Synchronous::Off
            && file.flush.lock().at.elapsed() >= NORMAL_FLUSH
        {
            file.flush_to(None)?;
        }
        if self.checkpoint_due(file) {
            // As after a commit: a checkpoint that fails waits (or stops the journal, and
            // the next tick's record says so).
            let _ = file.checkpoint(state);
        }
        Ok(())
    }

    /// Whether the journal has grown past `checkpoint_size` (and past where the last
    /// checkpoint that failed left it waiting), or cannot be trusted.
    fn checkpoint_due(&self, file: &FileDb) -> bool {
        let size = self.checkpoint_size();
        let len = file.journal.lock().writer.len();
        let retry = file
            .deferred
            .lock()
            .is_none_or(|failed| len >= failed.saturating_add(size.max(1 << 20) / 4));
        (len > size && retry) || file.is_broken()
    }

    /// BEGIN, or a TICK journaled tick by tick: a journal that holds less than the world
    /// (or cannot be trusted) is checkpointed first, since a record cannot go on top of
    /// it.
    pub(super) fn checkpoint_if_behind(&self, state: &mut State) -> Result<()> {
        if let Some(file) = self.file()
            && (state.unjournaled || file.is_broken())
            && !state.world.in_transaction()
        {
            file.checkpoint(state)?;
        }
        Ok(())
    }

    /// After the columnar door or a LOAD: the world holds what the journal does not, and a
    /// checkpoint keeps it, waiting for the database as a write does. Its failure is the
    /// caller's error (the change is in memory, and the next write checkpoints first).
    pub(super) fn keep_unjournaled(&self, at: Location) -> Result<()> {
        let Some(file) = self.file() else {
            return Ok(());
        };
        if !self.is_autocommit() {
            // COMMIT's checkpoint keeps it.
            return Ok(());
        }
        let mut state = self.write_state(at)?;
        if state.unjournaled && !state.world.in_transaction() {
            file.checkpoint(&mut state)?;
        }
        Ok(())
    }

    /// Refuses what `open_with`'s set-up must not do: it runs before the journal, and what
    /// it wrote would be kept nowhere (and run again at every open).
    pub(super) fn refuse_in_setup(&self, what: &str, at: Location) -> Result<()> {
        if self.engine.setting_up.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Error::Misuse {
                message: format!(
                    "{what} in Database::open_with's set-up: the set-up registers Rust systems (create_system); what changes the database runs once it is open"
                ),
                at,
            });
        }
        Ok(())
    }

    /// `CHECKPOINT`.
    pub(super) fn checkpoint_statement(&self, at: Location) -> Result<Outcome> {
        let Some(file) = self.file() else {
            let message = "CHECKPOINT writes a file database's snapshot; this database lives in memory \
                           (SAVE TO 'file' writes it to a file)";
            return Err(ExecError::transaction(at, message).into());
        };
        if !self.is_autocommit() {
            return Err(ExecError::transaction(
                at,
                "CHECKPOINT cannot run inside a transaction (COMMIT or ROLLBACK first)",
            )
            .into());
        }
        let mut state = self.write_state(at)?;
        file.checkpoint(&mut state).map_err(|mut e| {
            // The statement that asked is the place of a checkpoint's wait.
            if let Error::Busy { at: place, .. } = &mut e {
                *place = at;
            }
            e
        })?;
        Ok(Outcome {
            affected: state.world.len(),
            ..Outcome::default()
        })
    }

    /// After LOAD or the columnar door: the world holds what the journal does not.
    pub(super) fn unjournaled(&self, state: &mut State) {
        if self.file().is_some() {
            state.unjournaled = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;
    use std::sync::Arc;

    use super::*;

    /// A process forked while the database is open holds a copy of the locked journal
    /// descriptor until it execs; closing the database must free the file all the same.
    #[test]
    fn closing_frees_the_lock_that_a_forked_child_still_shares() {
        let folder = std::env::temp_dir().join(format!("ecsql-unit-lock-{}", std::process::id()));
        let _ = fs::remove_dir_all(&folder);
        fs::create_dir_all(&folder).expect("made");
        let path = folder.join("w.ecsql");
        let open = |path: &Path| open_files(path, None, None, &Arc::default(), CHECKPOINT_AFTER_REPLAY);
        let db = open(&path).expect("opened");
        // What a child gets: the same open file description, by another descriptor.
        let childs_copy = db
            .file
            .get()
            .expect("a file database")
            .flush
            .lock()
            .handle
            .try_clone()
            .expect("dup");
        drop(db);
        let again = open(&path);
        drop(childs_copy);
        let _ = fs::remove_dir_all(&folder);
        assert!(again.is_ok(), "{:?}", again.err());
    }
}
