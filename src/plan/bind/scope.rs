//! What names mean while a statement binds: a `Scope` is the FROM list's relations and
//! the slots their columns fill (each relation's columns, each member component's fields),
//! `Grouping` the GROUP BY keys above an aggregation, `Ctx` which of the two an expression
//! reads. Column lookup and its "unknown column" hints live here. A scope's lists of
//! names come from the thread's spares and go back to them emptied (`Spare`): what a
//! statement binds never sees another's names.

use std::rc::Rc;
use std::sync::Arc;

use hashbrown::HashMap;
use smallvec::SmallVec;

use super::{Binder, Result, field_list};

use crate::location::Location;
use crate::parse as ast;
use crate::parse::{ExprKind, Ident};
use crate::plan::PlanErrorKind;
use crate::plan::{
    AggCall, BoundExpr, BoundKind, EntityScan, JoinPlan, PlanError, Relation, RelationSource, ScanColumn,
};
use crate::vector::DataType;

impl<'a> Binder<'a> {
    pub(super) fn find_column(&self, parts: &[Ident], scope: &Scope) -> Result<FoundColumn> {
        let (qualifier, name) = match parts {
            [n] => (None, n),
            [q, n] => (Some(q), n),
            _ => return Err(PlanError::invalid(parts[0].at, "expected name or qualifier.name")),
        };
        match named(&scope.columns, qualifier, name) {
            Named::One(c) => Ok(c.found()),
            Named::Nothing => Err(self.unknown_column(qualifier, name, scope)),
            Named::Ambiguous => {
                let candidates = matching(&scope.columns, qualifier, name)
                    .map(|c| match c.qualifiers.first() {
                        Some(q) if &*c.name == "id" => format!("{}.id", q.value),
                        _ => c.display(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                let written = parts
                    .iter()
                    .map(|p| p.value.as_str())
                    .collect::<Vec<_>>()
                    .join(".");
                Err(PlanError::new(
                    parts[0].at,
                    PlanErrorKind::Ambiguous {
                        name: written,
                        candidates,
                    },
                ))
            }
        }
    }

    /// A column of a query around the one being bound, for a name that the local scope
    /// does not have: `Outer(n)` of its type, the reference noted in the frame it was
    /// found in (`Frame::refs`, innermost first), so that the subquery node of that level
    /// sets it. `None` when no enclosing query has it unambiguously, or when its qualifier
    /// names something local (a local name hides an outer one).
    pub(super) fn outer_column(&self, parts: &[Ident], scope: &Scope, at: Location) -> Option<BoundExpr> {
        let (qualifier, name) = match parts {
            [n] => (None, n),
            [q, n] => (Some(q), n),
            _ => return None,
        };
        if let Some(q) = qualifier
            && (scope
                .columns
                .iter()
                .any(|c| c.qualifiers.iter().any(|x| q.matches(&x.value)))
                || scope.members.iter().any(|m| q.matches(&m.qualifier.value)))
        {
            return None;
        }
        let mut frames = self.frames.borrow_mut();
        for frame in frames.iter_mut().rev() {
            let first = match named(&frame.columns, qualifier, name) {
                Named::One(c) => c,
                Named::Nothing => continue,
                Named::Ambiguous => return None,
            };
            let (relation, kind, ty) = (first.relation, first.kind, first.ty);
            let n = match frame
                .refs
                .iter()
                .find(|r| r.relation == relation && r.kind == kind)
            {
                Some(r) => r.n,
                None => {
                    let n = self.next_outer.get();
                    self.next_outer.set(n + 1);
                    frame.refs.push(OuterRef {
                        n,
                        parts: parts.iter().cloned().collect(),
                        relation,
                        kind,
                        at,
                    });
                    n
                }
            };
            return Some(BoundExpr::new(BoundKind::Outer(n), ty, at));
        }
        None
    }

    pub(super) fn unknown_column(&self, qualifier: Option<&Ident>, name: &Ident, scope: &Scope) -> PlanError {
        if let Some(q) = qualifier {
            if let Some(m) = scope.members.iter().find(|m| q.matches(&m.qualifier.value))
                && let Ok(def) = self.world.component(m.component)
            {
                return PlanError::new(
                    name.at,
                    PlanErrorKind::UnknownField {
                        component: def.name().to_owned(),
                        field: name.value.to_string(),
                        fields: field_list(def),
                    },
                );
            }
            if let Some(c) = scope
                .columns
                .iter()
                .find(|c| c.qualifiers.iter().any(|x| q.matches(&x.value)))
            {
                let event = scope.relations.get(c.relation).and_then(|r| match &r.source {
                    RelationSource::Events(e) => self.world.event(e.event).ok(),
                    _ => None,
                });
                let hint = match event {
                    Some(e) if name.matches("id") => {
                        format!(
                            " ({} is an event: its rows are not entities and have no id)",
                            e.name()
                        )
                    }
                    Some(e) => {
                        let fields: Vec<&str> = e.fields().iter().map(|f| f.name()).collect();
                        format!(" (event {} has fields {})", e.name(), fields.join(", "))
                    }
                    None => String::new(),
                };
                return PlanError::new(
                    name.at,
                    PlanErrorKind::UnknownColumn {
                        name: format!("{}.{}", q.value, name.value),
                        hint,
                    },
                );
            }
            let hint = if self.component(q).is_ok() {
                format!(
                    " (component {} is not in FROM: add it, e.g. FROM …, {} or LEFT JOIN {})",
                    q.value, q.value, q.value
                )
            } else {
                format!(" (no component, table or alias named {} in FROM)", q.value)
            };
            return PlanError::new(
                q.at,
                PlanErrorKind::UnknownColumn {
                    name: format!("{}.{}", q.value, name.value),
                    hint,
                },
            );
        }
        let hint = if self.component(name).is_ok() {
            format!(
                " ({} is a component: name one of its fields, e.g. {}.field)",
                name.value, name.value
            )
        } else if name.quoted {
            // "ziggy" is a name in SQL; text takes single quotes.
            format!(
                " (double quotes make a name; text takes single quotes: '{}')",
                name.value.replace('\'', "''")
            )
        } else if scope.columns.is_empty() {
            " (there is no FROM to take it from)".to_owned()
        } else {
            String::new()
        };
        PlanError::new(
            name.at,
            PlanErrorKind::UnknownColumn {
                name: name.value.to_string(),
                hint,
            },
        )
    }
}

/// The columns among `columns` that `qualifier.name` (or `name`) names, for an error
/// that lists them (`named` finds the one a name means).
fn matching<'c>(
    columns: &'c [NamedColumn],
    qualifier: Option<&Ident>,
    name: &Ident,
) -> impl Iterator<Item = &'c NamedColumn> {
    columns.iter().filter(move |c| names(c, qualifier, name))
}

/// Whether `qualifier.name` (or `name`) names `c`.
fn names(c: &NamedColumn, qualifier: Option<&Ident>, name: &Ident) -> bool {
    name.matches(&c.name) && qualifier.is_none_or(|q| c.qualifiers.iter().any(|x| q.matches(&x.value)))
}

/// What a name finds among a scope's columns.
enum Named<'c> {
    Nothing,
    /// One column, or several that are one (a relation's `id` under two qualifiers).
    One(&'c NamedColumn),
    /// Columns of different relations, or different columns.
    Ambiguous,
}

/// The column `qualifier.name` (or `name`) names among `columns`, found without
/// collecting the matches.
fn named<'c>(columns: &'c [NamedColumn], qualifier: Option<&Ident>, name: &Ident) -> Named<'c> {
    let mut found: Option<&NamedColumn> = None;
    for c in matching(columns, qualifier, name) {
        match found {
            None => found = Some(c),
            Some(f) if f.relation != c.relation || f.kind != c.kind => return Named::Ambiguous,
            Some(_) => {}
        }
    }
    found.map_or(Named::Nothing, Named::One)
}

