//! sqlparser's tree → ecsql's tree. Whatever sqlparser accepts that ecsql does not support
//! stops here with a located error, so later layers see only what they handle.

use sqlparser::ast::{self as sql, Spanned};

use super::ast::*;
use super::error::ParseError;
use super::parser::{Cte, CteBody, StatementParser};
use super::start::{Node, on_deep_stack, start};
use crate::location::Location;
use crate::storage::FieldType;

type Result<T> = std::result::Result<T, ParseError>;

fn span_at(span: sqlparser::tokenizer::Span) -> Location {
    Location::new(span.start.line as u32, span.start.column as u32)
}

fn ident(i: sql::Ident) -> Ident {
    let at = span_at(i.span);
    Ident {
        value: i.value,
        quoted: i.quote_style.is_some(),
        at,
    }
}

/// The deepest expression tree a statement may hold: every parenthesis, operator, call,
/// CASE and subquery (in FROM too) is a level (`a + b + c` is two), as SQLite counts,
/// whose limit this is; the value at the bottom (a literal, a name) is not. Deeper
/// trees are refused while translating, so the binder and the executor never see one.
pub const MAX_DEPTH: usize = 1000;

/// The most SELECTs (and VALUES) one chain of UNION, EXCEPT and INTERSECT may join, as
/// SQLite's SQLITE_MAX_COMPOUND_SELECT.
pub const MAX_COMPOUND: usize = 500;

/// The most references to common table expressions one statement may make, counting
/// those inside other CTEs' bodies as often as they are copied: each reference is the
/// CTE's query in place, and a chain of CTEs each reading the one before twice would
/// otherwise double the statement per link.
pub const MAX_CTE_REFERENCES: usize = 1000;

/// How many terms the chain of set operations down `body`'s left side joins, and the first.
fn compound_terms(body: &sql::SetExpr) -> (usize, &sql::SetExpr) {
    let mut terms = 1;
    let mut first = body;
    while let sql::SetExpr::SetOperation { left, .. } = first {
        terms += 1;
        first = left;
    }
    (terms, first)
}

pub(super) fn too_deep(at: Location) -> ParseError {
    ParseError::new(
        at,
        format!(
            "expression too deep: more than {MAX_DEPTH} levels of parentheses, operators, \
             calls, CASEs and subqueries; split it into parts, or write a chain of ORs of one \
             column as IN (…)"
        ),
    )
}

