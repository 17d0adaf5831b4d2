//! EXPLAIN: the plan as text — operators from the top down, and for each entity scan the
//! archetype tables it reads (hash name, component set, rows) and those it pruned, with
//! the reason.

use std::fmt::Write as _;

use super::reader::Reader;
use super::scan::{SkipVerdict, Skipping};
use super::{Chunk, Outcome};
use crate::parse::SetOp;
use crate::plan::{
    BoundExpr, BoundKind, Correlated, DataType, EntityScan, JoinKind, Output, OutputColumn, Plan, QueryPlan,
    RelationSource, ScanColumn, SelectPlan, SetPlan, SkipCondition, SkipTest,
};
use crate::storage::{BLOCK_ROWS, FieldId, Filter, Table, Value, World, ZoneKey};
use crate::vector::Vector;

pub fn explain(plan: &Plan, reader: &Reader<'_>) -> Outcome {
    let mut lines = Vec::new();
    plan_lines(plan, reader, 0, &mut lines);
    lines_outcome(&lines)
}

/// EXPLAIN ANALYZE's text: the plan, each part with what it did (`reader.profile`, of the
/// run just made), then a line for the whole statement.
pub fn explain_analyzed(
    plan: &Plan,
    reader: &Reader<'_>,
    ran: &Outcome,
    took: std::time::Duration,
    undone: bool,
) -> Outcome {
    let mut lines = Vec::new();
    plan_lines(plan, reader, 0, &mut lines);
    let timing = reader.profile.is_some_and(|p| p.timing);
    let mut total = if ran.returns_rows {
        format!("Returned {}", super::profile::rows(ran.rows.len as u64))
    } else {
        format!("Changed {}", super::profile::rows(ran.affected as u64))
    };
    if undone {
        total.push_str(", then undone (EXPLAIN ANALYZE keeps no change)");
    }
    if timing {
        total.push_str(&format!(", in {}", super::profile::time(took)));
    }
    lines.push(total);
    lines_outcome(&lines)
}

/// Appends what `part` did to line `at` (once: a line that says it already keeps it).
fn annotate<T>(lines: &mut [String], at: usize, reader: &Reader<'_>, part: &T) {
    let (Some(profile), Some(line)) = (reader.profile, lines.get_mut(at)) else {
        return;
    };
    // Already annotated: it ends with its figures (a query's text never ends so).
    if line
        .rsplit_once(" (actual: ")
        .is_some_and(|(_, tail)| tail.ends_with(')') && !tail.contains('\''))
    {
        return;
    }
    if let Some(actual) = profile.actual(part) {
        line.push(' ');
        line.push_str(&actual);
    }
}

fn lines_outcome(lines: &[String]) -> Outcome {
    let mut v = Vector::empty(DataType::Text);
    for l in lines {
        v.push_value(&Value::Text(l.clone()));
    }
    Outcome {
        columns: crate::exec::OutputColumns::from(vec![OutputColumn {
            name: "plan".into(),
            ty: DataType::Text,
        }]),
        rows: Chunk {
            columns: vec![v],
            len: lines.len(),
        },
        affected: 0,
        returns_rows: true,
    }
}

fn push(lines: &mut Vec<String>, depth: usize, text: impl AsRef<str>) {
    lines.push(format!("{}{}", "  ".repeat(depth), text.as_ref()));
}

