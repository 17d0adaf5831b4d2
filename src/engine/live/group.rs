//! Subscriptions kept per group (`plan::Upkeep::PerGroup`): each row's contribution (its
//! group's key values and the aggregates' arguments) kept as `entity.rs` keeps a row,
//! and each group's folds (count, INT sum, avg of INT, min and max as a counted set of
//! values); at a commit, the rows with an entity the change log noted are read again,
//! their old contributions taken out of their groups and the new ones put in, and only
//! the groups that changed are made rows again (HAVING and the select list,
//! `exec::group_outputs`).
//!
//! Invariants:
//! - A group's folds are those of its members' contributions, whatever order they came
//!   in: a count and an INT sum (128 bits) take a member out exactly as they took it in,
//!   an avg of INT is its sum over its count while that is what a run's float sum gives
//!   (`EXACT_AVG`; past it the query is run again instead), and min and max are the ends
//!   of the members' values counted in order (`value_order`, which has no ties between
//!   different values of the types kept so).
//! - A query without GROUP BY has one group, there even with no member (`count(*)` is 0
//!   then, a sum NULL); a group of a GROUP BY leaves with its last member.
//! - `row` is the group's output row as a run of the query gives it, `None` when HAVING
//!   drops it; the result is the bag of the rows of every group.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use hashbrown::HashMap;

use super::entity::{self, Bound, Rows};
use super::{Bag, State};
use crate::error::{Error, Result};
use crate::exec::ExecError;
use crate::plan::{AggFunc, Output, ParamValues, QueryPlan, SetPlan};
use crate::storage::{Entity, Key, Value, value_order};

/// A value ordered as `value_order` orders it.
#[derive(Clone, Debug)]
struct Ordered(Value);

impl PartialEq for Ordered {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ordered {}

impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> Ordering {
        value_order(&self.0, &other.0)
    }
}

/// One aggregate's fold over a group's members.
#[derive(Clone, Debug)]
enum Fold {
    /// `count(*)`: the group's members.
    Members,
    /// `count(x)`: the members whose argument is not NULL.
    Count(i64),
    /// An INT sum, and how many values not NULL it holds.
    Sum { sum: i128, seen: i64 },
    /// An avg of INT: the sum, how many values not NULL it holds, and the sum of their
    /// magnitudes (`EXACT_AVG`).
    Avg { sum: i128, seen: i64, magnitude: u128 },
    /// Min or max: each value not NULL and how many members hold it.
    Extreme {
        max: bool,
        values: BTreeMap<Ordered, i64>,
    },
}

/// What each aggregate folds: its kind, and where its argument is in a contribution.
#[derive(Clone, Copy, Debug)]
enum Folds {
    Members,
    Count(usize),
    Sum(usize),
    Avg(usize),
    Extreme { max: bool, at: usize },
}

/// A run adds an avg's INT values up as floats, in the order it meets them: that sum is
/// the exact one, whatever the order, while every partial sum is a float without
/// rounding, which holds while the values' magnitudes add up to at most 2^53. Past
/// that, the query is run again instead.
const EXACT_AVG: u128 = 1 << 53;

#[derive(Debug)]
struct Group {
    keys: Vec<Value>,
    members: i64,
    folds: Vec<Fold>,
    row: Option<Vec<Value>>,
}

/// A query's groups, and each entity's contribution.
#[derive(Debug)]
pub(super) struct Groups {
    members: Rows,
    groups: HashMap<Vec<Key>, Group>,
    /// What each aggregate folds, in the query's order.
    folds: Vec<Folds>,
    keys: usize,
}

/// What each aggregate of `query` folds, and how many key values a contribution starts
/// with.
fn folds_of(query: &QueryPlan) -> Result<(Vec<Folds>, usize)> {
    let internal = |m: &str| Error::from(ExecError::internal(crate::location::Location::default(), m));
    let SetPlan::Select(select) = &query.body else {
        return Err(internal("a query kept per group is not one select"));
    };
    let Output::Aggregate { keys, aggs, .. } = &select.output else {
        return Err(internal("a query kept per group does not aggregate"));
    };
    let mut at = keys.len();
    let mut folds = Vec::with_capacity(aggs.len());
    for a in aggs {
        let arg = a.arg.is_some().then(|| {
            at += 1;
            at - 1
        });
        folds.push(match (a.func, arg) {
            (AggFunc::CountStar, _) => Folds::Members,
            (AggFunc::Count, Some(at)) => Folds::Count(at),
            (AggFunc::Sum, Some(at)) => Folds::Sum(at),
            (AggFunc::Avg, Some(at)) => Folds::Avg(at),
            (AggFunc::Min, Some(at)) => Folds::Extreme { max: false, at },
            (AggFunc::Max, Some(at)) => Folds::Extreme { max: true, at },
            _ => return Err(internal("an aggregate kept per group that cannot be")),
        });
    }
    Ok((folds, keys.len()))
}

