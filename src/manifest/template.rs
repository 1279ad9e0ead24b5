//! Templates: every string value of a manifest is a minijinja template.
//!
//! Undefined variables are errors (strict mode) that name the variable and
//! suggest the closest defined one: a typo in `{{ vars.studnets }}` must
//! not quietly become an empty string inside a shell command. Strings with
//! no `{{`, `{%` or `{#` skip the engine entirely, which keeps planning
//! large manifests fast.
//!
//! The context has five roots: `vars`, `matrix`, `job` (`name`, `id`),
//! `env` (only names the manifest lists, or passed explicitly) and `steps`
//! (`steps.<id>.exit_code`, `.stdout`, `.outputs.<key>`, `.status`, and for
//! `python` steps `.vars.<name>`, `.result` and `.error`, filled by the
//! runner as steps finish).
//!
//! Step templates render late, but the plan checks what they read
//! first, with the crate-private `manifest::references`.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use indexmap::IndexMap;
use minijinja::{Environment, ErrorKind, UndefinedBehavior};
use serde::Serialize;
use serde_json::{Map, Value};

use super::limits::{Limit, Limits};
use super::sandbox_decl::Tpl;
use crate::diag::suggest::did_you_mean;
use crate::diag::Diagnostic;
use crate::diag::{Source, Span};

/// True when `s` holds template syntax (`{{`, `{%` or `{#`).
#[must_use]
pub fn is_template(s: &str) -> bool {
    s.contains("{{") || s.contains("{%") || s.contains("{#")
}

/// What a template can read, and how much work it may do.
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    root: Map<String, Value>,
    /// Instructions one render may run (minijinja's fuel).
    fuel: u64,
    /// Bytes one render may produce.
    max_output: usize,
}

impl Default for Context {
    fn default() -> Self {
        let mut root = Map::new();
        for key in ["vars", "matrix", "job", "env", "steps"] {
            root.insert(key.to_string(), Value::Object(Map::new()));
        }
        let limits = Limits::default();
        Context {
            root,
            fuel: limits.get(Limit::TemplateFuel),
            max_output: limits.get_usize(Limit::TemplateOutput),
        }
    }
}

/// The outcome of a finished step, as templates see it under `steps.<id>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StepResult {
    /// `success`, `failed`, `timed_out`, `skipped`, ...
    pub status: String,
    /// Exit code of a `run` (0 for other actions that succeeded).
    pub exit_code: Option<i64>,
    /// Captured standard output of a `run` (as capped).
    pub stdout: String,
    /// Named outputs the step produced.
    pub outputs: IndexMap<String, String>,
    /// What a `python` step adds (`vars`, `result`, `error`), flattened
    /// into `steps.<id>`; `None` for other actions, which then serialize
    /// exactly as before.
    #[serde(flatten)]
    pub python: Option<PythonResult>,
}

/// The part of a `python` step's result that other actions do not have.
///
/// `result` and `error` are serialized as null when absent (not left out),
/// so `{% if steps.x.error %}` works without `is defined` even though
/// templates treat undefined names as errors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PythonResult {
    /// Variables the call created or changed: name → short summary
    /// (type and a truncated repr), in the order the kernel reports them.
    pub vars: IndexMap<String, String>,
    /// `repr` of the value of the code's last expression, if it ends with one
    /// that is not `None`.
    pub result: Option<String>,
    /// The traceback, when the code raised.
    pub error: Option<String>,
}

impl Context {
    /// A context with empty roots.
    #[must_use]
    pub fn new() -> Context {
        Context::default()
    }

    /// Use the template limits of `limits` (fuel and output size).
    #[must_use]
    pub fn with_limits(mut self, limits: &Limits) -> Context {
        self.fuel = limits.get(Limit::TemplateFuel);
        self.max_output = limits.get_usize(Limit::TemplateOutput);
        self
    }

