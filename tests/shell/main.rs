//! The tests that run the `ecsql` binary: CLI case files (`cli`) and the interactive
//! shell on a real pty (`repl`), in one binary. Run one with
//! `cargo test --test shell cli::`.

mod cli;
mod repl;
