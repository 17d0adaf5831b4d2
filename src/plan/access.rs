//! Access paths: which index, if any, narrows an entity scan. Reads the bound WHERE
//! conjuncts (and, for k-nearest, ORDER BY … LIMIT) and the world's indexes; writes the
//! scan's `index` (the search to run) and, in a plan for EXPLAIN only, `index_notes`
//! (why an index on the scanned components was not used). Running the search is `exec/`'s
//! job; the structures are in `index/`; what a function index serves is
//! `function_access.rs`, and what the plan holds of a search `probe.rs`.
//!
//! An index only ever narrows: the scan still evaluates the whole WHERE on every
//! candidate, so a lookup here may serve a conjunct loosely (a box for `<`, a range's
//! first bounds) and results stay exactly a scan's.

use std::cell::Cell;
use std::fmt::Write as _;
use std::ops::Bound;

use super::expr::{BoundExpr, BoundKind};
use super::probe::{Atoms, atoms, probe_value};
pub use super::probe::{IndexLookup, ProbePlan, ProbeValue, SkipCondition, SkipTest};
use super::visit::{PlanVisitor, visit_plan};
use super::{
    DataType, EntityScan, IdKey, JoinKind, Output, Plan, QueryPlan, Relation, RelationSource, ScanColumn,
    SelectPlan, SetPlan, SparseMember,
};
use crate::func::DISTANCE;
use crate::index::{Index, IndexKind, Indexes};
use crate::storage::{ComponentId, FieldId, Value, World};
use crate::vector::CmpOp;

/// What a scan knows to match expressions to indexed fields.
struct Fields<'s> {
    scan: &'s EntityScan,
}

impl Fields<'_> {
    /// The field a bare column expression reads.
    fn of(&self, e: &BoundExpr) -> Option<FieldId> {
        let BoundKind::Slot(s) = e.kind else { return None };
        self.scan.columns.iter().find_map(|&(slot, c)| match c {
            ScanColumn::Field(f) if slot == s => Some(f),
            _ => None,
        })
    }

    /// `e` is exactly `fields` in order, each a bare column.
    fn are(&self, e: &[BoundExpr], fields: &[FieldId]) -> bool {
        e.len() == fields.len() && e.iter().zip(fields).all(|(x, f)| self.of(x) == Some(*f))
    }
}

/// A comparison with one side the field `f` and the other a search operand, turned so
/// that the field is on the left: `5 > x` reads as `x < 5`.
fn compare_field(fields: &Fields<'_>, e: &BoundExpr, f: FieldId) -> Option<(CmpOp, ProbeValue, DataType)> {
    let BoundKind::Compare(op, l, r) = &e.kind else {
        return None;
    };
    if fields.of(l) == Some(f) {
        return Some((*op, probe_value(r)?, r.ty));
    }
    if fields.of(r) == Some(f) {
        return Some((op.flipped(), probe_value(l)?, l.ty));
    }
    None
}

/// Names for EXPLAIN: `Component.field`.
fn field_name(world: &World, f: FieldId) -> String {
    match world.component(f.component()) {
        Ok(def) => match def.fields().get(f.index()) {
            Some(field) => format!("{}.{}", def.name(), field.name()),
            None => "?".to_owned(),
        },
        Err(_) => "?".to_owned(),
    }
}

fn field_names(world: &World, fields: &[FieldId]) -> String {
    let names: Vec<String> = fields.iter().map(|&f| field_name(world, f)).collect();
    names.join(", ")
}

fn point_text(world: &World, fields: &[FieldId]) -> String {
    format!("({})", field_names(world, fields))
}

fn values_text(values: &[ProbeValue]) -> String {
    let v: Vec<String> = values.iter().map(ToString::to_string).collect();
    format!("({})", v.join(", "))
}