    /// Set `vars`.
    #[must_use]
    pub fn with_vars(mut self, vars: &IndexMap<String, Value>) -> Context {
        self.root.insert(
            "vars".into(),
            Value::Object(vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        );
        self
    }

    /// Set `env`.
    #[must_use]
    pub fn with_env(mut self, env: &IndexMap<String, String>) -> Context {
        let map = env
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        self.root.insert("env".into(), Value::Object(map));
        self
    }

    /// Set `job.name` and `job.id`.
    #[must_use]
    pub fn with_job(mut self, name: &str, id: &str) -> Context {
        let mut job = Map::new();
        job.insert("name".into(), Value::String(name.into()));
        job.insert("id".into(), Value::String(id.into()));
        self.root.insert("job".into(), Value::Object(job));
        self
    }

    /// Set `matrix` (one combination).
    #[must_use]
    pub fn with_matrix(mut self, matrix: &IndexMap<String, Value>) -> Context {
        self.root.insert(
            "matrix".into(),
            Value::Object(matrix.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        );
        self
    }

    /// Set another root (a recipe's `inputs`).
    #[must_use]
    pub fn with_root(mut self, name: &str, value: Value) -> Context {
        self.root.insert(name.to_string(), value);
        self
    }

    /// Record a finished step under `steps.<id>`.
    pub fn set_step(&mut self, id: &str, result: &StepResult) {
        let value = serde_json::to_value(result).unwrap_or(Value::Null);
        self.set_step_value(id, value);
    }

    /// Put any value under `steps.<id>` (e.g. a fan-in's list of results).
    pub fn set_step_value(&mut self, id: &str, value: Value) {
        if let Some(Value::Object(steps)) = self.root.get_mut("steps") {
            steps.insert(id.to_string(), value);
        }
    }

    /// The whole context as JSON.
    #[must_use]
    pub fn as_json(&self) -> &Map<String, Value> {
        &self.root
    }

    fn to_minijinja(&self) -> minijinja::Value {
        minijinja::Value::from(minijinja::value::Serde(&self.root))
    }

    /// The value at a dotted path, if there is one.
    fn lookup(&self, path: &str) -> Option<&Value> {
        let mut parts = path.split('.');
        let mut cur = self.root.get(parts.next()?)?;
        for p in parts {
            cur = cur.as_object()?.get(p)?;
        }
        Some(cur)
    }

    /// Why `path` (`vars.x.y`) is undefined, and what to do.
    fn undefined_hint(&self, path: &str) -> Option<String> {
        let parts: Vec<&str> = path.split('.').collect();
        let mut level = &self.root;
        for (i, part) in parts.iter().enumerate() {
            let here = parts[..i].join(".");
            match level.get(*part) {
                Some(Value::Object(next)) => level = next,
                Some(other) if i + 1 < parts.len() => {
                    let kind = match other {
                        Value::Array(_) => "a list",
                        Value::String(_) => "a string",
                        Value::Null => "null",
                        _ => "a scalar",
                    };
                    let full = parts[..=i].join(".");
                    return Some(format!("`{full}` is {kind}, it has no `{}`", parts[i + 1]));
                }
                Some(_) => return None,
                None => {
                    let keys: Vec<&str> = level.keys().map(String::as_str).collect();
                    if let Some(s) = did_you_mean(part, keys.iter().copied()) {
                        let fixed = if here.is_empty() {
                            s.to_string()
                        } else {
                            format!("{here}.{s}")
                        };
                        return Some(format!("did you mean `{fixed}`?"));
                    }
                    return Some(match (i, parts[0]) {
                        (0, _) => "templates can read `vars`, `matrix`, `job`, `env` and `steps`".into(),
                        (1, "vars") => format!("define `{part}` under `vars:`, or pass `--var {part}=VALUE`"),
                        (1, "matrix") if keys.is_empty() => "`matrix` is only set for sandboxes that declare a `matrix`".into(),
                        (1, "env") => format!("list `{part}` under `env:` to read it from the host environment (and check that it is set)"),
                        (1, "steps") => format!("`steps.{part}` is set once step `{part}` has finished: add it to `needs`"),
                        _ if keys.is_empty() => format!("`{here}` is empty"),
                        _ => format!("`{here}` has: {}", keys.join(", ")),
                    });
                }
            }
        }
        None
    }
}

pub(crate) fn environment() -> &'static Environment<'static> {
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

/// A template that failed, located inside the template's own text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// What went wrong.
    pub message: String,
    /// What to do.
    pub hint: Option<String>,
    /// Byte range in the template text, when known.
    pub range: Option<Range<usize>>,
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " (hint: {h})")?;
        }
        Ok(())
    }
}

impl std::error::Error for TemplateError {}

