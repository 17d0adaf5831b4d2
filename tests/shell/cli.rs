//! The `ecsql` binary run as a user runs it, comparing what it prints and its exit code:
//! - `tests/cli/*.case`: options, input, expected stdout, stderr and exit code;
//! - `examples/*.sql`: each example program against `examples/*.out` (stdout and stderr
//!   interleaved, as a terminal shows them);
//! - `docs/tutorial.md`: every ```ecsql block, in order in one session, against the
//!   ```text block after it.
//!
//! `ECSQL_BLESS=1` rewrites the expected text from what the binary printed: read the diff
//! before committing it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn bless() -> bool {
    std::env::var_os("ECSQL_BLESS").is_some()
}

struct Output {
    stdout: String,
    stderr: String,
    code: i32,
}

/// Runs the binary in the project root with `args`, `stdin` piped in.
fn run(args: &[String], stdin: &str, merge: bool) -> Output {
    run_in(&root(), args, stdin, merge)
}

/// Runs the binary in folder `dir` with `args`, `stdin` piped in.
fn run_in(dir: &Path, args: &[String], stdin: &str, merge: bool) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ecsql"));
    command.args(args).current_dir(dir).stdin(Stdio::piped());
    let merged = if merge {
        // One pipe for both streams keeps their order, as in a terminal.
        let (reader, writer) = std::io::pipe().unwrap();
        command.stdout(writer.try_clone().unwrap()).stderr(writer);
        Some(reader)
    } else {
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        None
    };
    let mut child = command.spawn().expect("run ecsql");
    drop(command);
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    let mut stdout = String::new();
    let mut stderr = String::new();
    match merged {
        Some(mut reader) => {
            reader.read_to_string(&mut stdout).unwrap();
        }
        None => {
            child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
            child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        }
    }
    let code = child.wait().unwrap().code().unwrap_or(-1);
    Output { stdout, stderr, code }
}

/// Splits an `args:` line like a shell would for plain words and 'single quoted' ones.
fn split_args(line: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut current: Option<String> = None;
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                current.get_or_insert_with(String::new);
            }
            c if c.is_whitespace() && !quoted => args.extend(current.take()),
            c => current.get_or_insert_with(String::new).push(c),
        }
    }
    args.extend(current);
    args
}

/// A case file: `args: …` and `exit: N` lines, then `--- input`, `--- stdout` and
/// `--- stderr` sections. `FILE` in the arguments is the input written to a file;
/// otherwise the input goes to standard input. `SCRATCH`, in the arguments or the input,
/// is an empty folder of the case's own; `CASES` in the output is the folder FILE is in.
struct Case {
    args: String,
    exit: i32,
    input: String,
    stdout: String,
    stderr: String,
}

impl Case {
    fn parse(text: &str) -> Case {
        let mut case = Case {
            args: String::new(),
            exit: 0,
            input: String::new(),
            stdout: String::new(),
            stderr: String::new(),
        };
        let mut section: Option<&str> = None;
        for line in text.split_inclusive('\n') {
            if let Some(name) = line.strip_prefix("--- ") {
                section = Some(name.trim());
                continue;
            }
            match section {
                None => {
                    if let Some(a) = line.strip_prefix("args:") {
                        case.args = a.trim().to_owned();
                    } else if let Some(e) = line.strip_prefix("exit:") {
                        case.exit = e.trim().parse().expect("exit: a number");
                    }
                }
                Some("input") => case.input.push_str(line),
                Some("stdout") => case.stdout.push_str(line),
                Some("stderr") => case.stderr.push_str(line),
                Some(other) => panic!("unknown section {other}"),
            }
        }
        case
    }

    fn render(&self) -> String {
        format!(
            "args: {}\nexit: {}\n--- input\n{}--- stdout\n{}--- stderr\n{}",
            self.args, self.exit, self.input, self.stdout, self.stderr
        )
    }
}

fn files(dir: &str, extension: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    files.sort();
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root()).unwrap().display().to_string()
}

