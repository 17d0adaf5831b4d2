//! The command line: options, then what to run — query files, `-c` strings, standard input
//! when it is not a terminal, or else the prompt — and the exit code.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use ecsql::Database;

use super::format::Mode;
use super::interactive;
use super::session::{Flow, Session, read_script};

const USAGE: &str = "\
usage: ecsql [OPTIONS] [FILE...]
       ecsql serve [OPTIONS] [FILE...]   (ecsql serve --help)

Runs the query files in order; with none, runs standard input when it is not a terminal
(each statement as soon as its line arrives), or else starts the interactive prompt. Files
may hold statements and dot-commands.

options:
  --db PATH       keep the database in the file PATH (created if absent): every
                  statement's changes are kept there as they commit
  -c SQL          run SQL (may be given more than once; runs in order with the files)
  -cmd TEXT       run TEXT (SQL or a dot-command) first, before the files and the prompt
  -init FILE      run FILE first, before the files and the prompt
  -interactive    start the prompt after the files and -c have run
  -f FILE         run FILE (same as naming it)
  --mode MODE     output mode: table, box, column, csv, json, line, list or markdown
  --bail          stop at the first error
  --echo          print each statement before running it
  -h, --help      this text
  -V, --version   the version

Ctrl-C stops the running statement (it changes nothing; a TICK of many ticks keeps the
ticks it ran, and says how many) and every script in progress; at the prompt the session
goes on, otherwise ecsql exits. While a database file is opened, it stops the opening.

The exit code is 0 when everything ran, 1 when a statement or command failed, 2 for bad
options, 130 when Ctrl-C stopped a run.
";

/// Something to run, in command-line order.
enum Job {
    Sql(String),
    File(String),
}

/// Runs the command line and returns the process exit code.
pub fn main() -> i32 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    #[cfg(feature = "server")]
    if args.first().map(String::as_str) == Some("serve") {
        return super::serve::main(args[1..].to_vec());
    }
    let db = Database::open_in_memory();
    let mut session = Session::new(&db);
    // Ctrl-C stops what runs and returns to the prompt (or ends a script run); at the
    // prompt itself the line editor sees it as a key, not as this signal.
    let (flag, handle) = (Arc::clone(&session.interrupted), Arc::clone(&session.handle));
    let _ = ctrlc::set_handler(move || {
        flag.store(true, Ordering::SeqCst);
        if let Ok(handle) = handle.lock() {
            handle.interrupt();
        }
    });
    let mut jobs = Vec::new();
    // Run before everything, and not counted as something to run instead of the prompt.
    let mut first = Vec::new();
    let mut interactive = false;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |option: &str| args.next().ok_or_else(|| format!("{option} needs a value"));
        let parsed = match arg.as_str() {
            "-h" | "--help" => {
                super::say(USAGE);
                return 0;
            }
            "-V" | "--version" => {
                super::say(&format!("ecsql {}\n", env!("CARGO_PKG_VERSION")));
                return 0;
            }
            "-c" => value("-c").map(|sql| jobs.push(Job::Sql(sql))),
            "-cmd" | "--cmd" => value("-cmd").map(|text| first.push(Job::Sql(text))),
            "-init" | "--init" => value("-init").map(|file| first.push(Job::File(file))),
            "-interactive" | "--interactive" => {
                interactive = true;
                Ok(())
            }
            "--db" => match value("--db") {
                Ok(path) => match session.open_file(&path) {
                    Ok(db) => {
                        session.switch_to(&db, Some(path));
                        Ok(())
                    }
                    Err(e) => {
                        super::say_err(&format!("ecsql: {e}\n"));
                        let stopped =
                            matches!(e, ecsql::Error::File(ecsql::FileError::OpenInterrupted { .. }));
                        return if stopped { 130 } else { 1 };
                    }
                },
                Err(e) => Err(e),
            },
            "-f" => value("-f").map(|file| jobs.push(Job::File(file))),
            "--mode" => value("--mode").and_then(|m| match Mode::parse(&m) {
                Some(mode) => {
                    session.settings.style.mode = mode;
                    Ok(())
                }
                None => Err(format!("unknown mode {m}: expected {}", Mode::NAMES)),
            }),
            "--bail" => {
                session.settings.bail = true;
                Ok(())
            }
            "--echo" => {
                session.settings.echo = true;
                Ok(())
            }
            option if option.starts_with('-') && option != "-" => Err(format!("unknown option {option}")),
            file => {
                jobs.push(Job::File(file.to_owned()));
                Ok(())
            }
        };
        if let Err(message) = parsed {
            super::say_err(&format!("ecsql: {message} (ecsql --help lists the options)\n"));
            return 2;
        }
    }

    let prompt = interactive || (jobs.is_empty() && std::io::stdin().is_terminal());
    if jobs.is_empty() && !prompt {
        jobs.push(Job::File("-".to_owned()));
    }
    let mut all = first;
    all.extend(jobs);
    let mut quit = false;
    for job in all {
        let flow = match job {
            // The text is on the command line: errors point into it as at the prompt.
            Job::Sql(sql) => session.run_text("", &sql),
            // Standard input runs as it arrives: each statement once its line is in.
            Job::File(file) if file == "-" => session.run_stream("<stdin>", std::io::stdin().lock()),
            Job::File(file) => match read_script(&file) {
                Ok(text) => session.run_file(&file, &text),
                Err(message) => {
                    super::say_err(&format!("ecsql: {message}\n"));
                    session.failed()
                }
            },
        };
        if flow == Flow::Interrupted {
            session.roll_back_stopped();
            super::say_err(&format!(
                "ecsql: interrupted (Ctrl-C): {}; nothing after it ran\n",
                session.interrupted_whole()
            ));
            return 130;
        }
        if flow != Flow::Continue {
            // .quit, or a failure with --bail: no prompt after.
            quit = true;
            break;
        }
    }
    if prompt && !quit {
        // What ran before the prompt decides the exit code, not what was typed at it.
        let failed = session.failures > 0;
        session.settings.maxrows = 100;
        if let Err(e) = interactive::run(&mut session) {
            super::say_err(&format!("ecsql: {e}\n"));
            return 1;
        }
        return i32::from(failed);
    }
    i32::from(session.failures > 0)
}
