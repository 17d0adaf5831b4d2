//! How a subscription keeps its query's result from one commit to the next
//! (`engine/live/`), read from the query's plan: what EXPLAIN SUBSCRIBE says, and the way
//! the subscription then takes.
//!
//! Invariants:
//! - A query is kept per entity only when each of its rows comes from one entity of
//!   each of its relations (entity scans, inner-joined) and depends on nothing but
//!   those entities' components among their relation's `components` (their presence
//!   and their values) and the statement's constants and parameters: then a row none
//!   of whose entities had one of its relation's components come, go or be written
//!   since the last commit is the same (or as absent) as then, and joining again the
//!   entities that did, each relation's in its turn, to the others gives the batch a
//!   run of the whole query would.
//! - A query is kept per group when it aggregates such rows with aggregates that can
//!   take a row out as exactly as they took it in (count, an INT sum, an avg of INT,
//!   min and max of values whose order has no ties between different values): a
//!   group's results follow from its members' contributions whatever order they came
//!   in, as a run's do.
//! - Every other query is run again at each commit, and `Upkeep::Rerun` names the part
//!   of it that asks for that.

use super::expr::{BoundExpr, BoundKind};
use super::{
    AggCall, AggFunc, DataType, JoinKind, Output, OutputColumn, Plan, QueryPlan, Relation, RelationSource,
    ScanColumn, SelectPlan, SetPlan,
};
use crate::location::Location;
use crate::storage::{ComponentId, World};

/// The way a subscription's result is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Upkeep {
    /// Each commit reads again only the entities that gained, lost or had written one
    /// of the components of `relations` (one for a query of one relation: its rows are
    /// its entities'; for a join, one per relation: its rows are pairs, or tuples, of
    /// entities), and compares their rows with those kept.
    PerEntity { relations: Vec<Watched> },
    /// As `PerEntity` for each row's contribution (its group's key values and the
    /// aggregates' arguments); the groups those changed are folded again.
    PerGroup { relations: Vec<Watched> },
    /// Each commit runs the query again and compares its result with the one kept;
    /// `why` names what keeps it from the cheaper way.
    Rerun { why: &'static str },
}

/// One relation of a query kept per entity or per group: the components whose changes
/// change its rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watched {
    /// How the relation was written, for EXPLAIN (empty in a plan not bound for it).
    pub label: String,
    pub components: Vec<ComponentId>,
}

impl Upkeep {
    /// The way `query` is kept.
    pub fn of(query: &QueryPlan) -> Upkeep {
        match kept_by_entity(query) {
            Ok((relations, false)) => Upkeep::PerEntity { relations },
            Ok((relations, true)) => Upkeep::PerGroup { relations },
            Err(why) => Upkeep::Rerun { why },
        }
    }

    /// The way `plan` (a query's, or a `SUBSCRIBE`'s) is kept; `None` for another plan.
    pub fn of_plan(plan: &Plan) -> Option<Upkeep> {
        match plan {
            Plan::Query(q) => Some(Upkeep::of(q)),
            Plan::Subscribe(inner) => Upkeep::of_plan(inner),
            _ => None,
        }
    }