fn plan_lines(plan: &Plan, reader: &Reader<'_>, depth: usize, lines: &mut Vec<String>) {
    let world = reader.world;
    let name = |c| world.component(c).map_or("?".to_owned(), |d| d.name().to_owned());
    match plan {
        Plan::Query(q) => query_lines(q, reader, depth, lines),
        Plan::Spawn(s) => {
            let comps: Vec<String> = s.components.iter().map(|(c, _)| name(*c)).collect();
            push(
                lines,
                depth,
                format!("Spawn ({}) one entity per row", comps.join(", ")),
            );
            query_lines(&s.rows, reader, depth + 1, lines);
        }
        Plan::Insert(i) => {
            let verb = if i.id_column.is_some() { "Attach" } else { "Spawn" };
            push(
                lines,
                depth,
                format!("{verb} {} one row at a time", name(i.component)),
            );
            query_lines(&i.rows, reader, depth + 1, lines);
        }
        Plan::Emit(e) => {
            let event = world.event(e.event).map_or("?", |q| q.name());
            push(lines, depth, format!("Emit {event} events, the rows as columns"));
            query_lines(&e.rows, reader, depth + 1, lines);
        }
        Plan::CopyTo(c) => {
            push(
                lines,
                depth,
                format!("Copy the rows to {} as {}", c.file, c.format.name()),
            );
            query_lines(&c.query, reader, depth + 1, lines);
        }
        Plan::CopyFrom(c) => push(
            lines,
            depth,
            format!(
                "Copy {} into {} (read whole, then written)",
                c.file,
                name(c.component)
            ),
        ),
        Plan::CreateEvent { name, .. } => push(lines, depth, format!("Create event {name}")),
        Plan::DropEvent { .. } => push(lines, depth, "Drop event"),
        Plan::Delete { component, ids } => {
            push(lines, depth, format!("Detach {}", name(*component)));
            query_lines(ids, reader, depth + 1, lines);
        }
        Plan::Despawn { ids } => {
            push(lines, depth, "Despawn");
            query_lines(ids, reader, depth + 1, lines);
        }
        Plan::Update(u) => {
            push(
                lines,
                depth,
                format!(
                    "Update {} SET {} (written into the columns)",
                    name(u.target),
                    u.select.explain.outputs.join(", ")
                ),
            );
            let compound = super::write::is_compound(u);
            for (table, threads, rows) in super::write::threads_for_explain(u, reader) {
                let table = world
                    .table(table)
                    .map_or("?".to_owned(), |t| t.name().to_string());
                let how = if compound { " by compound assignment" } else { "" };
                let split = if threads > 1 {
                    format!(", split among {threads} threads")
                } else {
                    String::new()
                };
                push(
                    lines,
                    depth + 1,
                    format!(
                        "Table {table} written in place{how}{split} ({})",
                        super::profile::rows(rows as u64)
                    ),
                );
            }
            select_lines(&u.select, reader, depth + 1, lines, false);
            let values: Vec<&BoundExpr> = u.assignments.iter().map(|a| &a.value).collect();
            subquery_lines(&values, reader, depth + 1, lines);
        }
        Plan::Explain(inner) | Plan::ExplainAnalyze { plan: inner, .. } => {
            plan_lines(inner, reader, depth, lines)
        }
        Plan::Subscribe(inner) => {
            if let Some(upkeep) = crate::plan::Upkeep::of_plan(inner) {
                push(lines, depth, upkeep.describe(world));
            }
            plan_lines(inner, reader, depth + 1, lines)
        }
        Plan::Returning { write, query } => {
            let when = match **write {
                Plan::Delete { .. } | Plan::Despawn { .. } => "before",
                _ => "after",
            };
            push(
                lines,
                depth,
                format!("Return a row per entity written, read {when} the write"),
            );
            plan_lines(write, reader, depth + 1, lines);
            push(
                lines,
                depth + 1,
                "Returning (the entities written, looked up by id)",
            );
            query_lines(query, reader, depth + 2, lines);
        }
        Plan::CreateComponent { name, .. } => push(lines, depth, format!("Create component {name}")),
        Plan::DropComponent { name, .. } => push(lines, depth, format!("Drop component {name}")),
        Plan::ShowComponents => push(lines, depth, "Show components"),
        Plan::ShowArchetypes => push(lines, depth, "Show archetypes"),
        Plan::ShowIndexes => push(lines, depth, "Show indexes"),
        Plan::CreateIndex { method, label, .. } => push(
            lines,
            depth,
            format!(
                "Create {}index on {label}",
                match method {
                    crate::index::IndexMethod::Value => "",
                    crate::index::IndexMethod::Spatial => "spatial ",
                    crate::index::IndexMethod::Filter => "filter ",
                }
            ),
        ),
        Plan::CreateFunctionIndex { label, .. } => {
            push(lines, depth, format!("Create function index on {label}"))
        }
        Plan::DropIndex { name, .. } => push(lines, depth, format!("Drop index {name}")),
        Plan::Describe(c) => push(lines, depth, format!("Describe {}", name(*c))),
        Plan::DescribeEvent(e) => push(
            lines,
            depth,
            format!("Describe event {}", world.event(*e).map_or("?", |q| q.name())),
        ),
        Plan::Begin => push(lines, depth, "Begin transaction"),
        Plan::Commit => push(lines, depth, "Commit"),
        Plan::Rollback => push(lines, depth, "Rollback"),
        Plan::Pragma { name: None, .. } => push(lines, depth, String::from("List the settings")),
        Plan::Pragma {
            name: Some(name),
            value: None,
        } => push(lines, depth, format!("Read setting {name}")),
        Plan::Pragma {
            name: Some(name),
            value: Some(v),
        } => push(lines, depth, format!("Set {name} to {v}")),
    }
}

