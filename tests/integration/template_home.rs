//! Templates have one home (docs/architecture.md, "Manifest and plan"):
//! only `src/template/` speaks minijinja or builds a template context from
//! its parts. Everything else asks it for one (`Context::for_job`,
//! `for_job_name`, `for_instance`, `for_recipe`) and fills in finished
//! steps (`set_step`, `set_instances`).

use crate::common::source_files;
use crate::layers::code_only;

/// What building a context (or rendering without the template layer)
/// looks like in code: the engine itself, and the raw constructors and
/// setters of `template::Context`.
const BUILDS_A_CONTEXT: [&str; 10] = [
    "minijinja",
    "Context::new(",
    "Context::default(",
    ".with_vars(",
    ".with_env(",
    ".with_job(",
    ".with_matrix(",
    ".with_root(",
    ".with_limits(",
    ".set_step_value(",
];

/// Every place in `files` outside `src/template/` that builds a context,
/// as `file:line: pattern`. Comments and string literals do not count.
fn outside_the_home(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (rel, text) in files {
        if rel.starts_with("src/template/") {
            continue;
        }
        for (n, line) in code_only(text).lines().enumerate() {
            for pattern in BUILDS_A_CONTEXT {
                if has_whole(line, pattern) {
                    out.push(format!("{rel}:{}: `{pattern}`", n + 1));
                }
            }
        }
    }
    out
}

/// Whether `pattern` is in `line` not as the tail of a longer name
/// (`SecurityContext::default(` is not `Context::default(`).
fn has_whole(line: &str, pattern: &str) -> bool {
    line.match_indices(pattern).any(|(at, _)| {
        pattern.starts_with('.')
            || !line[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn only_the_template_layer_builds_template_contexts() {
    let files = source_files("src", "rs");
    let bad = outside_the_home(&files);
    assert!(
        bad.is_empty(),
        "template contexts built outside src/template/ (add a builder to src/template/scope.rs and call it):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_sees_a_context_built_elsewhere() {
    let files = vec![
        (
            "src/plan/x.rs".to_string(),
            "// Context::new() in a comment\nlet s = \".with_vars(\";\nlet c = Context::new()\n    .with_vars(&v);\n".to_string(),
        ),
        ("src/job/y.rs".to_string(), "use minijinja::Environment;\n".to_string()),
        (
            "src/template/scope.rs".to_string(),
            "Context::new().with_vars(&v)".to_string(),
        ),
        (
            "src/job/z.rs".to_string(),
            "let c = Context::for_job(&l, &v, &e, n, id).for_instance(&m);".to_string(),
        ),
        (
            "src/backend/k.rs".to_string(),
            "let s = SecurityContext::default();\nlet c = template::Context::default();".to_string(),
        ),
    ];
    assert_eq!(
        outside_the_home(&files),
        vec![
            "src/plan/x.rs:3: `Context::new(`".to_string(),
            "src/plan/x.rs:4: `.with_vars(`".to_string(),
            "src/job/y.rs:1: `minijinja`".to_string(),
            "src/backend/k.rs:2: `Context::default(`".to_string(),
        ]
    );
}
