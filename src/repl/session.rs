//! A shell session: one `Connection`, the output settings, and the running of script text
//! statement by statement, with dot-commands between statements. The REPL, `.read`, query
//! files, `-c` and standard input all come through `Session::run_text`. The dot-commands
//! themselves are in `commands.rs`, result rendering in `format.rs`, line editing in
//! `interactive.rs`.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ecsql::script::{is_blank, split_statements};
use ecsql::{Connection, Database, InterruptHandle, Location, StatementResult, Value};

use super::format::{self, ResultSet, Style};
use ecsql::PlanErrorKind;

/// What the caller should do after a statement or dot-command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// An error with `.bail on`: stop this script (a REPL carries on).
    Bail,
    /// `.quit`: leave.
    Quit,
    /// Ctrl-C: the running statement was stopped, and the rest of every script with it.
    Interrupted,
}

#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub style: Style,
    pub timer: bool,
    pub bail: bool,
    pub echo: bool,
    /// Rows printed per result; 0 prints all.
    pub maxrows: usize,
    /// `.changes on`: each statement's count of changed rows, and the total, printed.
    pub changes: bool,
}

/// Text being run: its name for error messages (empty at the prompt), the text, and where
/// each of its lines starts, to place statements and draw carets.
pub struct Source<'a> {
    pub name: &'a str,
    text: &'a str,
    line_starts: Vec<usize>,
    /// The number of the text's first line in its whole input (a stream's text is the
    /// part of it not yet run).
    first_line: u32,
}

impl<'a> Source<'a> {
    pub fn new(name: &'a str, text: &'a str) -> Self {
        Source::from_line(name, text, 1)
    }

    /// Text that is the whole input's from line `first_line` on.
    fn from_line(name: &'a str, text: &'a str, first_line: u32) -> Self {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Source {
            name,
            text,
            line_starts,
            first_line,
        }
    }

    /// The line and character column of a byte offset.
    fn location(&self, offset: usize) -> Location {
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let column = self.text[self.line_starts[line]..offset].chars().count() + 1;
        Location::new(line as u32 + self.first_line, column as u32)
    }

    fn line(&self, number: u32) -> Option<&'a str> {
        let index = number.checked_sub(self.first_line)?;
        let start = *self.line_starts.get(index as usize)?;
        let rest = &self.text[start..];
        Some(rest.split('\n').next().unwrap_or(rest).trim_end_matches('\r'))
    }
}

/// An open subscription (`live.rs`): its number (as `.subscribe` lists it), its query's
/// text on one line, its batches.
pub struct OpenSubscription {
    pub number: usize,
    pub text: String,
    pub feed: ecsql::Subscription,
}

pub struct Session {
    pub conn: Rc<Connection>,
    pub settings: Settings,
    out: Box<dyn Write>,
    /// Statements and commands that failed so far.
    pub failures: usize,
    /// How deep `.read` is nested, to stop files that read each other.
    pub(super) depth: usize,
    /// Set by Ctrl-C (the shell's SIGINT handler), which also interrupts the running
    /// statement; cleared when the prompt takes over again.
    pub interrupted: Arc<AtomicBool>,
    /// The connection's interrupt handle, for the Ctrl-C handler (`.open` changes it).
    pub handle: Arc<Mutex<InterruptHandle>>,
    /// The connection, for the prompt's completion (`.open` changes it).
    pub current: Rc<RefCell<Rc<Connection>>>,
    /// The database file, when it is one.
    pub file: Option<String>,
    /// The results' reader has gone (a closed pipe): scripts stop.
    pub output_closed: bool,
    /// `.parameter set`: values every statement's parameters read.
    pub params: ecsql::ParamValues,
    /// `.once`: where the output goes back to after the next statement (the screen, or
    /// the file `.output` named).
    pub after_once: Option<Box<dyn Write>>,
    /// Rows changed by every statement so far (`.changes`).
    pub total_changes: usize,
    /// The file `.output` sends results to; `None`: the screen (standard output).
    pub output_to: Option<String>,
    /// What an interrupt left of the statement it stopped (its error's words: nothing, or
    /// the ticks a TICK kept); `None` when it came after the statement had finished (an
    /// UPDATE that had begun writing runs to its end).
    pub stopped: Option<String>,
    /// The transaction a stopped script had open was rolled back (`roll_back_stopped`).
    pub rolled_back: bool,
    /// The stopped statement's error, which says what the interrupt left, was printed.
    pub stop_said: bool,
    /// Why the transaction a stopped script had open could not be rolled back.
    pub rollback_failed: Option<String>,
    /// The open subscriptions (`live.rs`), in the order they were opened.
    pub subscriptions: Vec<OpenSubscription>,
    /// How many subscriptions were opened: the last one's number.
    pub subscribed: usize,
}

