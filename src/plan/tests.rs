//! Planning: fan-out, dependency rules, cycles, rendering, and the examples.

use crate::plan::{RenderedPush, RenderedPython, RenderedRun, RenderedSession};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::manifest::{parse, Format, LoadOptions};
use crate::template::StepResult;

fn manifest(text: &str) -> Manifest {
    manifest_with(text, &LoadOptions::default())
}

fn manifest_with(text: &str, opts: &LoadOptions) -> Manifest {
    parse(Path::new("/w/job.yaml"), text, Format::Yaml, opts).unwrap_or_else(|e| panic!("{e}"))
}

fn plan_of(text: &str) -> Plan {
    plan(manifest(text), &PlanOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn plan_err(text: &str) -> Vec<Diagnostic> {
    match plan(manifest(text), &PlanOptions::default()) {
        Ok(_) => panic!("expected a planning error"),
        Err(e) => e.diagnostics().to_vec(),
    }
}

/// `needs` of the instance with id `id`, as instance ids.
fn needs_of<'p>(p: &'p Plan, id: &str) -> Vec<&'p str> {
    let s = p
        .steps
        .iter()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("no step {id}"));
    s.needs.iter().map(|&n| p.steps[n].id.as_str()).collect()
}

fn wave_ids(p: &Plan) -> Vec<Vec<&str>> {
    p.waves()
        .iter()
        .map(|w| w.iter().map(|&s| p.steps[s].id.as_str()).collect())
        .collect()
}

/// The grading job the manifest's tests load too.
const GRADING: &str = include_str!("../manifest/testdata/grading.yaml");

#[test]
fn matrix_fans_sandboxes_and_steps_out() {
    let p = plan_of(GRADING);
    assert_eq!(p.job_name, "grade-fizzbuzz");
    assert_eq!(p.job_id, "grade-fizzbuzz");
    let ids: Vec<&str> = p.sandboxes.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "grader[student=alice]",
            "grader[student=bob]",
            "grader[student=carol]",
            "summary"
        ]
    );
    assert_eq!(p.sandboxes[1].matrix["student"], json!("bob"));
    assert!(
        p.sandboxes[1]
            .spec
            .env
            .contains(&("STUDENT".to_string(), "bob".to_string())),
        "{:?}",
        p.sandboxes[1].spec.env
    );
    assert_eq!(p.sandboxes[1].spec.mem.bytes(), 512 << 20);
    assert_eq!(p.sandboxes[3].spec.profile.as_deref(), Some("minimal"));
    assert_eq!(p.steps.len(), 13);
    assert_eq!(p.steps[0].id, "tests@grader[student=alice]");
    assert_eq!(p.steps[4].id, "code@grader[student=bob]");
    assert_eq!(p.steps[4].matrix["student"], json!("bob"));
    assert_eq!(p.instances_of("grade"), 6..9);
    for (i, s) in p.steps.iter().enumerate() {
        assert_eq!(s.index, i);
        assert_eq!(p.graph[NodeIndex::new(i)], i);
    }
}

#[test]
fn script_order_same_instance_and_fan_in() {
    let p = plan_of(GRADING);
    // First step on a sandbox: waits for nothing.
    assert!(needs_of(&p, "tests@grader[student=bob]").is_empty());
    // No `needs`: the previous step on the same sandbox instance.
    assert_eq!(
        needs_of(&p, "code@grader[student=bob]"),
        ["tests@grader[student=bob]"]
    );
    // `needs` on the same matrix sandbox: the same combination only.
    assert_eq!(
        needs_of(&p, "grade@grader[student=bob]"),
        ["tests@grader[student=bob]", "code@grader[student=bob]"]
    );
    assert_eq!(
        needs_of(&p, "report@grader[student=carol]"),
        ["grade@grader[student=carol]"]
    );
    // `needs` on another sandbox's fanned-out step: all of its instances.
    assert_eq!(
        needs_of(&p, "total@summary"),
        [
            "report@grader[student=alice]",
            "report@grader[student=bob]",
            "report@grader[student=carol]"
        ]
    );
    assert_eq!(
        wave_ids(&p),
        [
            vec![
                "tests@grader[student=alice]",
                "tests@grader[student=bob]",
                "tests@grader[student=carol]"
            ],
            vec![
                "code@grader[student=alice]",
                "code@grader[student=bob]",
                "code@grader[student=carol]"
            ],
            vec![
                "grade@grader[student=alice]",
                "grade@grader[student=bob]",
                "grade@grader[student=carol]"
            ],
            vec![
                "report@grader[student=alice]",
                "report@grader[student=bob]",
                "report@grader[student=carol]"
            ],
            vec!["total@summary"],
        ]
    );
    let dependents: Vec<usize> = p.dependents(9).collect();
    assert_eq!(dependents, [12]);
}

#[test]
fn several_axes_in_declared_order() {
    let p = plan_of("version: 1\nsandboxes:\n  s:\n    matrix: {os: [debian, alpine], py: [3.11, 3.12]}\n    image: 'python:{{ matrix.py }}-{{ matrix.os }}'\nsteps:\n  t: {run: x}\n");
    let ids: Vec<&str> = p.sandboxes.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "s[os=debian,py=3.11]",
            "s[os=debian,py=3.12]",
            "s[os=alpine,py=3.11]",
            "s[os=alpine,py=3.12]"
        ]
    );
    assert_eq!(p.sandboxes[2].spec.image.as_str(), "python:3.11-alpine");
    assert_eq!(p.sandboxes[2].spec.profile, None);
    assert_eq!(
        wave_ids(&p),
        [vec![
            "t@s[os=debian,py=3.11]",
            "t@s[os=debian,py=3.12]",
            "t@s[os=alpine,py=3.11]",
            "t@s[os=alpine,py=3.12]"
        ]]
    );
}

