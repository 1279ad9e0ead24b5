//! The filters and tests minijinja provides, with how many positional
//! arguments each takes, and the problem with a call to one: an unknown
//! name (asked of the environment itself, so the list cannot drift from
//! the features built in) or a wrong number of arguments.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use minijinja::machinery::ast::{CallArg, Expr};
use minijinja::ErrorKind;

use super::engine::environment;
use crate::diag::suggest::did_you_mean;

/// Filters: positional arguments after the value, (min, max); `None` for any.
pub(super) const FILTER_ARITY: &[(&str, usize, Option<usize>)] = &[
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
pub(super) const TEST_ARITY: &[(&str, usize, usize)] = &[
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

/// A message and its hint.
pub(super) type Problem = (String, Option<String>);

/// Filters that call a test or filter by name (`select('odd')`,
/// `selectattr('x', 'eq', 1)`, `map('upper')`): the named one is checked
/// with the positional arguments that follow its name.
pub(super) fn named_call_problem(filter: &str, list: &[CallArg<'_>]) -> Option<Problem> {
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

pub(super) fn filter_problem(name: &str, given: Option<usize>) -> Option<Problem> {
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

pub(super) fn test_problem(name: &str, given: Option<usize>) -> Option<Problem> {
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
pub(super) fn known(kind: &str, name: &str) -> bool {
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
