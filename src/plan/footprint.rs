//! A statement's footprint: what of the world its bound plan reads and writes. The
//! schedule compares the footprints of systems to tell which may run at the same time
//! without changing a tick's result (`schedule/conflicts.rs`).
//!
//! Invariants:
//! - A footprint over-states, never under-states: every field a run can read or write is
//!   in it, with the tables it can touch named by the scan's components (`Tables`), and
//!   any plan this pass does not know runs alone (`Footprint::alone`).
//! - Reads come from every scan of the plan (subqueries, WHEN conditions, the rows of a
//!   write, RETURNING), through `visit_plan`; writes from the statement's kind.
//! - A change detection read (`changed()`, `added()`) reads the marks its writers stamp,
//!   so it is a read of the field (or of the whole component).

use super::visit::{PlanVisitor, visit_plan};
use super::{ConflictPlan, Plan, RelationSource, ScanColumn, SelectPlan};
use crate::storage::{ComponentId, EventId, FieldId, TableId};

/// What a statement reads and writes of the world, from its bound plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Footprint {
    /// The fields read, each with the tables the read can reach.
    pub reads: Vec<Touch>,
    /// The fields written, each with the tables the write can reach.
    pub writes: Vec<Touch>,
    /// The tables whose rows a scan walks (a count reads no field, yet every row).
    pub scans: Vec<Tables>,
    /// Entities made or ended, or rows moved between tables (a component attached or
    /// detached): the entity index changes.
    pub moves: Option<Moves>,
    /// Entities found by their id (`id = e`, an index's answer, a join, a traversal):
    /// reads the entity index.
    pub looks_up_ids: bool,
    pub events_read: Vec<EventId>,
    pub events_emitted: Vec<EventId>,
    /// The components whose removal logs `removed()` reads.
    pub removals_read: Vec<ComponentId>,
    /// A statement that is no read or write of rows (a DDL, a PRAGMA, COPY FROM a file…):
    /// it runs alone.
    pub alone: bool,
}

/// A read or write of a component's field (or of all its fields), in the tables a scan
/// reaches.
#[derive(Clone, Debug, PartialEq)]
pub struct Touch {
    pub part: Part,
    pub tables: Tables,
}

/// What of a component a touch reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Field(FieldId),
    /// Every field, and the marks `changed(C)` and `added(C)` read.
    Whole(ComponentId),
}

impl Part {
    pub fn component(self) -> ComponentId {
        match self {
            Part::Field(f) => f.component(),
            Part::Whole(c) => c,
        }
    }

    /// Whether the two reach a field in common.
    pub fn overlaps(self, other: Part) -> bool {
        match (self, other) {
            (Part::Field(a), Part::Field(b)) => a == b,
            (a, b) => a.component() == b.component(),
        }
    }
}

/// The archetype tables a scan reaches: those holding every `required` component and
/// none of the `excluded`, or only the one named.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tables {
    pub required: super::ComponentList,
    pub excluded: super::ComponentList,
    pub only: Option<TableId>,
}

impl Tables {
    /// Whether a table of exactly `components` is one of them (`only` aside).
    pub fn admit(&self, components: &[ComponentId]) -> bool {
        self.required.iter().all(|c| components.contains(c))
            && !self.excluded.iter().any(|c| components.contains(c))
    }
}

/// How a statement changes which entities exist or which tables hold them.
#[derive(Clone, Debug, PartialEq)]
pub enum Moves {
    /// New entities, each in the table of exactly these components.
    Spawn(Vec<ComponentId>),
    /// Entities ended: rows leave tables, and no table is made.
    End,
    /// Components attached or detached (or several kinds of move): rows leave tables for
    /// tables that may not exist yet.
    Anywhere,
}

impl Footprint {
    /// The footprint of a bound `plan`.
    pub fn of(plan: &mut Plan) -> Footprint {
        let mut reads = Reads::default();
        visit_plan(plan, &mut reads);
        let mut footprint = reads.footprint;
        footprint.add_writes(plan);
        footprint
    }

