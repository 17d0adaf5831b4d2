//! Window functions: `call OVER window` in a select list or its ORDER BY, and the
//! select's `WINDOW name AS (…)` clause.
//!
//! While a select list is bound, the select's `WindowState` is open: each `OVER` call
//! binds its inputs (arguments, PARTITION BY, ORDER BY) in the clause's own context (a row,
//! or a group's keys and aggregates), adds them to the select's inputs (once each), and
//! stands in the expression as a placeholder slot. `finish` then makes the select's
//! `Output` compute the row's columns and the inputs, and the select list read those
//! followed by the calls' results (`plan/window.rs` states the layout). Anywhere else (WHERE,
//! GROUP BY, HAVING, an aggregate's argument, another window) a window function is refused.

use super::function::aggregate_args;
use super::scope::{Ctx, Scope};
use super::syntax::{WINDOW_FUNCTIONS, is_aggregate_call};
use super::{Binder, Result};

use crate::location::Location;
use crate::parse as ast;
use crate::parse::{ExprKind, Ident};
use crate::plan::PlanErrorKind;
use crate::plan::{
    BoundExpr, BoundKind, DataType, FrameEdge, FramePlan, FrameUnits, Output, PlanError, SortKey, WindowCall,
    WindowFunc, WindowPlan, WindowSort,
};
use crate::storage::Value;
use crate::vector::unify_types;

/// Where placeholders of window calls start among slot numbers: far past any batch.
const PLACEHOLDER: usize = usize::MAX / 2;

/// Whether the select being bound (the innermost) takes window functions now.
pub(super) enum WindowState {
    /// Not in its select list.
    Closed,
    /// Held in place: most selects call no window, and opening theirs allocates nothing.
    Open(Windowing),
    /// Binding a window's inputs: another window here would be nested.
    Busy,
}

/// The window calls of one select list, as they are bound.
#[derive(Default)]
pub(super) struct Windowing {
    /// The WINDOW clause's definitions, each with its base's parts copied in.
    named: Vec<(Ident, ast::Window)>,
    inputs: Vec<BoundExpr>,
    /// Columns are numbers of `inputs` until `finish`.
    sorts: Vec<WindowSort>,
    calls: Vec<WindowCall>,
}

impl<'a> Binder<'a> {
    /// Runs `bind` (a select) with that select's windows closed, whatever the select
    /// around it allows.
    pub(super) fn own_windows<T>(&self, bind: impl FnOnce() -> Result<T>) -> Result<T> {
        self.windows.borrow_mut().push(WindowState::Closed);
        let result = bind();
        self.windows.borrow_mut().pop();
        result
    }

    /// Opens the select's windows, with its WINDOW clause's definitions.
    pub(super) fn open_windows(&self, named: &[(Ident, ast::Window)]) -> Result<()> {
        let mut windowing = Windowing::default();
        for (i, (name, window)) in named.iter().enumerate() {
            if windowing.named.iter().any(|(n, _)| n.value == name.value) {
                return Err(PlanError::invalid(
                    name.at,
                    format!("window {} is already defined", name.value),
                ));
            }
            if let Some(base) = &window.base
                && !windowing.named.iter().any(|(n, _)| n.value == base.value)
                && named[i + 1..].iter().any(|(n, _)| n.value == base.value)
            {
                return Err(PlanError::invalid(
                    base.at,
                    format!(
                        "window {} is defined after {}, which builds on it: define it first",
                        base.value, name.value
                    ),
                ));
            }
            let resolved = windowing.resolve(window)?;
            windowing.named.push((name.clone(), resolved));
        }
        if let Some(top) = self.windows.borrow_mut().last_mut() {
            *top = WindowState::Open(windowing);
        }
        Ok(())
    }

    /// Closes the select's windows: what its list called, if anything.
    pub(super) fn close_windows(&self) -> Option<Box<Windowing>> {
        let mut windows = self.windows.borrow_mut();
        let top = windows.last_mut()?;
        match std::mem::replace(top, WindowState::Closed) {
            WindowState::Open(w) if !w.calls.is_empty() => Some(Box::new(w)),
            _ => None,
        }
    }

