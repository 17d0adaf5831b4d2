//! Names, literals, parameters, operators, expressions and windows, and the queries that
//! expressions hold and that hold expressions (one file, as the two types hold each
//! other): the tree below a statement.
//!
//! Invariants: every node carries the `Location` it starts at; an `Expr` and a `Query`
//! are cloned and dropped on a stack grown as their depth needs, so no tree the parsers
//! accept overflows the caller's.

use crate::location::Location;
use crate::storage::FieldType;
use smol_str::SmolStr;

/// A name as written. Quoted names keep their case and may be keywords. Its text is held
/// inline up to 23 bytes (most names), so reading and copying names allocates nothing.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub value: SmolStr,
    pub quoted: bool,
    pub at: Location,
}

impl Ident {
    pub fn new(value: impl Into<SmolStr>, at: Location) -> Ident {
        Ident {
            value: value.into(),
            quoted: false,
            at,
        }
    }

    /// True when `other` names this identifier: exact for quoted names, ASCII
    /// case-insensitive otherwise.
    pub fn matches(&self, other: &str) -> bool {
        let value: &str = &self.value;
        // Most names are written as they were declared: the bytes compared whole first.
        value == other || (!self.quoted && value.eq_ignore_ascii_case(other))
    }
}

/// The parts of a column's name: `name`, or `qualifier` and `name`. One part is kept
/// inline (an `ExprKind` is no larger for it), so an unqualified name allocates nothing.
pub type ColumnName = smallvec::SmallVec<[Ident; 1]>;

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
        let integral = !text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'));
        if integral && let Ok(i) = text.parse::<i64>() {
            return Some(Literal::Int(i));
        }
        short_decimal(text.as_bytes())
            .or_else(|| text.parse::<f64>().ok())
            .map(Literal::Float)
    }

    /// `number` of `-text` (`-5` folded into its literal, so that i64::MIN is writable),
    /// read without writing that text out: an integer up to 2^63 negated as one, a short
    /// decimal's value negated (exact), anything else as `number` reads `-text`.
    pub fn negative(text: &str) -> Option<Literal> {
        let integral = text.bytes().all(|b| b.is_ascii_digit());
        if integral
            && let Ok(u) = text.parse::<u64>()
            && u <= 1 << 63
        {
            // 2^63 is i64::MIN's magnitude: `as` gives i64::MIN, which negates to itself.
            return Some(Literal::Int((u as i64).wrapping_neg()));
        }
        match short_decimal(text.as_bytes()) {
            Some(x) => Some(Literal::Float(-x)),
            None => Literal::number(&format!("-{text}")),
        }
    }
}

/// A decimal of at most 15 digits with no exponent (`123.5`, `0.25`, `7.`), read as
/// `str::parse` reads it, without its general machinery (about half a literal's cost
/// there, in a SPAWN written out): the digits are an integer below 2^53 and the power of
/// ten that divides them is at most 10^15, both exact in an f64, so one division rounds
/// the quotient correctly (Clinger's fast path). `None` for any other text.
fn short_decimal(bytes: &[u8]) -> Option<f64> {
    const POW10: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    if bytes.len() > 16 {
        return None;
    }
    let (mut digits, mut mantissa, mut fraction) = (0usize, 0u64, None::<usize>);
    for &b in bytes {
        match b {
            b'0'..=b'9' => {
                mantissa = mantissa * 10 + u64::from(b - b'0');
                digits += 1;
                if let Some(f) = fraction.as_mut() {
                    *f += 1;
                }
            }
            b'.' if fraction.is_none() => fraction = Some(0),
            _ => return None,
        }
    }
    if digits == 0 || digits > 15 {
        return None;
    }
    Some(mantissa as f64 / POW10[fraction.unwrap_or(0)])
}

#[cfg(test)]
mod tests {
    use super::{Literal, short_decimal};

