//! Expressions and queries printed back as ecsql text (`Display`), with the operators'
//! binding strengths (as the parsers read them) that decide where parentheses go.
//!
//! Invariant: what prints here parses back to the same tree (`reads_back`, and the
//! printer test, hold it): an operand is put in parentheses wherever the text would
//! otherwise group differently, a name is quoted wherever it is not a plain word.

use std::fmt::{self, Display, Formatter, Write};

use super::expr::*;

impl Display for Ident {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if !self.prints_bare() {
            f.write_char('"')?;
            f.write_str(&self.value.replace('"', "\"\""))?;
            f.write_char('"')
        } else {
            f.write_str(&self.value)
        }
    }
}

impl Ident {
    /// Whether this name prints as it is, without quotes.
    pub fn prints_bare(&self) -> bool {
        !self.quoted && is_plain_word(&self.value)
    }

    /// The values of `parts` joined by dots, without quotes (`a.b.c`).
    pub fn dotted(parts: &[Ident]) -> String {
        Ident::dotted_str(parts.iter().map(|p| p.value.as_str()))
    }

    /// `parts` joined by dots (`Component.field`), sized once. Joined by hand: `format!`
    /// took about 750 instructions a name (binding a statement names each field it writes).
    pub fn dotted_str<'a>(parts: impl Iterator<Item = &'a str> + Clone) -> String {
        let mut name = String::with_capacity(parts.clone().map(|p| p.len() + 1).sum());
        for (i, p) in parts.enumerate() {
            if i > 0 {
                name.push('.');
            }
            name.push_str(p);
        }
        name
    }
}

/// Whether `s` is an ASCII word: a letter or `_`, then letters, digits and `_`. Read by
/// bytes: a character outside ASCII is bytes of `0x80` and up, none of them a word's.
fn is_plain_word(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl Display for Literal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Null => f.write_str("NULL"),
            Literal::Bool(b) => f.write_str(if *b { "TRUE" } else { "FALSE" }),
            Literal::Int(i) => write!(f, "{i}"),
            Literal::Float(x) if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 => write!(f, "{x:.1}"),
            // Past FLOAT's range, as a literal reads it (`inf` would be a name).
            Literal::Float(x) if x.is_infinite() => f.write_str(if *x > 0.0 { "1e309" } else { "-1e309" }),
            Literal::Float(x) => write!(f, "{x:?}"),
            Literal::Text(s) => write!(f, "'{}'", s.replace('\'', "''")),
        }
    }
}

impl Display for Param {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Param::Position(n) => write!(f, "?{n}"),
            Param::Named { name, sigil } => write!(f, "{sigil}{name}"),
        }
    }
}

impl BinaryOp {
    /// Binding strength, higher binds tighter (PostgreSQL's order).
    /// How tightly it binds, as the parsers read it (`direct.rs`: sqlparser's numbers).
    fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 5,
            BinaryOp::And => 10,
            BinaryOp::Eq
            | BinaryOp::NotEq
            | BinaryOp::Lt
            | BinaryOp::LtEq
            | BinaryOp::Gt
            | BinaryOp::GtEq => 20,
            BinaryOp::Add | BinaryOp::Sub => 30,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod | BinaryOp::Concat => 40,
        }
    }
}

/// The precedences of the operators that are not `BinaryOp`s, as the parsers read them.
const NOT: u8 = 15;
const IS: u8 = 17;
const LIKE: u8 = 19;
const COMPARE: u8 = 20;
/// A unary `-` or `+` takes an operand that binds at least this tightly.
const SIGN_OPERAND: u8 = 41;
/// A literal, a name, a call, a parenthesized expression: never split.
const PRIMARY: u8 = 100;

impl Display for FrameBound {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            FrameBound::UnboundedPreceding => f.write_str("UNBOUNDED PRECEDING"),
            FrameBound::Preceding(n) => write!(f, "{n} PRECEDING"),
            FrameBound::CurrentRow => f.write_str("CURRENT ROW"),
            FrameBound::Following(n) => write!(f, "{n} FOLLOWING"),
            FrameBound::UnboundedFollowing => f.write_str("UNBOUNDED FOLLOWING"),
        }
    }
}

