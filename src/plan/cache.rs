//! A plan kept between runs of one statement: a prepared `Statement`'s, or a system
//! statement's, which runs every tick.
//!
//! Invariant: a kept plan is used only while everything it was bound against is as it
//! was: the world's schema (its stamp, new whenever a type or an index is declared or
//! dropped, a rollback puts anything back, or another world is put in its place), the
//! database's restore count, each parameter's type, and each cast
//! of a parameter it leaves for the run taking the parameter's value (`ParamCast`).
//! Otherwise the statement is bound again. A plan that used a parameter's value itself
//! is never kept (`bind::bind_reusable`); one holding a subquery's result forgets it
//! before each run.

use std::sync::Arc;

use super::visit::{PlanVisitor, visit_plan};
use super::{
    BoundExpr, BoundKind, DataType, FieldSet, ParamCast, ParamValues, Plan, PlanError, RelationSource,
    SelectPlan, plan,
};
use crate::parse::Statement;
use crate::storage::{ComponentId, EventId, StorageError, World};

/// The place a statement keeps its plan in.
#[derive(Debug, Default)]
pub struct PlanSlot {
    kept: Option<(PlanKey, Plan)>,
    /// The event types the last plan bound reads.
    reads: Vec<EventId>,
    /// The kept plan holds subqueries, whose results it keeps for one run: they are
    /// forgotten before the next.
    holds_results: bool,
    /// What the last plan bound asks the world to track.
    tracks: Vec<Tracking>,
    /// A plan was bound here once: `tracks` says what the statement asks to track.
    bound_once: bool,
    /// The fields the kept plan holds instead of the whole database: an UPDATE written in
    /// place, those it reads and writes (`FieldSet::of_staged`); a read, those it reads
    /// (`FieldSet::of_read`).
    staged: Option<Arc<FieldSet>>,
}

/// What a reader's plan needs the world to keep for it: the change marks of a component
/// (`changed()`, `added()`), or the log of the ids that lose it (`removed()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tracking {
    Changes(ComponentId),
    Removals(ComponentId),
}

impl Tracking {
    /// Whether `world` keeps it already (a component that does not exist keeps nothing,
    /// and needs nothing started: the plan bound against it will not run).
    pub fn is_on(self, world: &World) -> bool {
        match self {
            Tracking::Changes(c) => !world.component(c).is_ok_and(|d| !d.is_tracked()),
            Tracking::Removals(c) => world.component(c).is_err() || world.removal_log(c).is_some(),
        }
    }

    /// Turns it on in `world`.
    pub fn start(self, world: &mut World) -> Result<(), StorageError> {
        match self {
            Tracking::Changes(c) => world.track_changes(c).map(drop),
            Tracking::Removals(c) => world.track_removals(c).map(drop),
        }
    }
}

/// A plan for one run: the kept one, or one bound for this run only; with what it asks
/// the world to track (`changed()`, `added()`, `removed()`), which must be on before it
/// runs, and whether it reads events.
#[derive(Debug)]
pub enum Planned<'s> {
    Kept(&'s Plan, &'s [Tracking], bool),
    /// Boxed, so that the common case, a kept plan, is a few words to hand back.
    Fresh(Box<Plan>, Vec<Tracking>, bool),
}

impl Planned<'_> {
    /// What the plan asks the world to track.
    pub fn tracks(&self) -> &[Tracking] {
        match self {
            Planned::Kept(_, tracks, _) => tracks,
            Planned::Fresh(_, tracks, _) => tracks,
        }
    }

    /// Whether a reader's cursors matter to it: it reads events, or asks what changed
    /// (or was removed) since the reader's last run.
    pub fn reads_cursors(&self) -> bool {
        match self {
            Planned::Kept(_, tracks, events) => *events || !tracks.is_empty(),
            Planned::Fresh(_, tracks, events) => *events || !tracks.is_empty(),
        }
    }
}

impl std::ops::Deref for Planned<'_> {
    type Target = Plan;

    fn deref(&self) -> &Plan {
        match self {
            Planned::Kept(plan, ..) => plan,
            Planned::Fresh(plan, ..) => plan,
        }
    }
}

/// The plan for this run of `statement`: the one `slot` keeps (see `PlanSlot::plan`), or,
/// for a statement that keeps none, one bound for this run. The error is boxed, so that
/// the usual answer, a kept plan, is handed back in a few words.
pub fn planned<'s>(
    slot: Option<&'s mut PlanSlot>,
    statement: &Statement,
    world: &World,
    restores: u64,
    params: &ParamValues,
) -> Result<Planned<'s>, Box<PlanError>> {
    match slot {
        // The usual case first, past the binding path: the kept plan still holds.
        Some(slot) if slot.holds(world, restores, params) => slot.kept(statement),
        Some(slot) => Ok(slot.plan(statement, world, restores, params)?.0),
        // A statement that keeps no plan is run once: no reader, so it asks for no
        // tracking and has no cursors, and its plan is not looked over for it.
        None => Ok(Planned::Fresh(
            plan(statement, world, params)?.0,
            Vec::new(),
            false,
        )),
    }
}

