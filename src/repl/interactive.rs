//! The prompt: rustyline line editing, persistent history, tab completion from the live
//! catalog, and statements gathered over lines until the tokenizer finds their `;`.
//! Running what was typed is the session's job.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::Ordering;

use ecsql::Connection;
use ecsql::Location;
use ecsql::script::{is_blank, split_statements};
use rustyline::completion::{Completer, FilenameCompleter};
use rustyline::config::{CompletionType, Config};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};

use super::commands::HELP;
use super::session::{Flow, Session, Source};

const PROMPT: &str = "ecsql> ";
/// The prompt while a transaction is open (BEGIN without its COMMIT or ROLLBACK yet), as
/// psql marks it.
const IN_TRANSACTION_PROMPT: &str = "ecsql*> ";
const CONTINUE_PROMPT: &str = "   ...> ";

/// Words completed at the prompt besides the catalog's names.
const KEYWORDS: &[&str] = &[
    "AFTER",
    "ALL",
    "ALTER",
    "AND",
    "ARCHETYPES",
    "AS",
    "ASC",
    "AT",
    "BEFORE",
    "BEGIN",
    "BETWEEN",
    "BOOL",
    "BY",
    "CASE",
    "CAST",
    "CHECKPOINT",
    "COMMIT",
    "COMPONENT",
    "COMPONENTS",
    "CONFLICT",
    "CREATE",
    "DEFAULT",
    "DELETE",
    "DESC",
    "DESCRIBE",
    "DESPAWN",
    "DISABLE",
    "DISTINCT",
    "DO",
    "DROP",
    "ELSE",
    "ENABLE",
    "END",
    "ENTITY",
    "EVENT",
    "EVENTS",
    "EVERY",
    "EXCEPT",
    "EXISTS",
    "EXPLAIN",
    "FALSE",
    "FLOAT",
    "FROM",
    "GROUP",
    "HAVING",
    "IF",
    "IN",
    "INSERT",
    "INT",
    "INTERSECT",
    "INTO",
    "IS",
    "JOIN",
    "LEFT",
    "LIKE",
    "LIMIT",
    "LOAD",
    "NOT",
    "NOTHING",
    "NULL",
    "OFFSET",
    "ON",
    "OR",
    "ORDER",
    "PHASE",
    "PRAGMA",
    "REAL",
    "ROLLBACK",
    "SAVE",
    "SELECT",
    "SET",
    "SHOW",
    "SPAWN",
    "SYSTEM",
    "SYSTEMS",
    "TAG",
    "TEXT",
    "THEN",
    "TICK",
    "TICKS",
    "TO",
    "TRUE",
    "UNION",
    "UPDATE",
    "VALUES",
    "WHEN",
    "WHERE",
    "WITH",
    "abs",
    "avg",
    "ceil",
    "coalesce",
    "count",
    "delta_time",
    "entities",
    "floor",
    "generate_series",
    "greatest",
    "has",
    "least",
    "length",
    "lower",
    "max",
    "min",
    "pow",
    "random",
    "range",
    "round",
    "sqrt",
    "substr",
    "sum",
    "tick",
    "upper",
];

/// Dot-commands whose argument is a file name: it completes as one.
const FILE_COMMANDS: [&str; 8] = [
    ".read", ".open", ".save", ".load", ".output", ".once", ".dump", ".import",
];

/// Completes dot-commands at the start of a line, file names after those that take one,
/// `Component.field` after a dot, and keywords, functions and component names elsewhere
/// (whatever case they are typed in).
struct Completion {
    conn: Rc<RefCell<Rc<Connection>>>,
}

