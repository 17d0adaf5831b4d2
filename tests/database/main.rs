//! The tests that reach ecsql through its library API, in one binary: linking the crate
//! once instead of once a file is most of what a cold `cargo test` builds.
//!
//! Each module is one subject (its own `//!` says what it asserts). Run one with
//! `cargo test --test database MODULE::` (e.g. `cargo test --test database slt::`).
//! The tests that measure time (`waits`) or count allocations (`kept_memory`) stay
//! binaries of their own, where nothing else runs beside them.

#[path = "../common/mod.rs"]
mod common;

mod api;
mod atomicity;
mod beside;
mod changes;
mod changes_model;
mod compound;
mod copy;
mod differential;
mod durability;
mod events_model;
mod file_database;
mod filter_index;
mod function_index;
mod fuzz;
mod grammar_examples;
mod index_differential;
mod join_paths;
mod limits;
mod live;
mod parallel;
mod plan;
mod robustness;
mod save_load;
mod slt;
mod sort_model;
mod sqlite_differential;
mod sqlite_math;
mod sqlite_recursive;
mod sqlite_window;
mod systems;
mod tick_conflicts;
#[cfg(feature = "derive")]
mod typed;
#[cfg(feature = "derive")]
mod typed_query;
