//! The binder: resolves names against the catalog and the FROM list, checks types, makes
//! casts explicit and turns each statement into a `Plan`. One `Binder`, with an `impl`
//! block per clause in the files of this folder: `statement.rs` (dispatch, DDL, SHOW),
//! `write.rs` (SPAWN, INSERT, UPDATE), `from.rs` (FROM), `filter.rs` (WHERE), `query.rs`
//! (set operations, ORDER BY, LIMIT), `select.rs` (select lists, GROUP BY), `expr.rs`
//! (expressions), `function.rs` (calls); `scope.rs` holds what names mean while binding.

mod catalog;
mod copy;
mod expr;
mod filter;
mod fold;
mod from;
mod function;
mod index;
mod query;
mod scope;
mod select;
mod statement;
mod syntax;
mod window;
mod write;

#[cfg(feature = "server")]
pub(crate) use from::bare_names;

use std::cell::{Cell, RefCell};

use smallvec::SmallVec;

use crate::location::Location;
use crate::parse as ast;
use crate::parse::Ident;
use crate::plan::{BoundExpr, BoundKind, DataType, ParamCast, ParamValues, Plan, PlanError, PlanErrorKind};
use crate::storage::{ComponentDef, EventQueue, FieldDef, Value, World};

impl<'a> Binder<'a> {
    fn new(world: &'a World, params: &'a ParamValues, explaining: bool) -> Binder<'a> {
        Binder {
            world,
            params,
            single_use: Cell::new(false),
            param_casts: RefCell::new(Vec::new()),
            frames: RefCell::new(Vec::new()),
            next_outer: Cell::new(0),
            work_tables: RefCell::new(Vec::new()),
            next_work: Cell::new(0),
            windows: RefCell::new(SmallVec::new()),
            explaining,
            param_types: RefCell::new(Vec::new()),
            lookup_branches: Cell::new(0),
        }
    }

    /// Parameter `p` is used as type `ty` (unless it was used as another first).
    fn hint_param(&self, p: &ast::Param, ty: DataType) {
        let mut types = self.param_types.borrow_mut();
        if ty != DataType::Null && !types.iter().any(|(q, _)| q == p) {
            types.push((p.clone(), ty));
        }
    }

    /// Notes that `e`, when it is a parameter, is used as a `ty` (the first use counts);
    /// so are the parameters whose value `e` takes as it is (`-?1`, a CASE's results), down
    /// through what has no type yet (a NULL's): a typed expression stops the walk, so it
    /// costs nothing for expressions without parameters, however deep.
    fn hint(&self, e: &BoundExpr, ty: DataType) {
        // Most expressions are typed and no parameter: the walk below would stop at once.
        if ty == DataType::Null || (e.ty != DataType::Null && !matches!(e.kind, BoundKind::Param { .. })) {
            return;
        }
        let mut walk: smallvec::SmallVec<[&BoundExpr; 4]> = smallvec::smallvec![e];
        while let Some(e) = walk.pop() {
            match &e.kind {
                BoundKind::Param { param, .. } => {
                    let mut types = self.param_types.borrow_mut();
                    if !types.iter().any(|(p, _)| p == param) {
                        types.push((param.clone(), ty));
                    }
                }
                _ if e.ty != DataType::Null => {}
                BoundKind::Neg(inner) => walk.push(inner),
                BoundKind::Case { branches, otherwise } => {
                    walk.extend(branches.iter().map(|(_, result)| result));
                    walk.extend(otherwise.as_deref());
                }
                _ => {}
            }
        }
    }

    fn component(&self, name: &Ident) -> Result<&'a ComponentDef> {
        let world = self.world;
        if let Ok(def) = world.component_by_name(&name.value) {
            return Ok(def);
        }
        if !name.quoted {
            let mut found = world
                .components()
                .filter(|c| c.name().eq_ignore_ascii_case(&name.value));
            if let (Some(def), None) = (found.next(), found.next()) {
                return Ok(def);
            }
        }
        if let Some(event) = self.event(name) {
            return Err(PlanError::invalid(
                name.at,
                format!(
                    "{} is an event, not a component: its rows are read in FROM and emitted with \
                     INSERT INTO {}",
                    event.name(),
                    event.name()
                ),
            ));
        }
        let known: Vec<&str> = world.components().map(|c| c.name()).collect();
        let events: Vec<&str> = world.events().map(|e| e.name()).collect();
        let names: Vec<&str> = known.iter().chain(&events).copied().collect();
        let mut hint = match (known.is_empty(), near_name(&name.value, &names)) {
            (true, _) => " (no components are declared yet: CREATE COMPONENT first".to_owned(),
            (false, Some(near)) => format!(" (did you mean {near}? declared: {}", known.join(", ")),
            (false, None) => format!(" (declared: {}", known.join(", ")),
        };
        if !events.is_empty() {
            hint += &format!("; events: {}", events.join(", "));
        }
        hint.push(')');
        Err(PlanError::new(
            name.at,
            PlanErrorKind::UnknownComponent {
                name: name.value.to_string(),
                hint,
            },
        ))
    }

    /// The event type `name` stands for, when it names one (exactly, or unquoted in any
    /// case when only one event has that name) and no component has that name.
    fn event(&self, name: &Ident) -> Option<&'a EventQueue> {
        let world = self.world;
        if world.component_by_name(&name.value).is_ok() {
            return None;
        }
        if let Ok(queue) = world.event_by_name(&name.value) {
            return Some(queue);
        }
        if name.quoted
            || world
                .components()
                .any(|c| c.name().eq_ignore_ascii_case(&name.value))
        {
            return None;
        }
        let mut found = world
            .events()
            .filter(|e| e.name().eq_ignore_ascii_case(&name.value));
        match (found.next(), found.next()) {
            (Some(queue), None) => Some(queue),
            _ => None,
        }
    }

    /// The position of the event field `name` among `event`'s fields.
    fn event_field(&self, event: &EventQueue, name: &Ident) -> Result<usize> {
        let fields = event.fields();
        position_of(fields, name).ok_or_else(|| {
            let names: Vec<&str> = fields.iter().map(|f| f.name()).collect();
            PlanError::invalid(
                name.at,
                format!(
                    "event {} has no field {} (its fields: {})",
                    event.name(),
                    name.value,
                    names.join(", ")
                ),
            )
        })
    }

    /// The position of `def`'s field `name`.
    fn field_index(&self, def: &ComponentDef, name: &Ident) -> Result<usize> {
        position_of(def.fields(), name).ok_or_else(|| {
            PlanError::new(
                name.at,
                PlanErrorKind::UnknownField {
                    component: def.name().to_owned(),
                    field: name.value.to_string(),
                    fields: field_list(def),
                },
            )
        })
    }

    /// Notes that the plan depends on `e`'s value when `e` is a parameter.
    fn uses_value(&self, e: &BoundExpr) {
        if matches!(e.kind, BoundKind::Param { .. }) {
            self.single_use.set(true);
        }
    }

    fn param(&self, p: &ast::Param, at: Location) -> Result<Value> {
        self.params
            .get(p)
            .cloned()
            .ok_or_else(|| PlanError::new(at, PlanErrorKind::MissingParameter { name: p.to_string() }))
    }
}

