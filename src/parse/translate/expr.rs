//! Expressions, sqlparser's made ours node by node; SQL's special forms (FLOOR, CEIL,
//! SUBSTRING, POSITION, TRIM) become plain calls, and IS TRUE and IS FALSE comparisons
//! that are never NULL.
//!
//! Invariants: a tree deeper than `MAX_DEPTH` is refused, a chain of binary operators
//! taken apart in a loop so that neither its length nor dropping it recurses; a `-`
//! before a number is folded into the literal (so that i64::MIN is writable).

use sqlparser::ast as sql;

use super::{MAX_DEPTH, Result, ident, too_deep, type_name};
use crate::location::Location;
use crate::parse::ast::*;
use crate::parse::error::ParseError;
use crate::parse::parser::StatementParser;
use crate::parse::start::{Node, on_deep_stack};

impl StatementParser<'_> {
    /// `a + b + c` is `(a + b) + c`: sqlparser builds a chain of binary operators down its
    /// left side without recursion, however long. It is taken apart here in a loop, so
    /// neither its length nor dropping it recurses; its operands are refused past
    /// `MAX_DEPTH` like any expression's (the leftmost, the deepest, first). Every node of
    /// the chain is placed where the chain starts, as its span would place it.
    /// `self.depth` is the depth of the chain's top node.
    fn binary_chain(&mut self, e: sql::Expr) -> Result<Expr> {
        let mut rights = Vec::new();
        let mut leftmost = e;
        // A regular expression match is a call (`regex_match`): the chain stops above it.
        while let sql::Expr::BinaryOp { left, op, right } = leftmost {
            if regex_symbol(&op).is_some() {
                leftmost = sql::Expr::BinaryOp { left, op, right };
                break;
            }
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
                kind: ExprKind::binary(chain, op, right),
                at,
            };
        }
        Ok(chain)
    }

    /// `a ~ b`, `a !~ b`, `a ~* b`, `a !~* b` (and `OPERATOR(pg_catalog.~)`): whether
    /// the text matches the regular expression, as the call `regexp_like(a, b [, 'i'])`
    /// (under NOT for `!`), which prints back as itself.
    fn regex_match(&mut self, left: sql::Expr, symbol: &str, right: sql::Expr, at: Location) -> Result<Expr> {
        let mut args = vec![self.expr(left)?, self.expr(right)?];
        if symbol.ends_with('*') {
            args.push(Expr::new(ExprKind::Literal(Literal::Text("i".into())), at));
        }
        let call = Expr::new(
            ExprKind::Function {
                name: Ident::new("regexp_like", at),
                args,
                star: false,
                distinct: false,
            },
            at,
        );
        Ok(if symbol.starts_with('!') {
            Expr::new(ExprKind::Unary(UnaryOp::Not, Box::new(call)), at)
        } else {
            call
        })
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

    /// One expression, one level deeper than its parent: refused past `MAX_DEPTH`.
    #[recursive::recursive]
    pub(in crate::parse) fn expr(&mut self, e: sql::Expr) -> Result<Expr> {
        let parent = self.depth;
        self.depth += 1;
        let result = if let sql::Expr::BinaryOp { op, .. } = &e
            && let Some(symbol) = regex_symbol(op)
        {
            let at = self.start_of(Node::Expr(&e));
            match e {
                sql::Expr::BinaryOp { left, right, .. } => self.regex_match(*left, symbol, *right, at),
                other => Err(self.unsupported(at, format!("the expression {other}"))),
            }
        } else if let sql::Expr::BinaryOp { .. } = e {
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
            sql::Expr::Identifier(i) => ExprKind::Column(smallvec::smallvec![ident(i)]),
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
                sql::Value::DoubleQuotedString(s) => ExprKind::Column(smallvec::smallvec![Ident {
                    value: s.into(),
                    quoted: true,
                    at,
                }]),
                other => return Err(self.unsupported(at, format!("the literal {other}"))),
            },
            sql::Expr::Nested(inner) => return self.expr(*inner),
            // ecsql compares texts byte by byte, which is the C collation: naming it (or
            // the default, as psql does) changes nothing; another is refused.
            sql::Expr::Collate { expr, collation } => {
                let name = collation.to_string().to_ascii_lowercase().replace('"', "");
                let name = name.strip_prefix("pg_catalog.").unwrap_or(&name);
                if !matches!(name, "default" | "c" | "posix" | "ucs_basic") {
                    return Err(self.unsupported(
                        at,
                        format!("the collation {collation} (texts compare byte by byte, as COLLATE \"C\")"),
                    ));
                }
                return self.expr(*expr);
            }
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
                let written = data_type.to_string();
                // PostgreSQL's object identifier types are lookups in the catalog: the
                // calls of the same names (`'pg_class'::regclass`, `oid::regclass`).
                let bare = written.to_ascii_lowercase();
                let bare = bare.strip_prefix("pg_catalog.").unwrap_or(&bare);
                if REG_TYPES.contains(&bare) {
                    return Ok(Expr::new(
                        ExprKind::Function {
                            name: Ident::new(bare, at),
                            args: vec![self.expr(*expr)?],
                            star: false,
                            distinct: false,
                        },
                        at,
                    ));
                }
                let ty = type_name(&written)
                    .ok_or_else(|| ParseError::new(at, format!("{TYPE_EXPECTED_CAST}, found {data_type}")))?;
                ExprKind::Cast {
                    expr: boxed(self, *expr)?,
                    ty,
                }
            }
            sql::Expr::Function(f) => self.function(f, at)?,
            // `x = ANY (array)` and `x <> ALL (array)`: whether `x` is (not) an element;
            // over a subquery, `IN` and `NOT IN`.
            sql::Expr::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => self.array_membership(*left, &compare_op, *right, true, at)?,
            sql::Expr::AllOp {
                left,
                compare_op,
                right,
            } => self.array_membership(*left, &compare_op, *right, false, at)?,
            // `a[i]`: an array's element.
            sql::Expr::CompoundFieldAccess { root, access_chain } => {
                // Each subscript is a level of the tree, as any call is.
                if self.depth + access_chain.len() > MAX_DEPTH {
                    on_deep_stack(move || drop((root, access_chain)));
                    return Err(too_deep(at));
                }
                let mut expr = self.expr(*root)?;
                for access in access_chain {
                    let sql::AccessExpr::Subscript(sql::Subscript::Index { index }) = access else {
                        return Err(self.unsupported(at, format!("the access {access}")));
                    };
                    let index = self.expr(index)?;
                    expr = Expr::new(
                        ExprKind::Function {
                            name: Ident::new("array_element", at),
                            args: vec![expr, index],
                            star: false,
                            distinct: false,
                        },
                        at,
                    );
                }
                return Ok(expr);
            }
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
                // `SUBSTRING(s FOR n)` starts at 1; `substr(s)` has no start, and the
                // function's arity says so.
                match substring_from {
                    Some(f) => args.push(self.expr(*f)?),
                    None if substring_for.is_some() => {
                        args.push(Expr::new(ExprKind::Literal(Literal::Int(1)), at))
                    }
                    None => {}
                }
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

    /// `x = ANY (a)` is `array_contains(a, x)` and `x <> ALL (a)` its negation, for an
    /// array `a` (`x = ANY (SELECT …)` is `x IN (SELECT …)`); other comparisons with ANY
    /// or ALL are refused.
    fn array_membership(
        &mut self,
        left: sql::Expr,
        op: &sql::BinaryOperator,
        right: sql::Expr,
        any: bool,
        at: Location,
    ) -> Result<ExprKind> {
        let negated = match (op, any) {
            (sql::BinaryOperator::Eq, true) => false,
            (sql::BinaryOperator::NotEq, false) => true,
            _ => {
                let quantifier = if any { "ANY" } else { "ALL" };
                return Err(self.unsupported(
                    at,
                    format!(
                        "{op} {quantifier} (only = ANY and <> ALL, whether a value is or is not an element)"
                    ),
                ));
            }
        };
        let expr = Box::new(self.expr(left)?);
        let array = match right {
            sql::Expr::Subquery(q) => {
                return Ok(ExprKind::InSubquery {
                    expr,
                    query: Box::new(self.query(*q)?),
                    negated,
                });
            }
            other => self.expr(other)?,
        };
        let contains = ExprKind::Function {
            name: Ident::new("array_contains", at),
            args: vec![array, *expr],
            star: false,
            distinct: false,
        };
        Ok(if negated {
            ExprKind::Unary(UnaryOp::Not, Box::new(Expr::new(contains, at)))
        } else {
            contains
        })
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
}

/// PostgreSQL's object identifier types, which a cast to turns into a lookup call.
const REG_TYPES: &[&str] = &[
    "regclass",
    "regtype",
    "regnamespace",
    "regproc",
    "regprocedure",
    "regrole",
];

/// The regular expression operator `op` is, if it is one (`regex_match`).
fn regex_symbol(op: &sql::BinaryOperator) -> Option<&'static str> {
    match op {
        sql::BinaryOperator::PGRegexMatch => Some("~"),
        sql::BinaryOperator::PGRegexIMatch => Some("~*"),
        sql::BinaryOperator::PGRegexNotMatch => Some("!~"),
        sql::BinaryOperator::PGRegexNotIMatch => Some("!~*"),
        sql::BinaryOperator::PGCustomBinaryOperator(parts)
            if parts.len() == 1 || (parts.len() == 2 && parts[0].eq_ignore_ascii_case("pg_catalog")) =>
        {
            ["~", "~*", "!~", "!~*"]
                .into_iter()
                .find(|s| parts.last().is_some_and(|p| p == s))
        }
        _ => None,
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
