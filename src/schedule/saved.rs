//! The schedule as others read it: SHOW SYSTEMS, SHOW EVENTS, the schedule as SQL (for
//! `.dump` and a snapshot's text), and the systems a snapshot keeps and reads back.
//!
//! Invariants:
//! - A schedule written out and read back (`saved`, `from_saved`; `schema`) makes the same
//!   systems in the same order, each with its state.

use super::define::unbound;
use super::{BUILTIN_PHASES, Body, SavedSystem, Schedule};
use crate::exec::Outcome;
use crate::parse::{self, Ident};
use crate::plan::DataType;
use crate::storage::{ComponentId, EventId, Value, World};

impl Schedule {
    /// Every system in the order it was made, as a snapshot keeps it.
    pub fn saved(&self) -> Vec<SavedSystem> {
        self.systems
            .iter()
            .map(|s| SavedSystem {
                name: s.def.name.clone(),
                rust: matches!(s.def.body, Body::Rust(..)),
                text: match (&s.def.spec, &s.def.clauses) {
                    (Some(spec), _) => spec.to_string(),
                    (None, Some(clauses)) => clauses.clone(),
                    (None, None) => String::new(),
                },
                enabled: s.state.enabled,
                runs: s.state.runs,
                cursors: s.state.cursors.clone(),
            })
            .collect()
    }

    /// The schedule a snapshot kept: its phases (`CREATE PHASE` statements) and systems,
    /// made again in their order, each where it stood; a SQL system that no longer binds is
    /// kept as it was (its next run binds it, or fails), a Rust system waits for its
    /// closure. Starts the removal logs its systems read.
    pub fn from_saved(
        phases: &str,
        systems: Vec<SavedSystem>,
        world: &mut World,
    ) -> std::result::Result<Schedule, String> {
        let mut schedule = Schedule::default();
        let statements = parse::parse(phases).map_err(|e| format!("its phases do not read back: {e}"))?;
        for s in &statements {
            match &s.kind {
                parse::StatementKind::CreatePhase { name, before, anchor } => schedule
                    .create_phase(name, *before, anchor)
                    .map_err(|e| format!("its phases do not fit: {e}"))?,
                other => return Err(format!("its phases hold a {} statement", other.verb())),
            }
        }
        for saved in systems {
            let made = if saved.rust {
                parse::system_clauses(&saved.name, &saved.text)
                    .map_err(|e| e.to_string())
                    .and_then(|spec| {
                        schedule
                            .create_rust_system(&spec, &saved.text, None, world, 0)
                            .map_err(|e| e.to_string())
                    })
            } else {
                match parse::parse_one(&saved.text).map(|s| s.kind) {
                    Ok(parse::StatementKind::CreateSystem(spec)) => schedule
                        .add_unchecked(&spec, world)
                        .map_err(|e| e.to_string())
                        .and_then(|logs| {
                            logs.into_iter()
                                .try_for_each(|c| world.track_removals(c).map(drop))
                                .map_err(|e| e.to_string())
                        }),
                    Ok(_) => Err("it is not a CREATE SYSTEM statement".to_owned()),
                    Err(e) => Err(e.to_string()),
                }
            };
            made.map_err(|e| format!("its system {} does not fit: {e}", saved.name))?;
            if let Some(s) = schedule.systems.last_mut() {
                s.state.enabled = saved.enabled;
                s.state.runs = saved.runs;
                s.state.cursors = saved.cursors;
            }
        }
        Ok(schedule)
    }

    /// `SHOW SYSTEMS`: one row per system, in run order, with what it reads and writes
    /// of `world`.
    pub fn show_systems(&self, world: &World) -> Outcome {
        let accesses = self.accesses(world);
        let universe = super::conflicts::Universe::new(world, &accesses);
        let mut rows: Vec<Vec<Value>> = Vec::new();
        for (position, &i) in self.order.iter().enumerate() {
            let s = &self.systems[i];
            let (reads, writes) = universe.describe(&accesses[position]);
            rows.push(vec![
                Value::Text(s.def.name.clone()),
                Value::Text(s.def.phase.clone()),
                Value::Int(position as i64 + 1),
                Value::Bool(s.state.enabled),
                s.def
                    .every
                    .map_or(Value::Null, |n| Value::Int(i64::try_from(n).unwrap_or(i64::MAX))),
                Value::Int(i64::try_from(s.state.runs).unwrap_or(i64::MAX)),
                Value::Int(i64::try_from(s.state.together).unwrap_or(i64::MAX)),
                s.state
                    .last_time
                    // In ms, to the µs: finer is the clock's noise.
                    .map_or(Value::Null, |t| {
                        Value::Float((t.as_secs_f64() * 1e6).round() / 1e3)
                    }),
                Value::Text(match s.def.body {
                    Body::Sql(_) => "sql".to_owned(),
                    Body::Rust(..) => "rust".to_owned(),
                }),
                Value::Text(reads),
                Value::Text(writes),
            ]);
        }
        Outcome::of_rows(
            &[
                ("name", DataType::Text),
                ("phase", DataType::Text),
                ("order", DataType::Int),
                ("enabled", DataType::Bool),
                ("every", DataType::Int),
                ("runs", DataType::Int),
                ("together", DataType::Int),
                ("last_ms", DataType::Float),
                ("kind", DataType::Text),
                ("reads", DataType::Text),
                ("writes", DataType::Text),
            ],
            rows,
        )
    }

