//! The writing statements. Each computes everything it will write — and checks it — before
//! it changes the world, so a statement that fails leaves the database as it was. (An
//! UPDATE that provably cannot fail writes batch by batch instead: nothing can go wrong
//! after its first write; over a large table it writes in place, a stretch of rows per
//! thread, `update_in_place`.)

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::ops::Range;

use hashbrown::HashSet;

use super::Split;
use super::compound;
use super::error::ExecError;
use super::eval::{EvalCtx, Selection, eval, select_rows};
use super::join::join_all_kept;
use super::parallel;
use super::query::run_query;
use super::reader::Reader;
use super::scan::{Home, MORSEL_ROWS, TableRows, reads_whole_tables, scan_runs, table_batch};
use super::{Chunk, Outcome, Run};
use crate::location::Location;
use crate::plan::{
    ArithOp, Assignment, BoundExpr, BoundKind, ConflictPlan, DataType, EmitPlan, EntityScan, InsertPlan,
    OutputColumn, Plan, QueryPlan, RelationSource, ScanColumn, SetPlan, SpawnPlan, UpdatePlan,
};
use crate::storage::{
    Column, ColumnSliceMut, ComponentDef, ComponentId, Entity, FieldId, FieldType, Lend, LiveSet, TableId,
    Value, Values, World,
};
use crate::vector::cast;
use crate::vector::{Batch, Data, Datum, Vector};

type Result<T> = std::result::Result<T, ExecError>;

/// A read of `world` for a statement that will write to it afterwards.
fn reader<'w>(world: &'w World, run: Run<'w>) -> Reader<'w> {
    Reader::new(world, run)
}

/// `v` converted to a storage column of `ty`; a NULL where `ty` cannot hold one is an error
/// naming `what`.
pub(super) fn to_column(v: Vector<'_>, ty: FieldType, what: &str, at: Location) -> Result<Column> {
    let len = v.len();
    let want = DataType::from(ty);
    let v = if v.data_type() == want || matches!(v.data, Data::Null) {
        v
    } else {
        crate::vector::store_cast(Datum::Vector(v), want, what, at)?.into_vector(want, len)
    };
    v.into_owned()
        .into_column(ty)
        .map_err(|_| ExecError::constraint(at, format!("{what} cannot be NULL (only ENTITY fields may be)")))
}

/// Every field of `def` as a storage column of `len` rows: the vector `given` has for it,
/// or its default; a value its field cannot hold is an error naming the field.
pub(super) fn full_columns<'v>(
    def: &ComponentDef,
    len: usize,
    given: impl Fn(usize) -> Option<Vector<'v>>,
    at: Location,
) -> Result<Vec<Column>> {
    let mut columns = Vec::with_capacity(def.fields().len());
    for (f, spec) in def.fields().iter().enumerate() {
        let v = given(f)
            .unwrap_or_else(|| Vector::broadcast(spec.default_value(), DataType::from(spec.ty()), len));
        columns.push(to_column(
            v,
            spec.ty(),
            &format!("{}.{}", def.name(), spec.name()),
            at,
        )?);
    }
    Ok(columns)
}

/// `INSERT INTO Event …`: the rows, every field a column (given, or its default), appended
/// to the event's queue stamped with the run's tick.
pub fn emit(plan: &EmitPlan, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let at = run.at;
    let chunk = run_query(&plan.rows, &reader(world, run))?;
    let len = chunk.len;
    let queue = world.event(plan.event).map_err(|e| ExecError::storage(at, e))?;
    let name = queue.name().to_owned();
    let defaults: Vec<(String, Value)> = queue
        .fields()
        .iter()
        .map(|f| (format!("{name}.{}", f.name()), f.default_value().clone()))
        .collect();
    let mut columns = Vec::with_capacity(plan.fields.len());
    for (f, ty) in plan.fields.iter().enumerate() {
        let (what, default) = &defaults[f];
        let v = match plan.field_columns[f] {
            Some(c) => chunk.columns[c].view(),
            None => Vector::broadcast(default, DataType::from(*ty), len),
        };
        columns.push(to_column(v, *ty, what, at)?);
    }
    if len > 0 {
        world
            .emit(plan.event, columns, len, run.clock.tick)
            .map_err(|e| ExecError::storage(at, e))?;
    }
    Ok(Outcome {
        affected: len,
        ..Default::default()
    })
}

fn ids_of(chunk: &Chunk, column: usize, at: Location) -> Result<Vec<Option<Entity>>> {
    let v = match chunk.columns.get(column) {
        Some(v) => v,
        None => return Err(ExecError::internal(at, "missing id column")),
    };
    let v = if v.data_type() == DataType::Entity {
        Cow::Borrowed(v)
    } else {
        Cow::Owned(
            cast(Datum::Vector(v.view()), DataType::Entity, at)?
                .into_vector(DataType::Entity, chunk.len)
                .into_owned(),
        )
    };
    // A column of ids without a NULL mask is read as one slice.
    if let Some(ids) = v.typed::<Option<Entity>>()
        && ids.len() == chunk.len
    {
        return Ok(ids.to_vec());
    }
    Ok((0..chunk.len)
        .map(|i| match v.get(i) {
            Value::Entity(e) => Some(e),
            _ => None,
        })
        .collect())
}

fn check_live(world: &World, e: Option<Entity>, at: Location) -> Result<Entity> {
    let e = e.ok_or_else(|| ExecError::constraint(at, "an entity id is NULL"))?;
    world.locate(e).map_err(|err| ExecError::storage(at, err))?;
    Ok(e)
}

fn ids_outcome(ids: &[Entity]) -> Outcome {
    let data: Vec<Option<Entity>> = ids.iter().map(|&e| Some(e)).collect();
    let v = Vector::from_data(Data::Entity(Cow::Owned(data)), ids.len());
    Outcome {
        columns: std::sync::Arc::from([OutputColumn {
            name: "id".into(),
            ty: DataType::Entity,
        }]),
        rows: Chunk {
            columns: vec![v],
            len: ids.len(),
        },
        affected: ids.len(),
        returns_rows: true,
    }
}

pub fn spawn(plan: &SpawnPlan, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let at = run.at;
    let chunk = run_query(&plan.rows, &reader(world, run))?;
    let len = chunk.len;
    let chosen_ids = match plan.id_column {
        Some(column) => Some(
            ids_of(&chunk, column, at)?
                .into_iter()
                .map(|id| id.ok_or_else(|| ExecError::constraint(at, "SPAWN AT was given a NULL id")))
                .collect::<Result<Vec<Entity>>>()?,
        ),
        None => None,
    };
    let mut columns = chunk.columns.into_iter().zip(plan.rows.columns.iter());
    let mut components = Vec::new();
    for (component, types) in &plan.components {
        let mut cols = Vec::with_capacity(types.len());
        for ty in types {
            let Some((v, meta)) = columns.next() else {
                return Err(ExecError::internal(
                    at,
                    "SPAWN rows have fewer columns than fields",
                ));
            };
            cols.push(to_column(v, *ty, &meta.name, at)?);
        }
        components.push((*component, cols));
    }
    if len == 0 {
        return Ok(ids_outcome(&[]));
    }
    let spawn = |world: &mut World, len: usize, components, chosen: Option<&[Entity]>| match chosen {
        Some(ids) => world.spawn_batch_at(ids, components).map(|()| ids.to_vec()),
        None => world.spawn_batch(len, components),
    };
    if len <= WRITE_PIECE {
        let ids =
            spawn(world, len, components, chosen_ids.as_deref()).map_err(|e| ExecError::storage(at, e))?;
        return Ok(ids_outcome(&ids));
    }
    // Many rows are written a piece at a time, the interrupt looked at between pieces,
    // inside a savepoint: an interrupt (or a piece refused) undoes the pieces written,
    // which costs a record per piece (appended rows come off the tables' ends).
    let savepoint = world.savepoint();
    let mut ids = Vec::with_capacity(len);
    let mut from = 0;
    let mut pieces = in_pieces(components, len, WRITE_PIECE).into_iter();
    while let Some((rows, piece)) = pieces.next() {
        let chosen = chosen_ids.as_deref().map(|c| &c[from..from + rows]);
        let written = run
            .budget
            .check(at)
            .and_then(|()| spawn(world, rows, piece, chosen).map_err(|e| ExecError::storage(at, e)));
        match written {
            Ok(piece_ids) => ids.extend(piece_ids),
            Err(e) => {
                world.rollback_to(savepoint);
                // The pieces not written are freed off this thread (`garbage.rs`).
                crate::garbage::drop_later(pieces.collect::<Vec<_>>());
                return Err(e);
            }
        }
        from += rows;
    }
    world.release(savepoint);
    Ok(ids_outcome(&ids))
}

