//! ecsql's own syntax tree: what the parser hands to the binder. Nothing here refers to
//! `sqlparser`; every node carries the `Location` it started at so later layers can point
//! at it. `Display` prints a node back as ecsql text that parses to the same tree.

use std::fmt::{self, Display, Formatter, Write};

use crate::location::Location;
use crate::storage::FieldType;

/// A name as written. Quoted names keep their case and may be keywords.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub value: String,
    pub quoted: bool,
    pub at: Location,
}

impl Ident {
    pub fn new(value: impl Into<String>, at: Location) -> Ident {
        Ident {
            value: value.into(),
            quoted: false,
            at,
        }
    }

    /// True when `other` names this identifier: exact for quoted names, ASCII
    /// case-insensitive otherwise.
    pub fn matches(&self, other: &str) -> bool {
        if self.quoted {
            self.value == other
        } else {
            self.value.eq_ignore_ascii_case(other)
        }
    }
}

impl Display for Ident {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.quoted || !is_plain_word(&self.value) {
            f.write_char('"')?;
            f.write_str(&self.value.replace('"', "\"\""))?;
            f.write_char('"')
        } else {
            f.write_str(&self.value)
        }
    }
}

fn is_plain_word(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

impl Literal {
    /// A numeric literal: an INT when it has no point or exponent and fits i64, else a
    /// FLOAT (as SQLite reads 9223372036854775808); `None` when it is no number.
    pub fn number(text: &str) -> Option<Literal> {
        let integral = !text.contains(['.', 'e', 'E']);
        if integral && let Ok(i) = text.parse::<i64>() {
            return Some(Literal::Int(i));
        }
        text.parse::<f64>().ok().map(Literal::Float)
    }
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

/// A statement parameter. `?` takes the next position after the highest seen so far.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Param {
    /// `?` or `?N` / `$N`: 1-based position.
    Position(usize),
    /// `:name` or `$name` (stored without its sigil) — `sigil` keeps the spelling.
    Named { name: String, sigil: char },
}

impl Display for Param {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Param::Position(n) => write!(f, "?{n}"),
            Param::Named { name, sigil } => write!(f, "{sigil}{name}"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Plus,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Concat,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::Concat => "||",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
        }
    }

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

#[derive(Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub at: Location,
}

/// Every level of an expression tree, subqueries' included, is cloned through here, on a
/// stack grown as the tree's depth needs (the binder copies trees up to `MAX_DEPTH` deep).
impl Clone for Expr {
    #[recursive::recursive]
    fn clone(&self) -> Self {
        Expr {
            kind: self.kind.clone(),
            at: self.at,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Literal(Literal),
    Param(Param),
    /// `name` or `qualifier.name`.
    Column(Vec<Ident>),
    Unary(UnaryOp, Box<Expr>),
    Binary(Box<Expr>, BinaryOp, Box<Expr>),
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    /// `left IS DISTINCT FROM right` (`negated`: `IS NOT DISTINCT FROM`): `<>` and `=` with
    /// NULL a value like any other, so never NULL itself. SQLite's `left IS right` and
    /// `left IS NOT right`, and `x IS [NOT] TRUE|FALSE`, read as these.
    IsDistinct {
        left: Box<Expr>,
        right: Box<Expr>,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    InSubquery {
        expr: Box<Expr>,
        query: Box<Query>,
        negated: bool,
    },
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        case_insensitive: bool,
        /// `ESCAPE 'c'`: the character that makes the next `%`, `_` or itself literal.
        escape: Option<Box<Expr>>,
    },
    Case {
        operand: Option<Box<Expr>>,
        branches: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    Cast {
        expr: Box<Expr>,
        ty: FieldType,
    },
    /// `name(args)`, `name(*)` (`star`), `name(DISTINCT arg)`.
    Function {
        name: Ident,
        args: Vec<Expr>,
        star: bool,
        distinct: bool,
    },
    Subquery(Box<Query>),
    Exists {
        query: Box<Query>,
        negated: bool,
    },
    Tuple(Vec<Expr>),
    /// `call OVER window`: a window function (`rank()`, `lag(x)`) or an aggregate computed
    /// over the rows of a window rather than a group. `call` is a `Function`.
    Over {
        call: Box<Expr>,
        window: Box<Window>,
    },
}

/// A window: `OVER w`, or `OVER ([w] [PARTITION BY …] [ORDER BY …] [frame])`.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// The named window (of the SELECT's WINDOW clause) this one starts from.
    pub base: Option<Ident>,
    /// `OVER w`, written without parentheses: the named window as it is.
    pub bare: bool,
    pub partition_by: Vec<Expr>,
    pub order_by: Vec<OrderItem>,
    pub frame: Option<Frame>,
    pub at: Location,
}

/// `ROWS|RANGE|GROUPS BETWEEN start AND end`; `ROWS start` has `end` CURRENT ROW.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
    pub at: Location,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameUnits {
    Rows,
    Range,
    Groups,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(Box<Expr>),
    CurrentRow,
    Following(Box<Expr>),
    UnboundedFollowing,
}

impl FrameUnits {
    pub fn name(self) -> &'static str {
        match self {
            FrameUnits::Rows => "ROWS",
            FrameUnits::Range => "RANGE",
            FrameUnits::Groups => "GROUPS",
        }
    }
}

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
    pub fn new(kind: ExprKind, at: Location) -> Expr {
        Expr { kind, at }
    }