/// A query around the subquery being bound, as its names are seen from inside: its
/// columns, and the ones the subquery (or one inside it) read so far.
pub(super) struct Frame {
    pub(super) columns: Vec<NamedColumn>,
    pub(super) refs: Vec<OuterRef>,
}

/// A column of an enclosing query that a subquery reads: `Outer(n)` inside, set from the
/// column as written (`parts`), bound in the enclosing query once the subquery is bound.
pub(super) struct OuterRef {
    pub(super) n: usize,
    pub(super) parts: ast::ColumnName,
    relation: usize,
    kind: ColKind,
    pub(super) at: Location,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum ColKind {
    Scan(ScanColumn),
    Fixed(usize),
}

/// A name a query may use: `qualifier.name` or `name`.
#[derive(Clone, Debug)]
pub(super) struct NamedColumn {
    pub(super) relation: usize,
    pub(super) qualifiers: Qualifiers,
    /// Shared with the catalog for a field (`FieldDef::shared_name`).
    pub(super) name: Arc<str>,
    pub(super) kind: ColKind,
    pub(super) ty: DataType,
    /// Whether results and messages call the column `qualifier.name` (a component's or
    /// an event's field, by its first qualifier) rather than `name`.
    pub(super) qualified: bool,
    pub(super) in_star: bool,
}

/// The names that qualify a column (`p` in `p.x`), shared by the columns of one relation
/// or component: each column holds a count, not a copy.
pub(super) type Qualifiers = Rc<SmallVec<[Ident; 1]>>;

thread_local! {
    static NO_QUALIFIERS: Qualifiers = Qualifiers::default();
}

/// An empty list of qualifiers, shared (a relation's `id` before its first member):
/// counted, not allocated; `Rc::make_mut` copies it on the first push.
pub(super) fn no_qualifiers() -> Qualifiers {
    NO_QUALIFIERS.with(Rc::clone)
}

/// The name `id`, shared by every relation's id column.
pub(super) fn id_name() -> Arc<str> {
    static ID: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| Arc::from("id"));
    Arc::clone(&ID)
}

