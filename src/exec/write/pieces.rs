//! Large writes a piece at a time: how many rows a SPAWN, DESPAWN, INSERT or DELETE
//! writes between two looks at the interrupt (`WRITE_PIECE`), the pieces an attach or
//! detach is cut into (table by table, so that they write what one call would), and what
//! undoing them keeps, charged to the statement's memory before the first piece: a large
//! write either can be stopped and undone, or runs to its end.

use super::values::Result;
use crate::exec::Run;
use crate::exec::error::{ExecError, ExecErrorKind};
use crate::storage::{Column, ComponentId, Entity, TableId, World};

/// Runs `write` for pieces `0..pieces` in turn: each piece is written alike (its own
/// ticks), whether or not it can be undone, so that a journal's replay stamps the same
/// ticks. `stoppable`: inside a savepoint, the interrupt looked at between pieces, and an
/// error undoes the pieces written.
pub(super) fn write_in_pieces(
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
pub(super) fn is_sparse(world: &World, component: ComponentId) -> bool {
    world
        .component(component)
        .is_ok_and(|d| d.sparse_table().is_some())
}

/// The pieces an attach or detach of `entities` (live) is written in, as positions in
/// `entities`: table by table in table order, as `World::insert_batch` and `remove_batch`
/// take them, so that the pieces write what one call would. A table whose every entity
/// is among them is one piece (its columns move whole); the others' entities go
/// `WRITE_PIECE` at a time, in the order given.
pub(super) fn table_pieces(world: &World, entities: &[Entity], run: Run<'_>) -> Result<Vec<Vec<u32>>> {
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

/// A batch's columns, component by component, as `World::spawn_columns` takes them.
type Components = Vec<(ComponentId, Vec<Column>)>;

/// How many rows a large SPAWN, DESPAWN, INSERT or DELETE writes between two looks at the
/// interrupt.
pub(super) const WRITE_PIECE: usize = 1 << 16;

/// `components`' columns (`len` rows) cut into pieces of `rows` rows (the last may have
/// fewer), in order, each with its row count; the values are moved, not copied.
pub(super) fn in_pieces(mut components: Components, len: usize, rows: usize) -> Vec<(usize, Components)> {
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

/// Whether an attach (`attach`) or detach of `component` from `entities`, written in
/// `pieces` (positions in `entities`, each within one table, from `table_pieces`) or, when
/// there are none, in one write, keeps what undoes it and so can be stopped. What is kept
/// (inside a transaction, or in the savepoint of pieces) is counted as the statement's
/// memory: inside a transaction past the limit the statement fails before it begins;
/// outside one, its pieces are written without a savepoint and it runs to its end. A
/// whole table's columns move whole and count nothing. (Added up a piece at a time, the
/// interrupt looked at between pieces.)
pub(super) fn keep_undo(
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

/// Whether a charge for what a write keeps to undo itself with fitted in the memory
/// limit; an interrupt is an error still.
pub(super) fn fits(charged: Result<()>) -> Result<bool> {
    match charged {
        Ok(()) => Ok(true),
        Err(ExecError {
            kind: ExecErrorKind::MemoryLimit { .. },
            ..
        }) => Ok(false),
        Err(e) => Err(e),
    }
}
