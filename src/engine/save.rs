//! `SAVE TO 'file'` and `LOAD FROM 'file'`: the database as a snapshot file (a save slot),
//! and back. The file is the storage's snapshot (`World::snapshot_with`) with, in its own
//! section, what the layers above keep: the clock, the indexes' definitions (indexes are
//! rebuilt from them on load, never stored), the phases, and every system in the order it
//! was made (a SQL system as its `CREATE SYSTEM`, a Rust system as its clauses, the
//! closure being the program's) with what it has seen, how often it ran and whether it is
//! enabled (`Schedule::saved`). A LOAD gives the file's Rust systems the running
//! database's closures of the same names (`Schedule::adopt_rust_systems`); a file
//! database's open leaves them waiting for the program to register them.
//!
//! Invariants:
//! - SAVE writes the file whole or not at all: into a temporary file beside it, flushed to
//!   disk, then renamed over it (`write_atomically`).
//! - LOAD reads and checks the whole file and builds the new world and its indexes aside;
//!   only then does it replace the database's world, under the write lock, in one step. A
//!   file that is missing, damaged, cut short, from a newer version or not a snapshot
//!   changes nothing and is refused with its name and the byte offset.

use std::fs;
use std::io::{self, Write as _};
use std::path::Path;

use super::{Client, Result, State};
use crate::exec::{Clock, EventCursors, ExecError, ExecErrorKind, Outcome};
use crate::index::{Index, IndexKind, IndexMethod, Indexes, create_index};
use crate::location::Location;
use crate::parse::FileName;
use crate::plan::{ParamValues, Plan, PlanErrorKind};
use crate::schedule::{SavedSystem, Schedule};
use crate::storage::{
    BytesIn, BytesOut, ComponentId, EventId, FieldId, ReadBytes, SnapshotError, Value, World,
};

/// The version of the section the layers above write into a snapshot: written only when
/// it holds a function index (version 4, read too, has none; version 3 no filter index
/// either).
const ABOVE_VERSION: u8 = 5;

impl Client {
    /// `SAVE TO 'path'`.
    pub(super) fn save(&self, path: &str, at: Location) -> Result<Outcome> {
        if !self.is_autocommit() {
            return Err(ExecError::transaction(at, "SAVE writes the database as committed and cannot run inside a transaction (COMMIT or ROLLBACK first)").into());
        }
        refuse_unless_regular(path, "SAVE writes", at)?;
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
                return Err(ExecError::transaction(at, "SAVE cannot run while a transaction is open (another connection's, or one begun on the world through with_world_mut): it would write what may yet be rolled back").into());
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
            return Err(ExecError::transaction(at, "LOAD replaces the whole database and cannot run inside a transaction (COMMIT or ROLLBACK first)").into());
        }
        refuse_unless_regular(path, "LOAD reads", at)?;
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
            return Err(ExecError::transaction(at, "LOAD cannot run while a transaction is open (another connection's, or one begun on the world through with_world_mut)").into());
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
        // Only COPY reads STDIN or writes STDOUT; the parser gives SAVE and LOAD a file.
        FileName::Stdout | FileName::Stdin => Err(crate::plan::PlanError::new(
            at,
            PlanErrorKind::Invalid {
                message: format!("SAVE and LOAD take a file's name, not {name}"),
            },
        )
        .into()),
        FileName::Param(p) => match params.get(p) {
            Some(Value::Text(path)) if !path.is_empty() => Ok(path.clone()),
            Some(other) => Err(crate::plan::PlanError::new(
                at,
                PlanErrorKind::Invalid {
                    message: format!("{p} names the file: a non-empty TEXT, not {other}"),
                },
            )
            .into()),
            None => Err(crate::plan::PlanError::new(
                at,
                PlanErrorKind::MissingParameter { name: p.to_string() },
            )
            .into()),
        },
    }
}

/// Refuses a path that is there and is not a regular file (a pipe, whose open would wait
/// for a reader or a writer that may never come; a device): `what` names the statement.
fn refuse_unless_regular(path: &str, what: &str, at: Location) -> Result<()> {
    match fs::metadata(path) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => Err(file_error(
            path,
            format!("{what} a regular file, and this is not one (a pipe or a device)"),
            at,
        )),
        _ => Ok(()),
    }
}