    /// Adds `other` to this one (the statements of one system).
    pub fn extend(&mut self, other: &Footprint) {
        for t in &other.reads {
            push_new(&mut self.reads, t.clone());
        }
        for t in &other.writes {
            push_new(&mut self.writes, t.clone());
        }
        for t in &other.scans {
            push_new(&mut self.scans, t.clone());
        }
        self.moves = match (self.moves.take(), &other.moves) {
            (None, m) => m.clone(),
            (m, None) => m,
            (Some(Moves::Spawn(a)), Some(Moves::Spawn(b))) if a == *b => Some(Moves::Spawn(a)),
            (Some(Moves::End), Some(Moves::End)) => Some(Moves::End),
            (Some(_), Some(_)) => Some(Moves::Anywhere),
        };
        self.looks_up_ids |= other.looks_up_ids;
        for &e in &other.events_read {
            push_new(&mut self.events_read, e);
        }
        for &e in &other.events_emitted {
            push_new(&mut self.events_emitted, e);
        }
        for &c in &other.removals_read {
            push_new(&mut self.removals_read, c);
        }
        self.alone |= other.alone;
    }

    fn add_writes(&mut self, plan: &mut Plan) {
        match plan {
            Plan::Query(_) => {}
            Plan::Update(u) => {
                let tables = match u.select.relations.first().map(|r| &r.source) {
                    Some(RelationSource::Entities(scan)) if u.id_slot.is_none() => Tables {
                        required: scan.required.clone(),
                        excluded: scan.excluded.clone(),
                        only: scan.only,
                    },
                    // The target found by the id a join gave.
                    _ => {
                        self.looks_up_ids = true;
                        Tables {
                            required: smallvec::smallvec![u.target],
                            ..Tables::default()
                        }
                    }
                };
                for a in &u.assignments {
                    push_new(
                        &mut self.writes,
                        Touch {
                            part: Part::Field(a.field),
                            tables: tables.clone(),
                        },
                    );
                }
            }
            Plan::Spawn(s) => {
                let mut components: Vec<ComponentId> = s.components.iter().map(|(c, _)| *c).collect();
                components.sort();
                self.moves = Some(match self.moves.take() {
                    None => Moves::Spawn(components),
                    Some(_) => Moves::Anywhere,
                });
                // SPAWN AT takes the ids it is given.
                self.looks_up_ids |= s.id_column.is_some();
            }
            Plan::Insert(i) => {
                self.moves = Some(Moves::Anywhere);
                self.looks_up_ids = true;
                let whole = Touch {
                    part: Part::Whole(i.component),
                    tables: Tables {
                        required: smallvec::smallvec![i.component],
                        ..Tables::default()
                    },
                };
                if matches!(i.on_conflict, ConflictPlan::DoUpdate(_) | ConflictPlan::Replace) {
                    push_new(&mut self.writes, whole);
                }
            }
            Plan::Delete { .. } => {
                self.moves = Some(Moves::Anywhere);
                self.looks_up_ids = true;
            }
            Plan::Despawn { .. } => {
                self.moves = Some(match self.moves.take() {
                    None | Some(Moves::End) => Moves::End,
                    Some(_) => Moves::Anywhere,
                });
                self.looks_up_ids = true;
            }
            Plan::Emit(e) => push_new(&mut self.events_emitted, e.event),
            Plan::Returning { write, .. } => {
                self.looks_up_ids = true;
                self.add_writes(write);
            }
            Plan::Explain(_) | Plan::Subscribe(_) => {}
            Plan::ExplainAnalyze { plan, .. } => self.add_writes(plan),
            _ => self.alone = true,
        }
    }
}

/// The fields a statement holds instead of the whole database (`engine/beside.rs`): those
/// it writes, and those it reads but does not write. Two statements whose sets do not
/// meet (no field one writes that the other reads or writes) give the same world in
/// either order, and neither reads what the other writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    pub reads: Vec<Part>,
    pub writes: Vec<Part>,
}