/// Where `path` is written in `text`: the occurrence nearest `near`.
fn find_path(text: &str, path: &str, near: Option<&Range<usize>>) -> Option<Range<usize>> {
    let target = near.map_or(0, |r| r.start);
    text.match_indices(path)
        .map(|(i, _)| i..i + path.len())
        .min_by_key(|r| r.start.abs_diff(target))
}

pub(crate) fn convert_error(e: &minijinja::Error, ctx: &Context, text: &str) -> TemplateError {
    let detail = e.detail().unwrap_or("").to_string();
    let range = e.range();
    match e.kind() {
        ErrorKind::OutOfFuel => TemplateError {
            message: format!(
                "the template does more work than the `template_fuel` limit of {} allows (one unit per instruction or per 64 bytes of data it builds)",
                ctx.fuel
            ),
            hint: Some(Limit::TemplateFuel.how_to_raise()),
            range,
        },
        ErrorKind::WriteFailure => TemplateError {
            message: format!(
                "the template renders more than {} bytes (the `template_output` limit)",
                ctx.max_output
            ),
            hint: Some(Limit::TemplateOutput.how_to_raise()),
            range: None,
        },
        ErrorKind::UndefinedError => {
            let path = detail.split('`').nth(1).map(str::to_string);
            match path {
                Some(path) => TemplateError {
                    hint: ctx.undefined_hint(&path),
                    range: find_path(text, &path, range.as_ref()).or(range),
                    message: format!("undefined variable `{path}`"),
                },
                None => TemplateError {
                    message: format!(
                        "undefined value in template{}",
                        if detail.is_empty() {
                            String::new()
                        } else {
                            format!(": {detail}")
                        }
                    ),
                    hint: None,
                    range,
                },
            }
        }
        ErrorKind::SyntaxError => TemplateError {
            message: format!("template syntax error: {detail}"),
            hint: Some(
                "templates are minijinja (Jinja2): `{{ expression }}`, `{% if … %}…{% endif %}`"
                    .into(),
            ),
            range,
        },
        _ => TemplateError {
            message: format!(
                "template error: {}",
                if detail.is_empty() {
                    e.kind().to_string()
                } else {
                    detail
                }
            ),
            hint: None,
            range,
        },
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
        Some(path) => TemplateError {
            hint: ctx.undefined_hint(&path),
            range: find_path(expr, &path, None),
            message: format!("undefined variable `{path}`"),
        },
        None => TemplateError {
            message: "the expression is undefined".into(),
            hint: None,
            range: None,
        },
    })
}

/// Render `template` to a value: a template that is one `{{ expression }}`
/// keeps the expression's type (a list stays a list); anything else renders
/// to a string.
pub fn render_value_str(template: &str, ctx: &Context) -> Result<Value, TemplateError> {
    let Some((expr, offset)) = single_expression(template) else {
        return render_str(template, ctx).map(Value::String);
    };
    let shift = |mut e: TemplateError| {
        e.range = e.range.map(|r| r.start + offset..r.end + offset);
        e
    };
    let value = eval_expression(expr, ctx).map_err(shift)?;
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
    let shift = |mut e: TemplateError| {
        e.range = e.range.map(|r| r.start + offset..r.end + offset);
        e
    };
    let value = eval_expression(expr, ctx).map_err(shift)?;
    Ok(value.is_true())
}

/// Render a manifest string; errors point into the manifest.
pub fn render(tpl: &Tpl, ctx: &Context, source: &Source) -> Result<String, Diagnostic> {
    render_str(&tpl.value, ctx).map_err(|e| locate(&e, tpl, source))
}

/// Render a manifest string to a value (see [`render_value_str`]).
pub fn render_value(tpl: &Tpl, ctx: &Context, source: &Source) -> Result<Value, Diagnostic> {
    render_value_str(&tpl.value, ctx).map_err(|e| locate(&e, tpl, source))
}

/// Evaluate a manifest condition (`if:`).
pub fn eval_bool(tpl: &Tpl, ctx: &Context, source: &Source) -> Result<bool, Diagnostic> {
    eval_bool_str(&tpl.value, ctx).map_err(|e| locate(&e, tpl, source))
}