fn query_lines(q: &QueryPlan, reader: &Reader<'_>, depth: usize, lines: &mut Vec<String>) {
    let first = lines.len();
    query_parts(q, reader, depth, lines);
    annotate(lines, first, reader, q);
}

fn query_parts(q: &QueryPlan, reader: &Reader<'_>, mut depth: usize, lines: &mut Vec<String>) {
    if q.limit.is_some() || q.offset > 0 {
        let limit = q.limit.map_or("all".to_owned(), |l| l.to_string());
        push(lines, depth, format!("Limit {limit} offset {}", q.offset));
        depth += 1;
    }
    if !q.order_by.is_empty() {
        let keys: Vec<String> = q
            .order_by
            .iter()
            .map(|k| {
                let name = q
                    .columns
                    .get(k.column)
                    .map_or(format!("#{}", k.column + 1), |c| c.name.clone());
                format!("{name}{}", if k.desc { " DESC" } else { "" })
            })
            .collect();
        let mut line = format!("Sort {}", keys.join(", "));
        // Under EXPLAIN ANALYZE, a top-k (its select set aside, as it made them, the rows
        // that could no longer be among the first) says how many of the rows made it kept
        // to sort: at most about the LIMIT's count and a trim's slack.
        if let (SetPlan::Select(s), Some(profile)) = (&q.body, reader.profile)
            && let Some(stats) = profile.of(&**s)
            && let Some(made) = stats.topped
        {
            line.push_str(&format!(
                " (actual: kept {} of {})",
                stats.rows,
                super::profile::rows(made)
            ));
        }
        push(lines, depth, line);
        depth += 1;
    }
    set_lines(&q.body, reader, depth, lines);
}

#[recursive::recursive]
fn set_lines(set: &SetPlan, reader: &Reader<'_>, depth: usize, lines: &mut Vec<String>) {
    match set {
        SetPlan::Select(s) => select_lines(s, reader, depth, lines, true),
        SetPlan::Values(rows) => push(
            lines,
            depth,
            format!("Values ({})", super::profile::rows(rows.len() as u64)),
        ),
        SetPlan::Recursive {
            anchor, step, all, ..
        } => {
            let how = if *all { "all" } else { "(distinct)" };
            push(
                lines,
                depth,
                format!(
                    "Recursive union {how}: the first part, then the recursive part over the rows the round before added, until a round adds none"
                ),
            );
            set_lines(anchor, reader, depth + 1, lines);
            set_lines(step, reader, depth + 1, lines);
        }
        SetPlan::SetOp { op, left, right, all } => {
            let name = match op {
                SetOp::Union => "Union",
                SetOp::Except => "Except",
                SetOp::Intersect => "Intersect",
            };
            push(
                lines,
                depth,
                format!("{name} {}", if *all { "all" } else { "(distinct)" }),
            );
            set_lines(left, reader, depth + 1, lines);
            set_lines(right, reader, depth + 1, lines);
        }
    }
}