impl PlanSlot {
    /// Whether a run must be ready to find its plan asking the world to track something
    /// (changes, removals) it does not track yet: no plan was ever bound here. Once bound,
    /// what it asks stays tracked (tracking, once on, stays on), so only a catalog change
    /// can make a run find a request not met.
    pub fn may_track(&self) -> bool {
        !self.bound_once
    }

    /// The plan for this run of `statement`, and whether it was bound just now: the kept
    /// one while nothing it depends on changed, else a new one (kept for later runs when
    /// it may be).
    pub fn plan(
        &mut self,
        statement: &Statement,
        world: &World,
        restores: u64,
        params: &ParamValues,
    ) -> Result<(Planned<'_>, bool), PlanError> {
        let bind = !self
            .kept
            .as_ref()
            .is_some_and(|(key, _)| key.matches(world, restores, params));
        if bind {
            self.kept = None;
            let (mut fresh, reuse) = plan(statement, world, params)?;
            let looked = looked_over(&mut fresh);
            (self.reads, self.holds_results, self.tracks) =
                (looked.reads, looked.holds_results, looked.tracks);
            self.bound_once = true;
            self.staged = None;
            let Some(casts) = reuse else {
                let events = !self.reads.is_empty();
                return Ok((Planned::Fresh(fresh, self.tracks.clone(), events), true));
            };
            if !self.holds_results && self.tracks.is_empty() && self.reads.is_empty() {
                self.staged = FieldSet::of_staged(&mut fresh)
                    .or_else(|| FieldSet::of_read(&mut fresh))
                    .map(Arc::new);
            }
            self.kept = Some((PlanKey::new(world, restores, params, casts), *fresh));
        }
        match &mut self.kept {
            Some((_, plan)) => {
                if !bind && self.holds_results {
                    forget_results(plan);
                }
                Ok((Planned::Kept(plan, &self.tracks, !self.reads.is_empty()), bind))
            }
            None => Err(PlanError::invalid(
                statement.at,
                "internal error: a kept plan was lost",
            )),
        }
    }

    /// Whether the kept plan can run as it is: nothing it depends on changed, and it
    /// keeps no subquery results to forget first.
    #[inline]
    fn holds(&self, world: &World, restores: u64, params: &ParamValues) -> bool {
        !self.holds_results
            && self
                .kept
                .as_ref()
                .is_some_and(|(key, _)| key.matches(world, restores, params))
    }

    /// The kept query and its point read, when its first run found it one
    /// (`QueryPlan::point`), it reads no events and asks for no tracking, and it keeps no
    /// subquery results: what a point read (prepared, or a kept text) needs to be answered
    /// past the statement machinery (`engine/prepared.rs`, `Client::point_read`), once
    /// `kept_holds` says the plan still holds. Checked before a short way reads
    /// anything.
    #[inline]
    pub fn kept_point(&self) -> Option<(&super::QueryPlan, &super::PointRead)> {
        match self.kept_alone()? {
            Plan::Query(q) => Some((q, q.point.get()?.as_ref()?)),
            _ => None,
        }
    }

    /// The kept UPDATE, when it reads no events, asks for no tracking and keeps no
    /// subquery results: what a prepared write needs to be run past the statement
    /// machinery (`engine/prepared.rs`, `Client::kept_write`), once `kept_holds` says the
    /// plan still holds. The plan is the whole `Plan::Update`, for `exec::run_write`.
    #[inline]
    pub fn kept_write(&self) -> Option<&Plan> {
        self.kept_alone().filter(|plan| matches!(plan, Plan::Update(_)))
    }

    /// The kept plan, when it reads no events, asks for no tracking and keeps no
    /// subquery results: one a short way may run with nothing else to do around it.
    #[inline]
    fn kept_alone(&self) -> Option<&Plan> {
        if !self.reads.is_empty() || !self.tracks.is_empty() || self.holds_results {
            return None;
        }
        self.kept.as_ref().map(|(_, plan)| plan)
    }

    /// Whether the kept plan, which `kept_point` or `kept_write` gave, can run as it is in
    /// `world` with `params`.
    #[inline]
    pub fn kept_holds(&self, world: &World, restores: u64, params: &ParamValues) -> bool {
        self.kept
            .as_ref()
            .is_some_and(|(key, _)| key.matches(world, restores, params))
    }

    /// The kept plan, whether or not it still holds: what its last run learned.
    pub fn last_plan(&self) -> Option<&Plan> {
        self.kept.as_ref().map(|(_, plan)| plan)
    }