impl StatementParser<'_> {
    /// Where `node` begins, or the statement's start if sqlparser recorded no place.
    fn start_of(&self, node: Node<'_>) -> Location {
        self.location_or_statement(span_at(start(node)))
    }

    /// `a + b + c` is `(a + b) + c`: sqlparser builds a chain of binary operators down its
    /// left side without recursion, however long. It is taken apart here in a loop, so
    /// neither its length nor dropping it recurses; its operands are refused past
    /// `MAX_DEPTH` like any expression's (the leftmost, the deepest, first). Every node of
    /// the chain is placed where the chain starts, as its span would place it.
    /// `self.depth` is the depth of the chain's top node.
    fn binary_chain(&mut self, e: sql::Expr) -> Result<Expr> {
        let mut rights = Vec::new();
        let mut leftmost = e;
        while let sql::Expr::BinaryOp { left, op, right } = leftmost {
            rights.push((op, *right));
            leftmost = *left;
        }
        let at = self.start_of(Node::Expr(&leftmost));
        let top = self.depth;
        let mut ops = Vec::with_capacity(rights.len());
        for (op, _) in &rights {
            ops.push(self.binary_op(op, at)?);
        }
        // The leftmost operand hangs below the bottom node, at depth top + n; the right
        // operand of the node j below the top hangs at top + j + 1.
        self.depth = top + rights.len() - 1;
        let mut chain = self.expr(leftmost)?;
        for (j, ((_, right), op)) in rights.into_iter().zip(ops).enumerate().rev() {
            self.depth = top + j;
            let right = self.expr(right)?;
            chain = Expr {
                kind: ExprKind::Binary(Box::new(chain), op, Box::new(right)),
                at,
            };
        }
        Ok(chain)
    }

    fn binary_op(&self, op: &sql::BinaryOperator, at: Location) -> Result<BinaryOp> {
        Ok(match op {
            sql::BinaryOperator::Plus => BinaryOp::Add,
            sql::BinaryOperator::Minus => BinaryOp::Sub,
            sql::BinaryOperator::Multiply => BinaryOp::Mul,
            sql::BinaryOperator::Divide => BinaryOp::Div,
            sql::BinaryOperator::Modulo => BinaryOp::Mod,
            sql::BinaryOperator::StringConcat => BinaryOp::Concat,
            sql::BinaryOperator::Eq => BinaryOp::Eq,
            sql::BinaryOperator::NotEq => BinaryOp::NotEq,
            sql::BinaryOperator::Lt => BinaryOp::Lt,
            sql::BinaryOperator::LtEq => BinaryOp::LtEq,
            sql::BinaryOperator::Gt => BinaryOp::Gt,
            sql::BinaryOperator::GtEq => BinaryOp::GtEq,
            sql::BinaryOperator::And => BinaryOp::And,
            sql::BinaryOperator::Or => BinaryOp::Or,
            other => return Err(self.unsupported(at, format!("the operator {other}"))),
        })
    }

    fn unsupported(&self, at: Location, what: impl std::fmt::Display) -> ParseError {
        ParseError::new(self.location_or_statement(at), format!("{what} is not supported"))
    }

    fn object_name(&self, name: sql::ObjectName) -> Result<Vec<Ident>> {
        let at = span_at(name.span());
        name.0
            .into_iter()
            .map(|part| match part {
                sql::ObjectNamePart::Identifier(i) => Ok(ident(i)),
                other => Err(self.unsupported(at, format!("the name part {other}"))),
            })
            .collect()
    }

    /// A one-part name (a component, a field, a function).
    fn single_name(&self, name: sql::ObjectName) -> Result<Ident> {
        let at = span_at(name.span());
        let mut parts = self.object_name(name)?;
        if parts.len() != 1 {
            let text = parts.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(".");
            return Err(ParseError::new(
                self.location_or_statement(at),
                format!("expected a plain name, found {text}"),
            ));
        }
        Ok(parts.remove(0))
    }

    pub(super) fn next_param(&mut self, text: &str, at: Location) -> Result<Param> {
        let rest = &text[1..];
        let sigil = text.chars().next().unwrap_or('?');
        if rest.is_empty() && sigil == '?' {
            self.last_param += 1;
            return Ok(Param::Position(self.last_param));
        }
        if let Ok(n) = rest.parse::<usize>() {
            if n == 0 {
                return Err(ParseError::new(at, "parameter numbers start at 1"));
            }
            self.last_param = self.last_param.max(n);
            return Ok(Param::Position(n));
        }
        if rest.is_empty() {
            return Err(ParseError::new(
                at,
                format!("expected a parameter name after {sigil}"),
            ));
        }
        if !self.named_params.iter().any(|n| n == rest) {
            self.named_params.push(rest.to_owned());
        }
        Ok(Param::Named {
            name: rest.to_owned(),
            sigil,
        })
    }

    /// One expression, one level deeper than its parent: refused past `MAX_DEPTH`.
    #[recursive::recursive]
    pub(super) fn expr(&mut self, e: sql::Expr) -> Result<Expr> {
        let parent = self.depth;
        self.depth += 1;
        let result = if let sql::Expr::BinaryOp { .. } = e {
            self.binary_chain(e)
        } else if self.depth > MAX_DEPTH + 1 {
            // The value at the bottom of MAX_DEPTH levels lies one deeper: past that, even
            // a value is below a level too many.
            let at = self.start_of(Node::Expr(&e));
            // What lies below may be as deep as sqlparser lets a tree be: dropped where
            // that fits.
            on_deep_stack(move || drop(e));
            Err(too_deep(at))
        } else {
            self.expr_node(e)
        };
        self.depth = parent;
        result
    }

    fn expr_node(&mut self, e: sql::Expr) -> Result<Expr> {
        let at = self.start_of(Node::Expr(&e));
        let boxed = |s: &mut Self, e: sql::Expr| -> Result<Box<Expr>> { Ok(Box::new(s.expr(e)?)) };
        let kind = match e {
            // `@name`, a parameter as SQL Server and the sqlite3 shell write it.
            sql::Expr::Identifier(i)
                if i.quote_style.is_none() && i.value.len() > 1 && i.value.starts_with('@') =>
            {
                ExprKind::Param(self.next_param(&i.value, at)?)
            }
            sql::Expr::Identifier(i) => ExprKind::Column(vec![ident(i)]),
            sql::Expr::CompoundIdentifier(parts) => {
                if parts.len() > 2 {
                    return Err(ParseError::new(
                        at,
                        "expected name or Component.field, found a longer dotted name",
                    ));
                }
                ExprKind::Column(parts.into_iter().map(ident).collect())
            }
            sql::Expr::Value(v) => match v.value {
                sql::Value::Number(n, _) => ExprKind::Literal(number(&n, at)?),
                sql::Value::SingleQuotedString(s) | sql::Value::EscapedStringLiteral(s) => {
                    ExprKind::Literal(Literal::Text(s))
                }
                sql::Value::Boolean(b) => ExprKind::Literal(Literal::Bool(b)),
                sql::Value::Null => ExprKind::Literal(Literal::Null),
                sql::Value::Placeholder(p) => ExprKind::Param(self.next_param(&p, at)?),
                sql::Value::DoubleQuotedString(s) => ExprKind::Column(vec![Ident {
                    value: s,
                    quoted: true,
                    at,
                }]),
                other => return Err(self.unsupported(at, format!("the literal {other}"))),
            },
            sql::Expr::Nested(inner) => return self.expr(*inner),
            sql::Expr::UnaryOp { op, expr } => {
                let op = match op {
                    sql::UnaryOperator::Minus => UnaryOp::Neg,
                    sql::UnaryOperator::Plus => UnaryOp::Plus,
                    sql::UnaryOperator::Not => UnaryOp::Not,
                    other => return Err(self.unsupported(at, format!("the operator {other}"))),
                };
                // Fold `-5` into a literal so that i64::MIN is writable.
                if let (UnaryOp::Neg, sql::Expr::Value(v)) = (op, &*expr)
                    && let sql::Value::Number(n, _) = &v.value
                {
                    let lit = number(&format!("-{n}"), at)?;
                    return Ok(Expr::new(ExprKind::Literal(lit), at));
                }
                ExprKind::Unary(op, boxed(self, *expr)?)
            }
            sql::Expr::IsNull(e) => ExprKind::IsNull {
                expr: boxed(self, *e)?,
                negated: false,
            },
            sql::Expr::IsNotNull(e) => ExprKind::IsNull {
                expr: boxed(self, *e)?,
                negated: true,
            },
            // A boolean's third value: `x IS UNKNOWN` is `x IS NULL`.
            sql::Expr::IsUnknown(e) => ExprKind::IsNull {
                expr: boxed(self, *e)?,
                negated: false,
            },
            sql::Expr::IsNotUnknown(e) => ExprKind::IsNull {
                expr: boxed(self, *e)?,
                negated: true,
            },
            sql::Expr::InList { expr, list, negated } => {
                let expr = boxed(self, *expr)?;
                let list = list.into_iter().map(|e| self.expr(e)).collect::<Result<_>>()?;
                ExprKind::InList { expr, list, negated }
            }
            sql::Expr::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                let expr = boxed(self, *expr)?;
                ExprKind::InSubquery {
                    expr,
                    query: Box::new(self.query(*subquery)?),
                    negated,
                }
            }
            sql::Expr::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let expr = boxed(self, *expr)?;
                let low = boxed(self, *low)?;
                let high = boxed(self, *high)?;
                ExprKind::Between {
                    expr,
                    low,
                    high,
                    negated,
                }
            }
            sql::Expr::Like {
                negated,
                any,
                expr,
                pattern,
                escape_char,
            } => self.like(*expr, *pattern, negated, any, escape_char, false, at)?,
            sql::Expr::ILike {
                negated,
                any,
                expr,
                pattern,
                escape_char,
            } => self.like(*expr, *pattern, negated, any, escape_char, true, at)?,
            sql::Expr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let operand = match operand {
                    Some(o) => Some(boxed(self, *o)?),
                    None => None,
                };
                let branches = conditions
                    .into_iter()
                    .map(|w| Ok((self.expr(w.condition)?, self.expr(w.result)?)))
                    .collect::<Result<_>>()?;
                let otherwise = match else_result {
                    Some(e) => Some(boxed(self, *e)?),
                    None => None,
                };
                ExprKind::Case {
                    operand,
                    branches,
                    otherwise,
                }
            }
            sql::Expr::Cast {
                kind,
                expr,
                data_type,
                format,
            } => {
                if format.is_some() || !matches!(kind, sql::CastKind::Cast | sql::CastKind::DoubleColon) {
                    return Err(self.unsupported(at, format!("{kind:?}")));
                }
                let ty = type_name(&data_type.to_string())
                    .ok_or_else(|| ParseError::new(at, format!("{TYPE_EXPECTED_CAST}, found {data_type}")))?;
                ExprKind::Cast {
                    expr: boxed(self, *expr)?,
                    ty,
                }
            }
            sql::Expr::Function(f) => self.function(f, at)?,
            sql::Expr::Subquery(q) => ExprKind::Subquery(Box::new(self.query(*q)?)),
            sql::Expr::Exists { subquery, negated } => ExprKind::Exists {
                query: Box::new(self.query(*subquery)?),
                negated,
            },
            sql::Expr::Tuple(items) => {
                ExprKind::Tuple(items.into_iter().map(|e| self.expr(e)).collect::<Result<_>>()?)
            }
            // `x IS [NOT] TRUE` is never NULL: `x IS [NOT] DISTINCT FROM TRUE`.
            sql::Expr::IsTrue(e) => is_distinct(boxed(self, *e)?, lit_bool(true, at), true),
            sql::Expr::IsNotTrue(e) => is_distinct(boxed(self, *e)?, lit_bool(true, at), false),
            sql::Expr::IsFalse(e) => is_distinct(boxed(self, *e)?, lit_bool(false, at), true),
            sql::Expr::IsNotFalse(e) => is_distinct(boxed(self, *e)?, lit_bool(false, at), false),
            sql::Expr::IsDistinctFrom(l, r) => is_distinct(boxed(self, *l)?, self.expr(*r)?, false),
            sql::Expr::IsNotDistinctFrom(l, r) => is_distinct(boxed(self, *l)?, self.expr(*r)?, true),
            sql::Expr::Floor { expr, field } => self.rounding("floor", *expr, field, at)?,
            sql::Expr::Ceil { expr, field } => self.rounding("ceil", *expr, field, at)?,
            sql::Expr::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![self.expr(*expr)?];
                args.push(match substring_from {
                    Some(f) => self.expr(*f)?,
                    None => Expr::new(ExprKind::Literal(Literal::Int(1)), at),
                });
                if let Some(f) = substring_for {
                    args.push(self.expr(*f)?);
                }
                ExprKind::Function {
                    name: Ident::new("substr", at),
                    args,
                    star: false,
                    distinct: false,
                }
            }
            // POSITION(sub IN s) is strpos(s, sub).
            sql::Expr::Position { expr, r#in } => ExprKind::Function {
                name: Ident::new("strpos", at),
                args: vec![self.expr(*r#in)?, self.expr(*expr)?],
                star: false,
                distinct: false,
            },
            // TRIM([BOTH | LEADING | TRAILING] [chars FROM] s), TRIM(s [, chars]).
            sql::Expr::Trim {
                trim_where,
                trim_what,
                expr,
                trim_characters,
            } => {
                let name = match trim_where {
                    Some(sql::TrimWhereField::Leading) => "ltrim",
                    Some(sql::TrimWhereField::Trailing) => "rtrim",
                    _ => "trim",
                };
                let mut args = vec![self.expr(*expr)?];
                if let Some(what) = trim_what {
                    args.push(self.expr(*what)?);
                }
                for c in trim_characters.into_iter().flatten() {
                    args.push(self.expr(c)?);
                }
                ExprKind::Function {
                    name: Ident::new(name, at),
                    args,
                    star: false,
                    distinct: false,
                }
            }
            other => return Err(self.unsupported(at, format!("the expression {other}"))),
        };
        Ok(Expr::new(kind, at))
    }

    /// `FLOOR(x)` / `CEIL(x)`, which sqlparser parses as their own expressions, as calls.
    fn rounding(
        &mut self,
        name: &str,
        expr: sql::Expr,
        field: sql::CeilFloorKind,
        at: Location,
    ) -> Result<ExprKind> {
        if !matches!(
            field,
            sql::CeilFloorKind::DateTimeField(sql::DateTimeField::NoDateTime)
        ) {
            return Err(self.unsupported(at, format!("{name}(… TO …) and {name}(x, scale)")));
        }
        let args = vec![self.expr(expr)?];
        Ok(ExprKind::Function {
            name: Ident::new(name, at),
            args,
            star: false,
            distinct: false,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn like(
        &mut self,
        expr: sql::Expr,
        pattern: sql::Expr,
        negated: bool,
        any: bool,
        escape: Option<Box<sql::Expr>>,
        case_insensitive: bool,
        at: Location,
    ) -> Result<ExprKind> {
        if any {
            return Err(self.unsupported(at, "LIKE ANY"));
        }
        let expr = Box::new(self.expr(expr)?);
        let pattern = Box::new(self.expr(pattern)?);
        let escape = match escape {
            Some(e) => Some(Box::new(self.expr(*e)?)),
            None => None,
        };
        Ok(ExprKind::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
            escape,
        })
    }

    fn function(&mut self, mut f: sql::Function, at: Location) -> Result<ExprKind> {
        if f.filter.is_some() || !f.within_group.is_empty() {
            return Err(self.unsupported(at, "an aggregate's FILTER (WHERE …) or WITHIN GROUP"));
        }
        if f.null_treatment.is_some() {
            return Err(self.unsupported(at, "IGNORE NULLS or RESPECT NULLS"));
        }
        if let Some(over) = f.over.take() {
            let call = Expr::new(self.function(f, at)?, at);
            let window = match over {
                sql::WindowType::NamedWindow(name) => Window {
                    base: Some(ident(name)),
                    bare: true,
                    partition_by: Vec::new(),
                    order_by: Vec::new(),
                    frame: None,
                    at,
                },
                sql::WindowType::WindowSpec(spec) => self.window(spec, at)?,
            };
            return Ok(ExprKind::Over {
                call: Box::new(call),
                window: Box::new(window),
            });
        }
        let name = self.single_name(f.name)?;
        let (args, star, distinct) = match f.args {
            sql::FunctionArguments::None => (Vec::new(), false, false),
            sql::FunctionArguments::Subquery(q) => {
                let q = self.query(*q)?;
                (vec![Expr::new(ExprKind::Subquery(Box::new(q)), at)], false, false)
            }
            sql::FunctionArguments::List(list) => {
                if let Some(clause) = list.clauses.first() {
                    let what = match clause {
                        sql::FunctionArgumentClause::OrderBy(_) => {
                            "ORDER BY inside an aggregate's parentheses (order the rows in a subquery in FROM, or compute it over a window: string_agg(x, ',') OVER (ORDER BY …))"
                                .to_owned()
                        }
                        sql::FunctionArgumentClause::IgnoreOrRespectNulls(_) => {
                            "IGNORE NULLS and RESPECT NULLS".to_owned()
                        }
                        other => format!("{other} inside a function call"),
                    };
                    return Err(self.unsupported(at, what));
                }
                let distinct = matches!(list.duplicate_treatment, Some(sql::DuplicateTreatment::Distinct));
                let mut star = false;
                let mut args = Vec::new();
                for arg in list.args {
                    match arg {
                        sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) => args.push(self.expr(e)?),
                        sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Wildcard) => star = true,
                        other => return Err(self.unsupported(at, format!("the argument {other}"))),
                    }
                }
                (args, star, distinct)
            }
        };
        Ok(ExprKind::Function {
            name,
            args,
            star,
            distinct,
        })
    }

    /// `(… PARTITION BY … ORDER BY … frame)` of an OVER or a WINDOW clause.
    fn window(&mut self, spec: sql::WindowSpec, at: Location) -> Result<Window> {
        let partition_by = spec
            .partition_by
            .into_iter()
            .map(|e| self.expr(e))
            .collect::<Result<_>>()?;
        let order_by = spec
            .order_by
            .into_iter()
            .map(|item| self.order_item(item, at))
            .collect::<Result<_>>()?;
        let frame = match spec.window_frame {
            None => None,
            Some(frame) => {
                let units = match frame.units {
                    sql::WindowFrameUnits::Rows => FrameUnits::Rows,
                    sql::WindowFrameUnits::Range => FrameUnits::Range,
                    sql::WindowFrameUnits::Groups => FrameUnits::Groups,
                };
                let start = self.frame_bound(frame.start_bound)?;
                let end = match frame.end_bound {
                    Some(b) => self.frame_bound(b)?,
                    None => FrameBound::CurrentRow,
                };
                Some(Frame {
                    units,
                    start,
                    end,
                    at,
                })
            }
        };
        Ok(Window {
            base: spec.window_name.map(ident),
            bare: false,
            partition_by,
            order_by,
            frame,
            at,
        })
    }

    fn frame_bound(&mut self, b: sql::WindowFrameBound) -> Result<FrameBound> {
        if let sql::WindowFrameBound::Preceding(Some(e)) | sql::WindowFrameBound::Following(Some(e)) = &b
            && let sql::Expr::Interval(interval) = &**e
        {
            // sqlparser reads a quoted offset (`'2' PRECEDING`) as an interval.
            let at = self.start_of(Node::Expr(&interval.value));
            return Err(ParseError::new(
                self.location_or_statement(at),
                format!(
                    "a frame's offset is a number, not a quoted text: write {}",
                    interval.value.to_string().trim_matches('\'')
                ),
            ));
        }
        Ok(match b {
            sql::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
            sql::WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
            sql::WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
            sql::WindowFrameBound::Preceding(Some(e)) => FrameBound::Preceding(Box::new(self.expr(*e)?)),
            sql::WindowFrameBound::Following(Some(e)) => FrameBound::Following(Box::new(self.expr(*e)?)),
        })
    }

    fn order_item(&mut self, item: sql::OrderByExpr, at: Location) -> Result<OrderItem> {
        let desc = matches!(item.options.sort, Some(sql::OrderBySort::Desc));
        if matches!(item.options.sort, Some(sql::OrderBySort::Using(_))) {
            return Err(self.unsupported(at, "ORDER BY … USING"));
        }
        Ok(OrderItem {
            expr: self.expr(item.expr)?,
            desc,
            nulls_first: item.options.nulls_first,
        })
    }

    pub(super) fn query(&mut self, mut q: sql::Query) -> Result<Query> {
        // Counted before anything measures the query's span, which walks every term.
        let (terms, first) = compound_terms(&q.body);
        if terms > MAX_COMPOUND {
            let at = self.start_of(Node::SetExpr(first));
            return Err(ParseError::new(
                at,
                format!(
                    "too many terms in a compound SELECT: {terms}, at most {MAX_COMPOUND}; \
                     split it into several statements"
                ),
            ));
        }
        let at = self.start_of(Node::Query(&q));
        let outer = self.ctes.len();
        self.query_nesting += 1;
        let query = match q.with.take() {
            Some(with) => self
                .with(with)
                .and_then(|()| self.query_body(q, at))
                .and_then(|query| self.all_read(outer).map(|()| without_parentheses(query))),
            None => self.query_body(q, at),
        };
        self.query_nesting -= 1;
        self.ctes.truncate(outer);
        query
    }

    /// A WITH clause's CTEs, put in scope (each sees those before it) until the caller
    /// truncates `ctes` again.
    pub(super) fn with(&mut self, with: sql::With) -> Result<()> {
        let at = self.location_or_statement(span_at(with.with_token.0.span));
        let first = self.ctes.len();
        for cte in with.cte_tables {
            let name = ident(cte.alias.name);
            if cte.from.is_some() || cte.materialized.is_some() {
                return Err(self.unsupported(name.at, "this WITH clause"));
            }
            if self.ctes[first..].iter().any(|c| same_name(&c.name, &name)) {
                return Err(ParseError::new(
                    name.at,
                    format!("WITH names {} twice", name.value),
                ));
            }
            let columns: Vec<Ident> = cte.alias.columns.into_iter().map(|c| ident(c.name)).collect();
            let before = self.cte_references;
            let body = match with.recursive {
                true => self.recursive_cte(&name, &columns, *cte.query, at)?,
                false => CteBody::Query(self.query(*cte.query)?),
            };
            let weight = 1 + (self.cte_references - before);
            self.ctes.push(Cte {
                name,
                columns,
                body,
                weight,
                read: std::cell::Cell::new(false),
            });
        }
        Ok(())
    }

    /// A query of WITH RECURSIVE: `anchor UNION [ALL] step` where only `step` reads
    /// `name`, once; or a query that does not read it at all (an ordinary one).
    fn recursive_cte(
        &mut self,
        name: &Ident,
        columns: &[Ident],
        q: sql::Query,
        at: Location,
    ) -> Result<CteBody> {
        let union = matches!(
            &*q.body,
            sql::SetExpr::SetOperation {
                op: sql::SetOperator::Union,
                set_quantifier: sql::SetQuantifier::All
                    | sql::SetQuantifier::Distinct
                    | sql::SetQuantifier::None,
                ..
            }
        ) && q.order_by.is_none()
            && q.limit_clause.is_none()
            && q.with.is_none();
        let outer_self = self.self_references;
        self.self_references = 0;
        self.ctes.push(Cte {
            name: name.clone(),
            columns: columns.to_vec(),
            body: CteBody::Reading(self.query_nesting),
            weight: 1,
            read: std::cell::Cell::new(true),
        });
        let read = self.recursive_parts(name, columns, q, union, at);
        self.ctes.pop();
        self.self_references = outer_self;
        read
    }

    fn recursive_parts(
        &mut self,
        name: &Ident,
        columns: &[Ident],
        q: sql::Query,
        union: bool,
        at: Location,
    ) -> Result<CteBody> {
        let reads_itself = |name: &Ident| {
            ParseError::new(
                name.at,
                format!(
                    "{} reads itself, so it must be `first part UNION [ALL] recursive part`, the first part \
                     not reading it, and no ORDER BY or LIMIT of its own (order and limit the query that reads it)",
                    name.value
                ),
            )
        };
        if !union {
            // Read as one query, a level down: a reference to itself there is counted (and
            // refused below), not taken for one in a subquery.
            if let Some(reading) = self.ctes.last_mut() {
                reading.body = CteBody::Reading(self.query_nesting + 1);
            }
            let query = self.query(q)?;
            return match self.self_references {
                0 => Ok(CteBody::Query(query)),
                _ => Err(reads_itself(name)),
            };
        }
        let sql::SetExpr::SetOperation {
            set_quantifier,
            left,
            right,
            ..
        } = *q.body
        else {
            return Err(ParseError::new(at, "expected UNION in the recursive query"));
        };
        let all = matches!(set_quantifier, sql::SetQuantifier::All);
        let anchor = self.set_expr(*left)?;
        if self.self_references > 0 {
            return Err(reads_itself(name));
        }
        let step = self.set_expr(*right)?;
        match self.self_references {
            // It does not read itself: an ordinary query.
            0 => Ok(CteBody::Query(Query {
                body: SetExpr::SetOp {
                    op: SetOp::Union,
                    all,
                    left: Box::new(anchor),
                    right: Box::new(step),
                },
                order_by: Vec::new(),
                limit: None,
                offset: None,
                at: name.at,
            })),
            1 => Ok(CteBody::Recursive(RecursiveCte {
                name: name.clone(),
                columns: columns.to_vec(),
                anchor,
                step,
                all,
            })),
            _ => Err(ParseError::new(
                name.at,
                format!(
                    "the recursive part of {} may read {} only once",
                    name.value, name.value
                ),
            )),
        }
    }

    /// Refuses a WITH query (of those from `first` on) that nothing read: it is planned
    /// where it is read, so one never read would go unchecked (and a statement printed
    /// back, its WITH queries in place, would lose it).
    pub(super) fn all_read(&self, first: usize) -> Result<()> {
        match self.ctes[first..].iter().find(|c| !c.read.get()) {
            Some(c) => Err(ParseError::new(
                c.name.at,
                format!(
                    "WITH query {} is not read by the statement: remove it, or read it in a FROM",
                    c.name.value
                ),
            )),
            None => Ok(()),
        }
    }

    /// The CTE `name` names, if one in scope does: the innermost.
    fn cte(&self, name: &Ident) -> Option<&Cte> {
        self.ctes.iter().rev().find(|c| same_name(&c.name, name))
    }

    fn query_body(&mut self, q: sql::Query, at: Location) -> Result<Query> {
        if q.fetch.is_some() || !q.locks.is_empty() || q.for_clause.is_some() {
            return Err(self.unsupported(at, "FETCH / FOR / locking clauses"));
        }
        let body = self.set_expr(*q.body)?;
        let mut order_by = Vec::new();
        if let Some(ob) = q.order_by {
            match ob.kind {
                sql::OrderByKind::Expressions(items) => {
                    for item in items {
                        order_by.push(self.order_item(item, at)?);
                    }
                }
                sql::OrderByKind::All(_) => return Err(self.unsupported(at, "ORDER BY ALL")),
            }
        }
        let (mut limit, mut offset) = (None, None);
        match q.limit_clause {
            None => {}
            Some(sql::LimitClause::LimitOffset {
                limit: l,
                offset: o,
                limit_by,
            }) => {
                if !limit_by.is_empty() {
                    return Err(self.unsupported(at, "LIMIT … BY"));
                }
                // In the order they are written (`OFFSET ? LIMIT ?` numbers OFFSET's first).
                let offset_first = match (&l, &o) {
                    (Some(l), Some(o)) => self.start_of(Node::Expr(&o.value)) < self.start_of(Node::Expr(l)),
                    _ => false,
                };
                if offset_first && let Some(o) = o {
                    offset = Some(self.expr(o.value)?);
                    limit = l.map(|l| self.expr(l)).transpose()?;
                } else {
                    limit = l.map(|l| self.expr(l)).transpose()?;
                    offset = o.map(|o| self.expr(o.value)).transpose()?;
                }
            }
            Some(sql::LimitClause::OffsetCommaLimit { offset: o, limit: l }) => {
                offset = Some(self.expr(o)?);
                limit = Some(self.expr(l)?);
            }
        }
        Ok(Query {
            body,
            order_by,
            limit,
            offset,
            at,
        })
    }

    #[recursive::recursive]
    fn set_expr(&mut self, body: sql::SetExpr) -> Result<SetExpr> {
        let at = self.start_of(Node::SetExpr(&body));
        match body {
            sql::SetExpr::Select(s) => Ok(SetExpr::Select(Box::new(self.select(*s)?))),
            sql::SetExpr::Query(q) => Ok(SetExpr::Query(Box::new(self.query(*q)?))),
            sql::SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => {
                let op = match op {
                    sql::SetOperator::Union => SetOp::Union,
                    sql::SetOperator::Except => SetOp::Except,
                    sql::SetOperator::Intersect => SetOp::Intersect,
                    other => return Err(self.unsupported(at, other)),
                };
                let all = match set_quantifier {
                    sql::SetQuantifier::All => true,
                    sql::SetQuantifier::None | sql::SetQuantifier::Distinct => false,
                    other => return Err(self.unsupported(at, format!("{} {other}", op.name()))),
                };
                let left = Box::new(self.set_expr(*left)?);
                let right = Box::new(self.set_expr(*right)?);
                Ok(SetExpr::SetOp { op, left, right, all })
            }
            sql::SetExpr::Values(v) => {
                let rows: Vec<Vec<Expr>> = v
                    .rows
                    .into_iter()
                    .map(|row| {
                        row.content
                            .into_iter()
                            .map(|e| self.expr(e))
                            .collect::<Result<Vec<_>>>()
                    })
                    .collect::<Result<_>>()?;
                // A block read aside: its marker row stands for its rows.
                if let [row] = rows.as_slice()
                    && let Some(k) = super::rows::marker(row)
                    && let Some(block) = self.rows.get_mut(k).and_then(Option::take)
                {
                    return Ok(SetExpr::Values(block));
                }
                Ok(SetExpr::Values(rows))
            }
            other => Err(self.unsupported(at, other)),
        }
    }

    fn select(&mut self, s: sql::Select) -> Result<Select> {
        let at = self.location_or_statement(span_at(s.select_token.0.span));
        if s.top.is_some()
            || s.into.is_some()
            || !s.lateral_views.is_empty()
            || s.prewhere.is_some()
            || !s.cluster_by.is_empty()
            || !s.distribute_by.is_empty()
            || !s.sort_by.is_empty()
            || s.qualify.is_some()
            || !s.connect_by.is_empty()
            || s.exclude.is_some()
        {
            return Err(self.unsupported(at, "this SELECT clause"));
        }
        let distinct = match s.distinct {
            None | Some(sql::Distinct::All) => false,
            Some(sql::Distinct::Distinct) => true,
            Some(sql::Distinct::On(_)) => return Err(self.unsupported(at, "DISTINCT ON")),
        };
        let items = self.select_items(s.projection, at)?;
        let from = s
            .from
            .into_iter()
            .map(|t| self.translate_from_item(t))
            .collect::<Result<_>>()?;
        let filter = match s.selection {
            Some(e) => Some(self.expr(e)?),
            None => None,
        };
        let group_by = match s.group_by {
            sql::GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => {
                exprs.into_iter().map(|e| self.expr(e)).collect::<Result<_>>()?
            }
            _ => return Err(self.unsupported(at, "GROUP BY ALL / ROLLUP / CUBE")),
        };
        let having = match s.having {
            Some(e) => Some(self.expr(e)?),
            None => None,
        };
        let mut windows = Vec::new();
        for sql::NamedWindowDefinition(name, definition) in s.named_window {
            let window = match definition {
                sql::NamedWindowExpr::WindowSpec(spec) => self.window(spec, at)?,
                sql::NamedWindowExpr::NamedWindow(base) => Window {
                    base: Some(ident(base)),
                    bare: false,
                    partition_by: Vec::new(),
                    order_by: Vec::new(),
                    frame: None,
                    at,
                },
            };
            windows.push((ident(name), window));
        }
        Ok(Select {
            distinct,
            items,
            from,
            filter,
            group_by,
            having,
            windows,
            at,
        })
    }

    pub(super) fn translate_from_item(&mut self, t: sql::TableWithJoins) -> Result<FromItem> {
        let base = self.table_ref(t.relation)?;
        let mut joins = Vec::new();
        for join in t.joins {
            let at = self.start_of(Node::Table(&join.relation));
            let (left, constraint, cross) = match join.join_operator {
                sql::JoinOperator::Join(c) | sql::JoinOperator::Inner(c) => (false, c, false),
                sql::JoinOperator::Left(c) | sql::JoinOperator::LeftOuter(c) => (true, c, false),
                sql::JoinOperator::CrossJoin(sql::JoinConstraint::None) => {
                    (false, sql::JoinConstraint::None, true)
                }
                _ => {
                    return Err(self.unsupported(
                        at,
                        "this join (ecsql has JOIN, LEFT JOIN and CROSS JOIN; no RIGHT, FULL, SEMI, ANTI or other joins)",
                    ));
                }
            };
            let on = match constraint {
                sql::JoinConstraint::On(e) => Some(e),
                sql::JoinConstraint::None => None,
                _ => return Err(self.unsupported(at, "JOIN … USING / NATURAL JOIN")),
            };
            // The table before its ON, as they are written: a `?` in each is numbered in
            // the order of the text.
            let table = self.table_ref(join.relation)?;
            let on = match on {
                Some(e) => Some(self.expr(e)?),
                // An explicit CROSS JOIN is every pair of rows, as in SQL: other entities,
                // joined ON TRUE (a JOIN without ON is the same entity).
                None if cross => Some(Expr::new(ExprKind::Literal(Literal::Bool(true)), at)),
                None => None,
            };
            joins.push(Join { left, table, on });
        }
        Ok(FromItem { base, joins })
    }

    #[recursive::recursive]
    fn table_ref(&mut self, t: sql::TableFactor) -> Result<TableRef> {
        let at = self.start_of(Node::Table(&t));
        match t {
            sql::TableFactor::Table {
                name,
                alias,
                args,
                with_hints,
                version,
                with_ordinality,
                partitions,
                sample,
                index_hints,
                json_path,
            } => {
                if !with_hints.is_empty()
                    || version.is_some()
                    || with_ordinality
                    || !partitions.is_empty()
                    || sample.is_some()
                    || !index_hints.is_empty()
                    || json_path.is_some()
                {
                    return Err(self.unsupported(at, "this table clause"));
                }
                let name = self.single_name(name)?;
                let (alias, columns) = self.alias(alias);
                if args.is_none()
                    && let Some(cte) = self.cte(&name)
                {
                    let weight = cte.weight;
                    cte.read.set(true);
                    let reference = match &cte.body {
                        CteBody::Query(query) => TableRef::Subquery {
                            query: Box::new(query.clone()),
                            alias: Some(alias.unwrap_or(name)),
                            columns: if columns.is_empty() {
                                cte.columns.clone()
                            } else {
                                columns
                            },
                        },
                        CteBody::Recursive(recursive) if columns.is_empty() => TableRef::Recursive {
                            cte: Box::new(recursive.clone()),
                            alias,
                        },
                        CteBody::Reading(nesting) if *nesting != self.query_nesting => {
                            return Err(ParseError::new(
                                at,
                                format!(
                                    "the recursive part of {} reads it in a subquery: it may read it only in its own FROM",
                                    name.value
                                ),
                            ));
                        }
                        CteBody::Reading(_) if columns.is_empty() => {
                            self.self_references += 1;
                            return Ok(TableRef::Named { name, alias });
                        }
                        CteBody::Recursive(_) | CteBody::Reading(_) => {
                            return Err(ParseError::new(
                                at,
                                "a recursive WITH query takes its column names in WITH, not where it is read",
                            ));
                        }
                    };
                    self.cte_references = self.cte_references.saturating_add(weight);
                    if self.cte_references > MAX_CTE_REFERENCES {
                        return Err(ParseError::new(
                            at,
                            format!(
                                "too many references to common table expressions: more than {MAX_CTE_REFERENCES} in one statement"
                            ),
                        ));
                    }
                    return Ok(reference);
                }
                match args {
                    None => {
                        if !columns.is_empty() {
                            return Err(ParseError::new(
                                at,
                                "column aliases are allowed only on table functions and subqueries",
                            ));
                        }
                        Ok(TableRef::Named { name, alias })
                    }
                    Some(a) => {
                        let mut exprs = Vec::new();
                        for arg in a.args {
                            match arg {
                                sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) => {
                                    exprs.push(self.expr(e)?)
                                }
                                other => return Err(self.unsupported(at, format!("the argument {other}"))),
                            }
                        }
                        Ok(TableRef::Function {
                            name,
                            args: exprs,
                            alias,
                            columns,
                        })
                    }
                }
            }
            sql::TableFactor::Derived {
                lateral,
                subquery,
                alias,
                sample,
            } => {
                if lateral || sample.is_some() {
                    return Err(self.unsupported(at, "LATERAL / TABLESAMPLE"));
                }
                // A subquery in FROM is a level, as one in an expression is.
                let parent = self.depth;
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    on_deep_stack(move || drop(subquery));
                    return Err(too_deep(at));
                }
                let query = self.query(*subquery);
                self.depth = parent;
                let query = Box::new(query?);
                let (alias, columns) = self.alias(alias);
                // `(WITH RECURSIVE r … SELECT * FROM r) AS a`, as a reference to a
                // recursive WITH query prints, reads back as that reference.
                if columns.is_empty()
                    && let Some(cte) = recursive_whole(&query)
                {
                    return Ok(TableRef::Recursive { cte, alias });
                }
                Ok(TableRef::Subquery {
                    query,
                    alias,
                    columns,
                })
            }
            other => Err(self.unsupported(at, format!("the table {other}"))),
        }
    }

    fn alias(&self, alias: Option<sql::TableAlias>) -> (Option<Ident>, Vec<Ident>) {
        match alias {
            None => (None, Vec::new()),
            Some(a) => (
                Some(ident(a.name)),
                a.columns.into_iter().map(|c| ident(c.name)).collect(),
            ),
        }
    }

    /// A select list (or RETURNING's) into ecsql's items.
    /// (`at`: where the select list is, which a `*` takes.)
    pub(super) fn select_items(
        &mut self,
        projection: Vec<sql::SelectItem>,
        at: Location,
    ) -> Result<Vec<SelectItem>> {
        let mut items = Vec::with_capacity(projection.len());
        for item in projection {
            items.push(match item {
                sql::SelectItem::UnnamedExpr(e) => SelectItem::Expr {
                    expr: self.expr(e)?,
                    alias: None,
                },
                sql::SelectItem::ExprWithAlias { expr, alias } => SelectItem::Expr {
                    expr: self.expr(expr)?,
                    alias: Some(ident(alias)),
                },
                sql::SelectItem::Wildcard(_) => SelectItem::Wildcard(at),
                sql::SelectItem::QualifiedWildcard(
                    sql::SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) => SelectItem::QualifiedWildcard(self.single_name(n)?),
                other => return Err(self.unsupported(at, format!("the select item {other}"))),
            });
        }
        Ok(items)
    }

    /// `write` with its RETURNING list, when it has one.
    pub(super) fn returning(
        &mut self,
        write: StatementKind,
        returning: Option<Vec<sql::SelectItem>>,
    ) -> Result<StatementKind> {
        Ok(match returning {
            None => write,
            Some(items) => StatementKind::Returning {
                write: Box::new(write),
                items: self.select_items(items, self.statement_at)?,
            },
        })
    }

    /// INSERT, UPDATE and DELETE, parsed by sqlparser, into ecsql's statements.
    pub(super) fn dml(&mut self, statement: sql::Statement) -> Result<StatementKind> {
        let at = self.statement_at;
        match statement {
            sql::Statement::Insert(insert) => {
                let component = match insert.table {
                    sql::TableObject::TableName(n) => self.single_name(n)?,
                    other => return Err(self.unsupported(at, format!("INSERT INTO {other}"))),
                };
                if !insert.assignments.is_empty() || insert.partitioned.is_some() {
                    return Err(self.unsupported(at, "this INSERT clause"));
                }
                let columns = insert
                    .columns
                    .into_iter()
                    .map(|c| self.single_name(c))
                    .collect::<Result<_>>()?;
                let source = match insert.source {
                    Some(q) => self.query(*q)?,
                    None => return Err(ParseError::new(at, "expected VALUES or SELECT after INSERT INTO")),
                };
                let mut on_conflict = match insert.or {
                    None => OnConflict::Fail,
                    Some(sql::SqliteOnConflict::Replace) => OnConflict::Replace,
                    Some(sql::SqliteOnConflict::Ignore) => OnConflict::DoNothing,
                    Some(other) => return Err(self.unsupported(at, format!("INSERT OR {other}"))),
                };
                if insert.replace_into {
                    on_conflict = OnConflict::Replace;
                }
                match insert.on {
                    None => {}
                    Some(sql::OnInsert::OnConflict(c)) => {
                        on_conflict = match c.action {
                            sql::OnConflictAction::DoNothing => OnConflict::DoNothing,
                            sql::OnConflictAction::DoUpdate(u) => {
                                if u.selection.is_some() {
                                    return Err(self.unsupported(at, "ON CONFLICT DO UPDATE … WHERE"));
                                }
                                OnConflict::DoUpdate(self.assignments(u.assignments)?)
                            }
                        }
                    }
                    Some(other) => return Err(self.unsupported(at, other)),
                }
                let write = StatementKind::Insert {
                    component,
                    columns,
                    source,
                    on_conflict,
                };
                self.returning(write, insert.returning)
            }
            sql::Statement::Update(update) => {
                if update.or.is_some() || !update.order_by.is_empty() || update.limit.is_some() {
                    return Err(self.unsupported(at, "this UPDATE clause"));
                }
                if !update.table.joins.is_empty() {
                    return Err(ParseError::new(
                        at,
                        "UPDATE takes one component; list the others after FROM",
                    ));
                }
                let (target, alias) = match self.table_ref(update.table.relation)? {
                    TableRef::Named { name, alias } => (name, alias),
                    _ => return Err(ParseError::new(at, "expected a component name after UPDATE")),
                };
                let assignments = self.assignments(update.assignments)?;
                let from = match update.from {
                    None => Vec::new(),
                    Some(sql::UpdateTableFromKind::AfterSet(t))
                    | Some(sql::UpdateTableFromKind::BeforeSet(t)) => t
                        .into_iter()
                        .map(|t| self.translate_from_item(t))
                        .collect::<Result<_>>()?,
                };
                let filter = match update.selection {
                    Some(e) => Some(self.expr(e)?),
                    None => None,
                };
                let write = StatementKind::Update {
                    target,
                    alias,
                    assignments,
                    from,
                    filter,
                };
                self.returning(write, update.returning)
            }
            sql::Statement::Delete(delete) => {
                if !delete.tables.is_empty()
                    || delete.using.is_some()
                    || !delete.order_by.is_empty()
                    || delete.limit.is_some()
                {
                    return Err(self.unsupported(at, "this DELETE clause"));
                }
                let mut tables = match delete.from {
                    sql::FromTable::WithFromKeyword(t) | sql::FromTable::WithoutKeyword(t) => t,
                };
                if tables.iter().any(|t| !t.joins.is_empty()) {
                    return Err(ParseError::new(
                        at,
                        "DELETE FROM takes exactly one component, without joins (to remove it from \
                         the entities a join finds: DELETE FROM C WHERE id IN (SELECT … JOIN …))",
                    ));
                }
                if tables.len() != 1 {
                    return Err(ParseError::new(at, "DELETE FROM takes exactly one component"));
                }
                let component = match self.table_ref(tables.remove(0).relation)? {
                    TableRef::Named { name, alias: None } => name,
                    _ => {
                        return Err(ParseError::new(
                            at,
                            "expected a component name (without alias) after DELETE FROM",
                        ));
                    }
                };
                let filter = match delete.selection {
                    Some(e) => Some(self.expr(e)?),
                    None => None,
                };
                self.returning(StatementKind::Delete { component, filter }, delete.returning)
            }
            other => Err(self.unsupported(at, format!("the statement {other}"))),
        }
    }

    fn assignments(&mut self, list: Vec<sql::Assignment>) -> Result<Vec<Assignment>> {
        list.into_iter()
            .map(|a| {
                let field = match a.target {
                    sql::AssignmentTarget::ColumnName(n) => {
                        let mut parts = self.object_name(n)?;
                        // `SET Position.x = …` names the target's own field.
                        match parts.pop() {
                            Some(last) => last,
                            None => {
                                return Err(ParseError::new(
                                    self.statement_at,
                                    "expected a field name in SET",
                                ));
                            }
                        }
                    }
                    sql::AssignmentTarget::Tuple(_) => {
                        return Err(self.unsupported(self.statement_at, "SET (a, b) = …"));
                    }
                };
                Ok(Assignment {
                    field,
                    value: self.expr(a.value)?,
                })
            })
            .collect()
    }
}