    /// `call OVER window`, written at `at`.
    pub(super) fn over(
        &self,
        e: &ast::Expr,
        call: &ast::Expr,
        window: &ast::Window,
        scope: &mut Scope,
        ctx: &mut Ctx<'_>,
    ) -> Result<BoundExpr> {
        let at = e.at;
        let clause = match ctx {
            Ctx::Row(c) => *c,
            Ctx::Grouped(_) => "HAVING",
        };
        let state = {
            let mut windows = self.windows.borrow_mut();
            match windows.last_mut() {
                Some(WindowState::Busy) => {
                    return Err(PlanError::invalid(at, "window functions cannot be nested"));
                }
                Some(top @ WindowState::Open(_)) if matches!(ctx, Ctx::Grouped(_)) || clause == "SELECT" => {
                    std::mem::replace(top, WindowState::Busy)
                }
                _ => {
                    let hint = if clause == "WHERE" || clause == "HAVING" {
                        " (they are computed after it: filter on one in a query around this one, SELECT … FROM (SELECT …, rank() OVER (…) AS place FROM …) AS t WHERE t.place <= 3)"
                    } else {
                        ""
                    };
                    return Err(PlanError::invalid(
                        at,
                        format!("window functions are not allowed in {clause}{hint}"),
                    ));
                }
            }
        };
        let WindowState::Open(mut windowing) = state else {
            return Err(PlanError::invalid(at, "window functions cannot be nested"));
        };
        let bound = self.window_call(&mut windowing, e, call, window, scope, ctx);
        if let Some(top) = self.windows.borrow_mut().last_mut() {
            *top = WindowState::Open(windowing);
        }
        bound
    }

    fn window_call(
        &self,
        w: &mut Windowing,
        e: &ast::Expr,
        call: &ast::Expr,
        window: &ast::Window,
        scope: &mut Scope,
        ctx: &mut Ctx<'_>,
    ) -> Result<BoundExpr> {
        let at = e.at;
        let ExprKind::Function {
            name,
            args,
            star,
            distinct,
        } = &call.kind
        else {
            return Err(PlanError::invalid(
                at,
                "OVER follows a function call: rank() OVER (…)",
            ));
        };
        let n = name.value.to_ascii_lowercase();
        let window = w.resolve(window)?;
        let mut input = |b: BoundExpr| w.input(b);
        let mut partition = Vec::new();
        for p in &window.partition_by {
            partition.push(input(self.expr(p, scope, ctx)?));
        }
        let mut order = Vec::new();
        for o in &window.order_by {
            let b = self.expr(&o.expr, scope, ctx)?;
            order.push((b.ty, o.expr.at, super::query::sort_key(o, input(b))));
        }
        let arity = |range: std::ops::RangeInclusive<usize>, usage: &str| {
            if *star || *distinct || !range.contains(&args.len()) {
                Err(PlanError::invalid(at, format!("{n} takes {usage}")))
            } else {
                Ok(())
            }
        };
        let mut bound_args = Vec::new();
        let (func, ty) = match n.as_str() {
            "row_number" | "rank" | "dense_rank" | "percent_rank" | "cume_dist" => {
                arity(0..=0, "no arguments")?;
                let func = match n.as_str() {
                    "row_number" => WindowFunc::RowNumber,
                    "rank" => WindowFunc::Rank,
                    "dense_rank" => WindowFunc::DenseRank,
                    "percent_rank" => WindowFunc::PercentRank,
                    _ => WindowFunc::CumeDist,
                };
                let ty = if matches!(func, WindowFunc::PercentRank | WindowFunc::CumeDist) {
                    DataType::Float
                } else {
                    DataType::Int
                };
                (func, ty)
            }
            "ntile" => {
                arity(1..=1, "one argument, the number of buckets: ntile(4)")?;
                bound_args.push(self.int_argument(&args[0], &n, scope, ctx)?);
                (WindowFunc::Ntile, DataType::Int)
            }
            "lag" | "lead" => {
                arity(
                    1..=3,
                    "a value, and optionally an offset and a default: lag(x, 1, 0)",
                )?;
                let value = self.expr(&args[0], scope, ctx)?;
                let offset = match args.get(1) {
                    Some(o) => self.int_argument(o, &n, scope, ctx)?,
                    None => BoundExpr::constant(Value::Int(1), at),
                };
                let default = match args.get(2) {
                    Some(d) => self.expr(d, scope, ctx)?,
                    None => BoundExpr::constant(Value::Null, at),
                };
                let ty = unify_types(value.ty, default.ty).ok_or_else(|| {
                    PlanError::type_mismatch(
                        args[2].at,
                        format!("{n}'s default is {}, and its value {}", default.ty, value.ty),
                    )
                })?;
                bound_args.extend([self.cast(value, ty)?, offset, self.cast(default, ty)?]);
                (WindowFunc::Shift { forward: n == "lead" }, ty)
            }
            "first_value" | "last_value" => {
                arity(1..=1, "one argument")?;
                let value = self.expr(&args[0], scope, ctx)?;
                let ty = value.ty;
                bound_args.push(value);
                let func = if n == "first_value" {
                    WindowFunc::FirstValue
                } else {
                    WindowFunc::LastValue
                };
                (func, ty)
            }
            "nth_value" => {
                arity(
                    2..=2,
                    "a value and a position (1 is the frame's first row): nth_value(x, 2)",
                )?;
                let value = self.expr(&args[0], scope, ctx)?;
                let ty = value.ty;
                bound_args.push(value);
                bound_args.push(self.int_argument(&args[1], &n, scope, ctx)?);
                (WindowFunc::NthValue, ty)
            }
            _ if is_aggregate_call(name, args, *star) => {
                if *distinct {
                    return Err(PlanError::new(
                        at,
                        PlanErrorKind::Unsupported {
                            what: format!("{n}(DISTINCT …) over a window (PostgreSQL refuses it too)"),
                        },
                    ));
                }
                let agg = if *star {
                    self.aggregate(name, args, true, false, scope, at)?
                } else {
                    let (arg, separator) = aggregate_args(&n, args, at)?;
                    let b = self.expr(arg, scope, ctx)?;
                    self.aggregate_of(&n, b, arg.at, separator, false, scope)?
                };
                bound_args.extend(agg.arg);
                (
                    WindowFunc::Aggregate {
                        func: agg.func,
                        separator: agg.separator,
                    },
                    agg.ty,
                )
            }
            _ => {
                return Err(PlanError::invalid(
                    name.at,
                    format!(
                        "{} is not a window function (those are {} and the aggregates)",
                        name.value,
                        WINDOW_FUNCTIONS.join(", ")
                    ),
                ));
            }
        };
        // A frame is checked whatever the function (PostgreSQL refuses a wrong one on
        // rank() too), and read only by those that read frames.
        let frame = match &window.frame {
            Some(frame) => self.frame(frame, &order, scope)?,
            None => FramePlan::default_frame(),
        };
        if window.order_by.is_empty()
            && let Some(f) = &window.frame
            && f.units == ast::FrameUnits::Groups
        {
            return Err(PlanError::invalid(f.at, "GROUPS needs an ORDER BY in the window"));
        }
        let args: Vec<usize> = bound_args.into_iter().map(&mut input).collect();
        let order: Vec<SortKey> = order.into_iter().map(|(_, _, k)| k).collect();
        let sort = w.sort(partition, order, &window, self.explaining);
        w.calls.push(WindowCall {
            func,
            args,
            sort,
            frame,
            ty,
            at,
            text: if self.explaining {
                e.to_string()
            } else {
                String::new()
            },
        });
        Ok(BoundExpr::slot(PLACEHOLDER + w.calls.len() - 1, ty, at))
    }