    /// One line for EXPLAIN SUBSCRIBE.
    pub fn describe(&self, world: &World) -> String {
        let read = |relations: &[Watched]| match relations {
            [one] => format!(
                "each commit reads again only the entities that gained, lost or had written {}",
                world.names_of(&one.components)
            ),
            _ => format!(
                "each commit joins again, to the other relations, only the entities that gained, lost or had written a component their relation reads ({})",
                relations
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let label = match r.label.is_empty() {
                            true => format!("relation {}", i + 1),
                            false => r.label.clone(),
                        };
                        format!("{label}: {}", world.names_of(&r.components))
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        };
        match self {
            Upkeep::PerEntity { relations } => {
                let per = if relations.len() > 1 {
                    "joined row"
                } else {
                    "entity"
                };
                format!("Subscription kept per {per}: {}", read(relations))
            }
            Upkeep::PerGroup { relations } => format!(
                "Subscription kept per group: {}, and folds again only the groups they left or joined",
                read(relations)
            ),
            Upkeep::Rerun { why } => format!(
                "Subscription kept by running the query again at each commit and comparing results: {why}"
            ),
        }
    }
}

/// What each relation of a query kept per entity (or per group: `true`) reads, or why
/// it can be kept neither way.
fn kept_by_entity(query: &QueryPlan) -> Result<(Vec<Watched>, bool), &'static str> {
    if query.limit.is_some() || query.offset > 0 {
        return Err("its LIMIT or OFFSET makes each row depend on the others");
    }
    let SetPlan::Select(select) = &query.body else {
        return Err("it is a UNION, EXCEPT, INTERSECT, VALUES or recursive WITH");
    };
    let select: &SelectPlan = select;
    if select.window.is_some() {
        return Err("its window functions read other rows");
    }
    if select.distinct {
        return Err("DISTINCT makes one row of several entities'");
    }
    let grouped = match &select.output {
        Output::Rows(_) => false,
        Output::Aggregate { aggs, .. } => {
            for a in aggs {
                foldable(a)?;
            }
            true
        }
    };
    if select.relations.is_empty() {
        return Err("it reads no components (a series, events, a subquery or a traversal)");
    }
    if select.relations.iter().any(|r| r.join == JoinKind::Left) {
        return Err("a LEFT JOIN's row without a match depends on every row of the other side");
    }
    let mut relations = Vec::with_capacity(select.relations.len());
    for relation in &select.relations {
        relations.push(watched(relation)?);
    }
    for e in super::visit::select_exprs(select) {
        row_local(e)?;
    }
    Ok((relations, grouped))
}

/// The components whose changes change `relation`'s rows, or why a change to others can.
fn watched(relation: &Relation) -> Result<Watched, &'static str> {
    let RelationSource::Entities(scan) = &relation.source else {
        return Err("it reads no components (a series, events, a subquery or a traversal)");
    };
    if scan.required.is_empty() {
        return Err("it reads every entity (FROM entities), which any spawn or despawn changes");
    }
    if scan.only.is_some() {
        return Err(
            "it reads one archetype table by name, which entities leave by gaining components it does not read",
        );
    }
    if !scan.sparse.is_empty() || scan.reads_sparse {
        return Err("it reads a sparse component");
    }
    let mut components: Vec<ComponentId> = Vec::new();
    components.extend(&scan.required);
    components.extend(&scan.optional);
    components.extend(&scan.excluded);
    for (_, column) in &scan.columns {
        match column {
            ScanColumn::Id => {}
            ScanColumn::Field(f) => components.push(f.component()),
            ScanColumn::Has(c) => components.push(*c),
            ScanColumn::Changed(_) | ScanColumn::ChangedAny(_) | ScanColumn::Added(_) => {
                return Err("it asks changed() or added(), which every commit answers anew");
            }
            ScanColumn::Archetype => {
                return Err("it reads the archetype table's name, which gaining any component changes");
            }
        }
    }
    components.sort_unstable();
    components.dedup();
    Ok(Watched {
        label: relation.label.clone(),
        components,
    })
}

/// Whether `a` takes a row out exactly as it took it in.
fn foldable(a: &AggCall) -> Result<(), &'static str> {
    if a.distinct {
        return Err("an aggregate of DISTINCT values cannot take one member out alone");
    }
    let arg = a.arg.as_ref().map(|e| e.ty);
    match a.func {
        AggFunc::CountStar | AggFunc::Count => Ok(()),
        AggFunc::Sum if a.ty == DataType::Int => Ok(()),
        AggFunc::Min | AggFunc::Max
            if matches!(
                arg,
                Some(DataType::Int | DataType::Text | DataType::Bool | DataType::Entity)
            ) =>
        {
            Ok(())
        }
        // Exact while the magnitudes' sum stays within 2^53 (`engine/live/group.rs`).
        AggFunc::Avg if arg == Some(DataType::Int) => Ok(()),
        AggFunc::Sum | AggFunc::Avg => {
            Err("an avg or a sum of floats adds floats, whose sum depends on the order of its terms")
        }
        AggFunc::Min | AggFunc::Max => {
            Err("min and max of floats keep one of -0.0 and 0.0 by the order rows come in")
        }
        _ => {
            Err("its aggregate (bool_and, bool_or, string_agg, a variance) cannot take one member out alone")
        }
    }
}