impl Groups {
    /// The groups of every entity's contribution (`members`), each made a row.
    pub(super) fn new(
        bound: &Bound,
        members: Rows,
        params: &ParamValues,
        state: &State,
        limit: usize,
    ) -> Result<Option<Groups>> {
        let folded = folded(bound)?;
        let (folds, keys) = folds_of(folded)?;
        let mut groups = Groups {
            members: Rows::default(),
            groups: HashMap::new(),
            folds,
            keys,
        };
        if keys == 0 {
            groups.group(&[]);
        }
        for contribution in members.values() {
            groups.fold(contribution, 1);
        }
        groups.members = members;
        let all: Vec<Vec<Key>> = groups.groups.keys().cloned().collect();
        Ok(groups
            .make_rows(&all, folded, params, state, limit)?
            .then_some(groups))
    }

    /// About how many bytes the groups and contributions hold.
    pub(super) fn bytes(&self) -> usize {
        self.members.bytes
            + self
                .groups
                .values()
                .map(|g| super::row_bytes(&g.keys) + 64)
                .sum::<usize>()
    }

    /// The rows of every group, as a bag.
    pub(super) fn bag(&self) -> Bag {
        let mut groups: Vec<&Group> = self.groups.values().filter(|g| g.row.is_some()).collect();
        groups.sort_by(|a, b| compare_rows(&a.keys, &b.keys));
        super::bag_of(groups.into_iter().filter_map(|g| g.row.as_ref()))
    }

    /// The rows with one of `changed`'s entities (for each relation, its own) read
    /// again (`fresh`): their contributions moved, the groups that changed made rows
    /// again; what changed, retractions first. `None` when a group's avg is past what is
    /// kept exactly: then `bag` is still the result at the last commit.
    pub(super) fn update(
        &mut self,
        bound: &Bound,
        changed: &[Vec<Entity>],
        mut fresh: Rows,
        params: &ParamValues,
        state: &State,
        limit: usize,
    ) -> Result<Option<super::Changes>> {
        let affected = self.members.affected(changed, &fresh);
        let mut changed: Vec<Vec<Key>> = Vec::new();
        for key in &affected {
            let new = fresh.remove(key);
            let old = self.members.get(key);
            let same = match (old, &new) {
                (Some(old), Some(new)) => super::same_row(old, new),
                (None, None) => true,
                _ => false,
            };
            if same {
                continue;
            }
            if let Some(old) = self.members.remove(key) {
                changed.push(self.fold(&old, -1));
            }
            if let Some(new) = new {
                changed.push(self.fold(&new, 1));
                self.members.insert(key.clone(), new);
            }
        }
        changed.sort_unstable();
        changed.dedup();
        let before: Vec<(Vec<Key>, Option<Vec<Value>>)> = changed
            .iter()
            .map(|k| (k.clone(), self.groups.get(k).and_then(|g| g.row.clone())))
            .collect();
        // A group of a GROUP BY leaves with its last member.
        let mut left = Vec::new();
        if self.keys > 0 {
            for k in &changed {
                if self.groups.get(k).is_some_and(|g| g.members <= 0)
                    && let Some(group) = self.groups.remove(k)
                {
                    left.push((k.clone(), group));
                }
            }
        }
        let remade: Vec<Vec<Key>> = changed
            .iter()
            .filter(|k| self.groups.contains_key(*k))
            .cloned()
            .collect();
        if !self.make_rows(&remade, folded(bound)?, params, state, limit)? {
            // The rows as they were at the last commit, which the query run again is
            // compared with (`bag`).
            self.groups.extend(left);
            for (k, old) in before {
                if let Some(group) = self.groups.get_mut(&k) {
                    group.row = old;
                }
            }
            return Ok(None);
        }
        let mut changes = Vec::new();
        for (k, old) in before {
            changes.extend(old.map(|old| (old, -1)));
            changes.extend(
                self.groups
                    .get(&k)
                    .and_then(|g| g.row.clone())
                    .map(|new| (new, 1)),
            );
        }
        Ok(Some(super::consolidate(changes)))
    }

    /// The group of `keys`, made when it is new.
    fn group(&mut self, keys: &[Value]) -> &mut Group {
        let key: Vec<Key> = keys.iter().map(Key::exact).collect();
        let folds = &self.folds;
        self.groups.entry(key).or_insert_with(|| Group {
            keys: keys.to_vec(),
            members: 0,
            folds: folds
                .iter()
                .map(|f| match f {
                    Folds::Members => Fold::Members,
                    Folds::Count(_) => Fold::Count(0),
                    Folds::Sum(_) => Fold::Sum { sum: 0, seen: 0 },
                    Folds::Avg(_) => Fold::Avg {
                        sum: 0,
                        seen: 0,
                        magnitude: 0,
                    },
                    Folds::Extreme { max, .. } => Fold::Extreme {
                        max: *max,
                        values: BTreeMap::new(),
                    },
                })
                .collect(),
            row: None,
        })
    }