    fn precedence(&self) -> u8 {
        match &self.kind {
            ExprKind::Binary(_, op, _) => op.precedence(),
            ExprKind::Unary(UnaryOp::Not, _) => NOT,
            ExprKind::Unary(_, _) => SIGN_OPERAND,
            ExprKind::IsNull { .. } | ExprKind::IsDistinct { .. } => IS,
            ExprKind::Like { .. } => LIKE,
            ExprKind::InList { .. } | ExprKind::InSubquery { .. } | ExprKind::Between { .. } => COMPARE,
            _ => PRIMARY,
        }
    }
}

/// Writes `e`, in parentheses when it binds looser than its surroundings need.
fn operand(f: &mut Formatter<'_>, e: &Expr, min: u8) -> fmt::Result {
    if e.precedence() < min {
        write!(f, "({e})")
    } else {
        write!(f, "{e}")
    }
}

fn comma_list<T: Display>(f: &mut Formatter<'_>, items: &[T]) -> fmt::Result {
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
            ExprKind::Binary(l, op, r) => {
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

// ---- queries ----------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    pub body: SetExpr,
    pub order_by: Vec<OrderItem>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    pub at: Location,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SetExpr {
    Select(Box<Select>),
    Values(Vec<Vec<Expr>>),
    /// `left UNION|EXCEPT|INTERSECT [ALL] right`.
    SetOp {
        op: SetOp,
        left: Box<SetExpr>,
        right: Box<SetExpr>,
        all: bool,
    },
    Query(Box<Query>),
}

/// A set operation. INTERSECT binds tighter than UNION and EXCEPT, which bind left to
/// right (the SQL standard's and PostgreSQL's rule; SQLite gives all three one level).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Except,
    Intersect,
}

impl SetOp {
    pub fn name(self) -> &'static str {
        match self {
            SetOp::Union => "UNION",
            SetOp::Except => "EXCEPT",
            SetOp::Intersect => "INTERSECT",
        }
    }

    fn precedence(self) -> u8 {
        match self {
            SetOp::Union | SetOp::Except => 1,
            SetOp::Intersect => 2,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    pub distinct: bool,
    pub items: Vec<SelectItem>,
    pub from: Vec<FromItem>,
    pub filter: Option<Expr>,
    pub group_by: Vec<Expr>,
    pub having: Option<Expr>,
    /// `WINDOW w AS (…), …`: the named windows its `OVER` clauses may use.
    pub windows: Vec<(Ident, Window)>,
    pub at: Location,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SelectItem {
    Wildcard(Location),
    QualifiedWildcard(Ident),
    Expr { expr: Expr, alias: Option<Ident> },
}

/// One entry of a FROM list with the joins written after it.
#[derive(Clone, Debug, PartialEq)]
pub struct FromItem {
    pub base: TableRef,
    pub joins: Vec<Join>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Join {
    pub left: bool,
    pub table: TableRef,
    /// Without ON the joined component belongs to the same entity.
    pub on: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TableRef {
    /// A component, an archetype table (`arch_…`) or the `entities` pseudo-table.
    Named { name: Ident, alias: Option<Ident> },
    /// `range(n)`, `generate_series(a, b)`.
    Function {
        name: Ident,
        args: Vec<Expr>,
        alias: Option<Ident>,
        columns: Vec<Ident>,
    },
    Subquery {
        query: Box<Query>,
        alias: Option<Ident>,
        columns: Vec<Ident>,
    },
    /// A reference to a recursive WITH query (`cte`), under `alias` (else its name).
    /// Printed as the subquery `(WITH RECURSIVE … SELECT * FROM name)`, which reads back
    /// as this.
    Recursive {
        cte: Box<RecursiveCte>,
        alias: Option<Ident>,
    },
}

/// `WITH RECURSIVE name [(columns)] AS (anchor UNION [ALL] step)`: the rows of `anchor`,
/// then of `step` run over the rows the last round added (`name` in `step`'s FROM reads
/// those), round after round until one adds none. Without ALL a row already found is
/// not added again.
#[derive(Clone, Debug, PartialEq)]
pub struct RecursiveCte {
    pub name: Ident,
    pub columns: Vec<Ident>,
    pub anchor: SetExpr,
    pub step: SetExpr,
    pub all: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OrderItem {
    pub expr: Expr,
    pub desc: bool,
    pub nulls_first: Option<bool>,
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

fn write_from(f: &mut Formatter<'_>, from: &[FromItem]) -> fmt::Result {
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
        }
        Ok(())
    }
}

fn write_alias(f: &mut Formatter<'_>, alias: &Option<Ident>, columns: &[Ident]) -> fmt::Result {
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

// ---- statements -------------------------------------------------------------------------

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
    /// `CREATE [SPATIAL] INDEX [IF NOT EXISTS] [name] ON component (field, …)`.
    CreateIndex {
        name: Option<Ident>,
        spatial: bool,
        if_not_exists: bool,
        component: Ident,
        fields: Vec<Ident>,
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
    /// `EXPLAIN ANALYZE statement`, `EXPLAIN (ANALYZE[, TIMING false][, KEEP]) statement`:
    /// runs it and prints the plan with what each part did; `timing` false leaves the
    /// times out. A write runs in a savepoint rolled back after, unless `keep`.
    ExplainAnalyze {
        statement: Box<Statement>,
        timing: bool,
        keep: bool,
    },
    Begin,
    Commit,
    Rollback,
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

impl Display for CopyOption {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name.value)?;
        if let Some(v) = &self.value {
            write!(f, " '{}'", v.replace('\'', "''"))?;
        }
        Ok(())
    }
}

/// COPY's options as written after the file, ` (a, b)`, or nothing.
fn write_copy_options(f: &mut Formatter<'_>, options: &[CopyOption]) -> fmt::Result {
    if options.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = options.iter().map(ToString::to_string).collect();
    write!(f, " ({})", list.join(", "))
}

/// A file a statement names: as text, or a parameter whose TEXT value is the name.
#[derive(Clone, Debug, PartialEq)]
pub enum FileName {
    Text(String),
    Param(Param),
}

impl Display for FileName {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            FileName::Text(path) => write!(f, "'{}'", path.replace('\'', "''")),
            FileName::Param(p) => write!(f, "{p}"),
        }
    }
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
            StatementKind::Begin | StatementKind::Commit | StatementKind::Rollback => true,
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
            StatementKind::ExplainAnalyze { .. } => "EXPLAIN ANALYZE",
            StatementKind::Returning { write, .. } => match write.verb() {
                "SPAWN" => "SPAWN … RETURNING",
                "INSERT" => "INSERT … RETURNING",
                "UPDATE" => "UPDATE … RETURNING",
                "DELETE" => "DELETE … RETURNING",
                "DESPAWN" => "DESPAWN … RETURNING",
                _ => "RETURNING",
            },
            StatementKind::Begin => "BEGIN",
            StatementKind::Pragma { .. } => "PRAGMA",
            StatementKind::Commit => "COMMIT",
            StatementKind::Rollback => "ROLLBACK",
            StatementKind::CreateSystem(_) => "CREATE SYSTEM",
            StatementKind::DropSystem { .. } => "DROP SYSTEM",
            StatementKind::AlterSystem { .. } => "ALTER SYSTEM",
            StatementKind::CreatePhase { .. } => "CREATE PHASE",
            StatementKind::DropPhase { .. } => "DROP PHASE",
            StatementKind::ShowSystems => "SHOW SYSTEMS",
            StatementKind::Tick { .. } => "TICK",
            StatementKind::Save { .. } => "SAVE",
            StatementKind::Load { .. } => "LOAD",
            StatementKind::Checkpoint => "CHECKPOINT",
            StatementKind::CopyTo { .. } | StatementKind::CopyFrom { .. } => "COPY",
            StatementKind::ExplainTick => "EXPLAIN TICK",
            StatementKind::CreateEvent { .. } => "CREATE EVENT",
            StatementKind::DropEvent { .. } => "DROP EVENT",
            StatementKind::ShowEvents => "SHOW EVENTS",
        }
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
                | StatementKind::ShowSystems
                | StatementKind::ExplainTick
                | StatementKind::ShowEvents
                | StatementKind::CopyTo { .. }
        ) || matches!(self, StatementKind::ExplainAnalyze { statement, .. } if statement.kind.is_read_only())
    }
}

