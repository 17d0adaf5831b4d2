//! The direct parser's queries: SELECT with its FROM list and joins, set operations,
//! ORDER BY, LIMIT and OFFSET, each made as the sqlparser path makes it or given up on.

use super::*;

impl Direct<'_> {
    /// A query; `self.height` is the highest of its expressions (and of its FROM's
    /// subqueries, a level each), which translation reads a level below the query's.
    #[recursive::recursive]
    pub(super) fn query(&mut self) -> Step<Query> {
        self.nest()?;
        let (query, highest) = self.children(Self::query_parts)?;
        self.height = highest;
        self.depth -= 1;
        Some(query)
    }

    pub(super) fn query_parts(&mut self) -> Step<Query> {
        let (body, at) = self.set_expr(0, &mut 1)?;
        let mut order_by = Vec::new();
        if self.eat_word(Keyword::ORDER) {
            self.expect_word(Keyword::BY)?;
            if self.is_word(Keyword::ALL) {
                return None;
            }
            loop {
                let expr = self.expr()?;
                let desc = if self.eat_word(Keyword::DESC) {
                    true
                } else {
                    self.eat_word(Keyword::ASC);
                    false
                };
                let nulls_first = if self.eat_word(Keyword::NULLS) {
                    if self.eat_word(Keyword::FIRST) {
                        Some(true)
                    } else {
                        self.expect_word(Keyword::LAST)?;
                        Some(false)
                    }
                } else {
                    None
                };
                order_by.push(OrderItem {
                    expr,
                    desc,
                    nulls_first,
                });
                if !self.eat(Kind::Comma) {
                    break;
                }
            }
        }
        // sqlparser's order: [OFFSET o] [LIMIT l | LIMIT ALL | LIMIT o, l] [OFFSET o].
        let mut offset = if self.eat_word(Keyword::OFFSET) {
            Some(self.offset()?)
        } else {
            None
        };
        let mut limit = None;
        if self.eat_word(Keyword::LIMIT) {
            if !self.eat_word(Keyword::ALL) {
                let first = self.expr()?;
                if offset.is_none() && self.eat(Kind::Comma) {
                    offset = Some(first);
                    limit = Some(self.expr()?);
                } else {
                    limit = Some(first);
                }
            }
            if offset.is_none() && self.eat_word(Keyword::OFFSET) {
                offset = Some(self.offset()?);
            }
        }
        Some(Query {
            body,
            order_by,
            limit,
            offset,
            at,
        })
    }

    pub(super) fn offset(&mut self) -> Step<Expr> {
        let value = self.expr()?;
        if self.is_word(Keyword::ROW) || self.is_word(Keyword::ROWS) {
            return None;
        }
        Some(value)
    }

    /// A query body and the set operations after it that bind tighter than `precedence`
    /// (INTERSECT 20, UNION and EXCEPT 10, left to right), with where it begins.
    pub(super) fn set_expr(&mut self, precedence: u8, terms: &mut usize) -> Step<(SetExpr, Location)> {
        let (mut body, at) = if self.is_word(Keyword::SELECT) {
            let select = self.select()?;
            let at = select.at;
            (SetExpr::Select(select), at)
        } else if self.eat(Kind::LParen) {
            let query = self.query()?;
            self.expect(Kind::RParen)?;
            // A query in parentheses is no level: its expressions count as this one's.
            self.widest = self.widest.max(self.height);
            let at = query.at;
            (SetExpr::Query(Box::new(query)), at)
        } else {
            return None;
        };
        loop {
            let (op, next) = if self.is_word(Keyword::UNION) {
                (SetOp::Union, 10)
            } else if self.is_word(Keyword::EXCEPT) {
                (SetOp::Except, 10)
            } else if self.is_word(Keyword::INTERSECT) {
                (SetOp::Intersect, 20)
            } else if self.is_word(Keyword::MINUS) {
                return None;
            } else {
                break;
            };
            if precedence >= next {
                break;
            }
            self.bump();
            *terms += 1;
            if *terms > MAX_TERMS || self.is_word(Keyword::BY) || self.word_at(1, Keyword::BY) {
                return None;
            }
            let all = if self.eat_word(Keyword::ALL) {
                true
            } else {
                self.eat_word(Keyword::DISTINCT);
                false
            };
            let (right, _) = self.set_expr(next, terms)?;
            body = SetExpr::SetOp {
                op,
                left: Box::new(body),
                right: Box::new(right),
                all,
            };
        }
        Some((body, at))
    }

    pub(super) fn select(&mut self) -> Step<Box<Select>> {
        let at = self.bump().at;
        if self.is_word(Keyword::AS) || self.is_word(Keyword::TOP) || self.is_word(Keyword::FROM) {
            return None;
        }
        let distinct = if self.eat_word(Keyword::DISTINCT) {
            if self.is_word(Keyword::ON) {
                return None;
            }
            true
        } else {
            self.eat_word(Keyword::ALL);
            false
        };
        if self.is_word(Keyword::TOP) || self.is_word(Keyword::FROM) {
            return None;
        }
        // Built in its box, each part read into its place there: a select is large (its
        // first item and FROM entry are held in place), and moved whole it was copied
        // from frame to frame on the way up.
        let mut select = Box::new(Select {
            distinct,
            items: SelectItems::new(),
            from: FromList::new(),
            filter: None,
            group_by: Vec::new(),
            having: None,
            windows: Vec::new(),
            at,
        });
        loop {
            select.items.push(self.select_item(at)?);
            if !self.eat(Kind::Comma) {
                break;
            }
        }
        if self.eat_word(Keyword::FROM) {
            self.tables_into(&mut select.from)?;
        }
        select.filter = self.where_clause()?;
        if self.eat_word(Keyword::GROUP) {
            let group_by = &mut select.group_by;
            self.expect_word(Keyword::BY)?;
            loop {
                if self.is_any_word(&[Keyword::ALL, Keyword::GROUPING, Keyword::CUBE, Keyword::ROLLUP])
                    || (self.kind() == Kind::LParen && self.kind_at(1) == Kind::RParen)
                {
                    return None;
                }
                group_by.push(self.expr()?);
                if !self.eat(Kind::Comma) {
                    break;
                }
            }
        }
        if self.eat_word(Keyword::HAVING) {
            select.having = Some(self.expr()?);
        }
        Some(select)
    }

    pub(super) fn select_item(&mut self, select_at: Location) -> Step<SelectItem> {
        // A word reserved there ends the list for sqlparser (a trailing comma).
        if self
            .keyword_at(0)
            .is_some_and(|k| RESERVED_FOR_COLUMN_ALIAS.contains(&k))
        {
            return None;
        }
        let item = if self.eat(Kind::Star) {
            SelectItem::Wildcard(select_at)
        } else if matches!(self.kind(), Kind::Word | Kind::Quoted)
            && self.kind_at(1) == Kind::Dot
            && self.kind_at(2) == Kind::Star
        {
            if self
                .keyword_at(0)
                .is_some_and(|k| reserved(k) || OWN_EXPRESSIONS.contains(&k))
            {
                return None;
            }
            let t = self.bump();
            self.skip(2);
            SelectItem::QualifiedWildcard(self.ident(&t))
        } else {
            let expr = self.expr()?;
            let alias = self.optional_alias()?;
            return Some(SelectItem::Expr { expr, alias });
        };
        // `* EXCEPT (…)`, `* REPLACE (…)` and their kind are sqlparser's.
        if self.is_any_word(&[
            Keyword::EXCEPT,
            Keyword::EXCLUDE,
            Keyword::REPLACE,
            Keyword::RENAME,
            Keyword::ILIKE,
        ]) {
            return None;
        }
        Some(item)
    }

    /// `FROM tables`, or nothing.
    pub(super) fn optional_from(&mut self) -> Step<FromList> {
        if self.eat_word(Keyword::FROM) {
            self.tables()
        } else {
            Some(FromList::new())
        }
    }

    pub(super) fn tables(&mut self) -> Step<FromList> {
        let mut items = FromList::new();
        self.tables_into(&mut items)?;
        Some(items)
    }

    /// `tables`, read onto the end of `items`.
    pub(super) fn tables_into(&mut self, items: &mut FromList) -> Step<()> {
        loop {
            items.push(self.table_with_joins()?);
            if !self.eat(Kind::Comma) {
                return Some(());
            }
        }
    }

    pub(super) fn table_with_joins(&mut self) -> Step<FromItem> {
        let base = self.table_ref()?;
        let mut joins = Vec::new();
        loop {
            let (left, cross) = if self.eat_word(Keyword::JOIN) {
                (false, false)
            } else if self.is_word(Keyword::INNER) && self.word_at(1, Keyword::JOIN) {
                self.skip(2);
                (false, false)
            } else if self.is_word(Keyword::LEFT) && self.word_at(1, Keyword::JOIN) {
                self.skip(2);
                (true, false)
            } else if self.is_word(Keyword::LEFT)
                && self.word_at(1, Keyword::OUTER)
                && self.word_at(2, Keyword::JOIN)
            {
                self.skip(3);
                (true, false)
            } else if self.is_word(Keyword::CROSS) && self.word_at(1, Keyword::JOIN) {
                self.skip(2);
                (false, true)
            } else {
                return Some(FromItem { base, joins });
            };
            let table = self.table_ref()?;
            let on = if cross {
                let at = match &table {
                    TableRef::Named { name, .. } | TableRef::Function { name, .. } => name.at,
                    TableRef::System { schema, .. } => schema.at,
                    TableRef::Subquery { query, .. } => query.at,
                    TableRef::Recursive { cte, .. } => cte.name.at,
                };
                // CROSS JOIN is every pair: other entities, joined ON TRUE.
                if self.is_word(Keyword::ON) {
                    return None;
                }
                Some(Expr::new(ExprKind::Literal(Literal::Bool(true)), at))
            } else if self.eat_word(Keyword::ON) {
                Some(self.expr()?)
            } else {
                None
            };
            joins.push(Join {
                left,
                table,
                on,
                using: Vec::new(),
            });
        }
    }

    /// A component (a table), a table function or a subquery, with its alias.
    pub(super) fn table_ref(&mut self) -> Step<TableRef> {
        if self.eat(Kind::LParen) {
            if !self.is_word(Keyword::SELECT) {
                return None;
            }
            self.nest()?;
            let query = self.query()?;
            self.depth -= 1;
            // A subquery in FROM is a level above its expressions.
            self.above(self.height)?;
            self.widest = self.widest.max(self.height);
            self.expect(Kind::RParen)?;
            let (alias, columns) = self.table_alias()?;
            return Some(TableRef::Subquery {
                query: Box::new(query),
                alias,
                columns,
            });
        }
        let t = self.table_name()?;
        let name = self.ident(&t);
        if self.kind() == Kind::Dot {
            return None;
        }
        if self.eat(Kind::LParen) {
            let args = if self.eat(Kind::RParen) {
                Vec::new()
            } else {
                self.list_to_rparen(Self::argument)?
            };
            let (alias, columns) = self.table_alias()?;
            return Some(TableRef::Function {
                name,
                args,
                alias,
                columns,
            });
        }
        if self.is_word(Keyword::PARTITION) || self.is_word(Keyword::WITH) {
            return None;
        }
        let (alias, columns) = self.table_alias()?;
        if !columns.is_empty() {
            return None;
        }
        Some(TableRef::Named { name, alias })
    }

    /// The name of a component (or table function) in FROM, UPDATE or INSERT: a quoted name,
    /// or a word no keyword sqlparser reads otherwise there.
    pub(super) fn table_name(&mut self) -> Step<Tok> {
        match self.kind() {
            Kind::Quoted => Some(self.bump()),
            Kind::Word => {
                if self.keyword_at(0).is_some_and(|k| {
                    reserved(k)
                        || [
                            Keyword::TABLE,
                            Keyword::UNNEST,
                            Keyword::VALUES,
                            Keyword::VALUE,
                            Keyword::JSON_TABLE,
                            Keyword::OPENJSON,
                            Keyword::XMLTABLE,
                            Keyword::SEMANTIC_VIEW,
                        ]
                        .contains(&k)
                }) {
                    return None;
                }
                Some(self.bump())
            }
            _ => None,
        }
    }

    /// A table's alias and the names of its columns (`AS r(i)`).
    pub(super) fn table_alias(&mut self) -> Step<(Option<Ident>, Vec<Ident>)> {
        let alias = self.optional_alias()?;
        let mut columns = Vec::new();
        if alias.is_some() && self.eat(Kind::LParen) {
            columns = self.list_to_rparen(Self::name_part)?;
        }
        Some((alias, columns))
    }
}