impl Session {
    pub fn new(db: &Database) -> Session {
        let conn = Rc::new(db.connect());
        Session {
            handle: Arc::new(Mutex::new(conn.get_interrupt_handle())),
            current: Rc::new(RefCell::new(Rc::clone(&conn))),
            conn,
            settings: Settings::default(),
            out: Box::new(io::stdout()),
            failures: 0,
            depth: 0,
            interrupted: Arc::default(),
            file: None,
            output_closed: false,
            params: ecsql::ParamValues::default(),
            after_once: None,
            total_changes: 0,
            output_to: None,
            stopped: None,
            stop_said: false,
            rollback_failed: None,
            rolled_back: false,
            subscriptions: Vec::new(),
            subscribed: 0,
        }
    }

    /// Makes `db` the session's database (`.open`, `--db`): what the statements run on
    /// from now on, and what Ctrl-C stops.
    pub fn switch_to(&mut self, db: &Database, file: Option<String>) {
        let conn = Rc::new(db.connect());
        if let Ok(mut handle) = self.handle.lock() {
            *handle = conn.get_interrupt_handle();
        }
        *self.current.borrow_mut() = Rc::clone(&conn);
        self.conn = conn;
        self.file = file;
        // They were the other database's.
        self.subscriptions.clear();
    }

    /// Opens the database kept in `path` (`--db`, `.open`): Ctrl-C stops the open (its
    /// files as they were), and a journal that takes over a second to run shows its
    /// progress on a terminal's standard error.
    pub fn open_file(&mut self, path: &str) -> Result<Database, ecsql::Error> {
        let options = Database::options();
        if let Ok(mut handle) = self.handle.lock() {
            *handle = options.interrupt_handle();
        }
        let terminal = io::stderr().is_terminal();
        let mut shown = false;
        let mb = |bytes: u64| bytes as f64 / 1e6;
        let opened = options
            .progress(|p| {
                if terminal && p.elapsed >= std::time::Duration::from_secs(1) {
                    let percent = 100 * p.replayed_bytes / p.journal_bytes.max(1);
                    let end = if p.replayed_bytes == p.journal_bytes {
                        format!(" in {:.1} s\n", p.elapsed.as_secs_f64())
                    } else {
                        " (Ctrl-C stops)".to_owned()
                    };
                    super::say_err(&format!(
                        "\ropening {path}: ran {:.1} of its journal's {:.1} MB ({percent}%){end}",
                        mb(p.replayed_bytes),
                        mb(p.journal_bytes)
                    ));
                    shown = true;
                }
                true
            })
            .open(path);
        if shown && opened.is_err() {
            super::say_err("\n");
        }
        if let Ok(mut handle) = self.handle.lock() {
            *handle = self.conn.get_interrupt_handle();
        }
        opened
    }

