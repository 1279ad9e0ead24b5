//! `run.stdin` and `run.protocol`: their forms, and their mistakes at
//! their `line:col`.

use std::path::Path;

use super::*;

fn load(format: Format, text: &str) -> Result<Manifest, ManifestError> {
    let path = match format {
        Format::Yaml => "job.yaml",
        Format::Kdl => "job.kdl",
    };
    parse(Path::new(path), text, format, &LoadOptions::default())
}

fn run_of(m: &Manifest, step: &str) -> RunAction {
    match &m.steps[step].action {
        Action::Run(r) => r.clone(),
        other => panic!("not a run: {other:?}"),
    }
}

#[test]
fn stdin_is_text_or_a_file_and_protocol_is_ndjson() {
    let yaml = load(
        Format::Yaml,
        "version: 1\nsandboxes: {s: {}}\nsteps:\n  \
         a: {run: {cmd: cat, stdin: 'hi {{ vars.x }}', protocol: ndjson}}\n  \
         b: {run: {cmd: cat, stdin: {file: in/task.json}}}\n  \
         c: {run: cat}\nvars: {x: 1}\n",
    )
    .unwrap();
    let first = run_of(&yaml, "a");
    assert!(matches!(&first.stdin, Some(StdinDecl::Text(t)) if t.value == "hi {{ vars.x }}"));
    assert_eq!(first.protocol, Some(Protocol::Ndjson));
    let second = run_of(&yaml, "b");
    assert!(matches!(&second.stdin, Some(StdinDecl::File(f)) if f.value == "in/task.json"));
    assert_eq!(second.protocol, None);
    let plain = run_of(&yaml, "c");
    assert_eq!((plain.stdin, plain.protocol), (None, None));

    let in_kdl = load(
        Format::Kdl,
        "version 1\nsandbox \"s\"\nstep \"a\" sandbox=\"s\" {\n    \
         run \"cat\" stdin=\"hi\" protocol=\"ndjson\"\n}\n\
         step \"b\" sandbox=\"s\" {\n    run {\n        cmd \"cat\"\n        \
         stdin { file \"in/task.json\"; }\n    }\n}\n",
    )
    .unwrap();
    assert!(matches!(&run_of(&in_kdl, "a").stdin, Some(StdinDecl::Text(t)) if t.value == "hi"));
    assert_eq!(run_of(&in_kdl, "a").protocol, Some(Protocol::Ndjson));
    assert!(
        matches!(&run_of(&in_kdl, "b").stdin, Some(StdinDecl::File(f)) if f.value == "in/task.json")
    );
}

#[test]
fn stdin_and_protocol_mistakes_point_at_their_value() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "run: {cmd: cat, protocol: ndjsn}",
            "5:31",
            "unknown protocol `ndjsn`",
            "ndjson",
        ),
        (
            "run: {cmd: cat, stdin: [a]}",
            "5:28",
            "`stdin` must be text or a map with `file`, found a list",
            "",
        ),
        (
            "run: {cmd: cat, stdin: {path: x}}",
            "5:28",
            "`stdin` of step `a` has no `file`",
            "stdin: { file: PATH }",
        ),
        (
            "stdin: x\n    run: cat",
            "5:5",
            "`stdin` is not a key of step `a`",
            "`stdin` belongs inside `run`",
        ),
    ];
    for &(body, pos, message, hint) in cases {
        let text = format!("version: 1\nsandboxes: {{s: {{}}}}\nsteps:\n  a:\n    {body}\n");
        let err = load(Format::Yaml, &text).expect_err(body);
        let all = err.diagnostics();
        let d = all
            .iter()
            .find(|d| d.message.starts_with(message))
            .unwrap_or_else(|| panic!("{body}: no `{message}` in {all:#?}"));
        assert_eq!(d.position(), pos, "{body}: {}", d.message);
        if !hint.is_empty() {
            assert!(d.hint.as_deref().is_some_and(|h| h.contains(hint)), "{d:?}");
        }
    }
}
