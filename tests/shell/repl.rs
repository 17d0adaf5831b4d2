//! The interactive prompt, driven through a real pseudo-terminal: multi-line statements,
//! tab completion from the live catalog, an error with its caret, Ctrl-C abandoning the
//! statement being typed, `.quit`, Ctrl-D, history kept across two sessions (and kept as
//! it is typed, through a kill), file names completed after `.read`, and lines typed while
//! a statement runs, each run after it.

use std::path::Path;
use std::process::Command;

use rexpect::session::{PtySession, spawn_command};

const TIMEOUT_MS: u64 = 20_000;
const UP_ARROW: &str = "\x1b[A";

fn start(history: &Path) -> PtySession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ecsql"));
    command.env("ECSQL_HISTORY", history).env("TERM", "xterm");
    let mut session = spawn_command(command, Some(TIMEOUT_MS)).expect("start ecsql in a pty");
    session.exp_string("ecsql> ").expect("the first prompt");
    session
}

/// The shell in a pty on the file database `db`, its history in `dir`.
fn start_db(dir: &Path, db: &Path) -> PtySession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ecsql"));
    command
        .env("ECSQL_HISTORY", dir.join("history"))
        .env("TERM", "xterm")
        .arg("--db")
        .arg(db);
    spawn_command(command, Some(TIMEOUT_MS)).expect("start ecsql in a pty")
}

