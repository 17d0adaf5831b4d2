//! The shells: the interactive prompt and the script runner of the `ecsql` binary. They are
//! thin: every statement goes through `ecsql::Connection`, exactly as an embedding program's
//! would.
//!
//! - `cli.rs`: options, what to run, the exit code.
//! - `session.rs`: running script text statement by statement, printing results and errors.
//! - `commands.rs`: the dot-commands. `dump.rs`: `.schema` and `.dump`.
//! - `format.rs`: the output modes. `interactive.rs`: line editing, history, completion.

mod cli;
mod commands;
mod dump;
mod format;
mod interactive;
mod session;

pub use cli::main;
