//! The writing statements. Each computes everything it will write — and checks it — before
//! it changes the world, so a statement that fails leaves the database as it was. (An
//! UPDATE that provably cannot fail writes batch by batch instead: nothing can go wrong
//! after its first write; over a large table it writes in place, a stretch of rows per
//! thread, `update_in_place`.)
//!
//! A file for each statement: `spawn.rs` (SPAWN), `insert.rs` (INSERT into a component or
//! an event), `remove.rs` (DELETE and DESPAWN), `update/` (UPDATE) and `returning.rs`
//! (RETURNING). What they share: `values.rs` (the read before the write, and its values
//! as storage columns) and `pieces.rs` (large writes a piece at a time, and what undoing
//! them keeps).

mod insert;
mod pieces;
mod remove;
mod returning;
mod spawn;
mod update;
mod values;

pub use insert::{emit, insert};
pub use remove::{delete, despawn};
pub use returning::returning;
pub use spawn::spawn;
pub use update::{
    Beside, StagedUpdate, is_compound, short_for_beside, stage_whole_update, stamp_beside,
    stamp_beside_shared, threads_for_explain, update, update_beside, write_staged_update,
};
pub(super) use values::full_columns;