    /// The kept plan, when `holds` said it can run as it is.
    fn kept(&self, statement: &Statement) -> Result<Planned<'_>, Box<PlanError>> {
        match &self.kept {
            Some((_, plan)) => Ok(Planned::Kept(plan, &self.tracks, !self.reads.is_empty())),
            None => Err(Box::new(PlanError::invalid(
                statement.at,
                "internal error: a kept plan was lost",
            ))),
        }
    }

    /// Drops the subquery results the kept plan holds from its last run (they are
    /// forgotten before the next run anyway; this gives their memory back now).
    pub fn forget_results(&mut self) {
        if self.holds_results
            && let Some((_, plan)) = &mut self.kept
        {
            forget_results(plan);
        }
    }

    /// The event types the plan last bound reads (in FROM, subqueries included).
    pub fn reads(&self) -> &[EventId] {
        &self.reads
    }

    /// What the plan last bound asks the world to track.
    pub fn tracks(&self) -> &[Tracking] {
        &self.tracks
    }

    /// The fields the kept plan holds instead of the whole database, when it may
    /// (`FieldSet::of_staged`, `FieldSet::of_read`).
    pub fn staged(&self) -> Option<&Arc<FieldSet>> {
        self.staged.as_ref()
    }
}

/// The event types `plan` reads (each once, in the order met), and whether it holds a
/// subquery whose result it keeps for a run.
fn looked_over(plan: &mut Plan) -> Looked {
    let mut look = Looked::default();
    visit_plan(plan, &mut look);
    look
}

/// What `looked_over` finds in a plan.
#[derive(Default)]
struct Looked {
    reads: Vec<EventId>,
    holds_results: bool,
    tracks: Vec<Tracking>,
}

impl Looked {
    fn track(&mut self, asked: Tracking) {
        if !self.tracks.contains(&asked) {
            self.tracks.push(asked);
        }
    }
}

impl PlanVisitor for Looked {
    fn select(&mut self, select: &mut SelectPlan) {
        for r in &select.relations {
            match &r.source {
                RelationSource::Events(scan) if !self.reads.contains(&scan.event) => {
                    self.reads.push(scan.event);
                }
                RelationSource::Entities(scan) => {
                    for &(_, column) in &scan.columns {
                        if let Some(c) = column.asks_changes_of() {
                            self.track(Tracking::Changes(c));
                        }
                    }
                }
                RelationSource::Removed { component, .. } => self.track(Tracking::Removals(*component)),
                _ => {}
            }
        }
    }
    fn expr(&mut self, e: &mut BoundExpr) {
        self.holds_results |= matches!(
            e.kind,
            BoundKind::Subquery { .. } | BoundKind::InSubquery { .. } | BoundKind::Exists { .. }
        );
    }
}

/// Forgets the subquery results a run of `plan` kept, so that the next run computes them
/// again on the world as it is then.
fn forget_results(plan: &mut Plan) {
    struct Forget;
    impl PlanVisitor for Forget {
        fn expr(&mut self, e: &mut BoundExpr) {
            let correlated = match &mut e.kind {
                BoundKind::Subquery {
                    value, correlated, ..
                } => {
                    drop(value.take());
                    correlated
                }
                BoundKind::InSubquery {
                    values, correlated, ..
                } => {
                    drop(values.take());
                    correlated
                }
                BoundKind::Exists {
                    value, correlated, ..
                } => {
                    value.take();
                    correlated
                }
                _ => return,
            };
            if let Some(c) = correlated {
                c.results.get_mut().clear();
                *c.kept_bytes.get_mut() = 0;
            }
        }
    }
    visit_plan(plan, &mut Forget);
}

/// What a plan depends on besides parameter values: the world's schema (its stamp, new
/// whenever a type, an index or the table ids change), the restore count, each
/// parameter's type, and the casts of parameters left for the run.
#[derive(Debug)]
struct PlanKey {
    schema: u64,
    restores: u64,
    positional: Vec<DataType>,
    named: Vec<(String, DataType)>,
    lenient: bool,
    casts: Vec<ParamCast>,
}

impl PlanKey {
    fn new(world: &World, restores: u64, params: &ParamValues, casts: Vec<ParamCast>) -> PlanKey {
        PlanKey {
            schema: world.schema_stamp(),
            restores,
            positional: params.positional.iter().map(DataType::of).collect(),
            named: params
                .named
                .iter()
                .map(|(n, v)| (n.clone(), DataType::of(v)))
                .collect(),
            lenient: params.lenient,
            casts,
        }
    }

    /// Whether the plan keyed so serves a run with `params` in `world`: `PlanKey::new`
    /// would make the same key, and each cast left for the run takes its value.
    #[inline]
    fn matches(&self, world: &World, restores: u64, params: &ParamValues) -> bool {
        self.restores == restores
            && self.schema == world.schema_stamp()
            && self.lenient == params.lenient
            && self.positional.len() == params.positional.len()
            && self.named.len() == params.named.len()
            && self
                .positional
                .iter()
                .zip(&params.positional)
                .all(|(t, v)| *t == DataType::of(v))
            // Looked at only when there are any: the zip's fold of two empty lists was
            // called out of line, 45 of a prepared point read's 635 instructions.
            && (self.named.is_empty() || self.named_match(params))
            && (self.casts.is_empty() || self.casts.iter().all(|c| c.takes(params)))
    }

    /// Whether each named parameter's value has the type this key was made with.
    fn named_match(&self, params: &ParamValues) -> bool {
        self.named
            .iter()
            .zip(&params.named)
            .all(|((n, t), (name, v))| n == name && *t == DataType::of(v))
    }
}