fn select_lines(
    s: &SelectPlan,
    reader: &Reader<'_>,
    mut depth: usize,
    lines: &mut Vec<String>,
    project: bool,
) {
    let first = lines.len();
    if s.distinct {
        push(lines, depth, "Distinct");
        depth += 1;
    }
    let aggregate = matches!(s.output, Output::Aggregate { .. });
    if aggregate || project || s.window.is_some() {
        push(lines, depth, format!("Project {}", s.explain.outputs.join(", ")));
        depth += 1;
    }
    if let Some(w) = &s.window {
        annotate(lines, first, reader, s);
        // The last order's sort runs last: it is the outermost.
        for (i, sort) in w.sorts.iter().enumerate().rev() {
            let calls: Vec<&str> = w
                .calls
                .iter()
                .filter(|c| c.sort == i)
                .map(|c| c.text.as_str())
                .collect();
            let order = if sort.text == "()" {
                "over all rows".to_owned()
            } else {
                let inner = sort.text.strip_prefix('(').and_then(|t| t.strip_suffix(')'));
                format!("sorted once by {}", inner.unwrap_or(&sort.text))
            };
            let window_line = lines.len();
            push(lines, depth, format!("Window {order}: {}", calls.join(", ")));
            annotate(lines, window_line, reader, sort);
            depth += 1;
        }
    }
    if aggregate {
        if let Some(h) = &s.explain.having {
            push(lines, depth, format!("Filter (HAVING) {h}"));
            depth += 1;
        }
        let keys = if s.explain.group_by.is_empty() {
            "one group".to_owned()
        } else {
            format!("group by {}", s.explain.group_by.join(", "))
        };
        push(lines, depth, format!("Aggregate {keys}"));
        depth += 1;
    }
    // A query's own scan (an UPDATE's says how it splits above, per table): each thread
    // filters, and projects or aggregates, its part.
    if let Some((threads, rows)) = project
        .then(|| super::query::split_for_explain(s, reader))
        .flatten()
    {
        push(
            lines,
            depth,
            format!(
                "Split among {threads} threads ({})",
                super::profile::rows(rows as u64)
            ),
        );
        depth += 1;
    }
    // A condition of WHERE, or of an inner join's ON, that depends on no row and is not
    // TRUE: said on WHERE's line, or on a line of its own when there is no WHERE.
    let nothing = super::query::passes_nothing(s, reader).unwrap_or(false);
    let filter = match &s.explain.filter {
        Some(f) => Some(format!("Filter {f}")),
        None => nothing.then(|| "Filter from ON".to_owned()),
    };
    if let Some(mut line) = filter {
        if nothing {
            line.push_str(" (no row passes: a condition of WHERE or ON that depends on no row is not TRUE; nothing below is scanned or joined)");
        }
        if let Some(stats) = reader.profile.and_then(|p| p.of(s)) {
            line.push_str(&format!(" (actual: {} in)", super::profile::rows(stats.read)));
        }
        push(lines, depth, line);
        depth += 1;
    }
    annotate(lines, first, reader, s);
    if s.relations.is_empty() {
        push(lines, depth, "One row (no FROM)");
    }
    if s.relations.len() > 1 {
        join_lines(s, reader, depth, lines);
        depth += 1;
    }
    for r in &s.relations {
        let join = match r.join {
            JoinKind::Cross => "",
            JoinKind::Inner => "inner join ",
            JoinKind::Left => "left join ",
        };
        match &r.source {
            RelationSource::Entities(scan) => scan_lines(scan, &r.label, join, reader, depth, lines),
            RelationSource::Series { start, end, .. } => {
                push(lines, depth, format!("{join}Series {start}..={end}"))
            }
            RelationSource::Traversal(w) => {
                let how = match (
                    w.direction,
                    super::traverse::relation_index(w.field, reader.world),
                ) {
                    (crate::plan::TraversalDirection::Ancestors, _) => {
                        "following the field upward".to_owned()
                    }
                    (_, Some(index)) => format!("through relation index {}", index.name()),
                    (_, None) => "no relation index: one pass over the tables builds the map".to_owned(),
                };
                push(lines, depth, format!("{join}Traverse {} ({how})", r.label));
            }
            RelationSource::Catalog { view, rows, .. } => {
                push(
                    lines,
                    depth,
                    format!("{join}Catalog view {view:?} ({} rows)", rows.len),
                );
            }
            RelationSource::WorkTable { .. } => {
                push(
                    lines,
                    depth,
                    format!("{join}Rows the round before added ({})", r.label),
                );
            }
            RelationSource::Query { plan, .. } => {
                match r.label.as_str() {
                    "" => push(lines, depth, format!("{join}Subquery")),
                    name => push(lines, depth, format!("{join}Subquery {name}")),
                }
                query_lines(plan, reader, depth + 1, lines);
            }
            RelationSource::Events(e) => {
                let rows = reader.world.event(e.event).map_or(0, |q| q.len());
                push(
                    lines,
                    depth,
                    format!(
                        "{join}Events {} ({rows} rows kept; a reader reads those it has not seen)",
                        r.label
                    ),
                );
            }
            RelationSource::Removed { component, .. } => {
                let how = match reader.world.removal_log(*component) {
                    Some(log) => format!(
                        "{} ids logged; a reader reads those logged since its last run",
                        log.len()
                    ),
                    None => "nothing logged yet: a reader's first run starts the log".to_owned(),
                };
                push(lines, depth, format!("{join}Removed {} ({how})", r.label));
            }
        }
    }
    // The subqueries of its expressions (a subquery in FROM is printed as its relation).
    subquery_lines(&crate::plan::select_exprs(s), reader, depth, lines);
}