/// The access pass: after binding, over every select and query of `plan` (subqueries,
/// set operations' sides and the selects of writes included), chooses how each entity scan
/// reads its rows (`choose_paths`) and whether a k-nearest search serves an ORDER BY …
/// LIMIT (`choose_nearest`).
///
/// Returns whether a choice read a parameter's bound value (a function index matched
/// through it): the plan then holds for these values alone. `explaining`: the plan is for
/// EXPLAIN, so each scan's `index_notes` are written; other plans leave them empty (the
/// notes are text made for each index on a scanned component, which no run reads).
pub fn choose_access(world: &World, plan: &mut Plan, explaining: bool) -> bool {
    struct Access<'w> {
        world: &'w World,
        indexed: bool,
        value_used: Cell<bool>,
        notes: bool,
    }
    impl PlanVisitor for Access<'_> {
        fn select(&mut self, select: &mut SelectPlan) {
            choose_paths(self.world, select, &self.value_used, self.notes);
            if self.indexed {
                super::index_join::choose_spatial_joins(self.world, select);
            }
        }
        fn query(&mut self, query: &mut QueryPlan) {
            if self.indexed {
                choose_nearest(self.world, query);
            }
        }
    }
    let indexed = !Indexes::of(world).is_empty();
    let mut access = Access {
        world,
        indexed,
        value_used: Cell::new(false),
        notes: explaining,
    };
    visit_plan(plan, &mut access);
    split_sparse(world, plan);
    access.value_used.get()
}

/// Moves each scan's sparse components out of its required, optional and excluded lists
/// (which match archetype tables) into `sparse`, once the paths are chosen (an index on a
/// sparse component's field serves a scan that requires it like any other). A world of
/// no sparse component has none to move: its plans are not visited again.
fn split_sparse(world: &World, plan: &mut Plan) {
    if !world.has_sparse() {
        return;
    }
    struct Split<'w>(&'w World);
    impl PlanVisitor for Split<'_> {
        fn select(&mut self, select: &mut SelectPlan) {
            for r in &mut select.relations {
                let RelationSource::Entities(scan) = &mut r.source else {
                    continue;
                };
                let table = |c: ComponentId| self.0.component(c).ok().and_then(|d| d.sparse_table());
                scan.reads_sparse = scan
                    .columns
                    .iter()
                    .any(|&(_, column)| column.component().and_then(table).is_some());
                for (list, must) in [
                    (&mut scan.required, Some(true)),
                    (&mut scan.excluded, Some(false)),
                    (&mut scan.optional, None),
                ] {
                    list.retain(|c| match table(*c) {
                        Some(table) => {
                            scan.sparse.push(SparseMember {
                                component: *c,
                                table,
                                must,
                            });
                            false
                        }
                        None => true,
                    });
                }
            }
        }
    }
    visit_plan(plan, &mut Split(world));
}

