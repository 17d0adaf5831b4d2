//! Systems made, ordered, dropped, enabled and disabled: CREATE SYSTEM (of statements or a
//! Rust closure), the run order they make with phases and BEFORE/AFTER, DROP SYSTEM,
//! ENABLE/DISABLE, and CREATE/DROP PHASE.
//!
//! Invariants:
//! - A change that would make the order a cycle, name an unknown system or phase, or
//!   leave a system ordered against one that is gone is refused before anything changes.
//! - A system's statements are bound when it is made, so a wrong name fails CREATE SYSTEM
//!   rather than the first tick.

use std::sync::Arc;

use parking_lot::Mutex;

use super::{
    BUILTIN_PHASES, Body, Prepared, Result, RustClosure, Schedule, ScheduleError, System, SystemDef,
    SystemState, order, select_of,
};
use crate::exec::EventCursors;
use crate::location::Location;
use crate::parse::{self, Ident, Statement, SystemSpec};
use crate::plan::PlanErrorKind;
use crate::plan::{DataType, ParamValues};
use crate::storage::{ComponentId, World};

impl Schedule {
    /// The names of the Rust systems that have their closure, in the order they were made.
    pub fn rust_systems(&self) -> Vec<String> {
        self.systems
            .iter()
            .filter(|s| matches!(&s.def.body, Body::Rust(f, _) if f.lock().is_some()))
            .map(|s| s.def.name.clone())
            .collect()
    }

    /// Takes the Rust systems of `other` (the running database's: closures the program
    /// registered, which a file cannot hold) into this schedule, read from a file: one the
    /// file holds under the same name takes its closure where the file put it; the others
    /// are added as they were made, enabled or not. The file's Rust systems that `other`
    /// does not have are dropped (the program's, not the file's), unless a system is
    /// ordered against one: that one waits for its closure. Refused, changing nothing,
    /// when a name is a SQL system's here, a phase is missing, or the order makes a cycle.
    pub fn adopt_rust_systems(&mut self, other: &Schedule, at: Location) -> Result<()> {
        let is_rust = |s: &System| matches!(s.def.body, Body::Rust(..));
        let before = self.systems.len();
        let kept_order = self.order.clone();
        let mut fills = Vec::new();
        for s in other.systems.iter().filter(|s| is_rust(s)) {
            let refused = match self.find(&s.def.name) {
                Some(i) if is_rust(&self.systems[i]) => {
                    fills.push((i, s));
                    continue;
                }
                Some(_) => Some(format!(
                    "its system {} has the name of the Rust system {} of this database",
                    s.def.name, s.def.name
                )),
                None if self.phase_index(&s.def.phase).is_none() => Some(format!(
                    "it has no phase {}, in which this database's Rust system {} runs",
                    s.def.phase, s.def.name
                )),
                None => None,
            };
            if let Some(message) = refused {
                self.systems.truncate(before);
                return Err(ScheduleError::invalid(at, message));
            }
            let state = SystemState {
                enabled: s.state.enabled,
                runs: 0,
                together: 0,
                last_time: None,
                cursors: EventCursors::default(),
            };
            self.systems
                .push(System::new(Arc::clone(&s.def), state, Prepared::new(&s.def)));
        }
        match self.compute_order() {
            Ok(order) => self.order = order,
            Err(cycle) => {
                self.systems.truncate(before);
                self.order = kept_order;
                return Err(ScheduleError::invalid(
                    at,
                    format!("with this database's Rust systems its systems would run in a cycle: {cycle}"),
                ));
            }
        }
        // Nothing fails past here: the closures move.
        for (i, s) in fills {
            if let (Body::Rust(to, to_access), Body::Rust(from, from_access)) =
                (&self.systems[i].def.body, &s.def.body)
            {
                *to.lock() = from.lock().take();
                *to_access.lock() = from_access.lock().take();
            }
        }
        // The file's others go, the last made first (each is ordered only against
        // systems made before it).
        for i in (0..before).rev() {
            let s = &self.systems[i];
            let waiting = matches!(&s.def.body, Body::Rust(f, _) if f.lock().is_none());
            let name = s.def.name.clone();
            let referenced = self
                .systems
                .iter()
                .any(|o| o.def.before.iter().chain(&o.def.after).any(|n| *n == name));
            if waiting && !referenced {
                self.systems.remove(i);
            }
        }
        if let Ok(order) = self.compute_order() {
            self.order = order;
        }
        Ok(())
    }