#[test]
fn a_session_at_the_prompt() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repl-session");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let history = dir.join("history");

    let mut p = start(&history);
    p.send_line("CREATE COMPONENT Position (x REAL, height REAL);")
        .unwrap();
    p.exp_string("ecsql> ").unwrap();

    // `help`, `quit` or `exit` alone is a dot-command typed without its dot.
    p.send_line("quit").unwrap();
    p.exp_string("The shell's commands begin with a dot: .help lists them, .quit leaves.")
        .unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_line("help;").unwrap();
    p.exp_string(".help lists them").unwrap();
    p.exp_string("ecsql> ").unwrap();

    // A statement over two lines: the continuation prompt, then the result.
    p.send_line("SPAWN Position(1,").unwrap();
    p.exp_string("...> ").unwrap();
    p.send_line("2);").unwrap();
    p.exp_string("spawned 1 entity: 1").unwrap();
    p.exp_string("ecsql> ").unwrap();

    // Completion of a keyword (in the case it was started in), a component and a field.
    p.send("sel\t").unwrap();
    p.flush().unwrap();
    p.exp_string("select").unwrap();
    p.send(" Position.h\t").unwrap();
    p.flush().unwrap();
    p.exp_string("Position.height").unwrap();
    // Typed in another case, after FROM: only the component fills the word in (the
    // statement then runs, as the rows below show).
    p.send(" FROM po\t").unwrap();
    p.flush().unwrap();
    p.exp_string("Position").unwrap();
    p.send_line(";").unwrap();
    p.exp_string("2.0").unwrap();
    p.exp_string("(1 row)").unwrap();
    p.exp_string("ecsql> ").unwrap();

    // An error prints the message and a caret under the column, and the prompt goes on.
    p.send_line("SELECT nope FROM Position;").unwrap();
    p.exp_string("Error: unknown column nope").unwrap();
    p.exp_string("SELECT nope FROM Position;").unwrap();
    p.exp_regex(r"\n {7}\^").unwrap();
    p.exp_string("ecsql> ").unwrap();

    // With `.timer on` the time follows the statement's output, its error as its rows.
    p.send_line(".timer on").unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_line("SELECT nope FROM Position;").unwrap();
    p.exp_string("Error: unknown column nope").unwrap();
    p.exp_regex(r"\n {7}\^").unwrap();
    p.exp_string("Run Time: ").unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_line("SELECT 6 * 6 AS square;").unwrap();
    p.exp_string("36").unwrap();
    p.exp_string("Run Time: ").unwrap();
    p.exp_string("ecsql> ").unwrap();
    // `.once` takes the results only: the time goes to the terminal.
    let once = dir.join("once.sql");
    for line in [".mode list", ".headers off"] {
        p.send_line(line).unwrap();
        p.exp_string("ecsql> ").unwrap();
    }
    p.send_line(&format!(".once {}", once.display())).unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_line("SELECT 'SELECT 5 * 5 AS product;';").unwrap();
    p.exp_string("Run Time: ").unwrap();
    p.exp_string("ecsql> ").unwrap();
    assert_eq!(
        std::fs::read_to_string(&once).expect(".once wrote its file"),
        "SELECT 5 * 5 AS product;\n"
    );
    for line in [".mode table", ".headers on", ".timer off"] {
        p.send_line(line).unwrap();
        p.exp_string("ecsql> ").unwrap();
    }

    // A `;` inside a string does not end the statement.
    p.send_line("SELECT 'a;b' AS s").unwrap();
    p.exp_string("...> ").unwrap();
    p.send_line(";").unwrap();
    p.exp_string("a;b").unwrap();
    p.exp_string("ecsql> ").unwrap();

    // Ctrl-C abandons the half-typed statement: what follows runs alone.
    p.send_line("SELECT 1 +").unwrap();
    p.exp_string("...> ").unwrap();
    p.send_control('c').unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_line("SELECT 6 * 7 AS answer;").unwrap();
    p.exp_string("42").unwrap();
    p.exp_string("ecsql> ").unwrap();

    p.send_line(".quit").unwrap();
    p.exp_eof().unwrap();

    let saved = std::fs::read_to_string(&history).expect("the history file is written");
    assert!(saved.contains("SELECT 6 * 7 AS answer;"), "history: {saved}");

    // The second session starts with the first one's history: two steps up is the answer.
    let mut p = start(&history);
    p.send(&UP_ARROW.repeat(2)).unwrap();
    p.flush().unwrap();
    p.send_line("").unwrap();
    p.exp_string("42").unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn ctrl_c_stops_a_running_statement_and_a_script_and_the_world_stays() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repl-interrupt");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("slow.sql");
    std::fs::write(
        &script,
        "SPAWN C(100);\nSELECT count(*) FROM range(2147483647) AS r(i) WHERE i % 7 = 3;\nSPAWN C(200);\n",
    )
    .unwrap();

    let mut p = start(&dir.join("history"));
    p.send_line("CREATE COMPONENT C (x INT); SPAWN C(1);").unwrap();
    p.exp_string("spawned 1 entity").unwrap();
    p.exp_string("ecsql> ").unwrap();

    // A statement that would run for minutes: Ctrl-C stops it and the prompt comes back.
    p.send_line("SELECT count(*) FROM range(2147483647) AS r(i) WHERE i % 7 = 3;")
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    p.send_control('c').unwrap();
    p.exp_string("Error: interrupted: the statement was stopped and changed nothing")
        .unwrap();
    // Said once: the statement's error says what the interrupt left.
    let after = p.exp_string("ecsql> ").unwrap();
    assert!(!after.contains("nterrupted"), "said twice: {after:?}");

    // A script: the statement before the slow one ran, the one after did not.
    p.send_line(&format!(".read {}", script.display())).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    p.send_control('c').unwrap();
    p.exp_string("Interrupted: the rest of the script was not run.")
        .unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_line("SELECT C.x FROM C ORDER BY 1;").unwrap();
    p.exp_regex(r"1\s[^\n]*\n[^\n]*100\s").unwrap();
    p.exp_string("(2 rows)").unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_line(".quit").unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn lines_typed_while_a_statement_runs_all_run_after_it() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repl-type-ahead");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut p = start(&dir.join("history"));
    // The slow statement and two lines arrive in one write, so the prompt reads all three at
    // once however fast the build (the lines past the first must wait in its buffer); two
    // more are typed while the count runs (in a debug build it takes over a second).
    p.send("SELECT count(*) AS slow FROM range(30000000) AS r(i) WHERE i % 7 = 3;\nSELECT 'first' AS a;\nSELECT 'second' AS b;\n")
        .unwrap();
    p.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    for line in ["SELECT 'third' AS c;", "SELECT 'fourth' AS d;"] {
        p.send_line(line).unwrap();
    }
    p.exp_string("4285714").unwrap();
    for word in ["first", "second", "third", "fourth"] {
        p.exp_string(&format!("| {word}")).unwrap();
    }
    p.exp_string("ecsql> ").unwrap();
    p.send_line(".quit").unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn a_system_typed_over_several_lines_is_one_statement_until_its_end() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repl-system");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut p = start(&dir.join("history"));
    p.send_line("CREATE COMPONENT C (x INT); SPAWN C(1);").unwrap();
    p.exp_string("spawned 1 entity: 1").unwrap();
    p.exp_string("ecsql> ").unwrap();
    // Each `;` inside BEGIN … END keeps the continuation prompt; END; runs the statement.
    p.send_line("CREATE SYSTEM grow AS BEGIN").unwrap();
    p.exp_string("...> ").unwrap();
    p.send_line("  UPDATE C SET x = C.x * 2;").unwrap();
    p.exp_string("...> ").unwrap();
    p.send_line("  UPDATE C SET x = CASE WHEN C.x > 100 THEN 0 ELSE C.x + 1 END;")
        .unwrap();
    p.exp_string("...> ").unwrap();
    p.send_line("END;").unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_line("TICK 3;").unwrap();
    p.exp_string("ran 3 ticks").unwrap();
    p.exp_string("ecsql> ").unwrap();
    // 1 → 3 → 7 → 15.
    p.send_line("SELECT x, tick() AS t FROM C;").unwrap();
    p.exp_regex(r"\|\s+15 \|\s+3 \|").unwrap();
    p.exp_string("ecsql> ").unwrap();
    // The new words complete too.
    p.send("SELECT delta_t\t").unwrap();
    p.flush().unwrap();
    p.exp_string("delta_time").unwrap();
    p.send_line("() AS dt;").unwrap();
    p.exp_string("0.016666666666666666").unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_line("SHOW SYSTEMS;").unwrap();
    p.exp_string("grow").unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_line(".quit").unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn history_is_kept_as_it_is_typed_and_survives_a_kill() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repl-history-kill");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let history = dir.join("history");

    let mut p = start(&history);
    p.send_line("SELECT 'kept before the kill' AS said;").unwrap();
    p.exp_string("(1 row)").unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_line(".mode line").unwrap();
    p.exp_string("ecsql> ").unwrap();
    // Killed, not quit: nothing runs at exit.
    p.process_mut().kill(rexpect::process::Signal::SIGKILL).unwrap();
    let kept = std::fs::read_to_string(&history).unwrap();
    assert!(kept.contains("SELECT 'kept before the kill' AS said;"), "{kept}");
    assert!(kept.contains(".mode line"), "{kept}");

    // The next session has it: up arrow brings the last line back.
    let mut p = start(&history);
    p.send(UP_ARROW).unwrap();
    p.flush().unwrap();
    p.exp_string(".mode line").unwrap();
    p.send_line("").unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_line(".quit").unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn file_names_complete_after_read() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repl-complete-file");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ten_frames.sql"), "SELECT 'ten frames ran' AS said;\n").unwrap();
    let mut p = start(&dir.join("history"));
    p.send(&format!(".read {}/ten_f\t", dir.display())).unwrap();
    p.flush().unwrap();
    p.exp_string("ten_frames.sql").unwrap();
    p.send_line("").unwrap();
    p.exp_string("ten frames ran").unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_line(".quit").unwrap();
    p.exp_eof().unwrap();
}

