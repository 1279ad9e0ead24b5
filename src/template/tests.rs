use indexmap::IndexMap;
use serde_json::{json, Value};

use super::*;
use crate::diag::{Source, Span};
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
            status: ResultStatus::Failed,
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
        status: ResultStatus::Success,
        exit_code: Some(0),
        ..StepResult::default()
    };
    assert_eq!(
        serde_json::to_value(&run).unwrap(),
        json!({"status": "success", "exit_code": 0, "stdout": "", "stderr": "", "outputs": {}})
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
        json!({"status": "success", "exit_code": 0, "stdout": "", "stderr": "", "outputs": {},
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
    let text = "name: \"grade-{{ vars.nope }}\"\nrun: |\n  echo 1\n  echo {{ vars.studnets }}\n";
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