type Result<T, E = PlanError> = std::result::Result<T, E>;

/// The position of the field `name` among `fields`: exactly, or unquoted in any case.
fn position_of(fields: &[FieldDef], name: &Ident) -> Option<usize> {
    fields.iter().position(|f| f.name() == name.value).or_else(|| {
        if name.quoted {
            None
        } else {
            fields
                .iter()
                .position(|f| f.name().eq_ignore_ascii_case(&name.value))
        }
    })
}

/// Binds one statement against the catalog of `world`, without choosing access paths:
/// enough to know what it reads and returns (`plan::plan` also chooses them).
pub fn bind(statement: &ast::Statement, world: &World, params: &ParamValues) -> Result<Plan> {
    bind_reusable(statement, world, params).map(|(plan, _)| *plan)
}

/// `bind`, and whether the plan may run again with other parameter values of the same
/// types: `None` when binding used a parameter's value itself (folded it into a LIMIT, a
/// series bound, a DEFAULT, a cast other than a comparison's or an assignment's), else the
/// casts those other values must pass (`ParamCast`). A plan holding a subquery keeps its
/// result for one run; `PlanSlot` forgets it before the next. The plan is boxed where it
/// is bound, so that it is not copied on its way up (a few hundred bytes each move).
pub fn bind_reusable(
    statement: &ast::Statement,
    world: &World,
    params: &ParamValues,
) -> Result<(Box<Plan>, Option<Vec<ParamCast>>)> {
    bind_with(statement, world, params, explains(statement))
}

