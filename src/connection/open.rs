//! Opening a file database: `Database::open`, `open_with`, and `OpenOptions` (a set-up
//! that registers Rust systems, a progress callback, an interrupt handle), handed to the
//! engine's `open_files`.
//!
//! Invariants:
//! - The set-up runs before the journal does, on a connection of the database being
//!   opened; what it would write is refused (it registers Rust systems only).

use std::path::Path;
use std::time::Duration;

use super::{Connection, Database, InterruptHandle, OpenProgress};
use crate::engine::{CHECKPOINT_AFTER_REPLAY, Interrupt, Progress, Setup, open_files};
use crate::error::Result;

/// The set-up an open runs before the journal.
type UserSetup<'a> = Box<dyn FnOnce(&Connection) -> Result<()> + 'a>;

impl Database {
    /// Opens the database kept in the file `path`, creating it if absent. Beside it, in
    /// `path-journal`, is every change committed since the file was last written whole
    /// (a checkpoint); opening runs them again. docs/durability.md says what each
    /// `PRAGMA synchronous` keeps after a crash, and what opening does with damage.
    ///
    /// Refused, with the file and what is wrong: a path that is a folder, a snapshot that
    /// is damaged, cut short or from a newer ecsql, a journal damaged before its last
    /// record, a file another `Database` holds open.
    ///
    /// ```
    /// # let folder = std::env::temp_dir().join(format!("ecsql-doc-open-{}", std::process::id()));
    /// # std::fs::create_dir_all(&folder).unwrap();
    /// # let path = folder.join("game.ecsql");
    /// use ecsql::Database;
    /// {
    ///     let conn = Database::open(&path)?.connect();
    ///     conn.execute_batch("CREATE COMPONENT Health (hp INT); SPAWN Health(10);")?;
    /// }
    /// let conn = Database::open(&path)?.connect();
    /// assert_eq!(conn.query_row("SELECT hp FROM Health", (), |r| r.get::<_, i64>(0))?, 10);
    /// # drop(conn);
    /// # std::fs::remove_dir_all(&folder).unwrap();
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Database> {
        Database::open_with(path, |_| Ok(()))
    }

    /// `open`, with `setup` run on the database before its journal is: where a program
    /// registers its Rust systems (`Connection::create_system`), which the ticks in the
    /// journal ran and which a file cannot hold.
    pub fn open_with(
        path: impl AsRef<Path>,
        setup: impl FnOnce(&Connection) -> Result<()>,
    ) -> Result<Database> {
        Database::options().setup(setup).open(path)
    }

    /// How to open a file database, beyond its path: the set-up that registers Rust
    /// systems, and a way to follow (and stop) the run of a long journal.
    ///
    /// ```
    /// # let folder = std::env::temp_dir().join(format!("ecsql-doc-options-{}", std::process::id()));
    /// # std::fs::create_dir_all(&folder).unwrap();
    /// # let path = folder.join("game.ecsql");
    /// use ecsql::Database;
    /// Database::open(&path)?.connect().execute_batch(
    ///     "CREATE COMPONENT Hp (v INT); SPAWN Hp(1); UPDATE Hp SET v = Hp.v + 1;",
    /// )?;
    /// let mut seen = Vec::new();
    /// let db = Database::options()
    ///     .progress(|p| {
    ///         seen.push((p.replayed_bytes, p.journal_bytes));
    ///         true // false stops the open, changing nothing
    ///     })
    ///     .open(&path)?;
    /// // Called as the journal runs (every tenth of a second), and once when it has run.
    /// let (done, total) = *seen.last().unwrap();
    /// assert_eq!(done, total);
    /// # drop(db);
    /// # std::fs::remove_dir_all(&folder).unwrap();
    /// # Ok::<(), ecsql::Error>(())
    /// ```
    pub fn options<'a>() -> OpenOptions<'a> {
        OpenOptions {
            setup: None,
            progress: None,
            interrupt: std::sync::Arc::default(),
            checkpoint_after: CHECKPOINT_AFTER_REPLAY,
        }
    }
}

/// Options for [`Database::options`]: `setup`, `progress`, `interrupt_handle`, then
/// `open`.
pub struct OpenOptions<'a> {
    setup: Option<UserSetup<'a>>,
    progress: Option<Box<Progress<'a>>>,
    interrupt: std::sync::Arc<Interrupt>,
    checkpoint_after: Duration,
}

impl std::fmt::Debug for OpenOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("setup", &self.setup.is_some())
            .field("progress", &self.progress.is_some())
            .field("checkpoint_after", &self.checkpoint_after)
            .finish()
    }
}

impl<'a> OpenOptions<'a> {
    /// Runs `setup` on the database before its journal: where a program registers its
    /// Rust systems (as [`Database::open_with`]).
    pub fn setup(mut self, setup: impl FnOnce(&Connection) -> Result<()> + 'a) -> Self {
        self.setup = Some(Box::new(setup));
        self
    }

    /// Calls `progress` about every tenth of a second while the journal runs, and once
    /// when it has run; when it returns false, opening stops
    /// ([`FileError::OpenInterrupted`](crate::FileError::OpenInterrupted)) and the
    /// files are as they were.
    pub fn progress(mut self, progress: impl FnMut(&OpenProgress) -> bool + 'a) -> Self {
        self.progress = Some(Box::new(progress));
        self
    }

    /// A handle that stops the open from another thread (a Ctrl-C handler): the record
    /// running stops as an interrupted statement does, and opening fails with
    /// [`FileError::OpenInterrupted`](crate::FileError::OpenInterrupted), the files as
    /// they were.
    pub fn interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle::of(&self.interrupt)
    }

    /// Checkpoints at once when the journal took at least `after` to run (1 s unless
    /// told; `Duration::MAX`: never), so that the next open does not run it again.
    pub fn checkpoint_after_replay(mut self, after: Duration) -> Self {
        self.checkpoint_after = after;
        self
    }

    /// Opens the database kept in the file `path`, creating it if absent (as
    /// [`Database::open`]).
    pub fn open(self, path: impl AsRef<Path>) -> Result<Database> {
        let OpenOptions {
            setup,
            mut progress,
            interrupt,
            checkpoint_after,
        } = self;
        // The set-up is given a connection on the client the engine makes for it.
        let setup =
            setup.map(|setup| -> Setup<'_> { Box::new(move |client| setup(&Connection::on(client))) });
        open_files(
            path.as_ref(),
            setup,
            progress.as_deref_mut(),
            &interrupt,
            checkpoint_after,
        )
        .map(|engine| Database { engine })
    }
}
