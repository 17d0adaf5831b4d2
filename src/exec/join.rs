//! Joins: each relation of a FROM with more than one is materialized (its own filter
//! applied during its scan) and joined by hash on an equality between the two sides,
//! through a spatial index (`index_join.rs`), or pair by pair otherwise, a bounded chunk
//! of pairs at a time. A relation joined on its bare id waits until the other side is
//! joined, and is then read for the entities named there only, unless a spatial step
//! before that needs its largest value to bound its reach (then it is read whole, before
//! that step). The last join's pairs are
//! not kept: each chunk goes to the caller as it is made, so a count or an aggregate over
//! a join holds its groups, not the pairs. Everything that is kept is charged to the
//! statement's budget, and every chunk checks for an interrupt.

use std::borrow::Cow;

use hashbrown::HashMap;

use super::error::ExecError;
use super::eval::{Selection, Subqueries, eval, select_rows};
use super::index_join::{SpatialStep, spatial_step};
use super::reader::Reader;
use super::scan::{MORSEL_ROWS, estimated_rows, for_each_morsel, named_id};
use crate::index::{IndexKind, Indexes, Probe};
use crate::location::Location;
use crate::plan::{
    BoundExpr, BoundKind, CmpOp, DataType, EntityScan, JoinCondition, JoinKind, Relation, RelationSource,
    ScanColumn, SelectPlan, id_equality,
};
use crate::storage::{Entity, FieldId, Key, Value};
use crate::vector::{Batch, Data, Datum, Vector};

type Result<T> = std::result::Result<T, ExecError>;