/// Whether `statement` is an EXPLAIN (or EXPLAIN ANALYZE): its plan is printed, so the
/// texts of its parts and the notes on indexes not used are written.
pub fn explains(statement: &ast::Statement) -> bool {
    matches!(
        statement.kind,
        ast::StatementKind::Explain(_) | ast::StatementKind::ExplainAnalyze { .. }
    )
}

/// The types a statement's parameters are used as, by position (`None` for one used
/// where any type goes, `SELECT ?1`), and its plan: what a client that prepares a
/// statement before giving values is told (the PostgreSQL wire protocol's Describe). It is
/// bound with each parameter NULL, or a value of the type the client `declared` for it
/// (that type is then its type, and its result's columns follow, as in PostgreSQL); where
/// that does not bind (`range(?1)` wants an INT), again with each parameter a value of the
/// type it was used as.
pub fn bind_described(
    statement: &ast::Statement,
    world: &World,
    declared: &[Option<DataType>],
) -> Result<(Plan, Vec<Option<DataType>>)> {
    let count = statement.params.positional;
    let nulls = ParamValues {
        positional: declared
            .iter()
            .take(count)
            .map(|ty| ty.map_or(Value::Null, example))
            .collect(),
        lenient: true,
        ..ParamValues::default()
    };
    let (first, hints) = bind_hinted(statement, world, &nulls);
    let types = |hints: &[(ast::Param, DataType)]| {
        (1..=count)
            .map(|n| {
                declared.get(n - 1).copied().flatten().or_else(|| {
                    hints
                        .iter()
                        .find(|(p, _)| *p == ast::Param::Position(n))
                        .map(|(_, ty)| *ty)
                })
            })
            .collect::<Vec<_>>()
    };
    match first {
        Ok(plan) => Ok((plan, types(&hints))),
        Err(e) if hints.is_empty() => Err(e),
        Err(_) => {
            let values = ParamValues {
                positional: types(&hints)
                    .iter()
                    .map(|ty| ty.map_or(Value::Null, example))
                    .collect(),
                lenient: true,
                ..ParamValues::default()
            };
            let (second, more) = bind_hinted(statement, world, &values);
            let plan = second?;
            let mut all = hints;
            all.extend(more);
            Ok((plan, types(&all)))
        }
    }
}

/// A value of type `ty`, for a parameter that is bound before its value is known.
fn example(ty: DataType) -> Value {
    match ty {
        DataType::Int => Value::Int(0),
        DataType::Float => Value::Float(0.0),
        DataType::Real => Value::Real(0.0),
        DataType::Bool => Value::Bool(false),
        DataType::Text => Value::Text(String::new()),
        DataType::Entity => crate::plan::cast_value(&Value::Int(1), ty).unwrap_or(Value::Null),
        DataType::Null => Value::Null,
    }
}

/// Binds `statement` with `params`, giving the types its parameters were used as.
fn bind_hinted(
    statement: &ast::Statement,
    world: &World,
    params: &ParamValues,
) -> (Result<Plan>, Vec<(ast::Param, DataType)>) {
    let binder = Binder::new(world, params, false);
    let plan = binder.statement(statement);
    (plan, binder.param_types.into_inner())
}

/// `bind_reusable`, with the texts EXPLAIN prints written (`explaining`) or not.
pub(super) fn bind_with(
    statement: &ast::Statement,
    world: &World,
    params: &ParamValues,
    explaining: bool,
) -> Result<(Box<Plan>, Option<Vec<ParamCast>>)> {
    let binder = Binder::new(world, params, explaining);
    let plan = Box::new(binder.statement(statement)?);
    let reuse = (!binder.single_use.get()).then(|| binder.param_casts.into_inner());
    Ok((plan, reuse))
}