impl Display for Source {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_from(f, &self.from)?;
        if let Some(w) = &self.filter {
            write!(f, " WHERE {w}")?;
        }
        Ok(())
    }
}

impl Display for Assignment {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}", self.field, self.value)
    }
}

impl Display for SpawnItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name)?;
        if !self.args.is_empty() {
            f.write_char('(')?;
            for (i, arg) in self.args.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                if let Some(n) = &arg.name {
                    write!(f, "{n} => ")?;
                }
                write!(f, "{}", arg.value)?;
            }
            f.write_char(')')?;
        }
        Ok(())
    }
}

impl Display for Statement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)
    }
}

impl Display for StatementKind {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            StatementKind::CreateComponent {
                name,
                fields,
                sparse,
                if_not_exists,
            } => {
                let ine = if *if_not_exists { "IF NOT EXISTS " } else { "" };
                write!(f, "CREATE COMPONENT {ine}{name} (")?;
                write_fields(f, fields)?;
                f.write_char(')')?;
                if *sparse {
                    f.write_str(" WITH (storage = sparse)")?;
                }
                Ok(())
            }
            StatementKind::CreateTag {
                name,
                sparse,
                if_not_exists,
            } => {
                let ine = if *if_not_exists { "IF NOT EXISTS " } else { "" };
                write!(f, "CREATE TAG {ine}{name}")?;
                if *sparse {
                    f.write_str(" WITH (storage = sparse)")?;
                }
                Ok(())
            }
            StatementKind::DropComponent { name, if_exists } => {
                write!(
                    f,
                    "DROP COMPONENT {}{name}",
                    if *if_exists { "IF EXISTS " } else { "" }
                )
            }
            StatementKind::ShowComponents => f.write_str("SHOW COMPONENTS"),
            StatementKind::ShowArchetypes => f.write_str("SHOW ARCHETYPES"),
            StatementKind::ShowIndexes => f.write_str("SHOW INDEXES"),
            StatementKind::CreateIndex {
                name,
                spatial,
                if_not_exists,
                component,
                fields,
            } => {
                f.write_str(if *spatial {
                    "CREATE SPATIAL INDEX "
                } else {
                    "CREATE INDEX "
                })?;
                if *if_not_exists {
                    f.write_str("IF NOT EXISTS ")?;
                }
                if let Some(n) = name {
                    write!(f, "{n} ")?;
                }
                write!(f, "ON {component} (")?;
                comma_list(f, fields)?;
                f.write_char(')')
            }
            StatementKind::DropIndex { name, if_exists } => {
                write!(
                    f,
                    "DROP INDEX {}{name}",
                    if *if_exists { "IF EXISTS " } else { "" }
                )
            }
            StatementKind::Describe { name } => write!(f, "DESCRIBE {name}"),
            StatementKind::Spawn { at, items, source } => {
                f.write_str("SPAWN ")?;
                if let Some(id) = at {
                    write!(f, "AT {id}")?;
                    if !items.is_empty() {
                        f.write_str(" ")?;
                    }
                }
                comma_list(f, items)?;
                if let Some(s) = source {
                    write!(f, "{s}")?;
                }
                Ok(())
            }
            StatementKind::Insert {
                component,
                columns,
                source,
                on_conflict,
            } => {
                f.write_str("INSERT ")?;
                // DO NOTHING as OR IGNORE (the same tree): an ON CONFLICT after the
                // source could be read as its last join's ON.
                match on_conflict {
                    OnConflict::Replace => f.write_str("OR REPLACE ")?,
                    OnConflict::DoNothing => f.write_str("OR IGNORE ")?,
                    OnConflict::Fail | OnConflict::DoUpdate(_) => {}
                }
                write!(f, "INTO {component}")?;
                if !columns.is_empty() {
                    f.write_str(" (")?;
                    comma_list(f, columns)?;
                    f.write_char(')')?;
                }
                write!(f, " {source}")?;
                match on_conflict {
                    OnConflict::DoUpdate(sets) => {
                        f.write_str(" ON CONFLICT DO UPDATE SET ")?;
                        comma_list(f, sets)
                    }
                    OnConflict::Fail | OnConflict::Replace | OnConflict::DoNothing => Ok(()),
                }
            }
            StatementKind::Delete { component, filter } => {
                write!(f, "DELETE FROM {component}")?;
                if let Some(w) = filter {
                    write!(f, " WHERE {w}")?;
                }
                Ok(())
            }
            StatementKind::Despawn { ids } => {
                f.write_str("DESPAWN ")?;
                comma_list(f, ids)
            }
            StatementKind::DespawnFrom { source } => write!(f, "DESPAWN{source}"),
            StatementKind::Select(q) => write!(f, "{q}"),
            StatementKind::Update {
                target,
                alias,
                assignments,
                from,
                filter,
            } => {
                write!(f, "UPDATE {target}")?;
                write_alias(f, alias, &[])?;
                f.write_str(" SET ")?;
                comma_list(f, assignments)?;
                write_from(f, from)?;
                if let Some(w) = filter {
                    write!(f, " WHERE {w}")?;
                }
                Ok(())
            }
            StatementKind::Explain(s) => write!(f, "EXPLAIN {s}"),
            StatementKind::ExplainAnalyze {
                statement,
                timing,
                keep,
            } => {
                let mut options = String::from("ANALYZE");
                if !timing {
                    options.push_str(", TIMING false");
                }
                if *keep {
                    options.push_str(", KEEP");
                }
                match options.as_str() {
                    "ANALYZE" => write!(f, "EXPLAIN ANALYZE {statement}"),
                    options => write!(f, "EXPLAIN ({options}) {statement}"),
                }
            }
            StatementKind::Returning { write, items } => {
                write!(f, "{write} RETURNING ")?;
                comma_list(f, items)
            }
            StatementKind::Begin => f.write_str("BEGIN"),
            StatementKind::Pragma { name: None, .. } => write!(f, "PRAGMA"),
            StatementKind::Pragma {
                name: Some(name),
                value: None,
            } => write!(f, "PRAGMA {name}"),
            StatementKind::Pragma {
                name: Some(name),
                value: Some(v),
            } => {
                write!(f, "PRAGMA {name} = '{}'", v.replace('\'', "''"))
            }
            StatementKind::Commit => f.write_str("COMMIT"),
            StatementKind::Rollback => f.write_str("ROLLBACK"),
            StatementKind::CreateSystem(spec) => write!(f, "{spec}"),
            StatementKind::DropSystem { name, if_exists } => {
                write!(
                    f,
                    "DROP SYSTEM {}{name}",
                    if *if_exists { "IF EXISTS " } else { "" }
                )
            }
            StatementKind::AlterSystem { name, enable } => {
                write!(
                    f,
                    "ALTER SYSTEM {name} {}",
                    if *enable { "ENABLE" } else { "DISABLE" }
                )
            }
            StatementKind::CreatePhase { name, before, anchor } => {
                write!(
                    f,
                    "CREATE PHASE {name} {} {anchor}",
                    if *before { "BEFORE" } else { "AFTER" }
                )
            }
            StatementKind::DropPhase { name, if_exists } => {
                write!(
                    f,
                    "DROP PHASE {}{name}",
                    if *if_exists { "IF EXISTS " } else { "" }
                )
            }
            StatementKind::ShowSystems => f.write_str("SHOW SYSTEMS"),
            StatementKind::Save { path } => write!(f, "SAVE TO {path}"),
            StatementKind::Load { path } => write!(f, "LOAD FROM {path}"),
            StatementKind::Checkpoint => f.write_str("CHECKPOINT"),
            StatementKind::CopyTo { query, path, options } => {
                write!(f, "COPY ({query}) TO {path}")?;
                write_copy_options(f, options)
            }
            StatementKind::CopyFrom {
                component,
                columns,
                path,
                options,
            } => {
                write!(f, "COPY {component}")?;
                if !columns.is_empty() {
                    let names: Vec<String> = columns.iter().map(ToString::to_string).collect();
                    write!(f, " ({})", names.join(", "))?;
                }
                write!(f, " FROM {path}")?;
                write_copy_options(f, options)
            }
            StatementKind::Tick { count, dt } => {
                f.write_str("TICK")?;
                if let Some(n) = count {
                    write!(f, " {n}")?;
                }
                if let Some(dt) = dt {
                    write!(f, " WITH dt = {dt}")?;
                }
                Ok(())
            }
            StatementKind::ExplainTick => f.write_str("EXPLAIN TICK"),
            StatementKind::CreateEvent { name, fields, keep } => {
                write!(f, "CREATE EVENT {name} (")?;
                write_fields(f, fields)?;
                f.write_char(')')?;
                if let Some(n) = keep {
                    write!(f, " WITH (keep = {n} TICKS)")?;
                }
                Ok(())
            }
            StatementKind::DropEvent { name, if_exists } => {
                write!(
                    f,
                    "DROP EVENT {}{name}",
                    if *if_exists { "IF EXISTS " } else { "" }
                )
            }
            StatementKind::ShowEvents => f.write_str("SHOW EVENTS"),
        }
    }
}