#[test]
fn different_sandboxes_run_in_parallel() {
    let p = plan_of("version: 1\nsandboxes: {a: {}, b: {}}\nsteps:\n  a1: {sandbox: a, run: x}\n  b1: {sandbox: b, run: x}\n  a2: {sandbox: a, run: x}\n  b2: {sandbox: b, run: x}\n  join: {sandbox: a, needs: [a2, b2], run: x}\n");
    assert_eq!(
        wave_ids(&p),
        [vec!["a1@a", "b1@b"], vec!["a2@a", "b2@b"], vec!["join@a"]]
    );
    assert_eq!(p.first_and_last_step(0), Some((0, 4)));
    assert_eq!(p.first_and_last_step(1), Some((1, 3)));
    assert_eq!(p.steps_on(1), [1, 3]);
    assert_eq!(p.topological_order(), [0, 1, 2, 3, 4]);
}

#[test]
fn needs_may_point_forward_and_break_script_order() {
    // `b` has `needs`, so it no longer waits for `a` even on the same sandbox.
    let p = plan_of("version: 1\nsandboxes: {s: {}, t: {}}\nsteps:\n  a: {sandbox: s, run: x}\n  b: {sandbox: s, run: x, needs: c}\n  c: {sandbox: t, run: x}\n");
    assert_eq!(needs_of(&p, "b@s"), ["c@t"]);
    assert_eq!(wave_ids(&p), [vec!["a@s", "c@t"], vec!["b@s"]]);
    // An unused sandbox has no first and last step.
    let p =
        plan_of("version: 1\nsandboxes: {s: {}, idle: {}}\nsteps:\n  a: {sandbox: s, run: x}\n");
    assert_eq!(p.first_and_last_step(1), None);
}

#[test]
fn cycles_print_their_path_at_a_needs_entry() {
    let d = plan_err("version: 1\nsandboxes: {s: {}}\nsteps:\n  a:\n    needs: [c]\n    run: x\n  b:\n    run: x\n  c:\n    needs: b\n    run: x\n");
    assert_eq!(d.len(), 1);
    assert_eq!(
        d[0].message,
        "steps wait for each other in a cycle: a -> c -> b -> a"
    );
    assert_eq!(d[0].position(), "5:13");
    let hint = d[0].hint.as_deref().unwrap();
    assert!(hint.contains("`a -> b` means a waits for b"), "{hint}");
    assert!(
        hint.contains("`b` waits for `a` because it is the next step on sandbox `s`"),
        "{hint}"
    );

    let d = plan_err("version: 1\nsandboxes: {s: {}, t: {}}\nsteps:\n  x: {sandbox: s, run: a, needs: y}\n  y: {sandbox: t, run: a, needs: [x]}\n");
    assert_eq!(
        d[0].message,
        "steps wait for each other in a cycle: x -> y -> x"
    );
    assert_eq!(d[0].position(), "4:34");
}

#[test]
fn sandbox_templates_are_rendered_and_checked() {
    let d = plan_err(
        "version: 1\nvars: {image: debian}\nsandboxes:\n  s: {image: '{{ vars.imag }}:12'}\n",
    );
    assert_eq!(d[0].message, "undefined variable `vars.imag`");
    assert_eq!(d[0].position(), "4:18");
    assert_eq!(d[0].hint.as_deref(), Some("did you mean `vars.image`?"));

    let d = plan_err("version: 1\nvars: {mem: lots}\nsandboxes:\n  s: {mem: '{{ vars.mem }}'}\n");
    assert_eq!(
        d[0].message,
        "invalid size `lots` (rendered from `{{ vars.mem }}`)"
    );
    assert_eq!(d[0].position(), "4:12");

    let d = plan_err("version: 1\nvars: {p: huge}\nsandboxes:\n  s: {profile: '{{ vars.p }}'}\n");
    assert_eq!(d[0].message, "unknown profile `huge`");

    let d = plan_err("version: 1\nsandboxes:\n  s: {ports: ['{{ 80 }}:x']}\n");
    assert_eq!(
        d[0].message,
        "invalid port mapping `80:x` (rendered from `{{ 80 }}:x`)"
    );
}