/// One relation's rows as an owned batch, its pushed-down filter applied.
pub fn materialize(relation: &Relation, width: usize, reader: &Reader<'_>) -> Result<Batch<'static>> {
    let mut out = Batch::new(0, width);
    for_each_chunk(relation, width, reader, &mut |batch| {
        keep(&mut out, &batch, reader)
    })?;
    // The slots a relation fills are present even when it has no rows (no table matched,
    // an empty series or event queue), so that the joins above find them.
    for slot in filled_slots(&relation.source) {
        if let Some(s @ None) = out.slots.get_mut(slot) {
            *s = Some(Datum::Vector(Vector::nulls(0)));
        }
    }
    Ok(out)
}

/// The batch slots a relation's rows fill.
fn filled_slots(source: &RelationSource) -> Vec<usize> {
    match source {
        RelationSource::Entities(scan) => scan.columns.iter().map(|&(slot, _)| slot).collect(),
        RelationSource::Series { slot, .. } | RelationSource::Removed { slot, .. } => vec![*slot],
        RelationSource::Traversal(w) => vec![w.id_slot, w.depth_slot],
        RelationSource::Query { slots, .. }
        | RelationSource::WorkTable { slots, .. }
        | RelationSource::Catalog { slots, .. } => slots.clone(),
        RelationSource::Events(scan) => scan.columns.iter().map(|&(slot, _)| slot).collect(),
    }
}

/// Appends `batch` to `out`, charging its bytes to the statement's budget first.
fn keep(out: &mut Batch<'static>, batch: &Batch<'_>, reader: &Reader<'_>) -> Result<()> {
    reader.budget.charge(batch.bytes(), reader.at)?;
    append_batch(out, batch);
    Ok(())
}

/// Hands one relation's rows to `f` a morsel at a time, its pushed-down filter applied:
/// scans, series and event rows stream; a traversal or a subquery comes as one batch.
pub fn for_each_chunk(
    relation: &Relation,
    width: usize,
    reader: &Reader<'_>,
    f: &mut dyn FnMut(Batch<'_>) -> Result<()>,
) -> Result<()> {
    let mut append = |batch: Batch<'_>| -> Result<()> {
        reader.budget.check(reader.at)?;
        let batch = match &relation.filter {
            None => batch,
            Some(filter) => match select_rows(filter, &batch, &reader.eval())? {
                Selection::All => batch,
                Selection::None => return Ok(()),
                Selection::Rows(rows) => batch.gather(&rows),
            },
        };
        f(batch)
    };
    match &relation.source {
        RelationSource::Entities(scan) => {
            for_each_morsel(scan, width, reader, &mut append)?;
        }
        RelationSource::Series { start, end, slot } => {
            if end < start {
                return Ok(());
            }
            let mut next = *start;
            loop {
                let last = next.saturating_add(MORSEL_ROWS as i64 - 1).min(*end);
                let values: Vec<i64> = (next..=last).collect();
                let n = values.len();
                let mut batch = Batch::new(n, width);
                batch.slots[*slot] = Some(Datum::Vector(Vector::from_data(Data::Int(Cow::Owned(values)), n)));
                append(batch)?;
                if last >= *end {
                    break;
                }
                next = last + 1;
            }
        }
        RelationSource::Traversal(w) => {
            let rows = super::traverse::traverse(w, reader)?;
            let mut batch = Batch::new(rows.len(), width);
            let ids: Vec<Option<Entity>> = rows.iter().map(|&(e, _)| Some(e)).collect();
            let depths: Vec<i64> = rows.iter().map(|&(_, d)| d).collect();
            batch.slots[w.id_slot] = Some(Datum::Vector(Vector::from_data(
                Data::Entity(Cow::Owned(ids)),
                rows.len(),
            )));
            batch.slots[w.depth_slot] = Some(Datum::Vector(Vector::from_data(
                Data::Int(Cow::Owned(depths)),
                rows.len(),
            )));
            append(batch)?;
        }
        RelationSource::Events(scan) => {
            let (queue, rows) = reader.event_rows(scan.event)?;
            let mut start = rows.start;
            while start < rows.end {
                let end = (start + MORSEL_ROWS).min(rows.end);
                let mut batch = Batch::new(end - start, width);
                for &(slot, field) in &scan.columns {
                    if let Some(column) = queue.columns().get(field) {
                        batch.slots[slot] = Some(Datum::Vector(Vector::from_column(column, start..end)));
                    }
                }
                append(batch)?;
                start = end;
            }
        }
        RelationSource::Removed { component, slot } => {
            for ids in reader.removed(*component).chunks(MORSEL_ROWS) {
                let ids: Vec<Option<Entity>> = ids.iter().copied().map(Some).collect();
                let mut batch = Batch::new(ids.len(), width);
                let n = ids.len();
                batch.slots[*slot] = Some(Datum::Vector(Vector::from_data(Data::Entity(Cow::Owned(ids)), n)));
                append(batch)?;
            }
        }
        RelationSource::Query { plan, slots } => {
            let chunk = reader.run(plan)?;
            let mut batch = Batch::new(chunk.len, width);
            for (column, &slot) in chunk.columns.into_iter().zip(slots) {
                batch.slots[slot] = Some(Datum::Vector(column));
            }
            append(batch)?;
        }
        RelationSource::Catalog { rows, slots, .. } => {
            let mut batch = Batch::new(rows.len, width);
            for (column, &slot) in rows.columns.iter().zip(slots) {
                batch.slots[slot] = Some(Datum::Vector(column.view()));
            }
            append(batch)?;
        }
        RelationSource::WorkTable { work, slots } => {
            let Some(rows) = reader.work_rows(*work) else {
                return Err(ExecError::internal(
                    reader.at,
                    "a recursive query's rows are read outside it",
                ));
            };
            let mut batch = Batch::new(rows.len, width);
            for (column, &slot) in rows.columns.iter().zip(slots) {
                batch.slots[slot] = Some(Datum::Vector(column.view()));
            }
            append(batch)?;
        }
    }
    Ok(())
}

fn append_batch(out: &mut Batch<'static>, batch: &Batch<'_>) {
    for (slot, datum) in batch.slots.iter().enumerate() {
        let Some(d) = datum else { continue };
        let v = d.view().into_vector(datum_type(d), batch.len);
        match &mut out.slots[slot] {
            Some(Datum::Vector(existing)) => existing.append(&v),
            other => {
                let mut grown = Vector::nulls(out.len);
                grown.append(&v);
                *other = Some(Datum::Vector(grown));
            }
        }
    }
    out.len += batch.len;
    // Slots this batch did not fill keep their length.
    for d in out.slots.iter_mut().flatten() {
        if let Datum::Vector(v) = d
            && v.len() < out.len
        {
            v.append(&Vector::nulls(out.len - v.len()));
        }
    }
}

fn datum_type(d: &Datum<'_>) -> DataType {
    match d {
        Datum::Scalar(v) => DataType::of(v),
        Datum::Vector(v) => v.data_type(),
    }
}

/// Joins a select's relations. The freely ordered ones (`JoinPlan::free`) are each
/// materialized with their own filter, then joined by their sizes and keys: each step
/// takes, among the relations a hash key connects to those joined so far, the one with
/// the fewest rows; when none is connected, one a spatial index joins to them; else (the
/// first step, a cross product) one of at most one row, else the smallest relation when
/// an equality links it to another not joined yet, else the smallest linked one whose
/// key join makes no more rows than the larger side (`key_join_expands`), else the
/// smallest. Each step joins on every key that connects it and applies every condition
/// that step makes decidable. Ties go to FROM order, so the same data joins the same way
/// every run. The relations after them (from the first LEFT JOIN on) then follow in FROM
/// order with their ON. The last step's rows go to `emit` a chunk at a time; the steps
/// before it are kept.
pub fn join_all(plan: &SelectPlan, reader: &Reader<'_>, emit: Emit<'_>) -> Result<()> {
    let width = plan.width;
    let free = plan.joins.free.min(plan.relations.len());
    // A relation another joins to by its id, or by a field a value index keeps (and no
    // index of its own narrows, `key_indexes`), waits: joined after that side, it reads
    // only the entities named there, or those the index gives for its values (until
    // then its size is its tables' rows). One its index
    // serves waits too, so that the index changes neither the order of the joins nor
    // that of their rows (which side a hash step builds on follows the sizes); read
    // first, it is read through its index.
    let mut inputs: Vec<Option<Batch<'static>>> = Vec::with_capacity(free);
    let mut deferred = vec![false; free];
    // Waiting for its index only (not for ids): read through the index, it holds fewer
    // rows than read whole, and a hash step weighs it as whole, so that it builds on the
    // side it would without the index and gives its pairs in the same order.
    let mut by_index = vec![false; free];
    let mut sizes = vec![0; free];
    for (r, relation) in plan.relations[..free].iter().enumerate() {
        match &relation.source {
            // One read for a subscription's entities (`query::rows_for`) is read first.
            RelationSource::Entities(scan)
                if scan.ids.is_none()
                    && !reader.looks_up(scan)
                    && (plan.joins.conditions.iter().any(|c| c.by_id.contains(&r))
                        || keyed_by_index(plan, r, scan, reader)) =>
            {
                deferred[r] = true;
                by_index[r] = !plan.joins.conditions.iter().any(|c| c.by_id.contains(&r));
                sizes[r] = estimated_rows(scan, reader);
                inputs.push(None);
            }
            _ => {
                let batch = materialize(relation, width, reader)?;
                sizes[r] = batch.len;
                inputs.push(Some(batch));
            }
        }
    }
    let rows = |_: &[Option<Batch<'static>>], r: usize| sizes[r];
    let mut pending: Vec<&JoinCondition> = plan.joins.conditions.iter().collect();
    // Whether each relation's key join with its partner makes more rows than the larger
    // of the two (`key_join_expands`), once counted.
    let mut expands_memo: Vec<Option<bool>> = vec![None; free];
    let mut joined: Vec<usize> = Vec::new();
    let mut acc: Option<Batch<'static>> = None;
    while joined.len() < free {
        let remaining = (0..free).filter(|r| !joined.contains(r));
        let connects = |r: usize, c: &JoinCondition| match &c.equi {
            Some((a, b)) => {
                (b == &[r] && a.iter().all(|x| joined.contains(x)))
                    || (a == &[r] && b.iter().all(|x| joined.contains(x)))
            }
            None => false,
        };
        let connected: Vec<usize> = remaining
            .clone()
            .filter(|&r| !joined.is_empty() && pending.iter().any(|c| connects(r, c)))
            .collect();
        // Without a hash key, a relation a spatial index can join comes before a cross
        // product.
        let near: Vec<usize> = if connected.is_empty() && !joined.is_empty() {
            remaining
                .clone()
                .filter(|&r| spatial_step(&pending, &joined, r).is_some())
                .collect()
        } else {
            Vec::new()
        };
        let pool: Vec<usize> = if !connected.is_empty() {
            connected
        } else if !near.is_empty() {
            near
        } else {
            let all: Vec<usize> = remaining.collect();
            match cross_pool(&all, &pending, &sizes) {
                Cross::Linked(mut linked) => {
                    // Where the smallest relation is linked, it goes first anyway;
                    // else the smallest linked relation whose key join with its partner
                    // makes no more rows than the larger of the two, if any.
                    let smallest = all.iter().copied().min_by_key(|&r| (sizes[r], r));
                    if smallest.is_some_and(|s| linked.contains(&s)) {
                        linked
                    } else {
                        linked.sort_by_key(|&r| (sizes[r], r));
                        let mut read = Unread {
                            inputs: &mut inputs,
                            deferred: &mut deferred,
                            by_index: &mut by_index,
                            plan,
                            reader,
                        };
                        let mut first = None;
                        for r in linked {
                            let expands = match expands_memo[r] {
                                Some(known) => known,
                                None => {
                                    *expands_memo[r].insert(key_join_expands(r, &pending, &sizes, &mut read)?)
                                }
                            };
                            if !expands {
                                first = Some(r);
                                break;
                            }
                        }
                        first.map_or(all, |r| vec![r])
                    }
                }
                Cross::Pool(pool) => pool,
            }
        };
        let Some(&next) = pool.iter().min_by_key(|&&r| (rows(&inputs, r), r)) else {
            break;
        };
        let spatial = spatial_step(&pending, &joined, next);
        // The hash keys connecting `next`, oriented (joined side, `next`'s side); then
        // every other condition this step can decide.
        let mut keys: Vec<(&BoundExpr, &BoundExpr)> = Vec::new();
        let mut checks: Vec<&BoundExpr> = Vec::new();
        pending.retain(|c| {
            let decidable = c.relations.iter().all(|x| *x == next || joined.contains(x));
            if !decidable {
                return true;
            }
            match (c.sides(), &c.equi) {
                (Some((l, r)), Some((a, _))) if connects(next, c) => {
                    keys.push(if a == &[next] { (r, l) } else { (l, r) });
                }
                _ => checks.push(&c.expr),
            }
            false
        });
        // A step paired through the spatial index (no hash key) bounds its reach by the
        // largest value of a term of a relation not joined yet: one waiting to be read by
        // id is read whole now, as without its rows the step would pair every row.
        if keys.is_empty()
            && let Some(step) = &spatial
        {
            for r in step.bounding_relations(&joined, next) {
                if deferred.get(r) == Some(&true) && inputs[r].is_none() {
                    deferred[r] = false;
                    inputs[r] = Some(materialize(&plan.relations[r], width, reader)?);
                }
            }
        }
        let right = match inputs[next].take() {
            Some(batch) => batch,
            None if deferred[next] => {
                deferred[next] = false;
                read_by_id(&plan.relations[next], width, &keys, acc.as_ref(), reader)?
            }
            None => {
                return Err(ExecError::internal(
                    Location::default(),
                    "a relation was joined twice",
                ));
            }
        };
        let last = joined.len() + 1 == free && plan.relations.len() == free;
        let mut kept = Batch::new(0, width);
        let mut collect = |b: Batch<'static>| keep(&mut kept, &b, reader);
        let out: Emit<'_> = if last { &mut *emit } else { &mut collect };
        match acc.take() {
            None => out(filter_batch(right, &checks, reader)?)?,
            Some(left) => {
                let pairing = match spatial {
                    _ if !keys.is_empty() => Pairing::Keys(keys),
                    Some(step) => Pairing::Near(step),
                    None => Pairing::Every,
                };
                let rows_of = |r: usize| inputs.get(r).and_then(Option::as_ref);
                let right_rows = if by_index[next] { sizes[next] } else { right.len };
                inner_join(
                    left,
                    (right, right_rows),
                    &pairing,
                    (&joined, next),
                    rows_of,
                    &checks,
                    reader,
                    out,
                )?
            }
        }
        if !last {
            acc = Some(kept);
        }
        joined.push(next);
    }
    if !pending.is_empty() {
        return Err(ExecError::internal(
            Location::default(),
            "a join condition was left unapplied",
        ));
    }
    let tail = &plan.relations[free..];
    for (i, relation) in tail.iter().enumerate() {
        // An ON equality on the relation's bare id reads only the entities named.
        let by_id = match (&acc, &relation.on, &relation.source) {
            (Some(left), Some(on), RelationSource::Entities(scan))
                if scan.ids.is_none() && scan.index.is_none() =>
            {
                // The named side reads the rows joined before (as an ON does).
                id_equality(on, scan)
                    .filter(|e| {
                        let mut of_left = true;
                        e.visit_slots(&mut |s| of_left &= left.slots.get(s).is_some_and(Option::is_some));
                        of_left
                    })
                    .map(|expr| (scan, expr, left))
            }
            _ => None,
        };
        let right = match by_id {
            Some((scan, expr, left)) => read_named(relation, scan, expr, left, width, reader)?,
            None => materialize(relation, width, reader)?,
        };
        let last = i + 1 == tail.len();
        let mut kept = Batch::new(0, width);
        let mut collect = |b: Batch<'static>| keep(&mut kept, &b, reader);
        let out: Emit<'_> = if last { &mut *emit } else { &mut collect };
        match acc.take() {
            None => out(right)?,
            Some(left) => join(left, right, relation, reader, out)?,
        }
        if !last {
            acc = Some(kept);
        }
    }
    if plan.relations.is_empty() {
        emit(Batch::new(1, width))?;
    }
    Ok(())
}

/// Where a step with no hash key to what is joined (the first, or a cross product) picks
/// from among the relations not joined yet.
enum Cross {
    /// Relations an equality links to another relation not joined yet: one goes first
    /// when its key join with its partner makes no more rows than the larger of the two
    /// (`key_join_expands`), so that linked relations meet before cross products
    /// multiply the rows their keys are probed for.
    Linked(Vec<usize>),
    /// Any of these.
    Pool(Vec<usize>),
}

/// The relations a step with no hash key picks from among `remaining`: one of at most
/// one row first (crossing it never makes more rows; none makes none); else those an
/// equality of single relations links to another of `remaining` (`Cross::Linked`); else
/// any.
fn cross_pool(remaining: &[usize], pending: &[&JoinCondition], sizes: &[usize]) -> Cross {
    let pick = |keep: &dyn Fn(usize) -> bool| -> Vec<usize> {
        remaining.iter().copied().filter(|&r| keep(r)).collect()
    };
    let tiny = pick(&|r| sizes[r] <= 1);
    if !tiny.is_empty() {
        return Cross::Pool(tiny);
    }
    let linked = pick(&|r| {
        pending
            .iter()
            .any(|c| equality_partner(c, r).is_some_and(|p| remaining.contains(&p)))
    });
    if linked.is_empty() {
        Cross::Pool(remaining.to_vec())
    } else {
        Cross::Linked(linked)
    }
}

/// The relation `c` equates relation `r` with, when `c` is an equality between two
/// single relations of which `r` is one.
fn equality_partner(c: &JoinCondition, r: usize) -> Option<usize> {
    match &c.equi {
        Some((a, b)) if a == &[r] && b.len() == 1 => b.first().copied(),
        Some((a, b)) if b == &[r] && a.len() == 1 => a.first().copied(),
        _ => None,
    }
}

/// The relations of a join not read yet, one waiting for its index read whole when a
/// count needs its rows (it is then read, and weighed as read).
struct Unread<'u, 'p> {
    inputs: &'u mut [Option<Batch<'static>>],
    deferred: &'u mut [bool],
    by_index: &'u mut [bool],
    plan: &'p SelectPlan,
    reader: &'u Reader<'u>,
}

/// The most rows a relation waiting for its index is read whole for, to count a key
/// join before choosing the order.
const COUNTED_ROWS: usize = 1 << 16;

/// Whether joining `r` first with its partner (the smallest relation an equality of
/// single relations links it to) would make more rows than the larger of the two: a
/// join on a bare id never does; else the pairs are counted from both sides' keys. A
/// side waiting for its index is read whole for the count when both sides are read or
/// wait for their index with at most `COUNTED_ROWS` rows; otherwise (a side waiting to
/// be read by id, a larger one, or no partner) it counts as making more.
fn key_join_expands(
    r: usize,
    pending: &[&JoinCondition],
    sizes: &[usize],
    read: &mut Unread<'_, '_>,
) -> Result<bool> {
    let partner = pending
        .iter()
        .filter_map(|c| equality_partner(c, r))
        .min_by_key(|&p| (sizes[p], p));
    let Some(p) = partner else {
        return Ok(true);
    };
    let conditions: Vec<&JoinCondition> = pending
        .iter()
        .copied()
        .filter(|c| equality_partner(c, r) == Some(p))
        .collect();
    if conditions.iter().any(|c| !c.by_id.is_empty()) {
        return Ok(false);
    }
    let countable = |x: usize| {
        read.inputs[x].is_some() || (read.deferred[x] && read.by_index[x] && sizes[x] <= COUNTED_ROWS)
    };
    if !countable(r) || !countable(p) {
        return Ok(true);
    }
    for x in [r, p] {
        if read.inputs[x].is_none() {
            read.inputs[x] = Some(materialize(
                &read.plan.relations[x],
                read.plan.width,
                read.reader,
            )?);
            read.deferred[x] = false;
            read.by_index[x] = false;
        }
    }
    let (Some(rows_r), Some(rows_p)) = (read.inputs[r].as_ref(), read.inputs[p].as_ref()) else {
        return Ok(true);
    };
    // Each condition's sides, oriented (r's, p's).
    let (mut of_r, mut of_p) = (Vec::new(), Vec::new());
    for c in &conditions {
        if let (Some((left, right)), Some((a, _))) = (c.sides(), &c.equi) {
            let (x, y) = if a == &[r] { (left, right) } else { (right, left) };
            of_r.push(x);
            of_p.push(y);
        }
    }
    let keys_r = join_keys(&of_r, rows_r, read.reader)?;
    let keys_p = join_keys(&of_p, rows_p, read.reader)?;
    let mut counts: HashMap<&[Key], usize> = HashMap::new();
    for k in keys_r.iter().flatten() {
        *counts.entry(k.as_slice()).or_default() += 1;
    }
    let limit = rows_r.len.max(rows_p.len);
    let mut pairs = 0usize;
    for k in keys_p.iter().flatten() {
        pairs = pairs.saturating_add(counts.get(k.as_slice()).copied().unwrap_or(0));
        if pairs > limit {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The rows of `relation`, joined to `left` by `keys`: when a key is its bare id, only the
/// entities the left rows name there, found through the entity index; else all of them.
fn read_by_id(
    relation: &Relation,
    width: usize,
    keys: &[(&BoundExpr, &BoundExpr)],
    left: Option<&Batch<'static>>,
    reader: &Reader<'_>,
) -> Result<Batch<'static>> {
    let RelationSource::Entities(scan) = &relation.source else {
        return materialize(relation, width, reader);
    };
    let Some(left) = left else {
        return materialize(relation, width, reader);
    };
    let by_id = keys.iter().find_map(|(joined, own)| match own.kind {
        BoundKind::Slot(s) if scan.columns.contains(&(s, ScanColumn::Id)) => Some(*joined),
        _ => None,
    });
    if let Some(expr) = by_id {
        return read_named(relation, scan, expr, left, width, reader);
    }
    // A key that is a field a value index keeps: the entities holding the values the
    // left rows give, found through the index.
    let indexes = Indexes::of(reader.world);
    let by_index = keys.iter().find_map(|(joined, own)| {
        let field = own_field(own, scan)?;
        Some((*joined, value_index(indexes, field)?))
    });
    let Some((expr, index)) = by_index else {
        return materialize(relation, width, reader);
    };
    let values = eval(expr, left, &reader.eval())?.into_vector(expr.ty, left.len);
    let limit = estimated_rows(scan, reader);
    let found = match (index.kind(), &values.data) {
        // A relation's index is asked for the ids as they are (an integer meets an id as
        // its bits, `comparison_type`), NULLs left out.
        (IndexKind::Relation, Data::Entity(ids)) => {
            let targets = ids.iter().enumerate().filter(|&(i, _)| values.is_valid(i));
            index.pointing_at(targets.filter_map(|(_, e)| *e).collect(), limit)
        }
        (IndexKind::Relation, Data::Int(ints)) => {
            let targets = ints.iter().enumerate().filter(|&(i, _)| values.is_valid(i));
            let ids = targets.filter_map(|(_, &n)| u64::try_from(n).ok().and_then(Entity::from_bits));
            index.pointing_at(ids.collect(), limit)
        }
        _ => {
            let values: Vec<Value> = (0..left.len).map(|i| values.get(i)).collect();
            index.search(&Probe::Equal(values), limit)
        }
    };
    match found {
        Some(mut ids) => {
            ids.sort_unstable();
            ids.dedup();
            reader.with_ids(scan, ids, || materialize(relation, width, reader))
        }
        None => materialize(relation, width, reader),
    }
}

/// The field `side` reads of `scan`'s entities, when it is a bare field.
fn own_field(side: &BoundExpr, scan: &EntityScan) -> Option<FieldId> {
    let BoundKind::Slot(s) = side.kind else {
        return None;
    };
    scan.columns.iter().find_map(|&(slot, column)| match column {
        ScanColumn::Field(f) if slot == s => Some(f),
        _ => None,
    })
}

/// The index of values (a B-tree, or a relation's hash) on `field` alone, if one exists.
fn value_index(indexes: &Indexes, field: FieldId) -> Option<&crate::index::Index> {
    indexes
        .iter()
        .find(|i| i.fields() == [field] && matches!(i.kind(), IndexKind::Ordered | IndexKind::Relation))
}

/// Whether a hash key of the joins pairs relation `r`'s bare field with other relations,
/// and a value index keeps that field: then `r` waits to be read through the index for
/// the values the other side gives (`read_by_id`), as a join by id waits.
fn keyed_by_index(plan: &SelectPlan, r: usize, scan: &EntityScan, reader: &Reader<'_>) -> bool {
    plan.joins
        .conditions
        .iter()
        .any(|c| key_indexes(plan, c, reader).iter().any(|(x, _)| *x == r))
        && matches!(plan.relations.get(r).map(|x| &x.source), Some(RelationSource::Entities(s)) if std::ptr::eq(s, scan))
}

/// For EXPLAIN and `keyed_by_index`: each relation of the hash key `c` whose side is a
/// bare field of its entity scan that a value index keeps, with that index's name.
pub(super) fn key_indexes(plan: &SelectPlan, c: &JoinCondition, reader: &Reader<'_>) -> Vec<(usize, String)> {
    let (Some((a, b)), Some((l, r))) = (&c.equi, c.sides()) else {
        return Vec::new();
    };
    let indexes = Indexes::of(reader.world);
    let mut out = Vec::new();
    for (rels, side) in [(a, l), (b, r)] {
        let [x] = rels.as_slice() else { continue };
        // A scan its own index narrows (a WHERE on an indexed field) keeps that index.
        if let Some(Relation {
            source: RelationSource::Entities(scan),
            ..
        }) = plan.relations.get(*x)
            && scan.ids.is_none()
            && scan.index.is_none()
            && let Some(index) = own_field(side, scan).and_then(|f| value_index(indexes, f))
        {
            out.push((*x, index.name().to_owned()));
        }
    }
    out
}

/// The rows of `relation` (scanned by `scan`) for the entities `expr` names in the rows
/// of `left`, found through the entity index.
fn read_named(
    relation: &Relation,
    scan: &EntityScan,
    expr: &BoundExpr,
    left: &Batch<'static>,
    width: usize,
    reader: &Reader<'_>,
) -> Result<Batch<'static>> {
    let named = eval(expr, left, &reader.eval())?;
    let ids: Vec<Entity> = (0..left.len).filter_map(|i| named_id(&named.get(i))).collect();
    reader.with_ids(scan, ids, || materialize(relation, width, reader))
}

/// `join_all`'s rows kept in one batch (charged to the budget), for writers that need
/// them all before they write.
pub fn join_all_kept(plan: &SelectPlan, reader: &Reader<'_>) -> Result<Batch<'static>> {
    let mut out = Batch::new(0, plan.width);
    join_all(plan, reader, &mut |b| keep(&mut out, &b, reader))?;
    Ok(out)
}

/// Where a join step sends its rows, a chunk at a time.
pub type Emit<'e> = &'e mut dyn FnMut(Batch<'static>) -> Result<()>;

/// The rows of `batch` that pass every one of `checks`.
fn filter_batch(batch: Batch<'static>, checks: &[&BoundExpr], reader: &Reader<'_>) -> Result<Batch<'static>> {
    let mut batch = batch;
    for check in checks {
        batch = match select_rows(check, &batch, &reader.eval())? {
            Selection::All => batch,
            Selection::None => batch.gather(&[]),
            Selection::Rows(rows) => batch.gather(&rows),
        };
    }
    Ok(batch)
}

/// A join key per row: `None` where a key is NULL or NaN (equal to nothing). An integer
/// compared with ids keys as the id of its value.
fn join_keys(exprs: &[&BoundExpr], batch: &Batch<'_>, reader: &Reader<'_>) -> Result<Vec<Option<Vec<Key>>>> {
    let columns: Vec<Datum<'_>> = exprs
        .iter()
        .map(|e| eval(e, batch, &reader.eval()))
        .collect::<Result<_>>()?;
    Ok((0..batch.len)
        .map(|i| {
            columns
                .iter()
                .map(|d| match d.get(i) {
                    Value::Null => None,
                    Value::Float(x) if x.is_nan() => None,
                    Value::Real(x) if x.is_nan() => None,
                    Value::Int(n) if n > 0 => Some(Key::Entity(n as u64)),
                    v => Some(Key::of(&v)),
                })
                .collect()
        })
        .collect())
}

/// The pairs of an inner join step, a bounded chunk at a time: each chunk's rows are
/// gathered side by side, checked, and what passes goes on.
struct Pairs<'a, 'e> {
    left: &'a Batch<'static>,
    right: &'a Batch<'static>,
    checks: &'a [&'a BoundExpr],
    reader: &'a Reader<'a>,
    emit: Emit<'e>,
    pairs: Vec<(u32, u32)>,
    emitted: bool,
}

impl Pairs<'_, '_> {
    fn push(&mut self, i: u32, j: u32) -> Result<()> {
        self.pairs.push((i, j));
        if self.pairs.len() >= PAIR_CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.reader.budget.check(self.reader.at)?;
        if self.pairs.is_empty() {
            return Ok(());
        }
        let combined = filter_batch(
            gather_pairs(self.left, self.right, &self.pairs),
            self.checks,
            self.reader,
        )?;
        self.pairs.clear();
        if combined.len > 0 {
            self.emitted = true;
            (self.emit)(combined)?;
        }
        Ok(())
    }

    /// The last chunk, or the empty join when nothing passed.
    fn finish(mut self) -> Result<()> {
        self.flush()?;
        if !self.emitted {
            (self.emit)(empty_join(self.left, self.right))?;
        }
        Ok(())
    }
}

/// How an inner join step pairs its rows.
enum Pairing<'p> {
    /// By hash on these keys (each a pair of expressions over the left and right rows).
    Keys(Vec<(&'p BoundExpr, &'p BoundExpr)>),
    /// Through a spatial index.
    Near(SpatialStep<'p>),
    /// Every left row with every right row.
    Every,
}

/// An inner join of the rows joined so far with the next relation, paired as `pairing`
/// says; the pairs that pass every one of `checks` are kept. Pairs are made and checked
/// a bounded chunk at a time.
#[allow(clippy::too_many_arguments)]
fn inner_join<'b>(
    left: Batch<'static>,
    (right, right_rows): (Batch<'static>, usize),
    pairing: &Pairing<'_>,
    (joined, next): (&[usize], usize),
    rows_of: impl Fn(usize) -> Option<&'b Batch<'static>>,
    checks: &[&BoundExpr],
    reader: &Reader<'_>,
    emit: Emit<'_>,
) -> Result<()> {
    let mut out = Pairs {
        left: &left,
        right: &right,
        checks,
        reader,
        emit,
        pairs: Vec::new(),
        emitted: false,
    };
    let every = |out: &mut Pairs<'_, '_>| -> Result<()> {
        for i in 0..left.len {
            for j in 0..right.len {
                out.push(i as u32, j as u32)?;
            }
            if i % 64 == 0 {
                reader.budget.check(reader.at)?;
            }
        }
        Ok(())
    };
    match pairing {
        Pairing::Every => every(&mut out)?,
        Pairing::Near(step) => {
            let served = step.pairs(&left, &right, joined, next, rows_of, reader, &mut |i, j| {
                out.push(i, j)
            })?;
            if served.is_none() {
                every(&mut out)?;
            }
        }
        Pairing::Keys(keys) => keyed_pairs(&left, (&right, right_rows), keys, reader, &mut out)?,
    }
    out.finish()
}

/// One join key of INT or ENTITY values as a number, without a boxed value or a key
/// vector per row: `(false, bits)` for an id or a positive INT (which keys as the id of
/// its value, as `join_keys` has it), `(true, n)` for an INT of 0 or below; `None` for NULL.
type IdKey = (bool, u64);

/// The keys of one INT or ENTITY key expression over `batch`; `None` when it has another
/// type (the general path keys it).
fn id_keys(e: &BoundExpr, batch: &Batch<'_>, reader: &Reader<'_>) -> Result<Option<Vec<Option<IdKey>>>> {
    if !matches!(e.ty, DataType::Int | DataType::Entity) {
        return Ok(None);
    }
    let datum = eval(e, batch, &reader.eval())?;
    let int = |n: i64| {
        if n > 0 {
            (false, n as u64)
        } else {
            (true, n as u64)
        }
    };
    let keys = match datum {
        Datum::Scalar(Value::Int(n)) => vec![Some(int(n)); batch.len],
        Datum::Scalar(Value::Entity(x)) => vec![Some((false, x.to_bits())); batch.len],
        Datum::Scalar(Value::Null) => vec![None; batch.len],
        Datum::Scalar(_) => return Ok(None),
        Datum::Vector(v) => {
            let valid = |i: usize| v.valid.as_ref().is_none_or(|m| m[i]);
            match &v.data {
                Data::Int(xs) => xs
                    .iter()
                    .enumerate()
                    .map(|(i, &n)| valid(i).then(|| int(n)))
                    .collect(),
                Data::Entity(xs) => xs
                    .iter()
                    .enumerate()
                    .map(|(i, x)| x.filter(|_| valid(i)).map(|x| (false, x.to_bits())))
                    .collect(),
                Data::Null => vec![None; batch.len],
                _ => return Ok(None),
            }
        }
    };
    Ok(Some(keys))
}

/// `keyed_pairs` for one INT or ENTITY key: a hash table of numbers, each key's rows
/// chained through one array (in row order), so that building it allocates nothing per
/// row. `None` when the key is of another type.
fn id_keyed_pairs(
    left: &Batch<'static>,
    (right, right_rows): (&Batch<'static>, usize),
    key: (&BoundExpr, &BoundExpr),
    reader: &Reader<'_>,
    out: &mut Pairs<'_, '_>,
) -> Result<Option<()>> {
    let (Some(left_keys), Some(right_keys)) = (id_keys(key.0, left, reader)?, id_keys(key.1, right, reader)?)
    else {
        return Ok(None);
    };
    let build_left = left.len < right_rows;
    let (build, probe) = if build_left {
        (&left_keys, &right_keys)
    } else {
        (&right_keys, &left_keys)
    };
    // `first[key]` is its first row; `next[row]` the one after it (u32::MAX: none).
    let mut first: HashMap<IdKey, u32> = HashMap::with_capacity(build.len());
    let mut next = vec![u32::MAX; build.len()];
    for (j, k) in build.iter().enumerate().rev() {
        if let Some(k) = k
            && let Some(head) = first.insert(*k, j as u32)
        {
            next[j] = head;
        }
    }
    for (i, k) in probe.iter().enumerate() {
        let Some(mut j) = k.as_ref().and_then(|k| first.get(k).copied()) else {
            continue;
        };
        while j != u32::MAX {
            let (l, r) = if build_left { (j, i as u32) } else { (i as u32, j) };
            out.push(l, r)?;
            j = next[j as usize];
        }
    }
    Ok(Some(()))
}

/// The pairs of `left` and `right` whose `keys` are equal, found by hash.
fn keyed_pairs(
    left: &Batch<'static>,
    (right, right_rows): (&Batch<'static>, usize),
    keys: &[(&BoundExpr, &BoundExpr)],
    reader: &Reader<'_>,
    out: &mut Pairs<'_, '_>,
) -> Result<()> {
    if let [key] = keys
        && id_keyed_pairs(left, (right, right_rows), *key, reader, out)?.is_some()
    {
        return Ok(());
    }
    {
        let left_exprs: Vec<&BoundExpr> = keys.iter().map(|k| k.0).collect();
        let right_exprs: Vec<&BoundExpr> = keys.iter().map(|k| k.1).collect();
        let left_keys = join_keys(&left_exprs, left, reader)?;
        let right_keys = join_keys(&right_exprs, right, reader)?;
        // Build on the smaller side, probe with the other; pairs stay (left, right).
        let build_left = left.len < right_rows;
        let (build, probe) = if build_left {
            (&left_keys, &right_keys)
        } else {
            (&right_keys, &left_keys)
        };
        let mut table: HashMap<&[Key], Vec<u32>> = HashMap::new();
        for (j, k) in build.iter().enumerate() {
            if let Some(k) = k {
                table.entry(k.as_slice()).or_default().push(j as u32);
            }
        }
        for (i, k) in probe.iter().enumerate() {
            let Some(matches) = k.as_deref().and_then(|k| table.get(k)) else {
                continue;
            };
            for &j in matches {
                let (l, r) = if build_left { (j, i as u32) } else { (i as u32, j) };
                out.push(l, r)?;
            }
        }
    }
    Ok(())
}

/// No rows, with every slot either side fills: what a join that matched nothing gives.
fn empty_join(left: &Batch<'_>, right: &Batch<'_>) -> Batch<'static> {
    let mut out = Batch::new(0, left.slots.len());
    for ((out_slot, l), r) in out.slots.iter_mut().zip(&left.slots).zip(&right.slots) {
        if l.is_some() || r.is_some() {
            *out_slot = Some(Datum::Vector(Vector::nulls(0)));
        }
    }
    out
}

/// An equality in `on` between a slot of the left rows and a slot of the right rows.
fn equi_key(on: &BoundExpr, left: &Batch<'_>, right: &Batch<'_>) -> Option<(usize, usize)> {
    match &on.kind {
        BoundKind::Compare(CmpOp::Eq, a, b) => match (&a.kind, &b.kind) {
            (BoundKind::Slot(x), BoundKind::Slot(y)) => {
                let side = |s: usize, b: &Batch<'_>| b.slots.get(s).is_some_and(Option::is_some);
                if side(*x, left) && side(*y, right) {
                    Some((*x, *y))
                } else if side(*y, left) && side(*x, right) {
                    Some((*y, *x))
                } else {
                    None
                }
            }
            _ => None,
        },
        BoundKind::And(a, b) => equi_key(a, left, right).or_else(|| equi_key(b, left, right)),
        _ => None,
    }
}

/// Rows paired per chunk of a join, bounding the memory a chunk takes.
const PAIR_CHUNK: usize = 1 << 16;

fn join(
    left: Batch<'static>,
    right: Batch<'static>,
    relation: &Relation,
    reader: &Reader<'_>,
    emit: Emit<'_>,
) -> Result<()> {
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    let mut emitted = false;
    let on = relation.on.as_ref();
    let mut flush = |pairs: &mut Vec<(u32, u32)>, matched: &mut Vec<bool>| -> Result<()> {
        reader.budget.check(reader.at)?;
        if pairs.is_empty() {
            return Ok(());
        }
        let combined = gather_pairs(&left, &right, pairs);
        let keep = match on {
            Some(cond) => select_rows(cond, &combined, &reader.eval())?,
            None => Selection::All,
        };
        let rows: Vec<u32> = match keep {
            Selection::All => (0..combined.len as u32).collect(),
            Selection::None => Vec::new(),
            Selection::Rows(rows) => rows,
        };
        for &k in &rows {
            matched[pairs[k as usize].0 as usize] = true;
        }
        pairs.clear();
        if !rows.is_empty() {
            emitted = true;
            emit(combined.gather(&rows))?;
        }
        Ok(())
    };
    let mut matched = vec![false; left.len];
    match on.and_then(|o| equi_key(o, &left, &right)) {
        Some((ls, rs)) => {
            let key_at =
                |b: &Batch<'_>, s: usize, i: usize| b.slots[s].as_ref().map_or(Value::Null, |d| d.get(i));
            let mut index: HashMap<Key, Vec<u32>> = HashMap::new();
            for j in 0..right.len {
                let v = key_at(&right, rs, j);
                if v != Value::Null {
                    index.entry(Key::of(&v)).or_default().push(j as u32);
                }
            }
            for i in 0..left.len {
                let v = key_at(&left, ls, i);
                if v == Value::Null {
                    continue;
                }
                for &j in index.get(&Key::of(&v)).map_or(&[][..], Vec::as_slice) {
                    pairs.push((i as u32, j));
                    if pairs.len() >= PAIR_CHUNK {
                        flush(&mut pairs, &mut matched)?;
                    }
                }
            }
        }
        None => {
            for i in 0..left.len {
                for j in 0..right.len {
                    pairs.push((i as u32, j as u32));
                    if pairs.len() >= PAIR_CHUNK {
                        flush(&mut pairs, &mut matched)?;
                    }
                }
                if i % 64 == 0 {
                    reader.budget.check(reader.at)?;
                }
            }
        }
    }
    flush(&mut pairs, &mut matched)?;
    if relation.join == JoinKind::Left {
        let unmatched: Vec<u32> = (0..left.len).filter(|&i| !matched[i]).map(|i| i as u32).collect();
        if !unmatched.is_empty() {
            let mut rows = left.gather(&unmatched);
            for (slot, d) in right.slots.iter().enumerate() {
                if let Some(d) = d {
                    let ty = datum_type(d);
                    rows.slots[slot] = Some(Datum::Vector(Vector::broadcast(
                        &Value::Null,
                        ty,
                        unmatched.len(),
                    )));
                }
            }
            emitted = true;
            emit(rows)?;
        }
    }
    if !emitted {
        emit(empty_join(&left, &right))?;
    }
    Ok(())
}

/// The rows of `pairs` (a left row and a right row each) as one batch: each side's slots
/// gathered, side by side.
fn gather_pairs(left: &Batch<'_>, right: &Batch<'_>, pairs: &[(u32, u32)]) -> Batch<'static> {
    let l: Vec<u32> = pairs.iter().map(|p| p.0).collect();
    let r: Vec<u32> = pairs.iter().map(|p| p.1).collect();
    let mut combined = left.gather(&l);
    merge_slots(&mut combined, right.gather(&r));
    combined
}

fn merge_slots(into: &mut Batch<'static>, other: Batch<'static>) {
    for (slot, d) in other.slots.into_iter().enumerate() {
        if d.is_some() && into.slots[slot].is_none() {
            into.slots[slot] = d;
        }
    }
}