/// Each subquery in `exprs` (not those inside them, which their own plans show): what
/// kind it is, how often it runs, and its plan.
fn subquery_lines(exprs: &[&BoundExpr], reader: &Reader<'_>, depth: usize, lines: &mut Vec<String>) {
    let mut found: Vec<(&str, &QueryPlan, Option<&Correlated>)> = Vec::new();
    for e in exprs {
        e.visit(&mut |n| match &n.kind {
            BoundKind::Subquery {
                query, correlated, ..
            } => {
                found.push(("scalar subquery", query, correlated.as_deref()));
            }
            BoundKind::Exists {
                query, correlated, ..
            } => found.push(("EXISTS", query, correlated.as_deref())),
            BoundKind::InSubquery {
                query, correlated, ..
            } => {
                found.push(("IN subquery", query, correlated.as_deref()));
            }
            _ => {}
        });
    }
    for (kind, query, correlated) in found {
        let how = match correlated {
            Some(c) if c.volatile => "correlated, calling a volatile function: runs for every row",
            Some(_) => "correlated: runs once for each distinct set of outer values it reads",
            None => "runs once, at its first use",
        };
        push(lines, depth, format!("{kind} ({how})"));
        query_lines(query, reader, depth + 1, lines);
    }
}

/// The join plan: which relations are ordered at run time, and what joins them.
fn join_lines(s: &SelectPlan, reader: &Reader<'_>, depth: usize, lines: &mut Vec<String>) {
    let free = s.joins.free.min(s.relations.len());
    let label = |r: usize| s.relations.get(r).map_or("?", |r| r.label.as_str());
    let labels = |rs: &[usize]| rs.iter().map(|&r| label(r)).collect::<Vec<_>>().join(", ");
    let mut head = if free > 1 {
        format!("Join: {free} relations by inner joins, ordered by their sizes and keys when run")
    } else {
        "Join".to_owned()
    };
    if free < s.relations.len() {
        head.push_str(if free > 1 {
            "; then the rest in FROM order"
        } else {
            ": in FROM order"
        });
    }
    push(lines, depth, head);
    for c in &s.joins.conditions {
        // The condition as written, found by where it starts.
        let text = s.explain.conditions.iter().find(|(at, _)| *at == c.expr.at);
        let line = match (&c.equi, text) {
            (Some((a, b)), Some((_, t))) => format!("hash key {t}: ({}) = ({})", labels(a), labels(b)),
            (Some((a, b)), None) => format!("hash key: ({}) = ({})", labels(a), labels(b)),
            (None, Some((_, t))) => format!("condition {t} on ({})", labels(&c.relations)),
            (None, None) => format!("condition on ({})", labels(&c.relations)),
        };
        push(lines, depth + 1, line);
        for &r in &c.by_id {
            let line = format!(
                "by id: {} read through the entity index when joined after the other side",
                label(r)
            );
            push(lines, depth + 2, line);
        }
        for (r, index) in super::join::key_indexes(s, c, reader) {
            if c.by_id.contains(&r) {
                continue;
            }
            let line = format!(
                "by index {index}: {} read through it for the values of the other side, when joined after it",
                label(r)
            );
            push(lines, depth + 2, line);
        }
        if let Some(j) = &c.spatial {
            let line = format!(
                "by spatial index {}: the entities of {} within reach of each row of ({})",
                j.index,
                label(j.relation),
                labels(&j.center_relations)
            );
            push(lines, depth + 2, line);
        }
    }
    for r in &s.relations[free..] {
        if let Some(on) = &r.on {
            push(
                lines,
                depth + 1,
                format!("ON of {} (hash join on an equality, else pair by pair)", r.label),
            );
            if let RelationSource::Entities(scan) = &r.source
                && scan.ids.is_none()
                && scan.index.is_none()
                && crate::plan::id_equality(on, scan).is_some()
            {
                let line = format!("by id: {} read through the entity index", r.label);
                push(lines, depth + 2, line);
            }
        }
    }
}

/// ` on every run`, ` on 2 of 3 runs`, nothing for the one run there was.
fn times(n: u64, runs: u64) -> String {
    match (n == runs, runs) {
        (true, 1) => String::new(),
        (true, _) => " on every run".to_owned(),
        _ => format!(" on {n} of {runs} runs"),
    }
}