    /// Every short decimal reads to the very bits `str::parse` gives.
    #[test]
    fn short_decimals_read_as_parse_reads_them() {
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..200_000 {
            let digits = 1 + (next() % 15) as usize;
            let text: String = (0..digits)
                .map(|_| char::from(b'0' + (next() % 10) as u8))
                .collect();
            let point = (next() % (digits as u64 + 1)) as usize;
            let text = format!("{}.{}", &text[..point], &text[point..]);
            let read = short_decimal(text.as_bytes()).expect(&text);
            assert_eq!(read.to_bits(), text.parse::<f64>().unwrap().to_bits(), "{text}");
        }
        for text in [
            "0.1",
            "0.3",
            "123.5",
            "7.",
            ".5",
            "999999999999999.",
            ".000000000000001",
        ] {
            let read = short_decimal(text.as_bytes()).expect(text);
            assert_eq!(read.to_bits(), text.parse::<f64>().unwrap().to_bits(), "{text}");
        }
        for text in [".", "", "1.2.3", "1e5", "1234567890123456.", "-1.5", "1_0.5"] {
            assert_eq!(short_decimal(text.as_bytes()), None, "{text}");
        }
        // A negative literal reads as the text with its minus sign written out.
        let mut negated: Vec<String> = (0..20_000)
            .map(|_| {
                let digits = 1 + (next() % 20) as usize;
                let text: String = (0..digits)
                    .map(|_| char::from(b'0' + (next() % 10) as u8))
                    .collect();
                match next() % 3 {
                    0 => text,
                    1 => format!("{text}e{}", next() % 40),
                    _ => {
                        let point = (next() % (digits as u64 + 1)) as usize;
                        format!("{}.{}", &text[..point], &text[point..])
                    }
                }
            })
            .collect();
        negated.extend(
            [
                "0",
                "0.0",
                ".0",
                "9223372036854775807",
                "9223372036854775808",
                "9223372036854775809",
                "1e400",
                ".",
            ]
            .map(str::to_owned),
        );
        for text in &negated {
            let written = Literal::number(&format!("-{text}"));
            let read = Literal::negative(text);
            let bits = |l: &Option<Literal>| match l {
                Some(Literal::Float(x)) => Some(x.to_bits()),
                _ => None,
            };
            assert_eq!((&read, bits(&read)), (&written, bits(&written)), "-{text}");
        }
        assert_eq!(
            Literal::negative("9223372036854775808"),
            Some(Literal::Int(i64::MIN))
        );
        assert_eq!(Literal::number("1e5"), Some(Literal::Float(1e5)));
        assert_eq!(Literal::number("12"), Some(Literal::Int(12)));
        assert_eq!(
            Literal::number("9223372036854775808"),
            Some(Literal::Float(9.223372036854776e18))
        );
        assert_eq!(
            Literal::number("1234567890.1234567"),
            Some(Literal::Float(1234567890.1234567))
        );
        assert_eq!(Literal::number("."), None);
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
    /// `=`, `<>`, `<`, `<=`, `>`, `>=`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq
        )
    }

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
}

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

// Every node of a parsed text is one of these: kept at 72 bytes (a large or rare part
// boxed), checked here so that growing it is a decision.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<ExprKind>() <= 72);

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Literal(Literal),
    Param(Param),
    /// `name` or `qualifier.name`.
    Column(ColumnName),
    Unary(UnaryOp, Box<Expr>),
    /// `left op right`: both operands in one box (one allocation for the pair).
    Binary(Box<[Expr; 2]>, BinaryOp),
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

impl ExprKind {
    /// `left op right`.
    pub fn binary(left: Expr, op: BinaryOp, right: Expr) -> ExprKind {
        ExprKind::Binary(Box::new([left, right]), op)
    }
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

impl Expr {
    pub fn new(kind: ExprKind, at: Location) -> Expr {
        Expr { kind, at }
    }
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

// ---- queries ----------------------------------------------------------------------------

/// A query nested in a query (`SELECT 1 UNION (SELECT …)`, a subquery in FROM) may hold
/// no expression between the two, so `Expr`'s drop does not guard the nesting: a query's
/// body is dropped on a stack grown as its depth needs (and `Query`'s clone is too).
impl Drop for Query {
    fn drop(&mut self) {
        if let SetExpr::Values(_) = self.body {
            return;
        }
        drop_body(std::mem::replace(&mut self.body, SetExpr::Values(Vec::new())));
    }
}

#[recursive::recursive]
fn drop_body(body: SetExpr) {
    drop(body);
}

#[derive(Debug, PartialEq)]
pub struct Query {
    pub body: SetExpr,
    pub order_by: Vec<OrderItem>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    pub at: Location,
}

/// Cloned, as dropped, on a stack grown as the nesting of queries needs.
impl Clone for Query {
    #[recursive::recursive]
    fn clone(&self) -> Self {
        Query {
            body: self.body.clone(),
            order_by: self.order_by.clone(),
            limit: self.limit.clone(),
            offset: self.offset.clone(),
            at: self.at,
        }
    }
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
}

#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    pub distinct: bool,
    pub items: SelectItems,
    pub from: FromList,
    pub filter: Option<Expr>,
    pub group_by: Vec<Expr>,
    pub having: Option<Expr>,
    /// `WINDOW w AS (…), …`: the named windows its `OVER` clauses may use.
    pub windows: Vec<(Ident, Window)>,
    pub at: Location,
}

/// A select list, its first item held in place: most short queries read one column, and
/// the select is boxed anyway, so the list costs no allocation of its own.
pub type SelectItems = smallvec::SmallVec<[SelectItem; 1]>;

/// A FROM list, its first item held in place (most queries read one table or join).
pub type FromList = smallvec::SmallVec<[FromItem; 1]>;

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
    /// `USING (a, b)`: joined where these columns of the relations before (the first,
    /// from the left, that has each) equal the joined table's.
    pub using: Vec<Ident>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TableRef {
    /// A component, an archetype table (`arch_…`) or the `entities` pseudo-table.
    Named { name: Ident, alias: Option<Ident> },
    /// A view of PostgreSQL's catalog named with its schema: `pg_catalog.pg_class`,
    /// `information_schema.columns` (one of `pg_catalog` written without it is `Named`).
    System {
        schema: Ident,
        name: Ident,
        alias: Option<Ident>,
    },
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