/// Opening a database whose journal takes over a second to run shows how far it has come,
/// and Ctrl-C stops it: the shell exits 130 and the files are as they were.
#[test]
fn opening_a_long_journal_shows_its_progress_and_ctrl_c_stops_it() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repl-open-progress");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("long.ecsql");
    let journal = dir.join("long.ecsql-journal");
    {
        let conn = ecsql::Database::open(&db).unwrap().connect();
        conn.execute_batch(
            "PRAGMA synchronous = off;
             CREATE COMPONENT P (x FLOAT); SPAWN P(i) FROM range(20000) AS r(i);
             CREATE SYSTEM drift AS UPDATE P SET x = P.x + 1;",
        )
        .unwrap();
        // Ticks (as many again each time) until a copy of the files takes over three
        // seconds to open here (in a debug or a release build, on a fast or a loaded
        // machine): the shell shows its progress after one, so its open may run three
        // times as fast as this one (a load that came and went) and still show it.
        let copy = dir.join("probe.ecsql");
        for ticks in (0..24).map(|k| 1000 << k) {
            conn.execute(&format!("TICK {ticks}"), ()).unwrap();
            std::fs::copy(&db, &copy).unwrap();
            std::fs::copy(&journal, dir.join("probe.ecsql-journal")).unwrap();
            let began = std::time::Instant::now();
            drop(ecsql::Database::open(&copy).unwrap());
            if began.elapsed() > std::time::Duration::from_secs(3) {
                break;
            }
        }
    }
    let before = (std::fs::read(&db).unwrap(), std::fs::read(&journal).unwrap());
    let mut p = start_db(&dir, &db);
    p.exp_regex(
        r"opening .*long\.ecsql: ran [0-9.]+ of its journal's [0-9.]+ MB \([0-9]+%\) \(Ctrl-C stops\)",
    )
    .unwrap();
    p.send_control('c').unwrap();
    p.exp_string("was stopped after running").unwrap();
    p.exp_string("nothing was changed").unwrap();
    p.exp_eof().unwrap();
    match p.process().wait().unwrap() {
        rexpect::process::WaitStatus::Exited(_, code) => assert_eq!(code, 130),
        other => panic!("the shell ended as {other:?}"),
    }
    assert_eq!(
        (std::fs::read(&db).unwrap(), std::fs::read(&journal).unwrap()),
        before,
        "a stopped open changed the files"
    );
}