/// A system's declaration, printed so that it parses back to the same tree: a block
/// body one statement per line.
impl Display for SystemSpec {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "CREATE SYSTEM {}", self.name)?;
        if let Some(p) = &self.phase {
            write!(f, " IN PHASE {p}")?;
        }
        if !self.before.is_empty() {
            f.write_str(" BEFORE ")?;
            comma_list(f, &self.before)?;
        }
        if !self.after.is_empty() {
            f.write_str(" AFTER ")?;
            comma_list(f, &self.after)?;
        }
        if let Some(n) = self.every {
            write!(f, " EVERY {n} TICKS")?;
        }
        if let Some(w) = &self.when {
            write!(f, " WHEN ({w})")?;
        }
        if self.block {
            f.write_str(" AS BEGIN\n")?;
            for s in &self.body {
                writeln!(f, "  {s};")?;
            }
            f.write_str("END")
        } else {
            match self.body.first() {
                Some(s) => write!(f, " AS {s}"),
                None => f.write_str(" AS BEGIN END"),
            }
        }
    }
}

fn write_fields(f: &mut Formatter<'_>, fields: &[FieldSpec]) -> fmt::Result {
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{} {}", field.name, field.ty.name())?;
        if let Some(d) = &field.default {
            write!(f, " DEFAULT {d}")?;
        }
    }
    Ok(())
}

/// Every level of an expression tree, subqueries' included, is dropped through here, on a
/// stack grown as the tree's depth needs: a subquery level alone is a dozen frames.
impl Drop for Expr {
    fn drop(&mut self) {
        if let ExprKind::Literal(_) | ExprKind::Param(_) | ExprKind::Column(_) = self.kind {
            return;
        }
        drop_kind(std::mem::replace(
            &mut self.kind,
            ExprKind::Literal(Literal::Null),
        ));
    }
}

#[recursive::recursive]
fn drop_kind(kind: ExprKind) {
    drop(kind);
}
