//! What a manifest may ask of the plan: matrix, sandbox and step counts
//! checked before anything is allocated, template fuel and output, the
//! filters and tests of every template, and host paths (issue 15).

use std::fmt::Write;
use std::path::Path;
use std::time::Instant;

use super::*;
use crate::manifest::{parse, Format, HostRoots, Limit, LoadOptions};

fn plan_text(text: &str, opts: &LoadOptions) -> Result<Plan, Vec<Diagnostic>> {
    let m = parse(Path::new("/w/job.yaml"), text, Format::Yaml, opts)
        .map_err(|e| e.diagnostics().to_vec())?;
    plan(m, &PlanOptions::default()).map_err(|e| e.diagnostics().to_vec())
}

#[track_caller]
fn first(text: &str) -> Diagnostic {
    match plan_text(text, &LoadOptions::default()) {
        Ok(_) => panic!("expected an error"),
        Err(d) => d[0].clone(),
    }
}

fn axis(n: usize) -> String {
    (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

// Regression: 1000 × 1000 planned a million sandboxes (16 s, 1.6 GB), and
// three axes of 1000 aborted on a 72 GB allocation.
#[test]
fn matrix_products_had_no_limit() {
    let a = axis(1000);
    for axes in [2, 3] {
        let matrix = (0..axes).fold(String::new(), |mut m, i| {
            writeln!(m, "      a{i}: [{a}]").unwrap();
            m
        });
        let text = format!(
            "version: 1\nsandboxes:\n  s:\n    matrix:\n{matrix}steps:\n  x: {{run: echo}}\n"
        );
        let start = Instant::now();
        let d = first(&text);
        assert!(start.elapsed().as_secs() < 2);
        assert_eq!(d.position(), "5:11");
        let count = 1000u64.pow(axes);
        assert_eq!(
            d.message,
            format!(
                "sandbox `s` has {count} matrix combinations, more than the `matrix` limit of 1000"
            )
        );
        assert!(d.hint.unwrap().contains("limits: {matrix: N}"));
    }
    // Built through `vars`, too.
    let text = format!(
        "version: 1\nvars: {{l: [{a}]}}\nsandboxes:\n  s:\n    matrix: {{x: '{{{{ vars.l }}}}', y: '{{{{ vars.l }}}}'}}\n"
    );
    assert!(first(&text).message.contains("1000000 matrix combinations"));
    // One axis longer than the limit is refused before its duplicates are sought.
    let text = format!(
        "version: 1\nsandboxes:\n  s:\n    matrix: {{x: [{}]}}\n",
        axis(20_000)
    );
    assert!(first(&text).message.contains("20000 matrix combinations"));
    // A manifest may raise it.
    let text = format!("version: 1\nlimits: {{matrix: 2000, sandboxes: 2000}}\nsandboxes:\n  s:\n    matrix: {{x: [{}], y: [1, 2]}}\n", axis(1000));
    assert_eq!(
        plan_text(&text, &LoadOptions::default())
            .unwrap()
            .sandboxes
            .len(),
        2000
    );
}

#[test]
fn sandboxes_and_steps_per_job_are_limited() {
    let a = axis(600);
    let text = format!(
        "version: 1\nsandboxes:\n  s: {{matrix: {{x: [{a}]}}}}\n  t: {{matrix: {{x: [{a}]}}}}\n"
    );
    let d = first(&text);
    assert_eq!(d.position(), "4:3");
    assert!(
        d.message
            .contains("1200 sandbox instances, more than the `sandboxes` limit of 1000"),
        "{}",
        d.message
    );
    let opts = LoadOptions {
        limits: vec![(Limit::Sandboxes, 1200)],
        ..LoadOptions::default()
    };
    assert!(plan_text(&text, &opts).is_ok());
    let steps = (0..11).fold(String::new(), |mut t, i| {
        writeln!(t, "  s{i}: {{run: echo}}").unwrap();
        t
    });
    let text = format!(
        "version: 1\nsandboxes:\n  s: {{matrix: {{x: [{}]}}}}\nsteps:\n{steps}",
        axis(1000)
    );
    let d = first(&text);
    assert!(
        d.message.contains("more than 10000 step instances"),
        "{}",
        d.message
    );
    assert_eq!(d.position(), "15:3");
}

// Regression: a loop of 10^8 iterations in `name` took 10 s and 580 MB.
#[test]
fn template_loops_had_no_fuel_limit() {
    let start = Instant::now();
    let d = first("version: 1\nname: \"{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}x\"\n");
    assert!(start.elapsed().as_secs() < 2);
    assert!(d.message.contains("template_fuel"), "{}", d.message);
    // In a step template it is found without rendering.
    let d = first("version: 1\nsandboxes:\n  s: {}\nsteps:\n  a:\n    run: \"{% for i in range(100000) %}{% for j in range(10000) %}x{% endfor %}{% endfor %}\"\n");
    assert!(
        d.message.starts_with("this loop runs 1000000000 times"),
        "{}",
        d.message
    );
    assert_eq!(d.position(), "6:51");
    // Output past the cap.
    let d = first("version: 1\nname: \"{% for i in range(60000) %}{{ 'x' * 100 }}{% endfor %}\"\nlimits: {template_fuel: 1000000}\n");
    assert!(
        d.message.contains("more than 1048576 bytes"),
        "{}",
        d.message
    );
}

// Regression: `validate` did not check step templates for unknown filters,
// unknown tests or bad arguments; `apply` failed later, after containers
// were created and earlier steps had run.
#[test]
fn validate_did_not_check_step_filters_tests_and_arities() {
    let d = first("version: 1\nsandboxes:\n  s: {}\nsteps:\n  a: {run: echo}\n  b: {run: \"echo {{ job.id | uper }}\"}\n");
    assert_eq!(
        (d.message.as_str(), d.position().as_str()),
        ("unknown filter `uper`", "6:30")
    );
    let d = first(
        "version: 1\nsandboxes:\n  s: {}\nsteps:\n  a:\n    run: echo\n    if: job.id is evn\n",
    );
    assert_eq!(d.message, "unknown test `evn`");
    let d = first(
        "version: 1\nsandboxes:\n  s: {}\nsteps:\n  a: {run: \"{{ job.id | replace('a') }}\"}\n",
    );
    assert_eq!(d.message, "filter `replace` takes 2 arguments, given 1");
    // A branch not taken while planning is checked too.
    let d = first(
        "version: 1\nsandboxes:\n  s: {env: {A: \"{% if false %}{{ 1 | nope }}{% endif %}\"}}\n",
    );
    assert_eq!(d.message, "unknown filter `nope`");
}

// Regression: `volumes: ["../../../:/host"]` was accepted.
#[test]
fn volume_sources_were_not_confined() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("proj/data")).unwrap();
    std::os::unix::fs::symlink("/etc", root.join("proj/etc")).unwrap();
    let project = root.join("proj");
    let opts = |allowed: Vec<std::path::PathBuf>| LoadOptions {
        host_roots: HostRoots::new(&project, allowed),
        ..LoadOptions::default()
    };
    let run = |vol: &str, o: &LoadOptions| {
        let text = format!("version: 1\nsandboxes:\n  s:\n    volumes: ['{vol}', 'named:/n']\n");
        let m = parse(&project.join("job.yaml"), &text, Format::Yaml, o).unwrap();
        plan(m, &PlanOptions::default()).map_err(|e| e.diagnostics().to_vec())
    };
    let d = &run("../../../:/host", &opts(vec![])).unwrap_err()[0];
    assert_eq!(d.position(), "4:15");
    assert!(
        d.message
            .contains("is outside the project (it leads to `/`)"),
        "{}",
        d.message
    );
    assert!(d.hint.as_deref().unwrap().contains("--allow-host-path /"));
    assert!(run("/etc:/e", &opts(vec![])).is_err());
    // Through a symlink inside the project.
    let d = &run("./etc:/e", &opts(vec![])).unwrap_err()[0];
    assert!(d.message.contains("leads to `/etc`"), "{}", d.message);
    assert!(run("./data:/d", &opts(vec![])).is_ok());
    assert!(run("/etc:/e", &opts(vec!["/etc".into()])).is_ok());
}

// Property: step templates among non-ASCII text (CJK, emoji, combining
// marks, right-to-left) are located at the right character.
#[test]
fn step_template_errors_point_at_the_character_among_non_ascii_text() {
    const WORDS: [&str; 6] = [
        "日本語",
        "😀👍🏽",
        "e\u{301}te\u{301}",
        "עברית",
        "العربية",
        "Ω≈ç√",
    ];
    for a in WORDS {
        for b in WORDS {
            let text = format!(
                "version: 1\nsandboxes:\n  s: {{}}\nsteps:\n  a:\n    run: \"echo {a} {{{{ vars.nope }}}} {b}\"\n"
            );
            let d = &plan_text(&text, &LoadOptions::default()).unwrap_err()[0];
            let line = text.lines().nth(d.line - 1).unwrap();
            let at: String = line.chars().skip(d.col - 1).take(9).collect();
            assert_eq!(at, "vars.nope", "{text}");
        }
    }
}