    /// What Ctrl-C left of the statement running when it came.
    pub fn interrupted_outcome(&self) -> &str {
        match (&self.stopped, self.conn.is_autocommit()) {
            (Some(stopped), _) => stopped,
            (None, true) => {
                "the statement running had finished before Ctrl-C reached it and keeps its changes"
            }
            (None, false) => {
                "the statement running had finished before Ctrl-C reached it; its changes are in the open \
                 transaction, which keeps them only if it is committed"
            }
        }
    }

    /// What Ctrl-C left, said whole: the statement's outcome, and when the script was
    /// inside a transaction, that it was rolled back (`roll_back_stopped`).
    pub fn interrupted_whole(&self) -> String {
        let outcome = self.interrupted_outcome();
        match self.rolled_back {
            true => format!(
                "{outcome}; then the transaction it ran in was rolled back, so nothing since its BEGIN is kept"
            ),
            false => outcome.to_owned(),
        }
    }

    /// What Ctrl-C left that the prompt has not said yet: nothing when the stopped
    /// statement's error said it all, only the rollback when it said the rest.
    pub fn interrupted_unsaid(&self) -> Option<String> {
        match (self.stop_said, self.rolled_back) {
            (true, false) => self
                .rollback_failed
                .as_ref()
                .map(|e| format!("the transaction it ran in could not be rolled back: {e}")),
            (true, true) => {
                Some("the transaction it ran in was rolled back, so nothing since its BEGIN is kept".into())
            }
            (false, _) => Some(self.interrupted_whole()),
        }
    }

    /// A script stopped by Ctrl-C inside a transaction: the transaction is rolled back
    /// (what the statement left is said first, as it was inside the transaction).
    pub fn roll_back_stopped(&mut self) {
        if self.conn.is_autocommit() {
            return;
        }
        if self.stopped.is_none() {
            self.stopped = Some(self.interrupted_outcome().to_owned());
        }
        match self.conn.execute_batch("ROLLBACK") {
            Ok(()) => self.rolled_back = true,
            Err(e) => {
                let said = self.stopped.take().unwrap_or_default();
                self.stopped = Some(format!(
                    "{said}; the transaction it ran in could not be rolled back: {e}"
                ));
                self.rollback_failed = Some(e.to_string());
            }
        }
    }

    /// True once Ctrl-C was pressed while something ran.
    pub fn was_interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// Sends results to `file`, or back to standard output.
    pub(super) fn redirect(&mut self, file: Option<File>) {
        let _ = self.out.flush();
        self.out = match file {
            Some(f) => Box::new(io::BufWriter::new(f)),
            None => Box::new(io::stdout()),
        };
    }

    /// `.once FILE`: the next statement's results go to `file`, then back to where they
    /// went (a second `.once` before a statement keeps the first one's way back).
    pub(super) fn once(&mut self, file: File) {
        let _ = self.out.flush();
        let before = std::mem::replace(&mut self.out, Box::new(io::BufWriter::new(file)));
        self.after_once.get_or_insert(before);
    }

