//! The shell's live queries: `SUBSCRIBE query` (or `.subscribe query`) opens one, whose
//! first batch prints at once; after every statement and dot-command, each open
//! subscription's batches that came since print, in the order they came; `.unsubscribe`
//! closes them.
//!
//! Invariant: a batch prints once, after the statement whose commit (or tick) made it, in
//! the output mode of the time; a subscription that ended prints its error (a failure,
//! for the exit code and `.bail`) and is closed.

use ecsql::Location;

use super::session::{Flow, OpenSubscription as Open, Session, Source};

/// `piece` from its first word: spaces and comments before it left out.
fn after_comments(piece: &str) -> &str {
    let mut rest = piece;
    loop {
        rest = rest.trim_start();
        if let Some(comment) = rest.strip_prefix("--") {
            rest = comment.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(comment) = rest.strip_prefix("/*") {
            rest = comment.split_once("*/").map_or("", |(_, after)| after);
        } else {
            return rest;
        }
    }
}

impl Session {
    /// Whether `piece` (one statement's text) is a SUBSCRIBE: its first word, after
    /// spaces and comments.
    pub(super) fn is_subscribe(piece: &str) -> bool {
        let word: String = after_comments(piece)
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        word.eq_ignore_ascii_case("SUBSCRIBE")
    }

    /// Opens a subscription to the `SUBSCRIBE` statement `piece` (starting at `at`) and
    /// prints its first batch.
    pub(super) fn subscribe(&mut self, piece: &str, at: Location) -> Result<(), ecsql::Error> {
        let feed = self.conn.subscribe_at(piece, at, self.params.clone())?;
        // Numbers are not given twice: a closed one's stays closed.
        self.subscribed += 1;
        let number = self.subscribed;
        let text = one_line(query_of(piece));
        self.subscriptions.push(Open { number, text, feed });
        Ok(())
    }

    /// `.subscribe` without a query: the open subscriptions, one a line.
    pub(super) fn list_subscriptions(&mut self) {
        let text: String = match self.subscriptions.is_empty() {
            true => "no subscriptions open (SUBSCRIBE query, or .subscribe query, opens one)\n".to_owned(),
            false => self
                .subscriptions
                .iter()
                .map(|s| format!("{}: {}\n", s.number, s.text))
                .collect(),
        };
        self.print(&text);
    }

    /// `.unsubscribe [N]`: closes subscription N, or every one.
    pub(super) fn unsubscribe(&mut self, args: &[&str]) -> Result<(), String> {
        match args {
            [] => {
                self.subscriptions.clear();
                Ok(())
            }
            [n] => {
                let open: Vec<String> = self.subscriptions.iter().map(|s| s.number.to_string()).collect();
                let number = n.parse::<usize>().ok();
                match self.subscriptions.iter().position(|s| Some(s.number) == number) {
                    Some(i) => {
                        self.subscriptions.remove(i);
                        Ok(())
                    }
                    None if open.is_empty() => Err(format!("no subscription {n}: none is open")),
                    None => Err(format!("no subscription {n}: open are {}", open.join(", "))),
                }
            }
            _ => Err("usage: .unsubscribe [N] (no N: every subscription)".to_owned()),
        }
    }

    /// Prints every batch waiting, subscription by subscription; one that ended prints
    /// its error at `at` of `source` and is closed.
    pub(super) fn print_batches(&mut self, source: &Source<'_>, at: Location) -> Flow {
        let mut flow = Flow::Continue;
        let mut i = 0;
        while i < self.subscriptions.len() {
            let ended = loop {
                match self.subscriptions[i].feed.try_next() {
                    Ok(Some(rows)) => {
                        let (number, text) = (self.subscriptions[i].number, &self.subscriptions[i].text);
                        let caption = format!("subscription {number}: {text}\n");
                        self.print_batch(&caption, number, rows);
                    }
                    Ok(None) => break None,
                    Err(e) => break Some(e),
                }
            };
            match ended {
                Some(e) => {
                    let number = self.subscriptions.remove(i).number;
                    self.report(source, at, &format!("subscription {number}: {e}"));
                    if self.failed() != Flow::Continue {
                        flow = Flow::Bail;
                    }
                }
                None => i += 1,
            }
        }
        flow
    }

    /// A batch of subscription `number`: under its caption for people; for programs
    /// (csv, json, list…), each row led by a `subscription` column holding the number.
    fn print_batch(&mut self, caption: &str, number: usize, rows: ecsql::Rows) {
        if self.settings.style.mode.is_for_people() {
            self.print(caption);
            self.print_rows(rows);
        } else {
            let n = i64::try_from(number).unwrap_or(i64::MAX);
            self.print_rows_led(rows, Some(("subscription", n)));
        }
    }
}

/// The query of a `SUBSCRIBE [TO] query` statement's text.
fn query_of(piece: &str) -> &str {
    let rest = after_comments(piece);
    let rest = rest.get("SUBSCRIBE".len()..).unwrap_or_default().trim_start();
    // `TO` is a word of its own (`TO (SELECT …)`, `TO(SELECT …)`), not a query's start.
    match rest.get(..2) {
        Some(to)
            if to.eq_ignore_ascii_case("TO")
                && !rest[2..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') =>
        {
            rest[2..].trim_start()
        }
        _ => rest,
    }
}

/// A statement's text on one line, spaces between its words, at most 60 characters.
fn one_line(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let line = words.join(" ");
    let line = line.trim_end_matches(';').trim_end();
    match line.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}
