//! `SAVE TO 'file'` and `LOAD FROM 'file'`: the database as a snapshot file (a save slot),
//! and back. The file is the storage's snapshot (`World::snapshot_with`) with, in its own
//! section, what the layers above keep: the clock, the indexes' definitions (indexes are
//! rebuilt from them on load, never stored) and the phases and SQL systems, as the
//! statements that make them (`Schedule::schema`) with where each stood in the event
//! types. Rust systems are the program's: a LOAD keeps the running database's.
//!
//! Invariants:
//! - SAVE writes the file whole or not at all: into a temporary file beside it, flushed to
//!   disk, then renamed over it (`write_atomically`).
//! - LOAD reads and checks the whole file and builds the new world and its indexes aside;
//!   only then does it replace the database's world, under the write lock, in one step. A
//!   file that is missing, damaged, cut short, from a newer version or not a snapshot
//!   changes nothing and is refused with its name and the byte offset.

use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::Path;

use super::{Connection, Result, State};
use crate::exec::{Clock, EventCursors, ExecError, Outcome};
use crate::index::{Indexes, create_index};
use crate::location::Location;
use crate::parse::{self, FileName, StatementKind};
use crate::plan::ParamValues;
use crate::schedule::Schedule;
use crate::storage::{
    BytesIn, BytesOut, ComponentId, EventId, FieldId, ReadBytes, SnapshotError, Value, World,
};

/// The version of the section the layers above write into a snapshot.
const ABOVE_VERSION: u8 = 2;

impl Connection {
    /// `SAVE TO 'path'`.
    pub(super) fn save(&self, path: &str, at: Location) -> Result<Outcome> {
        if !self.is_autocommit() {
            return Err(ExecError::Transaction {
                message: "SAVE writes the database as committed and cannot run inside a transaction (COMMIT or ROLLBACK first)".into(),
                at,
            }
            .into());
        }
        if self.file().is_some_and(|f| f.owns(Path::new(path))) {
            return Err(file_error(
                path,
                "it is this database's own file: CHECKPOINT writes it (with its journal kept in step)".into(),
                at,
            ));
        }
        let (bytes, entities) = {
            let state = self.read_state(at)?;
            if state.world.in_transaction() {
                return Err(ExecError::Transaction {
                    message:
                        "SAVE cannot run while a transaction is open (another connection's, or one begun on the world through with_world_mut): it would write what may yet be rolled back"
                            .into(),
                    at,
                }
                .into());
            }
            (image_bytes(&state, 0), state.world.len())
        };
        write_atomically(Path::new(path), &bytes).map_err(|e| {
            let message = match Path::new(path).parent() {
                Some(folder) if e.kind() == io::ErrorKind::NotFound && !folder.as_os_str().is_empty() => {
                    format!("cannot write it: the folder {} does not exist", folder.display())
                }
                _ => format!("cannot write it: {e}"),
            };
            file_error(path, message, at)
        })?;
        Ok(Outcome {
            affected: entities,
            ..Outcome::default()
        })
    }

    /// `LOAD FROM 'path'`.
    pub(super) fn load(&self, path: &str, at: Location) -> Result<Outcome> {
        if !self.is_autocommit() {
            return Err(ExecError::Transaction {
                message: "LOAD replaces the whole database and cannot run inside a transaction (COMMIT or ROLLBACK first)".into(),
                at,
            }
            .into());
        }
        let bytes = fs::read(path).map_err(|e| file_error(path, format!("cannot read it: {e}"), at))?;
        let Image {
            mut world,
            mut schedule,
            ..
        } = read_image(&bytes).map_err(|m| file_error(path, m, at))?;
        let clock = schedule.clock();
        let entities = world.len();
        let mut state = self.write_state(at)?;
        if state.world.in_transaction() {
            return Err(ExecError::Transaction {
                message: "LOAD cannot run while a transaction is open (another connection's, or one begun on the world through with_world_mut)"
                    .into(),
                at,
            }
            .into());
        }
        schedule
            .adopt_rust_systems(&state.schedule, at)
            .map_err(|e| file_error(path, e.to_string(), at))?;
        world.set_log_tick(clock.tick);
        world.tick_past(state.world.tick());
        state.world = world;
        // The loaded systems start as readers on their first run; plans and table caches
        // bound to the old world must not be trusted, nor what prepared statements saw.
        state.schedule = schedule;
        state.restores += 1;
        state.loads += 1;
        // A file database keeps the loaded world by a checkpoint.
        self.unjournaled(&mut state);
        drop(state);
        self.keep_unjournaled(at)?;
        Ok(Outcome {
            affected: entities,
            ..Outcome::default()
        })
    }
}

