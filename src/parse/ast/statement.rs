//! Statements: `Statement` (a kind, where it starts, the parameters it names) and
//! `StatementKind`, one variant a statement, with the parts they are made of (fields,
//! SPAWN's items, sources, assignments, COPY's options, file names, a system's
//! declaration).
//!
//! Invariant: a statement's parts are expressions and queries of `expr.rs`; nothing here
//! refers to sqlparser.

use super::expr::{Expr, FromItem, Ident, Param, Query, SelectItem};
use crate::location::Location;
use crate::storage::FieldType;

// ---- statements -------------------------------------------------------------------------

/// The modes of a transaction as BEGIN and SET TRANSACTION name them: `ISOLATION LEVEL
/// …`, `READ ONLY`, `READ WRITE`, `[NOT] DEFERRABLE` (taken and without effect); `None`
/// where the connection's default holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransactionModes {
    pub isolation: Option<Isolation>,
    pub read_only: Option<bool>,
}

/// An isolation level, as SQL names them, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isolation {
    ReadUncommitted,
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Isolation {
    /// The level as PostgreSQL's settings write it (`read committed`).
    pub fn name(self) -> &'static str {
        match self {
            Isolation::ReadUncommitted => "read uncommitted",
            Isolation::ReadCommitted => "read committed",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::Serializable => "serializable",
        }
    }

    /// The level a setting's value names (`read committed`, `READ-COMMITTED`, …).
    pub fn named(value: &str) -> Option<Isolation> {
        let words: Vec<String> = value
            .split(|c: char| c.is_whitespace() || c == '-' || c == '_')
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        match words.as_slice() {
            ["read", "uncommitted"] => Some(Isolation::ReadUncommitted),
            ["read", "committed"] => Some(Isolation::ReadCommitted),
            ["repeatable", "read"] => Some(Isolation::RepeatableRead),
            ["serializable"] => Some(Isolation::Serializable),
            _ => None,
        }
    }
}

impl TransactionModes {
    /// A transaction that holds the database from BEGIN and may write, whatever the
    /// connection's defaults.
    pub const HOLDING: TransactionModes = TransactionModes {
        isolation: Some(Isolation::Serializable),
        read_only: Some(false),
    };

