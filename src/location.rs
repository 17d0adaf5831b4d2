//! Where something is in a statement's text: every error a statement can raise carries
//! one, and so does every node of the syntax tree and every bound expression.

use std::fmt::{self, Display, Formatter};

/// A 1-based line and column in the statement text. `0:0` means "not known".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1, counted in characters.
    pub column: u32,
}

impl Location {
    /// The place at `line`, `column` (both from 1).
    pub const fn new(line: u32, column: u32) -> Location {
        Location { line, column }
    }

    /// False for `0:0`, the place of what was not written in the statement.
    pub fn is_known(self) -> bool {
        self.line > 0
    }

    /// The place this is, counted from line 1, column 1 of a text, when that text
    /// begins at `start` of a larger one: its first line moves right, the others down.
    /// A place not known stays so.
    pub(crate) fn moved_to(self, start: Location) -> Location {
        if !self.is_known() {
            return self;
        }
        let column = if self.line == 1 {
            self.column.saturating_add(start.column.max(1) - 1)
        } else {
            self.column
        };
        Location::new(self.line.saturating_add(start.line.max(1) - 1), column)
    }
}

impl Display for Location {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}
