//! What a statement is, asked of its `StatementKind`: whether the schedule runs it,
//! whether a system may run it, whether it serves its text at any place of a script, its
//! leading keywords (`verb`), whether it only reads.
//!
//! Invariant: a statement that wraps another (EXPLAIN, EXPLAIN ANALYZE, a write's
//! RETURNING) answers from the one it wraps wherever the answer depends on it: whether it
//! serves any place, whether it only reads (EXPLAIN ANALYZE runs it), whether a system
//! may run it (RETURNING).

use super::statement::StatementKind;

impl StatementKind {
    /// True for the statements the schedule runs (systems, phases, ticks, SHOW EVENTS).
    pub fn is_schedule(&self) -> bool {
        matches!(
            self,
            StatementKind::CreateSystem(_)
                | StatementKind::DropSystem { .. }
                | StatementKind::AlterSystem { .. }
                | StatementKind::CreatePhase { .. }
                | StatementKind::DropPhase { .. }
                | StatementKind::ShowSystems
                | StatementKind::ShowSystemRuns
                | StatementKind::Tick { .. }
                | StatementKind::ExplainTick
                | StatementKind::ShowEvents
        )
    }

    /// True for the statements a system may run: queries and writes of rows.
    pub fn runs_in_system(&self) -> bool {
        matches!(
            self,
            StatementKind::Select(_)
                | StatementKind::Insert { .. }
                | StatementKind::Update { .. }
                | StatementKind::Delete { .. }
                | StatementKind::Spawn { .. }
                | StatementKind::Despawn { .. }
                | StatementKind::DespawnFrom { .. }
        ) || matches!(self, StatementKind::Returning { write, .. } if write.runs_in_system())
    }

    /// True for a statement whose errors are all places in its own text, and of which
    /// nothing outlives its run: parsed as beginning at line 1, column 1, it serves its
    /// text at any place of a script, its errors moved there (`Error::move_to`). The
    /// queries and writes of rows, transactions and EXPLAIN of those; not a CREATE
    /// SYSTEM (its statements are kept, and their errors show up at ticks), nor a TICK
    /// (whose errors are the systems').
    pub fn is_place_independent(&self) -> bool {
        match self {
            StatementKind::Explain(s) | StatementKind::ExplainAnalyze { statement: s, .. } => {
                s.kind.is_place_independent()
            }
            StatementKind::Returning { write, .. } => write.is_place_independent(),
            StatementKind::Begin(_) | StatementKind::Commit | StatementKind::Rollback => true,
            kind => kind.runs_in_system(),
        }
    }
}

