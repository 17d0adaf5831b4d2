//! The dot-commands (`.help`, `.mode`, `.read`, `.dump`, …), in the manner of the sqlite3
//! shell. Each is a line of its own between statements; what it prints goes to the
//! session's output, its errors to standard error with the caret like a statement's.

use ecsql::Location;

use super::dump;
use super::format::Mode;
use super::session::{Flow, Session, Source};

pub const HELP: &str = "\
.archetypes          list the archetype tables: hash name, components, rows
.bail on|off         stop a script at its first error (default off)
.dump [FILE]         write a script that .read turns back into this database
.echo on|off         print each statement before running it
.explain STATEMENT   show the plan of STATEMENT
.changes on|off      after each statement, print how many rows it changed (and in all)
.headers on|off      print column names (default on)
.help [COMMAND]      this list, or what COMMAND does
.import [--csv|--json] FILE COMPONENT
                     read FILE's rows as COMPONENT (COPY COMPONENT FROM 'FILE'): its
                     first line names the columns (fields, and id to attach to existing
                     entities); the format by the name's ending, or as the flag says
.indexes             list the indexes: name, kind, component, fields, entries
.maxrows N           print at most N rows of a result; 0 prints all
.mode [MODE]         output mode: table, box, column, csv, json, line, list or
                     markdown
.nullvalue TEXT      show NULL as TEXT (default NULL) in the modes for people
.once FILE           send the next statement's results to FILE
.open [FILE]         keep the database in FILE (opened, or created if absent); with
                     no FILE, a new in-memory database
.output [FILE]       send results to FILE, or back to the screen (no FILE, or stdout)
.parameter CMD ...   the values statements' parameters read: set NAME VALUE (NAME as
                     :dt, $dt, @dt or ?1; VALUE an expression, or else plain words or
                     a file name as text: 'quoted' text is always text), unset NAME,
                     list, clear
.print TEXT          print TEXT
.quit                leave (.exit too)
.load FILE           replace the database with the one saved in FILE (LOAD FROM)
.read FILE           run the statements and commands in FILE (in a file, a relative
                     FILE is looked for beside it first)
.save FILE           save the database to FILE, a snapshot .load reads (SAVE TO)
.separator TEXT      what list mode puts between values (default |)
.show                the settings: mode, headers, separator, nullvalue, output, …
.subscribe [QUERY]   keep QUERY live (as SUBSCRIBE QUERY does): its rows now, then
                     after each statement or tick that changes them, the rows that
                     left (diff -n) and came (diff +n); no QUERY: list those open
.tables [PATTERN]    the components and event types (whose names are LIKE PATTERN)
.schema [NAME]       the CREATE statements of everything (components, events, indexes,
                     phases, systems), or of the component or event NAME
.timer on|off        print how long each statement took
.unsubscribe [N]     close subscription N, or every one
";

/// Files read by `.read` inside each other at most this deep.
const MAX_READ_DEPTH: usize = 32;

