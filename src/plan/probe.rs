//! What the access pass writes into a plan for a scan's index search and its skips (the
//! search, its operands, the conditions that skip tables and blocks), and the small
//! readings of bound conditions that both the access pass and the function-index
//! matching use: a search operand, a comparison turned around.

use std::ops::Bound;

use super::DataType;
use super::expr::{BoundExpr, BoundKind};
use crate::index::IndexKind;
use crate::parse::Param;
use crate::storage::{FieldId, Value};
use crate::vector::CmpOp;

/// The search an index runs for a scan, with its operands as the plan holds them.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexLookup {
    pub index: String,
    pub kind: IndexKind,
    pub probe: ProbePlan,
    /// For EXPLAIN: the condition served, as SQL.
    pub serves: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ProbePlan {
    Within {
        center: Vec<ProbeValue>,
        radius: ProbeValue,
    },
    Box {
        lo: Vec<Option<ProbeValue>>,
        hi: Vec<Option<ProbeValue>>,
    },
    Nearest {
        center: Vec<ProbeValue>,
        k: usize,
    },
    Equal(Vec<ProbeValue>),
    Range {
        lo: Bound<ProbeValue>,
        hi: Bound<ProbeValue>,
    },
    /// A LIKE pattern; its literal start is the prefix searched.
    Prefix(ProbeValue),
    /// A function index's expressions: the first ones equal to `equal`, the next between
    /// `lo` and `hi`.
    Tuple {
        equal: Vec<ProbeValue>,
        lo: Bound<ProbeValue>,
        hi: Bound<ProbeValue>,
    },
}

/// A condition on one field of a scan's rows that can rule a table, or a block of its
/// rows, out without reading it: by its zone maps (`field op value`, `field IN (values)`)
/// or by a filter index's membership filters (`field = value`, `field IN (values)`).
#[derive(Clone, Debug, PartialEq)]
pub struct SkipCondition {
    pub field: FieldId,
    pub test: SkipTest,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SkipTest {
    /// `field op value`; never `<>`, which a range of values cannot rule out.
    Compare(CmpOp, ProbeValue),
    /// `field IN (values)`, not negated.
    In(Vec<ProbeValue>),
    /// `field = value` or `field IN (values)`, looked up in the filters of the filter
    /// index `index` (the values of the field's own type).
    Member { index: String, values: Vec<ProbeValue> },
}

/// A search operand: a constant, or a parameter or a correlated subquery's outer value
/// read at run time (cast to `ty`, as the filter casts it).
#[derive(Clone, Debug, PartialEq)]
pub enum ProbeValue {
    Const(Value),
    Param { param: Param, ty: DataType },
    Outer { n: usize, ty: DataType },
}

impl std::fmt::Display for ProbeValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProbeValue::Const(v) => write!(f, "{v}"),
            ProbeValue::Param { param, .. } => write!(f, "{param}"),
            ProbeValue::Outer { .. } => write!(f, "(the outer row's value)"),
        }
    }
}

/// `e` as a search operand, when it is a constant or a parameter (possibly cast).
pub(super) fn probe_value(e: &BoundExpr) -> Option<ProbeValue> {
    match &e.kind {
        BoundKind::Const(v) => Some(ProbeValue::Const(v.clone())),
        BoundKind::Param { param, .. } => Some(ProbeValue::Param {
            param: param.clone(),
            ty: e.ty,
        }),
        BoundKind::Outer(n) => Some(ProbeValue::Outer { n: *n, ty: e.ty }),
        BoundKind::Cast(x, _) => match &x.kind {
            BoundKind::Outer(n) => Some(ProbeValue::Outer { n: *n, ty: e.ty }),
            BoundKind::Param { param, .. } => Some(ProbeValue::Param {
                param: param.clone(),
                ty: e.ty,
            }),
            BoundKind::Const(v) => super::cast_value(v, e.ty).ok().map(ProbeValue::Const),
            _ => None,
        },
        _ => None,
    }
}

/// A condition's conjuncts: most conditions have a few, held in place.
pub(super) type Atoms<'e> = smallvec::SmallVec<[&'e BoundExpr; 8]>;

/// Flattens nested ANDs (BETWEEN binds to one) into their parts.
pub(super) fn atoms<'e>(e: &'e BoundExpr, out: &mut Atoms<'e>) {
    match &e.kind {
        BoundKind::And(l, r) => {
            atoms(l, out);
            atoms(r, out);
        }
        _ => out.push(e),
    }
}