impl StatementKind {
    /// The statement's leading keyword(s), e.g. `"SPAWN"` or `"CREATE COMPONENT"`: what a
    /// shell needs to say what a statement did.
    pub fn verb(&self) -> &'static str {
        match self {
            StatementKind::CreateComponent { .. } => "CREATE COMPONENT",
            StatementKind::CreateTag { .. } => "CREATE TAG",
            StatementKind::DropComponent { .. } => "DROP COMPONENT",
            StatementKind::ShowComponents => "SHOW COMPONENTS",
            StatementKind::ShowArchetypes => "SHOW ARCHETYPES",
            StatementKind::ShowIndexes => "SHOW INDEXES",
            StatementKind::CreateIndex { .. } => "CREATE INDEX",
            StatementKind::DropIndex { .. } => "DROP INDEX",
            StatementKind::Describe { .. } => "DESCRIBE",
            StatementKind::Spawn { .. } => "SPAWN",
            StatementKind::Insert { .. } => "INSERT",
            StatementKind::Delete { .. } => "DELETE",
            StatementKind::Despawn { .. } | StatementKind::DespawnFrom { .. } => "DESPAWN",
            StatementKind::Select(_) => "SELECT",
            StatementKind::Update { .. } => "UPDATE",
            StatementKind::Explain(_) => "EXPLAIN",
            StatementKind::Subscribe(_) => "SUBSCRIBE",
            StatementKind::ExplainAnalyze { .. } => "EXPLAIN ANALYZE",
            StatementKind::Returning { write, .. } => match write.verb() {
                "SPAWN" => "SPAWN … RETURNING",
                "INSERT" => "INSERT … RETURNING",
                "UPDATE" => "UPDATE … RETURNING",
                "DELETE" => "DELETE … RETURNING",
                "DESPAWN" => "DESPAWN … RETURNING",
                _ => "RETURNING",
            },
            StatementKind::Begin(_) => "BEGIN",
            StatementKind::Pragma { .. } => "PRAGMA",
            StatementKind::Commit => "COMMIT",
            StatementKind::Rollback => "ROLLBACK",
            StatementKind::CreateSystem(_) => "CREATE SYSTEM",
            StatementKind::DropSystem { .. } => "DROP SYSTEM",
            StatementKind::AlterSystem { .. } => "ALTER SYSTEM",
            StatementKind::CreatePhase { .. } => "CREATE PHASE",
            StatementKind::DropPhase { .. } => "DROP PHASE",
            StatementKind::ShowSystems => "SHOW SYSTEMS",
            StatementKind::ShowSystemRuns => "SHOW SYSTEM RUNS",
            StatementKind::Tick { .. } => "TICK",
            StatementKind::Save { .. } => "SAVE",
            StatementKind::Load { .. } => "LOAD",
            StatementKind::Checkpoint => "CHECKPOINT",
            StatementKind::CopyTo { .. }
            | StatementKind::CopyFrom { .. }
            | StatementKind::CopySubscribe { .. } => "COPY",
            StatementKind::ExplainTick => "EXPLAIN TICK",
            StatementKind::CreateEvent { .. } => "CREATE EVENT",
            StatementKind::DropEvent { .. } => "DROP EVENT",
            StatementKind::ShowEvents => "SHOW EVENTS",
            StatementKind::SetVariable { value: None, .. } => "RESET",
            StatementKind::SetVariable { .. } => "SET",
            StatementKind::ShowVariable { .. } => "SHOW",
        }
    }

    /// True for a statement that changes the database's rows, catalog or schedule: not a
    /// read, a transaction's BEGIN, COMMIT or ROLLBACK, a setting (SET, SHOW, PRAGMA: a
    /// PRAGMA that sets the clock says so itself), SAVE, LOAD or CHECKPOINT (refused
    /// inside a transaction), nor an EXPLAIN ANALYZE without KEEP (its write is taken
    /// back). A transaction begun READ ONLY refuses it; one begun READ COMMITTED begins
    /// holding the database at its first.
    pub fn writes(&self) -> bool {
        !self.is_read_only()
            && !self.is_control()
            && !matches!(
                self,
                StatementKind::Save { .. }
                    | StatementKind::Load { .. }
                    | StatementKind::Checkpoint
                    | StatementKind::ExplainAnalyze { keep: false, .. }
            )
    }

    /// True for a transaction's BEGIN, COMMIT and ROLLBACK and the settings' SET, SHOW
    /// and PRAGMA: statements about the connection, not queries of the database (a
    /// transaction's isolation level may still be set after them).
    pub fn is_control(&self) -> bool {
        matches!(
            self,
            StatementKind::Begin(_)
                | StatementKind::Commit
                | StatementKind::Rollback
                | StatementKind::SetVariable { .. }
                | StatementKind::ShowVariable { .. }
                | StatementKind::Pragma { .. }
        )
    }

    /// True for statements that never change the database (they may run beside others).
    pub fn is_read_only(&self) -> bool {
        matches!(
            self,
            StatementKind::ShowComponents
                | StatementKind::ShowArchetypes
                | StatementKind::ShowIndexes
                | StatementKind::Describe { .. }
                | StatementKind::Select(_)
                | StatementKind::Explain(_)
                | StatementKind::Subscribe(_)
                | StatementKind::ShowSystems
                | StatementKind::ShowSystemRuns
                | StatementKind::ExplainTick
                | StatementKind::ShowEvents
                | StatementKind::ShowVariable { .. }
                | StatementKind::CopyTo { .. }
                | StatementKind::CopySubscribe { .. }
        ) || matches!(self, StatementKind::ExplainAnalyze { statement, .. } if statement.kind.is_read_only())
    }
}