impl Display for Frame {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{} BETWEEN {} AND {}", self.units.name(), self.start, self.end)
    }
}

impl Display for Window {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.bare
            && let Some(name) = &self.base
        {
            return write!(f, "{name}");
        }
        f.write_char('(')?;
        let mut parts: Vec<String> = Vec::new();
        if let Some(name) = &self.base {
            parts.push(name.to_string());
        }
        if !self.partition_by.is_empty() {
            parts.push(format!("PARTITION BY {}", joined(&self.partition_by)));
        }
        if !self.order_by.is_empty() {
            parts.push(format!("ORDER BY {}", joined(&self.order_by)));
        }
        if let Some(frame) = &self.frame {
            parts.push(frame.to_string());
        }
        f.write_str(&parts.join(" "))?;
        f.write_char(')')
    }
}

fn joined<T: Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Expr {
    fn precedence(&self) -> u8 {
        match &self.kind {
            ExprKind::Binary(_, op) => op.precedence(),
            ExprKind::Unary(UnaryOp::Not, _) => NOT,
            ExprKind::Unary(_, _) => SIGN_OPERAND,
            ExprKind::IsNull { .. } | ExprKind::IsDistinct { .. } => IS,
            ExprKind::Like { .. } => LIKE,
            ExprKind::InList { .. } | ExprKind::InSubquery { .. } | ExprKind::Between { .. } => COMPARE,
            _ => PRIMARY,
        }
    }
}

/// How tightly a field's DEFAULT must bind to be written bare: tighter than IS and NOT,
/// which the field parser leaves for the constraint it tells apart (`DEFAULT 0 NOT NULL`).
pub(super) const DEFAULT_OPERAND: u8 = IS + 1;

/// Writes `e`, in parentheses when it binds looser than its surroundings need.
pub(super) fn operand(f: &mut Formatter<'_>, e: &Expr, min: u8) -> fmt::Result {
    if e.precedence() < min {
        write!(f, "({e})")
    } else {
        write!(f, "{e}")
    }
}

pub(super) fn comma_list<T: Display>(f: &mut Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

fn not(negated: bool) -> &'static str {
    if negated { "NOT " } else { "" }
}