    /// `CREATE SYSTEM`: checks the name, the phase and the order, binds every statement
    /// (and WHEN) against `world`, and adds the system. Returns the components whose
    /// removals it reads (`removed()`), whose logs must start now: the system's first run
    /// sees what was lost since it was made.
    pub fn create_system(
        &mut self,
        spec: &SystemSpec,
        world: &World,
        restores: u64,
        check_text: bool,
    ) -> Result<Vec<ComponentId>> {
        // A snapshot keeps the system as its printed text: one that would not read back
        // would make a file that does not open (`check_text`).
        if check_text && let Err(why) = parse::system_reads_back(spec) {
            return Err(ScheduleError::invalid(
                spec.name.at,
                format!(
                    "system {} cannot be kept as written: {why}; this is ecsql's fault (please report it): write the statement another way",
                    spec.name.value
                ),
            ));
        }
        let body = Body::Sql(spec.body.clone());
        self.add(spec, body, Some(spec.clone()), world, restores)
    }

    /// A Rust closure as a system, ordered by `clauses` (parsed into `spec`, whose body is
    /// ignored); without one, a system waiting for its closure.
    pub fn create_rust_system(
        &mut self,
        spec: &SystemSpec,
        clauses: &str,
        f: Option<RustClosure>,
        world: &World,
        restores: u64,
    ) -> Result<()> {
        let (f, access) = f.map_or((None, None), |c| (Some(c.run), c.access));
        let body = Body::Rust(Mutex::new(f), Mutex::new(access));
        self.add(spec, body, None, world, restores)?;
        if let Some(s) = self.systems.last_mut()
            && let Some(def) = Arc::get_mut(&mut s.def)
        {
            def.clauses = Some(clauses.to_owned());
        }
        Ok(())
    }

    /// Gives `f` to the Rust system `name` read from a file and waiting for its closure;
    /// gives `f` back when there is no such system waiting.
    pub fn fill_rust_system(&self, name: &str, f: RustClosure) -> Option<RustClosure> {
        let waiting = self.find(name).and_then(|i| match &self.systems[i].def.body {
            Body::Rust(slot, declared) if slot.lock().is_none() => Some((slot, declared)),
            _ => None,
        });
        match waiting {
            Some((slot, declared)) => {
                *slot.lock() = Some(f.run);
                *declared.lock() = f.access;
                None
            }
            None => Some(f),
        }
    }

    /// Takes the closure of the Rust system `name` (which then waits for one), with its
    /// clauses.
    pub fn take_rust_closure(&self, name: &str) -> Option<(String, RustClosure)> {
        let s = &self.systems[self.find(name)?];
        match &s.def.body {
            Body::Rust(slot, declared) => {
                let run = slot.lock().take()?;
                let access = declared.lock().take();
                Some((
                    s.def.clauses.clone().unwrap_or_default(),
                    RustClosure { run, access },
                ))
            }
            Body::Sql(_) => None,
        }
    }

    /// A SQL system made as a snapshot kept it: bound now if it binds, else at its run.
    pub(super) fn add_unchecked(&mut self, spec: &SystemSpec, world: &World) -> Result<Vec<ComponentId>> {
        let sql = || Body::Sql(spec.body.clone());
        match self.add(spec, sql(), Some(spec.clone()), world, 0) {
            Err(ScheduleError::Plan(_) | ScheduleError::Exec(_) | ScheduleError::Storage(_)) => {
                self.add_with(spec, sql(), Some(spec.clone()), world, 0, false)
            }
            other => other,
        }
    }

    fn add(
        &mut self,
        spec: &SystemSpec,
        body: Body,
        text: Option<SystemSpec>,
        world: &World,
        restores: u64,
    ) -> Result<Vec<ComponentId>> {
        self.add_with(spec, body, text, world, restores, true)
    }

