//! Which systems of a tick may run at the same time without changing its result. The
//! declared run order defines the result; two systems may overlap only when no
//! order-sensitive pair of accesses lies between them, so that running them in either
//! order, or at once, leaves the world, the events and their order exactly as the
//! declared order does.
//!
//! Invariants:
//! - A system's access is the union of its statements' footprints and its WHEN's
//!   (`plan::Footprint`), bound against the world as the tick will find it; a Rust
//!   closure's is its declaration's (`view.rs`) and its WHEN's. A Rust closure given the
//!   whole world runs alone; so does one whose declaration names no such component or
//!   field, a system whose statements do not bind, or one with a statement that reads or
//!   writes no rows.
//! - Order-sensitive pairs: a field one writes and the other reads or writes, in tables
//!   both reach; entities made, ended or moved by one and anything the other reaches of
//!   those tables, its lookups by id, its `removed()`, or the other's own such changes; an
//!   event type one emits and the other reads or emits; an index both keep. Anything
//!   else commutes: reads beside reads, the clock, `random()` (seeded per system).
//! - Tables are judged as they exist, plus those a SPAWN of any enabled system may make
//!   (EVERY's too, whatever the tick); when some enabled system attaches or detaches
//!   components (whose rows may land in tables not made yet), or runs alone (a Rust
//!   closure may do anything), by components alone: two scans may meet unless one requires
//!   what the other excludes.

use super::{Body, Schedule};
use crate::index::Indexes;
use crate::plan::{Footprint, Moves, Part, Plan, RelationSource, Tables, Touch};
use crate::storage::{ComponentId, World};

/// What one system reads and writes, for the tick's conflict table.
#[derive(Clone, Debug)]
pub(crate) struct Access {
    pub name: String,
    /// Enabled (ALTER SYSTEM … ENABLE): it runs in some tick.
    pub active: bool,
    /// It runs in the next tick: enabled, and not skipped by its EVERY.
    pub enabled: bool,
    pub footprint: Footprint,
    /// Why the system runs alone, whatever the others do.
    pub alone: Option<&'static str>,
    /// Its body is one UPDATE of one entity scan, with no WHEN: what may compute its
    /// values apart from writing them (`together.rs`).
    pub one_update: bool,
}

impl Schedule {
    /// Each system's access in the next tick, in run order, bound against `world`.
    pub(crate) fn accesses(&self, world: &World) -> Vec<Access> {
        self.order
            .iter()
            .map(|&i| {
                let s = &self.systems[i];
                let mut footprint = Footprint::default();
                let mut alone = None;
                let mut one_update = false;
                match &s.def.body {
                    Body::Rust(_, declared) => {
                        match declared.lock().as_ref().map(|a| a.resolve(world)) {
                            None => alone = Some("a Rust closure given the whole world"),
                            Some(Ok(declared)) => footprint = declared.footprint(),
                            Some(Err(_)) => {
                                alone = Some("its declared access names no such component or field")
                            }
                        }
                        if let Some(when) = &s.def.when {
                            match crate::plan::plan_to_explain(when, world) {
                                Ok(mut plan) => footprint.extend(&Footprint::of(&mut plan)),
                                Err(_) => alone = Some("its statements do not bind"),
                            }
                        }
                    }
                    Body::Sql(statements) => {
                        for statement in s.def.when.iter().chain(statements) {
                            match crate::plan::plan_to_explain(statement, world) {
                                Ok(mut plan) => {
                                    one_update = s.def.when.is_none()
                                        && statements.len() == 1
                                        && matches!(&plan, Plan::Update(u) if matches!(
                                            u.select.relations.as_slice(),
                                            [r] if matches!(r.source, RelationSource::Entities(_))
                                        ));
                                    footprint.extend(&Footprint::of(&mut plan));
                                }
                                Err(_) => alone = Some("its statements do not bind"),
                            }
                        }
                        if alone.is_none() && footprint.alone {
                            alone = Some("a statement that reads or writes no rows");
                        }
                    }
                }
                let next = self.clock.tick + 1;
                Access {
                    name: s.def.name.clone(),
                    active: s.state.enabled,
                    enabled: s.state.enabled && s.def.every.is_none_or(|n| next.is_multiple_of(n)),
                    footprint,
                    alone,
                    one_update,
                }
            })
            .collect()
    }
}

