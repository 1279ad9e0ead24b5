//! Filters and tests a template calls, checked before it renders.
//!
//! minijinja looks filters and tests up only when it runs them, so a typo
//! (`| uper`) or a missing argument (`| replace('a')`) in a step template
//! would fail the step after containers exist. The template is parsed
//! (minijinja's own parser, which bounds its nesting) and every filter and
//! test call is checked: the name against the environment (by asking it,
//! so the list cannot drift from the features built in), the number of
//! positional arguments against the built-ins' signatures.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use minijinja::machinery::ast::{CallArg, Expr, Stmt, UnaryOpKind};
use minijinja::machinery::{parse, parse_expr};
use minijinja::syntax::SyntaxConfig;
use minijinja::ErrorKind;

use super::engine::environment;
use super::error::TemplateError;
use super::references::Syntax;
use crate::diag::suggest::did_you_mean;

/// Filters: positional arguments after the value, (min, max); `None` for any.
const FILTER_ARITY: &[(&str, usize, Option<usize>)] = &[
    ("abs", 0, Some(0)),
    ("attr", 1, Some(1)),
    ("batch", 1, Some(2)),
    ("bool", 0, Some(0)),
    ("capitalize", 0, Some(0)),
    ("count", 0, Some(0)),
    ("chain", 0, None),
    ("d", 0, Some(2)),
    ("default", 0, Some(2)),
    ("dictsort", 0, Some(0)),
    ("e", 0, Some(0)),
    ("escape", 0, Some(0)),
    ("first", 0, Some(0)),
    ("float", 0, Some(1)),
    ("format", 0, None),
    ("groupby", 0, Some(1)),
    ("indent", 0, Some(3)),
    ("int", 0, Some(2)),
    ("items", 0, Some(0)),
    ("join", 0, Some(2)),
    ("last", 0, Some(0)),
    ("length", 0, Some(0)),
    ("lines", 0, Some(0)),
    ("list", 0, Some(0)),
    ("lower", 0, Some(0)),
    ("map", 0, None),
    ("max", 0, Some(0)),
    ("min", 0, Some(0)),
    ("pprint", 0, Some(0)),
    ("reject", 0, None),
    ("rejectattr", 1, None),
    ("replace", 2, Some(2)),
    ("reverse", 0, Some(0)),
    ("round", 0, Some(2)),
    ("safe", 0, Some(0)),
    ("select", 0, None),
    ("selectattr", 1, None),
    ("slice", 1, Some(2)),
    ("sort", 0, Some(0)),
    ("split", 0, Some(2)),
    ("string", 0, Some(0)),
    ("sum", 0, Some(2)),
    ("title", 0, Some(0)),
    ("tojson", 0, Some(1)),
    ("trim", 0, Some(1)),
    ("unique", 0, Some(0)),
    ("upper", 0, Some(0)),
    ("zip", 0, None),
];

/// Tests: positional arguments after the value, (min, max).
const TEST_ARITY: &[(&str, usize, usize)] = &[
    ("divisibleby", 1, 1),
    ("endingwith", 1, 1),
    ("eq", 1, 1),
    ("equalto", 1, 1),
    ("filter", 1, 1),
    ("ge", 1, 1),
    ("greaterthan", 1, 1),
    ("gt", 1, 1),
    ("in", 1, 1),
    ("le", 1, 1),
    ("lessthan", 1, 1),
    ("lt", 1, 1),
    ("ne", 1, 1),
    ("sameas", 1, 1),
    ("startingwith", 1, 1),
    ("test", 1, 1),
];

