//! Subscriptions that differ only in a constant (`… WHERE Team.n = ?1`, each with its own
//! value of `?1`): one pass over a commit's changes for all of them. The family reads the
//! entities the change log noted once, with the query's `x = ?1` taken out of its WHERE
//! and `x` given as one more column, and routes each row to the member whose value it
//! equals (a hash map by value); each member then compares the rows routed to it with
//! those it keeps, as a query kept per entity alone does (`entity::update`).
//!
//! Invariants:
//! - A family's members are subscriptions kept per entity (one relation, not grouped) to
//!   one statement with one parameter, `?1`, that only `x = ?1` at the top of its WHERE
//!   reads, each with a value of `x`'s type that `=` holds only for itself (INT, TEXT,
//!   BOOL or ENTITY, not NULL): then a row is in a member's result exactly when the
//!   family's row of that entity has the member's value in its last column, and no two
//!   members share a value (they would be one `Query`).
//! - `owner` names, for each entity some member holds a row of, that member's value: the
//!   rows a changed entity leaves are found without asking every member.
//! - The family is used only while its plan is bound for the world as it is and the
//!   change log watched its components through the last commit; otherwise each member
//!   is kept on its own for that commit, and the family is made again from their
//!   results.

use std::sync::{Arc, Weak};

use hashbrown::HashMap;
use parking_lot::Mutex;

use super::entity::{self, Bound, RowKey, Rows};
use super::{Changes, Held, Query, Shape, State};
use crate::error::Result;
use crate::parse::{self, BinaryOp, Expr, ExprKind, Param, SelectItem, SetExpr, StatementKind};
use crate::plan::{DataType, ParamValues};
use crate::storage::{ComponentId, Entity, Key, Value};

/// Subscriptions to one statement that differ only in the value of its `?1`.
#[derive(Debug)]
pub(super) struct Family {
    /// The members' statement as printed, with the type of their values (`identity`):
    /// what makes subscriptions members of one family.
    pub(super) identity: String,
    /// Their statement with `x = ?1` taken out of its WHERE and `x` as its last column.
    statement: parse::Statement,
    /// The members' values' type, which the last column must have.
    ty: DataType,
    state: Mutex<Shared>,
    /// The commits read once for every member (for the tests).
    passes: std::sync::atomic::AtomicU64,
}

#[derive(Debug, Default)]
struct Shared {
    /// The family's plan, as bound for the world at its stamp; `None` while it cannot be.
    bound: Option<Bound>,
    members: HashMap<Key, Weak<Query>>,
    owner: HashMap<Entity, Key>,
    /// The change log watched the family's components through the last commit.
    logged: bool,
}

/// A member's place in its family: the family, and the value its rows have there.
#[derive(Debug)]
pub(super) struct Route {
    pub(super) family: Arc<Family>,
    value: Key,
}

/// The family `statement` with `params` would be a member of: its statement (without
/// the parameter) and the member's value. `None` when it is not of that shape.
pub(super) fn family_of(
    statement: &parse::Statement,
    params: &ParamValues,
) -> Option<(parse::Statement, Value)> {
    if statement.params.positional != 1 || !statement.params.named.is_empty() {
        return None;
    }
    let [value] = params.positional.as_slice() else {
        return None;
    };
    if !matches!(
        DataType::of(value),
        DataType::Int | DataType::Text | DataType::Bool | DataType::Entity
    ) {
        return None;
    }
    let StatementKind::Select(query) = &statement.kind else {
        return None;
    };
    let mut query = query.clone();
    let SetExpr::Select(select) = &mut query.body else {
        return None;
    };
    let mut conjuncts = Vec::new();
    split_and(&select.filter.take()?, &mut conjuncts);
    let is_param = |e: &Expr| matches!(e.kind, ExprKind::Param(Param::Position(1)));
    let (at, routed) = conjuncts.iter().enumerate().find_map(|(i, c)| match &c.kind {
        ExprKind::Binary(lr, BinaryOp::Eq) if is_param(&lr[1]) => Some((i, lr[0].clone())),
        ExprKind::Binary(lr, BinaryOp::Eq) if is_param(&lr[0]) => Some((i, lr[1].clone())),
        _ => None,
    })?;
    conjuncts.remove(at);
    select.filter = conjuncts.into_iter().reduce(|a, b| Expr {
        at: a.at,
        kind: ExprKind::binary(a, BinaryOp::And, b),
    });
    select.items.push(SelectItem::Expr {
        expr: routed,
        alias: None,
    });
    let rewritten = parse::Statement {
        kind: StatementKind::Select(query),
        at: statement.at,
        params: parse::Parameters::default(),
    };
    // Read back, the statement names no parameter: `?1` was read nowhere else.
    let read_back = parse::parse_one(&rewritten.to_string()).ok()?;
    (read_back.params == parse::Parameters::default()).then(|| (read_back, value.clone()))
}