    /// An INT argument of a window function (a count, an offset, a position).
    fn int_argument(
        &self,
        e: &ast::Expr,
        n: &str,
        scope: &mut Scope,
        ctx: &mut Ctx<'_>,
    ) -> Result<BoundExpr> {
        let b = self.expr(e, scope, ctx)?;
        match b.ty {
            DataType::Int => Ok(b),
            DataType::Null => self.cast(b, DataType::Int),
            ty => Err(PlanError::type_mismatch(
                e.at,
                format!("{n} needs an INT here, found {ty}"),
            )),
        }
    }

    /// A frame clause, checked as PostgreSQL checks it; `order` is the window's ORDER BY
    /// (type, where written, key).
    fn frame(
        &self,
        frame: &ast::Frame,
        order: &[(DataType, Location, SortKey)],
        scope: &mut Scope,
    ) -> Result<FramePlan> {
        use ast::FrameBound as B;
        let units = match frame.units {
            ast::FrameUnits::Rows => FrameUnits::Rows,
            ast::FrameUnits::Range => FrameUnits::Range,
            ast::FrameUnits::Groups => FrameUnits::Groups,
        };
        let refuse = |message: &str| Err(PlanError::invalid(frame.at, message.to_owned()));
        match (&frame.start, &frame.end) {
            (B::UnboundedFollowing, _) => return refuse("a frame cannot start at UNBOUNDED FOLLOWING"),
            (_, B::UnboundedPreceding) => return refuse("a frame cannot end at UNBOUNDED PRECEDING"),
            (B::CurrentRow, B::Preceding(_)) => {
                return refuse("a frame starting at the current row cannot end at a row before it");
            }
            (B::Following(_), B::Preceding(_) | B::CurrentRow) => {
                return refuse("a frame starting at a following row cannot end at the current row or before");
            }
            _ => {}
        }
        let mut edge = |bound: &B, what: &str| -> Result<FrameEdge> {
            Ok(match bound {
                B::UnboundedPreceding => FrameEdge::UnboundedPreceding,
                B::CurrentRow => FrameEdge::CurrentRow,
                B::UnboundedFollowing => FrameEdge::UnboundedFollowing,
                B::Preceding(e) => FrameEdge::Preceding(self.frame_offset(e, units, order, what, scope)?),
                B::Following(e) => FrameEdge::Following(self.frame_offset(e, units, order, what, scope)?),
            })
        };
        Ok(FramePlan {
            units,
            start: edge(&frame.start, "start")?,
            end: edge(&frame.end, "end")?,
        })
    }

