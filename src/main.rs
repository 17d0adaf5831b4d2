//! The `ecsql` binary. The REPL and the script runner are the next piece of work; until
//! then this prints what the build contains and exits, so `cargo run --release` is honest.

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    println!("ecsql {version}");
    println!("This build contains the storage kernel and the language, usable from Rust");
    println!("through ecsql::Database and ecsql::Connection (see the README).");
    println!("The REPL and script files are not built yet.");
}