impl Session {
    /// Runs one dot-command line. `at` is where it starts in `source`.
    pub fn dot_command(&mut self, line: &str, source: &Source<'_>, at: Location) -> Flow {
        let (name, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        let args: Vec<&str> = rest.split_whitespace().collect();
        let result = match name {
            ".help" if rest.is_empty() => {
                self.print(HELP);
                Ok(())
            }
            ".help" => help_for(rest).map(|text| self.print(&text)),
            ".nullvalue" => match args.as_slice() {
                [] => Err("usage: .nullvalue TEXT".to_owned()),
                _ => {
                    self.settings.style.null = unquote(rest);
                    Ok(())
                }
            },
            ".separator" => match args.as_slice() {
                [] => Err("usage: .separator TEXT".to_owned()),
                _ => {
                    self.settings.style.separator = unquote(rest).replace("\\t", "\t").replace("\\n", "\n");
                    Ok(())
                }
            },
            ".changes" => on_off(&args, ".changes").map(|v| self.settings.changes = v),
            ".once" => match file_argument(rest) {
                Some(file) => ecsql::script::create_output(std::path::Path::new(&file))
                    .map(|f| self.once(f))
                    .map_err(|e| format!("cannot write {file}: {e}")),
                None => Err("usage: .once FILE (in quotes when it has spaces)".to_owned()),
            },
            ".show" if rest.is_empty() => {
                let text = self.show();
                self.print(&text);
                Ok(())
            }
            ".tables" => match args.as_slice() {
                [] | [_] => self.tables(args.first().copied()).map(|t| self.print(&t)),
                _ => Err("usage: .tables [PATTERN]".to_owned()),
            },
            ".quit" | ".exit" => return Flow::Quit,
            ".mode" => match args.as_slice() {
                [] => {
                    let mode = format!("{:?}\n", self.settings.style.mode).to_lowercase();
                    self.print(&mode);
                    Ok(())
                }
                [m] => match Mode::parse(m) {
                    Some(mode) => {
                        self.settings.style.mode = mode;
                        Ok(())
                    }
                    None => Err(format!("unknown mode {m}: expected {}", Mode::NAMES)),
                },
                _ => Err(format!("usage: .mode {}", Mode::NAMES)),
            },
            ".headers" => on_off(&args, ".headers").map(|v| self.settings.style.headers = v),
            ".timer" => on_off(&args, ".timer").map(|v| self.settings.timer = v),
            ".bail" => on_off(&args, ".bail").map(|v| self.settings.bail = v),
            ".echo" => on_off(&args, ".echo").map(|v| self.settings.echo = v),
            ".maxrows" => match args.as_slice() {
                [n] => n
                    .parse()
                    .map(|n| self.settings.maxrows = n)
                    .map_err(|_| format!("expected a number of rows, found {n}")),
                _ => Err("usage: .maxrows N (0 prints every row)".to_owned()),
            },
            ".print" => {
                self.print(&format!("{rest}\n"));
                Ok(())
            }
            ".output" => match args.as_slice() {
                // As in sqlite3, `stdout` names the screen, not a file.
                [] | ["stdout"] => {
                    self.redirect(None);
                    self.output_to = None;
                    Ok(())
                }
                [file] => ecsql::script::create_output(std::path::Path::new(file))
                    .map(|f| {
                        self.redirect(Some(f));
                        self.output_to = Some((*file).to_owned());
                    })
                    .map_err(|e| format!("cannot write {file}: {e}")),
                _ => Err("usage: .output [FILE]".to_owned()),
            },
            ".parameter" | ".param" => self.parameter(&args, rest),
            ".read" => match file_argument(rest) {
                Some(file) => return self.read_file(&file, source, at),
                None => Err("usage: .read FILE (in quotes when it has spaces)".to_owned()),
            },
            ".explain" if !rest.is_empty() => {
                // ` EXPLAIN` is as long as `.explain`: the statement keeps its columns, and
                // padding puts it on its line, so errors point into it.
                let padding = "\n".repeat(at.line as usize - 1) + &" ".repeat(at.column as usize - 1);
                let text = format!("{padding} EXPLAIN{}", &line[name.len()..]);
                return self.run_text(source.name, &text);
            }
            ".explain" => Err("usage: .explain STATEMENT".to_owned()),
            ".subscribe" if !rest.is_empty() => {
                // ` SUBSCRIBE` is as long as `.subscribe`: errors point into the query.
                let padding = "\n".repeat(at.line as usize - 1) + &" ".repeat(at.column as usize - 1);
                let text = format!("{padding} SUBSCRIBE{}", &line[name.len()..]);
                return self.run_text(source.name, &text);
            }
            ".subscribe" => {
                self.list_subscriptions();
                Ok(())
            }
            ".unsubscribe" => self.unsubscribe(&args),
            ".import" => match import_arguments(rest) {
                Some((format, file, component)) => {
                    let file = beside(&file, source.name);
                    let padding = "\n".repeat(at.line as usize - 1) + &" ".repeat(at.column as usize - 1);
                    let format = format.map(|f| format!(" (FORMAT {f})")).unwrap_or_default();
                    let text = format!(
                        "{padding}COPY {} FROM '{}'{format}",
                        ecsql::script::quote_name(&component),
                        file.replace('\'', "''")
                    );
                    return self.run_text(source.name, &text);
                }
                None => Err(
                    "usage: .import [--csv|--json] FILE COMPONENT (FILE in quotes when it has spaces)"
                        .to_owned(),
                ),
            },
            ".save" | ".load" => match file_argument(rest) {
                Some(file) => {
                    let statement = if name == ".save" { "SAVE TO" } else { "LOAD FROM" };
                    // Padded to where the command is, so that an error names its line.
                    let padding = "\n".repeat(at.line as usize - 1) + &" ".repeat(at.column as usize - 1);
                    let text = format!("{padding}{statement} '{}'", file.replace('\'', "''"));
                    return self.run_text(source.name, &text);
                }
                None => Err(format!("usage: {name} FILE (in quotes when it has spaces)")),
            },
            ".open" if rest.is_empty() => {
                self.switch_to(&ecsql::Database::open_in_memory(), None);
                Ok(())
            }
            ".open" => match file_argument(rest) {
                // The file the session has open already: nothing to do.
                Some(file)
                    if self.file.as_ref().is_some_and(|open| {
                        let same = |p: &str| std::fs::canonicalize(p).ok();
                        same(open).is_some() && same(open) == same(&file)
                    }) =>
                {
                    Ok(())
                }
                Some(file) => self
                    .open_file(&file)
                    .map(|db| self.switch_to(&db, Some(file)))
                    .map_err(|e| e.to_string()),
                None => Err("usage: .open [FILE] (in quotes when it has spaces)".to_owned()),
            },
            ".archetypes" if args.is_empty() => return self.run_text(source.name, "SHOW ARCHETYPES"),
            ".indexes" if args.is_empty() => return self.run_text(source.name, "SHOW INDEXES"),
            ".schema" => match args.as_slice() {
                [] | [_] => dump::schema(&self.conn, args.first().copied()).map(|s| self.print(&s)),
                _ => Err("usage: .schema [NAME]".to_owned()),
            },
            ".dump" if rest.is_empty() => dump::dump(&self.conn).map(|s| self.print(&s)),
            ".dump" => match file_argument(rest) {
                // `.dump Position`, in sqlite3's habit, would write a file named Position.
                Some(file)
                    if self
                        .conn
                        .component_names()
                        .is_ok_and(|names| names.iter().any(|n| n.eq_ignore_ascii_case(&file))) =>
                {
                    Err(format!(
                        ".dump writes the whole database (to FILE, or the screen); {file} is a component: .schema {file} shows its statement and SELECT * FROM {file} its rows (to write a file of that name: .dump ./{file})"
                    ))
                }
                Some(file) => dump::dump(&self.conn).and_then(|s| {
                    ecsql::script::write_atomically(std::path::Path::new(&file), s.as_bytes())
                        .map_err(|e| format!("cannot write {file}: {e}; it is as it was"))
                }),
                None => Err("usage: .dump [FILE] (in quotes when it has spaces)".to_owned()),
            },
            ".archetypes" | ".indexes" | ".show" => Err(format!("{name} takes no arguments")),
            _ => Err(format!("unknown command {name}: .help lists the commands")),
        };
        match result {
            Ok(()) => Flow::Continue,
            Err(message) => {
                self.report(source, at, &message);
                self.failed()
            }
        }
    }

    fn read_file(&mut self, file: &str, source: &Source<'_>, at: Location) -> Flow {
        if self.depth >= MAX_READ_DEPTH {
            let message =
                format!(".read is nested more than {MAX_READ_DEPTH} deep (files reading each other?)");
            self.report(source, at, &message);
            return self.failed();
        }
        let file = beside(file, source.name);
        let text = match super::session::read_script(&file) {
            Ok(text) => text,
            Err(message) => {
                self.report(source, at, &message);
                return self.failed();
            }
        };
        self.depth += 1;
        let flow = self.run_file(&file, &text);
        self.depth -= 1;
        flow
    }
}

impl Session {
    /// `.parameter set|unset|list|clear`.
    fn parameter(&mut self, args: &[&str], rest: &str) -> Result<(), String> {
        let usage = "usage: .parameter set NAME VALUE | unset NAME | list | clear";
        match args {
            ["set", name, ..] => {
                // The value is the rest of the line after the name.
                let value = rest
                    .trim_start()
                    .strip_prefix("set")
                    .map(str::trim_start)
                    .and_then(|r| r.strip_prefix(name))
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| usage.to_owned())?;
                // An expression; else plain words and file names are text (`hello
                // world`, `out/units.csv`); anything else that does not read as an
                // expression is an error, not text.
                let value = match self
                    .conn
                    .query_row(&format!("SELECT {value}"), (), |r| r.get::<_, ecsql::Value>(0))
                {
                    Ok(v) => v,
                    Err(_) if value.chars().all(|c| c.is_alphanumeric() || " _./-".contains(c)) => {
                        ecsql::Value::Text(value.to_owned())
                    }
                    Err(e) => return Err(format!("{value} is not a value: {e}")),
                };
                match parameter_key(&unquote(name))? {
                    Key::Position(n) => {
                        if self.params.positional.len() < n {
                            self.params.positional.resize(n, ecsql::Value::Null);
                        }
                        self.params.positional[n - 1] = value;
                    }
                    Key::Name(n) => match self.params.named.iter_mut().find(|(k, _)| *k == n) {
                        Some((_, v)) => *v = value,
                        None => self.params.named.push((n, value)),
                    },
                }
                Ok(())
            }
            ["unset", name] => {
                match parameter_key(&unquote(name))? {
                    Key::Position(n) => {
                        if let Some(v) = self.params.positional.get_mut(n - 1) {
                            *v = ecsql::Value::Null;
                        }
                        while self.params.positional.last() == Some(&ecsql::Value::Null) {
                            self.params.positional.pop();
                        }
                    }
                    Key::Name(n) => self.params.named.retain(|(k, _)| *k != n),
                }
                Ok(())
            }
            ["list"] => {
                let mut out = String::new();
                for (i, v) in self.params.positional.iter().enumerate() {
                    out.push_str(&format!("?{} = {}\n", i + 1, v));
                }
                for (k, v) in &self.params.named {
                    out.push_str(&format!(":{k} = {}\n", v));
                }
                self.print(&out);
                Ok(())
            }
            ["clear"] => {
                self.params = ecsql::ParamValues::default();
                Ok(())
            }
            _ => Err(usage.to_owned()),
        }
    }
}