/// The terms of `e`'s top-level ANDs, in order.
fn split_and(e: &Expr, out: &mut Vec<Expr>) {
    match &e.kind {
        ExprKind::Binary(lr, BinaryOp::And) => {
            split_and(&lr[0], out);
            split_and(&lr[1], out);
        }
        _ => out.push(e.clone()),
    }
}

impl Family {
    /// The family of subscriptions to `members` (their statement) with values of `ty`,
    /// reading `statement` (what `family_of` made of theirs); `None` when that does not
    /// bind as one relation kept per entity whose last column has type `ty`.
    pub(super) fn new(
        members: &parse::Statement,
        statement: parse::Statement,
        ty: DataType,
        state: &State,
    ) -> Option<Arc<Family>> {
        let bound = bind(&statement, ty, state)?;
        // Read once for all from the next commit on when the change log follows its
        // components already.
        let logged = super::follows(state, &bound.components);
        Some(Arc::new(Family {
            identity: identity(members, ty),
            statement,
            ty,
            state: Mutex::new(Shared {
                bound: Some(bound),
                logged,
                ..Shared::default()
            }),
            passes: std::sync::atomic::AtomicU64::new(0),
        }))
    }

    /// Makes `query` (whose result is kept, per entity, as of this commit) a member with
    /// `value`.
    pub(super) fn join(family: &Arc<Family>, query: &Arc<Query>, value: &Value) -> Route {
        let value = Key::exact(value);
        let mut shared = family.state.lock();
        if let Held::Entities(rows) = &query.kept.lock().held {
            for key in rows.keys() {
                shared.owner.insert(key[0], value.clone());
            }
        }
        shared.members.insert(value.clone(), Arc::downgrade(query));
        Route {
            family: Arc::clone(family),
            value,
        }
    }

    /// Takes a member that is gone (dropped, or ended) out, and the entities its rows
    /// were of out of `owner`.
    pub(super) fn leave(&self, route: &Route, entities: &[Entity]) {
        let mut shared = self.state.lock();
        shared.members.remove(&route.value);
        for e in entities {
            if shared.owner.get(e) == Some(&route.value) {
                shared.owner.remove(e);
            }
        }
    }

    /// What changed for each of `members` (every member of the family) at this commit,
    /// in one pass over the changes when the family can be used: each member's
    /// subscription's changes (by `Arc` address) into `out`.
    pub(super) fn advance(
        &self,
        members: &[&Arc<Query>],
        state: &State,
        limit: usize,
        log: Option<&HashMap<ComponentId, Vec<Entity>>>,
        out: &mut HashMap<usize, Result<Changes>>,
    ) {
        let mut shared = self.state.lock();
        let stamp = entity::Stamp::of(state);
        let current = shared.bound.as_ref().is_some_and(|b| b.stamp == stamp);
        let Some(noted) = log.filter(|_| shared.logged && current) else {
            // Each on its own (kept per entity: its rows are the result at the last
            // commit), then the family made again from their results.
            for query in members {
                let result = super::advance(query, &mut query.kept.lock(), state, limit, log);
                out.insert(address(query), result);
            }
            self.remake(&mut shared, members, state);
            return;
        };
        let log = noted;
        self.passes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for query in members {
            out.insert(address(query), Ok(Vec::new()));
        }
        let Some(bound) = &shared.bound else {
            return;
        };
        let Some(changed) = bound.changed(log) else {
            return;
        };
        let Ok(fresh) = entity::read(bound, &ParamValues::default(), state, limit, Some(&changed)) else {
            // Each member on its own says why.
            for query in members {
                let result = super::advance(query, &mut query.kept.lock(), state, limit, Some(log));
                out.insert(address(query), result);
            }
            self.remake(&mut shared, members, state);
            return;
        };
        // Each member's rows read again, and the keys that may have changed for it.
        let mut routed: HashMap<Key, (Rows, Vec<RowKey>)> = HashMap::new();
        for e in changed.iter().flatten() {
            if let Some(value) = shared.owner.remove(e) {
                routed.entry(value).or_default().1.push(RowKey::one(*e));
            }
        }
        for (key, mut row) in fresh.into_rows() {
            let Some(value) = row.pop().filter(|v| *v != Value::Null) else {
                continue;
            };
            let value = Key::exact(&value);
            if !shared.members.contains_key(&value) {
                continue;
            }
            shared.owner.insert(key[0], value.clone());
            let (rows, keys) = routed.entry(value).or_default();
            keys.push(key.clone());
            rows.insert(key, row);
        }
        for (value, (rows, mut keys)) in routed {
            let Some(query) = shared.members.get(&value).and_then(Weak::upgrade) else {
                continue;
            };
            keys.sort_unstable();
            keys.dedup();
            let mut kept = query.kept.lock();
            if let Held::Entities(held) = &mut kept.held {
                let changes = entity::update(held, &keys, rows);
                out.insert(address(&query), Ok(changes));
            }
        }
    }

