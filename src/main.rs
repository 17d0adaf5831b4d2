//! The `ecsql` binary: the prompt and the script runner, in `repl/`.

mod repl;

fn main() {
    std::process::exit(repl::main());
}
