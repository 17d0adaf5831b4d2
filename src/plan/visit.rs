//! Passes over a bound plan: `visit_plan` reaches every query and every select of a
//! statement (subqueries in expressions and in FROM, the sides of set operations, the rows
//! of SPAWN and INSERT, the targets of UPDATE, DELETE and DESPAWN), innermost first, and
//! hands each to a `PlanVisitor` to change in place. Passes that run after binding (the
//! access pass today) are visitors, so none of them needs to know the plan's shape.

use super::expr::{BoundExpr, BoundKind};
use super::{ConflictPlan, Output, Plan, QueryPlan, RelationSource, SelectPlan, SetPlan};

/// A pass over a bound plan. Each method is called once per node of its kind, after
/// every node inside it.
pub trait PlanVisitor {
    /// One select (FROM, WHERE, the select list), after the queries inside it.
    fn select(&mut self, _select: &mut SelectPlan) {}
    /// One query (a body with ORDER BY and LIMIT), after its body.
    fn query(&mut self, _query: &mut QueryPlan) {}
    /// One expression, after the queries inside it and before its children.
    fn expr(&mut self, _expr: &mut BoundExpr) {}
}

/// Calls `v` on every select and query of `plan`, innermost first.
pub fn visit_plan(plan: &mut Plan, v: &mut impl PlanVisitor) {
    match plan {
        Plan::Query(q) | Plan::Delete { ids: q, .. } | Plan::Despawn { ids: q } => query(q, v),
        Plan::Spawn(s) => query(&mut s.rows, v),
        Plan::Emit(e) => query(&mut e.rows, v),
        Plan::CopyTo(c) => query(&mut c.query, v),
        Plan::Insert(i) => {
            query(&mut i.rows, v);
            if let ConflictPlan::DoUpdate(updates) = &mut i.on_conflict {
                updates.iter_mut().for_each(|(_, e)| expr(e, v));
            }
        }
        Plan::Update(u) => {
            u.assignments.iter_mut().for_each(|a| expr(&mut a.value, v));
            select(&mut u.select, v);
        }
        Plan::Explain(p) | Plan::Subscribe(p) | Plan::ExplainAnalyze { plan: p, .. } => visit_plan(p, v),
        Plan::Returning { write, query: q } => {
            visit_plan(write, v);
            query(q, v);
        }
        Plan::CreateComponent { .. }
        | Plan::CreateEvent { .. }
        | Plan::DropEvent { .. }
        | Plan::CopyFrom(_)
        | Plan::DropComponent { .. }
        | Plan::ShowComponents
        | Plan::ShowArchetypes
        | Plan::ShowIndexes
        | Plan::CreateIndex { .. }
        | Plan::CreateFunctionIndex { .. }
        | Plan::DropIndex { .. }
        | Plan::Describe(_)
        | Plan::DescribeEvent(_)
        | Plan::Begin
        | Plan::Commit
        | Plan::Rollback
        | Plan::Pragma { .. } => {}
    }
}

/// Calls `v` on every select and query of `q`, innermost first.
pub fn visit_query(q: &mut QueryPlan, v: &mut impl PlanVisitor) {
    query(q, v);
}

fn query(q: &mut QueryPlan, v: &mut impl PlanVisitor) {
    set(&mut q.body, v);
    v.query(q);
}

#[recursive::recursive]
fn set(body: &mut SetPlan, v: &mut impl PlanVisitor) {
    match body {
        SetPlan::Select(s) => select(s, v),
        SetPlan::Values(rows) => rows.iter_mut().flatten().for_each(|e| expr(e, v)),
        SetPlan::SetOp { left, right, .. }
        | SetPlan::Recursive {
            anchor: left,
            step: right,
            ..
        } => {
            set(left, v);
            set(right, v);
        }
    }
}

/// The expressions of one select, read only, in the order `select` below walks them (the
/// two lists are kept alike): each relation's ON and filter and a traversal's start, the
/// join conditions, WHERE, and the select list with its grouping. Not the queries in FROM.
pub fn select_exprs(s: &SelectPlan) -> Vec<&BoundExpr> {
    let mut exprs = Vec::new();
    for r in &s.relations {
        if let RelationSource::Traversal(t) = &r.source {
            exprs.extend(t.start_expr.iter().map(|e| &**e));
        }
        exprs.extend(r.on.iter().chain(&r.filter));
    }
    exprs.extend(s.joins.conditions.iter().map(|c| &c.expr));
    exprs.extend(&s.filter);
    match &s.output {
        Output::Rows(outputs) => exprs.extend(outputs),
        Output::Aggregate {
            keys,
            aggs,
            having,
            outputs,
        } => {
            exprs.extend(keys.iter().chain(aggs.iter().filter_map(|a| a.arg.as_ref())));
            exprs.extend(having.iter().chain(outputs));
        }
    }
    if let Some(w) = &s.window {
        for call in &w.calls {
            exprs.extend(call.frame.offsets());
        }
        exprs.extend(&w.outputs);
    }
    exprs
}

fn select(s: &mut SelectPlan, v: &mut impl PlanVisitor) {
    for r in &mut s.relations {
        match &mut r.source {
            RelationSource::Query { plan, .. } => query(plan, v),
            RelationSource::Traversal(t) => t.start_expr.iter_mut().for_each(|e| expr(e, v)),
            _ => {}
        }
        r.on.iter_mut().chain(&mut r.filter).for_each(|e| expr(e, v));
    }
    s.joins.conditions.iter_mut().for_each(|c| expr(&mut c.expr, v));
    s.filter.iter_mut().for_each(|e| expr(e, v));
    match &mut s.output {
        Output::Rows(outputs) => outputs.iter_mut().for_each(|e| expr(e, v)),
        Output::Aggregate {
            keys,
            aggs,
            having,
            outputs,
        } => {
            keys.iter_mut()
                .chain(aggs.iter_mut().filter_map(|a| a.arg.as_mut()))
                .chain(having)
                .chain(outputs)
                .for_each(|e| expr(e, v));
        }
    }
    if let Some(w) = &mut s.window {
        for call in &mut w.calls {
            call.frame.offsets_mut().for_each(|e| expr(e, v));
        }
        w.outputs.iter_mut().for_each(|e| expr(e, v));
    }
    v.select(s);
}

fn expr(e: &mut BoundExpr, v: &mut impl PlanVisitor) {
    if let BoundKind::Subquery { query: q, .. }
    | BoundKind::InSubquery { query: q, .. }
    | BoundKind::Exists { query: q, .. } = &mut e.kind
    {
        query(q, v);
    }
    v.expr(e);
    e.visit_children_mut(&mut |c| expr(c, v));
}