    /// Binds the family again and takes `owner` from its members' results; used from
    /// the next commit on when every member is kept per entity as the family is.
    fn remake(&self, shared: &mut Shared, members: &[&Arc<Query>], state: &State) {
        shared.owner.clear();
        shared.logged = false;
        shared.bound = bind(&self.statement, self.ty, state);
        for query in members {
            let kept = query.kept.lock();
            let (Shape::PerEntity(_), Held::Entities(rows)) = (&kept.shape, &kept.held) else {
                shared.bound = None;
                continue;
            };
            let Some(route) = query.route.get() else {
                continue;
            };
            for key in rows.keys() {
                shared.owner.insert(key[0], route.value.clone());
            }
        }
        shared.logged = shared.bound.is_some();
    }
}

/// What makes subscriptions members of one family: their statement as printed, and the
/// type of their values.
pub(super) fn identity(statement: &parse::Statement, ty: DataType) -> String {
    format!("{statement}\u{0}{}", ty.name())
}

/// A family's `statement` bound for `state`, when it is one relation kept per entity
/// whose last column (`x`) has the members' values' type `ty`: then `=` on them is
/// `Key::exact`'s equality.
fn bind(statement: &parse::Statement, ty: DataType, state: &State) -> Option<Bound> {
    entity::bind(statement, &ParamValues::default(), state)
        .ok()
        .flatten()
        .filter(|b| b.folded.is_none() && b.relations() == 1 && b.columns().last().map(|c| c.1) == Some(ty))
}

/// A subscription's query's address: the key of its changes in `Family::advance`'s map.
pub(super) fn address(query: &Arc<Query>) -> usize {
    Arc::as_ptr(query) as usize
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::engine::{Client, Engine};
    use crate::location::Location;
    use crate::plan::ParamValues;
    use crate::storage::Value;

    /// How many members each family has, and how many commits it read once for all.
    fn families(engine: &Engine) -> Vec<(usize, u64)> {
        let queries = engine.live.queries.lock();
        let mut seen: Vec<(usize, u64, usize)> = Vec::new();
        for route in queries.iter().filter_map(|q| q.route.get()) {
            let at = Arc::as_ptr(&route.family) as usize;
            match seen.iter_mut().find(|(a, _, _)| *a == at) {
                Some((_, _, n)) => *n += 1,
                None => seen.push((
                    at,
                    route.family.passes.load(std::sync::atomic::Ordering::Relaxed),
                    1,
                )),
            }
        }
        let mut out: Vec<(usize, u64)> = seen.into_iter().map(|(_, p, n)| (n, p)).collect();
        out.sort_unstable();
        out
    }

    #[test]
    fn members_of_one_statement_read_each_commit_once_for_all() {
        let engine = Engine::new();
        let client = Client::new(&engine);
        client
            .execute_batch(
                "CREATE COMPONENT Team (n INT, x REAL); SPAWN Team(i % 3, 0.5) FROM range(9) AS r(i);",
            )
            .unwrap();
        let value = |v: Value| ParamValues {
            positional: vec![v],
            ..ParamValues::default()
        };
        let at = Location::default();
        let mut feeds = Vec::new();
        for k in 0..3 {
            let sql = "SELECT id FROM Team WHERE Team.n = ?1";
            feeds.push(client.subscribe(sql, at, &value(Value::Int(k))).unwrap());
        }
        // The same condition written the other way round is another statement, and
        // another family, even for a value a member of the first has.
        let turned = "SELECT id FROM Team WHERE ?1 = Team.n AND Team.x > 0";
        feeds.push(client.subscribe(turned, at, &value(Value::Int(1))).unwrap());
        // An INT for a REAL field: `=` is not the values' equality there, so no family.
        let real = "SELECT id FROM Team WHERE Team.x = ?1";
        feeds.push(client.subscribe(real, at, &value(Value::Int(1))).unwrap());
        // A second parameter: no family.
        let two = "SELECT id FROM Team WHERE Team.n = ?1 AND Team.x < ?2";
        let both = ParamValues {
            positional: vec![Value::Int(1), Value::Float(1.0)],
            ..ParamValues::default()
        };
        feeds.push(client.subscribe(two, at, &both).unwrap());
        assert_eq!(families(&engine), [(1, 0), (3, 0)]);
        // The first commit sets the change log on the world (which binds every plan
        // again at the next); from the one after that, each is read once for each family.
        for n in [1, 0, 2, 1] {
            client
                .execute_batch(&format!(
                    "UPDATE Team SET n = (Team.n + 1) % 3 WHERE Team.n = {n}"
                ))
                .unwrap();
        }
        assert_eq!(families(&engine), [(1, 2), (3, 2)]);
        // A family made while the log follows its components is read once from the
        // first commit on.
        let late = "SELECT Team.x FROM Team WHERE Team.n = ?1";
        for k in 0..2 {
            feeds.push(client.subscribe(late, at, &value(Value::Int(k))).unwrap());
        }
        client
            .execute_batch("UPDATE Team SET n = 2 WHERE Team.n = 0")
            .unwrap();
        assert_eq!(families(&engine), [(1, 3), (2, 1), (3, 3)]);
    }
}