/// The access pass over one bound select: chooses how each entity scan reads its rows.
/// A scan whose conditions name its ids (`id = …`, `id IN (…)`) reads just those; else an
/// index that serves its conditions may narrow it (`choose_index`). A scan's conditions
/// are the conjuncts of WHERE and of inner joins' ON that read only it, wherever binding
/// put them (the select's filter, the scan's own, the join's). Scans on the nullable side
/// of a LEFT JOIN are left walking: their rows need not pass those conditions. The scan
/// still checks every condition on each entity it reads, so no choice changes a result,
/// except a conjunct the id lookup answers exactly (`id = e`, `id IN (…)` with constants,
/// parameters or outer values): it is taken out of the filter, as checking it again on
/// the rows the lookup read could only repeat it.
fn choose_paths(world: &World, select: &mut SelectPlan, value_used: &Cell<bool>, notes: bool) {
    // Paths are chosen for relations, and conditions dropped only for a relation's id
    // lookup: a select of none (`SELECT 1`, a SPAWN's values) has nothing to choose.
    if select.relations.is_empty() {
        return;
    }
    // A lone relation owns the slots its scan lists and no other: whether a condition
    // reads only it is whether each slot it reads is the scan's, with no map of owners.
    let lone = select.relations.len() == 1;
    let owner = if lone {
        smallvec::SmallVec::new()
    } else {
        super::join::slot_owners(select)
    };
    let reads_only = |e: &BoundExpr, r: usize, scan: &EntityScan| {
        let mut only = true;
        if lone {
            e.visit_slots(&mut |s| only &= scan.columns.iter().any(|&(slot, _)| slot == s));
        } else {
            e.visit_slots(&mut |s| only &= owner.get(s).copied().flatten() == Some(r));
        }
        only
    };
    let indexed = !Indexes::of(world).is_empty();
    let SelectPlan {
        filter,
        relations,
        joins,
        ..
    } = select;
    let mut shared = Atoms::new();
    if let Some(f) = filter.as_ref() {
        atoms(f, &mut shared);
    }
    for c in &joins.conditions {
        atoms(&c.expr, &mut shared);
    }
    // The conjuncts an id lookup answers exactly (by address): checking them again on the
    // rows it reads would only repeat it.
    let mut answered: smallvec::SmallVec<[usize; 4]> = smallvec::SmallVec::new();
    for (r, relation) in relations.iter_mut().enumerate() {
        let Relation {
            source, filter, join, ..
        } = relation;
        let RelationSource::Entities(scan) = source else {
            continue;
        };
        if *join == JoinKind::Left {
            continue;
        }
        let mut conditions = Atoms::new();
        if let Some(f) = filter.as_ref() {
            atoms(f, &mut conditions);
        }
        conditions.extend(shared.iter().copied().filter(|e| reads_only(e, r, scan)));
        if scan.ids.is_none() {
            scan.ids = conditions.iter().find_map(|e| {
                let (_, ids) =
                    id_lookup(e).filter(|(slot, _)| scan.columns.contains(&(*slot, ScanColumn::Id)))?;
                answered.push(std::ptr::from_ref(*e) as usize);
                Some(ids)
            });
        }
        if scan.changes.is_none() {
            scan.changes = conditions.iter().find_map(|e| match e.kind {
                BoundKind::Slot(s) => scan.columns.iter().find_map(|&(slot, column)| {
                    (slot == s && column.asks_changes_of().is_some()).then_some(column)
                }),
                _ => None,
            });
        }
        if indexed {
            choose_index(world, scan, &conditions, value_used, notes);
        }
        if scan.ids.is_none() {
            skip_conditions(world, scan, &conditions, notes);
        }
    }
    drop(shared);
    if !answered.is_empty() {
        drop_answered(filter, &answered);
        for relation in relations.iter_mut() {
            drop_answered(&mut relation.filter, &answered);
        }
    }
}