    /// A frame's offset: a constant or parameter, a count of rows or groups (INT), or for
    /// RANGE a distance in the one ORDER BY key's type.
    fn frame_offset(
        &self,
        e: &ast::Expr,
        units: FrameUnits,
        order: &[(DataType, Location, SortKey)],
        what: &str,
        scope: &mut Scope,
    ) -> Result<BoundExpr> {
        // Bound where the window is, so that a column is found, and refused as what it is.
        let b = self.expr(e, scope, &mut Ctx::Row("a window frame's offset"))?;
        if b.as_const().is_none() {
            return Err(PlanError::invalid(
                e.at,
                format!("a window frame's {what} offset must be a constant or a parameter"),
            ));
        }
        if units != FrameUnits::Range {
            return match b.ty {
                DataType::Int => Ok(b),
                DataType::Null => self.cast(b, DataType::Int),
                ty => Err(PlanError::type_mismatch(
                    e.at,
                    format!(
                        "a {} frame's offset counts {}: an INT, found {ty}",
                        if units == FrameUnits::Rows {
                            "ROWS"
                        } else {
                            "GROUPS"
                        },
                        if units == FrameUnits::Rows {
                            "rows"
                        } else {
                            "groups of peers"
                        }
                    ),
                )),
            };
        }
        let [(key, _, _)] = order else {
            return Err(PlanError::invalid(
                e.at,
                format!(
                    "RANGE with an offset needs exactly one ORDER BY value in the window, found {}",
                    order.len()
                ),
            ));
        };
        if !key.is_numeric() {
            return Err(PlanError::type_mismatch(
                e.at,
                format!("RANGE with an offset needs a number to order by, found {key}"),
            ));
        }
        let fits = b.ty == DataType::Null || b.ty == *key || b.ty.is_numeric() && *key != DataType::Int;
        if !fits {
            return Err(PlanError::type_mismatch(
                e.at,
                format!("a RANGE offset over {key} values must be {key}, found {}", b.ty),
            ));
        }
        // A REAL key's distances are measured in FLOAT, as PostgreSQL measures a float4's
        // in float8: 0.1 is not made the REAL nearest it.
        self.cast(
            b,
            if *key == DataType::Real {
                DataType::Float
            } else {
                *key
            },
        )
    }

    /// The select's output with its windows computed: `output` made to compute the row's
    /// columns (`base` of them) and the windows' inputs, the select list to read those
    /// and the calls' results.
    pub(super) fn finish_windows(
        &self,
        windowing: Windowing,
        mut output: Output,
        base: usize,
    ) -> (Output, Box<WindowPlan>) {
        let Windowing {
            inputs, sorts, calls, ..
        } = windowing;
        let width = base + inputs.len();
        let made_by = match &mut output {
            Output::Rows(outputs) | Output::Aggregate { outputs, .. } => outputs,
        };
        let mut outputs = std::mem::take(made_by);
        let mut read = vec![false; base];
        for e in &mut outputs {
            place_calls(e, width);
            e.visit_slots(&mut |s| {
                if let Some(r) = read.get_mut(s) {
                    *r = true;
                }
            });
        }
        let mut made: Vec<BoundExpr> = read
            .iter()
            .enumerate()
            .map(|(s, &read)| {
                if read {
                    BoundExpr::slot(s, DataType::Null, Location::default())
                } else {
                    BoundExpr::constant(Value::Null, Location::default())
                }
            })
            .collect();
        // The slots keep their types: those the select list reads.
        for e in &outputs {
            e.visit(&mut |x| {
                if let BoundKind::Slot(s) = x.kind
                    && let Some(m) = made.get_mut(s)
                    && matches!(m.kind, BoundKind::Slot(_))
                {
                    m.ty = x.ty;
                }
            });
        }
        made.extend(inputs);
        let shift = |c: &mut usize| *c += base;
        let sorts = sorts
            .into_iter()
            .map(|mut s| {
                s.partition.iter_mut().for_each(shift);
                s.order.iter_mut().for_each(|k| shift(&mut k.column));
                s
            })
            .collect();
        let calls = calls
            .into_iter()
            .map(|mut c| {
                c.args.iter_mut().for_each(shift);
                c
            })
            .collect();
        *made_by = made;
        (
            output,
            Box::new(WindowPlan {
                sorts,
                calls,
                outputs,
            }),
        )
    }
}

