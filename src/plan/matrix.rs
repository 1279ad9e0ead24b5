//! Matrix fan-out: axes rendered to value lists, then every combination in
//! declared order (the first axis varies slowest, like nested loops).

use indexmap::IndexMap;
use serde_json::Value;

use crate::manifest::{AxisValues, Diagnostic, Limit, SandboxDecl, Source, Span};
use crate::template::{self, Context};

/// One combination: axis name → value.
pub(crate) type Combination = IndexMap<String, Value>;

/// Render `decl`'s axes and list their combinations (one empty combination
/// without a matrix). More than `limit` combinations is an error, found
/// from the axes' lengths before any combination is built.
pub(crate) fn combinations(
    decl: &SandboxDecl,
    ctx: &Context,
    source: &Source,
    limit: u64,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Combination> {
    let mut axes: Vec<(&str, Vec<Value>)> = Vec::with_capacity(decl.matrix.len());
    for (name, axis) in &decl.matrix {
        let Some(values) = axis_values(name, &axis.value, ctx, source, diags) else {
            continue;
        };
        if values.len() as u64 > limit {
            diags.push(too_many(
                source,
                decl,
                axis.span,
                values.len() as u64,
                limit,
            ));
            return Vec::new();
        }
        if let Some(d) = duplicate(name, &values, axis.span, source) {
            diags.push(d);
        }
        axes.push((name, values));
    }
    let count = axes
        .iter()
        .try_fold(1u64, |n, (_, v)| n.checked_mul(v.len() as u64))
        .unwrap_or(u64::MAX);
    if count > limit {
        let span = decl.matrix.first().map_or(decl.id_span, |(_, a)| a.span);
        diags.push(too_many(source, decl, span, count, limit));
        return Vec::new();
    }
    product(axes)
}

/// The values of axis `name`: a list's items (string items rendered), or
/// what its template renders to, which must be a non-empty list. `None`
/// when the template fails: the axis is left out, the mistake is in `diags`.
fn axis_values(
    name: &str,
    axis: &AxisValues,
    ctx: &Context,
    source: &Source,
    diags: &mut Vec<Diagnostic>,
) -> Option<Vec<Value>> {
    let tpl = match axis {
        AxisValues::List(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                match &item.value {
                    Value::String(s) if template::is_template(s) => {
                        let tpl = crate::manifest::Tpl::new(s.clone(), item.span);
                        match template::render_value(&tpl, ctx, source) {
                            Ok(v) => out.push(v),
                            Err(d) => diags.push(d),
                        }
                    }
                    v => out.push(v.clone()),
                }
            }
            return Some(out);
        }
        AxisValues::Template(tpl) => tpl,
    };
    let diag = match template::render_value(tpl, ctx, source) {
        Ok(Value::Array(items)) if !items.is_empty() => return Some(items),
        Ok(Value::Array(_)) => Diagnostic::new(
            source,
            tpl.span,
            format!("matrix axis `{name}` rendered to an empty list"),
        )
        .hint("a sandbox with an empty axis would never run: check the variable it reads"),
        Ok(other) => {
            let shown = match &other {
                Value::String(s) => format!("the string \"{s}\""),
                v => v.to_string(),
            };
            Diagnostic::new(source, tpl.span, format!("matrix axis `{name}` must render to a list, got {shown}"))
                .hint("write the whole value as one expression, e.g. \"{{ vars.students }}\", with a list in `vars`")
        }
        Err(d) => d,
    };
    diags.push(diag);
    None
}

/// The first value axis `name` lists twice: two equal values would give
/// two containers with the same id.
fn duplicate(name: &str, values: &[Value], span: Span, source: &Source) -> Option<Diagnostic> {
    let mut seen = std::collections::HashSet::with_capacity(values.len());
    let twice = values.iter().find(|v| !seen.insert(v.to_string()))?;
    Some(
        Diagnostic::new(
            source,
            span,
            format!("matrix axis `{name}` lists `{}` twice", value_text(twice)),
        )
        .hint("each value makes one container: remove the duplicate"),
    )
}

/// Every combination of the axes' values, the first axis varying slowest.
fn product(axes: Vec<(&str, Vec<Value>)>) -> Vec<Combination> {
    let mut combos: Vec<Combination> = vec![IndexMap::new()];
    for (name, values) in axes {
        let mut next = Vec::with_capacity(combos.len() * values.len());
        for combo in &combos {
            for v in &values {
                let mut c = combo.clone();
                c.insert(name.to_string(), v.clone());
                next.push(c);
            }
        }
        combos = next;
    }
    combos
}

fn too_many(source: &Source, decl: &SandboxDecl, span: Span, count: u64, limit: u64) -> Diagnostic {
    let shown = if count == u64::MAX {
        "more than 2^64".to_string()
    } else {
        count.to_string()
    };
    Diagnostic::new(
        source,
        span,
        format!(
            "sandbox `{}` has {shown} matrix combinations, more than the `matrix` limit of {limit}",
            decl.id
        ),
    )
    .hint(Limit::Matrix.how_to_raise())
}

/// A matrix value as it appears in instance ids: strings bare, the rest as JSON.
pub(crate) fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `grader` or `grader[os=debian,py=3.12]`.
pub(crate) fn instance_id(sandbox: &str, combo: &Combination) -> String {
    if combo.is_empty() {
        return sandbox.to_string();
    }
    let parts: Vec<String> = combo
        .iter()
        .map(|(k, v)| format!("{k}={}", value_text(v)))
        .collect();
    format!("{sandbox}[{}]", parts.join(","))
}