/// The conditions of `conjuncts` that can skip tables and blocks (`SkipCondition`): for
/// zone maps, a field of the scan compared by `=`, `<`, `<=`, `>` or `>=` (BETWEEN is two
/// of these) with, or in a list of, constants, parameters or outer values of the type the
/// comparison kernels compare it in unconverted (its own, or an integer with an ENTITY
/// field); for a filter index on the field, `=` and IN of such values. Nothing under NOT
/// or OR, and no `<>`, NOT IN or IS NULL: zone maps say only that no value of a block lies
/// in a range, and filters that it holds none of some values, which decides none of
/// those. A filter index on a scanned component that no condition is for gets a note
/// (when `notes`: for EXPLAIN).
fn skip_conditions(world: &World, scan: &mut EntityScan, conjuncts: &[&BoundExpr], notes: bool) {
    let mut parts = Atoms::new();
    for c in conjuncts {
        atoms(c, &mut parts);
    }
    let fields = Fields { scan };
    let type_of = |f: FieldId| {
        world
            .component(f.component())
            .ok()
            .and_then(|d| d.fields().get(f.index()).map(|f| DataType::from(f.ty())))
    };
    // Whether a value of type `ty` compares with field `f` unconverted, and whether zone
    // maps order the field's type.
    let compares = |f: FieldId, ty: DataType| match type_of(f) {
        Some(DataType::Entity) => matches!(ty, DataType::Entity | DataType::Int),
        Some(field_ty) => ty == field_ty,
        None => false,
    };
    let zoned = |f: FieldId| {
        matches!(
            type_of(f),
            Some(DataType::Int | DataType::Float | DataType::Real | DataType::Entity)
        )
    };
    let filters: Vec<&Index> = Indexes::of(world)
        .iter()
        .filter(|i| i.kind() == IndexKind::Filter && scan.required.contains(&i.component()))
        .collect();
    // A filter's values are keyed in the field's own type: an integer compared with an
    // ENTITY field is the id it names.
    let member = |v: ProbeValue, f: FieldId| match type_of(f) {
        Some(DataType::Entity) => entity_operand(v),
        _ => v,
    };
    let mut out = Vec::new();
    let mut served: Vec<&str> = Vec::new();
    for e in parts {
        let (field, op, values) = match &e.kind {
            BoundKind::Compare(op, l, r) if *op != CmpOp::NotEq => {
                let (field, op, operand) = match (fields.of(l), fields.of(r)) {
                    (Some(f), _) => (f, *op, &**r),
                    (None, Some(f)) => (f, op.flipped(), &**l),
                    (None, None) => continue,
                };
                match probe_value(operand).filter(|_| compares(field, operand.ty)) {
                    Some(v) => (field, Some(op), vec![v]),
                    None => continue,
                }
            }
            BoundKind::InList {
                expr,
                list,
                negated: false,
            } => {
                let Some(field) = fields.of(expr) else { continue };
                let values = list
                    .iter()
                    .map(|x| probe_value(x).filter(|_| compares(field, x.ty)))
                    .collect::<Option<Vec<_>>>();
                match values {
                    Some(values) => (field, None, values),
                    None => continue,
                }
            }
            _ => continue,
        };
        if zoned(field) {
            out.push(SkipCondition {
                field,
                test: match op {
                    Some(op) => SkipTest::Compare(op, values[0].clone()),
                    None => SkipTest::In(values.clone()),
                },
            });
        }
        if !matches!(op, None | Some(CmpOp::Eq)) {
            continue;
        }
        if let Some(index) = filters.iter().find(|i| i.fields() == [field]) {
            served.push(index.name());
            out.push(SkipCondition {
                field,
                test: SkipTest::Member {
                    index: index.name().to_owned(),
                    values: values.into_iter().map(|v| member(v, field)).collect(),
                },
            });
        }
    }
    if notes {
        for index in filters.into_iter().filter(|i| !served.contains(&i.name())) {
            scan.index_notes.push(format!(
                "index {} not used: {}",
                index.name(),
                why_not(world, index)
            ));
        }
    }
    scan.skips = out;
}

/// An integer operand compared with an ENTITY field, as the id it names: a parameter or
/// outer value cast to ENTITY when read, a constant now (a non-positive one names no id
/// and matches nothing, as NULL).
fn entity_operand(v: ProbeValue) -> ProbeValue {
    match v {
        ProbeValue::Const(c) => {
            ProbeValue::Const(super::cast_value(&c, DataType::Entity).unwrap_or(Value::Null))
        }
        ProbeValue::Param { param, .. } => ProbeValue::Param {
            param,
            ty: DataType::Entity,
        },
        ProbeValue::Outer { n, .. } => ProbeValue::Outer {
            n,
            ty: DataType::Entity,
        },
    }
}

/// Takes the conjuncts at the addresses `drop` lists out of `filter`.
fn drop_answered(filter: &mut Option<BoundExpr>, drop: &[usize]) {
    let root = filter.as_ref().map(|f| std::ptr::from_ref(f) as usize);
    *filter = match root {
        Some(at) if drop.contains(&at) => None,
        _ => without(filter.take(), drop),
    };
}

