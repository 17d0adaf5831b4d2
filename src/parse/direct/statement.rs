//! The direct parser's statements: UPDATE, INSERT, DELETE, SPAWN and DESPAWN in their
//! common forms (a query goes to `query.rs`), each made as the sqlparser path makes it or
//! given up on (`None`).

use super::*;

impl Direct<'_> {
    pub(super) fn statement(&mut self) -> Step<Statement> {
        let (kind, at) = self.statement_kind()?;
        Some(Statement {
            kind,
            at,
            params: self.parameters(),
        })
    }

    /// `statement`, built in its box: a statement is a few hundred bytes, moved into the
    /// box once.
    pub(super) fn boxed_statement(&mut self) -> Step<Box<Statement>> {
        let (kind, at) = self.statement_kind()?;
        Some(Box::new(Statement {
            kind,
            at,
            params: self.parameters(),
        }))
    }

    /// The parameters the statement just read names.
    fn parameters(&mut self) -> Parameters {
        Parameters {
            positional: self.last_param,
            named: std::mem::take(&mut self.named_params),
        }
    }

    /// A statement's kind and where it starts.
    fn statement_kind(&mut self) -> Step<(StatementKind, Location)> {
        self.last_param = 0;
        self.named_params.clear();
        self.depth = 0;
        self.widest = 0;
        let at = self.here();
        let kind = if self.is_word(Keyword::SELECT) || self.kind() == Kind::LParen {
            StatementKind::Select(self.query()?)
        } else if self.eat_word(Keyword::UPDATE) {
            self.update()?
        } else if self.eat_word(Keyword::DELETE) {
            self.delete()?
        } else if self.eat_word(Keyword::INSERT) {
            self.insert()?
        } else if self.word_is_text(0, "SPAWN") {
            self.bump();
            self.spawn()?
        } else if self.word_is_text(0, "DESPAWN") {
            self.bump();
            if self.is_word(Keyword::FROM) {
                StatementKind::DespawnFrom {
                    source: self.source()?,
                }
            } else {
                let mut ids = vec![self.expr()?];
                while self.eat(Kind::Comma) {
                    ids.push(self.expr()?);
                }
                StatementKind::Despawn { ids }
            }
        } else {
            return None;
        };
        Some((kind, at))
    }

    /// `UPDATE C [AS a] SET f = e, … [FROM …] [WHERE …]`.
    pub(super) fn update(&mut self) -> Step<StatementKind> {
        // `UPDATE OR …` and `UPDATE REPLACE …` are conflict clauses to sqlparser.
        if self.is_word(Keyword::OR) || self.is_word(Keyword::REPLACE) {
            return None;
        }
        let (target, alias) = match self.table_ref()? {
            TableRef::Named { name, alias } => (name, alias),
            _ => return None,
        };
        self.expect_word(Keyword::SET)?;
        let mut assignments = Vec::new();
        loop {
            // `SET C.f = …` names the target's own field: the last part is kept.
            let mut field = self.name_part()?;
            if self.eat(Kind::Dot) {
                field = self.name_part()?;
            }
            self.expect(Kind::Eq)?;
            let value = self.expr()?;
            assignments.push(Assignment { field, value });
            if !self.eat(Kind::Comma) {
                break;
            }
        }
        let from = self.optional_from()?.into_vec();
        let filter = self.where_clause()?;
        Some(StatementKind::Update {
            target,
            alias,
            assignments,
            from,
            filter,
        })
    }

    /// `INSERT [OR REPLACE | OR IGNORE] INTO C [(f, …)] VALUES (…), … | SELECT …`.
    pub(super) fn insert(&mut self) -> Step<StatementKind> {
        let on_conflict = if self.is_word(Keyword::OR) && self.word_at(1, Keyword::REPLACE) {
            self.skip(2);
            OnConflict::Replace
        } else if self.is_word(Keyword::OR) && self.word_at(1, Keyword::IGNORE) {
            self.skip(2);
            OnConflict::DoNothing
        } else {
            OnConflict::Fail
        };
        self.expect_word(Keyword::INTO)?;
        // `INSERT INTO LOCAL DIRECTORY …` is another statement to sqlparser.
        if self.is_word(Keyword::LOCAL) || self.is_word(Keyword::DIRECTORY) {
            return None;
        }
        let t = self.table_name()?;
        let component = self.ident(&t);
        if self.kind() == Kind::Dot {
            return None;
        }
        let mut columns = Vec::new();
        if self.kind() == Kind::LParen && !self.word_at(1, Keyword::SELECT) && self.kind_at(1) != Kind::LParen
        {
            self.bump();
            columns = self.list_to_rparen(Self::name_part)?;
        }
        let source = if self.is_word(Keyword::VALUES) {
            self.bump();
            // The rows are placed where the first one's parenthesis is, as sqlparser's
            // span of VALUES places them.
            let at = self.here();
            let mut rows = Vec::new();
            loop {
                self.expect(Kind::LParen)?;
                let row = self.list_to_rparen(Self::expr)?;
                rows.push(row);
                if !self.eat(Kind::Comma) {
                    break;
                }
            }
            Query {
                body: SetExpr::Values(rows),
                order_by: Vec::new(),
                limit: None,
                offset: None,
                at,
            }
        } else if self.is_word(Keyword::SELECT) || self.kind() == Kind::LParen {
            self.query()?
        } else {
            return None;
        };
        Some(StatementKind::Insert {
            component,
            columns,
            source,
            on_conflict,
        })
    }

    /// `DELETE FROM C [WHERE …]`.
    pub(super) fn delete(&mut self) -> Step<StatementKind> {
        self.expect_word(Keyword::FROM)?;
        let component = match self.table_ref()? {
            TableRef::Named { name, alias: None } => name,
            _ => return None,
        };
        let filter = self.where_clause()?;
        Some(StatementKind::Delete { component, filter })
    }

    /// `SPAWN [AT id] C[(args)], … [FROM …]`, as `StatementParser::parse_spawn` reads it.
    pub(super) fn spawn(&mut self) -> Step<StatementKind> {
        // `AT` is the keyword unless it names a component: `SPAWN At(…)`, `SPAWN At, …`.
        // `AT (` is decided past the matching `)`: the sqlparser way looks that far.
        if self.is_word(Keyword::AT) && self.kind_at(1) == Kind::LParen {
            return None;
        }
        let names_component = matches!(self.kind_at(1), Kind::Comma | Kind::Semi | Kind::Eof);
        let at = if !names_component && self.eat_word(Keyword::AT) {
            Some(self.expr()?)
        } else {
            None
        };
        let mut items = Vec::new();
        let no_items = matches!(self.kind(), Kind::Semi | Kind::Eof) || self.is_word(Keyword::FROM);
        if !(at.is_some() && no_items) {
            loop {
                let name = self.name_part()?;
                let mut args = Vec::new();
                if self.eat(Kind::LParen) && !self.eat(Kind::RParen) {
                    args = self.list_to_rparen(Self::spawn_arg)?;
                }
                items.push(SpawnItem { name, args });
                if !self.eat(Kind::Comma) {
                    break;
                }
            }
        }
        let source = if self.is_word(Keyword::FROM) {
            Some(self.source()?)
        } else {
            None
        };
        Some(StatementKind::Spawn { at, items, source })
    }

    /// One value of a SPAWN's component: `e` or `name => e`.
    pub(super) fn spawn_arg(&mut self) -> Step<SpawnArg> {
        let name = if matches!(self.kind(), Kind::Word | Kind::Quoted) && self.kind_at(1) == Kind::Arrow {
            let name = self.name_part()?;
            self.bump();
            Some(name)
        } else {
            None
        };
        let value = self.expr()?;
        Some(SpawnArg { name, value })
    }

    /// `FROM items [WHERE e]` or `FROM SELECT …`: the rows a SPAWN or DESPAWN runs over.
    pub(super) fn source(&mut self) -> Step<Source> {
        self.expect_word(Keyword::FROM)?;
        if self.is_word(Keyword::SELECT) {
            let query = self.query()?;
            let base = TableRef::Subquery {
                query: Box::new(query),
                alias: None,
                columns: Vec::new(),
            };
            return Some(Source {
                from: vec![FromItem {
                    base,
                    joins: Vec::new(),
                }],
                filter: None,
            });
        }
        let from = self.tables()?.into_vec();
        let filter = self.where_clause()?;
        Some(Source { from, filter })
    }

    pub(super) fn name_part(&mut self) -> Step<Ident> {
        match self.kind() {
            Kind::Word | Kind::Quoted => {
                let t = self.bump();
                Some(self.ident(&t))
            }
            _ => None,
        }
    }

    pub(super) fn where_clause(&mut self) -> Step<Option<Expr>> {
        if self.eat_word(Keyword::WHERE) {
            Some(Some(self.expr()?))
        } else {
            Some(None)
        }
    }
}
