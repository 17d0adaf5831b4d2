//! The shells: the interactive prompt and the script runner of the `ecsql` binary. They are
//! thin: every statement goes through `ecsql::Connection`, exactly as an embedding program's
//! would.
//!
//! - `cli.rs`: options, what to run, the exit code.
//! - `session.rs`: running script text statement by statement, printing results and errors.
//! - `commands.rs`: the dot-commands. `dump.rs`: `.schema` and `.dump`.
//! - `format.rs`: the output modes. `interactive.rs`: line editing, history, completion.
//! - `live.rs`: the subscriptions a session keeps open, and their batches printed.

mod cli;
mod commands;
mod dump;
mod format;
mod interactive;
mod live;
#[cfg(feature = "server")]
mod serve;
mod session;

pub use cli::main;

/// Writes to standard error, never panicking: a closed stderr (`2>&-`, a pipe whose
/// reader left) loses the text, as it does for other command-line tools.
pub(crate) fn say_err(text: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

/// Writes to standard output, never panicking.
pub(crate) fn say(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