/// `e` without the conjuncts below it at the addresses `drop` lists (they keep their
/// addresses while their parents are taken apart: each is boxed).
fn without(e: Option<BoundExpr>, drop: &[usize]) -> Option<BoundExpr> {
    let e = e?;
    match e.kind {
        BoundKind::And(l, r) => {
            let (l_at, r_at) = (std::ptr::from_ref(&*l) as usize, std::ptr::from_ref(&*r) as usize);
            let l = if drop.contains(&l_at) {
                None
            } else {
                without(Some(*l), drop)
            };
            let r = if drop.contains(&r_at) {
                None
            } else {
                without(Some(*r), drop)
            };
            match (l, r) {
                (Some(l), Some(r)) => Some(BoundExpr::new(
                    BoundKind::And(Box::new(l), Box::new(r)),
                    e.ty,
                    e.at,
                )),
                (one, other) => one.or(other),
            }
        }
        kind => Some(BoundExpr { kind, ..e }),
    }
}

/// `slot = e`, `e = slot` or `slot IN (e, …)` with constant or parameter entity ids: the
/// slot and the ids. NULLs match nothing and are left out.
fn id_lookup(e: &BoundExpr) -> Option<(usize, super::IdList)> {
    let (slot, values): (usize, Atoms) = match &e.kind {
        BoundKind::Compare(CmpOp::Eq, l, r) => match (&l.kind, &r.kind) {
            (BoundKind::Slot(s), _) => (*s, smallvec::smallvec![&**r]),
            (_, BoundKind::Slot(s)) => (*s, smallvec::smallvec![&**l]),
            _ => return None,
        },
        BoundKind::InList {
            expr,
            list,
            negated: false,
        } => match expr.kind {
            BoundKind::Slot(s) => (s, list.iter().collect()),
            _ => return None,
        },
        _ => return None,
    };
    let mut ids = super::IdList::with_capacity(values.len());
    for v in values {
        match &v.kind {
            BoundKind::Const(Value::Entity(e)) => ids.push(IdKey::Entity(*e)),
            // An integer parameter compared with ids names the id of its value.
            BoundKind::Param {
                param,
                value: Value::Entity(_) | Value::Int(_),
            } => ids.push(IdKey::Param(param.clone())),
            // An outer id, or integer (naming the id of its value).
            BoundKind::Outer(n) if matches!(v.ty, DataType::Entity | DataType::Int) => {
                ids.push(IdKey::Outer(*n))
            }
            // A non-positive integer names no id, and NULL matches nothing.
            BoundKind::Const(Value::Null | Value::Int(_))
            | BoundKind::Param {
                value: Value::Null, ..
            } => {}
            _ => return None,
        }
    }
    Some((slot, ids))
}