impl Display for Expr {
    #[recursive::recursive]
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExprKind::Literal(l) => write!(f, "{l}"),
            ExprKind::Param(p) => write!(f, "{p}"),
            ExprKind::Column(parts) => {
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        f.write_char('.')?;
                    }
                    write!(f, "{p}")?;
                }
                Ok(())
            }
            ExprKind::Unary(op, e) => {
                // In parentheses where the text would read otherwise: `-` before a number
                // is folded into it, `--` starts a comment, `NOT EXISTS` is one test.
                let apart = matches!(
                    (op, &e.kind),
                    (
                        UnaryOp::Neg,
                        ExprKind::Literal(Literal::Int(_) | Literal::Float(_))
                    ) | (UnaryOp::Neg, ExprKind::Unary(UnaryOp::Neg, _))
                        | (UnaryOp::Not, ExprKind::Exists { negated: false, .. })
                );
                match op {
                    UnaryOp::Neg => f.write_char('-')?,
                    UnaryOp::Plus => f.write_char('+')?,
                    UnaryOp::Not => f.write_str("NOT ")?,
                }
                if apart {
                    return write!(f, "({e})");
                }
                operand(f, e, if *op == UnaryOp::Not { NOT } else { SIGN_OPERAND })
            }
            ExprKind::Binary(lr, op) => {
                let [l, r] = &**lr;
                let p = op.precedence();
                operand(f, l, p)?;
                write!(f, " {} ", op.symbol())?;
                operand(f, r, p + 1)
            }
            // Each operand as tightly bound as the parsers read it there: a left one at
            // the operator's level (they read left to right), a right one above it.
            ExprKind::IsNull { expr, negated } => {
                operand(f, expr, IS)?;
                write!(f, " IS {}NULL", not(*negated))
            }
            ExprKind::IsDistinct { left, right, negated } => {
                operand(f, left, IS)?;
                write!(f, " IS {}DISTINCT FROM ", not(*negated))?;
                operand(f, right, IS + 1)
            }
            ExprKind::InList { expr, list, negated } => {
                operand(f, expr, COMPARE)?;
                write!(f, " {}IN (", not(*negated))?;
                comma_list(f, list)?;
                f.write_char(')')
            }
            ExprKind::InSubquery { expr, query, negated } => {
                operand(f, expr, COMPARE)?;
                write!(f, " {}IN ({query})", not(*negated))
            }
            ExprKind::Between {
                expr,
                low,
                high,
                negated,
            } => {
                operand(f, expr, COMPARE)?;
                write!(f, " {}BETWEEN ", not(*negated))?;
                operand(f, low, COMPARE + 1)?;
                f.write_str(" AND ")?;
                operand(f, high, COMPARE + 1)
            }
            ExprKind::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
                escape,
            } => {
                operand(f, expr, LIKE)?;
                write!(
                    f,
                    " {}{} ",
                    not(*negated),
                    if *case_insensitive { "ILIKE" } else { "LIKE" }
                )?;
                operand(f, pattern, LIKE + 1)?;
                match escape {
                    Some(e) => {
                        f.write_str(" ESCAPE ")?;
                        operand(f, e, LIKE + 1)
                    }
                    None => Ok(()),
                }
            }
            ExprKind::Case {
                operand: subject,
                branches,
                otherwise,
            } => {
                f.write_str("CASE")?;
                if let Some(s) = subject {
                    write!(f, " {s}")?;
                }
                for (when, then) in branches {
                    write!(f, " WHEN {when} THEN {then}")?;
                }
                if let Some(e) = otherwise {
                    write!(f, " ELSE {e}")?;
                }
                f.write_str(" END")
            }
            ExprKind::Cast { expr, ty } => write!(f, "CAST({expr} AS {})", ty.name()),
            ExprKind::Function {
                name,
                args,
                star,
                distinct,
            } => {
                write!(f, "{name}(")?;
                if *star {
                    f.write_char('*')?;
                }
                if *distinct {
                    f.write_str("DISTINCT ")?;
                }
                comma_list(f, args)?;
                f.write_char(')')
            }
            ExprKind::Over { call, window } => write!(f, "{call} OVER {window}"),
            ExprKind::Subquery(q) => write!(f, "({q})"),
            ExprKind::Exists { query, negated } => write!(f, "{}EXISTS ({query})", not(*negated)),
            ExprKind::Tuple(items) => {
                f.write_char('(')?;
                comma_list(f, items)?;
                f.write_char(')')
            }
        }
    }
}

impl SetOp {
    fn precedence(self) -> u8 {
        match self {
            SetOp::Union | SetOp::Except => 1,
            SetOp::Intersect => 2,
        }
    }
}

impl Display for Query {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.body)?;
        if !self.order_by.is_empty() {
            f.write_str(" ORDER BY ")?;
            comma_list(f, &self.order_by)?;
        }
        if let Some(l) = &self.limit {
            write!(f, " LIMIT {l}")?;
        }
        if let Some(o) = &self.offset {
            write!(f, " OFFSET {o}")?;
        }
        Ok(())
    }
}

impl Display for SetExpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            SetExpr::Select(s) => write!(f, "{s}"),
            SetExpr::Values(rows) => {
                f.write_str("VALUES ")?;
                for (i, row) in rows.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_char('(')?;
                    comma_list(f, row)?;
                    f.write_char(')')?;
                }
                Ok(())
            }
            SetExpr::SetOp { op, left, right, all } => {
                // Parentheses where the operands would otherwise group differently.
                let binds = |side: &SetExpr| match side {
                    SetExpr::SetOp { op, .. } => Some(op.precedence()),
                    _ => None,
                };
                match binds(left) {
                    Some(p) if p < op.precedence() => write!(f, "({left})")?,
                    _ => write!(f, "{left}")?,
                }
                write!(f, " {} {}", op.name(), if *all { "ALL " } else { "" })?;
                match binds(right) {
                    Some(p) if p <= op.precedence() => write!(f, "({right})"),
                    _ => write!(f, "{right}"),
                }
            }
            SetExpr::Query(q) => write!(f, "({q})"),
        }
    }
}

