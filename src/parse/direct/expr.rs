//! The direct parser's expressions: precedence climbing with sqlparser's precedences,
//! prefix forms (literals, names, calls, CASE, CAST, EXISTS, subqueries, parameters),
//! each placed at its first token as translation places it.

use super::*;

impl Direct<'_> {
    /// A whole expression (a list's item, a clause's), counted in the enclosing list's or
    /// query's `widest`.
    pub(super) fn expr(&mut self) -> Step<Expr> {
        let expr = self.subexpr(0)?;
        self.widest = self.widest.max(self.height);
        Some(expr)
    }

    /// An expression of operators that bind tighter than `precedence`. Each operator of a
    /// chain (`a + b + c`) is made above the chain so far, so the chain's leftmost operand
    /// ends as many levels down as the chain has operators, as translation counts it.
    pub(super) fn subexpr(&mut self, precedence: u8) -> Step<Expr> {
        // The stack is checked (and grown past `recursive`'s red zone) every
        // `LEVELS_PER_CHECK` levels rather than at each: a check is a thread-local read
        // and a call, a few per cent of a point read's text, and the levels between two
        // checks take a small part of the zone (`LEVELS_PER_CHECK`'s note).
        if self.depth.is_multiple_of(LEVELS_PER_CHECK) {
            let (zone, grow) = (
                recursive::get_minimum_stack_size(),
                recursive::get_stack_allocation_size(),
            );
            stacker::maybe_grow(zone, grow, || self.level(precedence))
        } else {
            self.level(precedence)
        }
    }

    /// `subexpr`'s work, on a stack it has checked.
    fn level(&mut self, precedence: u8) -> Step<Expr> {
        self.nest()?;
        let mut expr = self.prefix()?;
        loop {
            let next = self.next_precedence()?;
            if precedence >= next {
                break;
            }
            expr = self.infix(expr, next)?;
        }
        self.depth -= 1;
        Some(expr)
    }

    /// The precedence of the operator ahead, 0 when none is; `None` for an operator this
    /// parser does not read.
    pub(super) fn next_precedence(&self) -> Step<u8> {
        Some(match self.kind() {
            Kind::Eq | Kind::NotEq | Kind::Lt | Kind::LtEq | Kind::Gt | Kind::GtEq => 20,
            Kind::Plus | Kind::Minus => 30,
            Kind::Star | Kind::Slash | Kind::Percent | Kind::Concat => 40,
            Kind::Word => match self.keyword_at(0) {
                Some(Keyword::OR) => 5,
                Some(Keyword::AND) => 10,
                Some(Keyword::IS) => 17,
                Some(Keyword::IN | Keyword::BETWEEN) => 20,
                Some(Keyword::LIKE | Keyword::ILIKE) => 19,
                Some(Keyword::NOT) => match self.keyword_at(1) {
                    Some(Keyword::IN | Keyword::BETWEEN) => 20,
                    Some(Keyword::LIKE | Keyword::ILIKE) => 19,
                    Some(k) if OTHER_INFIX.contains(&k) || k == Keyword::NULL => return None,
                    _ => 0,
                },
                Some(k) if OTHER_INFIX.contains(&k) => return None,
                _ => 0,
            },
            _ => 0,
        })
    }

    /// The operator ahead and its right side, made above `left` (the expression last
    /// read, whose height `self.height` is).
    pub(super) fn infix(&mut self, left: Expr, precedence: u8) -> Step<Expr> {
        let at = left.at;
        let below = self.height;
        let op = match self.kind() {
            Kind::Eq => Some(BinaryOp::Eq),
            Kind::NotEq => Some(BinaryOp::NotEq),
            Kind::Lt => Some(BinaryOp::Lt),
            Kind::LtEq => Some(BinaryOp::LtEq),
            Kind::Gt => Some(BinaryOp::Gt),
            Kind::GtEq => Some(BinaryOp::GtEq),
            Kind::Plus => Some(BinaryOp::Add),
            Kind::Minus => Some(BinaryOp::Sub),
            Kind::Star => Some(BinaryOp::Mul),
            Kind::Slash => Some(BinaryOp::Div),
            Kind::Percent => Some(BinaryOp::Mod),
            Kind::Concat => Some(BinaryOp::Concat),
            _ if self.is_word(Keyword::AND) => Some(BinaryOp::And),
            _ if self.is_word(Keyword::OR) => Some(BinaryOp::Or),
            _ => None,
        };
        if let Some(op) = op {
            self.bump();
            // `= ANY (…)` and its kind are sqlparser's.
            if self.is_any_word(&[Keyword::ANY, Keyword::ALL, Keyword::SOME]) {
                return None;
            }
            let right = self.subexpr(precedence)?;
            self.above(below.max(self.height))?;
            return Some(Expr::new(ExprKind::binary(left, op, right), at));
        }
        if self.eat_word(Keyword::IS) {
            let negated = self.eat_word(Keyword::NOT);
            let kind = if self.eat_word(Keyword::NULL) {
                self.above(below)?;
                ExprKind::IsNull {
                    expr: Box::new(left),
                    negated,
                }
            } else if self.is_word(Keyword::TRUE) || self.is_word(Keyword::FALSE) {
                // `x IS [NOT] TRUE` is `x IS [NOT] DISTINCT FROM TRUE`, as translation
                // makes it.
                let value = self.eat_word(Keyword::TRUE) || !self.eat_word(Keyword::FALSE);
                self.above(below)?;
                let literal = Expr::new(ExprKind::Literal(Literal::Bool(value)), at);
                ExprKind::IsDistinct {
                    left: Box::new(left),
                    right: Box::new(literal),
                    negated: !negated,
                }
            } else if self.eat_word(Keyword::DISTINCT) {
                if !self.eat_word(Keyword::FROM) {
                    return None;
                }
                let right = Box::new(self.subexpr(precedence)?);
                self.above(below.max(self.height))?;
                ExprKind::IsDistinct {
                    left: Box::new(left),
                    right,
                    negated,
                }
            } else {
                return None;
            };
            return Some(Expr::new(kind, at));
        }
        let negated = self.eat_word(Keyword::NOT);
        let expr = Box::new(left);
        let kind = if self.eat_word(Keyword::IN) {
            self.expect(Kind::LParen)?;
            if self.is_word(Keyword::SELECT) {
                let query = Box::new(self.query()?);
                self.expect(Kind::RParen)?;
                self.above(below.max(self.height))?;
                ExprKind::InSubquery { expr, query, negated }
            } else if matches!(self.kind(), Kind::LParen | Kind::RParen)
                || self.is_any_word(&[
                    Keyword::WITH,
                    Keyword::VALUE,
                    Keyword::VALUES,
                    Keyword::TABLE,
                    Keyword::INSERT,
                    Keyword::UPDATE,
                    Keyword::DELETE,
                    Keyword::MERGE,
                    Keyword::FROM,
                ])
            {
                // sqlparser tries the inside as a query first: what could begin one is
                // left to it.
                return None;
            } else {
                let (list, items) = self.children(|s| s.list_to_rparen(Self::expr))?;
                self.above(below.max(items))?;
                ExprKind::InList { expr, list, negated }
            }
        } else if self.eat_word(Keyword::BETWEEN) {
            let low = Box::new(self.subexpr(20)?);
            let low_height = self.height;
            self.expect_word(Keyword::AND)?;
            let high = Box::new(self.subexpr(20)?);
            self.above(below.max(low_height).max(self.height))?;
            ExprKind::Between {
                expr,
                low,
                high,
                negated,
            }
        } else if self.is_word(Keyword::LIKE) || self.is_word(Keyword::ILIKE) {
            let case_insensitive = self.bump_is_word(Keyword::ILIKE);
            if self.is_word(Keyword::ANY) {
                return None;
            }
            let pattern = Box::new(self.subexpr(19)?);
            let mut highest = below.max(self.height);
            let escape = if self.eat_word(Keyword::ESCAPE) {
                let escape = Box::new(self.subexpr(19)?);
                highest = highest.max(self.height);
                Some(escape)
            } else {
                None
            };
            self.above(highest)?;
            ExprKind::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
                escape,
            }
        } else {
            return None;
        };
        Some(Expr::new(kind, at))
    }

    /// Consumes the token ahead and says whether it was the word `word`.
    pub(super) fn bump_is_word(&mut self, word: Keyword) -> bool {
        let is = self.is_word(word);
        self.bump();
        is
    }

    pub(super) fn prefix(&mut self) -> Step<Expr> {
        let t = self.bump();
        let at = t.at;
        let kind = match t.kind {
            // A value: its height (1) is set below.
            Kind::Number => ExprKind::Literal(Literal::number(self.text(&t))?),
            Kind::Text => ExprKind::Literal(Literal::Text(lex::unquote(self.text(&t)))),
            Kind::Param => ExprKind::Param(self.param(&t)?),
            Kind::LParen => {
                if self.is_word(Keyword::SELECT) {
                    let query = self.query()?;
                    self.expect(Kind::RParen)?;
                    self.above(self.height)?;
                    let at = query.at;
                    return Some(Expr::new(ExprKind::Subquery(Box::new(query)), at));
                }
                if self.kind() == Kind::LParen && self.word_at(1, Keyword::SELECT) {
                    // `((SELECT …) …)`: sqlparser tries the inside as a query first.
                    return None;
                }
                let (mut items, below) = self.children(|s| s.list_to_rparen(Self::expr))?;
                // Parentheses are a level (a tuple's or translation's `Nested`).
                self.above(below)?;
                if items.len() == 1 {
                    // Parentheses leave no node: the expression is placed where it starts.
                    return items.pop();
                }
                let at = items[0].at;
                return Some(Expr::new(ExprKind::Tuple(items), at));
            }
            Kind::Minus | Kind::Plus => {
                let operand_at = self.pos;
                let operand = self.subexpr(40)?;
                let at = operand.at;
                let op = if t.kind == Kind::Minus {
                    UnaryOp::Neg
                } else {
                    UnaryOp::Plus
                };
                // `-5` is folded into the literal, so that i64::MIN is writable: one level,
                // as translation counts it.
                if op == UnaryOp::Neg
                    && let Some(&number) = self.previous(operand_at)
                    && number.kind == Kind::Number
                {
                    self.above(0)?;
                    let literal = Literal::negative(self.text(&number))?;
                    return Some(Expr::new(ExprKind::Literal(literal), at));
                }
                self.above(self.height)?;
                return Some(Expr::new(ExprKind::Unary(op, Box::new(operand)), at));
            }
            Kind::Word => return self.word_prefix(t),
            Kind::Quoted => return self.name_expr(t),
            _ => return None,
        };
        self.above(0)?;
        Some(Expr::new(kind, at))
    }

    /// An expression that starts with the unquoted word `t`.
    pub(super) fn word_prefix(&mut self, t: Tok) -> Step<Expr> {
        let at = t.at;
        let Some(k) = t.keyword else {
            return self.name_expr(t);
        };
        let kind = match k {
            Keyword::TRUE => ExprKind::Literal(Literal::Bool(true)),
            Keyword::FALSE => ExprKind::Literal(Literal::Bool(false)),
            Keyword::NULL => ExprKind::Literal(Literal::Null),
            Keyword::CASE => return self.case(at),
            Keyword::CAST => return self.cast(),
            Keyword::EXISTS => return self.exists(false),
            Keyword::NOT if self.is_word(Keyword::EXISTS) => {
                self.bump();
                return self.exists(true);
            }
            Keyword::NOT => {
                let operand = self.subexpr(15)?;
                self.above(self.height)?;
                let at = operand.at;
                return Some(Expr::new(ExprKind::Unary(UnaryOp::Not, Box::new(operand)), at));
            }
            Keyword::POSITION if self.kind() == Kind::LParen => return None,
            k if OWN_EXPRESSIONS.contains(&k) || reserved(k) => return None,
            _ => return self.name_expr(t),
        };
        self.above(0)?;
        Some(Expr::new(kind, at))
    }

    /// A column (`name`, `qualifier.name`) or a call (`name(…)`) whose first name is `t`.
    pub(super) fn name_expr(&mut self, t: Tok) -> Step<Expr> {
        let first = self.ident(&t);
        let at = first.at;
        let kind = if self.eat(Kind::LParen) {
            let (call, below) = self.children(|s| s.call(first))?;
            self.above(below)?;
            call
        } else if self.eat(Kind::Dot) {
            let second = self.name_part()?;
            if matches!(self.kind(), Kind::Dot | Kind::LParen) {
                return None;
            }
            self.above(0)?;
            ExprKind::Column(smallvec::smallvec![first, second])
        } else {
            self.above(0)?;
            ExprKind::Column(smallvec::smallvec![first])
        };
        // A value right after a name is sqlparser's: a typed literal (`DATE '…'`, and
        // `DATE "…"`, a double-quoted value there), an introducer (`_utf8 '…'`).
        if matches!(
            self.kind(),
            Kind::Number | Kind::Text | Kind::Quoted | Kind::Param
        ) || self.is_word(Keyword::TRUE)
            || self.is_word(Keyword::FALSE)
            || self.is_word(Keyword::NULL)
        {
            return None;
        }
        Some(Expr::new(kind, at))
    }

    /// The arguments of `name(`, to the closing parenthesis, and what may follow it.
    pub(super) fn call(&mut self, name: Ident) -> Step<ExprKind> {
        // `xmlparse(…)` has arguments of its own in sqlparser.
        if self.is_word(Keyword::SELECT)
            || self.is_word(Keyword::WITH)
            || (!name.quoted && name.matches("xmlparse"))
        {
            return None;
        }
        let mut args = Vec::new();
        let mut star = false;
        let mut distinct = false;
        if !self.eat(Kind::RParen) {
            if self.eat_word(Keyword::DISTINCT) {
                distinct = true;
            } else {
                self.eat_word(Keyword::ALL);
            }
            loop {
                if self.eat(Kind::Star) {
                    star = true;
                } else {
                    args.push(self.argument()?);
                }
                if self.eat(Kind::RParen) {
                    break;
                }
                self.expect(Kind::Comma)?;
            }
        }
        if self.is_any_word(&[
            Keyword::FILTER,
            Keyword::OVER,
            Keyword::WITHIN,
            Keyword::IGNORE,
            Keyword::RESPECT,
        ]) {
            return None;
        }
        Some(ExprKind::Function {
            name,
            args,
            star,
            distinct,
        })
    }

    /// One argument of a call: an expression, not a named one (`name = value`) nor a
    /// qualified star.
    pub(super) fn argument(&mut self) -> Step<Expr> {
        if matches!(self.kind(), Kind::Word | Kind::Quoted)
            && (self.kind_at(1) == Kind::Eq
                || self.word_at(1, Keyword::VALUE)
                || (self.kind_at(1) == Kind::Dot && self.kind_at(2) == Kind::Star))
        {
            return None;
        }
        self.expr()
    }

    pub(super) fn case(&mut self, at: Location) -> Step<Expr> {
        let (kind, below) = self.children(Self::case_parts)?;
        self.above(below)?;
        Some(Expr::new(kind, at))
    }

    /// What follows CASE, to its END, each part read by `expr`.
    pub(super) fn case_parts(&mut self) -> Step<ExprKind> {
        let operand = if self.is_word(Keyword::WHEN) {
            None
        } else {
            Some(Box::new(self.expr()?))
        };
        let mut branches = Vec::new();
        self.expect_word(Keyword::WHEN)?;
        loop {
            let when = self.expr()?;
            self.expect_word(Keyword::THEN)?;
            let then = self.expr()?;
            branches.push((when, then));
            if !self.eat_word(Keyword::WHEN) {
                break;
            }
        }
        let otherwise = if self.eat_word(Keyword::ELSE) {
            Some(Box::new(self.expr()?))
        } else {
            None
        };
        self.expect_word(Keyword::END)?;
        Some(ExprKind::Case {
            operand,
            branches,
            otherwise,
        })
    }

    /// `CAST(e AS type)`, placed where `e` is (as translation places it); the type one of
    /// the single words translation knows.
    pub(super) fn cast(&mut self) -> Step<Expr> {
        self.expect(Kind::LParen)?;
        let expr = self.expr()?;
        self.expect_word(Keyword::AS)?;
        let t = self.bump();
        if t.kind != Kind::Word || self.kind() != Kind::RParen {
            return None;
        }
        let ty = type_name(self.text(&t))?;
        self.bump();
        self.above(self.height)?;
        let at = expr.at;
        Some(Expr::new(
            ExprKind::Cast {
                expr: Box::new(expr),
                ty,
            },
            at,
        ))
    }

    /// `EXISTS (SELECT …)`, placed at its SELECT.
    pub(super) fn exists(&mut self, negated: bool) -> Step<Expr> {
        self.expect(Kind::LParen)?;
        if !self.is_word(Keyword::SELECT) {
            return None;
        }
        let query = self.query()?;
        self.expect(Kind::RParen)?;
        self.above(self.height)?;
        let at = query.at;
        Some(Expr::new(
            ExprKind::Exists {
                query: Box::new(query),
                negated,
            },
            at,
        ))
    }

    /// `?` (the next position) or `?N`, as `StatementParser::next_param` numbers them.
    pub(super) fn param(&mut self, t: &Tok) -> Step<Param> {
        let digits = &self.text(t)[1..];
        if digits.is_empty() {
            self.last_param += 1;
            return Some(Param::Position(self.last_param));
        }
        let n: usize = digits.parse().ok()?;
        if n == 0 {
            return None;
        }
        self.last_param = self.last_param.max(n);
        Some(Param::Position(n))
    }
}