/// Runs `write` for pieces `0..pieces` in turn: each piece is written alike (its own
/// ticks), whether or not it can be undone, so that a journal's replay stamps the same
/// ticks. `stoppable`: inside a savepoint, the interrupt looked at between pieces, and an
/// error undoes the pieces written.
fn write_in_pieces(
    world: &mut World,
    run: Run<'_>,
    pieces: usize,
    stoppable: bool,
    mut write: impl FnMut(&mut World, usize) -> Result<()>,
) -> Result<()> {
    let savepoint = stoppable.then(|| world.savepoint());
    for k in 0..pieces {
        let check = match savepoint {
            Some(_) => run.budget.check(run.at),
            None => Ok(()),
        };
        if let Err(e) = check.and_then(|()| write(world, k)) {
            if let Some(savepoint) = savepoint {
                world.rollback_to(savepoint);
            }
            return Err(e);
        }
    }
    if let Some(savepoint) = savepoint {
        world.release(savepoint);
    }
    Ok(())
}

/// Whether `component` is sparse: its attaches and detaches are appended to and taken
/// from its own table in one write (1M entities in tens of ms), not in pieces.
fn is_sparse(world: &World, component: ComponentId) -> bool {
    world
        .component(component)
        .is_ok_and(|d| d.sparse_table().is_some())
}

/// The pieces an attach or detach of `entities` (live) is written in, as positions in
/// `entities`: table by table in table order, as `World::insert_batch` and `remove_batch`
/// take them, so that the pieces write what one call would. A table whose every entity
/// is among them is one piece (its columns move whole); the others' entities go
/// `WRITE_PIECE` at a time, in the order given.
fn table_pieces(world: &World, entities: &[Entity], run: Run<'_>) -> Result<Vec<Vec<u32>>> {
    let mut groups: Vec<(TableId, Vec<u32>)> = Vec::new();
    let mut group_of: hashbrown::HashMap<TableId, usize> = hashbrown::HashMap::new();
    let mut last: Option<(TableId, usize)> = None;
    for (i, &e) in entities.iter().enumerate() {
        if i % WRITE_PIECE == WRITE_PIECE - 1 {
            run.budget.check(run.at)?;
        }
        let Ok((table, _)) = world.locate(e) else {
            continue;
        };
        let g = match last {
            Some((t, g)) if t == table => g,
            _ => *group_of.entry(table).or_insert_with(|| {
                groups.push((table, Vec::new()));
                groups.len() - 1
            }),
        };
        last = Some((table, g));
        groups[g].1.push(i as u32);
    }
    groups.sort_unstable_by_key(|(table, _)| *table);
    let mut pieces = Vec::new();
    for (table, group) in groups {
        if world.table(table).is_some_and(|t| t.len() == group.len()) {
            pieces.push(group);
        } else {
            pieces.extend(group.chunks(WRITE_PIECE).map(<[u32]>::to_vec));
        }
    }
    Ok(pieces)
}

/// A batch's columns, component by component, as `World::spawn_batch` takes them.
type Components = Vec<(ComponentId, Vec<Column>)>;

/// How many rows a large SPAWN, DESPAWN, INSERT or DELETE writes between two looks at the
/// interrupt.
const WRITE_PIECE: usize = 1 << 16;

/// `components`' columns (`len` rows) cut into pieces of `rows` rows (the last may have
/// fewer), in order, each with its row count; the values are moved, not copied.
fn in_pieces(mut components: Components, len: usize, rows: usize) -> Vec<(usize, Components)> {
    let mut pieces = Vec::with_capacity(len.div_ceil(rows));
    let mut end = len;
    while end > 0 {
        let start = (end - 1) / rows * rows;
        let piece = components
            .iter_mut()
            .map(|(c, columns)| (*c, columns.iter_mut().map(|col| col.split_off(start)).collect()))
            .collect();
        pieces.push((end - start, piece));
        end = start;
    }
    pieces.reverse();
    pieces
}

/// Runs an INSERT; each entity it attached to, spawned or changed is added to `touched`,
/// when given.
pub fn insert(
    plan: &InsertPlan,
    world: &mut World,
    run: Run<'_>,
    touched: Option<&mut Vec<Entity>>,
) -> Result<Outcome> {
    let at = run.at;
    let chunk = run_query(&plan.rows, &reader(world, run))?;
    let len = chunk.len;
    let def = world
        .component(plan.component)
        .map_err(|e| ExecError::storage(at, e))?;
    let name = def.name().to_owned();
    let field_names: Vec<String> = def
        .fields()
        .iter()
        .map(|f| format!("{name}.{}", f.name()))
        .collect();

    let fields = full_columns(
        def,
        len,
        |f| plan.field_columns[f].map(|c| chunk.columns[c].view()),
        at,
    )?;
    let Some(id_column) = plan.id_column else {
        if len == 0 {
            return Ok(Outcome::default());
        }
        let ids = world
            .spawn_batch(len, vec![(plan.component, fields)])
            .map_err(|e| ExecError::storage(at, e))?;
        if let Some(touched) = touched {
            touched.extend_from_slice(&ids);
        }
        return Ok(Outcome {
            affected: ids.len(),
            ..Default::default()
        });
    };

    let ids = ids_of(&chunk, id_column, at)?;
    let mut seen = LiveSet::default();
    let mut attach = Vec::with_capacity(ids.len());
    let mut conflicts = Vec::new();
    let has = world
        .has_test(plan.component)
        .map_err(|err| ExecError::storage(at, err))?;
    for (row, id) in ids.into_iter().enumerate() {
        if row % WRITE_PIECE == WRITE_PIECE - 1 {
            run.budget.check(at)?;
        }
        // A dead id fails here, before it could count as a repeat.
        let e = id.ok_or_else(|| ExecError::constraint(at, "an entity id is NULL"))?;
        let holds = has(e).map_err(|err| ExecError::storage(at, err))?;
        if !seen.insert(e) {
            return Err(ExecError::constraint(
                at,
                format!("entity {e} appears twice in one INSERT into {name}"),
            ));
        }
        if holds {
            match plan.on_conflict {
                ConflictPlan::Fail => {
                    return Err(ExecError::constraint(
                        at,
                        format!(
                            "entity {e} already has {name} (use INSERT OR REPLACE or ON CONFLICT DO UPDATE to change it)"
                        ),
                    ));
                }
                ConflictPlan::DoNothing => {}
                _ => conflicts.push((row, e)),
            }
        } else {
            attach.push((row, e));
        }
    }
    drop(has);
    let row_values =
        |row: usize| -> Vec<Value> { fields.iter().map(|c| c.get(row).unwrap_or(Value::Null)).collect() };

    // Conflicting rows: their new values, computed before anything is written.
    let mut updates: Vec<(Entity, Vec<(usize, Value)>)> = Vec::new();
    match &plan.on_conflict {
        ConflictPlan::Replace => {
            for &(row, e) in &conflicts {
                updates.push((e, row_values(row).into_iter().enumerate().collect()));
            }
        }
        ConflictPlan::DoUpdate(sets) if !conflicts.is_empty() => {
            let n = plan.fields.len();
            let mut batch = Batch::new(conflicts.len(), 2 * n);
            for (f, column) in fields.iter().enumerate() {
                let ty = DataType::from(plan.fields[f]);
                let mut current = Vector::empty(ty);
                let mut proposed = Vector::empty(ty);
                for &(row, e) in &conflicts {
                    let field = FieldId::new(plan.component, f as u16);
                    current.push_value(&world.get(e, field).map_err(|err| ExecError::storage(at, err))?);
                    proposed.push_value(&column.get(row).unwrap_or(Value::Null));
                }
                batch.slots[f] = Some(Datum::Vector(current));
                batch.slots[n + f] = Some(Datum::Vector(proposed));
            }
            let read = reader(world, run);
            let cx = read.eval();
            let mut computed = Vec::new();
            for (f, e) in sets {
                let v = eval(e, &batch, &cx)?.into_vector(e.ty, conflicts.len());
                let column = to_column(v, plan.fields[*f], &field_names[*f], at)?;
                computed.push((*f, column));
            }
            for (k, &(_, e)) in conflicts.iter().enumerate() {
                updates.push((
                    e,
                    computed
                        .iter()
                        .map(|(f, c)| (*f, c.get(k).unwrap_or(Value::Null)))
                        .collect(),
                ));
            }
        }
        _ => {}
    }

    let affected = attach.len() + updates.len();
    if let Some(touched) = touched {
        touched.extend(attach.iter().map(|&(_, e)| e));
        touched.extend(updates.iter().map(|(e, _)| *e));
    }
    if !attach.is_empty() {
        // Column-wise: the attached rows' values, as columns (all of them when every row
        // attaches, as in `INSERT INTO C (id, …) SELECT id, … FROM …`).
        let (rows, entities): (Vec<u32>, Vec<Entity>) =
            attach.iter().map(|&(row, e)| (row as u32, e)).unzip();
        let every = rows.len() == len && rows.iter().enumerate().all(|(k, &r)| r as usize == k);
        let columns = if every && updates.is_empty() {
            fields
        } else {
            fields.iter().map(|c| c.copy_rows(&rows)).collect()
        };
        let pieces = match entities.len() > WRITE_PIECE && !is_sparse(world, plan.component) {
            true => table_pieces(world, &entities, run)?,
            false => Vec::new(),
        };
        let stoppable = keep_undo(world, run, plan.component, &entities, true, &pieces)?;
        if pieces.len() <= 1 {
            // One piece (a whole table's moves are one): one write.
            world
                .insert_checked_batch(plan.component, &entities, columns)
                .map_err(|err| ExecError::storage(at, err))?;
        } else {
            write_in_pieces(world, run, pieces.len(), stoppable, |world, k| {
                let piece = &pieces[k];
                let values = columns.iter().map(|c| c.copy_rows(piece)).collect();
                let of: Vec<Entity> = piece.iter().map(|&i| entities[i as usize]).collect();
                world
                    .insert_checked_batch(plan.component, &of, values)
                    .map_err(|err| ExecError::storage(at, err))
            })?;
        }
    }
    for (e, values) in updates {
        for (f, v) in values {
            let field = FieldId::new(plan.component, f as u16);
            world
                .set(e, field, v)
                .map_err(|err| ExecError::storage(at, err))?;
        }
    }
    Ok(Outcome {
        affected,
        ..Default::default()
    })
}