fn file_error(path: &str, message: String, at: Location) -> crate::error::Error {
    ExecError::new(
        at,
        ExecErrorKind::File {
            path: path.to_owned(),
            message,
        },
    )
    .into()
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
    let above = above_bytes(checkpoint, &state.schedule, &state.world);
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
    let Above {
        checkpoint,
        clock,
        indexes,
        phases,
        systems,
    } = read_above(&above)?;
    for (name, kept) in indexes {
        let made = match kept {
            KeptIndex::Fields(method, fields) => {
                create_index(&mut world, Some(&name), method, &fields).map_err(|e| e.to_string())
            }
            KeptIndex::Function(text) => function_index(&mut world, &name, &text),
        };
        made.map_err(|e| format!("its index {name} does not fit its components: {e}"))?;
    }
    let mut schedule = Schedule::from_saved(&phases, systems, &mut world)?;
    schedule.set_clock(clock);
    Ok(Image {
        world,
        schedule,
        checkpoint,
    })
}

/// Makes the function index `CREATE INDEX` statement `text` defines, called `name`.
fn function_index(world: &mut World, name: &str, text: &str) -> std::result::Result<String, String> {
    let statement = crate::parse::parse_one(text).map_err(|e| e.to_string())?;
    match crate::plan::bind(&statement, world, &ParamValues::default()).map_err(|e| e.to_string())? {
        Plan::CreateFunctionIndex { index, .. } => {
            crate::exec::create_function_index(world, Some(name), &index).map_err(|e| e.to_string())
        }
        _ => Err(format!("{text} does not define a function index")),
    }
}

/// The statement that makes the function index `index` again (under its own name).
fn function_index_text(index: &Index, world: &World) -> Option<String> {
    let def = index.definition()?;
    let component = crate::parse::Ident {
        value: world.component(index.component()).ok()?.name().to_owned().into(),
        quoted: true,
        at: Location::default(),
    };
    let mut text = format!("CREATE INDEX ON {component} ({})", def.exprs.join(", "));
    if let Some(p) = &def.predicate {
        text.push_str(" WHERE ");
        text.push_str(p);
    }
    Some(text)
}

/// The checkpoint's number, the clock, the indexes' definitions, the phases and every
/// system (SQL or Rust) in the order they were made, with where each stands, as bytes.
fn above_bytes(checkpoint: u64, schedule: &Schedule, world: &World) -> Vec<u8> {
    let mut out = BytesOut::new();
    // Version 4 only adds filter indexes, version 5 function indexes: a database without
    // them is written in the version builds before them read too.
    let has = |kind: IndexKind| Indexes::of(world).iter().any(|i| i.kind() == kind);
    out.u8(if has(IndexKind::Function) {
        ABOVE_VERSION
    } else if has(IndexKind::Filter) {
        4
    } else {
        3
    });
    out.u64(checkpoint);
    let clock = schedule.clock();
    out.u64(clock.tick);
    out.u64(clock.dt.to_bits());
    let indexes: Vec<_> = Indexes::of(world).iter().collect();
    out.len(indexes.len());
    for index in indexes {
        out.str(index.name());
        if let Some(text) = function_index_text(index, world) {
            out.u8(3);
            out.str(&text);
            continue;
        }
        out.u8(match index.kind() {
            IndexKind::Spatial => 1,
            IndexKind::Filter => 2,
            IndexKind::Ordered | IndexKind::Relation | IndexKind::Function => 0,
        });
        out.len(index.fields().len());
        for f in index.fields() {
            out.u32(f.component().to_raw());
            out.u32(f.index() as u32);
        }
    }
    out.str(&schedule.phase_statements().join("\n"));
    let systems = schedule.saved();
    out.len(systems.len());
    for s in &systems {
        out.u8(u8::from(s.rust));
        out.str(&s.name);
        out.str(&s.text);
        out.u8(u8::from(s.enabled));
        out.u64(s.runs);
        let events: Vec<_> = s.cursors.iter().collect();
        out.len(events.len());
        for (event, seq) in events {
            out.u32(event.to_raw());
            out.u64(seq);
        }
        match s.cursors.changes_since() {
            None => out.u8(0),
            Some(tick) => {
                out.u8(1);
                out.u64(tick);
            }
        }
    }
    out.into_bytes()
}