/// Picks an index for `scan` from the conjuncts that read only it. Leaves the scan as it
/// is when it already looks entities up by id. Writes why each other index was not used
/// into the scan's `index_notes` when `explain` (for EXPLAIN).
fn choose_index(
    world: &World,
    scan: &mut EntityScan,
    conjuncts: &[&BoundExpr],
    value_used: &Cell<bool>,
    explain: bool,
) {
    // A filter index gives no candidates: it skips tables and blocks (`skip_conditions`).
    let candidates: Vec<&Index> = Indexes::of(world)
        .iter()
        .filter(|i| i.kind() != IndexKind::Filter && scan.required.contains(&i.component()))
        .collect();
    if candidates.is_empty() {
        return;
    }
    if scan.ids.is_some() {
        if explain {
            scan.index_notes = vec!["indexes not used: the entities are looked up by id".to_owned()];
        }
        return;
    }
    let mut parts = Atoms::new();
    for c in conjuncts {
        atoms(c, &mut parts);
    }
    let fields = Fields { scan };
    let mut served = Vec::new();
    let mut notes = Vec::new();
    for index in candidates {
        if index.kind() == IndexKind::Function {
            match super::function_access::serve_function(index, scan, &parts, value_used) {
                Ok(found) => served.push(found),
                Err(why) if explain => notes.push(format!("index {} not used: {why}", index.name())),
                Err(_) => {}
            }
            continue;
        }
        match serve(world, index, &fields, &parts) {
            Some(found) => served.push(found),
            None if explain => notes.push(format!(
                "index {} not used: {}",
                index.name(),
                why_not(world, index)
            )),
            None => {}
        }
    }
    // The narrowest wins (the first of equals); the others say which did.
    let best = served
        .iter()
        .enumerate()
        .min_by_key(|(_, (rank, _))| *rank)
        .map(|(i, _)| i);
    let chosen = best.map(|i| served.swap_remove(i).1);
    if let Some(chosen) = chosen.as_ref().filter(|_| explain) {
        for (_, other) in &served {
            notes.push(format!(
                "index {} not used: {} serves better",
                other.index, chosen.index
            ));
        }
    }
    scan.index = chosen.map(Box::new);
    scan.index_notes = notes;
}

/// What an index serves, for the note on a scan whose WHERE has none of it.
fn why_not(world: &World, index: &Index) -> String {
    let names = field_names(world, index.fields());
    match index.kind() {
        IndexKind::Spatial => format!(
            "no condition distance(({names}), point) < r or <= r, and no box bounding each of ({names}) on both sides (with constants or parameters)"
        ),
        IndexKind::Relation => format!("no condition {names} = e or IN (…) with constants or parameters"),
        IndexKind::Filter => format!(
            "no condition {names} = value or IN (…) with constants, parameters or outer values of its own type"
        ),
        IndexKind::Ordered => format!(
            "no condition on {names} by =, IN, <, <=, >, >=, BETWEEN or LIKE 'prefix%' with constants or parameters"
        ),
        IndexKind::Function => "no condition on its expressions".to_owned(),
    }
}