fn scan_lines(
    scan: &EntityScan,
    label: &str,
    join: &str,
    reader: &Reader<'_>,
    depth: usize,
    lines: &mut Vec<String>,
) {
    let world = reader.world;
    let names = |cs: &[crate::storage::ComponentId]| world.names_of(cs);
    // The sparse components are named with the others, as the query wrote them.
    let with_sparse = |list: &[crate::storage::ComponentId], must: Option<bool>| {
        let mut all = list.to_vec();
        all.extend(scan.sparse.iter().filter(|m| m.must == must).map(|m| m.component));
        all
    };
    let (required, excluded, optional) = (
        with_sparse(&scan.required, Some(true)),
        with_sparse(&scan.excluded, Some(false)),
        with_sparse(&scan.optional, None),
    );
    let mut head = format!("{join}Scan {label}: entities with ({})", names(&required));
    if !excluded.is_empty() {
        head.push_str(&format!(" without ({})", names(&excluded)));
    }
    if !optional.is_empty() {
        head.push_str(&format!(", optional ({})", names(&optional)));
    }
    if let Some(ids) = &scan.ids {
        let n = ids.len();
        head.push_str(&format!(
            ", looked up by id ({n} id{})",
            if n == 1 { "" } else { "s" }
        ));
    }
    if let Some(stats) = reader.profile.and_then(|p| p.of(scan)) {
        let mut actual = vec![format!("{} read", super::profile::rows(stats.rows))];
        if stats.runs != 1 {
            actual.insert(0, format!("{} runs", stats.runs));
        }
        let by = if scan.ids.is_some() && scan.index.is_none() {
            "the ids"
        } else {
            "the index"
        };
        if stats.indexed > 0 {
            actual.push(format!("through {by}{}", times(stats.indexed, stats.runs)));
        }
        if stats.walked > 0 {
            actual.push(format!("tables walked{}", times(stats.walked, stats.runs)));
        }
        head.push_str(&format!(" (actual: {})", actual.join(", ")));
    }
    push(lines, depth, head);
    if let Some(lookup) = &scan.index {
        push(
            lines,
            depth + 1,
            format!(
                "index {} ({}) serves {}, used while it finds at most {} rows",
                lookup.index,
                lookup.kind,
                lookup.serves,
                super::scan::index_limit(super::scan::index_basis(scan, reader))
            ),
        );
    }
    for note in &scan.index_notes {
        push(lines, depth + 1, note.clone());
    }
    let sparse_changes = scan
        .changes
        .and_then(|column| super::scan::sparse_asked(world, column));
    if let Some(column) = scan.changes {
        let asked = match column {
            ScanColumn::Changed(f) => format!("changed({})", field_name(world, f)),
            ScanColumn::ChangedAny(c) => format!("changed({})", names(&[c])),
            ScanColumn::Added(c) => format!("added({})", names(&[c])),
            _ => String::new(),
        };
        let what = match sparse_changes {
            Some(_) => format!(
                "starts from the sparse component's own table, of whose blocks of {BLOCK_ROWS} rows a reader after its first run reads only those changed since its last run"
            ),
            None => format!(
                "a reader after its first run reads only the tables and blocks of {BLOCK_ROWS} rows changed since its last run"
            ),
        };
        push(lines, depth + 1, format!("{asked}: {what}"));
    }
    let zones = zone_lines(scan, reader, depth, lines)
        // A scan that starts from a sparse component's table skips in that table, not in
        // the archetype tables listed below.
        .filter(|_| super::scan::sparse_home(scan, reader).is_none());
    let selected = reader.tables(scan).to_vec();
    if !sparse_lines(scan, reader, &selected, sparse_changes.is_some(), depth, lines) {
        return;
    }
    let mut filter = Filter::new();
    for c in &scan.required {
        filter = filter.with(*c);
    }
    for c in &scan.excluded {
        filter = filter.without(*c);
    }
    for t in world.tables() {
        if t.components().is_empty() && t.is_empty() && !scan.required.is_empty() {
            continue;
        }
        let set = names(t.components());
        if selected.contains(&t.id()) {
            let read = reader
                .profile
                .and_then(|p| p.of(scan))
                .map(|stats| match stats.tables.iter().find(|(id, _)| *id == t.id()) {
                    Some((_, n)) => format!(" (actual: {n} read)"),
                    None => " (actual: none read)".to_owned(),
                })
                .unwrap_or_default();
            let skipped = match zones.as_ref().map(|z| z.verdict(t)) {
                Some(SkipVerdict::Skip(n)) => format!(", skipped: {}", zone_skip(world, scan, n, t)),
                Some(SkipVerdict::AllBlocks) => {
                    format!(", skipped: every block ruled out {}", skipped_by(scan))
                }
                Some(SkipVerdict::Blocks(keep)) => format!(
                    ", {} of {} blocks skipped {}",
                    keep.iter().filter(|k| !**k).count(),
                    keep.len(),
                    skipped_by(scan)
                ),
                _ => String::new(),
            };
            push(
                lines,
                depth + 1,
                format!(
                    "table {} ({set}): {}{skipped}{read}",
                    t.name(),
                    super::profile::rows(t.len() as u64)
                ),
            );
        } else {
            let why = if let Some(c) = scan.required.iter().find(|c| !t.contains(**c)) {
                format!("lacks {}", names(&[*c]))
            } else if let Some(c) = scan.excluded.iter().find(|c| t.contains(**c)) {
                format!("has {}", names(&[*c]))
            } else if scan.only.is_some() {
                "not the table named".to_owned()
            } else {
                "does not match".to_owned()
            };
            push(lines, depth + 1, format!("pruned {} ({set}): {why}", t.name()));
        }
    }
    // Tables the statement made and read, gone again with its undoing (EXPLAIN ANALYZE
    // of a SPAWN … RETURNING into a new archetype).
    if let Some(stats) = reader.profile.and_then(|p| p.of(scan)) {
        for (id, n) in &stats.tables {
            if world.table(*id).is_none() {
                push(
                    lines,
                    depth + 1,
                    format!("a table the statement made, undone since (actual: {n} read)"),
                );
            }
        }
    }
}