impl NamedColumn {
    /// What the column is called in results and messages.
    pub(super) fn display(&self) -> String {
        match self.qualifiers.first() {
            Some(q) if self.qualified => format!("{}.{}", q.value, self.name),
            _ => self.name.to_string(),
        }
    }

    /// What an expression naming the column reads.
    fn found(&self) -> FoundColumn {
        FoundColumn {
            relation: self.relation,
            kind: self.kind,
            ty: self.ty,
        }
    }
}

/// The slot of each column a scope reads so far, by relation and column. Most queries read
/// a few columns: those are searched one by one, held inline up to four, without hashing
/// or an allocation (for a point read planned once, `Scope::slot` went from 800 to 420
/// instructions); past `ColumnSlots::LINEAR` entries a hash map keeps the lookups
/// constant-time for wide queries.
#[derive(Default)]
pub(super) struct ColumnSlots {
    few: SmallVec<[((usize, ColKind), usize); ColumnSlots::INLINE]>,
    many: HashMap<(usize, ColKind), usize>,
}

impl ColumnSlots {
    const INLINE: usize = 4;
    /// Entries searched one by one before the map takes over.
    const LINEAR: usize = 32;

    fn get(&self, relation: usize, kind: ColKind) -> Option<usize> {
        if self.many.is_empty() {
            self.few
                .iter()
                .find(|(k, _)| *k == (relation, kind))
                .map(|&(_, s)| s)
        } else {
            self.many.get(&(relation, kind)).copied()
        }
    }

    fn insert(&mut self, relation: usize, kind: ColKind, slot: usize) {
        if !self.many.is_empty() {
            self.many.insert((relation, kind), slot);
        } else if self.few.len() < Self::LINEAR {
            self.few.push(((relation, kind), slot));
        } else {
            // Taken, not drained: the list's memory goes with it.
            self.many = std::mem::take(&mut self.few).into_iter().collect();
            self.many.insert((relation, kind), slot);
        }
    }
}