#[test]
fn command_line_cases() {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-cases");
    std::fs::create_dir_all(&scratch).unwrap();
    let mut failures = Vec::new();
    let cases = files("tests/cli", "case");
    assert!(cases.len() >= 10, "the cases are missing");
    for path in cases {
        let text = std::fs::read_to_string(&path).unwrap();
        let case = Case::parse(&text);
        let input_file = scratch.join(path.file_stem().unwrap()).with_extension("sql");
        // SCRATCH: a folder of the case's own, empty when it starts.
        let folder = scratch.join(path.file_stem().unwrap());
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        let folder = folder.display().to_string();
        std::fs::write(&input_file, case.input.replace("SCRATCH", &folder)).unwrap();
        let uses_file = case.args.contains("FILE");
        let args: Vec<String> = split_args(&case.args)
            .into_iter()
            .map(|a| {
                a.replace("FILE", &input_file.display().to_string())
                    .replace("SCRATCH", &folder)
            })
            .collect();
        let stdin = case.input.replace("SCRATCH", &folder);
        let out = run(&args, if uses_file { "" } else { &stdin }, false);
        // The input file's place differs per machine: the expected text says FILE.
        // The cases' own folder (where a relative `.read` in FILE looks first) is CASES.
        let placeholders = |text: &str| {
            text.replace(&input_file.display().to_string(), "FILE")
                .replace(&folder, "SCRATCH")
                .replace(&scratch.display().to_string(), "CASES")
        };
        let stderr = placeholders(&out.stderr);
        let stdout = placeholders(&out.stdout);
        let actual = Case {
            args: case.args.clone(),
            exit: out.code,
            input: case.input.clone(),
            stdout,
            stderr,
        };
        if actual.render() != case.render() {
            if bless() {
                std::fs::write(&path, actual.render()).unwrap();
            }
            failures.push(format!(
                "{}:\n--- expected\n{}\n--- actual\n{}",
                relative(&path),
                case.render(),
                actual.render()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn examples_print_what_they_say() {
    let mut failures = Vec::new();
    let examples = files("examples", "sql");
    assert!(examples.len() >= 4, "the examples are missing");
    for path in examples {
        let name = relative(&path);
        let out = run(std::slice::from_ref(&name), "", true);
        let expected_path = path.with_extension("out");
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        // An example that shows an error on purpose says so by printing it.
        let shows_error = expected.lines().any(|l| l.starts_with(&format!("{name}:")));
        if out.stdout != expected || out.code != i32::from(shows_error) {
            if bless() {
                std::fs::write(&expected_path, &out.stdout).unwrap();
            }
            failures.push(format!(
                "{name} (exit {}):\n--- expected\n{expected}\n--- actual\n{}",
                out.code, out.stdout
            ));
        }
        // From any other folder, named by its full path, it prints the same.
        let elsewhere = std::env::temp_dir();
        let full = path.to_string_lossy().into_owned();
        let away = run_in(&elsewhere, std::slice::from_ref(&full), "", true);
        let away_stdout = away.stdout.replace(&full, &name);
        if away_stdout != out.stdout || away.code != out.code {
            failures.push(format!(
                "{name} run from {} (exit {}):\n--- from the project\n{}\n--- from there\n{away_stdout}",
                elsewhere.display(),
                away.code,
                out.stdout
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The ```ecsql blocks of a markdown file, each with the ```text block that follows it.
fn tutorial_blocks(markdown: &str) -> Vec<(String, Option<String>)> {
    let mut blocks: Vec<(String, Option<String>)> = Vec::new();
    let mut lines = markdown.lines();
    while let Some(line) = lines.next() {
        let fence = line.trim();
        if fence != "```ecsql" && fence != "```text" {
            continue;
        }
        let body: String = lines
            .by_ref()
            .take_while(|l| l.trim() != "```")
            .map(|l| format!("{l}\n"))
            .collect();
        if fence == "```ecsql" {
            blocks.push((body, None));
        } else if let Some(last) = blocks.last_mut().filter(|b| b.1.is_none()) {
            last.1 = Some(body);
        }
    }
    blocks
}

#[test]
fn the_tutorial_runs_as_written() {
    let path = root().join("docs/tutorial.md");
    let markdown = std::fs::read_to_string(&path).unwrap();
    let blocks = tutorial_blocks(&markdown);
    assert!(blocks.len() >= 10, "the tutorial's blocks are missing");
    // Each block is one `-c`, so errors read as at the prompt, and a mark follows each.
    const MARK: &str = "@@ next block @@";
    let args: Vec<String> = blocks
        .iter()
        .flat_map(|(input, _)| {
            [
                "-c".to_owned(),
                input.clone(),
                "-c".to_owned(),
                format!(".print {MARK}"),
            ]
        })
        .collect();
    let out = run(&args, "", true);
    // Markdown holds no CR: CSV's CRLF line ends are compared as LF.
    let out = Output {
        stdout: out.stdout.replace("\r\n", "\n"),
        ..out
    };
    let outputs: Vec<&str> = out.stdout.split(&format!("{MARK}\n")).collect();
    let mut failures = Vec::new();
    for (i, (input, expected)) in blocks.iter().enumerate() {
        let actual = outputs.get(i).copied().unwrap_or("");
        let expected = expected.as_deref().unwrap_or("");
        if actual != expected {
            failures.push(format!(
                "block {}:\n{input}--- expected\n{expected}--- actual\n{actual}",
                i + 1
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_dump_reads_back_into_the_same_database() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dump");
    std::fs::create_dir_all(&dir).unwrap();
    let (first, second) = (dir.join("first.sql"), dir.join("second.sql"));
    let build = "
        CREATE COMPONENT Body (x REAL, y FLOAT DEFAULT 2.5, n INT, alive BOOL);
        CREATE COMPONENT \"Order\" (\"limit\" INT);
        CREATE COMPONENT Name (value TEXT);
        CREATE COMPONENT ChildOf (parent ENTITY);
        CREATE TAG Player;
        SPAWN Body(x => random() * 1e-3, y => random() * 1e300, n => i * 7919, alive => i % 3 = 0)
            FROM range(2500) AS r(i);
        SPAWN Name('it''s \"quoted\"; and
        .quit on a line'), ChildOf(3), Player;
        SPAWN ChildOf(NULL), \"Order\"(-5);
        SPAWN Body(CAST('inf' AS REAL), CAST('-inf' AS FLOAT), 0, FALSE);
        DESPAWN FROM Body WHERE Body.n % 5 = 0;
        SPAWN Body(-0.0, 1, 2, TRUE), Player FROM range(300);
        DELETE FROM Body WHERE id = 7;
        CREATE COMPONENT Odd (x FLOAT DEFAULT CAST('NaN' AS FLOAT), y REAL DEFAULT CAST('-inf' AS REAL));
        SPAWN AT CAST('9223372036854875808' AS ENTITY) Odd, ChildOf(CAST('9223372036854875808' AS ENTITY));
        SPAWN Odd, ChildOf(CAST('9223372036854875808' AS ENTITY));
        SPAWN AT CAST('18446744069414784320' AS ENTITY) Player;
        DESPAWN CAST('18446744069414784320' AS ENTITY);
    ";
    let query = "SELECT id, Body.x, Body.y, Body.n, Body.alive, Name.value, ChildOf.parent, \
                 has(Player) AS player, has(\"Order\") AS o, Odd.x AS ox, Odd.y AS oy FROM entities \
                 LEFT JOIN Body LEFT JOIN Name LEFT JOIN ChildOf LEFT JOIN Odd ORDER BY id";
    let c = |text: String| ["-c".to_owned(), text];
    // What the world says of ids after the query: the next ids a SPAWN hands out, and that a
    // despawned id (slot 1, despawned and still free) and a retired one (its generation
    // could not go higher) are refused.
    let probes = [
        "SPAWN Player",
        "SPAWN Player",
        "SPAWN AT 1 Player",
        "SPAWN AT CAST('18446744069414784320' AS ENTITY) Player",
    ]
    .map(|p| c(p.to_owned()))
    .concat();
    let original = run(
        &[
            c(build.to_owned()).to_vec(),
            c(format!(".dump {}", first.display())).to_vec(),
            c(query.to_owned()).to_vec(),
            probes.clone(),
        ]
        .concat(),
        "",
        false,
    );
    let refused = "that id was despawned, and ids are never reused";
    assert_eq!(original.code, 1, "{}", original.stderr);
    assert_eq!(original.stderr.matches(refused).count(), 2, "{}", original.stderr);
    let restored = run(
        &[
            c(format!(".read {}", first.display())).to_vec(),
            c(format!(".dump {}", second.display())).to_vec(),
            c(query.to_owned()).to_vec(),
            probes,
        ]
        .concat(),
        "",
        false,
    );
    assert_eq!((restored.code, &restored.stderr), (1, &original.stderr));
    let dump = std::fs::read_to_string(&first).unwrap();
    assert!(dump.contains("SPAWN AT"), "{dump}");
    assert!(dump.contains("(42949"), "recycled ids keep their generation");
    assert_eq!(dump, std::fs::read_to_string(&second).unwrap());
    let rows = |out: &str| out.lines().filter(|l| l.starts_with('|')).count();
    assert!(rows(&original.stdout) > 2000, "{}", original.stdout);
    // The restored database answers the query and the probes exactly as the original did
    // (the SPAWN messages of the build differ, so compare from the query's table on).
    let table = |out: &str| out[out.find("+-").unwrap()..].to_owned();
    assert_eq!(table(&original.stdout), table(&restored.stdout));
}

#[test]
fn a_script_that_is_not_utf8_names_its_first_bad_byte_and_runs_nothing() {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-utf8");
    std::fs::create_dir_all(&scratch).unwrap();
    let file = scratch.join("latin1.sql");
    std::fs::write(
        &file,
        b"CREATE COMPONENT C (name TEXT);\nSPAWN C('ok');\nSPAWN C('caf\xe9');\n",
    )
    .unwrap();
    let name = file.display().to_string();
    let out = run(std::slice::from_ref(&name), "", false);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(out.stdout, "", "nothing of the file runs");
    assert_eq!(
        out.stderr,
        format!("ecsql: {name}:3:13: not UTF-8 (byte 0xe9), so nothing in it was run; save it as UTF-8\n")
    );
    // .read says the same, where the .read is, and the session goes on.
    let out = run(&[], &format!(".read {name}\nSELECT 1 AS one;\n"), false);
    assert!(
        out.stderr
            .contains(&format!("{name}:3:13: not UTF-8 (byte 0xe9)")),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("| one |"), "{}", out.stdout);
}

#[test]
fn a_dump_replaces_its_file_whole_never_in_place() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dump-replace");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("save.sql");
    std::fs::write(&file, "-- the previous dump\n").unwrap();
    // A reader that opened the previous dump keeps reading it whole: the new one is a new
    // file renamed over the name, not the old file truncated and rewritten.
    let mut previous = std::fs::File::open(&file).unwrap();
    let name = file.display().to_string();
    let out = run(
        &[
            "-c".to_owned(),
            "CREATE COMPONENT A (v INT); SPAWN A(1);".to_owned(),
            "-c".to_owned(),
            format!(".dump {name}"),
        ],
        "",
        false,
    );
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    let mut old = String::new();
    previous.read_to_string(&mut old).unwrap();
    assert_eq!(old, "-- the previous dump\n");
    let new = std::fs::read_to_string(&file).unwrap();
    assert!(new.contains("CREATE COMPONENT A"), "{new}");
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["save.sql"], "no temporary file is left behind");
    // A dump that cannot be put in place (the name is a folder) says so and leaves the
    // folder and no temporary file.
    std::fs::create_dir(dir.join("taken")).unwrap();
    let taken = dir.join("taken").display().to_string();
    let out = run(&["-c".to_owned(), format!(".dump {taken}")], "", false);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(&format!("cannot write {taken}")),
        "{}",
        out.stderr
    );
    assert!(dir.join("taken").is_dir());
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        2,
        "save.sql and taken only"
    );
}

/// The shell run with `args`, sent SIGINT after `after`: its output, and whether `kill`
/// reached it (it may have ended first).
fn interrupted(args: &[&std::ffi::OsStr], after: std::time::Duration) -> (std::process::Output, bool) {
    let child = Command::new(env!("CARGO_BIN_EXE_ecsql"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    (child.wait_with_output().unwrap(), killed)
}

#[test]
fn sigint_stops_a_script_run_with_exit_130_and_says_so() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-sigint");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("slow.sql");
    std::fs::write(
        &script,
        "CREATE COMPONENT C (x INT);\nSELECT count(*) FROM range(2147483647) AS r(i) WHERE i % 7 = 3;\nSELECT 'after';\n",
    )
    .unwrap();
    let (out, killed) = interrupted(&[script.as_os_str()], std::time::Duration::from_millis(500));
    assert!(killed);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "stderr: {stderr}");
    assert!(stderr.contains("slow.sql:2:1: interrupted"), "stderr: {stderr}");
    assert!(stderr.contains("nothing after it ran"), "stderr: {stderr}");
    assert!(!stdout.contains("after"), "stdout: {stdout}");
}

/// Ctrl-C that stops a script (a file, or `-c` text) inside a transaction it began: the
/// transaction is rolled back, and the shell says so after what the statement left, so
/// that no message says something is kept that the database then does not hold.
#[test]
fn sigint_inside_a_scripts_transaction_says_it_was_rolled_back() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-sigint-transaction");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let text = "CREATE COMPONENT C (x INT);\nBEGIN;\nSPAWN C(42);\nSELECT count(*) FROM range(2147483647) AS r(i) WHERE i % 7 = 3;\nCOMMIT;\nSELECT 'after';\n";
    let script = dir.join("tx.sql");
    std::fs::write(&script, text).unwrap();
    for (k, as_file) in [true, false].into_iter().enumerate() {
        let db = dir.join(format!("w{k}.db"));
        let mut args: Vec<&std::ffi::OsStr> = vec!["--db".as_ref(), db.as_os_str()];
        match as_file {
            true => args.push(script.as_os_str()),
            false => args.extend::<[&std::ffi::OsStr; 2]>(["-c".as_ref(), text.as_ref()]),
        }
        let (out, killed) = interrupted(&args, std::time::Duration::from_millis(700));
        assert!(killed);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(130), "stderr: {stderr}");
        assert!(
            stderr.contains(
                "changed nothing; then the transaction it ran in was rolled back, so nothing since its BEGIN is kept; nothing after it ran"
            ),
            "stderr: {stderr}"
        );
        assert!(!stdout.contains("after"), "stdout: {stdout}");
        let check = Command::new(env!("CARGO_BIN_EXE_ecsql"))
            .arg("--db")
            .arg(&db)
            .args(["-c", ".mode list", "-c", "SELECT count(*) FROM C"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&check.stdout).trim(), "count(*)\n0");
    }
}

/// Ctrl-C that comes while a long UPDATE which cannot fail is writing undoes what it
/// wrote (language.md), and the shell says it changed nothing; had it finished, the shell
/// must say it kept its changes. What it says must match what the file database holds
/// afterwards, whichever moment the interrupt lands at.
#[test]
fn sigint_during_an_update_written_as_it_goes_says_what_was_kept() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-sigint-update");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("update.sql");
    let terms: Vec<String> = (0..300).map(|k| format!("(T.x * {k}.5 + T.x * 0.25)")).collect();
    std::fs::write(
        &script,
        format!(
            "CREATE COMPONENT T (x FLOAT, y FLOAT);\nSPAWN T(i * 0.001, 0.0) FROM range(1000000) AS r(i);\nUPDATE T SET y = 1.0 + {};\nSELECT 'after';\n",
            terms.join(" + ")
        ),
    )
    .unwrap();
    let db = dir.join("w.db");
    let args = ["--db".as_ref(), db.as_os_str(), script.as_os_str()];
    let (out, _) = interrupted(&args, std::time::Duration::from_millis(1500));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let check = Command::new(env!("CARGO_BIN_EXE_ecsql"))
        .arg("--db")
        .arg(&db)
        .args([
            "-c",
            ".mode list",
            "-c",
            ".headers off",
            "-c",
            "SELECT count(*) FROM T WHERE T.y = 0",
        ])
        .output()
        .unwrap();
    let unchanged = String::from_utf8_lossy(&check.stdout).trim().to_owned();
    // The interrupt lands in the UPDATE (about 5 s in a debug build; the SPAWN before it
    // takes a third of a second) unless the machine is far slower or faster.
    assert!(stdout.contains("spawned"), "stdout: {stdout}, stderr: {stderr}");
    if out.status.code() == Some(130) {
        if stdout.contains("rows updated") {
            // It ran to its end: every row written and kept, and the shell says so.
            assert_eq!(unchanged, "0", "stderr: {stderr}");
            assert!(stderr.contains("keeps its changes"), "stderr: {stderr}");
        } else {
            // Stopped (what it wrote undone): nothing kept, and the shell says so.
            assert_eq!(unchanged, "1000000", "stderr: {stderr}");
            assert!(stderr.contains("changed nothing"), "stderr: {stderr}");
        }
        assert!(!stdout.contains("after"), "stdout: {stdout}");
    }
}

/// A database of every value kind written with `.dump` is the same `.dump` again after
/// each way of keeping it: a file database reopened (its journal run again), the same
/// after a CHECKPOINT (its snapshot read), a save slot LOADed, and the dump `.read`.
#[test]
fn dumps_match_after_every_way_of_keeping_a_database() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dump-round-trips");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).display().to_string();
    let script = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).unwrap();
        path(name)
    };
    let ecsql = |args: &[String]| {
        let out = run_in(&dir, args, "", false);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    };
    let db = path("game.ecsql");
    let build = script(
        "build.sql",
        &format!(
            "CREATE COMPONENT Position (x REAL, y REAL);
CREATE COMPONENT Stats (f FLOAT, r REAL, n INT, b BOOL, t TEXT, target ENTITY);
CREATE COMPONENT Marked (by ENTITY) WITH (storage = sparse);
CREATE TAG Empty;
CREATE EVENT Hit (who ENTITY, dmg INT);
CREATE INDEX by_n ON Stats (n);
CREATE SYSTEM hits AS UPDATE Position SET x = Position.x + (SELECT count(*) FROM Hit);
SPAWN Position(x => i, y => -0.0) FROM range(30) AS r(i);
SPAWN Stats(CAST('NaN' AS FLOAT), CAST('-inf' AS REAL), -9223372036854775808, TRUE, 'it''s naïve 🦀', NULL);
SPAWN Stats(CAST('inf' AS FLOAT), -0.0, 9223372036854775807, FALSE, '', 3), Empty;
INSERT INTO Marked (id, by) VALUES (2, 31), (4, NULL);
DESPAWN 3, 5, 7;
SPAWN Position(1, 1);
SPAWN Position(2, 2);
DELETE FROM Empty;
INSERT INTO Hit (who, dmg) VALUES (2, 5), (NULL, 1);
TICK 2 WITH dt = 0.25;
INSERT INTO Hit (who, dmg) VALUES (4, 7);
.dump {}
.save {}
",
            path("a.sql"),
            path("slot.ecsql")
        ),
    );
    ecsql(&["--db".into(), db.clone(), build]);
    let dump_to = |name: &str| script(&format!("dump-{name}.sql"), &format!(".dump {}\n", path(name)));
    // Reopened: the journal runs again.
    ecsql(&["--db".into(), db.clone(), dump_to("b.sql")]);
    // Checkpointed, then reopened from the snapshot alone.
    let checkpoint = script("checkpoint.sql", "CHECKPOINT;\n");
    ecsql(&["--db".into(), db.clone(), checkpoint]);
    ecsql(&["--db".into(), db.clone(), dump_to("c.sql")]);
    // The save slot loaded into a database in memory.
    let load = script(
        "load.sql",
        &format!(".load {}\n.dump {}\n", path("slot.ecsql"), path("d.sql")),
    );
    ecsql(&[load]);
    // The dump read into a database in memory.
    let read = script(
        "read.sql",
        &format!(".read {}\n.dump {}\n", path("a.sql"), path("e.sql")),
    );
    ecsql(&[read]);
    let a = std::fs::read_to_string(path("a.sql")).unwrap();
    assert!(
        a.contains("NaN") && a.contains("Marked") && a.contains("CREATE SYSTEM hits"),
        "{a}"
    );
    for other in ["b.sql", "c.sql", "d.sql", "e.sql"] {
        let b = std::fs::read_to_string(path(other)).unwrap();
        assert_eq!(a, b, "{other} differs from the first dump");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Output to a closed pipe (`ecsql f.sql 2>&1 >/dev/null | head -1`, `… | head -2`) ends
/// the run quietly instead of panicking (exit 101).
#[test]
fn closed_pipes_end_the_run_quietly() {
    for closed in ["stderr", "stdout"] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ecsql"));
        command
            .args(["-c", "SELECT i FROM range(100000) AS r(i); SELECT nope;"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let mut kept = String::new();
        if closed == "stderr" {
            drop(err);
            out.read_to_string(&mut kept).unwrap();
        } else {
            drop(out);
            err.read_to_string(&mut kept).unwrap();
        }
        let code = child.wait().unwrap().code();
        assert!(!kept.contains("panicked"), "{closed}: {kept}");
        assert!(matches!(code, Some(0 | 1)), "{closed} closed: exit {code:?}");
    }
}

/// A database one `ecsql` holds open is a database to every other: another process's SAVE,
/// COPY, `.dump`, `.once` and `.output` onto its files, by any name, are refused and write
/// nothing; its open through a link is refused by the same lock; the owner's commits are
/// all there when it closes.
#[test]
fn another_process_cannot_write_or_open_a_database_one_holds_open() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("held-open");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink("game.ecsql", dir.join("link.ecsql")).unwrap();
    let mut owner = Command::new(env!("CARGO_BIN_EXE_ecsql"))
        .args(["--db", "game.ecsql"])
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Open once its journal is: the owner made both files and holds them.
    let started = std::time::Instant::now();
    while !dir.join("game.ecsql-journal").exists() || !dir.join("game.ecsql").exists() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the owner never opened"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let before: Vec<(String, Vec<u8>)> = ["game.ecsql", "game.ecsql-journal"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read(dir.join(f)).unwrap()))
        .collect();
    for target in [
        "game.ecsql",
        "game.ecsql-journal",
        "link.ecsql",
        "./sub/../game.ecsql",
    ] {
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let out = run_in(
            &dir,
            &[
                "-c".into(),
                "CREATE COMPONENT C (n INT); SPAWN C(9);".into(),
                "-c".into(),
                format!("SAVE TO '{target}'"),
                "-c".into(),
                format!("COPY (SELECT n FROM C) TO '{target}'"),
                "-c".into(),
                format!(".dump {target}"),
                "-c".into(),
                format!(".once {target}"),
                "-c".into(),
                format!(".output {target}"),
            ],
            "",
            false,
        );
        assert_eq!(out.code, 1, "{}", out.stderr);
        assert_eq!(
            out.stderr.matches("another process has open").count(),
            5,
            "to {target}: {}",
            out.stderr
        );
    }
    let out = run_in(&dir, &["--db".into(), "link.ecsql".into()], "SELECT 1;", false);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("link.ecsql is open in another process"),
        "{}",
        out.stderr
    );
    for (name, bytes) in &before {
        assert_eq!(
            &std::fs::read(dir.join(name)).unwrap(),
            bytes,
            "{name} was written"
        );
    }
    let mut input = owner.stdin.take().unwrap();
    input
        .write_all(b"CREATE COMPONENT C (n INT);\nSPAWN C(1);\nSPAWN C(2);\n")
        .unwrap();
    drop(input);
    let done = owner.wait_with_output().unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let out = run_in(
        &dir,
        &["--db".into(), "link.ecsql".into()],
        "SELECT sum(n) AS s FROM C;",
        false,
    );
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert!(out.stdout.contains("| 3 |"), "{}", out.stdout);
    assert!(!dir.join("link.ecsql-journal").exists());
}

/// Ctrl-C during a TICK of many ticks: the ticks it ran stay (each is whole), the one
/// running is undone, and the error and the shell's last line both say so with the same
/// numbers, which a reopened database bears out.
#[test]
fn sigint_during_a_tick_of_many_ticks_says_which_ticks_were_kept() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-sigint-ticks");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("ticks.ecsql");
    let setup = "CREATE COMPONENT Count (n INT); SPAWN Count(0);
                 CREATE COMPONENT P (x FLOAT); SPAWN P(i) FROM range(50) AS r(i);
                 CREATE SYSTEM count AS UPDATE Count SET n = Count.n + 1;
                 CREATE SYSTEM drift AS UPDATE P SET x = P.x + 1;";
    let args = [
        "--db".as_ref(),
        db.as_os_str(),
        "-c".as_ref(),
        setup.as_ref(),
        "-c".as_ref(),
        "TICK 1000000000".as_ref(),
        "-c".as_ref(),
        "SELECT 'after'".as_ref(),
    ];
    let (out, killed) = interrupted(&args, std::time::Duration::from_millis(1500));
    assert!(killed);
    assert_eq!(out.status.code(), Some(130));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let kept = |text: &str| -> Option<(u64, String)> {
        let at = text.find("TICK kept the ")? + "TICK kept the ".len();
        let n: String = text[at..].chars().take_while(char::is_ascii_digit).collect();
        let end = text[at..].find(['\n', ';']).map_or(text.len(), |e| at + e);
        Some((n.parse().ok()?, text[at..end].to_owned()))
    };
    let (n, error) = kept(stderr.lines().find(|l| l.starts_with("Error:")).unwrap_or("")).expect(&stderr);
    let (_, last) = kept(stderr.lines().last().unwrap_or("")).expect(&stderr);
    assert_eq!(error, last, "the error and the last line differ:\n{stderr}");
    assert!(
        error.contains(&format!("(the clock is at tick {n})"))
            && (error.contains(&format!("undid tick {}, which was running", n + 1))
                || error.contains("began no other")),
        "{stderr}"
    );
    assert!(
        !stderr.contains("changed nothing") && !stderr.contains("as it was before"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("after"));
    let check = Command::new(env!("CARGO_BIN_EXE_ecsql"))
        .arg("--db")
        .arg(&db)
        .args([
            "-c",
            ".mode list",
            "-c",
            ".headers off",
            "-c",
            "SELECT tick(), n FROM Count",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&check.stdout).trim(), format!("{n}|{n}"));
}

/// What a child prints, read on a thread of its own so that a test waiting for a word
/// fails after 20 s rather than blocking on a read for ever.
struct Printed {
    chunks: std::sync::mpsc::Receiver<String>,
    seen: String,
}

impl Printed {
    fn of(mut out: impl Read + Send + 'static) -> Printed {
        let (send, chunks) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0
                    || send
                        .send(String::from_utf8_lossy(&buf[..n]).into_owned())
                        .is_err()
                {
                    break;
                }
            }
        });
        Printed {
            chunks,
            seen: String::new(),
        }
    }

    /// Waits until the child has printed `wanted` (since the last word waited for).
    fn wait_for(&mut self, wanted: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !self.seen.contains(wanted) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.chunks.recv_timeout(left) {
                Ok(chunk) => self.seen.push_str(&chunk),
                Err(_) => panic!("no {wanted:?} in {:?}", self.seen),
            }
        }
        let at = self.seen.find(wanted).unwrap_or(0) + wanted.len();
        self.seen.drain(..at);
    }

    /// Everything else it prints, until it ends.
    fn rest(self) -> String {
        self.seen + &self.chunks.iter().collect::<String>()
    }
}

/// A program that drives ecsql through a pipe gets each answer as soon as its statement
/// is in, as sqlite3 gives it: standard input is run as it arrives, not once it ends.
/// Errors name their line in the whole input, and a line that is not UTF-8 stops the
/// script there, after what came before it ran.
#[test]
fn standard_input_runs_each_statement_as_it_arrives() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ecsql"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = Printed::of(child.stdout.take().unwrap());
    let mut send = |text: &[u8]| {
        input.write_all(text).unwrap();
        input.flush().unwrap();
    };
    send(b"CREATE COMPONENT C (n INT);\nSPAWN C(41);\n");
    output.wait_for("spawned 1 entity");
    // A statement over two lines runs once its second line is in; two on one line both.
    send(b"SELECT n + 1 AS answer\n");
    send(b"FROM C; SELECT 'second' AS s;\n");
    output.wait_for("42");
    output.wait_for("second");
    send(b".mode csv\nSELECT nope FROM C;\nSELECT 'still' AS s;\n");
    output.wait_for("still");
    send(b"SELECT 'bad \xff line';\nSELECT 'never';\n");
    drop(input);
    let rest = output.rest();
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
    assert!(!rest.contains("never"), "{rest}");
    assert!(stderr.contains("<stdin>:6:8: unknown column nope"), "{stderr}");
    assert!(stderr.contains("<stdin>:8:13: not UTF-8 (byte 0xff)"), "{stderr}");
}

/// A text longer than 65,535 characters (which Rust's formatting cannot pad to) prints in
/// every mode that pads, whole.
#[test]
fn a_text_past_65535_characters_prints_in_every_mode() {
    for mode in ["table", "box", "markdown", "column", "line"] {
        let out = Command::new(env!("CARGO_BIN_EXE_ecsql"))
            .args([
                "-c",
                &format!(".mode {mode}"),
                "-c",
                "SELECT repeat('x', 70000) AS t, 1 AS n",
            ])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains(&"x".repeat(70000)), "{mode}");
    }
}