/// How `index` serves `parts`, ranked (lower is narrower): equality first, then radius,
/// box, range and prefix.
fn serve(
    world: &World,
    index: &Index,
    fields: &Fields<'_>,
    parts: &[&BoundExpr],
) -> Option<(u8, IndexLookup)> {
    let lookup = |probe: ProbePlan, serves: String| IndexLookup {
        index: index.name().to_owned(),
        kind: index.kind(),
        probe,
        serves,
    };
    if index.kind() == IndexKind::Spatial {
        let point = point_text(world, index.fields());
        for e in parts {
            if let Some((center, radius, op)) = within(fields, e, index.fields()) {
                let text = format!("distance({point}, {}) {op} {radius}", values_text(&center));
                return Some((2, lookup(ProbePlan::Within { center, radius }, text)));
            }
        }
        let mut lo = vec![None; index.fields().len()];
        let mut hi = vec![None; index.fields().len()];
        for e in parts {
            for (d, &f) in index.fields().iter().enumerate() {
                match compare_field(fields, e, f) {
                    Some((CmpOp::Gt | CmpOp::GtEq, v, _)) if lo[d].is_none() => lo[d] = Some(v),
                    Some((CmpOp::Lt | CmpOp::LtEq, v, _)) if hi[d].is_none() => hi[d] = Some(v),
                    Some((CmpOp::Eq, v, _)) if lo[d].is_none() && hi[d].is_none() => {
                        lo[d] = Some(v.clone());
                        hi[d] = Some(v);
                    }
                    _ => {}
                }
            }
        }
        if lo.iter().chain(&hi).all(Option::is_some) {
            let mut text = String::new();
            for (d, &f) in index.fields().iter().enumerate() {
                let (Some(l), Some(h)) = (&lo[d], &hi[d]) else {
                    continue;
                };
                if d > 0 {
                    text.push_str(" AND ");
                }
                let _ = write!(text, "{} BETWEEN {l} AND {h}", field_name(world, f));
            }
            return Some((3, lookup(ProbePlan::Box { lo, hi }, text)));
        }
        return None;
    }
    let f = *index.fields().first()?;
    let field_ty = DataType::from(world.component(f.component()).ok()?.fields().get(f.index())?.ty());
    let name = field_name(world, f);
    let same_type = |ty: DataType| ty == field_ty;
    // An equality operand as the index's key type: the field's own, or an integer compared
    // with an ENTITY field (which names the id of its value, or none when not positive).
    let key = |v: ProbeValue, ty: DataType| -> Option<ProbeValue> {
        if same_type(ty) {
            return Some(v);
        }
        (field_ty == DataType::Entity && ty == DataType::Int).then(|| entity_operand(v))
    };
    for e in parts {
        if let Some((CmpOp::Eq, v, ty)) = compare_field(fields, e, f)
            && let Some(v) = key(v, ty)
        {
            let text = format!("{name} = {v}");
            return Some((0, lookup(ProbePlan::Equal(vec![v]), text)));
        }
        if let BoundKind::InList {
            expr,
            list,
            negated: false,
        } = &e.kind
            && fields.of(expr) == Some(f)
        {
            let values = list
                .iter()
                .map(|x| key(probe_value(x)?, x.ty))
                .collect::<Option<Vec<_>>>();
            if let Some(values) = values {
                let text = format!("{name} IN {}", values_text(&values));
                return Some((1, lookup(ProbePlan::Equal(values), text)));
            }
        }
    }
    if index.kind() == IndexKind::Relation {
        return None;
    }
    let (mut lo, mut hi) = (Bound::Unbounded, Bound::Unbounded);
    let mut texts = Vec::new();
    for e in parts {
        let Some((op, v, ty)) = compare_field(fields, e, f) else {
            continue;
        };
        if !same_type(ty) {
            continue;
        }
        match op {
            CmpOp::Gt if lo == Bound::Unbounded => lo = Bound::Excluded(v.clone()),
            CmpOp::GtEq if lo == Bound::Unbounded => lo = Bound::Included(v.clone()),
            CmpOp::Lt if hi == Bound::Unbounded => hi = Bound::Excluded(v.clone()),
            CmpOp::LtEq if hi == Bound::Unbounded => hi = Bound::Included(v.clone()),
            _ => continue,
        }
        let sign = match op {
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
            CmpOp::Lt => "<",
            _ => "<=",
        };
        texts.push(format!("{name} {sign} {v}"));
    }
    if !texts.is_empty() {
        return Some((4, lookup(ProbePlan::Range { lo, hi }, texts.join(" AND "))));
    }
    for e in parts {
        if let BoundKind::Like {
            expr,
            pattern,
            negated: false,
            case_insensitive: false,
            escape: None,
        } = &e.kind
        {
            if fields.of(expr) != Some(f) {
                continue;
            }
            let Some(p) = probe_value(pattern) else { continue };
            if let ProbeValue::Const(Value::Text(t)) = &p
                && like_prefix(t).is_empty()
            {
                continue;
            }
            let text = format!("{name} LIKE {p}");
            return Some((5, lookup(ProbePlan::Prefix(p), text)));
        }
    }
    None
}