const TYPE_EXPECTED_CAST: &str = "expected a type to cast to (INT, FLOAT, REAL, BOOL, TEXT or ENTITY)";

fn is_distinct(left: Box<Expr>, right: Expr, negated: bool) -> ExprKind {
    ExprKind::IsDistinct {
        left,
        right: Box::new(right),
        negated,
    }
}

fn lit_bool(b: bool, at: Location) -> Expr {
    Expr::new(ExprKind::Literal(Literal::Bool(b)), at)
}

fn number(text: &str, at: Location) -> Result<Literal> {
    Literal::number(text).ok_or_else(|| ParseError::new(at, format!("expected a number, found {text}")))
}

/// The field type a type name in CAST stands for.
pub(super) fn type_name(name: &str) -> Option<FieldType> {
    match name.to_ascii_uppercase().as_str() {
        "INT" | "INTEGER" | "BIGINT" | "INT8" => Some(FieldType::Int),
        "FLOAT" | "DOUBLE" | "DOUBLE PRECISION" | "FLOAT8" => Some(FieldType::Float),
        "REAL" | "FLOAT4" => Some(FieldType::Real),
        "BOOL" | "BOOLEAN" => Some(FieldType::Bool),
        "TEXT" | "VARCHAR" | "STRING" => Some(FieldType::Text),
        "ENTITY" => Some(FieldType::Entity),
        _ => None,
    }
}