/// How a scan reads its sparse components: whether it starts from one's table (the choice
/// `scan::sparse_home` makes when the statement runs, made here on the same counts), and
/// that the others are looked up per row. Returns whether the archetype tables are worth
/// listing (they are not for a scan that reads a sparse table and requires nothing of
/// them).
fn sparse_lines(
    scan: &EntityScan,
    reader: &Reader<'_>,
    tables: &[crate::storage::TableId],
    starts_from_changes: bool,
    depth: usize,
    lines: &mut Vec<String>,
) -> bool {
    let world = reader.world;
    let name = |c| world.names_of(&[c]);
    let held = |t: crate::storage::TableId| world.table(t).map_or(0, |t| t.len());
    let home = super::scan::sparse_home(scan, reader);
    let dense_needed = !scan.required.is_empty() || !scan.excluded.is_empty() || scan.only.is_some();
    match home.and_then(|t| scan.sparse.iter().find(|m| m.table == t)) {
        Some(m) if !starts_from_changes => {
            let then = if dense_needed {
                ", each entity's archetype row found through the entity index"
            } else {
                ""
            };
            push(
                lines,
                depth + 1,
                format!(
                    "reads the table of {} (sparse): {}{then}",
                    name(m.component),
                    super::profile::rows(held(m.table) as u64)
                ),
            );
        }
        Some(_) => {}
        None => {
            if let Some(m) = scan
                .sparse
                .iter()
                .filter(|m| m.must == Some(true))
                .min_by_key(|m| held(m.table))
            {
                push(
                    lines,
                    depth + 1,
                    format!(
                        "walks the tables ({} rows): {} (sparse) is held by {} entities, more",
                        super::scan::rows_in(world, tables),
                        name(m.component),
                        held(m.table)
                    ),
                );
            }
        }
    }
    for m in scan.sparse.iter().filter(|m| Some(m.table) != home) {
        let how = match m.must {
            Some(true) => "must have it",
            Some(false) => "must not have it",
            None => "NULL where it lacks it",
        };
        push(
            lines,
            depth + 1,
            format!(
                "sparse {} ({} entities): each row's entity looked up by slot ({how})",
                name(m.component),
                held(m.table)
            ),
        );
    }
    home.is_none() || dense_needed
}