/// `distance(fields, center) < r` / `<=` (or `r > distance(…)`) with constants or
/// parameters for the center and the radius.
fn within(
    fields: &Fields<'_>,
    e: &BoundExpr,
    indexed: &[FieldId],
) -> Option<(Vec<ProbeValue>, ProbeValue, &'static str)> {
    let BoundKind::Compare(op, l, r) = &e.kind else {
        return None;
    };
    let distance = |e: &BoundExpr| matches!(&e.kind, BoundKind::Call(f, _) if *f == DISTANCE);
    let (call, radius, op) = match op {
        CmpOp::Lt if distance(l) => (l, r, "<"),
        CmpOp::LtEq if distance(l) => (l, r, "<="),
        CmpOp::Gt if distance(r) => (r, l, "<"),
        CmpOp::GtEq if distance(r) => (r, l, "<="),
        _ => return None,
    };
    let BoundKind::Call(_, args) = &call.kind else {
        return None;
    };
    let center = nearest_center(fields, args, indexed)?;
    Some((center, probe_value(radius)?, op))
}

/// The constant point of `distance(indexed fields, point)` (either order).
fn nearest_center(fields: &Fields<'_>, args: &[BoundExpr], indexed: &[FieldId]) -> Option<Vec<ProbeValue>> {
    let dims = args.len() / 2;
    if dims != indexed.len() {
        return None;
    }
    let (p, q) = args.split_at(dims);
    let other = if fields.are(p, indexed) {
        q
    } else if fields.are(q, indexed) {
        p
    } else {
        return None;
    };
    other.iter().map(probe_value).collect()
}

/// The literal start of a LIKE pattern: everything before its first wildcard.
pub fn like_prefix(pattern: &str) -> &str {
    let end = pattern.find(['%', '_']).unwrap_or(pattern.len());
    &pattern[..end]
}

/// `ORDER BY distance(indexed point, constant) [ASC] … LIMIT k` over one scan: the k
/// nearest that pass WHERE (and their ties) are the only rows the sort can keep. The
/// executor widens the search while fewer than k candidates pass.
fn choose_nearest(world: &World, q: &mut QueryPlan) {
    let (Some(limit), Some(first)) = (q.limit, q.order_by.first().copied()) else {
        return;
    };
    if first.desc {
        return;
    }
    let SetPlan::Select(select) = &mut q.body else {
        return;
    };
    if select.distinct || select.window.is_some() || select.relations.len() != 1 {
        return;
    }
    let Output::Rows(outputs) = &select.output else {
        return;
    };
    let Some(key) = outputs.get(first.column) else {
        return;
    };
    let BoundKind::Call(f, args) = &key.kind else {
        return;
    };
    if *f != DISTANCE {
        return;
    }
    let relation = &select.relations[0];
    let RelationSource::Entities(scan) = &relation.source else {
        return;
    };
    // A search already chosen for a WHERE condition stays: which of the two is narrower
    // is not known before running them.
    if relation.filter.is_some() || relation.on.is_some() || scan.ids.is_some() || scan.index.is_some() {
        return;
    }
    let fields = Fields { scan };
    let found = Indexes::of(world).iter().find_map(|index| {
        if index.kind() != IndexKind::Spatial || !scan.required.contains(&index.component()) {
            return None;
        }
        let center = nearest_center(&fields, args, index.fields())?;
        Some((index, center))
    });
    let Some((index, center)) = found else { return };
    let k = limit.saturating_add(q.offset);
    let mut serves = format!(
        "ORDER BY distance({}, {}) LIMIT {k}",
        point_text(world, index.fields()),
        values_text(&center)
    );
    if select.filter.is_some() || scan.required.len() > 1 || !scan.excluded.is_empty() {
        serves.push_str(", searching farther while fewer than that pass the other conditions");
    }
    let lookup = IndexLookup {
        index: index.name().to_owned(),
        kind: IndexKind::Spatial,
        probe: ProbePlan::Nearest { center, k },
        serves,
    };
    let name = lookup.index.clone();
    let SetPlan::Select(select) = &mut q.body else {
        return;
    };
    if let RelationSource::Entities(scan) = &mut select.relations[0].source {
        scan.index = Some(Box::new(lookup));
        scan.index_notes
            .retain(|n| !n.starts_with(&format!("index {name} ")));
    }
}