/// `.help COMMAND`: its lines of the list.
fn help_for(command: &str) -> Result<String, String> {
    let wanted = format!(".{}", command.trim().trim_start_matches('.'));
    let mut out = String::new();
    let mut inside = false;
    for line in HELP.lines() {
        if line.starts_with('.') {
            inside = line.split_whitespace().next() == Some(wanted.as_str());
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    if out.is_empty() {
        return Err(format!("no command {wanted}: .help lists them"));
    }
    Ok(out)
}

/// A dot-command's argument as written, without one pair of quotes around it.
fn unquote(text: &str) -> String {
    let text = text.trim();
    for q in ['\'', '"'] {
        if text.len() >= 2 && text.starts_with(q) && text.ends_with(q) {
            return text[1..text.len() - 1].to_owned();
        }
    }
    text.to_owned()
}

impl Session {
    /// `.show`.
    fn show(&self) -> String {
        let s = &self.settings;
        let on = |b: bool| if b { "on" } else { "off" };
        let mode = format!("{:?}", s.style.mode).to_lowercase();
        let rows = [
            ("bail", on(s.bail).to_owned()),
            ("changes", on(s.changes).to_owned()),
            ("echo", on(s.echo).to_owned()),
            ("headers", on(s.style.headers).to_owned()),
            ("maxrows", s.maxrows.to_string()),
            ("mode", mode),
            ("nullvalue", format!("{:?}", s.style.null)),
            (
                "output",
                self.output_to.clone().unwrap_or_else(|| "stdout".to_owned()),
            ),
            ("separator", format!("{:?}", s.style.separator)),
            ("timer", on(s.timer).to_owned()),
            (
                "database",
                self.file.clone().unwrap_or_else(|| ":memory:".to_owned()),
            ),
            (
                "parameters",
                (self.params.positional.len() + self.params.named.len()).to_string(),
            ),
        ];
        rows.iter().map(|(k, v)| format!("{k:>10}: {v}\n")).collect()
    }

    /// `.tables [PATTERN]`: component and event type names, one a line, sorted.
    fn tables(&self, pattern: Option<&str>) -> Result<String, String> {
        let mut names = self.conn.component_names().map_err(|e| e.to_string())?;
        let events: Vec<String> = self
            .conn
            .with_world(|w| w.events().map(|e| e.name().to_owned()).collect())
            .map_err(|e| e.to_string())?;
        names.extend(events);
        names.sort_by_key(|n| n.to_lowercase());
        let kept: Vec<String> = match pattern {
            None => names,
            Some(p) => {
                let like = |n: &String| {
                    self.conn
                        .query_row("SELECT ?1 LIKE ?2", (n.as_str(), p), |r| r.get::<_, bool>(0))
                        .unwrap_or(false)
                };
                names.into_iter().filter(like).collect()
            }
        };
        Ok(kept.iter().map(|n| format!("{n}\n")).collect())
    }
}

/// A parameter a `.parameter` command names.
enum Key {
    Position(usize),
    Name(String),
}

fn parameter_key(name: &str) -> Result<Key, String> {
    let bad = || format!("{name} is not a parameter: write :name, $name, @name or ?N");
    match name.split_at_checked(1) {
        // A number after any sigil is a position, as SQL reads `$1` or `:1`; at most
        // SQLite's number of parameters.
        Some(("?", n)) | Some((":" | "$" | "@", n))
            if n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty() =>
        {
            n.parse::<usize>()
                .ok()
                .filter(|&n| (1..=32766).contains(&n))
                .map(Key::Position)
                .ok_or_else(|| {
                    format!("{name} is not a parameter: write :name, $name, @name or ?N (N from 1 to 32766)")
                })
        }
        Some((":" | "$" | "@", n)) if !n.is_empty() => Ok(Key::Name(n.to_owned())),
        _ => Err(bad()),
    }
}

/// Where `.read FILE` looks for a relative FILE: beside the file that reads it (so a script
/// reads its neighbours from any folder), or, when there is none there but there is one
/// in the current folder, that one (as before); from the prompt, `-c` or standard input,
/// in the current folder.
fn beside(file: &str, reader: &str) -> String {
    let path = std::path::Path::new(file);
    if path.is_absolute() || reader.is_empty() || reader == "<stdin>" {
        return file.to_owned();
    }
    match std::path::Path::new(reader).parent() {
        Some(dir) if !dir.as_os_str().is_empty() => {
            let there = dir.join(path);
            if there.exists() || !path.exists() {
                there.display().to_string()
            } else {
                file.to_owned()
            }
        }
        _ => file.to_owned(),
    }
}

fn on_off(args: &[&str], command: &str) -> Result<bool, String> {
    match args {
        [v] if v.eq_ignore_ascii_case("on") => Ok(true),
        [v] if v.eq_ignore_ascii_case("off") => Ok(false),
        _ => Err(format!("usage: {command} on|off")),
    }
}

/// The one file name a dot-command takes: the rest of its line, in single or double
/// quotes (doubled inside) when it has spaces; `None` for none, or for several words
/// without quotes.
/// `.import`'s arguments: a format flag, the file (in quotes when it has spaces) and the
/// component.
fn import_arguments(rest: &str) -> Option<(Option<&'static str>, String, String)> {
    let (format, rest) = match rest.split_once(char::is_whitespace) {
        Some(("--csv", rest)) => (Some("csv"), rest.trim_start()),
        Some(("--json", rest)) => (Some("json"), rest.trim_start()),
        _ => (None, rest),
    };
    let (file, component) = rest.trim_end().rsplit_once(char::is_whitespace)?;
    Some((format, file_argument(file)?, component.to_owned()))
}

fn file_argument(rest: &str) -> Option<String> {
    let rest = rest.trim();
    for quote in ['\'', '"'] {
        if rest.len() >= 2 && rest.starts_with(quote) && rest.ends_with(quote) {
            let inner = &rest[1..rest.len() - 1];
            let name = inner.replace(&format!("{quote}{quote}"), &quote.to_string());
            return (!name.is_empty()).then_some(name);
        }
    }
    (!rest.is_empty() && !rest.contains(char::is_whitespace)).then(|| rest.to_owned())
}