/// The scan's skip conditions as SQL (zone maps', filter indexes'), with what they skip of
/// its tables (as this EXPLAIN's parameters decide; making the zones and filters asked
/// for, as a run would) and, under ANALYZE, what they skipped: a line when they skip
/// anything. Returns the conditions with their values, for the table lines.
fn zone_lines(
    scan: &EntityScan,
    reader: &Reader<'_>,
    depth: usize,
    lines: &mut Vec<String>,
) -> Option<Skipping> {
    if scan.skips.is_empty() {
        return None;
    }
    // Values a correlated subquery reads from its outer row are known only as it runs.
    let probe = Skipping::new(scan, reader);
    let world = reader.world;
    let (mut tables, mut skipped, mut blocks) = (0, 0, 0);
    if let Some(probe) = &probe {
        // A scan that starts from a sparse component's table skips in that table.
        let read = match super::scan::sparse_home(scan, reader) {
            Some(home) => vec![home],
            None => reader.tables(scan).to_vec(),
        };
        for id in read {
            let Some(t) = world.table(id) else { continue };
            tables += 1;
            match probe.verdict(t.get()) {
                SkipVerdict::Skip(_) | SkipVerdict::AllBlocks => skipped += 1,
                SkipVerdict::Blocks(keep) => blocks += keep.iter().filter(|k| !**k).count(),
                SkipVerdict::Read => {}
            }
        }
    }
    let actual = reader
        .profile
        .and_then(|p| p.of(scan))
        .filter(|s| s.zone_tables + s.zone_blocks > 0);
    // A filter index's line shows whatever it skips: the user made it to skip.
    let filtered = scan
        .skips
        .iter()
        .any(|z| matches!(z.test, SkipTest::Member { .. }));
    if skipped + blocks == 0 && actual.is_none() && !filtered {
        return probe;
    }
    let zoned: Vec<String> = scan
        .skips
        .iter()
        .filter(|z| !matches!(z.test, SkipTest::Member { .. }))
        .map(|z| zone_text(world, z))
        .collect();
    let mut parts = Vec::new();
    if !zoned.is_empty() {
        parts.push(format!("zone maps on {}", zoned.join(" AND ")));
    }
    for z in &scan.skips {
        if let SkipTest::Member { index, .. } = &z.test {
            parts.push(format!("index {index} (filter) on {}", zone_text(world, z)));
        }
    }
    let mut line = parts.join("; ");
    if probe.is_none() {
        line.push_str(": decided as the statement runs");
    } else if skipped + blocks == 0 {
        let _ = write!(line, " skip none of {tables} tables");
    } else {
        let _ = write!(line, " skip {skipped} of {tables} tables");
        if blocks > 0 {
            let _ = write!(
                line,
                " and {blocks} block{} of {BLOCK_ROWS} rows in the others",
                if blocks == 1 { "" } else { "s" }
            );
        }
        if scan.index.is_some() {
            line.push_str(" when the index is not used");
        }
    }
    if let Some(stats) = actual {
        let (t, b) = (stats.zone_tables, stats.zone_blocks);
        let _ = write!(
            line,
            " (actual: {t} table{} and {b} block{} skipped)",
            if t == 1 { "" } else { "s" },
            if b == 1 { "" } else { "s" }
        );
    }
    push(lines, depth + 1, line);
    probe
}

/// A zone condition as SQL: `Health.hp < 10`, `Team.id IN (1, 2)`.
fn zone_text(world: &World, z: &SkipCondition) -> String {
    let field = field_name(world, z.field);
    match &z.test {
        SkipTest::Compare(op, v) => format!("{field} {} {v}", op.symbol()),
        SkipTest::Member { values, .. } if values.len() == 1 => format!("{field} = {}", values[0]),
        SkipTest::In(values) | SkipTest::Member { values, .. } => {
            let v: Vec<String> = values.iter().map(ToString::to_string).collect();
            format!("{field} IN ({})", v.join(", "))
        }
    }
}

/// What skipped blocks of a table: `by zone maps`, `by filters` or both.
fn skipped_by(scan: &EntityScan) -> &'static str {
    let members = scan
        .skips
        .iter()
        .filter(|z| matches!(z.test, SkipTest::Member { .. }))
        .count();
    match (members, scan.skips.len() - members) {
        (0, _) => "by zone maps",
        (_, 0) => "by filters",
        _ => "by zone maps and filters",
    }
}

/// Why zone maps skip table `t`: condition `n` of the scan, and the values the table holds.
fn zone_skip(world: &World, scan: &EntityScan, n: usize, t: &Table) -> String {
    let Some(z) = scan.skips.get(n) else {
        return skipped_by(scan).to_owned();
    };
    if let SkipTest::Member { index, .. } = &z.test {
        return format!(
            "{} is in none of its blocks' filters (index {index})",
            zone_text(world, z)
        );
    }
    let zones = t
        .column_index(z.field)
        .and_then(|i| t.columns().get(i))
        .and_then(|c| c.zones());
    let real = zones.is_some_and(|z| z.is_real());
    let values = match zones.and_then(|z| z.whole_span()) {
        Some((lo, hi)) => format!("its values are {} to {}", key_text(lo, real), key_text(hi, real)),
        None => "it holds no value any comparison is true of (NULL or NaN)".to_owned(),
    };
    format!("{} cannot hold, {values}", zone_text(world, z))
}

/// A zone bound as SQL shows a value of its column (a REAL column's as a REAL).
fn key_text(k: ZoneKey, real: bool) -> String {
    match k {
        ZoneKey::Int(i) => i.to_string(),
        ZoneKey::Float(f) if real => Value::Real(f as f32).to_string(),
        ZoneKey::Float(f) => Value::Float(f).to_string(),
    }
}

/// `Component.field`, for EXPLAIN.
fn field_name(world: &World, f: FieldId) -> String {
    match world.component(f.component()) {
        Ok(def) => match def.fields().get(f.index()) {
            Some(field) => format!("{}.{}", def.name(), field.name()),
            None => def.name().to_owned(),
        },
        Err(_) => format!("#{}", f.index()),
    }
}