/// The only diagnostic of planning `text`; checks its position and message.
#[track_caller]
fn only(text: &str, pos: &str, message: &str) -> Diagnostic {
    let d = plan_err(text);
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
    /// Exactly this.
    Is(&'static str),
    /// Some hint containing this.
    Has(&'static str),
}
use Hint::{Any, Has, Is};

/// Each manifest plans to exactly one diagnostic: at that `line:col`,
/// with that message and hint.
#[track_caller]
fn check(cases: &[(&str, &str, &str, Hint)]) {
    for &(text, pos, message, hint) in cases {
        let d = only(text, pos, message);
        let h = d.hint.as_deref();
        match hint {
            Any => {}
            Is(want) => assert_eq!(h, Some(want), "hint of `{message}`"),
            Has(part) => assert!(
                h.is_some_and(|h| h.contains(part)),
                "hint of `{message}` should contain {part:?}: {h:?}"
            ),
        }
    }
}

#[test]
fn literal_ports_volumes_and_profiles_are_checked() {
    check(&[
        (
            "version: 1\nsandboxes:\n  s:\n    network: true\n    ports: ['8080:80', 'x:80']\n",
            "5:24",
            "invalid port mapping `x:80`",
            Has("HOST:CONTAINER"),
        ),
        (
            "version: 1\nsandboxes:\n  s:\n    volumes: [/a:b]\n",
            "4:15",
            "invalid volume `/a:b`",
            Any,
        ),
        (
            "version: 1\nsandboxes:\n  s:\n    profile: minimall\n",
            "4:14",
            "unknown profile `minimall`",
            Is("did you mean `minimal`?"),
        ),
        // A matrix sandbox is checked once, not once per combination.
        (
            "version: 1\nsandboxes:\n  s:\n    profile: minimall\n    matrix: {n: [1, 2]}\n",
            "4:14",
            "unknown profile `minimall`",
            Any,
        ),
    ]);
}

#[test]
fn profiles_are_checked_against_the_set_given() {
    let text = "version: 1\nsandboxes:\n  s: {profile: tool}\n";
    let d = plan_err(text);
    assert_eq!(d[0].message, "unknown profile `tool`");
    assert_eq!(d[0].position(), "3:16");
    assert_eq!(
        d[0].hint.as_deref(),
        Some("known profiles: minimal, dev, agent, embedded")
    );
    let tool = KnownProfile {
        name: "tool".into(),
        image: "pocketdock-p/tool".into(),
        network: false,
    };
    let mut profiles: Vec<KnownProfile> = ProfileSet::shipped()
        .names()
        .map(|n| KnownProfile {
            name: n.into(),
            image: String::new(),
            network: false,
        })
        .collect();
    profiles.push(tool);
    let opts = PlanOptions {
        profiles: ProfileSet::new(profiles),
        ..PlanOptions::default()
    };
    let p = plan(manifest(text), &opts).unwrap();
    assert_eq!(p.sandboxes[0].spec.profile.as_deref(), Some("tool"));
    // The same name, templated, gets the list of known profiles.
    let d =
        plan_err("version: 1\nvars: {p: minimall}\nsandboxes:\n  s: {profile: '{{ vars.p }}'}\n");
    assert_eq!(
        d[0].hint.as_deref(),
        Some("known profiles: minimal, dev, agent, embedded")
    );
}

#[test]
fn unreadable_project_profiles_are_reported_where_a_profile_is_named() {
    let bad = ProfileSet::from_lookup(Err(crate::error::Error::BadProjectProfile {
        dir: PathBuf::from("/p/.pocketdock/profiles/dev"),
        reason: "pocketdock ships a profile of that name; rename the directory".into(),
    }));
    let opts = PlanOptions {
        profiles: bad,
        ..PlanOptions::default()
    };
    let named = "version: 1\nsandboxes:\n  s: {profile: minimal}\n";
    let Err(e) = plan(manifest(named), &opts) else {
        panic!("expected a planning error");
    };
    let d = e.diagnostics();
    assert_eq!(d[0].position(), "3:16");
    assert!(d[0].message.contains("rename the directory"), "{d:?}");
    // A sandbox that names no profile does not care.
    plan(
        manifest("version: 1\nsandboxes:\n  s: {image: debian}\n"),
        &opts,
    )
    .unwrap();
}

#[test]
fn matrix_templates_must_render_to_lists() {
    let d = plan_err("version: 1\nvars: {students: alice}\nsandboxes:\n  s:\n    matrix: {student: '{{ vars.students }}'}\n");
    assert_eq!(
        d[0].message,
        "matrix axis `student` must render to a list, got the string \"alice\""
    );
    assert_eq!(d[0].position(), "5:23");
    let d = plan_err("version: 1\nvars: {students: []}\nsandboxes:\n  s:\n    matrix: {student: '{{ vars.students }}'}\n");
    assert_eq!(
        d[0].message,
        "matrix axis `student` rendered to an empty list"
    );
    let d =
        plan_err("version: 1\nsandboxes:\n  s:\n    matrix: {student: '{{ vars.studnets }}'}\n");
    assert_eq!(d[0].message, "undefined variable `vars.studnets`");
    assert_eq!(d[0].position(), "4:27");
    let d = plan_err("version: 1\nsandboxes:\n  s:\n    matrix: {n: [1, 2, 1]}\n");
    assert_eq!(d[0].message, "matrix axis `n` lists `1` twice");
}

#[test]
fn var_overrides_reach_the_matrix() {
    let opts = LoadOptions {
        vars: vec![("students".into(), "[dave, erin]".into())],
        ..LoadOptions::default()
    };
    let p = plan(
        manifest_with(GRADING, &opts),
        &PlanOptions {
            job_id: Some("j-42".into()),
            ..PlanOptions::default()
        },
    )
    .unwrap();
    assert_eq!(p.sandboxes.len(), 3);
    assert_eq!(p.sandboxes[1].id, "grader[student=erin]");
    assert_eq!(p.job_id, "j-42");
}

#[test]
fn specs_resolve_relative_volumes_against_the_manifest() {
    let p = plan_of("version: 1\nsandboxes:\n  s:\n    volumes: ['./data:/data:ro', 'named:/cache']\n    ports: ['8080:80', 53/udp]\n    cpu: 200\n    network: true\n    persist: true\n    pids_limit: 64\n    workdir: /w\n    devices: [/dev/null]\n");
    let s = &p.sandboxes[0];
    assert_eq!(s.spec.volumes[0].host, "/w/./data");
    assert!(s.spec.volumes[0].read_only);
    assert_eq!(s.spec.volumes[1].host, "named");
    assert_eq!(s.spec.ports.len(), 2);
    assert_eq!(
        (s.spec.cpu_percent, s.spec.network, s.spec.pids_limit),
        (200, true, Some(64))
    );
    assert!(s.persist && s.spec.persist);
    assert_eq!(s.spec.workdir.as_deref(), Some("/w"));
    assert_eq!(s.spec.devices, ["/dev/null"]);
}

#[test]
fn steps_render_with_results_of_finished_steps() {
    let p = plan_of(GRADING);
    let bob_grade = p.instances_of("grade").nth(1).unwrap();
    let ctx = p.context(bob_grade);
    let r = p.render_step(bob_grade, &ctx).unwrap();
    assert_eq!(r.name, "grade");
    assert_eq!(r.timeout, Some(Duration::from_mins(1)));
    assert!(r.allow_failure);
    let RenderedAction::Run(RenderedRun { cmd, options, .. }) = &r.action else {
        panic!()
    };
    assert_eq!(cmd, "python3 -m unittest discover -s tests");
    assert_eq!(
        options.timeout,
        crate::sandbox::Timeout::After(Duration::from_mins(1))
    );

    let code = p.instances_of("code").nth(1).unwrap();
    let r = p.render_step(code, &p.context(code)).unwrap();
    let RenderedAction::Push(RenderedPush { src, dst }) = &r.action else {
        panic!()
    };
    assert_eq!(src, &PathBuf::from("/w/submissions/bob/"));
    assert_eq!(dst, "/home/sandbox/src/");

    // Results: same combination on the same sandbox; all instances for a fan-in.
    let results: Vec<StepResult> = (0..p.steps.len())
        .map(|i| StepResult {
            status: crate::template::ResultStatus::Success,
            exit_code: Some(i as i64),
            ..StepResult::default()
        })
        .collect();
    let report = p.instances_of("report").nth(1).unwrap();
    let ctx = p.context_with_results(report, |i| results.get(i));
    assert_eq!(
        ctx.as_json()["steps"]["grade"]["exit_code"],
        json!(bob_grade)
    );
    let total = p.instances_of("total").next().unwrap();
    let ctx = p.context_with_results(total, |i| results.get(i));
    let instances = ctx.as_json()["steps"]["report"]["instances"]
        .as_array()
        .unwrap();
    assert_eq!(instances.len(), 3);
    assert_eq!(instances[2]["matrix"], json!({"student": "carol"}));
    assert_eq!(instances[2]["sandbox"], json!("grader[student=carol]"));
}

#[test]
fn conditions_and_step_template_errors_point_into_the_file() {
    let p = plan_of("version: 1\nsandboxes: {s: {}}\nsteps:\n  a: {run: x}\n  b:\n    if: steps.a.exit_code == 0\n    run: echo {{ vars.v }}{{ steps.a.stdout }}\nvars: {v: 1}\n");
    let b = 1;
    let mut results = [StepResult {
        status: crate::template::ResultStatus::Success,
        exit_code: Some(0),
        stdout: "hi".into(),
        ..StepResult::default()
    }];
    let ctx = p.context_with_results(b, |i| results.get(i));
    assert!(p.should_run(b, &ctx).unwrap());
    let RenderedAction::Run(RenderedRun { cmd, .. }) = p.render_step(b, &ctx).unwrap().action
    else {
        panic!()
    };
    assert_eq!(cmd, "echo 1hi");
    results[0].exit_code = Some(1);
    let ctx = p.context_with_results(b, |i| results.get(i));
    assert!(!p.should_run(b, &ctx).unwrap());
    // A result that is missing at run time (planning checked the name).
    let d = p.should_run(b, &p.context(b)).unwrap_err();
    assert_eq!(d.message, "undefined variable `steps.a`");
    assert_eq!(d.position(), "6:9");
    let d = p.render_step(b, &p.context(b)).unwrap_err();
    assert_eq!(d.message, "undefined variable `steps.a`");
    assert_eq!(d.position(), "7:30");
}

#[test]
fn job_names() {
    let p = plan_of("version: 1\n");
    assert_eq!(p.job_name, "w");
    let d = plan_err("version: 1\nname: 'x-{{ vars.y }}'\n");
    assert_eq!(d[0].message, "undefined variable `vars.y`");
    assert_eq!(d[0].position(), "2:13");
}

#[test]
fn text_json_and_dot() {
    let p = plan_of(GRADING);
    let text = p.to_text();
    assert!(
        text.starts_with("job grade-fizzbuzz: 4 sandboxes, 13 steps, 5 waves\n"),
        "{text}"
    );
    assert!(text.contains("\nwave 1: tests@grader[student=alice], tests@grader[student=bob], tests@grader[student=carol]\n"), "{text}");
    assert!(text.ends_with("wave 5: total@summary\n"), "{text}");
    let j = p.to_json();
    assert_eq!(j["job"]["name"], json!("grade-fizzbuzz"));
    assert_eq!(j["sandboxes"][0]["spec"]["mem"], json!(512 << 20));
    assert_eq!(j["steps"][12]["needs"], json!([9, 10, 11]));
    assert_eq!(j["steps"][12]["wave"], json!(5));
    assert_eq!(j["steps"][6]["action"], json!("run"));
    let dot = p.to_dot();
    assert!(dot.starts_with("digraph \"grade-fizzbuzz\" {"), "{dot}");
    assert!(dot.contains("label=\"grader[student=alice]\";"), "{dot}");
    assert!(dot.contains("  s9 -> s12;\n"), "{dot}");
}

/// Every manifest under examples/ loads and plans (the runner runs them).
#[test]
fn examples_load_and_plan() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut found = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n == "job.yaml" || n == "job.kdl" || n == "pocketdock.yaml"
            }) {
                found.push(path);
            }
        }
    }
    assert!(found.len() >= 3, "examples: {found:?}");
    for path in found {
        let m =
            crate::manifest::load(&path, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let p = plan(m, &PlanOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        assert!(!p.steps.is_empty(), "{}", path.display());
        // Every step renders, given results for the steps before it.
        let done = StepResult {
            status: crate::template::ResultStatus::Success,
            exit_code: Some(0),
            ..StepResult::default()
        };
        for i in 0..p.steps.len() {
            // (A recipe's steps render in the recipe's own context.)
            let ctx = p
                .step_context(i, |_| Some(&done))
                .unwrap_or_else(|e| panic!("{e}"));
            p.should_run(i, &ctx).unwrap_or_else(|e| panic!("{e}"));
            p.render_step(i, &ctx).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// The KDL twin of the grading example plans exactly like the YAML one.
#[test]
fn grading_example_yaml_and_kdl_plan_alike() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/grading");
    let load = |name: &str| {
        let m = crate::manifest::load(&dir.join(name), &LoadOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut j = plan(m, &PlanOptions::default()).unwrap().to_json();
        j["manifest"] = json!(null);
        j
    };
    assert_eq!(load("job.yaml"), load("job.kdl"));
    let p = plan(
        crate::manifest::load(&dir.join("job.yaml"), &LoadOptions::default()).unwrap(),
        &PlanOptions::default(),
    )
    .unwrap();
    // `record` reads the recipe's outputs through `steps.grade`: a timeout
    // is a verdict without counts, a failure gives them.
    let render_record = |student: &str, outputs: &[(&str, &str)]| {
        let find = |id: String| p.steps.iter().find(|s| s.id == id).unwrap().index;
        let record = find(format!("record@grader[student={student}]"));
        let grade = find(format!("grade.grade@grader[student={student}]"));
        let mut results = vec![None; p.steps.len()];
        results[grade] = Some(StepResult {
            status: crate::template::ResultStatus::Success,
            exit_code: Some(0),
            outputs: outputs
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect(),
            ..StepResult::default()
        });
        let ctx = p.context_with_results(record, |i| results[i].as_ref());
        let RenderedAction::Run(RenderedRun { cmd, .. }) =
            p.render_step(record, &ctx).unwrap().action
        else {
            panic!()
        };
        cmd
    };
    assert_eq!(
        render_record(
            "dave",
            &[
                ("verdict", "timed_out"),
                ("tests_run", ""),
                ("failures", "")
            ]
        ),
        "echo \"dave timed_out\" > /home/sandbox/result.txt"
    );
    assert_eq!(
        render_record(
            "carol",
            &[("verdict", "failed"), ("tests_run", "5"), ("failures", "2")]
        ),
        "echo \"carol failed (2 of 5 failed)\" > /home/sandbox/result.txt"
    );
}

// Step templates are checked when the job is planned.

/// `line:col message` of each planning error.
fn problems(text: &str) -> Vec<String> {
    problems_with(text, &LoadOptions::default())
}

fn problems_with(text: &str, opts: &LoadOptions) -> Vec<String> {
    match plan(manifest_with(text, opts), &PlanOptions::default()) {
        Ok(_) => Vec::new(),
        Err(e) => e
            .diagnostics()
            .iter()
            .map(|d| {
                assert_underlines_the_variable(d);
                format!("{} {}", d.position(), d.message)
            })
            .collect(),
    }
}

/// The caret is under the variable the message names, as written.
fn assert_underlines_the_variable(d: &Diagnostic) {
    let under: String = d
        .line_text
        .chars()
        .skip(d.col - 1)
        .take(d.underline)
        .collect();
    if !d.message.contains("syntax error") {
        assert!(d.message.contains(&format!("`{under}`")), "{d}");
    }
}

/// The planning errors of `text` are `want`: (line:col, message, hint),
/// in order, each underlining the variable it names.
#[track_caller]
fn assert_problems(text: &str, want: &[(&str, &str, Option<&str>)]) {
    let d = plan_err(text);
    d.iter().for_each(assert_underlines_the_variable);
    let got: Vec<(String, &str, Option<&str>)> = d
        .iter()
        .map(|d| (d.position(), d.message.as_str(), d.hint.as_deref()))
        .collect();
    let want: Vec<(String, &str, Option<&str>)> = want
        .iter()
        .map(|&(pos, message, hint)| (pos.to_string(), message, hint))
        .collect();
    assert_eq!(got, want);
}

/// The one planning error of `text`.
fn only_problem(text: &str) -> Diagnostic {
    let d = plan_err(text);
    d.iter().for_each(assert_underlines_the_variable);
    assert_eq!(d.len(), 1, "{d:#?}");
    d.into_iter().next().unwrap()
}

#[test]
fn undefined_variables_in_steps_fail_planning() {
    let text = "version: 1\nsandboxes:\n  box: {}\nsteps:\n  a:\n    run: echo {{ vars.nope }}\n";
    let d = only_problem(text);
    assert_eq!(
        d.to_string(),
        "/w/job.yaml:6:18: error: undefined variable `vars.nope`\n  \
         |\n\
         6 |     run: echo {{ vars.nope }}\n  \
         |                  ^^^^^^^^^\n  \
         = hint: define `nope` under `vars:`, or pass `--var nope=VALUE`\n"
    );
    // A close name is suggested; `--var` defines one.
    let text = "version: 1\nvars: {students: [a]}\nsandboxes: {box: {}}\nsteps:\n  a:\n    run: |\n      echo start\n      echo {{ vars.studnets | join(' ') }} {{ vars.extra }}\n";
    assert_eq!(
        problems(text),
        [
            "8:15 undefined variable `vars.studnets`",
            "8:47 undefined variable `vars.extra`"
        ]
    );
    assert_eq!(
        plan_err(text)[0].hint.as_deref(),
        Some("did you mean `vars.students`?")
    );
    let opts = LoadOptions {
        vars: vec![
            ("studnets".into(), "x".into()),
            ("extra".into(), "1".into()),
        ],
        ..LoadOptions::default()
    };
    assert!(problems_with(text, &opts).is_empty());
}

#[test]
fn every_step_field_is_checked() {
    let text = r#"version: 1
sandboxes: {box: {}}
steps:
  a:
    name: "a {{ vars.n1 }}"
    if: vars.n2 == 1
    run:
      cmd: echo {{ vars.n3 }}
      env: {X: "{{ vars.n4 }}"}
      workdir: "/{{ vars.n5 }}"
      user: "{{ vars.n6 }}"
  b:
    push: {src: "{{ vars.n7 }}", dst: "/{{ vars.n8 }}"}
  c:
    pull: {src: "/{{ vars.n9 }}", dst: "{{ vars.n10 }}"}
  d:
    snapshot: "img:{{ vars.n11 }}"
    if: "{{ vars.n12 }}"
"#;
    assert_eq!(
        problems(text),
        [
            "5:17 undefined variable `vars.n1`",
            "6:9 undefined variable `vars.n2`",
            "8:20 undefined variable `vars.n3`",
            "9:20 undefined variable `vars.n4`",
            "10:21 undefined variable `vars.n5`",
            "11:17 undefined variable `vars.n6`",
            "13:21 undefined variable `vars.n7`",
            "13:44 undefined variable `vars.n8`",
            "15:22 undefined variable `vars.n9`",
            "15:44 undefined variable `vars.n10`",
            "17:23 undefined variable `vars.n11`",
            "18:13 undefined variable `vars.n12`",
        ]
    );
}

#[test]
fn matrix_job_env_and_unknown_roots() {
    let text = r#"version: 1
vars: {students: [a, b]}
env: [POCKETDOCK_TEST_LISTED]
sandboxes:
  grader: {matrix: {student: "{{ vars.students }}"}}
  plain: {}
steps:
  a:
    sandbox: grader
    run: echo {{ matrix.studnet }} {{ matrix.student }} {{ job.nme }} {{ job.id }}
  b:
    sandbox: plain
    run: echo {{ matrix.student }} {{ env.HOME }} {{ env.POCKETDOCK_TEST_LISTED }} {{ env.GIVEN }}
  c:
    sandbox: grader
    run: echo {{ students }} {{ var.students }} {{ student }} {{ nope.x }} {{ job.name.x }}
"#;
    assert_problems(
        text,
        &[
            (
                "10:18",
                "undefined variable `matrix.studnet`",
                Some("did you mean `matrix.student`?"),
            ),
            (
                "10:60",
                "undefined variable `job.nme`",
                Some("did you mean `job.name`?"),
            ),
            (
                "13:18",
                "undefined variable `matrix.student`",
                Some("step `b` runs on sandbox `plain`, which has no `matrix`"),
            ),
            (
                "13:39",
                "undefined variable `env.HOME`",
                Some("list `HOME` under `env:` to read it from the host environment"),
            ),
            (
                "13:87",
                "undefined variable `env.GIVEN`",
                Some("list `GIVEN` under `env:` to read it from the host environment"),
            ),
            (
                "16:18",
                "undefined variable `students`",
                Some("did you mean `vars.students`?"),
            ),
            (
                "16:33",
                "undefined variable `var`",
                Some("did you mean `vars.students`?"),
            ),
            (
                "16:52",
                "undefined variable `student`",
                Some("did you mean `matrix.student`?"),
            ),
            (
                "16:66",
                "undefined variable `nope`",
                Some("templates can read `vars`, `matrix`, `job`, `env` and `steps`"),
            ),
            (
                "16:79",
                "undefined variable `job.name.x`",
                Some("`job.name` is a string, it has no `x`"),
            ),
        ],
    );
    // Values passed explicitly are readable without being listed.
    let opts = LoadOptions {
        env: vec![("GIVEN".into(), "1".into()), ("HOME".into(), "/h".into())],
        ..LoadOptions::default()
    };
    assert_eq!(problems_with(text, &opts).len(), 8);
}

#[test]
fn steps_must_be_waited_for() {
    let text = r#"version: 1
sandboxes: {box: {}, other: {}}
steps:
  build: {sandbox: box, run: make}
  test:
    sandbox: box
    run: echo {{ steps.build.exit_code }} {{ steps.biuld.status }}
  deploy:
    sandbox: other
    needs: [test]
    if: steps.build.status == 'success' and steps.lint.exit_code == 0
    run: echo {{ steps.deploy.stdout }}
  lint:
    sandbox: other
    run: echo {{ steps.test.stdout }} {{ steps.late.stdout }}
  late:
    sandbox: box
    run: echo {{ steps["build"].outputs.x }}
"#;
    assert_problems(
        text,
        &[
            ("7:46", "undefined variable `steps.biuld`", Some("did you mean `steps.build`?")),
            ("11:45", "step `deploy` reads `steps.lint` but does not wait for step `lint`", Some("step `lint` waits for `deploy`, so `deploy` runs first and cannot read its result")),
            ("12:18", "step `deploy` reads its own result `steps.deploy`", Some("`steps.deploy` is set once step `deploy` has finished; a step sees the results of the steps it waits for")),
            ("15:42", "step `lint` reads `steps.late` but does not wait for step `late`", Some("write `needs: [deploy, late]` in step `lint`: a step sees the results of the steps it waits for")),
        ],
    );
    // `deploy` waits for `build` through `test`; `late` through script order.
    let text = "version: 1\nsandboxes: {box: {}}\nsteps:\n  a: {run: x}\n  b:\n    needs: []\n    run: echo {{ steps.a.stdout }}\n";
    let d = only_problem(text);
    assert_eq!(
        d.hint.as_deref(),
        Some(
            "add `a` to the `needs` of step `b`: a step sees the results of the steps it waits for"
        )
    );
    let text = "version: 1\nsandboxes: {box: {}, o: {}}\nsteps:\n  a: {sandbox: box, run: x}\n  b:\n    sandbox: o\n    run: echo {{ steps.a.stdout }}\n";
    assert_eq!(
        only_problem(text).hint.as_deref(),
        Some("write `needs: [a]` in step `b`: a step sees the results of the steps it waits for")
    );
}

#[test]
fn step_result_fields_follow_what_the_step_sees() {
    let text = r#"version: 1
vars: {students: [a, b]}
sandboxes:
  grader: {matrix: {student: "{{ vars.students }}"}}
  one: {matrix: {os: [debian]}}
  summary: {}
steps:
  grade: {sandbox: grader, run: x}
  record:
    sandbox: grader
    run: echo {{ steps.grade.exit_code }} {{ steps.grade.exitcode }} {{ steps.grade.instances }}
  solo: {sandbox: one, run: x}
  report:
    sandbox: summary
    needs: [record, solo]
    run: echo {{ steps.grade.instances | length }} {{ steps.grade.exit_code }} {{ steps.solo.outputs.k }} {{ steps.solo.instances }}
"#;
    assert_problems(
        text,
        &[
            ("11:46", "undefined variable `steps.grade.exitcode`", Some("did you mean `steps.grade.exit_code`?")),
            ("11:73", "undefined variable `steps.grade.instances`", Some("step `grade` runs on the same sandbox as `record`, so `steps.grade` is the result of the same matrix combination, with `status`, `exit_code`, `stdout`, `stderr` and `outputs`")),
            ("16:55", "undefined variable `steps.grade.exit_code`", Some("step `grade` runs on each of the 2 instances of sandbox `grader`, so step `report` reads `steps.grade.instances`: a list with one result per instance, each with `status`, `exit_code`, `stdout`, `stderr`, `outputs`, `sandbox` and `matrix`")),
            ("16:110", "undefined variable `steps.solo.instances`", Some("step `solo` runs on one sandbox instance, so `steps.solo` is its result, with `status`, `exit_code`, `stdout`, `stderr` and `outputs`")),
        ],
    );
}

#[test]
fn valid_templates_are_not_reported() {
    let text = r#"version: 1
vars: {students: [a, b], opts: {x: 1}, n: 3}
env: [POCKETDOCK_TEST_NEVER_SET]
sandboxes:
  grader: {matrix: {student: "{{ vars.students }}"}}
steps:
  grade:
    sandbox: grader
    run: |
      {% for s in vars.students if s != matrix.student %}{{ s | upper }} {{ loop.index }}{% endfor %}
      {% set total = vars.n * 2 %}{{ total }} {{ range(vars.n) | join(',') }}
      {% if vars.optional is defined %}{{ vars.optional }}{% endif %} {{ vars.other | default('x') }}
      {{ vars.opts.x }} {{ job.id }} {{ job.name | lower }}
      {{ env.POCKETDOCK_TEST_NEVER_SET | default('') }} {{ namespace(a=1).a }} {# {{ nope }} #}
      {% raw %}{{ nope }}{% endraw %} {{ '{{ nope }}' }} {{ vars.students[0] }} {{ vars['n'] }}
  record:
    sandbox: grader
    if: steps.grade.exit_code == 0 or steps.grade.status == 'timed_out'
    run: echo {{ 'pass' if steps.grade.exit_code == 0 else 'fail' }} {{ steps.grade.outputs.score }}
  notes:
    sandbox: grader
    name: notes for {{ matrix.student }}
    if: "{{ steps.record is defined and steps['grade'].stdout }}"
    run: echo {{ steps.grade.stdout | trim }}
"#;
    assert_eq!(problems(text), Vec::<String>::new());
}

#[test]
fn each_mistake_once_per_template_and_syntax_errors_too() {
    let text = "version: 1\nsandboxes: {box: {}}\nsteps:\n  a:\n    run: echo {{ vars.x }} {{ vars.x }}\n    if: steps.a ==\n  b:\n    run: echo {{ vars.x }} {% if %}\n";
    let d = plan_err(text);
    let got: Vec<String> = d
        .iter()
        .map(|d| format!("{} {}", d.position(), d.message))
        .collect();
    // A template that does not parse is reported as such, and only that.
    assert_eq!(
        got,
        [
            "5:18 undefined variable `vars.x`",
            "6:17 template syntax error: unexpected end of input, expected expression",
            "8:34 template syntax error: unexpected end of block",
        ]
    );
}

#[test]
fn kdl_step_templates_are_checked_too() {
    let text = "version 1\nsandbox \"box\"\nstep \"a\" sandbox=\"box\" {\n    run \"echo {{ vars.nope }}\"\n}\nstep \"b\" sandbox=\"box\" {\n    run \"echo {{ steps.a.stdout }}\"\n}\nsandbox \"o\"\nstep \"c\" sandbox=\"o\" {\n    run \"echo {{ steps.b.stdout }}\"\n}\n";
    let m = parse(
        Path::new("/w/job.kdl"),
        text,
        Format::Kdl,
        &LoadOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let d = plan(m, &PlanOptions::default()).unwrap_err();
    let d = d.diagnostics();
    assert_eq!(d.len(), 2, "{d:#?}");
    assert_eq!(d[0].position(), "4:18");
    assert_eq!(d[0].message, "undefined variable `vars.nope`");
    // `b` waits for `a` (script order); `c`, on another sandbox, waits for nothing.
    assert_eq!(d[1].position(), "11:18");
    assert_eq!(
        d[1].message,
        "step `c` reads `steps.b` but does not wait for step `b`"
    );
    assert_eq!(
        d[1].hint.as_deref(),
        Some("write `needs=\"b\"` in step `c`: a step sees the results of the steps it waits for")
    );
}

#[test]
fn folded_blocks_and_escaped_strings_still_point_at_the_variable() {
    let text = "version: 1\nsandboxes: {box: {}}\nsteps:\n  a:\n    run: >-\n      echo one\n      {{ vars.two }} \"three\"\n      {{ vars.two }} {{ vars.four }}\n  b:\n    run: \"echo \\\"{{ vars.five }}\\\"\"\n";
    assert_eq!(
        problems(text),
        [
            "7:10 undefined variable `vars.two`",
            "8:25 undefined variable `vars.four`",
            "10:21 undefined variable `vars.five`",
        ]
    );
    let text = "version 1\nsandbox \"box\"\nstep \"a\" {\n    run \"echo \\\"{{ vars.x }}\\\" {{ vars.y }}\"\n}\n";
    let m = parse(
        Path::new("/w/job.kdl"),
        text,
        Format::Kdl,
        &LoadOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let d = plan(m, &PlanOptions::default()).unwrap_err();
    let got: Vec<String> = d
        .diagnostics()
        .iter()
        .map(|d| {
            assert_underlines_the_variable(d);
            d.position()
        })
        .collect();
    assert_eq!(got, ["4:20", "4:35"]);
}

#[test]
fn a_sandbox_mistake_is_reported_once_whatever_its_matrix() {
    let text = "version: 1\nsandboxes:\n  box:\n    image: \"x:{{ vars.nope }}\"\n    matrix: {a: [1, 2, 3]}\nsteps:\n  s: {run: \"echo {{ matrix.a }} é {{ 'ü' }}\"}\n";
    assert_eq!(problems(text), ["4:18 undefined variable `vars.nope`"]);
}

#[test]
fn session_and_python_steps_render() {
    let p = plan_of(
        r#"version: 1
vars: {dir: /src}
sandboxes: {s: {}}
steps:
  cd:
    session: cd {{ vars.dir }}
  build:
    session: {name: "b{{ vars.dir | length }}", send: make, timeout: 2m, expect_exit: 2}
    timeout: 5m
  stepwide:
    session: {send: make}
    timeout: 90
  calc:
    python: "x = {{ 40 + 1 }}"
  more:
    python: {code: "x\n", timeout: 5}
    timeout: 60
  plain:
    python: x
    timeout: 7
  bad:
    session: {send: x, name: "{{ vars.dir }}"}
"#,
    );
    let render = |id: &str| {
        let i = p.instances_of(id).next().unwrap();
        p.render_step(i, &p.context(i))
    };
    let session = |id: &str| match render(id).unwrap().action {
        RenderedAction::Session(RenderedSession {
            name,
            send,
            timeout,
            expect_exit,
        }) => (name, send, timeout, expect_exit),
        other => panic!("{other:?}"),
    };
    let python = |id: &str| match render(id).unwrap().action {
        RenderedAction::Python(RenderedPython { code, timeout }) => (code, timeout),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        session("cd"),
        (
            "default".into(),
            "cd /src".into(),
            Duration::from_secs(30),
            0
        )
    );
    assert_eq!(
        session("build"),
        ("b4".into(), "make".into(), Duration::from_mins(2), 2)
    );
    assert_eq!(
        render("build").unwrap().timeout,
        Some(Duration::from_mins(5))
    );
    assert_eq!(session("stepwide").2, Duration::from_secs(90));
    assert_eq!(python("calc"), ("x = 41".into(), None));
    assert_eq!(python("more"), ("x\n".into(), Some(Duration::from_secs(5))));
    assert_eq!(python("plain").1, Some(Duration::from_secs(7)));
    let d = render("bad").unwrap_err();
    assert_eq!(d.message, "invalid session name `/src`");
    assert_eq!(d.position(), "22:30");
    assert!(d.hint.unwrap().contains("letters, digits"));
}

#[test]
fn python_results_are_readable_by_later_steps() {
    let text = r#"version: 1
sandboxes: {s: {}}
steps:
  calc: {python: "x = 41"}
  use:
    if: not steps.calc.error
    session: echo {{ steps.calc.vars.x }} {{ steps.calc.result }} {{ steps.calc.exit_code }}
"#;
    let p = plan_of(text);
    let mut done = StepResult {
        status: crate::template::ResultStatus::Success,
        exit_code: Some(0),
        python: Some(crate::template::PythonResult {
            vars: [("x".to_string(), "int: 41".to_string())].into(),
            result: None,
            error: None,
        }),
        ..StepResult::default()
    };
    let ctx = p.context_with_results(1, |_| Some(&done));
    assert!(p.should_run(1, &ctx).unwrap());
    let RenderedAction::Session(RenderedSession { send, .. }) =
        p.render_step(1, &ctx).unwrap().action
    else {
        panic!()
    };
    assert_eq!(send, "echo int: 41 None 0");
    done.python.as_mut().unwrap().error = Some("Traceback …".into());
    let ctx = p.context_with_results(1, |_| Some(&done));
    assert!(!p.should_run(1, &ctx).unwrap());
}

#[test]
fn python_result_fields_are_checked() {
    let text = r#"version: 1
sandboxes: {s: {}}
steps:
  calc: {python: "x = {{ vars.nope }}"}
  sh: {run: echo}
  use:
    needs: [calc, sh]
    session:
      name: "{{ vars.n }}"
      send: echo {{ steps.calc.vars.x }} {{ steps.calc.result }} {{ steps.calc.error }} {{ steps.sh.vars.x }} {{ steps.calc.varz }} {{ steps.sh.error }}
"#;
    assert_problems(
        text,
        &[
            ("4:26", "undefined variable `vars.nope`", Some("define `nope` under `vars:`, or pass `--var nope=VALUE`")),
            ("9:17", "undefined variable `vars.n`", Some("define `n` under `vars:`, or pass `--var n=VALUE`")),
            ("10:92", "undefined variable `steps.sh.vars`", Some("only `python` steps have `vars`, `result` and `error`; step `sh` is a `run` step, whose result has `status`, `exit_code`, `stdout`, `stderr` and `outputs`")),
            ("10:114", "undefined variable `steps.calc.varz`", Some("did you mean `steps.calc.vars`?")),
            ("10:136", "undefined variable `steps.sh.error`", Some("only `python` steps have `vars`, `result` and `error`; step `sh` is a `run` step, whose result has `status`, `exit_code`, `stdout`, `stderr` and `outputs`")),
        ],
    );
}

#[test]
fn network_dns_blocked_turns_the_network_on_with_dns_blocked() {
    let p = plan_of("version: 1\nsandboxes:\n  s:\n    network: dns-blocked\n");
    let s = &p.sandboxes[0].spec;
    assert!(s.network && s.dns_blocked);
    assert_eq!(p.to_json()["sandboxes"][0]["spec"]["dns_blocked"], true);
    let p = plan_of("version: 1\nsandboxes:\n  s:\n    network: true\n");
    assert!(!p.sandboxes[0].spec.dns_blocked);
    assert!(p.to_json()["sandboxes"][0]["spec"]
        .get("dns_blocked")
        .is_none());
}