/// Whether `e` gives each row's value from that row alone, the same at every commit.
fn row_local(e: &BoundExpr) -> Result<(), &'static str> {
    match &e.kind {
        BoundKind::Subquery { .. } | BoundKind::InSubquery { .. } | BoundKind::Exists { .. } => {
            return Err("a subquery in it reads other rows");
        }
        BoundKind::Outer(_) => return Err("it reads a query around it"),
        BoundKind::Call(f, _) if f.properties().volatile => {
            return Err("it calls random(), which differs at every run");
        }
        BoundKind::Call(f, _) if f.properties().clock => {
            return Err("it reads the clock (tick(), delta_time()), which moves without any entity changing");
        }
        _ => {}
    }
    let mut inner = Ok(());
    e.visit_children(&mut |c| {
        if inner.is_ok() {
            inner = row_local(c);
        }
    });
    inner
}

/// The name of the column `with_entity_column` adds: no query's column can have it.
const ENTITY_COLUMN: &str = "\u{0}entity";

/// Makes `query` (kept per group: `Upkeep::PerGroup`) give, for each row it aggregates,
/// its contribution: the group's key values, then each aggregate's argument (none for
/// `count(*)`), then the row's entities (one for each relation). `None` for another shape.
pub fn contributions(query: &mut QueryPlan) -> Option<()> {
    let SetPlan::Select(select) = &mut query.body else {
        return None;
    };
    let Output::Aggregate { keys, aggs, .. } = &mut select.output else {
        return None;
    };
    let mut outputs: Vec<BoundExpr> = std::mem::take(keys);
    outputs.extend(aggs.iter_mut().filter_map(|a| a.arg.take()));
    let columns: Vec<OutputColumn> = outputs
        .iter()
        .enumerate()
        .map(|(i, e)| OutputColumn {
            name: format!("\u{0}{i}"),
            ty: e.ty,
        })
        .collect();
    select.output = Output::Rows(outputs);
    query.columns = columns.into();
    with_entity_column(query)
}

/// Makes `query` (kept per entity: `Upkeep::PerEntity`) give each row's entities, one
/// for each relation in FROM order, as more columns after its own. `None` for another
/// shape.
pub fn with_entity_column(query: &mut QueryPlan) -> Option<()> {
    let SetPlan::Select(select) = &mut query.body else {
        return None;
    };
    let mut slots = Vec::with_capacity(select.relations.len());
    for relation in &mut select.relations {
        let RelationSource::Entities(scan) = &mut relation.source else {
            return None;
        };
        slots.push(match scan.columns.iter().find(|(_, c)| *c == ScanColumn::Id) {
            Some((slot, _)) => *slot,
            None => {
                let slot = select.width;
                scan.columns.push((slot, ScanColumn::Id));
                select.width += 1;
                slot
            }
        });
    }
    let Output::Rows(outputs) = &mut select.output else {
        return None;
    };
    // Sort keys beyond the visible columns are read by ORDER BY, which a bag of rows
    // does not need: the entities take the places after the visible columns.
    let visible = query.columns.len();
    outputs.truncate(visible);
    query.order_by.clear();
    let mut columns = query.columns.to_vec();
    for slot in slots {
        outputs.push(BoundExpr::slot(slot, DataType::Entity, Location::default()));
        columns.push(OutputColumn {
            name: ENTITY_COLUMN.to_owned(),
            ty: DataType::Entity,
        });
    }
    query.columns = columns.into();
    Some(())
}
