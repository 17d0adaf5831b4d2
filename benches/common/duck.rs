//! DuckDB beside ecsql in a criterion run: its Python package (`pip install duckdb`)
//! driven by `benches/duckdb_driver.py` over a pipe. The time a bench records is
//! DuckDB's own, from the call to the last row fetched, so the pipe is not counted.
//! Without python3 or the package, `Duck::start` says why and the bench measures the
//! others alone.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

pub struct Duck {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Duck {
    /// The driver, with `setup` run (the bench's rows made), or why there is none. `bench`
    /// names the bench in what it prints.
    pub fn start(bench: &str, setup: &[String]) -> Result<Duck, String> {
        let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/duckdb_driver.py");
        let mut child = Command::new("python3")
            .arg(driver)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("python3 does not start: {e}"))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("python3's pipes are missing".into());
        };
        let mut duck = Duck {
            child,
            input,
            output: BufReader::new(output),
        };
        let hello = duck.line()?;
        if !hello.starts_with("ready") {
            return Err(hello);
        }
        eprintln!("{bench} bench: {}", &hello["ready ".len()..]);
        for sql in setup {
            duck.ask(&format!("sql {sql}"))?;
        }
        Ok(duck)
    }

    fn line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        self.output
            .read_line(&mut line)
            .map_err(|e| format!("the driver's answer is unreadable: {e}"))?;
        if line.is_empty() {
            return Err("the driver ended".into());
        }
        Ok(line.trim_end().to_owned())
    }

    /// Sends one command (`threads N`, `sql TEXT`, `time TEXT`): its answer, or DuckDB's
    /// error.
    pub fn ask(&mut self, command: &str) -> Result<String, String> {
        writeln!(self.input, "{command}").map_err(|e| format!("the driver does not listen: {e}"))?;
        let answer = self.line()?;
        match answer.strip_prefix("error ") {
            Some(e) => Err(format!("DuckDB: {e}")),
            None => Ok(answer),
        }
    }

    /// Runs `sql`: its rows and DuckDB's time.
    pub fn time(&mut self, sql: &str) -> (u64, Duration) {
        let answer = self.ask(&format!("time {sql}")).expect("DuckDB runs the query");
        let mut parts = answer.split(' ').skip(1).map(|p| p.parse::<u64>().unwrap_or(0));
        let (rows, nanos) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        (rows, Duration::from_nanos(nanos))
    }

    /// Runs `sql` and gives its first row's first value as the driver prints it.
    pub fn first(&mut self, sql: &str) -> String {
        self.ask(&format!("first {sql}")).expect("DuckDB runs the query")["ok ".len()..].to_owned()
    }

    /// Times `sql` on every core (`threads` 0) or on `threads`, for `iters` runs.
    pub fn runs(&mut self, sql: &str, threads: usize, iters: u64) -> Duration {
        let set = match threads {
            0 => "sql RESET threads".to_owned(),
            n => format!("threads {n}"),
        };
        self.ask(&set).expect("DuckDB takes the setting");
        (0..iters).map(|_| self.time(sql).1).sum()
    }
}

impl Drop for Duck {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
