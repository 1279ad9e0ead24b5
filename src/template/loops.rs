//! Nested `{% for %}` loops over constant `range(…)`s, checked against the
//! fuel before the template runs: a loop that would run out of fuel is
//! reported at its `range`, not after containers exist.

use minijinja::machinery::ast::{CallArg, Expr, Stmt, UnaryOpKind};

use super::error::TemplateError;
use crate::limits::Limit;

/// Nested `{% for %}` loops over constant `range(…)`s: their trip counts
/// multiply, and each trip costs at least one instruction of fuel.
pub(super) struct Loops {
    fuel: u64,
    trips: u64,
    reported: bool,
}

impl Loops {
    /// Loops allowed `fuel` trips in all.
    pub(super) fn new(fuel: u64) -> Loops {
        Loops {
            fuel,
            trips: 1,
            reported: false,
        }
    }

    fn stmts(&mut self, list: &[Stmt<'_>], out: &mut Vec<TemplateError>) {
        for s in list {
            self.stmt(s, out);
        }
    }

    #[allow(unreachable_patterns)]
    pub(super) fn stmt(&mut self, s: &Stmt<'_>, out: &mut Vec<TemplateError>) {
        match s {
            Stmt::Template(t) => self.stmts(&t.children, out),
            Stmt::ForLoop(f) => {
                let outer = self.trips;
                let trips = range_len(&f.iter).unwrap_or(1);
                self.trips = outer.saturating_mul(trips);
                if self.trips > self.fuel && !self.reported {
                    self.reported = true;
                    let span = f.iter.span();
                    out.push(TemplateError {
                        message: format!(
                            "this loop runs {} times, more than the `template_fuel` limit of {} allows",
                            if self.trips == u64::MAX { "more than 2^64".to_string() } else { self.trips.to_string() },
                            self.fuel
                        ),
                        hint: Some(Limit::TemplateFuel.how_to_raise()),
                        range: Some(span.start_offset as usize..span.end_offset as usize),
                    });
                }
                self.stmts(&f.body, out);
                self.trips = outer;
                self.stmts(&f.else_body, out);
            }
            Stmt::IfCond(i) => {
                self.stmts(&i.true_body, out);
                self.stmts(&i.false_body, out);
            }
            Stmt::WithBlock(w) => self.stmts(&w.body, out),
            Stmt::SetBlock(s) => self.stmts(&s.body, out),
            Stmt::AutoEscape(a) => self.stmts(&a.body, out),
            Stmt::FilterBlock(f) => self.stmts(&f.body, out),
            _ => {}
        }
    }
}

/// How many items `range(…)` with constant arguments yields (through
/// filters such as `| list`).
pub(super) fn range_len(e: &Expr<'_>) -> Option<u64> {
    match e {
        Expr::Filter(f) => range_len(f.expr.as_ref()?),
        Expr::Call(c) => {
            let Expr::Var(v) = &c.expr else { return None };
            if v.id != "range" {
                return None;
            }
            let mut n = Vec::new();
            for a in &c.args {
                let CallArg::Pos(e) = a else { return None };
                n.push(const_int(e)?);
            }
            let (from, to, by) = match n.as_slice() {
                [to] => (0, *to, 1),
                [from, to] => (*from, *to, 1),
                [from, to, by] if *by != 0 => (*from, *to, *by),
                _ => return None,
            };
            let width = i128::from(to) - i128::from(from);
            let len = (width + i128::from(by) - i128::from(by.signum())) / i128::from(by);
            u64::try_from(len.max(0)).ok()
        }
        _ => None,
    }
}

/// A constant integer (`3`, `-3`).
fn const_int(e: &Expr<'_>) -> Option<i64> {
    match e {
        Expr::Const(k) => i64::try_from(k.value.clone()).ok(),
        Expr::UnaryOp(u) if matches!(u.op, UnaryOpKind::Neg) => const_int(&u.expr)?.checked_neg(),
        _ => None,
    }
}