struct Binder<'a> {
    world: &'a World,
    params: &'a ParamValues,
    /// Set when the plan is good for this run only: it depends on a parameter's value (not
    /// just its type).
    single_use: Cell<bool>,
    /// The casts of parameters left for the run (`cast_param`), which the plan's other
    /// values must pass for it to serve them.
    param_casts: RefCell<Vec<ParamCast>>,
    /// The queries around the subquery being bound, outermost first: where a name the
    /// subquery does not have is looked for (a correlated subquery).
    frames: RefCell<Vec<scope::Frame>>,
    /// The number the next outer column read by a correlated subquery gets.
    next_outer: Cell<usize>,
    /// The recursive WITH queries whose recursive part is being bound, innermost last:
    /// in it, a FROM naming one reads the rows its round before added.
    work_tables: RefCell<Vec<WorkTable>>,
    /// The number the next recursive WITH query gets (`SetPlan::Recursive::work`).
    next_work: Cell<usize>,
    /// Per select being bound, innermost last: whether window functions may be called
    /// there now, and those called (`window.rs`); two held inline.
    windows: RefCell<SmallVec<[window::WindowState; 2]>>,
    /// Whether the plan is for EXPLAIN, which prints the text of its parts
    /// (`SelectText`); other plans leave those texts empty, unwritten.
    explaining: bool,
    /// The type each parameter was first used as (`hint`): what `bind_described` tells.
    param_types: RefCell<Vec<(ast::Param, DataType)>>,
    /// The branches the statement's catalog lookups (`x::regclass`) have made so far:
    /// bounded (`catalog.rs`).
    lookup_branches: Cell<usize>,
}

/// A recursive WITH query, as its recursive part reads it.
struct WorkTable {
    name: Ident,
    work: usize,
    columns: Vec<crate::plan::OutputColumn>,
}

fn field_list(def: &ComponentDef) -> String {
    if def.fields().is_empty() {
        return "none: it is a tag".into();
    }
    def.fields()
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The one name of `names` that `typed` is a slip of, ignoring case: a third of its
/// letters or fewer added, dropped, changed or swapped (one in a name of five or fewer), and
/// fewer than either name has (so `A` is no slip of `B`).
fn near_name<'n>(typed: &str, names: &[&'n str]) -> Option<&'n str> {
    let typed = typed.to_lowercase();
    let letters = typed.chars().count();
    let most = (letters / 3).max(1);
    let mut near = names.iter().filter(|n| {
        let d = slips(&typed, &n.to_lowercase());
        d <= most && d < letters.min(n.chars().count())
    });
    match (near.next(), near.next()) {
        (Some(n), None) => Some(n),
        _ => None,
    }
}

/// The edits (a letter added, dropped or changed, or two neighbours swapped) that make `a`
/// into `b`: the optimal string alignment distance.
fn slips(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let width = b.len() + 1;
    let mut d: Vec<usize> = vec![0; (a.len() + 1) * width];
    for i in 0..=a.len() {
        for j in 0..=b.len() {
            d[i * width + j] = if i == 0 || j == 0 {
                i + j
            } else {
                let change = usize::from(a[i - 1] != b[j - 1]);
                let mut best = (d[(i - 1) * width + j] + 1)
                    .min(d[i * width + j - 1] + 1)
                    .min(d[(i - 1) * width + j - 1] + change);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    best = best.min(d[(i - 2) * width + j - 2] + 1);
                }
                best
            };
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod near_name_tests {
    use super::{near_name, slips};

    #[test]
    fn slips_counts_adds_drops_changes_and_swaps() {
        assert_eq!(slips("positon", "position"), 1);
        assert_eq!(slips("postiion", "position"), 1);
        assert_eq!(slips("helth", "health"), 1);
        assert_eq!(slips("abc", "xyz"), 3);
        assert_eq!(slips("", "ab"), 2);
    }

    #[test]
    fn a_near_name_is_named_only_when_it_is_the_only_one() {
        assert_eq!(near_name("Positon", &["Health", "Position"]), Some("Position"));
        assert_eq!(near_name("velocty", &["Velocity"]), Some("Velocity"));
        assert_eq!(near_name("Tag", &["TagA", "TagB"]), None);
        assert_eq!(near_name("Pos", &["Position"]), None);
        assert_eq!(near_name("A", &["B"]), None);
        assert_eq!(near_name("b2", &["B"]), None);
        assert_eq!(near_name("Hitt", &["Hit", "Health"]), Some("Hit"));
    }
}