    pub(super) fn print(&mut self, text: &str) {
        let written = self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush());
        if written.is_err_and(|e| e.kind() == io::ErrorKind::BrokenPipe) {
            // Whoever read the results has gone (`ecsql f.sql | head -1`): stop, quietly.
            self.output_closed = true;
        }
    }

    /// Runs script text: statements end at top-level `;` (a last statement may go without),
    /// and a line starting with `.` between statements is a dot-command.
    pub fn run_text(&mut self, name: &str, text: &str) -> Flow {
        let source = Source::new(name, text);
        // The pending statement text starts here.
        let mut pending = 0;
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let line_start = offset;
            offset += line.len();
            if self.was_interrupted() {
                return Flow::Interrupted;
            }
            if self.output_closed {
                return Flow::Quit;
            }
            let flow = self.run_line(&source, &mut pending, line_start, offset);
            if flow != Flow::Continue {
                return flow;
            }
        }
        let flow = self.run_piece(&source, pending, text.len());
        self.unless_interrupted(flow)
    }

    /// `flow`, or `Interrupted` when Ctrl-C came during the last statement (which then
    /// had finished): the script says so and ends as interrupted, not as if run whole.
    fn unless_interrupted(&self, flow: Flow) -> Flow {
        match flow {
            Flow::Continue if self.was_interrupted() => Flow::Interrupted,
            flow => flow,
        }
    }

    /// Runs a script read from a file (`ecsql FILE`, `.read FILE`) as `run_text` does; a
    /// transaction the file began and did not end is rolled back, and that is an error,
    /// so a cut file (a dump is one BEGIN … COMMIT) loads nothing instead of a part.
    pub fn run_file(&mut self, name: &str, text: &str) -> Flow {
        let outside = self.conn.is_autocommit();
        let flow = self.run_text(name, text);
        let source = Source::new(name, text);
        self.ended(&source, text.trim_end().len(), outside, flow)
    }

    /// Runs a script as it arrives on `input` (standard input: a pipe, `tail -f`, a
    /// program that writes a statement and waits for its answer): each statement (or
    /// dot-command) runs as soon as its line is in, as `run_file` would run it, with its
    /// place in the whole input. A line that is not UTF-8 stops the script there, after
    /// what came before it ran.
    pub fn run_stream(&mut self, name: &str, mut input: impl io::BufRead) -> Flow {
        let outside = self.conn.is_autocommit();
        // The input not yet run, from the start of its first line (line `first_line`).
        let mut window = String::new();
        let mut first_line = 1u32;
        // How many whole lines the window holds.
        let mut window_lines = 0u32;
        // Where, in `window`, the text not yet run begins.
        let mut pending = 0;
        let mut raw = Vec::new();
        loop {
            if self.was_interrupted() {
                return Flow::Interrupted;
            }
            if self.output_closed {
                return Flow::Quit;
            }
            raw.clear();
            match input.read_until(b'\n', &mut raw) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted && !self.was_interrupted() => continue,
                Err(e) => {
                    super::say_err(&format!("ecsql: cannot read {name}: {e}\n"));
                    return self.failed();
                }
            }
            let line_number = first_line + window_lines;
            if line_number == 1 && raw.starts_with(b"ECSQLSNP") {
                super::say_err(&format!(
                    "ecsql: {name} is a snapshot (a save slot), not a script: .load it (LOAD FROM 'file')\n"
                ));
                return self.failed();
            }
            let line = match std::str::from_utf8(&raw) {
                Ok(line) => line,
                Err(e) => {
                    let good = &raw[..e.valid_up_to()];
                    let column = String::from_utf8_lossy(good).chars().count() + 1;
                    let byte = raw.get(e.valid_up_to()).copied().unwrap_or_default();
                    super::say_err(&format!(
                        "{name}:{line_number}:{column}: not UTF-8 (byte 0x{byte:02x}), so nothing from there on was run; send UTF-8\n"
                    ));
                    return self.failed();
                }
            };
            let line_start = window.len();
            window.push_str(line);
            window_lines += u32::from(line.ends_with('\n'));
            // Only a line with a `;`, or a dot-command between statements, completes
            // something: any other just waits in the window (a long statement stays
            // linear to read).
            let completes = line.contains(';')
                || (line.trim_start().starts_with('.') && is_blank(&window[pending..line_start]));
            if !completes {
                continue;
            }
            let source = Source::from_line(name, &window, first_line);
            let flow = self.run_line(&source, &mut pending, line_start, window.len());
            if flow != Flow::Continue {
                return flow;
            }
            // The lines wholly run go: the window keeps the line `pending` is on.
            let keep = window[..pending].rfind('\n').map_or(0, |i| i + 1);
            if keep > 0 {
                let gone = window[..keep].matches('\n').count() as u32;
                first_line += gone;
                window_lines -= gone;
                window.drain(..keep);
                pending -= keep;
            }
        }
        let source = Source::from_line(name, &window, first_line);
        let flow = self.run_piece(&source, pending, window.len());
        let flow = self.unless_interrupted(flow);
        self.ended(&source, window.trim_end().len(), outside, flow)
    }

    /// Runs what the line of `source` from `line_start` to `line_end` completes: a
    /// dot-command, or the statements it ends; `pending` is where the text not yet run
    /// begins, and moves past what ran.
    fn run_line(
        &mut self,
        source: &Source<'_>,
        pending: &mut usize,
        line_start: usize,
        line_end: usize,
    ) -> Flow {
        let text = &source.text[..line_end];
        let line = &text[line_start..];
        let indent = line.len() - line.trim_start().len();
        if line.trim_start().starts_with('.') && is_blank(&text[*pending..line_start]) {
            let at = source.location(line_start + indent);
            let flow = self.dot_command(line.trim(), source, at);
            *pending = line_end;
            return flow;
        }
        // Only a line with a `;` can end a statement: skip the tokenizer otherwise, so
        // long statements stay linear to read.
        if !line.contains(';') {
            return Flow::Continue;
        }
        let split = split_statements(&text[*pending..]);
        let base = *pending;
        for end in split.ends {
            let flow = self.run_piece(source, *pending, base + end);
            *pending = base + end;
            if flow != Flow::Continue {
                return flow;
            }
        }
        if split.rest_is_blank {
            *pending = line_end;
        }
        Flow::Continue
    }

    /// A script (of `source`, its statements' text ending at `end`) has run to its end
    /// (`flow`): a transaction it began and did not end is rolled back, and that is an
    /// error.
    fn ended(&mut self, source: &Source<'_>, end: usize, outside: bool, flow: Flow) -> Flow {
        if !outside || self.conn.is_autocommit() {
            return flow;
        }
        if flow == Flow::Interrupted {
            // Said with what Ctrl-C stopped (`interrupted_whole`), not at the file's end.
            self.roll_back_stopped();
            return flow;
        }
        let end = source.location(end);
        let message = match self.conn.execute_batch("ROLLBACK") {
            Ok(()) => "the file ended inside a transaction it began: rolled back, so nothing \
                       since its BEGIN is kept (is the file cut short?)"
                .to_owned(),
            Err(e) => format!("the file ended inside a transaction it began, and ROLLBACK failed: {e}"),
        };
        self.report(source, end, &message);
        match self.failed() {
            Flow::Continue => flow,
            stop => stop,
        }
    }

    /// Runs the statement in `source.text[start..end]`, unless there is none.
    fn run_piece(&mut self, source: &Source<'_>, start: usize, end: usize) -> Flow {
        let piece = &source.text[start..end];
        if self.was_interrupted() {
            return Flow::Interrupted;
        }
        if is_blank(piece) {
            return Flow::Continue;
        }
        if self.settings.echo {
            let echo = format!("{}\n", piece.trim());
            self.print(&echo);
        }
        let began = Instant::now();
        let mut error = None;
        if Self::is_subscribe(piece) {
            error = self.subscribe(piece, source.location(start)).err();
        } else {
            let conn = Rc::clone(&self.conn);
            let params = self.params.clone();
            let ran = conn.run_script_with(piece, source.location(start), &params, |result| match result {
                Ok(result) => {
                    self.print_result(result);
                    true
                }
                Err(e) => {
                    error = Some(e);
                    false
                }
            });
            if let Err(e) = ran {
                error = Some(e);
            }
        }
        let ms = began.elapsed().as_secs_f64() * 1000.0;
        let first_word = start + (piece.len() - piece.trim_start().len());
        // The subscriptions' batches from what the statement committed (a SUBSCRIBE's
        // first) are part of what it printed.
        let batches = self.print_batches(source, source.location(first_word));
        // `.once` takes the statement's results, not its time.
        if let Some(out) = self.after_once.take() {
            let _ = self.out.flush();
            self.out = out;
        }
        match self.said(source, first_word, error, ms) {
            Flow::Continue => batches,
            flow => flow,
        }
    }

    /// Says a statement's `error` (none: it ran) and, with `.timer on`, its time `ms`
    /// after what it printed: what follows for the script.
    fn said(&mut self, source: &Source<'_>, first_word: usize, error: Option<ecsql::Error>, ms: f64) -> Flow {
        let timed = |session: &mut Self| {
            if session.settings.timer {
                session.print(&format!("Run Time: {ms:.3} ms\n"));
            }
        };
        match error {
            None => {
                timed(self);
                Flow::Continue
            }
            Some(e) => {
                let at = e.location().unwrap_or_else(|| source.location(first_word));
                let mut message = e.to_string();
                if let ecsql::Error::Plan(ecsql::PlanError {
                    kind: PlanErrorKind::MissingParameter { name, .. },
                    ..
                }) = &e
                {
                    message.push_str(&format!(
                        " (the shell gives one with .parameter set {name} VALUE)"
                    ));
                }
                self.report(source, at, &message);
                timed(self);
                if let ecsql::Error::Exec(e) = &e
                    && let Some(left) = e.interrupted_outcome()
                {
                    self.stopped = Some(left);
                    self.stop_said = true;
                }
                let flow = self.failed();
                if self.was_interrupted() {
                    return Flow::Interrupted;
                }
                flow
            }
        }
    }

    /// Counts a failure; with `.bail on` the script stops.
    pub(super) fn failed(&mut self) -> Flow {
        self.failures += 1;
        if self.settings.bail {
            Flow::Bail
        } else {
            Flow::Continue
        }
    }

    /// Prints an error to standard error: `FILE:LINE:COLUMN: message` in a script,
    /// `Error: message` at the prompt, then the line with a caret under the column.
    pub(super) fn report(&mut self, source: &Source<'_>, at: Location, message: &str) {
        let _ = self.out.flush();
        // The place is printed in front, so it is taken out of the message.
        let message = message.replacen(&format!(" at {at}"), "", 1);
        let mut text = if source.name.is_empty() {
            format!("Error: {message}\n")
        } else {
            format!("{}:{}:{}: {message}\n", source.name, at.line, at.column)
        };
        if let Some(line) = source.line(at.line) {
            // Tabs become spaces so that the caret's column is the character count.
            let line = line.replace('\t', " ");
            let caret = " ".repeat((at.column as usize).saturating_sub(1));
            text.push_str(&format!("{line}\n{caret}^\n"));
        }
        super::say_err(&text);
    }

    /// Prints a statement's result, then, with `.changes on`, what it changed: the rows a
    /// write changed, and the entities a SPAWN made (it also returns their ids).
    fn print_result(&mut self, result: StatementResult) {
        let changed = (result.rows.is_none() || result.verb == "SPAWN" || result.verb.ends_with("RETURNING"))
            .then_some(result.affected);
        self.show_result(result);
        if let Some(n) = changed
            && self.settings.changes
        {
            self.total_changes += n;
            let text = format!("changes: {n}   total_changes: {}\n", self.total_changes);
            self.print(&text);
        }
    }

    fn show_result(&mut self, result: StatementResult) {
        let style = self.settings.style.clone();
        let Some(rows) = result.rows else {
            let noun = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
            let message = match result.verb {
                "INSERT" => noun(result.affected, "row", "rows") + " inserted",
                "UPDATE" => noun(result.affected, "row", "rows") + " updated",
                "COPY" => noun(result.affected, "row", "rows") + " copied",
                "DELETE" => noun(result.affected, "row", "rows") + " deleted",
                "DESPAWN" => noun(result.affected, "entity", "entities") + " despawned",
                "TICK" => format!("ran {}", noun(result.affected, "tick", "ticks")),
                "SAVE" => format!("saved {}", noun(result.affected, "entity", "entities")),
                "LOAD" => format!("loaded {}", noun(result.affected, "entity", "entities")),
                "CHECKPOINT" => format!(
                    "checkpoint: {} written to the database file, its journal emptied",
                    noun(result.affected, "entity", "entities")
                ),
                _ => return,
            };
            if style.mode.is_for_people() {
                self.print(&format!("{message}\n"));
            }
            return;
        };
        if result.verb == "SPAWN" && style.mode.is_for_people() {
            // The ids as one typed column (millions of them are summed up in milliseconds).
            let ids: &[Option<ecsql::Entity>] = rows.column(0).unwrap_or(&[]);
            self.print(&spawned(ids));
            return;
        }
        self.print_rows(rows);
    }

    /// Prints rows in the output mode, at most `.maxrows` of them.
    pub(super) fn print_rows(&mut self, rows: ecsql::Rows) {
        self.print_rows_led(rows, None);
    }

    /// `print_rows` with, when given, one more column first: its name, and the INT it
    /// holds in every row.
    pub(super) fn print_rows_led(&mut self, rows: ecsql::Rows, lead: Option<(&str, i64)>) {
        let style = self.settings.style.clone();
        let mut names: Vec<String> = rows.column_names().iter().map(|s| s.to_string()).collect();
        let mut types = rows.column_types();
        let total = rows.remaining();
        let shown = match self.settings.maxrows {
            0 => total,
            n => n.min(total),
        };
        let mut values: Vec<Vec<Value>> = rows
            .take(shown)
            .filter_map(|r| r.ok().map(|r| r.values().to_vec()))
            .collect();
        if let Some((name, n)) = lead {
            names.insert(0, name.to_owned());
            types.insert(0, ecsql::DataType::Int);
            for row in &mut values {
                row.insert(0, Value::Int(n));
            }
        }
        let set = ResultSet {
            names: &names,
            types: &types,
            rows: &values,
        };
        let text = format::render(&set, &style, total - shown);
        self.print(&text);
    }
}

