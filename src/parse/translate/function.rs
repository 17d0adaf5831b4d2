//! Function calls, and the windows OVER and WINDOW give them, with their frames.
//!
//! Invariants: what a call may hold that ecsql does not run (FILTER, WITHIN GROUP,
//! IGNORE or RESPECT NULLS, ORDER BY inside the parentheses) is refused at the call; a
//! frame's offset is a number, never a quoted text.

use sqlparser::ast as sql;

use super::{Result, ident};
use crate::location::Location;
use crate::parse::ast::*;
use crate::parse::error::ParseError;
use crate::parse::parser::StatementParser;
use crate::parse::start::Node;

impl StatementParser<'_> {
    pub(super) fn function(&mut self, mut f: sql::Function, at: Location) -> Result<ExprKind> {
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
        let name = self.routine_name(f.name)?;
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
    pub(super) fn window(&mut self, spec: sql::WindowSpec, at: Location) -> Result<Window> {
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
}
