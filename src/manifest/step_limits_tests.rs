//! A step's `limits:`: its forms in YAML and KDL, and each mistake at its
//! `line:col` with its message.

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::size::ByteSize;

fn load(format: Format, text: &str) -> Result<Manifest, ManifestError> {
    let path = match format {
        Format::Yaml => "job.yaml",
        Format::Kdl => "job.kdl",
    };
    parse(Path::new(path), text, format, &LoadOptions::default())
}

fn yaml_step(body: &str) -> String {
    format!("version: 1\nsandboxes: {{s: {{}}}}\nsteps:\n  a:\n    {body}\n")
}

#[test]
fn limits_take_a_duration_sizes_and_a_count() {
    let text =
        yaml_step("run: ./solve\n    limits: {cpu_time: 2s, memory: 64M, output: 1m, pids: 32}");
    let m = load(Format::Yaml, &text).unwrap();
    let want = StepLimits {
        cpu_time: Some(Duration::from_secs(2)),
        memory: Some(ByteSize(64 << 20)),
        output: Some(ByteSize(1 << 20)),
        pids: Some(32),
    };
    assert_eq!(m.steps["a"].limits, Some(want));
    let kdl = "version 1\nsandbox \"s\"\nstep \"a\" {\n    run \"./solve\"\n    limits cpu-time=\"2s\" memory=\"64M\" output=\"1m\" pids=32\n}\n";
    let m = load(Format::Kdl, kdl).unwrap();
    assert_eq!(m.steps["a"].limits, Some(want));
    // Bare numbers: seconds and bytes.
    let text = yaml_step("run: x\n    limits: {cpu_time: 1.5, memory: 1048576}");
    let l = load(Format::Yaml, &text).unwrap().steps["a"]
        .limits
        .unwrap();
    assert_eq!(l.cpu_time, Some(Duration::from_millis(1500)));
    assert_eq!(l.memory, Some(ByteSize(1 << 20)));
    let none = load(Format::Yaml, &yaml_step("run: x")).unwrap();
    assert_eq!(none.steps["a"].limits, None);
}

#[test]
fn each_bad_limit_is_reported_where_it_is_written() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "run: x\n    limits: {cpu_time: fast}",
            "6:24",
            "invalid `cpu_time`",
        ),
        (
            "run: x\n    limits: {cpu_time: 0}",
            "6:24",
            "invalid `cpu_time`",
        ),
        (
            "run: x\n    limits: {memory: lots}",
            "6:22",
            "invalid `limits.memory`: `lots` is not a size",
        ),
        (
            "run: x\n    limits: {output: 0}",
            "6:22",
            "invalid `limits.output`: must be more than 0",
        ),
        (
            "run: x\n    limits: {pids: 0}",
            "6:20",
            "`pids` must be between 1 and 100000, found 0",
        ),
        (
            "run: x\n    limits: {pids: '8'}",
            "6:20",
            "`pids` must be an integer, found a string",
        ),
        (
            "run: x\n    limits: {cpu: 2s}",
            "6:14",
            "unknown key `cpu` in `limits` of step `a`",
        ),
        (
            "run: x\n    limits: 2s",
            "6:13",
            "`limits` must be a map, found a string",
        ),
        (
            "push: {src: a, dst: /b}\n    limits: {pids: 8}",
            "6:5",
            "step `a` has limits, but only `run` steps take them",
        ),
    ];
    for &(body, pos, message) in cases {
        let err = load(Format::Yaml, &yaml_step(body)).unwrap_err();
        let d = err.diagnostics();
        assert_eq!(d.len(), 1, "{body}: {d:#?}");
        assert_eq!(d[0].message, message, "{body}");
        assert_eq!(d[0].position(), pos, "position of `{message}`");
    }
}

#[test]
fn a_uses_step_refuses_limits() {
    let text = yaml_step("uses: grading-python\n    limits: {pids: 8}");
    let err = load(Format::Yaml, &text).unwrap_err();
    let d = err.diagnostics();
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].message, "`limits` does not go with `uses` in step `a`");
    assert_eq!(d[0].position(), "6:5");
}
