//! The minijinja engine: one strict environment, its fuel, its output cap.
//!
//! Undefined variables are errors (strict mode) that name the variable and
//! suggest the closest defined one: a typo in `{{ vars.studnets }}` must
//! not quietly become an empty string inside a shell command. Strings with
//! no `{{`, `{%` or `{#` skip the engine entirely, which keeps planning
//! large manifests fast.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use minijinja::{Environment, UndefinedBehavior};
use serde_json::Value;

use super::context::Context;
use super::error::{convert_error, find_path, TemplateError};

/// True when `s` holds template syntax (`{{`, `{%` or `{#`).
#[must_use]
pub fn is_template(s: &str) -> bool {
    s.contains("{{") || s.contains("{%") || s.contains("{#")
}

/// The environment every template renders in, without fuel.
pub(super) fn environment() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // A run script's final newline is part of the script.
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .keep_trailing_newline(true)
                .build()
                .expect("the default delimiters are valid"),
        );
        env.set_debug(true);
        env
    })
}

/// The environment with `fuel`: one per value, built once (a manifest
/// rarely asks for more than the default).
fn fueled(fuel: u64) -> Arc<Environment<'static>> {
    static ENVS: OnceLock<Mutex<HashMap<u64, Arc<Environment<'static>>>>> = OnceLock::new();
    let envs = ENVS.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = envs
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(env) = map.get(&fuel) {
        return Arc::clone(env);
    }
    let mut env = environment().clone();
    env.set_fuel(Some(fuel));
    let env = Arc::new(env);
    if map.len() < 16 {
        map.insert(fuel, Arc::clone(&env));
    }
    env
}

/// Output that refuses to grow past a cap.
struct Capped {
    out: Vec<u8>,
    cap: usize,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.out.len() + buf.len() > self.cap {
            return Err(std::io::Error::other("output limit"));
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Render `template` to a string.
pub fn render_str(template: &str, ctx: &Context) -> Result<String, TemplateError> {
    if !is_template(template) {
        return Ok(template.to_string());
    }
    let env = fueled(ctx.fuel);
    let compiled = env
        .template_from_str(template)
        .map_err(|e| convert_error(&e, ctx, template))?;
    let mut out = Capped {
        out: Vec::new(),
        cap: ctx.max_output,
    };
    compiled
        .render_captured_to(ctx.to_minijinja(), &mut out)
        .map_err(|e| convert_error(&e, ctx, template))?;
    // minijinja writes whole strings, so the bytes are UTF-8.
    Ok(String::from_utf8_lossy(&out.out).into_owned())
}

/// The expression of a template that is exactly one `{{ … }}`, with its offset.
#[must_use]
pub(crate) fn single_expression(template: &str) -> Option<(&str, usize)> {
    let lead = template.len() - template.trim_start().len();
    let t = template.trim();
    let inner = t.strip_prefix("{{")?.strip_suffix("}}")?;
    if inner.contains("{{") || inner.contains("}}") || inner.contains("{%") || inner.contains("{#")
    {
        return None;
    }
    let inner_trimmed = inner.trim_start_matches('-').trim_end_matches('-');
    let offset = lead + 2 + (inner.len() - inner.trim_start_matches('-').len());
    Some((inner_trimmed, offset))
}

/// Evaluate one expression; unlike in a template, strict mode lets a bare
/// undefined result through, so it is caught here and named.
fn eval_expression(expr: &str, ctx: &Context) -> Result<minijinja::Value, TemplateError> {
    let env = fueled(ctx.fuel);
    let compiled = env
        .compile_expression(expr)
        .map_err(|e| convert_error(&e, ctx, expr))?;
    let value = compiled
        .eval(ctx.to_minijinja())
        .map_err(|e| convert_error(&e, ctx, expr))?;
    if !value.is_undefined() {
        return Ok(value);
    }
    let mut names: Vec<String> = compiled.undeclared_variables(true).into_iter().collect();
    names.sort();
    let missing = names.into_iter().find(|n| ctx.lookup(n).is_none());
    Err(match missing {
        Some(path) => TemplateError::undefined(&path, ctx, find_path(expr, &path, None)),
        None => TemplateError {
            message: "the expression is undefined".into(),
            hint: None,
            range: None,
        },
    })
}

/// Move an error's range by `offset` bytes (from an expression into its template).
fn shifted(offset: usize) -> impl Fn(TemplateError) -> TemplateError {
    move |mut e| {
        e.range = e.range.map(|r| r.start + offset..r.end + offset);
        e
    }
}

/// Render `template` to a value: a template that is one `{{ expression }}`
/// keeps the expression's type (a list stays a list); anything else renders
/// to a string.
pub fn render_value_str(template: &str, ctx: &Context) -> Result<Value, TemplateError> {
    let Some((expr, offset)) = single_expression(template) else {
        return render_str(template, ctx).map(Value::String);
    };
    let value = eval_expression(expr, ctx).map_err(shifted(offset))?;
    serde_json::to_value(&value).map_err(|e| TemplateError {
        message: format!("template error: cannot use the value: {e}"),
        hint: None,
        range: None,
    })
}

/// Evaluate a condition: a bare expression (`steps.a.exit_code == 0`) or
/// one `{{ … }}` block; `true`/`false` literally.
pub fn eval_bool_str(expr: &str, ctx: &Context) -> Result<bool, TemplateError> {
    match expr.trim() {
        "true" => return Ok(true),
        "false" => return Ok(false),
        _ => {}
    }
    let (expr, offset) = single_expression(expr).unwrap_or((expr, 0));
    let value = eval_expression(expr, ctx).map_err(shifted(offset))?;
    Ok(value.is_true())
}
