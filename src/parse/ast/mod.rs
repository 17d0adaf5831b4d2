//! ecsql's own syntax tree: what the parser hands to the binder. Nothing here refers to
//! `sqlparser`; every node carries the `Location` it started at so later layers can point
//! at it. `Display` prints a node back as ecsql text that parses to the same tree.
//!
//! The tree is in `expr.rs` (names, literals, expressions and the queries they hold) and
//! `statement.rs` (statements and their parts); `kind.rs` says what a statement is (its
//! verb, whether it only reads, whether a system may run it); `print.rs` and
//! `print_statement.rs` print it back.

mod expr;
mod kind;
mod print;
mod print_statement;
mod statement;

pub use expr::*;
pub use statement::*;