/// Whether an attach (`attach`) or detach of `component` from `entities`, written in
/// `pieces` (positions in `entities`, each within one table, from `table_pieces`) or, when
/// there are none, in one write, keeps what undoes it and so can be stopped. What is kept
/// (inside a transaction, or in the savepoint of pieces) is counted as the statement's
/// memory: inside a transaction past the limit the statement fails before it begins;
/// outside one, its pieces are written without a savepoint and it runs to its end. A
/// whole table's columns move whole and count nothing. (Added up a piece at a time, the
/// interrupt looked at between pieces.)
fn keep_undo(
    world: &World,
    run: Run<'_>,
    component: ComponentId,
    entities: &[Entity],
    attach: bool,
    pieces: &[Vec<u32>],
) -> Result<bool> {
    let sparse = is_sparse(world, component);
    let bytes_of = |of: &[Entity]| match !sparse && world.is_whole_table(of) {
        true => 0,
        false => world.move_undo_bytes(component, of, attach),
    };
    let undo = || -> Result<usize> {
        let mut bytes = 0usize;
        if pieces.is_empty() {
            // A sparse component's, or no more than `WRITE_PIECE` entities.
            for piece in entities.chunks(WRITE_PIECE) {
                run.budget.check(run.at)?;
                bytes = bytes.saturating_add(world.move_undo_bytes(component, piece, attach));
            }
        }
        for piece in pieces {
            run.budget.check(run.at)?;
            let of: Vec<Entity> = piece.iter().map(|&i| entities[i as usize]).collect();
            bytes = bytes.saturating_add(bytes_of(&of));
        }
        Ok(bytes)
    };
    match (world.in_transaction(), pieces.len() > 1) {
        (true, _) => run.budget.charge(undo()?, run.at).map(|()| true),
        (false, true) => fits(run.budget.charge(undo()?, run.at)),
        (false, false) => Ok(false),
    }
}

fn entity_ids(ids: &QueryPlan, world: &World, run: Run<'_>) -> Result<Vec<Option<Entity>>> {
    let chunk = run_query(ids, &reader(world, run))?;
    ids_of(&chunk, 0, run.at)
}

pub fn delete(component: ComponentId, ids: &QueryPlan, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let ids = delete_targets(ids, world, run)?;
    delete_of(component, ids, world, run)
}

/// The entities a DELETE detaches its component from.
fn delete_targets(ids: &QueryPlan, world: &World, run: Run<'_>) -> Result<Vec<Entity>> {
    Ok(entity_ids(ids, world, run)?.into_iter().flatten().collect())
}

/// Detaches `component` from `ids`, which hold it.
fn delete_of(component: ComponentId, ids: Vec<Entity>, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let at = run.at;
    let pieces = match ids.len() > WRITE_PIECE && !is_sparse(world, component) {
        true => table_pieces(world, &ids, run)?,
        false => Vec::new(),
    };
    let stoppable = keep_undo(world, run, component, &ids, false, &pieces)?;
    if pieces.len() <= 1 {
        // One piece (a whole table's moves are one): one write.
        world
            .remove_batch(component, &ids)
            .map_err(|err| ExecError::storage(at, err))?;
    } else {
        write_in_pieces(world, run, pieces.len(), stoppable, |world, k| {
            let of: Vec<Entity> = pieces[k].iter().map(|&i| ids[i as usize]).collect();
            world
                .remove_batch(component, &of)
                .map_err(|err| ExecError::storage(at, err))
        })?;
    }
    Ok(Outcome {
        affected: ids.len(),
        ..Default::default()
    })
}

pub fn despawn(ids: &QueryPlan, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let unique = despawn_targets(ids, world, run)?;
    despawn_of(unique, world, run)
}

/// The entities a DESPAWN removes, each once, in the order given; a dead one is an
/// error.
fn despawn_targets(ids: &QueryPlan, world: &World, run: Run<'_>) -> Result<Vec<Entity>> {
    let at = run.at;
    let ids = entity_ids(ids, world, run)?;
    let mut unique = Vec::with_capacity(ids.len());
    let mut seen = LiveSet::default();
    for (k, id) in ids.into_iter().enumerate() {
        if k % WRITE_PIECE == WRITE_PIECE - 1 {
            run.budget.check(at)?;
        }
        let e = check_live(world, id, at)?;
        if seen.insert(e) {
            unique.push(e);
        }
    }
    Ok(unique)
}

/// Removes `unique`, live entities each given once.
fn despawn_of(unique: Vec<Entity>, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let at = run.at;
    // What is kept to undo the removals with (inside a transaction, or in a savepoint)
    // is counted as the statement's memory: inside a transaction a DESPAWN past the
    // limit fails before it begins; outside one, it runs to its end once writing. (Added
    // up a piece at a time, the interrupt looked at between pieces.)
    let undo = |world: &World| -> Result<usize> {
        let mut bytes = 0usize;
        for piece in unique.chunks(WRITE_PIECE) {
            run.budget.check(at)?;
            bytes = bytes.saturating_add(world.despawn_undo_bytes(piece));
        }
        Ok(bytes)
    };
    let stoppable = if world.in_transaction() {
        run.budget.charge(undo(world)?, at)?;
        true
    } else {
        unique.len() > WRITE_PIECE && fits(run.budget.charge(undo(world)?, at))?
    };
    // In the order given, a `WRITE_PIECE` at a time (ids are freed, and so reused, in
    // that order).
    let pieces: Vec<&[Entity]> = unique.chunks(WRITE_PIECE).collect();
    write_in_pieces(world, run, pieces.len(), stoppable, |world, k| {
        world
            .despawn_batch(pieces[k])
            .map_err(|err| ExecError::storage(at, err))
    })?;
    Ok(Outcome {
        affected: unique.len(),
        ..Default::default()
    })
}

/// New values for some rows of one table, ready to be written.
struct Staged {
    table: TableId,
    /// The rows of the table the batch covered; `selection` counts from its start.
    rows: Range<usize>,
    selection: Selection,
    columns: Vec<(FieldId, Column)>,
}

/// The one entity scan an UPDATE reads, when it joins nothing else.
fn single_scan(plan: &UpdatePlan) -> Option<&EntityScan> {
    match plan.select.relations.as_slice() {
        [r] if r.on.is_none() && r.filter.is_none() => match &r.source {
            RelationSource::Entities(scan) => Some(scan),
            _ => None,
        },
        _ => None,
    }
}

/// Where an UPDATE's batches come from: a sparse component's values are written in its
/// own table, so the scan starts there.
fn home_of(plan: &UpdatePlan, world: &World) -> Home {
    match world.component(plan.target).ok().and_then(|d| d.sparse_table()) {
        Some(table) => Home::Sparse(table),
        None => Home::Dense,
    }
}

/// Whether `plan` is a compound UPDATE (`compound.rs`), for EXPLAIN.
pub fn is_compound(plan: &UpdatePlan) -> bool {
    single_scan(plan).is_some_and(|scan| compound::compounds(plan, scan).is_some())
}

/// For EXPLAIN: the tables a run of `plan` now would write in place (`update_in_place`),
/// each with its number of stretches (threads) and its rows.
pub fn threads_for_explain(plan: &UpdatePlan, reader: &Reader<'_>) -> Vec<(TableId, usize, usize)> {
    let Some(scan) = single_scan(plan) else {
        return Vec::new();
    };
    let home = home_of(plan, reader.world);
    let (runs, _) = scan_runs(scan, reader, home);
    let (big, _) = tables_for_threads(plan, scan, home, reader.budget.split(), reader.world, runs);
    big.into_iter()
        .map(|(table, stretches)| {
            let rows = stretches.iter().flatten().map(Range::len).sum();
            (table, stretches.len(), rows)
        })
        .collect()
}

