//! Filters and tests a template calls, checked before it renders.
//!
//! minijinja looks filters and tests up only when it runs them, so a typo
//! (`| uper`) or a missing argument (`| replace('a')`) in a step template
//! would fail the step after containers exist. The template is parsed
//! (minijinja's own parser, which bounds its nesting) and every filter and
//! test call is checked (`arity`): the name against the environment, the
//! number of positional arguments against the built-ins' signatures; and
//! constant loops against the fuel (`loops`).

use minijinja::machinery::ast::{CallArg, Expr, Stmt};
use minijinja::machinery::{parse, parse_expr};
use minijinja::syntax::SyntaxConfig;

use super::arity::{filter_problem, named_call_problem, test_problem};
use super::error::TemplateError;
use super::loops::Loops;
use super::references::Syntax;

/// Every filter and test call in `text` that would fail for a reason
/// known now: an unknown name, or too few or too many arguments; and
/// loops over constant ranges that would run more than `fuel` times.
pub(crate) fn check_calls(text: &str, syntax: Syntax, fuel: u64) -> Vec<TemplateError> {
    let mut out = Vec::new();
    match syntax {
        Syntax::Template => {
            if let Ok(ast) = parse(text, "<manifest>", SyntaxConfig::default()) {
                let mut loops = Loops::new(fuel);
                loops.stmt(&ast, &mut out);
                stmt(&ast, &mut out);
            }
        }
        Syntax::Expression => {
            if let Ok(e) = parse_expr(text) {
                expr(&e, &mut out);
            }
        }
    }
    out
}

fn stmts(list: &[Stmt<'_>], out: &mut Vec<TemplateError>) {
    for s in list {
        stmt(s, out);
    }
}

#[allow(unreachable_patterns)]
fn stmt(s: &Stmt<'_>, out: &mut Vec<TemplateError>) {
    match s {
        Stmt::Template(t) => stmts(&t.children, out),
        Stmt::EmitExpr(e) => expr(&e.expr, out),
        Stmt::ForLoop(f) => {
            expr(&f.iter, out);
            if let Some(e) = &f.filter_expr {
                expr(e, out);
            }
            stmts(&f.body, out);
            stmts(&f.else_body, out);
        }
        Stmt::IfCond(i) => {
            expr(&i.expr, out);
            stmts(&i.true_body, out);
            stmts(&i.false_body, out);
        }
        Stmt::WithBlock(w) => {
            for (_, e) in &w.assignments {
                expr(e, out);
            }
            stmts(&w.body, out);
        }
        Stmt::Set(s) => expr(&s.expr, out),
        Stmt::SetBlock(s) => {
            if let Some(f) = &s.filter {
                expr(f, out);
            }
            stmts(&s.body, out);
        }
        Stmt::AutoEscape(a) => stmts(&a.body, out),
        Stmt::FilterBlock(f) => {
            expr(&f.filter, out);
            stmts(&f.body, out);
        }
        _ => {}
    }
}

fn args(list: &[CallArg<'_>], out: &mut Vec<TemplateError>) {
    for a in list {
        match a {
            CallArg::Pos(e)
            | CallArg::Kwarg(_, e)
            | CallArg::PosSplat(e)
            | CallArg::KwargSplat(e) => {
                expr(e, out);
            }
        }
    }
}

/// Positional arguments, or `None` when a splat makes the count unknown.
fn positional(list: &[CallArg<'_>]) -> Option<usize> {
    let mut n = 0;
    for a in list {
        match a {
            CallArg::Pos(_) => n += 1,
            CallArg::PosSplat(_) => return None,
            CallArg::Kwarg(..) | CallArg::KwargSplat(_) => {}
        }
    }
    Some(n)
}

fn expr(e: &Expr<'_>, out: &mut Vec<TemplateError>) {
    match e {
        Expr::Var(_) | Expr::Const(_) => {}
        Expr::Slice(s) => {
            expr(&s.expr, out);
            for part in [&s.start, &s.stop, &s.step].into_iter().flatten() {
                expr(part, out);
            }
        }
        Expr::UnaryOp(u) => expr(&u.expr, out),
        Expr::BinOp(b) => {
            expr(&b.left, out);
            expr(&b.right, out);
        }
        Expr::Compare(c) => {
            expr(&c.expr, out);
            for op in &c.ops {
                expr(&op.expr, out);
            }
        }
        Expr::IfExpr(i) => {
            expr(&i.test_expr, out);
            expr(&i.true_expr, out);
            if let Some(f) = &i.false_expr {
                expr(f, out);
            }
        }
        Expr::Filter(f) => {
            if let Some(inner) = &f.expr {
                expr(inner, out);
            }
            args(&f.args, out);
            let span = f.span();
            let range = span.start_offset as usize..span.end_offset as usize;
            let problem = filter_problem(f.name, positional(&f.args))
                .or_else(|| named_call_problem(f.name, &f.args));
            if let Some(problem) = problem {
                out.push(TemplateError {
                    message: problem.0,
                    hint: problem.1,
                    range: Some(range),
                });
            }
        }
        Expr::Test(t) => {
            expr(&t.expr, out);
            args(&t.args, out);
            let span = t.span();
            let range = span.start_offset as usize..span.end_offset as usize;
            if let Some(problem) = test_problem(t.name, positional(&t.args)) {
                out.push(TemplateError {
                    message: problem.0,
                    hint: problem.1,
                    range: Some(range),
                });
            }
        }
        Expr::GetAttr(g) => expr(&g.expr, out),
        Expr::GetItem(g) => {
            expr(&g.expr, out);
            expr(&g.subscript_expr, out);
        }
        Expr::Call(c) => {
            expr(&c.expr, out);
            args(&c.args, out);
        }
        Expr::List(l) => l.items.iter().for_each(|i| expr(i, out)),
        Expr::Tuple(t) => t.items.iter().for_each(|i| expr(i, out)),
        Expr::Map(m) => m.keys.iter().chain(&m.values).for_each(|i| expr(i, out)),
    }
}

#[cfg(test)]
#[path = "calls_tests.rs"]
mod tests;