/// `spawned 3 entities: 1..3`: ids as runs of consecutive numbers, at most ten runs.
fn spawned(ids: &[Option<ecsql::Entity>]) -> String {
    let numbers: Vec<u64> = ids.iter().flatten().map(|e| e.to_bits()).collect();
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &n in &numbers {
        match runs.last_mut() {
            Some((_, last)) if n == *last + 1 => *last = n,
            _ => runs.push((n, n)),
        }
    }
    let mut parts: Vec<String> = runs
        .iter()
        .take(10)
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}..{b}")
            }
        })
        .collect();
    if runs.len() > 10 {
        parts.push("…".to_owned());
    }
    let noun = if numbers.len() == 1 { "entity" } else { "entities" };
    match numbers.len() {
        0 => "spawned 0 entities\n".to_owned(),
        n => format!("spawned {n} {noun}: {}\n", parts.join(", ")),
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.out.flush();
    }
}

/// A script's text, or all of standard input for `-`: read whole, so that a last line
/// without a newline is kept. A script that is not UTF-8 is refused whole (nothing of it
/// runs), with the line and column of its first bad byte.
pub fn read_script(file: &str) -> Result<String, String> {
    let bytes = if file == "-" {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes).map(|_| bytes)
    } else {
        std::fs::read(file)
    }
    .map_err(|e| format!("cannot read {file}: {e}"))?;
    if bytes.starts_with(b"ECSQLSNP") {
        return Err(format!(
            "{file} is a snapshot (a save slot), not a script: .load it (LOAD FROM '{file}')"
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let good = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line = bytes[..good].iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = bytes[..good]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&bytes[line_start..good]).chars().count() + 1;
        let name = if file == "-" { "<stdin>" } else { file };
        let byte = bytes.get(good).copied().unwrap_or_default();
        format!(
            "{name}:{line}:{column}: not UTF-8 (byte 0x{byte:02x}), so nothing in it was run; \
             save it as UTF-8"
        )
    })
}
