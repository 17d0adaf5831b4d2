//! How a subscription keeps its query's result from one commit to the next
//! (`engine/live.rs`), read from the query's plan: what EXPLAIN SUBSCRIBE says, and the
//! way the subscription then takes.
//!
//! Invariant: a query is kept a cheaper way only when that way gives, at every commit,
//! the batch that running it again and comparing would give; every other query is run
//! again, and `Upkeep::Rerun` says which part of it asks for that.

use super::{Plan, QueryPlan};

/// The way a subscription's result is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Upkeep {
    /// Each commit runs the query again and compares its result with the one kept.
    Rerun,
}

impl Upkeep {
    /// The way `query` is kept.
    pub fn of(_query: &QueryPlan) -> Upkeep {
        Upkeep::Rerun
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
    pub fn describe(&self) -> String {
        match self {
            Upkeep::Rerun => {
                "Subscription: each commit runs the query again and compares its result with the one kept"
                    .to_owned()
            }
        }
    }
}