/// An index as kept, beside its name.
enum KeptIndex {
    /// What CREATE INDEX asked for, and its fields.
    Fields(IndexMethod, Vec<FieldId>),
    /// A function index: the CREATE INDEX statement that makes it.
    Function(String),
}

type IndexDef = (String, KeptIndex);

/// What the layers above keep in a snapshot.
struct Above {
    checkpoint: u64,
    clock: Clock,
    indexes: Vec<IndexDef>,
    /// `CREATE PHASE` statements.
    phases: String,
    systems: Vec<SavedSystem>,
}

/// `above_bytes` read back (a snapshot saved without them has the default clock, no index
/// and no system).
fn read_above(bytes: &[u8]) -> std::result::Result<Above, String> {
    if bytes.is_empty() {
        return Ok(Above {
            checkpoint: 0,
            clock: Clock::default(),
            indexes: Vec::new(),
            phases: String::new(),
            systems: Vec::new(),
        });
    }
    let mut input = BytesIn::new(bytes);
    let cut = |e: SnapshotError| match e {
        SnapshotError::Invalid { message, .. } => format!("its database section: {message}"),
        other => format!("its database section: {other}"),
    };
    // Version 3 has no filter index, version 4 no function index; each index as version
    // 5 has it.
    let version = input.u8("its version").map_err(cut)?;
    if !matches!(version, 3..=ABOVE_VERSION) {
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
    for _ in 0..input.count(1, "indexes").map_err(cut)? {
        let name = input.str("an index's name").map_err(cut)?;
        let method = match input.u8("an index").map_err(cut)? {
            0 => IndexMethod::Value,
            1 => IndexMethod::Spatial,
            2 if version >= 4 => IndexMethod::Filter,
            3 if version >= 5 => {
                let text = input.str("a function index's statement").map_err(cut)?;
                indexes.push((name, KeptIndex::Function(text)));
                continue;
            }
            other => {
                return Err(format!(
                    "its index {name} is of a kind ({other}) this build does not know"
                ));
            }
        };
        let mut fields = Vec::new();
        for _ in 0..input.count(1, "fields of an index").map_err(cut)? {
            let component = ComponentId::from_raw(input.u32("an index's field").map_err(cut)?);
            let index = u16::try_from(input.u32("an index's field").map_err(cut)?)
                .map_err(|_| "an index names a field past any component's".to_owned())?;
            fields.push(FieldId::new(component, index));
        }
        indexes.push((name, KeptIndex::Fields(method, fields)));
    }
    let phases = input.str("the phases").map_err(cut)?;
    let mut systems = Vec::new();
    for _ in 0..input.count(1, "systems").map_err(cut)? {
        let rust = input.u8("a system's kind").map_err(cut)? != 0;
        let name = input.str("a system's name").map_err(cut)?;
        let statement = input.str("a system's statement").map_err(cut)?;
        let enabled = input.u8("a system's state").map_err(cut)? != 0;
        let runs = input.u64("a system's runs").map_err(cut)?;
        let mut seen = Vec::new();
        for _ in 0..input.count(1, "cursors of a system").map_err(cut)? {
            let event = EventId::from_raw(input.u32("a cursor").map_err(cut)?);
            seen.push((event, input.u64("a cursor").map_err(cut)?));
        }
        let mut cursors = EventCursors::from_seen(seen);
        if input.u8("a system's changes").map_err(cut)? != 0 {
            cursors.saw_changes_until(input.u64("a system's changes").map_err(cut)?);
        }
        systems.push(SavedSystem {
            name,
            rust,
            text: statement,
            enabled,
            runs,
            cursors,
        });
    }
    if !input.is_done() {
        return Err("its database section has bytes left over".into());
    }
    Ok(Above {
        checkpoint,
        clock: Clock::new(tick, dt),
        indexes,
        phases,
        systems,
    })
}

/// Writes `bytes` to `path` so that `path` holds either what it held or all of `bytes`,
/// never a part (see `files::write_file`: a temporary file beside it, flushed, renamed
/// over it, the folder flushed).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    crate::files::write_file(path, |out| out.write_all(bytes))
}
