//! Matrix fan-out: axes rendered to value lists, then every combination in
//! declared order (the first axis varies slowest, like nested loops).

use indexmap::IndexMap;
use serde_json::Value;

use crate::manifest::{AxisValues, Diagnostic, Limit, SandboxDecl, Source};
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
        let values = match &axis.value {
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
                out
            }
            AxisValues::Template(tpl) => match template::render_value(tpl, ctx, source) {
                Ok(Value::Array(items)) if !items.is_empty() => items,
                Ok(Value::Array(_)) => {
                    diags.push(
                        Diagnostic::new(source, tpl.span, format!("matrix axis `{name}` rendered to an empty list"))
                            .hint("a sandbox with an empty axis would never run: check the variable it reads"),
                    );
                    continue;
                }
                Ok(other) => {
                    let shown = match &other {
                        Value::String(s) => format!("the string \"{s}\""),
                        v => v.to_string(),
                    };
                    diags.push(
                        Diagnostic::new(source, tpl.span, format!("matrix axis `{name}` must render to a list, got {shown}"))
                            .hint("write the whole value as one expression, e.g. \"{{ vars.students }}\", with a list in `vars`"),
                    );
                    continue;
                }
                Err(d) => {
                    diags.push(d);
                    continue;
                }
            },
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
        // Two equal values would give two containers with the same id.
        let mut seen = std::collections::HashSet::with_capacity(values.len());
        for v in &values {
            if !seen.insert(v.to_string()) {
                diags.push(
                    Diagnostic::new(
                        source,
                        axis.span,
                        format!("matrix axis `{name}` lists `{}` twice", value_text(v)),
                    )
                    .hint("each value makes one container: remove the duplicate"),
                );
                break;
            }
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

fn too_many(
    source: &Source,
    decl: &SandboxDecl,
    span: crate::manifest::Span,
    count: u64,
    limit: u64,
) -> Diagnostic {
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
