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

use super::{Connection, Result};
use crate::exec::{Clock, ExecError, Outcome};
use crate::index::{Indexes, create_index};
use crate::location::Location;
use crate::parse::{self, FileName, StatementKind};
use crate::plan::ParamValues;
use crate::schedule::Schedule;
use crate::storage::{ComponentId, EventId, FieldId, SnapshotError, Value, World};

/// The version of the section the layers above write into a snapshot.
const ABOVE_VERSION: u8 = 1;

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
            let systems = state.schedule.schema(&state.world).join("\n");
            let cursors = state.schedule.reader_cursors();
            let above = above_bytes(state.schedule.clock(), &state.world, &systems, &cursors);
            (state.world.snapshot_with(&above), state.world.len())
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
        let (mut world, above) = World::from_snapshot_with(&bytes).map_err(|e| {
            // A script or a dump given to LOAD: say what reads it.
            let hint = match (&e, std::str::from_utf8(&bytes)) {
                (SnapshotError::NotASnapshot, Ok(_)) => {
                    " (it is text: a script or a .dump is run with .read)"
                }
                _ => "",
            };
            file_error(path, format!("{e}{hint}"), at)
        })?;
        let (clock, indexes, systems, cursors) = read_above(&above).map_err(|m| file_error(path, m, at))?;
        for (name, spatial, fields) in indexes {
            create_index(&mut world, Some(&name), spatial, &fields).map_err(|e| {
                file_error(
                    path,
                    format!("its index {name} does not fit its components: {e}"),
                    at,
                )
            })?;
        }
        let mut schedule = saved_schedule(&systems, &mut world).map_err(|m| file_error(path, m, at))?;
        schedule.set_clock(clock);
        // Each system reads on from where it stood in the events the file kept.
        for (name, seen) in cursors {
            schedule.set_reader_cursors(&name, seen);
        }
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

/// The clock, the indexes' definitions and the schedule's statements, as bytes.
fn above_bytes(clock: Clock, world: &World, systems: &str, cursors: &Cursors) -> Vec<u8> {
    let mut out = vec![ABOVE_VERSION];
    out.extend_from_slice(&clock.tick.to_le_bytes());
    out.extend_from_slice(&clock.dt.to_bits().to_le_bytes());
    let indexes: Vec<_> = Indexes::of(world).iter().collect();
    out.extend_from_slice(&(indexes.len() as u32).to_le_bytes());
    for index in indexes {
        let name = index.name().as_bytes();
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name);
        out.push(u8::from(index.kind() == crate::index::IndexKind::Spatial));
        out.extend_from_slice(&(index.fields().len() as u32).to_le_bytes());
        for f in index.fields() {
            out.extend_from_slice(&f.component().to_raw().to_le_bytes());
            out.extend_from_slice(&(f.index() as u16).to_le_bytes());
        }
    }
    out.extend_from_slice(&(systems.len() as u64).to_le_bytes());
    out.extend_from_slice(systems.as_bytes());
    out.extend_from_slice(&(cursors.len() as u32).to_le_bytes());
    for (name, seen) in cursors {
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(seen.len() as u32).to_le_bytes());
        for &(event, seq) in seen {
            out.extend_from_slice(&event.to_raw().to_le_bytes());
            out.extend_from_slice(&seq.to_le_bytes());
        }
    }
    out
}

/// An index as kept: its name, whether it is spatial, its fields.
type IndexDef = (String, bool, Vec<FieldId>);

/// `above_bytes` read back (a snapshot saved without them has the default clock, no index
/// and no system).
/// What each system has read of each event type: by name, (event type, sequence number).
type Cursors = Vec<(String, Vec<(EventId, u64)>)>;

fn read_above(bytes: &[u8]) -> std::result::Result<(Clock, Vec<IndexDef>, String, Cursors), String> {
    if bytes.is_empty() {
        return Ok((Clock::default(), Vec::new(), String::new(), Vec::new()));
    }
    let mut pos = 0usize;
    let mut take = |n: usize| -> std::result::Result<&[u8], String> {
        let b = pos
            .checked_add(n)
            .and_then(|end| bytes.get(pos..end))
            .ok_or_else(|| "its database section is cut short".to_owned())?;
        pos += n;
        Ok(b)
    };
    if take(1)?[0] != ABOVE_VERSION {
        return Err("its database section is of a version this build does not read".into());
    }
    let u64_of = |b: &[u8]| {
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        u64::from_le_bytes(a)
    };
    let u32_of = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let tick = u64_of(take(8)?);
    let dt = f64::from_bits(u64_of(take(8)?));
    if i64::try_from(tick).is_err() || !dt.is_finite() || dt < 0.0 {
        return Err(format!(
            "its clock (tick {tick}, dt {dt}) is not one a database can have"
        ));
    }
    let count = u32_of(take(4)?);
    let mut indexes = Vec::new();
    for _ in 0..count {
        let len = u32_of(take(4)?) as usize;
        let name =
            String::from_utf8(take(len)?.to_vec()).map_err(|_| "an index name is not UTF-8".to_owned())?;
        let spatial = take(1)?[0] != 0;
        let fields = u32_of(take(4)?);
        let mut list = Vec::new();
        for _ in 0..fields {
            let component = ComponentId::from_raw(u32_of(take(4)?));
            let b = take(2)?;
            list.push(FieldId::new(component, u16::from_le_bytes([b[0], b[1]])));
        }
        indexes.push((name, spatial, list));
    }
    let len = usize::try_from(u64_of(take(8)?)).map_err(|_| "its systems' text is too long".to_owned())?;
    let systems =
        String::from_utf8(take(len)?.to_vec()).map_err(|_| "its systems' text is not UTF-8".to_owned())?;
    let mut cursors = Vec::new();
    for _ in 0..u32_of(take(4)?) {
        let len = u32_of(take(4)?) as usize;
        let name =
            String::from_utf8(take(len)?.to_vec()).map_err(|_| "a system's name is not UTF-8".to_owned())?;
        let mut seen = Vec::new();
        for _ in 0..u32_of(take(4)?) {
            let event = EventId::from_raw(u32_of(take(4)?));
            seen.push((event, u64_of(take(8)?)));
        }
        cursors.push((name, seen));
    }
    if pos != bytes.len() {
        return Err("its database section has bytes left over".into());
    }
    Ok((Clock { tick, dt }, indexes, systems, cursors))
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