impl Completion {
    fn candidates(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let before = &line[..pos];
        let start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
            .map_or(0, |i| i + before[i..].chars().next().map_or(1, char::len_utf8));
        let word = &before[start..];
        let command = line.split_whitespace().next().unwrap_or("");
        let past_command = before.trim_start().len() > command.len();
        if FILE_COMMANDS.contains(&command) && past_command {
            return match FilenameCompleter::new().complete_path(line, pos) {
                Ok((start, pairs)) => (start, pairs.into_iter().map(|p| p.replacement).collect()),
                Err(_) => (pos, Vec::new()),
            };
        }
        if word.starts_with('.') && before[..start].trim().is_empty() {
            let commands = HELP.lines().filter_map(|l| l.split_whitespace().next());
            let mut found: Vec<String> = commands
                .filter(|c| c.starts_with(word))
                .map(|c| c.to_owned() + " ")
                .collect();
            found.dedup();
            return (start, found);
        }
        // Where a component must stand (after FROM, JOIN, INTO, UPDATE, DESCRIBE, COPY),
        // only components: `FROM po` completes to `Position`, not to `pow` as well.
        let previous = before[..start].split_whitespace().last().unwrap_or("");
        let component_only = ["FROM", "JOIN", "INTO", "UPDATE", "DESCRIBE", "COPY"]
            .iter()
            .any(|k| k.eq_ignore_ascii_case(previous));
        let names: Vec<String> = if word.contains('.') {
            self.conn.borrow().field_names().unwrap_or_default()
        } else if component_only {
            self.conn.borrow().component_names().unwrap_or_default()
        } else {
            let mut names = self.conn.borrow().component_names().unwrap_or_default();
            names.extend(KEYWORDS.iter().map(|k| match word.chars().next() {
                // Keywords come back in the case the word was started in.
                Some(c) if c.is_lowercase() => k.to_lowercase(),
                _ => (*k).to_owned(),
            }));
            names
        };
        let lower = word.to_lowercase();
        let mut found: Vec<String> = names
            .into_iter()
            .filter(|n| n.to_lowercase().starts_with(&lower))
            .collect();
        found.sort();
        found.dedup();
        (start, found)
    }
}

impl Completer for Completion {
    type Candidate = String;

    fn complete(&self, line: &str, pos: usize, _: &Context<'_>) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(self.candidates(line, pos))
    }
}

impl Hinter for Completion {
    type Hint = String;
}
impl Highlighter for Completion {}
impl Validator for Completion {}
impl Helper for Completion {}

/// Where the history is kept: `$ECSQL_HISTORY` (empty: none), else the user's data folder,
/// else the home folder.
fn history_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ECSQL_HISTORY") {
        return (!path.is_empty()).then(|| PathBuf::from(path));
    }
    if let Some(data) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(data).join("ecsql");
        std::fs::create_dir_all(&dir).ok()?;
        return Some(dir.join("history"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".ecsql_history"))
}

/// Runs the prompt until `.quit` or Ctrl-D. Ctrl-C abandons the statement being typed.
pub fn run(session: &mut Session) -> rustyline::Result<()> {
    let config = Config::builder()
        .auto_add_history(false)
        .completion_type(CompletionType::List)
        .build();
    let mut editor: Editor<Completion, FileHistory> = Editor::with_config(config)?;
    editor.set_helper(Some(Completion {
        conn: Rc::clone(&session.current),
    }));
    let history = history_path();
    if let Some(path) = &history {
        // A missing history file is the normal first run.
        let _ = editor.load_history(path);
    }
    let place = match &session.file {
        Some(file) => format!("the entity database in {file}"),
        None => "an in-memory entity database".to_owned(),
    };
    super::say(&format!(
        "ecsql {}: {place}. Statements end with ;  .help lists the commands.\n",
        env!("CARGO_PKG_VERSION")
    ));
    let mut buffer = String::new();
    let mut warned = false;
    loop {
        let prompt = if !buffer.is_empty() {
            CONTINUE_PROMPT
        } else if session.conn.is_autocommit() {
            PROMPT
        } else {
            IN_TRANSACTION_PROMPT
        };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                super::say_err(&format!("cannot read the terminal: {e}\n"));
                break;
            }
        };
        if buffer.is_empty() && line.trim_start().starts_with('.') {
            remember(&mut editor, line.trim(), history.as_deref(), &mut warned);
            let indent = line.len() - line.trim_start().len();
            let source = Source::new("", &line);
            let at = Location::new(1, indent as u32 + 1);
            session.interrupted.store(false, Ordering::SeqCst);
            match session.dot_command(line.trim(), &source, at) {
                Flow::Quit => break,
                Flow::Interrupted => super::say("Interrupted: the rest of the script was not run.\n"),
                _ => {}
            }
            session.interrupted.store(false, Ordering::SeqCst);
            continue;
        }
        if buffer.is_empty() && is_meant_as_dot_command(&line) {
            // As psql does: these words alone are never a statement.
            super::say("The shell's commands begin with a dot: .help lists them, .quit leaves.\n");
            continue;
        }
        buffer.push_str(&line);
        buffer.push('\n');
        let split = split_statements(&buffer);
        let Some(&last) = split.ends.last() else {
            if is_blank(&buffer) {
                buffer.clear();
            }
            continue;
        };
        let complete = buffer[..last].to_owned();
        buffer = if split.rest_is_blank {
            String::new()
        } else {
            buffer[last..].trim_start().to_owned()
        };
        remember(&mut editor, complete.trim(), history.as_deref(), &mut warned);
        session.interrupted.store(false, Ordering::SeqCst);
        session.stopped = None;
        session.rolled_back = false;
        session.stop_said = false;
        session.rollback_failed = None;
        match session.run_text("", &complete) {
            Flow::Quit => break,
            Flow::Interrupted => {
                if let Some(unsaid) = session.interrupted_unsaid() {
                    super::say(&format!("Interrupted: {unsaid}.\n"));
                }
            }
            _ => {}
        }
        session.interrupted.store(false, Ordering::SeqCst);
    }
    if !session.conn.is_autocommit() {
        // sqlite3 rolls back without a word; a file database's user would lose work unseen.
        let said = match session.conn.execute_batch("ROLLBACK") {
            Ok(()) => "a transaction was open: rolled back, so nothing since its BEGIN is kept \
                       (COMMIT before .quit keeps it)"
                .to_owned(),
            Err(e) => format!("a transaction was open, and ROLLBACK failed: {e}"),
        };
        super::say_err(&format!("{said}\n"));
    }
    Ok(())
}