/// Turn a template error into a diagnostic at the failing expression when
/// the manifest text shows it verbatim, else at the start of the string.
#[must_use]
pub fn locate(e: &TemplateError, tpl: &Tpl, source: &Source) -> Diagnostic {
    let span = e
        .range
        .as_ref()
        .and_then(|r| {
            find_in_source(&tpl.value, r, tpl.span, source)
                .or_else(|| find_snippet(&tpl.value, r, tpl.span, source))
        })
        .unwrap_or(tpl.span);
    Diagnostic::new(source, span, e.message.clone()).maybe_hint(e.hint.clone())
}

/// Where the text of `range` is written after `span.start`, when the
/// template's lines are not the manifest's (a folded YAML block, a string
/// with escapes): the same occurrence of the same text, not far away.
fn find_snippet(template: &str, range: &Range<usize>, span: Span, source: &Source) -> Option<Span> {
    let snippet = template.get(range.clone())?;
    if snippet.trim().is_empty() || snippet.contains('\n') {
        return None;
    }
    let nth = template[..range.start].matches(snippet).count();
    let text = source.text();
    // Folding and escapes add indentation and backslashes, not much more.
    let end = text.len().min(span.start + 2 * template.len() + 256);
    let window = text.get(span.start..end)?;
    let (at, _) = window.match_indices(snippet).nth(nth)?;
    let start = span.start + at;
    Some(Span::new(start, start + snippet.len()))
}