/// Turns the placeholders of window calls in `e` into the slots their results take:
/// after the `width` columns the select's output makes.
fn place_calls(e: &mut BoundExpr, width: usize) {
    if let BoundKind::Slot(s) = &mut e.kind
        && *s >= PLACEHOLDER
    {
        *s = width + (*s - PLACEHOLDER);
    }
    e.visit_children_mut(&mut |c| place_calls(c, width));
}

impl Windowing {
    /// The input column `b` computes, added when no input computes the same.
    fn input(&mut self, b: BoundExpr) -> usize {
        if let Some(i) = self.inputs.iter().position(|x| x.same_as(&b)) {
            return i;
        }
        self.inputs.push(b);
        self.inputs.len() - 1
    }

    /// The sort of `partition` and `order`, shared with the calls that sort alike.
    fn sort(
        &mut self,
        partition: Vec<usize>,
        order: Vec<SortKey>,
        window: &ast::Window,
        explaining: bool,
    ) -> usize {
        let same = |s: &WindowSort| {
            s.partition == partition
                && s.order.len() == order.len()
                && s.order
                    .iter()
                    .zip(&order)
                    .all(|(a, b)| a.column == b.column && a.desc == b.desc && a.nulls_first == b.nulls_first)
        };
        if let Some(i) = self.sorts.iter().position(same) {
            return i;
        }
        let text = if explaining {
            ast::Window {
                frame: None,
                ..window.clone()
            }
            .to_string()
        } else {
            String::new()
        };
        self.sorts.push(WindowSort {
            partition,
            order,
            text,
        });
        self.sorts.len() - 1
    }

    /// `window` with the named window it starts from copied in, as PostgreSQL copies it:
    /// its PARTITION BY always, its ORDER BY unless it has none, never its frame.
    fn resolve(&self, window: &ast::Window) -> Result<ast::Window> {
        let Some(name) = &window.base else {
            return Ok(window.clone());
        };
        let Some((_, base)) = self.named.iter().find(|(n, _)| n.value == name.value) else {
            let known: Vec<&str> = self.named.iter().map(|(n, _)| n.value.as_str()).collect();
            return Err(PlanError::invalid(
                name.at,
                if known.is_empty() {
                    format!(
                        "window {} is not defined (define it with WINDOW {} AS (…) after HAVING)",
                        name.value, name.value
                    )
                } else {
                    format!(
                        "window {} is not defined (defined: {})",
                        name.value,
                        known.join(", ")
                    )
                },
            ));
        };
        if window.bare {
            return Ok(ast::Window {
                base: None,
                bare: false,
                at: window.at,
                ..base.clone()
            });
        }
        if !window.partition_by.is_empty() {
            return Err(PlanError::invalid(
                window.partition_by[0].at,
                format!(
                    "window {} has its PARTITION BY, which a window built on it cannot change",
                    name.value
                ),
            ));
        }
        if !window.order_by.is_empty() && !base.order_by.is_empty() {
            return Err(PlanError::invalid(
                window.order_by[0].expr.at,
                format!(
                    "window {} has its ORDER BY, which a window built on it cannot change",
                    name.value
                ),
            ));
        }
        if base.frame.is_some() {
            return Err(PlanError::invalid(
                name.at,
                format!(
                    "window {} has a frame clause, so no window can be built on it (use OVER {} as it is)",
                    name.value, name.value
                ),
            ));
        }
        Ok(ast::Window {
            base: None,
            bare: false,
            partition_by: base.partition_by.clone(),
            order_by: if window.order_by.is_empty() {
                base.order_by.clone()
            } else {
                window.order_by.clone()
            },
            frame: window.frame.clone(),
            at: window.at,
        })
    }
}
