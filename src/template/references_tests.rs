use super::*;

/// Each reference as `path@start` (`!` marks a guarded one).
fn refs(text: &str) -> Vec<String> {
    refs_as(text, Syntax::Template)
}

fn refs_as(text: &str, syntax: Syntax) -> Vec<String> {
    references(text, syntax)
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|r| {
            let last = r.path.len() - 1;
            let at = if r.located {
                assert_eq!(
                    &text[r.range(0).start..r.range(0).end],
                    r.path[0].name,
                    "{text}"
                );
                r.range(last).start.to_string()
            } else {
                "?".into()
            };
            format!("{}@{at}{}", r.text(last), if r.guarded { "!" } else { "" })
        })
        .collect()
}

#[test]
fn paths_in_expressions_and_blocks() {
    assert_eq!(refs("echo {{ vars.nope }}"), ["vars.nope@8"]);
    assert_eq!(
        refs("{{ steps.grade.exit_code == 0 }} {{ matrix.student|upper }}"),
        ["steps.grade.exit_code@3", "matrix.student@36"]
    );
    assert_eq!(
        refs("{% if job.id %}{{ env.HOME }}{% else %}x{% endif %}"),
        ["job.id@6", "env.HOME@18"]
    );
    assert_eq!(
        refs(r#"{{ steps["run-tests"].outputs.k }}"#),
        [r#"steps["run-tests"].outputs.k@3"#]
    );
    assert_eq!(refs("{{ vars.x[0].y }}"), ["vars.x@3"]);
    assert_eq!(refs("{{ vars.s.upper() }}"), ["vars.s@3"]);
    assert_eq!(refs("{{ nope }}"), ["nope@3"]);
    assert_eq!(refs("no template at all"), Vec::<String>::new());
}

#[test]
fn bound_names_globals_filters_and_tests_are_not_variables() {
    assert_eq!(
        refs("{% for x in vars.xs %}{{ x }} {{ loop.index }}{% endfor %}"),
        ["vars.xs@12"]
    );
    assert_eq!(
        refs("{% for k, v in vars.m | items %}{{ k }}={{ v.a }}{% endfor %}"),
        ["vars.m@15"]
    );
    assert_eq!(
        refs("{% set n = vars.a %}{{ n }}{% set b %}x{% endset %}{{ b }}"),
        ["vars.a@11"]
    );
    assert_eq!(
        refs("{% with y = 1 %}{{ y }}{% endwith %}{{ range(3) | join }}"),
        Vec::<String>::new()
    );
    assert_eq!(
        refs("{{ vars.n is divisibleby(3) }} {{ vars.l | join(sep) }}"),
        ["vars.n@3", "vars.l@34", "sep@48"]
    );
    assert_eq!(
        refs("{{ dict(a=vars.b) }} {{ 'vars.no' }} {# vars.no #}"),
        ["vars.b@10"]
    );
    assert_eq!(
        refs("{% raw %}{{ vars.no }}{% endraw %}{{ vars.yes }}"),
        ["vars.yes@37"]
    );
    assert_eq!(
        refs("{{- vars.a -}}{%- if vars.b -%}{%+ endif +%}{{ {'a': {'b': vars.c}} }}"),
        ["vars.a@4", "vars.b@21", "vars.c@59"]
    );
}

#[test]
fn guards() {
    assert_eq!(
        refs("{% if vars.x is defined %}{{ vars.x }}{% endif %}"),
        ["vars.x@6!", "vars.x@29"]
    );
    assert_eq!(
        refs("{{ vars.y | default('a') }}{{ vars.z is not undefined }}{{ vars.w|d }}"),
        ["vars.y@3!", "vars.z@30!", "vars.w@59!"]
    );
    assert_eq!(refs("{{ vars.v is string }}"), ["vars.v@3"]);
}

#[test]
fn bare_expressions() {
    assert_eq!(
        refs_as(
            "steps.a.exit_code == 0 and matrix.os in ['x']",
            Syntax::Expression
        ),
        ["steps.a.exit_code@0", "matrix.os@27"]
    );
    assert_eq!(refs_as("true", Syntax::Expression), Vec::<String>::new());
}

#[test]
fn syntax_errors() {
    let e = references("x {{ vars.a ", Syntax::Template).unwrap_err();
    assert!(e.message.starts_with("template syntax error"), "{e}");
    let e = references("steps.a ==", Syntax::Expression).unwrap_err();
    assert!(e.message.starts_with("template syntax error"), "{e}");
}

#[test]
fn path_texts() {
    assert_eq!(
        path_text(["steps", "run-tests", "status"].into_iter()),
        r#"steps["run-tests"].status"#
    );
    assert_eq!(path_text(["vars", "_a1"].into_iter()), "vars._a1");
}