/// The file a SAVE or LOAD names: its text, or its parameter's TEXT value.
pub(super) fn file_name(name: &FileName, params: &ParamValues, at: Location) -> Result<String> {
    match name {
        FileName::Text(path) => Ok(path.clone()),
        FileName::Param(p) => match params.get(p) {
            Some(Value::Text(path)) if !path.is_empty() => Ok(path.clone()),
            Some(other) => Err(crate::plan::PlanError::Invalid {
                message: format!("{p} names the file: a non-empty TEXT, not {other}"),
                at,
            }
            .into()),
            None => Err(crate::plan::PlanError::MissingParameter {
                name: p.to_string(),
                at,
            }
            .into()),
        },
    }
}

fn file_error(path: &str, message: String, at: Location) -> crate::error::Error {
    ExecError::File {
        path: path.to_owned(),
        message,
        at,
    }
    .into()
}

/// The schedule the statements `text` make (phases, SQL systems, which are disabled), its
/// systems bound against `world`, whose removal logs those that read them start.
fn saved_schedule(text: &str, world: &mut World) -> std::result::Result<Schedule, String> {
    let statements = parse::parse(text).map_err(|e| format!("its systems do not read back: {e}"))?;
    let mut schedule = Schedule::default();
    for s in &statements {
        let made = match &s.kind {
            StatementKind::CreatePhase { name, before, anchor } => {
                schedule.create_phase(name, *before, anchor)
            }
            StatementKind::CreateSystem(spec) => schedule.create_system(spec, world, 0).and_then(|logs| {
                for c in logs {
                    world
                        .track_removals(c)
                        .map_err(|e| crate::schedule::ScheduleError::invalid(s.at, e.to_string()))?;
                }
                Ok(())
            }),
            StatementKind::AlterSystem { name, enable } => schedule.set_enabled(name, *enable),
            other => return Err(format!("its systems hold a {} statement", other.verb())),
        };
        made.map_err(|e| format!("its systems do not fit its world: {e}"))?;
    }
    Ok(schedule)
}

/// A snapshot file read back: the world with its indexes built, and the schedule (its SQL
/// systems, the clock, what each system has seen).
pub(super) struct Image {
    pub world: World,
    pub schedule: Schedule,
    /// The number of the file database's checkpoint that wrote it (0 for a SAVE).
    pub checkpoint: u64,
}

/// The database `state` holds as a snapshot file's bytes, numbered `checkpoint`.
pub(super) fn image_bytes(state: &State, checkpoint: u64) -> Vec<u8> {
    let systems = state.schedule.schema(&state.world).join("\n");
    let cursors = state.schedule.reader_cursors();
    let above = above_bytes(
        checkpoint,
        state.schedule.clock(),
        &state.world,
        &systems,
        &cursors,
    );
    state.world.snapshot_with(&above)
}

/// A snapshot file's bytes read back; the error says what is wrong and where.
pub(super) fn read_image(bytes: &[u8]) -> std::result::Result<Image, String> {
    let (mut world, above) = World::from_snapshot_with(bytes).map_err(|e| {
        // A script or a dump given to LOAD: say what reads it.
        let hint = match (&e, std::str::from_utf8(bytes)) {
            (SnapshotError::NotASnapshot, Ok(_)) => " (it is text: a script or a .dump is run with .read)",
            _ => "",
        };
        format!("{e}{hint}")
    })?;
    let (checkpoint, clock, indexes, systems, cursors) = read_above(&above)?;
    for (name, spatial, fields) in indexes {
        create_index(&mut world, Some(&name), spatial, &fields)
            .map_err(|e| format!("its index {name} does not fit its components: {e}"))?;
    }
    let mut schedule = saved_schedule(&systems, &mut world)?;
    schedule.set_clock(clock);
    // Each system reads on from where it stood in the events and changes.
    for (name, seen, runs) in cursors {
        schedule.set_reader_cursors(&name, seen, runs);
    }
    Ok(Image {
        world,
        schedule,
        checkpoint,
    })
}