    /// `add`; with `bind` false, statements are left to bind at their first run.
    fn add_with(
        &mut self,
        spec: &SystemSpec,
        body: Body,
        text: Option<SystemSpec>,
        world: &World,
        restores: u64,
        bind: bool,
    ) -> Result<Vec<ComponentId>> {
        let name = &spec.name;
        if name.value.is_empty() || name.value.chars().any(char::is_control) {
            return Err(ScheduleError::invalid(
                name.at,
                format!("a system's name must be a name, not {:?}", name.value),
            ));
        }
        if self.find(&name.value).is_some() {
            return Err(ScheduleError::SystemExists {
                name: name.value.to_string(),
                at: name.at,
            });
        }
        let phase = match &spec.phase {
            Some(p) => match self.phase_index(&p.value) {
                Some(i) => self.phases[i].clone(),
                None => return Err(self.unknown_phase(p)),
            },
            None => "update".to_owned(),
        };
        let mut before = Vec::new();
        let mut after = Vec::new();
        for (list, out, word) in [
            (&spec.before, &mut before, "BEFORE"),
            (&spec.after, &mut after, "AFTER"),
        ] {
            for other in list {
                if other.value.eq_ignore_ascii_case(&name.value) {
                    return Err(ScheduleError::invalid(
                        other.at,
                        format!("system {} cannot run {word} itself", name.value),
                    ));
                }
                let Some(i) = self.find(&other.value) else {
                    return Err(self.unknown_system(other));
                };
                out.push(self.systems[i].def.name.clone());
            }
        }
        let when = spec.when.as_ref().map(|cond| select_of(cond.clone()));
        static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let def = SystemDef {
            id: IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            name: name.value.to_string(),
            phase,
            before,
            after,
            every: spec.every,
            when,
            when_text: spec.when.as_ref().map(|c| c.to_string()),
            body,
            spec: text,
            clauses: None,
        };
        self.check_phases_agree(&def, name.at)?;
        let mut prepared = Prepared::new(&def);
        if bind {
            bind_all(&def, &mut prepared, world, restores)?;
        }
        let state = SystemState {
            enabled: true,
            runs: 0,
            together: 0,
            last_time: None,
            cursors: EventCursors::default(),
        };
        let system = System::new(Arc::new(def), state, prepared);
        let logs = system.reads.removals.clone();
        self.systems.push(system);
        match self.compute_order() {
            Ok(order) => {
                self.order = order;
                Ok(logs)
            }
            Err(cycle) => {
                self.systems.pop();
                Err(ScheduleError::Cycle {
                    system: name.value.to_string(),
                    cycle,
                    at: name.at,
                })
            }
        }
    }