    /// Puts `contribution` in its group (`sign` 1), or takes it out (-1); the group's key.
    fn fold(&mut self, contribution: &[Value], sign: i64) -> Vec<Key> {
        let keys = &contribution[..self.keys.min(contribution.len())];
        let key: Vec<Key> = keys.iter().map(Key::exact).collect();
        let spec = self.folds.clone();
        let group = self.group(keys);
        group.members += sign;
        for (fold, spec) in group.folds.iter_mut().zip(spec) {
            let arg = |at: usize| contribution.get(at).filter(|v| **v != Value::Null);
            match (fold, spec) {
                (Fold::Members, _) => {}
                (Fold::Count(n), Folds::Count(at)) if arg(at).is_some() => *n += sign,
                (Fold::Sum { sum, seen }, Folds::Sum(at)) => {
                    if let Some(Value::Int(x)) = arg(at) {
                        *sum += i128::from(sign) * i128::from(*x);
                        *seen += sign;
                    }
                }
                (Fold::Avg { sum, seen, magnitude }, Folds::Avg(at)) => {
                    if let Some(Value::Int(x)) = arg(at) {
                        *sum += i128::from(sign) * i128::from(*x);
                        *seen += sign;
                        let m = u128::from(x.unsigned_abs());
                        *magnitude = match sign > 0 {
                            true => magnitude.saturating_add(m),
                            false => magnitude.saturating_sub(m),
                        };
                    }
                }
                (Fold::Extreme { values, .. }, Folds::Extreme { at, .. }) => {
                    if let Some(v) = arg(at) {
                        let n = values.entry(Ordered(v.clone())).or_insert(0);
                        *n += sign;
                        if *n <= 0 {
                            values.remove(&Ordered(v.clone()));
                        }
                    }
                }
                _ => {}
            }
        }
        key
    }

    /// Makes the rows of the groups `keys` from their folds; false (nothing made) when
    /// one's avg is past what is kept exactly (`EXACT_AVG`).
    fn make_rows(
        &mut self,
        keys: &[Vec<Key>],
        folded: &QueryPlan,
        params: &ParamValues,
        state: &State,
        limit: usize,
    ) -> Result<bool> {
        let mut inputs = Vec::with_capacity(keys.len());
        for k in keys {
            let Some(group) = self.groups.get(k) else {
                continue;
            };
            let mut input = group.keys.clone();
            for fold in &group.folds {
                input.push(match fold {
                    Fold::Members => Value::Int(group.members),
                    Fold::Count(n) => Value::Int(*n),
                    Fold::Sum { seen: 0, .. } => Value::Null,
                    Fold::Sum { sum, .. } => match i64::try_from(*sum) {
                        Ok(s) => Value::Int(s),
                        Err(_) => {
                            return Err(ExecError::arithmetic(
                                crate::location::Location::default(),
                                "sum out of range for INT",
                            )
                            .into());
                        }
                    },
                    Fold::Avg { seen: 0, .. } => Value::Null,
                    Fold::Avg { magnitude, .. } if *magnitude > EXACT_AVG => return Ok(false),
                    Fold::Avg { sum, seen, .. } => Value::Float(*sum as f64 / *seen as f64),
                    Fold::Extreme { max, values } => {
                        let end = if *max {
                            values.keys().next_back()
                        } else {
                            values.keys().next()
                        };
                        end.map_or(Value::Null, |v| v.0.clone())
                    }
                });
            }
            inputs.push((k, input));
        }
        let groups: Vec<Vec<Value>> = inputs.iter().map(|(_, input)| input.clone()).collect();
        let rows = entity::with_run(state, params, limit, |run| {
            crate::exec::group_outputs(folded, &groups, &state.world, run)
        })?;
        for ((k, _), row) in inputs.into_iter().zip(rows) {
            if let Some(group) = self.groups.get_mut(k) {
                group.row = row;
            }
        }
        Ok(true)
    }
}

/// The query a query kept per group folds its groups with.
fn folded(bound: &Bound) -> Result<&QueryPlan> {
    bound.folded.as_ref().ok_or_else(|| {
        Error::from(ExecError::internal(
            crate::location::Location::default(),
            "a query kept per group without its aggregate plan",
        ))
    })
}

/// Two rows of values in `value_order`, value by value.
fn compare_rows(a: &[Value], b: &[Value]) -> Ordering {
    a.iter()
        .zip(b)
        .map(|(x, y)| value_order(x, y))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}