/// Runs an UPDATE; each entity written is added to `touched`, when given (then the plan
/// is never `cannot_fail`, so its writes take the way that names them).
pub fn update(
    plan: &UpdatePlan,
    world: &mut World,
    run: Run<'_>,
    touched: Option<&mut Vec<Entity>>,
) -> Result<Outcome> {
    if touched.is_some() && plan.cannot_fail {
        return Err(ExecError::internal(
            run.at,
            "an UPDATE with RETURNING was planned to write directly",
        ));
    }
    let Some(scan) = single_scan(plan) else {
        return update_joined(plan, world, run, touched);
    };
    // A statement whose every batch is sure to succeed writes each batch as soon as it is
    // computed, while its values are still in cache (any other computes every batch's new
    // values first and writes only when all succeeded, so a failure writes nothing). One
    // that may run long keeps the old values it writes over, in a savepoint, and looks at
    // the interrupt between batches: stopped, it puts them back.
    let home = home_of(plan, world);
    if !plan.cannot_fail || !(world.in_transaction() || runs_long(plan, scan, home, world, run)?) {
        return update_scan(plan, scan, home, world, run, false, touched);
    }
    let savepoint = world.savepoint();
    match update_scan(plan, scan, home, world, run, true, None) {
        Ok(outcome) => {
            world.release(savepoint);
            Ok(outcome)
        }
        Err(e) => {
            world.rollback_to(savepoint);
            Err(e)
        }
    }
}

/// How long a direct UPDATE may write with no way to stop it (keeping no old values):
/// one projected to take longer keeps them, so that an interrupt can undo it.
const UNSTOPPABLE: std::time::Duration = std::time::Duration::from_millis(50);

/// The rows `runs_long` computes to time a direct UPDATE: enough to weigh what a row
/// costs, few enough that the sample costs ~1% of a simple UPDATE of 1M rows.
const SAMPLE_ROWS: usize = 512;

/// Whether a direct UPDATE outside a transaction is projected to take longer than
/// `UNSTOPPABLE` on one thread: the values of its first `SAMPLE_ROWS` rows are computed
/// (and dropped) and timed, and their time scaled to all its rows. Fewer rows than a few
/// morsels' are never long. The old values it would keep must fit in the memory limit
/// (they are charged to it); else it runs as one that is short.
fn runs_long(plan: &UpdatePlan, scan: &EntityScan, home: Home, world: &World, run: Run<'_>) -> Result<bool> {
    let read = reader(world, run);
    let (runs, _) = scan_runs(scan, &read, home);
    let rows: usize = runs.iter().map(|(_, r)| r.len()).sum();
    if rows <= 4 * MORSEL_ROWS {
        return Ok(false);
    }
    // The first runs, up to `SAMPLE_ROWS` rows (a world of small tables has short runs,
    // each a batch of its own, as it will be written).
    let began = std::time::Instant::now();
    let mut sampled = 0;
    for (table, rows) in &runs {
        let Some(t) = world.table(*table) else {
            continue;
        };
        let want = SAMPLE_ROWS - sampled;
        let (sample, span) = match rows {
            TableRows::Run(r) => {
                let r = r.start..r.end.min(r.start + want);
                (TableRows::Run(r.clone()), r)
            }
            TableRows::Picked(p) => {
                let p = p[..p.len().min(want)].to_vec();
                let span = 0..p.len();
                (TableRows::Picked(p), span)
            }
        };
        let batch = table_batch(
            scan,
            world,
            t.get(),
            plan.select.width,
            &sample,
            read.changes_since(),
        );
        // The sample's reader has a copy of the statement's random state: the run's own
        // values are not changed by it.
        drop(stage_update(plan, *table, span, &batch, &read.eval())?);
        sampled += sample.len();
        if sampled >= SAMPLE_ROWS {
            break;
        }
    }
    let took = began.elapsed().as_secs_f64() * rows as f64 / sampled.max(1) as f64;
    if took <= UNSTOPPABLE.as_secs_f64() {
        return Ok(false);
    }
    let bytes = rows.saturating_mul(plan.assignments.len()).saturating_mul(16);
    fits(run.budget.charge(bytes, run.at))
}