    /// A BEFORE/AFTER across phases must agree with the phases' order.
    fn check_phases_agree(&self, def: &SystemDef, at: Location) -> Result<()> {
        let mine = self.phase_index(&def.phase).unwrap_or(0);
        for (list, earlier) in [(&def.before, false), (&def.after, true)] {
            for other in list {
                let Some(o) = self.find(other) else { continue };
                let theirs = self.phase_index(&self.systems[o].def.phase).unwrap_or(0);
                let contradicts = if earlier { theirs > mine } else { theirs < mine };
                if contradicts {
                    let word = if earlier { "AFTER" } else { "BEFORE" };
                    return Err(ScheduleError::invalid(
                        at,
                        format!(
                            "system {} in phase {} cannot run {word} {other}, which is in phase {}: \
                             phases run in order ({})",
                            def.name,
                            def.phase,
                            self.systems[o].def.phase,
                            self.phases.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Computes the run order again after a change that cannot make a cycle (a system
    /// dropped, a phase made).
    fn reorder(&mut self, at: Location) -> Result<()> {
        self.order = self.compute_order().map_err(|cycle| {
            ScheduleError::invalid(at, format!("internal error: the run order has a cycle: {cycle}"))
        })?;
        Ok(())
    }

    /// The run order of the systems, or the names around a cycle.
    fn compute_order(&self) -> std::result::Result<Vec<usize>, String> {
        let mut nodes: Vec<order::Node> = self
            .systems
            .iter()
            .map(|s| order::Node {
                phase: self.phase_index(&s.def.phase).unwrap_or(0),
                before: Vec::new(),
            })
            .collect();
        // Only orders inside one phase are edges: across phases, the phases' order holds
        // (and `check_phases_agree` refused one that contradicts it).
        for (i, s) in self.systems.iter().enumerate() {
            // `i BEFORE b` and `i AFTER a` (which is `a BEFORE i`), as (first, then).
            let mut edges: Vec<(usize, usize)> = s
                .def
                .before
                .iter()
                .filter_map(|b| self.find(b))
                .map(|b| (i, b))
                .collect();
            edges.extend(s.def.after.iter().filter_map(|a| self.find(a)).map(|a| (a, i)));
            for (first, then) in edges {
                if nodes[first].phase == nodes[then].phase && !nodes[first].before.contains(&then) {
                    nodes[first].before.push(then);
                }
            }
        }
        order::run_order(&nodes).map_err(|cycle| {
            let mut names: Vec<&str> = cycle.iter().map(|&i| self.systems[i].def.name.as_str()).collect();
            if let Some(&first) = names.first() {
                names.push(first);
            }
            names.join(" runs before ")
        })
    }

    /// `DROP SYSTEM`.
    pub fn drop_system(&mut self, name: &Ident, if_exists: bool) -> Result<()> {
        let Some(i) = self.find(&name.value) else {
            if if_exists {
                return Ok(());
            }
            return Err(self.unknown_system(name));
        };
        let dropped = self.systems[i].def.name.clone();
        let dependents: Vec<&str> = self
            .systems
            .iter()
            .filter(|s| s.def.before.iter().chain(&s.def.after).any(|o| *o == dropped))
            .map(|s| s.def.name.as_str())
            .collect();
        if !dependents.is_empty() {
            return Err(ScheduleError::invalid(
                name.at,
                format!(
                    "system {dropped} cannot be dropped: {} {} ordered against it (drop {} first)",
                    dependents.join(", "),
                    if dependents.len() == 1 { "is" } else { "are" },
                    dependents.join(", "),
                ),
            ));
        }
        self.systems.remove(i);
        self.reorder(name.at)
    }

    /// `ALTER SYSTEM name ENABLE | DISABLE`.
    pub fn set_enabled(&mut self, name: &Ident, enabled: bool) -> Result<()> {
        let Some(i) = self.find(&name.value) else {
            return Err(self.unknown_system(name));
        };
        self.systems[i].state.enabled = enabled;
        Ok(())
    }

    /// `CREATE PHASE name BEFORE | AFTER anchor`.
    pub fn create_phase(&mut self, name: &Ident, before: bool, anchor: &Ident) -> Result<()> {
        if self.phase_index(&name.value).is_some() {
            return Err(ScheduleError::PhaseExists {
                name: name.value.to_string(),
                at: name.at,
            });
        }
        let Some(a) = self.phase_index(&anchor.value) else {
            return Err(self.unknown_phase(anchor));
        };
        let at = if before { a } else { a + 1 };
        self.phases.insert(at, name.value.to_string());
        self.reorder(name.at)
    }

    /// `DROP PHASE`: only a phase that was made, and holds no system.
    pub fn drop_phase(&mut self, name: &Ident, if_exists: bool) -> Result<()> {
        let Some(i) = self.phase_index(&name.value) else {
            if if_exists {
                return Ok(());
            }
            return Err(self.unknown_phase(name));
        };
        let phase = self.phases[i].clone();
        if BUILTIN_PHASES.iter().any(|b| b.eq_ignore_ascii_case(&phase)) {
            return Err(ScheduleError::invalid(
                name.at,
                format!("phase {phase} is built in and cannot be dropped"),
            ));
        }
        let inside: Vec<&str> = self
            .systems
            .iter()
            .filter(|s| s.def.phase == phase)
            .map(|s| s.def.name.as_str())
            .collect();
        if !inside.is_empty() {
            return Err(ScheduleError::invalid(
                name.at,
                format!(
                    "phase {phase} still holds systems {} (drop them first)",
                    inside.join(", ")
                ),
            ));
        }
        self.phases.remove(i);
        Ok(())
    }
}

/// Why `statements` (or `when`) no longer bind against `world`, if they do not.
pub(super) fn unbound(statements: &[Statement], when: Option<&Statement>, world: &World) -> Option<String> {
    let params = ParamValues::default();
    statements
        .iter()
        .chain(when)
        .find_map(|s| crate::plan::plan(s, world, &params).err())
        .map(|e| e.to_string())
}

/// Binds every statement of `def` (and its WHEN, which must be a condition) against
/// `world`, keeping the plans in `prepared`.
fn bind_all(def: &SystemDef, prepared: &mut Prepared, world: &World, restores: u64) -> Result<()> {
    let params = ParamValues::default();
    // A system runs with no parameter values: say so rather than "no value given".
    let no_parameters = |e: crate::plan::PlanError| -> ScheduleError {
        match e {
            crate::plan::PlanError {
                kind: PlanErrorKind::MissingParameter { name },
                at,
            } => ScheduleError::invalid(
                at,
                format!(
                    "a system's statements take no parameters, and {name} is one: write a constant, \
                     or read the value from a component"
                ),
            ),
            other => other.into(),
        }
    };
    if let Body::Sql(statements) = &def.body {
        for (statement, slot) in statements.iter().zip(&mut prepared.slots) {
            slot.plan(statement, world, restores, &params)
                .map_err(no_parameters)?;
        }
    }
    if let Some(when) = &def.when {
        let (plan, _) = prepared
            .when
            .plan(when, world, restores, &params)
            .map_err(no_parameters)?;
        if let crate::plan::Plan::Query(q) = &*plan {
            let ty = q.columns.first().map_or(DataType::Null, |c| c.ty);
            if !matches!(ty, DataType::Bool | DataType::Null) {
                return Err(ScheduleError::invalid(
                    when.at,
                    format!("WHEN takes a condition (BOOL), found {ty}"),
                ));
            }
        }
    }
    Ok(())
}