/// Map a byte range of the template text to the manifest text, line by line.
fn find_in_source(
    template: &str,
    range: &Range<usize>,
    span: Span,
    source: &Source,
) -> Option<Span> {
    let r_start = range.start.min(template.len());
    let line_no = template[..r_start].matches('\n').count();
    let line_start = template[..r_start].rfind('\n').map_or(0, |i| i + 1);
    let line_text = template[line_start..].split('\n').next()?;
    let col = r_start - line_start;
    let len = (range.end.min(line_start + line_text.len()))
        .saturating_sub(r_start)
        .max(1);
    // The source line holding that template line.
    let (first_line, _) = source.line_col(span.start);
    let src_line_offset = source.offset_of(first_line + line_no, 0);
    let src_line = source.line_text(src_line_offset);
    let search_from = if line_no == 0 {
        span.start - src_line_offset
    } else {
        0
    };
    let found = src_line.get(search_from..)?.find(line_text)? + search_from;
    if line_text.is_empty() {
        return None;
    }
    let start = src_line_offset + found + col;
    Some(Span::new(start, start + len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> Context {
        let vars: IndexMap<String, Value> = [
            ("students".to_string(), json!(["alice", "bob"])),
            ("assignment".to_string(), json!("fizzbuzz")),
        ]
        .into_iter()
        .collect();
        Context::new().with_vars(&vars).with_job("grade", "j1")
    }

    #[test]
    fn renders_strings_and_keeps_plain_ones() {
        assert_eq!(
            render_str("grade-{{ vars.assignment }}", &ctx()).unwrap(),
            "grade-fizzbuzz"
        );
        assert_eq!(render_str("no template", &ctx()).unwrap(), "no template");
        assert_eq!(render_str("echo hi\n", &ctx()).unwrap(), "echo hi\n");
        assert_eq!(render_str("{{ job.id }}\n", &ctx()).unwrap(), "j1\n");
        assert_eq!(
            render_str("{{ vars.students | join(' ') }}", &ctx()).unwrap(),
            "alice bob"
        );
    }

    #[test]
    fn one_expression_keeps_its_type() {
        assert_eq!(
            render_value_str("{{ vars.students }}", &ctx()).unwrap(),
            json!(["alice", "bob"])
        );
        assert_eq!(
            render_value_str(" {{- vars.students -}} ", &ctx()).unwrap(),
            json!(["alice", "bob"])
        );
        assert_eq!(render_value_str("{{ 1 + 2 }}", &ctx()).unwrap(), json!(3));
        assert_eq!(render_value_str("x{{ 1 }}", &ctx()).unwrap(), json!("x1"));
        assert_eq!(render_value_str("plain", &ctx()).unwrap(), json!("plain"));
    }

    #[test]
    fn undefined_variables_are_named_with_a_suggestion() {
        let e = render_str("x {{ vars.studnets }}", &ctx()).unwrap_err();
        assert_eq!(e.message, "undefined variable `vars.studnets`");
        assert_eq!(e.hint.as_deref(), Some("did you mean `vars.students`?"));
        assert_eq!(e.range, Some(5..18));
        let e = render_value_str("{{ matrix.student }}", &ctx()).unwrap_err();
        assert_eq!(e.message, "undefined variable `matrix.student`");
        assert!(e.hint.unwrap().contains("only set for sandboxes"));
        assert_eq!(e.range, Some(3..17));
        let e = render_str("{{ steps.grade.exit_code }}", &ctx()).unwrap_err();
        assert!(e.hint.unwrap().contains("add it to `needs`"));
        let e = render_str("{{ env.HOME }}", &ctx()).unwrap_err();
        assert!(e.hint.unwrap().contains("under `env:`"));
        let e = render_str("{{ nope }}", &ctx()).unwrap_err();
        assert!(e.hint.unwrap().contains("`vars`, `matrix`"));
        let e = render_str("{{ vars.students.first }}", &ctx()).unwrap_err();
        assert_eq!(
            e.hint.as_deref(),
            Some("`vars.students` is a list, it has no `first`")
        );
    }

    #[test]
    fn conditions() {
        let mut c = ctx();
        c.set_step(
            "grade",
            &StepResult {
                status: "failed".into(),
                exit_code: Some(1),
                ..StepResult::default()
            },
        );
        assert!(!eval_bool_str("steps.grade.exit_code == 0", &c).unwrap());
        assert!(eval_bool_str("{{ steps.grade.exit_code != 0 }}", &c).unwrap());
        assert!(eval_bool_str("true", &c).unwrap());
        assert!(!eval_bool_str("false", &c).unwrap());
        let e = eval_bool_str("steps.test.exit_code == 0", &c).unwrap_err();
        assert_eq!(e.message, "undefined variable `steps.test`");
        assert_eq!(
            e.hint.as_deref(),
            Some("`steps.test` is set once step `test` has finished: add it to `needs`")
        );
    }

    #[test]
    fn python_fields_appear_only_for_python_steps() {
        let run = StepResult {
            status: "success".into(),
            exit_code: Some(0),
            ..StepResult::default()
        };
        assert_eq!(
            serde_json::to_value(&run).unwrap(),
            json!({"status": "success", "exit_code": 0, "stdout": "", "outputs": {}})
        );
        let python = StepResult {
            python: Some(PythonResult {
                vars: [("x".to_string(), "int: 41".to_string())].into(),
                result: Some("41".into()),
                error: None,
            }),
            ..run
        };
        assert_eq!(
            serde_json::to_value(&python).unwrap(),
            json!({"status": "success", "exit_code": 0, "stdout": "", "outputs": {},
                   "vars": {"x": "int: 41"}, "result": "41", "error": null})
        );
        let mut c = ctx();
        c.set_step("calc", &python);
        assert_eq!(
            render_str(
                "{{ steps.calc.vars.x }} {{ steps.calc.result }}{% if steps.calc.error %}!{% endif %}",
                &c
            )
            .unwrap(),
            "int: 41 41"
        );
    }

    #[test]
    fn syntax_errors_are_reported() {
        let e = render_str("{{ x ", &ctx()).unwrap_err();
        assert!(
            e.message.starts_with("template syntax error"),
            "{}",
            e.message
        );
    }

    #[test]
    fn errors_point_at_the_expression_in_the_file() {
        let text =
            "name: \"grade-{{ vars.nope }}\"\nrun: |\n  echo 1\n  echo {{ vars.studnets }}\n";
        let src = Source::new("j.yaml", text);
        let tpl = Tpl::new("grade-{{ vars.nope }}".into(), Span::new(6, 29));
        let d = render(&tpl, &ctx(), &src).unwrap_err();
        assert_eq!(d.position(), "1:17");
        assert_eq!(d.underline, 9);
        let block_start = text.find("echo 1").unwrap();
        let tpl = Tpl::new(
            "echo 1\necho {{ vars.studnets }}\n".into(),
            Span::new(block_start, block_start + 6),
        );
        let d = render(&tpl, &ctx(), &src).unwrap_err();
        assert_eq!(d.position(), "4:11");
        assert_eq!(d.hint.as_deref(), Some("did you mean `vars.students`?"));
    }
}