/// Whether a charge for what a write keeps to undo itself with fitted in the memory
/// limit; an interrupt is an error still.
fn fits(charged: Result<()>) -> Result<bool> {
    match charged {
        Ok(()) => Ok(true),
        Err(ExecError::MemoryLimit { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// `update` of one entity scan; `stoppable`: inside a savepoint, looking at the interrupt
/// between batches even once it wrote.
fn update_scan(
    plan: &UpdatePlan,
    scan: &EntityScan,
    home: Home,
    world: &mut World,
    run: Run<'_>,
    stoppable: bool,
    mut touched: Option<&mut Vec<Entity>>,
) -> Result<Outcome> {
    let at = run.at;
    let select = &plan.select;
    let direct = plan.cannot_fail;
    let mut rng = super::seed(&run);
    let mut pending = Pending::default();
    // Every write of the statement is stamped with one tick, however many batches and
    // threads write it, taken at its first write.
    let mut tick = OneTick::default();
    // What `whole_table_scalars` leaves are tables tracked for changes, for the packs.
    let (mut affected, runs, tracked_only) =
        match whole_table_scalars(plan, scan, home, world, run, &mut tick)? {
            Some((affected, tracked)) => (affected, tracked, true),
            None => {
                let mut affected = 0;
                let (runs, _) = scan_runs(scan, &reader(world, run), home);
                let (big, runs) = tables_for_threads(plan, scan, home, run.budget.split(), world, runs);
                if !big.is_empty() {
                    run.budget.check(at)?;
                    for (table, rows) in big {
                        affected +=
                            update_in_place(plan, scan, world, run, table, &rows, &mut tick, stoppable)?;
                    }
                }
                (affected, runs, false)
            }
        };
    // Small tables (a world of many archetypes) are computed together, a pack of them
    // to a batch, so that evaluating the expressions costs once per pack, not per table.
    // (A statement's runs are most often all of one kind: then they are not copied.)
    let (small, runs): (Runs, Runs) = if !plain_direct(plan, scan, home) {
        (Vec::new(), runs)
    } else if runs.iter().all(|r| is_small_table(&r.1)) {
        (runs, Vec::new())
    } else if !runs.iter().any(|r| is_small_table(&r.1)) {
        (Vec::new(), runs)
    } else {
        runs.into_iter().partition(|r| is_small_table(&r.1))
    };
    // `v = v * 2` over small tables: the value is the same for every row, so each table
    // is multiplied in place, with no pack gathered and no values computed per row.
    let scalars = match small.as_slice() {
        [] => None,
        _ if tracked_only => None,
        _ => scalar_compounds(plan, scan, &Reader::continuing(world, run, rng))?,
    };
    let small = match &scalars {
        Some(scalars) => {
            // Once a direct UPDATE wrote, it runs to its end, unless it can undo.
            if affected == 0 || stoppable {
                run.budget.check(at)?;
            }
            // Small tables are whole tables (`is_small_table`).
            let tables: Vec<TableId> = small.iter().map(|(t, _)| *t).collect();
            let tick = tick.take(world);
            let (written, tracked) =
                lend_scalars(world, &tables, None, &plan.assignments, scalars, tick, at)?;
            affected += written;
            tracked
        }
        None => small,
    };
    for pack in pack_small_tables(&small) {
        // Once a direct UPDATE wrote, it runs to its end, unless it can undo.
        if affected == 0 || stoppable {
            run.budget.check(at)?;
        }
        let pack = &small[pack];
        let read = Reader::continuing(world, run, rng);
        let staged = stage_pack(plan, scan, pack, &read)?;
        rng = read.rng.get();
        if let Some(staged) = staged {
            affected += write_pack(world, pack, staged, &mut tick, at)?;
        }
    }
    for (table, batch_rows) in runs {
        // Once a direct UPDATE wrote, it runs to its end (stopping would keep half of it),
        // unless it can undo.
        if !direct || affected == 0 || stoppable {
            run.budget.check(at)?;
        }
        // Scattered rows are read as one batch and written as picked rows of the span
        // they lie in.
        let span = match &batch_rows {
            TableRows::Run(rows) => rows.clone(),
            TableRows::Picked(picked) => match (picked.first(), picked.last()) {
                (Some(&first), Some(&last)) => first as usize..last as usize + 1,
                _ => continue,
            },
        };
        let read = Reader::continuing(world, run, rng);
        let batch = match world.table(table) {
            Some(t) => table_batch(
                scan,
                world,
                t.get(),
                select.width,
                &batch_rows,
                read.changes_since(),
            ),
            None => return Err(ExecError::internal(at, "a table vanished during UPDATE")),
        };
        let stage = stage_update(plan, table, span.clone(), &batch, &read.eval())?;
        rng = read.rng.get();
        let Some(mut s) = stage else {
            continue;
        };
        if let TableRows::Picked(picked) = &batch_rows {
            let at_row = |i: usize| picked[i] - span.start as u32;
            s.selection = match s.selection {
                Selection::All => Selection::Rows((0..picked.len()).map(at_row).collect()),
                Selection::Rows(selected) => {
                    Selection::Rows(selected.iter().map(|&i| at_row(i as usize)).collect())
                }
                Selection::None => Selection::None,
            };
        }
        affected += match &s.selection {
            Selection::Rows(r) => r.len(),
            _ => s.rows.len(),
        };
        if let Some(touched) = touched.as_deref_mut()
            && let Some(t) = world.table(table)
        {
            let entities = &t.get().entities()[s.rows.clone()];
            match &s.selection {
                Selection::All => touched.extend_from_slice(entities),
                Selection::Rows(r) => touched.extend(r.iter().map(|&i| entities[i as usize])),
                Selection::None => {}
            }
        }
        if direct {
            let tick = tick.take(world);
            write_staged(world, s, tick, at)?;
        } else {
            let bytes: usize = s.columns.iter().map(|(_, c)| c.len() * 16).sum();
            run.budget.charge(bytes, at)?;
            let table_len = world.table(table).map_or(0, |t| t.len());
            pending.push(s, table_len, run.budget, at)?;
        }
    }
    pending.write(world, &mut tick, at)?;
    Ok(Outcome {
        affected,
        ..Default::default()
    })
}

/// An UPDATE whose writes cannot fail (written batch by batch) of an archetype
/// component, reading only archetype fields and ids, none optional: what packs of small
/// tables and writing in place on several threads both read batches of directly.
fn plain_direct(plan: &UpdatePlan, scan: &EntityScan, home: Home) -> bool {
    plan.cannot_fail
        && matches!(home, Home::Dense)
        && !scan.reads_sparse
        && scan.optional.is_empty()
        && scan
            .columns
            .iter()
            .all(|(_, c)| matches!(c, ScanColumn::Field(_) | ScanColumn::Id))
}

/// The one tick all of a statement's writes are stamped with, taken (`World::next_tick`)
/// at its first write: a statement that writes nothing leaves the world's tick as it was.
#[derive(Default)]
struct OneTick(Option<u64>);

impl OneTick {
    fn take(&mut self, world: &mut World) -> u64 {
        *self.0.get_or_insert_with(|| world.next_tick())
    }

    /// The tick `take` gives, without taking it yet.
    fn peek(&self, world: &World) -> u64 {
        self.0.unwrap_or(world.tick() + 1)
    }
}

/// A table's runs, cut into the stretches its threads take (`parallel::split`).
type Stretches = Vec<Vec<Range<usize>>>;

/// Batches to read: a table and which of its rows.
type Runs = Vec<(TableId, TableRows)>;

/// The large tables a plain UPDATE writes in place (`update_in_place`), each with its runs
/// cut into stretches, one per thread, and the runs left to write batch by batch. A table
/// qualifies in an UPDATE whose writes cannot fail, of expressions that read the same on
/// any thread (`parallel::pure`), over archetype fields and ids only, when the fields it
/// writes are not tracked for changes and it is read in whole runs: of enough rows for
/// two threads or more, or, when every assignment is a compound one (`compound.rs`),
/// of more rows than one morsel's (one stretch, on the statement's thread).
fn tables_for_threads(
    plan: &UpdatePlan,
    scan: &EntityScan,
    home: Home,
    split: Split,
    world: &World,
    runs: Runs,
) -> (Vec<(TableId, Stretches)>, Runs) {
    let rows = |group: &[(TableId, TableRows)]| group.iter().map(|(_, r)| r.len()).sum::<usize>();
    let threads =
        |group: &[(TableId, TableRows)]| split.threads > 1 && rows(group) >= split.min_rows.saturating_mul(2);
    // Most statements (small tables, many of them) stop here, having looked at their
    // tables' sizes only, not at their expressions.
    let big_enough = || {
        runs.chunk_by(|a, b| a.0 == b.0)
            .any(|g| threads(g) || rows(g) > MORSEL_ROWS)
    };
    let plain = || {
        plain_direct(plan, scan, home)
            && plan.select.filter.as_ref().is_none_or(parallel::pure)
            && plan.assignments.iter().all(|a| parallel::pure(&a.value))
    };
    if !big_enough() || !plain() {
        return (Vec::new(), runs);
    }
    let compound = compound::compounds(plan, scan).is_some();
    // One morsel's table is written as one batch, which replaces its columns outright:
    // in place gains from two morsels on.
    let enough = |group: &[(TableId, TableRows)]| threads(group) || (compound && rows(group) > MORSEL_ROWS);
    if !runs.chunk_by(|a, b| a.0 == b.0).any(enough) {
        return (Vec::new(), runs);
    }
    let (mut big, mut rest) = (Vec::new(), Vec::new());
    for group in runs.chunk_by(|a, b| a.0 == b.0) {
        let table = group[0].0;
        if !enough(group) {
            rest.extend(group.iter().cloned());
            continue;
        }
        let ranges: Option<Vec<Range<usize>>> = group
            .iter()
            .map(|(_, rows)| match rows {
                TableRows::Run(r) => Some(r.clone()),
                TableRows::Picked(_) => None,
            })
            .collect();
        let untracked = world.table(table).is_some_and(|t| {
            plan.assignments.iter().all(|a| {
                t.column_index(a.field)
                    .is_some_and(|c| t.get().column_marks(c).is_none())
            })
        });
        let stretches = ranges.filter(|_| untracked).and_then(|r| {
            let split = threads(group)
                .then(|| parallel::split(&r, Range::len, split))
                .flatten();
            match split {
                Some(parts) => Some(parts.into_iter().map(<[_]>::to_vec).collect()),
                None => compound.then(|| vec![r]),
            }
        });
        match stretches {
            Some(stretches) => big.push((table, stretches)),
            None => rest.extend(group.iter().cloned()),
        }
    }
    (big, rest)
}

/// Where a column of a batch of a table lent for writing comes from.
#[derive(Clone, Copy)]
enum Source {
    Id,
    /// The `k`th field written.
    Written(usize),
    /// The table's column of this index.
    Read(usize),
    Missing,
}

/// One large table's share of a plain UPDATE (`tables_for_threads`), written in place:
/// the columns it writes are lent (`TableMut::lend_columns`) and cut where the threads'
/// stretches begin, and each thread computes its stretch's batches and writes them into
/// its own rows, batch after batch. Every row's new values depend on that row alone
/// (`parallel::pure`), so the table ends as one thread would leave it. Gives how many rows
/// were updated.
#[allow(clippy::too_many_arguments)]
fn update_in_place(
    plan: &UpdatePlan,
    scan: &EntityScan,
    world: &mut World,
    run: Run<'_>,
    table_id: TableId,
    stretches: &[Vec<Range<usize>>],
    tick: &mut OneTick,
    stoppable: bool,
) -> Result<usize> {
    let at = run.at;
    let budget = run.budget;
    let vanished = || ExecError::internal(at, "a table vanished during UPDATE");
    let fields: Vec<FieldId> = plan.assignments.iter().map(|a| a.field).collect();
    let mut table = world
        .table_mut_at(table_id, tick.peek(world))
        .ok_or_else(vanished)?;
    let sources: Vec<(usize, Source)> = scan
        .columns
        .iter()
        .map(|&(slot, column)| {
            let source = match column {
                ScanColumn::Field(f) => match fields.iter().position(|&w| w == f) {
                    Some(k) => Source::Written(k),
                    None => table.column_index(f).map_or(Source::Missing, Source::Read),
                },
                _ => Source::Id,
            };
            (slot, source)
        })
        .collect();
    let lent = table
        .lend_columns(&fields)
        .map_err(|e| ExecError::storage(at, e))?
        .ok_or_else(|| ExecError::internal(at, "a field tracked for changes was lent to write in place"))?;
    // Each stretch's piece of every written column: the rows from its first run's start
    // to the next stretch's (the first from row 0).
    let mut rest: Vec<ColumnSliceMut<'_>> = lent.write.into_iter().map(ColumnSliceMut::of).collect();
    let mut items = Vec::with_capacity(stretches.len());
    let mut base = 0;
    for (k, stretch) in stretches.iter().enumerate() {
        let end = stretches
            .get(k + 1)
            .and_then(|s| s.first())
            .map_or(usize::MAX, |r| r.start);
        let (mine, next): (Vec<_>, Vec<_>) = rest
            .into_iter()
            .map(|piece| piece.split_at(end.saturating_sub(base)))
            .unzip();
        items.push((stretch.as_slice(), base, mine));
        rest = next;
        base = end;
    }
    let (entities, read, keeps_old) = (lent.entities, &lent.read, lent.keeps_old);
    let (params, clock, width) = (run.params, run.clock, plan.select.width);
    // Every assignment `f = f op e`: each batch computes `e` and writes `f op= e` in
    // place (`compound.rs`); the batch then never reads a written field.
    let compounds = compound::compounds(plan, scan);
    let done = parallel::run(items, at, |(stretch, base, mut pieces)| -> Result<InPlace> {
        let (outer, rng) = (RefCell::default(), Cell::new(0));
        let cx = EvalCtx {
            params,
            outer: &outer,
            rng: &rng,
            subqueries: &parallel::NoSubqueries,
            clock,
        };
        let mut done = InPlace::default();
        // A compound UPDATE's batches are a few morsels long (`COMPOUND_ROWS`).
        let batches = match &compounds {
            Some(_) => join_runs(stretch, COMPOUND_ROWS),
            None => stretch.to_vec(),
        };
        for rows in &batches {
            // Stopped, a stretch keeps what it wrote, with its old values: the statement
            // then fails and its savepoint puts them back.
            if stoppable && budget.check(at).is_err() {
                done.stopped = true;
                break;
            }
            let offset = rows.start - base;
            let batch_of = |pieces| lent_batch(&sources, rows, offset, width, entities, read, pieces);
            // The old values of the rows about to be written, for an open transaction
            // (its undo log names the table's rows).
            let keep_old =
                |done: &mut InPlace, k: usize, piece: &ColumnSliceMut<'_>, picked: Option<&[u32]>, count| {
                    if keeps_old {
                        let old = piece.read(offset, picked, count);
                        let at = picked.map(|p| p.iter().map(|&r| r + rows.start as u32).collect());
                        done.old.push((k, rows.start, at, old));
                    }
                };
            if let Some(compounds) = &compounds {
                // No written field is read: the batch holds the others only.
                let batch = batch_of(None);
                let selection = match &plan.select.filter {
                    Some(f) => select_rows(f, &batch, &cx)?,
                    None => Selection::All,
                };
                let gathered = match &selection {
                    Selection::None => continue,
                    Selection::All => None,
                    Selection::Rows(r) => Some(batch.gather(r)),
                };
                let input = gathered.as_ref().unwrap_or(&batch);
                let picked = match &selection {
                    Selection::Rows(r) => Some(r.as_slice()),
                    _ => None,
                };
                // Every value is computed and checked before any is written: one that
                // fails leaves the batch (and, failing in the first, the stretch) unwritten.
                let mut values = Vec::with_capacity(compounds.len());
                for (op, e) in compounds.iter() {
                    values.push((op, compound::compute(e, input, &cx, at)?));
                }
                for (k, ((op, e), piece)) in values.iter().zip(&mut pieces).enumerate() {
                    keep_old(&mut done, k, piece, picked, input.len);
                    compound::apply(*op, piece, offset, picked, input.len, e, at)?;
                }
                done.wrote(rows, picked);
                continue;
            }
            let staged = stage_update(plan, table_id, rows.clone(), &batch_of(Some(&pieces)), &cx)?;
            let Some(s) = staged else {
                continue;
            };
            let picked = match &s.selection {
                Selection::Rows(r) => Some(r.as_slice()),
                _ => None,
            };
            let count = picked.map_or(rows.len(), <[u32]>::len);
            done.wrote(rows, picked);
            for (k, ((_, values), piece)) in s.columns.into_iter().zip(&mut pieces).enumerate() {
                keep_old(&mut done, k, piece, picked, count);
                if !piece.write(offset, picked, values) {
                    return Err(ExecError::internal(
                        at,
                        "an UPDATE's value is not of its field's type",
                    ));
                }
            }
        }
        Ok(done)
    })?;
    // The stretches' rows in order: the span they wrote, and the old values, for the
    // observers and an open transaction.
    let (mut affected, mut span, mut old) = (0, None::<Range<usize>>, Vec::new());
    let mut stopped = false;
    for part in done {
        let part = part?;
        stopped |= part.stopped;
        affected += part.affected;
        if let Some(s) = part.span {
            span = Some(span.map_or(s.clone(), |t| t.start..s.end));
        }
        old.extend(part.old);
    }
    let Some(span) = span else {
        return match stopped {
            true => Err(ExecError::Interrupted { at }),
            false => Ok(0),
        };
    };
    table
        .written_in_place(&fields, span, old)
        .map_err(|e| ExecError::storage(at, e))?;
    drop(table);
    tick.take(world);
    match stopped {
        true => Err(ExecError::Interrupted { at }),
        false => Ok(affected),
    }
}

/// The most rows a batch of a compound UPDATE written in place takes (`update_in_place`):
/// each of its `f op= e` loops then walks two long streams of memory, which the hardware
/// prefetchers keep ahead of, rather than restarting them every morsel. On the AMD machine
/// of docs/performance.md the one-thread UPDATE of 1M rows went from 1.21-1.37 ms to
/// 0.52-0.56 ms (the columnar door's time); a value that is computed (not read where it
/// lies) takes a vector of this many rows.
const COMPOUND_ROWS: usize = 8 * MORSEL_ROWS;

/// `runs` (ascending, not overlapping) with adjacent ones joined, each at most `most` rows
/// long unless it was already.
fn join_runs(runs: &[Range<usize>], most: usize) -> Vec<Range<usize>> {
    let mut joined: Vec<Range<usize>> = Vec::with_capacity(runs.len());
    for run in runs {
        match joined.last_mut() {
            Some(last) if last.end == run.start && last.len() + run.len() <= most => last.end = run.end,
            _ => joined.push(run.clone()),
        }
    }
    joined
}

/// The batch of rows `rows` of a table lent for writing (`update_in_place`): its ids, the
/// columns it reads, and the written fields' pieces (from `offset` in them) when given
/// (a compound UPDATE's batch reads none).
fn lent_batch<'b>(
    sources: &[(usize, Source)],
    rows: &Range<usize>,
    offset: usize,
    width: usize,
    entities: &[Entity],
    read: &[Option<&'b Column>],
    pieces: Option<&'b [ColumnSliceMut<'_>]>,
) -> Batch<'b> {
    let mut batch = Batch::new(rows.len(), width);
    for &(slot, source) in sources {
        let datum = match source {
            Source::Id => {
                let ids = entities[rows.clone()].iter().map(|&e| Some(e)).collect();
                Datum::Vector(Vector::from_data(Data::Entity(Cow::Owned(ids)), rows.len()))
            }
            Source::Written(k) => match pieces.and_then(|p| p.get(k)) {
                Some(piece) => Datum::Vector(Vector::from_piece(piece, offset..offset + rows.len())),
                None => continue,
            },
            Source::Read(i) => match read.get(i).copied().flatten() {
                Some(c) => Datum::Vector(Vector::from_column(c, rows.clone())),
                None => Datum::Scalar(Value::Null),
            },
            Source::Missing => Datum::Scalar(Value::Null),
        };
        if let Some(s) = batch.slots.get_mut(slot) {
            *s = Some(datum);
        }
    }
    batch
}

/// What one stretch of `update_in_place` wrote: how many rows, the span from the first
/// to the last, and (in a transaction) the old values, per field and batch, with the
/// batch's first row and the table's rows it picked.
#[derive(Default)]
struct InPlace {
    affected: usize,
    span: Option<Range<usize>>,
    old: Vec<(usize, usize, Option<Vec<u32>>, Column)>,
    /// Stopped by an interrupt before its last batch.
    stopped: bool,
}

impl InPlace {
    /// Counts a batch's writes: of its rows `rows`, or of only `picked` of them (counted
    /// from `rows.start`, ascending).
    fn wrote(&mut self, rows: &Range<usize>, picked: Option<&[u32]>) {
        self.affected += picked.map_or(rows.len(), <[u32]>::len);
        let first = rows.start + picked.and_then(|p| p.first()).map_or(0, |&r| r as usize);
        let last = picked
            .and_then(|p| p.last())
            .map_or(rows.end, |&r| rows.start + r as usize + 1);
        self.span = Some(self.span.as_ref().map_or(first..last, |s| s.start..last));
    }
}

/// `v = v * 2` (`scalar_compounds`) over archetype tables the scan reads whole
/// (`reads_whole_tables`), each of one morsel's rows at most and none enough for threads:
/// each table's columns are rewritten in place straight from the scan's table list, with
/// no runs listed, what a world of many small archetypes asks of a system. Gives the rows
/// written and the runs of the tables whose fields are tracked for changes, to write
/// through packs; `None`, having written nothing, when the statement or a table is not of
/// that shape.
fn whole_table_scalars(
    plan: &UpdatePlan,
    scan: &EntityScan,
    home: Home,
    world: &mut World,
    run: Run<'_>,
    tick: &mut OneTick,
) -> Result<Option<(usize, Runs)>> {
    if !plain_direct(plan, scan, home) || !reads_whole_tables(scan, &reader(world, run)) {
        return Ok(None);
    }
    let (split, at) = (run.budget.split(), run.at);
    let fits =
        |len: usize| len <= MORSEL_ROWS && (split.threads < 2 || len < split.min_rows.saturating_mul(2));
    // The cache lends the list without holding the world; for one field, with where
    // its column is in each table, kept between runs.
    let mut cache = run.cache.borrow_mut();
    let (tables, known) = match plan.assignments.as_slice() {
        [a] => cache.columns(world, scan, run.restores, a.field),
        _ => (&*cache.tables(world, scan, run.restores), None),
    };
    let mut rows = 0;
    for &t in tables {
        match world.table(t) {
            Some(t) if fits(t.len()) => rows += t.len(),
            _ => return Ok(None),
        }
    }
    // No row: nothing is evaluated (a system with nothing to do costs the least).
    if rows == 0 {
        return Ok(Some((0, Vec::new())));
    }
    let Some(scalars) = scalar_compounds(plan, scan, &reader(world, run))? else {
        return Ok(None);
    };
    run.budget.check(at)?;
    let tick = tick.take(world);
    lend_scalars(world, tables, known, &plan.assignments, &scalars, tick, at).map(Some)
}

/// `field op= value` for each assignment and its value (`scalar_compounds`) over the whole
/// of each table of `tables`, in place, through one `ColumnLender` (`known`: where the one
/// field's column is in each table, as `TableCache::columns` kept it). Gives the rows
/// written and the runs of the tables whose fields are tracked for changes, which are not
/// written here (packs write them, marking only the rows whose values differ).
fn lend_scalars(
    world: &mut World,
    tables: &[TableId],
    known: Option<&[u32]>,
    assignments: &[Assignment],
    scalars: &[(ArithOp, compound::Scalar)],
    tick: u64,
    at: Location,
) -> Result<(usize, Runs)> {
    let many: Vec<FieldId>;
    let fields: &[FieldId] = match assignments {
        [a] => std::slice::from_ref(&a.field),
        all => {
            many = all.iter().map(|a| a.field).collect();
            &many
        }
    };
    let mut lender = world
        .column_lender(fields, tick)
        .map_err(|e| ExecError::storage(at, e))?;
    let (mut affected, mut tracked, mut failed) = (0, Vec::new(), None);
    for (i, &table) in tables.iter().enumerate() {
        let known = known.and_then(|c| c.get(i)).map(std::slice::from_ref);
        // Every field of a table is checked before any is lent: all are written or none.
        let lent = lender.lend(table, known, |k, mut column| {
            if let (None, Some(&(op, value))) = (&failed, scalars.get(k)) {
                failed = compound::apply_scalar(op, &mut column, value, at).err();
            }
        });
        if let Some(e) = failed.take() {
            return Err(e);
        }
        match lent.map_err(|e| ExecError::storage(at, e))? {
            Lend::Lent { rows } => affected += rows,
            Lend::Tracked => tracked.push(table),
            Lend::NoTable => return Err(ExecError::internal(at, "a table vanished during UPDATE")),
        }
    }
    drop(lender);
    let tracked = tracked
        .into_iter()
        .filter_map(|t| {
            let len = world.table(t)?.len();
            (len > 0).then_some((t, TableRows::Run(0..len)))
        })
        .collect();
    Ok((affected, tracked))
}

/// The value of each compound assignment (`compound.rs`) of `plan`, when every one is the
/// same for every row (`BoundExpr::same_every_row`: `v = v * 2`, `x = x + delta_time()`)
/// and the UPDATE has no WHERE: each is then computed once, here.
fn scalar_compounds(
    plan: &UpdatePlan,
    scan: &EntityScan,
    read: &Reader<'_>,
) -> Result<Option<Vec<(ArithOp, compound::Scalar)>>> {
    if plan.select.filter.is_some() {
        return Ok(None);
    }
    let Some(compounds) = compound::compounds(plan, scan) else {
        return Ok(None);
    };
    if !compounds.iter().all(|(_, e)| e.same_every_row()) {
        return Ok(None);
    }
    let (mut batch, cx) = (None, read.eval());
    let mut scalars = Vec::with_capacity(compounds.len());
    for ((op, e), a) in compounds.iter().zip(&plan.assignments) {
        // A constant (`v * 2`) is its value; anything else is evaluated for one row.
        let value = match &e.kind {
            BoundKind::Const(v) => v.clone(),
            _ => {
                let batch = batch.get_or_insert_with(|| Batch::new(1, plan.select.width));
                compound::once(eval(e, batch, &cx)?)
            }
        };
        scalars.push((op, compound::scalar(value, a.ty, e.at)?));
    }
    Ok(Some(scalars))
}

/// Tables of at most this many rows are packed together (`pack_small_tables`).
const SMALL_TABLE: usize = 256;

/// Whether a scan's run is a whole small table, to be read in a pack with others.
fn is_small_table(rows: &TableRows) -> bool {
    matches!(rows, TableRows::Run(r) if r.start == 0 && r.len() <= SMALL_TABLE)
}

/// The packs `small` (whole small tables, `is_small_table`) is read in: up to
/// `MORSEL_ROWS` rows a pack, each read as one batch (`stage_pack`). Given as ranges of
/// `small`, in order.
fn pack_small_tables(small: &[(TableId, TableRows)]) -> Vec<Range<usize>> {
    let mut packs = Vec::new();
    let (mut start, mut rows) = (0, 0);
    for (i, (_, run)) in small.iter().enumerate() {
        if rows + run.len() > MORSEL_ROWS && i > start {
            packs.push(start..i);
            (start, rows) = (i, 0);
        }
        rows += run.len();
    }
    if start < small.len() {
        packs.push(start..small.len());
    }
    packs
}

/// The rows of a packed run (`pack_small_tables` packs only runs).
fn run_rows(rows: &TableRows, at: Location) -> Result<Range<usize>> {
    match rows {
        TableRows::Run(r) => Ok(r.clone()),
        TableRows::Picked(_) => Err(ExecError::internal(
            at,
            "a pack of small tables holds picked rows",
        )),
    }
}

/// One pack of whole small tables: their rows read into one batch and the new values
/// computed once (`write_pack` writes each table's share); `None` when none is selected.
fn stage_pack(
    plan: &UpdatePlan,
    scan: &EntityScan,
    pack: &[(TableId, TableRows)],
    read: &Reader<'_>,
) -> Result<Option<Staged>> {
    let (at, world) = (read.at, read.world);
    let total: usize = pack.iter().map(|(_, r)| r.len()).sum();
    // Each column read, the pack's tables' rows one after another.
    let mut joined: Vec<(usize, Column)> = Vec::with_capacity(scan.columns.len());
    for &(slot, column) in &scan.columns {
        let mut values: Option<Column> = None;
        for (table, rows) in pack {
            let rows = run_rows(rows, at)?;
            let Some(t) = world.table(*table) else {
                return Err(ExecError::internal(at, "a table vanished during UPDATE"));
            };
            let t = t.get();
            let appended = match column {
                ScanColumn::Id => {
                    match values.get_or_insert_with(|| Column::with_capacity(FieldType::Entity, total)) {
                        Column::Entity(ids) => {
                            ids.extend(t.entities()[rows.clone()].iter().map(|&e| Some(e)));
                            true
                        }
                        _ => false,
                    }
                }
                ScanColumn::Field(f) => match t.column(f) {
                    Some(c) => values
                        .get_or_insert_with(|| Column::with_capacity(c.field_type(), total))
                        .extend_from(c, rows.clone()),
                    None => false,
                },
                _ => false,
            };
            if !appended {
                return Err(ExecError::internal(
                    at,
                    "a packed table lacks a field the UPDATE reads",
                ));
            }
        }
        joined.extend(values.map(|v| (slot, v)));
    }
    let mut batch = Batch::new(total, plan.select.width);
    for (slot, values) in &joined {
        if let Some(s) = batch.slots.get_mut(*slot) {
            *s = Some(Datum::Vector(Vector::from_column(values, 0..total)));
        }
    }
    let Some((first, _)) = pack.first() else {
        return Ok(None);
    };
    stage_update(plan, *first, 0..total, &batch, &read.eval())
}

/// Writes each table's share of a pack's new values (`stage_pack`); gives how many rows.
fn write_pack(
    world: &mut World,
    pack: &[(TableId, TableRows)],
    staged: Staged,
    tick: &mut OneTick,
    at: Location,
) -> Result<usize> {
    // Each table's share: its rows of the pack, and of the values computed, those of its
    // selected rows.
    let mut affected = 0;
    let (mut start, mut value) = (0usize, 0usize);
    // The selected rows are in ascending order: each table's are the next run of them.
    let mut next_picked = 0usize;
    for (table, rows) in pack {
        let rows = run_rows(rows, at)?;
        let end = start + rows.len();
        let (selection, count) = match &staged.selection {
            Selection::Rows(picked) => {
                let rest = picked.get(next_picked..).unwrap_or(&[]);
                let n = rest.partition_point(|&r| (r as usize) < end);
                let mine: Vec<u32> = rest[..n].iter().map(|&r| r - start as u32).collect();
                next_picked += n;
                (Selection::Rows(mine), n)
            }
            _ => (Selection::All, rows.len()),
        };
        start = end;
        if count == 0 {
            continue;
        }
        let tick = tick.take(world);
        let Some(mut t) = world.table_mut_at(*table, tick) else {
            return Err(ExecError::internal(at, "a table vanished during UPDATE"));
        };
        let picked = match &selection {
            Selection::Rows(picked) => Some(picked.as_slice()),
            _ => None,
        };
        for (field, values) in &staged.columns {
            let share = Values::Part(values, value..value + count);
            t.write_values(*field, rows.clone(), picked, share)
                .map_err(|e| ExecError::storage(at, e))?;
        }
        value += count;
        affected += count;
    }
    Ok(affected)
}

/// The batches an UPDATE computed but has not written yet, in row order. A batch that
/// continues the open one (the same table, the next rows, every row of both selected) is
/// joined onto it, so that batches which together rewrite a whole table replace its
/// columns outright (the old columns become the undo record) rather than being copied in
/// while the old values are copied out to the log.
#[derive(Default)]
struct Pending {
    closed: Vec<Staged>,
    open: Option<Staged>,
}

impl Pending {
    /// Adds `s`, the next batch of a table of `table_len` rows. The first join makes room
    /// at once for every row left in the table, so that the columns grow without copies;
    /// that room is charged to `budget` (16 bytes a value, as staged values are) first.
    fn push(&mut self, s: Staged, table_len: usize, budget: &super::Budget<'_>, at: Location) -> Result<()> {
        if let Some(open) = &mut self.open
            && Self::continues(open, &s)
        {
            for ((_, joined), (_, mut next)) in open.columns.iter_mut().zip(s.columns) {
                let room = table_len.saturating_sub(open.rows.start + joined.len());
                if joined.capacity() < joined.len() + room {
                    budget.charge(room.saturating_mul(16), at)?;
                    joined.reserve(room);
                }
                joined.append(&mut next);
            }
            open.rows.end = s.rows.end;
            return Ok(());
        }
        if let Some(earlier) = self.open.replace(s) {
            self.closed.push(earlier);
        }
        Ok(())
    }

    /// Whether `next` takes up where `open` ends, selecting every row, with values of the
    /// same fields and types.
    fn continues(open: &Staged, next: &Staged) -> bool {
        open.table == next.table
            && open.rows.end == next.rows.start
            && matches!(open.selection, Selection::All)
            && matches!(next.selection, Selection::All)
            && open.columns.len() == next.columns.len()
            && open.columns.iter().zip(&next.columns).all(|((f, a), (g, b))| {
                f == g && a.field_type() == b.field_type() && a.len() == open.rows.len()
            })
            && next.columns.iter().all(|(_, c)| c.len() == next.rows.len())
    }

    /// Writes every batch, in order.
    fn write(self, world: &mut World, tick: &mut OneTick, at: Location) -> Result<()> {
        for s in self.closed.into_iter().chain(self.open) {
            let tick = tick.take(world);
            write_staged(world, s, tick, at)?;
        }
        Ok(())
    }
}

/// The new values of one batch's selected rows; `None` when WHERE selects none.
fn stage_update(
    plan: &UpdatePlan,
    table: TableId,
    rows: Range<usize>,
    batch: &Batch<'_>,
    cx: &EvalCtx<'_>,
) -> Result<Option<Staged>> {
    let selection = match &plan.select.filter {
        Some(f) => select_rows(f, batch, cx)?,
        None => Selection::All,
    };
    let gathered = match &selection {
        Selection::None => return Ok(None),
        Selection::All => None,
        Selection::Rows(r) => Some(batch.gather(r)),
    };
    let input = gathered.as_ref().unwrap_or(batch);
    let mut columns = Vec::with_capacity(plan.assignments.len());
    for a in &plan.assignments {
        let v = eval(&a.value, input, cx)?.into_vector(a.value.ty, input.len);
        columns.push((a.field, to_column(v, a.ty, &a.name, a.value.at)?));
    }
    Ok(Some(Staged {
        table,
        rows,
        selection,
        columns,
    }))
}

fn write_staged(world: &mut World, s: Staged, tick: u64, at: Location) -> Result<()> {
    let Some(mut table) = world.table_mut_at(s.table, tick) else {
        return Err(ExecError::internal(at, "a table vanished during UPDATE"));
    };
    for (field, values) in s.columns {
        write_column(&mut table, field, values, s.rows.clone(), &s.selection)
            .map_err(|e| ExecError::storage(at, e))?;
    }
    Ok(())
}

fn write_column(
    table: &mut crate::storage::TableMut<'_>,
    field: FieldId,
    values: Column,
    rows: Range<usize>,
    selection: &Selection,
) -> std::result::Result<(), crate::storage::StorageError> {
    match selection {
        Selection::All => table.write_values(field, rows, None, Values::Own(values)),
        // Writing only the picked rows keeps a transaction's undo log to what is written.
        Selection::Rows(picked) => table.write_values(field, rows, Some(picked), Values::Own(values)),
        Selection::None => Ok(()),
    }
}

/// UPDATE … FROM with a join to other entities: rows are joined first, then each target
/// entity's new values are set one by one.
fn update_joined(
    plan: &UpdatePlan,
    world: &mut World,
    run: Run<'_>,
    touched: Option<&mut Vec<Entity>>,
) -> Result<Outcome> {
    let at = run.at;
    let mut writes: Vec<(Entity, Vec<Value>)> = Vec::new();
    {
        let read = reader(world, run);
        let cx = read.eval();
        let select = &plan.select;
        let joined = join_all_kept(select, &read)?;
        let selection = match &select.filter {
            Some(f) => select_rows(f, &joined, &cx)?,
            None => Selection::All,
        };
        let rows = match &selection {
            Selection::None => return Ok(Outcome::default()),
            Selection::All => None,
            Selection::Rows(r) => Some(joined.gather(r)),
        };
        let input = rows.as_ref().unwrap_or(&joined);
        let Some(id_slot) = plan.id_slot else {
            return Err(ExecError::internal(at, "a joined UPDATE without the target's id"));
        };
        let id = BoundExpr::slot(id_slot, DataType::Entity, at);
        let ids = eval(&id, input, &cx)?.into_vector(DataType::Entity, input.len);
        let mut columns = Vec::new();
        for a in &plan.assignments {
            let v = eval(&a.value, input, &cx)?.into_vector(a.value.ty, input.len);
            columns.push(to_column(v, a.ty, &a.name, a.value.at)?);
        }
        let mut seen = HashSet::new();
        for row in 0..input.len {
            let Value::Entity(e) = ids.get(row) else { continue };
            if !seen.insert(e) {
                return Err(ExecError::constraint(
                    at,
                    format!("UPDATE would write entity {e} twice: the join matched it more than once"),
                ));
            }
            writes.push((
                e,
                columns
                    .iter()
                    .map(|c| c.get(row).unwrap_or(Value::Null))
                    .collect(),
            ));
        }
    }
    let affected = writes.len();
    if let Some(touched) = touched {
        touched.extend(writes.iter().map(|(e, _)| *e));
    }
    for (e, values) in writes {
        for (a, v) in plan.assignments.iter().zip(values) {
            world
                .set(e, a.field, v)
                .map_err(|err| ExecError::storage(at, err))?;
        }
    }
    Ok(Outcome {
        affected,
        ..Default::default()
    })
}

/// A write with RETURNING (`Plan::Returning`): `query`'s rows for the entities `write`
/// wrote, read before the write for DELETE and DESPAWN (the values they remove), after it
/// for the others. A RETURNING that fails after the write undoes it: the statement is one.
pub fn returning(write: &Plan, query: &QueryPlan, world: &mut World, run: Run<'_>) -> Result<Outcome> {
    let at = run.at;
    let (affected, rows) = match write {
        Plan::Delete { component, ids } => {
            let ids = delete_targets(ids, world, run)?;
            let rows = read_written(query, ids.clone(), world, run)?;
            (delete_of(*component, ids, world, run)?.affected, rows)
        }
        Plan::Despawn { ids } => {
            let unique = despawn_targets(ids, world, run)?;
            let rows = read_written(query, unique.clone(), world, run)?;
            (despawn_of(unique, world, run)?.affected, rows)
        }
        Plan::Spawn(_) | Plan::Insert(_) | Plan::Update(_) => {
            let savepoint = world.savepoint();
            let written = (|| {
                let mut touched = Vec::new();
                let affected = match write {
                    Plan::Spawn(p) => {
                        let outcome = spawn(p, world, run)?;
                        touched = ids_of(&outcome.rows, 0, at)?.into_iter().flatten().collect();
                        outcome.affected
                    }
                    Plan::Insert(p) => insert(p, world, run, Some(&mut touched))?.affected,
                    Plan::Update(p) => update(p, world, run, Some(&mut touched))?.affected,
                    _ => 0,
                };
                Ok((affected, read_written(query, touched, world, run)?))
            })();
            match written {
                Ok(done) => {
                    world.release(savepoint);
                    done
                }
                Err(e) => {
                    world.rollback_to(savepoint);
                    return Err(e);
                }
            }
        }
        _ => {
            return Err(ExecError::internal(
                at,
                "RETURNING after a statement that writes no rows",
            ));
        }
    };
    Ok(Outcome {
        affected,
        ..Outcome::rows(query.columns.clone(), rows)
    })
}

/// `query`'s rows with its one entity scan reading only `ids`.
fn read_written(query: &QueryPlan, ids: Vec<Entity>, world: &World, run: Run<'_>) -> Result<Chunk> {
    let SetPlan::Select(select) = &query.body else {
        return Err(ExecError::internal(run.at, "RETURNING's query is not one select"));
    };
    let Some(RelationSource::Entities(scan)) = select.relations.first().map(|r| &r.source) else {
        return Err(ExecError::internal(run.at, "RETURNING's query reads no entities"));
    };
    let read = reader(world, run);
    read.with_ids(scan, ids, || run_query(query, &read))
}