impl Display for Select {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("SELECT ")?;
        if self.distinct {
            f.write_str("DISTINCT ")?;
        }
        comma_list(f, &self.items)?;
        write_from(f, &self.from)?;
        if let Some(w) = &self.filter {
            write!(f, " WHERE {w}")?;
        }
        if !self.group_by.is_empty() {
            f.write_str(" GROUP BY ")?;
            comma_list(f, &self.group_by)?;
        }
        if let Some(h) = &self.having {
            write!(f, " HAVING {h}")?;
        }
        for (i, (name, window)) in self.windows.iter().enumerate() {
            f.write_str(if i == 0 { " WINDOW " } else { ", " })?;
            write!(f, "{name} AS {window}")?;
        }
        Ok(())
    }
}

pub(super) fn write_from(f: &mut Formatter<'_>, from: &[FromItem]) -> fmt::Result {
    if !from.is_empty() {
        f.write_str(" FROM ")?;
        comma_list(f, from)?;
    }
    Ok(())
}

impl Display for SelectItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            SelectItem::Wildcard(_) => f.write_char('*'),
            SelectItem::QualifiedWildcard(q) => write!(f, "{q}.*"),
            SelectItem::Expr { expr, alias: None } => write!(f, "{expr}"),
            SelectItem::Expr { expr, alias: Some(a) } => write!(f, "{expr} AS {a}"),
        }
    }
}

impl Display for FromItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.base)?;
        for join in &self.joins {
            write!(f, " {}JOIN {}", if join.left { "LEFT " } else { "" }, join.table)?;
            if let Some(on) = &join.on {
                write!(f, " ON {on}")?;
            }
            if !join.using.is_empty() {
                f.write_str(" USING (")?;
                comma_list(f, &join.using)?;
                f.write_char(')')?;
            }
        }
        Ok(())
    }
}

pub(super) fn write_alias(f: &mut Formatter<'_>, alias: &Option<Ident>, columns: &[Ident]) -> fmt::Result {
    if let Some(a) = alias {
        write!(f, " AS {a}")?;
        if !columns.is_empty() {
            f.write_char('(')?;
            comma_list(f, columns)?;
            f.write_char(')')?;
        }
    }
    Ok(())
}

impl Display for TableRef {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            TableRef::Named { name, alias } => {
                write!(f, "{name}")?;
                write_alias(f, alias, &[])
            }
            TableRef::System { schema, name, alias } => {
                write!(f, "{schema}.{name}")?;
                write_alias(f, alias, &[])
            }
            TableRef::Function {
                name,
                args,
                alias,
                columns,
            } => {
                write!(f, "{name}(")?;
                comma_list(f, args)?;
                f.write_char(')')?;
                write_alias(f, alias, columns)
            }
            TableRef::Subquery {
                query,
                alias,
                columns,
            } => {
                write!(f, "({query})")?;
                write_alias(f, alias, columns)
            }
            TableRef::Recursive { cte, alias } => {
                write!(f, "(WITH RECURSIVE {}", cte.name)?;
                if !cte.columns.is_empty() {
                    f.write_char('(')?;
                    comma_list(f, &cte.columns)?;
                    f.write_char(')')?;
                }
                let all = if cte.all { " ALL" } else { "" };
                write!(
                    f,
                    " AS ({} UNION{all} {}) SELECT * FROM {})",
                    cte.anchor, cte.step, cte.name
                )?;
                write_alias(f, alias, &[])
            }
        }
    }
}

impl Display for OrderItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.expr)?;
        if self.desc {
            f.write_str(" DESC")?;
        }
        match self.nulls_first {
            Some(true) => f.write_str(" NULLS FIRST"),
            Some(false) => f.write_str(" NULLS LAST"),
            None => Ok(()),
        }
    }
}
