//! Manifest loading: accepted forms, and for each kind of mistake the
//! message, the hint and the exact line:col.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use super::*;

/// A manifest from YAML text, as `job.yaml`; the other test files use it too.
pub(super) fn yaml(text: &str) -> Result<Manifest, ManifestError> {
    parse(
        Path::new("job.yaml"),
        text,
        Format::Yaml,
        &LoadOptions::default(),
    )
}

fn kdl(text: &str) -> Result<Manifest, ManifestError> {
    parse(
        Path::new("job.kdl"),
        text,
        Format::Kdl,
        &LoadOptions::default(),
    )
}

fn diags(r: Result<Manifest, ManifestError>) -> Vec<Diagnostic> {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.diagnostics().to_vec(),
    }
}

/// The only diagnostic; checks its position and message, returns it for the hint.
#[track_caller]
fn only(r: Result<Manifest, ManifestError>, pos: &str, message: &str) -> Diagnostic {
    let d = diags(r);
    assert_eq!(d.len(), 1, "expected one diagnostic, got {d:#?}");
    assert_eq!(d[0].message, message);
    assert_eq!(d[0].position(), pos, "position of `{message}`");
    d[0].clone()
}

/// What a mistake's hint must say.
#[derive(Clone, Copy, Debug)]
enum Hint {
    /// Not checked.
    Any,
    /// There is none.
    Absent,
    /// Exactly this.
    Is(&'static str),
    /// Some hint containing this.
    Has(&'static str),
}
use Hint::{Absent, Any, Has, Is};

/// One mistake: the input, then where the only diagnostic points, its
/// message and its hint.
type Case = (&'static str, &'static str, &'static str, Hint);

/// Each case's input, loaded by `load`, gives exactly one diagnostic: at
/// that `line:col`, with that message and hint.
#[track_caller]
fn check(load: impl Fn(&str) -> Result<Manifest, ManifestError>, cases: &[Case]) {
    for &(input, pos, message, hint) in cases {
        let d = only(load(input), pos, message);
        let h = d.hint.as_deref();
        match hint {
            Any => {}
            Absent => assert_eq!(h, None, "hint of `{message}`"),
            Is(want) => assert_eq!(h, Some(want), "hint of `{message}`"),
            Has(part) => assert!(
                h.is_some_and(|h| h.contains(part)),
                "hint of `{message}` should contain {part:?}: {h:?}"
            ),
        }
    }
}

/// A manifest whose step `a` is `body` (on sandbox `s`).
fn yaml_step(body: &str) -> String {
    format!("version: 1\nsandboxes: {{s: {{}}}}\nsteps:\n  a:\n    {body}\n")
}

/// The same in KDL: `body` is step `a`'s child node.
fn kdl_step(body: &str) -> String {
    format!("version 1\nsandbox \"s\"\nstep \"a\" {{\n    {body}\n}}\n")
}

/// The grading job; the plan's tests load the same file.
const GRADING: &str = include_str!("testdata/grading.yaml");

#[test]
fn loads_the_architecture_example() {
    let m = yaml(GRADING).unwrap();
    assert_eq!(m.version, 1);
    assert_eq!(
        m.name.as_ref().unwrap().value,
        "grade-{{ vars.assignment }}"
    );
    assert_eq!(m.vars["students"], json!(["alice", "bob", "carol"]));
    assert_eq!(m.env_names[0].value, "CI");
    let sb = &m.sandboxes["grader"];
    assert!(matches!(&sb.image, ImageSource::Profile(p) if p.value == "minimal"));
    assert_eq!(sb.mem.as_ref().unwrap().value, "512m");
    assert_eq!(sb.cpu.as_ref().unwrap().value, 100);
    assert_eq!(sb.network, Some(false));
    assert_eq!(sb.env["N"].value, "3");
    assert!(
        matches!(&sb.matrix["student"].value, AxisValues::Template(t) if t.value == "{{ vars.students }}")
    );
    let ids: Vec<&str> = m.steps.keys().map(String::as_str).collect();
    assert_eq!(
        ids,
        ["tests", "code", "grade", "report", "total"],
        "file order is kept"
    );
    let grade = &m.steps["grade"];
    assert_eq!(grade.sandbox.value, "grader");
    let needs: Vec<&str> = grade
        .needs
        .as_ref()
        .unwrap()
        .iter()
        .map(|n| n.value.as_str())
        .collect();
    assert_eq!(needs, ["tests", "code"]);
    assert_eq!(
        grade.timeout.as_ref().unwrap().value,
        Duration::from_mins(1)
    );
    assert!(grade.allow_failure);
    assert!(
        matches!(&grade.action, Action::Run(r) if r.cmd.value == "python3 -m unittest discover -s tests" && r.lang == Interpreter::Sh)
    );
    assert!(m.steps["tests"].needs.is_none());
    assert!(
        matches!(&m.steps["report"].action, Action::Pull(t) if t.dst.as_ref().is_some_and(|d| d.value == "results/{{ matrix.student }}.txt"))
    );
}

#[test]
fn run_map_form_and_step_options() {
    let m = yaml(
        "version: 1\nsandboxes: {s: {}}\nsteps:\n  a:\n    run:\n      cmd: print(1)\n      lang: python\n      max_output: 1m\n      env: {X: '1'}\n      workdir: /tmp\n      user: nobody\n    timeout: 90s\n    retries: 2\n    if: steps.b.exit_code == 0\n    name: first {{ vars.x }}\n  b:\n    needs: a\n    snapshot: img:1\n  c:\n    needs: 'a b'\n    snapshot: {image: img:2}\n",
    )
    .unwrap();
    let a = &m.steps["a"];
    let Action::Run(run) = &a.action else {
        panic!()
    };
    assert_eq!(run.lang, Interpreter::Python);
    assert_eq!(run.max_output, Some(crate::size::ByteSize(1 << 20)));
    assert_eq!(run.env["X"].value, "1");
    assert_eq!(run.workdir.as_ref().unwrap().value, "/tmp");
    assert_eq!(run.user.as_ref().unwrap().value, "nobody");
    assert_eq!(a.timeout.as_ref().unwrap().value, Duration::from_secs(90));
    assert_eq!(a.retries, 2);
    assert_eq!(
        a.condition.as_ref().unwrap().value,
        "steps.b.exit_code == 0"
    );
    assert_eq!(a.sandbox.value, "s", "the only sandbox is the default");
    let b_needs: Vec<&str> = m.steps["b"]
        .needs
        .as_ref()
        .unwrap()
        .iter()
        .map(|n| n.value.as_str())
        .collect();
    assert_eq!(b_needs, ["a"]);
    let c_needs = m.steps["c"].needs.as_ref().unwrap();
    assert_eq!(
        c_needs.iter().map(|n| n.value.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    // Each word of `needs: 'a b'` has its own position.
    let (_, col_b) = m.source.line_col(c_needs[1].span.start);
    assert_eq!(col_b, 15);
    assert!(matches!(&m.steps["c"].action, Action::Snapshot(s) if s.image.value == "img:2"));
}

#[test]
fn durations() {
    for (text, secs) in [
        ("1", 1.0),
        ("1.5", 1.5),
        ("'90s'", 90.0),
        ("2m", 120.0),
        ("500ms", 0.5),
        ("1h", 3600.0),
    ] {
        let m = yaml(&format!(
            "version: 1\nsandboxes: {{s: {{}}}}\nsteps:\n  a: {{run: x, timeout: {text}}}\n"
        ))
        .unwrap();
        assert_eq!(
            m.steps["a"].timeout.as_ref().unwrap().value,
            Duration::from_secs_f64(secs),
            "{text}"
        );
    }
    let d = only(
        yaml("version: 1\nsandboxes: {s: {}}\nsteps:\n  a: {run: x, timeout: 0}\n"),
        "4:24",
        "invalid `timeout`",
    );
    assert!(d.hint.unwrap().contains("90s"));
    only(
        yaml("version: 1\nsandboxes: {s: {}}\nsteps:\n  a: {run: x, timeout: soon}\n"),
        "4:24",
        "invalid `timeout`",
    );
}

#[test]
fn unknown_key_suggests_the_closest() {
    let d = only(
        yaml(
            "version: 1\nsandboxes:\n  g: {}\n  h: {}\nsteps:\n  a:\n    sandboxx: g\n    run: x\n",
        ),
        "7:5",
        "unknown key `sandboxx` in step `a`",
    );
    assert_eq!(d.hint.as_deref(), Some("did you mean `sandbox`?"));
    // The misspelt key is not reported a second time as a missing `sandbox`.
}

#[test]
fn unknown_key_lists_known_ones_when_nothing_is_close() {
    check(
        yaml,
        &[
            ("version: 1\nflavour: x\n", "2:1", "unknown key `flavour` in the manifest", Is("known keys: version, name, vars, env, sandboxes, steps, secrets, cache, limits, project")),
            ("version: 1\nstep: {}\n", "2:1", "unknown key `step` in the manifest", Is("did you mean `steps`?")),
        ],
    );
}

#[test]
fn wrong_types() {
    check(
        yaml,
        &[
            (
                "version: 1\nsandboxes:\n  s:\n    network: 'false'\n",
                "4:14",
                "`network` must be a boolean or `dns-blocked`, found a string",
                Is("write true or false without quotes"),
            ),
            (
                "version: 1\nsandboxes:\n  s:\n    cpu: '100'\n",
                "4:10",
                "`cpu` must be an integer, found a string",
                Is("write the number without quotes"),
            ),
            (
                "version: 1\nsandboxes:\n  s:\n    cpu: 0\n",
                "4:10",
                "`cpu` must be between 1 and 100000, found 0",
                Any,
            ),
            (
                "version: 1\nsandboxes:\n  s:\n    ports: {a: 1}\n",
                "4:12",
                "`ports` must be a string or a list of strings, found a map",
                Any,
            ),
            (
                "version: 1\nsandboxes:\n  s:\n    ports: [8080, '9090:90']\n",
                "4:13",
                "items of `ports` must be strings, found an integer",
                Any,
            ),
            (
                "version: 1\nsandboxes: {s: {}}\nsteps:\n  a: {run: [x]}\n",
                "4:12",
                "`run` must be a command string or a map with `cmd`, found a list",
                Any,
            ),
            (
                "version: 1\nsteps: [a]\n",
                "2:8",
                "`steps` must be a map of step id to step, found a list",
                Any,
            ),
            (
                "version: 1\nsandboxes: {s: {}}\nsteps:\n  a: x\n",
                "4:6",
                "`a` must be a map, found a string",
                Any,
            ),
        ],
    );
}

#[test]
fn exactly_one_action() {
    check(
        yaml,
        &[
            ("version: 1\nsandboxes: {s: {}}\nsteps:\n  a:\n    run: x\n    push: {src: a, dst: /b}\n", "6:5", "step `a` has two actions, `run` and `push`", Has("split it")),
            ("version: 1\nsandboxes: {s: {}}\nsteps:\n  a:\n    timeout: 3\n", "4:3", "step `a` has no action", Has("`run`, `push`, `pull`, `snapshot`, `session`, `python` or `fork`")),
        ],
    );
}

#[test]
fn uses_is_an_action_of_its_own() {
    // Formerly reserved; now a step that uses a recipe does nothing else.
    let d = only(
        yaml("version: 1\nsandboxes: {s: {}}\nsteps:\n  a:\n    run: x\n    uses: r\n"),
        "6:5",
        "step `a` has two actions, `run` and `uses`",
    );
    assert!(d.hint.unwrap().contains("split it"));
    only(
        kdl("version 1\nsandbox \"s\"\nstep \"a\" { uses \"r\"; run \"x\"; }\n"),
        "3:12",
        "step `a` has two actions, `run` and `uses`",
    );
}

#[test]
fn uses_takes_a_name_and_with_values() {
    let m = yaml(
        "version: 1\nsandboxes: {s: {}}\nsteps:\n  fw:\n    uses: stm32\n    with: {src: \"b/{{ vars.x }}\", artifacts: [a.elf]}\n",
    )
    .unwrap();
    let Action::Uses(u) = &m.steps["fw"].action else {
        panic!("not a uses step");
    };
    assert_eq!(u.recipe.value, "stm32");
    assert_eq!(u.with["src"].value, serde_json::json!("b/{{ vars.x }}"));
    assert_eq!(u.with["artifacts"].value, serde_json::json!(["a.elf"]));
}

#[test]
fn with_needs_uses_and_uses_refuses_step_options() {
    check(
        yaml,
        &[
            (
                "version: 1\nsandboxes: {s: {}}\nsteps:\n  a:\n    run: x\n    with: {a: 1}\n",
                "6:5",
                "step `a` has `with` but no `uses`",
                Any,
            ),
            (
                "version: 1\nsandboxes: {s: {}}\nsteps:\n  a:\n    uses: r\n    timeout: 5\n",
                "6:5",
                "`timeout` does not go with `uses` in step `a`",
                Any,
            ),
        ],
    );
}

#[test]
fn a_recipe_file_decodes_inputs_outputs_and_steps() {
    let text = "version: 1\ndescription: d\nprofile: embedded\ninputs:\n  src: {required: true}\n  n: {type: integer, default: 3}\noutputs:\n  size: \"{{ steps.b.outputs.size }}\"\nsteps:\n  b:\n    run: make\n";
    let r = crate::manifest::parse_recipe(Path::new("recipe.yaml"), text, Format::Yaml).unwrap();
    assert_eq!(r.profile.unwrap().value, "embedded");
    assert!(r.inputs["src"].required);
    assert_eq!(r.inputs["n"].ty, crate::manifest::InputType::Integer);
    assert_eq!(r.inputs["n"].default, Some(serde_json::json!(3)));
    assert_eq!(r.outputs["size"].value.value, "{{ steps.b.outputs.size }}");
    assert_eq!(r.steps["b"].sandbox.value, crate::manifest::RECIPE_SANDBOX);
}

#[test]
fn recipe_mistakes_point_into_the_recipe() {
    let bad = "version: 1\ninputs:\n  n: {type: int, default: x}\nsteps:\n  b:\n    sandbox: s\n    run: make\n";
    let Err(ManifestError::Invalid(d)) =
        crate::manifest::parse_recipe(Path::new("r/recipe.yaml"), bad, Format::Yaml)
    else {
        panic!("a bad recipe decoded");
    };
    assert!(d.iter().all(|d| d.path == Path::new("r/recipe.yaml")));
    assert!(d.iter().any(|d| d.message == "unknown input type `int`"
        && d.hint.as_deref() == Some("did you mean `integer`?")));
    assert!(d
        .iter()
        .any(|d| d.message == "recipe step `b` names a `sandbox`"));
}

const SESSIONS: &str = r"version: 1
sandboxes: {s: {}}
steps:
  cd:
    session: cd /tmp && export A=1
  build:
    session:
      name: build
      send: |
        make
        make test
      timeout: 2m
      expect_exit: 2
    timeout: 5m
  calc:
    python: x = 41
  more:
    python:
      code: |
        x += 1
        x
      timeout: 5
";

#[test]
fn session_and_python_actions() {
    let m = yaml(SESSIONS).unwrap();
    let kinds: Vec<&str> = m.steps.values().map(|s| s.action.kind()).collect();
    assert_eq!(kinds, ["session", "session", "python", "python"]);
    let Action::Session(cd) = &m.steps["cd"].action else {
        panic!()
    };
    assert_eq!(cd.send.value, "cd /tmp && export A=1");
    assert_eq!(m.source.line_col(cd.send.span.start), (5, 14));
    assert!(cd.name.is_none() && cd.timeout.is_none());
    assert_eq!(cd.expect_exit, 0);
    let Action::Session(build) = &m.steps["build"].action else {
        panic!()
    };
    assert_eq!(build.name.as_ref().unwrap().value, "build");
    assert_eq!(build.send.value, "make\nmake test\n");
    assert_eq!(
        build.timeout.as_ref().unwrap().value,
        Duration::from_mins(2)
    );
    assert_eq!(build.expect_exit, 2);
    assert_eq!(
        m.steps["build"].timeout.as_ref().unwrap().value,
        Duration::from_mins(5),
        "the step keeps its own timeout"
    );
    let Action::Python(calc) = &m.steps["calc"].action else {
        panic!()
    };
    assert_eq!(calc.code.value, "x = 41");
    assert!(calc.timeout.is_none());
    let Action::Python(more) = &m.steps["more"].action else {
        panic!()
    };
    assert_eq!(more.code.value, "x += 1\nx\n");
    assert_eq!(more.timeout.as_ref().unwrap().value, Duration::from_secs(5));
    // Templated names are checked once rendered.
    yaml("version: 1\nsandboxes: {s: {}}\nsteps:\n  a: {session: {send: x, name: 'b-{{ vars.n }}'}}\n")
        .unwrap();
}

#[test]
fn session_and_python_in_kdl() {
    let text = r##"version 1
sandbox "s"
step "cd" { session "cd /tmp && export A=1"; }
step "build" {
    session "make" name="build" timeout=60 expect-exit=2
}
step "calc" { python "x = 41"; }
step "more" {
    python #"""
        x += 1
        print(f"{x} {{y}}")
        """# timeout="1.5s"
}
step "long" {
    session {
        name "build"
        send """
            cd /src
            make
            """
    }
}
"##;
    let m = kdl(text).unwrap();
    let Action::Session(cd) = &m.steps["cd"].action else {
        panic!()
    };
    assert_eq!(cd.send.value, "cd /tmp && export A=1");
    assert!(cd.name.is_none());
    let Action::Session(build) = &m.steps["build"].action else {
        panic!()
    };
    assert_eq!(build.send.value, "make");
    assert_eq!(build.name.as_ref().unwrap().value, "build");
    assert_eq!(
        build.timeout.as_ref().unwrap().value,
        Duration::from_mins(1)
    );
    assert_eq!(build.expect_exit, 2);
    let Action::Python(calc) = &m.steps["calc"].action else {
        panic!()
    };
    assert_eq!(calc.code.value, "x = 41");
    let Action::Python(more) = &m.steps["more"].action else {
        panic!()
    };
    assert_eq!(more.code.value, "x += 1\nprint(f\"{x} {{y}}\")");
    assert_eq!(
        more.timeout.as_ref().unwrap().value,
        Duration::from_millis(1500)
    );
    let Action::Session(long) = &m.steps["long"].action else {
        panic!()
    };
    assert_eq!(long.send.value, "cd /src\nmake");
    assert_eq!(long.name.as_ref().unwrap().value, "build");
}

#[test]
fn session_mistakes() {
    check(
        |b| yaml(&yaml_step(b)),
        &[
            (
                "session: [x]",
                "5:14",
                "`session` must be a command string or a map with `send`, found a list",
                Any,
            ),
            (
                "session: {send: x, expect_exit: '1'}",
                "5:37",
                "`expect_exit` must be an integer, found a string",
                Is("write the number without quotes"),
            ),
            (
                "session: {send: x, expect_exit: 256}",
                "5:37",
                "`expect_exit` must be between 0 and 255, found 256",
                Any,
            ),
            (
                "session: {send: [x]}",
                "5:21",
                "`send` must be a string, found a list",
                Any,
            ),
            (
                "session: {send: x, timeout: soon}",
                "5:33",
                "invalid `timeout`",
                Any,
            ),
            (
                "session: {send: x, shell: bash}",
                "5:24",
                "unknown key `shell` in `session` of step `a`",
                Is("known keys: name, send, timeout, expect_exit"),
            ),
            // A misspelt `send` is not reported a second time as missing.
            (
                "session: {sned: x}",
                "5:15",
                "unknown key `sned` in `session` of step `a`",
                Is("did you mean `send`?"),
            ),
            (
                "session: {name: b}",
                "5:14",
                "`session` of step `a` has no `send`",
                Has("session: {send: COMMAND, name: NAME}"),
            ),
            (
                "session: {send: x, name: 'my shell'}",
                "5:30",
                "invalid session name `my shell`",
                Has("letters, digits"),
            ),
            (
                "session: {send: x, retries: 2}",
                "5:24",
                "`retries` is not a key of `session` of step `a`",
                Has("on the step, next to `session`"),
            ),
            (
                "session: {cmd: x}",
                "5:15",
                "`cmd` is not a key of `session` of step `a`",
                Has("write the command as `send`"),
            ),
        ],
    );
}

#[test]
fn python_mistakes() {
    check(
        |b| yaml(&yaml_step(b)),
        &[
            (
                "python: 41",
                "5:13",
                "`python` must be a code string or a map with `code`, found an integer",
                Any,
            ),
            (
                "python: {cmd: x}",
                "5:14",
                "`cmd` is not a key of `python` of step `a`",
                Any,
            ),
            (
                "python: {code: x, name: k}",
                "5:23",
                "`name` is not a key of `python` of step `a`",
                Has("one Python kernel per sandbox"),
            ),
            (
                "python: {code: x, lang: py}",
                "5:23",
                "unknown key `lang` in `python` of step `a`",
                Any,
            ),
            (
                "python: {timeout: 3}",
                "5:13",
                "`python` of step `a` has no `code`",
                Any,
            ),
            (
                "python: {code: 1}",
                "5:20",
                "`code` must be a string, found an integer",
                Any,
            ),
        ],
    );
}

#[test]
/// A key of one outside it, two actions in one step.
fn session_and_python_keys_in_the_wrong_place() {
    check(
        |b| yaml(&yaml_step(b)),
        &[
            (
                "session: y\n    send: x",
                "6:5",
                "`send` is not a key of step `a`",
                Has("inside `session`"),
            ),
            (
                "python: x\n    session: y",
                "5:5",
                "step `a` has two actions, `session` and `python`",
                Any,
            ),
        ],
    );
}

#[test]
fn session_and_python_mistakes_in_kdl() {
    check(
        |b| kdl(&kdl_step(b)),
        &[
            (
                "session \"x\" expect-exit=\"1\"",
                "4:29",
                "`expect-exit` must be an integer, found a string",
                Is("write the number without quotes"),
            ),
            (
                "session \"x\" nme=\"b\"",
                "4:17",
                "unknown key `nme` in `session` of step `a`",
                Is("did you mean `name`?"),
            ),
            (
                "python \"x\" name=\"k\"",
                "4:16",
                "`name` is not a key of `python` of step `a`",
                Any,
            ),
            (
                "python \"x\" timeout=#true",
                "4:24",
                "`timeout` must be a number of seconds or a duration like 90s, found a boolean",
                Any,
            ),
            (
                "session name=\"b\"",
                "4:5",
                "`session` of step `a` has no `send`",
                Is("write `session \"COMMAND\" name=\"NAME\"`"),
            ),
            (
                "python 1",
                "4:12",
                "`python` must be a code string or a map with `code`, found an integer",
                Any,
            ),
        ],
    );
}

#[test]
fn misplaced_keys_say_where_they_belong() {
    check(
        yaml,
        &[
            (
                "version: 1\nsandboxes: {s: {}}\nsteps:\n  a:\n    run: x\n    lang: python\n",
                "6:5",
                "`lang` is not a key of step `a`",
                Has("inside `run`"),
            ),
            (
                "version: 1\nsandboxes: {s: {}}\nsteps:\n  a:\n    run: {cmd: x, timeout: 3}\n",
                "5:19",
                "`timeout` is not a key of `run` of step `a`",
                Has("on the step, next to `run`"),
            ),
            (
                "version: 1\nsandboxes: {s: {}}\nsteps:\n  a:\n    run: {lang: sh}\n",
                "5:10",
                "`run` of step `a` has no `cmd`",
                Any,
            ),
            (
                "version: 1\nsandboxes: {s: {}}\nsteps:\n  a:\n    push: {src: x}\n",
                "5:11",
                "`push` of step `a` has no `dst`",
                Any,
            ),
        ],
    );
}

#[test]
fn unknown_sandbox_suggests_a_declared_one() {
    check(
        yaml,
        &[
            ("version: 1\nsandboxes:\n  grader: {}\n  other: {}\nsteps:\n  a:\n    sandbox: gradr\n    run: x\n", "7:14", "step `a` runs on unknown sandbox `gradr`", Is("did you mean `grader`?")),
            ("version: 1\nsteps:\n  a:\n    sandbox: g\n    run: x\n", "4:14", "step `a` runs on unknown sandbox `g`", Is("declare it under `sandboxes:`")),
            ("version: 1\nsandboxes: {x: {}, y: {}}\nsteps:\n  a:\n    run: x\n", "4:3", "step `a` has no `sandbox`", Is("add `sandbox: ID`; declared sandboxes: x, y")),
        ],
    );
}

#[test]
fn unknown_needs_suggests_a_step() {
    check(
        yaml,
        &[
            ("version: 1\nsandboxes: {s: {}}\nsteps:\n  tests: {run: x}\n  grade:\n    needs: [tset]\n    run: y\n", "6:13", "step `grade` needs unknown step `tset`", Is("did you mean `tests`?")),
            ("version: 1\nsandboxes: {s: {}}\nsteps:\n  a: {run: x}\n  b: {run: x, needs: zzz}\n", "5:22", "step `b` needs unknown step `zzz`", Is("declared steps: a, b")),
            ("version: 1\nsandboxes: {s: {}}\nsteps:\n  a: {run: x, needs: a}\n", "4:22", "step `a` needs itself", Any),
        ],
    );
}

#[test]
fn sizes_are_checked_at_load() {
    // Ports, volumes and profiles need more than the language: the plan
    // checks them (see plan::tests::literal_ports_volumes_and_profiles_are_checked).
    check(
        yaml,
        &[
            (
                "version: 1\nsandboxes:\n  s:\n    mem: 12q\n",
                "4:10",
                "invalid size `12q`",
                Has("e.g. 512, 64k, 10m, 1g"),
            ),
            (
                "version: 1\nsandboxes:\n  s:\n    profile: minimal\n    image: debian\n",
                "5:5",
                "sandbox `s` sets both `profile` and `image`",
                Has(""),
            ),
            (
                "version: 1\nsandboxes:\n  s:\n    run: {lang: klingon, cmd: x}\n",
                "4:5",
                "unknown key `run` in sandbox `s`",
                Any,
            ),
            (
                "version: 1\nsandboxes: {s: {}}\nsteps:\n  a: {run: {cmd: x, lang: pyhton}}\n",
                "4:27",
                "unknown language `pyhton`",
                Is("did you mean `python`?"),
            ),
        ],
    );
    yaml("version: 1\nsandboxes:\n  s:\n    ports: ['x:80']\n    profile: minimall\n").unwrap();
    // Templated values are checked by the plan, once rendered.
    yaml("version: 1\nsandboxes:\n  s:\n    mem: '{{ vars.mem }}'\n    profile: '{{ vars.p }}'\n")
        .unwrap();
}

#[test]
fn versions() {
    check(
        yaml,
        &[
            (
                "version: 2\n",
                "1:10",
                "unsupported manifest version 2",
                Is("this pocketdock reads version 1"),
            ),
            (
                "name: x\n",
                "1:1",
                "the manifest has no `version`",
                Has("version: 1"),
            ),
            (
                "version: one\n",
                "1:10",
                "`version` must be the integer 1, found a string",
                Any,
            ),
        ],
    );
}

#[test]
fn duplicate_keys() {
    check(
        yaml,
        &[(
            "version: 1\nsandboxes:\n  s: {}\nsteps:\n  a: {run: x}\n  a: {run: y}\n",
            "6:3",
            "duplicate key `a`",
            Has("line 5, column 3"),
        )],
    );
}

#[test]
fn ids_are_checked() {
    check(
        yaml,
        &[
            (
                "version: 1\nsandboxes:\n  My Box: {}\n",
                "3:3",
                "invalid sandbox id `My Box`",
                Has("`my-box`"),
            ),
            (
                "version: 1\nsandboxes: {s: {}}\nsteps:\n  Build: {run: x}\n",
                "4:3",
                "invalid step id `Build`",
                Any,
            ),
        ],
    );
    assert!(is_id("a-b_1") && !is_id("-a") && !is_id("") && !is_id("a.b"));
}

#[test]
fn matrix_axes_must_be_lists() {
    check(
        yaml,
        &[
            (
                "version: 1\nsandboxes:\n  s:\n    matrix: {py: []}\n",
                "4:18",
                "matrix axis `py` has no values",
                Has(""),
            ),
            (
                "version: 1\nsandboxes:\n  s:\n    matrix: {py: '3.12'}\n",
                "4:18",
                "matrix axis `py` must be a list, found a string",
                Has("[a, b]"),
            ),
            (
                "version: 1\nsandboxes:\n  s:\n    matrix: {py.v: [1]}\n",
                "4:14",
                "invalid matrix axis name `py.v`",
                Any,
            ),
        ],
    );
    let m = yaml("version: 1\nsandboxes:\n  s:\n    matrix: {py: ['3.11', '3.12'], os: [a]}\n")
        .unwrap();
    let axes: Vec<&str> = m.sandboxes["s"].matrix.keys().map(String::as_str).collect();
    assert_eq!(axes, ["py", "os"]);
}

#[test]
fn every_mistake_is_reported_in_file_order() {
    let d = diags(yaml(
        "version: 1\nsandboxes:\n  s:\n    mem: lots\n    cpu: x\nsteps:\n  a: {run: x, needs: [b, zz]}\n  b: {run: y, sandbox: t}\n",
    ));
    let got: Vec<(String, &str)> = d
        .iter()
        .map(|d| (d.position(), d.message.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("4:10".to_string(), "invalid size `lots`"),
            (
                "5:10".to_string(),
                "`cpu` must be an integer, found a string"
            ),
            ("7:26".to_string(), "step `a` needs unknown step `zz`"),
            ("8:24".to_string(), "step `b` runs on unknown sandbox `t`"),
        ]
    );
}

#[test]
fn yaml_syntax_errors() {
    let d = diags(yaml("version: 1\nsteps:\n  a: [\n"));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].position(), "4:1");
    assert!(
        d[0].message.contains("did not find expected"),
        "{}",
        d[0].message
    );
    let d = diags(yaml("version: 1\n\tsteps: {}\n"));
    assert_eq!(d[0].position(), "2:1", "{d:?}");
}

#[test]
fn diagnostics_render_for_ci_logs() {
    let e = yaml(
        "version: 1\nsandboxes:\n  g: {}\n  h: {}\nsteps:\n  a:\n    sandboxx: g\n    run: x\n",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "job.yaml:7:5: error: unknown key `sandboxx` in step `a`\n  |\n7 |     sandboxx: g\n  |     ^^^^^^^^\n  = hint: did you mean `sandbox`?\n"
    );
    let e = yaml("version: 3\nfoo: 1\n").unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("job.yaml:1:10: error: unsupported manifest version 3\n"),
        "{text}"
    );
    assert!(
        text.contains("\njob.yaml:2:1: error: unknown key `foo` in the manifest\n"),
        "{text}"
    );
    assert!(text.ends_with("\n2 errors in job.yaml"), "{text}");
}

#[test]
fn var_overrides_apply_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vars.yaml");
    std::fs::write(&file, "students: [x, y]\nn: 1\n").unwrap();
    let opts = LoadOptions {
        vars: vec![("n".into(), "2".into()), ("extra".into(), "[a, b]".into())],
        vars_file: Some(file),
        env: vec![("TOKEN".into(), "t".into())],
        host_env: std::collections::HashMap::new(),
        ..LoadOptions::default()
    };
    let m = parse(
        Path::new("job.yaml"),
        "version: 1\nvars: {students: [a], n: 0, keep: k}\n",
        Format::Yaml,
        &opts,
    )
    .unwrap();
    assert_eq!(m.vars["students"], json!(["x", "y"]));
    assert_eq!(m.vars["n"], json!(2));
    assert_eq!(m.vars["keep"], json!("k"));
    assert_eq!(m.vars["extra"], json!(["a", "b"]));
    assert_eq!(m.env["TOKEN"], "t");
}

#[test]
fn env_lists_host_variables_that_templates_may_read() {
    // The caller hands the host environment over (the manifest reads no
    // other): listed names that are set are visible, others are not.
    let opts = LoadOptions {
        host_env: [("PATH", "/bin"), ("HOME", "/root")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into(),
        ..LoadOptions::default()
    };
    let text = "version: 1\nenv: [PATH, POCKETDOCK_SURELY_UNSET_VAR]\n";
    let m = parse(Path::new("job.yaml"), text, Format::Yaml, &opts).unwrap();
    assert_eq!(m.env.get("PATH").map(String::as_str), Some("/bin"));
    assert!(!m.env.contains_key("POCKETDOCK_SURELY_UNSET_VAR"));
    assert!(
        !m.env.contains_key("HOME"),
        "unlisted variables stay hidden"
    );
    // No host environment unless the caller gives one.
    assert!(yaml(text).unwrap().env.is_empty());
    only(
        yaml("version: 1\nenv: [1X]\n"),
        "2:7",
        "invalid environment variable name `1X`",
    );
}

#[test]
fn default_names() {
    let m = parse(
        Path::new("/w/grading/job.yaml"),
        "version: 1\n",
        Format::Yaml,
        &LoadOptions::default(),
    )
    .unwrap();
    assert_eq!(m.default_name(), "grading");
    let m = parse(
        Path::new("/w/grading/nightly.yaml"),
        "version: 1\n",
        Format::Yaml,
        &LoadOptions::default(),
    )
    .unwrap();
    assert_eq!(m.default_name(), "nightly");
    assert_eq!(m.host_path("tests/"), Path::new("/w/grading/tests/"));
}

/// The same job in KDL.
const GRADING_KDL: &str = include_str!("testdata/grading.kdl");

#[test]
fn kdl_loads_the_same_model_as_yaml() {
    let y = yaml(GRADING).unwrap();
    let k = kdl(GRADING_KDL).unwrap();
    assert_eq!(k.vars, y.vars);
    assert_eq!(
        k.env_names.iter().map(|e| &e.value).collect::<Vec<_>>(),
        ["CI"]
    );
    assert_eq!(
        k.sandboxes.keys().collect::<Vec<_>>(),
        y.sandboxes.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        k.steps.keys().collect::<Vec<_>>(),
        y.steps.keys().collect::<Vec<_>>()
    );
    let (ks, ys) = (&k.sandboxes["grader"], &y.sandboxes["grader"]);
    assert_eq!(
        ks.mem.as_ref().unwrap().value,
        ys.mem.as_ref().unwrap().value
    );
    assert_eq!(ks.cpu.as_ref().unwrap().value, 100);
    assert_eq!(ks.network, ys.network);
    assert_eq!(ks.env["N"].value, "3");
    for id in ["tests", "code", "grade", "report", "total"] {
        let (a, b) = (&k.steps[id], &y.steps[id]);
        assert_eq!(a.action.kind(), b.action.kind(), "{id}");
        assert_eq!(a.allow_failure, b.allow_failure, "{id}");
        assert_eq!(
            a.timeout.as_ref().map(|t| t.value),
            b.timeout.as_ref().map(|t| t.value),
            "{id}"
        );
        let names = |s: &StepDecl| {
            s.needs
                .as_ref()
                .map(|n| n.iter().map(|x| x.value.clone()).collect::<Vec<_>>())
        };
        assert_eq!(names(a), names(b), "{id}");
    }
}

#[test]
fn kdl_errors_have_positions_and_kebab_case_suggestions() {
    check(
        kdl,
        &[
            (
                "version 1\nsandbox \"s\"\nstep \"a\" allow-failur=#true { run \"x\"; }\n",
                "3:10",
                "unknown key `allow-failur` in step `a`",
                Is("did you mean `allow-failure`?"),
            ),
            (
                "version 1\nsandbox \"s\" network=\"no\"\n",
                "2:21",
                "`network` must be a boolean or `dns-blocked`, found a string",
                Absent,
            ),
            (
                "version 1\nsandbox \"s\"\nstep \"a\" needs=\"b\" { run \"x\"; }\n",
                "3:17",
                "step `a` needs unknown step `b`",
                Any,
            ),
            (
                "version 1\nsandbox \"s\"\nstep \"a\" { run \"x\"; push src=\"a\" dst=\"b\"; }\n",
                "3:21",
                "step `a` has two actions, `run` and `push`",
                Any,
            ),
            (
                "version 1\nsandboxes { }\n",
                "2:1",
                "in KDL, write one `sandbox` node per entry instead of `sandboxes`",
                Any,
            ),
            (
                "version 1\nsandbox \"s\" { matrix { py \"3\" } }\n",
                "2:27",
                "matrix axis `py` must be a list, found a string",
                Any,
            ),
        ],
    );
}

#[test]
fn build_policy_in_yaml_and_kdl() {
    let m = yaml(
        "version: 1\nsandboxes:\n  a: {profile: dev, build: auto}\n  b: {build: never}\n  c: {}\n",
    )
    .unwrap();
    let policies: Vec<_> = m.sandboxes.values().map(|s| s.build).collect();
    assert_eq!(
        policies,
        [BuildPolicy::Auto, BuildPolicy::Never, BuildPolicy::Never]
    );
    let m = kdl("version 1\nsandbox \"a\" profile=\"dev\" build=\"auto\"\nsandbox \"b\" { build \"auto\"; }\n").unwrap();
    assert!(m.sandboxes.values().all(|s| s.build == BuildPolicy::Auto));
}

#[test]
fn build_policy_mistakes() {
    check(
        yaml,
        &[
            (
                "version: 1\nsandboxes:\n  a: {build: always}\n",
                "3:14",
                "invalid build `always`",
                Has("auto, never"),
            ),
            (
                "version: 1\nsandboxes:\n  a: {image: 'debian:bookworm-slim', build: auto}\n",
                "3:45",
                "sandbox `a` sets `build: auto` with `image`",
                Has("use `profile` instead"),
            ),
            (
                "version: 1\nsandboxes:\n  a: {build: true}\n",
                "3:14",
                "`build` must be a string, found a boolean",
                Any,
            ),
        ],
    );
}

#[test]
fn network_takes_dns_blocked_in_yaml_and_kdl() {
    let m = yaml("version: 1\nsandboxes:\n  s:\n    network: dns-blocked\n").unwrap();
    let sb = &m.sandboxes["s"];
    assert_eq!((sb.network, sb.dns_blocked), (Some(true), true));
    let m = yaml("version: 1\nsandboxes:\n  s:\n    network: true\n").unwrap();
    assert!(!m.sandboxes["s"].dns_blocked);
    let m = kdl("version 1\nsandbox \"s\" network=\"dns-blocked\"\n").unwrap();
    assert_eq!(m.sandboxes["s"].network, Some(true));
    assert!(m.sandboxes["s"].dns_blocked);
}

#[test]
fn no_new_privileges_is_on_unless_a_sandbox_says_false() {
    let m = yaml("version: 1\nsandboxes:\n  s: {}\n").unwrap();
    assert!(m.sandboxes["s"].no_new_privileges);
    let m = yaml("version: 1\nsandboxes:\n  s:\n    no_new_privileges: false\n").unwrap();
    assert!(!m.sandboxes["s"].no_new_privileges);
    let m = kdl("version 1\nsandbox \"s\" no_new_privileges=#false\n").unwrap();
    assert!(!m.sandboxes["s"].no_new_privileges);
    assert!(yaml("version: 1\nsandboxes:\n  s:\n    no_new_privileges: maybe\n").is_err());
}