/// The checkpoint's number, the clock, the indexes' definitions, the schedule's
/// statements and what its systems have seen, as bytes.
fn above_bytes(checkpoint: u64, clock: Clock, world: &World, systems: &str, cursors: &Cursors) -> Vec<u8> {
    let mut out = BytesOut::new();
    out.u8(ABOVE_VERSION);
    out.u64(checkpoint);
    out.u64(clock.tick);
    out.u64(clock.dt.to_bits());
    let indexes: Vec<_> = Indexes::of(world).iter().collect();
    out.len(indexes.len());
    for index in indexes {
        out.str(index.name());
        out.u8(u8::from(index.kind() == crate::index::IndexKind::Spatial));
        out.len(index.fields().len());
        for f in index.fields() {
            out.u32(f.component().to_raw());
            out.u32(f.index() as u32);
        }
    }
    out.str(systems);
    out.len(cursors.len());
    for (name, seen, runs) in cursors {
        out.str(name);
        out.u64(*runs);
        let events: Vec<_> = seen.iter().collect();
        out.len(events.len());
        for (event, seq) in events {
            out.u32(event.to_raw());
            out.u64(seq);
        }
        match seen.changes_since() {
            None => out.u8(0),
            Some(tick) => {
                out.u8(1);
                out.u64(tick);
            }
        }
    }
    out.into_bytes()
}

/// An index as kept: its name, whether it is spatial, its fields.
type IndexDef = (String, bool, Vec<FieldId>);

/// What each system has seen, and how many times it ran, by name.
type Cursors = Vec<(String, EventCursors, u64)>;

/// `above_bytes` read back (a snapshot saved without them has the default clock, no index
/// and no system).
#[allow(clippy::type_complexity)]
fn read_above(bytes: &[u8]) -> std::result::Result<(u64, Clock, Vec<IndexDef>, String, Cursors), String> {
    if bytes.is_empty() {
        return Ok((0, Clock::default(), Vec::new(), String::new(), Vec::new()));
    }
    let mut input = BytesIn::new(bytes);
    let cut = |e: SnapshotError| format!("its database section: {e}");
    let text = |input: &mut BytesIn<'_>, what: &'static str| -> std::result::Result<String, String> {
        let len =
            usize::try_from(input.u64(what).map_err(cut)?).map_err(|_| format!("{what} is too long"))?;
        let bytes = input.take(len, what).map_err(cut)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| format!("{what} is not UTF-8"))
    };
    if input.u8("its version").map_err(cut)? != ABOVE_VERSION {
        return Err("its database section is of a version this build does not read".into());
    }
    let checkpoint = input.u64("the checkpoint's number").map_err(cut)?;
    let tick = input.u64("the clock").map_err(cut)?;
    let dt = f64::from_bits(input.u64("the clock").map_err(cut)?);
    if i64::try_from(tick).is_err() || !dt.is_finite() || dt < 0.0 {
        return Err(format!(
            "its clock (tick {tick}, dt {dt}) is not one a database can have"
        ));
    }
    let mut indexes = Vec::new();
    for _ in 0..input.u64("the indexes").map_err(cut)? {
        let name = text(&mut input, "an index's name")?;
        let spatial = input.u8("an index").map_err(cut)? != 0;
        let mut fields = Vec::new();
        for _ in 0..input.u64("an index's fields").map_err(cut)? {
            let component = ComponentId::from_raw(input.u32("an index's field").map_err(cut)?);
            let index = u16::try_from(input.u32("an index's field").map_err(cut)?)
                .map_err(|_| "an index names a field past any component's".to_owned())?;
            fields.push(FieldId::new(component, index));
        }
        indexes.push((name, spatial, fields));
    }
    let systems = text(&mut input, "the systems' text")?;
    let mut cursors = Vec::new();
    for _ in 0..input.u64("the systems' cursors").map_err(cut)? {
        let name = text(&mut input, "a system's name")?;
        let runs = input.u64("a system's runs").map_err(cut)?;
        let mut seen = Vec::new();
        for _ in 0..input.u64("a system's cursors").map_err(cut)? {
            let event = EventId::from_raw(input.u32("a cursor").map_err(cut)?);
            seen.push((event, input.u64("a cursor").map_err(cut)?));
        }
        let mut seen = EventCursors::from_seen(seen);
        if input.u8("a system's changes").map_err(cut)? != 0 {
            seen.saw_changes_until(input.u64("a system's changes").map_err(cut)?);
        }
        cursors.push((name, seen, runs));
    }
    if !input.is_done() {
        return Err("its database section has bytes left over".into());
    }
    Ok((checkpoint, Clock { tick, dt }, indexes, systems, cursors))
}

/// Writes `bytes` to `path` so that `path` holds either what it held or all of `bytes`,
/// never a part: into a temporary file beside it, flushed to disk, then renamed over it
/// (and on Unix the folder flushed too, so the rename lasts). A failure removes the
/// temporary file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "it names no file"))?;
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // A name of its own per call (two threads may save to one file at once), created new
    // so that nothing already there (a link, another writer's file) is written through.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temporary = folder.join(format!(
        ".{}.ecsql-{}-{call}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temporary, path)?;
        #[cfg(unix)]
        File::open(folder)?.sync_all()?;
        Ok(())
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
}