/// The tables the systems of one tick may reach.
pub(crate) struct Universe<'w> {
    world: &'w World,
    /// The tables the SPAWNs of enabled systems may make, as their components (sorted).
    spawned: Vec<Vec<ComponentId>>,
    /// Some enabled system attaches or detaches components, or runs alone: tables are
    /// judged by components.
    by_components: bool,
}

impl<'w> Universe<'w> {
    pub(crate) fn new(world: &'w World, accesses: &[Access]) -> Universe<'w> {
        let mut spawned = Vec::new();
        let mut by_components = false;
        // Every system that runs in some tick, EVERY's included: the tables it may make
        // are judged whatever the tick. One that runs alone may change anything.
        for a in accesses.iter().filter(|a| a.active) {
            by_components |= a.alone.is_some();
            match &a.footprint.moves {
                Some(Moves::Spawn(components)) => spawned.push(components.clone()),
                Some(Moves::Anywhere) => by_components = true,
                Some(Moves::End) | None => {}
            }
        }
        Universe {
            world,
            spawned,
            by_components,
        }
    }

    /// Whether a table holding `component` may be reached by both scans.
    fn meet(&self, a: &Tables, b: &Tables, component: ComponentId) -> bool {
        let sparse = self
            .world
            .component(component)
            .is_ok_and(|d| d.sparse_table().is_some());
        if sparse {
            // One table per sparse component, whatever the scans require.
            return true;
        }
        let holds = |components: &[ComponentId]| {
            components.contains(&component) && a.admit(components) && b.admit(components)
        };
        if let Some(only) = a.only.or(b.only) {
            return self
                .world
                .tables()
                .find(|t| t.id() == only)
                .is_some_and(|t| holds(t.components()));
        }
        if self.by_components {
            let required = a.required.iter().chain(&b.required);
            let excluded: Vec<&ComponentId> = a.excluded.iter().chain(&b.excluded).collect();
            return !excluded.contains(&&component) && !required.into_iter().any(|c| excluded.contains(&c));
        }
        self.world.tables().any(|t| holds(t.components())) || self.spawned.iter().any(|s| holds(s))
    }

    /// Whether a SPAWN of exactly `components` makes rows the touch may reach.
    fn spawns_into(&self, components: &[ComponentId], t: &Touch) -> bool {
        let c = t.part.component();
        if self.world.component(c).is_ok_and(|d| d.sparse_table().is_some()) {
            return components.contains(&c);
        }
        components.contains(&c) && self.spawns_rows_of(components, &t.tables)
    }

    /// Whether a SPAWN of exactly `components` makes rows a scan of `tables` walks.
    fn spawns_rows_of(&self, components: &[ComponentId], tables: &Tables) -> bool {
        let sparse = |c: &ComponentId| self.world.component(*c).is_ok_and(|d| d.sparse_table().is_some());
        // A sparse component is in no archetype table: the spawn's table lacks it.
        let dense: Vec<ComponentId> = components.iter().copied().filter(|c| !sparse(c)).collect();
        let required_dense = tables.required.iter().all(|c| sparse(c) || dense.contains(c));
        let required_sparse = tables
            .required
            .iter()
            .filter(|c| sparse(c))
            .all(|c| components.contains(c));
        required_dense
            && required_sparse
            && !tables.excluded.iter().any(|c| components.contains(c))
            && tables.only.is_none_or(|only| {
                self.world
                    .tables()
                    .find(|table| table.id() == only)
                    .is_some_and(|table| table.components() == dense.as_slice())
            })
    }

    fn field_name(&self, part: Part) -> String {
        let Ok(def) = self.world.component(part.component()) else {
            return "a dropped component".to_owned();
        };
        match part {
            Part::Field(f) => match def.fields().get(f.index()) {
                Some(field) => format!("{}.{}", def.name(), field.name()),
                None => def.name().to_owned(),
            },
            Part::Whole(_) => def.name().to_owned(),
        }
    }

    fn event_name(&self, e: crate::storage::EventId) -> String {
        self.world
            .event(e)
            .map_or_else(|_| "a dropped event type".to_owned(), |q| q.name().to_owned())
    }

    fn component_names(&self, components: &[ComponentId]) -> String {
        let names: Vec<&str> = components
            .iter()
            .filter_map(|&c| self.world.component(c).ok().map(|d| d.name()))
            .collect();
        names.join(", ")
    }

    /// The indexes a write of `part` keeps up to date.
    fn indexes_of(&self, part: Part) -> Vec<String> {
        Indexes::of(self.world)
            .iter()
            .filter(|i| {
                i.component() == part.component()
                    && match part {
                        Part::Field(f) => i.fields().contains(&f),
                        Part::Whole(_) => true,
                    }
            })
            .map(|i| i.name().to_owned())
            .collect()
    }

    /// What a system reads and what it writes, as SHOW SYSTEMS says them: fields, then
    /// event types and removal logs read; fields, then entities made, ended or moved and
    /// event types emitted.
    pub(crate) fn describe(&self, access: &Access) -> (String, String) {
        if let Some(why) = access.alone {
            let all = format!("everything ({why})");
            return (all.clone(), all);
        }
        let f = &access.footprint;
        let mut reads: Vec<String> = Vec::new();
        for t in &f.reads {
            let name = self.field_name(t.part);
            if !reads.contains(&name) {
                reads.push(name);
            }
        }
        // A scan that reads no field of what it requires still reads its rows (a count).
        for tables in &f.scans {
            if !f
                .reads
                .iter()
                .any(|t| tables.required.contains(&t.part.component()))
            {
                let rows = match tables.required.as_slice() {
                    [] => "every entity".to_owned(),
                    required => format!("rows of ({})", self.component_names(required)),
                };
                if !reads.contains(&rows) {
                    reads.push(rows);
                }
            }
        }
        reads.extend(
            f.events_read
                .iter()
                .map(|&e| format!("events {}", self.event_name(e))),
        );
        reads.extend(
            f.removals_read
                .iter()
                .map(|&c| format!("removed({})", self.component_names(&[c]))),
        );
        let mut writes: Vec<String> = Vec::new();
        for t in &f.writes {
            let name = self.field_name(t.part);
            if !writes.contains(&name) {
                writes.push(name);
            }
        }
        match &f.moves {
            Some(Moves::Spawn(components)) => {
                writes.push(format!("spawns ({})", self.component_names(components)))
            }
            Some(Moves::End) => writes.push("ends entities".to_owned()),
            Some(Moves::Anywhere) => writes.push("moves entities between tables".to_owned()),
            None => {}
        }
        writes.extend(
            f.events_emitted
                .iter()
                .map(|&e| format!("events {}", self.event_name(e))),
        );
        (reads.join(", "), writes.join(", "))
    }

    /// Why `later` may not run beside `earlier` (which comes first in the run order), or
    /// `None` when the two commute.
    pub(crate) fn conflict(&self, earlier: &Access, later: &Access) -> Option<String> {
        if let Some(why) = earlier.alone {
            return Some(format!("{} runs alone ({why})", earlier.name));
        }
        if let Some(why) = later.alone {
            return Some(format!("{} runs alone ({why})", later.name));
        }
        let (a, b) = (&earlier.footprint, &later.footprint);
        let (an, bn) = (&earlier.name, &later.name);
        // A field written by one, read or written by the other, where both reach.
        for (w, wn, other, on) in [(a, an, b, bn), (b, bn, a, an)] {
            for wt in &w.writes {
                let reaches = |t: &&Touch| {
                    wt.part.overlaps(t.part) && self.meet(&wt.tables, &t.tables, wt.part.component())
                };
                let field = || self.field_name(wt.part);
                if other.writes.iter().any(|t| reaches(&t)) {
                    return Some(format!("{an} and {bn} both write {}", field()));
                }
                if other.reads.iter().any(|t| reaches(&t)) {
                    return Some(format!("{wn} writes {}; {on} reads it", field()));
                }
            }
        }
        // Entities made, ended or moved.
        match (&a.moves, &b.moves) {
            (Some(_), Some(_)) => {
                return Some(format!("{an} and {bn} both make, end or move entities"));
            }
            (Some(m), None) | (None, Some(m)) => {
                let (mover, other, on) = if a.moves.is_some() {
                    (an, b, bn)
                } else {
                    (bn, a, an)
                };
                let what = match m {
                    Moves::Spawn(components) => format!("spawns ({})", self.component_names(components)),
                    Moves::End => "ends entities".to_owned(),
                    Moves::Anywhere => "moves entities between tables".to_owned(),
                };
                let writes = other.writes.iter().map(|t| ("writes", t));
                for (how, t) in writes.chain(other.reads.iter().map(|t| ("reads", t))) {
                    let reached = match m {
                        Moves::Spawn(components) => self.spawns_into(components, t),
                        Moves::End | Moves::Anywhere => true,
                    };
                    if reached {
                        let field = self.field_name(t.part);
                        return Some(format!("{mover} {what} where {on} {how} {field}"));
                    }
                }
                for tables in &other.scans {
                    let reached = match m {
                        Moves::Spawn(components) => self.spawns_rows_of(components, tables),
                        Moves::End | Moves::Anywhere => true,
                    };
                    if reached {
                        let what_scanned = match tables.required.as_slice() {
                            [] => "every entity".to_owned(),
                            required => format!("the entities with ({})", self.component_names(required)),
                        };
                        return Some(format!("{mover} {what} where {on} scans {what_scanned}"));
                    }
                }
                if other.looks_up_ids {
                    return Some(format!("{mover} {what}, and {on} looks entities up by id"));
                }
                if let Some(&c) = other.removals_read.first()
                    && matches!(m, Moves::End | Moves::Anywhere)
                {
                    return Some(format!(
                        "{mover} {what}, and {on} reads removed({})",
                        self.component_names(&[c])
                    ));
                }
            }
            (None, None) => {}
        }
        // Event types: rows emitted by one and read, or emitted too, by the other.
        for &e in &a.events_emitted {
            if b.events_emitted.contains(&e) {
                return Some(format!("{an} and {bn} both emit {}", self.event_name(e)));
            }
            if b.events_read.contains(&e) {
                return Some(format!("{an} emits {}; {bn} reads it", self.event_name(e)));
            }
        }
        if let Some(&e) = b.events_emitted.iter().find(|e| a.events_read.contains(e)) {
            return Some(format!("{bn} emits {}; {an} reads it", self.event_name(e)));
        }
        // An index kept up to date by both (through different fields).
        for wa in &a.writes {
            for index in self.indexes_of(wa.part) {
                if b.writes
                    .iter()
                    .any(|wb| self.indexes_of(wb.part).contains(&index))
                {
                    return Some(format!("{an} and {bn} both keep index {index} up to date"));
                }
            }
        }
        None
    }
}

/// Where a system stands in a tick: the earlier systems it waits for, each with why, and
/// the wave it may start in (1: at the tick's start; n: once the waits of waves before it
/// are done); a disabled system is in no wave.
#[derive(Debug, Default)]
pub(crate) struct Standing {
    pub waits: Vec<(usize, String)>,
    pub wave: Option<usize>,
}

/// The `Standing` of each system of `accesses`, in run order.
pub(crate) fn standings(universe: &Universe<'_>, accesses: &[Access]) -> Vec<Standing> {
    let mut out: Vec<Standing> = Vec::with_capacity(accesses.len());
    for (j, later) in accesses.iter().enumerate() {
        if !later.enabled {
            out.push(Standing::default());
            continue;
        }
        let mut waits = Vec::new();
        let mut wave = 1;
        for (i, earlier) in accesses[..j].iter().enumerate() {
            if !earlier.enabled {
                continue;
            }
            if let Some(why) = universe.conflict(earlier, later) {
                if let Some(w) = out[i].wave {
                    wave = wave.max(w + 1);
                }
                waits.push((i, why));
            }
        }
        out.push(Standing {
            waits,
            wave: Some(wave),
        });
    }
    out
}