impl FieldSet {
    /// The set of a bound `plan` that may be written beside others (`exec::write_beside`,
    /// which looks at the rest): an UPDATE of one entity scan without RETURNING, making,
    /// ending or moving no entity, reading no events and no removal log. `None` for any
    /// other plan.
    pub fn of_staged(plan: &mut Plan) -> Option<FieldSet> {
        let Plan::Update(u) = &*plan else {
            return None;
        };
        let one_scan = matches!(
            u.select.relations.as_slice(),
            [r] if r.on.is_none() && r.filter.is_none() && matches!(r.source, RelationSource::Entities(_))
        );
        if !one_scan || u.returning || u.id_slot.is_some() {
            return None;
        }
        let f = Footprint::of(plan);
        if f.alone || f.moves.is_some() || !f.events_read.is_empty() || !f.removals_read.is_empty() {
            return None;
        }
        let mut set = FieldSet::default();
        for t in &f.writes {
            push_new(&mut set.writes, t.part);
        }
        for t in &f.reads {
            if !set
                .writes
                .iter()
                .any(|&w| w == t.part || w == Part::Whole(t.part.component()))
            {
                push_new(&mut set.reads, t.part);
            }
        }
        Some(set)
    }

    /// The set of a bound `plan` that reads rows and writes nothing (a SELECT…), which
    /// may run beside writes beside others that write none of it: the fields it reads.
    /// `None` for any other plan, or one that reads events or removal logs.
    pub fn of_read(plan: &mut Plan) -> Option<FieldSet> {
        let f = Footprint::of(plan);
        let writes = !f.writes.is_empty() || f.moves.is_some() || !f.events_emitted.is_empty();
        if f.alone || writes || !f.events_read.is_empty() || !f.removals_read.is_empty() {
            return None;
        }
        let mut set = FieldSet::default();
        for t in &f.reads {
            push_new(&mut set.reads, t.part);
        }
        Some(set)
    }

    /// Whether `self` and `other` may hold their fields at the same time: no field one
    /// writes is one the other reads or writes.
    pub fn meets(&self, other: &FieldSet) -> bool {
        let hits = |writes: &[Part], other: &FieldSet| {
            writes
                .iter()
                .any(|&w| other.writes.iter().chain(&other.reads).any(|&p| w.overlaps(p)))
        };
        hits(&self.writes, other) || hits(&other.writes, self)
    }
}

fn push_new<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// The reads of every scan of a plan.
#[derive(Default)]
struct Reads {
    footprint: Footprint,
}

impl PlanVisitor for Reads {
    fn select(&mut self, select: &mut SelectPlan) {
        let f = &mut self.footprint;
        if select.relations.len() > 1 {
            f.looks_up_ids = true;
        }
        for r in &select.relations {
            match &r.source {
                RelationSource::Entities(scan) => {
                    let tables = Tables {
                        required: scan.required.clone(),
                        excluded: scan.excluded.clone(),
                        only: scan.only,
                    };
                    f.looks_up_ids |= scan.ids.is_some() || scan.index.is_some() || scan.reads_sparse;
                    push_new(&mut f.scans, tables.clone());
                    let columns = scan.columns.iter().map(|&(_, c)| c).chain(scan.changes);
                    for column in columns {
                        let part = match column {
                            ScanColumn::Field(field) | ScanColumn::Changed(field) => Part::Field(field),
                            ScanColumn::ChangedAny(c) | ScanColumn::Added(c) => Part::Whole(c),
                            ScanColumn::Has(_) | ScanColumn::Id | ScanColumn::Archetype => continue,
                        };
                        push_new(
                            &mut f.reads,
                            Touch {
                                part,
                                tables: tables.clone(),
                            },
                        );
                    }
                }
                RelationSource::Traversal(t) => {
                    f.looks_up_ids = true;
                    push_new(
                        &mut f.scans,
                        Tables {
                            required: smallvec::smallvec![t.field.component()],
                            ..Tables::default()
                        },
                    );
                    push_new(
                        &mut f.reads,
                        Touch {
                            part: Part::Field(t.field),
                            tables: Tables {
                                required: smallvec::smallvec![t.field.component()],
                                ..Tables::default()
                            },
                        },
                    );
                }
                RelationSource::Events(scan) => push_new(&mut f.events_read, scan.event),
                RelationSource::Removed { component, .. } => push_new(&mut f.removals_read, *component),
                RelationSource::Series { .. }
                | RelationSource::Catalog { .. }
                | RelationSource::Query { .. }
                | RelationSource::WorkTable { .. } => {}
            }
        }
    }
}