    /// The modes `words` name (lowercase, in order: `isolation level read committed`,
    /// `read only`, …); what is wrong with them when they do not.
    pub fn from_words(words: &[&str]) -> Result<TransactionModes, String> {
        let mut modes = TransactionModes::default();
        let mut rest = words;
        while !rest.is_empty() {
            let before = modes;
            rest = match rest {
                ["isolation", "level", "serializable", more @ ..] => {
                    modes.isolation = Some(Isolation::Serializable);
                    more
                }
                ["isolation", "level", "repeatable", "read", more @ ..] => {
                    modes.isolation = Some(Isolation::RepeatableRead);
                    more
                }
                ["isolation", "level", "read", "committed", more @ ..] => {
                    modes.isolation = Some(Isolation::ReadCommitted);
                    more
                }
                ["isolation", "level", "read", "uncommitted", more @ ..] => {
                    modes.isolation = Some(Isolation::ReadUncommitted);
                    more
                }
                ["read", "only", more @ ..] => {
                    modes.read_only = Some(true);
                    more
                }
                ["read", "write", more @ ..] => {
                    modes.read_only = Some(false);
                    more
                }
                ["deferrable", more @ ..] | ["not", "deferrable", more @ ..] => more,
                _ => {
                    return Err(format!(
                        "invalid transaction mode \"{}\": expected ISOLATION LEVEL {{SERIALIZABLE | REPEATABLE READ | READ COMMITTED | READ UNCOMMITTED}}, READ ONLY, READ WRITE or [NOT] DEFERRABLE",
                        rest.join(" ")
                    ));
                }
            };
            let twice = before
                .isolation
                .is_some_and(|level| modes.isolation != Some(level))
                || before.read_only.is_some_and(|ro| modes.read_only != Some(ro));
            if twice {
                return Err(format!(
                    "conflicting transaction modes in \"{}\": name each once",
                    words.join(" ")
                ));
            }
        }
        Ok(modes)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    pub kind: StatementKind,
    pub at: Location,
    /// The parameters it names.
    pub params: Parameters,
}

/// The parameters a statement names: positions up to `positional` (`?1` …), and names
/// (without their sigil).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parameters {
    pub positional: usize,
    pub named: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FieldSpec {
    pub name: Ident,
    pub ty: FieldType,
    pub default: Option<Expr>,
}

/// One component of a SPAWN: `Name`, `Name(1, 2)` or `Name(x => 1)`.
#[derive(Clone, Debug, PartialEq)]
pub struct SpawnItem {
    pub name: Ident,
    pub args: Vec<SpawnArg>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SpawnArg {
    pub name: Option<Ident>,
    pub value: Expr,
}

/// The rows a SPAWN or DESPAWN runs over: `FROM items [WHERE filter]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    pub from: Vec<FromItem>,
    pub filter: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    pub field: Ident,
    pub value: Expr,
}

#[derive(Clone, Debug, PartialEq)]
pub enum OnConflict {
    /// An entity that already has the component is an error.
    Fail,
    DoNothing,
    /// `INSERT OR REPLACE`: the new row replaces the old one whole.
    Replace,
    /// `ON CONFLICT DO UPDATE SET …`; `excluded.f` names the proposed value.
    DoUpdate(Vec<Assignment>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum StatementKind {
    /// `CREATE COMPONENT [IF NOT EXISTS] name (fields) [WITH (storage = sparse | dense)]`.
    CreateComponent {
        name: Ident,
        fields: Vec<FieldSpec>,
        sparse: bool,
        if_not_exists: bool,
    },
    /// `CREATE TAG [IF NOT EXISTS] name [WITH (storage = sparse | dense)]`.
    CreateTag {
        name: Ident,
        sparse: bool,
        if_not_exists: bool,
    },
    DropComponent {
        name: Ident,
        if_exists: bool,
    },
    ShowComponents,
    ShowArchetypes,
    ShowIndexes,
    /// `CREATE [SPATIAL] INDEX [IF NOT EXISTS] [name] ON component [USING filter] (key,
    /// …) [USING filter] [WHERE predicate]`: each key a field, or an expression of the
    /// component's fields for a function index, which may be partial (WHERE).
    CreateIndex {
        name: Option<Ident>,
        method: IndexUsing,
        if_not_exists: bool,
        component: Ident,
        keys: Vec<Expr>,
        predicate: Option<Expr>,
    },
    DropIndex {
        name: Ident,
        if_exists: bool,
    },
    Describe {
        name: Ident,
    },
    Spawn {
        /// `SPAWN AT id`: the entity gets this id instead of the next free one.
        at: Option<Expr>,
        items: Vec<SpawnItem>,
        source: Option<Source>,
    },
    Insert {
        component: Ident,
        columns: Vec<Ident>,
        source: Query,
        on_conflict: OnConflict,
    },
    Delete {
        component: Ident,
        filter: Option<Expr>,
    },
    Despawn {
        ids: Vec<Expr>,
    },
    DespawnFrom {
        source: Source,
    },
    Select(Query),
    Update {
        target: Ident,
        alias: Option<Ident>,
        assignments: Vec<Assignment>,
        from: Vec<FromItem>,
        filter: Option<Expr>,
    },
    /// `write RETURNING items`: an INSERT, UPDATE, DELETE, SPAWN or DESPAWN that returns
    /// the items for each entity it wrote (as the write left it; as it was, for DELETE and
    /// DESPAWN).
    Returning {
        write: Box<StatementKind>,
        items: Vec<SelectItem>,
    },
    Explain(Box<Statement>),
    /// `SUBSCRIBE [TO] query`: a live query, opened by `Connection::subscribe` (the shell's
    /// `.subscribe`); only EXPLAIN runs it as a statement.
    Subscribe(Box<Statement>),
    /// `EXPLAIN ANALYZE statement`, `EXPLAIN (ANALYZE[, TIMING false][, KEEP]) statement`:
    /// runs it and prints the plan with what each part did; `timing` false leaves the
    /// times out. A write runs in a savepoint rolled back after, unless `keep`.
    ExplainAnalyze {
        statement: Box<Statement>,
        timing: bool,
        keep: bool,
    },
    /// `BEGIN [TRANSACTION | WORK] [modes]`, `START TRANSACTION [modes]`.
    Begin(TransactionModes),
    Commit,
    Rollback,
    /// `SET name = value` (`TO`, `SESSION`, `SET TIME ZONE`), `SET name TO DEFAULT`,
    /// `RESET name` (`value` None): one of PostgreSQL's settings for this connection, or
    /// one of ecsql's (as its PRAGMA). `local` (`SET LOCAL`): until the transaction ends.
    SetVariable {
        name: Ident,
        value: Option<String>,
        local: bool,
    },
    /// `SHOW name`, `SHOW ALL` (`name` None): a setting's value.
    ShowVariable {
        name: Option<Ident>,
    },
    /// `PRAGMA name [= value]`: reads or sets one of the connection's settings; a bare
    /// `PRAGMA` (no name) lists them.
    Pragma {
        name: Option<Ident>,
        value: Option<String>,
    },
    /// `CREATE SYSTEM name [clauses] AS statement | AS BEGIN statement; … END`.
    CreateSystem(Box<SystemSpec>),
    DropSystem {
        name: Ident,
        if_exists: bool,
    },
    /// `ALTER SYSTEM name ENABLE | DISABLE`.
    AlterSystem {
        name: Ident,
        enable: bool,
    },
    /// `CREATE PHASE name BEFORE | AFTER phase`.
    CreatePhase {
        name: Ident,
        before: bool,
        anchor: Ident,
    },
    DropPhase {
        name: Ident,
        if_exists: bool,
    },
    ShowSystems,
    /// `SHOW SYSTEM RUNS`: each system's recent runs.
    ShowSystemRuns,
    /// `TICK [n] [WITH dt = expr]`.
    Tick {
        count: Option<Expr>,
        dt: Option<Expr>,
    },
    /// `EXPLAIN TICK`: the order systems run in, and each statement's plan.
    ExplainTick,
    /// `CREATE EVENT name (fields) [WITH (keep = n TICKS)]`.
    CreateEvent {
        name: Ident,
        fields: Vec<FieldSpec>,
        keep: Option<u64>,
    },
    DropEvent {
        name: Ident,
        if_exists: bool,
    },
    ShowEvents,
    /// `SAVE TO 'file'`: the database written to a snapshot file.
    Save {
        path: FileName,
    },
    /// `LOAD FROM 'file'`: the database replaced by a snapshot file's.
    Load {
        path: FileName,
    },
    /// `CHECKPOINT`: a file database's snapshot written anew, its journal emptied.
    Checkpoint,
    /// `COPY (query) TO 'file' [(options)]`, and `COPY C [(columns)] TO 'file'` (the query
    /// `SELECT id, columns FROM C`).
    CopyTo {
        query: Box<Query>,
        path: FileName,
        options: Vec<CopyOption>,
    },
    /// `COPY (SUBSCRIBE [TO] query) TO STDOUT [(options)]`: a live query's batches
    /// streamed to a server's client as the lines of a COPY that lasts until the client
    /// cancels it (as Materialize streams one).
    CopySubscribe {
        query: Box<Query>,
        options: Vec<CopyOption>,
    },
    /// `COPY C [(columns)] FROM 'file' [(options)]`: rows of a file as components `C`.
    CopyFrom {
        component: Ident,
        columns: Vec<Ident>,
        path: FileName,
        options: Vec<CopyOption>,
    },
}

/// One `name [value]` of COPY's options: `FORMAT csv`, `HEADER false`, `DELIMITER ';'`.
#[derive(Clone, Debug, PartialEq)]
pub struct CopyOption {
    pub name: Ident,
    /// As written: a word, a quoted text (its contents) or a number; `None` when absent.
    pub value: Option<String>,
}

/// A file a statement names: as text, or a parameter whose TEXT value is the name; or,
/// for COPY, the client's side of a server connection (`TO STDOUT`, `FROM STDIN`).
#[derive(Clone, Debug, PartialEq)]
pub enum FileName {
    Text(String),
    Param(Param),
    Stdout,
    Stdin,
}

/// A system as `CREATE SYSTEM` declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct SystemSpec {
    pub name: Ident,
    /// `IN PHASE p`; `update` when not given.
    pub phase: Option<Ident>,
    /// `BEFORE s, …`: the systems this one runs before (in the same phase).
    pub before: Vec<Ident>,
    /// `AFTER s, …`.
    pub after: Vec<Ident>,
    /// `EVERY n TICKS`: runs on ticks whose number is a multiple of n (n ≥ 1).
    pub every: Option<u64>,
    /// `WHEN (condition)`, evaluated just before each run.
    pub when: Option<Expr>,
    /// The statements it runs, in order.
    pub body: Vec<Statement>,
    /// Written as `AS BEGIN … END` (else one statement after `AS`).
    pub block: bool,
}

impl SystemSpec {
    /// A system called `name` with no clause and no statement yet.
    pub fn named(name: Ident) -> SystemSpec {
        SystemSpec {
            name,
            phase: None,
            before: Vec::new(),
            after: Vec::new(),
            every: None,
            when: None,
            body: Vec::new(),
            block: false,
        }
    }
}

/// What kind of index CREATE INDEX asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexUsing {
    /// `CREATE INDEX`: ordered, or a relation index over an ENTITY field.
    Value,
    /// `CREATE SPATIAL INDEX`.
    Spatial,
    /// `CREATE INDEX … USING filter`.
    Filter,
}