    /// `SHOW SYSTEM RUNS`: each system's recent runs (at most `RECENT_RUNS`), systems in
    /// run order, each one's runs oldest first: its name, the tick, the run's time in ms
    /// and the rows and entities it wrote (NULL for a Rust closure).
    pub fn show_system_runs(&self) -> Outcome {
        let mut rows: Vec<Vec<Value>> = Vec::new();
        for &i in &self.order {
            let s = &self.systems[i];
            for run in &s.recent {
                rows.push(vec![
                    Value::Text(s.def.name.clone()),
                    Value::Int(i64::try_from(run.tick).unwrap_or(i64::MAX)),
                    Value::Float((run.time.as_secs_f64() * 1e6).round() / 1e3),
                    run.rows
                        .map_or(Value::Null, |n| Value::Int(i64::try_from(n).unwrap_or(i64::MAX))),
                ]);
            }
        }
        Outcome::of_rows(
            &[
                ("system", DataType::Text),
                ("tick", DataType::Int),
                ("ms", DataType::Float),
                ("rows", DataType::Int),
            ],
            rows,
        )
    }

    /// `SHOW EVENTS`: one row per event type.
    pub fn show_events(&self, world: &World) -> Outcome {
        let rows = world
            .events()
            .map(|e| {
                let readers = self.readers(e.id()).count();
                vec![
                    Value::Text(e.name().to_owned()),
                    Value::Int(e.len() as i64),
                    Value::Int(readers as i64),
                    Value::Int(i64::try_from(e.keep()).unwrap_or(i64::MAX)),
                    Value::Int(i64::try_from(e.dropped_unseen()).unwrap_or(i64::MAX)),
                ]
            })
            .collect();
        Outcome::of_rows(
            &[
                ("event", DataType::Text),
                ("kept", DataType::Int),
                ("readers", DataType::Int),
                ("keep_ticks", DataType::Int),
                ("dropped_unseen", DataType::Int),
            ],
            rows,
        )
    }

    /// The systems that read `event`, by index.
    pub(super) fn readers(&self, event: EventId) -> impl Iterator<Item = usize> + '_ {
        self.systems
            .iter()
            .enumerate()
            .filter(move |(_, s)| s.reads.events.contains(&event))
            .map(|(i, _)| i)
    }

    /// The systems that read `component`'s removal log, by position.
    pub(super) fn removal_readers(&self, component: ComponentId) -> impl Iterator<Item = usize> + '_ {
        self.systems
            .iter()
            .enumerate()
            .filter(move |(_, s)| s.reads.removals.contains(&component))
            .map(|(i, _)| i)
    }

    /// The text that makes every phase made by CREATE PHASE and every SQL system again,
    /// in an order that reads back (phases first; systems so that each comes after those
    /// it names), with ALTER SYSTEM … DISABLE for the disabled ones. What cannot be read
    /// back is written as a comment that says why: a Rust system (the program registers
    /// it again), a system whose statements no longer bind against `world`; a system
    /// ordered against one of those is written without that clause, which a comment
    /// names.
    pub fn schema(&self, world: &World) -> Vec<String> {
        let mut out = self.phase_statements();
        self.system_statements(world, &mut out);
        out
    }

    /// `CREATE PHASE` for each phase made, in an order that makes them again.
    pub fn phase_statements(&self) -> Vec<String> {
        let mut out = Vec::new();
        // Each phase is made next to one that exists by then: those before the first
        // built-in phase from it backwards (BEFORE the next), the others forwards (AFTER
        // the one before).
        let builtin = |p: &str| BUILTIN_PHASES.iter().any(|b| b.eq_ignore_ascii_case(p));
        let first = self.phases.iter().position(|p| builtin(p)).unwrap_or(0);
        let phase = |i: usize, word: &str, anchor: usize| {
            format!(
                "CREATE PHASE {} {word} {};",
                parse::quote_name(&self.phases[i]),
                parse::quote_name(&self.phases[anchor])
            )
        };
        for i in (0..first).rev() {
            out.push(phase(i, "BEFORE", i + 1));
        }
        for i in first + 1..self.phases.len() {
            if !builtin(&self.phases[i]) {
                out.push(phase(i, "AFTER", i - 1));
            }
        }
        out
    }

    /// `schema`'s systems, onto `out`.
    fn system_statements(&self, world: &World, out: &mut Vec<String>) {
        // Systems in creation order: each names only systems made before it.
        let mut written: Vec<&str> = Vec::new();
        for s in &self.systems {
            let name = parse::quote_name(&s.def.name);
            let spec = match (&s.def.body, &s.def.spec) {
                (Body::Sql(statements), Some(spec)) => {
                    match unbound(statements, s.def.when.as_ref(), world) {
                        None => spec,
                        Some(why) => {
                            out.push(format!(
                                "-- system {name} is not written: it no longer binds ({why})"
                            ));
                            continue;
                        }
                    }
                }
                _ => {
                    out.push(format!(
                        "-- system {name} is a Rust closure: the program registers it again"
                    ));
                    continue;
                }
            };
            let mut spec = spec.clone();
            let keep = |list: &mut Vec<Ident>, word: &str, out: &mut Vec<String>| {
                list.retain(|other| {
                    let found = written.iter().any(|w| w.eq_ignore_ascii_case(&other.value));
                    if !found {
                        out.push(format!(
                            "-- system {name} ran {word} {}, which is not written here",
                            parse::quote_name(&other.value)
                        ));
                    }
                    found
                });
            };
            keep(&mut spec.before, "BEFORE", out);
            keep(&mut spec.after, "AFTER", out);
            out.push(format!("{spec};"));
            written.push(&s.def.name);
            if !s.state.enabled {
                out.push(format!(
                    "ALTER SYSTEM {} DISABLE;",
                    parse::quote_name(&s.def.name)
                ));
            }
        }
    }
}