/// Whether two names are one: quoted ones exactly, others without regard to ASCII case.
fn same_name(a: &Ident, b: &Ident) -> bool {
    if a.quoted || b.quoted {
        a.value == b.value
    } else {
        a.value.eq_ignore_ascii_case(&b.value)
    }
}

/// The recursive WITH query `query` is all of, when it is `SELECT * FROM r` of one,
/// unaliased, and nothing more.
fn recursive_whole(query: &Query) -> Option<Box<RecursiveCte>> {
    if !query.order_by.is_empty() || query.limit.is_some() || query.offset.is_some() {
        return None;
    }
    let SetExpr::Select(s) = &query.body else {
        return None;
    };
    match (s.items.as_slice(), s.from.as_slice()) {
        (
            [SelectItem::Wildcard(_)],
            [
                FromItem {
                    base: TableRef::Recursive { cte, alias: None },
                    joins,
                },
            ],
        ) if !s.distinct
            && s.filter.is_none()
            && s.group_by.is_empty()
            && s.having.is_none()
            && joins.is_empty() =>
        {
            Some(cte.clone())
        }
        _ => None,
    }
}

/// `WITH a AS (…) (SELECT …) LIMIT n`: once its WITH is read into place, a query whose
/// body is a plain query in parentheses is that body (it prints without them; sqlparser
/// cannot read `((SELECT …) LIMIT n)`).
fn without_parentheses(mut query: Query) -> Query {
    if let SetExpr::Query(inner) = &mut query.body
        && inner.order_by.is_empty()
        && inner.limit.is_none()
        && inner.offset.is_none()
    {
        let body = std::mem::replace(&mut inner.body, SetExpr::Values(Vec::new()));
        query.body = body;
    }
    query
}