/// `help`, `quit` or `exit` typed alone (with or without `;`): a dot-command without its dot.
fn is_meant_as_dot_command(line: &str) -> bool {
    let word = line.trim().trim_end_matches(';').trim_end();
    ["help", "quit", "exit"]
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w))
}

/// Adds `entry` to the history and appends it to the history file at once, so that a
/// session that is killed keeps what was typed (a failure to write is said once).
fn remember(
    editor: &mut Editor<Completion, FileHistory>,
    entry: &str,
    file: Option<&std::path::Path>,
    warned: &mut bool,
) {
    let _ = editor.add_history_entry(entry);
    if let Some(path) = file
        && let Err(e) = editor.append_history(path)
        && !*warned
    {
        *warned = true;
        super::say_err(&format!("cannot save the history to {}: {e}\n", path.display()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completion() -> Completion {
        let conn = ecsql::Database::open_in_memory().connect();
        conn.execute_batch("CREATE COMPONENT Position (x REAL, y REAL);")
            .unwrap();
        Completion {
            conn: Rc::new(RefCell::new(Rc::new(conn))),
        }
    }

    #[test]
    fn names_complete_whatever_case_they_are_typed_in() {
        let c = completion();
        let (start, found) = c.candidates("SELECT * FROM po", 16);
        assert_eq!(start, 14);
        // Only a component stands after FROM: the one candidate fills the word in.
        assert_eq!(found, vec!["Position"]);
        assert!(c.candidates("SELECT po", 9).1.contains(&"pow".to_owned()));
        assert_eq!(c.candidates("update POS", 10).1, vec!["Position"]);
        assert_eq!(
            c.candidates("SELECT posITION.", 16).1,
            vec!["Position.x", "Position.y"]
        );
        assert!(c.candidates("sel", 3).1.contains(&"select".to_owned()));
    }

    #[test]
    fn file_names_complete_after_the_commands_that_take_one() {
        let dir = std::env::temp_dir().join(format!("ecsql-complete-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("falling.sql"), "").unwrap();
        let line = format!(".read {}/fal", dir.display());
        let (_, found) = completion().candidates(&line, line.len());
        assert_eq!(found, vec![format!("{}/falling.sql", dir.display())]);
        // Not after a statement.
        let line = format!("SELECT {}/fal", dir.display());
        let found = completion().candidates(&line, line.len()).1;
        assert!(!found.iter().any(|f| f.contains("falling.sql")), "{found:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