/// Every filter and test call in `text` that would fail for a reason
/// known now: an unknown name, or too few or too many arguments; and
/// loops over constant ranges that would run more than `fuel` times.
pub(crate) fn check_calls(text: &str, syntax: Syntax, fuel: u64) -> Vec<TemplateError> {
    let mut out = Vec::new();
    match syntax {
        Syntax::Template => {
            if let Ok(ast) = parse(text, "<manifest>", SyntaxConfig::default()) {
                let mut loops = Loops {
                    fuel,
                    trips: 1,
                    reported: false,
                };
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

/// Nested `{% for %}` loops over constant `range(…)`s: their trip counts
/// multiply, and each trip costs at least one instruction of fuel.
struct Loops {
    fuel: u64,
    trips: u64,
    reported: bool,
}

impl Loops {
    fn stmts(&mut self, list: &[Stmt<'_>], out: &mut Vec<TemplateError>) {
        for s in list {
            self.stmt(s, out);
        }
    }

    #[allow(unreachable_patterns)]
    fn stmt(&mut self, s: &Stmt<'_>, out: &mut Vec<TemplateError>) {
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
                        hint: Some(crate::limits::Limit::TemplateFuel.how_to_raise()),
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
fn range_len(e: &Expr<'_>) -> Option<u64> {
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

type Problem = (String, Option<String>);

/// Filters that call a test or filter by name (`select('odd')`,
/// `selectattr('x', 'eq', 1)`, `map('upper')`): the named one is checked
/// with the positional arguments that follow its name.
fn named_call_problem(filter: &str, list: &[CallArg<'_>]) -> Option<Problem> {
    let (kind, at) = match filter {
        "select" | "reject" => ("test", 0),
        "selectattr" | "rejectattr" => ("test", 1),
        // `map(attribute=…)` names no filter.
        "map"
            if !list
                .iter()
                .any(|a| matches!(a, CallArg::Kwarg("attribute", _))) =>
        {
            ("filter", 0)
        }
        _ => return None,
    };
    let pos: Vec<&Expr<'_>> = list
        .iter()
        .map_while(|a| match a {
            CallArg::Pos(e) => Some(Some(e)),
            CallArg::PosSplat(_) => None,
            _ => Some(None),
        })
        .flatten()
        .collect();
    let splat = list.iter().any(|a| matches!(a, CallArg::PosSplat(_)));
    let Some(Expr::Const(k)) = pos.get(at) else {
        return None;
    };
    let name = k.value.as_str()?;
    let rest = (!splat).then(|| pos.len() - at - 1);
    let problem = if kind == "test" {
        test_problem(name, rest)
    } else {
        filter_problem(name, rest)
    }?;
    Some((format!("in `{filter}`: {}", problem.0), problem.1))
}

fn filter_problem(name: &str, given: Option<usize>) -> Option<Problem> {
    if !known("filter", name) {
        let names: Vec<&str> = FILTER_ARITY.iter().map(|(n, ..)| *n).collect();
        let hint = did_you_mean(name, names.iter().copied()).map_or_else(
            || "see the filters minijinja provides: https://docs.rs/minijinja/latest/minijinja/filters/".to_string(),
            |s| format!("did you mean `{s}`?"),
        );
        return Some((format!("unknown filter `{name}`"), Some(hint)));
    }
    let (_, min, max) = FILTER_ARITY.iter().find(|(n, ..)| *n == name)?;
    arity_problem("filter", name, given?, *min, *max)
}

fn test_problem(name: &str, given: Option<usize>) -> Option<Problem> {
    if !known("test", name) {
        let mut names: Vec<&str> = TEST_ARITY.iter().map(|(n, ..)| *n).collect();
        names.extend([
            "defined",
            "undefined",
            "none",
            "string",
            "number",
            "integer",
            "sequence",
            "mapping",
            "odd",
            "even",
            "true",
            "false",
            "lower",
            "upper",
            "boolean",
            "iterable",
        ]);
        let hint =
            did_you_mean(name, names.iter().copied()).map(|s| format!("did you mean `{s}`?"));
        return Some((format!("unknown test `{name}`"), hint));
    }
    let (min, max) = TEST_ARITY
        .iter()
        .find(|(n, ..)| *n == name)
        .map_or((0, 0), |(_, min, max)| (*min, *max));
    arity_problem("test", name, given?, min, Some(max))
}

fn arity_problem(
    kind: &str,
    name: &str,
    given: usize,
    min: usize,
    max: Option<usize>,
) -> Option<Problem> {
    let wanted = match max {
        Some(max) if max == min => format!("{min}"),
        Some(max) => format!("{min} to {max}"),
        None => format!("at least {min}"),
    };
    let plural = |n: usize| if n == 1 { "argument" } else { "arguments" };
    if given < min || max.is_some_and(|m| given > m) {
        return Some((
            format!(
                "{kind} `{name}` takes {wanted} {}, given {given}",
                plural(max.unwrap_or(min))
            ),
            None,
        ));
    }
    None
}

/// Whether the environment has a filter or test `name`: asked once per
/// name, by running a call to it and seeing if the lookup fails.
fn known(kind: &str, name: &str) -> bool {
    static CACHE: OnceLock<Mutex<HashMap<(String, String), bool>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (kind.to_string(), name.to_string());
    if let Some(&k) = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&key)
    {
        return k;
    }
    let (probe, unknown) = if kind == "filter" {
        (format!("{{{{ none | {name} }}}}"), ErrorKind::UnknownFilter)
    } else {
        (format!("{{{{ none is {name} }}}}"), ErrorKind::UnknownTest)
    };
    let found = match environment().render_str(&probe, ()) {
        Ok(_) => true,
        Err(e) => e.kind() != unknown,
    };
    let mut c = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // Only names the environment knows can fill it without bound.
    if found || c.len() < 1024 {
        c.insert(key, found);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        check_calls(text, Syntax::Template, 100_000)
            .into_iter()
            .map(|e| {
                let r = e.range.unwrap();
                format!("{}@{}..{}", e.message, r.start, r.end)
            })
            .collect()
    }

    #[test]
    fn unknown_filters_and_tests_and_bad_arities() {
        assert_eq!(
            problems("{{ x | upper }} {{ x | replace('a', 'b') }}"),
            Vec::<String>::new()
        );
        assert_eq!(problems("{{ x | uper }}"), ["unknown filter `uper`@7..11"]);
        let e = &check_calls("{{ x | uper }}", Syntax::Template, 100_000)[0];
        assert_eq!(e.hint.as_deref(), Some("did you mean `upper`?"));
        assert_eq!(
            problems("{% if x is odd %}{% endif %}{{ x is evn }}"),
            ["unknown test `evn`@36..39"]
        );
        assert_eq!(
            problems("{{ x | replace('a') }}"),
            ["filter `replace` takes 2 arguments, given 1@7..19"]
        );
        assert_eq!(
            problems("{{ x | upper(1) }}"),
            ["filter `upper` takes 0 arguments, given 1@7..15"]
        );
        assert_eq!(
            problems("{% if x is divisibleby %}{% endif %}"),
            ["test `divisibleby` takes 1 argument, given 0@11..22"]
        );
        assert_eq!(
            problems("{{ x | join(*args) }}{{ x | indent(width=2) }}"),
            Vec::<String>::new()
        );
        assert_eq!(
            problems(
                "{% for i in x | sortt %}{{ i }}{% endfor %}{% filter uppr %}a{% endfilter %}"
            )
            .len(),
            2
        );
        assert_eq!(
            check_calls("x | nope and y is defined", Syntax::Expression, 100_000).len(),
            1
        );
    }

    // Variadic filters were checked by name only: a bad `default` arity or
    // a test or filter named inside `select`, `selectattr` or `map` failed
    // only when the step ran.
    #[test]
    fn filters_that_name_a_test_or_filter_check_it() {
        assert_eq!(
            problems("{{ x | select('odd') }}{{ x | selectattr('a', 'eq', 1) }}{{ x | map('upper') }}{{ x | map(attribute='a') }}{{ x | reject }}{{ x | format(1, 2, 3) }}"),
            Vec::<String>::new()
        );
        assert_eq!(
            problems("{{ x | select('od') }}"),
            ["in `select`: unknown test `od`@7..19"]
        );
        assert_eq!(
            problems("{{ x | rejectattr('a', 'eq') }}"),
            ["in `rejectattr`: test `eq` takes 1 argument, given 0@7..28"]
        );
        assert_eq!(
            problems("{{ x | map('replace', 'a') }}"),
            ["in `map`: filter `replace` takes 2 arguments, given 1@7..26"]
        );
        assert_eq!(
            problems("{{ x | default(1, true, 3) }}"),
            ["filter `default` takes 0 to 2 arguments, given 3@7..26"]
        );
    }

    // Regression: a step template looping 10^9 times passed `validate`
    // and ran for minutes in `apply`.
    #[test]
    fn loops_over_constant_ranges_past_the_fuel_are_reported() {
        let loop9 =
            "{% for i in range(100000) %}{% for j in range(10000) %}x{% endfor %}{% endfor %}";
        let p = problems(loop9);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("this loop runs 1000000000 times"), "{p:?}");
        assert_eq!(
            problems("{% for i in range(10, 0, -1) | list %}{% endfor %}"),
            Vec::<String>::new()
        );
        assert_eq!(range_len(&parse_expr("range(10, 0, -3)").unwrap()), Some(4));
        assert_eq!(range_len(&parse_expr("range(1, 10, 2)").unwrap()), Some(5));
        assert_eq!(range_len(&parse_expr("range(5, 1)").unwrap()), Some(0));
        assert_eq!(range_len(&parse_expr("range(n)").unwrap()), None);
    }

    #[test]
    fn every_filter_in_the_table_exists() {
        for (name, ..) in FILTER_ARITY {
            assert!(known("filter", name), "{name}");
        }
        for (name, ..) in TEST_ARITY {
            assert!(known("test", name), "{name}");
        }
        assert!(!known("filter", "definitely_not_a_filter"));
    }
}