/// The column a name found (`Binder::find_column`): its relation, where its values come
/// from and their type.
#[derive(Clone, Copy, Debug)]
pub(super) struct FoundColumn {
    pub(super) relation: usize,
    pub(super) kind: ColKind,
    pub(super) ty: DataType,
}

/// A component named for an entity in FROM.
#[derive(Clone, Debug)]
pub(super) struct Member {
    pub(super) relation: usize,
    pub(super) component: crate::storage::ComponentId,
    pub(super) qualifier: Ident,
}

/// Scopes take their lists of names from the thread's spares and give them back emptied
/// when dropped (`Spare`), so a statement's scopes allocate none once the thread has bound
/// one: three allocations and frees saved on a point read's text.
pub(super) struct Scope {
    pub(super) relations: Vec<Relation>,
    pub(super) columns: Vec<NamedColumn>,
    pub(super) members: Vec<Member>,
    pub(super) slots: ColumnSlots,
    pub(super) slot_types: Vec<(usize, DataType)>,
    /// The relation components without ON join.
    pub(super) first_entity: Option<usize>,
    /// Relations on the nullable side of a LEFT JOIN.
    pub(super) nullable: Vec<usize>,
    /// The join conditions, once WHERE is bound.
    pub(super) joins: JoinPlan,
}

/// A scope's lists of names, emptied, kept for the thread's next scope.
struct Spare {
    columns: Vec<NamedColumn>,
    members: Vec<Member>,
    slot_types: Vec<(usize, DataType)>,
}

/// The most spares a thread keeps (a scope per query level binding at once), and the
/// longest list a spare keeps (a wider one is freed).
const SPARES: usize = 4;
const SPARE_LEN: usize = 64;