#[test]
fn an_open_transaction_shows_in_the_prompt_and_quitting_says_it_is_rolled_back() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repl-open-transaction");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("game.ecsql");
    let mut p = start_db(&dir, &db);
    p.exp_string("ecsql> ").unwrap();
    p.send_line("CREATE COMPONENT A (n INT); BEGIN; SPAWN A(1);")
        .unwrap();
    p.exp_string("ecsql*> ").unwrap();
    p.send_line("SPAWN A(2);").unwrap();
    p.exp_string("ecsql*> ").unwrap();
    p.send_line(".quit").unwrap();
    p.exp_string("a transaction was open: rolled back, so nothing since its BEGIN is kept")
        .unwrap();
    p.exp_eof().unwrap();

    let conn = ecsql::Database::open(&db).unwrap().connect();
    let count: i64 = conn
        .query_row("SELECT count(*) FROM A", (), |r| r.get(0))
        .unwrap();
    assert_eq!(count, 0, "the transaction was not committed");
    drop(conn);

    // COMMIT ends it: the prompt is the plain one again, and nothing is said at the end.
    let mut p = start_db(&dir, &db);
    p.exp_string("ecsql> ").unwrap();
    p.send_line("BEGIN; SPAWN A(3);").unwrap();
    p.exp_string("ecsql*> ").unwrap();
    p.send_line("COMMIT;").unwrap();
    p.exp_string("ecsql> ").unwrap();
    p.send_line(".quit").unwrap();
    let rest = p.exp_eof().unwrap();
    assert!(!rest.contains("rolled back"), "{rest:?}");
    let conn = ecsql::Database::open(&db).unwrap().connect();
    let count: i64 = conn
        .query_row("SELECT count(*) FROM A", (), |r| r.get(0))
        .unwrap();
    assert_eq!(count, 1);
}
