//! The `ecsql` binary. The REPL and script runner arrive with the language layer; until
//! then this prints what the build contains and exits, so `cargo run --release` is honest.

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    println!("ecsql {version}");
    println!("This build contains the storage kernel (ecsql::World), usable from Rust.");
    println!("The SQL language, the REPL and script files are not built yet.");
}