thread_local! {
    static SPARES_KEPT: std::cell::RefCell<Vec<Spare>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Default for Scope {
    fn default() -> Scope {
        let spare = SPARES_KEPT
            .try_with(|kept| kept.try_borrow_mut().ok()?.pop())
            .ok()
            .flatten();
        let mut scope = Scope::bare();
        if let Some(spare) = spare {
            scope.columns = spare.columns;
            scope.members = spare.members;
            scope.slot_types = spare.slot_types;
        }
        scope
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        // A scope that never held a name (`bare`, or a spare never grown) has no lists
        // worth keeping.
        if self.columns.capacity() == 0 && self.members.capacity() == 0 && self.slot_types.capacity() == 0 {
            return;
        }
        let mut spare = Spare {
            columns: std::mem::take(&mut self.columns),
            members: std::mem::take(&mut self.members),
            slot_types: std::mem::take(&mut self.slot_types),
        };
        if spare.columns.capacity() > SPARE_LEN
            || spare.members.capacity() > SPARE_LEN
            || spare.slot_types.capacity() > SPARE_LEN
        {
            return;
        }
        spare.columns.clear();
        spare.members.clear();
        spare.slot_types.clear();
        // `try_with`: a scope dropped while the thread ends frees its lists.
        let _ = SPARES_KEPT.try_with(|kept| {
            if let Ok(mut kept) = kept.try_borrow_mut()
                && kept.len() < SPARES
            {
                kept.push(spare);
            }
        });
    }
}

impl Scope {
    /// A scope of no relation (a SPAWN's values, no FROM), its lists empty and taken from
    /// no spare: most such scopes never name anything, and a spare's round trip through
    /// the thread's list costs more than the lists it saves (a list is allocated only if
    /// a name is added).
    pub(super) fn bare() -> Scope {
        Scope {
            relations: Vec::new(),
            columns: Vec::new(),
            members: Vec::new(),
            slots: ColumnSlots::default(),
            slot_types: Vec::new(),
            first_entity: None,
            nullable: Vec::new(),
            joins: JoinPlan::default(),
        }
    }

    pub(super) fn width(&self) -> usize {
        self.slot_types.len()
    }

    pub(super) fn new_slot(&mut self, relation: usize, ty: DataType) -> usize {
        self.slot_types.push((relation, ty));
        self.slot_types.len() - 1
    }

    /// The slot for a column, allocated on first use so scans read only what is used.
    pub(super) fn slot(&mut self, relation: usize, kind: ColKind, ty: DataType) -> usize {
        if let Some(s) = self.slots.get(relation, kind) {
            return s;
        }
        let slot = match kind {
            ColKind::Fixed(s) => s,
            ColKind::Scan(key) => {
                let s = self.new_slot(relation, ty);
                if let RelationSource::Entities(scan) = &mut self.relations[relation].source {
                    scan.columns.push((s, key));
                }
                s
            }
        };
        self.slots.insert(relation, kind, slot);
        slot
    }

    pub(super) fn scan(&self, relation: usize) -> Option<&EntityScan> {
        match &self.relations.get(relation)?.source {
            RelationSource::Entities(scan) => Some(scan),
            _ => None,
        }
    }

    pub(super) fn scan_mut(&mut self, relation: usize) -> Option<&mut EntityScan> {
        match &mut self.relations[relation].source {
            RelationSource::Entities(scan) => Some(scan),
            _ => None,
        }
    }

    pub(super) fn relation_of_slot(&self, slot: usize) -> usize {
        self.slot_types[slot].0
    }
}

/// What may be read above GROUP BY: the group keys (as written, and bound: an expression
/// that computes the same as a key reads the key, however its columns are qualified) and
/// the aggregates found so far.
#[derive(Default)]
pub(super) struct Grouping {
    pub(super) texts: Vec<String>,
    pub(super) keys: Vec<BoundExpr>,
    pub(super) aggs: Vec<AggCall>,
}

impl Grouping {
    pub(super) fn key_named(&self, text: &str) -> Option<usize> {
        self.texts.iter().position(|t| t == text)
    }

    pub(super) fn key_like(&self, e: &BoundExpr) -> Option<usize> {
        self.keys.iter().position(|k| k.same_as(e))
    }
}

/// Where an expression stands, which decides whether aggregates may appear.
pub(super) enum Ctx<'g> {
    /// Per row; `what` names the clause for the error when an aggregate appears.
    Row(&'static str),
    /// Above GROUP BY: group keys and aggregates are what may be read.
    Grouped(&'g mut Grouping),
}

/// An AST expression that names `c` unambiguously.
pub(super) fn column_expr(c: &NamedColumn, at: Location) -> ast::Expr {
    let mut parts = ast::ColumnName::new();
    if let Some(q) = c.qualifiers.first() {
        parts.push(Ident {
            value: q.value.clone(),
            quoted: true,
            at,
        });
    }
    parts.push(Ident {
        value: c.name.to_string().into(),
        quoted: true,
        at,
    });
    ast::Expr::new(ExprKind::Column(parts), at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slots of many columns over two relations, found again after the map moved
    /// from its list to its hash map (the same column under two relations kept apart).
    #[test]
    fn column_slots_find_every_slot_before_and_after_it_grows() {
        let mut map = ColumnSlots::default();
        let key = |i: usize| match i % 3 {
            0 => ColKind::Fixed(i),
            _ => ColKind::Scan(ScanColumn::Field(crate::storage::FieldId::new(
                crate::storage::ComponentId::from_raw((i % 5) as u32),
                i as u16,
            ))),
        };
        for i in 0..200 {
            for relation in 0..2 {
                assert_eq!(map.get(relation, key(i)), None, "{i} {relation}");
                map.insert(relation, key(i), i * 2 + relation);
            }
            for j in 0..=i {
                for relation in 0..2 {
                    assert_eq!(
                        map.get(relation, key(j)),
                        Some(j * 2 + relation),
                        "{j} {relation} of {i}"
                    );
                }
            }
        }
        assert!(!map.many.is_empty() && map.few.is_empty());
    }
}
